/*
 * test_control.c -- the crawl's control hash (frontier.h: frontier_control;
 * P control) at the frontier's level, on a real redis-server: a claim after
 * a pause is refused by Redis itself (no window: the claim reads the hash in
 * the same atomic call) while the lease is renewed; a drain stops the
 * workers registered before it and no other; a crawl-wide limit beats the
 * handle's own and clearing it brings the handle's back; a control key of
 * the wrong type fails the calls that read it, naming it, before they write.
 * And `crawler limits`'s checks: a bad value exits 2 and writes nothing.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "frontier.h"
#include "side.h"

#define CRAWL "ctl"
#define P "crawler:{" CRAWL "}:"

static frontier_control_change_t pause_ch = {.pause = 1}, resume_ch = {.pause = -1},
                                 drain_ch = {.drain = 1};

static void control(redisContext *c, const frontier_control_change_t *ch, frontier_control_t *out)
{
    char err[256];
    int rc = frontier_control(c, CRAWL, ch, out, NULL, NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "frontier_control: %s", err);
}

static double lease_of(redisContext *c, const char *worker)
{
    redisReply *r = redisCommand(c, "ZSCORE " P "workers %s", worker);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "worker %s not registered", worker);
    double v = strtod(r->str, NULL);
    freeReplyObject(r);
    return v;
}

/* The length of origin's queue (a list, or packed in its hosts field). */
static long long qlen(redisContext *c, const char *origin)
{
    long long n = fx_redis_queue_len(c, P, origin);
    cr_assert_geq(n, 0, "%s", fx_error());
    return n;
}

/* One claim: its state, and how many URLs it took (items cleared). */
static frontier_state_t claim(frontier_t *f, size_t max, size_t *n)
{
    frontier_item_t it[16] = {{0}};
    frontier_state_t st;
    uint32_t wait = 0;
    int rc = frontier_claim(f, max, it, n, &st, &wait);
    cr_assert_eq(rc, 0, "frontier_claim: %s (%s)", crawl_strerror(rc), frontier_last_error(f));
    for (size_t i = 0; i < *n; i++)
        frontier_item_clear(&it[i]);
    return st;
}

Test(control, a_claim_after_pause_takes_nothing_renews_the_lease_and_resume_claims_again)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, "w1", 4);
    const char *seeds[] = {"http://a.test/1", "http://a.test/2", "http://b.test/1"};
    side_seed_all(s.f, seeds, 3);
    control(s.c, &pause_ch, NULL);
    double l0 = lease_of(s.c, "w1");
    usleep(5000);
    size_t n = 9;
    cr_expect_eq(claim(s.f, 8, &n), FRONTIER_PAUSED, "a claim after the pause was not refused");
    cr_expect_eq(n, 0, "%zu URLs claimed while paused", n);
    cr_expect_gt(lease_of(s.c, "w1"), l0, "the paused claim did not renew the lease");
    cr_expect_eq(qlen(s.c, "http://a.test") + qlen(s.c, "http://b.test"), 3);
    frontier_beat_t b;
    frontier_call_t *bc = NULL;
    cr_assert_eq(frontier_heartbeat_start(s.f, NULL, &bc), 0);
    cr_assert_eq(frontier_call_end(s.f, bc), 0);
    cr_assert_eq(frontier_heartbeat_found(bc, &b), 0);
    frontier_call_free(bc);
    cr_expect_eq(b.control, FRONTIER_PAUSED, "the heartbeat does not say paused");
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(s.c, CRAWL, &st), 0);
    cr_expect(st.control.paused, "stats does not say paused");
    control(s.c, &resume_ch, NULL);
    cr_expect_eq(claim(s.f, 8, &n), FRONTIER_READY, "no claim after resume");
    cr_expect_eq(n, 3, "%zu URLs claimed after resume", n);
    side_check(s.c, s.f, 4);
    side_close(&s);
    fx_redis_stop(r);
}

/* A paused crawl with nothing left is never over: its claims say paused. */
Test(control, an_empty_paused_crawl_is_not_done)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, "w1", 1);
    size_t n;
    cr_expect_eq(claim(s.f, 4, &n), FRONTIER_DONE);
    control(s.c, &pause_ch, NULL);
    cr_expect_eq(claim(s.f, 4, &n), FRONTIER_PAUSED, "a paused crawl was taken for over");
    side_close(&s);
    fx_redis_stop(r);
}

