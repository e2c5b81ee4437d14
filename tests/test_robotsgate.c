/*
 * test_robotsgate.c -- what robots.txt costs in Redis (crawler/robotsgate.c,
 * frontier/hostinfo.c): a known origin costs no command, a claim batch of
 * new origins one round trip, a fetched robots.txt one, a poll of the
 * origins other workers fetch one; the thread's cache evicts the least
 * recently used rule sets one at a time and never a parked URL's; two
 * workers racing on the same origins fetch each robots.txt once; a robots
 * key of another type fails its own origin only, naming the key.  Against a
 * real redis-server; commands are counted with INFO commandstats, round
 * trips with frontier_round_trips.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <malloc.h>
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
#include "keys.h"
#include "robots.h"
#include "robotsgate.h"
#include "scope.h"

#define CRAWL "rg-test"
#define RULES "User-agent: *\nDisallow: /private/\n"
#define CACHE 16384 /* ROBOTS_CACHE of robotsgate.c */

static void wk_open(wk_t *w, fx_redis_t *r, const crawl_config_t *cfg)
{
    wk_open_with(w, r, cfg, NULL);
}

static void test_config(crawl_config_t *cfg)
{
    cli_crawl_defaults(cfg);
    cfg->crawl = CRAWL;
    cfg->delay_ms = 0;
    cfg->max_delay_ms = 0; /* parked URLs go at once after their robots.txt (no hold) */
}

static void origin_of(char *buf, size_t len, unsigned i)
{
    snprintf(buf, len, "http://h%u.example", i);
}

static frontier_item_t item_of(unsigned origin, const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "http://h%u.example%s", origin, path);
    frontier_item_t it = {.url = strdup(url), .lease = strdup("no-lease")};
    cr_assert(it.url && it.lease);
    return it;
}

/* Checks one URL; the verdict (the item is cleared unless parked). */
static robotsgate_verdict_t check(robotsgate_t *g, unsigned origin, const char *path)
{
    frontier_item_t it = item_of(origin, path);
    robotsgate_verdict_t v = ROBOTSGATE_WAIT;
    cr_expect_eq(robotsgate_check(g, &it, &v), 0, "check h%u%s failed", origin, path);
    frontier_item_clear(&it);
    return v;
}

static int fetched(robotsgate_t *g, const char *origin, long status, const char *body)
{
    robotsgate_body_t b = {
        .origin = origin, .status = status, .complete = 1, .body = body, .len = strlen(body)};
    return robotsgate_fetched(g, &b);
}

/* Answers every fetch g asks for with RULES; how many. */
static unsigned fetch_all(robotsgate_t *g, const char *body)
{
    unsigned n = 0;
    const char *o;
    char copy[256];
    while ((o = robotsgate_next_fetch(g))) {
        snprintf(copy, sizeof copy, "%s", o);
        cr_assert_eq(fetched(g, copy, 200, body), 0, "fetched %s", copy);
        n++;
    }
    return n;
}

/* Drops every verdict g holds ready; how many. */
static unsigned drain_ready(robotsgate_t *g)
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

/* Commands Redis ran so far (INFO commandstats: every command, those run by
 * functions included), without the INFO calls themselves; name: one
 * command's count ("fcall"), NULL: all. */
static long long commands(redisContext *c, const char *name)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO commandstats failed");
    long long total = 0;
    for (const char *p = strstr(r->str, "cmdstat_"); p; p = strstr(p + 1, "\ncmdstat_")) {
        p += *p == '\n';
        const char *cmd = p + 8, *colon = strchr(cmd, ':');
        const char *calls = colon ? strstr(colon, "calls=") : NULL;
        if (!calls)
            break;
        size_t len = (size_t)(colon - cmd);
        long long v = strtoll(calls + 6, NULL, 10);
        if (name ? strlen(name) == len && !strncmp(cmd, name, len)
                 : !(len == 4 && !strncmp(cmd, "info", 4)))
            total += v;
    }
    freeReplyObject(r);
    return total;
}

/* The claim batches of a worker: n items, two URLs of each of origins
 * first..first+n/2-1 (the second a /private/ one). */
static frontier_item_t *batch(unsigned first, size_t n)
{
    frontier_item_t *items = calloc(n, sizeof *items);
    cr_assert_not_null(items);
    for (size_t i = 0; i < n; i++)
        items[i] = item_of(first + (unsigned)(i / 2), i % 2 ? "/private/x" : "/a");
    return items;
}

