/*
 * engine_internal.h -- what engine.c and engine_redis.c share: the engine's
 * and its worker threads' state, and the calls between the two files.  Not
 * for other modules (engine.h is the interface).
 */
#ifndef CRAWLER_ENGINE_INTERNAL_H
#define CRAWLER_ENGINE_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "fetch.h"
#include "finisher.h"
#include "frontier.h"
#include "rconn.h"
#include "robotsgate.h"
#include "scope.h"

typedef struct engine engine_t;
typedef struct engine_side engine_side_t; /* engine_side.c */

#define ENGINE_SEED_REFRESH_MS 5000   /* the seeds' hosts read again this often */
#define ENGINE_IDLE_CLAIM_MIN_MS 50   /* --wait, the crawl over: first wait between claims */
#define ENGINE_IDLE_CLAIM_MAX_MS 1000 /* ... doubled up to this */

typedef struct worker {
    engine_t *e;
    int idx;
    uint32_t slots; /* its share of --concurrency: transfers in flight at most */
    uint32_t hold;  /* URLs it may hold at once: slots and a reserve (config_thread_held) */
    pthread_t thread;
    redisContext *rc; /* robots.txt looks and unlocks, hand-backs, start and end */
    frontier_t *fr;
    redisContext *crc; /* claims (engine_claim.c), under fr's worker id */
    frontier_t *cfr;
    frontier_beat_call_t *beating;   /* the heartbeat in flight, or NULL ... */
    frontier_claim_call_t *claiming; /* ... or the claim in flight ... */
    robotsgate_look_t *looking;      /* ... or the robots.txt look of its reply's new origins */
    frontier_item_t *claim_items;    /* ... the claimed URLs' room ... */
    size_t claim_max;                /* ... for this many (counted as held) ... */
    size_t claim_n;                  /* ... and those claimed (looking) */
    engine_side_t *side;             /* robots.txt stores, retries, seed hosts (engine_side.c) */
    scope_t *scope;
    fetch_t *fetch;
    robotsgate_t *gate;
    finisher_t *fin;
    uint64_t next_heartbeat_ms, next_seed_refresh_ms, claim_after_ms, last_claim_ms;
    uint32_t idle_ms;    /* --wait on a crawl that is over: the wait before the next claim */
    frontier_state_t st; /* the frontier's, as the last claim found it */
    uint64_t pages;      /* finished by this worker, for its heartbeat */
    uint64_t hb_pages, hb_pages_ms; /* at the last heartbeat (its pages/s) */
    int err;                        /* the first error (0: none): the thread stops */
    /* Redis lost (CRAWL_EREDIS): the thread goes on with its transfers and
     * tries to reconnect (reconnect()); nothing is sent to Redis meanwhile */
    int down;
    uint64_t down_since_ms, next_try_ms;
    uint32_t backoff_ms; /* the wait before the next try, doubling */
    uint64_t rng;        /* xorshift state, for the backoff's jitter */
} worker_t;

struct engine {
    const crawl_config_t *cfg;
    const rconn_t *redis;
    finisher_common_t *fin_common; /* the outputs and the finishers' Bloom cache */
    frontier_wake_t *wake;         /* the shards that got work, for every handle's claims */
    CURLSH *share;
    size_t connects; /* connections each thread's cache keeps (running and idle) */
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    struct out *out;         /* borrowed, may be NULL: the events of Redis lost and back */
    struct metrics *metrics; /* borrowed, may be NULL (no --metrics): the threads' slots */
    atomic_int stop;
    atomic_int running;
    atomic_int redis_down; /* worker threads without Redis now */
    atomic_uint_fast64_t pages, bytes, errors, retried, released;
    worker_t *workers;
    atomic_int full;   /* the visited set reached its capacity: the crawl stops (CRAWL_EFULL) */
    atomic_int paused; /* the last claim found the crawl paused (`crawler pause`): said once */
};

/* The outcome of a part's call: CRAWL_EREDIS takes the thread offline (if
 * --redis-retry-max allows: engine_go_down), any other error stops it. */
void engine_note(worker_t *w, int rc);
/* The frontier settings of the crawl's options. */
void engine_frontier_config(const engine_t *e, frontier_config_t *fc);
/* A new Redis connection and a frontier handle on it under the thread's
 * worker id, joining the crawl's filter without a local cache (for calls
 * that offer no links: claims, side calls).  0, or CRAWL_EREDIS with err
 * (nothing left open). */
int engine_open_joined(worker_t *w, struct redisContext **rc, frontier_t **fr, char *err,
                       size_t errlen);
