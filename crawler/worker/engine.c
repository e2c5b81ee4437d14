/*
 * engine.c -- the fetcher threads: their loop, and the calling thread's
 * signals and progress line.
 *
 * DESIGN: each worker thread owns a redisContext for robots.txt looks and
 * unlocks, hand-backs and its start and end (with its frontier_t, which
 * opens the crawl's Bloom filter; the worker id its leases are under), one
 * for its claims and heartbeats (engine_claim.c: sent without waiting, the
 * reply taken when it is all there), one for its side calls (engine_side.c:
 * robots.txt stores and polls, retries, the seed-host refresh, likewise
 * without waiting), a scope, its share of --concurrency (worker.slots: its
 * transfers in flight at most) and the URLs it may hold at once
 * (worker.hold: transfers, URLs parked on robots.txt, and a reserve of
 * claimed URLs waiting in fetch for a transfer to end, so that a slot that
 * frees starts its next URL in the same wake-up, not a claim's round trip
 * later; handed back at a stop), and three parts, each with its own
 * state, which only this file drives (they never call one another):
 *   fetch      the transfers (fetch.c): curl multi handle in an epoll loop,
 *              page and robots.txt transfers; finished ones come back as
 *              results;
 *   robotsgate the robots.txt rules (robotsgate.c): allow / deny / retry /
 *              wait for each claimed URL; asks for robots.txt fetches and
 *              gives parked URLs back when their rules are known;
 *   finisher   the finished pages (finisher.c): batched finish calls on a
 *              second connection, retries, the JSON-lines and WARC records.
 * The engine routes between them: a claimed URL goes to the gate, then to
 * fetch, the finisher (denied) or a retry; a page result to the finisher or
 * a retry; a robots.txt result to the gate.  DNS answers are shared between
 * threads through one CURLSH whose lock callbacks use engine.share_locks
 * (one mutex per curl lock data type; no other lock is ever held with them).
 * One loop turn:
 *   heartbeat (renews leases, reclaims dead workers' URLs) when due ->
 *   the claim in flight taken if its reply is there, each URL through the
 *   gate, transfers started; the next claim sent if there is room -> the
 *   sockets that are ready served (fetch_wait: one epoll_wait over curl's
 *   sockets and the Redis connections a reply is awaited on, then
 *   curl_multi_socket_action for each ready one: a turn costs what is
 *   ready, not what is running) -> results routed -> when the previous
 *   finish batch has answered: its output records, then the pages finished
 *   since go out as the next batch, without waiting for Redis.
 * Errors: the parts return them (engine_note); a lost Redis connection takes
 * the thread offline until it reconnects (engine_redis.c: the transfers go
 * on, finished pages wait in the finisher, nothing is claimed), any other
 * error, or Redis away for longer than --redis-retry-max, stops the thread
 * (worker.err) and engine_run() then fails.  A failed output (CRAWL_EWRITE)
 * sends nothing more: the thread hands its URLs back, the unrecorded pages
 * among them.  Shutdown: engine.stop 1 = stop claiming, finish what runs
 * (cfg->grace_ms); 2 = hand everything back to the frontier at once and
 * exit; `crawler drain` (engine_drain) is a first SIGTERM to every process
 * registered before it.  The counters in engine_t are written here only.  The thread that
 * called engine_run() waits for signals (blocked in the workers) and draws
 * the progress line.  Redis is reached only through the frontier (the seed
 * hosts: frontier_seed_hosts).
 */
#include "engine.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "clock.h"
#include "fetch.h"
#include "finisher.h"
#include "frontier.h"
#include "metrics.h"
#include "jsonl.h"
#include "robotsgate.h"
#include "scope.h"

#define ENGINE_CONNECTS_PER_SLOT 4 /* connection cache: per slot of --concurrency ... */
#define ENGINE_MIN_CONNECTS 2048   /* ... at least this a thread (a broad crawl's hosts) */
#define ENGINE_FDS_PER_THREAD 16   /* Redis connections, epoll, resolver */
#define ENGINE_FDS_PROCESS 64      /* outputs, the progress line's Redis, stdio */

