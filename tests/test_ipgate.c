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
 * only makes gaps longer and overlaps rarer.  The crawl's map of host
 * addresses (P hostip): what a finish records and a claim hands on, and on
 * real processes that it ends true, even when it began wrong.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>

#include "frontier_env.h"
#include "hosts_site.h"
#include "test_metrics_util.h"

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

/* ---- the crawl's map of host addresses (P hostip) ------------------------- */

static void finish_from(env_t *e, const frontier_item_t *it, const char *ip, const char *link)
{
    frontier_done_t d = {.item = it,
                         .outcome = {.status = 200, .bytes = 1, .ip = ip},
                         .links = &link,
                         .nlinks = link ? 1 : 0,
                         .link_depth = it->depth + 1};
    cr_assert_eq(frontier_finish(e->f, &d, 1), 0);
}

/* Claims the n URLs queued, whichever order they come in: by[i] gets the
 * one whose URL is urls[i]. */
static void claim_all(env_t *e, const char *const *urls, size_t n, frontier_item_t *by)
{
    frontier_item_t got[4];
    size_t k = 0, m;
    while (k < n) {
        cr_assert_eq(claim_wait(e->f, 4, got, &m), FRONTIER_READY);
        for (size_t j = 0; j < m; j++, k++) {
            size_t i = 0;
            while (i < n && strcmp(urls[i], got[j].url))
                i++;
            cr_assert_lt(i, n, "claimed %s", got[j].url);
            by[i] = got[j];
        }
    }
}

