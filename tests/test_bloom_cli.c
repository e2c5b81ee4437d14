/*
 * test_bloom_cli.c -- `crawler bloom` (add, check, info): output
 * in input order, invalid lines flagged, check changing nothing, the
 * crawl's own filter with --crawl, usage errors, and the embedded server
 * when no Redis is given.  Runs the crawler binary against a real
 * redis-server started per test.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "bloom_check.h"
#include "fixtures.h"

/* ---- crawler bloom (the CLI) ----------------------------------------------------------- */

typedef struct cli_run {
    int status;
    char *out, *err;
} cli_run_t;

/* Runs `crawler bloom ARGS < input` through sh (fx_run gives children
 * /dev/null as stdin). */
static cli_run_t run_cli(const char *args, const char *input)
{
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir, "%s", fx_error());
    char in[512], out[512], err[512], cmd[4096];
    snprintf(in, sizeof in, "%s/in.txt", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    cr_assert_eq(fx_write_file(in, input ? input : ""), 0);
    snprintf(cmd, sizeof cmd, "unset REDIS_URL; exec '%s' bloom %s < '%s'", CRAWLER_BIN, args, in);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    cli_run_t r = {.status = fx_run(argv, out, err, 120000)};
    r.out = fx_read_file(out, NULL);
    r.err = fx_read_file(err, NULL);
    cr_assert(r.out && r.err, "cannot read the output of: %s", cmd);
    fx_rmtree(dir);
    free(dir);
    return r;
}

static void cli_free(cli_run_t *r)
{
    free(r->out);
    free(r->err);
}

Test(bloom, cli_add_prints_new_and_seen_in_input_order_and_flags_invalid_lines)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    char args[256];
    snprintf(args, sizeof args, "add --name cli --redis %s --capacity 1000 --fp-rate 0.01",
             fx_redis_url(r));
    cli_run_t res = run_cli(args, "https://Example.com/a\n"
                                  "# a comment\n"
                                  "http://example.com:80/b#frag\n"
                                  "not a url\n"
                                  "\n"
                                  "  https://example.com/a  \n"
                                  "ftp://example.com/\n"
                                  "HTTPS://EXAMPLE.COM/c\n");
    cr_expect_eq(res.status, 3, "invalid lines give exit status 3 (got %d): %s", res.status,
                 res.err);
    cr_expect_str_eq(res.out, "new https://example.com/a\n"
                              "new http://example.com/b\n"
                              "seen https://example.com/a\n"
                              "new https://example.com/c\n");
    cr_expect(strstr(res.err, ":4:") && strstr(res.err, ":7:"),
              "line numbers of the invalid lines: %s", res.err);
    cli_free(&res);
    snprintf(args, sizeof args, "add --name cli --redis %s", fx_redis_url(r));
    res = run_cli(args, "https://example.com/c\nhttps://example.com/d\n");
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.out, "seen https://example.com/c\nnew https://example.com/d\n");
    cli_free(&res);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, cli_add_keeps_input_order_across_batches)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    size_t n = 2500, cap = n * 64;
    char *in = malloc(cap), *want = malloc(cap * 2);
    size_t il = 0, wl = 0;
    for (size_t i = 0; i < n; i++) { /* odd lines repeat the line 3 before */
        size_t id = i % 2 ? i - 3 + (i < 3) * 3 : i;
        int seen = i % 2 && i >= 3;
        il += (size_t)snprintf(in + il, cap - il, "http://h%zu.example/p\n", id);
        wl += (size_t)snprintf(want + wl, cap * 2 - wl, "%s http://h%zu.example/p\n",
                               seen ? "seen" : "new", id);
    }
    char args[256];
    snprintf(args, sizeof args, "add --name order --redis %s --capacity 100000 --batch 1000",
             fx_redis_url(r));
    cli_run_t res = run_cli(args, in);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strcmp(res.out, want) == 0, "output differs from the expected order");
    cli_free(&res);
    free(in);
    free(want);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, cli_check_changes_nothing_and_needs_an_existing_filter)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    char args[256];
    snprintf(args, sizeof args, "check --name chk --redis %s", fx_redis_url(r));
    cli_run_t res = run_cli(args, "https://example.com/\n");
    cr_expect_eq(res.status, 1);
    cr_expect(strstr(res.err, "no Bloom filter 'chk'"), "clear error: %s", res.err);
    cr_expect_eq(redis_int(c, "DBSIZE"), 0, "check must not create the filter");
    cli_free(&res);
    snprintf(args, sizeof args, "add --name chk --redis %s --capacity 1000", fx_redis_url(r));
    res = run_cli(args, "https://example.com/x\n");
    cr_expect_eq(res.status, 0, "%s", res.err);
    cli_free(&res);
    long long keys = redis_int(c, "DBSIZE"), changes = changes_since_save(c);
    snprintf(args, sizeof args, "check --name chk --redis %s", fx_redis_url(r));
    res = run_cli(args, "https://example.com/x\nhttps://example.com/y\nbad url\n");
    cr_expect_eq(res.status, 3);
    cr_expect_str_eq(res.out, "yes https://example.com/x\nno https://example.com/y\n");
    cr_expect_eq(changes_since_save(c), changes, "check wrote to Redis");
    cr_expect_eq(redis_int(c, "DBSIZE"), keys);
    cli_free(&res);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, cli_info_and_crawl_option_use_the_crawls_filter)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    char args[256];
    snprintf(args, sizeof args, "add --crawl c1 --redis %s --capacity 5000 --fp-rate 0.001",
             fx_redis_url(r));
    cli_run_t res = run_cli(args, "https://a.example/\nhttps://b.example/\n");
    cr_expect_eq(res.status, 0, "%s", res.err);
    cli_free(&res);
    cr_expect_eq(redis_int(c, "EXISTS crawler:{c1}:seen:meta crawler:{c1}:seen:b:0"), 2);
    snprintf(args, sizeof args, "info --crawl c1 --json --redis %s", fx_redis_url(r));
    res = run_cli(args, NULL);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"name\": \"crawler:{c1}:seen\"") && strstr(res.out, "\"k\": 10") &&
                  strstr(res.out, "\"capacity\": 5000") && strstr(res.out, "\"est_items\": 2."),
              "JSON info: %s", res.out);
    cli_free(&res);
    snprintf(args, sizeof args, "info --name crawler:{c1}:seen --redis %s", fx_redis_url(r));
    res = run_cli(args, NULL);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "hashes (k)   10") && strstr(res.out, "est. items   2"),
              "text info: %s", res.out);
    cli_free(&res);
    redisFree(c);
    fx_redis_stop(r);
}

