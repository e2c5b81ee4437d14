/*
 * hosts_site.h -- a site spread over many loopback hosts (one HTTP fixture
 * listening on 127.0.1.x: fx_http_start_hosts), for the suites that crawl
 * across hosts (test_broad.c, test_cluster_shards.c).  Host h serves
 * /h<h>/p/0 .. /h<h>/p/<pages-1>; page i links to the next page and another
 * on its host and to pages on two other hosts; the verdicts come from the
 * fixture's log.
 */
#ifndef TESTS_HOSTS_SITE_H
#define TESTS_HOSTS_SITE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixtures.h"

#define MAX_PAGES 32 /* per host */

typedef struct site {
    fx_http_t *h;
    unsigned hosts, pages; /* pages per host, <= MAX_PAGES */
    unsigned seeds;        /* pages seeded per host, from /p/0 (at least 1) */
    unsigned delay_ms;     /* every page answers after this long */
    int hold;              /* 1: every page waits for fx_http_release */
    int slow;              /* this host's pages wait for fx_http_release (-1: none) */
    unsigned addrs;        /* 0: a loopback address a host; else the hosts share this many
                              addresses, hosts / addrs ports on each (fx_http_start_grid) */
} site_t;

static inline int site_page(void *ud, const char *path, fx_route_t *out)
{
    const site_t *s = ud;
    static _Thread_local char body[1024];
    unsigned h, i;
    char tail;
    if (sscanf(path, "/h%u/p/%u%c", &h, &i, &tail) != 2 || h >= s->hosts || i >= s->pages)
        return -1;
    unsigned h1 = (h + 1) % s->hosts, h2 = (h + 5) % s->hosts;
    snprintf(body, sizeof body,
             "<html><body><a href=\"/h%u/p/%u\">next</a> <a href=\"/h%u/p/%u\">other</a> "
             "<a href=\"%s/h%u/p/%u\">x</a> <a href=\"%s/h%u/p/%u\">y</a></body></html>",
             h, (i + 1) % s->pages, h, (i * 3 + 1) % s->pages, fx_http_host_base(s->h, h1), h1, i,
             fx_http_host_base(s->h, h2), h2, (i + 7) % s->pages);
    *out =
        (fx_route_t){.body = body, .delay_ms = s->delay_ms, .hold = s->hold || (int)h == s->slow};
    return 0;
}

/* Serves s on s->hosts loopback hosts (s->addrs: hosts / addrs ports on
 * each of addrs addresses, a multiple) (s->h set here) through fn (site_page,
 * or a wrapper of it), every host's robots.txt allowing all. */
static inline void site_serve(site_t *s, fx_http_fn fn)
{
    s->h = s->addrs ? fx_http_start_grid(s->addrs, s->hosts / s->addrs)
                    : fx_http_start_hosts(s->hosts);
    cr_assert_not_null(s->h, "cannot start the HTTP fixture: %s", fx_error());
    fx_http_set_handler(s->h, fn, s);
    fx_http_set(s->h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain", .body = "User-agent: *\nAllow: /\n"});
}

/* Writes dir/seeds.txt, every host's /p/0 (its path into path). */
static inline void site_seeds(const site_t *s, const char *dir, char *path, size_t len)
{
    snprintf(path, len, "%s/seeds.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (unsigned h = 0; h < s->hosts; h++)
        fprintf(f, "%s/h%u/p/0\n", fx_http_host_base(s->h, h), h);
    cr_assert_eq(fclose(f), 0);
}

/* The host and page of a logged page request; 0, or -1 if not a page. */
static inline int page_of(const site_t *s, const fx_http_req_t *q, unsigned *h, unsigned *i)
{
    char tail;
    return sscanf(q->path, "/h%u/p/%u%c", h, i, &tail) == 2 && *h < s->hosts && *i < s->pages ? 0
                                                                                              : -1;
}

/* The page requests in the log, each page asserted to be requested at
 * most once (a crawl under a page limit fetches a part of the site). */
static inline size_t count_pages_once(const site_t *s, const fx_http_req_t *log, size_t n)
{
    unsigned(*hits)[MAX_PAGES] = calloc(s->hosts, sizeof *hits);
    cr_assert_not_null(hits);
    size_t pages = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        if (page_of(s, &log[k], &h, &i) == 0) {
            pages++;
            cr_expect_eq(++hits[h][i], 1, "/h%u/p/%u requested twice", h, i);
        }
    }
    free(hits);
    return pages;
}

/* Every page was requested exactly once, on its own host; nothing else
 * but robots.txt was asked for. */
static inline void expect_each_page_once(const site_t *s, const fx_http_req_t *log, size_t n)
{
    unsigned(*hits)[MAX_PAGES] = calloc(s->hosts, sizeof *hits);
    cr_assert_not_null(hits);
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        if (page_of(s, &log[k], &h, &i) == 0) {
            hits[h][i]++;
            unsigned addr = s->addrs ? h / (s->hosts / s->addrs) : h; /* (its address) */
            cr_expect_eq(log[k].host, addr, "%s came to host %u", log[k].path, log[k].host);
        } else {
            cr_expect_str_eq(log[k].path, "/robots.txt", "unexpected request %s", log[k].path);
        }
    }
    for (unsigned h = 0; h < s->hosts; h++)
        for (unsigned i = 0; i < s->pages; i++)
            cr_expect_eq(hits[h][i], 1, "/h%u/p/%u requested %u times", h, i, hits[h][i]);
    free(hits);
}

#endif