static char *hostip(env_t *e, const char *origin)
{
    redisReply *r = redisCommand(e->c, "HGET %shostip %s", e->f->shard[0].prefix, origin);
    cr_assert_not_null(r);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

Test(ipgate, a_finish_records_each_hosts_address_and_a_claim_hands_it_to_the_next_worker)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.host_ip_ms = 60000;
    env_start(&e, &cfg);
    const char *first[] = {"http://a.test/1", "http://b.test/1"};
    seed_urls(e.f, first, 2, 0);
    frontier_item_t it[2];
    claim_all(&e, first, 2, it);
    cr_expect_str_empty(it[0].ip, "nothing known of a host never fetched");
    finish_from(&e, &it[0], "127.0.0.7", "http://a.test/2");
    finish_from(&e, &it[1], NULL, "http://b.test/2");
    char *v = hostip(&e, "http://a.test");
    cr_assert_not_null(v, "a.test's address is in P hostip");
    cr_expect(strstr(v, " 127.0.0.7") != NULL, "P hostip: %s", v);
    free(v);
    cr_expect_null(hostip(&e, "http://b.test"), "a page fetched from no address records none");
    frontier_item_clear(&it[0]);
    frontier_item_clear(&it[1]);

    /* another worker claims a.test's next URL: with the address, as recent as the finish */
    frontier_config_t c2 = cfg;
    c2.worker_id = "other";
    frontier_t *f2 = open_frontier(e.c, e.b, &c2), *mine = e.f;
    cr_assert_not_null(f2);
    e.f = f2;
    const char *second[] = {"http://a.test/2", "http://b.test/2"};
    claim_all(&e, second, 2, it);
    cr_expect_str_eq(it[0].ip, "127.0.0.7");
    cr_expect(it[0].ip_ms > 0 && it[0].ip_ms <= it[0].claimed_ms &&
                  it[0].claimed_ms - it[0].ip_ms < 60000,
              "learned at %llu, claimed at %llu", (unsigned long long)it[0].ip_ms,
              (unsigned long long)it[0].claimed_ms);
    cr_expect_str_empty(it[1].ip);
    /* the map follows what the fetches find: a.test moved */
    finish_from(&e, &it[0], "127.0.0.8", "http://a.test/3");
    finish_from(&e, &it[1], NULL, NULL);
    frontier_item_clear(&it[0]);
    frontier_item_clear(&it[1]);
    const char *third[] = {"http://a.test/3"};
    claim_all(&e, third, 1, it);
    cr_expect_str_eq(it[0].ip, "127.0.0.8", "the last fetch's address is the host's");
    finish_from(&e, &it[0], NULL, "http://a.test/4");
    frontier_item_clear(&it[0]);

    /* an address older than host_ip_ms is not handed out */
    redisReply *r = redisCommand(e.c, "HSET %shostip http://a.test %s", mine->shard[0].prefix,
                                 "1000 127.0.0.8");
    freeReplyObject(r);
    const char *fourth[] = {"http://a.test/4"};
    claim_all(&e, fourth, 1, it);
    cr_expect_str_empty(it[0].ip, "an address recorded long ago is not handed out");
    cr_expect_eq(it[0].ip_ms, 0);
    finish_from(&e, &it[0], NULL, "http://a.test/4x");
    frontier_item_clear(&it[0]);

    /* a value finish.lua never writes (a time of 21 digits): no address, the claim stands */
    r = redisCommand(e.c, "HSET %shostip http://a.test %s", mine->shard[0].prefix,
                     "123456789012345678901 127.0.0.8");
    freeReplyObject(r);
    const char *odd[] = {"http://a.test/4x"};
    claim_all(&e, odd, 1, it);
    cr_expect_str_empty(it[0].ip, "a malformed entry is no address");
    finish_from(&e, &it[0], NULL, "http://a.test/5");
    frontier_item_clear(&it[0]);
    fr_close(f2);

    /* without host_ip_ms: nothing handed out, nothing recorded */
    frontier_config_t c3 = test_config();
    c3.worker_id = "off";
    frontier_t *f3 = open_frontier(e.c, e.b, &c3);
    cr_assert_not_null(f3);
    e.f = f3;
    r = redisCommand(e.c, "HSET %shostip http://a.test %s", mine->shard[0].prefix,
                     "99999999999999 127.0.0.9");
    freeReplyObject(r);
    const char *fifth[] = {"http://a.test/5"};
    claim_all(&e, fifth, 1, it);
    cr_expect_str_empty(it[0].ip, "a worker without per-IP politeness gets no address");
    finish_from(&e, &it[0], "127.0.0.10", NULL);
    frontier_item_clear(&it[0]);
    v = hostip(&e, "http://a.test");
    cr_expect_str_eq(v, "99999999999999 127.0.0.9", "nor does its finish record one");
    free(v);
    fr_close(f3);
    e.f = mine;
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

/* Host h's address on the grid: 127.0.1.<a + 1> (fx_http_start_grid). */
static void addr_of(const site_t *s, unsigned h, char *ip, size_t len)
{
    snprintf(ip, len, "127.0.1.%u", h / (s->hosts / s->addrs) + 1);
}

/* Every host of s has its address in the crawl's map (P hostip), recorded
 * by the finishes of its pages. */
static void expect_map(const site_t *s, fx_redis_t *r)
{
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    for (unsigned h = 0; h < s->hosts; h++) {
        char ip[32], want[40];
        addr_of(s, h, ip, sizeof ip);
        redisReply *v =
            redisCommand(c, "HGET crawler:{default}:hostip %s", fx_http_host_base(s->h, h));
        cr_assert_not_null(v);
        snprintf(want, sizeof want, " %s", ip);
        cr_expect(v->type == REDIS_REPLY_STRING && strstr(v->str, want) &&
                      strlen(strstr(v->str, want)) == strlen(want),
                  "host %u's address in P hostip: %s, not %s", h,
                  v->type == REDIS_REPLY_STRING ? v->str : "(none)", ip);
        freeReplyObject(v);
    }
    redisFree(c);
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
    expect_map(&s, r);
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

/* ---- hosts by name on one address ------------------------------------------
 * NAMED hosts hN.localhost (libcurl resolves every *.localhost name to the
 * loopback address, as RFC 6761 asks), all served by one server on
 * 127.0.0.1: page i of host h links to its next page and to page i of
 * host h + 1.  --ignore-robots, so that every transfer is a page's, which
 * carries what the claim knew of its host's address. */

#define NAMED 30
#define NAMED_PAGES 3

static int named_page(void *ud, const char *path, fx_route_t *out)
{
    const fx_http_t *h = ud;
    static _Thread_local char body[512];
    unsigned host, i;
    char tail;
    if (sscanf(path, "/h%u/p/%u%c", &host, &i, &tail) != 2 || host >= NAMED || i >= NAMED_PAGES)
        return -1;
    unsigned next = (host + 1) % NAMED;
    snprintf(body, sizeof body,
             "<html><body><a href=\"/h%u/p/%u\">n</a> "
             "<a href=\"http://h%u.localhost:%d/h%u/p/%u\">x</a></body></html>",
             host, (i + 1) % NAMED_PAGES, next, fx_http_port(h), next, i);
    *out = (fx_route_t){.body = body, .delay_ms = 20};
    return 0;
}

typedef struct named {
    fx_http_t *h;
    fx_redis_t *r;
    char *dir;
    char seeds[600];
} named_t;

static void named_origin(const named_t *n, unsigned host, char *o, size_t len)
{
    snprintf(o, len, "http://h%u.localhost:%d", host, fx_http_port(n->h));
}

/* Starts the server and Redis; the crawl's map says every host is on ip,
 * learned just now (NULL: the map is left empty). */
static void named_start(named_t *n, const char *ip)
{
    n->h = fx_http_start();
    cr_assert_not_null(n->h, "%s", fx_error());
    fx_http_set_handler(n->h, named_page, n->h);
    n->r = fx_redis_start();
    cr_assert_not_null(n->r, "%s", fx_error());
    n->dir = fx_tmpdir();
    cr_assert_not_null(n->dir);
    snprintf(n->seeds, sizeof n->seeds, "%s/seeds.txt", n->dir);
    FILE *f = fopen(n->seeds, "w");
    cr_assert_not_null(f);
    for (unsigned h = 0; h < NAMED; h++)
        fprintf(f, "http://h%u.localhost:%d/h%u/p/0\n", h, fx_http_port(n->h), h);
    cr_assert_eq(fclose(f), 0);
    if (!ip)
        return;
    redisContext *c = fx_redis_connect(n->r);
    cr_assert_not_null(c);
    redisReply *t = redisCommand(c, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    long long ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    for (unsigned h = 0; h < NAMED; h++) {
        char o[96];
        named_origin(n, h, o, sizeof o);
        char v[80];
        snprintf(v, sizeof v, "%lld %s", ms, ip); /* (one argument: a value, not the format) */
        redisReply *x = redisCommand(c, "HSET crawler:{default}:hostip %s %s", o, v);
        cr_assert(x && x->type == REDIS_REPLY_INTEGER);
        freeReplyObject(x);
    }
    redisFree(c);
}

/* One crawler process with --per-ip per (and --wait, serving /metrics on
 * mport) until every page was fetched; its crawler_ip_probes_total. */
static double named_crawl(named_t *n, const char *per)
{
    int mport = fx_free_port();
    cr_assert_gt(mport, 0);
    char maddr[32], log[700];
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", mport);
    snprintf(log, sizeof log, "%s/log", n->dir);
    char *argv[] = {CRAWLER_BIN, "crawl",     "--redis",       (char *)fx_redis_url(n->r),
                    "--seeds",   n->seeds,    "--quiet",       "--ignore-robots",
                    "--delay",   "0",         "--per-host",    "2",
                    "--per-ip",  (char *)per, "--concurrency", "16",
                    "--wait",    "--metrics", maddr,           NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert_gt(pid, 0, "%s", fx_error());
    double probes = NAN, fin = 0;
    for (int i = 0; i < 1200 && fin < NAMED * NAMED_PAGES; i++) { /* (bounded: 60 s) */
        usleep(50000);
        long st = 0;
        char *t = scrape(mport, &st);
        if (st == 200) {
            fin = sample(t, "crawler_pages_finished_total");
            probes = sample(t, "crawler_ip_probes_total");
        }
        free(t);
    }
    cr_expect_eq(fin, NAMED * NAMED_PAGES, "pages finished: %g", fin);
    kill(pid, SIGTERM);
    cr_expect_eq(fx_wait(pid, 60000), 0);
    return probes;
}

/* Every page was requested once. */
static void named_expect_once(const named_t *n)
{
    fx_http_req_t *log;
    size_t k = fx_http_log(n->h, &log);
    unsigned hits[NAMED][NAMED_PAGES] = {{0}};
    for (size_t j = 0; j < k; j++) {
        unsigned h, i;
        char tail;
        if (sscanf(log[j].path, "/h%u/p/%u%c", &h, &i, &tail) == 2 && h < NAMED && i < NAMED_PAGES)
            hits[h][i]++;
        else
            cr_expect_fail("unexpected request %s", log[j].path);
    }
    for (unsigned h = 0; h < NAMED; h++)
        for (unsigned i = 0; i < NAMED_PAGES; i++)
            cr_expect_eq(hits[h][i], 1, "h%u.localhost/h%u/p/%u requested %u times", h, h, i,
                         hits[h][i]);
    free(log);
}

/* Every host's address in the map is 127.0.0.1. */
static void named_expect_map(const named_t *n)
{
    redisContext *c = fx_redis_connect(n->r);
    cr_assert_not_null(c);
    for (unsigned h = 0; h < NAMED; h++) {
        char o[96];
        named_origin(n, h, o, sizeof o);
        redisReply *v = redisCommand(c, "HGET crawler:{default}:hostip %s", o);
        const char *sp = v && v->type == REDIS_REPLY_STRING ? strchr(v->str, ' ') : NULL;
        cr_expect(sp && !strcmp(sp + 1, "127.0.0.1"), "%s's address in P hostip: %s", o,
                  v && v->type == REDIS_REPLY_STRING ? v->str : "(none)");
        freeReplyObject(v);
    }
    redisFree(c);
}

static void named_stop(named_t *n)
{
    fx_rmtree(n->dir);
    free(n->dir);
    fx_http_stop(n->h);
    fx_redis_stop(n->r);
}

Test(ipgate, a_fresh_crawl_stops_at_dns_answers_and_fills_the_map, .timeout = 120)
{
    named_t n;
    named_start(&n, NULL);
    double probes = named_crawl(&n, "2");
    named_expect_once(&n);
    named_expect_map(&n);
    cr_expect(probes >= 1, "the first request to an unknown host stops at its DNS answer: %g",
              probes);
    cr_expect_leq(fx_http_max_pending(n.h, 0), 2);
    fprintf(stderr, "ipgate: %d named hosts, %d pages: %g probes\n", NAMED, NAMED * NAMED_PAGES,
            probes);
    named_stop(&n);
}

/* What another worker learned: a process whose every host is in the
 * crawl's map asks for its address's slot before it connects, never
 * stopping at a DNS answer first. */
Test(ipgate, a_worker_takes_the_address_the_crawl_knows_without_a_probe, .timeout = 120)
{
    named_t n;
    named_start(&n, "127.0.0.1");
    double probes = named_crawl(&n, "2");
    named_expect_once(&n);
    named_expect_map(&n);
    cr_expect_eq(probes, 0, "requests that stopped at their DNS answer: %g", probes);
    cr_expect_leq(fx_http_max_pending(n.h, 0), 2);
    named_stop(&n);
}

/* The map says, fresh, that every host is on an address none is on: each
 * transfer asks for that address's slot, is stopped at the one its
 * connection finds and asks again for that one; every page is fetched
 * once, the budget holds on the true address and the map ends true. */
Test(ipgate, a_wrong_map_is_corrected_by_the_address_the_connection_finds, .timeout = 120)
{
    named_t n;
    named_start(&n, "127.0.0.200");
    double probes = named_crawl(&n, "1");
    named_expect_once(&n);
    named_expect_map(&n);
    unsigned most = fx_http_max_pending(n.h, 0);
    cr_expect_leq(most, 1, "%u requests in flight at once on 127.0.0.1 (--per-ip 1)", most);
    cr_expect_eq(probes, 0,
                 "%g requests stopped at a DNS answer with no address in hand: the "
                 "map was not taken at its word",
                 probes);
    fprintf(stderr, "ipgate: a wrong map: %g probes, at most %u in flight\n", probes, most);
    named_stop(&n);
}
