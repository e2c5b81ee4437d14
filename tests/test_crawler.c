/*
 * The crawler program against a generated site of a few thousand pages on
 * the HTTP fixture: relative, absolute, fragment and off-site links,
 * redirects, 404s, 500s, non-HTML files and a robots.txt-disallowed subtree.
 * The server counts every request; the expected counts follow from the
 * site's definition below.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#include "frontier.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "output_check.h"
#pragma GCC diagnostic pop

#define SITE_PAGES 2000
#define MAX_TRIES_N 2
#define STR_(x) #x
#define STR(x) STR_(x)
#define MAX_TRIES STR(MAX_TRIES_N)

static int port_of_site;

/* Page i links to: children 2i+1 (absolute path) and 2i+2 (relative), a
 * full URL with a fragment, a fragment alone, an off-site host, mailto:, the
 * disallowed subtree, a redirect, a 404, a PDF, and every 100th page a 500. */
static int site(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char body[4096];
    int i;
    char tail;
    if (sscanf(path, "/p/%d%c", &i, &tail) == 1 && i >= 0 && i < SITE_PAGES) {
        int n = snprintf(body, sizeof body,
                         "<html><head><title>p%d</title></head><body>"
                         "<a href=\"/p/%d\">c1</a> <a href=\"%d\">c2</a>"
                         "<a href=\"http://127.0.0.1:%d/p/%d#sec\">abs</a>"
                         "<a href=\"#top\">top</a><a href=\"http://offsite.example/x%d\">off</a>"
                         "<a href=\"mailto:a@b.example\">mail</a>"
                         "<a href=\"/private/%d\">secret</a><a href=\"/r/%d\">redirect</a>"
                         "<a href=\"/missing/%d\">gone</a><a href=\"/f/%d.pdf\">pdf</a>",
                         i, 2 * i + 1 < SITE_PAGES ? 2 * i + 1 : 0,
                         2 * i + 2 < SITE_PAGES ? 2 * i + 2 : 0, port_of_site, (i * 7) % SITE_PAGES,
                         i, i, i, i, i);
        if (i % 100 == 0)
            n += snprintf(body + n, sizeof body - (size_t)n, "<a href=\"/err/%d\">e</a>", i);
        snprintf(body + n, sizeof body - (size_t)n, "</body></html>");
        *out = (fx_route_t){.body = body};
        return 0;
    }
    if (sscanf(path, "/r/%d%c", &i, &tail) == 1) {
        snprintf(body, sizeof body, "Location: /p/%d\n", (i * 3) % SITE_PAGES);
        *out = (fx_route_t){.status = 301, .headers = body, .body = "moved"};
        return 0;
    }
    if (sscanf(path, "/f/%d.pd%c", &i, &tail) == 2) {
        *out = (fx_route_t){.content_type = "application/pdf", .body = "%PDF-1.4 <a href=/x>"};
        return 0;
    }
    if (sscanf(path, "/err/%d%c", &i, &tail) == 1) {
        *out = (fx_route_t){.status = 500, .body = "oops"};
        return 0;
    }
    if (!strcmp(path, "/robots.txt")) {
        *out = (fx_route_t){.content_type = "text/plain",
                            .body = "User-agent: *\nDisallow: /private/\n"};
        return 0;
    }
    return -1;
}

typedef struct check {
    unsigned pages, redirects, missing, pdfs, errs, private_hits, other, dup;
    char first_dup[128];
} check_t;

static void tally(void *ud, const char *path, unsigned hits)
{
    check_t *c = ud;
    int i;
    unsigned expect = 1;
    if (sscanf(path, "/p/%d", &i) == 1)
        c->pages++;
    else if (!strncmp(path, "/r/", 3))
        c->redirects++;
    else if (!strncmp(path, "/missing/", 9))
        c->missing++;
    else if (!strncmp(path, "/f/", 3))
        c->pdfs++;
    else if (!strncmp(path, "/err/", 5)) {
        c->errs++;
        expect = MAX_TRIES_N;
    } else if (!strncmp(path, "/private/", 9))
        c->private_hits++;
    else if (strcmp(path, "/robots.txt") != 0)
        c->other++;
    if (strcmp(path, "/robots.txt") != 0 && hits != expect) {
        if (!c->dup)
            snprintf(c->first_dup, sizeof c->first_dup, "%s x%u", path, hits);
        c->dup++;
    }
}

static void assert_site_crawled_once(fx_http_t *h)
{
    check_t c = {0};
    fx_http_foreach(h, tally, &c);
    cr_expect_eq(c.pages, SITE_PAGES, "%u of %d pages fetched", c.pages, SITE_PAGES);
    cr_expect_eq(c.redirects, SITE_PAGES, "%u redirects fetched", c.redirects);
    cr_expect_eq(c.missing, SITE_PAGES, "%u 404 pages fetched", c.missing);
    cr_expect_eq(c.pdfs, SITE_PAGES, "%u PDFs fetched", c.pdfs);
    cr_expect_eq(c.errs, SITE_PAGES / 100, "%u failing pages tried", c.errs);
    cr_expect_eq(c.private_hits, 0, "%u robots-disallowed URLs requested", c.private_hits);
    cr_expect_eq(c.other, 0, "%u unexpected paths requested", c.other);
    cr_expect_eq(c.dup, 0, "%u URLs fetched a wrong number of times, first: %s", c.dup,
                 c.first_dup);
}

