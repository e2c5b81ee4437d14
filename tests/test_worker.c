/*
 * The three parts of a worker thread, each driven alone the way engine.c
 * drives it: the robots gate against a real redis-server (two gates on one
 * Redis are two workers), the transfers against the HTTP fixture, the
 * finisher against a real frontier.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bloom.h"
#include "cli.h"
#include "config.h"
#include "fetch.h"
#include "finisher.h"
#include "outputs.h"
#include "fixtures.h"
#include "gate_env.h"
#include "frontier.h"
#include "jsonl.h"
#include "rconn.h"
#include "robotsgate.h"
#include "scope.h"

#define RULES "User-agent: *\nDisallow: /private/\n"

static void wk_open(wk_t *w, fx_redis_t *r, const crawl_config_t *cfg)
{
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = cfg->crawl;
    fc.delay_ms = 0;
    fc.per_host = 8;
    fc.max_tries = cfg->max_tries;
    wk_open_with(w, r, cfg, &fc);
}

static void test_config(crawl_config_t *cfg)
{
    cli_crawl_defaults(cfg);
    cfg->crawl = "worker-test";
    cfg->delay_ms = 0;
}

/* A redis-server and two workers a and b of one crawl on it (cfg must
 * outlive them); two_close stops all three. */
static fx_redis_t *two_workers(const crawl_config_t *cfg, wk_t *a, wk_t *b)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    wk_open(a, r, cfg);
    wk_open(b, r, cfg);
    return r;
}

static void two_close(fx_redis_t *r, wk_t *a, wk_t *b)
{
    wk_close(b);
    wk_close(a);
    fx_redis_stop(r);
}

static frontier_item_t item_of(const char *url)
{
    frontier_item_t it = {.url = strdup(url), .lease = strdup("no-lease")};
    cr_assert(it.url && it.lease);
    return it;
}

/* Checks url; returns the verdict (the item is cleared unless parked). */
static robotsgate_verdict_t check(robotsgate_t *g, const char *url)
{
    frontier_item_t it = item_of(url);
    robotsgate_verdict_t v = ROBOTSGATE_WAIT;
    cr_expect_eq(robotsgate_check(g, &it, &v), 0, "check %s failed", url);
    if (v == ROBOTSGATE_WAIT)
        cr_expect_null(it.url, "%s parked but not taken", url);
    frontier_item_clear(&it);
    return v;
}

static void expect_ready(robotsgate_t *g, const char *url, robotsgate_verdict_t want)
{
    frontier_item_t it;
    robotsgate_verdict_t v;
    cr_assert_eq(robotsgate_next_ready(g, &it, &v), 1, "%s not ready", url);
    cr_expect_str_eq(it.url, url);
    cr_expect_eq(v, want, "%s: verdict %d, want %d", url, v, want);
    frontier_item_clear(&it);
}

static int fetched(robotsgate_t *g, const char *origin, long status, int blocked, const char *body)
{
    robotsgate_body_t b = {.origin = origin,
                           .status = status,
                           .complete = 1,
                           .blocked = blocked,
                           .body = body,
                           .len = strlen(body)};
    return robotsgate_fetched(g, &b);
}

/* Polls g until it waits for nobody (bounded); *fetch: the fetch it asks
 * for then (it took one over), or NULL (the rules appeared). */
static void poll_until_settled(robotsgate_t *g, const char **fetch)
{
    uint64_t deadline = fx_now_ms() + 10000;
    while (robotsgate_polling(g) && fx_now_ms() < deadline) {
        cr_assert_eq(robotsgate_poll(g), 0);
        usleep(10000);
    }
    cr_assert_eq(robotsgate_polling(g), 0, "still waiting for another worker");
    *fetch = robotsgate_next_fetch(g);
}

