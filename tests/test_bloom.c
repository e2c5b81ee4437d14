/*
 * test_bloom.c -- the Redis-backed Bloom filter (bloom/) at work, against a
 * real redis-server started per test: sizing and geometry, probe positions,
 * no false negatives and the false-positive rate at scale, concurrent adds,
 * the local cache, info and destroy.  Opening and its failure modes:
 * test_bloom_open.c; `crawler bloom`: test_bloom_cli.c.
 *
 * Statistics of the false-positive tests: a filter sized for n items at
 * rate p gets exactly n items, then 10^6 items that were never added are
 * checked.  Given the filter, each check is an independent Bernoulli(f)
 * trial (f = (set bits / m)^k, about p); the count of false positives has
 * mean 10^6 f and standard deviation sqrt(10^6 f): 100 (1%) for p = 10^-2,
 * 32 (3.2%) for p = 10^-3.  The fill itself varies by about 0.1% (k times
 * that in f).  +-20% is therefore more than 6 standard deviations: the test
 * cannot fail by bad luck, and with fixed seeds and inputs it is
 * deterministic anyway -- it fails only if the hashing is biased (e.g. the
 * unreachable-position bug) or the sizing is wrong.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "bloom_check.h"
#include "fixtures.h"

/* ---- sizing and geometry (pure) ------------------------------------------- */

