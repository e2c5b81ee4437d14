/*
 * Every fetch path behind the same guard (issue 14): robots.txt redirects
 * pass the scope's host rules and the private-address guard hop by hop,
 * sitemap <loc> URLs the scope, and page redirects count one level deeper
 * and at most --max-redirects hops in a row, the hop count carried in the
 * queue entry through Redis.  Real processes: the crawler binary, a
 * redis-server, the HTTP fixture on 127.0.0.1 and, for a private address
 * that is not the seed host, a tiny counting server of its own on
 * 127.0.0.2.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#include "scope.h"
#include "side.h"

/* ---- a counting server on 127.0.0.2 (the fixture binds 127.0.0.1 only) ---- */

typedef struct tiny {
    int fd, port;
    atomic_int stop;
    atomic_uint hits;
    pthread_t th;
    const char *body; /* answered to every request, 200 text/plain */
} tiny_t;

static void tiny_answer(tiny_t *t, int c)
{
    char req[4096];
    size_t got = 0;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (got < sizeof req - 1) { /* the request head, bounded */
        ssize_t n = read(c, req + got, sizeof req - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    atomic_fetch_add(&t->hits, 1);
    char resp[1024];
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     strlen(t->body), t->body);
    if (n > 0 && write(c, resp, (size_t)n) < 0)
        cr_log_warn("tiny server: write failed");
}

static void *tiny_loop(void *ud)
{
    tiny_t *t = ud;
    while (!atomic_load(&t->stop)) {
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int c = accept(t->fd, NULL, NULL);
        if (c < 0)
            continue;
        tiny_answer(t, c);
        close(c);
    }
    return NULL;
}

static void tiny_start(tiny_t *t, const char *body)
{
    memset(t, 0, sizeof *t);
    t->body = body;
    t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(t->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(0x7f000002); /* 127.0.0.2 */
    socklen_t al = sizeof a;
    cr_assert_eq(bind(t->fd, (struct sockaddr *)&a, sizeof a), 0, "cannot bind 127.0.0.2");
    cr_assert_eq(listen(t->fd, 16), 0);
    cr_assert_eq(getsockname(t->fd, (struct sockaddr *)&a, &al), 0);
    t->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&t->th, NULL, tiny_loop, t), 0);
}

static void tiny_stop(tiny_t *t)
{
    atomic_store(&t->stop, 1);
    pthread_join(t->th, NULL);
    close(t->fd);
}

/* ---- one crawl on the fixture ---------------------------------------------- */

typedef crawl_env_t site_t;

static void site_start(site_t *s, const char *seed_path)
{
    crawl_env_start(s, NULL, seed_path);
}

/* Runs a crawl with extra options (NULL-terminated; --delay 0 unless they
 * give one); a crawl that does not end within 30 s is killed (-2). */
static int site_crawl(site_t *s, const char *const extra[])
{
    char *argv[64] = {CRAWLER_BIN, "crawl",           "--redis", (char *)fx_redis_url(s->r),
                      "--seeds",   s->seeds,          "--out",   s->out,
                      "--quiet",   "--retry-backoff", "50"};
    int n = 11, delay = 0;
    for (int i = 0; extra && extra[i] && n < 60; i++) {
        delay |= !strcmp(extra[i], "--delay");
        argv[n++] = (char *)extra[i];
    }
    if (!delay) {
        argv[n++] = "--delay";
        argv[n++] = "0";
    }
    argv[n] = NULL;
    return fx_run(argv, NULL, s->log, 30000);
}

static void site_stop(site_t *s)
{
    crawl_env_stop(s);
}

/* The JSONL line of url's record (the first; caller frees), NULL if none. */
static char *record_of(const site_t *s, const char *url)
{
    char *all = fx_read_file(s->out, NULL), key[600], *line = NULL;
    snprintf(key, sizeof key, "{\"url\":\"%s\"", url);
    char *p = all ? strstr(all, key) : NULL;
    if (p) {
        char *e = strchr(p, '\n');
        line = strndup(p, e ? (size_t)(e - p) : strlen(p));
    }
    free(all);
    return line;
}

/* ---- robots.txt redirects ----------------------------------------------------- */

