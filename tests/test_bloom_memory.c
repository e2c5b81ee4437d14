/*
 * test_bloom_memory.c -- a Bloom filter never hurts a shared Redis: one that
 * does not fit under maxmemory is refused before anything is written (the
 * message names the bytes needed and free), one that fits is created in
 * steps, a Redis whose limit is reached between steps ends with nothing
 * left behind, and the CLI exits 2 for a capacity above its cap or a filter
 * that does not fit (crawl, seed, bloom add).  Real redis-server, started
 * per test with --maxmemory set through CONFIG SET.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "bloom_check.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"

#define MAXMEM (20ULL << 20) /* every server here: --maxmemory 20mb */

static fx_redis_t *start_small(redisContext **c)
{
    fx_redis_t *r = start_redis(c);
    redis_ok(*c, "CONFIG SET maxmemory 20mb");
    return r;
}

static uint64_t info_u64(redisContext *c, const char *field)
{
    long long v = fx_redis_info(c, "memory", field);
    cr_assert_geq(v, 0, "%s", fx_error());
    return (uint64_t)v;
}

/* No key at all, and Redis below its limit. */
static void expect_nothing_left(redisContext *c, const char *what)
{
    cr_expect_eq(redis_int(c, "DBSIZE"), 0, "%s: keys left behind in Redis", what);
    uint64_t used = info_u64(c, "used_memory");
    cr_expect_lt(used, MAXMEM, "%s: used_memory %" PRIu64 " is past maxmemory", what, used);
}

/* ---- the library ------------------------------------------------------------ */

typedef struct too_big {
    uint64_t n;
    double p;
} too_big_t;

Test(bloom_memory, a_filter_that_does_not_fit_is_refused_naming_bytes_and_leaves_nothing)
{
    static const too_big_t cases[] = {{10000000, 1e-4}, {20000000, 1e-3}, {10000000, 1e-6}};
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bloom_params_t p = {.capacity = cases[i].n, .fp_rate = cases[i].p};
        bloom_geometry_t g;
        cr_assert_eq(bloom_geometry_for(&p, &g), 0);
        char msg[512], want[64], what[64];
        snprintf(what, sizeof what, "n=%" PRIu64 " p=%g", cases[i].n, cases[i].p);
        int err = open_fails(c, "big", &p, msg, sizeof msg);
        cr_expect_eq(err, CRAWL_ENOROOM, "%s: %s (%s)", what, crawl_strerror(err), msg);
        snprintf(want, sizeof want, "(%" PRIu64 " bytes)", bloom_redis_bytes(&g));
        cr_expect(strstr(msg, want) && strstr(msg, "free under maxmemory (20 MiB"),
                  "%s: the message should name %s and the free bytes: %s", what, want, msg);
        expect_nothing_left(c, what);
    }
    redisFree(c);
    fx_redis_stop(r);
}

typedef struct steps {
    unsigned calls;
    uint64_t last_done, total;
    redisContext *ctl; /* a second connection, to lower maxmemory */
    unsigned lower_after;
} steps_t;

static void on_step(void *ud, uint64_t done, uint64_t total)
{
    steps_t *s = ud;
    s->calls++;
    cr_expect_gt(done, s->last_done, "progress went backwards");
    s->last_done = done;
    s->total = total;
    if (s->ctl && s->calls == s->lower_after) { /* the limit is reached between two steps */
        uint64_t used = info_u64(s->ctl, "used_memory");
        redisReply *r = redisCommand(s->ctl, "CONFIG SET maxmemory %" PRIu64, used - 4096);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET maxmemory failed");
        freeReplyObject(r);
    }
}

