/*
 * test_cluster_crawl.c -- real crawler processes on a real local Redis
 * Cluster (cluster_env.h): pointed at nodes that do not hold the crawl, a
 * master killed mid-crawl (its replica takes over), the crawl's slot moved
 * to another master mid-crawl with `redis-cli --cluster reshard`; and the
 * admin commands (stats, reset) on a cluster.  The verdict is what the HTTP
 * fixture saw and what the outputs and Redis hold afterwards.  The site is
 * tree_site.h's.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rconn.h"
#include "cluster_env.h"
#include "fixtures.h"
#include "tree_site.h"

#define PAGES 400 /* the site: /p/0 .. /p/399 */

static tree_site_t tree = {.pages = PAGES}; /* tree_site.h */

typedef struct env {
    fx_cluster_t *cl;
    fx_http_t *h;
    char *dir, seeds[512];
    char crawl[64];
    int slot;  /* the crawl's hash slot */
    int owner; /* the node that owns it at the start */
} env_t;

/* The hash slot of crawl's keys (their tag is the crawl name). */
static int crawl_slot(const char *crawl)
{
    char tag[80];
    int n = snprintf(tag, sizeof tag, "{%s}", crawl);
    return rconn_key_slot(tag, (size_t)n);
}

static void env_start(env_t *e, int masters, int replicas, const char *crawl, unsigned delay_ms)
{
    memset(e, 0, sizeof *e);
    e->cl = fx_cluster_start(masters, replicas, 1000);
    cr_assert_not_null(e->cl, "cannot start a Redis Cluster: %s", fx_error());
    e->h = fx_http_start();
    cr_assert_not_null(e->h, "%s", fx_error());
    tree.delay_ms = delay_ms;
    fx_http_set(e->h, "/robots.txt", &(fx_route_t){.status = 404, .body = "no"});
    fx_http_set_handler(e->h, tree_site_route, &tree);
    e->dir = fx_tmpdir();
    cr_assert_not_null(e->dir);
    char content[256];
    snprintf(content, sizeof content, "%s/p/0\n", fx_http_base(e->h));
    snprintf(e->seeds, sizeof e->seeds, "%s/seeds.txt", e->dir);
    cr_assert_eq(fx_write_file(e->seeds, content), 0);
    snprintf(e->crawl, sizeof e->crawl, "%s", crawl);
    e->slot = crawl_slot(crawl);
    e->owner = fx_cluster_owner(e->cl, 0, e->slot);
    cr_assert_geq(e->owner, 0, "%s", fx_error());
}

static void env_stop(env_t *e)
{
    fx_rmtree(e->dir);
    free(e->dir);
    fx_http_stop(e->h);
    fx_cluster_stop(e->cl);
}

/* A master other than the crawl's owner. */
static int other_master(const env_t *e, int masters)
{
    return (e->owner + 1) % masters;
}

