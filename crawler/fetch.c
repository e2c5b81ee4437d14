/*
 * fetch.c -- the transfers of one worker thread (fetch.h).
 *
 * DESIGN: a fetch_t owns one CURLM and every easy handle of its thread.
 * Each transfer is an xfer_t: its easy handle (pooled and reused, so that
 * connections stay in the multi handle's cache and are kept alive between
 * pages of one host), the leased item of a page or the origin of a
 * robots.txt, the headers that matter (Content-Type, Location, X-Robots-Tag,
 * Retry-After), the links found so far with a page-local set of their
 * hashes (so a menu repeated on a page costs one scope check), and, when
 * recording for WARC, the raw request head, response head and body.
 *   - A page body streams into the HTML parser (or, with --sitemaps and an
 *     XML type, the sitemap parser) as it arrives; links are normalized by
 *     the parser, de-duplicated, filtered by the scope and kept.
 *   - The private-address guard (CURLOPT_OPENSOCKETFUNCTION) refuses
 *     loopback/private/link-local/multicast addresses (scope_private_address)
 *     unless the host is a seed host or --allow-private is given.
 *   - libcurl never follows a redirect, so the guard knows each hop's host:
 *     robots_follow follows robots.txt hop by hop (scope host rules, then
 *     the guard, per hop); a page redirect is a link of its page
 *     (redirect_link: one level deeper, its hops capped by --max-redirects).
 *   - A robots.txt body is kept up to FETCH_ROBOTS_MAX_BYTES.
 * The loop: curl tells which sockets it waits on (on_socket: kept in one
 * epoll set) and when its next timeout is (on_timer); fetch_wait runs
 * curl_multi_socket_action for each ready socket and fetch_perform the due
 * timeouts, so a wake-up costs the sockets that are ready, not the
 * transfers that exist.  Memory per transfer in flight is kept small: a
 * FETCH_RECV_BUFFER receive buffer (libcurl holds it from connect to done),
 * the parser made on the first body byte and freed the moment the transfer
 * finishes (reap, right after the socket action that finished it).
 * A finished transfer becomes a fetch_result_t at once (reap: the page, its
 * error kind and text, and whether the failure is worth a retry (the
 * caller decides what to do with it), or the robots.txt body), queued on
 * the done list until fetch_next hands it out.  The transfer of the last
 * result is held until the next fetch_next() so the result may point into
 * its buffers.
 * Invariants: `running` lists exactly the transfers in the multi handle and
 * `active` counts them; `ndone` counts the done list; a transfer is in
 * exactly one of running, the done list, the free pool, or `held`.  Redis
 * keys: none.
 */
#include "fetch.h"

#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "clock.h"
#include "outcome.h"
#include "parser.h"
#include "sitemap.h"

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;

typedef enum xfer_kind { XF_PAGE, XF_ROBOTS } xfer_kind_t;

typedef struct xfer {
    xfer_kind_t kind;
    fetch_t *f;
    CURL *h;
    struct xfer *next_free;
    struct xfer *prev, *next; /* the list of running transfers */
    frontier_item_t item;     /* XF_PAGE: the leased URL */
    char *origin;             /* XF_ROBOTS: origin whose robots.txt this is */
    char host[256];           /* host of the URL (this hop's), for the private-address guard */
    unsigned hops;            /* XF_ROBOTS: redirects followed so far */
    int seed_host;            /* host is a seed host: the guard lets it through */
    int blocked;              /* the guard refused the address */
    int too_large;            /* body passed --max-size */
    int parse_started;
    parser_t *parser;
    sitemap_t *sitemap; /* --sitemaps and an XML body */
    char *ctype, *location, *xrobots;
    uint32_t retry_after_ms;
    uint64_t bytes;
    char **links;
    size_t nlinks, links_cap;
    uint64_t *seen; /* open-addressing set of link hashes (page-local dedupe) */
    size_t seen_cap, nseen;
    buf_t body;         /* robots body, or the page body when recording */
    buf_t reqhead;      /* raw request head (recording) */
    buf_t resphead;     /* raw response head (recording) */
    page_exchange_t ex; /* what fetch_result_t.exchange points to */
    fetch_result_t res; /* on the done list: its result, made when it finished */
    uint64_t t_start;
    uint64_t t_first; /* XF_ROBOTS: start of the first hop (the timeout covers all) */
    char ip[64];
    char errbuf[CURL_ERROR_SIZE];
} xfer_t;

