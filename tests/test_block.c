/*
 * test_block.c -- `crawler block` and `unblock` (frontier.h: frontier_block):
 * on a frontier driven from this process (what Redis holds and what claims
 * and offers answer), and on real crawler processes against the HTTP
 * fixture's many loopback hosts, where the verdict is the server's own log
 * of every request: nothing reaches a blocked host later than 5 s after
 * the command (the bound; none is expected at all once the
 * command returned, which the test also reports).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontier_env.h"
#include "hosts_site.h"
#include "keys.h"

static void block(env_t *e, int change, int domain, const char *name, uint64_t *dropped)
{
    frontier_blocks_t b = {0};
    char err[256] = "";
    int rc = frontier_block(e->c, NULL, CRAWL, change, domain, name, &b, dropped, err, sizeof err);
    cr_assert_eq(rc, 0, "frontier_block: %s", err);
    frontier_blocks_free(&b);
}

/* Claims everything ready (bounded) and finishes it: how many; each
 * claimed URL's host must not be blocked (blocked(host) says, over every
 * host of the test), and *n_of counts those whose URL holds of. */
static int test_blocked_host(const char *url)
{
    static const char *const gone[] = {"://a.ex.test/", "://b.sub.ex.test/", "://ex.test:8443/",
                                       "://h.test/"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        if (strstr(url, gone[i]))
            return 1;
    return 0;
}

static size_t claim_all(env_t *e, size_t *n_of, const char *of)
{
    frontier_item_t items[64];
    size_t n = 0;
    frontier_state_t st = claim_wait(e->f, 64, items, &n);
    if (st != FRONTIER_READY)
        return 0;
    for (size_t i = 0; i < n; i++) {
        cr_expect_not(test_blocked_host(items[i].url), "claimed %s", items[i].url);
        if (of && strstr(items[i].url, of))
            (*n_of)++;
    }
    for (size_t i = 0; i < n; i++)
        finish_one(e->f, &items[i], NULL, 0, NULL, 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    return n;
}

static uint64_t stat(env_t *e, int which)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e->c, CRAWL, &s), 0);
    return which == 0 ? s.blocked : which == 1 ? s.blocked_links : s.queued;
}

Test(block, a_domain_block_drops_its_queues_refuses_its_links_and_spares_lookalikes)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    const char *seeds[] = {"http://a.ex.test/1",     "http://b.sub.ex.test/2",
                           "https://ex.test:8443/3", "http://notex.test/4",
                           "http://ex.test.org/5",   "http://other.test/6"};
    cr_assert_eq(seed_urls(e.f, seeds, 6, 0), 6);
    uint64_t dropped = 0;
    block(&e, 1, 1, "ex.test", &dropped);
    cr_expect_eq(dropped, 3, "the block dropped %llu queued URLs", (unsigned long long)dropped);
    cr_expect_eq(stat(&e, 0), 3, "blocked %llu", (unsigned long long)stat(&e, 0));
    cr_expect_eq(stat(&e, 2), 3, "queued after the block");
    size_t n = claim_all(&e, NULL, NULL);
    cr_expect_eq(n, 3, "claimed %zu (notex.test, ex.test.org, other.test)", n);
    /* the claim told this handle the list */
    cr_expect(frontier_blocked(e.f, "http://deep.x.ex.test/a"));
    cr_expect(frontier_blocked(e.f, "https://ex.test/"));
    cr_expect_not(frontier_blocked(e.f, "http://notex.test/"));
    cr_expect_not(frontier_blocked(e.f, "http://ex.test.org/"));
    /* new links and seeds to it are refused, and left out of the visited set */
    const char *later[] = {"http://c.ex.test/7", "http://other.test/8"};
    cr_expect_eq(seed_urls(e.f, later, 2, 0), 1);
    cr_expect_eq(stat(&e, 1), 1, "links refused");
    block(&e, -1, 1, "ex.test", NULL);
    cr_expect_eq(seed_urls(e.f, later, 2, 0), 1, "unblocked: c.ex.test is new");
    size_t of = 0;
    claim_all(&e, &of, "c.ex.test");
    cr_expect_eq(of, 1);
    cr_expect_not(frontier_blocked(e.f, "http://c.ex.test/"), "the claim told the unblock");
    env_stop(&e);
}

Test(block, a_url_back_in_its_queue_after_the_block_is_dropped_by_the_claim)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    const char *seeds[] = {"http://h.test/1", "http://h.test/2", "http://k.test/3"};
    cr_assert_eq(seed_urls(e.f, seeds, 3, 0), 3);
    frontier_item_t items[8];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 8, items, &n), FRONTIER_READY);
    cr_assert_eq(n, 3);
    uint64_t dropped = 9;
    block(&e, 1, 0, "h.test", &dropped);
    cr_expect_eq(dropped, 0, "nothing of h.test was queued");
    /* handed back (a worker's shutdown): into the queue of a blocked host */
    cr_assert_eq(frontier_release(e.f, items, n), 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    cr_expect_eq(claim_all(&e, NULL, NULL), 1, "only k.test's URL");
    cr_expect_eq(stat(&e, 0), 2, "the claim dropped h.test's two URLs");
    cr_expect_eq(stat(&e, 2), 0);
    /* and the crawl is over: nothing of h.test left anywhere */
    frontier_state_t st;
    uint32_t wait;
    cr_expect_eq(frontier_claim(e.f, 8, items, &n, &st, &wait), 0);
    cr_expect_eq(st, FRONTIER_DONE);
    env_stop(&e);
}

Test(block, bad_names_and_too_many_blocks_are_refused_with_nothing_written)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    frontier_blocks_t b = {0};
    char err[256];
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "Upper.Case", &b, NULL, err, sizeof err),
                 CRAWL_EINVAL);
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "a b", &b, NULL, err, sizeof err),
                 CRAWL_EINVAL);
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "", &b, NULL, err, sizeof err),
                 CRAWL_EINVAL);
    cr_expect_eq(redis_int(e.c, "EXISTS %s", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "blocks"), 0);
    /* the cap: FRONTIER_MAX_BLOCKS - 1 written here at once, then one more
     * taken and the next refused by Redis, the list as it was */
    redisAppendCommand(e.c, "HSET %s ~gen x", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "blocks");
    for (int i = 0; i + 1 < FRONTIER_MAX_BLOCKS; i++)
        redisAppendCommand(e.c, "HSET %s h:h%d.test 1",
                           FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "blocks", i);
    for (int i = 0; i < FRONTIER_MAX_BLOCKS; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(e.c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    cr_assert_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "last.test", &b, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(b.n, FRONTIER_MAX_BLOCKS);
    cr_expect_neq(
        frontier_block(e.c, NULL, CRAWL, 1, 1, "one-more.test", &b, NULL, err, sizeof err), 0);
    cr_expect_neq(strstr(err, "more than"), NULL, "%s", err);
    frontier_blocks_free(&b);
    env_stop(&e);
}
