/*
 * test_control_crawl.c -- control of a running crawl (`crawler pause`,
 * `resume`, `drain`, `limits`) on several real crawler processes sharing
 * one redis-server and the HTTP fixture's tree site (tree_site.h), each
 * page answering after a delay so that the crawl lasts.  What is checked is
 * what the server saw (its request log and counts, never the crawler's own
 * report) and what Redis holds; waits are bounded, and no duration decides
 * a verdict except as a generous bound.  And pause and limits on a real
 * local Redis Cluster (cluster_env.h), from a node that does not hold the
 * crawl.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rconn.h"
#include "cluster_env.h"
#include "crawl_env.h"
#include "fixtures.h"
#include "frontier.h"
#include "tree_site.h"

#define WORKERS 3

static tree_site_t tree;

typedef struct ctl {
    crawl_env_t e;
    pid_t pid[WORKERS + 1];
    char out[WORKERS + 1][600], log[WORKERS + 1][600];
    redisContext *c;
} ctl_t;

/* The tree site of pages pages answering after delay_ms, seeded at /p/0
 * with `crawler seed` (no worker runs yet). */
static void ctl_start(ctl_t *t, int pages, unsigned delay_ms)
{
    memset(t, 0, sizeof *t);
    crawl_env_start(&t->e, NULL, "/p/0");
    tree.pages = pages;
    tree.delay_ms = delay_ms;
    fx_http_set_handler(t->e.h, tree_site_route, &tree);
    char *argv[] = {CRAWLER_BIN, "seed", t->e.seeds, "--redis", (char *)fx_redis_url(t->e.r), NULL};
    int rc = fx_run(argv, NULL, t->e.log, 30000);
    cr_assert_eq(rc, 0, "crawler seed exited %d", rc);
    t->c = fx_redis_connect(t->e.r);
    cr_assert_not_null(t->c, "%s", fx_error());
}

static void ctl_stop(ctl_t *t)
{
    for (int i = 0; i <= WORKERS; i++)
        if (t->pid[i] > 0)
            fx_wait(t->pid[i], 1); /* (killed if still running) */
    redisFree(t->c);
    crawl_env_stop(&t->e);
}

/* Starts worker i: a crawler process with one thread of conc transfers,
 * per_host and delay as its own flags, plus flag (one more option without a
 * value, or NULL). */
static void ctl_spawn(ctl_t *t, int i, const char *conc, const char *per_host, const char *delay,
                      const char *flag)
{
    snprintf(t->out[i], sizeof t->out[i], "%s/out%d.jsonl", t->e.dir, i);
    snprintf(t->log[i], sizeof t->log[i], "%s/log%d", t->e.dir, i);
    char *argv[32] = {CRAWLER_BIN,
                      "crawl",
                      "--redis",
                      (char *)fx_redis_url(t->e.r),
                      "--quiet",
                      "--threads",
                      "1",
                      "--concurrency",
                      (char *)conc,
                      "--per-host",
                      (char *)per_host,
                      "--delay",
                      (char *)delay,
                      "--lease",
                      "3000",
                      "--out",
                      t->out[i]};
    argv[17] = (char *)flag; /* (NULL: the end) */
    argv[18] = NULL;
    t->pid[i] = fx_spawn(argv, NULL, t->log[i]);
    cr_assert(t->pid[i] > 0, "%s", fx_error());
}

/* Runs `crawler CMD --redis ... [args]`; returns its exit status. */
static int ctl_cmd(ctl_t *t, const char *cmd, char *const args[])
{
    char *argv[24] = {CRAWLER_BIN, (char *)cmd, "--redis", (char *)fx_redis_url(t->e.r)};
    int n = 4;
    for (int k = 0; args && args[k] && n < 22; k++)
        argv[n++] = args[k];
    argv[n] = NULL;
    return fx_run(argv, NULL, NULL, 30000);
}

/* Waits for worker i's exit (bounded); asserts it exited 0. */
static void ctl_wait_ok(ctl_t *t, int i, unsigned timeout_ms)
{
    int rc = fx_wait(t->pid[i], timeout_ms);
    t->pid[i] = 0;
    char *err = fx_read_file(t->log[i], NULL);
    cr_expect_eq(rc, 0, "worker %d exited %d: %.2000s", i, rc, err ? err : "");
    free(err);
}

static frontier_stats_t ctl_stats(ctl_t *t)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(t->c, "default", &s), 0);
    return s;
}