Test(robotsgate, first_url_of_an_origin_waits_for_one_fetch_then_all_are_settled)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a;
    wk_open(&a, r, &cfg);
    cr_expect_eq(check(a.g, "http://a.example/x"), ROBOTSGATE_WAIT);
    const char *o = robotsgate_next_fetch(a.g);
    cr_assert_not_null(o, "no robots.txt fetch asked for");
    cr_expect_str_eq(o, "http://a.example");
    cr_expect_null(robotsgate_next_fetch(a.g), "a second fetch asked for");
    cr_expect_eq(check(a.g, "http://a.example/private/y"), ROBOTSGATE_WAIT);
    cr_expect_null(robotsgate_next_fetch(a.g), "a second fetch for the same origin");
    cr_expect_eq(robotsgate_parked(a.g), 2);
    cr_expect_eq(fetched(a.g, "http://a.example", 200, 0, RULES), 0);
    cr_expect_eq(robotsgate_parked(a.g), 0);
    expect_ready(a.g, "http://a.example/x", ROBOTSGATE_ALLOW);
    expect_ready(a.g, "http://a.example/private/y", ROBOTSGATE_DENY);
    frontier_item_t it;
    robotsgate_verdict_t v;
    cr_expect_eq(robotsgate_next_ready(a.g, &it, &v), 0);
    /* known now: answered at once */
    cr_expect_eq(check(a.g, "http://a.example/private/z"), ROBOTSGATE_DENY);
    cr_expect_eq(check(a.g, "http://a.example/b"), ROBOTSGATE_ALLOW);
    cr_expect_null(robotsgate_next_fetch(a.g));
    wk_close(&a);
    fx_redis_stop(r);
}

/* --sitemaps: the Sitemap: URLs of a robots.txt are seeded through the
 * frontier, but their hosts are not seed hosts (a sitemap on another host in
 * scope must not widen --scope host or lift the private-address guard). */
Test(robotsgate, sitemaps_are_seeded_without_becoming_seed_hosts)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    cfg.sitemaps = 1;
    cfg.scope = SCOPE_ANY;
    wk_t a;
    wk_open(&a, r, &cfg);
    cr_expect_eq(check(a.g, "http://a.example/x"), ROBOTSGATE_WAIT);
    cr_assert_not_null(robotsgate_next_fetch(a.g));
    cr_expect_eq(fetched(a.g, "http://a.example", 200, 0,
                         "User-agent: *\nDisallow:\nSitemap: http://maps.example/s.xml\n"),
                 0);
    expect_ready(a.g, "http://a.example/x", ROBOTSGATE_ALLOW);
    redisReply *q = fx_redis_queue(a.rc, "crawler:{worker-test}:", "http://maps.example");
    cr_assert(q && q->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(q->elements, 1, "the sitemap URL was not seeded");
    freeReplyObject(q);
    char **hosts = NULL;
    size_t n = 0;
    cr_assert_eq(frontier_seed_hosts(a.f, &hosts, &n), 0);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_neq(hosts[i], "maps.example", "a sitemap's host became a seed host");
        free(hosts[i]);
    }
    free(hosts);
    wk_close(&a);
    fx_redis_stop(r);
}

Test(robotsgate, rules_one_worker_fetched_answer_another_from_redis)
{
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    fx_redis_t *r = two_workers(&cfg, &a, &b);
    cr_expect_eq(check(a.g, "http://a.example/x"), ROBOTSGATE_WAIT);
    cr_assert_not_null(robotsgate_next_fetch(a.g));
    /* b comes while a fetches: it waits for a, and asks for no fetch */
    cr_expect_eq(check(b.g, "http://a.example/private/1"), ROBOTSGATE_WAIT);
    cr_expect_eq(check(b.g, "http://a.example/2"), ROBOTSGATE_WAIT);
    cr_expect_null(robotsgate_next_fetch(b.g), "b fetches although a holds the lock");
    cr_expect_eq(robotsgate_polling(b.g), 1);
    cr_expect_eq(fetched(a.g, "http://a.example", 200, 0, RULES), 0);
    expect_ready(a.g, "http://a.example/x", ROBOTSGATE_ALLOW);
    const char *o;
    poll_until_settled(b.g, &o);
    cr_expect_null(o, "b fetched robots.txt itself");
    expect_ready(b.g, "http://a.example/private/1", ROBOTSGATE_DENY);
    expect_ready(b.g, "http://a.example/2", ROBOTSGATE_ALLOW);
    /* a third worker finds them in Redis at once */
    wk_t c;
    wk_open(&c, r, &cfg);
    cr_expect_eq(check(c.g, "http://a.example/private/3"), ROBOTSGATE_DENY);
    cr_expect_null(robotsgate_next_fetch(c.g));
    wk_close(&c);
    two_close(r, &a, &b);
}

