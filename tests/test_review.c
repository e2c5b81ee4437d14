/*
 * test_review.c -- regressions found by the review of issue 15's crawler
 * changes (the event loop, the done list, the robots.txt gate's held
 * entries).  Each test names the path it guards; against a real
 * redis-server and the HTTP fixture where they need one.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bloom.h"
#include "config.h"
#include "fixtures.h"
#include "frontier.h"
#include "robotsgate.h"
#include "scope.h"

#define CRAWL "review-test"
#define RULES "User-agent: *\nDisallow: /private/\n"

/* ---- the robots.txt gate ------------------------------------------------ */

typedef struct gate_env {
    redisContext *rc;
    bloom_t *b;
    frontier_t *f;
    scope_t *scope;
    robotsgate_t *g;
} gate_env_t;

static void gate_open(gate_env_t *w, fx_redis_t *r, const crawl_config_t *cfg)
{
    char err[256], bname[256];
    int berr = 0;
    memset(w, 0, sizeof *w);
    w->rc = fx_redis_connect(r);
    cr_assert_not_null(w->rc);
    frontier_bloom_name(cfg->crawl, bname, sizeof bname);
    bloom_params_t bp = {.capacity = 10000, .fp_rate = 0.001};
    w->b = bloom_open(w->rc, bname, NULL, &berr, err, sizeof err);
    if (!w->b && berr == CRAWL_ENOTFOUND)
        w->b = bloom_open(w->rc, bname, &bp, &berr, err, sizeof err);
    cr_assert_not_null(w->b, "bloom: %s", err);
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = cfg->crawl;
    w->f = frontier_open(w->rc, &fc, w->b, err, sizeof err);
    cr_assert_not_null(w->f, "frontier: %s", err);
    scope_config_t sc = config_scope(cfg);
    w->scope = scope_new(&sc, err, sizeof err);
    cr_assert_not_null(w->scope, "scope: %s", err);
    w->g = robotsgate_new(cfg, w->f, w->scope);
    cr_assert_not_null(w->g);
}

static void gate_close(gate_env_t *w)
{
    robotsgate_free(w->g);
    scope_free(w->scope);
    frontier_close(w->f);
    bloom_close(w->b);
    redisFree(w->rc);
}

static frontier_item_t item_at(const char *url)
{
    frontier_item_t it = {.url = strdup(url), .lease = strdup("no-lease")};
    cr_assert(it.url && it.lease);
    return it;
}

/* Checks url: its verdict (the item is cleared unless parked). */
static robotsgate_verdict_t gate_check(robotsgate_t *g, const char *url)
{
    frontier_item_t it = item_at(url);
    robotsgate_verdict_t v = ROBOTSGATE_WAIT;
    cr_expect_eq(robotsgate_check(g, &it, &v), 0, "check %s failed", url);
    frontier_item_clear(&it);
    return v;
}

/* Answers the one fetch g asks for with body (200). */
static void gate_fetch_one(robotsgate_t *g, const char *want, const char *body)
{
    const char *o = robotsgate_next_fetch(g);
    cr_assert(o && !strcmp(o, want), "fetch %s, want %s", o ? o : "none", want);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", o);
    robotsgate_body_t b = {
        .origin = copy, .status = 200, .complete = 1, .body = body, .len = strlen(body)};
    cr_assert_eq(robotsgate_fetched(g, &b), 0);
}

static unsigned gate_drain(robotsgate_t *g)
{
    frontier_item_t it;
    robotsgate_verdict_t v;
    unsigned n = 0;
    while (robotsgate_next_ready(g, &it, &v)) {
        frontier_item_clear(&it);
        n++;
    }
    return n;
}

/* A held entry (its robots.txt fetched by this thread, its parked URLs
 * waiting the host's delay) has rules but was never settled: its expiry is
 * 0.  A URL of the same origin checked (or prefetched) meanwhile must park
 * on it too -- before the fix known() took it for an expired settled entry
 * and dropped it: the parked URL was freed (a lease no path hands back),
 * `parked` and `nheld` never came down (the worker never exits: engine_held
 * > 0), the LRU and expiry lists were cut, and the new URL was allowed at
 * once, right after the robots.txt request (politeness).  A host with a
 * delay has one URL in flight, so a second URL of it reaches a gate holding
 * its first when that first one's lease lapsed (Redis away longer than
 * --lease while the hold, up to --max-delay, runs) and the frontier handed
 * it out again. */
Test(review, a_url_of_a_held_origin_parks_on_it_instead_of_dropping_it)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        crawl_config_t cfg;
        config_defaults(&cfg);
        cfg.crawl = CRAWL;
        cfg.delay_ms = 300;
        gate_env_t a;
        gate_open(&a, r, &cfg);
        char origin[64], u1[96], u2[96];
        snprintf(origin, sizeof origin, "http://held%d.example", prefetch);
        snprintf(u1, sizeof u1, "%s/a", origin);
        snprintf(u2, sizeof u2, "%s/b", origin);
        cr_assert_eq(gate_check(a.g, u1), ROBOTSGATE_WAIT);
        gate_fetch_one(a.g, origin, RULES);
        cr_assert_eq(robotsgate_parked(a.g), 1, "the first URL is held for the delay");
        frontier_item_t it = item_at(u2);
        if (prefetch)
            cr_expect_eq(robotsgate_prefetch(a.g, &it, 1), 0);
        robotsgate_verdict_t v = ROBOTSGATE_ALLOW;
        cr_expect_eq(robotsgate_check(a.g, &it, &v), 0);
        cr_expect_eq(v, ROBOTSGATE_WAIT,
                     "prefetch %d: a URL of a held origin got verdict %d, not parked (fetched "
                     "right after the robots.txt)",
                     prefetch, v);
        frontier_item_clear(&it);
        cr_expect_eq(robotsgate_parked(a.g), v == ROBOTSGATE_WAIT ? 2 : 1,
                     "prefetch %d: %zu parked", prefetch, robotsgate_parked(a.g));
        unsigned out = 0;
        uint64_t t0 = fx_now_ms();
        while (out < 2 && fx_now_ms() < t0 + 10000) {
            cr_assert_eq(robotsgate_poll(a.g), 0);
            out += gate_drain(a.g);
            if (out < 2)
                usleep(5000);
        }
        cr_expect_eq(out, v == ROBOTSGATE_WAIT ? 2 : 1, "prefetch %d: %u URLs came out of the hold",
                     prefetch, out);
        cr_expect_eq(robotsgate_parked(a.g), 0, "prefetch %d: %zu still counted parked", prefetch,
                     robotsgate_parked(a.g));
        cr_expect_not(robotsgate_polling(a.g), "prefetch %d: still polling (nheld)", prefetch);
        /* the cache's lists still hold: the origin answers from its rules */
        cr_expect_eq(gate_check(a.g, u1), ROBOTSGATE_ALLOW, "prefetch %d", prefetch);
        gate_close(&a);
    }
    fx_redis_stop(r);
}
