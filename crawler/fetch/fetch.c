/*
 * fetch.c -- the transfers of one worker thread (fetch.h): the pool, the
 * callbacks that stream a body into its parser, starting and cancelling;
 * fetch_result.c makes the results.
 *
 * DESIGN: a fetch_t owns one netloop (netloop.c: multi handles sharded by
 * host, one epoll set, curl_multi_socket_action: a wake-up costs the
 * sockets that are ready, not the transfers that exist) and every easy
 * handle of its thread.  Each transfer is an xfer_t (fetch_internal.h): its
 * easy handle (pooled and reused, so that connections stay in the multi
 * handles' caches and are kept alive between pages of one host), the
 * leased item of a page or the origin of a robots.txt, the headers that
 * matter (Content-Type, Location, X-Robots-Tag, Retry-After), the links
 * found so far with a page-local set of their hashes (so a menu repeated
 * on a page costs one scope check), and, when recording for WARC, the raw
 * request head, response head and body.
 *   - A page body streams into the HTML parser (or, with --sitemaps and an
 *     XML type, the sitemap parser) as it arrives; links are normalized by
 *     the parser, de-duplicated, filtered by the scope and kept.
 *   - The private-address guard (CURLOPT_OPENSOCKETFUNCTION) refuses
 *     loopback/private/link-local/multicast addresses (scope_guard_refuses)
 *     unless the host is a seed host, the address is in an
 *     --allow-private-range, or --allow-private is given.
 *   - libcurl never follows a redirect, so the guard knows each hop's host
 *     (fetch_result.c: robots.txt hop by hop, a page redirect as a link).
 *   - A robots.txt body is kept up to FETCH_ROBOTS_MAX_BYTES.
 * Memory per transfer in flight is kept small: a FETCH_RECV_BUFFER receive
 * buffer (libcurl holds it from connect to done), the parser made on the
 * first body byte and freed the moment the transfer finishes (on_done,
 * right after the socket action that finished it, makes its result and
 * queues it on the done list until fetch_next hands it out).  The transfer
 * of the last result is held until the next fetch_next() so the result may
 * point into its buffers.
 * A robots.txt redirect to the same origin waits --delay before its hop
 * starts (the deferred list: started by fetch_perform when due).
 * At most max_running transfers are in the loop: one started past that
 * (page, robots.txt or a deferred hop) joins the waiting list, a FIFO, and
 * starts from on_done the moment a transfer ends, in the same wake-up; so
 * the caller may hold a few claimed URLs more than its slots and a slot
 * never idles for a Redis round trip (engine.c).
 * Invariants: `running` lists exactly the transfers in the loop and
 * `active` counts them (<= max_running, but for a robots.txt hop that
 * follows its redirect at once); `ndeferred` counts the deferred list, and
 * the done and waiting lists count theirs (xfer_fifo_t); a transfer is in exactly one
 * of running, the done list, the deferred list, the waiting list, the free
 * pool, or `held`.  Redis keys: none.
 */
#include "fetch.h"

#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <xxhash.h>

#include "clock.h"
#include "fetch_internal.h"
#include "netloop.h"
#include "outcome.h"
#include "parser.h"
#include "sitemap.h"

int fetch_buf_add(buf_t *b, const void *data, size_t n)
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

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    xfer_t *x = clientp;
    if (!x->f->cfg->allow_private && !x->seed_host && scope_guard_refuses(x->f->scope, &a->addr)) {
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

void fetch_add_link(xfer_t *x, const char *url, size_t len)
{
    /* de-duplicate first: menus repeat links, and the scope check costs more */
    if (seen_insert(x, XXH3_64bits(url, len)) != 1 || !scope_allows(x->f->scope, url))
        return;
    if (x->nlinks >= x->f->cfg->max_links_per_page) {
        x->links_over_cap++; /* not followed: the page is flagged in its record */
        return;
    }
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
    fetch_add_link(ud, url, len);
}

static void on_loc(void *ud, const char *loc, size_t len)
{
    (void)len;
    xfer_t *x = ud;
    char *url = NULL;
    if (parser_url_normalize(x->item.url, loc, x->f->cfg->max_url_length, &url) == 0)
        fetch_add_link(x, url, strlen(url));
    free(url);
}

/* ---- callbacks ------------------------------------------------------------ */

void fetch_reset_headers(xfer_t *x)
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
        fetch_reset_headers(x); /* a new response (after 1xx or a followed redirect) */
    if (x->f->record && x->kind == XF_PAGE)
        fetch_buf_add(&x->resphead, data, len);
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
    } else if ((v = outcome_header_value(data, len, "Retry-After"))) {
        x->retry_after_ms = outcome_retry_after_ms(v, x->f->cfg->max_retry_after_ms);
        free(v);
    }
    return len;
}

