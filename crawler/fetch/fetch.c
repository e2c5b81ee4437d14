/*
 * fetch.c -- the transfers of one worker thread (fetch.h): the pool, the
 * lists a transfer moves through, starting, following a robots.txt's
 * redirect, cancelling, handing out results.  One transfer's callbacks are
 * transfer.c's, the making of its result fetch_result.c's.
 *
 * DESIGN: a fetch_t owns one netloop (netloop.c: multi handles sharded by
 * host, one epoll set, curl_multi_socket_action: a wake-up costs the
 * sockets that are ready, not the transfers that exist) and every
 * transfer (xfer_t) of its thread, pooled and reused.
 * Memory per transfer in flight is kept small: a FETCH_RECV_BUFFER receive
 * buffer (libcurl holds it from connect to done), the parser made on the
 * first body byte and freed the moment the transfer finishes (on_done,
 * right after the socket action that finished it, makes its result and
 * queues it on the done list until fetch_next hands it out).  The transfer
 * of the last result is held until the next fetch_next() so the result may
 * point into its buffers.
 * A robots.txt redirect to the same origin waits --delay before its hop
 * starts (the deferred list: started by fetch_perform when due); one to
 * another origin's own robots.txt is not followed (the gate adopts that
 * origin's rules: moves_to_origin); one to another origin's other path is
 * followed at once.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fetch_internal.h"
#include "netloop.h"

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

static xfer_t *get_xfer(fetch_t *f, xfer_kind_t kind, const char *url)
{
    xfer_t *x = f->free_xfers;
    if (x) {
        f->free_xfers = x->next_free;
        curl_easy_reset(x->h);
    } else if (!(x = xfer_new(&f->env))) {
        return NULL;
    }
    x->kind = kind;
    x->next_free = NULL;
    xfer_aim(x, url);
    return x;
}

static void put_xfer(fetch_t *f, xfer_t *x)
{
    xfer_clear(x);
    x->next_free = f->free_xfers;
    f->free_xfers = x;
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
static int start_xfer(fetch_t *f, xfer_t *x, const char *url);

fetch_t *fetch_new(const crawl_config_t *cfg, size_t max_running, size_t max_connects,
                   CURLSH *share, const scope_t *scope, int record, char *err, size_t errlen)
{
    fetch_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *f = (fetch_t){
        .env = {.cfg = cfg,
                .share = share,
                .scope = scope,
                .record = record,
                .text = cfg->text || cfg->wet,
                .text_cfg = {.mode = cfg->text_all                              ? TEXT_ALL
                                     : cfg->text_format == TEXT_FORMAT_MARKDOWN ? TEXT_MARKDOWN
                                                                                : TEXT_MAIN},
                .links = cfg->links != NULL},
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
        xfer_free(x);
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

/* Adds x to the multi handle and the running list. */
static int start_xfer(fetch_t *f, xfer_t *x, const char *url)
{
    xfer_setup(x, url, dns_timeout(f));
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
        return start_xfer(f, x, url);
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
        if (start_xfer(f, x, url) < 0)
            finished(f, x, CURLE_FAILED_INIT);
        free(url);
    }
}

/* Starts x on url at_ms (clock_now_ms) or later (fetch_perform starts it):
 * 0, or CRAWL_ENOMEM. */
static int defer_xfer(fetch_t *f, xfer_t *x, const char *url, uint64_t at_ms)
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

/* Two URLs of one origin (the frontier's politeness unit). */
static int same_origin(const char *a, const char *b)
{
    char oa[512], ob[512];
    return parser_url_origin(a, oa, sizeof oa) >= 0 && parser_url_origin(b, ob, sizeof ob) >= 0 &&
           !strcmp(oa, ob);
}

/* x, a robots.txt that answered a redirect to target (fetch_robots_hop),
 * on its next hop: 1 if it started (or waits its turn), 0 if it could not. */
static int follow(fetch_t *f, xfer_t *x, const char *target)
{
    char *cur = NULL;
    curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &cur);
    int same = cur && same_origin(cur, target);
    x->hops++;
    xfer_reset_headers(x);
    x->body.len = 0;
    x->bytes = 0;
    x->blocked = 0;
    x->errbuf[0] = '\0';
    xfer_aim(x, target);
    /* a hop to the same origin is a second request to that host: with a
     * delay, it waits the delay (as every request to a host does) */
    if (f->env.cfg->delay_ms && same)
        return defer_xfer(f, x, target, clock_now_ms() + f->env.cfg->delay_ms + 1) == 0;
    return start_xfer(f, x, target) == 0; /* libcurl copies the URL */
}

/* A robots.txt hop to another origin's own robots.txt ("http://h" to
 * "https://h/robots.txt", "h" to "www.h"): not followed here, because that
 * request would reach a host whose politeness this transfer does not hold
 * (its claims may be fetching it now).  The result names that origin
 * (moved_to) and the gate adopts its rules, fetched by whoever holds its
 * robots.txt lock (robotsgate.c).  1 if so (target consumed). */
static int moves_to_origin(xfer_t *x, char *target)
{
    char *cur = NULL, o[512];
    curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &cur);
    int n = parser_url_origin(target, o, sizeof o);
    if (!cur || n < 0 || same_origin(cur, target) || strcmp(target + n, "/robots.txt") != 0)
        return 0;
    free(x->moved_to);
    x->moved_to = strdup(o); /* (out of memory: a 3xx not followed, RFC 9309's 4xx) */
    free(target);
    return 1;
}

static void finished(fetch_t *f, xfer_t *x, CURLcode res)
{
    char *target = x->kind == XF_ROBOTS ? fetch_robots_hop(x, res) : NULL;
    if (target && moves_to_origin(x, target))
        target = NULL;
    int followed = target && follow(f, x, target);
    free(target);
    if (followed)
        return;
    fetch_result_make(x, res);
    xfer_drop_parse_state(x);
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
