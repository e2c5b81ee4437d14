/*
 * engine_claim.c -- a worker thread's claims, sent without waiting for
 * Redis (engine_internal.h).
 *
 * DESIGN: the claims go over a Redis connection and frontier handle of
 * their own (worker.crc, worker.cfr), opened under the worker id of the
 * thread's main handle (worker.fr), so that the finisher and the main
 * handle finish, retry and release what was claimed here.  At most one
 * claim is in flight (worker.claiming, with worker.claim_items, room for
 * worker.claim_max URLs): engine_claim sends it when the thread has room
 * and a claim is due, and takes its reply in a later turn of the loop,
 * once the whole reply is there (frontier_claim_ready reads what the socket
 * holds, never waits; the loop's epoll_wait watches the connection,
 * engine_claim_fd); meanwhile the thread serves its transfers.  The URLs of
 * a reply go through the robots.txt gate (one robots_look for the origins
 * new to the thread) and on to transfers (engine_admit).
 * Sizing: the room left in worker.hold (slots and reserve: engine.c), up
 * to --claim-batch; while at least half the
 * transfers still run, a claim of a few free slots at most every
 * ENGINE_CLAIM_GAP_MS (a claim costs Redis about as much for one URL as for
 * a dozen), of a quarter of the slots or a full batch at once: waiting for
 * a quarter alone made the transfers run in waves.  Slots asked for by the
 * claim in flight count as held (engine_held), so a thread never holds more
 * than worker.hold URLs, nor runs more than its slots' transfers (fetch).
 * The worker's heartbeat goes over the same connection, also without
 * waiting, before any claim when it is due (every lease/3): its reply says
 * too whether the crawl is still in Redis and how full its visited set is
 * (engine_beat_found).
 * Control (`crawler pause|drain`, frontier_control): a paused crawl's
 * claims take nothing and the worker asks again every 250 ms at most (its
 * lease renewed each time); a claim or heartbeat that says this worker is
 * to drain stops the process's claims as a first SIGTERM does
 * (engine_drain).
 * Lost Redis: the call in flight is dropped with its connection
 * (engine_claim_drop); its URLs, leased in Redis but never seen here, are
 * handed back by the reconcile after the reconnect (engine_redis.c), or
 * come back when the worker's lease expires.
 * Redis keys: none directly (frontier_claim_start/_end: claim.lua;
 * frontier_heartbeat_start/_end: heartbeat.lua; the robots.txt look).
 */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "engine_internal.h"
#include "metrics.h"

#define ENGINE_CLAIM_GAP_MS 5 /* a claim of a few free slots at most this often */

int engine_claim_open(worker_t *w, char *err, size_t errlen)
{
    redisContext *rc;
    frontier_t *fr; /* the thread's worker id: its leases are the thread's */
    if (engine_open_joined(w, &rc, &fr, err, errlen) < 0)
        return CRAWL_EREDIS;
    engine_claim_close(w);
    w->crc = rc;
    w->cfr = fr;
    return 0;
}

/* Frees the claimed URLs (their leases: the reconcile, or they lapse) and
 * the counts. */
static void forget_items(worker_t *w)
{
    for (size_t i = 0; w->claim_items && i < w->claim_n; i++)
        frontier_item_clear(&w->claim_items[i]);
    free(w->claim_items);
    w->claim_items = NULL;
    w->claim_max = w->claim_n = 0;
}

void engine_claim_drop(worker_t *w)
{
    frontier_heartbeat_drop(w->beating);
    w->beating = NULL;
    frontier_claim_drop(w->claiming);
    w->claiming = NULL;
    robotsgate_look_t *lk = w->looking;
    w->looking = NULL;
    robotsgate_prefetch_drop(w->gate, lk); /* its origins: fetched by us */
    forget_items(w);
}

void engine_claim_close(worker_t *w)
{
    engine_claim_drop(w);
    frontier_close(w->cfr);
    w->cfr = NULL;
    if (w->crc)
        redisFree(w->crc);
    w->crc = NULL;
}