#include "engine_internal.h"

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h;
    (void)access;
    engine_t *e = ud;
    pthread_mutex_lock(&e->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    engine_t *e = ud;
    pthread_mutex_unlock(&e->share_locks[data]);
}

_Static_assert(RCONN_COMMAND_TIMEOUT_MS == 30000, "why_transient's text says 30 s");

/* Why a transient failure happened, for the message. */
static const char *why_transient(const worker_t *w, int rc)
{
    if (rc == CRAWL_ENOROOM)
        return "Redis is at its maxmemory (OOM)";
    if ((!w->rc || !w->rc->err) && rconn_is_cluster(w->e->redis))
        return "the Redis Cluster redirected or refused a call (MOVED, ASK, TRYAGAIN, "
               "CLUSTERDOWN: the crawl's slot moved, a failover), or the connection was lost";
    if (!w->rc || !w->rc->err)
        return "connection lost";
    if (w->rc->err == REDIS_ERR_IO && strstr(w->rc->errstr, "temporarily unavailable"))
        return "no reply within the command timeout (30 s): Redis hung or unreachable";
    return w->rc->errstr;
}

/* The outcome of a part's call: a transient failure (Redis lost, or at its
 * maxmemory) takes the thread offline (if --redis-retry-max allows); any
 * other error stops it. */
void engine_note(worker_t *w, int rc)
{
    if (crawl_transient(rc) && w->e->cfg->redis_retry_max_ms && !w->err) {
        engine_go_down(w, why_transient(w, rc));
        return;
    }
    if (rc < 0 && !w->err)
        w->err = rc;
}

static int refresh_seed_hosts(worker_t *w)
{
    char **hosts = NULL;
    size_t n = 0;
    int rc = frontier_seed_hosts(w->fr, &hosts, &n);
    if (rc == CRAWL_EREDIS)
        return rc;
    if (rc == 0)
        scope_set_seed_hosts(w->scope, (const char *const *)hosts, n);
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    w->next_seed_refresh_ms = clock_now_ms() + ENGINE_SEED_REFRESH_MS;
    return 0;
}

void engine_frontier_config(const engine_t *e, frontier_config_t *fc)
{
    const crawl_config_t *c = e->cfg;
    frontier_config_defaults(fc);
    fc->crawl = c->crawl;
    fc->per_host = c->per_host;
    fc->delay_ms = c->delay_ms;
    fc->max_delay_ms = c->max_delay_ms;
    fc->lease_ms = c->lease_ms;
    fc->max_depth = c->max_depth;
    fc->max_pages = c->max_pages;
    fc->shards = c->shards;
    fc->redis = e->redis; /* a Redis Cluster: the shards' masters */
    fc->wake = e->wake;
    fc->max_pages_per_host = c->max_pages_per_host;
    fc->max_tries = c->max_tries;
    fc->backoff_ms = c->backoff_ms;
}

static int worker_open(worker_t *w)
{
    engine_t *e = w->e;
    const crawl_config_t *c = e->cfg;
    char err[512];
    if (!(w->rc = rconn_connect(e->redis, err, sizeof err)))
        goto fail;
    frontier_config_t fc;
    engine_frontier_config(e, &fc);
    /* the frontier joins the crawl's filter as created (by whoever seeded
     * first), else creates it; the claiming side offers few links
     * (sitemaps): no local cache */
    fc.bloom_capacity = c->bloom_capacity;
    fc.bloom_fp_rate = c->bloom_fp_rate;
    fc.bloom_cache_bytes = SIZE_MAX;
    if (!(w->fr = frontier_open(w->rc, &fc, NULL, err, sizeof err)))
        goto fail;
    if (engine_claim_open(w, err, sizeof err) < 0)
        goto fail;
    /* the finisher joins the same filter, with the local cache all workers
     * share (what one learnt answers for all) */
    fc.bloom_capacity = 0;
    fc.bloom_fp_rate = 0;
    fc.bloom_cache_bytes = 0;
    fc.worker_id = frontier_worker_id(w->fr); /* the finisher finishes this handle's leases */
    if (!(w->fin = finisher_new(e->fin_common, c, e->redis, &fc, w->fr, err, sizeof err)))
        goto fail;
    scope_config_t sc = config_scope(c);
    if (!(w->scope = scope_new(&sc, err, sizeof err)))
        goto fail;
    if (!(w->fetch = fetch_new(c, w->slots, e->connects, e->share, w->scope,
                               finisher_common_records(e->fin_common), err, sizeof err)))
        goto fail;
    if (!(w->gate = robotsgate_new(c, w->fr, w->scope))) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (engine_side_open(w, err, sizeof err) < 0)
        goto fail;
    robotsgate_defer_stores(w->gate); /* the side calls send them, the polls and the retries */
    robotsgate_defer_polls(w->gate);
    finisher_defer_retries(w->fin);
    engine_note(w, refresh_seed_hosts(w));
    return 0;
fail:
    fprintf(stderr, "crawler: worker %d: %s\n", w->idx, err);
    return CRAWL_EREDIS;
}