Test(robotsgate, a_fetch_whose_lock_expired_is_taken_over)
{
    crawl_config_t cfg;
    test_config(&cfg);
    cfg.timeout_ms = 100; /* the lock lasts timeout + connect timeout */
    cfg.connect_timeout_ms = 100;
    wk_t a, b;
    fx_redis_t *r = two_workers(&cfg, &a, &b);
    cr_expect_eq(check(a.g, "http://a.example/x"), ROBOTSGATE_WAIT);
    cr_assert_not_null(robotsgate_next_fetch(a.g)); /* and a never answers */
    cr_expect_eq(check(b.g, "http://a.example/y"), ROBOTSGATE_WAIT);
    cr_expect_null(robotsgate_next_fetch(b.g));
    const char *o;
    poll_until_settled(b.g, &o);
    cr_assert_not_null(o, "b never took the fetch over");
    cr_expect_str_eq(o, "http://a.example");
    frontier_item_t it;
    robotsgate_verdict_t v;
    cr_expect_eq(robotsgate_next_ready(b.g, &it, &v), 0, "a URL came out before its rules");
    cr_expect_eq(fetched(b.g, "http://a.example", 404, 0, ""), 0);
    expect_ready(b.g, "http://a.example/y", ROBOTSGATE_ALLOW);
    two_close(r, &a, &b);
}

Test(robotsgate, unavailable_robots_means_retry_for_every_worker)
{
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    fx_redis_t *r = two_workers(&cfg, &a, &b);
    cr_expect_eq(check(a.g, "http://a.example/x"), ROBOTSGATE_WAIT);
    cr_assert_not_null(robotsgate_next_fetch(a.g));
    cr_expect_eq(fetched(a.g, "http://a.example", 503, 0, "busy"), 0);
    expect_ready(a.g, "http://a.example/x", ROBOTSGATE_RETRY);
    cr_expect_eq(check(a.g, "http://a.example/y"), ROBOTSGATE_RETRY);
    cr_expect_eq(check(b.g, "http://a.example/z"), ROBOTSGATE_RETRY);
    cr_expect_null(robotsgate_next_fetch(b.g));
    /* the cause travels with the rules: b's record says what a met */
    robotsgate_cause_t c;
    robotsgate_cause(b.g, "http://a.example/z", &c);
    cr_expect_str_eq(c.kind, "http-5xx");
    cr_expect_eq(c.status, 503);
    cr_expect_str_eq(c.text, "robots.txt answered HTTP 503");
    two_close(r, &a, &b);
}

Test(robotsgate, blocked_or_unstartable_fetch_allows_and_is_not_shared)
{
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a, b;
    fx_redis_t *r = two_workers(&cfg, &a, &b);
    cr_expect_eq(check(a.g, "http://a.example/private/x"), ROBOTSGATE_WAIT);
    cr_assert_not_null(robotsgate_next_fetch(a.g));
    cr_expect_eq(fetched(a.g, "http://a.example", 0, 1, ""), 0);
    expect_ready(a.g, "http://a.example/private/x", ROBOTSGATE_ALLOW);
    /* not stored for the others, and the lock was released: b fetches */
    cr_expect_eq(check(b.g, "http://a.example/1"), ROBOTSGATE_WAIT);
    const char *o = robotsgate_next_fetch(b.g);
    cr_assert_not_null(o, "b did not fetch");
    cr_expect_eq(robotsgate_unfetched(b.g, o), 0);
    expect_ready(b.g, "http://a.example/1", ROBOTSGATE_ALLOW);
    cr_expect_eq(check(b.g, "http://a.example/private/2"), ROBOTSGATE_ALLOW);
    two_close(r, &a, &b);
}

