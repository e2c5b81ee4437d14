/*
 * claimer.h -- a worker thread's claims and heartbeats, sent without
 * waiting for Redis: a user of the thread's frontier handle (its link),
 * which says at each turn what its calls got instead of acting on it.
 *
 * At most one call is in flight: the heartbeat (due every lease/3, before
 * any claim), or a claim (when the thread has room and one is due), or the
 * robots.txt look of a claim's new origins (robotsgate_prefetch_start);
 * its reply is taken in a later turn, once it is all there.  The URLs of a
 * claim come out of the turn once their look answered, for the caller to
 * admit (the gate knows their origins then: no Redis call).  Not
 * thread-safe: one per thread.
 */
#ifndef CRAWLER_CLAIMER_H
#define CRAWLER_CLAIMER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "frontier.h"
#include "robotsgate.h"

typedef struct claimer claimer_t;

/* What the thread holds, at one turn. */
typedef struct claim_room {
    size_t hold;    /* URLs it may hold at once (config_thread_held) */
    size_t held;    /* URLs it holds (transfers, parked), without the claimer's */
    size_t active;  /* transfers running */
    size_t slots;   /* transfers at most */
    uint64_t pages; /* pages it finished, for the heartbeat's record */
} claim_room_t;

/* What one turn got. */
typedef struct claim_got {
    frontier_item_t *items; /* claimed URLs to admit (the caller's: it clears each and
                               frees the array), or NULL */
    size_t n;
    int claimed;            /* a claim answered: state is the frontier's */
    frontier_state_t state; /* (FRONTIER_DRAIN: this worker is to drain) */
    int beat;               /* a heartbeat answered: beat_rc and b */
    int beat_rc;
    frontier_beat_t b;
    int rc; /* a call failed (CRAWL_EREDIS: the link is down; then nothing else) */
} claim_got_t;

/* fr, gate: the thread's (borrowed).  NULL on out of memory. */
claimer_t *claimer_new(const crawl_config_t *cfg, frontier_t *fr, robotsgate_t *gate);
/* Frees it; a call in flight is dropped (its URLs: the lease expires).
 * Accepts NULL. */
void claimer_free(claimer_t *c);

/* One turn: the reply of the call in flight taken if it is there; then,
 * with send (the link up), the heartbeat sent if due, else (claim: not
 * stopping) a claim if there is room and one is due -- unless the turn
 * handed URLs out (the caller admits them, then calls again with its new
 * room). */
void claimer_turn(claimer_t *c, uint64_t now, const claim_room_t *room, int send, int claim,
                  claim_got_t *got);
/* The heartbeat's record now (its pages/s since the last one), the next
 * heartbeat due lease/3 from now: for a heartbeat sent by the caller (the
 * reconnect's). */
frontier_worker_stats_t claimer_record(claimer_t *c, uint64_t now, const claim_room_t *room);
/* Claim again at the next turn (pages finished: their hosts have room). */
void claimer_poke(claimer_t *c);
/* When the next claim may go (monotonic ms). */
uint64_t claimer_due(const claimer_t *c);
/* URLs the claim in flight asked for, or claimed and waiting for their
 * look: held by the thread. */
size_t claimer_held(const claimer_t *c);
/* 1 while a call is in flight. */
int claimer_busy(const claimer_t *c);
/* Each URL it holds (claimed, its look in flight). */
void claimer_each_item(const claimer_t *c, void (*fn)(const frontier_item_t *, void *), void *ud);
/* The thread's end: the call in flight waited for, its URLs handed back
 * (frontier_release).  Returns how many went back. */
size_t claimer_hand_back(claimer_t *c);
/* The link went down: a claim still in flight is forgotten (call it before
 * the reconcile's held set, after a turn that took a claim answered in
 * full).  A claim is one command per shard: some may have answered (their
 * URLs leased) while others did not run and wait on the link to be sent
 * again; kept, it would hand out after the reconnect URLs the reconcile
 * has just handed back, and both would be fetched.  Forgotten, what it
 * leased is handed back by the reconcile, and the rest is never sent. */
void claimer_abandon_claim(claimer_t *c);

#endif
