/*
 * engine.c -- fetcher threads and their loop.
 *
 * DESIGN: each worker thread owns a CURLM (up to cfg->concurrency transfers),
 * two redisContexts -- one for claims, retries and heartbeats, one for
 * finishing pages, each with its bloom_t and frontier_t under the same
 * worker id (its leases) -- and a scope.  DNS answers are shared between
 * threads through one CURLSH whose lock callbacks use engine.share_locks
 * (one mutex per curl lock data type; no other lock is ever held with them).
 * One loop turn:
 *   heartbeat (renews leases, reclaims dead workers' URLs) when due ->
 *   claim a batch if there is room -> robots check, start transfers ->
 *   curl_multi_perform/poll -> completed transfers become finished pages ->
 *   when the previous finish batch has answered (its socket is polled with
 *   the transfers): its output records, then the pages finished since go out
 *   as the next batch (frontier_finish_start), without waiting for Redis.
 * Shutdown: engine.stop 1 = stop claiming, finish what runs (cfg->grace_ms);
 * 2 = hand everything back to the frontier at once and exit.  The thread
 * that called engine_run() waits for signals (blocked in the workers) and
 * draws the progress line.  Keys read here: "crawler:{NAME}:seedhosts".
 */
#include "engine.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine_internal.h"

uint64_t engine_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t engine_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

static void refresh_seed_hosts(worker_t *w)
{
    char key[256];
    snprintf(key, sizeof key, "crawler:{%s}:seedhosts", w->e->cfg->crawl);
    redisReply *r = redisCommand(w->rc, "SMEMBERS %s", key);
    if (!r) {
        w->failed = 1;
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY) {
        const char **hosts = calloc(r->elements + 1, sizeof *hosts);
        size_t n = 0;
        for (size_t i = 0; hosts && i < r->elements; i++)
            if (r->element[i]->type == REDIS_REPLY_STRING)
                hosts[n++] = r->element[i]->str;
        if (hosts)
            scope_set_seed_hosts(w->scope, hosts, n);
        free(hosts);
    }
    freeReplyObject(r);
    w->next_seed_refresh_ms = engine_now_ms() + ENGINE_SEED_REFRESH_MS;
}

/* The scope's part of the crawl options (scope_new copies what it keeps). */
static scope_config_t scope_config_of(const crawl_config_t *c)
{
    return (scope_config_t){.mode = c->scope == SCOPE_ANY      ? SCOPE_MODE_ANY
                                    : c->scope == SCOPE_DOMAIN ? SCOPE_MODE_DOMAIN
                                                               : SCOPE_MODE_HOST,
                            .allow_domain = c->allow_domain,
                            .n_allow_domain = c->n_allow_domain,
                            .deny_domain = c->deny_domain,
                            .n_deny_domain = c->n_deny_domain,
                            .include = c->include,
                            .n_include = c->n_include,
                            .exclude = c->exclude,
                            .n_exclude = c->n_exclude};
}

