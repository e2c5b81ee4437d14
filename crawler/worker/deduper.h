/*
 * deduper.h -- a worker thread's pages waiting for the crawl's word on
 * their payload (--dedup): each 2xx page with a body has its payload digest
 * (the WARC's) tested and recorded crawl-wide (frontier_dedup_start) before
 * its records are written, so that a copy of a page already seen under
 * another URL is recorded as a duplicate (a revisit record, "duplicate" in
 * its JSON line, no text) and every other page in full.
 *
 * A page waits here with a copy of its exchange (heads and body: the
 * transfer's buffers are reused) for one round trip; then it goes to the
 * finisher as any page does.  One call in flight at a time; pages added
 * meanwhile make the next one.  A lost link: the call may run twice, so
 * the link keeps it and sends it again after the reconnect.  Not
 * thread-safe: one per thread.
 */
#ifndef CRAWLER_DEDUPER_H
#define CRAWLER_DEDUPER_H

#include <stddef.h>

#include "finisher.h"
#include "frontier.h"
#include "page.h"

typedef struct deduper deduper_t;

/* fr and fin: the thread's (borrowed).  NULL on out of memory. */
deduper_t *deduper_new(frontier_t *fr, finisher_t *fin);
/* Accepts NULL.  Pages still held are dropped (release them first). */
void deduper_free(deduper_t *d);

/* 1 if p is one to test: a 2xx response with a body kept in ex. */
int deduper_wants(const page_t *p, const page_exchange_t *ex);
/* Takes *p (zeroed) and a copy of *ex, its digest computed: 0, or an
 * error (then p went to the finisher untested: recorded in full). */
int deduper_add(deduper_t *d, page_t *p, const page_exchange_t *ex);
/* The call in flight answered (block: waits for it): its pages handed to
 * the finisher, each told whether it is a duplicate; then the pages added
 * since sent as the next call.  0, or an error (CRAWL_EREDIS: the link is
 * down, the pages kept; CRAWL_EWRITE from the finisher). */
int deduper_turn(deduper_t *d, int block);
/* 1 while pages wait (in a call or for the next). */
int deduper_busy(const deduper_t *d);
/* Calls fn for the lease of every page it holds (the reconcile's). */
void deduper_each_item(const deduper_t *d, void (*fn)(const frontier_item_t *, void *), void *ud);

#endif
