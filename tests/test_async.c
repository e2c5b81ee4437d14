/* Calls that go out without waiting for Redis (frontier.h:
 * frontier_call_t on a handle's link, rconn.h), and the parts that hand
 * them out (the robots.txt gate's stores and polls, the finisher's
 * retries; the engine takes their answers, crawler/worker/sidecalls.c),
 * against a real redis-server: a call's reply is taken without ever
 * waiting (checked with the server stopped by SIGSTOP: a wait would hang
 * the test), a library lost before the call ran is loaded again and the
 * call sent again, and a call whose reply was lost with the link (it ran)
 * is sent again on the reconnect and changes nothing twice (a store stored,
 * a retry retried once).  Then the engine across a Redis restart. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "finisher.h"
#include "outputs.h"
#include "frontier_env.h"
#include "jsonl.h"
#include "rconn.h"
#include "robotsgate.h"
#include "scope.h"

#define RULES "User-agent: *\nDisallow: /private/\n"

/* A second handle under e's worker id, on a link of its own. */
static frontier_t *side_handle(env_t *e)
{
    frontier_config_t cfg = test_config();
    cfg.worker_id = frontier_worker_id(e->f);
    return open_frontier(e->c, e->b, &cfg);
}

/* c's answer taken if it is there: f's link polled, never waiting. */
static int ready(frontier_t *f, frontier_call_t *c)
{
    rconn_link_poll(fr_link_of(f));
    return frontier_call_ready(f, c);
}

/* Polls the call until its reply is all there: at most 5,000 looks 1 ms
 * apart (a bound on the test, not a verdict). */
static int ready_within(frontier_t *f, frontier_call_t *c)
{
    for (int i = 0; i < 5000; i++) {
        int r = ready(f, c);
        if (r != 0)
            return r;
        usleep(1000);
    }
    return 0;
}

/* The call was sent with the server stopped (SIGSTOP, pid): 20 looks find
 * no reply (one that waited would hang the test), then the server goes on
 * and the reply comes. */
static void no_reply_while_stopped(pid_t pid, frontier_t *f, frontier_call_t *c)
{
    for (int i = 0; i < 20; i++)
        cr_assert_eq(ready(f, c), 0, "look %d saw a reply", i);
    cr_assert_eq(kill(pid, SIGCONT), 0);
    cr_assert_eq(ready_within(f, c), 1, "the reply never came");
}

/* c ran and its reply is lost: the server answered (it is in the socket,
 * unread: 200 ms is a bound on the test, the check is the server's count
 * of FCALLs), then the link is dropped; the call is kept (it may run
 * twice) and goes out again on the reconnect. */
static void lose_reply(env_t *e, frontier_t *f, frontier_call_t *c, long long fcalls_before);

static void function_flush(redisContext *c)
{
    redisReply *r = redisCommand(c, "FUNCTION FLUSH");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FUNCTION FLUSH failed");
    freeReplyObject(r);
}

