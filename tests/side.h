/* side.h -- one Redis connection with its Bloom filter and frontier handles
 * on one crawl, for the frontier suites that run several workers against a
 * real redis-server (test_finish.c, test_wake.c, ...), and side_check, the
 * frontier's invariant checker.  Criterion asserts on every failure, so a
 * test needs no error paths. */
#ifndef TESTS_SIDE_H
#define TESTS_SIDE_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"
#include "frontier_internal.h" /* side_check: the check function's name, the key prefix */

typedef struct side {
    redisContext *c;
    bloom_t *b;
    frontier_t *f;
} side_t;

/* Opens crawl `crawl` (no delay, per_host as given) as worker_id (NULL: a
 * fresh id) on a new connection to r. */
static inline void side_open(side_t *s, fx_redis_t *r, const char *crawl, const char *worker_id,
                             uint32_t per_host)
{
    char name[128], err[256] = "";
    int berr = 0;
    bloom_params_t p = {.capacity = 100000, .fp_rate = 1e-6};
    frontier_bloom_name(crawl, name, sizeof name);
    s->c = fx_redis_connect(r);
    cr_assert_not_null(s->c, "%s", fx_error());
    s->b = bloom_open(s->c, name, &p, &berr, err, sizeof err);
    cr_assert_not_null(s->b, "bloom_open: %s", err);
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = crawl;
    cfg.delay_ms = 0;
    cfg.per_host = per_host;
    cfg.worker_id = worker_id;
    s->f = fr_open(s->c, &cfg, s->b, err, sizeof err);
    cr_assert_not_null(s->f, "frontier_open: %s", err);
}

/* A fresh redis-server (asserted to start) for a test's sides. */
static inline fx_redis_t *side_redis(void)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    return r;
}

static inline void side_close(side_t *s)
{
    fr_close(s->f);
    bloom_close(s->b);
    redisFree(s->c);
}

/* Claims up to max URLs; asserts the call worked. */
static inline size_t side_claim(frontier_t *f, frontier_item_t *items, size_t max)
{
    size_t n = 0;
    frontier_state_t st;
    uint32_t wait = 0;
    int rc = frontier_claim(f, max, items, &n, &st, &wait);
    cr_assert_eq(rc, 0, "frontier_claim: %s (%s)", crawl_strerror(rc), frontier_last_error(f));
    return n;
}

/* Seeds urls[0..n); asserts that every one was new and queued. */
static inline void side_seed_all(frontier_t *f, const char *const *urls, size_t n)
{
    size_t added = 0;
    int rc = frontier_seed(f, urls, n, 0, &added);
    cr_assert_eq(rc, 0, "frontier_seed: %s (%s)", crawl_strerror(rc), frontier_last_error(f));
    cr_assert_eq(added, n, "%zu of %zu seeds added", added, n);
}

/* Zeroes the server's command counters (CONFIG RESETSTAT). */
static inline void side_reset_stats(redisContext *c)
{
    redisReply *r = redisCommand(c, "CONFIG RESETSTAT");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* Calls of one command (lower case, as INFO commandstats names it) since
 * the server started or its counters were last reset. */
static inline long long side_calls(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, key);
    long long n = p ? strtoll(p + strlen(key), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

/* The check call (frontier/lua/check.lua, registered for tests), KEYS:
 * ready.
 *   ARGV[1]  P         the crawl's key prefix "crawler:{NAME}:"
 *   ARGV[2]  per_host  the per_host every worker of the crawl uses; 0: the
 *                      rule "queued and below its cap => in ready" is not
 *                      checked (workers with different per_host)
 *   ARGV[3]  delay_ms  the crawl's delay and ...
 *   ARGV[4]  max_delay_ms  ... its cap on a host's own (optional, 0): a host
 *                      with a delay has a cap of 1 (base.lua: host_cap)
 * Reply: one string per broken invariant, numbered as check.lua lists
 * them; none when they all hold.  Fails the test naming each one (f: any
 * handle on the crawl, for the function's name and the prefix). */
static inline void side_check(redisContext *c, const frontier_t *f, uint32_t per_host)
{
    char ph[16], dl[16], md[16], first[512] = "";
    snprintf(ph, sizeof ph, "%u", per_host);
    snprintf(dl, sizeof dl, "%u", f->cfg.delay_ms);
    snprintf(md, sizeof md, "%u", f->cfg.max_delay_ms);
    const char *argv[] = {
        "FCALL", f->fn[FR_CHECK], "1", f->shard[0].ready_key, f->shard[0].prefix, ph, dl, md};
    redisReply *r = redisCommandArgv(c, 8, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "the invariant checker failed: %s",
              r ? r->str : c->errstr);
    size_t n = r->elements;
    for (size_t i = 0; i < n; i++) {
        cr_log_error("frontier invariant broken: %s", r->element[i]->str);
        if (i == 0)
            snprintf(first, sizeof first, "%s", r->element[i]->str);
    }
    freeReplyObject(r);
    cr_assert_eq(n, 0, "%zu frontier invariants broken, the first: %s", n, first);
}

#endif