static void start_parser(xfer_t *x)
{
    x->parse_started = 1;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    const crawl_config_t *c = x->f->cfg;
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
        size_t room = FETCH_ROBOTS_MAX_BYTES - x->body.len;
        return fetch_buf_add(&x->body, data, len < room ? len : room) == 0 && len <= room ? len : 0;
    }
    if (x->bytes > x->f->cfg->max_size) {
        x->too_large = 1;
        return 0;
    }
    if (!x->parse_started)
        start_parser(x);
    if (x->parser)
        parser_feed(x->parser, data, len);
    else if (x->sitemap)
        sitemap_feed(x->sitemap, data, len);
    if (x->f->record)
        fetch_buf_add(&x->body, data, len);
    return len;
}

static int on_debug(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
    (void)h;
    xfer_t *x = ud;
    if (type == CURLINFO_HEADER_OUT) {
        x->reqhead.len = 0;
        fetch_buf_add(&x->reqhead, data, size);
    }
    return 0;
}

/* ---- lists of transfers --------------------------------------------------- */

static void fifo_push(xfer_fifo_t *q, xfer_t *x)
{
    x->next_free = NULL;
    if (q->tail)
        q->tail->next_free = x;
    else
        q->head = x;
    q->tail = x;
    q->n++;
}

/* The first transfer off q, or NULL. */
static xfer_t *fifo_pop(xfer_fifo_t *q)
{
    xfer_t *x = q->head;
    if (x) {
        q->head = x->next_free;
        if (!q->head)
            q->tail = NULL;
        x->next_free = NULL;
        q->n--;
    }
    return x;
}

/* ---- the pool --------------------------------------------------------------- */

static void xfer_clear(xfer_t *x)
{
    frontier_item_clear(&x->item);
    free(x->origin);
    free(x->next_url);
    x->origin = x->next_url = NULL;
    fetch_reset_headers(x);
    parser_free(x->parser);
    x->parser = NULL;
    sitemap_free(x->sitemap);
    x->sitemap = NULL;
    for (size_t i = 0; i < x->nlinks; i++)
        free(x->links[i]);
    x->nlinks = 0;
    x->links_over_cap = 0;
    if (x->seen)
        memset(x->seen, 0, x->seen_cap * sizeof *x->seen);
    x->nseen = 0;
    x->body.len = x->reqhead.len = x->resphead.len = 0;
    x->blocked = x->too_large = x->parse_started = x->seed_host = 0;
    x->hops = 0;
    x->bytes = 0;
    x->ip[0] = x->errbuf[0] = '\0';
}

/* The parser, sitemap parser and link set of a finished transfer (its
 * result made): freed now, not when the pooled transfer is reused. */
static void drop_parse_state(xfer_t *x)
{
    parser_free(x->parser);
    x->parser = NULL;
    sitemap_free(x->sitemap);
    x->sitemap = NULL;
    free(x->seen);
    x->seen = NULL;
    x->seen_cap = x->nseen = 0;
}

/* The host the guard judges for x: url's, and whether it is a seed host. */
void fetch_aim(xfer_t *x, const char *url)
{
    if (parser_url_host(url, x->host, sizeof x->host) < 0)
        x->host[0] = '\0';
    x->seed_host = scope_is_seed_host(x->f->scope, x->host);
}