/* Every page /p/0 .. /p/pages-1 requested exactly once (robots.txt aside). */
static void expect_each_page_once(ctl_t *t, int pages)
{
    int missing = 0, dup = 0, first_missing = -1, first_dup = -1;
    for (int i = 0; i < pages; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        unsigned h = fx_http_hits(t->e.h, path);
        if (h == 0 && missing++ == 0)
            first_missing = i;
        if (h > 1 && dup++ == 0)
            first_dup = i;
    }
    cr_expect_eq(missing, 0, "%d pages never requested, first /p/%d", missing, first_missing);
    cr_expect_eq(dup, 0, "%d pages requested more than once, first /p/%d", dup, first_dup);
}

/* The page requests of the server's log (robots.txt left out), in arrival
 * order; *n their number (caller frees). */
static fx_http_req_t *page_log(ctl_t *t, size_t *n)
{
    fx_http_req_t *all = NULL;
    size_t m = fx_http_log(t->e.h, &all), k = 0;
    for (size_t i = 0; i < m; i++)
        if (!strncmp(all[i].path, "/p/", 3))
            all[k++] = all[i];
    *n = k;
    return all;
}

/* The most page requests in flight at once among those that arrived in
 * [from_us, to_us) (each one's overlaps with the others of the window). */
static unsigned max_overlap(const fx_http_req_t *r, size_t n, uint64_t from_us, uint64_t to_us)
{
    unsigned best = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].arrived_us < from_us || r[i].arrived_us >= to_us)
            continue;
        unsigned at = 0; /* in flight when request i arrived */
        for (size_t j = 0; j < n; j++)
            if (r[j].arrived_us >= from_us && r[j].arrived_us <= r[i].arrived_us &&
                (r[j].answered_us == 0 || r[j].answered_us > r[i].arrived_us))
                at++;
        if (at > best)
            best = at;
    }
    return best;
}

/* The workers' lease expiry times in Redis (the workers zset), by id. */
typedef struct leases {
    size_t n;
    char id[8][128];
    double until[8];
} leases_t;

static leases_t read_leases(ctl_t *t)
{
    leases_t l = {0};
    redisReply *r = redisCommand(t->c, "ZRANGE crawler:{default}:workers 0 -1 WITHSCORES");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i + 1 < r->elements && l.n < 8; i += 2, l.n++) {
        snprintf(l.id[l.n], sizeof l.id[l.n], "%s", r->element[i]->str);
        l.until[l.n] = strtod(r->element[i + 1]->str, NULL);
    }
    freeReplyObject(r);
    return l;
}

/* Waits (bounded) until the server has seen no new request for quiet_ms
 * and has none in flight; returns the requests so far. */
static size_t wait_quiet(ctl_t *t, unsigned quiet_ms, unsigned timeout_ms)
{
    uint64_t deadline = fx_now_ms() + timeout_ms, since = fx_now_ms();
    size_t seen = fx_http_total(t->e.h);
    while (fx_now_ms() < deadline) {
        usleep(20000);
        size_t now = fx_http_total(t->e.h);
        if (now != seen || fx_http_pending(t->e.h, -1)) {
            seen = now;
            since = fx_now_ms();
        } else if (fx_now_ms() - since >= quiet_ms) {
            return seen;
        }
    }
    cr_assert_fail("the server never went quiet: %zu requests", seen);
    return seen;
}

/* Three workers; `crawler pause` once they are under way: the server sees
 * no new request while they stay alive and their leases keep being
 * renewed (their scores in the workers zset move on) and the crawl is not
 * taken for over; `crawler resume`: they finish it, every page once. */
