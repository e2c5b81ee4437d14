/* The key names of a crawl (frontier/keys.h, keys.def) and the frontier
 * functions that own the keys the crawler used to write itself: the
 * robots.txt cache and its lock, the sitemap set, the seed hosts; the
 * visited set frontier_open opens by itself; reset deleting every key of
 * keys.def.  The Redis cases run against a real redis-server. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "frontier_internal.h"
#include "keys.h"
#include "side.h"

#define CRAWL "k"

/* ---- names (pure) -------------------------------------------------------- */

Test(keys, prefix_spells_the_crawl_inside_a_hash_tag)
{
    char p[FR_PREFIX_MAX];
    cr_assert_eq(fr_prefix("t", p, sizeof p), 0);
    cr_expect_str_eq(p, "crawler:{t}:", "docs/keys.md's prefix");
    cr_assert_eq(fr_prefix(NULL, p, sizeof p), 0);
    cr_expect_str_eq(p, FR_PREFIX_OPEN FRONTIER_DEFAULT_CRAWL FR_PREFIX_CLOSE);
    cr_expect_str_eq(FRONTIER_KEY_PREFIX_HELP, "crawler:{NAME}:");
}

Test(keys, prefix_takes_only_valid_crawl_names)
{
    static const struct {
        const char *crawl;
        int ok;
    } cases[] = {
        {"a", 1},  {"A-b_c.9", 1}, {"", 0},  {"a b", 0}, {"a}", 0},    {"{a", 0},
        {"a*", 0}, {"a:b", 0},     {"é", 0}, {"a\n", 0}, {"a?[x]", 0}, {"a\\", 0},
    };
    char p[FR_PREFIX_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = fr_prefix(cases[i].crawl, p, sizeof p);
        cr_expect_eq(rc == 0, cases[i].ok, "crawl name '%s': %d", cases[i].crawl, rc);
    }
    char longest[FRONTIER_MAX_CRAWL_NAME + 2];
    memset(longest, 'x', sizeof longest);
    longest[FRONTIER_MAX_CRAWL_NAME] = '\0';
    cr_expect_eq(fr_prefix(longest, p, sizeof p), 0, "FR_PREFIX_MAX holds the longest name");
    cr_expect_eq(fr_prefix_shard(longest, FRONTIER_MAX_SHARDS - 1, p, sizeof p), 0,
                 "... with the highest shard number");
    cr_expect_eq(strlen(p) + 1, FR_PREFIX_MAX);
    cr_expect_eq(fr_prefix_shard(longest, FRONTIER_MAX_SHARDS - 1, p, sizeof p - 1), CRAWL_EINVAL,
                 "one byte short");
    cr_expect_eq(fr_prefix_shard(longest, FRONTIER_MAX_SHARDS, p, sizeof p), CRAWL_EINVAL,
                 "a shard number out of range");
    longest[FRONTIER_MAX_CRAWL_NAME] = 'x';
    longest[FRONTIER_MAX_CRAWL_NAME + 1] = '\0';
    cr_expect_eq(fr_prefix(longest, p, sizeof p), CRAWL_EINVAL, "one character too long");
    cr_expect_eq(fr_prefix_shard(longest, 3, p, sizeof p), CRAWL_EINVAL, "... in a shard too");
}