/* FCALLs Redis ran so far (INFO commandstats). */
static long long fcalls(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO commandstats failed");
    const char *p = strstr(r->str, "cmdstat_fcall:calls=");
    long long n = p ? strtoll(p + 20, NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

static void lose_reply(env_t *e, frontier_t *f, frontier_call_t *c, long long fcalls_before)
{
    for (int i = 0; i < 2000 && fcalls(e->c) == fcalls_before; i++)
        usleep(1000);
    cr_assert_gt(fcalls(e->c), fcalls_before, "the call never ran");
    rconn_link_t *l = fr_link_of(f);
    rconn_link_drop(l, "test: the reply lost");
    cr_assert_eq(frontier_call_ready(f, c), 0, "a call that may run twice was failed");
    cr_assert_eq(frontier_call_end(f, c), CRAWL_EREDIS, "the link is down");
    cr_assert_eq(rconn_link_connect(l, 0), 0, "%s", rconn_link_error(l));
}

/* Waits for c, frees it, returns its outcome. */
static int end_call(frontier_t *f, frontier_call_t *c)
{
    int rc = frontier_call_end(f, c);
    frontier_call_free(c);
    return rc;
}

/* ---- the robots.txt store ---------------------------------------------------- */

/* Wins the fetch lock of origin (as the fetching worker). */
static void win_lock(env_t *e, const char *origin)
{
    frontier_robots_look_t l = {.origin = origin};
    cr_assert_eq(frontier_robots_look(e->f, &l, 1, 60000), 0);
    cr_assert_eq(l.found, FRONTIER_ROBOTS_WON, "%s: the lock was not free", origin);
}

/* origin's stored value is want, its lock free (a look by another caller
 * finds the value, not the lock). */
static void expect_stored(env_t *e, const char *origin, const char *want)
{
    frontier_robots_look_t l = {.origin = origin};
    cr_assert_eq(frontier_robots_look(e->f, &l, 1, 60000), 0);
    cr_assert_eq(l.found, FRONTIER_ROBOTS_STORED, "%s: nothing stored (found %d)", origin,
                 (int)l.found);
    cr_expect_eq(l.len, strlen(want));
    cr_expect(l.val && !strcmp(l.val, want), "%s: stored %s", origin, l.val ? l.val : "NULL");
    free(l.val);
}

/* A store of origin's rules sent on f. */
static frontier_call_t *store_call(frontier_t *f, const char *origin)
{
    const char *maps[] = {"http://a.test/sitemap.xml"};
    frontier_robots_result_t res = {
        .origin = origin, .val = "Rrules", .len = 6, .ttl_s = 60, .sitemaps = maps, .nsitemaps = 1};
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_robots_store_start(f, &res, &c), 0);
    cr_assert_not_null(c);
    return c; /* res and maps gone: the call holds copies */
}

Test(async, a_robots_store_reply_is_taken_without_waiting)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    win_lock(&e, "http://a.test");
    frontier_t *f2 = side_handle(&e);
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    frontier_call_t *c = store_call(f2, "http://a.test"); /* written to the socket */
    no_reply_while_stopped(pid, f2, c);
    cr_assert_eq(end_call(f2, c), 0);
    expect_stored(&e, "http://a.test", "Rrules");
    redisReply *r =
        redisCommand(e.c, "SISMEMBER crawler:{" CRAWL "}:sitemaps %s", "http://a.test/sitemap.xml");
    cr_expect(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "the sitemap not stored");
    freeReplyObject(r);
    fr_close(f2);
    env_stop(&e);
}

Test(async, a_robots_store_whose_library_was_lost_is_sent_again)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    win_lock(&e, "http://a.test");
    frontier_t *f2 = side_handle(&e);
    function_flush(e.c); /* before the call runs */
    frontier_call_t *c = store_call(f2, "http://a.test");
    cr_assert_eq(ready_within(f2, c), 1); /* after the NOSCRIPT error reply: the real one */
    cr_assert_eq(end_call(f2, c), 0, "%s", frontier_last_error(f2));
    expect_stored(&e, "http://a.test", "Rrules");
    fr_close(f2);
    env_stop(&e);
}

/* A store that ran, its reply lost with the link: it goes out again on
 * the reconnect and runs again (it is idempotent), the store behind it
 * too. */
Test(async, a_robots_store_whose_reply_was_lost_is_sent_again_on_the_reconnect)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    win_lock(&e, "http://a.test");
    win_lock(&e, "http://b.test");
    frontier_t *f2 = side_handle(&e);
    long long before = fcalls(e.c);
    frontier_call_t *ran = store_call(f2, "http://a.test");
    frontier_call_t *next = store_call(f2, "http://b.test");
    lose_reply(&e, f2, ran, before);
    cr_assert_eq(ready_within(f2, ran), 1);
    cr_assert_eq(ready_within(f2, next), 1);
    cr_assert_eq(end_call(f2, ran), 0);
    cr_assert_eq(end_call(f2, next), 0);
    expect_stored(&e, "http://a.test", "Rrules");
    expect_stored(&e, "http://b.test", "Rrules");
    fr_close(f2);
    env_stop(&e);
}

/* ---- the retry ------------------------------------------------------------------ */

