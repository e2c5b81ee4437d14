/*
 * test_faults.c -- the fault suite: real crawler processes against a real
 * redis-server and the HTTP fixture, with faults injected while they run:
 * Redis stopped (SIGTERM, SIGKILL) and started again with its append-only
 * file, a worker SIGKILLed at random moments, an output that fails
 * (/dev/full, a pipe whose reader went away).  The verdict is always what is
 * in Redis and in the output files afterwards, never a time.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"
#include "side.h"
#include "tree_site.h"

#define PAGES 600 /* the site: /p/0 .. /p/599 */

/* The site (tree_site.h): PAGES pages, each answering after delay_ms. */
static tree_site_t tree = {.pages = PAGES};

typedef crawl_env_t faults_t;

/* The site above, seeded at /p/0, every page answering after delay_ms; with
 * aof, a Redis with append-only persistence (fx_redis_restart keeps it). */
static void faults_start(faults_t *t, int aof, unsigned delay_ms)
{
    crawl_env_start(t, aof ? fx_redis_start_aof() : NULL, "/p/0");
    tree.delay_ms = delay_ms;
    fx_http_set_handler(t->h, tree_site_route, &tree);
}

static void faults_stop(faults_t *t)
{
    crawl_env_stop(t);
}

/* argv of a crawler on t's crawl writing to out, plus extra (NULL-ended). */
static void crawl_argv(faults_t *t, const char *out, char *const extra[], char *argv[64])
{
    char *base[] = {CRAWLER_BIN, "crawl",     "--redis", (char *)fx_redis_url(t->r),
                    "--seeds",   t->seeds,    "--delay", "0",
                    "--out",     (char *)out, "--quiet", "--per-host",
                    "4",         "--threads", "2",       NULL};
    int n = 0;
    for (; base[n]; n++)
        argv[n] = base[n];
    for (int i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
}

static void wait_requests(faults_t *t, size_t n, unsigned timeout_ms)
{
    tree_wait_requests(t->h, n, timeout_ms);
}

static void mark_recorded(faults_t *t, const char *path, unsigned char seen[PAGES])
{
    tree_mark_recorded(t->h, path, seen, PAGES);
}

static size_t count_missing(const unsigned char seen[PAGES], int *first)
{
    size_t n = 0;
    *first = -1;
    for (int i = 0; i < PAGES; i++)
        if (!seen[i]) {
            if (*first < 0)
                *first = i;
            n++;
        }
    return n;
}

/* The crawl in Redis is over and consistent: nothing queued, delayed or
 * leased, every page fetched, the frontier's invariants hold. */
static void assert_crawl_over(faults_t *t)
{
    redisContext *c = fx_redis_connect(t->r);
    cr_assert_not_null(c);
    frontier_config_t fc; /* joins the crawl's filter as the crawler made it */
    frontier_config_defaults(&fc);
    fc.bloom_capacity = 0;
    fc.bloom_fp_rate = 0;
    fc.bloom_cache_bytes = SIZE_MAX;
    char err[512];
    frontier_t *f = fr_open(c, &fc, NULL, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_eq(st.queued, 0, "%llu still queued", (unsigned long long)st.queued);
    cr_expect_eq(st.in_flight, 0, "%llu still leased", (unsigned long long)st.in_flight);
    cr_expect_eq(st.delayed, 0, "%llu still delayed", (unsigned long long)st.delayed);
    cr_expect_geq(st.fetched, PAGES, "%llu fetched of %d", (unsigned long long)st.fetched, PAGES);
    side_check(c, f, 0);
    fr_close(f);
    redisFree(c);
    for (int i = 0; i < PAGES; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        cr_expect_geq(fx_http_hits(t->h, path), 1, "%s never requested", path);
    }
}

/* Two crawler processes (extra: more options, may be NULL); Redis is
 * stopped with sig1 a third of the way in and with sig2 two thirds in, each
 * time down for down_ms, then started again from its append-only file. */
static void restart_mid_crawl(int sig1, int sig2, unsigned down_ms, char *const extra[])
{
    faults_t t;
    faults_start(&t, 1, 15);
    char out[2][512], log[2][512], *argv[2][64];
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.jsonl", t.dir, i);
        snprintf(log[i], sizeof log[i], "%s/log%d", t.dir, i);
        crawl_argv(&t, out[i], extra, argv[i]);
        pid[i] = fx_spawn(argv[i], NULL, log[i]);
        cr_assert(pid[i] > 0);
    }
    wait_requests(&t, PAGES / 3, 120000);
    cr_assert_eq(fx_redis_restart(t.r, sig1, down_ms), 0, "%s", fx_error());
    wait_requests(&t, 2 * PAGES / 3, 120000);
    cr_assert_eq(fx_redis_restart(t.r, sig2, down_ms), 0, "%s", fx_error());
    unsigned char seen[PAGES] = {0};
    for (int i = 0; i < 2; i++) {
        int rc = fx_wait(pid[i], 180000);
        char *err = fx_read_file(log[i], NULL);
        cr_expect_eq(rc, 0, "crawler %d exited %d: %.3000s", i, rc, err ? err : "");
        cr_expect(err && strstr(err, "Redis is back"), "crawler %d did not reconnect: %.3000s", i,
                  err ? err : "");
        free(err);
        mark_recorded(&t, out[i], seen);
        char *lines = fx_read_file(out[i], NULL);
        cr_expect(lines && strstr(lines, "{\"event\":\"redis-unreachable\"") &&
                      strstr(lines, "{\"event\":\"redis-back\""),
                  "crawler %d's JSONL does not say Redis was away", i);
        free(lines);
    }
    int first;
    size_t missing = count_missing(seen, &first);
    cr_expect_eq(missing, 0, "%zu of %d pages have no record in either output (first /p/%d)",
                 missing, PAGES, first);
    if (extra) { /* (the growing visited set's test: it did grow) */
        redisContext *c = fx_redis_connect(t.r);
        redisReply *r = c ? redisCommand(c, "HGET crawler:{default}:seen:meta layers") : NULL;
        cr_expect(r && r->type == REDIS_REPLY_STRING && strtol(r->str, NULL, 10) >= 3, "layers: %s",
                  r && r->type == REDIS_REPLY_STRING ? r->str : "?");
        if (r)
            freeReplyObject(r);
        if (c)
            redisFree(c);
    }
    assert_crawl_over(&t);
    faults_stop(&t);
}

Test(faults, redis_sigterm_then_sigkill_mid_crawl_workers_reconnect_and_miss_nothing,
     .timeout = 600)
{
    restart_mid_crawl(SIGTERM, SIGKILL, 2000, NULL);
}

/* The same while the visited set grows: from 40 URLs, the 600 pages take it
 * through five layers, published around the restarts (a SIGKILL may lose
 * the last second of them: the workers read the layers again when Redis is
 * back). */
Test(faults, redis_restarted_while_the_visited_set_grows_misses_nothing, .timeout = 600)
{
    restart_mid_crawl(SIGKILL, SIGKILL, 1500, (char *[]){"--bloom-capacity", "40", NULL});
}

/* A robots.txt with a Crawl-delay, answered while Redis is down (SIGKILLed
 * 1.5 s after the slow robots.txt was asked for, so that the crawl's own
 * keys are in its append-only file; started again from it 2.5 s later): the
 * worker applies the delay at once, and its store of the rules and the
 * delay, which the lost link failed, is sent when the link is back, ahead
 * of the thread's later calls, so that the claims space the host by the
 * file's delay and not by --delay 0.  Before, that store was dropped, and
 * the pages after the first went back to back (bench/longhaul.md).  One
 * thread: one link, whose order is the point.  Every request of the crawl
 * comes about the Crawl-delay after the one before (arrival times). */
Test(faults, a_crawl_delay_read_while_redis_is_down_still_spaces_the_host_after, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 1, 0);
    fx_http_set(t.h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nCrawl-delay: 1\n",
                              .delay_ms = 3000});
    char *argv[] = {CRAWLER_BIN, "crawl",       "--redis", (char *)fx_redis_url(t.r),
                    "--seeds",   t.seeds,       "--out",   t.out,
                    "--quiet",   "--delay",     "0",       "--threads",
                    "1",         "--max-delay", "5000",    "--max-pages",
                    "6",         NULL};
    pid_t pid = fx_spawn(argv, NULL, t.log);
    cr_assert(pid > 0);
    uint64_t deadline = fx_now_ms() + 60000; /* a bound, not a verdict */
    while (fx_http_hits(t.h, "/robots.txt") == 0 && fx_now_ms() < deadline)
        usleep(2000);
    cr_assert_eq(fx_http_hits(t.h, "/robots.txt"), 1, "robots.txt never requested");
    usleep(1500000); /* the crawl's keys past the append-only file's one-second window */
    cr_assert_eq(fx_redis_restart(t.r, SIGKILL, 2500), 0, "%s", fx_error());
    int rc = fx_wait(pid, 120000);
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %.3000s", rc, err ? err : "");
    free(err);
    fx_http_req_t *log;
    size_t n = fx_http_log(t.h, &log);
    cr_expect_geq(n, 4, "%zu requests", n);
    /* the bound is 900 ms, not the delay to the millisecond: what is checked
     * is that the file's delay, not --delay 0, spaces the host after the
     * outage (before the fix: 0.4-0.8 ms); the exact spacing is the broad
     * suite's.  (One CI run under ASan saw 999.8 ms here, once: noted in
     * bench/longhaul.md, not explained yet.) */
    for (size_t k = 1; k < n; k++)
        cr_expect_geq(log[k].arrived_us - log[k - 1].arrived_us, 900000u,
                      "%s came %.1f ms after %s (Crawl-delay: 1)", log[k].path,
                      (double)(log[k].arrived_us - log[k - 1].arrived_us) / 1000.0,
                      log[k - 1].path);
    free(log);
    faults_stop(&t);
}

