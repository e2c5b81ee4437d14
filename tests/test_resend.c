/* The calls a link sends again after a lost reply (rconn.h:
 * RCONN_CALL_RESEND) change nothing twice, against a real redis-server
 * behind a proxy that loses replies (fx_proxy_*): Redis runs the call, its
 * reply is dropped and the connection cut, the handle's link connects
 * again and sends the call again, which runs a second time.  A finish, a
 * retry, a hand-back and a finish's offer to another shard: each counted,
 * queued and acknowledged once (the frontier's counters, its queues, its
 * invariant checker). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "side.h"

typedef struct resend {
    fx_redis_t *r;
    fx_proxy_t *p;
    rconn_t *rp;     /* the Redis behind the proxy */
    redisContext *c; /* straight to the server: the test's checks */
    frontier_t *f;   /* through the proxy */
} resend_t;

static void rs_open(resend_t *t, const char *crawl, unsigned shards)
{
    char url[64], err[256] = "";
    t->r = side_redis();
    t->p = fx_proxy_start(fx_redis_port(t->r));
    cr_assert_not_null(t->p, "%s", fx_error());
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fx_proxy_port(t->p));
    t->rp = rconn_open_url(url, NULL, NULL, err, sizeof err);
    cr_assert_not_null(t->rp, "%s", err);
    t->c = fx_redis_connect(t->r);
    cr_assert_not_null(t->c, "%s", fx_error());
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = crawl;
    cfg.delay_ms = 0;
    cfg.per_host = 100;
    cfg.shards = shards;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    cfg.bloom_cache_bytes = SIZE_MAX; /* every link to Redis: what it counts is the check */
    t->f = fr_open_on(t->rp, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(t->f, "frontier_open: %s", err);
}

static void rs_close(resend_t *t, uint32_t per_host)
{
    side_check(t->c, t->f, per_host);
    fr_close(t->f);
    rconn_close(t->rp);
    redisFree(t->c);
    fx_proxy_stop(t->p);
    fx_redis_stop(t->r);
}

/* FCALLs the server ran so far (INFO commandstats). */
static long long fcalls(redisContext *c)
{
    return side_calls(c, "fcall");
}

/* Starts nothing: the caller has just started call c with the proxy
 * swallowing.  Waits until the server ran `ran` more FCALLs than before
 * (the call's commands), cuts the connection, sees the link go down with
 * the call kept, connects again (the call sent again: it runs a second
 * time) and returns the call's outcome. */
static int run_twice(resend_t *t, frontier_call_t *c, long long before, long long ran)
{
    for (int i = 0; i < 5000 && fcalls(t->c) < before + ran; i++) /* a bound, not a verdict */
        usleep(1000);
    cr_assert_geq(fcalls(t->c), before + ran, "the call never ran");
    cr_assert_gt(fx_proxy_swallowed(t->p), 0, "no reply was swallowed");
    cr_assert_eq(fx_proxy_cut(t->p), 0, "%s", fx_error());
    rconn_link_t *l = fr_link_of(t->f);
    int down = 0;
    for (int i = 0; i < 5000 && !down; i++)
        if (!(down = rconn_link_poll(l) < 0))
            usleep(1000);
    cr_assert(down, "the link did not see its connection cut");
    cr_assert_eq(frontier_call_ready(t->f, c), 0, "a call that may run twice was ended");
    cr_assert_eq(rconn_link_connect(l, 0), 0, "%s", rconn_link_error(l));
    int rc = frontier_call_end(t->f, c);
    cr_assert_geq(fcalls(t->c), before + 2 * ran, "the call was not sent again");
    return rc;
}

static long long stat_of(resend_t *t, const char *crawl, const char *field)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(t->c, crawl, &s), 0);
    if (!strcmp(field, "fetched"))
        return (long long)s.fetched;
    if (!strcmp(field, "enqueued"))
        return (long long)s.enqueued;
    if (!strcmp(field, "new_links"))
        return (long long)s.new_links;
    if (!strcmp(field, "seen_links"))
        return (long long)s.seen_links;
    if (!strcmp(field, "queued"))
        return (long long)s.queued;
    if (!strcmp(field, "in_flight"))
        return (long long)s.in_flight;
    if (!strcmp(field, "bytes"))
        return (long long)s.bytes;
    if (!strcmp(field, "status_2xx"))
        return (long long)s.status_2xx;
    if (!strcmp(field, "retried"))
        return (long long)s.retried;
    if (!strcmp(field, "delayed"))
        return (long long)s.delayed;
    if (!strcmp(field, "released"))
        return (long long)s.released;
    cr_assert_fail("no field %s", field);
    return -1;
}

