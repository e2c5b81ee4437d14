/*
 * engine.h -- the fetcher threads of one crawler process.
 *
 * engine_run() starts cfg->threads threads, each with its own libcurl multi
 * handle driven by its own epoll loop (its share of cfg->concurrency, the
 * process's budget of transfers in flight), its own Redis connection,
 * Bloom and frontier handles, and runs the claim -> robots -> fetch ->
 * stream-parse -> scope -> finish loop until the crawl is over (or, with
 * cfg->wait, until a signal).  The calling thread handles SIGINT/SIGTERM and
 * the progress line.
 */
#ifndef CRAWLER_ENGINE_H
#define CRAWLER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "rconn.h"

struct outputs;
struct metrics;

typedef struct engine_totals {
    uint64_t pages;    /* finished (fetched or failed for good) by this process */
    uint64_t bytes;    /* body bytes received */
    uint64_t errors;   /* transport errors and refused URLs */
    uint64_t retried;  /* handed to the frontier's retry */
    uint64_t released; /* handed back at shutdown */
} engine_totals_t;

/* Runs the crawl; returns 0 when it ended normally or by a signal, else the
 * first thread's failure as a CRAWL_E* code (errors.h: CRAWL_EREDIS when
 * Redis was lost, ...), the details printed on stderr by the thread;
 * CRAWL_ENOMEM when no thread could start.
 * outs (outputs.h: the writers of the outputs asked for) and metrics
 * (--metrics: each thread's counters go to its slot; may be NULL) are
 * borrowed.  The calling thread watches the embedded
 * redis-server redis runs, if any (rconn_embedded_watch): one that dies is
 * started again and the threads reconnect; one that cannot be started again
 * stops the crawl (CRAWL_EREDIS). */
int engine_run(const crawl_config_t *cfg, rconn_t *redis, const struct outputs *outs,
               struct metrics *metrics, engine_totals_t *totals);

#endif
