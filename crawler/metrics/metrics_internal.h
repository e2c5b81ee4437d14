/*
 * metrics_internal.h -- what metrics.c (the hooks) and metrics_render.c
 * (the text of a scrape) share: the registry and its per-thread slots.
 * Not for other modules (metrics.h is the interface).
 */
#ifndef CRAWLER_METRICS_INTERNAL_H
#define CRAWLER_METRICS_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "metrics.h"

/* Status classes of crawler_pages_total (mx_status_class). */
enum { MX_ST_2XX, MX_ST_3XX, MX_ST_4XX, MX_ST_5XX, MX_ST_OTHER, MX_ST_NONE, MX_NSTATUS };
/* crawler_links_total's results. */
enum { MX_LINK_NEW, MX_LINK_SEEN, MX_LINK_SKIPPED, MX_NLINKS };
#define MX_NKINDS (CRAWL_KIND_COUNT + 1) /* the page error kinds (errors.h), and "other" */
#define MX_TIME_NB 15                    /* fetch time and TTFB: 1 ms .. 60 s */
#define MX_REDIS_NB 14                   /* Redis round trips: 50 us .. 1 s */

/* The histograms' bucket bounds, in seconds (the hooks bucket by them, the
 * scrape writes them). */
static const double MX_TIME_BOUNDS[MX_TIME_NB] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double MX_REDIS_BOUNDS[MX_REDIS_NB] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};

/* One worker thread's numbers: written by it only, read by the scrapes. */
typedef struct mx_slot {
    _Atomic uint64_t pages[MX_NSTATUS];
    _Atomic uint64_t errors[MX_NKINDS];
    _Atomic uint64_t bytes, transfers, links[MX_NLINKS], finished, retries, dead, disconnects,
        ip_waits, ip_probes, tls_full, tls_resumed;
    _Atomic uint64_t in_flight, waiting; /* gauges */
    _Atomic int started, redis_up, ended;
    _Atomic uint64_t fetch[MX_TIME_NB + 1], fetch_sum_us;
    _Atomic uint64_t ttfb[MX_TIME_NB + 1], ttfb_sum_us;
    _Atomic uint64_t redis[METRICS_NCALLS][MX_REDIS_NB + 1], redis_sum_us[METRICS_NCALLS];
    uint64_t sent_us[METRICS_NCALLS]; /* the thread's own: its calls in flight, 0: none */
} __attribute__((aligned(64))) mx_slot_t;

struct metrics {
    mx_slot_t *slots;
    unsigned nslots;
    double started_s; /* Unix time of metrics_open */
};

/* The index in crawler_pages_total's classes of an HTTP status (0: none). */
int mx_status_class(int status);
/* The index of an error kind (its crawl_kind_t), MX_NKINDS - 1 ("other")
 * if it is none of them. */
int mx_kind_index(const char *kind);

#endif
