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
#include "cli.h"
#include "config.h"
#include "fixtures.h"
#include "gate_env.h"
#include "frontier.h"
#include "robotsgate.h"
#include "scope.h"

#define CRAWL "review-test"
#define RULES "User-agent: *\nDisallow: /private/\n"

/* ---- the robots.txt gate ------------------------------------------------ */

static void gate_open(wk_t *w, fx_redis_t *r, const crawl_config_t *cfg)
{
    wk_open_with(w, r, cfg, NULL);
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
        cli_crawl_defaults(&cfg);
        cfg.crawl = CRAWL;
        cfg.delay_ms = 300;
        wk_t a;
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
        wk_close(&a);
    }
    fx_redis_stop(r);
}

/* Pending entries are never evicted (each holds a URL), so a thread that
 * may hold more URLs than ROBOTS_CACHE (16,384) needs more slots: before,
 * the 16,385th origin parked at once found no slot and its URL was allowed
 * without any robots.txt check.  --concurrency 80000 over 2 threads:
 * 40,000 URLs a thread; 20,000 new origins all park. */
Test(review, a_thread_that_may_hold_more_urls_than_the_cache_parks_every_one, .timeout = 60)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    cli_crawl_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.concurrency = 80000;
    cfg.threads = 2;
    wk_t a;
    gate_open(&a, r, &cfg);
    enum { N = 20000, BATCH = 500 };
    size_t allowed = 0, parked = 0;
    frontier_item_t *items = calloc(BATCH, sizeof *items);
    cr_assert_not_null(items);
    for (unsigned first = 0; first < N; first += BATCH) {
        char url[96];
        for (unsigned i = 0; i < BATCH; i++) {
            snprintf(url, sizeof url, "http://o%u.example/a", first + i);
            items[i] = item_at(url);
        }
        cr_assert_eq(robotsgate_prefetch(a.g, items, BATCH), 0);
        for (unsigned i = 0; i < BATCH; i++) {
            robotsgate_verdict_t v = ROBOTSGATE_ALLOW;
            cr_assert_eq(robotsgate_check(a.g, &items[i], &v), 0);
            allowed += v == ROBOTSGATE_ALLOW;
            parked += v == ROBOTSGATE_WAIT;
            frontier_item_clear(&items[i]);
        }
    }
    free(items);
    cr_expect_eq(allowed, 0, "%zu of %u URLs allowed with no robots.txt read", allowed, N);
    cr_expect_eq(parked, N, "%zu of %u parked", parked, N);
    cr_expect_eq(robotsgate_parked(a.g), N);
    wk_close(&a);
    fx_redis_stop(r);
}

/* With --delay 0 and --per-host 4 a host's URLs are claimed several at a
 * time; its robots.txt then says Crawl-delay: 1.  Before, all of them came
 * out together when the hold ended (two requests at once to a host asking
 * for one a second); now one waits the delay after the robots.txt and the
 * others go back to the frontier, which spaces them by the host's delay
 * (robots_store set it). */
Test(review, urls_claimed_before_a_crawl_delay_was_known_go_back_but_one)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    cli_crawl_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.max_delay_ms = 5000;
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = CRAWL;
    fc.delay_ms = 0;
    fc.per_host = 4;
    wk_t a;
    wk_open_with(&a, r, &cfg, &fc);
    const char *urls[] = {"http://cd.example/1", "http://cd.example/2", "http://cd.example/3"};
    cr_assert_eq(frontier_seed(a.f, urls, 3, 0, NULL), 0);
    frontier_item_t items[4];
    size_t n = 0;
    frontier_state_t st;
    cr_assert_eq(frontier_claim(a.f, 4, items, &n, &st, NULL), 0);
    cr_assert_eq(n, 3, "claimed %zu of the host's 3 URLs at once", n);
    cr_assert_eq(robotsgate_prefetch(a.g, items, n), 0);
    for (size_t i = 0; i < n; i++) {
        robotsgate_verdict_t v = ROBOTSGATE_ALLOW;
        cr_assert_eq(robotsgate_check(a.g, &items[i], &v), 0);
        cr_assert_eq(v, ROBOTSGATE_WAIT, "%s not parked", urls[i]);
    }
    gate_fetch_one(a.g, "http://cd.example", RULES "Crawl-delay: 1\n");
    cr_expect_eq(robotsgate_parked(a.g), 1, "%zu URLs wait the Crawl-delay, want 1",
                 robotsgate_parked(a.g));
    frontier_stats_t fs;
    cr_assert_eq(frontier_stats(a.rc, CRAWL, &fs), 0);
    cr_expect_eq(fs.queued, 2, "%llu URLs back in the queue, want 2",
                 (unsigned long long)fs.queued);
    cr_expect_eq(fs.in_flight, 1, "%llu in flight, want 1", (unsigned long long)fs.in_flight);
    wk_close(&a);
    fx_redis_stop(r);
}
