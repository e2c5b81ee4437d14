/*
 * finisher.h -- what happens to a worker thread's finished pages: their
 * output records (one JSON line per finished URL, jsonl.c; one WARC
 * exchange per page read, warc.c), then batched finish calls on the
 * thread's frontier handle (sent without waiting, so the thread goes on
 * fetching while Redis runs them), and retries (frontier_retry).
 *
 * Output before acknowledgement: a page's records are written and flushed
 * to the file (write(2); no fsync) before its finish or dead-letter call
 * is sent, so a process killed at any instruction leaves every page marked
 * done with its record on file (a page may be recorded twice, never zero
 * times).  A failed write stops the sending: the pages stay leased (the
 * caller hands them back with finisher_release).
 *
 * Redis lost: a batch or retry in flight stays on the link (its records
 * are not written again) and is sent again after the reconnect; one that
 * Redis had run already finds its leases gone the second time (finish.lua,
 * retry.lua): never acknowledged twice.
 *
 * A finisher_t belongs to one thread (not thread-safe).  The
 * finisher_common_t is shared by the finishers of all threads (thread-safe):
 * the borrowed output writers and "report a write error once".
 *
 * Errors: 0 or a negative CRAWL_E* code.  CRAWL_ELEASE (a lease had
 * expired and been handed to another worker) is not an error and never
 * returned.  CRAWL_EWRITE: an output file failed (nothing was sent since).
 * CRAWL_EREDIS: the link is down; what was not answered is kept for the
 * reconnect.
 */
#ifndef CRAWLER_FINISHER_H
#define CRAWLER_FINISHER_H

#include <stddef.h>

#include "config.h"
#include "frontier.h"
#include "page.h"

struct outputs;

typedef struct finisher_common finisher_common_t;
typedef struct finisher finisher_t;

/* outs: the record writers (outputs.h; borrowed, thread-safe; each may be
 * NULL).  NULL on out of memory. */
finisher_common_t *finisher_common_new(const struct outputs *outs);
/* Frees it after every finisher using it is freed.  Accepts NULL. */
void finisher_common_free(finisher_common_t *c);
/* 1 if pages are recorded in a WARC file (their exchange is wanted). */
int finisher_common_records(const finisher_common_t *c);

/* A finisher on fr (borrowed: the thread's handle, under whose worker id
 * its URLs were claimed).  cfg and c must outlive it.  NULL on out of
 * memory. */
finisher_t *finisher_new(finisher_common_t *c, const crawl_config_t *cfg, frontier_t *fr);
/* Completes the batch in flight, if any (its pages not counted anywhere:
 * call finisher_flush(f, 1, ...) first), and frees the finisher; pages
 * still queued are dropped (their leases expire: call finisher_release
 * first to hand them back).  Accepts NULL. */
void finisher_free(finisher_t *f);

/* Adds a finished page to the next batch: *p is taken over (zeroed).  With
 * ex (borrowed for the call) its exchange is written to the WARC file now.
 * No Redis call.  CRAWL_ENOMEM: the page is dropped (its lease expires and
 * the URL comes back to the frontier). */
int finisher_add(finisher_t *f, page_t *p, const page_exchange_t *ex);

/* A failed attempt worth another try, queued (*p taken over, zeroed) and
 * sent by the next finisher_flush: the URL goes to the frontier's delayed
 * set (at least retry_after_ms from now), or on its last try
 * (cfg->max_tries) to the dead-letter list -- then it is finished (its
 * record is written before the call) and *dead is 1.  No Redis call.
 * CRAWL_ENOMEM: dropped (its lease expires). */
int finisher_retry(finisher_t *f, page_t *p, uint32_t retry_after_ms, int *dead);

/* Completes the batch in flight: if it has answered, or with block waiting
 * for it (CRAWL_EREDIS while the link is down: it stays in flight).
 * *pages: how many pages it finished (0 when no batch completed; a batch
 * that failed counts its pages too). */
int finisher_complete(finisher_t *f, int block, size_t *pages);

/* Completes the batch in flight (blocking); writes and flushes the records
 * of the pages and dead letters queued since; sends the queued retries
 * (one call each, waited for, unless deferred), then the pages as the next
 * batch (frontier_finish_start); with wait, also completes that one.
 * *pages: the pages of the batches completed. */
int finisher_flush(finisher_t *f, int wait, size_t *pages);

/* From now on the retries are not sent by finisher_flush but handed out as
 * calls (finisher_next_retry), once their records are on file, for the
 * caller to send without waiting.  The retries handed out stay held
 * (finisher_queued, finisher_each_item) until finisher_retried. */
void finisher_defer_retries(finisher_t *f);
/* The next retry (after a finisher_flush), sent: 1 and *call (the
 * caller's: it waits for its answer and frees it), 0 when none is ready
 * (or an output failed), or CRAWL_ENOMEM (the retry stays, for a later
 * call). */
int finisher_next_retry(finisher_t *f, frontier_call_t **call);
/* The outcome of the first retry handed out and not yet reported (the
 * calls' order): the retry is dropped; returns rc, CRAWL_ELEASE as 0.  A
 * transient outcome (crawl_transient) is not reported: the call is sent
 * again. */
int finisher_retried(finisher_t *f, int rc);

/* Hands every page and retry it holds back to the frontier, unfinished
 * (frontier_release; their records may be on file already), and drops
 * them.  *n: how many were handed back. */
int finisher_release(finisher_t *f, size_t *n);

/* Calls fn on the item of every page and retry the finisher holds (queued
 * or in flight): the leases this worker still needs. */
void finisher_each_item(const finisher_t *f, void (*fn)(const frontier_item_t *, void *), void *ud);

/* The text of the last script error of its handle (e.g. "KEY is a list,
 * expected a hash"), or "" (valid until the next call). */
const char *finisher_last_error(const finisher_t *f);

/* Pages and retries added and not yet sent (retries handed out by
 * finisher_next_retry count as sent). */
size_t finisher_queued(const finisher_t *f);
/* 1 while a batch is in flight. */
int finisher_busy(const finisher_t *f);

#endif
