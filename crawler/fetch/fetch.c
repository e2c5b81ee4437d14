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
 * starts (the deferred list: started by fetch_perform when due; a transfer
 * told to wait for a slot of its address waits there too); one to
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
 * follows its redirect at once); `ndeferred` counts the deferred list,
 * `nasking` the asking list (active + nasking <= max_running), and the
 * done and waiting lists count theirs (xfer_fifo_t); a transfer is in
 * exactly one of running, the done list, the deferred list, the waiting
 * list, the asking list, the free pool, or `held`.  Redis keys: none.
 */
#include "fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fetch_internal.h"
#include "metrics.h"
#include "netloop.h"

#define FETCH_IP_RESTOPS 4           /* a hop stopped at a new address this often fails */
#define FETCH_IP_BACKOFF_MIN_MS 10   /* every slot of the address held: ask again after ... */
#define FETCH_IP_BACKOFF_MAX_MS 500  /* ... doubling up to this */
#define FETCH_IP_HOLD_EXTRA_MS 30000 /* a slot lapses this long after --timeout */
#define FETCH_IP_UNLIMITED 1000000u  /* --per-ip 0 with --ip-delay: no cap in flight */

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

/* The two lists linked by prev/next (running, asking): x put at the head
 * of *head, or taken out of it. */
static void list_push(xfer_t **head, xfer_t *x)
{
    x->prev = NULL;
    x->next = *head;
    if (*head)
        (*head)->prev = x;
    *head = x;
}

static void list_unlink(xfer_t **head, xfer_t *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        *head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
}

static void unlink_xfer(fetch_t *f, xfer_t *x)
{
    list_unlink(&f->running, x);
    f->active--;
}

static void on_done(void *ud, CURL *h, CURLcode res);
/* x ended with res (in no list): its result made and queued on the done
 * list, or x restarted (a robots.txt redirect followed). */
static void finished(fetch_t *f, xfer_t *x, CURLcode res);
static int start_xfer(fetch_t *f, xfer_t *x, const char *url);

/* 1 if a CA file is in force: --ca-file, or one libcurl names by default
 * (Debian's: /etc/ssl/certs/ca-certificates.crt, beside /etc/ssl/certs). */
static int ca_file_in_force(const crawl_config_t *cfg)
{
    if (cfg->ca_file)
        return 1;
    CURL *h = curl_easy_init();
    char *f = NULL;
    int yes = h && curl_easy_getinfo(h, CURLINFO_CAINFO, &f) == CURLE_OK && f && *f;
    curl_easy_cleanup(h);
    return yes;
}