/* Starts a crawler on e's crawl, --redis url, writing to out. */
static pid_t spawn_crawl(env_t *e, const char *url, const char *out, const char *log)
{
    char *argv[] = {
        CRAWLER_BIN, "crawl",      "--redis", (char *)url, "--seeds", e->seeds,
        "--crawl",   e->crawl,     "--delay", "0",         "--out",   (char *)out,
        "--quiet",   "--per-host", "4",       "--threads", "2",       "--redis-retry-max",
        "60000",     NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    return pid;
}

static void wait_requests(env_t *e, size_t n, unsigned timeout_ms)
{
    tree_wait_requests(e->h, n, timeout_ms);
}

static void mark_recorded(env_t *e, const char *path, unsigned char seen[PAGES])
{
    tree_mark_recorded(e->h, path, seen, PAGES);
}

/* Every page requested (recall 1.0, from the server's count); returns the
 * requests beyond the first of each page. */
static unsigned check_fetched(env_t *e)
{
    unsigned dups = 0;
    for (int i = 0; i < PAGES; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        unsigned h = fx_http_hits(e->h, path);
        cr_expect_geq(h, 1, "%s never requested", path);
        dups += h > 1 ? h - 1 : 0;
    }
    return dups;
}

/* Runs `crawler ARGS` with --redis url and --crawl e->crawl; its exit
 * status, stdout in *out (caller frees). */
static int run_cmd(env_t *e, const char *cmd, const char *url, const char *extra, char **out)
{
    char op[600], ep[600];
    snprintf(op, sizeof op, "%s/%s.out", e->dir, cmd);
    snprintf(ep, sizeof ep, "%s/%s.err", e->dir, cmd);
    char *argv[] = {CRAWLER_BIN, (char *)cmd, "--redis",     (char *)url,
                    "--crawl",   e->crawl,    (char *)extra, NULL};
    int rc = fx_run(argv, op, ep, 60000);
    *out = fx_read_file(op, NULL);
    if (rc != 0) {
        char *err = fx_read_file(ep, NULL);
        cr_log_info("crawler %s exited %d: %s", cmd, rc, err ? err : "");
        free(err);
    }
    return rc;
}

/* Keys whose name holds the crawl's tag, on node i. */
static long long crawl_keys_on(env_t *e, int i)
{
    long long n = fx_cluster_keys_in_slot(e->cl, i, e->slot);
    cr_assert_geq(n, 0, "%s", fx_error());
    return n;
}

/* Keys of the crawl on every node (all its shards: the crawler's default on
 * a cluster splits a crawl, docs/sharding.md). */
static long long all_crawl_keys(env_t *e)
{
    char pat[128];
    snprintf(pat, sizeof pat, "crawler:{%s*", e->crawl);
    long long n = 0;
    for (int i = 0; i < fx_cluster_nnodes(e->cl); i++) {
        long long k = fx_cluster_count_keys(e->cl, i, pat);
        cr_assert_geq(k, 0, "%s", fx_error());
        n += k;
    }
    return n;
}

/* Two crawlers, each pointed at nodes that do not own the crawl: one at one
 * other master, one at a list of two nodes.  Every page is fetched once;
 * stats and reset through a node that does not own the crawl work. */
Test(cluster_crawl, crawlers_pointed_at_other_nodes_fetch_every_page_once, .timeout = 300)
{
    env_t e;
    env_start(&e, 3, 0, "default", 0);
    int other = other_master(&e, 3), third = (other + 1) % 3;
    char list[256], out[2][600], log[2][600];
    snprintf(list, sizeof list, "%s,127.0.0.1:%d", fx_cluster_url(e.cl, other),
             fx_cluster_port(e.cl, third));
    const char *url[2] = {fx_cluster_url(e.cl, other), list};
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.jsonl", e.dir, i);
        snprintf(log[i], sizeof log[i], "%s/log%d", e.dir, i);
        pid[i] = spawn_crawl(&e, url[i], out[i], log[i]);
    }
    unsigned char seen[PAGES] = {0};
    for (int i = 0; i < 2; i++) {
        int rc = fx_wait(pid[i], 180000);
        char *err = fx_read_file(log[i], NULL);
        cr_expect_eq(rc, 0, "crawler %d (--redis %s) exited %d: %.3000s", i, url[i], rc,
                     err ? err : "");
        free(err);
        mark_recorded(&e, out[i], seen);
    }
    for (int i = 0; i < PAGES; i++)
        cr_expect(seen[i], "/p/%d has no record", i);
    unsigned dups = check_fetched(&e);
    cr_expect_eq(dups, 0, "%u duplicate fetches", dups);
    cr_expect_gt(crawl_keys_on(&e, e.owner), 0, "the crawl's keys are not on its slot's owner");

    char *text = NULL;
    cr_expect_eq(run_cmd(&e, "stats", url[0], "--json", &text), 0);
    cr_expect(text && strstr(text, "\"queued\": 0") && strstr(text, "\"fetched\": "),
              "stats through another node: %s", text ? text : "(none)");
    /* --redis once a node, the second one down: the first answers for the
     * cluster, the same crawl's figures (a second --redis that replaced the
     * first would find nothing) */
    char node[64], op[600], ep2[600];
    int down = fx_free_port();
    cr_assert_gt(down, 0, "%s", fx_error());
    snprintf(node, sizeof node, "redis://127.0.0.1:%d", down);
    snprintf(op, sizeof op, "%s/stats2.out", e.dir);
    snprintf(ep2, sizeof ep2, "%s/stats2.err", e.dir);
    char *twice[] = {CRAWLER_BIN, "stats",   "--redis", (char *)url[0], "--redis",
                     node,        "--crawl", e.crawl,   "--json",       NULL};
    cr_expect_eq(fx_run(twice, op, ep2, 60000), 0, "stats with --redis given twice failed");
    char *text2 = fx_read_file(op, NULL), *f1 = text ? strstr(text, "\"fetched\": ") : NULL;
    char *f2 = text2 ? strstr(text2, "\"fetched\": ") : NULL;
    cr_expect(f1 && f2 && strtoull(f1 + 11, NULL, 10) == strtoull(f2 + 11, NULL, 10) &&
                  strtoull(f1 + 11, NULL, 10) >= PAGES,
              "stats with --redis twice: %s", text2 ? text2 : "(none)");
    free(text2);
    free(text);
    long long before = all_crawl_keys(&e);
    cr_expect_eq(run_cmd(&e, "reset", url[0], "--yes", &text), 0);
    char want[128];
    snprintf(want, sizeof want, "deleted %lld keys of crawl %s on 3 masters", before, e.crawl);
    cr_expect(text && strstr(text, want), "reset said %s, expected '%s'", text ? text : "(none)",
              want);
    cr_expect_eq(all_crawl_keys(&e), 0, "keys left after reset");
    free(text);
    cr_expect_eq(run_cmd(&e, "stats", url[0], "--json", &text), 0); /* zeros, and a word why */
    free(text);
    char ep[600];
    snprintf(ep, sizeof ep, "%s/stats.err", e.dir);
    char *err = fx_read_file(ep, NULL);
    cr_expect(err && strstr(err, "has no keys"), "stats after reset said: %s", err ? err : "");
    free(err);
    env_stop(&e);
}