Test(faults, a_worker_sigkilled_at_ten_random_moments_leaves_no_page_without_a_record,
     .timeout = 600)
{
    faults_t t;
    faults_start(&t, 0, 5);
    char out[512], *argv[64];
    snprintf(out, sizeof out, "%s/out.jsonl", t.dir);
    char *extra[] = {"--lease", "500", NULL}; /* a killed worker's URLs come back soon */
    crawl_argv(&t, out, extra, argv);
    uint64_t x = 0x2545F4914F6CDD1Dull; /* fixed seed: the same moments every run */
    for (int k = 0; k < 10; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pid_t pid = fx_spawn(argv, NULL, t.log);
        cr_assert(pid > 0);
        wait_requests(&t, fx_http_total(t.h) + 5 + x % 40, 120000);
        kill(pid, SIGKILL);
        cr_assert_eq(fx_wait(pid, 10000), 128 + SIGKILL, "worker %d was not killed", k);
    }
    int rc = fx_run(argv, NULL, t.log, 180000); /* the last one finishes the crawl */
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 0, "the last crawler exited %d: %.3000s", rc, err ? err : "");
    free(err);
    unsigned char seen[PAGES] = {0};
    mark_recorded(&t, out, seen);
    int first;
    size_t missing = count_missing(seen, &first);
    cr_expect_eq(missing, 0, "%zu of %d pages marked done without a record (first /p/%d)", missing,
                 PAGES, first);
    assert_crawl_over(&t);
    faults_stop(&t);
}