Test(control, drain_stops_the_workers_registered_before_it_and_spares_later_ones)
{
    fx_redis_t *r = side_redis();
    side_t a, b;
    side_open(&a, r, CRAWL, "before", 4);
    const char *seeds[] = {"http://a.test/1", "http://a.test/2"};
    side_seed_all(a.f, seeds, 2);
    usleep(3000); /* (a later Redis ms than the registration) */
    frontier_control_t c;
    control(a.c, &drain_ch, &c);
    cr_expect_gt(c.drain_ms, 0);
    usleep(3000);
    side_open(&b, r, CRAWL, "after", 4);
    size_t n = 9;
    cr_expect_eq(claim(a.f, 8, &n), FRONTIER_DRAIN, "the worker registered before is not told");
    cr_expect_eq(n, 0);
    frontier_beat_t beat;
    frontier_call_t *bc = NULL;
    cr_assert_eq(frontier_heartbeat_start(a.f, NULL, &bc), 0);
    cr_assert_eq(frontier_call_end(a.f, bc), 0);
    cr_assert_eq(frontier_heartbeat_found(bc, &beat), 0);
    frontier_call_free(bc);
    cr_expect_eq(beat.control, FRONTIER_DRAIN, "its heartbeat does not say drain");
    cr_assert_eq(frontier_heartbeat_start(b.f, NULL, &bc), 0);
    cr_assert_eq(frontier_call_end(b.f, bc), 0);
    cr_assert_eq(frontier_heartbeat_found(bc, &beat), 0);
    frontier_call_free(bc);
    cr_expect_eq(beat.control, FRONTIER_READY, "the later worker's heartbeat says %d",
                 beat.control);
    cr_expect_eq(claim(b.f, 8, &n), FRONTIER_READY, "the worker registered after is stopped");
    cr_expect_eq(n, 2);
    side_check(a.c, a.f, 4);
    side_close(&b);
    side_close(&a);
    fx_redis_stop(r);
}

Test(control, crawl_wide_limits_beat_the_handles_and_clearing_them_restores_the_handles)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, "w1", 4); /* its own per_host: 4, no page limit */
    frontier_control_change_t lim = {0};
    lim.limit[FRONTIER_LIMIT_PER_HOST] = 1;
    lim.value[FRONTIER_LIMIT_PER_HOST] = 1;
    lim.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
    lim.value[FRONTIER_LIMIT_MAX_PAGES] = 3;
    control(s.c, &lim, NULL);
    const char *seeds[] = {"http://a.test/1", "http://a.test/2", "http://a.test/3",
                           "http://a.test/4", "http://a.test/5"};
    size_t added = 0;
    cr_assert_eq(frontier_seed(s.f, seeds, 5, 0, &added), 0);
    cr_expect_eq(added, 3, "%zu seeds admitted under max_pages 3 (crawl-wide)", added);
    size_t n;
    cr_expect_eq(claim(s.f, 8, &n), FRONTIER_READY);
    cr_expect_eq(n, 1, "%zu URLs of one host claimed under per_host 1 (crawl-wide)", n);
    side_check(s.c, s.f, 1);
    /* per_host raised crawl-wide while the host is at its cap (out of ready):
     * it is back at once; max_pages cleared: the handle's own (none) holds */
    frontier_control_change_t raise = {0};
    raise.limit[FRONTIER_LIMIT_PER_HOST] = 1;
    raise.value[FRONTIER_LIMIT_PER_HOST] = 4;
    raise.limit[FRONTIER_LIMIT_MAX_PAGES] = -1;
    frontier_control_t c;
    control(s.c, &raise, &c);
    cr_expect(c.set[FRONTIER_LIMIT_PER_HOST] && !c.set[FRONTIER_LIMIT_MAX_PAGES]);
    side_check(s.c, s.f, 4);
    cr_assert_eq(frontier_seed(s.f, seeds + 3, 2, 0, &added), 0);
    cr_expect_eq(added, 2, "%zu seeds admitted once the limit was cleared", added);
    cr_expect_eq(claim(s.f, 8, &n), FRONTIER_READY);
    cr_expect_eq(n, 3, "%zu more URLs claimed under per_host 4 (crawl-wide)", n);
    frontier_control_change_t clear = {0};
    clear.limit[FRONTIER_LIMIT_PER_HOST] = -1;
    control(s.c, &clear, &c);
    cr_expect(!c.set[FRONTIER_LIMIT_PER_HOST], "per_host not cleared");
    /* out of range: nothing sent */
    frontier_control_change_t bad = {0};
    bad.limit[FRONTIER_LIMIT_PER_HOST] = 1;
    cr_expect_eq(frontier_control(s.c, CRAWL, &bad, NULL, NULL, NULL, NULL, 0), CRAWL_EINVAL);
    bad.value[FRONTIER_LIMIT_PER_HOST] = 1ull << 32;
    cr_expect_eq(frontier_control(s.c, CRAWL, &bad, NULL, NULL, NULL, NULL, 0), CRAWL_EINVAL);
    side_close(&s);
    fx_redis_stop(r);
}