Test(robotsgate, parked_urls_are_handed_back_by_origin_and_ignore_robots_allows_all)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    crawl_config_t cfg;
    test_config(&cfg);
    wk_t a;
    wk_open(&a, r, &cfg);
    cr_expect_eq(check(a.g, "http://a.example/1"), ROBOTSGATE_WAIT);
    cr_expect_eq(check(a.g, "http://b.example/1"), ROBOTSGATE_WAIT);
    cr_expect_eq(check(a.g, "http://a.example/2"), ROBOTSGATE_WAIT);
    cr_expect_eq(robotsgate_parked(a.g), 3);
    size_t total = 0, calls = 0, n;
    frontier_item_t *items;
    while (robotsgate_take_parked(a.g, &items, &n)) {
        calls++;
        total += n;
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&items[i]);
        free(items);
    }
    cr_expect_eq(calls, 2, "%zu batches (one per origin)", calls);
    cr_expect_eq(total, 3);
    cr_expect_eq(robotsgate_parked(a.g), 0);
    wk_close(&a);
    cfg.ignore_robots = 1;
    wk_open(&a, r, &cfg);
    cr_expect_eq(check(a.g, "http://c.example/private/1"), ROBOTSGATE_ALLOW);
    cr_expect_null(robotsgate_next_fetch(a.g));
    wk_close(&a);
    fx_redis_stop(r);
}

/* ---- the transfers ------------------------------------------------------------ */

typedef struct fx {
    fx_http_t *h;
    crawl_config_t cfg;
    scope_t *scope;
    fetch_t *f;
} fx_t;

static void fx_open(fx_t *x, int seed_host, int record)
{
    char err[256];
    cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    x->h = fx_http_start();
    cr_assert_not_null(x->h, "%s", fx_error());
    test_config(&x->cfg);
    scope_config_t sc = config_scope(&x->cfg);
    x->scope = scope_new(&sc, err, sizeof err);
    cr_assert_not_null(x->scope, "%s", err);
    const char *hosts[] = {"127.0.0.1"};
    if (seed_host)
        cr_assert_eq(scope_set_seed_hosts(x->scope, hosts, 1), 0);
    x->f = fetch_new(&x->cfg, 64, 64, NULL, NULL, x->scope, record, err, sizeof err);
    cr_assert_not_null(x->f, "%s", err);
}

static void fx_close(fx_t *x)
{
    fetch_free(x->f);
    scope_free(x->scope);
    fx_http_stop(x->h);
    curl_global_cleanup();
}

static void start(fx_t *x, const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", fx_http_base(x->h), path);
    frontier_item_t it = item_of(url);
    cr_assert_eq(fetch_start_page(x->f, &it), 0);
    cr_expect_null(it.url, "the transfer did not take the item");
}

/* The next result (bounded wait). */
static void next(fx_t *x, fetch_result_t *r)
{
    uint64_t deadline = fx_now_ms() + 20000;
    while (fx_now_ms() < deadline) {
        fetch_perform(x->f);
        if (fetch_next(x->f, r))
            return;
        fetch_wait(x->f, NULL, 50);
    }
    cr_assert_fail("no transfer finished");
}

Test(fetch, page_result_has_status_type_and_links_in_scope_once)
{
    fx_t x;
    fx_open(&x, 1, 0);
    fx_http_page(x.h, "/",
                 "<a href=/a>a</a><a href=/a>again</a><a href=b>b</a>"
                 "<a href=http://offsite.example/>off</a>");
    start(&x, "/");
    cr_expect_eq(fetch_active(x.f), 1);
    fetch_result_t r;
    next(&x, &r);
    cr_expect_eq(fetch_active(x.f), 0);
    cr_assert_eq(r.kind, FETCH_PAGE);
    cr_expect_eq(r.page.status, 200);
    cr_expect_eq(r.retry, 0);
    cr_expect_null(r.page.error_kind, "error %s", r.page.error_kind);
    cr_expect(r.page.ctype && strstr(r.page.ctype, "text/html"));
    cr_expect_eq(r.page.link_depth, 1);
    cr_expect_null(r.exchange, "an exchange although not recording");
    cr_assert_eq(r.page.nlinks, 2, "%zu links", r.page.nlinks);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/a", fx_http_base(x.h));
    snprintf(b, sizeof b, "%s/b", fx_http_base(x.h));
    cr_expect_str_eq(r.page.links[0], a);
    cr_expect_str_eq(r.page.links[1], b);
    page_clear(&r.page);
    fx_close(&x);
}