struct fetch {
    const crawl_config_t *cfg;
    CURLSH *share;
    const scope_t *scope;
    int record; /* keep heads and bodies for WARC */
    CURLM *multi;
    int ep;            /* epoll over curl's sockets and the caller's fd */
    int extra_fd;      /* the caller's fd (fetch_wait) while in ep, else -1 */
    uint64_t timer_at; /* curl's next timeout (clock_now_ms), UINT64_MAX: none */
    uint64_t prune_at; /* when a transfer next prunes the DNS cache (dns_timeout) */
    xfer_t *free_xfers;
    xfer_t *running;               /* transfers in the multi handle */
    size_t active;                 /* how many */
    xfer_t *done_head, *done_tail; /* finished, result made, not yet taken (FIFO) */
    size_t ndone;
    xfer_t *held; /* the transfer of the last result */
};

static int buf_add(buf_t *b, const void *data, size_t n)
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
    if (!x->f->cfg->allow_private && !x->seed_host && scope_private_address(&a->addr)) {
        x->blocked = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- the event loop: curl's sockets in epoll, its one timer ------------------- */

#define TAG_CURL (1ull << 32)  /* epoll data: a socket of curl's ... */
#define TAG_EXTRA (2ull << 32) /* ... or the caller's fd */
#define FETCH_MAX_EVENTS 256   /* sockets served per epoll_wait */

/* CURLMOPT_SOCKETFUNCTION: what curl waits for on socket s.  *sockp (set by
 * curl_multi_assign) says s is in ep already. */
static int on_socket(CURL *h, curl_socket_t s, int what, void *ud, void *sockp)
{
    (void)h;
    fetch_t *f = ud;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(f->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                             .data.u64 = TAG_CURL | (uint32_t)s};
    if (s == f->extra_fd) /* the caller's fd was closed and its number reused */
        f->extra_fd = -1;
    if (sockp || epoll_ctl(f->ep, EPOLL_CTL_ADD, s, &ev) < 0)
        epoll_ctl(f->ep, EPOLL_CTL_MOD, s, &ev);
    if (!sockp)
        curl_multi_assign(f->multi, s, f);
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl's one timeout, ms from now (-1: none). */
static int on_timer(CURLM *m, long ms, void *ud)
{
    (void)m;
    fetch_t *f = ud;
    f->timer_at = ms < 0 ? UINT64_MAX : clock_now_ms() + (uint64_t)ms;
    return 0;
}

static void reap(fetch_t *f);

static void run_timer(fetch_t *f)
{
    int still;
    if (f->timer_at > clock_now_ms())
        return;
    f->timer_at = UINT64_MAX; /* curl sets the next one */
    curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &still);
    reap(f);
}

/* Keeps the caller's fd (-1: none) in ep, level-triggered for reading.  It
 * is added again on every call: a connection closed and reopened under the
 * same number left ep on close. */
static void watch_extra(fetch_t *f, int fd)
{
    if (f->extra_fd >= 0 && f->extra_fd != fd)
        epoll_ctl(f->ep, EPOLL_CTL_DEL, f->extra_fd, NULL); /* may be closed: no matter */
    f->extra_fd = -1;
    if (fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_EXTRA | (uint32_t)fd};
    if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) == 0 || errno == EEXIST)
        f->extra_fd = fd;
}