fetch_t *fetch_new(const crawl_config_t *cfg, size_t max_running, size_t max_connects,
                   CURLSH *share, tls_sessions_t *tls, const scope_t *scope, int record, char *err,
                   size_t errlen)
{
    fetch_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *f = (fetch_t){
        .env = {.cfg = cfg,
                .share = share,
                .tls = tls,
                .ca_file_only = ca_file_in_force(cfg),
                .scope = scope,
                .record = record,
                .text = cfg->text || cfg->wet,
                .text_cfg = {.mode = cfg->text_all                              ? TEXT_ALL
                                     : cfg->text_format == TEXT_FORMAT_MARKDOWN ? TEXT_MARKDOWN
                                                                                : TEXT_MAIN},
                .links = cfg->links != NULL},
        .max_running = max_running ? max_running : 1};
    if (cfg->per_ip || cfg->ip_delay_ms) {
        f->env.ipgate = 1;
        if (!(f->ipg = ipgate_new())) {
            snprintf(err, errlen, "out of memory");
            free(f);
            return NULL;
        }
    }
    if (!(f->loop = netloop_new(max_connects, on_done, f, err, errlen))) {
        ipgate_free(f->ipg);
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
    while ((f->done.head || f->deferred || f->waiting.head || f->asking) && fetch_cancel(f, &item))
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
    ipgate_free(f->ipg);
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

/* ---- per-IP politeness: the gate ------------------------------------------------
 * With the gate on (f->ipg), a transfer sends its request only to an
 * address it holds a slot of (transfer.c: the socket callback stops it at
 * any other before connecting, the pre-request callback on a reused
 * connection).  Before it starts, a transfer whose host's address is known
 * (ipgate.c: the address the host was last reached on, or the one a
 * callback stopped it at) asks for a slot and waits on the asking list,
 * counted as running; one whose host is new starts as a probe, which stops
 * at the address and asks then.  Granted, it starts at once; told to wait, it waits on the
 * deferred list and asks again.  When it ends, its slot is given back
 * (with the next batch).  The asks and returns go to Redis in batches
 * (fetch_ip_batch: the caller's frontier call). */

static void asking_add(fetch_t *f, xfer_t *x)
{
    list_push(&f->asking, x);
    f->nasking++;
}

static void asking_remove(fetch_t *f, xfer_t *x)
{
    list_unlink(&f->asking, x);
    f->nasking--;
    x->ask_tok = 0;
}

/* x asks for a slot of ip before it starts on url (copied): 0, or
 * CRAWL_ENOMEM with x untouched. */
static int ask_slot(fetch_t *f, xfer_t *x, const char *url, const char *ip)
{
    char *u = strdup(url);
    uint64_t tok = u ? ipgate_ask(f->ipg, x, ip) : 0;
    if (!tok) {
        free(u);
        return CRAWL_ENOMEM;
    }
    free(x->next_url);
    x->next_url = u;
    snprintf(x->slot_ip, sizeof x->slot_ip, "%s", ip);
    x->ip_want[0] = '\0';
    x->ask_tok = tok;
    asking_add(f, x);
    return 0;
}

/* The transfers in the loop or asking for a slot are below max_running. */
static int has_room(const fetch_t *f)
{
    return f->active + f->nasking < f->max_running;
}

/* Adds x to the multi handle and the running list (with the gate on and no
 * slot held, it asks for one first, or starts as a probe). */
static int start_xfer(fetch_t *f, xfer_t *x, const char *url)
{
    if (f->ipg && !x->slot_tok) {
        const char *ip = x->ip_want[0] ? x->ip_want : ipgate_addr(f->ipg, x->host, clock_now_ms());
        if (ip)
            return ask_slot(f, x, url, ip);
        /* else a probe: it stops at the address (transfer.c) and asks then */
        metrics_ip_probe();
    }
    xfer_setup(x, url, dns_timeout(f));
    x->t_start = clock_now_ms();
    if (netloop_add(f->loop, x->h, x->host, &x->shard) < 0)
        return CRAWL_EREDIS;
    f->active++;
    list_push(&f->running, x);
    return 0;
}

/* x on url now, or (max_running in flight, or others waiting before it)
 * on the waiting list, url copied.  0, or an error with x untouched. */
static int launch(fetch_t *f, xfer_t *x, const char *url)
{
    if (has_room(f) && !f->waiting.head)
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
    while (has_room(f) && f->waiting.head) {
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
    if (at_ms < f->deferred_at)
        f->deferred_at = at_ms;
    return 0;
}

/* The deferred transfers whose time has come, started (one that cannot
 * start ends as if its hop had failed: a robots.txt result, "unavailable"). */
static void start_deferred(fetch_t *f)
{
    uint64_t now = clock_now_ms();
    if (now < f->deferred_at)
        return; /* (none due: the list is not walked) */
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
    f->deferred_at = UINT64_MAX;
    for (const xfer_t *x = f->deferred; x; x = x->next_free)
        if (x->start_at < f->deferred_at)
            f->deferred_at = x->start_at;
}

/* How long fetch_wait may sleep for the deferred transfers. */
static int deferred_wait(const fetch_t *f, int ms)
{
    uint64_t now = clock_now_ms();
    if (f->deferred_at <= now)
        return 0;
    return f->deferred_at - now < (uint64_t)ms ? (int)(f->deferred_at - now) : ms;
}

int fetch_start_page(fetch_t *f, frontier_item_t *item)
{
    xfer_t *x = get_xfer(f, XF_PAGE, item->url);
    if (!x)
        return CRAWL_ENOMEM;
    x->item = *item;
    if (f->ipg && item->ip[0] && item->ip_ms && item->claimed_ms >= item->ip_ms) {
        /* the address another worker (or this one) fetched the host from,
         * no older than FETCH_DNS_TTL_S (the claim's), unless this thread
         * knows one */
        uint64_t now = clock_now_ms(), age = item->claimed_ms - item->ip_ms;
        if (!ipgate_addr(f->ipg, x->host, now) && age < now)
            ipgate_learn(f->ipg, x->host, item->ip, now - age);
    }
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
    return f->active + f->done.n + f->ndeferred + f->waiting.n + f->nasking;
}

size_t fetch_in_flight(const fetch_t *f)
{
    return f->active;
}

size_t fetch_waiting(const fetch_t *f)
{
    return f->waiting.n + f->nasking + f->ndeferred;
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
    if ((x = f->deferred)) { /* a robots.txt hop, or a transfer waiting for its address */
        f->deferred = x->next_free;
        f->ndeferred--;
        x->next_free = NULL;
        if (x->kind == XF_PAGE) {
            *item = x->item;
            memset(&x->item, 0, sizeof x->item);
        }
        put_xfer(f, x);
        return 1;
    }
    if ((x = f->asking)) { /* asking for a slot: not started */
        asking_remove(f, x);
        ipgate_forget(f->ipg, x);
        if (x->kind == XF_PAGE) {
            *item = x->item;
            memset(&x->item, 0, sizeof x->item);
        }
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
    if (x->slot_tok) /* (sent with the next batch, if any: else it lapses) */
        ipgate_give_back(f->ipg, x->slot_ip, x->slot_tok);
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
    for (xfer_t **p = &f->deferred; *p; p = &(*p)->next_free) {
        xfer_t *x = *p;
        if (x->kind != XF_PAGE)
            continue;
        *p = x->next_free;
        x->next_free = NULL;
        f->ndeferred--;
        *item = x->item;
        memset(&x->item, 0, sizeof x->item);
        put_xfer(f, x);
        return 1;
    }
    for (xfer_t *x = f->asking; x; x = x->next) {
        if (x->kind != XF_PAGE)
            continue;
        asking_remove(f, x);
        ipgate_forget(f->ipg, x);
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
    for (const xfer_t *x = f->asking; x; x = x->next)
        if (x->kind == XF_PAGE && x->item.url)
            fn(&x->item, ud);
    for (const xfer_t *x = f->deferred; x; x = x->next_free)
        if (x->kind == XF_PAGE && x->item.url)
            fn(&x->item, ud);
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

/* Per-IP: x ended with res.  Its slot given back, the address it reached
 * learned; 1 if it went back to the gate instead (its socket callback
 * stopped it at an address it held no slot of: it asks for one and starts
 * over, up to FETCH_IP_RESTOPS times a hop). */
static int gate_end(fetch_t *f, xfer_t *x, CURLcode res)
{
    uint64_t now = clock_now_ms();
    /* (stopped by a callback of transfer.c: nothing was sent) */
    int stopped = x->ip_want[0] && !x->blocked &&
                  (res == CURLE_COULDNT_CONNECT || res == CURLE_ABORTED_BY_CALLBACK);
    if (x->slot_tok)
        ipgate_give_back(f->ipg, x->slot_ip, x->slot_tok);
    x->slot_tok = 0;
    x->slot_ip[0] = '\0';
    if (!stopped || ++x->ip_asks > FETCH_IP_RESTOPS) {
        char *ip = NULL;
        if (curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip && *ip)
            ipgate_learn(f->ipg, x->host, ip, now);
        x->ip_want[0] = '\0';
        x->ip_asks = 0;
        return 0;
    }
    ipgate_learn(f->ipg, x->host, x->ip_want, now);
    char *cur = NULL;
    curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &cur);
    char *url = cur ? strdup(cur) : NULL;
    if (!url)
        return 0; /* (out of memory: it fails as it is, a connect error) */
    xfer_reset_headers(x);
    x->body.len = 0;
    x->bytes = 0;
    x->errbuf[0] = '\0';
    int rc = ask_slot(f, x, url, x->ip_want);
    free(url);
    return rc == 0;
}

static void finished(fetch_t *f, xfer_t *x, CURLcode res)
{
    if (f->ipg && gate_end(f, x, res))
        return;
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

frontier_ipslot_t *fetch_ip_batch(fetch_t *f, size_t *n, uint32_t *per, uint32_t *gap,
                                  uint32_t *hold)
{
    *n = 0;
    if (!f->ipg)
        return NULL;
    const crawl_config_t *c = f->env.cfg;
    *per = c->per_ip ? c->per_ip : FETCH_IP_UNLIMITED;
    *gap = c->ip_delay_ms;
    *hold = c->timeout_ms + FETCH_IP_HOLD_EXTRA_MS;
    return ipgate_batch(f->ipg, n);
}

void fetch_ip_answered(fetch_t *f, int rc)
{
    if (!f->ipg)
        return;
    frontier_ipslot_t *s;
    xfer_t **xs;
    size_t n = ipgate_sent(f->ipg, &s, &xs);
    uint64_t now = clock_now_ms();
    for (size_t i = 0; i < n; i++) {
        if (s[i].ret)
            continue;
        xfer_t *x = xs[i];
        int granted = rc == 0 && s[i].wait_ms == 0;
        if (rc != 0) /* (a shard may have granted it before another failed) */
            ipgate_give_back(f->ipg, s[i].ip, s[i].token);
        if (!x || x->ask_tok != s[i].token) { /* gone meanwhile: a grant goes back */
            if (granted)
                ipgate_give_back(f->ipg, s[i].ip, s[i].token);
            continue;
        }
        asking_remove(f, x);
        char *url = x->next_url;
        x->next_url = NULL;
        if (granted) {
            x->slot_tok = s[i].token;
            x->ip_backoff_ms = 0;
            if (start_xfer(f, x, url) < 0)
                finished(f, x, CURLE_FAILED_INIT);
        } else {
            metrics_ip_wait();
            uint32_t w;
            if (rc == 0 && s[i].wait_ms > 0) { /* (spread: the waiters do not ask at once) */
                w = (uint32_t)s[i].wait_ms;
                w += (uint32_t)(s[i].token % (w / 4 + 1));
            } else {
                w = x->ip_backoff_ms ? x->ip_backoff_ms * 2 : FETCH_IP_BACKOFF_MIN_MS;
                if (w > FETCH_IP_BACKOFF_MAX_MS)
                    w = FETCH_IP_BACKOFF_MAX_MS;
                x->ip_backoff_ms = w;
            }
            x->slot_ip[0] = '\0';
            if (defer_xfer(f, x, url, now + w) < 0)
                finished(f, x, CURLE_OUT_OF_MEMORY);
        }
        free(url);
    }
    ipgate_sent_done(f->ipg);
    start_waiting(f);
}

int fetch_ip_unsent(const fetch_t *f)
{
    return f->ipg && ipgate_unsent(f->ipg);
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