static void seed_one(env_t *e, frontier_item_t *it)
{
    const char *urls[] = {"http://a.test/1"};
    cr_assert_eq(seed_urls(e->f, urls, 1, 0), 1);
    size_t n = 0;
    frontier_state_t st;
    cr_assert_eq(frontier_claim(e->f, 1, it, &n, &st, NULL), 0);
    cr_assert_eq(n, 1);
}

/* A retry of it sent on f (it may be cleared after: the call holds copies). */
static frontier_call_t *retry_call(frontier_t *f, frontier_item_t *it)
{
    frontier_outcome_t o = {.status = 503, .error = "http-5xx"};
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_retry_start(f, it, &o, 0, &c), 0);
    cr_assert_not_null(c);
    return c;
}

/* The URL was retried once, nothing in flight or lost. */
static void expect_retried_once(env_t *e)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e->c, CRAWL, &s), 0);
    cr_expect_eq(s.retried, 1, "retried %llu times", (unsigned long long)s.retried);
    cr_expect_eq(s.in_flight, 0);
    cr_expect_eq(s.delayed + s.queued, 1, "the URL is gone: %llu delayed, %llu queued",
                 (unsigned long long)s.delayed, (unsigned long long)s.queued);
}

Test(async, a_retry_reply_is_taken_without_waiting)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    frontier_item_t it;
    seed_one(&e, &it);
    frontier_t *f2 = side_handle(&e);
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    frontier_call_t *c = retry_call(f2, &it);
    frontier_item_clear(&it);
    no_reply_while_stopped(pid, f2, c);
    cr_assert_eq(end_call(f2, c), 0);
    expect_retried_once(&e);
    fr_close(f2);
    env_stop(&e);
}

Test(async, a_retry_whose_library_was_lost_is_sent_again)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    frontier_item_t it;
    seed_one(&e, &it);
    frontier_t *f2 = side_handle(&e);
    function_flush(e.c);
    frontier_call_t *c = retry_call(f2, &it);
    frontier_item_clear(&it);
    cr_assert_eq(ready_within(f2, c), 1);
    cr_assert_eq(end_call(f2, c), 0, "%s", frontier_last_error(f2));
    expect_retried_once(&e);
    fr_close(f2);
    env_stop(&e);
}

/* A retry that ran, its reply lost with the link, sent again on the
 * reconnect: it finds its lease gone (CRAWL_ELEASE) and does nothing twice. */
Test(async, a_retry_sent_again_after_its_reply_was_lost_runs_once)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    frontier_item_t it;
    seed_one(&e, &it);
    frontier_t *f2 = side_handle(&e);
    long long before = fcalls(e.c);
    frontier_call_t *c = retry_call(f2, &it);
    frontier_item_clear(&it);
    lose_reply(&e, f2, c, before);
    cr_assert_eq(end_call(f2, c), CRAWL_ELEASE, "the second run did not see the first");
    expect_retried_once(&e);
    fr_close(f2);
    env_stop(&e);
}

/* ---- the seed hosts -------------------------------------------------------------- */

static void expect_hosts(frontier_t *f, frontier_call_t *c)
{
    char **hosts = NULL;
    size_t n = 0;
    cr_assert_eq(frontier_call_end(f, c), 0);
    cr_assert_eq(frontier_seed_hosts_found(c, &hosts, &n), 0);
    cr_expect_eq(n, 2, "%zu seed hosts", n);
    int a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        a |= !strcmp(hosts[i], "a.test");
        b |= !strcmp(hosts[i], "b.test");
        free(hosts[i]);
    }
    free(hosts);
    cr_expect(a && b, "the seeds' hosts are a.test and b.test");
}