#define CRAWL_ARGS(redis, seeds, out)                                                              \
    CRAWLER_BIN, "crawl", "--redis", (char *)(redis), "--seeds", (seeds), "--delay", "0",          \
        "--per-host", "8", "--max-tries", MAX_TRIES, "--retry-backoff", "50", "--quiet", "--out",  \
        (out)

/* ---- single behaviours on small sites ------------------------------------- */

typedef crawl_env_t small_t;

static void small_start(small_t *s, const char *seed_path)
{
    crawl_env_start(s, NULL, seed_path);
}

/* Runs the crawler with the common options plus extra (NULL-terminated). */
static int small_crawl(small_t *s, char *const extra[])
{
    char *argv[64] = {CRAWLER_BIN, "crawl",  "--redis", (char *)fx_redis_url(s->r),
                      "--seeds",   s->seeds, "--delay", "0",
                      "--out",     s->out,   "--quiet"};
    int n = 11;
    for (int i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return fx_run(argv, NULL, s->log, 120000);
}

/* The crawl's counters, read from its Redis. */
static frontier_stats_t small_stats(const small_t *s)
{
    redisContext *c = fx_redis_connect(s->r);
    cr_assert_not_null(c);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    redisFree(c);
    return st;
}

static void small_stop(small_t *s)
{
    crawl_env_stop(s);
}

/* A small_t whose site is the generated one above, seeded at /p/0. */
static void gen_start(small_t *s)
{
    small_start(s, "/p/0");
    port_of_site = fx_http_port(s->h);
    fx_http_set(s->h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /private/\n"});
    fx_http_set_handler(s->h, site, NULL);
}

Test(crawler, generated_site_every_page_once_nothing_disallowed_or_offsite, .timeout = 300)
{
    small_t s;
    gen_start(&s);
    char *argv[] = {CRAWL_ARGS(fx_redis_url(s.r), s.seeds, s.out), NULL};
    int rc = fx_run(argv, NULL, s.log, 240000);
    char *err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %.2000s", rc, err ? err : "");
    free(err);
    assert_site_crawled_once(s.h);
    small_stop(&s);
}

Test(crawler, three_processes_share_one_redis_and_split_the_site, .timeout = 300)
{
    small_t s;
    gen_start(&s);
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        char out[600], log[600];
        snprintf(out, sizeof out, "%s/out%d.jsonl", s.dir, i);
        snprintf(log, sizeof log, "%s/log%d", s.dir, i);
        char *argv[] = {CRAWL_ARGS(fx_redis_url(s.r), s.seeds, out), "--threads", "1", NULL};
        pids[i] = fx_spawn(argv, NULL, log);
        cr_assert(pids[i] > 0);
    }
    for (int i = 0; i < 3; i++) {
        int rc = fx_wait(pids[i], 240000);
        cr_expect_eq(rc, 0, "crawler %d exited %d", i, rc);
    }
    assert_site_crawled_once(s.h);
    small_stop(&s);
}

Test(crawler, sigterm_mid_crawl_loses_nothing_and_resume_finishes, .timeout = 300)
{
    small_t s;
    gen_start(&s);
    fx_http_t *h = s.h;
    char *argv[] = {CRAWL_ARGS(fx_redis_url(s.r), s.seeds, s.out), NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    /* stop it once it has fetched a part of the site (bounded wait) */
    uint64_t deadline = fx_now_ms() + 60000;
    while (fx_http_total(h) < SITE_PAGES / 2 && fx_now_ms() < deadline)
        usleep(2000);
    kill(pid, SIGTERM);
    int rc = fx_wait(pid, 30000);
    cr_expect_eq(rc, 0, "crawler exited %d after SIGTERM", rc);
    /* resume: same crawl, same Redis */
    rc = fx_run(argv, NULL, s.log, 240000);
    cr_expect_eq(rc, 0, "resumed crawler exited %d", rc);
    check_t c = {0};
    fx_http_foreach(h, tally, &c);
    cr_expect_eq(c.pages, SITE_PAGES, "%u of %d pages fetched after resume", c.pages, SITE_PAGES);
    cr_expect_eq(c.private_hits, 0);
    small_stop(&s);
}

Test(crawler, json_lines_have_every_field)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/",
                 "<a href=/a>a</a><a href=/a>again</a><a href=/gone>g</a>"
                 "<link rel=canonical href=\"/canon\">");
    fx_http_set(s.h, "/a",
                &(fx_route_t){.body = "leaf",
                              .headers = "ETag: \"v1-\\\"x\\\"\"\nLast-Modified: Wed, 21 Oct 2015 "
                                         "07:28:00 GMT\n"});
    char *extra[] = {"--max-depth", "1", NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    char *out = fx_read_file(s.out, NULL);
    cr_assert_not_null(out);
    char root[256];
    snprintf(root, sizeof root, "\"url\":\"%s/\"", fx_http_base(s.h));
    char *line = strstr(out, root);
    cr_assert_not_null(line, "no record for the seed in:\n%s", out);
    char *eol = strchr(line, '\n');
    cr_assert_not_null(eol);
    *eol = '\0';
    const char *want[] = {"\"status\":200",      "\"content_type\":\"text/html; charset=utf-8\"",
                          "\"depth\":0",         "\"links_found\":2",
                          "\"error_kind\":null", "\"canonical\":\"",
                          "\"fetch_ms\":",       "\"bytes\":",
                          "\"timestamp\":\""};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(line, want[i]) != NULL, "record lacks %s: %s", want[i], line);
    cr_expect(!strstr(line, "\"etag\"") && !strstr(line, "\"last_modified\""),
              "validators the response did not send: %s", line);
    *eol = '\n';
    cr_expect(strstr(out, "\"status\":404") != NULL, "no 404 record in:\n%s", out);
    /* the validators a response sent, as sent (the ETag's quotes escaped) */
    cr_expect(strstr(out, "\"etag\":\"\\\"v1-\\\\\\\"x\\\\\\\"\\\"\"") != NULL, "no ETag in:\n%s",
              out);
    cr_expect(strstr(out, "\"last_modified\":\"Wed, 21 Oct 2015 07:28:00 GMT\"") != NULL,
              "no Last-Modified in:\n%s", out);
    free(out);
    small_stop(&s);
}

