/*
 * metrics.c -- the process's Prometheus registry (metrics.h).
 *
 * DESIGN: the registry is an array of per-thread slots (one cache line
 * apart: no false sharing), each written by its worker thread only through
 * the thread-local pointer `bound` (NULL: every hook returns at once), with
 * relaxed atomic loads and stores (one writer: no locked instruction), and
 * read by the server's thread with relaxed loads (metrics_render sums the
 * slots; a scrape may see one counter a moment ahead of another, never a
 * torn value).  The registry is the caller's (cmd_crawl makes it, the
 * engine binds each of its threads to a slot of it): no process-wide one;
 * `bound` is only the calling thread's own slot.  Histograms keep per-bucket
 * counts and their sum in microseconds; the start times of the Redis calls
 * in flight are the thread's own (one call of each kind in flight at once).
 * No Redis keys.
 */
#include "metrics.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics_internal.h"

static _Thread_local mx_slot_t *bound; /* the calling thread's slot, NULL: unbound */

metrics_t *metrics_open(unsigned threads)
{
    metrics_t *m = calloc(1, sizeof *m);
    if (!m || !(m->slots = aligned_alloc(64, (threads ? threads : 1) * sizeof *m->slots))) {
        free(m);
        return NULL;
    }
    memset(m->slots, 0, (threads ? threads : 1) * sizeof *m->slots);
    m->nslots = threads;
    m->started_s = (double)time(NULL);
    return m;
}

void metrics_close(metrics_t *m)
{
    if (!m)
        return;
    free(m->slots);
    free(m);
}

void metrics_thread_begin(metrics_t *m, unsigned idx)
{
    bound = m && idx < m->nslots ? &m->slots[idx] : NULL;
    if (!bound)
        return;
    atomic_store_explicit(&bound->redis_up, 1, memory_order_relaxed);
    atomic_store_explicit(&bound->started, 1, memory_order_relaxed);
}

void metrics_thread_end(void)
{
    if (!bound)
        return;
    atomic_store_explicit(&bound->in_flight, 0, memory_order_relaxed);
    atomic_store_explicit(&bound->waiting, 0, memory_order_relaxed);
    atomic_store_explicit(&bound->ended, 1, memory_order_relaxed);
    bound = NULL;
}

int metrics_enabled(void)
{
    return bound != NULL;
}

/* c += n, by its one writer. */
static inline void bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void set(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One observation of us microseconds in a histogram of nb bounds. */
static void observe(_Atomic uint64_t *buckets, _Atomic uint64_t *sum_us, const double *bounds,
                    size_t nb, uint64_t us)
{
    double s = (double)us / 1e6;
    size_t i = 0;
    while (i < nb && s > bounds[i])
        i++;
    bump(&buckets[i], 1);
    bump(sum_us, us);
}

int mx_status_class(int status)
{
    if (status == 0)
        return MX_ST_NONE;
    if (status >= 200 && status < 600)
        return MX_ST_2XX + status / 100 - 2;
    return MX_ST_OTHER;
}

int mx_kind_index(const char *kind)
{
    int k = crawl_kind_find(kind);
    return k >= 0 ? k : MX_NKINDS - 1; /* "other" */
}

void metrics_page(int status, const char *error_kind)
{
    if (!bound)
        return;
    bump(&bound->pages[mx_status_class(status)], 1);
    if (error_kind && *error_kind)
        bump(&bound->errors[mx_kind_index(error_kind)], 1);
}

void metrics_transfer(uint64_t bytes, uint64_t total_us, uint64_t ttfb_us)
{
    if (!bound)
        return;
    bump(&bound->bytes, bytes);
    bump(&bound->transfers, 1);
    observe(bound->fetch, &bound->fetch_sum_us, MX_TIME_BOUNDS, MX_TIME_NB, total_us);
    observe(bound->ttfb, &bound->ttfb_sum_us, MX_TIME_BOUNDS, MX_TIME_NB, ttfb_us);
}

void metrics_transfer_curl(void *easy, uint64_t bytes)
{
    curl_off_t total = 0, ttfb = 0;
    if (!bound)
        return;
    curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME_T, &total);
    curl_easy_getinfo(easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
    metrics_transfer(bytes, total > 0 ? (uint64_t)total : 0, ttfb > 0 ? (uint64_t)ttfb : 0);
}

void metrics_links(uint64_t new_links, uint64_t seen, uint64_t skipped)
{
    if (!bound)
        return;
    bump(&bound->links[MX_LINK_NEW], new_links);
    bump(&bound->links[MX_LINK_SEEN], seen);
    bump(&bound->links[MX_LINK_SKIPPED], skipped);
}

void metrics_finished(uint64_t pages)
{
    if (bound)
        bump(&bound->finished, pages);
}

void metrics_retry(int dead)
{
    if (bound)
        bump(dead ? &bound->dead : &bound->retries, 1);
}

void metrics_ip_wait(void)
{
    if (bound)
        bump(&bound->ip_waits, 1);
}

void metrics_ip_probe(void)
{
    if (bound)
        bump(&bound->ip_probes, 1);
}

void metrics_tls_handshake(int resumed)
{
    if (bound)
        bump(resumed ? &bound->tls_resumed : &bound->tls_full, 1);
}

void metrics_redis_sent(metrics_call_t call)
{
    if (bound)
        bound->sent_us[call] = now_us();
}

void metrics_redis_answered(metrics_call_t call)
{
    if (!bound || !bound->sent_us[call])
        return;
    uint64_t t = now_us(), t0 = bound->sent_us[call];
    bound->sent_us[call] = 0;
    observe(bound->redis[call], &bound->redis_sum_us[call], MX_REDIS_BOUNDS, MX_REDIS_NB,
            t > t0 ? t - t0 : 0);
}

void metrics_redis_state(int up)
{
    if (!bound)
        return;
    if (!up)
        bump(&bound->disconnects, 1);
    atomic_store_explicit(&bound->redis_up, up ? 1 : 0, memory_order_relaxed);
    for (int c = 0; c < METRICS_NCALLS; c++)
        bound->sent_us[c] = 0; /* the calls in flight are lost with the connection */
}

void metrics_gauges(uint64_t in_flight, uint64_t waiting)
{
    if (!bound)
        return;
    set(&bound->in_flight, in_flight);
    set(&bound->waiting, waiting);
}
