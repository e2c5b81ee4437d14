/*
 * test_bloom_layers.c -- a filter that grows (bloom.h, "layers"): it passes
 * its first capacity many times and keeps its rate, racing adders across a
 * publication each see an item new exactly once, a second handle follows
 * the layers, a layer that does not fit under maxmemory stops the growth
 * with CRAWL_ENOROOM and publishes nothing, and a fixed filter keeps its
 * one layer.  Against a real redis-server started per test.
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

static size_t count_new(const uint8_t *v, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += v[i];
    return c;
}

Test(bloom_layers, layer_sizes_grow_and_tighten)
{
    uint64_t n;
    double p;
    cr_assert_eq(bloom_layer_size(1000, 1e-3, 2.0, 0, &n, &p), 0);
    cr_expect_eq(n, 1000);
    cr_expect(fabs(p - 1e-3 * 0.2) < 1e-12, "layer 0's rate %g", p);
    cr_assert_eq(bloom_layer_size(1000, 1e-3, 2.0, 3, &n, &p), 0);
    cr_expect_eq(n, 8000);
    cr_expect(fabs(p - 1e-3 * 0.2 * 0.512) < 1e-12, "layer 3's rate %g", p);
    double sum = 0; /* the rates of every possible layer add up to less than p */
    for (uint32_t j = 0; j < BLOOM_MAX_LAYERS; j++)
        if (bloom_layer_size(1, 1e-3, 1.5, j, &n, &p) == 0)
            sum += p;
    cr_expect(sum < 1e-3, "sum of layer rates %g", sum);
    cr_expect_eq(bloom_layer_size(1000, 1e-3, 1.0, 0, &n, &p), CRAWL_EINVAL);
    cr_expect_eq(bloom_layer_size(1000, 1e-3, 2.0, BLOOM_MAX_LAYERS, &n, &p), CRAWL_EINVAL);
}

/* 20 times its first capacity: every item new once, then seen; the layers
 * as the sizes say; the rate on fresh items under p. */
Test(bloom_layers, a_filter_passes_its_capacity_many_times)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 1000, .fp_rate = 1e-3, .growth = 2.0, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "g", &p);
    cr_expect_eq(bloom_layers(b), 1);
    urls_t u = make_urls("https://example.org/page/%zu", 0, 20000);
    uint8_t *res = malloc(u.n);
    size_t fresh = 0;
    for (size_t at = 0; at < u.n; at += 700) { /* batches that straddle the layers' ends */
        size_t m = u.n - at < 700 ? u.n - at : 700;
        cr_assert_eq(bloom_add_many(b, (const char *const *)u.v + at, u.len + at, m, res), 0, "%s",
                     bloom_errmsg(b));
        fresh += count_new(res, m);
    }
    /* false positives of the growing filter may hide a few */
    cr_expect(fresh >= u.n - 40 && fresh <= u.n, "%zu of %zu new", fresh, u.n);
    /* 1000 + 2000 + 4000 + 8000 = 15000 < 20000 <= 31000: five layers */
    cr_expect_eq(bloom_layers(b), 5, "layers: %u", bloom_layers(b));
    cr_assert_eq(bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res), 0);
    cr_expect_eq(count_new(res, u.n), 0, "every item is seen the second time");
    cr_assert_eq(bloom_contains_many(b, (const char *const *)u.v, u.len, u.n, res), 0);
    cr_expect_eq(count_new(res, u.n), u.n, "every item is present");
    urls_t f = make_urls("https://example.org/fresh/%zu", 0, 50000);
    uint8_t *fr = malloc(f.n);
    cr_assert_eq(bloom_contains_many(b, (const char *const *)f.v, f.len, f.n, fr), 0);
    size_t fp = count_new(fr, f.n);
    cr_expect(fp <= 50 + 3 * 7, "%zu false positives in 50000 (p 1e-3: at most ~50)", fp);
    bloom_info_t in;
    cr_assert_eq(bloom_info(b, &in), 0, "%s", bloom_errmsg(b));
    cr_expect_eq(in.layers, 5);
    uint64_t items = 0;
    for (uint32_t j = 0; j < in.layers; j++) {
        items += in.layer_items[j];
        cr_expect(in.layer_items[j] <= in.layer_capacity[j], "layer %u holds %llu of %llu", j,
                  (unsigned long long)in.layer_items[j], (unsigned long long)in.layer_capacity[j]);
    }
    cr_expect(items >= fresh && items <= u.n, "layers hold %llu items", (unsigned long long)items);
    cr_expect(in.whole_fp >= 0 && in.whole_fp < 1e-3, "whole rate %g", in.whole_fp);
    cr_expect_eq(redis_int(c, "EXISTS g:L4:meta"), 1);
    /* one hash for every layer: the same offsets, the block bloom_layer_block names */
    bloom_probe_t p0, pj;
    bloom_probe(b, u.v[7], u.len[7], &p0);
    for (uint32_t j = 1; j < bloom_layers(b); j++) {
        bloom_probe(bloom_layer(b, j), u.v[7], u.len[7], &pj);
        cr_expect(pj.k == p0.k && !memcmp(pj.bit, p0.bit, p0.k * sizeof p0.bit[0]),
                  "layer %u's offsets differ", j);
        cr_expect_eq(pj.block, bloom_layer_block(b, j, &p0), "layer %u's block", j);
        cr_expect_geq(bloom_geometry(bloom_layer(b, j))->m,
                      bloom_geometry(bloom_layer(b, j - 1))->m);
    }
    free(res), free(fr);
    free_urls(&u), free_urls(&f);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom_layers, a_fixed_filter_keeps_one_layer)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 100, .fp_rate = 1e-2};
    bloom_t *b = open_ok(c, "f", &p);
    urls_t u = make_urls("https://example.org/%zu", 0, 1000);
    uint8_t *res = malloc(u.n);
    cr_assert_eq(bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res), 0);
    cr_expect_eq(bloom_layers(b), 1);
    cr_expect_eq(bloom_growth(b), 0.0);
    cr_expect_eq(redis_int(c, "EXISTS f:L1:meta"), 0);
    cr_expect_eq(bloom_prepare(b, NULL), CRAWL_EINVAL);
    free(res);
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