/* Checks every item of a batch (parked ones are taken; the rest cleared);
 * how many were parked. */
static size_t check_batch(robotsgate_t *g, frontier_item_t *items, size_t n)
{
    size_t parked = 0;
    for (size_t i = 0; i < n; i++) {
        robotsgate_verdict_t v;
        cr_expect_eq(robotsgate_check(g, &items[i], &v), 0, "check %s", items[i].url);
        parked += v == ROBOTSGATE_WAIT;
        frontier_item_clear(&items[i]);
    }
    free(items);
    return parked;
}

Test(robotsgate, the_second_url_of_each_of_3000_origins_costs_no_redis_command)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a;
    wk_open(&a, r, &cfg);
    for (unsigned i = 0; i < 3000; i++) {
        cr_assert_eq(check(a.g, i, "/a"), ROBOTSGATE_WAIT, "h%u: first URL not parked", i);
        cr_assert_eq(fetch_all(a.g, RULES), 1, "h%u: one fetch", i);
    }
    cr_expect_eq(drain_ready(a.g), 3000);
    long long before = commands(a.rc, NULL);
    for (unsigned i = 0; i < 3000; i++) {
        robotsgate_verdict_t v = check(a.g, i, i % 2 ? "/private/b" : "/b");
        cr_expect_eq(v, i % 2 ? ROBOTSGATE_DENY : ROBOTSGATE_ALLOW, "h%u: verdict %d", i, v);
    }
    long long after = commands(a.rc, NULL);
    cr_expect_eq(after - before, 0, "%lld Redis commands for 3000 URLs of known origins",
                 after - before);
    cr_expect_null(robotsgate_next_fetch(a.g), "a known origin fetched again");
    wk_close(&a);
    fx_redis_stop(r);
}

/* Round trips of w's handle since *mark (which is moved on). */
static uint64_t trips(const wk_t *w, uint64_t *mark)
{
    uint64_t now = frontier_round_trips(w->f), d = now - *mark;
    *mark = now;
    return d;
}

Test(robotsgate, a_new_origin_a_store_and_a_poll_cost_one_round_trip_each)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    wk_open(&a, r, &cfg);
    wk_open(&b, r, &cfg);
    uint64_t ma = frontier_round_trips(a.f), mb = frontier_round_trips(b.f);
    /* a new origin: one look (was GET, SET NX, GET) */
    for (unsigned i = 0; i < 20; i++) {
        cr_assert_eq(check(a.g, i, "/a"), ROBOTSGATE_WAIT);
        cr_expect_eq(trips(&a, &ma), 1, "h%u: the first URL's round trips", i);
    }
    for (unsigned i = 0; i < 20; i++) {
        cr_assert_eq(check(b.g, i, "/b"), ROBOTSGATE_WAIT);
        cr_expect_eq(trips(&b, &mb), 1, "h%u: b's first URL's round trips", i);
    }
    cr_expect_eq(robotsgate_polling(b.g), 1);
    /* a stores each: rules, Crawl-delay, a Sitemap: line and the unlock in
     * one round trip (was SET, HSET, SADD, DEL) */
    const char *o;
    char copy[64];
    while ((o = robotsgate_next_fetch(a.g))) {
        snprintf(copy, sizeof copy, "%s", o);
        cr_assert_eq(fetched(a.g, copy, 200, RULES "Crawl-delay: 2\nSitemap: http://x.test/s\n"),
                     0);
        cr_expect_eq(trips(&a, &ma), 1, "%s: storing its robots.txt", copy);
    }
    cr_expect_eq(drain_ready(a.g), 20);
    /* b: the 20 origins a fetched, in one poll */
    usleep((ROBOTSGATE_POLL_MS + 10) * 1000);
    cr_assert_eq(robotsgate_poll(b.g), 0);
    cr_expect_eq(trips(&b, &mb), 1, "polling 20 origins");
    cr_expect_eq(robotsgate_polling(b.g), 0, "b still waits");
    cr_expect_eq(drain_ready(b.g), 20);
    cr_expect_null(robotsgate_next_fetch(b.g), "b fetches what a stored");
    /* what a stored reached Redis: the host delay and the sitemap */
    redisReply *rep = redisCommand(a.rc, "SCARD crawler:{" CRAWL "}:sitemaps");
    cr_expect(rep && rep->integer == 1, "sitemaps not recorded");
    freeReplyObject(rep);
    rep = redisCommand(a.rc, "HGET crawler:{" CRAWL "}:hdelay http://h3.example");
    cr_expect(rep && rep->type == REDIS_REPLY_STRING && !strcmp(rep->str, "2000"),
              "Crawl-delay not set");
    freeReplyObject(rep);
    wk_close(&b);
    wk_close(&a);
    fx_redis_stop(r);
}