/* Renews the worker's lease, reclaims dead workers' URLs, and checks that
 * the crawl is still in Redis and its visited set not full, waiting for
 * Redis (engine_redis.c; the loop sends its heartbeats without waiting, through
 * engine_claim) ... */
void engine_heartbeat(worker_t *w, uint64_t now);
/* ... the record a heartbeat sends (its pages/s since the last one; the
 * next heartbeat is due lease/3 from now) ... */
frontier_worker_stats_t engine_worker_stats(worker_t *w, uint64_t now);
/* ... and what the worker does with a heartbeat's outcome rc and its
 * findings b: the crawl gone (engine_crawl_gone), the visited set full
 * (the crawl stops, engine_run returns CRAWL_EFULL). */
void engine_beat_found(worker_t *w, int rc, const frontier_beat_t *b);
/* The visited set's fill from the counters read now (one round trip): at
 * the crawl's end, so that a crawl that filled it in its last seconds still
 * exits with CRAWL_EFULL. */
void engine_check_full(worker_t *w);
/* `crawler drain` reached this worker (a claim's or heartbeat's answer):
 * the process stops claiming, finishes what runs (--grace) and hands back
 * the rest, as after a first SIGTERM; said once (engine.c). */
void engine_drain(worker_t *w);
/* URLs this worker holds (at most worker.hold): transfers running or
 * waiting their turn, URLs parked on robots.txt, the claim in flight's. */
size_t engine_held(const worker_t *w);

/* A claimed batch through the robots.txt gate to transfers (engine.c);
 * the items are cleared (the array is the caller's). */
void engine_admit(worker_t *w, frontier_item_t *items, size_t n);

/* engine_claim.c: the claims' connection and handle (opened under fr's
 * worker id; replaces the old ones, dropping a call in flight): 0, or
 * CRAWL_EREDIS with why in err ... */
int engine_claim_open(worker_t *w, char *err, size_t errlen);
/* ... closed (accepts a worker without one) ... */
void engine_claim_close(worker_t *w);
/* ... the call in flight forgotten, unread (its connection is lost) ... */
void engine_claim_drop(worker_t *w);
/* ... its connection's fd while a call is in flight (to wake the loop), else -1 ... */
int engine_claim_fd(const worker_t *w);
/* ... the URLs it asked for (0: none in flight) ... */
size_t engine_claim_asked(const worker_t *w);
/* ... one turn: the reply of the call in flight taken if it is all there
 * (its URLs admitted), and (may_send) the next call sent when one is due
 * and there is room; returns the frontier's state (st: the last known) ... */
frontier_state_t engine_claim(worker_t *w, uint64_t now, frontier_state_t st, int may_send);
/* ... and at the thread's end: the reply of the call in flight waited for
 * and its URLs handed back (frontier_release); returns how many. */
size_t engine_claim_hand_back(worker_t *w);

/* engine_side.c: the side calls' connection and handle (opened under fr's
 * worker id; replaces the old ones, the call in flight then sent again on
 * the new one): 0, or CRAWL_EREDIS / CRAWL_ENOMEM with why in err ... */
int engine_side_open(worker_t *w, char *err, size_t errlen);
/* ... closed, the calls left dropped (accepts a worker without one) ... */
void engine_side_close(worker_t *w);
/* ... its connection lost: the call in flight is sent again after the
 * reconnect (engine_side_open) ... */
void engine_side_lost(worker_t *w);
/* ... its connection's fd while a call is in flight (to wake the loop), else -1 ... */
int engine_side_fd(const worker_t *w);
/* ... the calls queued or in flight ... */
size_t engine_side_busy(const worker_t *w);
/* ... one turn: the reply of the call in flight taken if it is all there
 * (its outcome to the part that made it), the calls the gate and the
 * finisher made since queued, the seed-host refresh when due, the first
 * call sent if none is in flight ... */
void engine_side_turn(worker_t *w, uint64_t now);
/* ... and at the thread's end: every call sent and waited for. */
void engine_side_flush(worker_t *w);

/* engine_redis.c: the thread loses Redis (why: the connection's error) ... */
void engine_go_down(worker_t *w, const char *why);
/* ... and tries to get it back when a try is due (or gives up). */
void engine_reconnect(worker_t *w, uint64_t now);
/* Redis answers but the crawl's Bloom filter is gone (FLUSHALL, a restart
 * without data): checks it (engine_check_crawl, one round trip), or says so
 * and stops the thread with CRAWL_ENOTFOUND (engine_crawl_gone). */
void engine_check_crawl(worker_t *w);
void engine_crawl_gone(worker_t *w);

#endif