static int worker_open(worker_t *w)
{
    engine_t *e = w->e;
    const crawl_config_t *c = e->cfg;
    char err[512], bname[256];
    if (!(w->rc = rconn_connect(e->redis, err, sizeof err)))
        goto fail;
    frontier_bloom_name(c->crawl, bname, sizeof bname);
    /* the claiming side offers few links (sitemaps): no local cache */
    bloom_params_t bp = {
        .capacity = c->bloom_capacity, .fp_rate = c->bloom_fp_rate, .cache_bytes = SIZE_MAX};
    bloom_params_t join = {.cache_bytes = SIZE_MAX};
    int berr = 0;
    /* join the crawl's filter as created (by whoever seeded first) */
    if (!(w->bloom = bloom_open(w->rc, bname, &join, &berr, err, sizeof err)) &&
        berr == BLOOM_ENOTFOUND)
        w->bloom = bloom_open(w->rc, bname, &bp, &berr, err, sizeof err);
    if (!w->bloom)
        goto fail;
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = c->crawl;
    fc.per_host = c->per_host;
    fc.delay_ms = c->delay_ms;
    fc.max_delay_ms = c->max_delay_ms;
    fc.lease_ms = c->lease_ms;
    fc.max_depth = c->max_depth;
    fc.max_pages = c->max_pages;
    fc.max_pages_per_host = c->max_pages_per_host;
    fc.max_tries = c->max_tries;
    fc.backoff_ms = c->backoff_ms;
    if (!(w->fr = frontier_open(w->rc, &fc, w->bloom, err, sizeof err)))
        goto fail;
    /* the finishing connection: same filter, same worker id, and the local
     * cache all workers share (what one learnt answers for all) */
    fc.worker_id = frontier_worker_id(w->fr);
    bloom_params_t fin = {.shared_cache = e->seen_cache};
    if (!(w->fin_rc = rconn_connect(e->redis, err, sizeof err)) ||
        !(w->fin_bloom = bloom_open(w->fin_rc, bname, &fin, &berr, err, sizeof err)) ||
        !(w->fin_fr = frontier_open(w->fin_rc, &fc, w->fin_bloom, err, sizeof err)))
        goto fail;
    scope_config_t sc = scope_config_of(c);
    if (!(w->scope = scope_new(&sc, err, sizeof err)))
        goto fail;
    if (!(w->multi = curl_multi_init())) {
        snprintf(err, sizeof err, "curl_multi_init failed");
        goto fail;
    }
    curl_multi_setopt(w->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, (long)c->concurrency * 2);
    refresh_seed_hosts(w);
    return 0;
fail:
    fprintf(stderr, "crawler: worker %d: %s\n", w->idx, err);
    return -1;
}

static void worker_close(worker_t *w)
{
    if (w->fin_pending)
        done_complete(w, 1);
    frontier_close(w->fin_fr);
    bloom_close(w->fin_bloom);
    if (w->fin_rc)
        redisFree(w->fin_rc);
    free(w->fin_done);
    free(w->fin_pages);
    rfetch_cache_free(w);
    fetch_free_pool(w);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    scope_free(w->scope);
    frontier_close(w->fr);
    bloom_close(w->bloom);
    if (w->rc)
        redisFree(w->rc);
    free(w->done);
}

static void heartbeat(worker_t *w, uint64_t now)
{
    double secs = (double)(now - w->hb_pages_ms) / 1000.0;
    frontier_worker_stats_t ws = {
        .pages = w->pages,
        .pages_per_s = w->hb_pages_ms && secs > 0 ? (double)(w->pages - w->hb_pages) / secs : 0,
        .in_flight = (uint32_t)(w->active + w->parked)};
    w->hb_pages = w->pages;
    w->hb_pages_ms = now;
    if (frontier_heartbeat(w->fr, &ws, NULL) < 0)
        w->failed = 1;
    w->next_heartbeat_ms = now + w->e->cfg->lease_ms / 3;
}

/* Claims what fits; returns the frontier's state. */
static frontier_state_t claim(worker_t *w, uint64_t now)
{
    const crawl_config_t *c = w->e->cfg;
    size_t room =
        c->concurrency > w->active + w->parked ? c->concurrency - w->active - w->parked : 0;
    if (room > c->claim_batch)
        room = c->claim_batch;
    /* while at least half the transfers still run, wait until a quarter is
     * free: fewer, bigger claims (a claim call costs Redis about as much
     * for one URL as for a dozen) */
    if (room == 0 || now < w->claim_after_ms ||
        (w->active * 2 >= c->concurrency && room * 4 < c->concurrency))
        return FRONTIER_READY;
    frontier_item_t *items = calloc(room, sizeof *items);
    size_t n = 0;
    frontier_state_t st = FRONTIER_WAIT;
    uint32_t wait_ms = 100;
    if (!items || frontier_claim(w->fr, room, items, &n, &st, &wait_ms) < 0) {
        free(items);
        w->failed = 1;
        return FRONTIER_WAIT;
    }
    for (size_t i = 0; i < n; i++) {
        rfetch_dispatch(w, &items[i]);
        frontier_item_clear(&items[i]);
    }
    free(items);
    if (st != FRONTIER_READY)
        w->claim_after_ms = now + (wait_ms < 10 ? 10 : wait_ms > 250 ? 250 : wait_ms);
    else if (n < room) /* hosts saturated: ask again after a finish, or in 20 ms */
        w->claim_after_ms = now + 20;
    return st;
}