Test(async, the_seed_hosts_are_read_without_waiting_and_again_after_a_lost_link)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/1", "http://b.test/2"};
    cr_assert_eq(seed_urls(e.f, urls, 2, 0), 2);
    frontier_t *f2 = side_handle(&e);
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    frontier_call_t *c = NULL;
    cr_assert_eq(frontier_seed_hosts_start(f2, &c), 0);
    no_reply_while_stopped(pid, f2, c);
    expect_hosts(f2, c);
    frontier_call_free(c);
    cr_assert_eq(kill(pid, SIGSTOP), 0); /* lost before its reply: */
    cr_assert_eq(frontier_seed_hosts_start(f2, &c), 0);
    rconn_link_drop(fr_link_of(f2), "test: lost");
    cr_assert_eq(kill(pid, SIGCONT), 0);
    cr_assert_eq(rconn_link_connect(fr_link_of(f2), 0), 0); /* sent again on the reconnect */
    expect_hosts(f2, c);
    cr_expect_eq(frontier_claim_found(f2, c, NULL, &(size_t){0}, &(frontier_state_t){0}, NULL),
                 CRAWL_EINVAL, "read as another kind");
    frontier_call_free(c);
    fr_close(f2);
    env_stop(&e);
}

/* ---- the parts that hand the calls out ------------------------------------------ */

static crawl_config_t crawl_cfg(void)
{
    crawl_config_t cfg;
    cli_crawl_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.max_delay_ms = 0;
    return cfg;
}

/* A gate on e's crawl (its own handle f), its scope in *scope. */
static robotsgate_t *gate_on(frontier_t *f, const crawl_config_t *cfg, scope_t **scope)
{
    char err[256];
    scope_config_t sc = config_scope(cfg);
    *scope = scope_new(&sc, err, sizeof err);
    cr_assert_not_null(*scope, "%s", err);
    robotsgate_t *g = robotsgate_new(cfg, f, *scope);
    cr_assert_not_null(g);
    return g;
}

/* robots.txt of http://a.test, answered 200 with rules. */
static int fetched_a(robotsgate_t *g, const char *rules)
{
    robotsgate_body_t b = {.origin = "http://a.test",
                           .status = 200,
                           .complete = 1,
                           .body = rules,
                           .len = strlen(rules)};
    return robotsgate_fetched(g, &b);
}

/* A URL of a.test parked on g, whose robots.txt g is to fetch (the lock won). */
static void park_a(robotsgate_t *g)
{
    frontier_item_t it = {.url = strdup("http://a.test/1"), .lease = strdup("no-lease")};
    robotsgate_verdict_t v;
    cr_assert_eq(robotsgate_check(g, &it, &v), 0); /* its look: the lock is ours */
    cr_assert_eq(v, ROBOTSGATE_WAIT);
    const char *o = robotsgate_next_fetch(g);
    cr_assert(o && !strcmp(o, "http://a.test"), "fetch %s", o ? o : "NULL");
}

/* The gate, deferred, applies a fetched robots.txt to its URLs at once and
 * hands the store out without waiting for it (Redis stopped: a wait would
 * hang the test); the store's answer, taken by the caller, leaves the rules
 * stored for every worker and the fetch lock dropped. */
Test(async, the_gate_hands_a_robots_store_out_and_does_not_wait_for_it)
{
    frontier_config_t fcfg = test_config();
    env_t e;
    env_start(&e, &fcfg);
    crawl_config_t cfg = crawl_cfg();
    scope_t *scope;
    frontier_t *f2 = side_handle(&e); /* the gate's thread's handle */
    robotsgate_t *g = gate_on(f2, &cfg, &scope);
    robotsgate_defer_stores(g);
    park_a(g);
    frontier_item_t it;
    robotsgate_verdict_t v;
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(fetched_a(g, RULES), 0);
    cr_assert_eq(robotsgate_next_ready(g, &it, &v), 1, "the parked URL waits for the store");
    cr_expect_eq(v, ROBOTSGATE_ALLOW);
    frontier_item_clear(&it);
    frontier_call_t *c = NULL;
    char *origin = NULL;
    cr_assert_eq(robotsgate_next_store(g, &c, &origin), 1, "no store handed out");
    cr_expect_str_eq(origin, "http://a.test");
    cr_expect_eq(robotsgate_next_store(g, &c, &(char *){NULL}), 0, "one store only");
    no_reply_while_stopped(pid, f2, c);
    cr_assert_eq(robotsgate_stored(g, origin, end_call(f2, c)), 0);
    free(origin);
    frontier_robots_look_t l = {.origin = "http://a.test"}; /* another worker's look */
    cr_assert_eq(frontier_robots_look(e.f, &l, 1, 60000), 0);
    cr_expect_eq(l.found, FRONTIER_ROBOTS_STORED, "the rules are not shared");
    cr_expect(l.val && l.val[0] == 'R', "stored %s", l.val ? l.val : "NULL");
    free(l.val);
    robotsgate_free(g);
    scope_free(scope);
    fr_close(f2);
    env_stop(&e);
}