/* Another handle, opened before the growth, follows the layers: it sees
 * what the first added in every layer, and adds into the newest. */
Test(bloom_layers, a_second_handle_follows_the_layers)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 500, .fp_rate = 1e-3, .growth = 2.0, .cache_bytes = SIZE_MAX};
    bloom_t *a = open_ok(c, "s", &p);
    redisContext *c2 = fx_redis_connect(r);
    bloom_t *b = open_ok(c2, "s", &p);
    urls_t u = make_urls("https://example.org/a/%zu", 0, 5000);
    uint8_t *res = malloc(u.n);
    cr_assert_eq(bloom_add_many(a, (const char *const *)u.v, u.len, u.n, res), 0);
    cr_expect_geq(bloom_layers(a), 4);
    cr_expect_eq(bloom_layers(b), 1, "b has not looked yet");
    cr_assert_eq(bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res), 0, "%s",
                 bloom_errmsg(b));
    cr_expect_eq(count_new(res, u.n), 0, "b sees every item a added");
    cr_expect_eq(bloom_layers(b), bloom_layers(a));
    free(res);
    free_urls(&u);
    bloom_close(a), bloom_close(b);
    redisFree(c), redisFree(c2);
    fx_redis_stop(r);
}

typedef struct racer {
    fx_redis_t *r;
    const urls_t *u;
    uint8_t *res;
    int rc;
} racer_t;

static void *race(void *arg)
{
    racer_t *x = arg;
    redisContext *c = fx_redis_connect(x->r);
    bloom_params_t p = {.capacity = 300, .fp_rate = 1e-3, .growth = 2.0, .cache_bytes = SIZE_MAX};
    int err = 0;
    bloom_t *b = c ? bloom_open(c, "race", &p, &err, NULL, 0) : NULL;
    x->rc = b ? 0 : err ? err : -1;
    /* in small batches, so that the four race through every publication */
    for (size_t at = 0; b && x->rc == 0 && at < x->u->n; at += 37) {
        size_t m = x->u->n - at < 37 ? x->u->n - at : 37;
        x->rc =
            bloom_add_many(b, (const char *const *)x->u->v + at, x->u->len + at, m, x->res + at);
    }
    bloom_close(b);
    if (c)
        redisFree(c);
    return NULL;
}

/* Four adders of the same 6000 items (20 times the first capacity), each
 * from its own connection: every item is new for exactly one of them,
 * whatever layer it landed in. */