/* Seeds urls[0..n) and claims them all into it. */
static void seed_and_claim(resend_t *t, const char *const *urls, size_t n, frontier_item_t *it)
{
    side_seed_all(t->f, urls, n);
    size_t got = 0;
    for (int i = 0; i < 1000 && got < n; i++) {
        size_t k = side_claim(t->f, it + got, n - got);
        got += k;
        if (!k)
            usleep(1000);
    }
    cr_assert_eq(got, n, "claimed %zu of %zu", got, n);
}

Test(resend, a_finish_run_twice_counts_queues_and_acknowledges_its_pages_once)
{
    resend_t t;
    rs_open(&t, "rf", 1);
    const char *seeds[] = {"http://a.test/0", "http://a.test/1", "http://b.test/0",
                           "http://b.test/1"};
    frontier_item_t it[4];
    seed_and_claim(&t, seeds, 4, it);
    char fresh[4][64];
    const char *links[4][2];
    frontier_done_t pages[4];
    size_t nnew[4];
    for (int i = 0; i < 4; i++) { /* a new link and a seed (seen) each */
        snprintf(fresh[i], sizeof fresh[i], "http://c.test/%d", i);
        links[i][0] = fresh[i];
        links[i][1] = seeds[(i + 1) % 4];
        pages[i] = (frontier_done_t){.item = &it[i],
                                     .outcome = {.status = 200, .bytes = 100},
                                     .links = links[i],
                                     .nlinks = 2,
                                     .link_depth = 1,
                                     .nnew = &nnew[i]};
    }
    long long before = fcalls(t.c);
    fx_proxy_swallow(t.p);
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_finish_start(t.f, pages, 4, &c), 0, "%s", frontier_last_error(t.f));
    int rc = run_twice(&t, c, before, 1);
    frontier_call_free(c);
    cr_expect_eq(rc, CRAWL_ELEASE, "the second run: %s (it found the leases it took)",
                 crawl_strerror(rc));
    cr_expect_eq(stat_of(&t, "rf", "fetched"), 4);
    cr_expect_eq(stat_of(&t, "rf", "bytes"), 400);
    cr_expect_eq(stat_of(&t, "rf", "status_2xx"), 4);
    cr_expect_eq(stat_of(&t, "rf", "new_links"), 4);
    cr_expect_eq(stat_of(&t, "rf", "seen_links"), 4);
    cr_expect_eq(stat_of(&t, "rf", "enqueued"), 8);
    cr_expect_eq(stat_of(&t, "rf", "queued"), 4, "each new link queued once");
    cr_expect_eq(stat_of(&t, "rf", "in_flight"), 0);
    for (int i = 0; i < 4; i++)
        frontier_item_clear(&it[i]);
    rs_close(&t, 100);
}

Test(resend, a_retry_run_twice_retries_once)
{
    resend_t t;
    rs_open(&t, "rr", 1);
    const char *seeds[] = {"http://a.test/0"};
    frontier_item_t it;
    seed_and_claim(&t, seeds, 1, &it);
    frontier_outcome_t o = {.status = 503, .error = "http-5xx"};
    long long before = fcalls(t.c);
    fx_proxy_swallow(t.p);
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_retry_start(t.f, &it, &o, 0, &c), 0);
    int rc = run_twice(&t, c, before, 1);
    frontier_call_free(c);
    cr_expect_eq(rc, CRAWL_ELEASE, "the second run: %s", crawl_strerror(rc));
    cr_expect_eq(stat_of(&t, "rr", "retried"), 1);
    cr_expect_eq(stat_of(&t, "rr", "delayed"), 1);
    cr_expect_eq(stat_of(&t, "rr", "queued"), 0);
    cr_expect_eq(stat_of(&t, "rr", "in_flight"), 0);
    frontier_item_clear(&it);
    rs_close(&t, 100);
}