Test(robotsgate, prefetch_of_a_claim_batch_is_one_round_trip_and_its_checks_none)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    wk_open(&a, r, &cfg);
    wk_open(&b, r, &cfg);
    uint64_t ma = frontier_round_trips(a.f), mb = frontier_round_trips(b.f);
    /* b takes origins 0..49 first: it wins their locks */
    frontier_item_t *items = batch(0, 100);
    cr_assert_eq(robotsgate_prefetch(b.g, items, 100), 0);
    cr_expect_eq(trips(&b, &mb), 1, "b's prefetch of 50 origins");
    cr_expect_eq(check_batch(b.g, items, 100), 100);
    cr_expect_eq(trips(&b, &mb), 0, "b's checks after its prefetch");
    /* a: 1,200 URLs of origins 0..599 */
    items = batch(0, 1200);
    long long fc = commands(a.rc, "fcall");
    cr_assert_eq(robotsgate_prefetch(a.g, items, 1200), 0);
    cr_expect_eq(trips(&a, &ma), 1, "a's prefetch of 600 origins");
    cr_expect_eq(commands(a.rc, "fcall") - fc, 2, "function calls for 600 origins");
    cr_expect_eq(check_batch(a.g, items, 1200), 1200);
    cr_expect_eq(trips(&a, &ma), 0, "a's checks after its prefetch");
    cr_expect_eq(robotsgate_parked(a.g), 1200);
    cr_expect_eq(robotsgate_polling(a.g), 1, "a does not wait for b's 50");
    cr_expect_eq(fetch_all(a.g, RULES), 550, "a fetches what b does not");
    cr_expect_eq(drain_ready(a.g), 1100);
    cr_expect_eq(trips(&a, &ma), 550, "storing 550 robots.txt");
    /* a prefetch of known origins sends nothing */
    items = batch(100, 200);
    cr_assert_eq(robotsgate_prefetch(a.g, items, 200), 0);
    cr_expect_eq(trips(&a, &ma), 0, "a prefetch of known origins");
    cr_expect_eq(check_batch(a.g, items, 200), 0);
    cr_expect_eq(drain_ready(a.g), 0);
    cr_expect_eq(fetch_all(b.g, RULES), 50);
    usleep((ROBOTSGATE_POLL_MS + 10) * 1000);
    cr_assert_eq(robotsgate_poll(a.g), 0);
    cr_expect_eq(robotsgate_polling(a.g), 0);
    cr_expect_eq(drain_ready(a.g), 100, "the URLs parked on b's fetches");
    wk_close(&b);
    wk_close(&a);
    fx_redis_stop(r);
}

/* A fetch whose holder died (it never answers, its connection gone): its
 * lock lapses and a worker waiting on it takes the fetch over. */
Test(robotsgate, a_prefetched_lock_whose_holder_died_is_taken_over)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    cfg.timeout_ms = 100; /* the lock lasts timeout + connect timeout */
    cfg.connect_timeout_ms = 100;
    wk_t a, b;
    wk_open(&a, r, &cfg);
    wk_open(&b, r, &cfg);
    frontier_item_t *items = batch(0, 10);
    cr_assert_eq(robotsgate_prefetch(a.g, items, 10), 0);
    cr_expect_eq(check_batch(a.g, items, 10), 10);
    wk_close(&a); /* dies holding 5 locks */
    items = batch(0, 10);
    cr_assert_eq(robotsgate_prefetch(b.g, items, 10), 0);
    cr_expect_eq(check_batch(b.g, items, 10), 10);
    cr_expect_null(robotsgate_next_fetch(b.g), "b fetches while a's locks hold");
    unsigned took = 0;
    uint64_t deadline = fx_now_ms() + 10000;
    while (robotsgate_polling(b.g) && fx_now_ms() < deadline) {
        cr_assert_eq(robotsgate_poll(b.g), 0);
        took += fetch_all(b.g, RULES);
        usleep(10000);
    }
    cr_expect_eq(took, 5, "b took %u of the 5 fetches over", took);
    cr_expect_eq(drain_ready(b.g), 10);
    wk_close(&b);
    fx_redis_stop(r);
}