static void worker_close(worker_t *w)
{
    engine_side_close(w); /* (its calls hold no lease: the finisher and the gate hold them) */
    finisher_free(w->fin);
    robotsgate_free(w->gate);
    fetch_free(w->fetch);
    scope_free(w->scope);
    engine_claim_close(w);
    frontier_close(w->fr);
    if (w->rc)
        redisFree(w->rc);
}

/* URLs this worker holds: transfers running or waiting their turn, URLs
 * parked on robots.txt and the slots of the claim in flight. */
size_t engine_held(const worker_t *w)
{
    return fetch_active(w->fetch) + robotsgate_parked(w->gate) + engine_claim_asked(w);
}

/* ---- routing between the parts ---------------------------------------------- */

/* Pages the finisher completed: counted; their per-host slots are free, so
 * claim again now. */
static void finished(worker_t *w, int rc, size_t pages)
{
    if (pages) {
        w->pages += pages;
        atomic_fetch_add(&w->e->pages, pages);
        metrics_finished(pages);
        w->claim_after_ms = 0;
    }
    if (rc < 0 && rc != CRAWL_EREDIS && rc != CRAWL_EWRITE)
        fprintf(stderr, "crawler: worker %d: finishing pages failed: %s%s%s\n", w->idx,
                crawl_strerror(rc), *finisher_last_error(w->fin) ? ": " : "",
                finisher_last_error(w->fin));
    engine_note(w, rc);
}

/* A failed attempt worth another try (*p is taken over). */
static void retry(worker_t *w, page_t *p, uint32_t retry_after_ms)
{
    int dead = 0;
    atomic_fetch_add(&w->e->retried, 1);
    engine_note(w, finisher_retry(w->fin, p, retry_after_ms, &dead));
    metrics_retry(dead);
    if (dead) {
        atomic_fetch_add(&w->e->pages, 1);
        atomic_fetch_add(&w->e->errors, 1);
    }
}

/* Finishes a leased URL that was not fetched (*item taken). */
static void finish_unfetched(worker_t *w, frontier_item_t *item, const char *kind, const char *text)
{
    page_t p;
    page_init(&p, item, 0, kind, text);
    engine_note(w, finisher_add(w->fin, &p, NULL));
}

static void start_page(worker_t *w, frontier_item_t *item)
{
    int rc = fetch_start_page(w->fetch, item);
    if (rc < 0)
        finish_unfetched(w, item, crawl_kind_name(CRAWL_KIND_INTERNAL),
                         rc == CRAWL_ENOMEM ? "out of memory" : "cannot start the transfer");
}

/* Where the gate's verdict sends a leased URL: to a transfer, the finisher
 * or a retry (ROBOTSGATE_WAIT: the gate holds it already).  *item is left
 * zeroed. */
