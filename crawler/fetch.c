/*
 * fetch.c -- one page transfer: libcurl easy-handle set-up, the header and
 * body callbacks that stream the body into the HTML parser as it arrives,
 * the private-address guard, and what a finished transfer becomes (a
 * finished page with its links, a redirect offered as a link, a retry, or a
 * failure).  Finished pages are batched and sent with
 * frontier_finish_start() on the worker's finishing connection (done_flush);
 * the thread goes on fetching and parsing while Redis runs the calls, and
 * reads the replies and writes the output records when they have arrived
 * (done_complete).  One batch is in flight at a time: pages finished
 * meanwhile make the next batch, so batches grow while Redis is busy.
 *
 * Easy handles are pooled per worker and reused, so connections stay in the
 * multi handle's cache and are kept alive between pages of one host.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <xxhash.h>

#include "engine_internal.h"
#include "output.h"
#include "warc.h"

int buf_add(buf_t *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
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

void buf_free(buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- the private-address guard ------------------------------------------ */

static int private_v4(uint32_t a)
{
    uint8_t b0 = a >> 24, b1 = (a >> 16) & 0xff;
    return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) ||
           (b0 == 172 && (b1 & 0xf0) == 16) || (b0 == 192 && b1 == 168) ||
           (b0 == 100 && (b1 & 0xc0) == 64) || b0 >= 224;
}

static int private_addr(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return private_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return 1;
    const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(b, v4mapped, 12))
        return private_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | b[14] << 8 | b[15]);
    int zero = 1;
    for (int i = 0; i < 15; i++)
        zero &= b[i] == 0;
    return (zero && (b[15] == 0 || b[15] == 1)) || (b[0] & 0xfe) == 0xfc ||
           (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff;
}

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    xfer_t *x = clientp;
    if (!x->w->e->cfg->allow_private && !x->seed_host && private_addr(&a->addr)) {
        x->blocked = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
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

static void add_link(xfer_t *x, const char *url, size_t len)
{
    /* de-duplicate first: menus repeat links, and the scope check costs more */
    if (x->nlinks >= ENGINE_MAX_LINKS_PER_PAGE || seen_insert(x, XXH3_64bits(url, len)) != 1 ||
        !scope_allows(x->w->scope, url))
        return;
    if (x->nlinks == x->links_cap) {
        size_t cap = x->links_cap ? x->links_cap * 2 : 32;
        char **n = realloc(x->links, cap * sizeof *n);
        if (!n)
            return;
        x->links = n;
        x->links_cap = cap;
    }
    char *copy = strndup(url, len);
    if (copy)
        x->links[x->nlinks++] = copy;
}

static void on_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    (void)kind;
    add_link(ud, url, len);
}

static void on_loc(void *ud, const char *loc, size_t len)
{
    (void)len;
    xfer_t *x = ud;
    char *url = NULL;
    if (parser_url_normalize(x->item.url, loc, x->w->e->cfg->max_url_length, &url) == 0)
        add_link(x, url, strlen(url));
    free(url);
}

/* ---- callbacks ------------------------------------------------------------ */

static char *header_value(const char *line, size_t n, const char *name)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return NULL;
    const char *v = line + nl + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    return strndup(v, (size_t)(end - v));
}

static void reset_headers(xfer_t *x)
{
    free(x->ctype);
    free(x->location);
    free(x->xrobots);
    x->ctype = x->location = x->xrobots = NULL;
    x->retry_after_ms = 0;
    x->resphead.len = 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    if (len >= 5 && !strncmp(data, "HTTP/", 5))
        reset_headers(x); /* a new response (after 1xx or a followed redirect) */
    if (x->w->e->warc && x->kind == XF_PAGE)
        buf_add(&x->resphead, data, len);
    char *v;
    if ((v = header_value(data, len, "Content-Type"))) {
        free(x->ctype);
        x->ctype = v;
    } else if ((v = header_value(data, len, "Location"))) {
        free(x->location);
        x->location = v;
    } else if ((v = header_value(data, len, "X-Robots-Tag"))) {
        free(x->xrobots);
        x->xrobots = v;
    } else if ((v = header_value(data, len, "Retry-After"))) {
        char *end;
        unsigned long s = strtoul(v, &end, 10);
        if (end != v && *end == '\0')
            x->retry_after_ms = s > 86400 ? 86400000u : (uint32_t)s * 1000u;
        free(v);
    }
    return len;
}

