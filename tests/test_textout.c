/*
 * What a crawl yields besides its metadata: `--text` (the main text of each
 * HTML page with 2xx, its title, language and SimHash; Markdown; all text),
 * the "simhash" of the page's JSON line, `crawler near-dups` over the text
 * file, `--wet` (the text as WARC conversion records), and the memory of a
 * crawl with text on pages of 50 MB.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "output_check.h"
#pragma GCC diagnostic pop

#define ARTICLE                                                                                    \
    "<p>The river rose in the night and by morning the lower town was under water, its streets "   \
    "turned to canals and its people on the roofs, waiting for boats that came slowly.</p>"        \
    "<p>Nobody had seen a flood like it in forty years, and the old men said the dikes had been "  \
    "neglected, that the money for them had gone elsewhere, and that this was the price.</p>"      \
    "<p>By noon the water stood still. The mayor, who had spent the night at the town hall, "      \
    "walked to the bridge with the engineers and read the <a href=\"/levels\">gauge</a> himself; " \
    "it had not moved for an hour, and he said so to the crowd.</p>"                               \
    "<p>The schools will stay closed for the week, the hospital has moved its patients upstairs, " \
    "and the army has sent two companies with boats, pumps and field kitchens.</p>"

/* A page in a site's frame: navigation, the article, comments, a footer. */
static char *framed(const char *title, const char *lang, const char *article)
{
    char *p = NULL;
    cr_assert(asprintf(&p,
                       "<html lang=\"%s\"><head><title>%s</title></head><body>"
                       "<nav class=\"menu\"><a href=\"/\">Home</a> <a href=\"/news\">News</a> "
                       "<a href=\"/sport\">Sport</a></nav>"
                       "<article><h1>%s</h1>%s<p>See <a href=\"/more\">more</a>.</p></article>"
                       "<div class=\"comments\"><p>First comment, and a reply below it.</p></div>"
                       "<footer>Copyright 2026 The Daily Example, all rights reserved</footer>"
                       "</body></html>",
                       lang, title, title, article) > 0);
    return p;
}

static int crawl(crawl_env_t *e, char *const extra[])
{
    char *argv[32] = {CRAWLER_BIN, "crawl",  "--redis", (char *)fx_redis_url(e->r),
                      "--seeds",   e->seeds, "--delay", "0",
                      "--quiet"};
    int n = 9;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return fx_run(argv, NULL, e->log, 120000);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (const char *p = text; p && (p = strchr(p, '\n')); p++)
        n++;
    return n;
}

/* The 16 hex digits after "simhash":" in line, or "" (into out[17]). */
static void simhash_of(const char *line, char out[17])
{
    const char *h = line ? strstr(line, "\"simhash\":\"") : NULL;
    snprintf(out, 17, "%s", h ? h + 11 : "");
}

static void site(crawl_env_t *e)
{
    char *a = framed("Flood in the lower town", "en", ARTICLE);
    char *home = NULL;
    cr_assert(asprintf(&home,
                       "<html><body><a href=\"/a\">a</a> <a href=\"/plain.txt\">t</a> "
                       "<a href=\"/gone\">g</a> <a href=\"/moved\">m</a></body></html>") > 0);
    fx_http_page(e->h, "/", home);
    fx_http_page(e->h, "/a", a);
    fx_http_set(e->h, "/plain.txt",
                &(fx_route_t){.content_type = "text/plain", .body = "just text, no markup"});
    fx_http_set(e->h, "/gone", &(fx_route_t){.status = 404, .body = "<p>not here</p>"});
    fx_http_redirect(e->h, "/moved", 301, "/a");
    free(a);
    free(home);
}