/* The seed's robots.txt answers 302 to http://127.0.0.2:PORT/robots.txt, a
 * private address that is not a seed host.  The target is fetched only
 * when both the scope (here --allow-domain) and the guard (--allow-private)
 * let it through; a refused redirect means "no robots.txt" (allow all), so
 * the seed's /secret is fetched, while the target's rules, when read,
 * disallow it. */
Test(guard, robots_redirect_to_a_private_non_seed_host_is_refused)
{
    /* one thread: a redirect the guard refuses ("blocked") is not cached in
     * Redis, so a second thread could fetch robots.txt once more */
    static const struct {
        const char *opts[8];
        unsigned target_hits, secret_hits;
    } cases[] = {
        {{"--threads", "1", NULL}, 0, 1},
        {{"--threads", "1", "--scope", "any", NULL}, 0, 1},
        {{"--threads", "1", "--allow-domain", "127.0.0.2", NULL}, 0, 1},
        {{"--threads", "1", "--allow-domain", "127.0.0.2", "--allow-private", NULL}, 1, 0},
        {{"--threads", "1", "--allow-private", NULL}, 0, 1}, /* the scope alone refuses it */
        /* an allowed range lets that address through, and only it */
        {{"--threads", "1", "--allow-domain", "127.0.0.2", "--allow-private-range", "127.0.0.2",
          NULL},
         1,
         0},
        {{"--threads", "1", "--allow-domain", "127.0.0.2", "--allow-private-range", "127.0.0.0/30",
          NULL},
         1,
         0},
        {{"--threads", "1", "--allow-domain", "127.0.0.2", "--allow-private-range", "127.0.0.3/32",
          NULL},
         0,
         1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[128] = "";
        for (size_t k = 0; cases[i].opts[k]; k++)
            snprintf(what + strlen(what), sizeof what - strlen(what), " %s", cases[i].opts[k]);
        tiny_t t;
        tiny_start(&t, "User-agent: *\nDisallow: /secret\n");
        site_t s;
        site_start(&s, "/");
        char loc[128];
        snprintf(loc, sizeof loc, "http://127.0.0.2:%d/robots.txt", t.port);
        fx_http_redirect(s.h, "/robots.txt", 302, loc);
        fx_http_page(s.h, "/", "<a href=/secret>s</a>");
        fx_http_page(s.h, "/secret", "s");
        cr_assert_eq(site_crawl(&s, cases[i].opts), 0, "crawl with [%s] failed", what);
        cr_expect_eq(atomic_load(&t.hits), cases[i].target_hits,
                     "[%s]: 127.0.0.2 requested %u times, want %u", what, atomic_load(&t.hits),
                     cases[i].target_hits);
        cr_expect_eq(fx_http_hits(s.h, "/robots.txt"), 1, "[%s]: robots.txt requested %u times",
                     what, fx_http_hits(s.h, "/robots.txt"));
        cr_expect_eq(fx_http_hits(s.h, "/secret"), cases[i].secret_hits,
                     "[%s]: /secret requested %u times, want %u", what,
                     fx_http_hits(s.h, "/secret"), cases[i].secret_hits);
        site_stop(&s);
        tiny_stop(&t);
    }
}

/* A robots.txt that redirects to itself forever is given up after
 * FETCH_ROBOTS_MAX_REDIRECTS (5) hops, and the crawl goes on (allow all). */
Test(guard, robots_redirect_loop_stops_after_five_hops)
{
    site_t s;
    site_start(&s, "/");
    char loc[128];
    snprintf(loc, sizeof loc, "%s/robots.txt", fx_http_base(s.h));
    fx_http_redirect(s.h, "/robots.txt", 301, loc);
    fx_http_page(s.h, "/", "<a href=/a>a</a>");
    fx_http_page(s.h, "/a", "a");
    cr_assert_eq(site_crawl(&s, NULL), 0);
    cr_expect_eq(fx_http_hits(s.h, "/robots.txt"), 6, "robots.txt requested %u times",
                 fx_http_hits(s.h, "/robots.txt"));
    cr_expect_eq(fx_http_hits(s.h, "/a"), 1);
    site_stop(&s);
}

/* The seed's robots.txt (origin A) answers 301 to the robots.txt of another
 * origin B (another port: "http://h" to "https://h" on the web), whose
 * rules disallow /secret; the home page links to B's pages too.  B's
 * robots.txt is one request, B's own, made under B's robots.txt lock (so no
 * claim of B's URLs overlaps it), and A adopts its rules: neither /secret
 * is fetched.  Before, A's fetch followed the redirect itself, at once and
 * outside B's politeness, and B's claims fetched B's robots.txt again.
 * Every request to B comes at least --delay after the one before (arrival
 * times: a lower bound; 2 threads, so both origins are worked at once). */
Test(guard, a_robots_txt_moved_to_another_origins_is_that_origins_one_request)
{
    enum { DELAY = 300 };
    site_t s;
    site_start(&s, "/");
    fx_http_t *b = fx_http_start();
    cr_assert_not_null(b, "%s", fx_error());
    char loc[160], home[600], bpage[300];
    snprintf(loc, sizeof loc, "%s/robots.txt", fx_http_base(b));
    fx_http_redirect(s.h, "/robots.txt", 301, loc);
    snprintf(home, sizeof home,
             "<a href=/a>a</a> <a href=/secret>s</a> <a href=%s/>b</a> <a href=%s/b1>b1</a>",
             fx_http_base(b), fx_http_base(b));
    fx_http_page(s.h, "/", home);
    fx_http_page(s.h, "/a", "a");
    fx_http_page(s.h, "/secret", "s");
    fx_http_set(
        b, "/robots.txt",
        &(fx_route_t){.content_type = "text/plain", .body = "User-agent: *\nDisallow: /secret\n"});
    snprintf(bpage, sizeof bpage, "<a href=/b1>1</a> <a href=/b2>2</a> <a href=/secret>s</a>");
    fx_http_page(b, "/", bpage);
    fx_http_page(b, "/b1", bpage);
    fx_http_page(b, "/b2", bpage);
    fx_http_page(b, "/secret", "s");
    const char *opts[] = {"--scope", "any", "--threads", "2", "--delay", "300", NULL};
    cr_assert_eq(site_crawl(&s, opts), 0);
    cr_expect_eq(fx_http_hits(s.h, "/robots.txt"), 1, "A's robots.txt requested %u times",
                 fx_http_hits(s.h, "/robots.txt"));
    cr_expect_eq(fx_http_hits(b, "/robots.txt"), 1, "B's robots.txt requested %u times",
                 fx_http_hits(b, "/robots.txt"));
    cr_expect_eq(fx_http_hits(s.h, "/secret"), 0, "A did not adopt B's rules");
    cr_expect_eq(fx_http_hits(b, "/secret"), 0);
    cr_expect_eq(fx_http_hits(s.h, "/a"), 1);
    cr_expect_eq(fx_http_hits(b, "/b2"), 1);
    fx_http_req_t *log;
    size_t n = fx_http_log(b, &log);
    cr_expect_eq(n, 4, "B: %zu requests (robots.txt, /, /b1, /b2)", n);
    for (size_t k = 1; k < n; k++)
        cr_expect_geq(log[k].arrived_us - log[k - 1].arrived_us, DELAY * 1000u,
                      "B: %s came %.1f ms after %s (--delay %d)", log[k].path,
                      (double)(log[k].arrived_us - log[k - 1].arrived_us) / 1000.0, log[k - 1].path,
                      DELAY);
    free(log);
    fx_http_stop(b);
    site_stop(&s);
}

/* ---- sitemaps ----------------------------------------------------------------------- */

/* A sitemap's <loc> on another host ("localhost", loopback but not the seed
 * host) is not seeded in host scope, and with --scope any its fetch is
 * refused by the guard; --allow-private shows the test sees it. */
Test(guard, sitemap_locs_pass_the_scope_and_the_guard)
{
    static const struct {
        const char *opts[5];
        unsigned out_hits;
    } cases[] = {
        {{"--sitemaps", NULL}, 0},
        {{"--sitemaps", "--scope", "any", NULL}, 0},
        {{"--sitemaps", "--scope", "any", "--allow-private", NULL}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        site_t s;
        site_start(&s, "/");
        char robots[256], map[512];
        snprintf(robots, sizeof robots, "User-agent: *\nSitemap: %s/map.xml\n", fx_http_base(s.h));
        fx_http_set(s.h, "/robots.txt",
                    &(fx_route_t){.content_type = "text/plain", .body = robots});
        snprintf(map, sizeof map,
                 "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/"
                 "sitemap/0.9\"><url><loc>http://localhost:%d/out</loc></url>"
                 "<url><loc>/in</loc></url></urlset>",
                 fx_http_port(s.h));
        fx_http_set(s.h, "/map.xml", &(fx_route_t){.content_type = "application/xml", .body = map});
        fx_http_page(s.h, "/", "home");
        fx_http_page(s.h, "/in", "in");
        fx_http_page(s.h, "/out", "out");
        cr_assert_eq(site_crawl(&s, cases[i].opts), 0, "case %zu: crawl failed", i);
        cr_expect_eq(fx_http_hits(s.h, "/in"), 1, "case %zu: /in requested %u times", i,
                     fx_http_hits(s.h, "/in"));
        cr_expect_eq(fx_http_hits(s.h, "/out"), cases[i].out_hits,
                     "case %zu: out-of-scope <loc> requested %u times, want %u", i,
                     fx_http_hits(s.h, "/out"), cases[i].out_hits);
        site_stop(&s);
    }
}

/* ---- page redirects ---------------------------------------------------------------- */

static atomic_int fail_once; /* the chain's hop that answers 503 once, -1: none */

/* /r/N answers 301 to /r/N+1, for ever (bounded only by the crawler). */
static int chain(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char hdr[64];
    int i;
    char tail;
    if (sscanf(path, "/r/%d%c", &i, &tail) != 1 || i < 0)
        return -1;
    int f = fail_once;
    if (i == f && atomic_compare_exchange_strong(&fail_once, &f, -1)) {
        *out = (fx_route_t){.status = 503, .body = "later"};
        return 0;
    }
    snprintf(hdr, sizeof hdr, "Location: /r/%d\n", i + 1);
    *out = (fx_route_t){.status = 301, .headers = hdr, .body = "moved"};
    return 0;
}

typedef struct tally {
    unsigned paths, requests, last;
} tally_t;

static void count_chain(void *ud, const char *path, unsigned hits)
{
    tally_t *t = ud;
    int i;
    if (sscanf(path, "/r/%d", &i) != 1)
        return;
    t->paths++;
    t->requests += hits;
    if ((unsigned)i > t->last)
        t->last = (unsigned)i;
}

/* An endless chain of 301s, each to a new URL: the crawl ends after
 * --max-redirects hops (default 10), the last one's record says
 * "redirects"; --max-depth cuts it too, as redirect targets are one level
 * deeper.  A retried hop keeps its count (the hop travels in the entry). */
Test(guard, endless_redirect_chain_ends_after_max_redirects_hops)
{
    static const struct {
        const char *opts[5];
        int fail_at;       /* hop answering 503 once, -1: none */
        unsigned last;     /* last /r/N requested: hops followed */
        const char *error; /* error_kind of /r/<last>'s record */
    } cases[] = {
        {{NULL}, -1, 10, "redirects"},
        {{"--max-depth", "2", NULL}, -1, 2, NULL},
        {{"--max-redirects", "0", NULL}, -1, 0, "redirects"},
        {{"--max-redirects", "3", NULL}, -1, 3, "redirects"},
        {{"--max-redirects", "3", NULL}, 2, 3, "redirects"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        site_t s;
        site_start(&s, "/r/0");
        atomic_store(&fail_once, cases[i].fail_at);
        fx_http_set_handler(s.h, chain, NULL);
        int rc = site_crawl(&s, cases[i].opts);
        tally_t t = {0};
        fx_http_foreach(s.h, count_chain, &t);
        cr_expect_eq(rc, 0, "case %zu: the crawl did not end (%d) after %u hops", i, rc, t.last);
        cr_expect_eq(t.last, cases[i].last, "case %zu: %u hops followed, want %u", i, t.last,
                     cases[i].last);
        cr_expect_eq(t.paths, cases[i].last + 1, "case %zu: %u chain URLs requested", i, t.paths);
        cr_expect_eq(t.requests, t.paths + (cases[i].fail_at >= 0), "case %zu: %u requests", i,
                     t.requests);
        char url[256];
        snprintf(url, sizeof url, "%s/r/%u", fx_http_base(s.h), cases[i].last);
        char *rec = record_of(&s, url);
        cr_expect_not_null(rec, "case %zu: no record of %s", i, url);
        if (rec && cases[i].error) {
            cr_expect(strstr(rec, "\"error_kind\":\"redirects\""), "case %zu: %s", i, rec);
            cr_expect(strstr(rec, "--max-redirects"), "case %zu: %s", i, rec);
        } else if (rec) {
            cr_expect(strstr(rec, "\"error_kind\":null"), "case %zu: %s", i, rec);
        }
        free(rec);
        site_stop(&s);
    }
}

/* A redirect target is one level deeper than the redirect: with
 * --max-depth 1, the seed's link /a (depth 1) is fetched, its target /b
 * (depth 2) is not; with --max-depth 2 it is, recorded at depth 2. */
Test(guard, redirect_targets_count_one_level_deeper)
{
    for (unsigned depth = 1; depth <= 2; depth++) {
        site_t s;
        site_start(&s, "/");
        fx_http_page(s.h, "/", "<a href=/a>a</a>");
        fx_http_redirect(s.h, "/a", 301, "/b");
        fx_http_page(s.h, "/b", "b");
        char d[16];
        snprintf(d, sizeof d, "%u", depth);
        const char *opts[] = {"--max-depth", d, NULL};
        cr_assert_eq(site_crawl(&s, opts), 0);
        cr_expect_eq(fx_http_hits(s.h, "/a"), 1, "--max-depth %u: /a requested %u times", depth,
                     fx_http_hits(s.h, "/a"));
        cr_expect_eq(fx_http_hits(s.h, "/b"), depth - 1, "--max-depth %u: /b requested %u times",
                     depth, fx_http_hits(s.h, "/b"));
        if (depth == 2) {
            char url[256];
            snprintf(url, sizeof url, "%s/b", fx_http_base(s.h));
            char *rec = record_of(&s, url);
            cr_expect(rec && strstr(rec, "\"depth\":2"), "record of /b: %s", rec);
            free(rec);
        }
        site_stop(&s);
    }
}

/* ---- the entry format, in the frontier -------------------------------------------- */

/* A redirect target's hop count is queued with it ("DEPTH TRIES HOPS URL"),
 * read back by the claim, kept by a retry, and the invariant checker
 * accepts both entry shapes; an entry without the field reads as 0. */
Test(guard, hop_count_travels_in_the_queue_entry)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, "hops", NULL, 1000);
    const char *seed = "http://hops.test/";
    side_seed_all(a.f, &seed, 1);
    frontier_item_t it[2] = {0};
    cr_assert_eq(side_claim(a.f, it, 1), 1);
    cr_expect_eq(it[0].hops, 0, "a seed has hops %u", it[0].hops);
    const char *redirect[] = {"http://hops.test/next"};
    frontier_done_t d = {.item = &it[0],
                         .outcome = {.status = 301},
                         .links = redirect,
                         .nlinks = 1,
                         .link_depth = 1,
                         .link_hops = 7};
    cr_assert_eq(frontier_finish(a.f, &d, 1), 0);
    frontier_item_clear(&it[0]);
    side_check(a.c, a.f, 1000);
    redisReply *q = fx_redis_queue(a.c, a.f->shard[0].prefix, "http://hops.test");
    cr_assert(q && q->type == REDIS_REPLY_ARRAY && q->elements == 1);
    cr_expect_str_eq(q->element[0]->str, "1:0:7/next");
    freeReplyObject(q);
    cr_assert_eq(side_claim(a.f, it, 1), 1);
    cr_expect_str_eq(it[0].url, "http://hops.test/next");
    cr_expect_eq(it[0].depth, 1);
    cr_expect_eq(it[0].hops, 7, "claimed with hops %u", it[0].hops);
    frontier_outcome_t o = {.status = 503, .error = "http-5xx"};
    cr_assert_eq(frontier_retry(a.f, &it[0], &o, 0), 0);
    side_check(a.c, a.f, 1000);
    redisReply *z = redisCommand(a.c, "ZRANGE %sdelayed 0 -1", a.f->shard[0].prefix);
    cr_assert(z && z->type == REDIS_REPLY_ARRAY && z->elements == 1);
    cr_expect_str_eq(z->element[0]->str, "http://hops.test\t1:1:7/next",
                     "the retry lost the hop count");
    freeReplyObject(z);
    frontier_item_clear(&it[0]);
    side_close(&a);
    fx_redis_stop(r);
}

/* ---- the guard's address classifier --------------------------------------------- */

/* An allowed range opens the guard for its addresses only (v4-mapped IPv6
 * forms too); public addresses were never refused; a bad range is named. */
Test(guard, allowed_ranges_open_the_guard_for_their_addresses_only)
{
    static const char *const ranges[] = {"127.16.0.0/12", "::1", "10.1.2.0/24"};
    static const struct {
        const char *addr;
        int refused;
    } cases[] = {
        {"127.16.0.1", 0},
        {"127.31.255.255", 0},
        {"127.32.0.1", 1},
        {"127.0.0.1", 1},
        {"::1", 0},
        {"fe80::1", 1},
        {"10.1.2.200", 0},
        {"10.1.3.1", 1},
        {"::ffff:127.20.0.9", 0},
        {"::ffff:127.0.0.1", 1},
        {"8.8.8.8", 0},
        {"192.168.0.1", 1},
    };
    scope_config_t cfg = {.allow_range = ranges, .n_allow_range = 3};
    char err[256] = "";
    scope_t *sc = scope_new(&cfg, err, sizeof err);
    cr_assert_not_null(sc, "scope_new: %s", err);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sockaddr_storage ss = {0};
        if (strchr(cases[i].addr, ':')) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            a->sin6_family = AF_INET6;
            cr_assert_eq(inet_pton(AF_INET6, cases[i].addr, &a->sin6_addr), 1, "%s", cases[i].addr);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            a->sin_family = AF_INET;
            cr_assert_eq(inet_pton(AF_INET, cases[i].addr, &a->sin_addr), 1, "%s", cases[i].addr);
        }
        int got = scope_guard_refuses(sc, (struct sockaddr *)&ss);
        cr_expect_eq(got, cases[i].refused, "%s: refused %d, want %d", cases[i].addr, got,
                     cases[i].refused);
    }
    scope_free(sc);
    static const char *const bad[] = {"",         "127.0.0.1/33", "::1/129",       "127.0.0.1/",
                                      "10.0.0/8", "127.0.0.1/-1", "example.com/8", "1.2.3.4/8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        cr_expect_eq(scope_check_range(bad[i], err, sizeof err), -1, "'%s' accepted", bad[i]);
        cr_expect(strstr(err, "bad address range"), "'%s': no message: '%s'", bad[i], err);
    }
}

