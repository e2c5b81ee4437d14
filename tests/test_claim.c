/* Claims, robots.txt looks and heartbeats as calls (frontier_claim_start,
 * frontier_call_ready / _end / _free, frontier_claim_found, ...) on a
 * handle's link, against a real redis-server: the reply is taken without
 * ever waiting
 * (checked with the server stopped by SIGSTOP: a wait would hang the test),
 * the claim's own handle leases under the main handle's worker id (the
 * main handle finishes and releases what it claimed), a library lost
 * between the send and the reply is loaded again, and a call dropped with
 * its connection is handed back by the reconcile. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier_env.h"

/* A second connection and handle under e's worker id. */
static frontier_t *claim_handle(env_t *e, redisContext **c)
{
    *c = fx_redis_connect(e->r);
    cr_assert_not_null(*c, "%s", fx_error());
    frontier_config_t cfg = test_config();
    cfg.worker_id = frontier_worker_id(e->f);
    return open_frontier(*c, e->b, &cfg);
}

/* A call's reply taken if it is there: the link polled, never waiting. */
typedef int (*ready_fn)(frontier_t *f, void *call);
static int call_ready(frontier_t *f, void *c)
{
    rconn_link_poll(fr_link_of(f));
    return frontier_call_ready(f, c);
}
#define claim_ready call_ready
#define look_ready call_ready
#define beat_ready call_ready

/* A claim's end: waited for, its URLs read, the call freed. */
static int claim_end(frontier_t *f, frontier_call_t *c, frontier_item_t *it, size_t *n,
                     frontier_state_t *st, uint32_t *wait_ms)
{
    int rc = frontier_call_end(f, c);
    if (rc == 0)
        rc = frontier_claim_found(f, c, it, n, st, wait_ms);
    frontier_call_free(c);
    return rc;
}

/* A look's or store's end: waited for, the call freed. */
static int call_end(frontier_t *f, frontier_call_t *c)
{
    int rc = frontier_call_end(f, c);
    frontier_call_free(c);
    return rc;
}

/* A heartbeat's end: waited for, its findings read, the call freed. */
static int beat_end(frontier_t *f, frontier_call_t *c, frontier_beat_t *b)
{
    int rc = frontier_call_end(f, c);
    if (rc == 0)
        rc = frontier_heartbeat_found(c, b);
    frontier_call_free(c);
    return rc;
}

/* Polls the call until its reply is all there: at most 5,000 looks 1 ms
 * apart (a bound on the test, not a verdict). */
static int ready_within(frontier_t *f, ready_fn ready, void *call)
{
    for (int i = 0; i < 5000; i++) {
        int r = ready(f, call);
        if (r != 0)
            return r;
        usleep(1000);
    }
    return 0;
}

/* The call was sent with the server stopped (SIGSTOP, pid): 20 looks find
 * no reply (one that waited would hang the test), then the server goes on
 * and the reply comes. */
static void no_reply_while_stopped(pid_t pid, frontier_t *f, ready_fn ready, void *call)
{
    for (int i = 0; i < 20; i++)
        cr_assert_eq(ready(f, call), 0, "look %d saw a reply", i);
    cr_assert_eq(kill(pid, SIGCONT), 0);
    cr_assert_eq(ready_within(f, ready, call), 1, "the reply never came");
}

/* Hands it[0..n) back through the main handle, clears them, closes the
 * claims' handle and stops the environment (its invariant check). */
static void hand_back_and_stop(env_t *e, frontier_t *f2, redisContext *c2, frontier_item_t *it,
                               size_t n)
{
    cr_assert_eq(frontier_release(e->f, it, n), 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    fr_close(f2);
    redisFree(c2);
    env_stop(e);
}

static void seed_three(env_t *e)
{
    const char *urls[] = {"http://a.test/1", "http://b.test/2", "http://c.test/3"};
    cr_assert_eq(seed_urls(e->f, urls, 3, 0), 3);
}

Test(claim, the_reply_is_taken_without_waiting_and_the_main_handle_finishes_it)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    seed_three(&e);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    pid_t pid = fx_redis_pid(e.r);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_claim_start(f2, 10, &call), 0); /* written to the socket */
    cr_assert_not_null(call);
    no_reply_while_stopped(pid, f2, claim_ready, call);
    cr_assert_eq(call_ready(f2, call), 1, "a second look still says ready");
    frontier_item_t it[10];
    size_t n = 0;
    frontier_state_t st;
    uint32_t wait_ms = 0;
    cr_assert_eq(claim_end(f2, call, it, &n, &st, &wait_ms), 0);
    cr_assert_eq(st, FRONTIER_READY);
    cr_assert_eq(n, 3);
    /* leased under the main handle's worker: it finishes one, releases two */
    finish_one(e.f, &it[0], NULL, 0, NULL, 0);
    cr_assert_eq(frontier_release(e.f, it + 1, 2), 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.fetched, 1);
    cr_assert_eq(s.released, 2);
    cr_assert_eq(s.in_flight, 0);
    cr_assert_eq(s.queued, 2);
    fr_close(f2);
    redisFree(c2);
    env_stop(&e);
}

Test(claim, a_library_lost_before_the_claim_ran_is_loaded_and_the_claim_sent_again)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    seed_three(&e);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    redisReply *r = redisCommand(e.c, "FUNCTION FLUSH");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FUNCTION FLUSH failed");
    freeReplyObject(r);
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_claim_start(f2, 10, &call), 0);
    cr_assert_eq(ready_within(f2, claim_ready, call), 1); /* the NOSCRIPT error reply */
    frontier_item_t it[10];
    size_t n = 0;
    frontier_state_t st;
    cr_assert_eq(claim_end(f2, call, it, &n, &st, NULL), 0);
    cr_assert_eq(n, 3, "claimed %zu after loading the library again", n);
    hand_back_and_stop(&e, f2, c2, it, n);
}

