/*
 * End to end: the `crawler` binary crawls sites served by the HTTP fixture
 * through a private Redis (the test's own redis-server, or the crawler's
 * embedded one), and the server counts what was requested.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "test_metrics_util.h"

static char *seeds_file(const char *dir, const char *content)
{
    char *path = NULL;
    cr_assert(asprintf(&path, "%s/seeds.txt", dir) > 0);
    cr_assert_eq(fx_write_file(path, content), 0);
    return path;
}

static size_t count_lines(const char *path)
{
    char *s = fx_read_file(path, NULL);
    size_t n = 0;
    for (char *p = s; p && *p; p++)
        n += *p == '\n';
    free(s);
    return n;
}

static void three_pages(fx_http_t *h)
{
    fx_http_page(h, "/",
                 "<html><body><a href=\"/a\">a</a> <a href='b.html#x'>b</a>"
                 "<a href=\"/\">home</a></body></html>");
    fx_http_page(h, "/a", "<a href=\"/b.html\">b</a><a href=\"http://other.example/\">off</a>");
    fx_http_page(h, "/b.html", "<p>leaf <a href=\"./a\">a</a> <a href=\"/\">/</a></p>");
    fx_http_set(h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain", .body = "User-agent: *\nAllow: /\n"});
}

static void assert_three_pages_once(fx_http_t *h, const char *out)
{
    cr_expect_eq(fx_http_hits(h, "/"), 1, "/ fetched %u times", fx_http_hits(h, "/"));
    cr_expect_eq(fx_http_hits(h, "/a"), 1, "/a fetched %u times", fx_http_hits(h, "/a"));
    cr_expect_eq(fx_http_hits(h, "/b.html"), 1, "/b.html fetched %u times",
                 fx_http_hits(h, "/b.html"));
    cr_expect_eq(fx_http_hits(h, "/robots.txt"), 1, "robots.txt fetched %u times",
                 fx_http_hits(h, "/robots.txt"));
    cr_expect_eq(fx_http_total(h), 4, "%zu requests in all", fx_http_total(h));
    cr_expect_eq(count_lines(out), 3, "%zu output records", count_lines(out));
}

Test(e2e, three_page_site_each_page_fetched_once_via_shared_redis)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "cannot start the HTTP fixture: %s", fx_error());
    three_pages(h);
    char *dir = fx_tmpdir();
    char seeds[256], out[512], log[512];
    snprintf(seeds, sizeof seeds, "# test seeds\n\n%s/\n", fx_http_base(h));
    char *sf = seeds_file(dir, seeds);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    char *argv[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_redis_url(r),
                    "--seeds",   sf,      "--delay", "0",
                    "--threads", "2",     "--out",   out,
                    "--quiet",   NULL};
    int rc = fx_run(argv, NULL, log, 120000);
    char *errtext = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %s", rc, errtext ? errtext : "");
    free(errtext);
    assert_three_pages_once(h, out);
    free(sf);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(h);
    fx_redis_stop(r);
}

Test(e2e, embedded_redis_crawls_then_stops_and_a_second_run_adds_nothing)
{
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "cannot start the HTTP fixture: %s", fx_error());
    three_pages(h);
    char *dir = fx_tmpdir();
    char seeds[256], out[512], log[512], data[512], sock[600];
    snprintf(seeds, sizeof seeds, "%s/\n", fx_http_base(h));
    char *sf = seeds_file(dir, seeds);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    char *argv[] = {CRAWLER_BIN, "crawl", "--data-dir", data, "--seeds", sf,
                    "--delay",   "0",     "--out",      out,  "--quiet", NULL};
    int rc = fx_run(argv, NULL, log, 120000);
    char *errtext = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %s", rc, errtext ? errtext : "");
    free(errtext);
    assert_three_pages_once(h, out);
    /* the embedded server is gone and its append-only data is kept */
    snprintf(sock, sizeof sock, "%s/redis.sock", data);
    struct stat st;
    cr_expect(stat(sock, &st) != 0, "embedded redis socket still there after exit");
    char aof[600];
    snprintf(aof, sizeof aof, "%s/appendonlydir", data);
    cr_expect(stat(aof, &st) == 0, "no append-only data in %s", data);
    /* resuming the same crawl: the seed is already seen, nothing is fetched */
    rc = fx_run(argv, NULL, log, 120000);
    cr_expect_eq(rc, 0, "second run exited %d", rc);
    cr_expect_eq(fx_http_total(h), 4, "second run fetched again: %zu requests", fx_http_total(h));
    free(sf);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(h);
}