Test(keys, shard_prefixes_are_the_crawls_with_the_shard_in_the_hash_tag)
{
    char p[FR_PREFIX_MAX];
    cr_expect_eq(fr_prefix_shard("c1", 0, p, sizeof p), 0);
    cr_expect_str_eq(p, "crawler:{c1}:", "shard 0 is the crawl's own prefix");
    cr_expect_eq(fr_prefix_shard("c1", 7, p, sizeof p), 0);
    cr_expect_str_eq(p, "crawler:{c1/7}:");
    cr_expect_eq(fr_prefix_shard("c1/7", 0, p, sizeof p), CRAWL_EINVAL,
                 "no crawl name is another crawl's shard");
    /* a host's shard: its registered domain's, the same from any URL of it */
    unsigned a = fr_shard_of(64, "http://www.example.com:8080/x");
    cr_expect_eq(fr_shard_of(64, "https://example.com"), a, "one registered domain, one shard");
    cr_expect_eq(fr_shard_of(64, "http://a.b.example.com/"), a);
    cr_expect_lt(a, 64u);
    cr_expect_eq(fr_shard_of(1, "http://example.org/"), 0u);
    unsigned seen[4] = {0}; /* loopback addresses are their own domains: they spread */
    for (int i = 1; i <= 64; i++) {
        char u[64];
        snprintf(u, sizeof u, "http://127.0.%d.1:8080/", i);
        seen[fr_shard_of(4, u)]++;
    }
    for (int s = 0; s < 4; s++)
        cr_expect_gt(seen[s], 4u, "shard %d of 4 got %u of 64 hosts", s, seen[s]);
    unsigned s;
    cr_expect_eq(fr_shard_find(4, "not a url", &s), -1);
}

Test(keys, table_has_a_suffix_and_type_for_every_id_and_no_two_names_can_meet)
{
    for (int i = 0; i < FR_K_COUNT; i++) {
        const char *s = fr_key_suffix(i);
        cr_assert(s && *s && fr_key_type(i) && fr_key_is_family(i) >= 0, "id %d", i);
        cr_expect_lt(strlen(s), FR_SUFFIX_MAX, "suffix %s", s);
        cr_expect_eq(fr_key_is_family(i), s[strlen(s) - 1] == ':',
                     "suffix %s: families end with ':', single keys do not", s);
        for (int j = 0; j < FR_K_COUNT; j++) {
            const char *t = fr_key_suffix(j);
            if (i == j)
                continue;
            cr_expect_str_neq(s, t, "ids %d and %d", i, j);
            /* a family's members must never be another id's key */
            if (fr_key_is_family(i))
                cr_expect(strncmp(t, s, strlen(s)) != 0, "%s is inside family %s", t, s);
        }
    }
    cr_expect_null(fr_key_suffix(FR_K_COUNT));
    cr_expect_null(fr_key_type(-1));
    cr_expect_eq(fr_key_is_family(FR_K_COUNT), -1);
    cr_expect_str_eq(fr_key_type(FR_K_READY), "zset");
    cr_expect_str_eq(fr_key_type(FR_K_SEEN), "bloom");
}

Test(keys, build_writes_prefix_suffix_and_member_and_refuses_misuse)
{
    char p[FR_PREFIX_MAX], k[FR_KEY_MAX + 64];
    fr_prefix("t", p, sizeof p);
    cr_assert_eq(fr_key_build(p, FR_K_READY, NULL, 0, k, sizeof k),
                 (int)strlen("crawler:{t}:ready"));
    cr_expect_str_eq(k, "crawler:{t}:ready");
    int n = fr_key_build(p, FR_K_QUEUE, "http://a.test:81", 16, k, sizeof k);
    cr_expect_eq(n, (int)strlen("crawler:{t}:q:http://a.test:81"));
    cr_expect_str_eq(k, "crawler:{t}:q:http://a.test:81");
    cr_expect_gt(fr_key_build(p, FR_K_LEASE, "w1", 2, k, sizeof k), 0);
    cr_expect_str_eq(k, "crawler:{t}:lease:w1");
    cr_expect_gt(fr_key_build(p, FR_K_ROBOTS_LOCK, "http://h", 8, k, sizeof k), 0);
    cr_expect_str_eq(k, "crawler:{t}:robots-lock:http://h");
    /* a member is binary-safe: its length, not its NUL, ends it */
    n = fr_key_build(p, FR_K_WORKER, "a\0b", 3, k, sizeof k);
    cr_expect_eq(n, (int)strlen("crawler:{t}:worker:") + 3);
    cr_expect_eq(memcmp(k + n - 3, "a\0b", 4), 0);
    cr_expect_eq(fr_key_build(p, FR_K_WORKER, "", 0, k, sizeof k),
                 (int)strlen("crawler:{t}:worker:"));

    cr_expect_eq(fr_key_build(p, FR_K_QUEUE, NULL, 0, k, sizeof k), CRAWL_EINVAL, "family");
    cr_expect_eq(fr_key_build(p, FR_K_READY, "x", 1, k, sizeof k), CRAWL_EINVAL, "single");
    cr_expect_eq(fr_key_build(p, FR_K_COUNT, NULL, 0, k, sizeof k), CRAWL_EINVAL, "id");
    cr_expect_eq(fr_key_build(NULL, FR_K_READY, NULL, 0, k, sizeof k), CRAWL_EINVAL);
    size_t len = strlen("crawler:{t}:stats");
    cr_expect_eq(fr_key_build(p, FR_K_STATS, NULL, 0, k, len + 1), (int)len, "exact fit");
    cr_expect_eq(fr_key_build(p, FR_K_STATS, NULL, 0, k, len), CRAWL_EINVAL, "no room for NUL");
    cr_expect_eq(frontier_bloom_name("t", k, sizeof k), 0);
    cr_expect_str_eq(k, "crawler:{t}:seen");
    cr_expect_eq(frontier_bloom_name(NULL, k, sizeof k), CRAWL_EINVAL);
    cr_expect_eq(frontier_bloom_name("a b", k, sizeof k), CRAWL_EINVAL);
}