Test(crawler, private_address_guard_refuses_non_seed_loopback_hosts)
{
    small_t s;
    small_start(&s, "/");
    char html[256];
    /* "localhost" is not the seed host (127.0.0.1) but resolves to loopback */
    snprintf(html, sizeof html, "<a href=\"http://localhost:%d/inner\">x</a>", fx_http_port(s.h));
    fx_http_page(s.h, "/", html);
    fx_http_page(s.h, "/inner", "secret");
    char *extra[] = {"--scope", "any", NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    cr_expect_eq(fx_http_hits(s.h, "/inner"), 0, "guard let a private address through");
    char *out = fx_read_file(s.out, NULL);
    cr_expect(out && strstr(out, "\"error_kind\":\"blocked\""), "no blocked record:\n%s", out);
    free(out);
    /* --allow-private lifts it */
    small_t s2;
    small_start(&s2, "/");
    fx_http_page(s2.h, "/", html);
    snprintf(html, sizeof html, "<a href=\"http://localhost:%d/inner\">x</a>", fx_http_port(s2.h));
    fx_http_page(s2.h, "/", html);
    fx_http_page(s2.h, "/inner", "ok");
    char *extra2[] = {"--scope", "any", "--allow-private", NULL};
    cr_assert_eq(small_crawl(&s2, extra2), 0);
    cr_expect_eq(fx_http_hits(s2.h, "/inner"), 1);
    small_stop(&s2);
    small_stop(&s);
}

Test(crawler, slow_and_oversized_responses_are_cut_off)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<a href=/slow>s</a><a href=/big>b</a>");
    fx_http_set(s.h, "/slow",
                &(fx_route_t){.body = "<p>x</p>", .repeat = 5000, .chunk_delay_ms = 200});
    fx_http_set(s.h, "/big", &(fx_route_t){.body = "<p>0123456789</p>", .repeat = 1000000});
    char *extra[] = {"--timeout", "1500", "--max-size", "100000", "--max-tries", "1", NULL};
    uint64_t t0 = fx_now_ms();
    cr_assert_eq(small_crawl(&s, extra), 0);
    (void)t0;
    char *out = fx_read_file(s.out, NULL);
    cr_assert_not_null(out);
    cr_expect(strstr(out, "\"error_kind\":\"timeout\""), "slow page not cut:\n%s", out);
    cr_expect(strstr(out, "\"error_kind\":\"too-large\""), "big page not cut:\n%s", out);
    free(out);
    small_stop(&s);
}

/* A body larger than --max-size is read up to the cap and cut, its links
 * followed and its record too-large, whether its Content-Length announced
 * the size (it was refused before its first byte) or it came chunked. */
