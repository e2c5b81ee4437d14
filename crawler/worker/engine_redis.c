/*
 * engine_redis.c -- a worker thread that lost its Redis connection, and got
 * it back; what its heartbeats find: the crawl gone from Redis, its visited
 * set full (engine_internal.h).
 *
 * DESIGN: the first transient failure a part returns (engine_note,
 * crawl_transient: Redis unreachable, or refusing calls at its maxmemory)
 * takes the thread offline: it stops claiming and sends nothing, but its
 * transfers go on and their pages, retries and records wait in the
 * finisher.  Tries to reconnect follow a doubling backoff (from 100 ms,
 * capped at CONFIG_REDIS_RETRY_STEP_MAX_MS, equal jitter), the last one at
 * the deadline, --redis-retry-max after the loss; then the thread stops with
 * CRAWL_EREDIS.  A try opens new connections and handles under the same
 * worker id (frontier_open loads the Functions library again if the server
 * lost it), renews the worker's lease (heartbeat), then reconciles: the
 * leases Redis holds for the worker but no part of it does (a claim whose
 * reply was lost, pages a restarted Redis forgot it had finished) are handed
 * back.  A Redis that answers without the crawl's Bloom filter lost the
 * crawl (FLUSHALL, a restart without its data): the thread stops with
 * CRAWL_ENOTFOUND rather than take the empty state for a finished crawl;
 * every heartbeat's reply says whether the filter is still there.  Each loss,
 * return and loss of the crawl is printed and written to the JSONL as an
 * event line.
 * Redis keys: none directly (frontier_open, frontier_heartbeat,
 * frontier_reconcile, bloom_join/bloom_exists on the crawl's filter).  The
 * worker_t fields down, down_since_ms, next_try_ms, backoff_ms and rng are
 * written here only.
 */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bloom.h"
#include "clock.h"
#include "engine_internal.h"
#include "metrics.h"
#include "jsonl.h"

static void event(worker_t *w, const char *what, uint64_t down_ms, const char *text)
{
    if (w->e->out)
        out_event(w->e->out,
                  &(out_event_t){
                      .event = what, .worker = w->idx, .down_ms = down_ms, .error_text = text});
}

static uint32_t next_backoff(worker_t *w);

void engine_go_down(worker_t *w, const char *why)
{
    if (w->down)
        return;
    w->down = 1;
    w->down_since_ms = clock_now_ms();
    w->backoff_ms = 100;
    w->next_try_ms = w->down_since_ms + next_backoff(w);
    atomic_fetch_add(&w->e->redis_down, 1);
    metrics_redis_state(0);
    engine_claim_drop(w); /* its reply is lost with the connection: the reconcile hands it back */
    engine_side_lost(w);  /* its call in flight goes out again after the reconnect */
    fprintf(stderr,
            "\ncrawler: worker %d: lost its Redis connection (%s); retrying for up to %u s\n",
            w->idx, why, w->e->cfg->redis_retry_max_ms / 1000);
    event(w, "redis-unreachable", 0, why);
}

/* The wait before the next try: doubling, capped, with equal jitter. */
static uint32_t next_backoff(worker_t *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    uint32_t d = w->backoff_ms;
    w->backoff_ms =
        d >= CONFIG_REDIS_RETRY_STEP_MAX_MS / 2 ? CONFIG_REDIS_RETRY_STEP_MAX_MS : d * 2;
    return d / 2 + (uint32_t)(w->rng % (d / 2 + 1));
}

typedef struct held_set {
    frontier_item_t *v;
    size_t n, cap;
    int oom;
} held_set_t;

static void hold(const frontier_item_t *it, void *ud)
{
    held_set_t *h = ud;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        frontier_item_t *v = realloc(h->v, cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return;
        }
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = (frontier_item_t){.lease = it->lease, .shard = it->shard}; /* borrowed */
}

/* On the new connection: renews this worker's leases, then hands back the
 * ones it leased but no longer holds (a claim whose reply was lost, pages a
 * restarted Redis forgot it had finished). */
