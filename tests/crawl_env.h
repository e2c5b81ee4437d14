/* crawl_env.h -- what a test of the crawler binary needs around one crawl:
 * its own redis-server, the HTTP fixture (robots.txt answering 404 unless
 * the test sets it), and a temporary directory with the seeds file (one
 * seed URL on the fixture), an output path and a log path.  For the suites
 * that run the program (test_crawler.c, test_guard.c, test_faults.c).
 * Criterion asserts on every failure. */
#ifndef TESTS_CRAWL_ENV_H
#define TESTS_CRAWL_ENV_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixtures.h"

typedef struct crawl_env {
    fx_redis_t *r;
    fx_http_t *h;
    char *dir, seeds[512], out[512], log[512]; /* seeds.txt, out.jsonl, log in dir */
} crawl_env_t;

/* Starts everything; r: the redis-server to use (taken over; NULL: a new
 * fx_redis_start()); the seeds file holds the fixture's base + seed_path. */
static inline void crawl_env_start(crawl_env_t *e, fx_redis_t *r, const char *seed_path)
{
    e->r = r ? r : fx_redis_start();
    cr_assert_not_null(e->r, "cannot start redis-server: %s", fx_error());
    e->h = fx_http_start();
    cr_assert_not_null(e->h, "cannot start the HTTP fixture: %s", fx_error());
    e->dir = fx_tmpdir();
    cr_assert_not_null(e->dir);
    char content[256];
    snprintf(content, sizeof content, "%s%s\n", fx_http_base(e->h), seed_path);
    snprintf(e->seeds, sizeof e->seeds, "%s/seeds.txt", e->dir);
    cr_assert_eq(fx_write_file(e->seeds, content), 0);
    snprintf(e->out, sizeof e->out, "%s/out.jsonl", e->dir);
    snprintf(e->log, sizeof e->log, "%s/log", e->dir);
    fx_http_set(e->h, "/robots.txt", &(fx_route_t){.status = 404, .body = "no"});
}

/* Stops the servers and removes the directory. */
static inline void crawl_env_stop(crawl_env_t *e)
{
    fx_rmtree(e->dir);
    free(e->dir);
    fx_http_stop(e->h);
    fx_redis_stop(e->r);
}

#endif