Test(bloom, sizing_matches_guava_formulas)
{
    static const struct {
        uint64_t n;
        double p;
        uint64_t m;
        uint32_t k;
    } cases[] = {
        {1, 0.5, 2, 1},
        {1000, 0.01, 9586, 7},
        {1000000, 0.01, 9585059, 7},
        {1000000, 0.001, 14377588, 10},
        {100000000, 1e-4, 1917011676, 13},
        {1000000000, 1e-6, 28755175133ULL, 20}, /* m > 2^32: 64-bit arithmetic */
        {123457, 0.03, 901044, 5},
        {10, 1e-15, 719, BLOOM_MAX_K}, /* k capped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t m = 0;
        uint32_t k = 0;
        int rc = bloom_size(cases[i].n, cases[i].p, &m, &k);
        cr_assert_eq(rc, 0, "bloom_size(%llu, %g) failed", (unsigned long long)cases[i].n,
                     cases[i].p);
        cr_expect_eq(m, cases[i].m, "bloom_size(%llu, %g): m = %llu, expected %llu",
                     (unsigned long long)cases[i].n, cases[i].p, (unsigned long long)m,
                     (unsigned long long)cases[i].m);
        cr_expect_eq(k, cases[i].k, "bloom_size(%llu, %g): k = %u, expected %u",
                     (unsigned long long)cases[i].n, cases[i].p, k, cases[i].k);
    }
}

Test(bloom, sizing_rejects_zero_items_and_rates_outside_0_1)
{
    static const struct {
        uint64_t n;
        double p;
    } bad[] = {{0, 0.01},  {100, 0.0}, {100, 1.0},      {100, -0.1},
               {100, 1.5}, {100, NAN}, {100, INFINITY}, {UINT64_MAX, 1e-9}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t m;
        uint32_t k;
        cr_expect_eq(bloom_size(bad[i].n, bad[i].p, &m, &k), CRAWL_EINVAL,
                     "bloom_size(%llu, %g) should be CRAWL_EINVAL", (unsigned long long)bad[i].n,
                     bad[i].p);
    }
}

Test(bloom, geometry_uses_whole_blocks_within_the_block_size)
{
    static const struct {
        uint64_t n;
        double p;
        uint64_t block_bits;
    } cases[] = {
        {1000, 0.01, 0},          {1000, 0.01, 64},      {100000, 0.01, 0},
        {1000000, 0.001, 0},      {1000000, 0.01, 8192}, {1000000000, 1e-6, 0},
        {5000000000ULL, 1e-3, 0}, {123457, 0.03, 1000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bloom_params_t p = {
            .capacity = cases[i].n, .fp_rate = cases[i].p, .block_bits = cases[i].block_bits};
        bloom_geometry_t g;
        uint64_t m;
        uint32_t k;
        cr_assert_eq(bloom_geometry_for(&p, &g), 0, "geometry_for(n=%llu)",
                     (unsigned long long)p.capacity);
        cr_assert_eq(bloom_size(p.capacity, p.fp_rate, &m, &k), 0);
        uint64_t max_bb = p.block_bits ? p.block_bits : BLOOM_MAX_BLOCK_BITS;
        cr_expect_eq(g.k, k, "n=%llu: k", (unsigned long long)p.capacity);
        cr_expect_eq(g.m, (uint64_t)g.blocks * g.block_bits, "n=%llu: m != blocks * block_bits",
                     (unsigned long long)p.capacity);
        cr_expect(g.block_bits <= max_bb && g.block_bits % 8 == 0, "n=%llu: block_bits %llu",
                  (unsigned long long)p.capacity, (unsigned long long)g.block_bits);
        cr_expect(g.m >= m && g.m < m + 8 * (uint64_t)g.blocks, "n=%llu: m %llu vs Guava's %llu",
                  (unsigned long long)p.capacity, (unsigned long long)g.m, (unsigned long long)m);
        cr_expect_eq(g.seed, BLOOM_DEFAULT_SEED);
    }
    bloom_params_t bad = {.capacity = 1000, .fp_rate = 0.01, .block_bits = 12};
    bloom_geometry_t g;
    cr_expect_eq(bloom_geometry_for(&bad, &g), CRAWL_EINVAL, "block_bits 12 is not whole bytes");
    bloom_params_t none = {0};
    cr_expect_eq(bloom_geometry_for(&none, &g), CRAWL_EINVAL, "no capacity nor rate");
}

/* ---- probe positions -------------------------------------------------------- */

Test(bloom, probe_gives_exactly_the_bits_add_sets)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {
        .capacity = 1000, .fp_rate = 1e-3, .block_bits = 512, .cache_bytes = SIZE_MAX};
    const char *items[] = {"https://example.com/", "https://example.com/a?b=c",
                           "http://xn--bcher-kva.example/"};
    for (size_t t = 0; t < 3; t++) {
        char name[32];
        snprintf(name, sizeof name, "probe%zu", t);
        bloom_t *b = open_ok(c, name, &p);
        bloom_probe_t pr;
        bloom_probe(b, items[t], strlen(items[t]), &pr);
        cr_assert_eq(pr.k, bloom_geometry(b)->k);
        cr_assert_lt(pr.block, bloom_geometry(b)->blocks);
        uint8_t fresh = 0;
        cr_assert_eq(bloom_add_many(b, &items[t], NULL, 1, &fresh), 0);
        cr_assert_eq(fresh, 1, "first add of %s must be new", items[t]);
        char key[128];
        cr_assert_gt(bloom_block_key(b, pr.block, key, sizeof key), 0);
        size_t distinct = 0;
        for (uint32_t i = 0; i < pr.k; i++) {
            char cmd[256];
            snprintf(cmd, sizeof cmd, "GETBIT %s %llu", key, (unsigned long long)pr.bit[i]);
            cr_expect_eq(redis_int(c, cmd), 1, "%s: bit %llu of %s not set", items[t],
                         (unsigned long long)pr.bit[i], key);
            int dup = 0;
            for (uint32_t j = 0; j < i; j++)
                dup |= pr.bit[j] == pr.bit[i];
            distinct += !dup;
        }
        long long total = 0;
        for (uint32_t blk = 0; blk < bloom_geometry(b)->blocks; blk++) {
            char cmd[256];
            bloom_block_key(b, blk, key, sizeof key);
            snprintf(cmd, sizeof cmd, "BITCOUNT %s", key);
            total += redis_int(c, cmd);
        }
        cr_expect_eq(total, (long long)distinct, "%s: add set %lld bits, probe names %zu", items[t],
                     total, distinct);
        bloom_close(b);
    }
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, every_position_of_every_block_is_reachable)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    /* 480 bits -> 8 blocks of 64 bits, k = 3 */
    bloom_params_t p = {.capacity = 100, .fp_rate = 0.1, .block_bits = 64};
    bloom_t *b = open_ok(c, "reach", &p);
    const bloom_geometry_t *g = bloom_geometry(b);
    cr_assert_eq(g->blocks, 8);
    cr_assert_eq(g->block_bits, 64);
    uint8_t seen[8][64] = {{0}};
    char item[64];
    for (unsigned i = 0; i < 20000; i++) {
        int n = snprintf(item, sizeof item, "https://reach.example/%u", i);
        bloom_probe_t pr;
        bloom_probe(b, item, (size_t)n, &pr);
        cr_assert_lt(pr.block, 8);
        for (uint32_t j = 0; j < pr.k; j++) {
            cr_assert_lt(pr.bit[j], 64);
            seen[pr.block][pr.bit[j]] = 1;
        }
    }
    for (int blk = 0; blk < 8; blk++)
        for (int bit = 0; bit < 64; bit++)
            cr_expect(seen[blk][bit], "block %d bit %d never chosen", blk, bit);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- correctness at scale ----------------------------------------------------- */

Test(bloom, no_false_negatives_over_a_million_items, .timeout = 600)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 1000000, .fp_rate = 0.01, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "fn", &p);
    urls_t u = make_urls("https://www.site-%zu.example/some/path/page.html?id=42", 0, 1000000);
    size_t fresh = add_all(b, &u, 5000);
    cr_expect_gt(fresh, 990000, "only %zu of 10^6 distinct items were new", fresh);
    size_t present = count_present(b, &u, 5000);
    cr_expect_eq(present, u.n, "%zu of %zu added items are missing", u.n - present, u.n);
    cr_expect_eq(add_all(b, &u, 5000), 0, "re-adding must report every item seen");
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