Test(resend, a_hand_back_run_twice_queues_each_url_once)
{
    resend_t t;
    rs_open(&t, "rh", 1);
    const char *seeds[] = {"http://a.test/0", "http://b.test/0"};
    frontier_item_t it[2];
    seed_and_claim(&t, seeds, 2, it);
    long long before = fcalls(t.c);
    fx_proxy_swallow(t.p);
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_release_start(t.f, it, 2, &c), 0);
    int rc = run_twice(&t, c, before, 1);
    frontier_call_free(c);
    cr_expect_eq(rc, CRAWL_ELEASE, "the second run: %s", crawl_strerror(rc));
    cr_expect_eq(stat_of(&t, "rh", "released"), 2);
    cr_expect_eq(stat_of(&t, "rh", "queued"), 2, "each URL back once");
    cr_expect_eq(stat_of(&t, "rh", "in_flight"), 0);
    for (int i = 0; i < 2; i++)
        frontier_item_clear(&it[i]);
    rs_close(&t, 100);
}

/* A URL of shard s of 2 (its host numbered from *h on). */
static void url_in_shard(unsigned s, int *h, const char *path, char *buf, size_t len)
{
    for (;; (*h)++) {
        snprintf(buf, len, "http://h%d.test%s", *h, path);
        if (fr_shard_of(2, buf) == s)
            return;
    }
}

/* A crawl of 2 shards on one server: a page of shard 0 whose links are in
 * shard 1 is finished with an offer to shard 1 (its links) and its own
 * call, pipelined.  Both run, their replies lost; sent again, the offer
 * answers its first run's codes (its call id: the links counted new once,
 * and the page's nnew says so) and the page's call finds its lease gone. */
Test(resend, an_offer_to_another_shard_run_twice_answers_its_first_codes)
{
    resend_t t;
    rs_open(&t, "ro", 2);
    char page[64], l[3][64];
    int h = 0;
    url_in_shard(0, &h, "/", page, sizeof page);
    h++;
    for (int i = 0; i < 3; i++, h++)
        url_in_shard(1, &h, "/x", l[i], sizeof l[i]);
    const char *seeds[] = {page};
    frontier_item_t it;
    seed_and_claim(&t, seeds, 1, &it);
    const char *links[] = {l[0], l[1], l[2]};
    size_t nnew = 0;
    frontier_done_t pg = {.item = &it,
                          .outcome = {.status = 200, .bytes = 10},
                          .links = links,
                          .nlinks = 3,
                          .link_depth = 1,
                          .nnew = &nnew};
    long long before = fcalls(t.c);
    fx_proxy_swallow(t.p);
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_finish_start(t.f, &pg, 1, &c), 0, "%s", frontier_last_error(t.f));
    int rc = run_twice(&t, c, before, 2); /* the offer, then the page's call */
    frontier_call_free(c);
    cr_expect_eq(rc, CRAWL_ELEASE, "the second run: %s", crawl_strerror(rc));
    cr_expect_eq(nnew, 3, "the offer's codes, answered again: %zu new", nnew);
    cr_expect_eq(stat_of(&t, "ro", "fetched"), 1);
    cr_expect_eq(stat_of(&t, "ro", "new_links"), 3);
    cr_expect_eq(stat_of(&t, "ro", "seen_links"), 0, "the second run counted them seen");
    cr_expect_eq(stat_of(&t, "ro", "enqueued"), 4);
    cr_expect_eq(stat_of(&t, "ro", "queued"), 3);
    cr_expect_eq(stat_of(&t, "ro", "in_flight"), 0);
    redisReply *k = redisCommand(t.c, "KEYS crawler:{ro/1}:offered:*");
    cr_assert(k && k->type == REDIS_REPLY_ARRAY && k->elements == 1, "%zu offer codes kept",
              k ? k->elements : 0);
    redisReply *ttl = redisCommand(t.c, "PTTL %s", k->element[0]->str);
    cr_expect(ttl && ttl->type == REDIS_REPLY_INTEGER && ttl->integer > 0 &&
                  ttl->integer <= FRONTIER_DEFAULT_LEASE_MS,
              "the offer's codes kept for %lld ms", ttl ? ttl->integer : -9);
    freeReplyObject(ttl);
    freeReplyObject(k);
    frontier_item_clear(&it);
    rs_close(&t, 100);
}

