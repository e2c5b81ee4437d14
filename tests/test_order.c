/*
 * test_order.c -- the crawl order's depth window (frontier.h: depth_window;
 * frontier/lua/claim.lua: held_back; queue.lua: P qheads): a frontier
 * driven from this process, whose queues hold URLs of several depths on
 * several hosts.  With a window of 0, a claim takes only the hosts whose
 * next URL is at the shard's shallowest queued depth, holds the deeper ones
 * back, and takes them once the shallower ones are gone; without a window,
 * every host gives.  P qheads counts the hosts by the depth of their next
 * URL through every change (the invariant checker's rule 8, side_check).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier_env.h"
#include "side.h"

/* Queues: a.test/1 at depth 0; b.test/1 at depth 1; c.test/1 at depth 2
 * (each reached from the one before). */
static void queue_three_depths(env_t *e)
{
    const char *seed[] = {"http://a.test/0"};
    cr_assert_eq(seed_urls(e->f, seed, 1, 0), 1);
    frontier_item_t it;
    size_t n = 0;
    cr_assert_eq(claim_wait(e->f, 1, &it, &n), FRONTIER_READY);
    const char *l1[] = {"http://b.test/0", "http://a.test/1"};
    finish_one(e->f, &it, l1, 2, NULL, 0);
    frontier_item_clear(&it);
    cr_assert_eq(claim_wait(e->f, 1, &it, &n), FRONTIER_READY);
    cr_assert_str_eq(it.url, "http://b.test/0");
    const char *l2[] = {"http://c.test/0", "http://b.test/1"};
    finish_one(e->f, &it, l2, 2, NULL, 0);
    frontier_item_clear(&it);
    cr_assert_eq(claim_wait(e->f, 1, &it, &n), FRONTIER_READY);
    cr_assert_str_eq(it.url, "http://a.test/1");
    const char *l3[] = {"http://c.test/1"};
    finish_one(e->f, &it, l3, 1, NULL, 0); /* a.test/1 (depth 1) links c.test/1: depth 2 */
    frontier_item_clear(&it);
    /* queued now: b.test/1 (depth 2), c.test/0 (2), c.test/1 (2) ... and a seed at 0 */
    const char *seed2[] = {"http://d.test/0"};
    cr_assert_eq(seed_urls(e->f, seed2, 1, 0), 1);
    side_check(e->c, e->f, e->f->cfg.per_host);
}

static long long qheads(env_t *e, const char *d)
{
    char key[256];
    snprintf(key, sizeof key, "%sqheads", e->f->shard[0].prefix);
    redisReply *r = redisCommand(e->c, "HGET %s %s", key, d);
    cr_assert_not_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

Test(order, a_window_of_0_serves_the_shallowest_depth_first)
{
    env_t e;
    frontier_config_t cfg = test_config(); /* --delay 0 */
    cfg.depth_window = 0;
    env_start(&e, &cfg);
    queue_three_depths(&e);
    cr_expect_eq(qheads(&e, "0"), 1, "d.test's next URL");
    cr_expect_eq(qheads(&e, "2"), 2, "b.test's and c.test's");
    frontier_item_t it[8];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 1, "only the seed at depth 0 is claimed, %zu were", n);
    cr_expect_str_eq(it[0].url, "http://d.test/0");
    side_check(e.c, e.f, cfg.per_host);
    finish_one(e.f, &it[0], NULL, 0, NULL, 0);
    frontier_item_clear(&it[0]);
    cr_expect_eq(qheads(&e, "0"), 0);
    /* depth 2 is the shallowest now: the hosts held back come again (after
     * their hold) and give */
    size_t got = 0;
    for (int round = 0; round < 200 && got < 3; round++) {
        n = 0;
        frontier_state_t st = claim_wait(e.f, 8, it, &n);
        cr_assert_eq(st, FRONTIER_READY);
        for (size_t i = 0; i < n; i++) {
            cr_expect_eq(it[i].depth, 2);
            finish_one(e.f, &it[i], NULL, 0, NULL, 0);
            frontier_item_clear(&it[i]);
        }
        got += n;
    }
    cr_expect_eq(got, 3);
    side_check(e.c, e.f, cfg.per_host);
    env_stop(&e);
}

Test(order, without_a_window_every_host_gives)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    queue_three_depths(&e);
    frontier_item_t it[8];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
    cr_expect_geq(n, 3, "b, c and d give at once: %zu", n);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    side_check(e.c, e.f, 0);
    env_stop(&e);
}