/* A robots.txt with a Crawl-delay longer than --delay: the claims do not
 * know the host's delay, so even deferred the store is waited for: Redis
 * has the host's delay (hdelay) when robotsgate_fetched returns, before
 * the next claim could give out more of its URLs at once. */
Test(async, a_robots_store_with_a_crawl_delay_the_claims_do_not_know_is_waited_for)
{
    frontier_config_t fcfg = test_config();
    env_t e;
    env_start(&e, &fcfg);
    crawl_config_t cfg = crawl_cfg();
    cfg.max_delay_ms = 10000;
    scope_t *scope;
    robotsgate_t *g = gate_on(e.f, &cfg, &scope);
    robotsgate_defer_stores(g);
    park_a(g);
    cr_assert_eq(fetched_a(g, "User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n"), 0);
    frontier_call_t *c = NULL;
    char *origin = NULL;
    cr_expect_eq(robotsgate_next_store(g, &c, &origin), 0, "the store was handed out");
    redisReply *r = redisCommand(e.c, "HGET crawler:{" CRAWL "}:hdelay http://a.test");
    cr_expect(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "2000"),
              "the host's delay is not in Redis: %s", r && r->str ? r->str : "nil");
    freeReplyObject(r);
    robotsgate_free(g); /* (the held URL dropped with it) */
    scope_free(scope);
    env_stop(&e);
}

/* The finisher, deferred, writes a retry's record on its flush and sends
 * nothing then; the retry goes out when handed out, and stays held (for
 * the reconcile) until its outcome comes back. */
static void count_item(const frontier_item_t *it, void *ud)
{
    (void)it;
    ++*(size_t *)ud;
}

Test(async, the_finisher_hands_a_retry_out_and_holds_it_until_its_outcome)
{
    frontier_config_t fcfg = test_config();
    env_t e;
    env_start(&e, &fcfg);
    crawl_config_t cfg = crawl_cfg();
    finisher_common_t *common = finisher_common_new(&(outputs_t){0});
    cr_assert_not_null(common);
    finisher_t *fin = finisher_new(common, &cfg, e.f);
    cr_assert_not_null(fin);
    finisher_defer_retries(fin);
    frontier_item_t it;
    seed_one(&e, &it);
    page_t p;
    page_init(&p, &it, 503, "http-5xx", NULL);
    int dead = 1;
    cr_assert_eq(finisher_retry(fin, &p, 0, &dead), 0);
    cr_assert_eq(dead, 0);
    long long before = fcalls(e.c);
    size_t pages = 0, held = 0;
    cr_assert_eq(finisher_flush(fin, 0, &pages), 0);
    cr_expect_eq(fcalls(e.c), before, "the finisher sent its retry on its flush");
    frontier_call_t *c = NULL;
    cr_assert_eq(finisher_next_retry(fin, &c), 1, "no retry handed out");
    frontier_call_t *none = NULL;
    cr_expect_eq(finisher_next_retry(fin, &none), 0, "one retry only");
    cr_expect_eq(finisher_queued(fin), 0, "a retry handed out still counts as queued");
    finisher_each_item(fin, count_item, &held);
    cr_expect_eq(held, 1, "the retry in flight is not held");
    cr_assert_eq(ready_within(e.f, c), 1, "the reply never came");
    cr_assert_eq(finisher_retried(fin, end_call(e.f, c)), 0);
    held = 0;
    finisher_each_item(fin, count_item, &held);
    cr_expect_eq(held, 0, "the retry is still held after its outcome");
    expect_retried_once(&e);
    finisher_free(fin);
    finisher_common_free(common);
    env_stop(&e);
}

/* Worker A fetches a.test's robots.txt; worker B, whose URL of a.test waits
 * on A's fetch, polls for the rules without waiting (Redis stopped: no
 * reply taken), the poll sent by its caller (deferred: robotsgate_poll
 * sends nothing); a poll dropped unread leaves the origin polled again. */
