/*
 * A real Prometheus server (Debian's `prometheus` package: the test fails
 * without it) scrapes both endpoints of a crawl every second -- a worker's
 * `crawl --metrics` and the crawl's `stats --serve` -- and the series it
 * stored are checked through its HTTP query API: `up` is 1 for both
 * targets; while one page of the site is held by the fixture, Prometheus
 * has stored the crawl in the middle (one transfer in flight, one URL
 * leased); once it is let go, the values Prometheus stored equal the
 * crawler's own counts and the JSON lines.  Every wait is for a condition,
 * bounded by a count of polls; the processes are killed by pid in the fini.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#include "test_metrics_util.h"

#define PROMETHEUS_BIN "/usr/bin/prometheus"
#define POLLS 300      /* each wait: at most this many polls ... */
#define POLL_US 200000 /* ... this far apart (60 s in all) */

static crawl_env_t env;
static char *pdir;
static pid_t prom = -1, crawl = -1, stats = -1;
static int prom_port, crawl_port, stats_port;

static void stop(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        if (fx_wait(*pid, 20000) < 0)
            kill(*pid, SIGKILL);
        fx_wait(*pid, 5000);
    }
    *pid = -1;
}

static void fini(void)
{
    stop(&prom);
    stop(&crawl);
    stop(&stats);
    if (pdir) {
        fx_rmtree(pdir);
        free(pdir);
        pdir = NULL;
    }
    crawl_env_stop(&env);
}

TestSuite(prometheus, .fini = fini);

/* ---- Prometheus's query API ------------------------------------------------ */

/* The value of Prometheus's instant query q: the first result's (NAN if
 * the result is empty or the query failed). */
static double query(const char *q)
{
    CURL *h = curl_easy_init();
    char *enc = curl_easy_escape(h, q, 0), url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/query?query=%s", prom_port, enc);
    curl_free(enc);
    curl_easy_cleanup(h);
    long st;
    char *b = http_get(url, &st, NULL);
    double v = NAN;
    const char *p =
        st == 200 && strstr(b, "\"status\":\"success\"") ? strstr(b, "\"value\":[") : NULL;
    if (p && (p = strchr(p, ',')) && p[1] == '"')
        v = strtod(p + 2, NULL);
    free(b);
    return v;
}

/* Polls until query q is want (bounded); fails the test with what it was. */
static void wait_query(const char *q, double want, const char *why)
{
    double v = NAN;
    for (int i = 0; i < POLLS; i++) {
        if ((v = query(q)) == want) {
            cr_log_info("%s = %g after %d polls", q, want, i);
            return;
        }
        usleep(POLL_US);
    }
    cr_assert_fail("%s: Prometheus's %s is %g, expected %g (after %d polls)", why, q, v, want,
                   POLLS);
}

/* The value of series in a scrape of port (NAN if absent). */
static double scrape_value(int port, const char *series)
{
    long st;
    char *t = scrape(port, &st);
    double v = st == 200 ? sample(t, series) : NAN;
    free(t);
    return v;
}

/* ---- the site and the processes --------------------------------------------- */

/* 30 pages, page i linking to 2i+1 and 2i+2; page 0 also to /held, which
 * the fixture holds until fx_http_release. */
static int site(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char body[256];
    int i;
    char tail;
    if (sscanf(path, "/p/%d%c", &i, &tail) == 1 && i >= 0 && i < 30) {
        snprintf(body, sizeof body, "<a href=\"/p/%d\">a</a><a href=\"/p/%d\">b</a>%s",
                 (2 * i + 1) % 30, (2 * i + 2) % 30, i ? "" : "<a href=\"/held\">h</a>");
        *out = (fx_route_t){.body = body};
        return 0;
    }
    if (!strcmp(path, "/held")) {
        *out = (fx_route_t){.body = "held", .hold = 1};
        return 0;
    }
    return -1;
}

static void start_prometheus(void)
{
    cr_assert(access(PROMETHEUS_BIN, X_OK) == 0,
              "%s is missing: install Debian's prometheus package (apt-get install prometheus)",
              PROMETHEUS_BIN);
    pdir = fx_tmpdir();
    cr_assert_not_null(pdir);
    char cfg[600], conf[1024], data[600], log[600], flag[4][700];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", pdir);
    snprintf(conf, sizeof conf,
             "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
             "scrape_configs:\n"
             "  - job_name: crawler\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
             "  - job_name: crawl\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
             crawl_port, stats_port);
    cr_assert_eq(fx_write_file(cfg, conf), 0);
    snprintf(data, sizeof data, "%s/data", pdir);
    snprintf(log, sizeof log, "%s/prometheus.log", pdir);
    snprintf(flag[0], sizeof flag[0], "--config.file=%s", cfg);
    snprintf(flag[1], sizeof flag[1], "--storage.tsdb.path=%s", data);
    snprintf(flag[2], sizeof flag[2], "--web.listen-address=127.0.0.1:%d", prom_port);
    snprintf(flag[3], sizeof flag[3], "--log.level=warn");
    char *argv[] = {PROMETHEUS_BIN, flag[0], flag[1], flag[2], flag[3], NULL};
    prom = fx_spawn(argv, NULL, log);
    cr_assert(prom > 0, "cannot start prometheus");
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/-/ready", prom_port);
    long st = 0;
    for (int i = 0; i < POLLS && st != 200; i++) {
        free(http_get(url, &st, NULL));
        if (st != 200)
            usleep(POLL_US);
    }
    char *text = fx_read_file(log, NULL);
    cr_assert_eq(st, 200, "prometheus never became ready: %s", text ? text : "");
    free(text);
}