Test(crawler, a_body_past_max_size_is_cut_and_its_links_followed_with_or_without_its_length)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<a href=/told>t</a><a href=/chunked>c</a>");
    static char body[2][4096];
    for (int k = 0; k < 2; k++) { /* links first, then filler past the cap */
        snprintf(body[k], sizeof body[k], "<a href=/%s-link>l</a><p>%0*d</p>",
                 k ? "chunked" : "told", 3000, 0);
        fx_http_page(&*s.h, k ? "/chunked-link" : "/told-link", "<p>leaf</p>");
    }
    fx_http_set(s.h, "/told", &(fx_route_t){.body = body[0], .repeat = 100});
    fx_http_set(s.h, "/chunked", &(fx_route_t){.body = body[1], .repeat = 100, .chunked = 1});
    char *extra[] = {"--max-size", "100000", NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    cr_expect_eq(fx_http_hits(s.h, "/told-link"), 1, "the announced body's link not followed");
    cr_expect_eq(fx_http_hits(s.h, "/chunked-link"), 1, "the chunked body's link not followed");
    char *out = fx_read_file(s.out, NULL);
    cr_assert_not_null(out);
    const char *want[] = {"/told\"", "/chunked\""};
    for (int k = 0; k < 2; k++) {
        const char *rec = strstr(out, want[k]);
        const char *eol = rec ? strchr(rec, '\n') : NULL;
        const char *kind = rec ? strstr(rec, "\"error_kind\":\"too-large\"") : NULL;
        cr_expect(kind && (!eol || kind < eol), "%s: not recorded too-large:\n%s", want[k], out);
    }
    free(out);
    small_stop(&s);
}

Test(crawler, bad_options_are_refused_with_usage_status)
{
    const char *cases[][3] = {{"--threads", "0", NULL},         {"--scope", "planet", NULL},
                              {"--no-such-option", NULL, NULL}, {"--delay", "-5", NULL},
                              {"--crawl", "bad name", NULL},    {"--bloom-fp-rate", "2", NULL},
                              {"--user-agent", "123", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[] = {CRAWLER_BIN, "crawl", (char *)cases[i][0], (char *)cases[i][1], NULL};
        int rc = fx_run(argv, NULL, NULL, 20000);
        cr_expect_eq(rc, 2, "crawl %s %s exited %d, not 2", cases[i][0],
                     cases[i][1] ? cases[i][1] : "", rc);
    }
    char *help[] = {CRAWLER_BIN, "crawl", "--help", NULL};
    char *dir = fx_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/help", dir);
    cr_expect_eq(fx_run(help, path, NULL, 20000), 0);
    char *text = fx_read_file(path, NULL);
    cr_expect(text && strstr(text, "--per-host N") && strstr(text, "[default: 1]"),
              "help lacks options/defaults:\n%s", text);
    free(text);
    char *version[] = {CRAWLER_BIN, "--version", NULL};
    cr_expect_eq(fx_run(version, NULL, NULL, 20000), 0);
    fx_rmtree(dir);
    free(dir);
}

Test(crawler, config_file_options_apply_and_command_line_wins)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<a href=/d1>1</a>");
    fx_http_page(s.h, "/d1", "<a href=/d2>2</a>");
    fx_http_page(s.h, "/d2", "<a href=/d3>3</a>");
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/crawl.conf", s.dir);
    cr_assert_eq(fx_write_file(cfg, "# a config\nmax-depth 2\ndelay=0\nquiet\n"), 0);
    char *extra[] = {"--config", cfg, NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    cr_expect_eq(fx_http_hits(s.h, "/d2"), 1);
    cr_expect_eq(fx_http_hits(s.h, "/d3"), 0, "max-depth from the config file ignored");
    cr_assert_eq(fx_write_file(cfg, "no-such-option 1\n"), 0);
    cr_expect_eq(small_crawl(&s, extra), 2, "unknown config option accepted");
    small_stop(&s);
}

Test(crawler, sitemaps_from_robots_are_followed_only_with_the_option)
{
    for (int with = 0; with <= 1; with++) {
        small_t s;
        small_start(&s, "/");
        char robots[256], map[512];
        snprintf(robots, sizeof robots, "User-agent: *\nDisallow: /hidden\nSitemap: %s/map.xml\n",
                 fx_http_base(s.h));
        fx_http_set(s.h, "/robots.txt",
                    &(fx_route_t){.content_type = "text/plain", .body = robots});
        snprintf(map, sizeof map,
                 "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/"
                 "sitemap/0.9\"><url><loc> %s/s1?a=1&amp;b=2 </loc></url>"
                 "<url><loc><![CDATA[/s2]]></loc></url><url><loc>/hidden/x</loc></url>"
                 "</urlset>",
                 fx_http_base(s.h));
        fx_http_set(s.h, "/map.xml", &(fx_route_t){.content_type = "application/xml", .body = map});
        fx_http_page(s.h, "/", "<a href=/hidden/y>h</a>");
        fx_http_page(s.h, "/s1?a=1&b=2", "one");
        fx_http_page(s.h, "/s2", "two");
        char *extra[] = {with ? "--sitemaps" : NULL, NULL};
        cr_assert_eq(small_crawl(&s, extra), 0);
        cr_expect_eq(fx_http_hits(s.h, "/map.xml"), (unsigned)with, "sitemap fetched %u times",
                     fx_http_hits(s.h, "/map.xml"));
        cr_expect_eq(fx_http_hits(s.h, "/s1?a=1&b=2"), (unsigned)with);
        cr_expect_eq(fx_http_hits(s.h, "/s2"), (unsigned)with);
        cr_expect_eq(fx_http_hits(s.h, "/hidden/x") + fx_http_hits(s.h, "/hidden/y"), 0,
                     "robots.txt-disallowed URL fetched");
        small_stop(&s);
    }
}

Test(crawler, warc_and_json_lines_output_checked_field_by_field)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<a href=/a>a</a><a href=/moved>m</a>");
    fx_http_page(s.h, "/a", "<p>page a body</p>");
    fx_http_redirect(s.h, "/moved", 301, "/a");
    char warc[600];
    snprintf(warc, sizeof warc, "%s/crawl.warc.gz", s.dir);
    char *extra[] = {"--warc", warc, NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    /* JSON lines: valid, documented keys in order, one per finished URL */
    size_t len = 0;
    char *out = fx_read_file(s.out, &len);
    cr_assert_not_null(out);
    size_t lines = 0;
    for (char *p = out; *p;) {
        char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "unterminated JSON line");
        cr_expect(json_line_ok(p, (size_t)(nl - p + 1)), "bad JSON line: %.*s", (int)(nl - p), p);
        lines++;
        p = nl + 1;
    }
    cr_expect_eq(lines, 3, "%zu JSON lines", lines);
    cr_expect(strstr(out, "\"status\":301") && strstr(out, "\"location\":\"/a\""),
              "redirect record lacks status/location:\n%s", out);
    free(out);
    /* WARC: warcinfo, then request+response per fetched URL */
    wfile_t f = read_warc(warc);
    cr_assert_geq(f.n, 7, "%zu WARC records", f.n);
    cr_expect_str_eq(hget(&f.r[0], "WARC-Type"), "warcinfo");
    int responses = 0, found_a = 0;
    char a_url[256];
    snprintf(a_url, sizeof a_url, "%s/a", fx_http_base(s.h));
    for (size_t i = 1; i < f.n; i++) {
        const char *type = hget(&f.r[i], "WARC-Type");
        cr_assert_not_null(type);
        if (strcmp(type, "response") != 0)
            continue;
        responses++;
        cr_expect_not_null(hget(&f.r[i], "WARC-Target-URI"));
        cr_expect_str_eq(hget(&f.r[i], "WARC-IP-Address"), "127.0.0.1");
        cr_expect_not_null(hget(&f.r[i], "WARC-Concurrent-To"));
        cr_expect(!strncmp(f.r[i].block, "HTTP/1.1 ", 9), "response block is not HTTP");
        if (!strcmp(hget(&f.r[i], "WARC-Target-URI"), a_url)) {
            found_a = 1;
            cr_expect(memmem(f.r[i].block, f.r[i].block_len, "page a body", 11) != NULL,
                      "page body not in its response record");
        }
    }
    cr_expect_eq(responses, 3, "%d response records", responses);
    cr_expect(found_a, "no response record for %s", a_url);
    free_warc(&f);
    small_stop(&s);
}