static void handle_completions(worker_t *w)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(w->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        xfer_t *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode res = m->data.result;
        curl_multi_remove_handle(w->multi, m->easy_handle);
        fetch_unlink(w, x);
        if (x->kind == XF_ROBOTS)
            rfetch_done(w, x, res);
        else
            fetch_page_done(w, x, res);
        fetch_put(w, x);
    }
}

/* Hands every URL this worker holds back to the frontier. */
static void release_all(worker_t *w)
{
    while (w->running) {
        xfer_t *x = w->running;
        curl_multi_remove_handle(w->multi, x->h);
        fetch_unlink(w, x);
        if (x->kind == XF_PAGE && x->item.url) {
            if (frontier_release(w->fr, &x->item, 1) == 0)
                atomic_fetch_add(&w->e->released, 1);
        }
        fetch_put(w, x);
    }
    rfetch_release_parked(w);
}

static int should_exit(worker_t *w, frontier_state_t st, uint64_t stop_at)
{
    int stop = atomic_load(&w->e->stop);
    if (w->failed || stop >= 2)
        return 1;
    if (stop == 1)
        return (w->active == 0 && w->parked == 0) || engine_now_ms() >= stop_at;
    return st == FRONTIER_DONE && !w->e->cfg->wait && w->active == 0 && w->parked == 0 &&
           w->ndone == 0 && !w->fin_pending;
}

/* Sleeps in curl_multi_poll until a transfer needs attention, the next
 * claim is due, or (URLs parked on another worker's robots.txt) the next
 * look in Redis; never spins. */
static void wait_for_work(worker_t *w)
{
    const crawl_config_t *c = w->e->cfg;
    int room = w->active + w->parked < c->concurrency;
    int ms;
    if (w->ndone && !w->fin_pending)
        return; /* flush them now */
    if (w->active) {
        ms = room ? 5 : 100;
    } else {
        uint64_t t = engine_now_ms();
        ms = !room ? 100 : w->claim_after_ms > t ? (int)(w->claim_after_ms - t) : 0;
        if (ms > 250)
            ms = 250;
    }
    if (w->nremote && ms > ENGINE_ROBOTS_POLL_MS)
        ms = ENGINE_ROBOTS_POLL_MS;
    /* a finish batch in flight: its reply wakes us too */
    struct curl_waitfd fin = {.fd = w->fin_pending ? w->fin_rc->fd : -1,
                              .events = CURL_WAIT_POLLIN};
    if (ms > 0)
        curl_multi_poll(w->multi, w->fin_pending ? &fin : NULL, w->fin_pending ? 1 : 0, ms, NULL);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    const crawl_config_t *c = w->e->cfg;
    uint64_t stop_at = UINT64_MAX;
    if (worker_open(w) == 0) {
        frontier_state_t st = FRONTIER_READY;
        for (;;) {
            uint64_t now = engine_now_ms();
            if (now >= w->next_heartbeat_ms)
                heartbeat(w, now);
            if (now >= w->next_seed_refresh_ms)
                refresh_seed_hosts(w);
            int stop = atomic_load(&w->e->stop);
            if (stop && stop_at == UINT64_MAX)
                stop_at = now + c->grace_ms;
            if (!stop && !w->failed)
                st = claim(w, now);
            rfetch_poll(w);
            if (should_exit(w, st, stop_at))
                break;
            int still;
            curl_multi_perform(w->multi, &still);
            handle_completions(w);
            /* one finish batch in flight at a time; pages finished meanwhile
             * wait for the next one (bigger batches while Redis is busy) */
            done_complete(w, 0);
            if (!w->fin_pending)
                done_flush(w, 0);
            wait_for_work(w);
        }
        done_flush(w, 1);
        release_all(w);
        if (w->failed)
            fprintf(stderr, "crawler: worker %d stopped: lost its Redis connection (%s)\n", w->idx,
                    w->rc && w->rc->err ? w->rc->errstr : "error");
    } else {
        w->failed = 1;
    }
    worker_close(w);
    atomic_fetch_sub(&w->e->running, 1);
    return NULL;
}