/* Pages marked done in Redis. */
static uint64_t fetched(faults_t *t)
{
    redisContext *c = fx_redis_connect(t->r);
    cr_assert_not_null(c);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    redisFree(c);
    cr_expect_eq(st.in_flight, 0, "%llu URLs left leased", (unsigned long long)st.in_flight);
    return st.fetched;
}

/* After a failed output, a crawl to a file finishes what was not recorded:
 * every page then has a record (in out or in what the failed run wrote). */
static void rerun_records_everything(faults_t *t, const char *earlier)
{
    char out[512], *argv[64];
    snprintf(out, sizeof out, "%s/rerun.jsonl", t->dir);
    crawl_argv(t, out, NULL, argv);
    int rc = fx_run(argv, NULL, t->log, 180000);
    cr_expect_eq(rc, 0, "the rerun exited %d", rc);
    unsigned char seen[PAGES] = {0};
    mark_recorded(t, out, seen);
    if (earlier)
        mark_recorded(t, earlier, seen);
    int first;
    size_t missing = count_missing(seen, &first);
    cr_expect_eq(missing, 0, "%zu of %d pages were marked done without a record (first /p/%d)",
                 missing, PAGES, first);
    assert_crawl_over(t);
}

Test(faults, out_to_dev_full_stops_the_crawl_and_marks_nothing_done, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 0);
    char *argv[64];
    crawl_argv(&t, "/dev/full", NULL, argv);
    int rc = fx_run(argv, NULL, t.log, 120000);
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "/dev/full") && strstr(err, "No space left on device"),
              "the file and the OS error are not named: %.2000s", err ? err : "");
    free(err);
    cr_expect_eq(fetched(&t), 0, "pages were marked done though no record could be written");
    rerun_records_everything(&t, NULL);
    faults_stop(&t);
}

