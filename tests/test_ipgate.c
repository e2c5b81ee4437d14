/*
 * test_ipgate.c -- politeness per IP address (--per-ip, --ip-delay;
 * frontier/lua/ipgate.lua, crawler/fetch/ipgate.c): on the Redis function
 * driven from this process, what an address's slots answer; and on real
 * crawler processes against one HTTP server whose hosts share two loopback
 * addresses (60 hosts, told apart by their ports, on each: shared hosting),
 * where the verdict is the server's own log: no address ever had more
 * requests in flight than --per-ip, nor a request sooner than --ip-delay
 * after the one before it ended, across two processes, and every page was
 * fetched once.  A crawl without the options puts more on one address (the
 * check can fail).  Gaps and counts as the server saw them: a slow machine
 * only makes gaps longer and overlaps rarer.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier_env.h"
#include "hosts_site.h"

#define ADDRS 2
#define HOSTS 120 /* 60 on each address */

/* ---- the function, driven from here --------------------------------------- */

static void gate(env_t *e, frontier_ipslot_t *s, size_t n, uint32_t per, uint32_t gap)
{
    frontier_call_t *c;
    cr_assert_eq(frontier_ipgate_start(e->f, s, n, per, gap, 60000, &c), 0);
    cr_assert_eq(frontier_call_end(e->f, c), 0);
    frontier_call_free(c);
}

static frontier_ipslot_t ask(const char *ip, uint64_t tok)
{
    frontier_ipslot_t s = {.token = tok};
    snprintf(s.ip, sizeof s.ip, "%s", ip);
    return s;
}

Test(ipgate, an_address_grants_per_ip_slots_and_a_return_frees_one)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    frontier_ipslot_t s[4] = {ask("10.0.0.1", 1), ask("10.0.0.1", 2), ask("10.0.0.1", 3),
                              ask("10.0.0.2", 4)};
    gate(&e, s, 4, 2, 0);
    cr_expect_eq(s[0].wait_ms, 0);
    cr_expect_eq(s[1].wait_ms, 0);
    cr_expect_eq(s[2].wait_ms, -1, "a third slot of one address: every slot held");
    cr_expect_eq(s[3].wait_ms, 0, "another address has its own");
    frontier_ipslot_t again[2] = {ask("10.0.0.1", 2), ask("10.0.0.1", 3)};
    gate(&e, again, 2, 2, 0);
    cr_expect_eq(again[0].wait_ms, 0, "an ask run twice keeps its slot");
    cr_expect_eq(again[1].wait_ms, -1);
    frontier_ipslot_t back[2] = {ask("10.0.0.1", 1), ask("10.0.0.1", 3)};
    back[0].ret = 1;
    gate(&e, back, 2, 2, 0);
    cr_expect_eq(back[1].wait_ms, 0, "a return frees a slot for the next ask");
    env_stop(&e);
}

Test(ipgate, a_gap_spaces_grants_and_returns)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    frontier_ipslot_t s[2] = {ask("10.0.0.9", 1), ask("10.0.0.9", 2)};
    gate(&e, s, 2, 5, 400);
    cr_expect_eq(s[0].wait_ms, 0);
    cr_expect(s[1].wait_ms > 300 && s[1].wait_ms <= 401, "the next grant is the gap away: %d",
              s[1].wait_ms);
    frontier_ipslot_t back = ask("10.0.0.9", 1);
    back.ret = 1;
    gate(&e, &back, 1, 5, 400);
    frontier_ipslot_t next = ask("10.0.0.9", 3);
    gate(&e, &next, 1, 5, 400);
    cr_expect(next.wait_ms > 300 && next.wait_ms <= 401,
              "the next grant is the gap after the return: %d", next.wait_ms);
    env_stop(&e);
}

/* ---- on real crawler processes ------------------------------------------ */

/* Two crawler processes on s with these options more; waits for both. */
static void crawl2(site_t *s, fx_redis_t *r, const char *dir, char *const *extra)
{
    char seeds[600];
    site_seeds(s, dir, seeds, sizeof seeds);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        char log[600];
        char *argv[32] = {CRAWLER_BIN, "crawl",     "--redis", (char *)fx_redis_url(r),
                          "--seeds",   seeds,       "--quiet", "--concurrency",
                          "32",        "--threads", "2"};
        size_t k = 11;
        for (size_t i = 0; extra[i]; i++)
            argv[k++] = extra[i];
        argv[k] = NULL;
        snprintf(log, sizeof log, "%s/log%d", dir, p);
        pid[p] = fx_spawn(argv, NULL, log);
        cr_assert(pid[p] > 0, "%s", fx_error());
    }
    for (int p = 0; p < 2; p++) {
        int rc = fx_wait(pid[p], 150000);
        cr_expect_eq(rc, 0, "crawler %d exited %d", p, rc);
    }
}