/* keys.def's control key of another type: the calls that read it fail
 * naming it and write nothing (types.lua); put back, they work. */
Test(control, a_control_key_of_the_wrong_type_fails_the_calls_naming_it_before_any_write)
{
    fx_redis_t *r = side_redis();
    side_t s;
    side_open(&s, r, CRAWL, "w1", 4);
    const char *seeds[] = {"http://a.test/1"};
    side_seed_all(s.f, seeds, 1);
    redisReply *x = redisCommand(s.c, "SET " P "control oops");
    freeReplyObject(x);
    double l0 = lease_of(s.c, "w1");
    usleep(3000);
    frontier_item_t it[4];
    size_t n = 0;
    frontier_state_t st;
    int rc = frontier_claim(s.f, 4, it, &n, &st, NULL);
    cr_expect_eq(rc, CRAWL_EWRONGTYPE, "claim: %s", crawl_strerror(rc));
    cr_expect(strstr(frontier_last_error(s.f), P "control is a string, expected a hash"), "%s",
              frontier_last_error(s.f));
    cr_expect_eq(lease_of(s.c, "w1"), l0, "the failed claim wrote the lease");
    cr_expect_eq(qlen(s.c, "http://a.test"), 1);
    rc = frontier_heartbeat(s.f, NULL, NULL);
    cr_expect_eq(rc, CRAWL_EWRONGTYPE, "heartbeat: %s", crawl_strerror(rc));
    char err[256];
    rc = frontier_control(s.c, CRAWL, &pause_ch, NULL, NULL, NULL, err, sizeof err);
    cr_expect_eq(rc, CRAWL_EWRONGTYPE, "control: %s", err);
    cr_expect(strstr(err, P "control is a string"), "%s", err);
    frontier_stats_t fs;
    cr_expect_eq(frontier_stats(s.c, CRAWL, &fs), CRAWL_EWRONGTYPE);
    x = redisCommand(s.c, "DEL " P "control");
    freeReplyObject(x);
    cr_expect_eq(claim(s.f, 4, &n), FRONTIER_READY);
    cr_expect_eq(n, 1);
    side_close(&s);
    fx_redis_stop(r);
}

/* ---- `crawler limits` checks its values before Redis -------------------- */

static int run_limits(fx_redis_t *r, const char *opt, const char *val)
{
    char *argv[] = {CRAWLER_BIN, "limits",    "--redis", (char *)fx_redis_url(r), "--crawl", CRAWL,
                    (char *)opt, (char *)val, NULL};
    return fx_run(argv, NULL, NULL, 30000);
}

