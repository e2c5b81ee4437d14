/* frontier_env.h -- one test's services for the frontier suites that drive
 * a crawl from one process and forked workers (test_frontier.c,
 * test_workers.c): a redis-server, a connection, the Bloom filter and a
 * frontier handle on crawl CRAWL, and the small helpers over them.
 * env_stop runs the frontier's invariant checker (side_check) first. */
#ifndef TESTS_FRONTIER_ENV_H
#define TESTS_FRONTIER_ENV_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bloom.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"
#include "side.h"

#define CRAWL "t"

static inline redisContext *connect_port(int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, (struct timeval){30, 0});
    return c;
}

/* The tests' visited set, when one creates it: a fixed filter, or one that
 * grows from env_grow_from URLs when that is set (bloom.h, "layers"). */
static uint64_t env_grow_from;

static inline bloom_t *open_bloom(redisContext *c, int create)
{
    char name[128];
    frontier_bloom_name(CRAWL, name, sizeof name);
    bloom_params_t p = {.capacity = 200000, .fp_rate = 1e-6};
    if (env_grow_from)
        p = (bloom_params_t){.capacity = env_grow_from, .fp_rate = 1e-6, .growth = 2.0};
    int err = 0;
    char msg[256] = "";
    bloom_t *b = bloom_open(c, name, create ? &p : NULL, &err, msg, sizeof msg);
    if (!b)
        fprintf(stderr, "bloom_open: %s (%s)\n", crawl_strerror(err), msg);
    return b;
}

static inline frontier_config_t test_config(void)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 100;
    return cfg;
}

static inline frontier_t *open_frontier(redisContext *c, bloom_t *b, const frontier_config_t *cfg)
{
    char err[256] = "";
    frontier_t *f = fr_open(c, cfg, b, err, sizeof err);
    if (!f)
        fprintf(stderr, "frontier_open: %s\n", err);
    return f;
}

/* One test's services: redis, a connection, the filter, a frontier. */
typedef struct env {
    fx_redis_t *r;
    redisContext *c;
    bloom_t *b;
    frontier_t *f;
    uint32_t per_host; /* the crawl's, for the invariant checker */
} env_t;

static inline void env_start(env_t *e, const frontier_config_t *cfg)
{
    memset(e, 0, sizeof *e);
    e->r = fx_redis_start();
    cr_assert_not_null(e->r, "cannot start redis-server: %s", fx_error());
    e->c = fx_redis_connect(e->r);
    cr_assert_not_null(e->c, "%s", fx_error());
    e->b = open_bloom(e->c, 1);
    cr_assert_not_null(e->b, "cannot open the Bloom filter");
    e->f = open_frontier(e->c, e->b, cfg);
    cr_assert_not_null(e->f, "cannot open the frontier");
    e->per_host = cfg->per_host;
}

/* Checks the frontier's invariants (while the handle is open), then stops. */
static inline void env_stop(env_t *e)
{
    if (e->f)
        side_check(e->c, e->f, e->per_host);
    fr_close(e->f);
    bloom_close(e->b);
    if (e->c)
        redisFree(e->c);
    fx_redis_stop(e->r);
}

static inline long long redis_int(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "redis: %s", r ? r->str : c->errstr);
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                  : 0;
    freeReplyObject(r);
    return v;
}

static inline size_t seed_urls(frontier_t *f, const char *const *urls, size_t n, int force)
{
    size_t added = 0;
    int rc = frontier_seed(f, urls, n, force, &added);
    cr_assert_eq(rc, 0, "frontier_seed: %s", crawl_strerror(rc));
    return added;
}

/* Claims until something is ready or done (bounded); returns the state. */
static inline frontier_state_t claim_wait(frontier_t *f, size_t max, frontier_item_t *items,
                                          size_t *n)
{
    frontier_state_t st = FRONTIER_WAIT;
    for (int i = 0; i < 2000; i++) {
        uint32_t wait = 0;
        int rc = frontier_claim(f, max, items, n, &st, &wait);
        cr_assert_eq(rc, 0, "frontier_claim: %s", crawl_strerror(rc));
        if (st != FRONTIER_WAIT)
            return st;
        usleep((wait > 20 ? 20 : wait) * 1000);
    }
    cr_assert_fail("nothing became ready");
    return st;
}

static inline void finish_one(frontier_t *f, const frontier_item_t *it, const char *const *links,
                              size_t nlinks, size_t *nnew, int expect)
{
    frontier_done_t d = {.item = it,
                         .outcome = {.status = 200, .bytes = 100},
                         .links = links,
                         .nlinks = nlinks,
                         .link_depth = it->depth + 1,
                         .nnew = nnew};
    int rc = frontier_finish(f, &d, 1);
    cr_assert_eq(rc, expect, "frontier_finish: %s", crawl_strerror(rc));
}

#endif