static void start_parser(xfer_t *x)
{
    x->parse_started = 1;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    const crawl_config_t *c = x->w->e->cfg;
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
    x->parser = parser_new(&pc, x->item.url, x->ctype, x->xrobots, on_link, x);
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    x->bytes += len;
    if (x->kind == XF_ROBOTS) {
        size_t room = ENGINE_ROBOTS_MAX_BYTES - x->body.len;
        return buf_add(&x->body, data, len < room ? len : room) == 0 && len <= room ? len : 0;
    }
    if (x->bytes > x->w->e->cfg->max_size) {
        x->too_large = 1;
        return 0;
    }
    if (!x->parse_started)
        start_parser(x);
    if (x->parser)
        parser_feed(x->parser, data, len);
    else if (x->sitemap)
        sitemap_feed(x->sitemap, data, len);
    if (x->w->e->warc)
        buf_add(&x->body, data, len);
    return len;
}

static int on_debug(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
    (void)h;
    xfer_t *x = ud;
    if (type == CURLINFO_HEADER_OUT) {
        x->reqhead.len = 0;
        buf_add(&x->reqhead, data, size);
    }
    return 0;
}

/* ---- transfers ------------------------------------------------------------ */

static void xfer_clear(xfer_t *x)
{
    frontier_item_clear(&x->item);
    free(x->origin);
    x->origin = NULL;
    reset_headers(x);
    parser_free(x->parser);
    x->parser = NULL;
    sitemap_free(x->sitemap);
    x->sitemap = NULL;
    for (size_t i = 0; i < x->nlinks; i++)
        free(x->links[i]);
    x->nlinks = 0;
    if (x->seen)
        memset(x->seen, 0, x->seen_cap * sizeof *x->seen);
    x->nseen = 0;
    x->body.len = x->reqhead.len = x->resphead.len = 0;
    x->blocked = x->too_large = x->parse_started = x->seed_host = 0;
    x->bytes = 0;
    x->ip[0] = x->errbuf[0] = '\0';
}

xfer_t *fetch_get(worker_t *w, xfer_kind_t kind, const char *url)
{
    xfer_t *x = w->free_xfers;
    if (x) {
        w->free_xfers = x->next_free;
        curl_easy_reset(x->h);
    } else {
        x = calloc(1, sizeof *x);
        if (!x || !(x->h = curl_easy_init())) {
            free(x);
            return NULL;
        }
    }
    x->kind = kind;
    x->w = w;
    x->next_free = NULL;
    if (parser_url_host(url, x->host, sizeof x->host) < 0)
        x->host[0] = '\0';
    x->seed_host = scope_is_seed_host(w->scope, x->host);
    return x;
}

void fetch_put(worker_t *w, xfer_t *x)
{
    xfer_clear(x);
    x->next_free = w->free_xfers;
    w->free_xfers = x;
}

void fetch_free_pool(worker_t *w)
{
    while (w->free_xfers) {
        xfer_t *x = w->free_xfers;
        w->free_xfers = x->next_free;
        curl_easy_cleanup(x->h);
        free(x->links);
        free(x->seen);
        buf_free(&x->body);
        buf_free(&x->reqhead);
        buf_free(&x->resphead);
        free(x);
    }
}

int fetch_start(worker_t *w, xfer_t *x)
{
    const crawl_config_t *c = w->e->cfg;
    CURL *h = x->h;
    const char *url = x->kind == XF_PAGE ? x->item.url : NULL;
    char robots_url[4096];
    if (x->kind == XF_ROBOTS) {
        snprintf(robots_url, sizeof robots_url, "%s/robots.txt", x->origin);
        url = robots_url;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PRIVATE, x);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_SHARE, w->e->share);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, x->kind == XF_ROBOTS ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)c->low_speed_bps);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)c->low_speed_s);
    if (x->kind == XF_PAGE)
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_size);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    if (w->e->warc && x->kind == XF_PAGE) {
        curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_debug);
        curl_easy_setopt(h, CURLOPT_DEBUGDATA, x);
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    }
    x->t_start = engine_now_ms();
    if (curl_multi_add_handle(w->multi, h) != CURLM_OK)
        return -1;
    w->active++;
    x->prev = NULL;
    x->next = w->running;
    if (w->running)
        w->running->prev = x;
    w->running = x;
    return 0;
}