/* CONFIG GET NAME on c, as a string ("" when absent). */
static void config_get(redisContext *c, const char *name, char *out, size_t len)
{
    out[0] = 0;
    redisReply *r = redisCommand(c, "CONFIG GET %s", name);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        snprintf(out, len, "%s", r->element[1]->str);
    freeReplyObject(r);
}

/* A crawler with its embedded Redis in DIR/data, kept up by --wait once the
 * three pages are fetched, and a connection to that Redis (its socket). */
typedef struct embedded {
    fx_http_t *h;
    char *dir, *sf;
    char data[512], sock[600], log[512];
    pid_t pid;
    redisContext *c;
} embedded_t;

static void embedded_start(embedded_t *e)
{
    e->h = fx_http_start();
    cr_assert_not_null(e->h, "cannot start the HTTP fixture: %s", fx_error());
    three_pages(e->h);
    e->dir = fx_tmpdir();
    char seeds[256];
    snprintf(seeds, sizeof seeds, "%s/\n", fx_http_base(e->h));
    e->sf = seeds_file(e->dir, seeds);
    snprintf(e->log, sizeof e->log, "%s/log", e->dir);
    snprintf(e->data, sizeof e->data, "%s/data", e->dir);
    snprintf(e->sock, sizeof e->sock, "%s/redis.sock", e->data);
    char *argv[] = {CRAWLER_BIN, "crawl", "--data-dir", e->data,   "--seeds", e->sf,
                    "--delay",   "0",     "--wait",     "--quiet", NULL};
    e->pid = fx_spawn(argv, NULL, e->log);
    cr_assert(e->pid > 0, "cannot start the crawler");
    e->c = NULL;
    for (int i = 0; i < 600 && (!e->c || fx_http_total(e->h) < 3); i++) {
        if (!e->c) {
            e->c = redisConnectUnix(e->sock);
            if (e->c && e->c->err) {
                redisFree(e->c);
                e->c = NULL;
            }
        }
        usleep(50 * 1000);
    }
    cr_assert_not_null(e->c, "the embedded Redis never listened on %s", e->sock);
}

static void embedded_stop(embedded_t *e)
{
    redisFree(e->c);
    kill(e->pid, SIGTERM);
    cr_expect_eq(fx_wait(e->pid, 60000), 0, "the crawler did not exit 0 on SIGTERM");
    free(e->sf);
    fx_rmtree(e->dir);
    free(e->dir);
    fx_http_stop(e->h);
}

Test(e2e, embedded_redis_keeps_queues_in_compressed_nodes_of_16)
{
    embedded_t e;
    embedded_start(&e);
    char pack[32], depth[32];
    config_get(e.c, "list-max-listpack-size", pack, sizeof pack);
    config_get(e.c, "list-compress-depth", depth, sizeof depth);
    cr_expect_str_eq(pack, "16", "list-max-listpack-size is '%s'", pack);
    cr_expect_str_eq(depth, "1", "list-compress-depth is '%s'", depth);
    embedded_stop(&e);
}

/* Without --redis and $REDIS_URL, a control command acts on the crawl of
 * the worker running its embedded Redis in --data-dir (it does not start a
 * second one, which the data directory's lock would refuse). */
Test(e2e, a_control_command_reaches_the_embedded_redis_of_a_running_worker)
{
    embedded_t e;
    embedded_start(&e);
    char *argv[] = {CRAWLER_BIN, "pause", "--data-dir", e.data, NULL};
    int rc = fx_run_without("REDIS_URL", argv, 30000);
    cr_expect_eq(rc, 0, "crawler pause --data-dir exited %d", rc);
    redisReply *x = redisCommand(e.c, "HGET crawler:{default}:control paused");
    cr_expect(x && x->type == REDIS_REPLY_STRING && !strcmp(x->str, "1"),
              "the running worker's Redis does not hold the pause");
    freeReplyObject(x);
    embedded_stop(&e);
}

/* Runs `crawler ARGS... --data-dir DATA` without $REDIS_URL, its stdout
 * in out (caller frees); returns its exit status. */