static xfer_t *get_xfer(fetch_t *f, xfer_kind_t kind, const char *url)
{
    xfer_t *x = f->free_xfers;
    if (x) {
        f->free_xfers = x->next_free;
        curl_easy_reset(x->h);
    } else {
        x = calloc(1, sizeof *x);
        if (!x || !(x->h = curl_easy_init())) {
            free(x);
            return NULL;
        }
    }
    x->kind = kind;
    x->f = f;
    x->next_free = NULL;
    fetch_aim(x, url);
    return x;
}

static void put_xfer(fetch_t *f, xfer_t *x)
{
    xfer_clear(x);
    x->next_free = f->free_xfers;
    f->free_xfers = x;
}

static void free_xfer(xfer_t *x)
{
    curl_easy_cleanup(x->h);
    free(x->links);
    free(x->seen);
    buf_free(&x->body);
    buf_free(&x->reqhead);
    buf_free(&x->resphead);
    free(x);
}

static void unlink_xfer(fetch_t *f, xfer_t *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        f->running = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    f->active--;
}

static void on_done(void *ud, CURL *h, CURLcode res);
/* x ended with res (in no list): its result made and queued on the done
 * list, or x restarted (a robots.txt redirect followed). */
static void finished(fetch_t *f, xfer_t *x, CURLcode res);

fetch_t *fetch_new(const crawl_config_t *cfg, size_t max_running, size_t max_connects,
                   CURLSH *share, const scope_t *scope, int record, char *err, size_t errlen)
{
    fetch_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *f = (fetch_t){.cfg = cfg,
                   .share = share,
                   .scope = scope,
                   .record = record,
                   .max_running = max_running ? max_running : 1};
    if (!(f->loop = netloop_new(max_connects, on_done, f, err, errlen))) {
        free(f);
        return NULL;
    }
    return f;
}

void fetch_free(fetch_t *f)
{
    if (!f)
        return;
    if (f->held)
        put_xfer(f, f->held);
    frontier_item_t item;
    while ((f->done.head || f->deferred || f->waiting.head) && fetch_cancel(f, &item))
        frontier_item_clear(&item);
    while (f->running) {
        xfer_t *x = f->running;
        netloop_remove(f->loop, x->h, x->shard);
        unlink_xfer(f, x);
        put_xfer(f, x);
    }
    while (f->free_xfers) {
        xfer_t *x = f->free_xfers;
        f->free_xfers = x->next_free;
        free_xfer(x);
    }
    netloop_free(f->loop);
    free(f);
}

/* ---- starting ----------------------------------------------------------------- */

/* The DNS cache timeout of the next transfer.  libcurl (7.88) walks the
 * whole DNS cache at the end of every transfer to prune it, unless the
 * transfer's timeout is -1: on a broad crawl, thousands of entries a page.
 * So one transfer a second prunes (entries unused for FETCH_DNS_TTL_S go),
 * the others do not; an entry is thus at most a second older than the TTL. */
static long dns_timeout(fetch_t *f)
{
    uint64_t now = clock_now_ms();
    if (now < f->prune_at)
        return -1L;
    f->prune_at = now + 1000;
    return FETCH_DNS_TTL_S;
}

static void set_options(fetch_t *f, xfer_t *x, const char *url)
{
    const crawl_config_t *c = f->cfg;
    CURL *h = x->h;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PRIVATE, x);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_SHARE, f->share);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* robots_follow, redirect_link */
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, FETCH_RECV_BUFFER);
    curl_easy_setopt(h, CURLOPT_DNS_CACHE_TIMEOUT, dns_timeout(f));
    uint64_t used = x->kind == XF_ROBOTS && x->hops ? clock_now_ms() - x->t_first : 0;
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     used < c->timeout_ms ? (long)(c->timeout_ms - used) : 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)c->low_speed_bps);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)c->low_speed_s);
    if (x->kind == XF_PAGE)
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_size);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    if (f->record && x->kind == XF_PAGE) {
        curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_debug);
        curl_easy_setopt(h, CURLOPT_DEBUGDATA, x);
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    }
}

/* Adds x to the multi handle and the running list. */
int fetch_start_xfer(fetch_t *f, xfer_t *x, const char *url)
{
    set_options(f, x, url);
    x->t_start = clock_now_ms();
    if (netloop_add(f->loop, x->h, x->host, &x->shard) < 0)
        return CRAWL_EREDIS;
    f->active++;
    x->prev = NULL;
    x->next = f->running;
    if (f->running)
        f->running->prev = x;
    f->running = x;
    return 0;
}