Test(control_crawl, pause_stops_every_worker_keeps_leases_live_and_resume_finishes_each_page_once,
     .timeout = 120)
{
    ctl_t t;
    ctl_start(&t, 240, 40);
    for (int i = 0; i < WORKERS; i++)
        ctl_spawn(&t, i, "2", "4", "0", NULL);
    tree_wait_requests(t.e.h, 20, 30000);
    cr_assert_eq(ctl_cmd(&t, "pause", NULL), 0, "crawler pause failed");
    size_t paused_at = wait_quiet(&t, 600, 20000);
    leases_t before = read_leases(&t);
    cr_assert_geq(before.n, WORKERS, "%zu workers registered", before.n);
    usleep(1500 * 1000); /* several claims and a heartbeat of each worker */
    leases_t after = read_leases(&t);
    cr_expect_eq(fx_http_total(t.e.h), paused_at, "%zu requests while paused (%zu before)",
                 fx_http_total(t.e.h) - paused_at, paused_at);
    for (int i = 0; i < WORKERS; i++) {
        int st;
        cr_expect_eq(waitpid(t.pid[i], &st, WNOHANG), 0, "worker %d exited while paused", i);
    }
    for (size_t i = 0; i < before.n; i++)
        for (size_t j = 0; j < after.n; j++)
            if (!strcmp(before.id[i], after.id[j]))
                cr_expect_gt(after.until[j], before.until[i], "worker %s's lease not renewed",
                             before.id[i]);
    frontier_stats_t s = ctl_stats(&t);
    cr_expect(s.control.paused, "stats does not say paused");
    cr_expect_gt(s.queued, 0, "nothing left queued: the pause came too late to tell");
    cr_expect_lt(paused_at, 240, "the whole site was fetched before the pause");
    cr_assert_eq(ctl_cmd(&t, "resume", NULL), 0, "crawler resume failed");
    for (int i = 0; i < WORKERS; i++)
        ctl_wait_ok(&t, i, 60000);
    expect_each_page_once(&t, 240);
    /* each worker said so on stderr (a journal gets no progress line), once */
    for (int i = 0; i < WORKERS; i++) {
        char *log = fx_read_file(t.log[i], NULL);
        const char *p = log ? strstr(log, "is paused (crawler pause)") : NULL;
        cr_expect(p != NULL, "worker %d's log does not say the crawl is paused", i);
        cr_expect(p && strstr(p, "resumed"), "worker %d's log does not say it resumed", i);
        free(log);
    }
    ctl_stop(&t);
}

/* `crawler drain` mid-crawl: every running worker (one of them --wait)
 * exits 0 within a bounded wait, nothing stays leased; a worker started
 * after the drain is not affected and crawls the rest: every page once
 * overall. */
Test(control_crawl, drain_makes_running_workers_exit_0_and_a_later_worker_finishes_the_rest,
     .timeout = 120)
{
    ctl_t t;
    ctl_start(&t, 240, 40);
    for (int i = 0; i < WORKERS; i++)
        ctl_spawn(&t, i, "2", "4", "0", i == 0 ? "--wait" : NULL);
    tree_wait_requests(t.e.h, 20, 30000);
    cr_assert_eq(ctl_cmd(&t, "drain", NULL), 0, "crawler drain failed");
    for (int i = 0; i < WORKERS; i++)
        ctl_wait_ok(&t, i, 20000);
    size_t drained_at = fx_http_total(t.e.h);
    frontier_stats_t s = ctl_stats(&t);
    cr_expect_eq(s.in_flight, 0, "%llu URLs still leased after the drain",
                 (unsigned long long)s.in_flight);
    cr_expect_gt(s.queued, 0, "nothing left queued: the drain came too late to tell");
    cr_expect_gt(s.control.drain_ms, 0, "stats shows no drain");
    ctl_spawn(&t, WORKERS, "4", "4", "0", NULL);
    ctl_wait_ok(&t, WORKERS, 60000);
    cr_expect_gt(fx_http_total(t.e.h), drained_at,
                 "the worker started after the drain fetched "
                 "nothing");
    expect_each_page_once(&t, 240);
    ctl_stop(&t);
}

/* `crawler limits --max-pages M` while two workers crawl a site larger than
 * M: admission stops at M across both (or at once, if M was already
 * passed when the call ran): the crawl ends with exactly that many URLs
 * admitted, each fetched once, and no more. */
Test(control_crawl, max_pages_lowered_mid_crawl_stops_admission_at_the_new_value, .timeout = 120)
{
    ctl_t t;
    ctl_start(&t, 2000, 10);
    for (int i = 0; i < 2; i++)
        ctl_spawn(&t, i, "4", "4", "0", NULL);
    tree_wait_requests(t.e.h, 20, 30000);
    uint64_t m = ctl_stats(&t).enqueued + 30;
    char ms[32];
    snprintf(ms, sizeof ms, "%llu", (unsigned long long)m);
    char *args[] = {"--max-pages", ms, NULL};
    cr_assert_eq(ctl_cmd(&t, "limits", args), 0, "crawler limits failed");
    uint64_t e_after = ctl_stats(&t).enqueued, want = e_after > m ? e_after : m;
    for (int i = 0; i < 2; i++)
        ctl_wait_ok(&t, i, 60000);
    frontier_stats_t s = ctl_stats(&t);
    cr_expect_eq(s.enqueued, want, "%llu URLs admitted, limit %llu (%llu when it was set)",
                 (unsigned long long)s.enqueued, (unsigned long long)m,
                 (unsigned long long)e_after);
    cr_expect_lt(want, 2000, "the site was all admitted before the limit");
    unsigned distinct = 0, dup = 0;
    for (int i = 0; i < 2000; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        unsigned h = fx_http_hits(t.e.h, path);
        distinct += h > 0;
        dup += h > 1;
    }
    cr_expect_eq(distinct, want, "%u pages requested, %llu admitted", distinct,
                 (unsigned long long)want);
    cr_expect_eq(dup, 0, "%u pages requested more than once", dup);
    cr_expect_gt(s.skipped_links, 0, "no link was turned away by the limit");
    ctl_stop(&t);
}

