/*
 * lifeline.c -- the reconnect policy of a worker thread, and the checks
 * that end it: the crawl gone, the visited set full (lifeline.h).
 *
 * DESIGN: the first loss takes the thread offline: it stops claiming and
 * sends nothing new, its transfers go on and their pages wait in the
 * finisher, and the calls in flight that may run twice stay on the link.
 * Tries follow a doubling backoff (from 100 ms, capped at
 * CONFIG_REDIS_RETRY_STEP_MAX_MS, equal jitter), the last one at the
 * deadline, --redis-retry-max after the loss.  A try connects with the
 * kept calls held (rconn_link_connect), then, before any of them goes out:
 * checks the crawl is still there (a Redis that came back empty lost it:
 * FLUSHALL, a restart without its data), renews the lease (a heartbeat:
 * the worker's record and lease again in a Redis that lost them), and
 * reconciles (frontier_reconcile: the leases Redis holds for the worker
 * that no part of it holds, from a claim whose reply was lost or pages a
 * restarted Redis forgot, handed back).  Then the kept calls go out.
 * Redis keys: none directly (frontier_crawl_exists, frontier_heartbeat,
 * frontier_reconcile).
 */
#include "lifeline.h"

#include <stdio.h>
#include <unistd.h>

#include "bloom.h"
#include "clock.h"
#include "jsonl.h"
#include "metrics.h"

void lifeline_init(lifeline_t *l, int idx, const crawl_config_t *cfg, struct out *out,
                   atomic_int *down_count, uint64_t seed)
{
    *l = (lifeline_t){.idx = idx,
                      .cfg = cfg,
                      .out = out,
                      .down_count = down_count,
                      .state = LIFELINE_UP,
                      .rng = seed ? seed : 88172645463325252ULL};
}

static void event(lifeline_t *l, const char *what, uint64_t down_ms, const char *text)
{
    if (l->out)
        out_event(l->out,
                  &(out_event_t){
                      .event = what, .worker = l->idx, .down_ms = down_ms, .error_text = text});
}

/* The wait before the next try: doubling, capped, with equal jitter. */
static uint32_t next_backoff(lifeline_t *l)
{
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    uint32_t d = l->backoff_ms;
    l->backoff_ms =
        d >= CONFIG_REDIS_RETRY_STEP_MAX_MS / 2 ? CONFIG_REDIS_RETRY_STEP_MAX_MS : d * 2;
    return d / 2 + (uint32_t)(l->rng % (d / 2 + 1));
}

lifeline_state_t lifeline_lost(lifeline_t *l, const char *why)
{
    if (l->state != LIFELINE_UP)
        return l->state;
    if (!l->cfg->redis_retry_max_ms) { /* --redis-retry-max 0: no waiting */
        fprintf(stderr, "\ncrawler: worker %d: lost its Redis connection (%s)\n", l->idx, why);
        event(l, "redis-unreachable", 0, why);
        return l->state = LIFELINE_GAVE_UP;
    }
    l->state = LIFELINE_DOWN;
    l->down_since_ms = clock_now_ms();
    l->backoff_ms = 100;
    l->next_try_ms = l->down_since_ms + next_backoff(l);
    atomic_fetch_add(l->down_count, 1);
    metrics_redis_state(0);
    fprintf(stderr,
            "\ncrawler: worker %d: lost its Redis connection (%s); retrying for up to %u s\n",
            l->idx, why, l->cfg->redis_retry_max_ms / 1000);
    event(l, "redis-unreachable", 0, why);
    return l->state;
}

uint64_t lifeline_next_try(const lifeline_t *l)
{
    return l->next_try_ms;
}

/* A failed try (why: the link's error, in Redis's or the network's words):
 * the next one after the backoff, the last one at the deadline; past it,
 * the thread gives up, saying the last error. */
static lifeline_state_t try_failed(lifeline_t *l, uint64_t now, const char *why)
{
    uint64_t deadline = l->down_since_ms + l->cfg->redis_retry_max_ms;
    if (now >= deadline) {
        fprintf(stderr, "crawler: worker %d: Redis unreachable for %.1f s: giving up (%s)\n",
                l->idx, (double)(now - l->down_since_ms) / 1000.0, why);
        event(l, "redis-gave-up", now - l->down_since_ms, why);
        atomic_fetch_sub(l->down_count, 1);
        return l->state = LIFELINE_GAVE_UP;
    }
    l->next_try_ms = now + next_backoff(l);
    if (l->next_try_ms > deadline)
        l->next_try_ms = deadline;
    return l->state;
}

lifeline_state_t lifeline_gone(lifeline_t *l)
{
    if (l->state == LIFELINE_GONE)
        return l->state; /* (said once) */
    fprintf(stderr,
            "\ncrawler: worker %d: the crawl's data is gone from Redis (its Bloom filter no "
            "longer exists: FLUSHALL, `crawler reset`, or a Redis restarted without its data); "
            "stopping: restart Redis with its data (--appendonly yes), or seed the crawl again\n",
            l->idx);
    event(l, "crawl-gone", 0, "the crawl's Bloom filter is gone from Redis");
    if (l->state == LIFELINE_DOWN)
        atomic_fetch_sub(l->down_count, 1);
    return l->state = LIFELINE_GONE;
}