Test(robotsgate, two_workers_racing_on_the_same_origins_fetch_each_robots_txt_once)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t w[2];
    wk_open(&w[0], r, &cfg);
    wk_open(&w[1], r, &cfg);
    enum { NORIGINS = 400, ROUNDS = 40 };
    unsigned fetches = 0, ready[2] = {0, 0};
    size_t sent[2] = {0, 0};
    /* each round, both claim overlapping batches (20 origins, shifted), check
     * them, answer some fetches now and the rest a round later, poll */
    for (unsigned round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 2; k++) {
            unsigned first = (round * 10 + (unsigned)k * 5) % (NORIGINS - 20);
            frontier_item_t *items = batch(first, 40);
            cr_assert_eq(robotsgate_prefetch(w[k].g, items, 40), 0);
            check_batch(w[k].g, items, 40);
            sent[k] += 40;
            if ((round + (unsigned)k) % 2)
                fetches += fetch_all(w[k].g, RULES);
            cr_assert_eq(robotsgate_poll(w[k].g), 0);
            ready[k] += drain_ready(w[k].g);
        }
        usleep(2000);
    }
    uint64_t deadline = fx_now_ms() + 10000;
    while ((robotsgate_parked(w[0].g) || robotsgate_parked(w[1].g)) && fx_now_ms() < deadline) {
        for (int k = 0; k < 2; k++) {
            fetches += fetch_all(w[k].g, RULES);
            cr_assert_eq(robotsgate_poll(w[k].g), 0);
            ready[k] += drain_ready(w[k].g);
        }
        usleep(10000);
    }
    /* every URL got its verdict (checked directly or after its rules) */
    cr_expect_eq(robotsgate_parked(w[0].g) + robotsgate_parked(w[1].g), 0, "URLs still parked");
    /* one fetch per origin seen, by either worker */
    redisReply *rep = redisCommand(w[0].rc, "KEYS crawler:{" CRAWL "}:robots:*");
    cr_assert(rep && rep->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(fetches, rep->elements, "%u fetches for %zu origins", fetches, rep->elements);
    freeReplyObject(rep);
    cr_expect_gt(ready[0] + ready[1], 0);
    wk_close(&w[1]);
    wk_close(&w[0]);
    fx_redis_stop(r);
}

/* Stores "R" + RULES's rules for origins first..first+n-1 straight into
 * Redis (pipelined), as a worker that fetched them would have. */
static void store_rules(redisContext *c, unsigned first, unsigned n)
{
    int err = 0;
    robots_t *rules = robots_parse(RULES, strlen(RULES), "crawler", &err);
    char *ser = NULL, prefix[FR_PREFIX_MAX], key[512], o[64];
    size_t len = 0;
    cr_assert(rules && robots_serialize(rules, &ser, &len) == 0);
    char *val = malloc(len + 1);
    cr_assert_not_null(val);
    val[0] = 'R';
    memcpy(val + 1, ser, len);
    cr_assert_eq(fr_prefix(CRAWL, prefix, sizeof prefix), 0);
    for (unsigned i = first; i < first + n; i++) {
        origin_of(o, sizeof o, i);
        int kl = fr_key_build(prefix, FR_K_ROBOTS, o, strlen(o), key, sizeof key);
        cr_assert_gt(kl, 0);
        redisAppendCommand(c, "SET %b %b EX 600", key, (size_t)kl, val, len + 1);
    }
    for (unsigned i = 0; i < n; i++) {
        redisReply *rep = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&rep), REDIS_OK);
        freeReplyObject(rep);
    }
    free(val);
    free(ser);
    robots_free(rules);
}

/* Checks a URL of each of origins first..first+n-1 (their rules in Redis). */
static void visit(wk_t *w, unsigned first, unsigned n)
{
    for (unsigned i = first; i < first + n; i++)
        cr_expect_eq(check(w->g, i, "/a"), ROBOTSGATE_ALLOW, "h%u: not allowed", i);
}