Test(fetch, failures_say_whether_a_retry_is_worth_it)
{
    static const struct {
        int status;
        const char *kind;
        int retry;
    } cases[] = {{503, "http-5xx", 1}, {429, "http-429", 1}, {404, NULL, 0}};
    fx_t x;
    fx_open(&x, 1, 0);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[32];
        snprintf(path, sizeof path, "/s%d", cases[i].status);
        fx_http_set(
            x.h, path,
            &(fx_route_t){.status = cases[i].status, .body = "x", .headers = "Retry-After: 7\n"});
        start(&x, path);
        fetch_result_t r;
        next(&x, &r);
        cr_expect_eq(r.page.status, cases[i].status);
        cr_expect_eq(r.retry, cases[i].retry, "status %d: retry %d", cases[i].status, r.retry);
        if (cases[i].kind)
            cr_expect(r.page.error_kind && !strcmp(r.page.error_kind, cases[i].kind),
                      "status %d: kind %s", cases[i].status, r.page.error_kind);
        else
            cr_expect_null(r.page.error_kind, "status %d: kind %s", cases[i].status,
                           r.page.error_kind);
        cr_expect_eq(r.retry_after_ms, 7000, "status %d: Retry-After %u", cases[i].status,
                     r.retry_after_ms);
        page_clear(&r.page);
    }
    fx_close(&x);
}

Test(fetch, a_loopback_host_that_is_no_seed_host_is_blocked)
{
    fx_t x;
    fx_open(&x, 0, 0);
    fx_http_page(x.h, "/", "never read");
    start(&x, "/");
    fetch_result_t r;
    next(&x, &r);
    cr_expect(r.page.error_kind && !strcmp(r.page.error_kind, "blocked"), "kind %s",
              r.page.error_kind);
    cr_expect_eq(r.retry, 0);
    cr_expect_eq(fx_http_total(x.h), 0, "the guard let a request through");
    page_clear(&r.page);
    cr_assert_eq(fetch_start_robots(x.f, fx_http_base(x.h)), 0);
    next(&x, &r);
    cr_assert_eq(r.kind, FETCH_ROBOTS);
    cr_expect_eq(r.blocked, 1);
    fx_close(&x);
}

Test(fetch, robots_result_carries_origin_status_and_body)
{
    fx_t x;
    fx_open(&x, 1, 0);
    fx_http_set(x.h, "/robots.txt", &(fx_route_t){.content_type = "text/plain", .body = RULES});
    cr_assert_eq(fetch_start_robots(x.f, fx_http_base(x.h)), 0);
    fetch_result_t r;
    next(&x, &r);
    cr_assert_eq(r.kind, FETCH_ROBOTS);
    cr_expect_str_eq(r.origin, fx_http_base(x.h));
    cr_expect_eq(r.status, 200);
    cr_expect_eq(r.complete, 1);
    cr_expect_eq(r.blocked, 0);
    cr_expect_eq(r.body_len, strlen(RULES));
    cr_expect_str_eq(r.body, RULES);
    fx_close(&x);
}

Test(fetch, recording_gives_the_exchange_and_cancel_hands_back_the_item)
{
    fx_t x;
    fx_open(&x, 1, 1);
    fx_http_page(x.h, "/", "<p>hello</p>");
    fx_http_set(x.h, "/slow", &(fx_route_t){.body = "late", .delay_ms = 10000});
    start(&x, "/");
    fetch_result_t r;
    next(&x, &r);
    cr_assert_not_null(r.exchange, "no exchange while recording");
    cr_expect(r.exchange->request && !strncmp(r.exchange->request, "GET / ", 6));
    cr_expect(r.exchange->response_head_len > 0);
    cr_expect_eq(r.exchange->body_len, strlen("<p>hello</p>"));
    cr_expect_not_null(r.exchange->ip);
    page_clear(&r.page);
    start(&x, "/slow");
    frontier_item_t it;
    cr_assert_eq(fetch_cancel(x.f, &it), 1);
    cr_expect(it.url && strstr(it.url, "/slow"), "cancelled %s", it.url);
    frontier_item_clear(&it);
    cr_expect_eq(fetch_cancel(x.f, &it), 0);
    cr_expect_eq(fetch_active(x.f), 0);
    fx_close(&x);
}

