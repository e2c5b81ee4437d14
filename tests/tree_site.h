/* tree_site.h -- the site several suites of the crawler binary crawl
 * (test_faults.c, test_bloomfull.c, test_cluster_crawl.c): pages /p/0 ..
 * /p/N-1 on the HTTP fixture, page i linking to 2i+1, 2i+2 and i+1, so every
 * page is reachable from /p/0 and found several times (the Bloom filter
 * matters); each page answers after a delay.  And what those suites check
 * of a crawl of it: requests the fixture saw, pages recorded in JSON lines.
 * Criterion asserts on a timeout. */
#ifndef TESTS_TREE_SITE_H
#define TESTS_TREE_SITE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

typedef struct tree_site {
    int pages;         /* /p/0 .. /p/pages-1 */
    unsigned delay_ms; /* every page answers after this long */
} tree_site_t;

/* fx_http_fn of the site; ud: its tree_site_t (which must outlive the
 * server, and may change between crawls). */
static inline int tree_site_route(void *ud, const char *path, fx_route_t *out)
{
    const tree_site_t *s = ud;
    static _Thread_local char body[512];
    int i, n = s->pages;
    char tail;
    if (sscanf(path, "/p/%d%c", &i, &tail) != 1 || i < 0 || i >= n)
        return -1;
    snprintf(body, sizeof body,
             "<html><body><a href=\"/p/%d\">a</a> <a href=\"/p/%d\">b</a> "
             "<a href=\"/p/%d\">c</a></body></html>",
             2 * i + 1 < n ? 2 * i + 1 : 0, 2 * i + 2 < n ? 2 * i + 2 : 0, i + 1 < n ? i + 1 : 0);
    *out = (fx_route_t){.body = body, .delay_ms = s->delay_ms};
    return 0;
}

/* Waits until h has answered at least n requests (polling, bounded by
 * timeout_ms; asserts it got there). */
static inline void tree_wait_requests(fx_http_t *h, size_t n, unsigned timeout_ms)
{
    uint64_t deadline = fx_now_ms() + timeout_ms;
    while (fx_http_total(h) < n && fx_now_ms() < deadline)
        usleep(2000);
    cr_assert_geq(fx_http_total(h), n, "only %zu requests within %u ms", fx_http_total(h),
                  timeout_ms);
}

/* Marks seen[i] for every page /p/i of h's site (pages of them) with a
 * status-200 record in the JSON lines at path (a missing file marks none). */
static inline void tree_mark_recorded(fx_http_t *h, const char *path, unsigned char *seen,
                                      int pages)
{
    char *s = fx_read_file(path, NULL);
    if (!s)
        return;
    char pat[128];
    int pl = snprintf(pat, sizeof pat, "{\"url\":\"%s/p/", fx_http_base(h));
    for (char *p = strstr(s, pat); p; p = strstr(p + 1, pat)) {
        int i = (int)strtol(p + pl, NULL, 10);
        const char *st = strstr(p, "\"status\":200"), *eol = strchr(p, '\n');
        if (i >= 0 && i < pages && st && (!eol || st < eol))
            seen[i] = 1;
    }
    free(s);
}

#endif