Test(textout, the_main_text_of_each_html_page_with_2xx_and_its_simhash_in_both_files)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    char text[600];
    snprintf(text, sizeof text, "%s/text.jsonl", e.dir);
    char *extra[] = {"--out", e.out, "--text", text, NULL};
    cr_assert_eq(crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    char *t = fx_read_file(text, NULL), *o = fx_read_file(e.out, NULL);
    cr_assert_not_null(t);
    cr_expect_eq(count_lines(t), 2, "text lines (the two HTML pages with 2xx):\n%s", t);
    char *a = jsonl_line_of(t, fx_http_base(e.h), "/a", "");
    cr_assert_not_null(a, "no text line for /a:\n%s", t);
    cr_expect(strstr(a, "\"title\":\"Flood in the lower town\",\"lang\":\"en\",\"text\":\""), "%s",
              a);
    cr_expect(strstr(a, "the lower town was under water") && strstr(a, "the price."), "%s", a);
    cr_expect(strstr(a, "forty years") && strstr(a, ".\\n\\nNobody"),
              "paragraphs not separated by a blank line: %s", a);
    cr_expect(!strstr(a, "Copyright") && !strstr(a, "First comment") && !strstr(a, "Sport"),
              "boilerplate in the main text: %s", a);
    cr_expect(!strstr(t, "plain.txt") && !strstr(t, "/gone") && !strstr(t, "/moved\""),
              "a text line for a page that is not HTML with 2xx:\n%s", t);
    char ha[17], hb[17];
    simhash_of(a, ha);
    char *oa = jsonl_line_of(o, fx_http_base(e.h), "/a", "");
    simhash_of(oa, hb);
    cr_expect_eq(strlen(ha), 16);
    cr_expect_str_eq(ha, hb, "the two files disagree on /a's simhash");
    char *og = jsonl_line_of(o, fx_http_base(e.h), "/gone", "");
    cr_expect(og && !strstr(og, "simhash"), "a simhash for a 404: %s", og);
    free(a);
    free(oa);
    free(og);
    free(t);
    free(o);
    crawl_env_stop(&e);
}

Test(textout, markdown_and_all_text)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    char md[600], all[600];
    snprintf(md, sizeof md, "%s/md.jsonl", e.dir);
    snprintf(all, sizeof all, "%s/all.jsonl", e.dir);
    char *x1[] = {"--text", md, "--text-format", "markdown", NULL};
    cr_assert_eq(crawl(&e, x1), 0, "%s", fx_read_file(e.log, NULL));
    char *t = fx_read_file(md, NULL);
    char *a = jsonl_line_of(t, fx_http_base(e.h), "/a", "");
    cr_assert_not_null(a, "%s", t);
    char link[256];
    snprintf(link, sizeof link, "[gauge](%s/levels)", fx_http_base(e.h));
    cr_expect(strstr(a, "\"text\":\"# Flood in the lower town\\n\\n") && strstr(a, link),
              "not Markdown: %s", a);
    free(a);
    free(t);
    char *x2[] = {"--text", all, "--text-all", "--crawl", "all", NULL};
    cr_assert_eq(crawl(&e, x2), 0, "%s", fx_read_file(e.log, NULL));
    t = fx_read_file(all, NULL);
    a = jsonl_line_of(t, fx_http_base(e.h), "/a", "");
    cr_assert_not_null(a, "%s", t);
    cr_expect(strstr(a, "Copyright 2026") && strstr(a, "Sport") && strstr(a, "forty years"),
              "--text-all lacks the page's other text: %s", a);
    free(a);
    free(t);
    crawl_env_stop(&e);
}

/* Edits of a few words in a long text: one group; an unrelated page and a
 * short one apart. */
Test(textout, near_dups_groups_near_copies_and_keeps_the_others_apart)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    char words[4096] = "", *w = words;
    const char *pool[] = {"harbour", "engine", "lantern", "meadow", "quarry", "saddle", "tundra",
                          "violin",  "walnut", "yarrow",  "basalt", "cinder", "dagger", "ember"};
    for (int i = 0; i < 400; i++)
        w += snprintf(w, sizeof words - (size_t)(w - words), "%s%s", i ? " " : "",
                      pool[(i * 7 + i / 3) % 14]);
    char v1[4300], v2[4300], other[4300];
    snprintf(v1, sizeof v1, "<p>%s.</p>", words);
    snprintf(v2, sizeof v2, "<p>%s.</p>", words);
    memcpy(strstr(v2, "harbour"), "HARBOUR", 7); /* two words changed */
    memcpy(strstr(v2 + 2000, "engine"), "ENGINE", 6);
    memcpy(strstr(v2 + 2000, "meadow"), "pillow", 6);
    snprintf(other, sizeof other, "<p>%s</p><p>%s</p>", ARTICLE, ARTICLE);
    char *p1 = framed("One", "en", v1), *p2 = framed("Two", "en", v2),
         *p3 = framed("Three", "en", other);
    fx_http_page(e.h, "/", "<a href=/one>1</a><a href=/two>2</a><a href=/three>3</a>");
    fx_http_page(e.h, "/one", p1);
    fx_http_page(e.h, "/two", p2);
    fx_http_page(e.h, "/three", p3);
    char text[600], groups[600], err[600];
    snprintf(text, sizeof text, "%s/text.jsonl", e.dir);
    snprintf(groups, sizeof groups, "%s/groups", e.dir);
    snprintf(err, sizeof err, "%s/nd.err", e.dir);
    char *extra[] = {"--text", text, NULL};
    cr_assert_eq(crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    char *nd[] = {CRAWLER_BIN, "near-dups", text, NULL};
    cr_assert_eq(fx_run(nd, groups, err, 30000), 0, "%s", fx_read_file(err, NULL));
    char *g = fx_read_file(groups, NULL), *why = fx_read_file(err, NULL);
    cr_assert_not_null(g);
    char want[512];
    snprintf(want, sizeof want, "\"urls\":[\"%s/one\",\"%s/two\"]}", fx_http_base(e.h),
             fx_http_base(e.h));
    cr_expect_eq(count_lines(g), 1, "groups:\n%s\n%s", g, why);
    cr_expect(strstr(g, "{\"size\":2,") && strstr(g, want), "groups:\n%s", g);
    cr_expect(why && strstr(why, "4 records, 1 groups"), "%s", why);
    free(g);
    free(why);
    free(p1);
    free(p2);
    free(p3);
    crawl_env_stop(&e);
}