/* ---- the finisher ---------------------------------------------------------------- */

typedef struct fin {
    fx_redis_t *r;
    rconn_t *rconn;
    crawl_config_t cfg;
    wk_t w;
    finisher_common_t *common;
    finisher_t *fin;
    out_t *out;
    char *dir, path[512];
} fin_t;

static void fin_open(fin_t *t, uint32_t max_tries)
{
    char err[256];
    t->r = fx_redis_start();
    cr_assert_not_null(t->r, "%s", fx_error());
    t->rconn = rconn_open_url(fx_redis_url(t->r), NULL, NULL, err, sizeof err);
    cr_assert_not_null(t->rconn, "%s", err);
    test_config(&t->cfg);
    t->cfg.max_tries = max_tries;
    wk_open(&t->w, t->r, &t->cfg);
    t->dir = fx_tmpdir();
    snprintf(t->path, sizeof t->path, "%s/out.jsonl", t->dir);
    t->out = out_open(t->path, err, sizeof err);
    cr_assert_not_null(t->out, "%s", err);
    t->common = finisher_common_new(&(outputs_t){.out = t->out});
    cr_assert_not_null(t->common);
    t->fin = finisher_new(t->common, &t->cfg, t->w.f);
    cr_assert_not_null(t->fin);
}

static char *fin_close(fin_t *t)
{
    finisher_free(t->fin);
    finisher_common_free(t->common);
    cr_expect_eq(out_close(t->out), 0);
    char *lines = fx_read_file(t->path, NULL);
    wk_close(&t->w);
    rconn_close(t->rconn);
    fx_rmtree(t->dir);
    free(t->dir);
    fx_redis_stop(t->r);
    return lines;
}

/* Seeds urls and claims them all into items. */
static void seed_and_claim(fin_t *t, const char *const *urls, size_t n, frontier_item_t *items)
{
    size_t added = 0, got = 0;
    cr_assert_eq(frontier_seed(t->w.f, urls, n, 0, &added), 0);
    cr_assert_eq(added, n);
    frontier_state_t st;
    uint64_t deadline = fx_now_ms() + 10000;
    while (got < n && fx_now_ms() < deadline) {
        size_t k = 0;
        cr_assert_eq(frontier_claim(t->w.f, n - got, items + got, &k, &st, NULL), 0);
        got += k;
    }
    cr_assert_eq(got, n, "claimed %zu of %zu", got, n);
}

static frontier_stats_t stats(fin_t *t)
{
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(t->w.rc, t->cfg.crawl, &st), 0);
    return st;
}

Test(finisher, pages_go_out_as_one_batch_and_each_gets_its_record)
{
    fin_t t;
    fin_open(&t, 3);
    const char *urls[] = {"http://a.example/1", "http://a.example/2"};
    frontier_item_t items[2];
    seed_and_claim(&t, urls, 2, items);
    for (int i = 0; i < 2; i++) {
        page_t p;
        page_init(&p, &items[i], 200, NULL, NULL);
        if (i == 0) {
            p.links = calloc(2, sizeof *p.links);
            cr_assert_not_null(p.links);
            p.links[0] = strdup("http://a.example/3");
            p.links[1] = strdup("http://a.example/2"); /* seen: not new */
            p.nlinks = 2;
        }
        cr_assert_eq(finisher_add(t.fin, &p, NULL), 0);
        cr_expect_null(p.item.url, "the page was not taken");
    }
    cr_expect_eq(finisher_queued(t.fin), 2);
    size_t pages = 0, n = 0;
    cr_assert_eq(finisher_flush(t.fin, 0, &pages), 0);
    cr_expect_eq(finisher_queued(t.fin), 0);
    cr_expect(finisher_busy(t.fin), "no batch in flight after a flush");
    /* output before acknowledgement: the lines are on file once the batch is sent */
    char *sent = fx_read_file(t.path, NULL);
    cr_expect(sent && strstr(sent, "\"url\":\"http://a.example/1\"") &&
                  strstr(sent, "\"url\":\"http://a.example/2\""),
              "records on file when the batch went out:\n%s", sent ? sent : "");
    free(sent);
    uint64_t deadline = fx_now_ms() + 10000;
    while (!pages && fx_now_ms() < deadline) {
        rconn_link_poll(fr_link_of(t.w.f)); /* (the thread's loop does it) */
        cr_assert_eq(finisher_complete(t.fin, 0, &n), 0);
        pages += n;
        usleep(1000);
    }
    cr_expect_eq(pages, 2, "%zu pages finished", pages);
    cr_expect(!finisher_busy(t.fin));
    frontier_stats_t st = stats(&t);
    cr_expect_eq(st.fetched, 2);
    cr_expect_eq(st.in_flight, 0);
    cr_expect_eq(st.queued, 1, "%llu queued", (unsigned long long)st.queued);
    char *lines = fin_close(&t);
    cr_assert_not_null(lines);
    cr_expect(strstr(lines, "\"url\":\"http://a.example/1\"") &&
                  strstr(lines, "\"links_found\":2,"),
              "records:\n%s", lines);
    cr_expect(strstr(lines, "\"url\":\"http://a.example/2\""), "records:\n%s", lines);
    free(lines);
}