/* ---- the calling thread: signals and progress ----------------------------- */

static void progress(engine_t *e, redisContext *rc, const bloom_geometry_t *g, uint64_t t0,
                     int final)
{
    frontier_stats_t fs = {0};
    if (!rc || frontier_stats(rc, e->cfg->crawl, &fs) < 0)
        memset(&fs, 0, sizeof fs);
    double secs = (double)(engine_now_ms() - t0) / 1000.0;
    uint64_t pages = atomic_load(&e->pages);
    /* fill estimated from the items added, not BITCOUNT: cheap every second */
    double fill = g && g->m ? 1.0 - exp(-(double)g->k * (double)fs.new_links / (double)g->m) : 0;
    fprintf(stderr,
            "\r%llu pages  %.1f pages/s  queued %llu  in flight %llu  errors %llu  bloom fill "
            "%.4f%%   %s",
            (unsigned long long)pages, secs > 0 ? (double)pages / secs : 0.0,
            (unsigned long long)fs.queued, (unsigned long long)fs.in_flight,
            (unsigned long long)atomic_load(&e->errors), fill * 100, final ? "\n" : "");
}

static void supervise(engine_t *e, int show)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    char err[256], bname[256];
    redisContext *rc = show ? rconn_connect(e->redis, err, sizeof err) : NULL;
    bloom_t *b = NULL;
    if (rc && frontier_bloom_name(e->cfg->crawl, bname, sizeof bname) >= 0)
        b = bloom_open(rc, bname, NULL, NULL, err, sizeof err);
    const bloom_geometry_t *g = b ? bloom_geometry(b) : NULL;
    uint64_t t0 = engine_now_ms(), next = t0 + 1000;
    while (atomic_load(&e->running) > 0) {
        struct timespec ts = {0, 20 * 1000 * 1000}; /* the exit is seen within 20 ms */
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            int was = atomic_fetch_add(&e->stop, 1);
            fprintf(stderr, "\ncrawler: %s; %s\n", sig == SIGINT ? "interrupted" : "terminated",
                    was == 0 ? "finishing in-flight URLs (again to hand them back now)"
                             : "handing in-flight URLs back");
        }
        if (show && engine_now_ms() >= next) {
            progress(e, rc, g, t0, 0);
            next += 1000;
        }
    }
    if (show)
        progress(e, rc, g, t0, 1);
    bloom_close(b);
    if (rc)
        redisFree(rc);
}

int engine_run(const crawl_config_t *cfg, const rconn_t *redis, struct out *out, struct warc *warc,
               engine_totals_t *totals)
{
    engine_t e = {.cfg = cfg, .redis = redis, .out = out, .warc = warc};
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&e.share_locks[i], NULL);
    e.share = curl_share_init();
    e.workers = calloc(cfg->threads, sizeof *e.workers);
    e.seen_cache = bloom_shared_cache_new(0);
    if (!e.share || !e.workers || !e.seen_cache) {
        fprintf(stderr, "crawler: out of memory\n");
        free(e.workers);
        curl_share_cleanup(e.share);
        bloom_shared_cache_free(e.seen_cache);
        return -1;
    }
    curl_share_setopt(e.share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(e.share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(e.share, CURLSHOPT_USERDATA, &e);
    curl_share_setopt(e.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uint32_t started = 0;
    for (uint32_t i = 0; i < cfg->threads; i++) {
        e.workers[i].e = &e;
        e.workers[i].idx = (int)i;
        atomic_fetch_add(&e.running, 1);
        if (pthread_create(&e.workers[i].thread, NULL, worker_main, &e.workers[i]) != 0) {
            atomic_fetch_sub(&e.running, 1);
            break;
        }
        started++;
    }
    supervise(&e, !cfg->quiet && isatty(2));
    int failed = started == 0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(e.workers[i].thread, NULL);
        failed |= e.workers[i].failed;
    }
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
    bloom_shared_cache_free(e.seen_cache);
    return failed ? -1 : 0;
}