Test(faults, out_to_a_pipe_whose_reader_left_stops_the_crawl, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 5);
    char *argv[64];
    crawl_argv(&t, "-", NULL, argv);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t parent = getpid(), pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        int e = open(t.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0)
            dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    /* like `head -n 3`: read three lines, then go away */
    FILE *in = fdopen(fds[0], "r");
    cr_assert_not_null(in);
    char line[4096];
    for (int i = 0; i < 3; i++)
        cr_assert_not_null(fgets(line, sizeof line, in), "line %d never came", i);
    fclose(in);
    int rc = fx_wait(pid, 120000);
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "Broken pipe"), "the OS error is not named: %.2000s",
              err ? err : "");
    free(err);
    uint64_t done = fetched(&t);
    cr_expect_lt(done, PAGES, "the crawl ran to its end (%llu pages done) into a closed pipe",
                 (unsigned long long)done);
    faults_stop(&t);
}

/* Runs argv with every file it writes limited to limit bytes (RLIMIT_FSIZE;
 * SIGXFSZ ignored, so a write past it fails with EFBIG): a disk that fills
 * in the middle of the crawl.  The exit status, as fx_wait gives it. */
static int run_with_file_limit(char *const argv[], const char *log, rlim_t limit)
{
    pid_t parent = getpid(), pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0)
            dup2(e, 2);
        signal(SIGXFSZ, SIG_IGN); /* kept across exec */
        struct rlimit rl = {limit, limit};
        setrlimit(RLIMIT_FSIZE, &rl);
        execvp(argv[0], argv);
        _exit(127);
    }
    return fx_wait(pid, 120000);
}

/* Every page marked done in Redis has a record in path. */
static void assert_done_pages_recorded(faults_t *t, const char *path)
{
    unsigned char seen[PAGES] = {0};
    mark_recorded(t, path, seen);
    size_t recorded = 0;
    for (int i = 0; i < PAGES; i++)
        recorded += seen[i];
    uint64_t done = fetched(t);
    cr_expect_gt(done, 0, "nothing was done before the file filled: the test shows nothing");
    cr_expect_lt(done, PAGES, "the crawl ran to its end (%llu done) though its file was full",
                 (unsigned long long)done);
    cr_expect_leq(done, recorded, "%llu pages done in Redis, %zu recorded in %s",
                  (unsigned long long)done, recorded, path);
}

Test(faults, out_file_that_fills_mid_crawl_stops_it_with_every_done_page_recorded, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 2);
    char *argv[64];
    crawl_argv(&t, t.out, NULL, argv);
    int rc = run_with_file_limit(argv, t.log, 65536); /* about 280 records of 600 */
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, t.out) && strstr(err, "File too large"),
              "the file and the OS error are not named: %.2000s", err ? err : "");
    free(err);
    assert_done_pages_recorded(&t, t.out);
    rerun_records_everything(&t, t.out);
    faults_stop(&t);
}

Test(faults, warc_file_that_fills_mid_crawl_stops_it_and_marks_no_unrecorded_page_done,
     .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 2);
    char warc[512], *argv[64];
    snprintf(warc, sizeof warc, "%s/out.warc.gz", t.dir);
    char *extra[] = {"--warc", warc, NULL};
    crawl_argv(&t, t.out, extra, argv);
    int rc = run_with_file_limit(argv, t.log, 65536); /* the WARC fills long before the JSONL */
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--warc") && strstr(err, "File too large"),
              "the file and the OS error are not named: %.2000s", err ? err : "");
    free(err);
    assert_done_pages_recorded(&t, t.out);
    faults_stop(&t);
}

/* One crawler on t's crawl writing t->out; its pid. */
static pid_t spawn_crawler(faults_t *t)
{
    static char *argv[64];
    crawl_argv(t, t->out, NULL, argv);
    pid_t pid = fx_spawn(argv, NULL, t->log);
    cr_assert(pid > 0);
    return pid;
}

