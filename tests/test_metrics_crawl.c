/*
 * The two /metrics endpoints against real crawls of the HTTP fixture
 * through the test's own redis-server (or a Redis Cluster): `crawl
 * --metrics` counters equal to what the JSON lines say, `stats --serve`
 * equal to the crawl's Redis counters, Redis down and back on both, the
 * exit status of a refused --metrics address, and the Grafana dashboard's
 * expressions against the names the endpoints expose.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster_env.h"
#include "crawl_env.h"
#include "fixtures.h"
#include "test_metrics_util.h"

#define DASHBOARD TEST_DATA_DIR "/../../contrib/grafana/crawler.json"

/* ---- against a crawl -------------------------------------------------------- */

/* 40 pages; page i links to 2i+1 and 2i+2, every 10th to a 404, every 10th
 * (from 1) to a redirect, every 10th (from 2) into the robots-disallowed
 * tree, every 20th (from 3) to a 500 (retried, then dead-lettered). */
static int site(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char body[1024];
    int i;
    char tail;
    if (sscanf(path, "/p/%d%c", &i, &tail) == 1 && i >= 0 && i < 40) {
        snprintf(body, sizeof body,
                 "<a href=\"/p/%d\">a</a><a href=\"/p/%d\">b</a>%s%s%s%s<a href=\"/p/0\">0</a>",
                 (2 * i + 1) % 40, (2 * i + 2) % 40,
                 i % 10 == 0 ? "<a href=\"/missing\">m</a>" : "",
                 i % 10 == 1 ? "<a href=\"/r/1\">r</a>" : "",
                 i % 10 == 2 ? "<a href=\"/private/x\">p</a>" : "",
                 i % 20 == 3 ? "<a href=\"/err\">e</a>" : "");
        *out = (fx_route_t){.body = body};
        return 0;
    }
    if (!strcmp(path, "/r/1")) {
        *out = (fx_route_t){.status = 301, .headers = "Location: /p/39\n", .body = "moved"};
        return 0;
    }
    if (!strcmp(path, "/err")) {
        *out = (fx_route_t){.status = 500, .body = "oops"};
        return 0;
    }
    return -1;
}

/* What the JSON lines say. */
typedef struct tally {
    unsigned lines, st[6]; /* 2xx 3xx 4xx 5xx other none */
    unsigned timeout, http5xx, robots, errors;
    unsigned long long bytes;
} tally_t;

static tally_t read_out(const char *path)
{
    tally_t t = {0};
    char *s = fx_read_file(path, NULL);
    for (char *p = s; p && *p;) {
        char *e = strchr(p, '\n');
        if (!e)
            break;
        *e = '\0';
        int status;
        unsigned long long bytes;
        const char *sp = strstr(p, "\"status\":"), *bp = strstr(p, "\"bytes\":");
        if (sp && !strncmp(sp + 9, "null", 4))
            status = 0; /* no response */
        else if (!sp || sscanf(sp + 9, "%d", &status) != 1)
            sp = NULL;
        if (strstr(p, "\"url\":") && sp && bp && sscanf(bp + 8, "%llu", &bytes) == 1) {
            t.lines++;
            t.bytes += bytes;
            t.st[status == 0 ? 5 : status >= 200 && status < 600 ? status / 100 - 2 : 4]++;
            t.errors += !strstr(p, "\"error_kind\":null");
            t.http5xx += strstr(p, "\"error_kind\":\"http-5xx\"") != NULL;
            t.robots += strstr(p, "\"error_kind\":\"robots\"") != NULL;
        }
        p = e + 1;
    }
    free(s);
    return t;
}

typedef struct run {
    crawl_env_t env;
    int mport, sport;
    char maddr[32], saddr[32];
    pid_t crawl, stats;
} run_t;