void fetch_unlink(worker_t *w, xfer_t *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        w->running = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    w->active--;
}

/* ---- outcomes ------------------------------------------------------------- */

int done_push(worker_t *w, frontier_item_t *item, int status, const char *error_kind,
              const char *error_text)
{
    if (w->ndone == w->done_cap) {
        size_t cap = w->done_cap ? w->done_cap * 2 : 64;
        done_t *n = realloc(w->done, cap * sizeof *n);
        if (!n)
            return -1;
        w->done = n;
        w->done_cap = cap;
    }
    done_t *d = &w->done[w->ndone++];
    memset(d, 0, sizeof *d);
    d->item = *item;
    memset(item, 0, sizeof *item); /* the done entry owns the strings now */
    d->status = status;
    d->error_kind = error_kind ? strdup(error_kind) : NULL;
    d->error_text = error_text && *error_text ? strdup(error_text) : NULL;
    d->link_depth = d->item.depth + 1;
    return 0;
}

static const char *curl_error_kind(CURLcode res)
{
    switch (res) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return "dns";
    case CURLE_COULDNT_CONNECT:
        return "connect";
    case CURLE_OPERATION_TIMEDOUT:
        return "timeout";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
        return "tls";
    case CURLE_FILESIZE_EXCEEDED:
        return "too-large";
    case CURLE_UNSUPPORTED_PROTOCOL:
        return "protocol";
    case CURLE_TOO_MANY_REDIRECTS:
        return "redirects";
    default:
        return "network";
    }
}

/* Transport errors worth another try later. */
static int retryable(CURLcode res)
{
    return res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_CONNECT ||
           res == CURLE_OPERATION_TIMEDOUT || res == CURLE_RECV_ERROR || res == CURLE_SEND_ERROR ||
           res == CURLE_GOT_NOTHING || res == CURLE_PARTIAL_FILE || res == CURLE_HTTP2 ||
           res == CURLE_HTTP2_STREAM || res == CURLE_SSL_CONNECT_ERROR;
}

static void write_record(worker_t *w, const done_t *d)
{
    if (!w->e->out)
        return;
    out_record_t r = {.url = d->item.url,
                      .status = d->status,
                      .content_type = d->ctype,
                      .depth = d->item.depth,
                      .bytes = d->bytes,
                      .links_found = (uint32_t)d->links_found,
                      .links_new = (uint32_t)d->nnew,
                      .fetch_ms = d->fetch_ms,
                      .error_kind = d->error_kind,
                      .error_text = d->error_text,
                      .location = d->location,
                      .canonical = d->canonical,
                      .timestamp_ms = (int64_t)engine_wall_ms()};
    if (out_write(w->e->out, &r) < 0 && !atomic_exchange(&w->e->out_failed, 1))
        fprintf(stderr, "crawler: --out: %s\n", out_error(w->e->out));
}

/* A failure worth another try: to the frontier's delayed set, or on the last
 * try to its dead-letter list (and then it is finished: one output record).
 * d describes the attempt (item, status, error, bytes, time). */
void fetch_retry(worker_t *w, const done_t *d, uint32_t retry_after_ms)
{
    frontier_outcome_t o = {.status = d->status, .error = d->error_kind, .bytes = d->bytes};
    atomic_fetch_add(&w->e->retried, 1);
    int rc = frontier_retry(w->fr, &d->item, &o, retry_after_ms);
    if (rc == FRONTIER_ELEASE)
        return; /* lease lost: another worker owns the URL now */
    if (rc < 0) {
        w->failed = 1;
        return;
    }
    if (d->item.tries + 1 >= w->e->cfg->max_tries) {
        write_record(w, d);
        atomic_fetch_add(&w->e->pages, 1);
        atomic_fetch_add(&w->e->errors, 1);
    }
}

