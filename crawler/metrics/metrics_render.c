/*
 * metrics_render.c -- the text of one scrape of `crawl --metrics`
 * (metrics_render): every family with its HELP and TYPE, the worker
 * threads' slots summed (relaxed loads), and the process_* basics read from
 * /proc/self and getrusage at the scrape.
 *
 * DESIGN: reads the registry, writes nothing to it.  Every labelled family
 * writes all its label values, zeros included, so that a series exists
 * from the first scrape (rate() and the dashboard see it start at 0).
 * Names follow the Prometheus conventions: counters end in _total, units
 * are base units (_seconds, _bytes).
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics_internal.h"

static const char *const STATUS[MX_NSTATUS] = {"2xx", "3xx", "4xx", "5xx", "other", "none"};
static const char *const LINKS[MX_NLINKS] = {"new", "not_new", "over_cap"};
static const char *const CALLS[METRICS_NCALLS] = {"claim", "heartbeat", "finish"};

static uint64_t ld(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* The sum over the slots of the counter at byte offset off of a slot. */
static uint64_t sum_at(const metrics_t *m, size_t off)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < m->nslots; i++)
        s += ld((const _Atomic uint64_t *)((const char *)&m->slots[i] + off));
    return s;
}
#define SUM(m, field) sum_at(m, offsetof(mx_slot_t, field))

static void counter(metrics_text_t *t, const char *name, const char *help, uint64_t v)
{
    metrics_text_family(t, name, "counter", help);
    metrics_text_count(t, name, NULL, 0, v);
}

static void gauge(metrics_text_t *t, const char *name, const char *help, double v)
{
    metrics_text_family(t, name, "gauge", help);
    metrics_text_sample(t, name, NULL, 0, v);
}

/* A family with one label taking n values; the slots' counters at off
 * (an array of n uint64_t). */
static void labelled(metrics_text_t *t, const metrics_t *m, const char *name, const char *help,
                     const char *label, const char *const *values, size_t n, size_t off)
{
    metrics_text_family(t, name, "counter", help);
    for (size_t i = 0; i < n; i++) {
        metrics_label_t l = {label, values[i]};
        metrics_text_count(t, name, &l, 1, sum_at(m, off + i * sizeof(uint64_t)));
    }
}

/* A histogram of nb bounds, its buckets at boff and its sum (us) at soff. */
static void histogram(metrics_text_t *t, const metrics_t *m, const char *name,
                      const metrics_label_t *l, size_t nl, const double *bounds, size_t nb,
                      size_t boff, size_t soff)
{
    uint64_t counts[MX_TIME_NB > MX_REDIS_NB ? MX_TIME_NB + 1 : MX_REDIS_NB + 1];
    for (size_t i = 0; i <= nb; i++)
        counts[i] = sum_at(m, boff + i * sizeof(uint64_t));
    metrics_hist_view_t h = {bounds, nb, counts, (double)sum_at(m, soff) / 1e6};
    metrics_text_histogram(t, name, l, nl, &h);
}

static void render_counters(const metrics_t *m, metrics_text_t *t)
{
    labelled(t, m, "crawler_pages_total",
             "URLs finished by this process, one per output record, by HTTP status class of "
             "the last response (none: no response)",
             "status", STATUS, MX_NSTATUS, offsetof(mx_slot_t, pages));
    const char *kinds[MX_NKINDS];
    for (size_t i = 0; i < MX_NKINDS; i++)
        kinds[i] = i < CRAWL_KIND_COUNT ? crawl_kind_name((crawl_kind_t)i) : "other";
    labelled(t, m, "crawler_fetch_errors_total",
             "URLs finished with an error, by the output record's error_kind", "kind", kinds,
             MX_NKINDS, offsetof(mx_slot_t, errors));
    counter(t, "crawler_response_bytes_total",
            "body bytes received by page transfers (every attempt)", SUM(m, bytes));
    labelled(t, m, "crawler_links_total",
             "links of finished pages: new (queued), not_new (offered, not queued: already in "
             "the visited set or over a depth or page limit), over_cap (past "
             "--max-links-per-page, not offered); crawler_crawl_links_total splits not_new",
             "result", LINKS, MX_NLINKS, offsetof(mx_slot_t, links));
    counter(t, "crawler_pages_finished_total", "pages whose finish the frontier acknowledged",
            SUM(m, finished));
    counter(t, "crawler_retries_total", "failed attempts sent back to the frontier for a retry",
            SUM(m, retries));
    counter(t, "crawler_dead_letters_total",
            "URLs dead-lettered by this process (their last try failed)", SUM(m, dead));
    counter(t, "crawler_ip_waits_total",
            "requests told to wait for a slot of their IP address (--per-ip, --ip-delay)",
            SUM(m, ip_waits));
    counter(t, "crawler_ip_probes_total",
            "requests that first stopped at their DNS answer, no worker having fetched their "
            "host in the last minute (--per-ip, --ip-delay)",
            SUM(m, ip_probes));
    counter(t, "crawler_tls_handshakes_total",
            "TLS handshakes done, full or resumed (with --tls-sessions)",
            SUM(m, tls_full) + SUM(m, tls_resumed));
    counter(t, "crawler_tls_resumed_total",
            "TLS handshakes that resumed a session of the same origin (--tls-sessions)",
            SUM(m, tls_resumed));
    counter(t, "crawler_redis_disconnects_total",
            "times a worker thread lost its Redis connections", SUM(m, disconnects));
}

