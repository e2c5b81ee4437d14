/*
 * lifeline.h -- a worker thread's hold on its crawl in Redis: the link lost
 * and got back (the reconnect policy: backoff, give up), and the findings
 * that end a crawl's thread whatever the link does: the crawl's state gone
 * from Redis, its visited set full.
 *
 * The thread's parts only use the link; when one of them (or the link's
 * poll) meets a lost link, the thread calls lifeline_lost and, while down,
 * lifeline_try when lifeline_next_try says.  What the link kept (the calls
 * that may run twice) goes out again once a try succeeds, after the lease
 * is renewed and the leases the thread no longer holds are handed back.
 * Each loss, return and loss of the crawl is printed and written as an
 * event line (--out).  Not thread-safe: one per thread.
 */
#ifndef CRAWLER_LIFELINE_H
#define CRAWLER_LIFELINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "frontier.h"
#include "rconn.h"

struct out;

typedef enum lifeline_state {
    LIFELINE_UP,      /* Redis answers */
    LIFELINE_DOWN,    /* lost; a try later */
    LIFELINE_GONE,    /* the crawl's state is gone from Redis: the thread stops
                         (CRAWL_ENOTFOUND) rather than take it for a finished crawl */
    LIFELINE_GAVE_UP, /* lost for longer than --redis-retry-max: the thread stops
                         (CRAWL_EREDIS) */
} lifeline_state_t;

typedef struct lifeline {
    int idx;                   /* the thread's number, for messages */
    const crawl_config_t *cfg; /* borrowed */
    struct out *out;           /* borrowed, may be NULL: the event lines */
    atomic_int *down_count;    /* borrowed: the process's threads without Redis */
    lifeline_state_t state;
    uint64_t down_since_ms, next_try_ms;
    uint32_t backoff_ms; /* the wait before the next try, doubling */
    uint64_t rng;        /* xorshift state, for the backoff's jitter */
} lifeline_t;

void lifeline_init(lifeline_t *l, int idx, const crawl_config_t *cfg, struct out *out,
                   atomic_int *down_count, uint64_t seed);

/* The link went down (why: its error, in Redis's or the network's words):
 * the thread goes offline (said once) and tries again from
 * lifeline_next_try on; with --redis-retry-max 0 it gives up at once.
 * Returns the state. */
lifeline_state_t lifeline_lost(lifeline_t *l, const char *why);
/* Opens the thread's handle (the link connected, frontier_open) under the
 * reconnect policy: a failure that left the link down (the network, a
 * failover, a server still loading) is tried again after the backoff, said
 * as a loss is, until --redis-retry-max or *stop; one Redis answered (the
 * crawl's settings refused, a key of the wrong type) is final.  The handle,
 * or NULL with err. */
frontier_t *lifeline_open(lifeline_t *l, rconn_link_t *link, const frontier_config_t *fc,
                          const atomic_int *stop, char *err, size_t errlen);
/* While down: when the next try is due (a monotonic ms, clock.h). */
uint64_t lifeline_next_try(const lifeline_t *l);
/* One try, when due: a connect holding the calls the link kept; the crawl
 * checked (its filter still there); the lease renewed (ws: the heartbeat's
 * record); the leases of this worker that it does not hold (held[0..nheld):
 * what its parts still finish) handed back; then the kept calls sent
 * again.  Returns the state: LIFELINE_UP when back (said), else as above. */
lifeline_state_t lifeline_try(lifeline_t *l, rconn_link_t *link, frontier_t *fr,
                              const frontier_worker_stats_t *ws, const frontier_item_t *held,
                              size_t nheld, uint64_t now);

/* The crawl's state is gone from Redis (a heartbeat found its filter
 * gone, or a call was refused for it: CRAWL_ENOTFOUND): said once (stderr,
 * a crawl-gone event); returns LIFELINE_GONE. */
lifeline_state_t lifeline_gone(lifeline_t *l);
/* What a heartbeat found: LIFELINE_GONE (said) if the crawl's filter is
 * gone, else the state as it is (the fill: lifeline_fill). */
lifeline_state_t lifeline_beat(lifeline_t *l, const frontier_beat_t *b);
/* A fixed visited set (--bloom-growth 0): once `added` (seeds + new links,
 * in its fullest shard) reaches the capacity of fr's filter, the first
 * thread of the process to see it (*full was 0) says so; returns 1 then,
 * for the caller to stop the crawl as a first SIGINT does, else 0. */
int lifeline_fill(lifeline_t *l, frontier_t *fr, uint64_t added, atomic_int *full);
/* A visited set that grows: its layers tended (frontier_layers_tend: read
 * again, the next one created when due).  When a full layer's successor
 * does not fit in Redis, the first thread to see it says so (stderr, a
 * visited-set-full event) and 1 is returned for the caller to stop the
 * crawl; CRAWL_EREDIS if the link failed meanwhile; else 0. */
int lifeline_layers(lifeline_t *l, frontier_t *fr, atomic_int *full);

#endif
