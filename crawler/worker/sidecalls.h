/*
 * sidecalls.h -- a worker thread's side calls, sent without waiting for
 * Redis: the robots.txt stores its gate makes, the retries its finisher
 * makes, the seed-host refresh, the poll of the origins other workers
 * fetch, the slots of IP addresses its transfers ask for.  A user of the thread's frontier handle
 * (its link): each answer goes back to the part that made the call.  Not thread-safe: one per
 * thread.
 */
#ifndef CRAWLER_SIDECALLS_H
#define CRAWLER_SIDECALLS_H

#include <stddef.h>
#include <stdint.h>

#include "fetch.h"
#include "finisher.h"
#include "frontier.h"
#include "robotsgate.h"
#include "scope.h"

#define SIDECALLS_SEED_REFRESH_MS 5000 /* the seeds' hosts read again this often */

typedef struct sidecalls sidecalls_t;

/* fr, gate, fin, scope, fetch: the thread's (borrowed; fetch's per-IP
 * slots are asked for here).  NULL on out of memory. */
sidecalls_t *sidecalls_new(frontier_t *fr, robotsgate_t *gate, finisher_t *fin, scope_t *scope,
                           fetch_t *fetch);
/* Frees it, the calls left dropped.  Accepts NULL. */
void sidecalls_free(sidecalls_t *s);

/* One turn: the calls answered, in the order they were made, their
 * outcomes to their parts (robotsgate_stored, finisher_retried, the
 * scope's seed hosts); the calls the gate and the finisher made since
 * taken in (their _start sent them); with send (the link up), the
 * seed-host refresh when due (now) and the gate's poll when due.  Returns
 * the first failure a part reports, or a call's that ended the thread's
 * link (CRAWL_EREDIS), else 0.  A call that may run twice stays on the link
 * while it is down and answers after the reconnect. */
int sidecalls_turn(sidecalls_t *s, uint64_t now, int send);
/* The calls made and not yet answered. */
size_t sidecalls_busy(const sidecalls_t *s);
/* The thread's end: every call made until now waited for (the poll
 * dropped).  0, or the first failure. */
int sidecalls_flush(sidecalls_t *s);

#endif