/* Back up after l->down_since_ms: said, counted. */
static void came_back(lifeline_t *l)
{
    uint64_t down_ms = clock_now_ms() - l->down_since_ms;
    l->state = LIFELINE_UP;
    atomic_fetch_sub(l->down_count, 1);
    metrics_redis_state(1);
    fprintf(stderr, "\ncrawler: worker %d: Redis is back after %.1f s\n", l->idx,
            (double)down_ms / 1000.0);
    event(l, "redis-back", down_ms, NULL);
}

frontier_t *lifeline_open(lifeline_t *l, rconn_link_t *link, const frontier_config_t *fc,
                          const atomic_int *stop, char *err, size_t errlen)
{
    for (;;) {
        frontier_t *fr = NULL;
        if (rconn_link_connect(link, 0) == 0)
            fr = frontier_open(link, fc, NULL, err, errlen);
        else
            snprintf(err, errlen, "redis: %s", rconn_link_error(link));
        if (fr && l->state == LIFELINE_DOWN)
            came_back(l);
        if (fr || rconn_link_up(link)) /* opened, or Redis answered no: final */
            return fr;
        uint64_t now = clock_now_ms();
        lifeline_state_t st =
            l->state == LIFELINE_UP ? lifeline_lost(l, err) : try_failed(l, now, err);
        if (st == LIFELINE_GAVE_UP)
            return NULL;
        while (clock_now_ms() < l->next_try_ms)
            if (atomic_load(stop)) {
                atomic_fetch_sub(l->down_count, 1);
                l->state = LIFELINE_GAVE_UP;
                return NULL;
            } else {
                usleep(20000);
            }
    }
}

lifeline_state_t lifeline_try(lifeline_t *l, rconn_link_t *link, frontier_t *fr,
                              const frontier_worker_stats_t *ws, const frontier_item_t *held,
                              size_t nheld, uint64_t now)
{
    if (l->state != LIFELINE_DOWN || now < l->next_try_ms)
        return l->state;
    if (rconn_link_connect(link, 1) < 0)
        return try_failed(l, now, rconn_link_error(link));
    int rc = frontier_crawl_exists(fr);
    if (rc == 0) { /* the kept calls would write into an empty Redis: never sent */
        rconn_link_drop(link, "the crawl's data is gone from Redis");
        return lifeline_gone(l);
    }
    /* Redis may have lost acknowledged writes (restarted from its
     * append-only file, failed over): what the seen-cache remembers may not
     * be in the filter any more */
    frontier_forget_seen(fr);
    size_t back = 0;
    if (rc > 0 && (rc = frontier_heartbeat(fr, ws, NULL)) == 0)
        rc = frontier_reconcile(fr, held, nheld, &back);
    if (rc < 0 && !rconn_link_up(link))
        return try_failed(l, now, rconn_link_error(link)); /* lost again meanwhile */
    rconn_link_resume(link);
    came_back(l);
    if (back)
        fprintf(stderr, "crawler: worker %d: handed back %zu URLs leased while Redis was away\n",
                l->idx, back);
    if (rc < 0) /* Redis answered with an error: the caller's note of it stops the thread */
        fprintf(stderr, "crawler: worker %d: after the reconnect: %s%s%s\n", l->idx,
                crawl_strerror(rc), *frontier_last_error(fr) ? ": " : "", frontier_last_error(fr));
    return l->state;
}

int lifeline_fill(lifeline_t *l, frontier_t *fr, uint64_t added, atomic_int *full)
{
    bloom_t *b = frontier_bloom(fr);
    uint64_t cap = b && bloom_growth(b) <= 1.0 ? bloom_capacity(b) : 0; /* (one that grows:
                                                                          lifeline_layers) */
    if (!cap || atomic_load(full))
        return 0;
    bloom_fill_t f;
    bloom_fill_of(bloom_geometry(b), cap, added, &f);
    if (!f.full || atomic_exchange(full, 1))
        return 0;
    char msg[640];
    bloom_full_message(&f, 0, msg, sizeof msg);
    fprintf(stderr, "\ncrawler: %s; stopping (in-flight URLs are finished or handed back)\n", msg);
    if (l->out)
        out_event(l->out,
                  &(out_event_t){.event = "visited-set-full", .worker = l->idx, .error_text = msg});
    return 1;
}

int lifeline_layers(lifeline_t *l, frontier_t *fr, atomic_int *full)
{
    char msg[600];
    int rc = frontier_layers_tend(fr, msg, sizeof msg);
    if (rc != CRAWL_EFULL)
        return rc == CRAWL_EREDIS ? rc : 0; /* (another failure: tried again at the next turn) */
    if (atomic_exchange(full, 1))
        return 1;
    fprintf(stderr,
            "\ncrawler: the visited set is full and cannot grow: %s; stopping (in-flight "
            "URLs are finished or handed back)\n",
            msg);
    if (l->out)
        out_event(l->out,
                  &(out_event_t){.event = "visited-set-full", .worker = l->idx, .error_text = msg});
    return 1;
}

lifeline_state_t lifeline_beat(lifeline_t *l, const frontier_beat_t *b)
{
    return b->crawl_exists ? l->state : lifeline_gone(l);
}
