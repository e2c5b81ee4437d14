/* The queue entry's layout (frontier/entry.c) through a real redis-server:
 * an entry holds the URL's path after its queue's origin and its numbers in
 * as few bytes as they take; a URL its origin does not prefix stays whole;
 * a queue written by an older crawler ("DEPTH TRIES [HOPS ]URL") is still
 * claimed, retried and dead-lettered with its URLs whole.  Every test ends
 * with the invariant checker (env_stop). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier_env.h"

/* Expects the queue of origin to hold want[0..n) in order. */
static void expect_queue(redisContext *c, const char *origin, const char *const *want, size_t n)
{
    redisReply *r = fx_redis_queue(c, "crawler:{t}:", origin);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(r->elements, n, "queue of %s holds %zu entries", origin, r->elements);
    for (size_t i = 0; i < n && i < r->elements; i++)
        cr_expect_str_eq(r->element[i]->str, want[i], "%s[%zu]", origin, i);
    freeReplyObject(r);
}

static void expect_delayed(redisContext *c, const char *want)
{
    redisReply *z = redisCommand(c, "ZRANGE crawler:{t}:delayed 0 -1");
    cr_assert(z && z->type == REDIS_REPLY_ARRAY && z->elements == 1);
    cr_expect_str_eq(z->element[0]->str, want);
    freeReplyObject(z);
}

static void retry_503(frontier_t *f, frontier_item_t *it)
{
    frontier_outcome_t o = {.status = 503, .error = "http-5xx"};
    cr_assert_eq(frontier_retry(f, it, &o, 0), 0);
    frontier_item_clear(it);
}

Test(frontier_entry, an_entry_holds_the_path_and_its_numbers_only)
{
    frontier_config_t cfg = test_config();
    cfg.backoff_ms = 1;
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://e.test/a?b=1"};
    cr_assert_eq(seed_urls(e.f, seed, 1, 0), 1);
    const char *q0[] = {"/a?b=1"};
    expect_queue(e.c, "http://e.test", q0, 1);
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    cr_expect_str_eq(it.url, "http://e.test/a?b=1");
    const char *links[] = {"http://e.test/c", "http://f.test/"};
    frontier_done_t d = {
        .item = &it, .outcome = {.status = 200}, .links = links, .nlinks = 2, .link_depth = 12};
    cr_assert_eq(frontier_finish(e.f, &d, 1), 0);
    frontier_item_clear(&it);
    const char *qe[] = {"12/c"}, *qf[] = {"12/"};
    expect_queue(e.c, "http://e.test", qe, 1);
    expect_queue(e.c, "http://f.test", qf, 1);
    frontier_item_t two[2];
    cr_assert_eq(claim_wait(e.f, 2, two, &n), FRONTIER_READY);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < 2; i++) {
        const char *want = strstr(two[i].url, "e.test") ? "http://e.test/c" : "http://f.test/";
        cr_expect_str_eq(two[i].url, want);
        cr_expect_eq(two[i].depth, 12, "%s: depth %u", two[i].url, two[i].depth);
        cr_expect_eq(two[i].tries, 0);
    }
    frontier_item_t *c = strstr(two[0].url, "e.test") ? &two[0] : &two[1];
    frontier_item_t *other = c == &two[0] ? &two[1] : &two[0];
    retry_503(e.f, c);
    expect_delayed(e.c, "http://e.test\t12:1/c");
    finish_one(e.f, other, NULL, 0, NULL, 0);
    frontier_item_clear(other);
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    cr_expect_str_eq(it.url, "http://e.test/c");
    cr_expect(it.depth == 12 && it.tries == 1, "depth %u tries %u", it.depth, it.tries);
    finish_one(e.f, &it, NULL, 0, NULL, 0);
    frontier_item_clear(&it);
    env_stop(&e);
}

Test(frontier_entry, a_url_its_origin_does_not_prefix_is_kept_whole)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    /* the origin leaves the userinfo out: "http://x.test" */
    const char *seed[] = {"http://u:p@x.test/a"};
    cr_assert_eq(seed_urls(e.f, seed, 1, 0), 1);
    const char *q[] = {"http://u:p@x.test/a"};
    expect_queue(e.c, "http://x.test", q, 1);
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    cr_expect_str_eq(it.url, "http://u:p@x.test/a");
    finish_one(e.f, &it, NULL, 0, NULL, 0);
    frontier_item_clear(&it);
    env_stop(&e);
}

/* A queue and a delayed retry written by an older crawler, next to entries
 * of today's layout: each claimed with its URL, numbers and hops; the
 * retries written back in today's layout; a dead letter keeps the URL whole. */
