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
 * it, the others keep the file's order; a priority out of 0..1 is an
 * invalid line (exit 3), its URL not seeded. */
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
                                     "http://s.test/c\t0.2\nhttp://s.test/d 0.5\n"
                                     "http://s.test/e 1.5\n"),
                 0);
    char *argv[] = {CRAWLER_BIN, "seed", path, "--redis", (char *)fx_redis_url(e.r),
                    "--crawl",   CRAWL,  NULL};
    char log[700];
    snprintf(log, sizeof log, "%s/log", dir);
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0, "%s", fx_error());
    int rc = fx_wait(pid, 30000);
    char *out = fx_read_file(log, NULL);
    /* the line of a priority out of range is refused, named, and the rest seeded */
    cr_expect_eq(rc, 3, "crawler seed exited %d: %s", rc, out ? out : "");
    cr_expect(out && strstr(out, ":5: invalid priority '1.5'"), "not said: %s", out ? out : "");
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

/* A page's links marked first (frontier_done_t.link_first: a sitemap's
 * <priority> above 0.5) go ahead of their host's queue, on the page's
 * shard and on another shard alike (2 shards: the other shard's links go
 * as an offer). */
/* Claims until url comes, releasing every other URL claimed (bounded); its item. */
static frontier_item_t claim_only(env_t *e, const char *url)
{
    frontier_item_t it[8], got = {0};
    size_t n = 0;
    for (int round = 0; round < 50 && !got.url; round++) {
        cr_assert_eq(claim_wait(e->f, 8, it, &n), FRONTIER_READY);
        for (size_t i = 0; i < n; i++) {
            if (!got.url && !strcmp(it[i].url, url)) {
                got = it[i];
                continue;
            }
            cr_assert_eq(frontier_release(e->f, &it[i], 1), 0);
            frontier_item_clear(&it[i]);
        }
    }
    cr_assert_not_null(got.url, "%s was never claimed", url);
    return got;
}

static void links_marked_first_lead(unsigned shards)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.per_host = 100;
    cfg.shards = shards;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://m.test/sitemap.xml", "http://q.test/old1", "http://q.test/old2",
                           "http://r.test/old1"};
    cr_assert_eq(seed_urls(e.f, seeds, 4, 0), 4);
    frontier_item_t it[8];
    size_t n = 0, got = 0;
    frontier_item_t sm = claim_only(&e, "http://m.test/sitemap.xml");
    const char *links[] = {"http://q.test/new", "http://q.test/top", "http://r.test/top",
                           "http://r.test/new"};
    const unsigned char first[] = {0, 1, 1, 0};
    frontier_done_t d = {.item = &sm,
                         .outcome = {.status = 200, .bytes = 100},
                         .links = links,
                         .nlinks = 4,
                         .link_first = first,
                         .link_depth = 1};
    cr_assert_eq(frontier_finish(e.f, &d, 1), 0);
    frontier_item_clear(&sm);
    char order[512] = "";
    for (int round = 0; round < 50 && got < 6; round++) {
        n = 0;
        cr_assert_eq(claim_wait(e.f, 8, it, &n), FRONTIER_READY);
        for (size_t i = 0; i < n; i++, got++) {
            size_t at = strlen(order);
            snprintf(order + at, sizeof order - at, "%s ", it[i].url);
            finish_one(e.f, &it[i], NULL, 0, NULL, 0);
            frontier_item_clear(&it[i]);
        }
    }
    cr_expect_eq(got, 7);
    /* each host: its marked link first, then what it had queued, then the new */
    const char *at_top[] = {"http://q.test/top ", "http://r.test/top "};
    const char *olds[] = {"http://q.test/old1 ", "http://q.test/old2 ", "http://r.test/old1 "};
    const char *news[] = {"http://q.test/new ", "http://r.test/new "};
    for (int h = 0; h < 2; h++) {
        const char *top = strstr(order, at_top[h]), *nw = strstr(order, news[h]);
        cr_expect(top && nw && top < nw, "%s before %s: %s", at_top[h], news[h], order);
        for (int k = 0; k < 3; k++) {
            const char *o = strstr(order, olds[k]);
            if (o && top && olds[k][7] == at_top[h][7])
                cr_expect(top < o && o < nw, "%s between: %s", olds[k], order);
        }
    }
    env_stop(&e);
}

Test(order, links_marked_first_lead_their_hosts_queues)
{
    links_marked_first_lead(1);
}

Test(order, links_marked_first_lead_on_another_shard_too)
{
    links_marked_first_lead(2);
}

/* Links of high priority keep their page's order ahead of their host's
 * queue, though a page's links reach Redis grouped by their visited-set
 * block (a sitemap listing its most important pages first): 24 of them,
 * spread over the filter's blocks, are claimed in the page's order, then
 * the URL queued before. */
