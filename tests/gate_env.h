/*
 * gate_env.h -- one worker's view of a crawl for the tests of the parts a
 * worker thread drives (test_worker.c, test_robotsgate.c): a connection to
 * the fixture's Redis, the crawl's Bloom filter (created small if absent),
 * a frontier handle, a scope and a robots gate.  Header only.
 */
#ifndef TESTS_GATE_ENV_H
#define TESTS_GATE_ENV_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <string.h>

#include "bloom.h"
#include "config.h"
#include "errors.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"
#include "robotsgate.h"
#include "scope.h"

typedef struct wk {
    redisContext *rc;
    bloom_t *b;
    frontier_t *f;
    scope_t *scope;
    robotsgate_t *g;
} wk_t;

/* Opens w on r for cfg's crawl; fc: the frontier settings (NULL: the
 * defaults, for cfg->crawl). */
static inline void wk_open_with(wk_t *w, fx_redis_t *r, const crawl_config_t *cfg,
                                const frontier_config_t *fc)
{
    char err[256], bname[256];
    int berr = 0;
    memset(w, 0, sizeof *w);
    w->rc = fx_redis_connect(r);
    cr_assert_not_null(w->rc);
    frontier_bloom_name(cfg->crawl, bname, sizeof bname);
    bloom_params_t bp = {.capacity = 10000, .fp_rate = 0.001};
    w->b = bloom_open(w->rc, bname, NULL, &berr, err, sizeof err);
    if (!w->b && berr == CRAWL_ENOTFOUND)
        w->b = bloom_open(w->rc, bname, &bp, &berr, err, sizeof err);
    cr_assert_not_null(w->b, "bloom: %s", err);
    frontier_config_t dflt;
    if (!fc) {
        frontier_config_defaults(&dflt);
        dflt.crawl = cfg->crawl;
        fc = &dflt;
    }
    w->f = fr_open(w->rc, fc, w->b, err, sizeof err);
    cr_assert_not_null(w->f, "frontier: %s", err);
    scope_config_t sc = config_scope(cfg);
    w->scope = scope_new(&sc, err, sizeof err);
    cr_assert_not_null(w->scope, "scope: %s", err);
    w->g = robotsgate_new(cfg, w->f, w->scope);
    cr_assert_not_null(w->g);
}

static inline void wk_close(wk_t *w)
{
    robotsgate_free(w->g);
    scope_free(w->scope);
    fr_close(w->f);
    bloom_close(w->b);
    redisFree(w->rc);
}

#endif