/* "/" links to five pages /slow0../slow4 that each answer after delay_ms. */
static void slow_links(small_t *s, unsigned delay_ms)
{
    char html[1024];
    int n = snprintf(html, sizeof html, "<p>slow links</p>");
    for (int i = 0; i < 5; i++) {
        char path[32];
        snprintf(path, sizeof path, "/slow%d", i);
        n += snprintf(html + n, sizeof html - (size_t)n, "<a href=%s>s</a>", path);
        fx_http_set(s->h, path, &(fx_route_t){.body = "late", .delay_ms = delay_ms});
    }
    fx_http_page(s->h, "/", html);
}

/* Waits (bounded) until robots.txt, "/" and the five slow pages were asked
 * for: the slow ones are then in flight. */
static void wait_slow_in_flight(small_t *s)
{
    uint64_t deadline = fx_now_ms() + 30000;
    while (fx_http_total(s->h) < 7 && fx_now_ms() < deadline)
        usleep(5000);
    cr_assert_eq(fx_http_total(s->h), 7, "slow pages not in flight: %zu requests",
                 fx_http_total(s->h));
}

Test(crawler, second_signal_hands_in_flight_urls_back_at_once, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    slow_links(&s, 30000);
    char *argv[] = {CRAWLER_BIN,  "crawl", "--redis", (char *)fx_redis_url(s.r),
                    "--seeds",    s.seeds, "--delay", "0",
                    "--per-host", "8",     "--quiet", "--grace",
                    "60000",      NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    wait_slow_in_flight(&s);
    kill(pid, SIGTERM);
    usleep(200000);
    kill(pid, SIGTERM);
    int rc = fx_wait(pid, 20000); /* far less than the 30 s the pages take */
    cr_expect_eq(rc, 0, "crawler exited %d after two signals", rc);
    frontier_stats_t st = small_stats(&s);
    cr_expect_eq(st.queued, 5, "%llu queued after hand-back", (unsigned long long)st.queued);
    cr_expect_eq(st.in_flight, 0, "%llu still in flight", (unsigned long long)st.in_flight);
    small_stop(&s);
}

Test(crawler, redis_lost_longer_than_redis_retry_max_stops_the_workers_and_exits_1, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    slow_links(&s, 2000);
    char *argv[] = {CRAWLER_BIN, "crawl",      "--redis", (char *)fx_redis_url(s.r),
                    "--seeds",   s.seeds,      "--delay", "0",
                    "--quiet",   "--per-host", "8",       "--redis-retry-max",
                    "1500",      NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    wait_slow_in_flight(&s);
    kill(fx_redis_pid(s.r), SIGKILL); /* reaped by small_stop */
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d after losing Redis: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "lost its Redis connection") && strstr(err, "giving up"),
              "no reason given: %s", err ? err : "");
    free(err);
    small_stop(&s);
}