int engine_claim_fd(const worker_t *w)
{
    return w->beating || w->claiming || w->looking ? frontier_fd(w->cfr) : -1;
}

size_t engine_claim_asked(const worker_t *w)
{
    return w->claim_max;
}

/* Sends a claim if one is due and there is room. */
static void send_claim(worker_t *w, uint64_t now)
{
    const crawl_config_t *c = w->e->cfg;
    size_t busy = engine_held(w), active = fetch_in_flight(w->fetch);
    size_t room = w->hold > busy ? w->hold - busy : 0;
    if (room > c->claim_batch)
        room = c->claim_batch;
    if (room == 0 || now < w->claim_after_ms ||
        (active * 2 >= w->slots && room * 4 < w->slots && room < c->claim_batch &&
         now < w->last_claim_ms + ENGINE_CLAIM_GAP_MS))
        return;
    w->last_claim_ms = now;
    if (!(w->claim_items = calloc(room, sizeof *w->claim_items))) {
        engine_note(w, CRAWL_ENOMEM);
        return;
    }
    int rc = frontier_claim_start(w->cfr, room, &w->claiming);
    if (rc < 0) {
        engine_claim_drop(w);
        engine_note(w, rc);
        return;
    }
    w->claim_max = room;
    metrics_redis_sent(METRICS_CALL_CLAIM);
}

/* The claimed URLs through the gate to transfers, the counts reset. */
static void admit_items(worker_t *w)
{
    frontier_item_t *items = w->claim_items;
    size_t n = w->claim_n;
    w->claim_items = NULL;
    w->claim_max = w->claim_n = 0;
    engine_admit(w, items, n); /* their origins are known now: no Redis call */
    free(items);
}

/* The look of the claimed URLs' origins, if it answered (block: waited for). */
static void take_look(worker_t *w, int block)
{
    int ready = block ? 1 : robotsgate_prefetch_ready(w->looking);
    if (ready == 0)
        return;
    robotsgate_look_t *lk = w->looking;
    w->looking = NULL;
    if (ready < 0) { /* the connection failed: the thread goes offline */
        robotsgate_prefetch_drop(w->gate, lk);
        engine_note(w, ready);
    } else {
        engine_note(w, robotsgate_prefetch_end(w->gate, lk));
    }
    admit_items(w);
}

/* Says on stderr, once per change and per process (not only on the progress
 * line, which a journal does not get), that the crawl is paused or resumed. */
static void note_paused(worker_t *w, int paused)
{
    if (atomic_exchange(&w->e->paused, paused) == paused)
        return;
    if (paused)
        fprintf(stderr,
                "\ncrawler: crawl '%s' is paused (crawler pause): claiming nothing, "
                "leases renewed; `crawler resume --crawl %s` lets it go on\n",
                w->e->cfg->crawl, w->e->cfg->crawl);
    else
        fprintf(stderr, "\ncrawler: crawl '%s' resumed\n", w->e->cfg->crawl);
}

/* The reply of the claim in flight, if it is all there (block: waited
 * for): its URLs kept, the look of their new origins sent (on the same
 * connection) or, when there is none, the URLs admitted at once; returns
 * the frontier's state. */
