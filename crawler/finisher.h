/*
 * finisher.h -- what happens to a worker thread's finished pages: batched
 * frontier_finish calls on a Redis connection of their own (pipelined, so
 * the thread goes on fetching while Redis runs them), retries
 * (frontier_retry), and the output records: one JSON line per finished URL
 * (output.c) and one WARC exchange per page read (warc.c).
 *
 * A finisher_t belongs to one thread (not thread-safe).  The
 * finisher_common_t is shared by the finishers of all threads (thread-safe):
 * the borrowed output writers, the local Bloom cache all the finishing
 * handles share, and "report a write error once".
 *
 * Errors: 0 or a negative CRAWL_E* code.  CRAWL_ELEASE (a lease had
 * expired and been handed to another worker) is not an error and never
 * returned.  After any other error the finisher stays usable, but its
 * Redis connection may be gone: the caller should stop.
 */
#ifndef CRAWLER_FINISHER_H
#define CRAWLER_FINISHER_H

#include <stddef.h>

#include "config.h"
#include "frontier.h"
#include "page.h"
#include "rconn.h"

struct out;
struct warc;

typedef struct finisher_common finisher_common_t;
typedef struct finisher finisher_t;

/* out and warc: the record writers (borrowed, thread-safe; either may be
 * NULL).  NULL on out of memory. */
finisher_common_t *finisher_common_new(struct out *out, struct warc *warc);
/* Frees it after every finisher using it is freed.  Accepts NULL. */
void finisher_common_free(finisher_common_t *c);
/* 1 if pages are recorded in a WARC file (their exchange is wanted). */
int finisher_common_records(const finisher_common_t *c);

/* Opens a finishing connection to redis and a frontier handle on it with
 * the settings of fc (copied), whose worker_id must be set: the claiming
 * handle's id, so that this handle finishes the leases that one took.
 * retry_fr (borrowed; the claiming handle, on the calling thread) carries
 * the retries, which cannot wait for a batch in flight.  cfg and c must
 * outlive the finisher.  NULL on failure, with a message in err. */
finisher_t *finisher_new(finisher_common_t *c, const crawl_config_t *cfg, const rconn_t *redis,
                         const frontier_config_t *fc, frontier_t *retry_fr, char *err,
                         size_t errlen);
/* Completes the batch in flight, if any (its records are written, its pages
 * not counted anywhere: call finisher_flush(f, 1, ...) first), and frees the
 * finisher.  Accepts NULL. */
void finisher_free(finisher_t *f);

/* Adds a finished page to the next batch: *p is taken over (zeroed).  With
 * ex (borrowed for the call) its exchange is written to the WARC file now.
 * CRAWL_ENOMEM: the page is dropped (its lease expires and the URL comes
 * back to the frontier). */
int finisher_add(finisher_t *f, page_t *p, const page_exchange_t *ex);

/* A failed attempt worth another try: the URL goes to the frontier's
 * delayed set (at least retry_after_ms from now), or on its last try
 * (cfg->max_tries) to the dead-letter list -- then it is finished: its
 * record is written and *dead is 1.  p is only read. */
int finisher_retry(finisher_t *f, const page_t *p, uint32_t retry_after_ms, int *dead);

/* Completes the batch in flight: if its reply has started to arrive, or
 * with block at once; reads the replies and writes the records.  *pages:
 * how many pages it finished (0 when no batch completed; a batch that
 * failed counts its pages too). */
int finisher_complete(finisher_t *f, int block, size_t *pages);

/* Completes the batch in flight (blocking), then sends the pages added
 * since as the next batch (frontier_finish_start); with wait, also
 * completes that one.  *pages: the pages of the batches completed. */
int finisher_flush(finisher_t *f, int wait, size_t *pages);

/* Pages added and not yet sent. */
size_t finisher_queued(const finisher_t *f);
/* The finishing connection's socket while a batch is in flight (its reply
 * makes it readable), else -1. */
int finisher_fd(const finisher_t *f);

#endif
