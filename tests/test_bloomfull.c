/*
 * test_bloomfull.c -- a visited set that cannot grow (--bloom-growth 0)
 * must not be run past silently: the fill and false-positive formulas
 * (table-driven), `crawler stats` showing the fill, seeding refused past
 * the capacity, and a crawl whose filter fills up stopping with exit status
 * 2 and the message, every fetched page recorded once and nothing left
 * leased in Redis.  And one that grows (the default): a crawl that passes
 * its first capacity many times, with two processes of two threads each,
 * fetches every page exactly once.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bloom.h"
#include "crawl_env.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"
#include "side.h"
#include "tree_site.h"

/* ---- formulas ----------------------------------------------------------- */

Test(bloomfull, fp_estimate_follows_the_formula_for_each_count)
{
    bloom_geometry_t g; /* the default filter: 1e7 at 1e-4 */
    cr_assert_eq(bloom_geometry_for(&(bloom_params_t){.capacity = 10000000, .fp_rate = 1e-4}, &g),
                 0);
    static const struct {
        uint64_t n;
        double lo, hi; /* the rate expected, within */
    } cases[] = {
        {0, 0, 0},                  /* empty */
        {1000000, 0, 1e-8},         /* a tenth of the capacity */
        {10000000, 0.9e-4, 1.1e-4}, /* at capacity: the rate it was made for */
        {20000000, 0.015, 0.025},   /* twice: ~0.02 (the figure) */
        {100000000, 0.98, 0.99},    /* ten times: 0.985 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double p = bloom_fp_estimate(&g, cases[i].n);
        double want = pow(1 - exp(-(double)g.k * (double)cases[i].n / (double)g.m), g.k);
        cr_expect(fabs(p - want) <= 1e-12, "n=%llu: %g, the formula says %g",
                  (unsigned long long)cases[i].n, p, want);
        cr_expect(p >= cases[i].lo && p <= cases[i].hi, "n=%llu: rate %g outside [%g, %g]",
                  (unsigned long long)cases[i].n, p, cases[i].lo, cases[i].hi);
    }
}

Test(bloomfull, fill_is_full_at_capacity_and_never_without_one)
{
    bloom_geometry_t g;
    cr_assert_eq(bloom_geometry_for(&(bloom_params_t){.capacity = 50, .fp_rate = 1e-4}, &g), 0);
    static const struct {
        uint64_t cap, added;
        double fill;
        int full;
    } cases[] = {{50, 0, 0, 0},    {50, 45, 0.9, 0},  {50, 49, 0.98, 0},
                 {50, 50, 1.0, 1}, {50, 200, 4.0, 1}, {0, 1000, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bloom_fill_t f;
        bloom_fill_of(&g, cases[i].cap, cases[i].added, &f);
        cr_expect(fabs(f.fill - cases[i].fill) < 1e-12 && f.full == cases[i].full,
                  "capacity %llu, added %llu: fill %g full %d", (unsigned long long)cases[i].cap,
                  (unsigned long long)cases[i].added, f.fill, f.full);
    }
}

Test(bloomfull, suggested_capacity_is_ten_times_rounded_up)
{
    static const struct {
        uint64_t added, cap, want;
    } cases[] = {{60, 50, 1000},
                 {10000000, 10000000, 100000000},
                 {12000000, 10000000, 200000000},
                 {3, 1, 50},
                 {BLOOM_MAX_CAPACITY, 1, BLOOM_MAX_CAPACITY}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t got = bloom_suggest_capacity(cases[i].added, cases[i].cap);
        cr_expect_eq(got, cases[i].want, "added %llu, capacity %llu: %llu, want %llu",
                     (unsigned long long)cases[i].added, (unsigned long long)cases[i].cap,
                     (unsigned long long)got, (unsigned long long)cases[i].want);
    }
}

/* ---- the crawler binary ------------------------------------------------- */

#define PAGES 300 /* the site: /p/0 .. /p/299 */

/* The site (tree_site.h).  Its pages answer after delay_ms: 300 pages, 2
 * at a time, take 4.5 s at 30 ms, nine times the heartbeat (--lease 1500:
 * every 0.5 s) that sees the filter full after ~50 pages, so the crawl
 * cannot end before it is stopped. */
static tree_site_t tree = {.pages = PAGES};

/* Writes a seeds file of n URLs of the site, from /p/first on. */
static void write_seeds(crawl_env_t *t, const char *path, int first, int n)
{
    size_t cap = (size_t)n * 64 + 1, o = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    s[0] = '\0';
    for (int i = first; i < first + n; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s/p/%d\n", fx_http_base(t->h), i);
    cr_assert_eq(fx_write_file(path, s), 0);
    free(s);
}

/* Runs the crawler with args (NULL-ended, after the program name) on t's
 * Redis; returns its exit status, stdout and stderr in *out / *err (freed by
 * the caller). */
static int run(crawl_env_t *t, char *const args[], char **out, char **err)
{
    char *argv[40], o[600], e[600];
    int n = 0;
    argv[n++] = CRAWLER_BIN;
    for (int i = 0; args[i] && n < 36; i++)
        argv[n++] = args[i];
    argv[n++] = "--redis";
    argv[n++] = (char *)fx_redis_url(t->r);
    argv[n] = NULL;
    snprintf(o, sizeof o, "%s/stdout", t->dir);
    snprintf(e, sizeof e, "%s/stderr", t->dir);
    int rc = fx_run(argv, o, e, 120000);
    *out = fx_read_file(o, NULL);
    *err = fx_read_file(e, NULL);
    cr_assert(*out && *err, "no output of %s", args[0]);
    return rc;
}

/* `crawler stats` text contains want. */
static void expect_stats(crawl_env_t *t, const char *want, int warn)
{
    char *out, *err;
    int rc = run(t, (char *[]){"stats", NULL}, &out, &err);
    cr_expect_eq(rc, 0, "stats exited %d: %s", rc, err);
    cr_expect(strstr(out, want) != NULL, "stats lack \"%s\":\n%s", want, out);
    cr_expect_eq(strstr(out, "WARNING") != NULL, warn, "stats' warning (want %d):\n%s", warn, out);
    free(out);
    free(err);
}

Test(bloomfull, seeding_past_the_capacity_is_refused_and_stats_show_the_fill)
{
    crawl_env_t t;
    crawl_env_start(&t, NULL, "/p/0");
    fx_http_set_handler(t.h, tree_site_route, &tree);
    char f[600], *out, *err;
    snprintf(f, sizeof f, "%s/s.txt", t.dir);
    static const struct {
        int first, n, status;
        const char *err, *stats; /* on stderr; in stats afterwards */
        int warn;
    } steps[] = {
        {0, 60, 2, "the visited set cannot take 60 more URLs: 0 URLs added, capacity 50",
         "bloom: 0 URLs added of capacity 50 (0.0% full)", 0},
        {0, 40, 0, "", "bloom: 40 URLs added of capacity 50 (80.0% full)", 0},
        {40, 11, 2, "cannot take 11 more URLs: 40 URLs added", "(80.0% full)", 0},
        {40, 5, 0, "", "bloom: 45 URLs added of capacity 50 (90.0% full)", 1},
        {45, 5, 0, "", "bloom: 50 URLs added of capacity 50 (100.0% full)", 1},
        {50, 1, 2, "the visited set is full: 50 URLs added, capacity 50", "(100.0% full)", 1},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        write_seeds(&t, f, steps[i].first, steps[i].n);
        int rc =
            run(&t, (char *[]){"seed", f, "--bloom-capacity", "50", "--bloom-growth", "0", NULL},
                &out, &err);
        cr_expect_eq(rc, steps[i].status, "step %zu: seed exited %d: %s", i, rc, err);
        cr_expect(strstr(err, steps[i].err) != NULL, "step %zu: stderr lacks \"%s\": %s", i,
                  steps[i].err, err);
        if (steps[i].status)
            cr_expect(strstr(err, "with a larger --bloom-capacity") != NULL, "step %zu: %s", i,
                      err);
        free(out);
        free(err);
        expect_stats(&t, steps[i].stats, steps[i].warn);
    }
    /* and `crawler crawl --seeds` on the full crawl: refused before any fetch */
    int rc = run(&t, (char *[]){"crawl", "--seeds", f, "--quiet", NULL}, &out, &err);
    cr_expect_eq(rc, 2, "crawl exited %d: %s", rc, err);
    cr_expect(strstr(err, "the visited set is full: 50 URLs added, capacity 50") != NULL, "%s",
              err);
    cr_expect_eq(fx_http_total(t.h), 0, "%zu requests", fx_http_total(t.h));
    free(out);
    free(err);
    /* the JSON reading */
    rc = run(&t, (char *[]){"stats", "--json", NULL}, &out, &err);
    cr_expect_eq(rc, 0, "%s", err);
    bloom_geometry_t g;
    cr_assert_eq(bloom_geometry_for(&(bloom_params_t){.capacity = 50, .fp_rate = 1e-4}, &g), 0);
    char want[256];
    snprintf(want, sizeof want,
             "\"bloom\": {\"added\": 50, \"capacity\": 50, \"fill\": 1.000000, \"fp_rate\": %.6g, "
             "\"warn\": true, \"full\": true, \"shards\": [{\"added\": 50, ",
             bloom_fp_estimate(&g, 50));
    cr_expect(strstr(out, want) != NULL, "JSON lacks %s:\n%s", want, out);
    free(out);
    free(err);
    crawl_env_stop(&t);
}

/* Records of the site's pages in the JSON lines at path, by page. */
static void count_records(crawl_env_t *t, const char *s, unsigned rec[PAGES])
{
    char pat[128];
    int pl = snprintf(pat, sizeof pat, "{\"url\":\"%s/p/", fx_http_base(t->h));
    for (const char *p = strstr(s, pat); p; p = strstr(p + 1, pat)) {
        int i = (int)strtol(p + pl, NULL, 10);
        if (i >= 0 && i < PAGES)
            rec[i]++;
    }
}

/* Nothing leased, queued URLs still there, the frontier's invariants hold. */
static void assert_nothing_leased(crawl_env_t *t)
{
    redisContext *c = fx_redis_connect(t->r);
    cr_assert_not_null(c);
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.bloom_capacity = 0;
    fc.bloom_fp_rate = 0;
    fc.bloom_cache_bytes = SIZE_MAX;
    char err[512];
    frontier_t *f = fr_open(c, &fc, NULL, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_eq(st.in_flight, 0, "%llu still leased", (unsigned long long)st.in_flight);
    cr_expect_geq(st.bloom_added, 50, "only %llu added", (unsigned long long)st.bloom_added);
    cr_expect_gt(st.queued, 0, "the crawl stopped with nothing queued: it was not stopped early");
    frontier_worker_info_t *w = NULL;
    size_t nw = 0;
    cr_assert_eq(frontier_workers(c, "default", &w, &nw), 0);
    for (size_t i = 0; i < nw; i++)
        cr_expect_eq(w[i].leased, 0, "worker %s holds %u leases", w[i].id, w[i].leased);
    free(w);
    side_check(c, f, 0);
    fr_close(f);
    redisFree(c);
}

Test(bloomfull, a_crawl_whose_filter_fills_stops_with_exit_2_nothing_lost)
{
    crawl_env_t t;
    crawl_env_start(&t, NULL, "/p/0");
    tree.delay_ms = 30;
    fx_http_set_handler(t.h, tree_site_route, &tree);
    char *out, *err;
    int rc = run(&t,
                 (char *[]){"crawl", "--seeds", t.seeds, "--bloom-capacity", "50", "--bloom-growth",
                            "0", "--delay", "0", "--per-host", "2", "--threads", "2", "--lease",
                            "1500", "--out", t.out, "--quiet", NULL},
                 &out, &err);
    cr_expect_eq(rc, 2, "crawl exited %d: %s", rc, err);
    cr_expect(strstr(err, "the visited set is full: ") != NULL, "stderr: %s", err);
    cr_expect(strstr(err, "capacity 50, false-positive rate now ") != NULL, "stderr: %s", err);
    cr_expect(strstr(err, "e.g. --bloom-capacity ") != NULL, "stderr: %s", err);
    cr_log_info("the crawl's stderr: %s", err);
    free(out);
    free(err);
    char *s = fx_read_file(t.out, NULL);
    cr_assert_not_null(s);
    cr_expect(strstr(s, "\"visited-set-full\"") != NULL, "no event line in the output");
    unsigned rec[PAGES] = {0}, fetched = 0;
    count_records(&t, s, rec);
    free(s);
    for (int i = 0; i < PAGES; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        unsigned hits = fx_http_hits(t.h, path);
        fetched += hits > 0;
        cr_expect_eq(rec[i], hits, "%s: %u records, %u fetches", path, rec[i], hits);
        cr_expect_leq(hits, 1, "%s fetched %u times", path, hits);
    }
    cr_expect_lt(fetched, PAGES, "every page fetched: the crawl ran past its filter's capacity");
    assert_nothing_leased(&t);
    expect_stats(&t, "capacity 50", 1);
    crawl_env_stop(&t);
}

/* The default visited set grows: started at 20 URLs, two processes of two
 * threads each crawl the 300 pages (about 15 times the first capacity, so
 * through four layers, each published while the others race) and every page
 * is fetched exactly once, the layers as the stats say. */
Test(bloomfull, a_crawl_whose_filter_grows_fetches_every_page_once)
{
    crawl_env_t t;
    crawl_env_start(&t, NULL, "/p/0");
    tree.delay_ms = 2;
    fx_http_set_handler(t.h, tree_site_route, &tree);
    char out2[600];
    snprintf(out2, sizeof out2, "%s/out2.jsonl", t.dir);
    char o1[600], e1[600], o2[600], e2[600];
    snprintf(o1, sizeof o1, "%s/o1", t.dir), snprintf(e1, sizeof e1, "%s/e1", t.dir);
    snprintf(o2, sizeof o2, "%s/o2", t.dir), snprintf(e2, sizeof e2, "%s/e2", t.dir);
    char *a1[] = {CRAWLER_BIN,
                  "crawl",
                  "--seeds",
                  t.seeds,
                  "--bloom-capacity",
                  "20",
                  "--delay",
                  "0",
                  "--per-host",
                  "4",
                  "--threads",
                  "2",
                  "--out",
                  t.out,
                  "--quiet",
                  "--redis",
                  (char *)fx_redis_url(t.r),
                  NULL};
    char *a2[] = {CRAWLER_BIN,
                  "crawl",
                  "--delay",
                  "0",
                  "--per-host",
                  "4",
                  "--threads",
                  "2",
                  "--out",
                  out2,
                  "--quiet",
                  "--redis",
                  (char *)fx_redis_url(t.r),
                  NULL};
    pid_t p1 = fx_spawn(a1, o1, e1);
    cr_assert_gt(p1, 0, "%s", fx_error());
    for (int i = 0; i < 2000 && fx_http_total(t.h) < 5; i++)
        usleep(5000);
    pid_t p2 = fx_spawn(a2, o2, e2); /* joins the crawl the first one made */
    cr_assert_gt(p2, 0, "%s", fx_error());
    int rc = fx_wait(p1, 120000), rc2 = fx_wait(p2, 120000);
    char *err = fx_read_file(e1, NULL), *err2 = fx_read_file(e2, NULL);
    cr_expect_eq(rc, 0, "crawl exited %d: %s", rc, err ? err : "");
    cr_expect_eq(rc2, 0, "second crawl exited %d: %s", rc2, err2 ? err2 : "");
    free(err), free(err2);
    unsigned rec[PAGES] = {0};
    char *s1 = fx_read_file(t.out, NULL), *s2 = fx_read_file(out2, NULL);
    cr_assert_not_null(s1);
    count_records(&t, s1, rec);
    if (s2)
        count_records(&t, s2, rec);
    free(s1), free(s2);
    for (int i = 0; i < PAGES; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        cr_expect_eq(fx_http_hits(t.h, path), 1, "%s fetched %u times", path,
                     fx_http_hits(t.h, path));
        cr_expect_eq(rec[i], 1, "%s: %u records", path, rec[i]);
    }
    redisContext *c = fx_redis_connect(t.r);
    cr_assert_not_null(c);
    redisReply *r = redisCommand(c, "HGET crawler:{default}:seen:meta layers");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no layer count");
    cr_expect_geq(strtol(r->str, NULL, 10), 4, "%s layers for %d pages from 20", r->str, PAGES);
    freeReplyObject(r);
    redisFree(c);
    expect_stats(&t, "layers", 0);
    crawl_env_stop(&t);
}

/* Seeding a visited set that grows: 250 seeds on a crawl made for 50 go in
 * (each seed new once), the filter grows, and seeding them again adds none. */
Test(bloomfull, seeding_past_the_first_capacity_grows_the_filter)
{
    crawl_env_t t;
    crawl_env_start(&t, NULL, "/p/0");
    char f[600], *out, *err;
    snprintf(f, sizeof f, "%s/s.txt", t.dir);
    write_seeds(&t, f, 0, 250);
    int rc = run(&t, (char *[]){"seed", f, "--bloom-capacity", "50", NULL}, &out, &err);
    cr_expect_eq(rc, 0, "seed exited %d: %s", rc, err);
    cr_expect(strstr(out, "250") != NULL, "stdout: %s", out);
    free(out), free(err);
    rc = run(&t, (char *[]){"seed", f, NULL}, &out, &err);
    cr_expect_eq(rc, 0, "seed exited %d: %s", rc, err);
    free(out), free(err);
    redisContext *c = fx_redis_connect(t.r);
    cr_assert_not_null(c);
    redisReply *r = redisCommand(c, "HGET crawler:{default}:stats seeds");
    cr_expect(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "250"), "seeds: %s",
              r && r->type == REDIS_REPLY_STRING ? r->str : "?");
    freeReplyObject(r);
    r = redisCommand(c, "HGET crawler:{default}:seen:meta layers");
    /* (one seeding call of 250 into a layer made for 50: the next layer is
     * made after it, as its reply asks, and published by the next call) */
    cr_expect(r && r->type == REDIS_REPLY_STRING && strtol(r->str, NULL, 10) >= 2, "layers: %s",
              r && r->type == REDIS_REPLY_STRING ? r->str : "?");
    freeReplyObject(r);
    redisFree(c);
    expect_stats(&t, "layers", 0);
    crawl_env_stop(&t);
}