static void route(worker_t *w, frontier_item_t *item, robotsgate_verdict_t v)
{
    page_t p;
    robotsgate_cause_t cause;
    switch (v) {
    case ROBOTSGATE_ALLOW:
        start_page(w, item);
        break;
    case ROBOTSGATE_DENY:
        finish_unfetched(w, item, crawl_kind_name(CRAWL_KIND_ROBOTS), ROBOTSGATE_DENY_TEXT);
        atomic_fetch_add(&w->e->errors, 1);
        break;
    case ROBOTSGATE_RETRY: /* with the cause its robots.txt's fetch met (dns, 5xx, ...) */
        robotsgate_cause(w->gate, item->url, &cause);
        page_init(&p, item, (int)cause.status, cause.kind, cause.text);
        retry(w, &p, 0); /* the frontier's backoff */
        break;
    case ROBOTSGATE_WAIT:
        break;
    }
}

/* What the gate has for us after a call: robots.txt fetches to start, and
 * parked URLs whose rules are known. */
static void drain_gate(worker_t *w)
{
    const char *origin;
    frontier_item_t item;
    robotsgate_verdict_t v;
    robotsgate_release_held(w->gate);
    for (;;) {
        if ((origin = robotsgate_next_fetch(w->gate))) {
            if (fetch_start_robots(w->fetch, origin) < 0)
                engine_note(w, robotsgate_unfetched(w->gate, origin));
        } else if (robotsgate_next_ready(w->gate, &item, &v)) {
            route(w, &item, v);
            frontier_item_clear(&item);
        } else {
            return;
        }
    }
}

static void admit(worker_t *w, frontier_item_t *item)
{
    robotsgate_verdict_t v;
    engine_note(w, robotsgate_check(w->gate, item, &v));
    route(w, item, v);
    drain_gate(w);
}

void engine_admit(worker_t *w, frontier_item_t *items, size_t n)
{
    if (n)
        engine_note(w, robotsgate_prefetch(w->gate, items, n));
    for (size_t i = 0; i < n; i++) {
        admit(w, &items[i]);
        frontier_item_clear(&items[i]);
    }
}

static void on_result(worker_t *w, fetch_result_t *r)
{
    if (r->kind == FETCH_ROBOTS) {
        robotsgate_body_t b = {.origin = r->origin,
                               .status = r->status,
                               .complete = r->complete,
                               .blocked = r->blocked,
                               .tls_refused = r->tls_refused,
                               .error_kind = r->error_kind,
                               .error_text = r->error_text,
                               .body = r->body,
                               .len = r->body_len};
        engine_note(w, robotsgate_fetched(w->gate, &b));
        drain_gate(w);
        return;
    }
    atomic_fetch_add(&w->e->bytes, r->page.bytes);
    if (r->retry) {
        retry(w, &r->page, r->retry_after_ms);
        return;
    }
    if (r->page.error_kind)
        atomic_fetch_add(&w->e->errors, 1);
    engine_note(w, finisher_add(w->fin, &r->page, r->exchange));
}

/* ---- the loop --------------------------------------------------------------------- */

static void handle_completions(worker_t *w)
{
    fetch_result_t r;
    while (fetch_next(w->fetch, &r))
        on_result(w, &r);
}

/* Hands every URL this worker holds back to the frontier. */
static void release_all(worker_t *w)
{
    frontier_item_t item;
    while (fetch_cancel(w->fetch, &item)) {
        if (item.url && frontier_release(w->fr, &item, 1) == 0)
            atomic_fetch_add(&w->e->released, 1);
        frontier_item_clear(&item);
    }
    frontier_item_t *items;
    size_t n;
    while (robotsgate_take_parked(w->gate, &items, &n)) {
        if (frontier_release(w->fr, items, n) == 0)
            atomic_fetch_add(&w->e->released, n);
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&items[i]);
        free(items);
    }
}

/* A stop: the claimed URLs waiting for a transfer to end go back to the
 * frontier in one call, unfetched (nothing starts past a stop); a failed
 * call leaves them to the lease's expiry. */
static void hand_back_waiting(worker_t *w)
{
    size_t n = 0, cap = fetch_waiting(w->fetch);
    frontier_item_t *items = calloc(cap ? cap : 1, sizeof *items);
    if (!items)
        return; /* they start as transfers end, and are fetched */
    while (n < cap && fetch_unstart(w->fetch, &items[n]))
        n++;
    if (n && frontier_release(w->fr, items, n) == 0)
        atomic_fetch_add(&w->e->released, n);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    free(items);
}