/* x on url now, or (max_running in flight, or others waiting before it)
 * on the waiting list, url copied.  0, or an error with x untouched. */
static int launch(fetch_t *f, xfer_t *x, const char *url)
{
    if (f->active < f->max_running && !f->waiting.head)
        return fetch_start_xfer(f, x, url);
    free(x->next_url);
    if (!(x->next_url = strdup(url)))
        return CRAWL_ENOMEM;
    fifo_push(&f->waiting, x);
    return 0;
}

/* Waiting transfers started while fewer than max_running run (one that
 * cannot start ends as if it had failed to: its result says so). */
static void start_waiting(fetch_t *f)
{
    while (f->active < f->max_running && f->waiting.head) {
        xfer_t *x = fifo_pop(&f->waiting);
        char *url = x->next_url;
        x->next_url = NULL;
        if (fetch_start_xfer(f, x, url) < 0)
            finished(f, x, CURLE_FAILED_INIT);
        free(url);
    }
}

int fetch_defer_xfer(fetch_t *f, xfer_t *x, const char *url, uint64_t at_ms)
{
    free(x->next_url);
    if (!(x->next_url = strdup(url)))
        return CRAWL_ENOMEM;
    x->start_at = at_ms;
    x->next_free = f->deferred;
    f->deferred = x;
    f->ndeferred++;
    return 0;
}

/* The deferred transfers whose time has come, started (one that cannot
 * start ends as if its hop had failed: a robots.txt result, "unavailable"). */
static void start_deferred(fetch_t *f)
{
    uint64_t now = clock_now_ms();
    for (xfer_t **p = &f->deferred; *p;) {
        xfer_t *x = *p;
        if (x->start_at > now) {
            p = &x->next_free;
            continue;
        }
        *p = x->next_free;
        x->next_free = NULL;
        f->ndeferred--;
        char *url = x->next_url;
        x->next_url = NULL;
        if (launch(f, x, url) < 0)
            finished(f, x, CURLE_FAILED_INIT);
        free(url);
    }
}

/* How long fetch_wait may sleep for the deferred transfers. */
static int deferred_wait(const fetch_t *f, int ms)
{
    uint64_t now = clock_now_ms();
    for (const xfer_t *x = f->deferred; x; x = x->next_free)
        if (x->start_at <= now)
            return 0;
        else if (x->start_at - now < (uint64_t)ms)
            ms = (int)(x->start_at - now);
    return ms;
}

int fetch_start_page(fetch_t *f, frontier_item_t *item)
{
    xfer_t *x = get_xfer(f, XF_PAGE, item->url);
    if (!x)
        return CRAWL_ENOMEM;
    x->item = *item;
    int rc = launch(f, x, x->item.url);
    if (rc < 0) {
        memset(&x->item, 0, sizeof x->item); /* still the caller's */
        put_xfer(f, x);
        return rc;
    }
    memset(item, 0, sizeof *item);
    return 0;
}

int fetch_start_robots(fetch_t *f, const char *origin)
{
    char url[4096];
    int n = snprintf(url, sizeof url, "%s/robots.txt", origin);
    if (n < 0 || (size_t)n >= sizeof url)
        return CRAWL_EINVAL;
    xfer_t *x = get_xfer(f, XF_ROBOTS, origin);
    if (!x)
        return CRAWL_ENOMEM;
    x->t_first = clock_now_ms();
    int rc = (x->origin = strdup(origin)) ? launch(f, x, url) : CRAWL_ENOMEM;
    if (rc < 0)
        put_xfer(f, x);
    return rc;
}

size_t fetch_active(const fetch_t *f)
{
    return f->active + f->done.n + f->ndeferred + f->waiting.n;
}

size_t fetch_in_flight(const fetch_t *f)
{
    return f->active;
}

size_t fetch_waiting(const fetch_t *f)
{
    return f->waiting.n;
}