/* Crawls N pages of `repeat` times chunk each (8 in flight at once) with
 * --text into text; gives the crawler's peak RSS in KiB (a crawler past
 * GUARD_KB is killed: a regression must not eat the machine) and its wait
 * status. */
enum { N_BIG = 8, GUARD_KB = 1024 * 1024 };
static long crawl_peak_kb(crawl_env_t *e, const char *chunk, size_t repeat, const char *text,
                          int *status)
{
    char seeds[N_BIG * 64] = "", path[32];
    for (int i = 0; i < N_BIG; i++) {
        snprintf(path, sizeof path, "/big%zu-%d", repeat, i);
        fx_http_set(e->h, path, &(fx_route_t){.body = chunk, .repeat = repeat});
        size_t at = strlen(seeds);
        snprintf(seeds + at, sizeof seeds - at, "%s%s\n", fx_http_base(e->h), path);
    }
    cr_assert_eq(fx_write_file(e->seeds, seeds), 0);
    char *argv[] = {CRAWLER_BIN, "crawl",      "--redis",    (char *)fx_redis_url(e->r),
                    "--seeds",   e->seeds,     "--delay",    "0",
                    "--quiet",   "--text",     (char *)text, "--max-size",
                    "67108864",  "--per-host", "8",          NULL};
    pid_t pid = fx_spawn(argv, NULL, e->log);
    cr_assert_gt(pid, 0);
    struct rusage ru;
    pid_t got;
    uint64_t deadline = fx_now_ms() + 240000;
    while ((got = wait4(pid, status, WNOHANG, &ru)) == 0 && fx_now_ms() < deadline) {
        char p[64];
        long size = 0, res = 0;
        snprintf(p, sizeof p, "/proc/%d/statm", (int)pid);
        FILE *f = fopen(p, "r");
        if (f && fscanf(f, "%ld %ld", &size, &res) == 2 && res * 4 > GUARD_KB)
            kill(pid, SIGKILL);
        if (f)
            fclose(f);
        usleep(5000);
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        wait4(pid, status, 0, &ru);
    }
    return ru.ru_maxrss;
}

/* Pages of 50 MB of text, 8 in flight at once: the extractor keeps at most
 * its cap of each page's text, so the crawler's peak RSS stays within a
 * margin of the same crawl's on pages of 64 KB (measured first, in the same
 * build: a sanitizer's overhead is in both), far below the 400 MB that 8
 * pages' text would take.  (ASan's quarantine of freed blocks, 256 MB by
 * default, would hide the difference: the child runs with a small one.) */
