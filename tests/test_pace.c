/*
 * test_pace.c -- politeness that follows the server (frontier.h: pace_pct;
 * frontier/lua/base.lua: pace_note): on a frontier driven from this
 * process, the pace a host's requests leave in Redis (P hpace, P hslow);
 * and on real crawler processes against the HTTP fixture's loopback hosts,
 * one of them slow, where the verdict is the server's own log: the slow
 * host's next request never came sooner than --delay-factor times its
 * response time after the one before ended, and the fast hosts were not
 * slowed.  Gaps are lower bounds: a slow machine only makes them longer.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier_env.h"
#include "hosts_site.h"
#include "keys.h"

#define PFX FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE

static char *pace_of(env_t *e, const char *origin)
{
    redisReply *r = redisCommand(e->c, "HGET %s %s", PFX "hpace", origin);
    cr_assert_not_null(r);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

static long long slow_score(env_t *e, const char *origin)
{
    redisReply *r = redisCommand(e->c, "ZSCORE %s %s", PFX "hslow", origin);
    cr_assert_not_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* Claims h's one URL (the host's delay keeps one in flight), waiting for
 * its delay; returns it. */
static frontier_item_t claim_one(env_t *e)
{
    frontier_item_t it;
    size_t n = 0;
    cr_assert_eq(claim_wait(e->f, 1, &it, &n), FRONTIER_READY);
    cr_assert_eq(n, 1);
    return it;
}

static void finish_ms(env_t *e, frontier_item_t *it, int status, uint32_t ms)
{
    frontier_done_t d = {.item = it, .outcome = {.status = status, .fetch_ms = ms}};
    cr_assert_eq(frontier_finish(e->f, &d, 1), 0);
    frontier_item_clear(it);
}

static void retry_ms(env_t *e, frontier_item_t *it, int status, uint32_t ms)
{
    frontier_outcome_t o = {.status = status, .error = "http-429", .fetch_ms = ms};
    cr_assert_eq(frontier_retry(e->f, it, &o, 0), 0);
    frontier_item_clear(it);
}

Test(pace, a_slow_answer_paces_its_host_and_fast_answers_bring_it_back)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.delay_ms = 50;
    cfg.max_delay_ms = 10000;
    cfg.pace_pct = 200;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://p.test/1", "http://p.test/2", "http://p.test/3",
                           "http://p.test/4", "http://p.test/5"};
    cr_assert_eq(seed_urls(e.f, seeds, 5, 0), 5);
    frontier_item_t it = claim_one(&e);
    finish_ms(&e, &it, 200, 20); /* asks 40 ms, below --delay: nothing kept */
    cr_expect_null(pace_of(&e, "http://p.test"));
    it = claim_one(&e);
    finish_ms(&e, &it, 200, 400); /* asks 800 */
    char *v = pace_of(&e, "http://p.test");
    cr_expect(v && !strcmp(v, "800 1"), "hpace %s", v ? v : "(none)");
    free(v);
    cr_expect_eq(slow_score(&e, "http://p.test"), 800);
    it = claim_one(&e);
    finish_ms(&e, &it, 200, 4); /* a running mean: (3 * 800 + 8) / 4 */
    v = pace_of(&e, "http://p.test");
    cr_expect(v && !strcmp(v, "602 1"), "hpace %s", v ? v : "(none)");
    free(v);
    cr_expect_eq(slow_score(&e, "http://p.test"), 602);
    it = claim_one(&e);
    finish_ms(&e, &it, 200, 0); /* a duration not known: the mean as it was */
    v = pace_of(&e, "http://p.test");
    cr_expect(v && !strcmp(v, "602 1"), "hpace %s", v ? v : "(none)");
    free(v);
    env_stop(&e);
}

Test(pace, each_429_doubles_the_wait_and_each_other_answer_lowers_it)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.delay_ms = 100;
    cfg.max_delay_ms = 1000;
    cfg.pace_pct = 200;
    cfg.backoff_ms = 1;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://q.test/1", "http://q.test/2"};
    cr_assert_eq(seed_urls(e.f, seeds, 2, 0), 2);
    frontier_item_t it = claim_one(&e);
    retry_ms(&e, &it, 429, 10);
    cr_expect_eq(slow_score(&e, "http://q.test"), 200, "one 429: twice --delay");
    it = claim_one(&e);
    retry_ms(&e, &it, 429, 10);
    cr_expect_eq(slow_score(&e, "http://q.test"), 400);
    it = claim_one(&e);
    retry_ms(&e, &it, 429, 10);
    it = claim_one(&e);
    retry_ms(&e, &it, 429, 10);
    cr_expect_eq(slow_score(&e, "http://q.test"), 1000, "capped at --max-delay");
    char *v = pace_of(&e, "http://q.test");
    cr_expect(v && !strcmp(v, "20 16"), "hpace %s", v ? v : "(none)");
    free(v);
    it = claim_one(&e);
    finish_ms(&e, &it, 200, 10); /* 16 - 1 */
    cr_expect_eq(slow_score(&e, "http://q.test"), 1000);
    v = pace_of(&e, "http://q.test");
    cr_expect(v && !strcmp(v, "20 15"), "hpace %s", v ? v : "(none)");
    free(v);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_expect_eq(s.paced_hosts, 1);
    cr_expect_eq(s.nslow, 1);
    cr_expect_str_eq(s.slow[0].host, "http://q.test");
    cr_expect_eq(s.slow[0].delay_ms, 1000);
    env_stop(&e);
}

