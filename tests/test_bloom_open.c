/*
 * test_bloom_open.c -- opening a Bloom filter (bloom_open): later openers
 * use the stored geometry, absent filters, geometry mismatches, wrong key
 * types, corrupt or foreign metadata, bad parameters, and Redis going away
 * before or during a batch (CRAWL_EREDIS, never a crash).  Against a real
 * redis-server started per test.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "bloom_check.h"
#include "fixtures.h"

/* ---- opening: reuse, mismatch and bad states --------------------------------------- */

Test(bloom, later_openers_use_the_stored_geometry)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 20000, .fp_rate = 1e-3, .block_bits = 4096, .seed = 7};
    bloom_t *b = open_ok(c, "geo", &p);
    bloom_geometry_t g = *bloom_geometry(b);
    const char *item = "https://example.org/x";
    uint8_t fresh;
    cr_assert_eq(bloom_add_many(b, &item, NULL, 1, &fresh), 0);
    cr_assert_eq(fresh, 1);
    bloom_t *again = open_ok(c, "geo", NULL);
    const bloom_geometry_t *g2 = bloom_geometry(again);
    cr_expect(g2->m == g.m && g2->k == g.k && g2->blocks == g.blocks &&
                  g2->block_bits == g.block_bits && g2->seed == 7 && g2->version == 1,
              "reopened geometry differs");
    bloom_t *same = open_ok(c, "geo", &p); /* same parameters: fine */
    bloom_params_t cache_only = {.cache_bytes = 1 << 16};
    bloom_t *third = open_ok(c, "geo", &cache_only);
    cr_assert_eq(bloom_contains_many(third, &item, NULL, 1, &fresh), 0);
    cr_expect_eq(fresh, 1, "an item added through one handle is present through another");
    cr_assert_eq(bloom_add_many(same, &item, NULL, 1, &fresh), 0);
    cr_expect_eq(fresh, 0);
    bloom_close(b);
    bloom_close(again);
    bloom_close(same);
    bloom_close(third);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, absent_filter_without_parameters_is_not_found)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    char msg[512];
    cr_expect_eq(open_fails(c, "nothing", NULL, msg, sizeof msg), CRAWL_ENOTFOUND);
    cr_expect(strstr(msg, "nothing"), "message should name the filter: %s", msg);
    cr_expect_eq(redis_int(c, "DBSIZE"), 0, "a failed open must not create keys");
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, geometry_mismatch_names_both_geometries)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    bloom_params_t p = {.capacity = 10000, .fp_rate = 0.01};
    bloom_close(open_ok(c, "mm", &p));
    bloom_params_t q = {.capacity = 20000, .fp_rate = 0.01};
    char msg[512];
    cr_expect_eq(open_fails(c, "mm", &q, msg, sizeof msg), CRAWL_EMISMATCH);
    cr_expect(strstr(msg, "m=95856") && strstr(msg, "m=191704"),
              "message should give both geometries: %s", msg);
    bloom_params_t s = {.capacity = 10000, .fp_rate = 0.01, .seed = 99};
    cr_expect_eq(open_fails(c, "mm", &s, msg, sizeof msg), CRAWL_EMISMATCH, "other seed");
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, wrong_key_type_is_reported)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    char msg[512];
    bloom_params_t p = {.capacity = 1000, .fp_rate = 0.01};
    redis_ok(c, "SET str:meta hello");
    cr_expect_eq(open_fails(c, "str", &p, msg, sizeof msg), CRAWL_EWRONGTYPE, "%s", msg);
    cr_expect_eq(open_fails(c, "str", NULL, msg, sizeof msg), CRAWL_EWRONGTYPE, "%s", msg);
    cr_expect_eq(bloom_destroy(c, "str"), CRAWL_EWRONGTYPE);
    /* a block replaced by a list: opening and adding both say so */
    bloom_t *b = open_ok(c, "blk", &p);
    redis_ok(c, "DEL blk:b:0");
    redis_ok(c, "RPUSH blk:b:0 x");
    cr_expect_eq(open_fails(c, "blk", NULL, msg, sizeof msg), CRAWL_EWRONGTYPE, "%s", msg);
    const char *items[] = {"https://a.example/", "https://b.example/"};
    uint8_t res[2];
    cr_expect_eq(bloom_add_many(b, items, NULL, 2, res), CRAWL_EWRONGTYPE);
    cr_expect_eq(bloom_contains_many(b, items, NULL, 2, res), CRAWL_EWRONGTYPE);
    /* the connection stayed in step: it still answers correctly */
    cr_expect_eq(redis_int(c, "EXISTS blk:meta"), 1);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, corrupt_or_foreign_metadata_is_reported)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    static const char *const metas[] = {
        "HSET f1:meta m 1000 k 7 blocks 1 block_bits 1000 seed 1 hash murmur3 version 1",
        "HSET f2:meta m 1000 k 7 blocks 1 block_bits 1000 seed 1 hash xxh3-128 version 2",
        "HSET f3:meta m 1000 k 7 blocks 1 block_bits 1000 hash xxh3-128 version 1",
        "HSET f4:meta m 1000 k seven blocks 1 block_bits 1000 seed 1 hash xxh3-128 version 1",
        "HSET f5:meta m 2000 k 7 blocks 1 block_bits 1000 seed 1 hash xxh3-128 version 1",
        "HSET f6:meta m 1000 k 0 blocks 1 block_bits 1000 seed 1 hash xxh3-128 version 1",
        "HSET f7:meta m 1000 k 7 blocks 1 block_bits 1000 seed 1 hash xxh3-128 version 1",
        "HSET f8:meta owner someone-else",
    };
    char msg[512], name[8];
    for (size_t i = 0; i < sizeof metas / sizeof metas[0]; i++) {
        redis_ok(c, metas[i]);
        snprintf(name, sizeof name, "f%zu", i + 1);
        /* f7 is well-formed but its block key is missing */
        cr_expect_eq(open_fails(c, name, NULL, msg, sizeof msg), CRAWL_ECORRUPT, "%s: %s", metas[i],
                     msg);
    }
    redis_ok(c, "SETBIT f7:b:0 7 0"); /* one byte, not 125 */
    cr_expect_eq(open_fails(c, "f7", NULL, msg, sizeof msg), CRAWL_ECORRUPT, "short block: %s",
                 msg);
    redis_ok(c, "SETBIT f7:b:0 999 0");
    bloom_close(open_ok(c, "f7", NULL));
    /* blocks left over without meta are not silently reused */
    redis_ok(c, "SETBIT orphan:b:0 5 1");
    bloom_params_t p = {.capacity = 1000, .fp_rate = 0.01};
    cr_expect_eq(open_fails(c, "orphan", &p, msg, sizeof msg), CRAWL_ECORRUPT, "%s", msg);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, bad_parameters_are_rejected_before_touching_redis)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    static const bloom_params_t bad[] = {
        {.capacity = 1000, .fp_rate = 1.0},
        {.capacity = 1000, .fp_rate = -0.5},
        {.capacity = 1000, .fp_rate = 2.0},
        {.capacity = 1000, .fp_rate = NAN},
        {.capacity = 1000, .fp_rate = 0.01, .block_bits = 100},
        {.capacity = 1000, .fp_rate = 0.01, .block_bits = (1ULL << 32) + 8},
        {.capacity = 1ULL << 40, .fp_rate = 0.01, .block_bits = 8},
    };
    char msg[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(open_fails(c, "bad", &bad[i], msg, sizeof msg), CRAWL_EINVAL, "params %zu: %s",
                     i, msg);
    cr_expect_eq(open_fails(c, "", NULL, msg, sizeof msg), CRAWL_EINVAL, "empty name");
    cr_expect_eq(redis_int(c, "DBSIZE"), 0);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, redis_down_gives_eio_not_a_crash)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    signal(SIGPIPE, SIG_DFL); /* the library must not need the caller to ignore it */
    bloom_params_t p = {.capacity = 100000, .fp_rate = 0.01, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "down", &p);
    urls_t u = make_urls("https://down.example/%zu", 0, 20000);
    cr_assert_eq(add_all(b, &u, 1000), 20000, "before the stop");
    fx_redis_stop(r);
    uint8_t *res = malloc(u.n);
    int rc = bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, CRAWL_EREDIS, "add after stop: %s", crawl_strerror(rc));
    cr_expect(strlen(bloom_errmsg(b)) > 0, "a message says what happened");
    rc = bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, CRAWL_EREDIS, "the connection stays failed");
    cr_expect_eq(bloom_contains_many(b, (const char *const *)u.v, u.len, 10, res), CRAWL_EREDIS);
    bloom_info_t info;
    cr_expect_eq(bloom_info(b, &info), CRAWL_EREDIS);
    int err = 0;
    cr_expect_null(bloom_open(c, "down", NULL, &err, NULL, 0));
    cr_expect_eq(err, CRAWL_EREDIS);
    cr_expect_eq(bloom_destroy(c, "down"), CRAWL_EREDIS);
    free(res);
    free_urls(&u);
    bloom_close(b);
    redisFree(c);
}