static void check_fp_rate(double rate)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 100000, .fp_rate = rate, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "fp", &p);
    urls_t in = make_urls("https://in.example/item/%zu", 0, 100000);
    add_all(b, &in, 5000);
    urls_t out = make_urls("https://out.example/item/%zu", 0, 1000000);
    size_t fp = count_present(b, &out, 5000);
    double measured = (double)fp / (double)out.n;
    cr_expect(measured >= 0.8 * rate && measured <= 1.2 * rate,
              "p = %g: measured false-positive rate %g (%zu of %zu) outside +-20%%", rate, measured,
              fp, out.n);
    free_urls(&in);
    free_urls(&out);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, false_positive_rate_is_within_20_percent_of_1e_2, .timeout = 600)
{
    check_fp_rate(1e-2);
}

Test(bloom, false_positive_rate_is_within_20_percent_of_1e_3, .timeout = 600)
{
    check_fp_rate(1e-3);
}

Test(bloom, many_block_filter_behaves_like_a_one_block_one, .timeout = 600)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t one = {.capacity = 50000, .fp_rate = 0.01, .cache_bytes = SIZE_MAX};
    bloom_params_t many = one;
    many.block_bits = 8192;
    bloom_t *b1 = open_ok(c, "one", &one);
    bloom_t *bm = open_ok(c, "many", &many);
    cr_assert_eq(bloom_geometry(b1)->blocks, 1);
    cr_assert_geq(bloom_geometry(bm)->blocks, 50);
    cr_assert_eq(bloom_geometry(b1)->k, bloom_geometry(bm)->k);
    /* same answers to adds with duplicates inside and across batches */
    urls_t u = make_urls("https://dup.example/%zu", 0, 50000);
    for (size_t i = 7; i < u.n; i += 7) { /* every 7th item repeats its predecessor */
        memcpy(u.v[i], u.v[i - 1], u.len[i - 1] + 1);
        u.len[i] = u.len[i - 1];
    }
    size_t f1 = add_all(b1, &u, 1000), fm = add_all(bm, &u, 1000);
    size_t distinct = u.n - (u.n - 1) / 7;
    cr_expect(f1 <= distinct && f1 >= distinct - distinct / 50, "one block: %zu new of %zu", f1,
              distinct);
    cr_expect(fm <= distinct && fm >= distinct - distinct / 50, "many blocks: %zu new of %zu", fm,
              distinct);
    cr_expect_eq(count_present(b1, &u, 1000), u.n);
    cr_expect_eq(count_present(bm, &u, 1000), u.n);
    /* false-positive rate: both as theory says for `distinct` items */
    const bloom_geometry_t *g = bloom_geometry(b1);
    double want = pow(1 - exp(-(double)g->k * (double)distinct / (double)g->m), g->k);
    urls_t out = make_urls("https://absent.example/%zu", 0, 500000);
    double r1 = (double)count_present(b1, &out, 5000) / (double)out.n;
    double rm = (double)count_present(bm, &out, 5000) / (double)out.n;
    cr_expect(r1 >= 0.8 * want && r1 <= 1.2 * want,
              "one block: false-positive rate %g, "
              "theory %g",
              r1, want);
    cr_expect(rm >= 0.8 * want && rm <= 1.2 * want,
              "many blocks: false-positive rate %g, "
              "theory %g",
              rm, want);
    free_urls(&u);
    free_urls(&out);
    bloom_close(b1);
    bloom_close(bm);
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- concurrency ----------------------------------------------------------------- */

