/* Which hosts the scripts put back into the ready set, against a real
 * redis-server.  To spend fewer calls per host, an enqueue wakes only hosts
 * whose queue was empty, an acknowledgement only hosts it brought below
 * per_host (or to nothing in flight), and frontier_seed groups its URLs by
 * host before it cuts them into scripts.  These check that no host is ever
 * over-claimed or left parked with URLs queued, and that the grouping
 * saves the pushes it is for. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "side.h"

#define CRAWL "wake"

static void seed1(frontier_t *f, const char *url)
{
    size_t added = 0;
    cr_assert_eq(frontier_seed(f, &url, 1, 0, &added), 0);
    cr_assert_eq(added, 1, "%s not added", url);
}

static void finish1(frontier_t *f, frontier_item_t *it)
{
    frontier_done_t d = {.item = it, .outcome = {.status = 200, .bytes = 1}};
    int rc = frontier_finish(f, &d, 1);
    cr_assert_eq(rc, 0, "frontier_finish: %s", crawl_strerror(rc));
    frontier_item_clear(it);
}

/* The crawl is over: a claim gets nothing and says DONE. */
static void expect_done(frontier_t *f)
{
    frontier_item_t it[1];
    frontier_state_t st;
    size_t n = 9;
    cr_assert_eq(frontier_claim(f, 1, it, &n, &st, NULL), 0);
    cr_expect_eq(n, 0);
    cr_expect_eq(st, FRONTIER_DONE, "the crawl did not end");
}

static long long zscore_exists(redisContext *c, const char *host)
{
    redisReply *r = redisCommand(c, "ZSCORE crawler:{" CRAWL "}:ready %s", host);
    cr_assert(r && r->type != REDIS_REPLY_ERROR);
    long long in = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    return in;
}

/* 3,000 URLs over 7 hosts, interleaved, in one call: 12 scripts of 256.
 * Grouped by host, each script pushes to one or two hosts (at most 12 + 7
 * pushes in all, + 7 that move a host's first packed entries into its list,
 * + 1 of the new hosts into P fresh); cut in input order, each would push
 * to all 7 (84). */
Test(wake, seeding_groups_by_host_before_cutting_scripts)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 100000);
    enum { N = 3000, HOSTS = 7 };
    static char buf[N][64];
    static const char *urls[N];
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "http://h%d.test/p%d", i % HOSTS, i);
        urls[i] = buf[i];
    }
    side_reset_stats(a.c);
    side_seed_all(a.f, urls, N);
    long long pushes = side_calls(a.c, "rpush");
    cr_expect_leq(pushes, 12 + 2 * HOSTS + 1, "%lld RPUSH calls for 12 scripts", pushes);
    cr_expect_geq(pushes, HOSTS);

    /* every URL is queued once, under its own host */
    static frontier_item_t items[N];
    static char once[N];
    size_t got = 0;
    for (int round = 0; round < 10 && got < N; round++)
        got += side_claim(a.f, items + got, N - got < 1000 ? N - got : 1000);
    cr_assert_eq(got, N, "claimed %zu of %d", got, N);
    for (size_t i = 0; i < got; i++) {
        int h = -1, p = -1;
        cr_assert_eq(sscanf(items[i].url, "http://h%d.test/p%d", &h, &p), 2, "%s", items[i].url);
        cr_assert(p >= 0 && p < N && h == p % HOSTS, "%s", items[i].url);
        cr_expect_eq(once[p], 0, "%s claimed twice", items[i].url);
        once[p] = 1;
        frontier_item_clear(&items[i]);
    }
    side_check(a.c, a.f, 100000);
    side_close(&a);
    fx_redis_stop(r);
}

Test(wake, a_host_at_per_host_is_not_woken_by_an_enqueue_and_is_by_its_ack)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 1);
    const char *host = "http://one.test";
    frontier_item_t it[4] = {0};

    /* queue empty when the second URL arrives, one in flight: seeding may
     * wake it (it does not know the claimers' per_host), a claim may not
     * take it and parks it again */
    seed1(a.f, "http://one.test/1");
    cr_assert_eq(side_claim(a.f, it, 4), 1);
    seed1(a.f, "http://one.test/2");
    cr_expect_eq(side_claim(a.f, it + 1, 4), 0, "a second URL of the host was claimed");
    cr_expect_eq(zscore_exists(a.c, host), 0, "ready with per_host URLs in flight");

    /* queue non-empty when the third arrives: not woken at all */
    seed1(a.f, "http://one.test/3");
    cr_expect_eq(zscore_exists(a.c, host), 0, "woken with its queue already non-empty");
    cr_expect_eq(side_claim(a.f, it + 1, 4), 0);

    /* the ack brings it below per_host: ready again, one at a time */
    finish1(a.f, &it[0]);
    cr_expect_eq(zscore_exists(a.c, host), 1, "not woken by its ack");
    cr_assert_eq(side_claim(a.f, it, 4), 1);
    cr_expect_str_eq(it[0].url, "http://one.test/2");
    finish1(a.f, &it[0]);
    cr_assert_eq(side_claim(a.f, it, 4), 1);
    cr_expect_str_eq(it[0].url, "http://one.test/3");
    finish1(a.f, &it[0]);
    cr_expect_eq(zscore_exists(a.c, host), 0, "ready with an empty queue");
    side_check(a.c, a.f, 1);
    side_close(&a);
    fx_redis_stop(r);
}