/* 3 masters with a replica each; the crawl's master is SIGKILLed a third of
 * the way in.  Its replica takes over; the crawlers reconnect to it and
 * finish: every page has a record and nothing is left queued or leased. */
Test(cluster_crawl, a_master_killed_mid_crawl_fails_over_and_nothing_is_lost, .timeout = 600)
{
    env_t e;
    env_start(&e, 3, 1, "default", 15);
    int other = other_master(&e, 3);
    char out[2][600], log[2][600];
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.jsonl", e.dir, i);
        snprintf(log[i], sizeof log[i], "%s/log%d", e.dir, i);
        pid[i] = spawn_crawl(&e, fx_cluster_url(e.cl, other), out[i], log[i]);
    }
    wait_requests(&e, PAGES / 3, 120000);
    cr_assert_eq(fx_cluster_kill(e.cl, e.owner, SIGKILL), 0, "%s", fx_error());
    int replica = 3 + e.owner; /* nodes 3.. are the replicas, one per master, in order */
    cr_assert_eq(fx_cluster_wait_master(e.cl, replica, 60000), 0, "%s", fx_error());
    unsigned char seen[PAGES] = {0};
    for (int i = 0; i < 2; i++) {
        int rc = fx_wait(pid[i], 300000);
        char *err = fx_read_file(log[i], NULL);
        cr_expect_eq(rc, 0, "crawler %d exited %d: %.3000s", i, rc, err ? err : "");
        cr_expect(err && strstr(err, "Redis is back"), "crawler %d did not reconnect: %.3000s", i,
                  err ? err : "");
        free(err);
        mark_recorded(&e, out[i], seen);
    }
    size_t missing = 0;
    for (int i = 0; i < PAGES; i++)
        missing += !seen[i];
    cr_expect_eq(missing, 0, "%zu of %d pages have no record", missing, PAGES);
    unsigned dups = check_fetched(&e);
    cr_log_info("failover: %u duplicate fetches (replication is asynchronous: what the old "
                "master acknowledged but had not sent to its replica is done again)",
                dups);
    char *text = NULL;
    cr_expect_eq(run_cmd(&e, "stats", fx_cluster_url(e.cl, other), "--json", &text), 0);
    cr_expect(text && strstr(text, "\"queued\": 0") && strstr(text, "\"in_flight\": 0") &&
                  strstr(text, "\"delayed\": 0"),
              "stats after the failover: %s", text ? text : "(none)");
    free(text);
    env_stop(&e);
}