Test(robotsgate, a_full_cache_evicts_the_least_recently_used_one_at_a_time_never_parked_urls,
     .timeout = 120)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    wk_open(&a, r, &cfg);
    wk_open(&b, r, &cfg);
    /* 10 origins whose robots.txt b fetches: a parks 2 URLs on each */
    cr_expect_eq(check_batch(b.g, batch(100000, 20), 20), 20);
    cr_expect_eq(check_batch(a.g, batch(100000, 20), 20), 20);
    store_rules(a.rc, 0, CACHE + 1000);
    struct mallinfo2 m0 = mallinfo2();
    visit(&a, 0, CACHE - 10); /* the cache is full */
    struct mallinfo2 m1 = mallinfo2();
    double per = (double)(m1.uordblks - m0.uordblks) / (CACHE - 10);
    cr_log_info("heap per cached rule set (one-rule robots.txt): %.0f bytes", per);
    cr_expect_lt(per, 1024, "%.0f heap bytes per cached rule set", per);
    visit(&a, 0, 100);           /* used again: the most recent */
    visit(&a, CACHE - 10, 1000); /* 1,000 more: the 1,000 least recently used go */
    uint64_t mark = frontier_round_trips(a.f);
    visit(&a, 0, 100);
    cr_expect_eq(trips(&a, &mark), 0, "the 100 most recently used were evicted");
    visit(&a, CACHE - 10, 1000);
    cr_expect_eq(trips(&a, &mark), 0, "the 1,000 newest were evicted");
    visit(&a, 100, 1);
    cr_expect_eq(trips(&a, &mark), 1, "h100, the least recently used, was not evicted");
    /* the parked URLs survived it all */
    cr_expect_eq(robotsgate_parked(a.g), 20);
    cr_expect_eq(fetch_all(b.g, RULES), 10);
    usleep((ROBOTSGATE_POLL_MS + 10) * 1000);
    cr_assert_eq(robotsgate_poll(a.g), 0);
    cr_expect_eq(drain_ready(a.g), 20, "the parked URLs came out");
    wk_close(&b);
    wk_close(&a);
    fx_redis_stop(r);
}

/* A robots key of another type: frontier_robots_look fails that origin
 * only, naming the key, and writes nothing for it; frontier_robots_store
 * refuses it before writing; the gate still answers every URL. */
Test(robotsgate, a_robots_key_of_the_wrong_type_fails_its_origin_only_naming_it)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a;
    wk_open(&a, r, &cfg);
    static const struct {
        const char *key, *lock;
    } bad[] = {
        {"crawler:{" CRAWL "}:robots:http://h1.example", NULL},
        {NULL, "crawler:{" CRAWL "}:robots-lock:http://h1.example"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        /* a clean slate for the robots.txt keys (the crawl itself stays) */
        redisReply *rep = redisCommand(a.rc, "KEYS crawler:{" CRAWL "}:robots*");
        for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
            freeReplyObject(redisCommand(a.rc, "DEL %s", rep->element[i]->str));
        freeReplyObject(rep);
        freeReplyObject(redisCommand(a.rc, "DEL crawler:{" CRAWL "}:hdelay"));
        const char *key = bad[c].key ? bad[c].key : bad[c].lock;
        rep = redisCommand(a.rc, "RPUSH %s junk", key);
        freeReplyObject(rep);
        frontier_robots_look_t l[3] = {
            {.origin = "http://h0.example"},
            {.origin = "http://h1.example"},
            {.origin = "http://h2.example"},
        };
        int rc = frontier_robots_look(a.f, l, 3, 10000);
        cr_expect_eq(rc, CRAWL_EWRONGTYPE, "%s a list: look %d", key, rc);
        cr_expect_eq(l[1].err, CRAWL_EWRONGTYPE, "%s a list: its origin's err %d", key, l[1].err);
        char want[256];
        snprintf(want, sizeof want, "%s is a list, expected a string", key);
        cr_expect(strstr(frontier_last_error(a.f), want), "%s: error '%s'", key,
                  frontier_last_error(a.f));
        cr_expect(l[0].err == 0 && l[0].found == FRONTIER_ROBOTS_WON, "%s: h0 not won", key);
        cr_expect(l[2].err == 0 && l[2].found == FRONTIER_ROBOTS_WON, "%s: h2 not won", key);
        rep = redisCommand(a.rc, "EXISTS crawler:{" CRAWL "}:robots-lock:http://h1.example "
                                 "crawler:{" CRAWL "}:robots:http://h1.example");
        cr_expect(rep && rep->integer == 1, "%s: h1's keys changed", key);
        freeReplyObject(rep);
        frontier_robots_result_t res = {
            .origin = "http://h1.example", .val = "U", .len = 1, .ttl_s = 60, .delay_ms = 500};
        rc = frontier_robots_store(a.f, &res);
        cr_expect_eq(rc, CRAWL_EWRONGTYPE, "%s a list: store %d", key, rc);
        cr_expect(strstr(frontier_last_error(a.f), want), "%s: store's error '%s'", key,
                  frontier_last_error(a.f));
        rep = redisCommand(a.rc, "EXISTS crawler:{" CRAWL "}:hdelay");
        cr_expect(rep && rep->integer == 0, "%s: the store wrote the host delay", key);
        freeReplyObject(rep);
        for (int i = 0; i < 3; i += 2) {
            res.origin = l[i].origin;
            cr_expect_eq(frontier_robots_store(a.f, &res), 0, "%s: storing %s", key, l[i].origin);
        }
        /* the gate: h1's URLs are not lost (it fetches h1 itself) */
        robotsgate_free(a.g);
        a.g = robotsgate_new(&cfg, a.f, a.scope);
        cr_assert_not_null(a.g);
        frontier_item_t *items = batch(0, 6);
        cr_expect_eq(robotsgate_prefetch(a.g, items, 6), 0);
        cr_expect_eq(check_batch(a.g, items, 6), 2, "%s: h1's 2 URLs not parked", key);
        const char *o = robotsgate_next_fetch(a.g);
        cr_expect(o && !strcmp(o, "http://h1.example"), "%s: fetch %s", key, o ? o : "none");
        cr_expect_eq(fetched(a.g, "http://h1.example", 200, RULES), 0);
        cr_expect_eq(drain_ready(a.g), 2);
    }
    wk_close(&a);
    fx_redis_stop(r);
}