/* A Redis that now asks for a password (CONFIG SET requirepass, the
 * workers' connections killed): every reconnect is refused with NOAUTH,
 * and the give-up says so, on stderr and in the redis-gave-up event, not a
 * vague "connection lost". */
Test(crawler, a_reconnect_refused_by_redis_says_why_when_it_gives_up, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    slow_links(&s, 2000);
    char *argv[] = {CRAWLER_BIN, "crawl",      "--redis", (char *)fx_redis_url(s.r),
                    "--seeds",   s.seeds,      "--delay", "0",
                    "--quiet",   "--per-host", "8",       "--redis-retry-max",
                    "1500",      "--out",      s.out,     NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    wait_slow_in_flight(&s);
    redisContext *c = fx_redis_connect(s.r);
    cr_assert_not_null(c);
    freeReplyObject(redisCommand(c, "CONFIG SET requirepass sesame"));
    freeReplyObject(redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes"));
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(s.log, NULL), *out = fx_read_file(s.out, NULL);
    cr_expect_eq(rc, 1, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "giving up") && strstr(err, "NOAUTH"),
              "the give-up does not say Redis's refusal: %.2000s", err ? err : "");
    const char *ev = out ? strstr(out, "\"event\":\"redis-gave-up\"") : NULL;
    const char *eol = ev ? strchr(ev, '\n') : NULL;
    const char *why = ev ? strstr(ev, "NOAUTH") : NULL;
    cr_expect(why && (!eol || why < eol), "the redis-gave-up event does not say why: %.2000s",
              out ? out : "");
    free(err);
    free(out);
    freeReplyObject(redisCommand(c, "AUTH sesame"));
    freeReplyObject(redisCommand(c, "CONFIG SET requirepass \"\""));
    redisFree(c);
    small_stop(&s);
}

/* SIGHUP (the terminal closed) stops the crawl as SIGTERM does: what runs
 * is finished (within --grace), the rest handed back, exit 0. */
Test(crawler, sighup_stops_the_crawl_as_sigterm_does, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    slow_links(&s, 300);
    char *argv[] = {CRAWLER_BIN, "crawl",      "--redis", (char *)fx_redis_url(s.r),
                    "--seeds",   s.seeds,      "--delay", "0",
                    "--quiet",   "--per-host", "8",       NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    wait_slow_in_flight(&s);
    kill(pid, SIGHUP);
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d after SIGHUP: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "hung up (SIGHUP)"), "SIGHUP not said: %.2000s", err ? err : "");
    free(err);
    frontier_stats_t st = small_stats(&s);
    cr_expect_eq(st.in_flight, 0, "%llu left leased", (unsigned long long)st.in_flight);
    small_stop(&s);
}

/* SIGTERM while `crawler seed` reads a large file: it stops between two
 * batches and says how many seeds went in, exit 1; what it says is what
 * Redis holds. */
Test(crawler, a_seed_interrupted_says_how_many_seeds_went_in, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    FILE *f = fopen(s.seeds, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 400000; i++) /* many batches: the signal lands between two */
        fprintf(f, "http://h%d.test/p%d\n", i % 5000, i);
    cr_assert_eq(fclose(f), 0);
    char *argv[] = {CRAWLER_BIN, "seed",    s.seeds, "--redis", (char *)fx_redis_url(s.r),
                    "--crawl",   "seeding", NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    redisContext *c = fx_redis_connect(s.r);
    cr_assert_not_null(c);
    frontier_stats_t st = {0};
    for (int i = 0; i < 20000 && st.seeds == 0; i++) { /* a bound, not a verdict */
        frontier_stats(c, "seeding", &st);
        usleep(1000);
    }
    cr_assert_gt(st.seeds, 0, "no seed went in");
    kill(pid, SIGTERM);
    int rc = fx_wait(pid, 60000);
    char *err = fx_read_file(s.log, NULL);
    cr_assert_eq(frontier_stats(c, "seeding", &st), 0);
    cr_expect_eq(rc, 1, "seed exited %d: %.2000s", rc, err ? err : "");
    char want[128];
    snprintf(want, sizeof want, "interrupted by Terminated: %llu seeds queued",
             (unsigned long long)st.seeds);
    cr_expect(err && strstr(err, want), "no '%s' in: %.2000s", want, err ? err : "");
    cr_expect_lt(st.seeds, 400000, "every seed went in: the signal came too late to show");
    free(err);
    redisFree(c);
    small_stop(&s);
}

/* --out on a FIFO nobody reads yet: the crawler says what it waits for
 * instead of blocking without a word in open(2); once a reader opens it,
 * the crawl goes on and the records come through. */
Test(crawler, an_output_fifo_without_a_reader_is_said_and_waited_for, .timeout = 120)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<p>one page</p>");
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/out.fifo", s.dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char *argv[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_redis_url(s.r),
                    "--seeds",   s.seeds, "--out",   fifo,
                    "--quiet",   NULL};
    pid_t pid = fx_spawn(argv, NULL, s.log);
    cr_assert(pid > 0);
    char *err = NULL;
    for (int i = 0; i < 20000; i++) { /* a bound, not a verdict */
        free(err);
        err = fx_read_file(s.log, NULL);
        if (err && strstr(err, "no reader"))
            break;
        usleep(1000);
    }
    cr_expect(err && strstr(err, "is a FIFO with no reader: waiting for one"),
              "the wait is not said: %.2000s", err ? err : "");
    free(err);
    FILE *r = fopen(fifo, "r"); /* a reader comes */
    cr_assert_not_null(r);
    char line[4096], *got = NULL;
    while (fgets(line, sizeof line, r))
        if (strstr(line, "\"url\":"))
            got = line;
    int rc = fx_wait(pid, 60000);
    cr_expect_eq(rc, 0, "crawler exited %d", rc);
    cr_expect_not_null(got, "no record came through the FIFO");
    fclose(r);
    small_stop(&s);
}