static void redis_cmd(faults_t *t, const char *cmd)
{
    redisContext *c = fx_redis_connect(t->r);
    cr_assert_not_null(c, "%s", fx_error());
    redisReply *r = redisCommand(c, cmd);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", cmd, r ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
}

/* The crawl's state vanishing under the workers is an error, not the end
 * of the crawl: the crawler stops non-zero and says why. */
static void assert_stopped_for_lost_data(faults_t *t, pid_t pid)
{
    int rc = fx_wait(pid, 120000);
    char *err = fx_read_file(t->log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d after its crawl's data vanished: %.3000s", rc,
                 err ? err : "");
    cr_expect(err && strstr(err, "the crawl's data is gone from Redis"),
              "the crawler does not say the crawl's data is gone: %.3000s", err ? err : "");
    free(err);
}

Test(faults, redis_flushed_mid_crawl_is_an_error_not_the_end_of_the_crawl, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 15);
    pid_t pid = spawn_crawler(&t);
    wait_requests(&t, PAGES / 3, 120000);
    redis_cmd(&t, "FLUSHALL");
    assert_stopped_for_lost_data(&t, pid);
    faults_stop(&t);
}

Test(faults, redis_restarted_without_its_data_is_an_error_not_the_end_of_the_crawl, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 15); /* no persistence: the restarted server is empty */
    pid_t pid = spawn_crawler(&t);
    wait_requests(&t, PAGES / 3, 120000);
    cr_assert_eq(fx_redis_restart(t.r, SIGKILL, 500), 0, "%s", fx_error());
    assert_stopped_for_lost_data(&t, pid);
    faults_stop(&t);
}

/* `crawler reset` while a crawler runs: the reset deletes the crawl's
 * filter first, so every call the workers still send is refused without a
 * write (a finish in flight would re-create the stats hash, and the next
 * crawl of the name would start with wrong counters); the crawler stops
 * saying the crawl's data is gone, and no key of the crawl is left. */
Test(faults, a_reset_while_workers_run_leaves_no_key_of_the_crawl, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 15);
    pid_t pid = spawn_crawler(&t);
    wait_requests(&t, PAGES / 3, 120000);
    char *argv[] = {CRAWLER_BIN, "reset",   "--redis", (char *)fx_redis_url(t.r),
                    "--crawl",   "default", "--yes",   NULL};
    char rlog[600];
    snprintf(rlog, sizeof rlog, "%s/reset.log", t.dir);
    cr_assert_eq(fx_run(argv, NULL, rlog, 60000), 0, "crawler reset failed");
    assert_stopped_for_lost_data(&t, pid);
    redisContext *c = fx_redis_connect(t.r);
    cr_assert_not_null(c);
    redisReply *k = redisCommand(c, "KEYS crawler:{default}:*");
    cr_assert(k && k->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(k->elements, 0, "%zu keys of the crawl left, the first %s", k->elements,
                 k->elements ? k->element[0]->str : "");
    freeReplyObject(k);
    redisFree(c);
    faults_stop(&t);
}

/* Redis refusing calls at its maxmemory (OOM) for a moment is waited out
 * like an outage: nothing is dropped, the crawl finishes. */
Test(faults, redis_at_its_maxmemory_for_a_moment_is_waited_out, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 15);
    pid_t pid = spawn_crawler(&t);
    wait_requests(&t, PAGES / 3, 120000);
    redisContext *c = fx_redis_connect(t.r);
    cr_assert_not_null(c);
    long long used = fx_redis_info(c, "memory", "used_memory");
    cr_assert_geq(used, 0, "%s", fx_error());
    redisReply *r = redisCommand(c, "CONFIG SET maxmemory %lld", used + 1000);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    size_t before = fx_http_total(t.h);
    for (int i = 0; i < 400 && fx_http_total(t.h) < before + 20; i++)
        usleep(10000); /* some transfers finish while Redis refuses */
    usleep(1500000);
    r = redisCommand(c, "CONFIG SET maxmemory " FX_REDIS_MAXMEMORY);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    int rc = fx_wait(pid, 180000);
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d after Redis was at its maxmemory: %.3000s", rc,
                 err ? err : "");
    cr_expect(err && strstr(err, "maxmemory"), "the OOM was not noticed: %.3000s", err ? err : "");
    free(err);
    unsigned char seen[PAGES] = {0};
    mark_recorded(&t, t.out, seen);
    int first;
    size_t missing = count_missing(seen, &first);
    cr_expect_eq(missing, 0, "%zu of %d pages have no record (first /p/%d)", missing, PAGES, first);
    assert_crawl_over(&t);
    faults_stop(&t);
}

