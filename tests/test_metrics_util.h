/*
 * test_metrics_util.h -- what the suites of the /metrics endpoints share
 * (test_metrics.c, test_metrics_crawl.c, test_prometheus.c): a sample's
 * value in a scrape's text, the format's shape checked, and HTTP GETs with
 * libcurl.  Static functions; failures are Criterion assertions.
 */
#ifndef TESTS_TEST_METRICS_UTIL_H
#define TESTS_TEST_METRICS_UTIL_H

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---- scrape text helpers -------------------------------------------------- */

/* The value of the sample whose series (name with labels, as written) is
 * series; NAN if there is none. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

/* Every line of text is a comment (# HELP / # TYPE) or a sample, every
 * sample's family has HELP and TYPE lines before it. */
static void assert_well_formed(const char *text)
{
    char fam[128] = "";
    int help = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        cr_assert_not_null(e, "the text does not end with a newline");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(e - p), p);
        if (!strncmp(line, "# HELP ", 7)) {
            sscanf(line + 7, "%127s", fam);
            help = 1;
        } else if (!strncmp(line, "# TYPE ", 7)) {
            char name[128];
            sscanf(line + 7, "%127s", name);
            cr_assert(help && !strcmp(name, fam), "TYPE without its HELP: %s", line);
        } else {
            size_t fl = strlen(fam);
            cr_assert(fl && !strncmp(line, fam, fl) && strchr("{ _", line[fl]),
                      "sample of another family than %s: %s", fam, line);
            cr_assert(strchr(line, ' '), "no value: %s", line);
        }
        p = e + 1;
    }
}

/* ---- HTTP ---------------------------------------------------------------------- */

typedef struct body {
    char *p;
    size_t len;
} body_t;

static size_t on_data(char *d, size_t sz, size_t n, void *ud)
{
    body_t *b = ud;
    char *p = realloc(b->p, b->len + sz * n + 1);
    if (!p)
        return 0;
    memcpy(p + b->len, d, sz * n);
    b->p = p;
    b->len += sz * n;
    b->p[b->len] = '\0';
    return sz * n;
}

/* GET url: the body (caller frees), *status its HTTP status (0: no answer). */
static char *http_get(const char *url, long *status, const char *method)
{
    body_t b = {0};
    CURL *h = curl_easy_init();
    cr_assert_not_null(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (method)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    *status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    if (!b.p)
        b.p = strdup("");
    return b.p;
}

static char *scrape(int port, long *status)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    return http_get(url, status, NULL);
}

#pragma GCC diagnostic pop

#endif