Test(async, a_robots_poll_is_sent_by_the_caller_and_taken_without_waiting)
{
    frontier_config_t fcfg = test_config();
    env_t e;
    env_start(&e, &fcfg);
    crawl_config_t cfg = crawl_cfg();
    scope_t *sa, *sb;
    frontier_t *fb = side_handle(&e); /* worker B's handle */
    robotsgate_t *ga = gate_on(e.f, &cfg, &sa), *gb = gate_on(fb, &cfg, &sb);
    robotsgate_defer_polls(gb);
    frontier_item_t ia = {.url = strdup("http://a.test/1"), .lease = strdup("no-lease")};
    frontier_item_t ib = {.url = strdup("http://a.test/2"), .lease = strdup("no-lease")};
    robotsgate_verdict_t v;
    cr_assert_eq(robotsgate_check(ga, &ia, &v), 0);
    cr_assert_eq(v, ROBOTSGATE_WAIT); /* A won the lock */
    cr_assert_eq(robotsgate_check(gb, &ib, &v), 0);
    cr_assert_eq(v, ROBOTSGATE_WAIT); /* B waits on A's fetch */
    cr_assert_eq(robotsgate_polling(gb), 1);
    long long before = fcalls(e.c);
    cr_assert_eq(robotsgate_poll(gb), 0);
    cr_expect_eq(fcalls(e.c), before, "robotsgate_poll looked in Redis itself");
    robotsgate_look_t *lk = NULL;
    cr_assert_eq(robotsgate_poll_start(gb, fb, &lk), 0);
    cr_assert_not_null(lk, "no poll due");
    robotsgate_poll_drop(lk); /* its reply unread */
    cr_assert_eq(robotsgate_polling(gb), 1, "the origin is not polled any more");
    const char *o = robotsgate_next_fetch(ga);
    cr_assert(o && !strcmp(o, "http://a.test"));
    cr_assert_eq(fetched_a(ga, RULES), 0);    /* A stores the rules (not deferred) */
    usleep((ROBOTSGATE_POLL_MS + 10) * 1000); /* the next poll is due */
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(robotsgate_poll_start(gb, fb, &lk), 0);
    cr_assert_not_null(lk, "no poll due after the dropped one");
    for (int i = 0; i < 20; i++) {
        rconn_link_poll(fr_link_of(fb));
        cr_assert_eq(robotsgate_prefetch_ready(lk), 0, "look %d saw a reply", i);
    }
    cr_assert_eq(kill(pid, SIGCONT), 0);
    int got = 0;
    for (int i = 0; i < 5000 && !got; i++) { /* a bound on the test, not a verdict */
        rconn_link_poll(fr_link_of(fb));
        if (!(got = robotsgate_prefetch_ready(lk)))
            usleep(1000);
    }
    cr_assert_eq(got, 1, "the poll's reply never came");
    cr_assert_eq(robotsgate_prefetch_end(gb, lk), 0);
    cr_assert_eq(robotsgate_next_ready(gb, &ib, &v), 1, "B's URL still waits");
    cr_expect_eq(v, ROBOTSGATE_ALLOW);
    cr_expect_eq(robotsgate_polling(gb), 0);
    frontier_item_clear(&ib);
    while (robotsgate_next_ready(ga, &ia, &v))
        frontier_item_clear(&ia);
    robotsgate_free(ga);
    robotsgate_free(gb);
    scope_free(sa);
    scope_free(sb);
    fr_close(fb);
    env_stop(&e);
}

/* ---- the engine: side calls across a Redis restart ------------------------------ */

#define HOSTS 16
#define HOST_PAGES 6 /* /h<h>/p/0 .. 5; /p/3 answers 503 to its first request */

static fx_http_t *site_h;
static atomic_uint first_tries[HOSTS];