Test(order, the_depth_counts_follow_release_retry_and_a_block)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.backoff_ms = 1;
    env_start(&e, &cfg);
    queue_three_depths(&e);
    frontier_item_t it[8];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
    cr_assert_geq(n, 2);
    side_check(e.c, e.f, 0);
    cr_assert_eq(frontier_release(e.f, it, 1), 0); /* back to the front of its queue */
    frontier_outcome_t o = {.status = 503, .error = "http-503"};
    cr_assert_eq(frontier_retry(e.f, &it[1], &o, 0), 0);
    side_check(e.c, e.f, 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    usleep(20000); /* the retry is due: the next claim promotes it */
    cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
    side_check(e.c, e.f, 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    /* a block drops c.test's queue: its URLs leave the counts */
    frontier_blocks_t b = {0};
    char err[256] = "";
    uint64_t dropped = 0;
    cr_assert_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "c.test", &b, &dropped, err, sizeof err), 0,
                 "%s", err);
    frontier_blocks_free(&b);
    side_check(e.c, e.f, 0);
    env_stop(&e);
}

/* Seeds of high priority (FRONTIER_SEED_FIRST, a seeds file's "URL 0.9")
 * go ahead of what their host has queued, in their order: on a short
 * (packed) queue and on a long one (a list). */
static void first_seeds_lead(size_t queued)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.per_host = 100;
    env_start(&e, &cfg);
    char *urls[40] = {0};
    for (size_t i = 0; i < queued; i++) {
        urls[i] = malloc(64);
        snprintf(urls[i], 64, "http://p.test/n%zu", i);
    }
    cr_assert_eq(seed_urls(e.f, (const char *const *)urls, queued, 0), queued);
    const char *first[] = {"http://p.test/first1", "http://p.test/first2"};
    size_t added = 0;
    cr_assert_eq(frontier_seed(e.f, first, 2, FRONTIER_SEED_FIRST, &added), 0);
    cr_assert_eq(added, 2);
    side_check(e.c, e.f, cfg.per_host);
    frontier_item_t it[64];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 64, it, &n), FRONTIER_READY);
    cr_assert_eq(n, queued + 2);
    cr_expect_str_eq(it[0].url, "http://p.test/first1");
    cr_expect_str_eq(it[1].url, "http://p.test/first2");
    if (queued)
        cr_expect_str_eq(it[2].url, "http://p.test/n0", "then the queue in its order");
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    for (size_t i = 0; i < queued; i++)
        free(urls[i]);
    side_check(e.c, e.f, cfg.per_host);
    env_stop(&e);
}

Test(order, seeds_of_high_priority_lead_a_short_queue)
{
    first_seeds_lead(3);
}

Test(order, seeds_of_high_priority_lead_a_long_queue)
{
    first_seeds_lead(30);
}

Test(order, seeds_of_high_priority_start_an_empty_queue)
{
    first_seeds_lead(0);
}

/* `crawler seed FILE` reads a priority after a URL ("URL 0.9", as a
 * sitemap's): the one above 0.5 is claimed before the URLs queued ahead of
 * it, the others keep the file's order. */
Test(order, a_seeds_file_priority_puts_its_url_first, .timeout = 60)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.per_host = 100;
    env_start(&e, &cfg);
    char *dir = fx_tmpdir(), path[600];
    cr_assert_not_null(dir);
    snprintf(path, sizeof path, "%s/seeds.txt", dir);
    cr_assert_eq(fx_write_file(path, "http://s.test/a\nhttp://s.test/b 0.9\n"
                                     "http://s.test/c\t0.2\nhttp://s.test/d 0.5\n"),
                 0);
    char *argv[] = {CRAWLER_BIN, "seed", path, "--redis", (char *)fx_redis_url(e.r),
                    "--crawl",   CRAWL,  NULL};
    char log[700];
    snprintf(log, sizeof log, "%s/log", dir);
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0, "%s", fx_error());
    int rc = fx_wait(pid, 30000);
    char *out = fx_read_file(log, NULL);
    cr_assert_eq(rc, 0, "crawler seed exited %d: %s", rc, out ? out : "");
    free(out);
    frontier_item_t it[8];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 4);
    const char *want[] = {"http://s.test/b", "http://s.test/a", "http://s.test/c",
                          "http://s.test/d"};
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(it[i].url, want[i], "claimed %zu", i);
        frontier_item_clear(&it[i]);
    }
    fx_rmtree(dir);
    free(dir);
    env_stop(&e);
}
