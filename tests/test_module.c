/* The crawler Redis module (bloom/redis_module.c, crawler_redis.so) on its
 * own, against real redis-servers the tests start themselves: CRAWLER.BFADD
 * through hiredis with binary arguments, its per-group answers and the bits
 * it leaves checked against what BITFIELD SET/GET u1 do with the same
 * offsets, and each documented error provoked.  (The frontier on top of it:
 * test_module_frontier.c.) */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module_side.h"

/* ---- helpers --------------------------------------------------------------- */

/* CRAWLER.BFADD of n groups of k offsets; asserts a string reply of n
 * characters and copies it into out (n + 1 bytes). */
static void bfadd_groups(redisContext *c, const char *key, uint32_t k, const uint32_t *offs,
                         size_t n, char *out)
{
    unsigned char *buf = malloc(4 * k * n + 1);
    cr_assert_not_null(buf);
    pack(offs, k * n, buf);
    char ks[16];
    snprintf(ks, sizeof ks, "%u", k);
    redisReply *r = bfadd(c, key, ks, buf, 4 * k * n);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "CRAWLER.BFADD %s k=%u: %s", key, k,
                 r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
    cr_assert_eq(r->len, n, "%zu answers for %zu groups", (size_t)r->len, n);
    memcpy(out, r->str, n);
    out[n] = '\0';
    freeReplyObject(r);
    free(buf);
}

/* Asserts r is an error whose text starts with prefix; frees it. */
static void expect_error(redisReply *r, const char *prefix, const char *what)
{
    cr_expect_eq(r->type, REDIS_REPLY_ERROR, "%s: not an error", what);
    if (r->type == REDIS_REPLY_ERROR)
        cr_expect(strncmp(r->str, prefix, strlen(prefix)) == 0, "%s: \"%s\", want \"%s...\"", what,
                  r->str, prefix);
    freeReplyObject(r);
}