static int site(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char body[512];
    unsigned h, i;
    char tail;
    if (sscanf(path, "/h%u/p/%u%c", &h, &i, &tail) != 2 || h >= HOSTS || i >= HOST_PAGES)
        return -1;
    if (i == 3 && atomic_fetch_add(&first_tries[h], 1) == 0) {
        *out = (fx_route_t){.status = 503, .body = "busy", .delay_ms = 20};
        return 0;
    }
    unsigned o = (h + 1) % HOSTS;
    snprintf(body, sizeof body,
             "<html><body><a href=\"/h%u/p/%u\">n</a> <a href=\"%s/h%u/p/%u\">o</a></body></html>",
             h, (i + 1) % HOST_PAGES, fx_http_host_base(site_h, o), o, i);
    *out = (fx_route_t){.body = body, .delay_ms = 20};
    return 0;
}

/* dir/seeds.txt (its path in buf): /h<i>/p/0 of h's hosts 0..n-1. */
static void write_seeds(fx_http_t *h, unsigned n, const char *dir, char *buf, size_t len)
{
    char content[FX_HTTP_MAX_HOSTS * 64] = "";
    for (unsigned i = 0; i < n; i++) {
        size_t at = strlen(content);
        snprintf(content + at, sizeof content - at, "%s/h%u/p/0\n", fx_http_host_base(h, i), i);
    }
    snprintf(buf, len, "%s/seeds.txt", dir);
    cr_assert_eq(fx_write_file(buf, content), 0);
}

/* Pages with a 200 record in the JSON lines at path, marked in seen. */
static void mark_done(const char *path, unsigned char seen[HOSTS][HOST_PAGES])
{
    char *s = fx_read_file(path, NULL);
    for (unsigned h = 0; s && h < HOSTS; h++)
        for (unsigned i = 0; i < HOST_PAGES; i++) {
            char pat[160];
            snprintf(pat, sizeof pat, "{\"url\":\"%s/h%u/p/%u\",\"status\":200",
                     fx_http_host_base(site_h, h), h, i);
            if (strstr(s, pat))
                seen[h][i] = 1;
        }
    free(s);
}

/* Two crawler processes over 16 hosts, each with its robots.txt and a page
 * that answers 503 once (a retry); Redis stopped (SIGTERM) and started again
 * from its append-only file while they run: every page recorded, every
 * robots.txt stored, the crawl over in Redis (nothing leased, queued or
 * delayed), each retry counted. */
Test(async, side_calls_in_flight_when_redis_restarts_are_sent_again_and_nothing_is_lost,
     .timeout = 300)
{
    fx_redis_t *r = fx_redis_start_aof();
    cr_assert_not_null(r, "%s", fx_error());
    site_h = fx_http_start_hosts(HOSTS);
    cr_assert_not_null(site_h, "%s", fx_error());
    fx_http_set_handler(site_h, site, NULL);
    fx_http_set(site_h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /private/\n",
                              .delay_ms = 20});
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir);
    char seeds[512], out[2][600], log[2][600];
    write_seeds(site_h, HOSTS, dir, seeds, sizeof seeds);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        snprintf(out[p], sizeof out[p], "%s/out%d.jsonl", dir, p);
        snprintf(log[p], sizeof log[p], "%s/log%d", dir, p);
        char *argv[] = {CRAWLER_BIN, "crawl",     "--redis", (char *)fx_redis_url(r),
                        "--seeds",   seeds,       "--out",   out[p],
                        "--quiet",   "--delay",   "0",       "--per-host",
                        "2",         "--threads", "2",       "--retry-backoff",
                        "50",        NULL};
        pid[p] = fx_spawn(argv, NULL, log[p]);
        cr_assert(pid[p] > 0, "%s", fx_error());
    }
    uint64_t deadline = fx_now_ms() + 60000;
    while (fx_http_total(site_h) < HOSTS * 2 && fx_now_ms() < deadline)
        usleep(1000); /* a third of the way in: robots.txt stores and retries going out */
    cr_assert_eq(fx_redis_restart(r, SIGTERM, 500), 0, "%s", fx_error());
    unsigned char seen[HOSTS][HOST_PAGES] = {{0}};
    for (int p = 0; p < 2; p++) {
        int rc = fx_wait(pid[p], 180000);
        char *err = fx_read_file(log[p], NULL);
        cr_expect_eq(rc, 0, "crawler %d exited %d: %.3000s", p, rc, err ? err : "");
        cr_expect(err && strstr(err, "Redis is back"), "crawler %d did not reconnect: %.3000s", p,
                  err ? err : "");
        free(err);
        mark_done(out[p], seen);
    }
    for (unsigned h = 0; h < HOSTS; h++)
        for (unsigned i = 0; i < HOST_PAGES; i++)
            cr_expect(seen[h][i], "/h%u/p/%u has no 200 record", h, i);
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_eq(st.queued + st.in_flight + st.delayed, 0, "%llu queued, %llu leased, %llu delayed",
                 (unsigned long long)st.queued, (unsigned long long)st.in_flight,
                 (unsigned long long)st.delayed);
    cr_expect_geq(st.retried, HOSTS, "%llu retries", (unsigned long long)st.retried);
    redisReply *k = redisCommand(c, "KEYS crawler:{default}:robots:*");
    cr_expect(k && k->type == REDIS_REPLY_ARRAY && k->elements == HOSTS,
              "%zu robots.txt stored of %d", k ? k->elements : 0, HOSTS);
    freeReplyObject(k);
    redisFree(c);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(site_h);
    fx_redis_stop(r);
}