/* A worker with per_host 2 parks the host (2 in flight); a worker with
 * per_host 5 finishes both pages: the first ack (2 -> 1, below 5 before and
 * after) need not wake it, the last (-> 0) must. */
Test(wake, a_host_parked_by_a_smaller_per_host_is_woken_once_it_drains)
{
    fx_redis_t *r = side_redis();
    side_t small, big;
    side_open(&small, r, CRAWL, NULL, 2);
    side_open(&big, r, CRAWL, NULL, 5);
    const char *urls[3] = {"http://two.test/a", "http://two.test/b", "http://two.test/c"};
    size_t added = 0;
    cr_assert_eq(frontier_seed(small.f, urls, 3, 0, &added), 0);
    cr_assert_eq(added, 3);
    frontier_item_t it[4] = {0};
    cr_assert_eq(side_claim(small.f, it, 4), 2);
    cr_expect_eq(zscore_exists(small.c, "http://two.test"), 0, "still ready at per_host 2");
    finish1(big.f, &it[0]);
    finish1(big.f, &it[1]);
    cr_expect_eq(zscore_exists(small.c, "http://two.test"), 1, "left parked with a URL queued");
    cr_assert_eq(side_claim(small.f, it, 4), 1);
    cr_expect_str_eq(it[0].url, "http://two.test/c");
    finish1(small.f, &it[0]);
    expect_done(small.f);
    side_check(big.c, big.f, 0);
    side_close(&big);
    side_close(&small);
    fx_redis_stop(r);
}

/* A claim of many URLs makes the lease hash a hash table (a listpack of
 * hundreds of fields is searched linearly by every ack) without leaving
 * anything but the leases in it. */
Test(wake, a_big_claim_leaves_only_its_leases_in_a_hash_table)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 100000);
    enum { N = 40 };
    char buf[N][48];
    const char *urls[N];
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "http://big.test/%d", i);
        urls[i] = buf[i];
    }
    side_seed_all(a.f, urls, N);
    frontier_item_t it[N] = {0};
    cr_assert_eq(side_claim(a.f, it, 30), 30);
    char key[128];
    snprintf(key, sizeof key, "crawler:{" CRAWL "}:lease:%s", frontier_worker_id(a.f));
    redisReply *e = redisCommand(a.c, "OBJECT ENCODING %s", key);
    cr_assert(e && e->type == REDIS_REPLY_STRING, "no lease hash");
    cr_expect_str_eq(e->str, "hashtable");
    freeReplyObject(e);
    redisReply *h = redisCommand(a.c, "HLEN %s", key);
    cr_assert(h && h->type == REDIS_REPLY_INTEGER);
    cr_expect_eq(h->integer, 30, "lease hash holds %lld fields", h->integer);
    freeReplyObject(h);
    for (int i = 0; i < 30; i++)
        finish1(a.f, &it[i]);
    cr_assert_eq(side_claim(a.f, it, 30), N - 30);
    for (int i = 0; i < N - 30; i++)
        finish1(a.f, &it[i]);
    expect_done(a.f);
    redisReply *x = redisCommand(a.c, "EXISTS %s", key);
    cr_assert(x && x->type == REDIS_REPLY_INTEGER);
    cr_expect_eq(x->integer, 0, "lease hash left behind");
    freeReplyObject(x);
    side_check(a.c, a.f, 100000);
    side_close(&a);
    fx_redis_stop(r);
}

/* A claim fetches ready hosts in rounds sized by what a host is expected to
 * give (per_host, capped at 8; then what the last round's hosts gave), not
 * max hosts at once: 60 hosts of 10 URLs and 300 hosts of 1 URL, per_host
 * 100.  Every claim of 200 still gets 200 URLs, each URL exactly once, and
 * a claim never needs more than a few rounds. */