static void run_start_on(run_t *r, fx_redis_t *redis)
{
    crawl_env_start(&r->env, redis, "/p/0");
    fx_http_set_handler(r->env.h, site, NULL);
    fx_http_set(r->env.h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /private/\n"});
    r->mport = fx_free_port();
    r->sport = fx_free_port();
    cr_assert(r->mport > 0 && r->sport > 0 && r->mport != r->sport);
    snprintf(r->maddr, sizeof r->maddr, "127.0.0.1:%d", r->mport);
    snprintf(r->saddr, sizeof r->saddr, "127.0.0.1:%d", r->sport);
    char slog[600];
    snprintf(slog, sizeof slog, "%s/stats.log", r->env.dir);
    char *cargv[] = {CRAWLER_BIN,   "crawl",      "--redis",         (char *)fx_redis_url(r->env.r),
                     "--seeds",     r->env.seeds, "--out",           r->env.out,
                     "--delay",     "0",          "--threads",       "2",
                     "--max-tries", "2",          "--retry-backoff", "1",
                     "--wait",      "--quiet",    "--metrics",       r->maddr,
                     NULL};
    r->crawl = fx_spawn(cargv, NULL, r->env.log);
    cr_assert(r->crawl > 0);
    char *sargv[] = {CRAWLER_BIN, "stats",  "--redis", (char *)fx_redis_url(r->env.r),
                     "--serve",   r->saddr, NULL};
    r->stats = fx_spawn(sargv, NULL, slog);
    cr_assert(r->stats > 0);
}

static void run_start(run_t *r)
{
    run_start_on(r, NULL);
}

/* Scrapes until the crawl is over: nothing queued, delayed or leased, one
 * record per admitted URL, and each of them acknowledged or dead-lettered
 * (bounded: 600 tries 50 ms apart, a failed wait fails the test). */
static void wait_done(run_t *r, char **mtext, char **stext)
{
    for (int i = 0; i < 600; i++) {
        long a, b;
        *mtext = scrape(r->mport, &a);
        *stext = scrape(r->sport, &b);
        tally_t t = read_out(r->env.out);
        double enq = sample(*stext, "crawler_crawl_enqueued_total{crawl=\"default\"}");
        int over = a == 200 && b == 200 && enq > 0 &&
                   sample(*stext, "crawler_crawl_queued_urls{crawl=\"default\"}") == 0 &&
                   sample(*stext, "crawler_crawl_delayed_urls{crawl=\"default\"}") == 0 &&
                   sample(*stext, "crawler_crawl_in_flight_urls{crawl=\"default\"}") == 0 &&
                   t.lines == enq &&
                   sample(*mtext, "crawler_pages_finished_total") +
                           sample(*mtext, "crawler_dead_letters_total") ==
                       enq;
        if (over)
            return;
        if (i == 599)
            cr_assert_fail("the crawl did not end within 30 s: %u records, enqueued %g, queued "
                           "%g, delayed %g, leased %g, finished %g, dead %g",
                           t.lines, enq,
                           sample(*stext, "crawler_crawl_queued_urls{crawl=\"default\"}"),
                           sample(*stext, "crawler_crawl_delayed_urls{crawl=\"default\"}"),
                           sample(*stext, "crawler_crawl_in_flight_urls{crawl=\"default\"}"),
                           sample(*mtext, "crawler_pages_finished_total"),
                           sample(*mtext, "crawler_dead_letters_total"));
        free(*mtext);
        free(*stext);
        usleep(50000);
    }
}

static void run_stop(run_t *r)
{
    kill(r->crawl, SIGTERM);
    kill(r->stats, SIGTERM);
    int rc = fx_wait(r->crawl, 30000), src = fx_wait(r->stats, 30000);
    cr_expect_eq(rc, 0, "crawler crawl exited %d", rc);
    cr_expect_eq(src, 0, "crawler stats --serve exited %d", src);
    crawl_env_stop(&r->env);
}

Test(metrics_crawl, crawl_counters_equal_the_output_records)
{
    run_t r;
    char *m, *s;
    run_start(&r);
    wait_done(&r, &m, &s);
    assert_well_formed(m);
    assert_well_formed(s);
    tally_t t = read_out(r.env.out);
    static const char *const CL[] = {"2xx", "3xx", "4xx", "5xx", "other", "none"};
    for (int c = 0; c < 6; c++) {
        char series[80];
        snprintf(series, sizeof series, "crawler_pages_total{status=\"%s\"}", CL[c]);
        cr_expect_eq(sample(m, series), t.st[c], "%s: %g, the output says %u", series,
                     sample(m, series), t.st[c]);
    }
    cr_expect(t.st[0] >= 40 && t.st[1] == 1 && t.st[2] == 1 && t.st[3] == 1 && t.robots == 1,
              "the site's outcomes: 2xx %u 3xx %u 4xx %u 5xx %u robots %u", t.st[0], t.st[1],
              t.st[2], t.st[3], t.robots);
    cr_expect_eq(sample(m, "crawler_fetch_errors_total{kind=\"http-5xx\"}"), t.http5xx);
    cr_expect_eq(sample(m, "crawler_fetch_errors_total{kind=\"robots\"}"), t.robots);
    cr_expect_eq(sample(m, "crawler_retries_total"), 1, "the 500 was retried once");
    cr_expect_eq(sample(m, "crawler_dead_letters_total"), 1, "then dead-lettered");
    /* every attempt's body: the records', and the retried 500's "oops" */
    cr_expect_eq(sample(m, "crawler_response_bytes_total"), (double)t.bytes + 4);
    cr_expect_eq(sample(m, "crawler_fetch_duration_seconds_count"), t.lines - t.robots + 1,
                 "one transfer per fetched record, and the retried one");
    /* the crawl-wide view: the same crawl, from Redis */
    cr_expect_eq(sample(s, "crawler_redis_up{crawl=\"default\"}"), 1);
    cr_expect_eq(sample(s, "crawler_crawl_pages_total{crawl=\"default\",status=\"2xx\"}"), t.st[0]);
    cr_expect_eq(sample(s, "crawler_crawl_links_total{crawl=\"default\",result=\"new\"}"),
                 sample(m, "crawler_links_total{result=\"new\"}"), "new links");
    /* the worker's not_new is the crawl-wide seen and skipped together */
    cr_expect_eq(sample(s, "crawler_crawl_links_total{crawl=\"default\",result=\"seen\"}") +
                     sample(s, "crawler_crawl_links_total{crawl=\"default\",result=\"skipped\"}"),
                 sample(m, "crawler_links_total{result=\"not_new\"}"), "links not new");
    cr_expect_eq(sample(s, "crawler_crawl_dead_letters{crawl=\"default\"}"), 1);
    cr_expect_eq(sample(s, "crawler_crawl_live_workers{crawl=\"default\"}"), 2, "one a thread");
    cr_expect_eq(sample(m, "crawler_transfers_in_flight"), 0);
    cr_expect_eq(sample(m, "crawler_redis_connected"), 1);
    cr_expect_eq(sample(m, "crawler_worker_threads"), 2);
    cr_expect(sample(m, "crawler_redis_roundtrip_seconds_count{call=\"claim\"}") > 0);
    cr_expect(sample(m, "crawler_redis_roundtrip_seconds_count{call=\"finish\"}") > 0);
    free(m);
    free(s);
    run_stop(&r);
}

/* The crawler_* names a dashboard expression uses (histogram samples by
 * their own names: _bucket, _sum, _count). */
static size_t dashboard_names(char names[][96], size_t max)
{
    char *j = fx_read_file(DASHBOARD, NULL);
    cr_assert_not_null(j, "cannot read %s", DASHBOARD);
    size_t n = 0;
    for (char *p = strstr(j, "\"expr\""); p; p = strstr(p + 1, "\"expr\"")) {
        char *q = strchr(p + 6, '"'), *end = q ? q + 1 : NULL;
        while (end && *end && *end != '"')
            end += *end == '\\' && end[1] ? 2 : 1;
        cr_assert(end && *end, "unterminated expr");
        for (char *x = q + 1; x < end; x++) {
            if (strncmp(x, "crawler_", 8) != 0 || (x > q + 1 && (isalnum(x[-1]) || x[-1] == '_')))
                continue;
            size_t l = strspn(x, "abcdefghijklmnopqrstuvwxyz0123456789_");
            int dup = 0;
            for (size_t k = 0; k < n; k++)
                dup |= strlen(names[k]) == l && !strncmp(names[k], x, l);
            if (!dup && n < max)
                snprintf(names[n++], 96, "%.*s", (int)l, x);
            x += l;
        }
        p = end;
    }
    free(j);
    return n;
}

/* 1 if text has a sample named name. */
static int exposes(const char *text, const char *name)
{
    size_t l = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (*p != '#' && !strncmp(p, name, l) && (p[l] == '{' || p[l] == ' '))
            return 1;
    return 0;
}

Test(metrics_crawl, dashboard_uses_only_names_the_endpoints_expose)
{
    static char names[128][96];
    size_t n = dashboard_names(names, 128);
    cr_assert_gt(n, 10, "only %zu metric names in the dashboard", n);
    run_t r;
    char *m, *s;
    run_start(&r);
    wait_done(&r, &m, &s);
    for (size_t i = 0; i < n; i++)
        cr_expect(exposes(m, names[i]) || exposes(s, names[i]),
                  "the dashboard uses %s, which neither endpoint exposes", names[i]);
    /* its worker-job variable and process count use a family that only a
     * worker exposes (stats --serve's job must not be counted as a worker) */
    char *j = fx_read_file(DASHBOARD, NULL);
    cr_assert_not_null(j);
    const char *q = strstr(j, "label_values(");
    cr_assert_not_null(q, "no label_values() query in the dashboard");
    char fam[96];
    cr_assert_eq(sscanf(q, "label_values(%95[a-z_], job)", fam), 1, "%.60s", q);
    cr_expect(exposes(m, fam) && !exposes(s, fam),
              "the job variable's %s is not a worker-only family", fam);
    cr_expect_null(strstr(j, "count(crawler_build_info"), "counts build_info (both endpoints)");
    free(j);
    free(m);
    free(s);
    run_stop(&r);
}

Test(metrics_crawl, bad_address_or_port_in_use_exit_2_before_redis)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    char busy[32];
    snprintf(busy, sizeof busy, "127.0.0.1:%d", ntohs(sa.sin_port));
    const char *addrs[] = {"127.0.0.1", "127.0.0.1:0", "nohost..:80", busy};
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        char *argv[] = {CRAWLER_BIN, "crawl", "--redis",   (char *)fx_redis_url(e.r),
                        "--seeds",   e.seeds, "--metrics", (char *)addrs[i],
                        "--quiet",   NULL};
        int rc = fx_run(argv, NULL, e.log, 60000);
        char *log = fx_read_file(e.log, NULL);
        cr_expect_eq(rc, 2, "--metrics %s: exit %d: %s", addrs[i], rc, log ? log : "");
        cr_expect(log && strstr(log, i == 3 ? "Address already in use" : "bad value"),
                  "--metrics %s: not the reason: %s", addrs[i], log ? log : "");
        free(log);
    }
    close(fd);
    redisContext *c = fx_redis_connect(e.r);
    cr_assert_not_null(c);
    redisReply *rep = redisCommand(c, "DBSIZE");
    cr_expect(rep && rep->integer == 0, "Redis was touched: %lld keys", rep ? rep->integer : -1);
    freeReplyObject(rep);
    redisFree(c);
    cr_expect_eq(fx_http_total(e.h), 0, "the site was fetched");
    /* and a good address is taken: the crawl runs (the site's one URL, 404) */
    char good[32];
    snprintf(good, sizeof good, "127.0.0.1:%d", fx_free_port());
    char *argv[] = {CRAWLER_BIN, "crawl", "--redis",   (char *)fx_redis_url(e.r),
                    "--seeds",   e.seeds, "--metrics", good,
                    "--quiet",   NULL};
    int rc = fx_run(argv, NULL, e.log, 60000);
    char *log = fx_read_file(e.log, NULL);
    cr_expect_eq(rc, 0, "--metrics %s: exit %d: %s", good, rc, log ? log : "");
    free(log);
    cr_expect_eq(fx_http_hits(e.h, "/"), 1, "the seed was not fetched");
    crawl_env_stop(&e);
}