Test(keys, fa_key_appends_one_argument_without_its_nul)
{
    char p[FR_PREFIX_MAX];
    fr_prefix("t", p, sizeof p);
    rconn_args_t a;
    rconn_args_init(&a);
    rconn_arg_cstr(&a, "GET");
    const char *k = fr_key_arg(&a, p, FR_K_ROBOTS, "http://x", 8);
    cr_assert_not_null(k);
    cr_assert_eq(a.n, 2);
    cr_expect_eq(a.len[1], strlen("crawler:{t}:robots:http://x"));
    cr_expect_str_eq(a.v[1], "crawler:{t}:robots:http://x");
    cr_expect_null(fr_key_arg(&a, p, FR_K_QUEUE, NULL, 0), "a family needs its member");
    cr_expect(a.oom, "a bad key marks the command unsendable");
    rconn_args_free(&a);
}

/* ---- Redis --------------------------------------------------------------- */

static long long redis_int(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s: %s", fmt, arg,
              r && r->str ? r->str : c->errstr);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void redis_ok(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s %s", fmt, arg);
    freeReplyObject(r);
}

Test(keys, robots_value_round_trips_binary_safe_with_its_ttl)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    char *v = (char *)"junk";
    size_t len = 99;
    cr_assert_eq(frontier_robots_get(s.f, "http://a.test", &v, &len), 0);
    cr_expect_null(v, "nothing stored yet");
    cr_expect_eq(len, 0);

    const char val[] = "R\0rules\nDisallow: /x";
    cr_assert_eq(frontier_robots_put(s.f, "http://a.test", val, sizeof val - 1, 3600), 0);
    cr_assert_eq(frontier_robots_get(s.f, "http://a.test", &v, &len), 0);
    cr_assert_not_null(v);
    cr_expect_eq(len, sizeof val - 1);
    cr_expect_eq(memcmp(v, val, sizeof val), 0, "same bytes, NUL-terminated");
    free(v);
    long long ttl = redis_int(s.c, "TTL %s", "crawler:{" CRAWL "}:robots:http://a.test");
    cr_expect(ttl > 0 && ttl <= 3600, "TTL %lld", ttl);

    /* another origin, another worker's handle: each origin its own key */
    side_t t;
    side_open(&t, r, CRAWL, NULL, 1);
    cr_assert_eq(frontier_robots_put(t.f, "http://b.test:8080", "U", 1, 1), 0);
    cr_assert_eq(frontier_robots_get(s.f, "http://b.test:8080", &v, NULL), 0);
    cr_expect(v && !strcmp(v, "U"));
    free(v);
    cr_assert_eq(frontier_robots_put(t.f, "http://a.test", "", 0, 5), 0, "empty value");
    cr_assert_eq(frontier_robots_get(s.f, "http://a.test", &v, &len), 0);
    cr_expect(v && len == 0 && v[0] == '\0', "an empty value is not 'absent'");
    free(v);

    cr_expect_eq(frontier_robots_put(s.f, "http://a.test", "R", 1, 0), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_put(s.f, "", "R", 1, 5), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_put(s.f, "http://a.test", NULL, 1, 5), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_get(s.f, NULL, &v, &len), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_get(s.f, "http://a.test", NULL, &len), CRAWL_EINVAL);

    redis_ok(s.c, "LPUSH %s x", "crawler:{" CRAWL "}:robots:http://w.test");
    v = (char *)"junk";
    cr_expect_eq(frontier_robots_get(s.f, "http://w.test", &v, &len), CRAWL_EREPLY);
    cr_expect_null(v);
    side_close(&t);
    side_close(&s);
    fx_redis_stop(r);
}