Test(pace, without_a_delay_nothing_is_paced)
{
    env_t e;
    frontier_config_t cfg = test_config(); /* --delay 0 */
    cfg.pace_pct = 200;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://z.test/1"};
    cr_assert_eq(seed_urls(e.f, seeds, 1, 0), 1);
    frontier_item_t it = claim_one(&e);
    finish_ms(&e, &it, 200, 5000);
    cr_expect_null(pace_of(&e, "http://z.test"));
    cr_expect_eq(slow_score(&e, "http://z.test"), -1);
    env_stop(&e);
}

/* ---- on real crawler processes ------------------------------------------ */

#define SLOW_HOST 2
#define SLOW_MS 400

/* hosts_site's pages, host SLOW_HOST's answering after SLOW_MS. */
static int paced_page(void *ud, const char *path, fx_route_t *out)
{
    unsigned h, i;
    char tail;
    int rc = site_page(ud, path, out);
    if (rc == 0 && sscanf(path, "/h%u/p/%u%c", &h, &i, &tail) == 2 && h == SLOW_HOST)
        out->delay_ms = SLOW_MS;
    return rc;
}

/* 4 hosts of 8 pages, one answering in 400 ms; two processes at --delay
 * 200 --delay-factor 2: the slow host's requests come at least 800 ms
 * after the one before ended, as the server saw it. */
Test(pace, two_processes_wait_twice_a_slow_hosts_response_time_and_fetch_every_page, .timeout = 180)
{
    site_t s = {.hosts = 4, .pages = 8, .slow = -1};
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    site_serve(&s, paced_page);
    char *dir = fx_tmpdir(), seeds[600];
    cr_assert_not_null(dir);
    site_seeds(&s, dir, seeds, sizeof seeds);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        char log[600];
        char *argv[] = {
            CRAWLER_BIN, "crawl",   "--redis", (char *)fx_redis_url(r), "--seeds", seeds,
            "--quiet",   "--delay", "200",     "--delay-factor",        "2",       "--concurrency",
            "8",         NULL};
        snprintf(log, sizeof log, "%s/log%d", dir, p);
        pid[p] = fx_spawn(argv, NULL, log);
        cr_assert(pid[p] > 0, "%s", fx_error());
    }
    for (int p = 0; p < 2; p++) {
        int rc = fx_wait(pid[p], 150000);
        cr_expect_eq(rc, 0, "crawler %d exited %d", p, rc);
    }
    fx_http_req_t *log;
    size_t n = fx_http_log(s.h, &log);
    expect_each_page_once(&s, log, n);
    uint64_t last_end = 0, min_gap = UINT64_MAX;
    size_t pages = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        if (page_of(&s, &log[k], &h, &i) != 0 || h != SLOW_HOST)
            continue;
        if (last_end) {
            uint64_t gap = log[k].arrived_us > last_end ? log[k].arrived_us - last_end : 0;
            min_gap = gap < min_gap ? gap : min_gap;
            cr_expect_geq(gap, 2 * SLOW_MS * 1000u, "%s came %.1f ms after the last one ended",
                          log[k].path, (double)gap / 1000.0);
        }
        last_end = log[k].answered_us;
        pages++;
    }
    cr_expect_eq(pages, s.pages);
    fprintf(stderr,
            "pace: the slow host's shortest gap %.1f ms (answers take %u ms, --delay 200)\n",
            (double)min_gap / 1000.0, SLOW_MS);
    free(log);
    redisContext *c = fx_redis_connect(r);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_geq(st.paced_hosts, 1);
    int found = 0;
    for (size_t i = 0; i < st.nslow; i++)
        if (strstr(fx_http_host_base(s.h, SLOW_HOST), st.slow[i].host)) {
            found = 1;
            cr_expect_geq(st.slow[i].delay_ms, 2 * SLOW_MS);
        }
    cr_expect(found, "the slow host is not among the slowest in crawler stats");
    redisFree(c);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(s.h);
    fx_redis_stop(r);
}