static char *control_dump(redisContext *c)
{
    redisReply *x = redisCommand(c, "HGETALL " P "control");
    cr_assert(x && x->type == REDIS_REPLY_ARRAY);
    char buf[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < x->elements && o < sizeof buf - 1; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s;", x->element[i]->str);
    freeReplyObject(x);
    return strdup(buf);
}

Test(control, limits_refuses_bad_values_with_exit_2_and_leaves_the_hash_as_it_was)
{
    static const struct {
        const char *opt, *val;
    } bad[] = {
        {"--per-host", "0"},
        {"--per-host", "100001"},
        {"--per-host", ""},
        {"--per-host", "unlimited"},
        {"--delay", "-1"},
        {"--delay", "86400001"},
        {"--delay", "1.5"},
        {"--max-delay", "ms"},
        {"--max-pages", "0"},
        {"--max-pages", "abc"},
        {"--max-pages", "18446744073709551616"},
        {"--max-pages-per-host", "unlimitedx"},
        {"--lease", "5"}, /* not a crawl-wide limit */
    };
    fx_redis_t *r = side_redis();
    side_t s; /* the crawl exists: a change to a crawl without keys is refused */
    side_open(&s, r, CRAWL, "w1", 4);
    const char *seeds[] = {"http://a.test/1"};
    side_seed_all(s.f, seeds, 1);
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    cr_assert_eq(run_limits(r, "--per-host", "3"), 0, "a good value refused");
    char *before = control_dump(c);
    cr_assert_str_eq(before, "per_host;3;");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_limits(r, bad[i].opt, bad[i].val);
        cr_expect_eq(rc, 2, "%s '%s': exit %d", bad[i].opt, bad[i].val, rc);
        char *now = control_dump(c);
        cr_expect_str_eq(now, before, "%s '%s' changed the control hash", bad[i].opt, bad[i].val);
        free(now);
    }
    char *extra[] = {CRAWLER_BIN, "pause", "--redis", (char *)fx_redis_url(r),
                     "--crawl",   CRAWL,   "now",     NULL};
    cr_expect_eq(fx_run(extra, NULL, NULL, 30000), 2, "pause with an extra argument");
    char *now = control_dump(c);
    cr_expect_str_eq(now, before, "a refused pause changed the control hash");
    free(now);
    cr_expect_eq(run_limits(r, "--max-pages", "unlimited"), 0);
    cr_expect_eq(run_limits(r, "--per-host", "default"), 0);
    now = control_dump(c);
    cr_expect_str_eq(now, "max_pages;0;", "after unlimited and default: %s", now);
    free(now);
    free(before);
    redisFree(c);
    side_close(&s);
    fx_redis_stop(r);
}

/* A control change to a crawl with no keys in the Redis (a mistyped
 * --crawl) is refused with exit 2 and writes nothing, unless --force; and
 * a control command with no Redis named never starts an embedded one. */
Test(control, a_change_to_a_crawl_without_keys_is_refused_unless_forced)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    static const char *const cmds[][3] = {
        {"pause", NULL, NULL}, {"drain", NULL, NULL}, {"limits", "--delay", "5"}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *argv[] = {CRAWLER_BIN,
                        (char *)cmds[i][0],
                        "--redis",
                        (char *)fx_redis_url(r),
                        "--crawl",
                        CRAWL,
                        (char *)cmds[i][1],
                        (char *)cmds[i][2],
                        NULL};
        int rc = fx_run(argv, NULL, NULL, 30000);
        cr_expect_eq(rc, 2, "%s on a crawl without keys: exit %d", cmds[i][0], rc);
        redisReply *x = redisCommand(c, "EXISTS " P "control");
        cr_expect(x && x->integer == 0, "%s wrote the control hash", cmds[i][0]);
        freeReplyObject(x);
    }
    char *force[] = {CRAWLER_BIN, "pause", "--redis", (char *)fx_redis_url(r),
                     "--crawl",   CRAWL,   "--force", NULL};
    cr_expect_eq(fx_run(force, NULL, NULL, 30000), 0, "pause --force refused");
    char *now = control_dump(c);
    cr_expect_str_eq(now, "paused;1;", "after pause --force: %s", now);
    free(now);
    /* no --redis, no $REDIS_URL, no worker in --data-dir: exit 2, no directory made */
    char *dir = fx_tmpdir(), data[512];
    snprintf(data, sizeof data, "%s/data", dir);
    char *none[] = {CRAWLER_BIN, "pause", "--crawl", CRAWL, "--data-dir", data, NULL};
    int rc = fx_run_without("REDIS_URL", none, 30000);
    cr_expect_eq(rc, 2, "pause with no Redis named: exit %d", rc);
    struct stat st;
    cr_expect(stat(data, &st) != 0, "pause with no Redis named made %s", data);
    fx_rmtree(dir);
    free(dir);
    redisFree(c);
    fx_redis_stop(r);
}
