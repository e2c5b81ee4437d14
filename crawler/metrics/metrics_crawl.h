/*
 * metrics_crawl.h -- the text of one scrape of `crawler stats --serve`: a
 * crawl's state as Redis holds it (frontier_stats, frontier_workers, the
 * Bloom filter's fill), every series labelled crawl="NAME".
 *
 * Pure: it formats what the caller read (cmd_stats.c reads it with the
 * code `crawler stats` prints from).  Thread-safe.
 */
#ifndef CRAWLER_METRICS_CRAWL_H
#define CRAWLER_METRICS_CRAWL_H

#include <stddef.h>

#include "bloom.h"
#include "frontier.h"
#include "metrics_text.h"

/* What one reading found: redis_up 0 when Redis could not be read (then
 * only crawler_redis_up and the build info are written, and s, w, bloom are
 * not read); bloom NULL when the crawl has no filter (yet). */
typedef struct metrics_crawl_view {
    const char *crawl;
    int redis_up;
    const frontier_stats_t *s;
    const frontier_worker_info_t *w;
    size_t nw;
    const bloom_fill_t *bloom;
    double read_s; /* how long the reading took, seconds */
} metrics_crawl_view_t;

/* Appends the families of v to t. */
void metrics_crawl_render(const metrics_crawl_view_t *v, metrics_text_t *t);

#endif