void engine_drain(worker_t *w)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&w->e->stop, &none, 1))
        fprintf(stderr, "\ncrawler: drained (crawler drain): finishing in-flight URLs, handing "
                        "back the rest\n");
}

static int should_exit(worker_t *w, frontier_state_t st, uint64_t stop_at)
{
    int stop = atomic_load(&w->e->stop);
    if (w->err || stop >= 2)
        return 1;
    if (w->down) /* nothing can finish before Redis is back */
        return stop == 1 && clock_now_ms() >= stop_at;
    if (stop == 1)
        return engine_held(w) == 0 || clock_now_ms() >= stop_at;
    return st == FRONTIER_DONE && !w->e->cfg->wait && engine_held(w) == 0 &&
           finisher_queued(w->fin) == 0 && finisher_fd(w->fin) < 0 && engine_side_busy(w) == 0;
}

static void on_reply(void *ud);

/* Sleeps in the event loop (fetch_wait: epoll) until a socket is ready,
 * the next claim is due, or (URLs parked on another worker's robots.txt,
 * or held for a host's delay) the next look; never spins. */
static void wait_for_work(worker_t *w)
{
    /* room for a claim, none in flight (its reply wakes us: engine_claim_fd) */
    int room = engine_held(w) < w->hold && !engine_claim_asked(w);
    int fin_fd = finisher_fd(w->fin); /* a finish batch in flight: its reply wakes us too */
    uint64_t t = clock_now_ms();
    int ms;
    if (w->down) { /* the next reconnect try, or a transfer, wakes us */
        ms = w->next_try_ms > t ? (int)(w->next_try_ms - t) : 0;
        fetch_wait(w->fetch, NULL, ms > 100 ? 100 : ms);
        return;
    }
    if (finisher_queued(w->fin) && fin_fd < 0)
        ms = 0; /* serve what is ready, then flush them */
    else if (fetch_active(w->fetch))
        ms = room ? 5 : 100;
    else
        ms = !room ? 100 : w->claim_after_ms > t ? (int)(w->claim_after_ms - t) : 0;
    if (ms > 250)
        ms = 250;
    if (robotsgate_polling(w->gate) && ms > ROBOTSGATE_POLL_MS)
        ms = ROBOTSGATE_POLL_MS;
    int fds[3] = {fin_fd, engine_claim_fd(w), engine_side_fd(w)}; /* replies awaited wake us */
    netloop_watch_t watch = {.fds = fds, .nfds = 3, .ready = on_reply, .ud = w};
    fetch_wait(w->fetch, &watch, ms);
}

/* What needs Redis in one loop turn (skipped while it is unreachable). */
static void talk_to_redis(worker_t *w, uint64_t now, int stop)
{
    engine_side_turn(w, now); /* stores, retries, the seed-host refresh */
    if (!w->down && !w->err)  /* a claim in flight is taken even when stopping */
        w->st = engine_claim(w, now, w->st, !stop);
    if (!w->down)
        engine_note(w, robotsgate_poll(w->gate));
}

/* The finisher's turn: the batch in flight answered, the next one sent. */
static void finish_turn(worker_t *w)
{
    size_t n;
    if (w->down || w->err == CRAWL_EWRITE)
        return;
    /* one finish batch in flight at a time; pages finished meanwhile
     * wait for the next one (bigger batches while Redis is busy) */
    int rc = finisher_complete(w->fin, 0, &n);
    finished(w, rc, n);
    if (!w->down && finisher_fd(w->fin) < 0) {
        rc = finisher_flush(w->fin, 0, &n);
        finished(w, rc, n);
    }
}

/* The side calls' turn (engine_side.c); the URLs a robots.txt poll
 * settled go on at once. */
static void side_turn(worker_t *w, uint64_t now)
{
    engine_side_turn(w, now);
    drain_gate(w);
}

/* A reply the loop's wait found (netloop_watch_t.ready), taken before the
 * transfers of that wake-up are served: the finish batch's (its per-host
 * slots free again), then the claim's or its robots.txt look's (its URLs
 * started), so a reply never waits for a turn's worth of pages. */