Test(bloom_layers, racing_adders_see_each_item_new_once)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    urls_t u = make_urls("https://example.org/race/%zu", 0, 6000);
    racer_t x[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (racer_t){.r = r, .u = &u, .res = calloc(u.n, 1)};
        pthread_create(&t[i], NULL, race, &x[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    size_t twice = 0, never = 0;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(x[i].rc, 0, "adder %d: %s", i, crawl_strerror(x[i].rc));
    for (size_t j = 0; j < u.n; j++) {
        int n = x[0].res[j] + x[1].res[j] + x[2].res[j] + x[3].res[j];
        twice += n > 1;
        never += n == 0;
    }
    cr_expect_eq(twice, 0, "%zu items were new for two adders", twice);
    cr_expect(never <= 10, "%zu items were new for none (false positives: a few)", never);
    cr_expect_geq(redis_int(c, "EXISTS race:L4:meta"), 1, "the filter grew to 5 layers");
    for (int i = 0; i < 4; i++)
        free(x[i].res);
    free_urls(&u);
    redisFree(c);
    fx_redis_stop(r);
}

/* A layer too large for what Redis has left: CRAWL_ENOROOM, the layer
 * count unchanged, no block of it left behind. */
Test(bloom_layers, a_layer_refused_by_maxmemory_stops_the_growth)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    redis_ok(c, "CONFIG SET maxmemory-policy noeviction");
    bloom_params_t p = {
        .capacity = 20000, .fp_rate = 1e-3, .growth = 16.0, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "oom", &p);
    long long used = redis_int(c, "MEMORY USAGE oom:b:0");
    /* room for layer 1 (320,000 items, ~0.6 MB) but not layer 2 (~10 MB) */
    char cmd[96];
    redisReply *info = redisCommand(c, "INFO memory");
    const char *um = strstr(info->str, "used_memory:");
    long long now = um ? strtoll(um + 12, NULL, 10) : 0;
    freeReplyObject(info);
    snprintf(cmd, sizeof cmd, "CONFIG SET maxmemory %lld", now + 4 * 1024 * 1024);
    redis_ok(c, cmd);
    urls_t u = make_urls("https://example.org/oom/%zu", 0, 400000);
    uint8_t *res = malloc(u.n);
    int rc = bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, CRAWL_ENOROOM, "add past the room: %s (%s)", crawl_strerror(rc),
                 bloom_errmsg(b));
    cr_expect(strstr(bloom_errmsg(b), "cannot grow"), "message: %s", bloom_errmsg(b));
    cr_expect_eq(bloom_layers(b), 2, "layer 1 fitted, layer 2 did not");
    cr_expect_eq(redis_int(c, "EXISTS oom:L2:meta"), 0);
    cr_expect_eq(redis_int(c, "EXISTS oom:L2:b:0"), 0, "no block of the refused layer is left");
    cr_expect_eq(redis_int(c, "EXISTS oom:L2:creating"), 0);
    (void)used;
    free(res);
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

/* A Redis restarted from its file may have lost a layer's publication: the
 * handle that reads the layers again drops the ones no longer counted (a
 * frozen one's local copy with them) and goes on adding exactly. */
Test(bloom_layers, a_handle_follows_layers_that_went_back)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 200, .fp_rate = 1e-3, .growth = 2.0, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "back", &p);
    urls_t u = make_urls("https://example.org/back/%zu", 0, 2000);
    uint8_t *res = malloc(u.n);
    cr_assert_eq(bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res), 0);
    /* again: the frozen layers are tested from the handle's copies now */
    cr_assert_eq(bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res), 0);
    cr_assert_geq(bloom_layers(b), 4, "layers: %u", bloom_layers(b));
    redis_ok(c, "HSET back:meta layers 2 added 0 full_at 400");
    cr_expect_eq(bloom_refresh(b, NULL), 1);
    cr_expect_eq(bloom_layers(b), 2);
    urls_t f = make_urls("https://example.org/after/%zu", 0, 300);
    uint8_t *fr = malloc(f.n);
    cr_assert_eq(bloom_add_many(b, (const char *const *)f.v, f.len, f.n, fr), 0, "%s",
                 bloom_errmsg(b));
    cr_expect_eq(count_new(fr, f.n), f.n, "new URLs after the layers went back");
    cr_assert_eq(bloom_add_many(b, (const char *const *)f.v, f.len, f.n, fr), 0);
    cr_expect_eq(count_new(fr, f.n), 0, "and seen the second time");
    free(res), free(fr);
    free_urls(&u), free_urls(&f);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}