Test(keys, robots_lock_has_one_holder_until_unlocked_or_lapsed)
{
    fx_redis_t *r = side_redis();
    side_t a, b;
    side_open(&a, r, CRAWL, NULL, 1);
    side_open(&b, r, CRAWL, NULL, 1);
    int won = -1;
    cr_assert_eq(frontier_robots_lock(a.f, "http://h.test", 60000, &won), 0);
    cr_expect_eq(won, 1, "the first taker holds it");
    cr_assert_eq(frontier_robots_lock(b.f, "http://h.test", 60000, &won), 0);
    cr_expect_eq(won, 0, "a second taker does not");
    cr_assert_eq(frontier_robots_lock(a.f, "http://h.test", 60000, &won), 0);
    cr_expect_eq(won, 0, "not even the holder again: one fetch per host");
    cr_assert_eq(frontier_robots_lock(b.f, "http://other.test", 60000, &won), 0);
    cr_expect_eq(won, 1, "each origin its own lock");
    long long pttl = redis_int(a.c, "PTTL %s", "crawler:{" CRAWL "}:robots-lock:http://h.test");
    cr_expect(pttl > 0 && pttl <= 60000, "the lock lapses by itself: PTTL %lld", pttl);

    cr_assert_eq(frontier_robots_unlock(a.f, "http://h.test"), 0);
    cr_assert_eq(frontier_robots_lock(b.f, "http://h.test", 60000, &won), 0);
    cr_expect_eq(won, 1, "free again after unlock");
    cr_expect_eq(frontier_robots_unlock(a.f, "http://never.test"), 0, "not held: fine");

    /* a lapsed lock (its key gone) is free: the holder died */
    redis_ok(a.c, "DEL %s", "crawler:{" CRAWL "}:robots-lock:http://h.test");
    cr_assert_eq(frontier_robots_lock(a.f, "http://h.test", 1, &won), 0);
    cr_expect_eq(won, 1);

    cr_expect_eq(frontier_robots_lock(a.f, "http://x.test", 0, &won), CRAWL_EINVAL);
    cr_expect_eq(won, 0);
    cr_expect_eq(frontier_robots_lock(a.f, "", 10, &won), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_lock(a.f, "http://x.test", 10, NULL), CRAWL_EINVAL);
    cr_expect_eq(frontier_robots_unlock(a.f, NULL), CRAWL_EINVAL);
    side_close(&b);
    side_close(&a);
    fx_redis_stop(r);
}