typedef struct adder {
    fx_redis_t *redis;
    const urls_t *urls;
    size_t fresh;
    int rc;
    char msg[512];
} adder_t;

static void *adder_main(void *arg)
{
    adder_t *a = arg;
    redisContext *c = fx_redis_connect(a->redis);
    if (!c) {
        a->rc = CRAWL_EREDIS;
        snprintf(a->msg, sizeof a->msg, "%s", fx_error());
        return NULL;
    }
    bloom_params_t p = {.capacity = 1000000, .fp_rate = 1e-7};
    bloom_t *b = bloom_open(c, "race", &p, &a->rc, a->msg, sizeof a->msg);
    uint8_t res[1000];
    for (size_t i = 0; b && i < a->urls->n; i += 1000) {
        size_t cnt = a->urls->n - i < 1000 ? a->urls->n - i : 1000;
        a->rc = bloom_add_many(b, (const char *const *)a->urls->v + i, a->urls->len + i, cnt, res);
        if (a->rc < 0) {
            snprintf(a->msg, sizeof a->msg, "%s", bloom_errmsg(b));
            break;
        }
        for (size_t j = 0; j < cnt; j++)
            a->fresh += res[j];
    }
    bloom_close(b);
    redisFree(c);
    return NULL;
}

Test(bloom, concurrent_adds_report_new_once, .timeout = 600)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    urls_t u = make_urls("https://race.example/page/%zu", 0, 100000);
    adder_t a[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (adder_t){.redis = r, .urls = &u};
        cr_assert_eq(pthread_create(&th[i], NULL, adder_main, &a[i]), 0);
    }
    size_t total = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(a[i].rc, 0, "thread %d: %s (%s)", i, crawl_strerror(a[i].rc), a[i].msg);
        total += a[i].fresh;
    }
    cr_expect_eq(total, 100000, "8 threads adding the same 10^5 URLs got %zu \"new\"", total);
    free_urls(&u);
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- the local cache ------------------------------------------------------------- */