static long long int_reply(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s: %s", fmt, arg,
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an integer");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Sets a group's bits with one BITFIELD SET u1 per offset (the reference);
 * returns '1' if one of the old bits was 0, else '0'. */
static char bitfield_group(redisContext *c, const char *key, const uint32_t *offs, uint32_t k)
{
    const char *argv[2 + 4 * BLOOM_MAX_K];
    size_t lens[2 + 4 * BLOOM_MAX_K];
    char num[BLOOM_MAX_K][16];
    argv[0] = "BITFIELD", lens[0] = 8;
    argv[1] = key, lens[1] = strlen(key);
    for (uint32_t j = 0; j < k; j++) {
        int len = snprintf(num[j], sizeof num[j], "%u", offs[j]);
        const char *op[4] = {"SET", "u1", num[j], "1"};
        for (int x = 0; x < 4; x++) {
            argv[2 + 4 * j + x] = op[x];
            lens[2 + 4 * j + x] = x == 2 ? (size_t)len : strlen(op[x]);
        }
    }
    redisReply *r = redisCommandArgv(c, (int)(2 + 4 * k), argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == k, "BITFIELD: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    char fresh = '0';
    for (size_t j = 0; j < k; j++)
        if (r->element[j]->integer == 0)
            fresh = '1';
    freeReplyObject(r);
    return fresh;
}

/* ---- CRAWLER.BFADD ------------------------------------------------------------ */

Test(module, bfadd_answers_new_or_seen_per_group_and_sets_the_bits_bitfield_reads)
{
    fx_redis_t *r = start_redis(1);
    redisContext *c = connect_to(r);
    cr_assert(module_listed(c), "the server did not load " CRAWLER_REDIS_MODULE);

    /* four groups of 3: new, the same bits again, one more bit, all known */
    const uint32_t offs[] = {0, 9, 77, 77, 0, 9, 9, 1000, 0, 1000, 77, 9};
    char ans[8];
    bfadd_groups(c, "bits", 3, offs, 4, ans);
    cr_expect_str_eq(ans, "1010");
    cr_expect_eq(int_reply(c, "STRLEN %s", "bits"), 1000 / 8 + 1, "grown to the highest bit");
    cr_expect_eq(int_reply(c, "BITCOUNT %s", "bits"), 4);
    redisReply *g = redisCommand(c, "BITFIELD bits GET u1 0 GET u1 9 GET u1 77 GET u1 1000 "
                                    "GET u1 1 GET u1 8 GET u1 999 GET u1 1001");
    cr_assert(g && g->type == REDIS_REPLY_ARRAY && g->elements == 8);
    const long long want[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    for (size_t i = 0; i < 8; i++)
        cr_expect_eq(g->element[i]->integer, want[i], "BITFIELD GET #%zu", i);
    freeReplyObject(g);
    /* bit 0 is the most significant bit of byte 0, as SETBIT numbers them */
    size_t len;
    char *b = get_bytes(c, "bits", &len);
    cr_assert_not_null(b);
    cr_expect_eq((unsigned char)b[0], 0x80);
    cr_expect_eq((unsigned char)b[1], 0x40, "bit 9");
    cr_expect_eq((unsigned char)b[9], 0x04, "bit 77");
    cr_expect_eq((unsigned char)b[125], 0x80, "bit 1000");
    free(b);

    /* offsets are little-endian: 0x00010203 is bit 66051, not 0x03020100 */
    const uint32_t le = 0x00010203u;
    bfadd_groups(c, "order", 1, &le, 1, ans);
    cr_expect_str_eq(ans, "1");
    cr_expect_eq(int_reply(c, "STRLEN %s", "order"), 0x10203 / 8 + 1);
    cr_expect_eq(int_reply(c, "GETBIT order %s", "66051"), 1);
    cr_expect_eq(int_reply(c, "BITCOUNT %s", "order"), 1);

    redisFree(c);
    fx_redis_stop(r);
}

/* Random groups (k = 1, 7 and 32; some with a repeated offset, some
 * repeating an earlier group; batches of 1 to 1,500 groups) go to one key through CRAWLER.BFADD
 * and, group by group, to another through BITFIELD SET u1: same answers, same bytes. */
Test(module, bfadd_matches_bitfield_set_u1_on_random_groups)
{
    fx_redis_t *r = start_redis(1);
    redisContext *c = connect_to(r);
    static const struct {
        uint32_t k, space, groups, batch;
    } cases[] = {
        {1, 64, 300, 1}, {7, 4096, 1500, 1500}, {7, 20000, 1000, 97}, {32, 1 << 16, 200, 64}};
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const uint32_t k = cases[t].k, n = cases[t].groups;
        char mkey[32], rkey[32];
        snprintf(mkey, sizeof mkey, "mod:%zu", t);
        snprintf(rkey, sizeof rkey, "ref:%zu", t);
        uint32_t *offs = malloc((size_t)n * k * sizeof *offs);
        char *got = malloc(n + 1), *want = malloc(n + 1);
        cr_assert(offs && got && want);
        for (size_t i = 0; i < (size_t)n * k; i++)
            offs[i] = (uint32_t)(rng_next(&rng) % cases[t].space);
        for (uint32_t g = n / 2; g < n; g += 3) /* every third of the second half: a repeat */
            memcpy(offs + (size_t)g * k, offs + (size_t)((g * 7) % (n / 2)) * k, k * sizeof *offs);
        for (uint32_t g = 0; g < n; g++)
            want[g] = bitfield_group(c, rkey, offs + (size_t)g * k, k);
        for (uint32_t g = 0; g < n; g += cases[t].batch) {
            uint32_t m = n - g < cases[t].batch ? n - g : cases[t].batch;
            bfadd_groups(c, mkey, k, offs + (size_t)g * k, m, got + g);
        }
        got[n] = want[n] = '\0';
        cr_expect_str_eq(got, want, "case %zu (k=%u): answers differ from BITFIELD's", t, k);
        cr_expect(strchr(want, '0') && strchr(want, '1'), "case %zu: want both answers", t);
        size_t lm, lr;
        char *bm = get_bytes(c, mkey, &lm), *br = get_bytes(c, rkey, &lr);
        cr_assert(bm && br);
        cr_expect_eq(lm, lr, "case %zu: %zu bytes vs BITFIELD's %zu", t, lm, lr);
        cr_expect(lm == lr && memcmp(bm, br, lm) == 0, "case %zu: the bits differ", t);
        free(bm);
        free(br);
        free(offs);
        free(got);
        free(want);
    }
    redisFree(c);
    fx_redis_stop(r);
}

Test(module, bfadd_creates_a_missing_key_and_grows_a_short_one_zero_filled)
{
    fx_redis_t *r = start_redis(1);
    redisContext *c = connect_to(r);
    char ans[4];

    cr_assert_eq(int_reply(c, "EXISTS %s", "fresh"), 0);
    const uint32_t seven = 7;
    bfadd_groups(c, "fresh", 1, &seven, 1, ans);
    cr_expect_str_eq(ans, "1");
    size_t len;
    char *b = get_bytes(c, "fresh", &len);
    cr_assert_not_null(b, "the missing key was not created");
    cr_expect(len == 1 && b[0] == 0x01, "created as %zu bytes", len);
    free(b);

    /* a 2-byte string grown to 13: its bytes kept, the new ones zero */
    redisReply *s = redisCommand(c, "SET short %b", "\xff\x01", (size_t)2);
    cr_assert(s && s->type == REDIS_REPLY_STATUS);
    freeReplyObject(s);
    const uint32_t known[] = {0, 15}, more[] = {15, 100};
    bfadd_groups(c, "short", 2, known, 1, ans);
    cr_expect_str_eq(ans, "0", "bits 0 and 15 were already set");
    cr_expect_eq(int_reply(c, "STRLEN %s", "short"), 2, "nothing to grow for");
    bfadd_groups(c, "short", 2, more, 1, ans);
    cr_expect_str_eq(ans, "1");
    b = get_bytes(c, "short", &len);
    cr_assert_not_null(b);
    cr_assert_eq(len, 13);
    const unsigned char want[13] = {0xff, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08};
    cr_expect(memcmp(b, want, 13) == 0, "grown bytes wrong");
    free(b);

    /* a longer string keeps its length */
    redisReply *l = redisCommand(c, "SETRANGE long 99 %b", "\0", (size_t)1);
    cr_assert(l && l->type == REDIS_REPLY_INTEGER && l->integer == 100);
    freeReplyObject(l);
    const uint32_t zero = 0;
    bfadd_groups(c, "long", 1, &zero, 1, ans);
    cr_expect_str_eq(ans, "1");
    cr_expect_eq(int_reply(c, "STRLEN %s", "long"), 100);
    cr_expect_eq(int_reply(c, "BITCOUNT %s", "long"), 1);

    /* an integer-encoded string is a string too: its bytes are "5" */
    s = redisCommand(c, "SET num 5");
    freeReplyObject(s);
    const uint32_t low = 1; /* '5' is 0x35 = 00110101: bit 1 is 0 */
    bfadd_groups(c, "num", 1, &low, 1, ans);
    cr_expect_str_eq(ans, "1");
    b = get_bytes(c, "num", &len);
    cr_assert_not_null(b);
    cr_expect(len == 1 && (unsigned char)b[0] == 0x75, "\"5\" | 0x40 = 0x75, got %zu bytes", len);
    free(b);

    redisFree(c);
    fx_redis_stop(r);
}

Test(module, bfadd_rejects_bad_arity_k_length_and_non_string_keys_changing_nothing)
{
    fx_redis_t *r = start_redis(1);
    redisContext *c = connect_to(r);
    unsigned char four[8] = {1, 0, 0, 0, 2, 0, 0, 0};

    const char *a3[] = {"CRAWLER.BFADD", "k", "1"};
    size_t l3[] = {13, 1, 1};
    expect_error(redisCommandArgv(c, 3, a3, l3), "ERR wrong number of arguments", "3 args");
    const char *a5[] = {"CRAWLER.BFADD", "k", "1", (const char *)four, "x"};
    size_t l5[] = {13, 1, 1, 4, 1};
    expect_error(redisCommandArgv(c, 5, a5, l5), "ERR wrong number of arguments", "5 args");

    const char *badk[] = {"0", "33", "x", "", "-1", "100", "1 "};
    for (size_t i = 0; i < sizeof badk / sizeof badk[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "k \"%s\"", badk[i]);
        expect_error(bfadd(c, "k", badk[i], four, 4), "ERR k must be", what);
    }
    expect_error(bfadd(c, "k", "1", four, 5), "ERR offsets must be", "5 bytes, k 1");
    expect_error(bfadd(c, "k", "3", four, 8), "ERR offsets must be", "8 bytes, k 3");
    expect_error(bfadd(c, "k", "2", four, 3), "ERR offsets must be", "3 bytes, k 2");
    cr_expect_eq(int_reply(c, "EXISTS %s", "k"), 0, "a refused call created its key");

    redisReply *p = redisCommand(c, "RPUSH list a");
    freeReplyObject(p);
    expect_error(bfadd(c, "list", "1", four, 4), "WRONGTYPE", "a list");
    expect_error(bfadd(c, "list", "1", four, 0), "WRONGTYPE", "a list, no offsets");
    cr_expect_eq(int_reply(c, "LLEN %s", "list"), 1, "the list was changed");
    p = redisCommand(c, "HSET hash f v");
    freeReplyObject(p);
    expect_error(bfadd(c, "hash", "2", four, 8), "WRONGTYPE", "a hash");

    /* k at both ends of 1..32 is accepted */
    uint32_t offs[32];
    for (uint32_t j = 0; j < 32; j++)
        offs[j] = 8 * j;
    char ans[2];
    bfadd_groups(c, "k32", 32, offs, 1, ans);
    cr_expect_str_eq(ans, "1");
    cr_expect_eq(int_reply(c, "BITCOUNT %s", "k32"), 32);
    redisReply *ok = bfadd(c, "k01", "01", four, 4);
    cr_expect(ok->type == REDIS_REPLY_STRING && ok->len == 1, "k \"01\" is 1");
    freeReplyObject(ok);

    redisFree(c);
    fx_redis_stop(r);
}

Test(module, bfadd_with_no_offsets_answers_an_empty_string)
{
    fx_redis_t *r = start_redis(1);
    redisContext *c = connect_to(r);
    redisReply *e = bfadd(c, "none", "7", "", 0);
    cr_expect_eq(e->type, REDIS_REPLY_STRING, "type %d", e->type);
    cr_expect_eq(e->len, 0);
    freeReplyObject(e);
    cr_expect_eq(int_reply(c, "EXISTS %s", "none"), 0, "no offsets, no key");
    redisReply *s = redisCommand(c, "SET some abc");
    freeReplyObject(s);
    e = bfadd(c, "some", "32", "", 0);
    cr_expect(e->type == REDIS_REPLY_STRING && e->len == 0);
    freeReplyObject(e);
    size_t len;
    char *b = get_bytes(c, "some", &len);
    cr_expect(b && len == 3 && memcmp(b, "abc", 3) == 0, "the string was changed");
    free(b);
    redisFree(c);
    fx_redis_stop(r);
}
