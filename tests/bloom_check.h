/*
 * bloom_check.h -- what the Bloom filter suites (test_bloom.c,
 * test_bloom_open.c, test_bloom_cli.c) share: a redis-server of their own,
 * batches of generated URLs, bloom_open() expected to succeed or fail, and
 * small Redis queries.  Static inline functions; failures are Criterion
 * assertions.
 */
#ifndef TESTS_BLOOM_CHECK_H
#define TESTS_BLOOM_CHECK_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "fixtures.h"

/* n strings made from fmt (with one %zu) for i in [from, from + n). */
typedef struct urls {
    char **v;
    size_t *len;
    size_t n;
    char *mem;
} urls_t;

static inline urls_t make_urls(const char *fmt, size_t from, size_t n)
{
    urls_t u = {.n = n};
    size_t stride = strlen(fmt) + 24;
    u.v = malloc(n * sizeof *u.v);
    u.len = malloc(n * sizeof *u.len);
    u.mem = malloc(n * stride);
    cr_assert(u.v && u.len && u.mem, "out of memory for %zu URLs", n);
    for (size_t i = 0; i < n; i++) {
        u.v[i] = u.mem + i * stride;
        u.len[i] = (size_t)snprintf(u.v[i], stride, fmt, from + i);
    }
    return u;
}

static inline void free_urls(urls_t *u)
{
    free(u->v);
    free(u->len);
    free(u->mem);
}

static inline fx_redis_t *start_redis(redisContext **c)
{
    signal(SIGPIPE, SIG_IGN); /* fixtures' own hiredis calls; bloom guards itself */
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    *c = fx_redis_connect(r);
    cr_assert_not_null(*c, "cannot connect to redis-server: %s", fx_error());
    return r;
}

static inline bloom_t *open_ok(redisContext *c, const char *name, const bloom_params_t *p)
{
    int err = 0;
    char msg[512];
    bloom_t *b = bloom_open(c, name, p, &err, msg, sizeof msg);
    cr_assert_not_null(b, "bloom_open('%s'): %s (%s)", name, crawl_strerror(err), msg);
    return b;
}

static inline int open_fails(redisContext *c, const char *name, const bloom_params_t *p, char *msg,
                             size_t msglen)
{
    int err = 0;
    bloom_t *b = bloom_open(c, name, p, &err, msg, msglen);
    cr_assert_null(b, "bloom_open('%s') should have failed", name);
    return err;
}

static inline long long redis_int(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s: no integer reply", cmd);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static inline void redis_ok(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s failed: %s", cmd, r ? r->str : c->errstr);
    freeReplyObject(r);
}

/* Adds all of u in batches; returns how many were new. */
static inline size_t add_all(bloom_t *b, const urls_t *u, size_t batch)
{
    uint8_t *res = malloc(batch);
    size_t fresh = 0;
    for (size_t i = 0; i < u->n; i += batch) {
        size_t cnt = u->n - i < batch ? u->n - i : batch;
        int rc = bloom_add_many(b, (const char *const *)u->v + i, u->len + i, cnt, res);
        cr_assert_eq(rc, 0, "bloom_add_many: %s (%s)", crawl_strerror(rc), bloom_errmsg(b));
        for (size_t j = 0; j < cnt; j++)
            fresh += res[j];
    }
    free(res);
    return fresh;
}

/* Checks all of u; returns how many were present. */
static inline size_t count_present(bloom_t *b, const urls_t *u, size_t batch)
{
    uint8_t *res = malloc(batch);
    size_t hits = 0;
    for (size_t i = 0; i < u->n; i += batch) {
        size_t cnt = u->n - i < batch ? u->n - i : batch;
        int rc = bloom_contains_many(b, (const char *const *)u->v + i, u->len + i, cnt, res);
        cr_assert_eq(rc, 0, "bloom_contains_many: %s (%s)", crawl_strerror(rc), bloom_errmsg(b));
        for (size_t j = 0; j < cnt; j++)
            hits += res[j];
    }
    free(res);
    return hits;
}

/* Writes since the last save: 0 more means a call wrote nothing. */
static inline long long changes_since_save(redisContext *c)
{
    long long v = fx_redis_info(c, "persistence", "rdb_changes_since_last_save");
    cr_assert_geq(v, 0, "%s", fx_error());
    return v;
}

#endif