void fetch_perform(fetch_t *f)
{
    if (f->deferred)
        start_deferred(f);
    start_waiting(f);
    netloop_timers(f->loop);
}

void fetch_wait(fetch_t *f, const netloop_watch_t *watch, int ms)
{
    netloop_wait(f->loop, watch, f->deferred && ms > 0 ? deferred_wait(f, ms) : ms);
}

int fetch_cancel(fetch_t *f, frontier_item_t *item)
{
    memset(item, 0, sizeof *item);
    xfer_t *x = fifo_pop(&f->done);
    if (x) { /* finished, its result not taken: its page's item back */
        if (x->res.kind == FETCH_PAGE) {
            *item = x->res.page.item;
            memset(&x->res.page.item, 0, sizeof x->res.page.item);
            page_clear(&x->res.page);
        }
        put_xfer(f, x);
        return 1;
    }
    if ((x = f->deferred)) { /* a robots.txt hop not started: no item */
        f->deferred = x->next_free;
        f->ndeferred--;
        x->next_free = NULL;
        put_xfer(f, x);
        return 1;
    }
    if ((x = fifo_pop(&f->waiting))) { /* not started: a page's item back */
        if (x->kind == XF_PAGE) {
            *item = x->item;
            memset(&x->item, 0, sizeof x->item);
        }
        put_xfer(f, x);
        return 1;
    }
    if (!(x = f->running))
        return 0;
    netloop_remove(f->loop, x->h, x->shard);
    unlink_xfer(f, x);
    if (x->kind == XF_PAGE) {
        *item = x->item;
        memset(&x->item, 0, sizeof x->item);
    }
    put_xfer(f, x);
    return 1;
}

int fetch_unstart(fetch_t *f, frontier_item_t *item)
{
    memset(item, 0, sizeof *item);
    for (xfer_t **p = &f->waiting.head, *prev = NULL; *p; prev = *p, p = &(*p)->next_free) {
        xfer_t *x = *p;
        if (x->kind != XF_PAGE)
            continue;
        *p = x->next_free;
        if (f->waiting.tail == x)
            f->waiting.tail = prev;
        x->next_free = NULL;
        f->waiting.n--;
        *item = x->item;
        memset(&x->item, 0, sizeof x->item);
        put_xfer(f, x);
        return 1;
    }
    return 0;
}

void fetch_each_item(const fetch_t *f, void (*fn)(const frontier_item_t *, void *), void *ud)
{
    for (const xfer_t *x = f->running; x; x = x->next)
        if (x->kind == XF_PAGE && x->item.url)
            fn(&x->item, ud);
    for (const xfer_t *x = f->waiting.head; x; x = x->next_free)
        if (x->kind == XF_PAGE && x->item.url)
            fn(&x->item, ud);
    for (const xfer_t *x = f->done.head; x; x = x->next_free)
        if (x->res.kind == FETCH_PAGE && x->res.page.item.url)
            fn(&x->res.page.item, ud);
}

/* netloop's done callback: a transfer finished (out of its multi handle).
 * Its result is made at once, so that its parse state goes at once (a
 * burst of responses in one epoll_wait holds one parser at a time, not one
 * each), and it joins the done list; a robots.txt redirect is followed
 * instead.  The next waiting transfer takes its place at once (its request
 * goes out at the end of this wake-up: netloop_wait runs the timers). */
static void on_done(void *ud, CURL *h, CURLcode res)
{
    fetch_t *f = ud;
    xfer_t *x = NULL;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&x);
    unlink_xfer(f, x);
    finished(f, x, res);
    start_waiting(f);
}

static void finished(fetch_t *f, xfer_t *x, CURLcode res)
{
    if (fetch_result_make(f, x, res))
        return; /* a robots.txt redirect, followed */
    drop_parse_state(x);
    fifo_push(&f->done, x);
}

int fetch_next(fetch_t *f, fetch_result_t *r)
{
    if (f->held) {
        put_xfer(f, f->held);
        f->held = NULL;
    }
    xfer_t *x = fifo_pop(&f->done);
    if (!x)
        return 0;
    *r = x->res;
    memset(&x->res, 0, sizeof x->res);
    f->held = x;
    return 1;
}