/* ---- the embedded redis-server dying under its crawler ------------------------ */

/* The redis-server child of process pid (the embedded server), or 0. */
static pid_t redis_child(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    char *kids = fx_read_file(path, NULL);
    pid_t found = 0;
    for (char *p = kids, *end; p && *p && !found; p = end) {
        long k = strtol(p, &end, 10);
        if (end == p)
            break;
        char comm[64];
        snprintf(comm, sizeof comm, "/proc/%ld/comm", k);
        char *name = fx_read_file(comm, NULL);
        if (name && !strncmp(name, "redis-server", 12))
            found = (pid_t)k;
        free(name);
    }
    free(kids);
    return found;
}

/* One crawler of t's site in its own embedded Redis in DIR/data, writing
 * t->out (argv in *argv; the data directory in data). */
static pid_t spawn_embedded(faults_t *t, char data[512])
{
    snprintf(data, 512, "%s/data", t->dir);
    char *argv[] = {CRAWLER_BIN, "crawl",     "--data-dir", data,   "--seeds", t->seeds,
                    "--delay",   "0",         "--out",      t->out, "--quiet", "--per-host",
                    "4",         "--threads", "2",          NULL};
    pid_t pid = fx_spawn(argv, NULL, t->log);
    cr_assert(pid > 0);
    return pid;
}

/* The embedded redis-server SIGKILLed a third of the way in: the crawler
 * (its parent) starts it again at once from its append-only file, says so
 * (stderr, a redis-restarted event) and finishes the crawl with every page
 * recorded, long before --redis-retry-max (5 minutes) would have run out. */
Test(faults, the_embedded_redis_killed_mid_crawl_is_started_again_and_nothing_is_lost,
     .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 20);
    char data[512];
    pid_t pid = spawn_embedded(&t, data);
    wait_requests(&t, PAGES / 3, 120000);
    pid_t rs = redis_child(pid);
    cr_assert(rs > 0, "no redis-server child of the crawler");
    cr_assert_eq(kill(rs, SIGKILL), 0);
    int rc = fx_wait(pid, 240000); /* (a bound on the test, less than --redis-retry-max) */
    char *err = fx_read_file(t.log, NULL), *out = fx_read_file(t.out, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %.3000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "was killed by signal 9") && strstr(err, "started it again"),
              "the restart is not said: %.3000s", err ? err : "");
    cr_expect(out && strstr(out, "\"event\":\"redis-restarted\""),
              "no redis-restarted event in the output");
    free(err);
    free(out);
    unsigned char seen[PAGES] = {0};
    mark_recorded(&t, t.out, seen);
    int first;
    size_t missing = count_missing(seen, &first);
    cr_expect_eq(missing, 0, "%zu pages without a record (first /p/%d)", missing, first);
    faults_stop(&t);
}

/* The embedded redis-server killed, and its data directory gone: it cannot
 * start again, so the crawler stops at once (exit 1), naming the server,
 * how it ended and why the restart failed -- not after 5 minutes of
 * reconnects with no word of its own server. */
Test(faults, the_embedded_redis_that_cannot_start_again_stops_the_crawl_saying_why, .timeout = 300)
{
    faults_t t;
    faults_start(&t, 0, 20);
    char data[512];
    pid_t pid = spawn_embedded(&t, data);
    wait_requests(&t, PAGES / 3, 120000);
    pid_t rs = redis_child(pid);
    cr_assert(rs > 0, "no redis-server child of the crawler");
    char gone[600];
    snprintf(gone, sizeof gone, "%s.gone", data);
    cr_assert_eq(rename(data, gone), 0);
    cr_assert_eq(kill(rs, SIGKILL), 0);
    int rc = fx_wait(pid, 120000);
    char *err = fx_read_file(t.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.3000s", rc, err ? err : "");
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "(pid %d)", (int)rs);
    cr_expect(err && strstr(err, "embedded redis-server") && strstr(err, pidtext) &&
                  strstr(err, "was killed by signal 9") &&
                  strstr(err, "starting it again failed") &&
                  strstr(err, "No such file or directory"),
              "the failure is not named: %.3000s", err ? err : "");
    free(err);
    faults_stop(&t);
}