/* A thread scraping while the test thread restarts Redis (the
 * restarted server dies with the thread that started it: PDEATHSIG). */
typedef struct watcher {
    int port;
    const char *series; /* NULL: crawler_redis_up{crawl="default"} */
    atomic_int stop;
    char *down_text; /* the first scrape that said series is 0 */
} watcher_t;

static void *watch_down(void *arg)
{
    watcher_t *w = arg;
    for (int i = 0; i < 800 && !w->down_text && !atomic_load(&w->stop); i++) {
        long st;
        char *t = scrape(w->port, &st);
        const char *series = w->series ? w->series : "crawler_redis_up{crawl=\"default\"}";
        if (st == 200 && sample(t, series) == 0)
            w->down_text = t;
        else
            free(t);
        usleep(25000);
    }
    return NULL;
}

/* Scrapes port until crawler_redis_up is want (bounded: 400 tries 25 ms
 * apart); the last text (caller frees). */
static char *scrape_until_up_is(int port, double want)
{
    char *t = NULL;
    for (int i = 0; i < 400; i++) {
        long st;
        free(t);
        t = scrape(port, &st);
        if (st == 200 && sample(t, "crawler_redis_up{crawl=\"default\"}") == want)
            return t;
        usleep(25000);
    }
    cr_assert_fail("crawler_redis_up never became %g: %s", want, t);
    return NULL;
}