static void retry_or_fail(worker_t *w, xfer_t *x, int status, const char *kind, const char *text)
{
    done_t d = {.item = x->item,
                .status = status,
                .bytes = x->bytes,
                .fetch_ms = engine_now_ms() - x->t_start,
                .ctype = x->ctype,
                .error_kind = (char *)kind,
                .error_text = (char *)text};
    fetch_retry(w, &d, x->retry_after_ms);
}

static void take_links(done_t *d, xfer_t *x)
{
    d->links = x->links;
    d->nlinks = x->nlinks;
    d->links_found = x->nlinks;
    x->links = NULL;
    x->nlinks = x->links_cap = 0;
    free(x->seen);
    x->seen = NULL;
    x->seen_cap = x->nseen = 0;
}

static void redirect_link(worker_t *w, xfer_t *x)
{
    char *target = NULL;
    if (!x->location ||
        parser_url_normalize(x->item.url, x->location, w->e->cfg->max_url_length, &target) < 0)
        return;
    add_link(x, target, strlen(target));
    free(target);
}

static void write_warc(worker_t *w, xfer_t *x)
{
    if (!w->e->warc || !x->resphead.len)
        return;
    warc_exchange_t ex = {.target_uri = x->item.url,
                          .ip = x->ip[0] ? x->ip : NULL,
                          .request = x->reqhead.p,
                          .request_len = x->reqhead.len,
                          .response_head = x->resphead.p,
                          .response_head_len = x->resphead.len,
                          .body = x->body.p,
                          .body_len = x->body.len,
                          .body_decoded = 1,
                          .truncated = x->too_large,
                          .fetch_time_ms =
                              (int64_t)(engine_wall_ms() - (engine_now_ms() - x->t_start))};
    if (warc_write_exchange(w->e->warc, &ex) < 0 && !atomic_exchange(&w->e->warc_failed, 1))
        fprintf(stderr, "crawler: --warc: %s\n", warc_error(w->e->warc));
}

/* done_push() for a transfer: also records its type, size and time. */
static done_t *push_xfer(worker_t *w, xfer_t *x, int status, const char *kind, const char *text)
{
    uint64_t ms = engine_now_ms() - x->t_start;
    if (done_push(w, &x->item, status, kind, text) < 0)
        return NULL;
    done_t *d = &w->done[w->ndone - 1];
    d->ctype = x->ctype ? strdup(x->ctype) : NULL;
    d->bytes = x->bytes;
    d->fetch_ms = ms;
    if (kind)
        atomic_fetch_add(&w->e->errors, 1);
    return d;
}

/* A page transfer ended: decide what it becomes. */
void fetch_page_done(worker_t *w, xfer_t *x, CURLcode res)
{
    long code = 0;
    char *ip = NULL;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
        snprintf(x->ip, sizeof x->ip, "%s", ip);
    atomic_fetch_add(&w->e->bytes, x->bytes);
    const char *etext = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    if (x->blocked) {
        push_xfer(w, x, 0, "blocked", "address is private/loopback (see --allow-private)");
    } else if (res != CURLE_OK && !(x->too_large && res == CURLE_WRITE_ERROR)) {
        if (retryable(res))
            retry_or_fail(w, x, (int)code, curl_error_kind(res), etext);
        else
            push_xfer(w, x, (int)code, curl_error_kind(res), etext);
    } else if (code == 429 || code >= 500) {
        retry_or_fail(w, x, (int)code, code == 429 ? "http-429" : "http-5xx", NULL);
    } else {
        if (code >= 300 && code < 400)
            redirect_link(w, x);
        if (x->parser)
            parser_finish(x->parser);
        if (x->sitemap)
            sitemap_finish(x->sitemap);
        const char *canon = x->parser ? parser_canonical(x->parser) : NULL;
        write_warc(w, x);
        done_t *d = push_xfer(w, x, (int)code, x->too_large ? "too-large" : NULL,
                              x->too_large ? "body larger than --max-size" : NULL);
        if (d) {
            if (x->parser && parser_nofollow(x->parser)) { /* a late meta robots nofollow */
                for (size_t i = 0; i < x->nlinks; i++)
                    free(x->links[i]);
                x->nlinks = 0;
            }
            take_links(d, x);
            if (code >= 300 && code < 400)
                d->link_depth = d->item.depth; /* a redirect target keeps the depth */
            d->canonical = canon ? strdup(canon) : NULL;
            d->location = x->location ? strdup(x->location) : NULL;
        }
    }
}

