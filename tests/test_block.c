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

#include "cluster_env.h"
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
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &st), 0);
    cr_expect_eq(st.blocks, 1, "crawler stats: %llu blocks", (unsigned long long)st.blocks);
    cr_expect_eq(stat(&e, 2), 3, "queued after the block");
    size_t n = claim_all(&e, NULL, NULL);
    cr_expect_eq(n, 3, "claimed %zu (notex.test, ex.test.org, other.test)", n);
    /* the claim told this handle the list */
    cr_expect(frontier_blocked(e.f, "http://deep.x.ex.test/a"));
    cr_expect(frontier_blocked(e.f, "https://ex.test/"));
    cr_expect_not(frontier_blocked(e.f, "http://notex.test/"));
    cr_expect_not(frontier_blocked(e.f, "http://ex.test.org/"));
    cr_expect(frontier_blocked(e.f, "http://a.ex.test./"), "a trailing dot is the same server");
    const char *dotted[] = {"http://b.ex.test./x", "https://ex.test./y"};
    cr_expect_eq(seed_urls(e.f, dotted, 2, 0), 0, "hosts with a trailing dot are blocked too");
    /* new links and seeds to it are refused, and left out of the visited set */
    const char *later[] = {"http://c.ex.test/7", "http://other.test/8"};
    cr_expect_eq(seed_urls(e.f, later, 2, 0), 1);
    cr_expect_eq(stat(&e, 1), 3, "links refused");
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
    /* at the cap, a block already there is taken (it keeps its time), and an
     * unblock of what is not blocked changes nothing */
    uint64_t since = 0;
    for (size_t i = 0; i < b.n; i++)
        if (!strcmp(b.v[i].name, "last.test"))
            since = b.v[i].since_ms;
    usleep(5000);
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, 1, 0, "last.test", &b, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(b.changed, 0);
    for (size_t i = 0; i < b.n; i++)
        if (!strcmp(b.v[i].name, "last.test"))
            cr_expect_eq(b.v[i].since_ms, since, "blocked again: its time changed");
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, -1, 1, "never.test", &b, NULL, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(b.changed, 0);
    cr_expect_eq(frontier_block(e.c, NULL, CRAWL, -1, 0, "last.test", &b, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(b.changed, 1);
    cr_expect_eq(b.n, FRONTIER_MAX_BLOCKS - 1);
    frontier_blocks_free(&b);
    env_stop(&e);
}

/* ---- on real crawler processes ------------------------------------------ */

/* Runs `crawler CMD --redis URL args...`, its stdout into out (may be
 * NULL); returns its exit status. */
static int run_cmd(fx_redis_t *r, const char *cmd, const char *out, char *const *args)
{
    char *argv[16] = {CRAWLER_BIN, (char *)cmd, "--redis", (char *)fx_redis_url(r)};
    int n = 4;
    for (; args && *args && n < 15; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    return fx_run(argv, out, NULL, 30000);
}

/* Requests to host h in the log (robots.txt too), and how many arrived
 * after after_ms (CLOCK_MONOTONIC, the fixture's clock); *late the latest
 * arrival. */
static size_t requests_to(const fx_http_req_t *log, size_t n, unsigned h, uint64_t after_ms,
                          size_t *after, uint64_t *late)
{
    size_t all = 0;
    *after = 0;
    *late = 0;
    for (size_t k = 0; k < n; k++) {
        if (log[k].host != h)
            continue;
        all++;
        uint64_t ms = log[k].arrived_us / 1000;
        *after += ms > after_ms;
        *late = ms > *late ? ms : *late;
    }
    return all;
}

/* `crawler block --domain` on a public suffix blocks every host under it,
 * as it says (a note on stderr); on a registered domain it says nothing. */
Test(block, a_public_suffix_block_says_it_blocks_every_host_under_it, .timeout = 60)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    char *dir = fx_tmpdir(), seeds[600], err[600];
    cr_assert_not_null(dir);
    snprintf(seeds, sizeof seeds, "%s/seeds.txt", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    cr_assert_eq(fx_write_file(seeds, "http://www.example.co.uk/\n"), 0);
    char *seed[] = {seeds, "--crawl", "ps", NULL};
    cr_assert_eq(run_cmd(r, "seed", NULL, seed), 0);
    static const struct {
        const char *domain;
        int note;
    } cases[] = {{"co.uk", 1}, {"example.co.uk", 0}, {"com", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[] = {CRAWLER_BIN, "block", "--redis",  (char *)fx_redis_url(r),
                        "--crawl",   "ps",    "--domain", (char *)cases[i].domain,
                        NULL};
        cr_assert_eq(fx_run(argv, NULL, err, 30000), 0, "crawler block --domain %s",
                     cases[i].domain);
        char *text = fx_read_file(err, NULL);
        int said = text && strstr(text, "is a public suffix") != NULL;
        cr_expect_eq(said, cases[i].note, "--domain %s: stderr: %s", cases[i].domain,
                     text ? text : "");
        free(text);
    }
    fx_rmtree(dir);
    free(dir);
    fx_redis_stop(r);
}

/* 8 hosts of 32 pages, two processes at --delay 100: once host 3 has had
 * a few requests, `crawler block --host` it; the crawl goes on to its end. */
Test(block, no_request_reaches_a_blocked_host_5s_after_the_command_and_the_crawl_ends,
     .timeout = 180)
{
    site_t s = {.hosts = 8, .pages = 32, .delay_ms = 20, .slow = -1};
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    site_serve(&s, site_page);
    char *dir = fx_tmpdir(), seeds[600], out[600], host[64];
    cr_assert_not_null(dir);
    site_seeds(&s, dir, seeds, sizeof seeds);
    cr_assert_eq(sscanf(fx_http_host_base(s.h, 3), "http://%63[^:/]", host), 1);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        char log[600];
        char *argv[] = {CRAWLER_BIN, "crawl",         "--redis", (char *)fx_redis_url(r),
                        "--seeds",   seeds,           "--quiet", "--delay",
                        "100",       "--concurrency", "16",      NULL};
        snprintf(log, sizeof log, "%s/log%d", dir, p);
        pid[p] = fx_spawn(argv, NULL, log);
        cr_assert(pid[p] > 0, "%s", fx_error());
    }
    fx_http_req_t *log = NULL;
    size_t n = 0, after = 0;
    uint64_t late = 0;
    for (int i = 0; i < 3000 && requests_to(log, n, 3, 0, &after, &late) < 4; i++) {
        free(log);
        usleep(10000);
        n = fx_http_log(s.h, &log);
    }
    free(log);
    uint64_t t0 = fx_now_ms();
    char *block_args[] = {"--host", host, NULL};
    cr_assert_eq(run_cmd(r, "block", NULL, block_args), 0);
    uint64_t t1 = fx_now_ms();
    for (int p = 0; p < 2; p++) {
        int rc = fx_wait(pid[p], 150000);
        cr_expect_eq(rc, 0, "crawler %d exited %d", p, rc);
    }
    n = fx_http_log(s.h, &log);
    size_t to3 = requests_to(log, n, 3, t0 + 5000, &after, &late);
    cr_expect_eq(after, 0, "%zu requests reached the blocked host more than 5 s after the command",
                 after);
    size_t after_return;
    requests_to(log, n, 3, t1, &after_return, &late);
    fprintf(stderr,
            "block: %zu requests to the blocked host, %zu after the command returned (it took "
            "%llu ms); the last %lld ms after it began\n",
            to3, after_return, (unsigned long long)(t1 - t0), (long long)late - (long long)t0);
    /* every page of the other hosts once; the blocked host's, none twice */
    unsigned(*hits)[MAX_PAGES] = calloc(s.hosts, sizeof *hits);
    cr_assert_not_null(hits);
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        if (page_of(&s, &log[k], &h, &i) == 0)
            cr_expect_eq(++hits[h][i], 1, "/h%u/p/%u requested twice", h, i);
    }
    for (unsigned h = 0; h < s.hosts; h++)
        for (unsigned i = 0; h != 3 && i < s.pages; i++)
            cr_expect_eq(hits[h][i], 1, "/h%u/p/%u requested %u times", h, i, hits[h][i]);
    free(hits);
    free(log);
    /* counted: dropped or refused; listed by `crawler limits` */
    redisContext *c = fx_redis_connect(r);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_gt(st.blocked + st.blocked_links, 0);
    cr_expect_eq(st.queued + st.in_flight, 0);
    fprintf(stderr, "block: queued URLs dropped %llu, links refused %llu\n",
            (unsigned long long)st.blocked, (unsigned long long)st.blocked_links);
    redisFree(c);
    snprintf(out, sizeof out, "%s/limits.txt", dir);
    cr_assert_eq(run_cmd(r, "limits", out, NULL), 0);
    char *text = fx_read_file(out, NULL), want[128];
    snprintf(want, sizeof want, "blocked host %s at", host);
    cr_expect(text && strstr(text, want), "crawler limits said: %s", text ? text : "(nothing)");
    free(text);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(s.h);
    fx_redis_stop(r);
}

/* On a crawl of 4 shards (one redis-server): the block is in every shard,
 * the sweep drops the blocked domain's queues in its shard, and links to it
 * from pages of any shard are refused. */
Test(block, on_a_sharded_crawl_every_shard_drops_and_refuses)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    frontier_config_t cfg = test_config();
    cfg.shards = 4;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    char err[256] = "";
    frontier_t *f = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    char seeds_s[16][64];
    const char *seeds[16];
    for (int i = 0; i < 16; i++) {
        if (i < 12)
            snprintf(seeds_s[i], sizeof seeds_s[i], "http://www.site%d.test/", i);
        else
            snprintf(seeds_s[i], sizeof seeds_s[i], "http://h%d.ex.test/", i);
        seeds[i] = seeds_s[i];
    }
    cr_assert_eq(seed_urls(f, seeds, 16, 0), 16);
    frontier_blocks_t b = {0};
    uint64_t dropped = 0;
    cr_assert_eq(frontier_block(c, NULL, CRAWL, 1, 1, "ex.test", &b, &dropped, err, sizeof err), 0,
                 "%s", err);
    frontier_blocks_free(&b);
    cr_expect_eq(dropped, 4);
    frontier_item_t items[16];
    size_t n = 0, pages = 0;
    for (int round = 0; round < 20 && pages < 12; round++) {
        if (claim_wait(f, 16, items, &n) != FRONTIER_READY)
            break;
        for (size_t i = 0; i < n; i++) {
            cr_expect_null(strstr(items[i].url, "ex.test"), "claimed %s", items[i].url);
            const char *links[1] = {"http://new.ex.test/"};
            finish_one(f, &items[i], links, 1, NULL, 0);
            cr_expect(frontier_blocked(f, "http://new.ex.test/"));
            frontier_item_clear(&items[i]);
            pages++;
        }
    }
    cr_expect_eq(pages, 12);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(c, CRAWL, &s), 0);
    cr_expect_eq(s.blocked, 4);
    cr_expect_eq(s.blocked_links, 12, "blocked_links %llu", (unsigned long long)s.blocked_links);
    cr_expect_eq(s.new_links, 0);
    side_check(c, f, cfg.per_host);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}