/* A crawl name whose slot is among the first n slots of master m's range
 * (redis-cli --cluster reshard moves a source's lowest slots first). */
static void pick_crawl(fx_cluster_t *cl, int m, int n, char *name, size_t len)
{
    int first = fx_cluster_first_slot(cl, m);
    cr_assert_geq(first, 0, "%s", fx_error());
    for (int i = 0; i < 100000; i++) {
        snprintf(name, len, "r%d", i);
        int s = crawl_slot(name);
        if (s >= first && s < first + n)
            return;
    }
    cr_assert_fail("no crawl name in slots %d..%d", first, first + n - 1);
}

/* The crawl's slot (with 31 others) is moved from its master to another
 * with redis-cli --cluster reshard while two crawlers run: every page is
 * fetched once, and the keys end on the new owner. */
Test(cluster_crawl, the_crawls_slot_resharded_mid_crawl_loses_nothing_and_fetches_nothing_twice,
     .timeout = 600)
{
    fx_cluster_t *probe = fx_cluster_start(3, 0, 1000);
    cr_assert_not_null(probe, "%s", fx_error());
    char name[32];
    pick_crawl(probe, 1, 32, name, sizeof name);
    fx_cluster_stop(probe);
    env_t e;
    env_start(&e, 3, 0, name, 15);
    cr_assert_eq(e.owner, 1, "crawl %s (slot %d) is on node %d", name, e.slot, e.owner);
    char out[2][600], log[2][600];
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.jsonl", e.dir, i);
        snprintf(log[i], sizeof log[i], "%s/log%d", e.dir, i);
        pid[i] = spawn_crawl(&e, fx_cluster_url(e.cl, 0), out[i], log[i]);
    }
    wait_requests(&e, PAGES / 3, 120000);
    char rlog[600];
    snprintf(rlog, sizeof rlog, "%s/reshard.log", e.dir);
    cr_assert_eq(fx_cluster_reshard(e.cl, 1, 2, 32, rlog), 0, "%s", fx_error());
    cr_expect_eq(fx_cluster_owner(e.cl, 0, e.slot), 2, "slot %d did not move", e.slot);
    unsigned char seen[PAGES] = {0};
    int redirected = 0;
    for (int i = 0; i < 2; i++) {
        int rc = fx_wait(pid[i], 300000);
        char *err = fx_read_file(log[i], NULL);
        cr_expect_eq(rc, 0, "crawler %d exited %d: %.3000s", i, rc, err ? err : "");
        redirected += err && strstr(err, "Redis is back");
        free(err);
        mark_recorded(&e, out[i], seen);
    }
    cr_expect_gt(redirected, 0, "no crawler was sent to the new owner (the move was not seen)");
    size_t missing = 0;
    for (int i = 0; i < PAGES; i++)
        missing += !seen[i];
    cr_expect_eq(missing, 0, "%zu of %d pages have no record", missing, PAGES);
    unsigned dups = check_fetched(&e);
    cr_expect_eq(dups, 0, "%u duplicate fetches", dups);
    cr_expect_eq(crawl_keys_on(&e, 1), 0, "keys left on the old owner");
    cr_expect_gt(crawl_keys_on(&e, 2), 0, "no keys on the new owner");
    env_stop(&e);
}