Test(bloom_memory, a_filter_that_fits_is_created_in_steps_and_works)
{
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    steps_t s = {0};
    bloom_params_t p = {.capacity = 1000000,
                        .fp_rate = 1e-2,
                        .block_bits = 8 * 65536,
                        .step_bytes = 256 << 10,
                        .progress = on_step,
                        .progress_ud = &s};
    bloom_t *b = open_ok(c, "fits", &p);
    const bloom_geometry_t *g = bloom_geometry(b);
    cr_expect_geq(s.calls, 2, "%u step(s) for %u blocks of 64 KiB in 256 KiB steps", s.calls,
                  g->blocks);
    cr_expect_eq(s.last_done, g->m / 8, "progress ended at %" PRIu64 " of %" PRIu64, s.last_done,
                 g->m / 8);
    cr_expect_eq(s.total, g->m / 8);
    cr_expect_eq(redis_int(c, "EXISTS fits:creating"), 0, "the creation claim is left behind");
    cr_expect_eq(redis_int(c, "DBSIZE"), (long long)g->blocks + 1, "meta + %u blocks", g->blocks);
    urls_t u = make_urls("https://fits.example/%zu", 0, 1000);
    cr_expect_eq(add_all(b, &u, 500), 1000);
    bloom_t *again = open_ok(c, "fits", NULL);
    cr_expect_eq(bloom_geometry(again)->m, g->m);
    cr_expect_eq(add_all(again, &u, 500), 0, "a joiner sees what was added");
    free_urls(&u);
    bloom_close(again);
    bloom_close(b);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom_memory, a_limit_reached_between_steps_leaves_no_half_filter)
{
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    steps_t s = {.ctl = fx_redis_connect(r), .lower_after = 2};
    cr_assert_not_null(s.ctl);
    uint64_t before = info_u64(c, "used_memory");
    bloom_params_t p = {.capacity = 7000000, /* 8 MiB in 1 MiB blocks, one a step */
                        .fp_rate = 1e-2,
                        .block_bits = 8 << 20,
                        .step_bytes = 1 << 20,
                        .progress = on_step,
                        .progress_ud = &s};
    char msg[512];
    int err = open_fails(c, "half", &p, msg, sizeof msg);
    cr_expect_eq(err, CRAWL_ENOROOM, "%s (%s)", crawl_strerror(err), msg);
    cr_expect(strstr(msg, "maxmemory part-way"), "message: %s", msg);
    cr_expect_eq(s.calls, 2, "steps after the limit was reached: %u", s.calls);
    cr_expect_eq(redis_int(c, "DBSIZE"), 0, "a half filter is left behind");
    uint64_t after = info_u64(c, "used_memory");
    cr_expect_lt(after, before + (1 << 20), "used_memory %" PRIu64 " -> %" PRIu64, before, after);
    redis_ok(c, "CONFIG SET maxmemory 20mb");
    p.progress = NULL;
    bloom_close(open_ok(c, "half", &p)); /* with room again, the same filter is created */
    redisFree(s.ctl);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom_memory, a_creation_claim_of_the_wrong_type_is_named)
{
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    redis_ok(c, "RPUSH odd:creating x");
    bloom_params_t p = {.capacity = 1000, .fp_rate = 1e-2};
    char msg[512];
    int err = open_fails(c, "odd", &p, msg, sizeof msg);
    cr_expect_eq(err, CRAWL_EWRONGTYPE, "%s (%s)", crawl_strerror(err), msg);
    cr_expect(strstr(msg, "'odd:creating' is a list"), "message: %s", msg);
    cr_expect_eq(redis_int(c, "DBSIZE"), 1, "only the list remains");
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom_memory, frontier_open_reports_the_bytes_not_an_unexpected_reply)
{
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = "mem";
    fc.bloom_capacity = 10000000; /* 24 MB at the default rate */
    char err[512] = "";
    frontier_t *f = fr_open(c, &fc, NULL, err, sizeof err);
    cr_expect_null(f, "a 24 MB filter was created under maxmemory 20mb");
    fr_close(f);
    cr_expect(strstr(err, "bytes) free under maxmemory") && !strstr(err, "unexpected"),
              "message: %s", err);
    expect_nothing_left(c, "frontier_open");
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- the CLI ------------------------------------------------------------------ */

typedef struct cli_case {
    const char *args; /* %s: the Redis URL; %f: the seeds file */
    int unreachable;  /* 1: give a Redis nobody listens on (refused before connecting) */
    int status;
    const char *err; /* in stderr */
} cli_case_t;

/* Runs the crawler with args, %s replaced by url and %f by seeds. */
static int run_crawler(const char *args, const char *url, const char *seeds, char **err_out)
{
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir, "%s", fx_error());
    char cmd[2048], errp[512], tmpl[1024];
    snprintf(errp, sizeof errp, "%s/err.txt", dir);
    size_t j = 0;
    for (const char *a = args; *a && j + 600 < sizeof tmpl; a++) {
        if (a[0] == '%' && (a[1] == 's' || a[1] == 'f')) {
            j += (size_t)snprintf(tmpl + j, sizeof tmpl - j, "%s", a[1] == 's' ? url : seeds);
            a++;
        } else
            tmpl[j++] = *a;
    }
    tmpl[j] = '\0';
    snprintf(cmd, sizeof cmd, "unset REDIS_URL; exec '%s' %s </dev/null", CRAWLER_BIN, tmpl);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    int st = fx_run(argv, NULL, errp, 60000);
    *err_out = fx_read_file(errp, NULL);
    cr_assert_not_null(*err_out);
    fx_rmtree(dir);
    free(dir);
    return st;
}

Test(bloom_memory, cli_exits_2_for_a_capacity_above_the_cap_or_a_filter_that_does_not_fit)
{
    static const cli_case_t cases[] = {
        {"crawl --redis %s --seeds %f --bloom-capacity 10000000001", 1, 2, "--bloom-capacity"},
        {"seed %f --redis %s --bloom-capacity 10000000001", 1, 2, "--bloom-capacity"},
        {"bloom add --name x --redis %s --capacity 10000000001", 1, 2, "--capacity"},
        {"crawl --redis %s --seeds %f --bloom-capacity 10000000 --quiet", 0, 2, "bytes) free"},
        {"seed %f --redis %s --bloom-capacity 10000000", 0, 2, "bytes) free"},
        {"bloom add --name x --redis %s --capacity 10000000", 0, 2, "bytes) free"},
    };
    redisContext *c;
    fx_redis_t *r = start_small(&c);
    char *dir = fx_tmpdir();
    char seeds[512];
    snprintf(seeds, sizeof seeds, "%s/seeds.txt", dir);
    cr_assert_eq(fx_write_file(seeds, "http://127.0.0.1:1/\n"), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cli_case_t *k = &cases[i];
        char *err;
        int st = run_crawler(k->args, k->unreachable ? "redis://127.0.0.1:1" : fx_redis_url(r),
                             seeds, &err);
        cr_expect_eq(st, k->status, "`%s`: exit %d, stderr: %s", k->args, st, err);
        cr_expect(strstr(err, k->err) && !strstr(err, "unexpected"), "`%s`: stderr: %s", k->args,
                  err);
        free(err);
        expect_nothing_left(c, k->args);
    }
    fx_rmtree(dir);
    free(dir);
    redisFree(c);
    fx_redis_stop(r);
}