static frontier_state_t take_claim(worker_t *w, uint64_t now, int block, frontier_state_t st)
{
    int ready = block ? 1 : frontier_claim_ready(w->cfr, w->claiming);
    if (ready == 0)
        return st;
    size_t n = 0, room = w->claim_max;
    uint32_t wait_ms = 100;
    int rc = ready < 0 ? ready : 0;
    if (rc == 0) {
        rc = frontier_claim_end(w->cfr, w->claiming, w->claim_items, &n, &st, &wait_ms);
        w->claiming = NULL; /* ended, whatever the outcome */
        metrics_redis_answered(METRICS_CALL_CLAIM);
    }
    if (rc < 0) {
        engine_claim_drop(w);
        engine_note(w, rc);
        return FRONTIER_WAIT;
    }
    w->claim_n = n;
    w->claim_max = n; /* the slots not filled are free again */
    engine_note(w, robotsgate_prefetch_start(w->gate, w->cfr, w->claim_items, n, &w->looking));
    if (!w->looking)
        admit_items(w);
    else if (block)
        take_look(w, 1);
    if (st == FRONTIER_DRAIN) /* `crawler drain`: finish what runs, hand back the rest */
        engine_drain(w);
    note_paused(w, st == FRONTIER_PAUSED);
    /* a crawl that is over (kept up by --wait for new seeds): ask again after
     * 50 ms, doubled each time up to 1 s, so an idle worker costs its Redis
     * a claim a second a thread */
    w->idle_ms = st != FRONTIER_DONE                         ? 0
                 : w->idle_ms < ENGINE_IDLE_CLAIM_MIN_MS / 2 ? ENGINE_IDLE_CLAIM_MIN_MS
                 : w->idle_ms * 2 > ENGINE_IDLE_CLAIM_MAX_MS ? ENGINE_IDLE_CLAIM_MAX_MS
                                                             : w->idle_ms * 2;
    if (w->idle_ms)
        w->claim_after_ms = now + w->idle_ms;
    else if (st != FRONTIER_READY) /* (paused: claim again, and so renew the lease, in 250 ms) */
        w->claim_after_ms = now + (wait_ms < 10 ? 10 : wait_ms > 250 ? 250 : wait_ms);
    else if (n < room) /* hosts saturated: ask again after a finish, or in 20 ms */
        w->claim_after_ms = now + 20;
    return st;
}

/* The heartbeat's reply, if it is all there (block: waited for). */
static void take_beat(worker_t *w, int block)
{
    int ready = block ? 1 : frontier_heartbeat_ready(w->cfr, w->beating);
    if (ready == 0)
        return;
    frontier_beat_call_t *c = w->beating;
    w->beating = NULL;
    frontier_beat_t b = {.crawl_exists = 1};
    int rc = ready < 0 ? ready : frontier_heartbeat_end(w->cfr, c, &b);
    if (ready > 0)
        metrics_redis_answered(METRICS_CALL_HEARTBEAT);
    if (ready < 0)
        frontier_heartbeat_drop(c);
    engine_beat_found(w, rc, &b);
}

/* Sends the heartbeat (due every lease/3; before any claim). */
static void send_beat(worker_t *w, uint64_t now)
{
    frontier_worker_stats_t ws = engine_worker_stats(w, now);
    engine_note(w, frontier_heartbeat_start(w->cfr, &ws, &w->beating));
    metrics_redis_sent(METRICS_CALL_HEARTBEAT);
}

frontier_state_t engine_claim(worker_t *w, uint64_t now, frontier_state_t st, int may_send)
{
    if (w->beating)
        take_beat(w, 0);
    else if (w->looking)
        take_look(w, 0);
    else if (w->claiming)
        st = take_claim(w, now, 0, st);
    int idle = !w->beating && !w->claiming && !w->looking && !w->down && !w->err;
    if (idle && now >= w->next_heartbeat_ms) /* leases are renewed while stopping too */
        send_beat(w, now);
    else if (idle && may_send)
        send_claim(w, now);
    return (w->beating || w->claiming || w->looking) && st == FRONTIER_DONE ? FRONTIER_WAIT : st;
}

size_t engine_claim_hand_back(worker_t *w)
{
    if (w->beating)
        take_beat(w, 1);
    if (w->claiming) {
        size_t n = 0;
        frontier_state_t st;
        int rc = frontier_claim_end(w->cfr, w->claiming, w->claim_items, &n, &st, NULL);
        w->claiming = NULL;
        w->claim_n = rc == 0 ? n : 0;
    } else if (w->looking) { /* the look's answer does not matter any more */
        robotsgate_look_t *lk = w->looking;
        w->looking = NULL;
        robotsgate_prefetch_end(w->gate, lk);
    }
    size_t n = w->claim_n;
    size_t back = n && frontier_release(w->fr, w->claim_items, n) == 0 ? n : 0;
    forget_items(w);
    return back; /* not handed back: the lease expires, or the reconcile takes them */
}