/* A dedup call (--dedup) run twice: the second run finds the first's
 * record under the same URL, which is no duplicate; a copy stays a copy of
 * the URL recorded before.  Two shards: the digests spread over both. */
Test(resend, a_dedup_run_twice_answers_its_first_verdicts)
{
    resend_t t;
    rs_open(&t, "rd", 2);
    enum { N = 8 };
    char digest[N][40], url[N][64];
    frontier_dedup_t d[N];
    for (int i = 0; i < N; i++) { /* distinct digests of 32 base32 characters, whose shard
                                     (the 12th's parity) is i / 2 % 2: each shard has both
                                     kinds of page below */
        snprintf(digest[i], sizeof digest[i], "sha1:AAAAAAAAAAA%c%cAAAAAAAAAAAAAAAAAAA",
                 'A' + i / 2, 'A' + i);
        snprintf(url[i], sizeof url[i], "http://h%d.test/", i);
        d[i] = (frontier_dedup_t){.digest = digest[i], .url = url[i], .time_ms = 1000 + i};
    }
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_dedup_start(t.f, d, N, &c), 0, "%s", frontier_last_error(t.f));
    cr_assert_eq(frontier_call_end(t.f, c), 0);
    frontier_call_free(c);
    for (int i = 0; i < N; i++)
        cr_assert_eq(d[i].duplicate, 0, "%s: a duplicate of a digest nobody had", url[i]);
    /* now: the same URLs again, and a copy of each under another URL */
    char other[N][64];
    for (int i = 0; i < N; i++) {
        snprintf(other[i], sizeof other[i], "http://copy%d.test/", i);
        d[i] = (frontier_dedup_t){.digest = digest[i], .url = i % 2 ? url[i] : other[i]};
    }
    long long before = fcalls(t.c);
    fx_proxy_swallow(t.p);
    cr_assert_eq(frontier_dedup_start(t.f, d, N, &c), 0, "%s", frontier_last_error(t.f));
    redisReply *n0 = redisCommand(t.c, "HLEN crawler:{rd}:digests");
    redisReply *n1 = redisCommand(t.c, "HLEN crawler:{rd/1}:digests");
    cr_assert(n0 && n1 && n0->integer > 0 && n1->integer > 0 && n0->integer + n1->integer == N,
              "digests per shard: %lld and %lld", n0 ? n0->integer : -1, n1 ? n1->integer : -1);
    freeReplyObject(n0);
    freeReplyObject(n1);
    int rc = run_twice(&t, c, before, 2);
    frontier_call_free(c);
    cr_expect_eq(rc, 0, "%s", crawl_strerror(rc));
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            cr_expect_eq(d[i].duplicate, 0, "%s again: no duplicate of itself", url[i]);
            cr_expect_null(d[i].orig_url);
        } else {
            cr_expect_eq(d[i].duplicate, 1, "%s: not a copy of %s", other[i], url[i]);
            cr_expect_str_eq(d[i].orig_url ? d[i].orig_url : "", url[i]);
            cr_expect_eq(d[i].orig_time_ms, 1000 + i);
        }
        free(d[i].orig_url);
    }
    redisReply *k = redisCommand(t.c, "HGET crawler:{rd}:digests %s", digest[0] + 5);
    redisReply *k1 = redisCommand(t.c, "HGET crawler:{rd/1}:digests %s", digest[0] + 5);
    const char *v = k && k->type == REDIS_REPLY_STRING     ? k->str
                    : k1 && k1->type == REDIS_REPLY_STRING ? k1->str
                                                           : "";
    cr_expect(!strncmp(v, url[0], strlen(url[0])), "the digest's first URL became %s", v);
    freeReplyObject(k);
    freeReplyObject(k1);
    rs_close(&t, 100);
}