Test(bloom, cache_answers_seen_without_a_round_trip)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 10000, .fp_rate = 0.01, .cache_bytes = 1 << 16};
    bloom_t *b = open_ok(c, "cache", &p);
    urls_t u = make_urls("https://menu.example/nav/%zu", 0, 200);
    cr_assert_eq(add_all(b, &u, 200), 200);
    cr_expect(bloom_cache_contains(b, u.v[5], u.len[5]));
    cr_expect_not(bloom_cache_contains(b, "https://other.example/", 22));
    fx_redis_stop(r); /* from here on any round trip would fail */
    uint8_t res[200];
    int rc = bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, 0, "cached items need no Redis: %s", crawl_strerror(rc));
    for (size_t i = 0; i < u.n; i++)
        cr_expect_eq(res[i], 0, "%s must be seen", u.v[i]);
    rc = bloom_contains_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, 0);
    for (size_t i = 0; i < u.n; i++)
        cr_expect_eq(res[i], 1, "%s must be present", u.v[i]);
    /* something new still needs Redis, which is gone: a clear error */
    const char *fresh = "https://new.example/";
    cr_expect_eq(bloom_add_many(b, &fresh, NULL, 1, res), CRAWL_EREDIS);
    /* noted items (added by someone else's script) are answered too */
    bloom_cache_note(b, &fresh, NULL, 1);
    cr_expect(bloom_cache_contains(b, fresh, strlen(fresh)));
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
}

/* bloom_cache_forget: after Redis lost writes it had acknowledged (here:
 * the filter's blocks emptied behind the handle's back, as a server
 * restarted from an append-only file a second old would have them), the
 * cache no longer answers "seen" for what it remembered, private or
 * shared, so the items go to Redis again and are new there. */
Test(bloom, cache_forgets_what_redis_may_have_lost)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_cache_t *shared = bloom_shared_cache_new(1 << 16);
    cr_assert_not_null(shared);
    bloom_params_t pp = {.capacity = 10000, .fp_rate = 0.01, .cache_bytes = 1 << 16};
    bloom_params_t ps = {.capacity = 10000, .fp_rate = 0.01, .shared_cache = shared};
    bloom_t *b[2] = {open_ok(c, "forget-own", &pp), open_ok(c, "forget-shared", &ps)};
    urls_t u = make_urls("https://lost.example/p/%zu", 0, 50);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(add_all(b[k], &u, 50), 50);
        cr_assert(bloom_cache_contains(b[k], u.v[7], u.len[7]));
        redisReply *d = redisCommand(c, "EVAL %s 0 %s", /* every block of the filter zeroed */
                                     "for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':b:*')) do "
                                     "redis.call('SETRANGE', k, 0, string.rep('\\0', "
                                     "redis.call('STRLEN', k))) end return 1",
                                     k ? "forget-shared" : "forget-own");
        cr_assert(d && d->type == REDIS_REPLY_INTEGER, "%s", d && d->str ? d->str : c->errstr);
        freeReplyObject(d);
        uint8_t res[50];
        cr_assert_eq(bloom_add_many(b[k], (const char *const *)u.v, u.len, u.n, res), 0);
        size_t fresh = 0;
        for (size_t i = 0; i < u.n; i++)
            fresh += res[i];
        cr_expect_eq(fresh, 0, "the cache answered without Redis: %zu new", fresh);
        bloom_cache_forget(b[k]);
        cr_expect_not(bloom_cache_contains(b[k], u.v[7], u.len[7]), "remembered after forget");
        cr_assert_eq(bloom_add_many(b[k], (const char *const *)u.v, u.len, u.n, res), 0);
        fresh = 0;
        for (size_t i = 0; i < u.n; i++)
            fresh += res[i];
        cr_expect_eq(fresh, 50, "%s: after forget, %zu of the 50 lost items new again",
                     k ? "shared" : "own", fresh);
    }
    free_urls(&u);
    bloom_close(b[0]);
    bloom_close(b[1]);
    bloom_shared_cache_free(shared);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, cache_keeps_fixed_memory_and_evicts)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 100000, .fp_rate = 0.01, .cache_bytes = 4096};
    bloom_t *b = open_ok(c, "small", &p);
    urls_t u = make_urls("https://evict.example/%zu", 0, 10000);
    add_all(b, &u, 1000);
    size_t cached = 0;
    for (size_t i = 0; i < u.n; i++)
        cached += (size_t)bloom_cache_contains(b, u.v[i], u.len[i]);
    bloom_info_t info;
    cr_assert_eq(bloom_info(b, &info), 0);
    cr_expect_eq(info.cache_entries, 512, "4096 bytes hold 512 fingerprints");
    cr_expect(cached > 0 && cached <= 512, "%zu cached", cached);
    /* evicted ones are still seen: they go to Redis */
    cr_expect_eq(add_all(b, &u, 1000), 0);
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, contains_writes_nothing_and_duplicates_in_a_batch_are_new_once)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 10000, .fp_rate = 0.01, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "ro", &p);
    urls_t u = make_urls("https://ro.example/%zu", 0, 3000);
    long long before = changes_since_save(c);
    cr_expect_eq(count_present(b, &u, 1000), 0);
    cr_expect_eq(changes_since_save(c), before, "contains_many wrote to Redis");
    const char *dup[] = {"https://d.example/", "https://e.example/", "https://d.example/",
                         "https://d.example/"};
    uint8_t res[4];
    cr_assert_eq(bloom_add_many(b, dup, NULL, 4, res), 0);
    cr_expect(res[0] == 1 && res[1] == 1 && res[2] == 0 && res[3] == 0, "new once: %d %d %d %d",
              res[0], res[1], res[2], res[3]);
    cr_expect_eq(bloom_add_many(b, dup, NULL, 0, res), 0, "an empty batch is fine");
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- info and destroy --------------------------------------------------------------- */