/* Serves the sockets that are ready, waiting up to ms for one. */
static void serve(fetch_t *f, int ms)
{
    struct epoll_event ev[FETCH_MAX_EVENTS];
    int n = epoll_wait(f->ep, ev, FETCH_MAX_EVENTS, ms);
    for (int i = 0; i < n; i++) {
        if ((ev[i].data.u64 & ~0xffffffffull) != TAG_CURL)
            continue; /* the caller's fd: it only wakes us */
        int mask = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                   (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                   (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        int still;
        curl_multi_socket_action(f->multi, (curl_socket_t)(uint32_t)ev[i].data.u64, mask, &still);
        reap(f);
    }
    run_timer(f);
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
    if (x->nlinks >= FETCH_MAX_LINKS_PER_PAGE || seen_insert(x, XXH3_64bits(url, len)) != 1 ||
        !scope_allows(x->f->scope, url))
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
    if (parser_url_normalize(x->item.url, loc, x->f->cfg->max_url_length, &url) == 0)
        add_link(x, url, strlen(url));
    free(url);
}

/* ---- callbacks ------------------------------------------------------------ */

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
    if (x->f->record && x->kind == XF_PAGE)
        buf_add(&x->resphead, data, len);
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
        return buf_add(&x->body, data, len < room ? len : room) == 0 && len <= room ? len : 0;
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

/* ---- the pool --------------------------------------------------------------- */

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
static void aim(xfer_t *x, const char *url)
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
    aim(x, url);
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

fetch_t *fetch_new(const crawl_config_t *cfg, size_t max_connects, CURLSH *share,
                   const scope_t *scope, int record, char *err, size_t errlen)
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
                   .extra_fd = -1,
                   .timer_at = UINT64_MAX};
    if ((f->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        free(f);
        return NULL;
    }
    if (!(f->multi = curl_multi_init())) {
        snprintf(err, errlen, "curl_multi_init failed");
        close(f->ep);
        free(f);
        return NULL;
    }
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
    curl_multi_setopt(f->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(f->multi, CURLMOPT_MAXCONNECTS, (long)max_connects);
    return f;
}

void fetch_free(fetch_t *f)
{
    if (!f)
        return;
    if (f->held)
        put_xfer(f, f->held);
    frontier_item_t item;
    while (f->done_head && fetch_cancel(f, &item))
        frontier_item_clear(&item);
    while (f->running) {
        xfer_t *x = f->running;
        curl_multi_remove_handle(f->multi, x->h);
        unlink_xfer(f, x);
        put_xfer(f, x);
    }
    while (f->free_xfers) {
        xfer_t *x = f->free_xfers;
        f->free_xfers = x->next_free;
        free_xfer(x);
    }
    curl_multi_cleanup(f->multi);
    close(f->ep);
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
static int start_xfer(fetch_t *f, xfer_t *x, const char *url)
{
    set_options(f, x, url);
    x->t_start = clock_now_ms();
    if (curl_multi_add_handle(f->multi, x->h) != CURLM_OK)
        return CRAWL_EREDIS;
    f->active++;
    x->prev = NULL;
    x->next = f->running;
    if (f->running)
        f->running->prev = x;
    f->running = x;
    return 0;
}

int fetch_start_page(fetch_t *f, frontier_item_t *item)
{
    xfer_t *x = get_xfer(f, XF_PAGE, item->url);
    if (!x)
        return CRAWL_ENOMEM;
    x->item = *item;
    int rc = start_xfer(f, x, x->item.url);
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
    int rc = (x->origin = strdup(origin)) ? start_xfer(f, x, url) : CRAWL_ENOMEM;
    if (rc < 0)
        put_xfer(f, x);
    return rc;
}

size_t fetch_active(const fetch_t *f)
{
    return f->active + f->ndone;
}

void fetch_perform(fetch_t *f)
{
    run_timer(f);
}

void fetch_wait(fetch_t *f, int fd, int ms)
{
    watch_extra(f, fd);
    uint64_t now = clock_now_ms();
    if (f->timer_at <= now)
        ms = 0;
    else if (f->timer_at - now < (uint64_t)ms)
        ms = (int)(f->timer_at - now);
    serve(f, ms < 0 ? 0 : ms);
}

/* The next finished transfer off the done list, or NULL. */
static xfer_t *pop_done(fetch_t *f)
{
    xfer_t *x = f->done_head;
    if (x) {
        f->done_head = x->next_free;
        if (!f->done_head)
            f->done_tail = NULL;
        x->next_free = NULL;
        f->ndone--;
    }
    return x;
}

int fetch_cancel(fetch_t *f, frontier_item_t *item)
{
    memset(item, 0, sizeof *item);
    xfer_t *x = pop_done(f);
    if (x) { /* finished, its result not taken: its page's item back */
        if (x->res.kind == FETCH_PAGE) {
            *item = x->res.page.item;
            memset(&x->res.page.item, 0, sizeof x->res.page.item);
            page_clear(&x->res.page);
        }
        put_xfer(f, x);
        return 1;
    }
    if (!(x = f->running))
        return 0;
    curl_multi_remove_handle(f->multi, x->h);
    unlink_xfer(f, x);
    if (x->kind == XF_PAGE) {
        *item = x->item;
        memset(&x->item, 0, sizeof x->item);
    }
    put_xfer(f, x);
    return 1;
}

void fetch_each_item(const fetch_t *f, void (*fn)(const frontier_item_t *, void *), void *ud)
{
    for (const xfer_t *x = f->running; x; x = x->next)
        if (x->kind == XF_PAGE && x->item.url)
            fn(&x->item, ud);
    for (const xfer_t *x = f->done_head; x; x = x->next_free)
        if (x->res.kind == FETCH_PAGE && x->res.page.item.url)
            fn(&x->res.page.item, ud);
}

/* ---- results -------------------------------------------------------------------- */

/* The page of x's item (taken over) with its type, size and time. */
static void fill_page(xfer_t *x, fetch_result_t *r, long status, const char *kind, const char *text)
{
    r->kind = FETCH_PAGE;
    r->retry_after_ms = x->retry_after_ms;
    page_init(&r->page, &x->item, (int)status, kind, text);
    r->page.ctype = x->ctype ? strdup(x->ctype) : NULL;
    r->page.bytes = x->bytes;
    r->page.fetch_ms = clock_now_ms() - x->t_start;
}

static void take_links(page_t *p, xfer_t *x)
{
    p->links = x->links;
    p->nlinks = x->nlinks;
    x->links = NULL;
    x->nlinks = x->links_cap = 0;
    free(x->seen);
    x->seen = NULL;
    x->seen_cap = x->nseen = 0;
}

/* A 3xx page's Location as its one link (scope-filtered like any link):
 * 1 if it was a URL, else 0.  Past --max-redirects hops in a row it is not
 * added, and *too_many is set. */
static int redirect_link(xfer_t *x, int *too_many)
{
    char *target = NULL;
    if (!x->location ||
        parser_url_normalize(x->item.url, x->location, x->f->cfg->max_url_length, &target) < 0)
        return 0;
    *too_many = x->item.hops >= x->f->cfg->max_redirects;
    if (!*too_many)
        add_link(x, target, strlen(target));
    free(target);
    return 1;
}

static const page_exchange_t *exchange_of(xfer_t *x)
{
    if (!x->f->record || !x->resphead.len)
        return NULL;
    x->ex =
        (page_exchange_t){.request = x->reqhead.p,
                          .request_len = x->reqhead.len,
                          .response_head = x->resphead.p,
                          .response_head_len = x->resphead.len,
                          .body = x->body.p,
                          .body_len = x->body.len,
                          .ip = x->ip[0] ? x->ip : NULL,
                          .truncated = x->too_large,
                          .time_ms = (int64_t)(clock_wall_ms() - (clock_now_ms() - x->t_start))};
    return &x->ex;
}

/* A response was read (any status below 500 but 429): the page with its links. */
static void read_page(xfer_t *x, long code, fetch_result_t *r)
{
    int too_many = 0, redirect = code >= 300 && code < 400 && redirect_link(x, &too_many);
    uint32_t hops = x->item.hops;
    char text[96];
    snprintf(text, sizeof text, "more than %u redirects in a row (--max-redirects)",
             x->f->cfg->max_redirects);
    if (x->parser)
        parser_finish(x->parser);
    if (x->sitemap)
        sitemap_finish(x->sitemap);
    const char *canon = x->parser ? parser_canonical(x->parser) : NULL;
    r->exchange = exchange_of(x);
    const char *kind = x->too_large ? "too-large" : too_many ? "redirects" : NULL;
    fill_page(x, r, code, kind,
              x->too_large ? "body larger than --max-size"
              : too_many   ? text
                           : NULL);
    if (x->parser && parser_nofollow(x->parser)) { /* a late meta robots nofollow */
        for (size_t i = 0; i < x->nlinks; i++)
            free(x->links[i]);
        x->nlinks = 0;
    }
    take_links(&r->page, x);
    if (redirect) /* one level deeper (page_init), and one hop further */
        r->page.link_hops = hops + 1;
    r->page.canonical = canon ? strdup(canon) : NULL;
    r->page.location = x->location ? strdup(x->location) : NULL;
}

static void page_result(xfer_t *x, CURLcode res, fetch_result_t *r)
{
    long code = 0;
    char *ip = NULL;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
        snprintf(x->ip, sizeof x->ip, "%s", ip);
    const char *etext = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    if (x->blocked) {
        fill_page(x, r, 0, "blocked", "address is private/loopback (see --allow-private)");
    } else if (res != CURLE_OK && !(x->too_large && res == CURLE_WRITE_ERROR)) {
        r->retry = outcome_retryable(res);
        fill_page(x, r, code, outcome_error_kind(res), etext);
    } else if (code == 429 || code >= 500) {
        r->retry = 1;
        fill_page(x, r, code, code == 429 ? "http-429" : "http-5xx", NULL);
    } else {
        read_page(x, code, r);
    }
}

/* Follows a robots.txt redirect by hand, so that the guard judges each hop's
 * own host.  1 if x restarted on the target; 0 (the 3xx is the result) if
 * not a redirect, no URL, FETCH_ROBOTS_MAX_REDIRECTS hops done, or a host
 * out of scope.  The gate reads a 3xx as RFC 9309 "unavailable", like a 4xx:
 * allow all (Google: 404 after 5 hops); a guard refusal ends "blocked",
 * also allow all, not cached.  The seed's pages still pass guard and scope. */
static int robots_follow(fetch_t *f, xfer_t *x, CURLcode res)
{
    long code = 0;
    char *cur = NULL, *target = NULL, host[256];
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &cur);
    if (res != CURLE_OK || code < 300 || code >= 400 || !x->location || !cur ||
        x->hops >= FETCH_ROBOTS_MAX_REDIRECTS)
        return 0;
    if (parser_url_normalize(cur, x->location, f->cfg->max_url_length, &target) < 0)
        return 0;
    int ok = parser_url_host(target, host, sizeof host) >= 0 && scope_allows_host(f->scope, host);
    if (ok) {
        x->hops++;
        reset_headers(x);
        x->body.len = 0;
        x->bytes = 0;
        x->blocked = 0;
        x->errbuf[0] = '\0';
        aim(x, target);
        ok = start_xfer(f, x, target) == 0; /* libcurl copies the URL */
    }
    free(target);
    return ok;
}

static void robots_result(xfer_t *x, CURLcode res, fetch_result_t *r)
{
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &r->status);
    r->kind = FETCH_ROBOTS;
    r->origin = x->origin;
    r->complete =
        res == CURLE_OK || (res == CURLE_WRITE_ERROR && x->body.len >= FETCH_ROBOTS_MAX_BYTES);
    r->blocked = x->blocked;
    r->tls_refused =
        res != CURLE_OK && !strcmp(outcome_error_kind(res), "tls") && !outcome_retryable(res);
    r->body = x->body.p ? x->body.p : "";
    r->body_len = x->body.len;
}

/* Makes the results of the transfers that finished, right away, so that
 * their parse state goes at once (a burst of responses in one epoll_wait
 * holds one parser at a time, not one each), and puts them on the done
 * list; a robots.txt redirect is followed instead. */
static void reap(fetch_t *f)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(f->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        xfer_t *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode res = m->data.result;
        curl_multi_remove_handle(f->multi, m->easy_handle); /* m is gone */
        unlink_xfer(f, x);
        if (x->kind == XF_ROBOTS && robots_follow(f, x, res))
            continue;
        memset(&x->res, 0, sizeof x->res);
        if (x->kind == XF_ROBOTS)
            robots_result(x, res, &x->res);
        else
            page_result(x, res, &x->res);
        drop_parse_state(x);
        x->next_free = NULL;
        if (f->done_tail)
            f->done_tail->next_free = x;
        else
            f->done_head = x;
        f->done_tail = x;
        f->ndone++;
    }
}

int fetch_next(fetch_t *f, fetch_result_t *r)
{
    if (f->held) {
        put_xfer(f, f->held);
        f->held = NULL;
    }
    reap(f);
    xfer_t *x = pop_done(f);
    if (!x)
        return 0;
    *r = x->res;
    memset(&x->res, 0, sizeof x->res);
    f->held = x;
    return 1;
}