Test(frontier_entry, a_queue_of_the_older_layout_keeps_working)
{
    frontier_config_t cfg = test_config();
    cfg.max_tries = 3;
    cfg.backoff_ms = 1;
    env_t e;
    env_start(&e, &cfg);
    redisReply *r[4];
    r[0] = redisCommand(e.c, "RPUSH crawler:{t}:q:http://old.test %s %s %s %s",
                        "0 0 http://old.test/a", "4 2 7 http://old.test/b", "1/c", "0:0:3/d");
    r[1] = redisCommand(e.c, "HINCRBY crawler:{t}:stats queued 4");
    r[2] = redisCommand(e.c, "ZADD crawler:{t}:ready 0 http://old.test");
    r[3] = redisCommand(e.c, "ZADD crawler:{t}:delayed 0 %s",
                        "http://old.test\t2 1 http://old.test/e");
    for (size_t i = 0; i < 4; i++) {
        cr_assert(r[i] && r[i]->type != REDIS_REPLY_ERROR, "command %zu: %s", i,
                  r[i] ? r[i]->str : "");
        freeReplyObject(r[i]);
    }
    static const struct {
        const char *url;
        uint32_t depth, tries, hops;
    } want[] = {{"http://old.test/e", 2, 1, 0},
                {"http://old.test/a", 0, 0, 0},
                {"http://old.test/b", 4, 2, 7},
                {"http://old.test/c", 1, 0, 0},
                {"http://old.test/d", 0, 0, 3}};
    frontier_item_t it[5];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 5, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 5, "claimed %zu", n);
    for (size_t i = 0; i < 5; i++) {
        cr_expect_str_eq(it[i].url, want[i].url, "item %zu", i);
        cr_expect(it[i].depth == want[i].depth && it[i].tries == want[i].tries &&
                      it[i].hops == want[i].hops,
                  "%s: depth %u tries %u hops %u", want[i].url, it[i].depth, it[i].tries,
                  it[i].hops);
    }
    retry_503(e.f, &it[2]); /* its third try: dead, the URL whole */
    retry_503(e.f, &it[1]); /* today's layout */
    redisReply *dl = redisCommand(e.c, "LRANGE crawler:{t}:dead 0 -1");
    cr_assert(dl && dl->type == REDIS_REPLY_ARRAY && dl->elements == 1);
    cr_expect_str_eq(dl->element[0]->str, "4 2 7 http://old.test/b\t503\thttp-5xx");
    freeReplyObject(dl);
    expect_delayed(e.c, "http://old.test\t0:1http://old.test/a");
    for (size_t i = 0; i < 5; i++)
        if (i != 1 && i != 2) {
            finish_one(e.f, &it[i], NULL, 0, NULL, 0);
            frontier_item_clear(&it[i]);
        }
    frontier_item_t a;
    cr_assert_eq(claim_wait(e.f, 1, &a, &n), FRONTIER_READY);
    cr_expect_str_eq(a.url, "http://old.test/a");
    cr_expect_eq(a.tries, 1);
    finish_one(e.f, &a, NULL, 0, NULL, 0);
    frontier_item_clear(&a);
    env_stop(&e);
}

/* A crawl an older build began counted each host's admitted URLs in P
 * hadmit and kept every queue in a list: a host without a field in P hosts
 * is counted from there (max_pages_per_host holds across the upgrade), its
 * list stays its queue, and stats count the hosts it has not touched. */
Test(frontier_entry, an_older_builds_counts_and_lists_still_hold)
{
    frontier_config_t cfg = test_config();
    cfg.max_pages_per_host = 6;
    env_t e;
    env_start(&e, &cfg);
    redisReply *r[5];
    r[0] = redisCommand(e.c, "HSET crawler:{t}:hadmit http://old.test 5 http://idle.test 1");
    r[1] = redisCommand(e.c, "RPUSH crawler:{t}:q:http://old.test /a /b");
    r[2] = redisCommand(e.c, "HINCRBY crawler:{t}:stats queued 2");
    r[3] = redisCommand(e.c, "HINCRBY crawler:{t}:stats enqueued 6");
    r[4] = redisCommand(e.c, "ZADD crawler:{t}:ready 0 http://old.test");
    for (size_t i = 0; i < 5; i++) {
        cr_assert(r[i] && r[i]->type != REDIS_REPLY_ERROR, "command %zu: %s", i,
                  r[i] ? r[i]->str : "");
        freeReplyObject(r[i]);
    }
    /* 5 admitted before: one more of old.test, not two */
    const char *urls[] = {"http://old.test/c", "http://old.test/d"};
    cr_assert_eq(seed_urls(e.f, urls, 2, 0), 1, "the older build's count was not read");
    const char *want[] = {"/a", "/b", "/c"};
    expect_queue(e.c, "http://old.test", want, 3);
    redisReply *h = redisCommand(e.c, "HGET crawler:{t}:hosts http://old.test");
    cr_assert(h && h->type == REDIS_REPLY_STRING);
    cr_expect_str_eq(h->str, "6", "the count moved to P hosts, the queue left in its list");
    freeReplyObject(h);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, "t", &s), 0);
    cr_expect_eq(s.hosts, 2, "hosts of the older build's count");
    frontier_item_t it[4];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 3, "claimed %zu", n);
    cr_expect_str_eq(it[0].url, "http://old.test/a");
    cr_expect_str_eq(it[2].url, "http://old.test/c");
    for (size_t i = 0; i < n; i++)
        finish_one(e.f, &it[i], NULL, 0, NULL, 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    env_stop(&e);
}