/* On a 3-master Redis Cluster, a crawl of 3 shards, `crawler block` sent
 * to any node: no request reaches the blocked host, every other page is
 * fetched once. */
Test(block, on_a_redis_cluster_the_block_reaches_every_shard, .timeout = 180)
{
    fx_cluster_t *cl = fx_cluster_start(3, 0, 1000);
    cr_assert_not_null(cl, "cannot start a Redis Cluster: %s", fx_error());
    site_t s = {.hosts = 6, .pages = 8, .slow = -1};
    site_serve(&s, site_page);
    char *dir = fx_tmpdir(), seeds[600], host[64], log[600];
    cr_assert_not_null(dir);
    snprintf(log, sizeof log, "%s/log", dir);
    site_seeds(&s, dir, seeds, sizeof seeds);
    cr_assert_eq(sscanf(fx_http_host_base(s.h, 3), "http://%63[^:/]", host), 1);
    const char *url = fx_cluster_url(cl, 1);
    char *seed[] = {CRAWLER_BIN, "seed", seeds,      "--redis", (char *)url,
                    "--crawl",   "clb",  "--shards", "3",       NULL};
    cr_assert_eq(fx_run(seed, NULL, log, 30000), 0, "crawler seed failed on the cluster");
    char *blk[] = {CRAWLER_BIN, "block", "--redis", (char *)fx_cluster_url(cl, 2), "--crawl", "clb",
                   "--host",    host,    NULL};
    cr_assert_eq(fx_run(blk, NULL, log, 30000), 0, "crawler block failed on the cluster");
    char *crawl[] = {CRAWLER_BIN, "crawl",   "--redis", (char *)url, "--crawl",
                     "clb",       "--quiet", "--delay", "0",         NULL};
    int rc = fx_run(crawl, NULL, log, 120000);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawler crawl exited %d: %.2000s", rc, err ? err : "");
    free(err);
    fx_http_req_t *rq;
    size_t n = fx_http_log(s.h, &rq);
    unsigned(*hits)[MAX_PAGES] = calloc(s.hosts, sizeof *hits);
    cr_assert_not_null(hits);
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        cr_expect_neq(rq[k].host, 3, "%s reached the blocked host", rq[k].path);
        if (page_of(&s, &rq[k], &h, &i) == 0)
            hits[h][i]++;
    }
    for (unsigned h = 0; h < s.hosts; h++)
        for (unsigned i = 0; h != 3 && i < s.pages; i++)
            cr_expect_eq(hits[h][i], 1, "/h%u/p/%u requested %u times", h, i, hits[h][i]);
    free(hits);
    free(rq);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(s.h);
    fx_cluster_stop(cl);
}