Test(keys, sitemaps_go_in_one_round_trip_into_the_crawls_set)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    const char *urls[] = {"http://a.test/sitemap.xml", "http://a.test/s2.xml",
                          "http://a.test/sitemap.xml"};
    uint64_t before = frontier_round_trips(s.f);
    cr_assert_eq(frontier_sitemaps_add(s.f, urls, 3), 0);
    cr_expect_eq(frontier_round_trips(s.f) - before, 1);
    cr_expect_eq(redis_int(s.c, "SCARD %s", "crawler:{" CRAWL "}:sitemaps"), 2);
    cr_expect_eq(
        redis_int(s.c, "SISMEMBER %s http://a.test/s2.xml", "crawler:{" CRAWL "}:sitemaps"), 1);
    before = frontier_round_trips(s.f);
    cr_expect_eq(frontier_sitemaps_add(s.f, NULL, 0), 0);
    cr_expect_eq(frontier_round_trips(s.f), before, "nothing to add: nothing sent");
    const char *bad[] = {"http://a.test/x", NULL};
    cr_expect_eq(frontier_sitemaps_add(s.f, bad, 2), CRAWL_EINVAL);
    cr_expect_eq(redis_int(s.c, "SCARD %s", "crawler:{" CRAWL "}:sitemaps"), 2, "nothing added");
    redis_ok(s.c, "DEL %s", "crawler:{" CRAWL "}:sitemaps");
    redis_ok(s.c, "SET %s x", "crawler:{" CRAWL "}:sitemaps");
    cr_expect_eq(frontier_sitemaps_add(s.f, urls, 1), CRAWL_EREPLY);
    side_close(&s);
    fx_redis_stop(r);
}

static int has(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return 1;
    return 0;
}

Test(keys, seed_hosts_lists_the_set_and_the_caller_owns_the_copy)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    char **hosts = (char **)&s;
    size_t n = 7;
    cr_assert_eq(frontier_seed_hosts(s.f, &hosts, &n), 0);
    cr_expect_null(hosts, "no seeds yet");
    cr_expect_eq(n, 0);
    redis_ok(s.c, "SADD %s a.test b.test c.test", "crawler:{" CRAWL "}:seedhosts");
    redis_ok(s.c, "SADD %s other.test", "crawler:{other}:seedhosts");
    cr_assert_eq(frontier_seed_hosts(s.f, &hosts, &n), 0);
    cr_assert_eq(n, 3);
    cr_expect(has(hosts, n, "a.test") && has(hosts, n, "b.test") && has(hosts, n, "c.test"));
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    cr_expect_eq(frontier_seed_hosts(s.f, NULL, &n), CRAWL_EINVAL);
    redis_ok(s.c, "DEL %s", "crawler:{" CRAWL "}:seedhosts");
    redis_ok(s.c, "SET %s x", "crawler:{" CRAWL "}:seedhosts");
    cr_expect_eq(frontier_seed_hosts(s.f, &hosts, &n), CRAWL_EREPLY);
    cr_expect(hosts == NULL && n == 0);
    side_close(&s);
    fx_redis_stop(r);
}

Test(keys, seeding_records_the_seeds_hosts_in_the_same_call)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    const char *seeds[] = {"http://a.test/", "http://b.test:8080/x", "http://a.test/y",
                           "https://[::1]/"};
    uint64_t before = frontier_round_trips(s.f);
    side_seed_all(s.f, seeds, 4);
    cr_expect_eq(frontier_round_trips(s.f) - before, 1, "one round trip records both");
    char **hosts = NULL;
    size_t n = 0;
    cr_assert_eq(frontier_seed_hosts(s.f, &hosts, &n), 0);
    cr_expect_eq(n, 3, "%zu hosts", n);
    cr_expect(has(hosts, n, "a.test") && has(hosts, n, "b.test") && has(hosts, n, "[::1]"),
              "the hosts, without scheme or port");
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    side_close(&s);
    fx_redis_stop(r);
}