Test(textout, a_50_mb_page_costs_no_more_memory_than_a_small_one, .timeout = 300)
{
    enum { MARGIN_KB = 100 * 1024 };
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%squarantine_size_mb=4", asan ? asan : "",
             asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1); /* (this test's process only: the child inherits it) */
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    static char chunk[64 * 1024]; /* 64 KiB of paragraphs */
    const char *para = "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
                       "eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>\n";
    for (size_t at = 0; at + strlen(para) < sizeof chunk; at += strlen(para))
        memcpy(chunk + at, para, strlen(para) + 1);
    char small[600], text[600];
    snprintf(small, sizeof small, "%s/small.jsonl", e.dir);
    snprintf(text, sizeof text, "%s/text.jsonl", e.dir);
    int st = 0;
    long base = crawl_peak_kb(&e, chunk, 1, small, &st);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crawler ended with %d: %s", st,
              fx_read_file(e.log, NULL));
    long peak = crawl_peak_kb(&e, chunk, (50u << 20) / strlen(chunk), text, &st);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crawler ended with %d: %s", st,
              fx_read_file(e.log, NULL));
    cr_log_info("peak RSS %ld KiB for %d pages of 50 MB with --text, %ld KiB for 64 KB pages", peak,
                N_BIG, base);
    cr_expect_lt(peak, base + MARGIN_KB,
                 "peak RSS %ld KiB for %d pages of 50 MB with --text, %ld KiB for 64 KB pages",
                 peak, N_BIG, base);
    char *t = fx_read_file(text, NULL);
    cr_expect_eq(count_lines(t), N_BIG, "%zu text lines", count_lines(t));
    free(t);
    crawl_env_stop(&e);
}

/* --wet: a warcinfo record, then one conversion record per page with text,
 * its block the page's text, referring to the page's response record in
 * --warc. */
Test(textout, wet_records_refer_to_their_responses)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    char warc[600], wet[600], text[600];
    snprintf(warc, sizeof warc, "%s/c.warc.gz", e.dir);
    snprintf(wet, sizeof wet, "%s/c.wet.gz", e.dir);
    snprintf(text, sizeof text, "%s/text.jsonl", e.dir);
    char *extra[] = {"--warc", warc, "--wet", wet, "--text", text, NULL};
    cr_assert_eq(crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    wfile_t w = read_warc(warc), t = read_warc(wet);
    cr_assert_geq(t.n, 1);
    cr_expect_str_eq(hget(&t.r[0], "WARC-Type"), "warcinfo");
    cr_expect_str_eq(hget(&t.r[0], "WARC-Filename"), "c.wet.gz");
    size_t conversions = 0;
    for (size_t i = 1; i < t.n; i++) {
        const wrec_t *c = &t.r[i];
        cr_assert_str_eq(hget(c, "WARC-Type"), "conversion");
        cr_expect_str_eq(hget(c, "Content-Type"), "text/plain");
        conversions++;
        const char *uri = hget(c, "WARC-Target-URI"), *ref = hget(c, "WARC-Refers-To");
        cr_assert_not_null(ref, "no WARC-Refers-To for %s", uri);
        int found = 0;
        for (size_t k = 0; k < w.n; k++)
            if (!strcmp(hget(&w.r[k], "WARC-Record-ID"), ref)) {
                found = 1;
                cr_expect_str_eq(hget(&w.r[k], "WARC-Type"), "response");
                cr_expect_str_eq(hget(&w.r[k], "WARC-Target-URI"), uri);
            }
        cr_expect(found, "%s refers to %s, which is not in the WARC", uri, ref);
        if (strstr(uri, "/a")) {
            cr_expect(memmem(c->block, c->block_len, "forty years", 11), "no text in %s", uri);
            cr_expect_str_eq(hget(c, "WARC-Identified-Content-Language"), "en");
        }
    }
    char *tl = fx_read_file(text, NULL);
    cr_expect_eq(conversions, count_lines(tl), "%zu conversions for %zu text lines", conversions,
                 count_lines(tl));
    free(tl);
    free_warc(&w);
    free_warc(&t);
    crawl_env_stop(&e);
}

/* ---- --links ---------------------------------------------------------------- */

/* The links line of page base + path in file text, parsed loosely: the
 * object of the link whose "url" is want and that comes after the `nth`
 * such (0: the first), or NULL (caller frees). */
static char *link_obj(const char *line, const char *want, int nth)
{
    char key[700];
    snprintf(key, sizeof key, "{\"url\":\"%s\",\"kind\":", want);
    const char *at = line;
    for (int i = 0; at && i <= nth; i++)
        if ((at = strstr(at, key)) && i < nth)
            at++;
    if (!at)
        return NULL;
    const char *end = strchr(at, '}');
    return end ? strndup(at, (size_t)(end - at + 1)) : NULL;
}