/* What a user gets wrong on a cluster is said plainly: a Bloom filter name
 * without a hash tag (its blocks would span slots) is refused before
 * anything is written; a node list that mixes in a plain Redis is refused in
 * either order; a cluster that wants a password and is given none says so,
 * and with the password it answers. */
Test(cluster_crawl, a_filter_without_a_hash_tag_and_a_missing_password_are_named, .timeout = 120)
{
    env_t e;
    env_start(&e, 3, 0, "default", 0);
    char urls[600], op[600], ep[600];
    snprintf(urls, sizeof urls, "%s/urls.txt", e.dir);
    snprintf(op, sizeof op, "%s/bloom.out", e.dir);
    snprintf(ep, sizeof ep, "%s/bloom.err", e.dir);
    cr_assert_eq(fx_write_file(urls, "http://a.test/\nhttp://b.test/\n"), 0);
    const char *url = fx_cluster_url(e.cl, 1);
    char *sh[] = {"/bin/sh", "-c", NULL, NULL};
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec '%s' bloom add --redis %s --name urls < '%s'", CRAWLER_BIN, url,
             urls);
    sh[2] = cmd;
    int rc = fx_run(sh, op, ep, 60000);
    char *err = fx_read_file(ep, NULL);
    cr_expect_eq(rc, 2, "bloom without a tag exited %d", rc);
    cr_expect(err && strstr(err, "hash tag") && strstr(err, "--name '{urls}'"), "%s",
              err ? err : "");
    free(err);
    snprintf(cmd, sizeof cmd, "exec '%s' bloom add --redis %s --name '{urls}' < '%s'", CRAWLER_BIN,
             url, urls);
    cr_expect_eq(fx_run(sh, op, ep, 60000), 0, "bloom with a tag");
    char *out = fx_read_file(op, NULL);
    cr_expect(out && strstr(out, "new http://a.test/") && strstr(out, "new http://b.test/"), "%s",
              out ? out : "");
    free(out);
    fx_redis_t *plain = fx_redis_start(); /* a plain Redis in the node list, either place */
    cr_assert_not_null(plain, "%s", fx_error());
    for (int first = 0; first < 2; first++) {
        char list[256];
        snprintf(list, sizeof list, "redis://127.0.0.1:%d,127.0.0.1:%d",
                 first ? fx_redis_port(plain) : fx_cluster_port(e.cl, 1),
                 first ? fx_cluster_port(e.cl, 1) : fx_redis_port(plain));
        char *text = NULL;
        cr_expect_eq(run_cmd(&e, "stats", list, "--json", &text), 1, "--redis %s", list);
        free(text);
        snprintf(ep, sizeof ep, "%s/stats.err", e.dir);
        err = fx_read_file(ep, NULL);
        cr_expect(err && strstr(err, "not") && strstr(err, "Redis Cluster"), "--redis %s: %s", list,
                  err ? err : "");
        free(err);
    }
    fx_redis_stop(plain);
    for (int i = 0; i < 3; i++) {
        redisContext *c = fx_cluster_connect(e.cl, i);
        cr_assert_not_null(c, "%s", fx_error());
        redisReply *r = redisCommand(c, "CONFIG SET requirepass s3cret");
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        redisFree(c);
    }
    char *text = NULL;
    snprintf(ep, sizeof ep, "%s/stats.err", e.dir);
    cr_expect_eq(run_cmd(&e, "stats", url, "--json", &text), 1);
    free(text);
    err = fx_read_file(ep, NULL);
    cr_expect(err && strstr(err, "wants a password"), "%s", err ? err : "");
    free(err);
    char pw[128];
    snprintf(pw, sizeof pw, "redis://:s3cret@127.0.0.1:%d", fx_cluster_port(e.cl, 1));
    cr_expect_eq(run_cmd(&e, "stats", pw, "--json", &text), 0);
    cr_expect(text && strstr(text, "\"queued\": 0"), "%s", text ? text : "");
    free(text);
    env_stop(&e);
}
