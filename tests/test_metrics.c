/*
 * The Prometheus endpoints' parts: the text format writer (HELP/TYPE, label
 * escaping, numbers, cumulative histograms), the registry's hooks summed
 * over threads, the address checks, the crawl view without Redis, and the
 * HTTP server (test_metrics_crawl.c: the endpoints against real crawls).
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixtures.h"
#include "metrics.h"
#include "metrics_crawl.h"
#include "metrics_http.h"
#include "metrics_text.h"
#include "outcome.h"

#include "test_metrics_util.h"

/* ---- the text format ---------------------------------------------------- */

Test(metrics, family_has_help_and_type_with_help_escaped)
{
    metrics_text_t t = {0};
    metrics_text_family(&t, "x_total", "counter", "a\\b\nc \"q\"");
    cr_assert_str_eq(t.p, "# HELP x_total a\\\\b\\nc \"q\"\n# TYPE x_total counter\n");
    metrics_text_free(&t);
}

Test(metrics, label_values_are_escaped)
{
    static const struct {
        const char *value, *want;
    } cases[] = {
        {"plain", "m{k=\"plain\"} 1\n"},
        {"a\"b", "m{k=\"a\\\"b\"} 1\n"},
        {"a\\b", "m{k=\"a\\\\b\"} 1\n"},
        {"a\nb", "m{k=\"a\\nb\"} 1\n"},
        {"", "m{k=\"\"} 1\n"},
        {"\\\"\n", "m{k=\"\\\\\\\"\\n\"} 1\n"},
        {"utf8 \xc3\xa9", "m{k=\"utf8 \xc3\xa9\"} 1\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        metrics_text_t t = {0};
        metrics_label_t l = {"k", cases[i].value};
        metrics_text_count(&t, "m", &l, 1, 1);
        cr_expect_str_eq(t.p, cases[i].want, "label value '%s': got %s", cases[i].value, t.p);
        metrics_text_free(&t);
    }
}

Test(metrics, numbers_are_written_exactly)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {{0, "m 0\n"},
                 {0.1, "m 0.1\n"},
                 {5e-05, "m 5e-05\n"},
                 {1.5, "m 1.5\n"},
                 {-2, "m -2\n"},
                 {INFINITY, "m +Inf\n"},
                 {-INFINITY, "m -Inf\n"},
                 {NAN, "m NaN\n"},
                 {1e300, "m 1e+300\n"},
                 {0.1 + 0.2, "m 0.30000000000000004\n"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        metrics_text_t t = {0};
        metrics_text_sample(&t, "m", NULL, 0, cases[i].v);
        cr_expect_str_eq(t.p, cases[i].want, "value %g: got %s", cases[i].v, t.p);
        metrics_text_free(&t);
    }
    metrics_text_t t = {0};
    metrics_text_count(&t, "m", NULL, 0, UINT64_MAX);
    cr_expect_str_eq(t.p, "m 18446744073709551615\n");
    metrics_text_free(&t);
}

Test(metrics, histogram_buckets_are_cumulative_up_to_inf)
{
    const double bounds[] = {0.1, 1};
    const uint64_t counts[] = {1, 2, 3};
    metrics_hist_view_t h = {bounds, 2, counts, 5.5};
    metrics_label_t l = {"call", "claim"};
    metrics_text_t t = {0};
    metrics_text_histogram(&t, "h_seconds", &l, 1, &h);
    cr_assert_str_eq(t.p, "h_seconds_bucket{call=\"claim\",le=\"0.1\"} 1\n"
                          "h_seconds_bucket{call=\"claim\",le=\"1\"} 3\n"
                          "h_seconds_bucket{call=\"claim\",le=\"+Inf\"} 6\n"
                          "h_seconds_sum{call=\"claim\"} 5.5\n"
                          "h_seconds_count{call=\"claim\"} 6\n");
    metrics_text_free(&t);
    metrics_text_histogram(&t, "h", NULL, 0, &h);
    cr_assert_str_eq(t.p, "h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 6\n"
                          "h_sum 5.5\nh_count 6\n");
    metrics_text_free(&t);
}

/* ---- the registry ------------------------------------------------------------ */

typedef struct bind {
    metrics_t *m;
    unsigned idx;
} bind_t;

static void *worker(void *arg)
{
    const bind_t *b = arg;
    metrics_thread_begin(b->m, b->idx);
    for (int i = 0; i < 1000; i++) {
        metrics_page(200, NULL);
        metrics_transfer(10, 2000, 1000); /* 2 ms, 1 ms */
    }
    metrics_page(404, NULL);
    metrics_page(0, "timeout");
    metrics_page(503, "http-5xx");
    metrics_page(0, "some-new-kind");
    metrics_links(3, 2, 1);
    metrics_finished(1004);
    metrics_retry(0);
    metrics_retry(1);
    metrics_gauges(7, 2);
    metrics_thread_end();
    return NULL;
}

Test(metrics, hooks_of_threads_are_summed)
{
    metrics_t *m = metrics_open(2), *other = metrics_open(2);
    cr_assert_not_null(m);
    cr_assert_not_null(other);
    metrics_page(200, NULL); /* an unbound thread: nothing */
    pthread_t th[2];
    bind_t b[2] = {{m, 0}, {m, 1}};
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, worker, &b[i]), 0);
    for (size_t i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    metrics_text_t t = {0};
    metrics_render(m, &t);
    cr_assert(!t.oom);
    assert_well_formed(t.p);
    static const struct {
        const char *series;
        double want;
    } want[] = {
        {"crawler_pages_total{status=\"2xx\"}", 2000},
        {"crawler_pages_total{status=\"4xx\"}", 2},
        {"crawler_pages_total{status=\"5xx\"}", 2},
        {"crawler_pages_total{status=\"none\"}", 4},
        {"crawler_pages_total{status=\"3xx\"}", 0},
        {"crawler_fetch_errors_total{kind=\"timeout\"}", 2},
        {"crawler_fetch_errors_total{kind=\"http-5xx\"}", 2},
        {"crawler_fetch_errors_total{kind=\"other\"}", 2},
        {"crawler_fetch_errors_total{kind=\"robots\"}", 0},
        {"crawler_response_bytes_total", 20000},
        {"crawler_links_total{result=\"new\"}", 6},
        {"crawler_links_total{result=\"not_new\"}", 4},
        {"crawler_links_total{result=\"over_cap\"}", 2},
        {"crawler_pages_finished_total", 2008},
        {"crawler_retries_total", 2},
        {"crawler_dead_letters_total", 2},
        {"crawler_transfers_in_flight", 0}, /* the threads ended: zeroed */
        {"crawler_fetch_duration_seconds_bucket{le=\"0.001\"}", 0},
        {"crawler_fetch_duration_seconds_bucket{le=\"0.0025\"}", 2000},
        {"crawler_fetch_duration_seconds_bucket{le=\"+Inf\"}", 2000},
        {"crawler_fetch_duration_seconds_count", 2000},
        {"crawler_fetch_duration_seconds_sum", 4},
        {"crawler_ttfb_seconds_bucket{le=\"0.001\"}", 2000},
        {"crawler_ttfb_seconds_sum", 2},
        {"crawler_build_info{version=\"0.1.0\"}", 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double v = sample(t.p, want[i].series);
        cr_expect(fabs(v - want[i].want) < 1e-9, "%s is %g, expected %g", want[i].series, v,
                  want[i].want);
    }
    cr_expect(sample(t.p, "process_resident_memory_bytes") > 0, "no resident memory");
    metrics_text_free(&t);
    /* a registry no thread was bound to counted nothing of theirs */
    metrics_text_t o = {0};
    metrics_render(other, &o);
    cr_assert(!o.oom);
    cr_expect(sample(o.p, "crawler_pages_total{status=\"2xx\"}") == 0,
              "the other registry counted the threads' pages");
    metrics_text_free(&o);
    metrics_close(other);
    metrics_close(m);
}

Test(metrics, every_transfer_error_kind_is_counted_by_name)
{
    for (int c = 1; c < CURL_LAST; c++) {
        const char *k = outcome_error_kind((CURLcode)c);
        cr_expect_geq(crawl_kind_find(k), 0, "curl code %d's kind '%s' is no crawl_kind_t", c, k);
    }
}

Test(metrics, addresses_are_checked)
{
    static const struct {
        const char *addr;
        int ok;
    } cases[] = {{"127.0.0.1:9100", 1},  {"[::1]:9100", 1},  {"0.0.0.0:1", 1},
                 {"localhost:65535", 1}, {"127.0.0.1:0", 0}, {"127.0.0.1:65536", 0},
                 {"127.0.0.1", 0},       {":9100", 0},       {"::1:9100", 0},
                 {"127.0.0.1:9x", 0},    {"[::1:9100", 0},   {"", 0},
                 {"127.0.0.1:", 0},      {"999.1.1.1:80", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        char err[300];
        int rc = metrics_parse_addr(cases[i].addr, &ss, &len, err, sizeof err);
        cr_expect_eq(rc == 0, cases[i].ok, "'%s': %s", cases[i].addr, rc ? err : "accepted");
    }
}

Test(metrics, crawl_view_without_redis_says_so_only)
{
    metrics_crawl_view_t v = {.crawl = "c\"1", .redis_up = 0};
    metrics_text_t t = {0};
    metrics_crawl_render(&v, &t);
    assert_well_formed(t.p);
    cr_expect_eq(sample(t.p, "crawler_redis_up{crawl=\"c\\\"1\"}"), 0);
    cr_expect_null(strstr(t.p, "crawler_crawl_queued_urls"), "stale crawl series: %s", t.p);
    metrics_text_free(&t);
}

static int render_fixed(void *ud, metrics_text_t *t)
{
    metrics_text_count(t, "x_total", NULL, 0, (uint64_t)(size_t)ud);
    return 200;
}

Test(metrics, server_answers_metrics_only_and_refuses_a_port_in_use)
{
    int port = fx_free_port();
    char addr[32], err[300], url[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    metrics_server_t *s = metrics_server_start(addr, render_fixed, (void *)42, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    long st;
    char *b = scrape(port, &st);
    cr_expect_eq(st, 200);
    cr_expect_str_eq(b, "x_total 42\n");
    free(b);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/other", port);
    free(http_get(url, &st, NULL));
    cr_expect_eq(st, 404, "another path: %ld", st);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    free(http_get(url, &st, "POST"));
    cr_expect_eq(st, 405, "POST: %ld", st);
    metrics_server_t *again = metrics_server_start(addr, render_fixed, NULL, err, sizeof err);
    cr_expect_null(again, "a second server on the same port");
    cr_expect(strstr(err, "Address already in use"), "the reason: %s", err);
    metrics_server_stop(again);
    metrics_server_stop(s);
}