static void render_gauges(const metrics_t *m, metrics_text_t *t)
{
    unsigned running = 0, down = 0;
    for (unsigned i = 0; i < m->nslots; i++) {
        const mx_slot_t *s = &m->slots[i];
        int on = atomic_load_explicit(&s->started, memory_order_relaxed) &&
                 !atomic_load_explicit(&s->ended, memory_order_relaxed);
        running += on;
        down += on && !atomic_load_explicit(&s->redis_up, memory_order_relaxed);
    }
    gauge(t, "crawler_transfers_in_flight", "page and robots.txt transfers running",
          (double)SUM(m, in_flight));
    gauge(t, "crawler_claimed_waiting",
          "URLs claimed and not started yet (parked on robots.txt, or on their look)",
          (double)SUM(m, waiting));
    gauge(t, "crawler_worker_threads", "fetcher threads running", (double)running);
    gauge(t, "crawler_redis_connected",
          "1 while every fetcher thread has its Redis connections (claims, finishes, side "
          "calls: lost and regained together), 0 while one is reconnecting",
          down ? 0 : 1);
    gauge(t, "crawler_redis_threads_reconnecting", "fetcher threads without Redis now",
          (double)down);
}

static void render_histograms(const metrics_t *m, metrics_text_t *t)
{
    metrics_text_family(t, "crawler_fetch_duration_seconds", "histogram",
                        "page transfer time, request start to end (every attempt)");
    histogram(t, m, "crawler_fetch_duration_seconds", NULL, 0, MX_TIME_BOUNDS, MX_TIME_NB,
              offsetof(mx_slot_t, fetch), offsetof(mx_slot_t, fetch_sum_us));
    metrics_text_family(t, "crawler_ttfb_seconds", "histogram",
                        "page transfer time to the first byte of the response");
    histogram(t, m, "crawler_ttfb_seconds", NULL, 0, MX_TIME_BOUNDS, MX_TIME_NB,
              offsetof(mx_slot_t, ttfb), offsetof(mx_slot_t, ttfb_sum_us));
    metrics_text_family(t, "crawler_redis_roundtrip_seconds", "histogram",
                        "Redis calls from send to reply read, as the worker saw them, by call");
    for (int c = 0; c < METRICS_NCALLS; c++) {
        metrics_label_t l = {"call", CALLS[c]};
        histogram(t, m, "crawler_redis_roundtrip_seconds", &l, 1, MX_REDIS_BOUNDS, MX_REDIS_NB,
                  offsetof(mx_slot_t, redis) + (size_t)c * (MX_REDIS_NB + 1) * sizeof(uint64_t),
                  offsetof(mx_slot_t, redis_sum_us) + (size_t)c * sizeof(uint64_t));
    }
}

static unsigned open_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n ? n - 1 : 0; /* not the directory's own */
}

static void render_process(const metrics_t *m, metrics_text_t *t)
{
    unsigned long long vsz = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &vsz, &rss) != 2)
            vsz = rss = 0;
        fclose(f);
    }
    double page = (double)sysconf(_SC_PAGESIZE);
    struct rusage ru;
    double cpu = getrusage(RUSAGE_SELF, &ru) == 0
                     ? (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6
                     : 0;
    struct rlimit rl;
    double maxfds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : 0;
    metrics_text_family(t, "process_cpu_seconds_total", "counter",
                        "user and system CPU time spent, seconds");
    metrics_text_sample(t, "process_cpu_seconds_total", NULL, 0, cpu);
    gauge(t, "process_resident_memory_bytes", "resident memory size", (double)rss * page);
    gauge(t, "process_virtual_memory_bytes", "virtual memory size", (double)vsz * page);
    gauge(t, "process_start_time_seconds", "start time of the process, Unix seconds", m->started_s);
    gauge(t, "process_open_fds", "open file descriptors", (double)open_fds());
    gauge(t, "process_max_fds", "open file descriptor limit", maxfds);
}

void metrics_render(const metrics_t *m, metrics_text_t *t)
{
    metrics_label_t v = {"version", CRAWLER_VERSION};
    metrics_text_family(t, "crawler_build_info", "gauge", "the crawler's version (always 1)");
    metrics_text_count(t, "crawler_build_info", &v, 1, 1);
    render_counters(m, t);
    render_gauges(m, t);
    render_histograms(m, t);
    render_process(m, t);
}

int metrics_render_fn(void *ud, metrics_text_t *t)
{
    metrics_render(ud, t);
    return 200;
}