Test(wake, a_claim_fills_its_batch_from_hosts_of_any_size)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 100);
    enum { BIG = 60, PER = 10, SMALL = 300, N = BIG * PER + SMALL };
    static char buf[N][64];
    static const char *urls[N];
    for (int i = 0; i < N; i++) {
        if (i < BIG * PER)
            snprintf(buf[i], sizeof buf[i], "http://b%d.test/p%d", i / PER, i);
        else
            snprintf(buf[i], sizeof buf[i], "http://s%d.test/p%d", i - BIG * PER, i);
        urls[i] = buf[i];
    }
    side_seed_all(a.f, urls, N);
    static frontier_item_t items[N];
    static char once[N];
    size_t got = 0;
    side_reset_stats(a.c);
    int claims = 0;
    for (; got < N; claims++) {
        size_t want = N - got < 200 ? N - got : 200;
        size_t n = side_claim(a.f, items + got, want);
        cr_assert_eq(n, want, "claim %zu: %zu of %zu URLs", got / 200, n, want);
        got += n;
    }
    /* per claim: one ZRANGEBYSCORE for expired workers, one for due retries,
     * one per round of hosts (2 or 3 here: the hosts' scores interleave them) */
    long long zr = side_calls(a.c, "zrangebyscore");
    cr_expect_leq(zr, (2 + 4) * claims, "%lld ZRANGEBYSCORE for %d claims", zr, claims);
    for (size_t i = 0; i < got; i++) {
        int p = -1;
        const char *q = strrchr(items[i].url, 'p');
        cr_assert(q && sscanf(q, "p%d", &p) == 1 && p >= 0 && p < N, "%s", items[i].url);
        cr_expect_eq(once[p], 0, "%s claimed twice", items[i].url);
        once[p] = 1;
    }
    for (size_t i = 0; i < got; i++)
        finish1(a.f, &items[i]);
    expect_done(a.f);
    side_check(a.c, a.f, 100);
    side_close(&a);
    fx_redis_stop(r);
}

/* ---- P fresh: hosts claimable now, not in ready (wake.lua: wake_new) ---- */

/* A handle with per_host 1, no delay, and retries due at once. */
static frontier_t *open_quick_retries(redisContext *c)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 1;
    cfg.backoff_ms = 1;
    cfg.backoff_max_ms = 1;
    cfg.max_tries = 5;
    cfg.bloom_capacity = 10000;
    cfg.bloom_fp_rate = 1e-6;
    char err[256] = "";
    frontier_t *f = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(f, "frontier_open: %s", err);
    return f;
}

static long long fresh_len(redisContext *c)
{
    redisReply *r = redisCommand(c, "LLEN crawler:{" CRAWL "}:fresh");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* A host can be in fresh and in ready at once: its failed URL waits as a
 * retry while a new link puts it in fresh, and the retry's promotion wakes
 * it into ready.  A claim then meets it twice and still takes per_host. */
Test(wake, a_host_in_fresh_and_in_ready_at_once_is_claimed_up_to_per_host)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    frontier_t *f = open_quick_retries(c);
    frontier_item_t it[4] = {0};
    seed1(f, "http://x.test/1");
    cr_expect_eq(fresh_len(c), 1, "a new host goes to fresh");
    cr_expect_eq(zscore_exists(c, "http://x.test"), 0);
    cr_assert_eq(side_claim(f, it, 4), 1);
    cr_expect_eq(fresh_len(c), 0, "taken off fresh by the claim");
    frontier_outcome_t o = {.status = 503};
    cr_assert_eq(frontier_retry(f, &it[0], &o, 0), 0, "%s", frontier_last_error(f));
    frontier_item_clear(&it[0]);
    seed1(f, "http://x.test/2"); /* queue empty, nothing in flight: fresh */
    cr_expect_eq(fresh_len(c), 1);
    usleep(20000); /* the retry is due */
    size_t n = side_claim(f, it, 4);
    cr_expect_eq(n, 1, "%zu URLs of a host of per_host 1 claimed", n);
    cr_expect_eq(fresh_len(c), 0, "the second sight of the host left in fresh");
    side_check(c, f, 1);
    cr_expect_eq(side_claim(f, it + 1, 3), 0, "claimed past per_host");
    for (size_t i = 0; i < n; i++)
        finish1(f, &it[i]);
    cr_assert_eq(side_claim(f, it, 4), 1, "the host's other URL");
    finish1(f, &it[0]);
    side_check(c, f, 1);
    expect_done(f);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}

/* A host in fresh whose next claim is ahead (a retry's backoff, a delay)
 * is not claimed early: the claim moves it into ready at its time. */
Test(wake, a_fresh_host_with_its_next_claim_ahead_waits_in_ready)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    frontier_t *f = open_quick_retries(c);
    seed1(f, "http://y.test/1");
    cr_assert_eq(fresh_len(c), 1);
    redisReply *t = redisCommand(c, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    long long at = atoll(t->element[0]->str) * 1000 + 60000;
    freeReplyObject(t);
    freeReplyObject(redisCommand(c, "HSET crawler:{" CRAWL "}:hnext http://y.test %lld", at));
    frontier_item_t it[2] = {0};
    cr_expect_eq(side_claim(f, it, 2), 0, "claimed before its next time");
    cr_expect_eq(fresh_len(c), 0);
    redisReply *z = redisCommand(c, "ZSCORE crawler:{" CRAWL "}:ready http://y.test");
    cr_assert(z && z->type == REDIS_REPLY_STRING, "not in ready");
    cr_expect_eq(atoll(z->str), at);
    freeReplyObject(z);
    side_check(c, f, 1);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}