static void on_reply(void *ud)
{
    worker_t *w = ud;
    if (w->down || w->err)
        return;
    finish_turn(w);
    uint64_t now = clock_now_ms();
    side_turn(w, now);
    if (!w->down && !w->err)
        w->st = engine_claim(w, now, w->st, !atomic_load(&w->e->stop));
}

/* The thread's end: what it finished goes out (unless an output failed or
 * Redis is gone), the rest is handed back. */
static void wind_down(worker_t *w)
{
    size_t n = 0;
    if (w->err == CRAWL_ENOTFOUND)
        return; /* the crawl's state is gone: nothing to finish or hand back into */
    if (!w->down && w->err != CRAWL_EWRITE) {
        int rc = finisher_flush(w->fin, 1, &n);
        finished(w, rc, n);
    }
    engine_side_flush(w); /* the stores and retries made until now */
    if (w->down)
        return; /* nothing reaches Redis: the leases expire and the URLs come back */
    size_t back = engine_claim_hand_back(w);
    if (back)
        atomic_fetch_add(&w->e->released, back);
    release_all(w);
    if (finisher_release(w->fin, &n) == 0 && n)
        atomic_fetch_add(&w->e->released, n);
    if (w->err == CRAWL_EWRITE)
        fprintf(stderr,
                "crawler: worker %d stopped: an output file failed; its unrecorded pages "
                "were handed back\n",
                w->idx);
    else if (w->err == CRAWL_EREDIS)
        fprintf(stderr, "crawler: worker %d stopped: lost its Redis connection (%s)\n", w->idx,
                w->rc && w->rc->err ? w->rc->errstr : "error");
    else if (w->err) /* e.g. a key of the wrong type: the script's text names it */
        fprintf(stderr, "crawler: worker %d stopped: %s%s%s\n", w->idx, crawl_strerror(w->err),
                *frontier_last_error(w->fr) ? ": " : "", frontier_last_error(w->fr));
}

static void run(worker_t *w)
{
    const crawl_config_t *c = w->e->cfg;
    uint64_t stop_at = UINT64_MAX;
    w->st = FRONTIER_READY;
    for (;;) {
        uint64_t now = clock_now_ms();
        int stop = atomic_load(&w->e->stop);
        if (stop && stop_at == UINT64_MAX)
            stop_at = now + c->grace_ms;
        if (stop && !w->down && fetch_waiting(w->fetch))
            hand_back_waiting(w);
        if (w->down)
            engine_reconnect(w, now);
        if (!w->down)
            talk_to_redis(w, now, stop);
        drain_gate(w);
        if (should_exit(w, w->st, stop_at))
            break;
        fetch_perform(w->fetch);
        handle_completions(w);
        finish_turn(w);
        side_turn(w, clock_now_ms()); /* the stores and retries just made go out */
        metrics_gauges(fetch_in_flight(w->fetch),
                       robotsgate_parked(w->gate) + w->claim_n + fetch_waiting(w->fetch));
        wait_for_work(w);
    }
    if (w->down && !w->err) /* stopped by a signal while Redis was away */
        w->err = CRAWL_EREDIS;
    if (w->st == FRONTIER_DONE && !w->err && !w->down) /* over, or its state gone? */
        engine_check_crawl(w);
    if (w->st == FRONTIER_DONE && !w->err && !w->down) /* over, but past the capacity? */
        engine_check_full(w);
    wind_down(w);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    metrics_thread_begin(w->e->metrics, (unsigned)w->idx); /* --metrics: this thread's counters */
    int rc = worker_open(w);
    if (rc == 0)
        run(w);
    else
        engine_note(w, rc);
    worker_close(w);
    metrics_thread_end();
    atomic_fetch_sub(&w->e->running, 1);
    return NULL;
}

/* ---- the calling thread: signals and progress ----------------------------- */