Test(finisher, a_retry_on_the_last_try_is_dead_lettered_and_recorded)
{
    fin_t t;
    fin_open(&t, 1);
    const char *urls[] = {"http://a.example/1"};
    frontier_item_t item;
    seed_and_claim(&t, urls, 1, &item);
    page_t p;
    page_init(&p, &item, 503, "http-5xx", NULL);
    int dead = 0;
    cr_assert_eq(finisher_retry(t.fin, &p, 0, &dead), 0);
    cr_expect_eq(dead, 1);
    cr_expect_null(p.item.url, "the page was not taken");
    size_t pages = 0;
    cr_assert_eq(finisher_flush(t.fin, 1, &pages), 0);
    frontier_stats_t st = stats(&t);
    cr_expect_eq(st.dead, 1);
    cr_expect_eq(st.in_flight, 0);
    char *lines = fin_close(&t);
    cr_expect(lines && strstr(lines, "\"status\":503") &&
                  strstr(lines, "\"error_kind\":\"http-5xx\""),
              "records:\n%s", lines ? lines : "");
    free(lines);
}

/* A robots.txt redirect to the same origin is a second request to that
 * host: with --delay it waits the delay before its hop starts (the server
 * sees the two requests at least the delay apart; a lower bound on time
 * only), without a delay it goes at once. */
Test(fetch, a_robots_redirect_to_the_same_origin_waits_the_delay)
{
    static const uint32_t DELAYS[] = {300, 0};
    for (size_t c = 0; c < sizeof DELAYS / sizeof *DELAYS; c++) {
        fx_t x;
        fx_open(&x, 1, 0);
        x.cfg.delay_ms = DELAYS[c]; /* the fetch reads its cfg when a hop starts */
        char loc[128];
        snprintf(loc, sizeof loc, "%s/robots2.txt", fx_http_base(x.h));
        fx_http_redirect(x.h, "/robots.txt", 301, loc);
        fx_http_set(x.h, "/robots2.txt",
                    &(fx_route_t){.content_type = "text/plain", .body = RULES});
        cr_assert_eq(fetch_start_robots(x.f, fx_http_base(x.h)), 0);
        fetch_result_t r;
        next(&x, &r);
        cr_assert_eq(r.kind, FETCH_ROBOTS);
        cr_expect_eq(r.status, 200, "delay %u: the redirect was not followed", DELAYS[c]);
        cr_expect_str_eq(r.body, RULES);
        fx_http_req_t *log;
        size_t n = fx_http_log(x.h, &log);
        cr_assert_eq(n, 2, "delay %u: %zu requests", DELAYS[c], n);
        uint64_t gap_ms = (log[1].arrived_us - log[0].arrived_us) / 1000;
        cr_expect_geq(gap_ms, DELAYS[c], "delay %u: the hop came %llu ms after robots.txt",
                      DELAYS[c], (unsigned long long)gap_ms);
        free(log);
        fx_close(&x);
    }
}