/* Workers whose own flag says --per-host 4: `limits --per-host 1` set
 * before they start holds them to one request at a time on the host; then
 * `limits --per-host 4` mid-crawl: requests overlap again. */
Test(control_crawl, per_host_override_beats_the_workers_flag_and_a_raise_mid_crawl_is_obeyed,
     .timeout = 120)
{
    ctl_t t;
    ctl_start(&t, 160, 30);
    char *one[] = {"--per-host", "1", NULL}, *four[] = {"--per-host", "4", NULL};
    cr_assert_eq(ctl_cmd(&t, "limits", one), 0, "crawler limits failed");
    for (int i = 0; i < 2; i++)
        ctl_spawn(&t, i, "4", "4", "0", NULL);
    tree_wait_requests(t.e.h, 25, 30000);
    uint64_t change_us = fx_now_ms() * 1000;
    cr_assert_eq(ctl_cmd(&t, "limits", four), 0, "crawler limits failed");
    for (int i = 0; i < 2; i++)
        ctl_wait_ok(&t, i, 60000);
    size_t n;
    fx_http_req_t *log = page_log(&t, &n);
    unsigned before = max_overlap(log, n, 0, change_us);
    unsigned after = max_overlap(log, n, change_us, UINT64_MAX);
    free(log);
    cr_expect_eq(before, 1, "%u page requests at once under --per-host 1 (crawl-wide)", before);
    cr_expect_gt(after, 1, "still %u request at a time after --per-host 4", after);
    cr_expect_leq(after, 4, "%u requests at once over --per-host 4", after);
    expect_each_page_once(&t, 160);
    ctl_stop(&t);
}

#define DELAY_MS 150

/* Workers with --delay 0 and --per-host 2: `limits --delay 150` mid-crawl
 * spaces every request after it from the end of the one before by at least
 * 150 ms (the server's log; the first two after the call may be ones
 * leased before it, at --per-host 2); `limits --delay default` lets them finish. */
Test(control_crawl, delay_set_mid_crawl_spaces_the_requests_after_it, .timeout = 120)
{
    ctl_t t;
    ctl_start(&t, 120, 5);
    for (int i = 0; i < 2; i++)
        ctl_spawn(&t, i, "2", "2", "0", NULL);
    tree_wait_requests(t.e.h, 10, 30000);
    char *set[] = {"--delay", "150", NULL}, *clear[] = {"--delay", "default", NULL};
    cr_assert_eq(ctl_cmd(&t, "limits", set), 0, "crawler limits failed");
    uint64_t from_us = fx_now_ms() * 1000; /* (claims made while the command ran: delay 0) */
    size_t at = fx_http_total(t.e.h);
    tree_wait_requests(t.e.h, at + 8, 30000);
    uint64_t to_us = fx_now_ms() * 1000;
    cr_assert_eq(ctl_cmd(&t, "limits", clear), 0, "crawler limits failed");
    for (int i = 0; i < 2; i++)
        ctl_wait_ok(&t, i, 60000);
    size_t n, checked = 0, fast = 0, skip = 2; /* (at most per-host 2 leased before it) */
    fx_http_req_t *log = page_log(&t, &n);
    long long worst = -1;
    for (size_t i = 0; i + 1 < n; i++) {
        if (log[i].arrived_us < from_us || log[i + 1].arrived_us >= to_us)
            continue;
        if (skip) {
            skip--;
            continue;
        }
        long long gap_ms =
            ((long long)log[i + 1].arrived_us - (long long)log[i].answered_us) / 1000;
        checked++;
        if (gap_ms < DELAY_MS - 5) {
            fast++;
            if (worst < 0 || gap_ms < worst)
                worst = gap_ms;
        }
    }
    free(log);
    cr_expect_geq(checked, 4, "only %zu gaps after the change", checked);
    cr_expect_eq(fast, 0,
                 "%zu of %zu requests came sooner than %d ms after the previous one "
                 "ended (shortest gap %lld ms)",
                 fast, checked, DELAY_MS, worst);
    expect_each_page_once(&t, 120);
    ctl_stop(&t);
}