Test(keys, every_shared_state_call_says_eio_when_redis_is_gone)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    signal(SIGPIPE, SIG_IGN); /* as the crawler does: a dead socket is an error, not death */
    fx_redis_stop(r);
    char *v = NULL, **hosts = NULL;
    size_t len = 0, n = 0;
    int won = 1;
    const char *u[] = {"http://a.test/s.xml"};
    cr_expect_eq(frontier_robots_get(s.f, "http://a.test", &v, &len), CRAWL_EREDIS);
    cr_expect_null(v);
    cr_expect_eq(frontier_robots_put(s.f, "http://a.test", "R", 1, 5), CRAWL_EREDIS);
    cr_expect_eq(frontier_robots_lock(s.f, "http://a.test", 5, &won), CRAWL_EREDIS);
    cr_expect_eq(won, 0, "an error is not a win: the caller decides");
    cr_expect_eq(frontier_robots_unlock(s.f, "http://a.test"), CRAWL_EREDIS);
    cr_expect_eq(frontier_sitemaps_add(s.f, u, 1), CRAWL_EREDIS);
    cr_expect_eq(frontier_seed_hosts(s.f, &hosts, &n), CRAWL_EREDIS);
    cr_expect_null(hosts);
    side_close(&s);
}

/* ---- frontier_open's own visited set ------------------------------------- */

static frontier_t *open_own(redisContext *c, uint64_t cap, double fp, size_t cache_bytes,
                            bloom_cache_t *shared, char *err, size_t errlen)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 100;
    cfg.bloom_capacity = cap;
    cfg.bloom_fp_rate = fp;
    cfg.bloom_cache_bytes = cache_bytes;
    cfg.bloom_shared_cache = shared;
    return fr_open(c, &cfg, NULL, err, errlen);
}

Test(keys, open_without_bloom_creates_the_filter_then_joins_it_as_created)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    char err[512] = "";
    frontier_t *f = open_own(c, 0, 0, 0, NULL, err, sizeof err);
    cr_expect_null(f, "no filter and nothing to create it with");
    cr_expect(strstr(err, "visited set crawler:{" CRAWL "}:seen"), "error: %s", err);
    cr_expect_eq(redis_int(c, "ZCARD %s", "crawler:{" CRAWL "}:workers"), 0,
                 "a failed open leaves no worker registered");

    f = open_own(c, 20000, 1e-3, 0, NULL, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    bloom_params_t want = {.capacity = 20000, .fp_rate = 1e-3, .growth = BLOOM_DEFAULT_GROWTH};
    bloom_geometry_t g;
    cr_assert_eq(bloom_geometry_for(&want, &g), 0);
    const bloom_geometry_t *got = bloom_geometry(frontier_bloom(f));
    cr_expect(got->m == g.m && got->k == g.k, "created with the config's n, p and growth");
    cr_expect_eq(bloom_growth(frontier_bloom(f)), BLOOM_DEFAULT_GROWTH);
    cr_expect_str_eq(bloom_name(frontier_bloom(f)), "crawler:{" CRAWL "}:seen");

    /* later openers join it as it is, whatever they would create */
    frontier_t *g2 = open_own(c, 999999, 1e-6, 0, NULL, err, sizeof err);
    cr_assert_not_null(g2, "%s", err);
    cr_expect_eq(bloom_geometry(frontier_bloom(g2))->m, g.m);
    frontier_t *j = open_own(c, 0, 0, 0, NULL, err, sizeof err);
    cr_assert_not_null(j, "join only: %s", err);
    cr_expect_eq(bloom_geometry(frontier_bloom(j))->m, g.m);

    /* the handle's filter works: seeding twice adds once */
    const char *seeds[] = {"http://a.test/", "http://b.test/"};
    size_t added = 0;
    cr_assert_eq(frontier_seed(f, seeds, 2, 0, &added), 0);
    cr_expect_eq(added, 2);
    cr_assert_eq(frontier_seed(j, seeds, 2, 0, &added), 0);
    cr_expect_eq(added, 0, "the joined filter is the same one");
    fr_close(j);
    fr_close(g2);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}

Test(keys, open_with_a_borrowed_bloom_hands_it_back_untouched)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, NULL, 1);
    cr_expect_eq(frontier_bloom(s.f), s.b, "the caller's filter");
    cr_expect_null(frontier_bloom(NULL));
    fr_close(s.f);
    s.f = NULL;
    cr_expect_str_eq(bloom_name(s.b), "crawler:{" CRAWL "}:seen", "still open after close");
    side_close(&s);
    fx_redis_stop(r);
}