/* The settings that decide what a crawl admits are kept with the crawl by
 * its first worker: a later worker that asks for another value is refused
 * (exit 2, naming both), one that leaves the option out follows the
 * crawl's; `crawler stats` and `crawler limits` show them. */
Test(crawler, a_worker_that_admits_by_other_rules_is_refused_or_follows_the_crawls)
{
    small_t s;
    small_start(&s, "/");
    fx_http_page(s.h, "/", "<p>one page</p>");
    char *first[] = {"--scope", "domain", "--max-depth", "3", NULL};
    cr_assert_eq(small_crawl(&s, first), 0);
    char *url = (char *)fx_redis_url(s.r);
    char *other[] = {CRAWLER_BIN, "crawl",   "--redis", url,       "--seeds",
                     s.seeds,     "--scope", "host",    "--quiet", NULL};
    int rc = fx_run(other, NULL, s.log, 60000);
    char *err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 2, "a worker asking --scope host exited %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--scope domain") && strstr(err, "--scope host"),
              "both values not named: %s", err ? err : "");
    free(err);
    char *follow[] = {CRAWLER_BIN, "crawl", "--redis", url, "--seeds", s.seeds, NULL};
    rc = fx_run(follow, NULL, s.log, 60000);
    err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 0, "a worker leaving --scope out exited %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "following the crawl's --scope domain") &&
                  strstr(err, "following the crawl's --max-depth 3"),
              "the worker does not say it follows: %s", err ? err : "");
    free(err);
    char *stats[] = {CRAWLER_BIN, "stats", "--redis", url, NULL};
    cr_assert_eq(fx_run(stats, s.log, NULL, 60000), 0); /* (its stdout) */
    char *out = fx_read_file(s.log, NULL);
    cr_expect(out && strstr(out, "settings (fixed when the crawl was created):") &&
                  strstr(out, "--scope domain") && strstr(out, "--max-depth 3"),
              "stats does not show the settings: %s", out ? out : "");
    free(out);
    char *limits[] = {CRAWLER_BIN, "limits", "--redis", url, NULL};
    cr_assert_eq(fx_run(limits, s.log, NULL, 60000), 0);
    out = fx_read_file(s.log, NULL);
    cr_expect(out && strstr(out, "--scope domain"), "limits does not show them: %s",
              out ? out : "");
    free(out);
    small_stop(&s);
}

Test(crawler, robots_5xx_means_disallow_for_now_then_dead_letter)
{
    small_t s;
    small_start(&s, "/");
    fx_http_set(s.h, "/robots.txt", &(fx_route_t){.status = 503, .body = "busy"});
    fx_http_page(s.h, "/", "never fetched");
    char *extra[] = {"--max-tries", "2", "--retry-backoff", "50", NULL};
    cr_assert_eq(small_crawl(&s, extra), 0);
    cr_expect_eq(fx_http_hits(s.h, "/"), 0, "page fetched although robots.txt answered 503");
    cr_expect_geq(fx_http_hits(s.h, "/robots.txt"), 1);
    char *out = fx_read_file(s.out, NULL);
    /* the record says why: robots.txt's own status and kind */
    cr_expect(out && strstr(out, "\"status\":503") && strstr(out, "\"error_kind\":\"http-5xx\"") &&
                  strstr(out, "\"error_text\":\"robots.txt answered HTTP 503\""),
              "no dead-letter record with the cause:\n%s", out ? out : "");
    free(out);
    frontier_stats_t st = small_stats(&s);
    cr_expect_eq(st.dead, 1, "%llu dead-lettered", (unsigned long long)st.dead);
    small_stop(&s);
}