Test(metrics_crawl, stats_serve_says_redis_down_and_recovers)
{
    fx_redis_t *r = fx_redis_start_aof();
    cr_assert_not_null(r, "%s", fx_error());
    char *dir = fx_tmpdir(), log[600], seeds[600], addr[32];
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(seeds, sizeof seeds, "%s/seeds", dir);
    fx_write_file(seeds, "http://127.0.0.1:1/\n");
    char *seed[] = {CRAWLER_BIN, "seed", seeds, "--redis", (char *)fx_redis_url(r), NULL};
    cr_assert_eq(fx_run(seed, NULL, log, 60000), 0);
    int port = fx_free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    char *argv[] = {CRAWLER_BIN, "stats", "--redis", (char *)fx_redis_url(r),
                    "--serve",   addr,    NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    char *t = scrape_until_up_is(port, 1);
    cr_expect_eq(sample(t, "crawler_crawl_queued_urls{crawl=\"default\"}"), 1);
    cr_expect_eq(sample(t, "crawler_crawl_seeds_total{crawl=\"default\"}"), 1);
    free(t);
    watcher_t w = {.port = port};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, watch_down, &w), 0);
    int rrc = fx_redis_restart(r, SIGTERM, 3000); /* down for 3 s */
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    cr_assert_eq(rrc, 0, "restart: %s", fx_error());
    cr_assert_not_null(w.down_text, "no scrape said crawler_redis_up 0 while Redis was down");
    assert_well_formed(w.down_text);
    cr_expect_null(strstr(w.down_text, "crawler_crawl_queued_urls"), "stale numbers: %s",
                   w.down_text);
    free(w.down_text);
    t = scrape_until_up_is(port, 1); /* back, the same server process */
    cr_expect_eq(sample(t, "crawler_crawl_seeds_total{crawl=\"default\"}"), 1);
    free(t);
    /* a connection dropped between two scrapes (CLIENT KILL; a Redis
     * `timeout`, a proxy's idle timer) is made again within the scrape: the
     * very next one reads the crawl */
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    for (int i = 0; i < 3; i++) {
        redisReply *k = redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes");
        cr_assert(k && k->type == REDIS_REPLY_INTEGER && k->integer >= 1, "nothing killed");
        freeReplyObject(k);
        long st;
        t = scrape(port, &st);
        cr_expect_eq(st, 200);
        cr_expect_eq(sample(t, "crawler_redis_up{crawl=\"default\"}"), 1,
                     "scrape %d after CLIENT KILL says Redis is down", i);
        cr_expect_eq(sample(t, "crawler_crawl_seeds_total{crawl=\"default\"}"), 1);
        free(t);
    }
    redisFree(c);
    kill(pid, SIGTERM);
    cr_expect_eq(fx_wait(pid, 30000), 0, "stats --serve did not exit 0 on SIGTERM");
    fx_rmtree(dir);
    free(dir);
    fx_redis_stop(r);
}