Test(claim, a_call_ended_before_its_reply_came_waits_for_it)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    seed_three(&e);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_claim_start(f2, 2, &call), 0);
    frontier_item_t it[2];
    size_t n = 0;
    frontier_state_t st;
    cr_assert_eq(claim_end(f2, call, it, &n, &st, NULL), 0); /* no _ready first */
    cr_assert_eq(n, 2, "the max given to _start bounds the claim");
    hand_back_and_stop(&e, f2, c2, it, n);
}

Test(claim, a_call_dropped_with_its_connection_is_handed_back_by_the_reconcile)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    seed_three(&e);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_claim_start(f2, 10, &call), 0);
    cr_assert_eq(ready_within(f2, claim_ready, call), 1);
    frontier_call_free(call); /* as a worker losing the connection: never read */
    fr_close(f2);
    redisFree(c2);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.in_flight, 3, "Redis leased them");
    size_t back = 0;
    cr_assert_eq(frontier_reconcile(e.f, NULL, 0, &back), 0);
    cr_assert_eq(back, 3);
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.in_flight, 0);
    cr_assert_eq(s.queued, 3);
    env_stop(&e);
}

/* The robots.txt look in halves, on the claims' handle: a stored value,
 * a lock won, a lock held by another caller, without ever waiting. */
Test(claim, a_robots_look_in_halves_finds_stored_won_and_held_without_waiting)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    frontier_robots_look_t first[2] = {{.origin = "http://a.test"}, {.origin = "http://c.test"}};
    cr_assert_eq(frontier_robots_look(e.f, first, 2, 60000), 0);
    cr_assert_eq(first[0].found, FRONTIER_ROBOTS_WON);
    cr_assert_eq(first[1].found, FRONTIER_ROBOTS_WON); /* c.test stays locked */
    frontier_robots_result_t res = {
        .origin = "http://a.test", .val = "Rrules", .len = 6, .ttl_s = 60};
    cr_assert_eq(frontier_robots_store(e.f, &res), 0);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    pid_t pid = fx_redis_pid(e.r);
    frontier_robots_look_t l[3] = {
        {.origin = "http://a.test"}, {.origin = "http://b.test"}, {.origin = "http://c.test"}};
    frontier_call_t *call = NULL;
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(frontier_robots_look_start(f2, l, 3, 60000, &call), 0);
    cr_assert_not_null(call);
    no_reply_while_stopped(pid, f2, look_ready, call);
    cr_assert_eq(call_end(f2, call), 0);
    cr_assert_eq(l[0].found, FRONTIER_ROBOTS_STORED);
    cr_assert_eq(l[0].len, 6);
    cr_assert_str_eq(l[0].val, "Rrules");
    cr_assert_eq(l[1].found, FRONTIER_ROBOTS_WON);
    cr_assert_eq(l[2].found, FRONTIER_ROBOTS_HELD);
    free(l[0].val);
    fr_close(f2);
    redisFree(c2);
    env_stop(&e);
}

Test(claim, a_robots_look_whose_library_was_lost_is_sent_again)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    redisReply *r = redisCommand(e.c, "FUNCTION FLUSH");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FUNCTION FLUSH failed");
    freeReplyObject(r);
    frontier_robots_look_t l[1] = {{.origin = "http://a.test"}};
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_robots_look_start(f2, l, 1, 60000, &call), 0);
    cr_assert_eq(ready_within(f2, look_ready, call), 1); /* the NOSCRIPT error reply */
    cr_assert_eq(call_end(f2, call), 0);
    cr_assert_eq(l[0].found, FRONTIER_ROBOTS_WON, "the look ran after loading the library");
    cr_assert_eq(frontier_robots_unlock(e.f, "http://a.test"), 0);
    fr_close(f2);
    redisFree(c2);
    env_stop(&e);
}

/* The heartbeat in halves: it never waits, and its reply says whether the
 * crawl's Bloom filter is there and how many URLs were added to it. */
Test(claim, a_heartbeat_in_halves_reports_the_filter_and_its_fill)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    seed_three(&e);
    redisContext *c2;
    frontier_t *f2 = claim_handle(&e, &c2);
    pid_t pid = fx_redis_pid(e.r);
    frontier_worker_stats_t ws = {.pages = 7, .pages_per_s = 1.5, .in_flight = 2};
    frontier_call_t *call = NULL;
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(frontier_heartbeat_start(f2, &ws, &call), 0);
    no_reply_while_stopped(pid, f2, beat_ready, call);
    frontier_beat_t b = {0};
    cr_assert_eq(beat_end(f2, call, &b), 0);
    cr_assert_eq(b.crawl_exists, 1);
    cr_assert_eq(b.bloom_added, 3, "3 seeds added, got %llu", (unsigned long long)b.bloom_added);
    cr_assert_eq(b.reclaimed, 0);
    char key[256];
    cr_assert_geq(frontier_bloom_name(CRAWL, key, sizeof key), 0);
    redisReply *r = redisCommand(e.c, "DEL %s:meta", key); /* the crawl's filter lost */
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "DEL %s:meta", key);
    freeReplyObject(r);
    cr_assert_eq(frontier_heartbeat_start(f2, &ws, &call), 0);
    cr_assert_eq(beat_end(f2, call, &b), 0); /* without _ready: waits */
    cr_assert_eq(b.crawl_exists, 0, "the heartbeat did not see the filter gone");
    fr_close(f2);
    redisFree(c2);
    fr_close(e.f); /* no invariant check: the filter is gone */
    e.f = NULL;
    env_stop(&e);
}