/* Claims the one URL seeded and finishes it with one link. */
static void finish_with_link(frontier_t *f, const char *seed, const char *link)
{
    size_t added = 0;
    cr_assert_eq(frontier_seed(f, &seed, 1, 0, &added), 0);
    cr_assert_eq(added, 1);
    frontier_item_t it = {0};
    cr_assert_eq(side_claim(f, &it, 1), 1);
    frontier_done_t d = {
        .item = &it, .outcome = {.status = 200}, .links = &link, .nlinks = 1, .link_depth = 1};
    cr_assert_eq(frontier_finish(f, &d, 1), 0);
    frontier_item_clear(&it);
}

Test(keys, open_without_bloom_uses_the_cache_it_is_told)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    bloom_cache_t *shared = bloom_shared_cache_new(1 << 16);
    cr_assert_not_null(shared);
    char err[512] = "";
    frontier_t *a = open_own(c, 10000, 1e-4, 0, shared, err, sizeof err);
    cr_assert_not_null(a, "%s", err);
    frontier_t *b = open_own(c, 0, 0, 0, shared, err, sizeof err);
    frontier_t *priv = open_own(c, 0, 0, 0, NULL, err, sizeof err);
    frontier_t *none = open_own(c, 0, 0, SIZE_MAX, NULL, err, sizeof err);
    cr_assert(b && priv && none, "%s", err);
    finish_with_link(a, "http://a.test/", "http://a.test/l");
    finish_with_link(none, "http://n.test/", "http://n.test/l");
    const char *l = "http://a.test/l", *nl = "http://n.test/l";
    cr_expect_eq(bloom_cache_contains(frontier_bloom(b), l, strlen(l)), 1,
                 "a handle sharing the cache knows what the other learnt");
    cr_expect_eq(bloom_cache_contains(frontier_bloom(priv), l, strlen(l)), 0,
                 "a private cache does not");
    cr_expect_eq(bloom_cache_contains(frontier_bloom(none), nl, strlen(nl)), 0,
                 "no cache: nothing remembered");
    fr_close(none);
    fr_close(priv);
    fr_close(b);
    fr_close(a);
    bloom_shared_cache_free(shared);
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- every key of a crawl is in keys.def, and reset deletes them all ------ */

/* 1 if key (under prefix p) is a name keys.def allows. */
static int declared(const char *p, const char *key)
{
    size_t pl = strlen(p);
    if (strncmp(key, p, pl))
        return 0;
    const char *rest = key + pl;
    for (int i = 0; i < FR_K_COUNT; i++) {
        const char *s = fr_key_suffix(i);
        size_t sl = strlen(s);
        if (!strcmp(fr_key_type(i), "bloom")) {
            if (!strncmp(rest, s, sl) &&
                (!strcmp(rest + sl, ":meta") || !strncmp(rest + sl, ":b:", 3)))
                return 1;
        } else if (fr_key_is_family(i) ? !strncmp(rest, s, sl) && rest[sl] : !strcmp(rest, s)) {
            return 1;
        }
    }
    return 0;
}

/* Every key of the server; asserts each is declared for crawl CRAWL or
 * belongs to another crawl; returns how many are CRAWL's. */
static size_t check_all_declared(redisContext *c)
{
    char p[FR_PREFIX_MAX];
    fr_prefix(CRAWL, p, sizeof p);
    redisReply *r = redisCommand(c, "KEYS *");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    size_t mine = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const char *k = r->element[i]->str;
        if (strncmp(k, p, strlen(p)))
            continue;
        mine++;
        cr_expect(declared(p, k), "key %s is not in keys.def", k);
    }
    freeReplyObject(r);
    return mine;
}