/* stats --serve started while its Redis is down binds its address at once
 * and says crawler_redis_up 0 (a busy address is still exit 2), then reads
 * the crawl once a Redis answers there. */
Test(metrics_crawl, stats_serve_started_with_redis_down_serves_up_0_then_1)
{
    char *dir = fx_tmpdir(), log[600], sock[600], url[700], addr[32], busy[32];
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(sock, sizeof sock, "%s/r.sock", dir);
    snprintf(url, sizeof url, "unix://%s", sock);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    snprintf(busy, sizeof busy, "127.0.0.1:%d", ntohs(sa.sin_port));
    char *argb[] = {CRAWLER_BIN, "stats", "--redis", url, "--serve", busy, NULL};
    cr_expect_eq(fx_run(argb, NULL, log, 60000), 2, "a busy address with Redis down: not exit 2");
    close(fd);
    int port = fx_free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    char *argv[] = {CRAWLER_BIN, "stats", "--redis", url, "--serve", addr, NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    char *t = scrape_until_up_is(port, 0);
    assert_well_formed(t);
    free(t);
    char *rs[] = {"redis-server", "--port", "0", "--unixsocket", sock, "--maxmemory",
                  "64mb",         "--save", "",  "--appendonly", "no", NULL};
    pid_t rp = fx_spawn(rs, NULL, NULL);
    cr_assert(rp > 0);
    t = scrape_until_up_is(port, 1); /* the same server process, now reading */
    cr_expect_eq(sample(t, "crawler_crawl_queued_urls{crawl=\"default\"}"), 0);
    free(t);
    kill(pid, SIGTERM);
    cr_expect_eq(fx_wait(pid, 30000), 0, "stats --serve did not exit 0 on SIGTERM");
    kill(rp, SIGTERM);
    fx_wait(rp, 30000);
    fx_rmtree(dir);
    free(dir);
}

Test(metrics_crawl, stats_serve_reads_a_crawl_on_a_redis_cluster)
{
    fx_cluster_t *c = fx_cluster_start(3, 0, 2000);
    cr_assert_not_null(c, "cannot start a Redis Cluster: %s", fx_error());
    char url[256], *dir = fx_tmpdir(), log[600], seeds[600], addr[32];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             fx_cluster_port(c, 0), fx_cluster_port(c, 1), fx_cluster_port(c, 2));
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(seeds, sizeof seeds, "%s/seeds", dir);
    fx_write_file(seeds, "http://127.0.0.1:1/a\nhttp://127.0.0.1:2/b\n");
    char *seed[] = {
        CRAWLER_BIN, "seed",     seeds, "--redis", url, "--crawl",
        "m2",        "--shards", "1",   NULL}; /* one slot: the crawl's keys on master 2 only */
    int src = fx_run(seed, NULL, log, 60000);
    cr_assert_eq(src, 0, "seed on the cluster exited %d", src);
    /* crawl m2's slot (11111) is on master 2: none of its keys on node 0, the
     * first node of the URL, which stats connects to first */
    redisContext *n0 = fx_cluster_connect(c, 0);
    cr_assert_not_null(n0);
    redisReply *rep = redisCommand(n0, "DBSIZE");
    cr_expect(rep && rep->integer == 0, "node 0 holds %lld keys", rep ? rep->integer : -1);
    freeReplyObject(rep);
    redisFree(n0);
    int port = fx_free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    char *argv[] = {CRAWLER_BIN, "stats", "--redis", url, "--crawl", "m2", "--serve", addr, NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    char *t = NULL;
    for (int i = 0; i < 400; i++) { /* until it listens and reads: at most 10 s */
        long st;
        free(t);
        t = scrape(port, &st);
        if (st == 200 && sample(t, "crawler_redis_up{crawl=\"m2\"}") == 1)
            break;
        usleep(25000);
    }
    cr_expect_eq(sample(t, "crawler_redis_up{crawl=\"m2\"}"), 1, "%s", t);
    cr_expect_eq(sample(t, "crawler_crawl_seeds_total{crawl=\"m2\"}"), 2, "%s", t);
    cr_expect_eq(sample(t, "crawler_crawl_queued_urls{crawl=\"m2\"}"), 2);
    cr_expect_eq(sample(t, "crawler_crawl_hosts{crawl=\"m2\"}"), 2);
    /* the visited set read: the two seeds added (its fill is shard 0's
     * newest layer's, as the filter grows: 0 when they went to another) */
    cr_expect_eq(sample(t, "crawler_crawl_bloom_added_urls{crawl=\"m2\"}"), 2, "%s", t);
    cr_expect(sample(t, "crawler_crawl_bloom_fill_ratio{crawl=\"m2\"}") >= 0, "no Bloom fill");
    free(t);
    kill(pid, SIGTERM);
    cr_expect_eq(fx_wait(pid, 30000), 0, "stats --serve did not exit 0 on SIGTERM");
    fx_rmtree(dir);
    free(dir);
    fx_cluster_stop(c);
}

Test(metrics_crawl, worker_gauges_say_redis_lost_and_back)
{
    fx_redis_t *redis = fx_redis_start_aof();
    cr_assert_not_null(redis, "%s", fx_error());
    run_t r;
    char *m, *s;
    run_start_on(&r, redis);
    wait_done(&r, &m, &s);
    cr_expect_eq(sample(m, "crawler_redis_connected"), 1);
    cr_expect_eq(sample(m, "crawler_redis_disconnects_total"), 0);
    free(m);
    free(s);
    watcher_t w = {.port = r.mport, .series = "crawler_redis_connected"};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, watch_down, &w), 0);
    int rrc = fx_redis_restart(r.env.r, SIGTERM, 3000); /* on this thread: PDEATHSIG */
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    cr_assert_eq(rrc, 0, "restart: %s", fx_error());
    cr_assert_not_null(w.down_text,
                       "no scrape said crawler_redis_connected 0 while Redis was down");
    cr_expect(sample(w.down_text, "crawler_redis_threads_reconnecting") >= 1, "%s", w.down_text);
    free(w.down_text);
    double up = 0, lost = 0;
    for (int i = 0; i < 600 && up != 1; i++) { /* the threads reconnect: at most 30 s */
        long st;
        char *t = scrape(r.mport, &st);
        up = sample(t, "crawler_redis_connected");
        lost = sample(t, "crawler_redis_disconnects_total");
        free(t);
        if (up != 1)
            usleep(50000);
    }
    cr_expect_eq(up, 1, "the workers did not get Redis back");
    cr_expect_eq(lost, 2, "each of the 2 threads lost it once: %g", lost);
    run_stop(&r);
}
