/* module_side.h -- helpers of the suites on the crawler Redis module
 * (bloom/redis_module.c): test_module.c (CRAWLER.BFADD on its own) and
 * test_module_frontier.c (the frontier on top of it).  The module's path
 * comes from CMake (CRAWLER_REDIS_MODULE); each test sets or unsets
 * FX_REDIS_MODULE itself before starting its redis-server, so the result
 * does not depend on ctest's environment. */
#ifndef TESTS_MODULE_SIDE_H
#define TESTS_MODULE_SIDE_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "side.h"

#ifndef CRAWLER_REDIS_MODULE
#error "CRAWLER_REDIS_MODULE must name crawler_redis.so (tests/CMakeLists.txt)"
#endif

/* A fresh redis-server, with the crawler module loaded or not. */
static inline fx_redis_t *start_redis(int with_module)
{
    if (with_module) {
        cr_assert_eq(access(CRAWLER_REDIS_MODULE, R_OK), 0, "module not built: %s",
                     CRAWLER_REDIS_MODULE);
        cr_assert_eq(setenv("FX_REDIS_MODULE", CRAWLER_REDIS_MODULE, 1), 0);
    } else {
        cr_assert_eq(unsetenv("FX_REDIS_MODULE"), 0);
    }
    return side_redis();
}

static inline redisContext *connect_to(fx_redis_t *r)
{
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c, "%s", fx_error());
    return c;
}

/* 1 if INFO modules lists the crawler module. */
static inline int module_listed(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO modules");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO modules: %s", r ? r->str : c->errstr);
    int in = strstr(r->str, "module:name=crawler,") != NULL;
    freeReplyObject(r);
    return in;
}

/* Writes n offsets as little-endian uint32 into out (4n bytes). */
static inline void pack(const uint32_t *v, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[4 * i] = (unsigned char)v[i];
        out[4 * i + 1] = (unsigned char)(v[i] >> 8);
        out[4 * i + 2] = (unsigned char)(v[i] >> 16);
        out[4 * i + 3] = (unsigned char)(v[i] >> 24);
    }
}

/* CRAWLER.BFADD key k offs (len bytes, binary); the reply (caller frees). */
static inline redisReply *bfadd(redisContext *c, const char *key, const char *k, const void *offs,
                                size_t len)
{
    const char *argv[] = {"CRAWLER.BFADD", key, k, offs};
    size_t lens[] = {13, strlen(key), strlen(k), len};
    redisReply *r = redisCommandArgv(c, 4, argv, lens);
    cr_assert_not_null(r, "CRAWLER.BFADD: %s", c->errstr);
    return r;
}

/* GET key: its bytes (caller frees; NULL if the key is missing). */
static inline char *get_bytes(redisContext *c, const char *key, size_t *len)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL), "GET %s: %s", key,
              r ? r->str : c->errstr);
    char *out = NULL;
    *len = 0;
    if (r->type == REDIS_REPLY_STRING) {
        out = malloc(r->len + 1);
        cr_assert_not_null(out);
        memcpy(out, r->str, r->len);
        *len = r->len;
    }
    freeReplyObject(r);
    return out;
}

#endif