static void progress(engine_t *e, redisContext *rc, const bloom_geometry_t *g, uint64_t cap,
                     uint64_t t0, int final)
{
    frontier_stats_t fs = {0};
    int down = atomic_load(&e->redis_down);
    if (!rc || rc->err || frontier_stats_routed(rc, e->redis, e->cfg->crawl, &fs) < 0)
        memset(&fs, 0, sizeof fs);
    double secs = (double)(clock_now_ms() - t0) / 1000.0;
    uint64_t pages = atomic_load(&e->pages);
    /* fill estimated from the items added, not BITCOUNT: cheap every second */
    double fill = g && g->m ? 1.0 - exp(-(double)g->k * (double)fs.bloom_added / (double)g->m) : 0;
    bloom_fill_t bf; /* past BLOOM_FILL_WARN of its capacity, the line says so */
    bloom_fill_of(g, cap, fs.bloom_added, &bf);
    char warn[96] = "";
    if (bf.fill >= BLOOM_FILL_WARN)
        snprintf(warn, sizeof warn, "  VISITED SET %.0f%% FULL (fp %.2g)", bf.fill * 100,
                 bf.fp_rate);
    if (down) {
        fprintf(stderr,
                "\r%llu pages  %.1f pages/s  Redis unreachable (%d of %u threads waiting)  errors "
                "%llu   %s",
                (unsigned long long)pages, secs > 0 ? (double)pages / secs : 0.0, down,
                e->cfg->threads, (unsigned long long)atomic_load(&e->errors), final ? "\n" : "");
        return;
    }
    const char *ctl = atomic_load(&e->stop) ? "  STOPPING" : fs.control.paused ? "  PAUSED" : "";
    fprintf(stderr,
            "\r%llu pages  %.1f pages/s  queued %llu  in flight %llu  errors %llu  bloom fill "
            "%.4f%%%s%s   %s",
            (unsigned long long)pages, secs > 0 ? (double)pages / secs : 0.0,
            (unsigned long long)fs.queued, (unsigned long long)fs.in_flight,
            (unsigned long long)atomic_load(&e->errors), fill * 100, warn, ctl, final ? "\n" : "");
}

/* The progress line's connection, opened again once a second while lost. */
static redisContext *progress_conn(engine_t *e, redisContext *rc)
{
    char err[256];
    if (rc && !rc->err)
        return rc;
    if (rc)
        redisFree(rc);
    return rconn_connect(e->redis, err, sizeof err);
}

static void supervise(engine_t *e, int show)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    char err[256], bname[256];
    redisContext *rc = show ? rconn_connect(e->redis, err, sizeof err) : NULL;
    bloom_geometry_t geo = {0};
    uint64_t cap = 0;
    if (rc && frontier_bloom_name(e->cfg->crawl, bname, sizeof bname) >= 0) {
        bloom_t *b = bloom_open(rc, bname, NULL, NULL, err, sizeof err);
        if (b) {
            geo = *bloom_geometry(b);
            cap = bloom_capacity(b);
        }
        bloom_close(b);
    }
    uint64_t t0 = clock_now_ms(), next = t0 + 1000;
    while (atomic_load(&e->running) > 0) {
        struct timespec ts = {0, 20 * 1000 * 1000}; /* the exit is seen within 20 ms */
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            int was = atomic_fetch_add(&e->stop, 1);
            fprintf(stderr, "\ncrawler: %s; %s\n", sig == SIGINT ? "interrupted" : "terminated",
                    was == 0 ? "finishing in-flight URLs (again to hand them back now)"
                             : "handing in-flight URLs back");
        }
        if (show && clock_now_ms() >= next) {
            rc = progress_conn(e, rc);
            progress(e, rc, &geo, cap, t0, 0);
            next += 1000;
        }
    }
    if (show)
        progress(e, rc, &geo, cap, t0, 1);
    if (rc)
        redisFree(rc);
}

/* The connection caches: ENGINE_CONNECTS_PER_SLOT connections a transfer
 * slot (a broad crawl comes back to a host every few seconds: its
 * connection should still be there), at least ENGINE_MIN_CONNECTS a thread,
 * within the open-file limit (raised to its hard limit if need be) once the
 * transfers, the Redis connections and the outputs have theirs.  Returns
 * the connections a thread may keep. */