static void expect_link(const char *line, const char *base, const char *path, int nth,
                        const char *rest)
{
    char want[600];
    snprintf(want, sizeof want, "%s%s", base, path);
    char *o = link_obj(line, want, nth);
    cr_expect(o && strstr(o, rest), "link %s (#%d): %s, expected %s", path, nth, o, rest);
    free(o);
}

/* Every link of a page, in document order: its kind, anchor text, rel, and
 * whether it was offered or why not (a repeat, out of scope, nofollow,
 * past the per-page cap); a page made nofollow by a late meta robots has
 * none followed; links past the seed's --max-depth: "depth". */
Test(textout, links_lists_each_outlink_with_its_text_rel_and_fate)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    fx_http_page(e.h, "/",
                 "<html><head><link rel=next href=/p2><link rel=stylesheet href=/s.css></head>"
                 "<body><nav><a href=/a>Home  <b>page</b>\n</a> <a href=/a>again</a> "
                 "<a href=mailto:x@y>mail</a> <a href=/n rel=\"nofollow ugc\">No   follow</a> "
                 "<a href=\"http://other.example/\">off site</a><iframe src=/frame></iframe>"
                 "<a href=#top>top</a><a href=/img><img src=i.png alt=\"a picture\"></a>"
                 "<a href=/c1>c1</a><a href=/c2>c2</a><a href=/c3>c3</a>"
                 "<a href=/late>late</a></nav></body></html>");
    fx_http_page(e.h, "/late",
                 "<html><body><a href=/x>x</a><meta name=robots content=nofollow>"
                 "<a href=/y>y</a></body></html>");
    const char *leaves[] = {"/a", "/p2", "/frame", "/img", "/c1", "/c2", "/c3", "/x", "/y", "/n"};
    for (size_t i = 0; i < sizeof leaves / sizeof *leaves; i++)
        fx_http_page(e.h, leaves[i], "<p>leaf</p>");
    char links[600];
    snprintf(links, sizeof links, "%s/links.jsonl", e.dir);
    char *extra[] = {"--links", links, "--max-links-per-page", "7", NULL};
    cr_assert_eq(crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    char *t = fx_read_file(links, NULL);
    cr_assert_not_null(t);
    for (const char *l = t; *l;) { /* every line is one valid JSON object */
        const char *nl = strchr(l, '\n');
        cr_assert_not_null(nl);
        cr_expect(json_object_line_ok(l, (size_t)(nl - l + 1)), "not a JSON line: %.*s",
                  (int)(nl - l), l);
        l = nl + 1;
    }
    const char *b = fx_http_base(e.h);
    char *home = jsonl_line_of(t, b, "/", "\"links\":");
    cr_assert_not_null(home, "no links line for the seed:\n%s", t);
    expect_link(home, b, "/p2", 0,
                "\"kind\":\"link\",\"text\":null,\"rel\":\"next\",\"followed\":true");
    cr_expect(!strstr(home, "s.css"), "a stylesheet listed as a link: %s", home);
    expect_link(home, b, "/a", 0,
                "\"kind\":\"a\",\"text\":\"Home page\",\"rel\":null,\"followed\":true");
    expect_link(home, b, "/a", 1,
                "\"text\":\"again\",\"rel\":null,\"followed\":false,\"why\":\"repeat\"");
    cr_expect(!strstr(home, "mailto"), "%s", home);
    expect_link(
        home, b, "/n", 0,
        "\"text\":\"No follow\",\"rel\":\"nofollow ugc\",\"followed\":false,\"why\":\"nofollow\"");
    char *off = link_obj(home, "http://other.example/", 0);
    cr_expect(off && strstr(off, "\"followed\":false,\"why\":\"scope\""), "%s", off);
    free(off);
    expect_link(home, b, "/frame", 0, "\"kind\":\"frame\",\"text\":null");
    cr_expect(!strstr(home, "#top"), "%s", home);
    expect_link(home, b, "/img", 0, "\"text\":\"a picture\"");
    /* offered: /p2 /a /frame /img /c1 /c2 /c3 = 7, the cap: /late is past it */
    expect_link(home, b, "/c3", 0, "\"followed\":true");
    expect_link(home, b, "/late", 0, "\"followed\":false,\"why\":\"cap\"");
    cr_expect(strstr(home, "\"omitted\":0,"), "%s", home);
    free(home);
    char *late = jsonl_line_of(t, b, "/late", "\"links\":");
    cr_expect_null(late, "/late was past the cap, never fetched: %s", late);
    free(late);
    free(t);

    /* the late page as a seed: its meta robots nofollow comes after /x */
    char seeds[600];
    snprintf(seeds, sizeof seeds, "%s/late\n", b);
    cr_assert_eq(fx_write_file(e.seeds, seeds), 0);
    char links2[600];
    snprintf(links2, sizeof links2, "%s/links2.jsonl", e.dir);
    char *extra2[] = {"--links", links2, "--crawl", "late", NULL};
    cr_assert_eq(crawl(&e, extra2), 0, "%s", fx_read_file(e.log, NULL));
    t = fx_read_file(links2, NULL);
    late = jsonl_line_of(t, b, "/late", "\"links\":");
    cr_assert_not_null(late, "%s", t);
    expect_link(late, b, "/x", 0, "\"followed\":false,\"why\":\"nofollow\"");
    expect_link(late, b, "/y", 0, "\"followed\":false,\"why\":\"nofollow\"");
    free(late);
    free(t);

    /* --max-depth 0: the seed's links are listed, none offered */
    snprintf(seeds, sizeof seeds, "%s/\n", b);
    cr_assert_eq(fx_write_file(e.seeds, seeds), 0);
    char links3[600];
    snprintf(links3, sizeof links3, "%s/links3.jsonl", e.dir);
    char *extra3[] = {"--links", links3, "--crawl", "deep", "--max-depth", "0", NULL};
    cr_assert_eq(crawl(&e, extra3), 0, "%s", fx_read_file(e.log, NULL));
    t = fx_read_file(links3, NULL);
    home = jsonl_line_of(t, b, "/", "\"links\":");
    cr_assert_not_null(home, "%s", t);
    expect_link(home, b, "/a", 0, "\"followed\":false,\"why\":\"depth\"");
    expect_link(home, b, "/n", 0, "\"why\":\"nofollow\"");
    cr_expect_eq(count_lines(t), 1, "pages past --max-depth fetched:\n%s", t);
    free(home);
    free(t);
    crawl_env_stop(&e);
}