static int resync(worker_t *w)
{
    engine_heartbeat(w, clock_now_ms());
    if (w->err || w->down)
        return 0;
    held_set_t h = {0};
    fetch_each_item(w->fetch, hold, &h);
    robotsgate_each_item(w->gate, hold, &h);
    finisher_each_item(w->fin, hold, &h);
    size_t n = 0;
    int rc = h.oom ? 0 : frontier_reconcile(w->fr, h.v, h.n, &n); /* oom: they expire instead */
    free(h.v);
    if (n)
        fprintf(stderr, "crawler: worker %d: handed back %zu URLs leased while Redis was away\n",
                w->idx, n);
    return rc;
}

/* One try to get Redis back (when due): new connections and handles, same
 * worker id; the Functions library is loaded again if the server lost it
 * (frontier_open). */
/* A failed try: the next one after the backoff, the last one at the
 * deadline (--redis-retry-max after the loss); past it, the thread stops. */
static void try_failed(worker_t *w, uint64_t now)
{
    uint64_t deadline = w->down_since_ms + w->e->cfg->redis_retry_max_ms;
    if (now >= deadline) {
        fprintf(stderr, "crawler: worker %d: Redis unreachable for %.1f s: giving up\n", w->idx,
                (double)(now - w->down_since_ms) / 1000.0);
        event(w, "redis-gave-up", now - w->down_since_ms, NULL);
        w->err = CRAWL_EREDIS;
        return;
    }
    w->next_try_ms = now + next_backoff(w);
    if (w->next_try_ms > deadline)
        w->next_try_ms = deadline;
}

/* 1 if Redis answers but the crawl's filter is gone from it (after
 * printing why): the crawl's state did not survive, nothing to go on with. */
static int crawl_gone(worker_t *w, redisContext *rc)
{
    char name[256], err[512];
    int code = 0;
    if (frontier_bloom_name(w->e->cfg->crawl, name, sizeof name) < 0)
        return 0;
    bloom_t *probe = bloom_join(rc, name, NULL, &code, err, sizeof err); /* join only */
    bloom_close(probe);
    return !probe && code == CRAWL_ENOTFOUND;
}

void engine_crawl_gone(worker_t *w)
{
    fprintf(stderr,
            "\ncrawler: worker %d: the crawl's data is gone from Redis (its Bloom filter no "
            "longer exists: FLUSHALL, `crawler reset`, or a Redis restarted without its data); "
            "stopping: restart Redis with its data (--appendonly yes), or seed the crawl again\n",
            w->idx);
    event(w, "crawl-gone", 0, "the crawl's Bloom filter is gone from Redis");
    w->err = CRAWL_ENOTFOUND;
}

void engine_check_crawl(worker_t *w)
{
    int rc = bloom_exists(frontier_bloom(w->fr));
    if (rc == 0)
        engine_crawl_gone(w);
    else
        engine_note(w, rc < 0 && rc != CRAWL_EREPLY ? rc : 0);
}

int engine_open_joined(worker_t *w, redisContext **rc, frontier_t **fr, char *err, size_t errlen)
{
    frontier_config_t fc;
    engine_frontier_config(w->e, &fc);
    fc.worker_id = frontier_worker_id(w->fr);
    fc.bloom_capacity = 0; /* join only */
    fc.bloom_fp_rate = 0;
    fc.bloom_cache_bytes = SIZE_MAX;
    *rc = rconn_connect(w->e->redis, err, errlen);
    *fr = *rc ? frontier_open(*rc, &fc, NULL, err, errlen) : NULL;
    if (!*fr) {
        if (*rc)
            redisFree(*rc);
        *rc = NULL;
        return CRAWL_EREDIS;
    }
    return 0;
}