/* The most requests one address had in flight at once, of all addresses. */
static unsigned max_per_addr(site_t *s)
{
    unsigned most = 0;
    for (unsigned a = 0; a < ADDRS; a++) {
        unsigned m = fx_http_max_pending(s->h, (int)a);
        most = m > most ? m : most;
    }
    return most;
}

/* 120 hosts of 3 pages (30 ms each) on 2 addresses, robots.txt included,
 * two processes of 32 transfers at --delay 0 --per-host 2: */
static void run_site(site_t *s, fx_redis_t **r, char **dir, char *const *extra)
{
    *s = (site_t){.hosts = HOSTS, .pages = 3, .delay_ms = 30, .slow = -1, .addrs = ADDRS};
    *r = fx_redis_start();
    cr_assert_not_null(*r, "%s", fx_error());
    site_serve(s, site_page);
    *dir = fx_tmpdir();
    cr_assert_not_null(*dir);
    crawl2(s, *r, *dir, extra);
}

static void end_site(site_t *s, fx_redis_t *r, char *dir)
{
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(s->h);
    fx_redis_stop(r);
}

Test(ipgate, two_processes_never_hold_more_than_per_ip_requests_to_one_address, .timeout = 180)
{
    site_t s;
    fx_redis_t *r;
    char *dir;
    char *extra[] = {"--delay", "0", "--per-host", "2", "--per-ip", "2", NULL};
    run_site(&s, &r, &dir, extra);
    fx_http_req_t *log;
    size_t n = fx_http_log(s.h, &log);
    expect_each_page_once(&s, log, n);
    unsigned most = max_per_addr(&s);
    cr_expect_leq(most, 2, "an address had %u requests in flight at once (--per-ip 2)", most);
    fprintf(stderr, "ipgate: --per-ip 2: at most %u in flight on one address, %zu requests\n", most,
            n);
    free(log);
    end_site(&s, r, dir);
}

Test(ipgate, without_per_ip_the_same_crawl_puts_more_on_one_address, .timeout = 180)
{
    site_t s;
    fx_redis_t *r;
    char *dir;
    char *extra[] = {"--delay", "0", "--per-host", "2", NULL};
    run_site(&s, &r, &dir, extra);
    fx_http_req_t *log;
    size_t n = fx_http_log(s.h, &log);
    expect_each_page_once(&s, log, n);
    unsigned most = max_per_addr(&s);
    cr_expect_gt(most, 2, "per-host politeness alone kept an address at %u in flight", most);
    fprintf(stderr, "ipgate: per host only: at most %u in flight on one address\n", most);
    free(log);
    end_site(&s, r, dir);
}

#define GAP_MS 40

Test(ipgate, ip_delay_spaces_every_request_to_an_address_across_processes, .timeout = 180)
{
    site_t s;
    fx_redis_t *r;
    char *dir;
    char gap[16];
    snprintf(gap, sizeof gap, "%d", GAP_MS);
    char *extra[] = {"--delay", "0", "--per-host", "2", "--per-ip", "1", "--ip-delay", gap, NULL};
    run_site(&s, &r, &dir, extra);
    fx_http_req_t *log;
    size_t n = fx_http_log(s.h, &log);
    expect_each_page_once(&s, log, n);
    cr_expect_leq(max_per_addr(&s), 1);
    uint64_t min_gap = UINT64_MAX;
    for (unsigned a = 0; a < ADDRS; a++) {
        uint64_t last_end = 0; /* the log is in arrival order */
        for (size_t k = 0; k < n; k++) {
            if (log[k].host != a)
                continue;
            if (last_end) {
                uint64_t g = log[k].arrived_us > last_end ? log[k].arrived_us - last_end : 0;
                min_gap = g < min_gap ? g : min_gap;
                cr_expect_geq(g, GAP_MS * 1000u, "%s came %.1f ms after the last request ended",
                              log[k].path, (double)g / 1000.0);
            }
            last_end = log[k].answered_us;
        }
    }
    fprintf(stderr, "ipgate: --per-ip 1 --ip-delay %d: shortest gap %.1f ms over %zu requests\n",
            GAP_MS, (double)min_gap / 1000.0, n);
    free(log);
    end_site(&s, r, dir);
}