Test(keys, a_crawl_writes_only_keys_of_keys_def)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, "w1", 1);
    const char *seeds[] = {"http://a.test/", "http://b.test/", "http://c.test/"};
    side_seed_all(s.f, seeds, 3);
    frontier_item_t it[3] = {{0}};
    cr_assert_eq(side_claim(s.f, it, 3), 3);
    const char *link = "http://a.test/next";
    frontier_done_t d = {.item = &it[0], .outcome = {.status = 200}, .links = &link, .nlinks = 1};
    cr_assert_eq(frontier_finish(s.f, &d, 1), 0);
    frontier_outcome_t o = {.status = 503};
    cr_assert_eq(frontier_retry(s.f, &it[1], &o, 0), 0);
    frontier_outcome_t e = {.error = "timeout"};
    frontier_done_t d2 = {.item = &it[2], .outcome = e};
    cr_assert_eq(frontier_finish(s.f, &d2, 1), 0);
    frontier_worker_stats_t ws = {.pages = 1};
    cr_assert_eq(frontier_heartbeat(s.f, &ws, NULL), 0);
    cr_assert_eq(frontier_set_host_delay(s.f, "http://a.test", 500), 0);
    int won;
    cr_assert_eq(frontier_robots_lock(s.f, "http://a.test", 60000, &won), 0);
    cr_assert_eq(frontier_robots_put(s.f, "http://a.test", "R", 1, 60), 0);
    const char *sm = "http://a.test/sitemap.xml";
    cr_assert_eq(frontier_sitemaps_add(s.f, &sm, 1), 0);
    redis_ok(s.c, "SADD %s a.test", "crawler:{" CRAWL "}:seedhosts");
    for (int i = 0; i < 3; i++)
        frontier_item_clear(&it[i]);
    size_t n = check_all_declared(s.c);
    cr_expect_geq(n, 15, "the workflow touched %zu keys", n);
    side_close(&s);
    fx_redis_stop(r);
}

/* Writes one key of every id of keys.def for crawl (families: member "m"). */
static size_t make_every_key(redisContext *c, const char *crawl)
{
    char p[FR_PREFIX_MAX], k[FR_KEY_MAX + 8];
    cr_assert_eq(fr_prefix(crawl, p, sizeof p), 0);
    size_t n = 0;
    for (int i = 0; i < FR_K_COUNT; i++) {
        int fam = fr_key_is_family(i);
        cr_assert_gt(fr_key_build(p, i, fam ? "m" : NULL, fam, k, sizeof k), 0);
        if (!strcmp(fr_key_type(i), "bloom")) {
            char meta[FR_KEY_MAX + 16];
            snprintf(meta, sizeof meta, "%s:meta", k);
            redis_ok(c, "HSET %s m 8", meta);
            snprintf(meta, sizeof meta, "%s:b:0", k);
            redis_ok(c, "SET %s x", meta);
            n += 2;
            continue;
        }
        redis_ok(c, "SET %s x", k);
        n++;
    }
    return n;
}

Test(keys, reset_deletes_every_key_of_keys_def_and_nothing_of_other_crawls)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    size_t mine = make_every_key(c, "a");
    size_t other = make_every_key(c, "ab") + make_every_key(c, "A");
    redis_ok(c, "SET %s x", "crawler:a:ready");
    uint64_t deleted = 0;
    cr_assert_eq(frontier_reset(c, "a", &deleted), 0);
    cr_expect_eq(deleted, mine, "deleted %llu of %zu", (unsigned long long)deleted, mine);
    char p[FR_PREFIX_MAX];
    fr_prefix("a", p, sizeof p);
    redisReply *k = redisCommand(c, "KEYS *");
    cr_assert(k && k->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(k->elements, other + 1, "the other crawls' keys and the stray one stay");
    for (size_t i = 0; i < k->elements; i++)
        cr_expect(strncmp(k->element[i]->str, p, strlen(p)), "%s survived", k->element[i]->str);
    freeReplyObject(k);
    redisFree(c);
    fx_redis_stop(r);
}