void engine_reconnect(worker_t *w, uint64_t now)
{
    if (now < w->next_try_ms)
        return;
    char err[512];
    frontier_config_t fc;
    engine_frontier_config(w->e, &fc);
    fc.worker_id = frontier_worker_id(w->fr);
    fc.bloom_capacity = 0; /* join only: a Redis that came back empty is not a new crawl */
    fc.bloom_fp_rate = 0;
    fc.bloom_cache_bytes = SIZE_MAX;
    redisContext *rc = rconn_connect(w->e->redis, err, sizeof err);
    if (rc && crawl_gone(w, rc)) {
        redisFree(rc);
        engine_crawl_gone(w);
        return;
    }
    frontier_t *fr = rc ? frontier_open(rc, &fc, NULL, err, sizeof err) : NULL;
    /* the claims' connection first: a failure after finisher_reconnect
     * would leave the finisher on a handle closed here */
    if (!fr || engine_claim_open(w, err, sizeof err) < 0 ||
        engine_side_open(w, err, sizeof err) < 0 ||
        finisher_reconnect(w->fin, fr, err, sizeof err) < 0) {
        frontier_close(fr);
        if (rc)
            redisFree(rc);
        try_failed(w, now); /* err: why, e.g. "Connection refused" */
        return;
    }
    frontier_close(w->fr);
    redisFree(w->rc);
    w->rc = rc;
    w->fr = fr;
    robotsgate_set_frontier(w->gate, fr);
    uint64_t down_ms = clock_now_ms() - w->down_since_ms;
    w->down = 0;
    atomic_fetch_sub(&w->e->redis_down, 1);
    metrics_redis_state(1);
    fprintf(stderr, "\ncrawler: worker %d: Redis is back after %.1f s\n", w->idx,
            (double)down_ms / 1000.0);
    event(w, "redis-back", down_ms, NULL);
    w->claim_after_ms = 0;
    engine_note(w, resync(w));
}

/* ---- what a heartbeat finds ------------------------------------------------- */

/* The visited set cannot grow: once `added` (the crawl's counters: seeds +
 * new links) reaches its capacity, the first worker to see it says so
 * (stderr, an event line) and stops the crawl as a first SIGINT does (stop
 * 1: what runs is finished and recorded, the rest handed back); engine_run
 * then returns CRAWL_EFULL. */
static void check_fill(worker_t *w, uint64_t added)
{
    bloom_t *b = frontier_bloom(w->fr);
    uint64_t cap = b ? bloom_capacity(b) : 0;
    if (!cap || atomic_load(&w->e->full))
        return;
    bloom_fill_t f;
    bloom_fill_of(bloom_geometry(b), cap, added, &f);
    if (!f.full || atomic_exchange(&w->e->full, 1))
        return;
    char msg[640];
    bloom_full_message(&f, 0, msg, sizeof msg);
    fprintf(stderr, "\ncrawler: %s; stopping (in-flight URLs are finished or handed back)\n", msg);
    if (w->e->out)
        out_event(w->e->out,
                  &(out_event_t){.event = "visited-set-full", .worker = w->idx, .error_text = msg});
    int zero = 0;
    atomic_compare_exchange_strong(&w->e->stop, &zero, 1);
}

void engine_check_full(worker_t *w)
{
    frontier_stats_t st;
    int rc = frontier_stats_routed(w->rc, w->e->redis, w->e->cfg->crawl, &st);
    if (rc < 0)
        engine_note(w, rc != CRAWL_EREPLY ? rc : 0);
    else
        check_fill(w, st.bloom_added_max);
}

frontier_worker_stats_t engine_worker_stats(worker_t *w, uint64_t now)
{
    double secs = (double)(now - w->hb_pages_ms) / 1000.0;
    frontier_worker_stats_t ws = {
        .pages = w->pages,
        .pages_per_s = w->hb_pages_ms && secs > 0 ? (double)(w->pages - w->hb_pages) / secs : 0,
        .in_flight = (uint32_t)engine_held(w)};
    w->hb_pages = w->pages;
    w->hb_pages_ms = now;
    w->next_heartbeat_ms = now + w->e->cfg->lease_ms / 3;
    return ws;
}

void engine_beat_found(worker_t *w, int rc, const frontier_beat_t *b)
{
    engine_note(w, rc);
    if (rc < 0 || w->down || w->err)
        return;
    if (!b->crawl_exists)
        engine_crawl_gone(w);
    else
        check_fill(w, b->bloom_added);
    if (b->control == FRONTIER_DRAIN && !w->err)
        engine_drain(w);
}

void engine_heartbeat(worker_t *w, uint64_t now)
{
    frontier_worker_stats_t ws = engine_worker_stats(w, now);
    frontier_beat_call_t *c = NULL;
    frontier_beat_t b = {.crawl_exists = 1};
    int rc = frontier_heartbeat_start(w->fr, &ws, &c);
    if (rc == 0)
        rc = frontier_heartbeat_end(w->fr, c, &b);
    engine_beat_found(w, rc, &b);
}