/* ---- on a Redis Cluster ----------------------------------------------------- */

#define CL_CRAWL "ctlc"

/* `crawler limits` and `pause` pointed at a master that does not own the
 * crawl's slot: the control hash lands in the crawl's slot (its owner holds
 * it), a worker started while paused fetches nothing and stays up, and
 * after `resume` it crawls exactly the crawl-wide --max-pages. */
Test(control_crawl, on_a_redis_cluster_pause_and_limits_reach_the_crawls_slot, .timeout = 180)
{
    fx_cluster_t *cl = fx_cluster_start(3, 0, 1000);
    cr_assert_not_null(cl, "cannot start a Redis Cluster: %s", fx_error());
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/p/0");
    tree.pages = 100;
    tree.delay_ms = 5;
    fx_http_set_handler(e.h, tree_site_route, &tree);
    int slot = rconn_key_slot("{" CL_CRAWL "}", strlen("{" CL_CRAWL "}"));
    int owner = fx_cluster_owner(cl, 0, slot);
    cr_assert_geq(owner, 0, "%s", fx_error());
    const char *url = fx_cluster_url(cl, (owner + 1) % 3);
    /* one shard: a crawl-wide --max-pages holds on one only (docs/sharding.md) */
    char *seed[] = {CRAWLER_BIN, "seed",   e.seeds,    "--redis", (char *)url,
                    "--crawl",   CL_CRAWL, "--shards", "1",       NULL};
    cr_assert_eq(fx_run(seed, NULL, e.log, 30000), 0, "crawler seed failed on the cluster");
    char *limits[] = {CRAWLER_BIN, "limits",      "--redis", (char *)url, "--crawl",
                      CL_CRAWL,    "--max-pages", "7",       NULL};
    cr_assert_eq(fx_run(limits, NULL, e.log, 30000), 0, "crawler limits failed on the cluster");
    char *pause[] = {CRAWLER_BIN, "pause", "--redis", (char *)url, "--crawl", CL_CRAWL, NULL};
    cr_assert_eq(fx_run(pause, NULL, e.log, 30000), 0, "crawler pause failed on the cluster");
    redisContext *oc = fx_cluster_connect(cl, owner);
    cr_assert_not_null(oc);
    redisReply *r = redisCommand(oc, "HGET crawler:{" CL_CRAWL "}:control paused");
    cr_expect(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "1"),
              "the owner of the crawl's slot does not hold paused");
    freeReplyObject(r);
    char out[600], log[600];
    snprintf(out, sizeof out, "%s/out.jsonl", e.dir);
    snprintf(log, sizeof log, "%s/worker.log", e.dir);
    char *crawl[] = {CRAWLER_BIN, "crawl", "--redis", (char *)url, "--crawl",   CL_CRAWL, "--quiet",
                     "--delay",   "0",     "--out",   out,         "--threads", "1",      NULL};
    pid_t pid = fx_spawn(crawl, NULL, log);
    cr_assert(pid > 0);
    usleep(1000 * 1000); /* it opens, claims (refused) a few times */
    int st;
    cr_expect_eq(waitpid(pid, &st, WNOHANG), 0, "the worker exited while the crawl was paused");
    cr_expect_eq(fx_http_total(e.h), 0, "%zu requests while paused", fx_http_total(e.h));
    char *resume[] = {CRAWLER_BIN, "resume", "--redis", (char *)url, "--crawl", CL_CRAWL, NULL};
    cr_assert_eq(fx_run(resume, NULL, e.log, 30000), 0, "crawler resume failed on the cluster");
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "the worker exited %d: %.2000s", rc, err ? err : "");
    free(err);
    unsigned pages = 0;
    for (int i = 0; i < 100; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p/%d", i);
        pages += fx_http_hits(e.h, path);
    }
    cr_expect_eq(pages, 7, "%u page requests under a crawl-wide --max-pages 7", pages);
    redisFree(oc);
    crawl_env_stop(&e);
    fx_cluster_stop(cl);
}