Test(bloom, redis_lost_mid_batch_gives_eio)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    signal(SIGPIPE, SIG_DFL);
    bloom_params_t p = {.capacity = 100000, .fp_rate = 0.01, .cache_bytes = SIZE_MAX};
    bloom_t *b = open_ok(c, "lost", &p);
    /* the server drops this client while the batch is in flight */
    redisContext *killer = fx_redis_connect(r);
    cr_assert_not_null(killer);
    redis_ok(killer, "CLIENT SETNAME killer");
    redisReply *id = redisCommand(c, "CLIENT ID");
    cr_assert(id && id->type == REDIS_REPLY_INTEGER);
    long long myid = id->integer;
    freeReplyObject(id);
    urls_t u = make_urls("https://lost.example/%zu", 0, 200000);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "CLIENT KILL ID %lld", myid);
    redisAppendCommand(killer, cmd); /* sent now, answered whenever */
    int done = 0;
    redisBufferWrite(killer, &done);
    uint8_t *res = malloc(u.n);
    int rc = 0;
    for (int i = 0; i < 50 && rc == 0; i++)
        rc = bloom_add_many(b, (const char *const *)u.v, u.len, u.n, res);
    cr_expect_eq(rc, CRAWL_EREDIS, "add while killed: %s", crawl_strerror(rc));
    free(res);
    free_urls(&u);
    bloom_close(b);
    redisFree(killer);
    redisFree(c);
    fx_redis_stop(r);
}