Test(guard, private_address_classifier_by_address)
{
    static const struct {
        const char *addr;
        int private;
    } cases[] = {
        {"127.0.0.2", 1},   {"10.1.2.3", 1},         {"172.16.0.1", 1},
        {"172.32.0.1", 0},  {"192.168.1.1", 1},      {"169.254.169.254", 1},
        {"100.64.0.1", 1},  {"100.128.0.1", 0},      {"0.0.0.0", 1},
        {"224.0.0.1", 1},   {"8.8.8.8", 0},          {"::1", 1},
        {"::", 1},          {"fc00::1", 1},          {"fe80::1", 1},
        {"ff02::1", 1},     {"::ffff:127.0.0.1", 1}, {"::ffff:8.8.8.8", 0},
        {"2001:db8::1", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sockaddr_storage ss = {0};
        if (strchr(cases[i].addr, ':')) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            a->sin6_family = AF_INET6;
            cr_assert_eq(inet_pton(AF_INET6, cases[i].addr, &a->sin6_addr), 1, "%s", cases[i].addr);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            a->sin_family = AF_INET;
            cr_assert_eq(inet_pton(AF_INET, cases[i].addr, &a->sin_addr), 1, "%s", cases[i].addr);
        }
        cr_expect_eq(scope_private_address((struct sockaddr *)&ss), cases[i].private,
                     "%s: private %d, want %d", cases[i].addr,
                     scope_private_address((struct sockaddr *)&ss), cases[i].private);
    }
}