/* A robots.txt is a request like any other: the URL parked on it waits the
 * host's delay (--delay, or Crawl-delay up to --max-delay) after the fetch,
 * so the host never sees two requests closer than that.  Lower bounds on
 * time only (a slow machine makes the wait longer, never shorter). */
Test(robotsgate, a_url_parked_on_a_robots_txt_waits_the_hosts_delay_after_it)
{
    static const struct {
        uint32_t delay, max_delay;
        const char *robots;
        uint64_t want_ms;
    } CASES[] = {
        {300, 0, RULES, 300},                      /* --delay */
        {0, 2000, RULES "Crawl-delay: 1\n", 1000}, /* the file's own delay */
        {0, 400, RULES "Crawl-delay: 5\n", 400},   /* ... capped at --max-delay */
        {0, 2000, RULES, 0},                       /* no delay: at once */
    };
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        crawl_config_t cfg;
        test_config(&cfg);
        cfg.delay_ms = CASES[c].delay;
        cfg.max_delay_ms = CASES[c].max_delay;
        wk_t a;
        wk_open(&a, r, &cfg);
        cr_assert_eq(check(a.g, (unsigned)c, "/a"), ROBOTSGATE_WAIT);
        cr_assert_eq(fetch_all(a.g, CASES[c].robots), 1);
        uint64_t t0 = fx_now_ms(), ready_at = 0;
        while (fx_now_ms() < t0 + 10000) {
            cr_assert_eq(robotsgate_poll(a.g), 0);
            if (drain_ready(a.g) == 1) {
                ready_at = fx_now_ms();
                break;
            }
            cr_assert(robotsgate_polling(a.g), "case %zu: a held URL, and the gate not polling", c);
            usleep(5000);
        }
        cr_assert(ready_at, "case %zu: the parked URL never came out", c);
        cr_expect_geq(ready_at - t0, CASES[c].want_ms,
                      "case %zu: the URL came out %llu ms after its robots.txt, want >= %llu", c,
                      (unsigned long long)(ready_at - t0), (unsigned long long)CASES[c].want_ms);
        cr_expect_eq(robotsgate_parked(a.g), 0);
        cr_expect_not(robotsgate_polling(a.g), "case %zu: still polling", c);
        wk_close(&a);
    }
    fx_redis_stop(r);
}
