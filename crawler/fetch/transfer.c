/*
 * transfer.c -- one transfer of a worker thread (fetch_internal.h: xfer_t):
 * its libcurl options, the callbacks that read its headers and stream its
 * body into the page's parser, the links of its page, the private-address
 * guard; cleared and reused by the pool (fetch.c).
 *
 * DESIGN: an xfer_t holds its easy handle (pooled and reused, so that
 * connections stay in the multi handles' caches and are kept alive between
 * pages of one host), the leased item of a page or the origin of a
 * robots.txt, the headers that matter (Content-Type, Location,
 * X-Robots-Tag, Retry-After), the links found so far with a page-local set
 * of their hashes (so a menu repeated on a page costs one scope check), and,
 * when recording for WARC, the raw request head, response head and body.
 *   - A page body streams into the HTML parser (or, with --sitemaps and an
 *     XML type, the sitemap parser) as it arrives; links are normalized by
 *     the parser, de-duplicated, filtered by the scope and kept, up to
 *     --max-links-per-page (the rest counted).
 *   - Per-IP politeness (fetch.c: the gate): the socket callback stops a
 *     transfer at an address it holds no slot of, before connecting, and
 *     the pre-request callback at a reused connection to one.
 *   - The private-address guard (CURLOPT_OPENSOCKETFUNCTION) refuses
 *     loopback/private/link-local/multicast addresses (scope_guard_refuses)
 *     unless the host is a seed host, the address is in an
 *     --allow-private-range, or --allow-private is given.
 *   - libcurl never follows a redirect, so the guard knows each hop's host
 *     (fetch_result.c: robots.txt hop by hop, a page redirect as a link).
 *   - A robots.txt body is kept up to FETCH_ROBOTS_MAX_BYTES.
 * A transfer reads its thread's settings through x->env, and knows nothing
 * of the pool.  Redis keys: none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <xxhash.h>

#include "clock.h"
#include "fetch_internal.h"
#include "outcome.h"
#include "parser.h"
#include "sitemap.h"

int xfer_buf_add(buf_t *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        /* from 256 bytes: most robots.txt files and heads are small, and
         * thousands of them may be alive at once in a broad crawl */
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static void buf_free(buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- the private-address guard ------------------------------------------ */

/* The text of address sa (as CURLINFO_PRIMARY_IP gives it) into buf: 0,
 * or -1 for a family other than IPv4 and IPv6. */
static int addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
    const void *a =
        sa->sa_family == AF_INET    ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
        : sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                    : NULL;
    return a && inet_ntop(sa->sa_family, a, buf, (socklen_t)len) ? 0 : -1;
}

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    xfer_t *x = clientp;
    if (!x->env->cfg->allow_private && !x->seed_host &&
        scope_guard_refuses(x->env->scope, &a->addr)) {
        x->blocked = 1;
        return CURL_SOCKET_BAD;
    }
    /* per-IP politeness: only to the address whose slot x holds (fetch.c:
     * the gate); at any other, x stops here and asks for that one's */
    char ip[64];
    if (x->env->ipgate && addr_text(&a->addr, ip, sizeof ip) == 0 &&
        (!x->slot_tok || strcmp(ip, x->slot_ip) != 0)) {
        snprintf(x->ip_want, sizeof x->ip_want, "%s", ip);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Per-IP politeness, once the connection is made or reused (libcurl's
 * pre-request callback, for a reused connection the only one): the
 * request goes out only on a connection to the address whose slot x holds;
 * on any other x stops here (CURLE_ABORTED_BY_CALLBACK) and asks for that
 * one's. */
static int before_request(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                          int local_port)
{
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    xfer_t *x = clientp;
    if (!x->slot_tok || strcmp(primary_ip, x->slot_ip) != 0) {
        snprintf(x->ip_want, sizeof x->ip_want, "%s", primary_ip);
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

/* ---- links of one page ---------------------------------------------------- */

static int seen_insert(xfer_t *x, uint64_t h)
{
    if (h == 0)
        h = 1;
    if ((x->nseen + 1) * 2 > x->seen_cap) {
        size_t cap = x->seen_cap ? x->seen_cap * 2 : 256;
        uint64_t *n = calloc(cap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < x->seen_cap; i++) {
            if (!x->seen[i])
                continue;
            size_t j = x->seen[i] & (cap - 1);
            while (n[j])
                j = (j + 1) & (cap - 1);
            n[j] = x->seen[i];
        }
        free(x->seen);
        x->seen = n;
        x->seen_cap = cap;
    }
    size_t j = h & (x->seen_cap - 1);
    while (x->seen[j]) {
        if (x->seen[j] == h)
            return 0;
        j = (j + 1) & (x->seen_cap - 1);
    }
    x->seen[j] = h;
    x->nseen++;
    return 1;
}

anchor_verdict_t xfer_add_link(xfer_t *x, const char *url, size_t len)
{
    /* de-duplicate first: menus repeat links, and the scope check costs more */
    int seen = seen_insert(x, XXH3_64bits(url, len));
    if (seen == 0)
        return ANCHOR_REPEAT;
    if (seen < 0 || !scope_allows(x->env->scope, url))
        return ANCHOR_SCOPE; /* (out of memory: not followed either) */
    if (x->nlinks >= x->env->cfg->max_links_per_page) {
        x->links_over_cap++; /* not followed: the page is flagged in its record */
        return ANCHOR_CAP;
    }
    if (x->nlinks == x->links_cap) {
        size_t cap = x->links_cap ? x->links_cap * 2 : 32;
        char **n = realloc(x->links, cap * sizeof *n);
        if (!n)
            return ANCHOR_CAP;
        x->links = n;
        if (x->links_first) {
            unsigned char *f = realloc(x->links_first, cap);
            if (!f)
                return ANCHOR_CAP;
            memset(f + x->links_cap, 0, cap - x->links_cap);
            x->links_first = f;
        }
        x->links_cap = cap;
    }
    char *copy = strndup(url, len);
    if (!copy)
        return ANCHOR_CAP;
    x->links[x->nlinks++] = copy;
    return ANCHOR_FOLLOWED;
}

static void on_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    xfer_t *x = ud;
    anchor_verdict_t v = kind & PARSER_LINK_NOFOLLOW ? ANCHOR_NOFOLLOW : xfer_add_link(x, url, len);
    if (x->anchors)
        anchors_link(x->anchors, url, len, (parser_link_kind_t)(kind & ~PARSER_LINK_NOFOLLOW), v);
}

/* Marks x's link i as one of high priority (links_first, made as needed:
 * a sitemap's <url> of priority above the default). */
static void mark_first(xfer_t *x, size_t i)
{
    if (!x->links_first && !(x->links_first = calloc(x->links_cap, 1)))
        return; /* (out of memory: an ordinary link) */
    x->links_first[i] = 1;
}

static void on_loc(void *ud, const char *loc, size_t len, double priority)
{
    (void)len;
    xfer_t *x = ud;
    char *url = NULL;
    if (parser_url_normalize(x->item.url, loc, x->env->cfg->max_url_length, &url) == 0 &&
        xfer_add_link(x, url, strlen(url)) == ANCHOR_FOLLOWED && priority > SITEMAP_PRIORITY)
        mark_first(x, x->nlinks - 1);
    free(url);
}

/* ---- callbacks ------------------------------------------------------------ */

void xfer_reset_headers(xfer_t *x)
{
    free(x->ctype);
    free(x->location);
    free(x->xrobots);
    free(x->etag);
    free(x->last_modified);
    x->ctype = x->location = x->xrobots = x->etag = x->last_modified = NULL;
    x->retry_after_ms = 0;
    x->resphead.len = 0;
    x->cenc = DECODE_IDENTITY;
}

/* A validator (ETag, Last-Modified) of the response, v taken over: one
 * longer than any real one is not kept. */
static void keep_validator(char **to, char *v)
{
    free(*to);
    *to = strlen(v) <= FETCH_MAX_VALIDATOR ? v : NULL;
    if (!*to)
        free(v);
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    if (len >= 5 && !strncmp(data, "HTTP/", 5))
        xfer_reset_headers(x); /* a new response (after 1xx or a followed redirect) */
    if (x->env->record && x->kind == XF_PAGE)
        xfer_buf_add(&x->resphead, data, len);
    char *v;
    if ((v = outcome_header_value(data, len, "Content-Type"))) {
        free(x->ctype);
        x->ctype = v;
    } else if ((v = outcome_header_value(data, len, "Location"))) {
        free(x->location);
        x->location = v;
    } else if ((v = outcome_header_value(data, len, "X-Robots-Tag"))) {
        free(x->xrobots);
        x->xrobots = v;
    } else if ((v = outcome_header_value(data, len, "ETag"))) {
        keep_validator(&x->etag, v);
    } else if ((v = outcome_header_value(data, len, "Last-Modified"))) {
        keep_validator(&x->last_modified, v);
    } else if ((v = outcome_header_value(data, len, "Retry-After"))) {
        x->retry_after_ms = outcome_retry_after_ms(v, x->env->cfg->max_retry_after_ms);
        free(v);
    } else if ((v = outcome_header_value(data, len, "Content-Encoding"))) {
        x->cenc = decode_kind_of(v);
        free(v);
    }
    return len;
}

static void start_parser(xfer_t *x)
{
    x->parse_started = 1;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    const crawl_config_t *c = x->env->cfg;
    if (code < 200 || code >= 300)
        return;
    if (c->sitemaps && sitemap_is_xml(x->ctype)) {
        x->sitemap = sitemap_new(on_loc, x);
        return;
    }
    if (!parser_is_html(x->ctype))
        return;
    parser_config_t pc = {.max_url_length = c->max_url_length,
                          .follow_nofollow = c->follow_nofollow};
    parser_sink_t sink, tee;
    if (x->env->text && (x->text = text_new(&x->env->text_cfg, x->item.url))) {
        text_parser_sink(x->text, &sink); /* (copied by parser_new) */
        pc.sink = &sink;
    }
    if (x->env->links && (x->anchors = anchors_new())) { /* before the text's sink, if any */
        anchors_sink(x->anchors, pc.sink, &tee);
        pc.sink = &tee;
        pc.give_nofollow = 1;
    }
    x->parser = parser_new(&pc, x->item.url, x->ctype, x->xrobots, on_link, x);
}

/* The decoded body's cap: --max-size, or a sitemap's protocol limit if
 * that is more. */
static uint64_t body_cap(const xfer_t *x)
{
    uint64_t cap = x->env->cfg->max_size;
    return x->sitemap && cap < FETCH_SITEMAP_MAX_BYTES ? FETCH_SITEMAP_MAX_BYTES : cap;
}

/* Decoded body bytes: to the parser (or sitemap parser) up to the cap, and
 * to the record when the body is kept decoded.  Past the cap the body is
 * cut (too_large), whether its Content-Length said so first or not: its
 * links up to there are followed.  Returns 1 once cut (stop). */
static int take_decoded(void *ud, const char *data, size_t len)
{
    xfer_t *x = ud;
    uint64_t cap = body_cap(x), before = x->bytes;
    x->bytes += len;
    size_t use = len;
    if (x->bytes > cap) {
        use = before < cap ? (size_t)(cap - before) : 0;
        x->too_large = 1;
    }
    if (x->parser)
        parser_feed(x->parser, data, use);
    else if (x->sitemap)
        sitemap_feed(x->sitemap, data, use);
    if (x->env->record && !x->raw)
        xfer_buf_add(&x->body, data, use);
    return x->too_large;
}

/* A body kept as received (--warc): recorded up to --max-size, decoded
 * here for the parser, so a body that decodes to far more than it weighs
 * costs its weight.  Returns curl's answer. */
static size_t raw_body(xfer_t *x, const char *data, size_t len)
{
    uint64_t cap = x->env->cfg->max_size;
    size_t keep = x->body.len >= cap        ? 0
                  : cap - x->body.len < len ? (size_t)(cap - x->body.len)
                                            : len;
    if (keep < len)
        x->raw_cut = 1;
    xfer_buf_add(&x->body, data, keep);
    if (!x->dec && !x->undecodable) {
        if (x->cenc == DECODE_UNKNOWN || !(x->dec = decoder_new(x->cenc, take_decoded, x)))
            x->undecodable = 1; /* recorded, not parsed */
    }
    if (x->dec && !x->undecodable && decoder_feed(x->dec, data, len) < 0)
        x->undecodable = 1; /* a corrupt stream: what it gave so far was parsed */
    if (x->undecodable)
        x->bytes += len;
    if (x->raw_cut && x->undecodable)
        x->too_large = 1; /* past the cap, and nothing to parse: cut */
    return x->too_large ? 0 : len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    if (x->kind == XF_ROBOTS) {
        x->bytes += len;
        size_t room = FETCH_ROBOTS_MAX_BYTES - x->body.len;
        return xfer_buf_add(&x->body, data, len < room ? len : room) == 0 && len <= room ? len : 0;
    }
    if (!x->parse_started)
        start_parser(x);
    if (x->raw)
        return raw_body(x, data, len);
    return take_decoded(x, data, len) ? 0 : len;
}

static int on_debug(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
    (void)h;
    xfer_t *x = ud;
    if (type == CURLINFO_HEADER_OUT) {
        x->reqhead.len = 0;
        xfer_buf_add(&x->reqhead, data, size);
    }
    return 0;
}

/* ---- the pool --------------------------------------------------------------- */

/* The page's parsers (HTML, text, outlinks, sitemap) freed. */
static void free_parsers(xfer_t *x)
{
    parser_free(x->parser);
    x->parser = NULL;
    text_free(x->text);
    x->text = NULL;
    anchors_free(x->anchors);
    x->anchors = NULL;
    sitemap_free(x->sitemap);
    x->sitemap = NULL;
}

void xfer_clear(xfer_t *x)
{
    frontier_item_clear(&x->item);
    free(x->origin);
    free(x->next_url);
    free(x->moved_to);
    x->origin = x->next_url = x->moved_to = NULL;
    xfer_reset_headers(x);
    decoder_free(x->dec);
    x->dec = NULL;
    x->undecodable = x->raw_cut = 0;
    free_parsers(x);
    for (size_t i = 0; i < x->nlinks; i++)
        free(x->links[i]);
    x->nlinks = 0;
    x->links_over_cap = 0;
    free(x->links_first);
    x->links_first = NULL;
    if (x->seen)
        memset(x->seen, 0, x->seen_cap * sizeof *x->seen);
    x->nseen = 0;
    x->body.len = x->reqhead.len = x->resphead.len = 0;
    x->blocked = x->too_large = x->parse_started = x->seed_host = 0;
    x->hops = 0;
    x->bytes = 0;
    x->ip[0] = x->errbuf[0] = '\0';
    x->ip_want[0] = x->slot_ip[0] = '\0';
    x->slot_tok = x->ask_tok = 0;
    x->ip_asks = 0;
    x->ip_backoff_ms = 0;
}

void xfer_drop_parse_state(xfer_t *x)
{
    free_parsers(x);
    free(x->seen);
    x->seen = NULL;
    x->seen_cap = x->nseen = 0;
}

void xfer_aim(xfer_t *x, const char *url)
{
    if (parser_url_host(url, x->host, sizeof x->host) < 0)
        x->host[0] = '\0';
    x->seed_host = scope_is_seed_host(x->env->scope, x->host);
}

xfer_t *xfer_new(const xfer_env_t *env)
{
    xfer_t *x = calloc(1, sizeof *x);
    if (!x || !(x->h = curl_easy_init())) {
        free(x);
        return NULL;
    }
    x->env = env;
    return x;
}

void xfer_free(xfer_t *x)
{
    if (!x)
        return;
    xfer_clear(x);
    curl_easy_cleanup(x->h);
    free(x->links);
    free(x->seen);
    buf_free(&x->body);
    buf_free(&x->reqhead);
    buf_free(&x->resphead);
    free(x);
}

void xfer_setup(xfer_t *x, const char *url, long dns_timeout)
{
    const crawl_config_t *c = x->env->cfg;
    CURL *h = x->h;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PRIVATE, x);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_SHARE, x->env->share);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* robots_follow, redirect_link */
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    /* a recorded page keeps its body as received, its coding undone here
     * (raw_body); any other transfer lets libcurl undo it */
    x->raw = x->env->record && x->kind == XF_PAGE;
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, x->raw ? DECODE_ACCEPT : "");
    curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, x->raw ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, FETCH_RECV_BUFFER);
    curl_easy_setopt(h, CURLOPT_DNS_CACHE_TIMEOUT, dns_timeout);
    uint64_t used = x->kind == XF_ROBOTS && x->hops ? clock_now_ms() - x->t_first : 0;
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     used < c->timeout_ms ? (long)(c->timeout_ms - used) : 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)c->low_speed_bps);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)c->low_speed_s);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    /* the CA file alone, no CA directory beside it: only then does libcurl
     * keep the certificate store it built for the next connections (its CA
     * cache, 24 h); Debian's names /etc/ssl/certs by default, and every new
     * TLS connection parsed the whole bundle again */
    if (x->env->ca_file_only)
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    tls_sessions_use(x->env->tls, h);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    if (x->env->ipgate) {
        curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, before_request);
        curl_easy_setopt(h, CURLOPT_PREREQDATA, x);
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    if (x->env->record && x->kind == XF_PAGE) {
        curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_debug);
        curl_easy_setopt(h, CURLOPT_DEBUGDATA, x);
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    }
}