/* A filter that grows (--growth): 3,000 URLs into one made for 100 go in
 * as new once, and info shows its layers, their items and the rate of the
 * whole, as text and as JSON. */
Test(bloom, cli_info_shows_the_layers_of_a_filter_that_grows)
{
    redisContext *c;
    fx_redis_t *r = start_redis(&c);
    size_t n = 3000, cap = n * 48, il = 0;
    char *in = malloc(cap);
    for (size_t i = 0; i < n; i++)
        il += (size_t)snprintf(in + il, cap - il, "https://example.org/p/%zu\n", i);
    char args[256];
    snprintf(args, sizeof args, "add --name g --redis %s --capacity 100 --growth 2",
             fx_redis_url(r));
    cli_run_t res = run_cli(args, in);
    cr_expect_eq(res.status, 0, "%s", res.err);
    size_t fresh = 0;
    for (const char *p = res.out; (p = strstr(p, "new ")) != NULL; p += 4)
        fresh++;
    cr_expect_eq(fresh, n, "%zu of %zu new", fresh, n);
    cli_free(&res);
    snprintf(args, sizeof args, "info --name g --redis %s", fx_redis_url(r));
    res = run_cli(args, NULL);
    cr_expect_eq(res.status, 0, "%s", res.err);
    /* 100 + 200 + 400 + 800 + 1600 >= 3000: five layers, the first full */
    cr_expect(strstr(res.out, "grows        x2 a layer") && strstr(res.out, "5 layer(s)") &&
                  strstr(res.out, "layer 0    100 of 100 items") && strstr(res.out, "layer 4 ") &&
                  strstr(res.out, "whole fp"),
              "text info: %s", res.out);
    cli_free(&res);
    snprintf(args, sizeof args, "info --name g --json --redis %s", fx_redis_url(r));
    res = run_cli(args, NULL);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"growth\": 2") &&
                  strstr(res.out, "\"layers\": [{\"capacity\": 100, ") &&
                  strstr(res.out, "\"whole_fp_rate\": "),
              "JSON info: %s", res.out);
    cli_free(&res);
    free(in);
    redisFree(c);
    fx_redis_stop(r);
}

Test(bloom, cli_help_lists_options_and_bad_options_are_usage_errors)
{
    cli_run_t res = run_cli("--help", NULL);
    cr_expect_eq(res.status, 0);
    static const char *const want[] = {"--name",     "--crawl",  "--redis",   "--data-dir",
                                       "--capacity", "10000000", "--fp-rate", "0.0001",
                                       "--batch",    "--json",   "crawl-data"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(res.out, want[i]), "--help lacks %s", want[i]);
    cli_free(&res);
    static const char *const bad[] = {"add",
                                      "frob --name x",
                                      "add --name x --crawl y",
                                      "add --name x --capacity 0",
                                      "add --name x --fp-rate 1",
                                      "add --name x --bogus",
                                      "check --name x --capacity 10",
                                      "add --crawl 'bad name'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        res = run_cli(bad[i], NULL);
        cr_expect_eq(res.status, 2, "`crawler bloom %s` exited %d: %s", bad[i], res.status,
                     res.err);
        cli_free(&res);
    }
}

Test(bloom, cli_without_redis_uses_the_embedded_server)
{
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir);
    char args[1024];
    snprintf(args, sizeof args, "add --name emb --capacity 1000 --data-dir '%s'", dir);
    cli_run_t res = run_cli(args, "https://emb.example/\n");
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.out, "new https://emb.example/\n");
    cli_free(&res);
    snprintf(args, sizeof args, "check --name emb --data-dir '%s'", dir);
    res = run_cli(args, "https://emb.example/\n");
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.out, "yes https://emb.example/\n");
    cli_free(&res);
    fx_rmtree(dir);
    free(dir);
}