static void start_crawler(void)
{
    char maddr[32], saddr[32], slog[600];
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", crawl_port);
    snprintf(saddr, sizeof saddr, "127.0.0.1:%d", stats_port);
    snprintf(slog, sizeof slog, "%s/stats.log", env.dir);
    char *sargv[] = {CRAWLER_BIN, "stats", "--redis", (char *)fx_redis_url(env.r),
                     "--serve",   saddr,   NULL};
    stats = fx_spawn(sargv, NULL, slog);
    char *cargv[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_redis_url(env.r), "--seeds",
                     env.seeds, "--out", env.out, "--delay", "0", "--per-host", "4", "--threads",
                     "2", "--wait", "--quiet", "--metrics", maddr,
                     /* the held page is not cut short while the test waits */
                     "--timeout", "150000", "--low-speed-time", "150", NULL};
    crawl = fx_spawn(cargv, NULL, env.log);
    cr_assert(stats > 0 && crawl > 0);
}

static unsigned records(void)
{
    char *s = fx_read_file(env.out, NULL);
    unsigned n = 0;
    for (char *p = s; p && (p = strstr(p, "{\"url\":")); p++)
        n++;
    free(s);
    return n;
}

Test(prometheus, stores_both_endpoints_series_during_and_after_a_crawl)
{
    crawl_env_start(&env, NULL, "/p/0");
    fx_http_set_handler(env.h, site, NULL);
    prom_port = fx_free_port();
    crawl_port = fx_free_port();
    stats_port = fx_free_port();
    cr_assert(prom_port > 0 && crawl_port > 0 && stats_port > 0 && prom_port != crawl_port &&
              crawl_port != stats_port && prom_port != stats_port);
    start_prometheus();
    start_crawler();
    wait_query("up{job=\"crawler\"}", 1, "the worker's endpoint");
    wait_query("up{job=\"crawl\"}", 1, "the crawl's endpoint");
    /* the crawl in the middle: every page done but the held one */
    wait_query("sum(crawler_transfers_in_flight)", 1, "the held page, in flight");
    wait_query("crawler_crawl_in_flight_urls{crawl=\"default\"}", 1, "the held page, leased");
    wait_query("sum(crawler_pages_total)", 30, "the pages not held, finished");
    wait_query("crawler_crawl_fetched_total{crawl=\"default\"}", 30, "the same, crawl-wide");
    fx_http_release(env.h);
    wait_query("sum(crawler_pages_total)", 31, "every page finished");
    wait_query("crawler_crawl_fetched_total{crawl=\"default\"}", 31, "crawl-wide");
    wait_query("sum(crawler_transfers_in_flight)", 0, "nothing in flight at the end");
    /* what Prometheus stored is what the crawler says and what it wrote */
    cr_expect_eq(records(), 31, "%u records", records());
    cr_expect_eq(scrape_value(crawl_port, "crawler_pages_total{status=\"2xx\"}"), 31);
    wait_query("crawler_pages_total{status=\"2xx\"}", 31, "2xx");
    wait_query("crawler_pages_finished_total", 31, "acknowledged");
    double nl = scrape_value(crawl_port, "crawler_links_total{result=\"new\"}");
    cr_expect_eq(nl, 30, "new links: %g", nl); /* every page but the seed */
    wait_query("crawler_links_total{result=\"new\"}", nl, "new links");
    wait_query("crawler_crawl_links_total{crawl=\"default\",result=\"new\"}", nl, "crawl-wide");
    wait_query("crawler_crawl_queued_urls{crawl=\"default\"}", 0, "queue empty");
    wait_query("crawler_crawl_live_workers{crawl=\"default\"}", 2, "a worker per thread");
    wait_query("crawler_redis_up{crawl=\"default\"}", 1, "the crawl's Redis");
    wait_query("crawler_build_info{version=\"0.1.0\"}", 1, "build info");
    cr_expect_eq(scrape_value(crawl_port, "crawler_retries_total"), 0,
                 "retries: %g, /held hit %u times",
                 scrape_value(crawl_port, "crawler_retries_total"), fx_http_hits(env.h, "/held"));
    wait_query("crawler_fetch_duration_seconds_count", 31, "fetch-time histogram");
    wait_query("crawler_fetch_duration_seconds_bucket{le=\"+Inf\"}", 31, "its +Inf bucket");
    cr_expect_eq(query("histogram_quantile(0.5, sum by (le) "
                       "(crawler_fetch_duration_seconds_bucket))") >= 0,
                 1, "no fetch-time quantile");
}
