/*
 * test_cluster_shards.c -- a crawl of 16 shards (docs/sharding.md) on
 * a real local Redis Cluster (cluster_env.h), crawled by real crawler
 * processes pointed at different nodes, over a site of 24 loopback hosts
 * (hosts_site.h): a host's shard is its registered domain's, so the hosts
 * spread the crawl over the masters.  Verdicts: the HTTP fixture's log
 * (each page once, or at least once after a failover, whose asynchronous
 * replication may redo what the old master acknowledged), the records
 * written, and the keys each master holds.
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
#include "hosts_site.h"

#define SHARDS "16"

typedef struct env {
    fx_cluster_t *cl;
    site_t s;
    char *dir, seeds[512];
    const char *crawl;
    const char *max_pages; /* --max-pages of the crawlers, NULL: none */
} env_t;

static void env_start(env_t *e, int masters, int replicas, unsigned pages, unsigned delay_ms)
{
    memset(e, 0, sizeof *e);
    e->crawl = "default";
    e->cl = fx_cluster_start(masters, replicas, 1000);
    cr_assert_not_null(e->cl, "cannot start a Redis Cluster: %s", fx_error());
    e->s = (site_t){.hosts = 24, .pages = pages, .delay_ms = delay_ms, .slow = -1};
    e->s.h = fx_http_start_hosts(e->s.hosts);
    cr_assert_not_null(e->s.h, "cannot start the HTTP fixture: %s", fx_error());
    fx_http_set_handler(e->s.h, site_page, &e->s);
    fx_http_set(e->s.h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain", .body = "User-agent: *\nAllow: /\n"});
    e->dir = fx_tmpdir();
    cr_assert_not_null(e->dir);
    snprintf(e->seeds, sizeof e->seeds, "%s/seeds.txt", e->dir);
    FILE *f = fopen(e->seeds, "w");
    cr_assert_not_null(f);
    for (unsigned h = 0; h < e->s.hosts; h++) /* every host a seed host: --scope host */
        fprintf(f, "%s/h%u/p/0\n", fx_http_host_base(e->s.h, h), h);
    cr_assert_eq(fclose(f), 0);
}

static void env_stop(env_t *e)
{
    fx_rmtree(e->dir);
    free(e->dir);
    fx_http_stop(e->s.h);
    fx_cluster_stop(e->cl);
}

static pid_t spawn_crawl(env_t *e, const char *url, int i)
{
    char out[600], log[600];
    snprintf(out, sizeof out, "%s/out%d.jsonl", e->dir, i);
    snprintf(log, sizeof log, "%s/log%d", e->dir, i);
    char *argv[] = {CRAWLER_BIN, "crawl",     "--redis",  (char *)url,
                    "--seeds",   e->seeds,    "--shards", SHARDS,
                    "--delay",   "0",         "--crawl",  (char *)e->crawl,
                    "--out",     out,         "--quiet",  "--per-host",
                    "2",         "--threads", "2",        "--redis-retry-max",
                    "60000",     NULL,        NULL,       NULL};
    if (e->max_pages) { /* the two places left at the end */
        argv[21] = "--max-pages";
        argv[22] = (char *)e->max_pages;
    }
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    return pid;
}

static void wait_crawl(env_t *e, pid_t pid, int i, unsigned timeout_ms, int *reconnected)
{
    int rc = fx_wait(pid, timeout_ms);
    char log[600];
    snprintf(log, sizeof log, "%s/log%d", e->dir, i);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawler %d exited %d: %.3000s", i, rc, err ? err : "");
    if (reconnected)
        *reconnected += err && strstr(err, "Redis is back");
    free(err);
}

/* Keys of the crawl (any shard) on node i. */
static long long crawl_keys_on(env_t *e, int i)
{
    char pat[128];
    snprintf(pat, sizeof pat, "crawler:{%s*", e->crawl);
    long long n = fx_cluster_count_keys(e->cl, i, pat);
    cr_assert_geq(n, 0, "%s", fx_error());
    return n;
}

/* Every page of the site has a record in one of the n outputs. */
static void expect_recorded(env_t *e, int n)
{
    size_t total = (size_t)e->s.hosts * e->s.pages, have = 0;
    unsigned char *seen = calloc(total, 1);
    cr_assert_not_null(seen);
    for (int i = 0; i < n; i++) {
        char out[600];
        snprintf(out, sizeof out, "%s/out%d.jsonl", e->dir, i);
        char *text = fx_read_file(out, NULL), *p = text;
        while (p && (p = strstr(p, "{\"url\":\"")) != NULL) {
            unsigned h, pg;
            p += 8;
            const char *path = strstr(p, "/h");
            if (path && sscanf(path, "/h%u/p/%u", &h, &pg) == 2 && h < e->s.hosts &&
                pg < e->s.pages && !seen[h * e->s.pages + pg]++)
                have++;
        }
        free(text);
    }
    cr_expect_eq(have, total, "%zu of %zu pages have a record", have, total);
    free(seen);
}

static int run_cmd(env_t *e, const char *url, char *const args[], char **out)
{
    char op[600], ep[600];
    snprintf(op, sizeof op, "%s/cmd.out", e->dir);
    snprintf(ep, sizeof ep, "%s/cmd.err", e->dir);
    char *argv[16] = {CRAWLER_BIN, args[0], "--redis", (char *)url};
    int n = 4;
    for (int i = 1; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int rc = fx_run(argv, op, ep, 60000);
    *out = fx_read_file(op, NULL);
    if (rc != 0) {
        char *err = fx_read_file(ep, NULL);
        cr_log_info("crawler %s exited %d: %s", args[0], rc, err ? err : "");
        free(err);
    }
    return rc;
}

/* Two crawlers pointed at two different masters: each page fetched once
 * (the server's log), every master holds a part of the crawl, stats through
 * any node sums the shards of all masters, reset deletes them all. */
Test(cluster_shards, sixteen_shards_on_three_masters_fetch_each_page_once, .timeout = 300)
{
    env_t e;
    env_start(&e, 3, 0, 12, 0);
    pid_t pid[2] = {spawn_crawl(&e, fx_cluster_url(e.cl, 0), 0),
                    spawn_crawl(&e, fx_cluster_url(e.cl, 1), 1)};
    for (int i = 0; i < 2; i++)
        wait_crawl(&e, pid[i], i, 180000, NULL);
    fx_http_req_t *log;
    size_t n = fx_http_log(e.s.h, &log);
    expect_each_page_once(&e.s, log, n);
    free(log);
    expect_recorded(&e, 2);
    long long keys[3], total = 0;
    for (int m = 0; m < 3; m++) {
        keys[m] = crawl_keys_on(&e, m);
        total += keys[m];
        cr_expect_gt(keys[m], 0, "master %d holds none of the crawl's keys", m);
    }
    cr_log_info("keys on the 3 masters: %lld %lld %lld", keys[0], keys[1], keys[2]);

    char *text = NULL;
    char *stats[] = {"stats", "--json", NULL};
    cr_expect_eq(run_cmd(&e, fx_cluster_url(e.cl, 2), stats, &text), 0);
    char want[64];
    snprintf(want, sizeof want, "\"fetched\": %u,", e.s.hosts * e.s.pages);
    cr_expect(text && strstr(text, "\"shards\": 16,") && strstr(text, want) &&
                  strstr(text, "\"queued\": 0,"),
              "stats through node 2: %s", text ? text : "(none)");
    free(text);
    char *reset[] = {"reset", "--crawl", "default", "--yes", NULL};
    cr_expect_eq(run_cmd(&e, fx_cluster_url(e.cl, 1), reset, &text), 0);
    snprintf(want, sizeof want, "deleted %lld keys of crawl default on 3 masters", total);
    cr_expect(text && strstr(text, want), "reset said %s, expected '%s'", text ? text : "(none)",
              want);
    free(text);
    for (int m = 0; m < 3; m++)
        cr_expect_eq(crawl_keys_on(&e, m), 0, "keys left on master %d after reset", m);
    env_stop(&e);
}

/* --max-pages 100 over 16 shards on 3 masters (frontier/quota.c), two
 * crawlers on two masters: at most 100 pages fetched (the server's log),
 * each once, no fewer than the grants' slack can leave stranded (100 /
 * (4 x 16): 1 a grant), and the crawl's counters admitted as many. */
Test(cluster_shards, a_page_limit_over_sixteen_shards_holds_on_three_masters, .timeout = 300)
{
    env_t e;
    env_start(&e, 3, 0, 12, 0);
    e.max_pages = "100";
    pid_t pid[2] = {spawn_crawl(&e, fx_cluster_url(e.cl, 0), 0),
                    spawn_crawl(&e, fx_cluster_url(e.cl, 1), 1)};
    for (int i = 0; i < 2; i++)
        wait_crawl(&e, pid[i], i, 180000, NULL);
    fx_http_req_t *log;
    size_t n = fx_http_log(e.s.h, &log), pages = count_pages_once(&e.s, log, n);
    free(log);
    cr_log_info("%zu pages fetched under --max-pages 100 over 16 shards", pages);
    cr_expect_leq(pages, 100, "%zu pages fetched past --max-pages 100", pages);
    cr_expect_geq(pages, 100 - 16, "%zu pages: more left stranded than the grants' slack", pages);
    char *text = NULL;
    char *stats[] = {"stats", "--json", NULL};
    cr_expect_eq(run_cmd(&e, fx_cluster_url(e.cl, 2), stats, &text), 0);
    char want[64];
    snprintf(want, sizeof want, "\"enqueued\": %zu,", pages);
    cr_expect(text && strstr(text, want), "stats: %s, expected %s", text ? text : "(none)", want);
    free(text);
    env_stop(&e);
}

/* 3 masters with a replica each; one master is SIGKILLed a third of the way
 * in.  Its replica takes over; the crawlers reconnect and finish: every page
 * has a record, and nothing is left queued, delayed or in flight. */
Test(cluster_shards, a_master_killed_mid_crawl_fails_over_and_nothing_is_lost, .timeout = 600)
{
    env_t e;
    env_start(&e, 3, 1, 10, 15);
    pid_t pid[2] = {spawn_crawl(&e, fx_cluster_url(e.cl, 0), 0),
                    spawn_crawl(&e, fx_cluster_url(e.cl, 2), 1)};
    size_t third = (size_t)e.s.hosts * e.s.pages / 3;
    uint64_t deadline = fx_now_ms() + 120000;
    while (fx_http_total(e.s.h) < third && fx_now_ms() < deadline)
        usleep(2000);
    cr_assert_geq(fx_http_total(e.s.h), third, "only %zu requests", fx_http_total(e.s.h));
    cr_assert_eq(fx_cluster_kill(e.cl, 1, SIGKILL), 0, "%s", fx_error());
    cr_assert_eq(fx_cluster_wait_master(e.cl, 3 + 1, 60000), 0, "%s", fx_error());
    int reconnected = 0;
    for (int i = 0; i < 2; i++)
        wait_crawl(&e, pid[i], i, 300000, &reconnected);
    cr_expect_gt(reconnected, 0, "no crawler reconnected after the failover");
    expect_recorded(&e, 2);
    fx_http_req_t *log;
    size_t n = fx_http_log(e.s.h, &log), dups = n;
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        dups -= page_of(&e.s, &log[k], &h, &i) != 0; /* robots.txt */
    }
    free(log);
    cr_log_info("failover: %zu page requests for %u pages", dups, e.s.hosts * e.s.pages);
    char *text = NULL;
    char *stats[] = {"stats", "--json", NULL};
    cr_expect_eq(run_cmd(&e, fx_cluster_url(e.cl, 0), stats, &text), 0);
    cr_expect(text && strstr(text, "\"queued\": 0,") && strstr(text, "\"in_flight\": 0,") &&
                  strstr(text, "\"delayed\": 0,"),
              "stats after the failover: %s", text ? text : "(none)");
    free(text);
    env_stop(&e);
}

/* A crawl name with a shard whose slot is among the first n of master m's
 * range (redis-cli --cluster reshard moves a source's lowest slots first). */
static int pick_crawl(fx_cluster_t *cl, int m, int n, char *name, size_t len)
{
    int first = fx_cluster_first_slot(cl, m);
    cr_assert_geq(first, 0, "%s", fx_error());
    for (int i = 0; i < 100000; i++) {
        snprintf(name, len, "r%d", i);
        for (int sh = 0; sh < 16; sh++) {
            char tag[64];
            int tl = sh ? snprintf(tag, sizeof tag, "{%s/%d}", name, sh)
                        : snprintf(tag, sizeof tag, "{%s}", name);
            int slot = rconn_key_slot(tag, (size_t)tl);
            if (slot >= first && slot < first + n)
                return slot;
        }
    }
    cr_assert_fail("no crawl name with a shard in slots %d..%d", first, first + n - 1);
    return -1;
}

/* Keys in one hash slot on node i. */
static long long keys_in_slot(env_t *e, int i, int slot)
{
    long long n = fx_cluster_keys_in_slot(e->cl, i, slot);
    cr_assert_geq(n, 0, "%s", fx_error());
    return n;
}

/* 32 slots of master 1, one a shard's, moved to master 2 with redis-cli
 * --cluster reshard while two crawlers run: every page fetched once, and
 * the shard's keys are on the new owner only. */
Test(cluster_shards, slots_of_a_shard_resharded_mid_crawl_lose_nothing_and_fetch_nothing_twice,
     .timeout = 600)
{
    fx_cluster_t *probe = fx_cluster_start(3, 0, 1000);
    cr_assert_not_null(probe, "%s", fx_error());
    static char name[32];
    int slot = pick_crawl(probe, 1, 32, name, sizeof name);
    fx_cluster_stop(probe);
    env_t e;
    env_start(&e, 3, 0, 10, 15);
    e.crawl = name;
    pid_t pid[2] = {spawn_crawl(&e, fx_cluster_url(e.cl, 0), 0),
                    spawn_crawl(&e, fx_cluster_url(e.cl, 2), 1)};
    size_t third = (size_t)e.s.hosts * e.s.pages / 3;
    uint64_t deadline = fx_now_ms() + 120000;
    while (fx_http_total(e.s.h) < third && fx_now_ms() < deadline)
        usleep(2000);
    char rlog[600];
    snprintf(rlog, sizeof rlog, "%s/reshard.log", e.dir);
    cr_assert_eq(fx_cluster_reshard(e.cl, 1, 2, 32, rlog), 0, "%s", fx_error());
    int reconnected = 0;
    for (int i = 0; i < 2; i++)
        wait_crawl(&e, pid[i], i, 300000, &reconnected);
    cr_expect_gt(reconnected, 0, "no crawler was sent to the shard's new owner");
    cr_expect_eq(fx_cluster_owner(e.cl, 0, slot), 2, "slot %d did not move", slot);
    cr_expect_eq(keys_in_slot(&e, 1, slot), 0, "the shard's keys left on the old owner");
    cr_expect_gt(keys_in_slot(&e, 2, slot), 0, "no key of the shard on its new owner");
    fx_http_req_t *log;
    size_t n = fx_http_log(e.s.h, &log);
    expect_each_page_once(&e.s, log, n);
    free(log);
    expect_recorded(&e, 2);
    env_stop(&e);
}