Test(order, links_marked_first_keep_their_pages_order)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.per_host = 100;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://m.test/sitemap.xml", "http://q.test/old"};
    cr_assert_eq(seed_urls(e.f, seeds, 2, 0), 2);
    frontier_item_t it[32], sm = claim_only(&e, "http://m.test/sitemap.xml");
    size_t n = 0;
    char urls[24][40];
    const char *links[24];
    unsigned char first[24];
    for (int i = 0; i < 24; i++) {
        snprintf(urls[i], sizeof urls[i], "http://q.test/top%02d", i);
        links[i] = urls[i];
        first[i] = 1;
    }
    frontier_done_t d = {.item = &sm,
                         .outcome = {.status = 200, .bytes = 100},
                         .links = links,
                         .nlinks = 24,
                         .link_first = first,
                         .link_depth = 1};
    cr_assert_eq(frontier_finish(e.f, &d, 1), 0);
    frontier_item_clear(&sm);
    size_t got = 0;
    char order[1200] = "", want[1200] = "";
    for (int i = 0; i < 24; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s ", urls[i]);
    snprintf(want + strlen(want), sizeof want - strlen(want), "http://q.test/old ");
    for (int round = 0; round < 50 && got < 25; round++) {
        n = 0;
        cr_assert_eq(claim_wait(e.f, 32, it, &n), FRONTIER_READY);
        for (size_t i = 0; i < n; i++, got++) {
            snprintf(order + strlen(order), sizeof order - strlen(order), "%s ", it[i].url);
            finish_one(e.f, &it[i], NULL, 0, NULL, 0);
            frontier_item_clear(&it[i]);
        }
    }
    cr_expect_str_eq(order, want, "claimed in this order");
    env_stop(&e);
}

/* On a real crawler process: a sitemap (robots.txt's Sitemap:, --sitemaps)
 * lists /a, /b (priority 0.9), /c (0.3), /d (0.8) of one host; at --delay
 * 50 the host has one request in flight, so the server's log shows its
 * queue's order: /b and /d, in the sitemap's order, before /a and /c (in
 * either order: a page's links reach Redis grouped by their visited-set
 * block, whose index depends on the URL, here on the server's port; only
 * those of high priority are put back in the page's order). */
Test(order, a_sitemaps_priority_puts_its_urls_first, .timeout = 120)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "%s", fx_error());
    char robots[256], map[1024];
    snprintf(robots, sizeof robots, "User-agent: *\nAllow: /\nSitemap: %s/map.xml\n",
             fx_http_base(h));
    fx_http_set(h, "/robots.txt", &(fx_route_t){.content_type = "text/plain", .body = robots});
    snprintf(map, sizeof map,
             "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
             "<url><loc>%s/a</loc></url><url><loc>%s/b</loc><priority>0.9</priority></url>"
             "<url><loc>%s/c</loc><priority>0.3</priority></url>"
             "<url><priority>0.8</priority><loc>%s/d</loc></url></urlset>",
             fx_http_base(h), fx_http_base(h), fx_http_base(h), fx_http_base(h));
    fx_http_set(h, "/map.xml", &(fx_route_t){.content_type = "application/xml", .body = map});
    fx_http_page(h, "/", "home");
    const char *pages[] = {"/a", "/b", "/c", "/d"};
    for (int i = 0; i < 4; i++)
        fx_http_page(h, pages[i], "page");
    char *dir = fx_tmpdir(), seeds[600], log[700];
    cr_assert_not_null(dir);
    snprintf(seeds, sizeof seeds, "%s/seeds.txt", dir);
    char line[256];
    snprintf(line, sizeof line, "%s/\n", fx_http_base(h));
    cr_assert_eq(fx_write_file(seeds, line), 0);
    snprintf(log, sizeof log, "%s/log", dir);
    char *argv[] = {CRAWLER_BIN, "crawl",   "--redis",    (char *)fx_redis_url(r),
                    "--seeds",   seeds,     "--sitemaps", "--delay",
                    "50",        "--quiet", NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0, "%s", fx_error());
    int rc = fx_wait(pid, 100000);
    char *out = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %s", rc, out ? out : "");
    free(out);
    fx_http_req_t *lg;
    size_t n = fx_http_log(h, &lg);
    char order[64] = "";
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 4; i++)
            if (!strcmp(lg[k].path, pages[i]))
                snprintf(order + strlen(order), sizeof order - strlen(order), "%s", pages[i] + 1);
    int ok = strlen(order) == 4 && !strncmp(order, "bd", 2) && strspn(order + 2, "ac") == 2 &&
             order[2] != order[3];
    cr_expect(ok, "the order the server saw the sitemap's pages in: %s (b, d, then a and c)",
              order);
    free(lg);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(h);
    fx_redis_stop(r);
}