static size_t connection_budget(const crawl_config_t *cfg)
{
    struct rlimit rl;
    uint64_t reserve = (uint64_t)cfg->threads * ENGINE_FDS_PER_THREAD + ENGINE_FDS_PROCESS;
    uint64_t want = (uint64_t)cfg->concurrency * ENGINE_CONNECTS_PER_SLOT;
    if (want < (uint64_t)cfg->threads * ENGINE_MIN_CONNECTS)
        want = (uint64_t)cfg->threads * ENGINE_MIN_CONNECTS;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return (size_t)(want / cfg->threads);
    uint64_t need = want + reserve;
    if (rl.rlim_cur < need) {
        rlim_t to =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? (rlim_t)need : rl.rlim_max;
        if (to > rl.rlim_cur) {
            rl.rlim_cur = to;
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
                getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    uint64_t have = rl.rlim_cur > reserve ? rl.rlim_cur - reserve : 0;
    if (have < cfg->concurrency)
        fprintf(stderr,
                "crawler: warning: --concurrency %u needs at least %llu open files, the limit "
                "is %llu (ulimit -n): connections past it fail and are retried\n",
                cfg->concurrency, (unsigned long long)(cfg->concurrency + reserve),
                (unsigned long long)rl.rlim_cur);
    uint64_t n = want < have ? want : have;
    n /= cfg->threads;
    return n ? (size_t)n : 1;
}

int engine_run(const crawl_config_t *cfg, const rconn_t *redis, struct out *out, struct warc *warc,
               struct metrics *metrics, engine_totals_t *totals)
{
    engine_t e = {.cfg = cfg, .redis = redis, .out = out, .metrics = metrics};
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&e.share_locks[i], NULL);
    e.share = curl_share_init();
    e.workers = calloc(cfg->threads, sizeof *e.workers);
    e.fin_common = finisher_common_new(out, warc);
    e.wake = frontier_wake_new();
    if (!e.share || !e.workers || !e.fin_common || !e.wake) {
        free(e.workers);
        curl_share_cleanup(e.share);
        finisher_common_free(e.fin_common);
        frontier_wake_free(e.wake);
        return CRAWL_ENOMEM;
    }
    curl_share_setopt(e.share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(e.share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(e.share, CURLSHOPT_USERDATA, &e);
    curl_share_setopt(e.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    /* TLS sessions too: resumed across threads, and no session table of its
     * own in every easy handle (~0.9 KiB a transfer in flight, bench/broad.md) */
    curl_share_setopt(e.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    e.connects = connection_budget(cfg);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uint32_t started = 0;
    for (uint32_t i = 0; i < cfg->threads; i++) {
        e.workers[i].e = &e;
        e.workers[i].idx = (int)i;
        e.workers[i].slots = config_thread_slots(cfg->concurrency, cfg->threads, i);
        e.workers[i].hold = config_thread_held(e.workers[i].slots);
        e.workers[i].rng = (clock_now_ms() ^ (uint64_t)getpid() << 20) * 2654435761u + i + 1;
        atomic_fetch_add(&e.running, 1);
        if (pthread_create(&e.workers[i].thread, NULL, worker_main, &e.workers[i]) != 0) {
            atomic_fetch_sub(&e.running, 1);
            break;
        }
        started++;
    }
    supervise(&e, !cfg->quiet && isatty(2));
    int err = started == 0 ? CRAWL_ENOMEM : 0; /* no thread could start */
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(e.workers[i].thread, NULL);
        if (!err && e.workers[i].err < 0)
            err = e.workers[i].err;
    }
    if (!err && atomic_load(&e.full)) /* stopped because the visited set is full */
        err = CRAWL_EFULL;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (totals)
        *totals = (engine_totals_t){.pages = atomic_load(&e.pages),
                                    .bytes = atomic_load(&e.bytes),
                                    .errors = atomic_load(&e.errors),
                                    .retried = atomic_load(&e.retried),
                                    .released = atomic_load(&e.released)};
    curl_share_cleanup(e.share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&e.share_locks[i]);
    free(e.workers);
    finisher_common_free(e.fin_common);
    frontier_wake_free(e.wake);
    return err;
}