Test(bloom, info_reports_fill_estimates_and_memory)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 1000000, .fp_rate = 0.01};
    bloom_t *b = open_ok(c, "info", &p);
    urls_t u = make_urls("https://info.example/%zu", 0, 50000);
    add_all(b, &u, 5000);
    add_all(b, &u, 5000); /* all from the cache */
    bloom_info_t in;
    cr_assert_eq(bloom_info(b, &in), 0, "%s", bloom_errmsg(b));
    const bloom_geometry_t *g = bloom_geometry(b);
    cr_expect_eq(in.geo.m, g->m);
    cr_expect_eq(in.capacity, 1000000);
    cr_expect(fabs(in.fp_rate - 0.01) < 1e-12);
    cr_expect_gt(in.bits_set, 0);
    cr_expect(fabs(in.fill - (double)in.bits_set / (double)g->m) < 1e-12);
    cr_expect(in.est_items > 49000 && in.est_items < 51000, "est items %g for 50000", in.est_items);
    cr_expect(fabs(in.est_fp_rate / pow(in.fill, g->k) - 1) < 1e-9, "est fp %g", in.est_fp_rate);
    cr_expect_eq(in.cache_hits, 50000);
    double bytes = (double)g->m / 8;
    cr_expect(in.redis_bytes >= bytes && in.redis_bytes <= 1.02 * bytes,
              "Redis holds %llu bytes for m/8 = %.0f (%u blocks)",
              (unsigned long long)in.redis_bytes, bytes, g->blocks);
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, destroy_deletes_every_key)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 10000, .fp_rate = 0.01, .block_bits = 1024};
    bloom_close(open_ok(c, "gone", &p));
    redis_ok(c, "SET unrelated 1");
    cr_assert_gt(redis_int(c, "DBSIZE"), 10);
    cr_expect_eq(bloom_destroy(c, "gone"), 0);
    cr_expect_eq(redis_int(c, "DBSIZE"), 1);
    cr_expect_eq(bloom_destroy(c, "gone"), 0, "destroying nothing is fine");
    redisFree(c);
    fx_redis_stop(r);
}
