/*
 * metrics.h -- one crawler process's Prometheus metrics (`crawl
 * --metrics`): counters, gauges and histograms its worker threads keep, and
 * their text for GET /metrics.
 *
 * A registry (metrics_open, metrics_close) belongs to its caller: the
 * crawl command makes one and hands it to the engine.  Each worker thread
 * binds itself to its own slot of it (metrics_thread_begin) and the hooks
 * below write that slot; a thread bound to nothing (no --metrics,
 * or not a worker) makes every hook return at once, so the engine, fetch
 * and finisher call them unconditionally.  A slot is written by its thread
 * only (relaxed atomic loads and stores: no lock, no read-modify-write on
 * the hot path) and read by the server's thread (metrics_render), which
 * sums the slots.  Thread-safety: the hooks write the calling thread's slot
 * only; metrics_render may run on any thread at any time between
 * metrics_open and metrics_close.
 */
#ifndef CRAWLER_METRICS_H
#define CRAWLER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "metrics_text.h"

typedef struct metrics metrics_t;

/* The Redis calls whose round trips are timed (send to reply read, as the
 * worker saw it: its loop serves transfers meanwhile). */
typedef enum metrics_call {
    METRICS_CALL_CLAIM,
    METRICS_CALL_HEARTBEAT,
    METRICS_CALL_FINISH,
    METRICS_NCALLS
} metrics_call_t;

/* A registry for threads worker threads (caller frees with metrics_close).
 * NULL on out of memory. */
metrics_t *metrics_open(unsigned threads);
/* Ends it (after every worker thread ended and the server stopped).
 * Accepts NULL. */
void metrics_close(metrics_t *m);

/* The calling thread is worker idx (< threads) of m from now on (m NULL:
 * the thread stays unbound, every hook a no-op); _end unbinds it and zeroes
 * its gauges.  m must outlive the binding. */
void metrics_thread_begin(metrics_t *m, unsigned idx);
void metrics_thread_end(void);
/* 1 when the calling thread is bound (to guard work done only for a hook). */
int metrics_enabled(void);

/* ---- hooks: each a no-op on an unbound thread ------------------------------ */
/* A finished URL's record (one per JSON line): its status (0: none) and
 * error kind (NULL: none). */
void metrics_page(int status, const char *error_kind);
/* A page transfer ended: bytes of body, the whole transfer's time and the
 * time to its first byte, microseconds (curl's TOTAL/STARTTRANSFER). */
void metrics_transfer(uint64_t bytes, uint64_t total_us, uint64_t ttfb_us);
/* The same from a finished easy handle (CURL *): its TOTAL_TIME_T and
 * STARTTRANSFER_TIME_T read only on a bound thread. */
void metrics_transfer_curl(void *easy, uint64_t bytes);
/* Links of finished pages: queued as new, found and not new (seen, or over
 * a limit), not offered (past --max-links-per-page). */
void metrics_links(uint64_t new_links, uint64_t seen, uint64_t skipped);
/* Pages the frontier acknowledged as finished. */
void metrics_finished(uint64_t pages);
/* An attempt handed to the retry: dead 1 if it was its last (dead letter). */
void metrics_retry(int dead);
/* A request told to wait for a slot of its IP address (per-IP politeness). */
void metrics_ip_wait(void);
/* A request started as a probe: its host's address was not known. */
void metrics_ip_probe(void);
/* A TLS handshake done, resumed (1) or full (0). */
void metrics_tls_handshake(int resumed);
/* A call of kind sent now / its reply read now (the round trip observed). */
void metrics_redis_sent(metrics_call_t call);
void metrics_redis_answered(metrics_call_t call);
/* The thread's Redis connections lost (0) or back (1). */
void metrics_redis_state(int up);
/* The thread's gauges now: transfers running, URLs claimed and not started. */
void metrics_gauges(uint64_t in_flight, uint64_t waiting);

/* Appends the text of every family (the slots summed) to t, and the
 * process_* and build info families.  Thread-safe. */
void metrics_render(const metrics_t *m, metrics_text_t *t);
/* The same as a metrics_server_start render function (ud: the metrics_t);
 * returns 200. */
int metrics_render_fn(void *ud, metrics_text_t *t);

#endif