/* A host whose robots.txt answers 503 for ever: each of its 16 URLs is
 * dead-lettered after its own --max-tries, and the crawl ends.  Its URLs
 * were never requested, so they are not the host's failures: before, each
 * of the 48 retries backed the host off twice as long as the one before
 * (--retry-backoff, doubled from the second), and the crawl did not end
 * within the two minutes given here (websim: a web with such hosts never
 * finished). */
Test(crawler, robots_5xx_for_ever_dead_letters_every_url_and_the_crawl_ends, .timeout = 150)
{
    small_t s;
    small_start(&s, "/u0");
    fx_http_set(s.h, "/robots.txt", &(fx_route_t){.status = 503, .body = "busy"});
    char seeds[2048];
    int n = 0;
    for (int i = 0; i < 16; i++)
        n += snprintf(seeds + n, sizeof seeds - (size_t)n, "%s/u%d\n", fx_http_base(s.h), i);
    cr_assert_eq(fx_write_file(s.seeds, seeds), 0);
    char *extra[] = {"--max-tries", "3", "--retry-backoff", "200", NULL};
    cr_assert_eq(small_crawl(&s, extra), 0, "the crawl did not end");
    cr_expect_eq(fx_http_total(s.h), fx_http_hits(s.h, "/robots.txt"),
                 "a page was requested although robots.txt answered 503");
    frontier_stats_t st = small_stats(&s);
    cr_expect_eq(st.dead, 16, "%llu dead-lettered", (unsigned long long)st.dead);
    size_t lines = 0;
    char *out = fx_read_file(s.out, NULL);
    for (const char *p = out;
         p && (p = strstr(p, "\"error_text\":\"robots.txt answered HTTP 503\"")); p++)
        lines++;
    cr_expect_eq(lines, 16, "%zu records say why", lines);
    free(out);
    small_stop(&s);
}

Test(crawler, robots_txt_is_fetched_once_per_host_across_workers, .timeout = 120)
{
    small_t s;
    small_start(&s, "/s0");
    /* a slow robots.txt: every worker claims URLs of the host meanwhile */
    fx_http_set(s.h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /no\n",
                              .delay_ms = 500});
    char seeds[4096];
    int n = 0;
    for (int i = 0; i < 30; i++) {
        char path[16];
        snprintf(path, sizeof path, "/s%d", i);
        fx_http_page(s.h, path, "<a href=/no>no</a>");
        n += snprintf(seeds + n, sizeof seeds - (size_t)n, "%s%s\n", fx_http_base(s.h), path);
    }
    cr_assert_eq(fx_write_file(s.seeds, seeds), 0);
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        char log[600];
        snprintf(log, sizeof log, "%s/log%d", s.dir, i);
        /* two URLs in flight per thread: six threads hold URLs of the host
         * while its robots.txt is still on its way */
        char *argv[] = {CRAWLER_BIN,     "crawl", "--redis",       (char *)fx_redis_url(s.r),
                        "--seeds",       s.seeds, "--delay",       "0",
                        "--per-host",    "30",    "--threads",     "2",
                        "--claim-batch", "2",     "--concurrency", "2",
                        "--quiet",       NULL};
        pids[i] = fx_spawn(argv, NULL, log);
        cr_assert(pids[i] > 0);
    }
    for (int i = 0; i < 3; i++)
        cr_expect_eq(fx_wait(pids[i], 60000), 0, "crawler %d failed", i);
    cr_expect_eq(fx_http_hits(s.h, "/robots.txt"), 1, "robots.txt fetched %u times",
                 fx_http_hits(s.h, "/robots.txt"));
    for (int i = 0; i < 30; i++) {
        char path[16];
        snprintf(path, sizeof path, "/s%d", i);
        cr_expect_eq(fx_http_hits(s.h, path), 1, "%s fetched %u times", path,
                     fx_http_hits(s.h, path));
    }
    cr_expect_eq(fx_http_hits(s.h, "/no"), 0, "disallowed URL fetched");
    small_stop(&s);
}

/* --concurrency more than the open-file limit allows (ulimit -n 256, hard
 * too, so the crawler cannot raise it): a warning naming the limit, and the
 * crawl still done, every page once. */
Test(crawler, a_concurrency_past_the_open_file_limit_warns_and_still_crawls, .timeout = 300)
{
    small_t s;
    gen_start(&s);
    char *argv[] = {"/bin/sh",
                    "-c",
                    "ulimit -n 256 && exec \"$0\" \"$@\"",
                    CRAWL_ARGS(fx_redis_url(s.r), s.seeds, s.out),
                    "--concurrency",
                    "5000",
                    NULL};
    int rc = fx_run(argv, NULL, s.log, 240000);
    char *err = fx_read_file(s.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %.2000s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--concurrency 5000 needs at least") &&
                  strstr(err, "the limit is 256 (ulimit -n)"),
              "no open-files warning: %.2000s", err ? err : "");
    free(err);
    assert_site_crawled_once(s.h);
    small_stop(&s);
}
