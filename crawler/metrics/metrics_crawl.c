/*
 * metrics_crawl.c -- `crawler stats --serve`'s text (metrics_crawl.h).
 *
 * DESIGN: formats one reading of the crawl's state; keeps nothing.  The
 * gauges are the crawl's now (queues, hosts, the visited set's fill, live
 * workers); the counters are the crawl's stats and errors hashes as
 * crawler_crawl_* families (since the crawl began, all workers: a reset of
 * the crawl is a counter reset to Prometheus).  Every series carries
 * crawl="NAME", so one Prometheus scrapes one target per crawl.  Redis
 * down: crawler_redis_up 0 and nothing else of the crawl (no stale
 * numbers), answered 200 so that Prometheus keeps that series.
 */
#include "metrics_crawl.h"

#include <stdint.h>
#include <stdio.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))

typedef struct num_def {
    const char *name, *help;
    uint64_t v;
} num_def_t;

/* name{crawl=...} v, with its HELP and TYPE. */
static void one(metrics_text_t *t, const char *crawl, const char *type, const char *name,
                const char *help, double v)
{
    metrics_label_t l = {"crawl", crawl};
    metrics_text_family(t, name, type, help);
    metrics_text_sample(t, name, &l, 1, v);
}

static void each(metrics_text_t *t, const char *crawl, const char *type, const num_def_t *d,
                 size_t n)
{
    for (size_t i = 0; i < n; i++)
        one(t, crawl, type, d[i].name, d[i].help, (double)d[i].v);
}

/* A family with a second label taking n values. */
static void split(metrics_text_t *t, const char *crawl, const char *name, const char *help,
                  const char *label, const char *const *values, const uint64_t *v, size_t n)
{
    metrics_text_family(t, name, "counter", help);
    for (size_t i = 0; i < n; i++) {
        metrics_label_t l[2] = {{"crawl", crawl}, {label, values[i]}};
        metrics_text_count(t, name, l, 2, v[i]);
    }
}

static void gauges(const metrics_crawl_view_t *v, metrics_text_t *t)
{
    const frontier_stats_t *s = v->s;
    const num_def_t g[] = {
        {"crawler_crawl_queued_urls", "URLs queued, ready to claim when their host is", s->queued},
        {"crawler_crawl_delayed_urls", "URLs waiting for a retry's backoff", s->delayed},
        {"crawler_crawl_in_flight_urls", "URLs leased to workers now", s->in_flight},
        {"crawler_crawl_dead_letters", "URLs in the dead-letter list", s->dead},
        {"crawler_crawl_hosts", "hosts that ever had a URL admitted", s->hosts},
        {"crawler_crawl_ready_hosts", "hosts with queued URLs and room for a fetch now",
         s->ready_hosts},
        {"crawler_crawl_paced_hosts",
         "hosts waiting longer than --delay: slow, or answering 429/503 (--delay-factor)",
         s->paced_hosts},
        {"crawler_crawl_live_workers", "workers whose lease is live", s->workers},
        {"crawler_crawl_registered_workers", "workers registered (live or not)", v->nw},
    };
    each(t, v->crawl, "gauge", g, NL(g));
    if (!v->bloom)
        return;
    one(t, v->crawl, "gauge", "crawler_crawl_bloom_fill_ratio",
        "URLs added to the visited set over its capacity (1: full, the crawl stops); one that "
        "grows: its newest layer's (a layer is added at 1)",
        v->bloom->fill);
    one(t, v->crawl, "gauge", "crawler_crawl_bloom_false_positive_rate",
        "estimated false-positive rate of the visited set now", v->bloom->fp_rate);
    one(t, v->crawl, "gauge", "crawler_crawl_bloom_capacity_urls",
        "URLs the visited set was made for", (double)v->bloom->capacity);
    one(t, v->crawl, "gauge", "crawler_crawl_bloom_added_urls",
        "URLs added to the visited set (seeds and new links)", (double)v->bloom->added);
}

static void counters(const metrics_crawl_view_t *v, metrics_text_t *t)
{
    const frontier_stats_t *s = v->s;
    const num_def_t c[] = {
        {"crawler_crawl_enqueued_total", "URLs admitted (seeds and new links)", s->enqueued},
        {"crawler_crawl_seeds_total", "seed URLs admitted", s->seeds},
        {"crawler_crawl_claimed_total", "URLs claimed by workers", s->claimed},
        {"crawler_crawl_fetched_total", "URLs finished, whatever the outcome", s->fetched},
        {"crawler_crawl_response_bytes_total", "body bytes of finished and retried attempts",
         s->bytes},
        {"crawler_crawl_retried_total", "attempts sent to a retry", s->retried},
        {"crawler_crawl_reclaimed_total", "URLs taken back from dead workers", s->reclaimed},
        {"crawler_crawl_released_total", "URLs handed back unfinished", s->released},
        {"crawler_crawl_capped_pages_total", "pages with more links than --max-links-per-page",
         s->capped_pages},
        {"crawler_crawl_errors_total", "outcomes with an error kind, all kinds", s->errors},
        {"crawler_crawl_blocked_total", "queued URLs dropped by crawler block", s->blocked},
    };
    each(t, v->crawl, "counter", c, NL(c));
    static const char *const ST[] = {"2xx", "3xx", "4xx", "5xx", "other"};
    const uint64_t sv[] = {s->status_2xx, s->status_3xx, s->status_4xx, s->status_5xx,
                           s->status_other};
    split(t, v->crawl, "crawler_crawl_pages_total",
          "finished and retried responses by HTTP status class", "status", ST, sv, NL(sv));
    static const char *const LK[] = {"new", "seen", "skipped", "blocked"};
    const uint64_t lv[] = {s->new_links, s->seen_links, s->skipped_links, s->blocked_links};
    split(t, v->crawl, "crawler_crawl_links_total",
          "links offered: new (queued), seen (in the visited set), skipped (over a depth or "
          "page limit), blocked (crawler block)",
          "result", LK, lv, NL(lv));
    metrics_text_family(t, "crawler_crawl_fetch_errors_total", "counter",
                        "outcomes by error kind (the crawl's errors hash, largest kinds)");
    for (size_t i = 0; i < s->nkinds; i++) {
        metrics_label_t l[2] = {{"crawl", v->crawl}, {"kind", s->kinds[i].kind}};
        metrics_text_count(t, "crawler_crawl_fetch_errors_total", l, 2, s->kinds[i].count);
    }
}

void metrics_crawl_render(const metrics_crawl_view_t *v, metrics_text_t *t)
{
    metrics_label_t b = {"version", CRAWLER_VERSION};
    metrics_text_family(t, "crawler_build_info", "gauge", "the crawler's version (always 1)");
    metrics_text_count(t, "crawler_build_info", &b, 1, 1);
    one(t, v->crawl, "gauge", "crawler_redis_up",
        "1 if the crawl's Redis answered this scrape, 0 if not (then no other crawl series)",
        v->redis_up ? 1 : 0);
    one(t, v->crawl, "gauge", "crawler_crawl_scrape_duration_seconds",
        "time this scrape spent reading Redis", v->read_s);
    if (!v->redis_up)
        return;
    gauges(v, t);
    counters(v, t);
}