static int run_joined(const embedded_t *e, char *const args[], char **out)
{
    char *argv[16] = {CRAWLER_BIN}, path[600];
    int n = 1;
    for (int k = 0; args[k] && n < 13; k++)
        argv[n++] = args[k];
    argv[n++] = "--data-dir";
    argv[n++] = (char *)e->data;
    argv[n] = NULL;
    snprintf(path, sizeof path, "%s/joined.out", e->dir);
    unsetenv("REDIS_URL");
    int rc = fx_run(argv, path, e->log, 30000);
    *out = fx_read_file(path, NULL);
    return rc;
}

/* The commands that read a crawl (stats, its --json, --watch and --serve,
 * bloom info, limits without a value) reach the embedded Redis of the
 * worker running in --data-dir, as the control commands do, instead of
 * refusing the directory its lock keeps. */
Test(e2e, read_only_commands_reach_the_embedded_redis_of_a_running_worker)
{
    embedded_t e;
    embedded_start(&e);
    static const struct {
        const char *args[6];
        const char *shows; /* in its stdout */
    } cases[] = {
        {{"stats", NULL}, "fetched"},
        {{"stats", "--json", NULL}, "\"fetched\": 3"},
        {{"stats", "--watch", "1", "--count", "2", NULL}, "fetched"},
        {{"bloom", "info", "--crawl", "default", NULL}, "bits (m)"},
        {{"limits", NULL}, "per-host"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        int rc = run_joined(&e, (char *const *)cases[i].args, &out);
        cr_expect_eq(rc, 0, "%s %s: exit %d", cases[i].args[0],
                     cases[i].args[1] ? cases[i].args[1] : "", rc);
        cr_expect(out && strstr(out, cases[i].shows), "%s %s: no '%s' in: %s", cases[i].args[0],
                  cases[i].args[1] ? cases[i].args[1] : "", cases[i].shows, out ? out : "(none)");
        free(out);
    }
    int port = fx_free_port();
    char addr[64], url[96];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "http://%s/metrics", addr);
    char *serve[] = {CRAWLER_BIN, "stats", "--serve", addr, "--data-dir", e.data, NULL};
    unsetenv("REDIS_URL");
    pid_t srv = fx_spawn(serve, NULL, e.log);
    cr_assert(srv > 0, "cannot start stats --serve");
    long st = 0;
    char *body = NULL;
    for (int i = 0; i < 200 && st != 200; i++) {
        free(body);
        body = http_get(url, &st, NULL);
        if (st != 200)
            usleep(50 * 1000);
    }
    cr_expect_eq(st, 200, "stats --serve answered %ld", st);
    cr_expect(body && strstr(body, "crawler_crawl_fetched"), "no fetched series: %s",
              body ? body : "");
    free(body);
    kill(srv, SIGTERM);
    cr_expect_eq(fx_wait(srv, 30000), 0, "stats --serve did not exit 0 on SIGTERM");
    embedded_stop(&e);
}

/* FCALL calls the server has run (INFO commandstats), -1 if unknown. */
static long long fcalls(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    long long n = -1;
    const char *p = r && r->type == REDIS_REPLY_STRING ? r->str : NULL;
    p = p ? strstr(p, "cmdstat_fcall:calls=") : NULL;
    if (p)
        n = strtoll(p + strlen("cmdstat_fcall:calls="), NULL, 10);
    freeReplyObject(r);
    return n;
}

/* A --wait worker whose crawl is over asks Redis at most about once a
 * second a thread (50 ms doubled up to 1 s), not every 10-20 ms.  A slower
 * machine only makes fewer calls, so the bound cannot fail from slowness. */
Test(e2e, an_idle_wait_worker_claims_about_once_a_second)
{
    embedded_t e;
    embedded_start(&e);
    usleep(3000 * 1000); /* the back-off reaches its 1 s */
    long long a = fcalls(e.c);
    usleep(3000 * 1000);
    long long b = fcalls(e.c);
    cr_assert(a >= 0 && b >= a, "no FCALL counts (%lld, %lld)", a, b);
    /* 3 s: at most 4 claims a thread (default threads: the cores, here <= 8
     * is assumed by the bound below) and a heartbeat or two each */
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    long long bound = (long long)(threads > 0 ? threads : 1) * 8;
    cr_expect_leq(b - a, bound, "%lld frontier calls in 3 s of an idle --wait worker (bound %lld)",
                  b - a, bound);
    embedded_stop(&e);
}