/* A page of 20,000 links, each with 300 bytes of anchor text: the record
 * keeps 512 KiB of them and counts the rest; each text is cut at 256
 * bytes, never inside a character. */
Test(textout, links_of_a_huge_page_are_capped_and_counted)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    enum { N = 20000 };
    size_t cap = (size_t)N * 400 + 100, len = 0;
    char *page = malloc(cap);
    cr_assert_not_null(page);
    char word[301];
    for (int i = 0; i < 100; i++) /* 100 x "é" then 100 x 'x': 300 bytes */
        memcpy(word + 2 * i, "\xc3\xa9", 2);
    memset(word + 200, 'x', 100);
    word[300] = '\0';
    len += (size_t)snprintf(page, cap, "<html><body>");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(page + len, cap - len, "<a href=/l%d>%s</a>", i, word);
    snprintf(page + len, cap - len, "</body></html>");
    fx_http_page(e.h, "/", page);
    free(page);
    char links[600];
    snprintf(links, sizeof links, "%s/links.jsonl", e.dir);
    char *extra[] = {"--links", links, "--max-depth", "0", NULL};
    cr_assert_eq(crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    size_t n = 0;
    char *t = fx_read_file(links, &n);
    cr_assert(t && n > 0);
    cr_expect(json_object_line_ok(t, n), "not one JSON line");
    size_t listed = 0;
    for (const char *p = t; (p = strstr(p, "\"kind\":\"a\"")); p++)
        listed++;
    const char *om = strstr(t, "\"omitted\":");
    cr_assert_not_null(om);
    unsigned long omitted = strtoul(om + 10, NULL, 10);
    cr_log_info("listed %zu, omitted %lu, %zu bytes", listed, omitted, n);
    cr_expect_eq(listed + omitted, N, "%zu listed + %lu omitted", listed, omitted);
    cr_expect(omitted > 0 && listed > 100, "%zu listed, %lu omitted", listed, omitted);
    cr_expect_lt(n, 2u * 512 * 1024, "a line of %zu bytes", n);
    char want[300];
    for (int i = 0; i < 100; i++)
        memcpy(want + 2 * i, "\xc3\xa9", 2);
    memset(want + 200, 'x', 56); /* 256 bytes */
    want[256] = '\0';
    char key[400];
    snprintf(key, sizeof key, "\"text\":\"%s\",", want);
    cr_expect(strstr(t, key), "the anchor text is not cut at 256 bytes");
    free(t);
    crawl_env_stop(&e);
}