/* Pages requested so far: /h<h>/p/0 of hosts 0..n-1. */
static unsigned pages_hit(fx_http_t *h, unsigned n)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        char path[32];
        snprintf(path, sizeof path, "/h%u/p/0", i);
        k += fx_http_hits(h, path) > 0;
    }
    return k;
}

/* The URLs parked on their hosts' robots.txt start as soon as the files
 * are in, Redis stopped meanwhile (SIGSTOP): the rules apply at once, their
 * store goes out without waiting.  A thread that waited for the store would
 * fetch no page until Redis is back. */
Test(async, pages_parked_on_robots_txt_start_while_the_store_waits_for_redis, .timeout = 120)
{
    enum { N = 4 };
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    fx_http_t *h = fx_http_start_hosts(N);
    cr_assert_not_null(h, "%s", fx_error());
    fx_http_set(h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /private/\n",
                              .hold = 1});
    char *dir = fx_tmpdir(), seeds[512], out[600], log[600];
    cr_assert_not_null(dir);
    for (unsigned i = 0; i < N; i++) {
        char path[32];
        snprintf(path, sizeof path, "/h%u/p/0", i);
        fx_http_page(h, path, "<html><body>no links</body></html>");
    }
    write_seeds(h, N, dir, seeds, sizeof seeds);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    char *argv[] = {CRAWLER_BIN, "crawl",   "--redis", (char *)fx_redis_url(r),
                    "--seeds",   seeds,     "--out",   out,
                    "--quiet",   "--delay", "0",       "--threads",
                    "1",         NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0, "%s", fx_error());
    for (int i = 0; i < 20000 && fx_http_pending(h, -1) < N; i++) /* a bound, not a verdict */
        usleep(1000);
    cr_assert_eq(fx_http_pending(h, -1), N, "the robots.txt requests never came");
    pid_t rpid = fx_redis_pid(r);
    cr_assert_eq(kill(rpid, SIGSTOP), 0);
    fx_http_release(h); /* the robots.txt files go out, Redis stopped */
    for (int i = 0; i < 10000 && pages_hit(h, N) < N; i++)
        usleep(1000);
    unsigned while_stopped = pages_hit(h, N);
    cr_assert_eq(kill(rpid, SIGCONT), 0);
    cr_expect_eq(while_stopped, N, "%u of %d pages requested while Redis was stopped",
                 while_stopped, N);
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "the crawler exited %d: %.3000s", rc, err ? err : "");
    free(err);
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_eq(st.fetched, N, "%llu fetched", (unsigned long long)st.fetched);
    redisReply *k = redisCommand(c, "KEYS crawler:{default}:robots:*");
    cr_expect(k && k->type == REDIS_REPLY_ARRAY && k->elements == N, "%zu robots.txt stored",
              k ? k->elements : 0);
    freeReplyObject(k);
    redisFree(c);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(h);
    fx_redis_stop(r);
}