static void done_free(done_t *d)
{
    frontier_item_clear(&d->item);
    for (size_t j = 0; j < d->nlinks; j++)
        free(d->links[j]);
    free(d->links);
    free(d->ctype);
    free(d->error_kind);
    free(d->error_text);
    free(d->canonical);
    free(d->location);
}

/* Writes the output records of the batch in flight, once its replies are
 * read (rc: what frontier_finish_end returned), and frees it. */
static void done_finished(worker_t *w, int rc)
{
    if (rc < 0 && rc != FRONTIER_ELEASE) {
        fprintf(stderr, "crawler: worker %d: finishing pages failed: %s\n", w->idx,
                frontier_strerror(rc));
        w->failed = 1;
    }
    for (size_t i = 0; i < w->nfin; i++) {
        done_t *d = &w->fin_done[i];
        if (rc == 0 || rc == FRONTIER_ELEASE)
            write_record(w, d);
        w->pages++;
        atomic_fetch_add(&w->e->pages, 1);
        done_free(d);
    }
    w->nfin = 0;
    w->claim_after_ms = 0; /* finishing freed per-host slots: claim again now */
}

int done_complete(worker_t *w, int block)
{
    if (!w->fin_pending)
        return 0;
    if (!block) { /* only when the first bytes of the reply are there */
        struct pollfd pfd = {.fd = w->fin_rc->fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0)
            return 0;
    }
    int rc = frontier_finish_end(w->fin_fr, w->fin_pending);
    w->fin_pending = NULL;
    done_finished(w, rc);
    return 1;
}

/* The pages of this loop turn become the batch in flight: one pipelined
 * send (frontier_finish_start); the replies are read later. */
void done_flush(worker_t *w, int wait)
{
    done_complete(w, 1);
    if (!w->ndone)
        return;
    if (w->fin_cap < w->ndone) {
        frontier_done_t *np = realloc(w->fin_pages, w->ndone * sizeof *np);
        if (!np) {
            w->failed = 1;
            return;
        }
        w->fin_pages = np;
        w->fin_cap = w->ndone;
    }
    done_t *t = w->fin_done; /* swap the buffers: done -> in flight */
    size_t tcap = w->fin_done_cap;
    w->fin_done = w->done;
    w->fin_done_cap = w->done_cap;
    w->nfin = w->ndone;
    w->done = t;
    w->done_cap = tcap;
    w->ndone = 0;
    for (size_t i = 0; i < w->nfin; i++) {
        done_t *d = &w->fin_done[i];
        w->fin_pages[i] = (frontier_done_t){
            .item = &d->item,
            .outcome = {.status = d->status, .error = d->error_kind, .bytes = d->bytes},
            .links = (const char *const *)d->links,
            .nlinks = d->nlinks,
            .link_depth = d->link_depth,
            .nnew = &d->nnew};
    }
    int rc = frontier_finish_start(w->fin_fr, w->fin_pages, w->nfin, &w->fin_pending);
    if (rc < 0)
        done_finished(w, rc);
    else if (wait)
        done_complete(w, 1);
}

/* Starts fetching a leased URL (the transfer takes the item over). */
void fetch_page(worker_t *w, frontier_item_t *item)
{
    xfer_t *x = fetch_get(w, XF_PAGE, item->url);
    if (!x) {
        done_push(w, item, 0, "internal", "out of memory");
        return;
    }
    x->item = *item;
    memset(item, 0, sizeof *item);
    if (fetch_start(w, x) < 0) {
        done_push(w, &x->item, 0, "internal", "cannot start the transfer");
        fetch_put(w, x);
    }
}
