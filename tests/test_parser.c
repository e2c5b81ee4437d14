/*
 * test_parser.c -- the streaming link extractor of parser/: each extraction
 * rule, nofollow, canonical, dropped-link counters, malformed HTML,
 * charsets, and pages of 50 MB fed in chunks with bounded memory.  The URL
 * normalizer is tests/test_parser_url.c.  Every failure message names its
 * input.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "parser.h"
#include "xmlheap.h"

Test(parser, recognizes_html_content_types)
{
    static const struct {
        const char *ct;
        int want;
    } cases[] = {
        {"text/html", 1},
        {"text/html; charset=utf-8", 1},
        {"TEXT/HTML;charset=iso-8859-1", 1},
        {" application/xhtml+xml", 1},
        {"text/plain", 0},
        {"text/htmlx", 0},
        {"application/json", 0},
        {"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(parser_is_html(cases[i].ct), cases[i].want, "parser_is_html(%s)",
                     cases[i].ct ? cases[i].ct : "NULL");
}

/* ---- link extraction ---------------------------------------------------- */

#define PAGE "http://example.com/dir/page.html"

/* Links seen, as "K url\n" lines (K: A, L, F, R). */
typedef struct got {
    char buf[8192];
    size_t len;
    uint64_t count;
} got_t;

static void collect(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    got_t *g = ud;
    static const char kinds[] = "ALFR";
    g->count++;
    cr_assert_eq(strlen(url), len, "callback length of %s", url);
    if (g->len + len + 4 < sizeof(g->buf))
        g->len +=
            (size_t)snprintf(g->buf + g->len, sizeof(g->buf) - g->len, "%c %s\n", kinds[kind], url);
}

typedef struct page_opts {
    const char *ct;  /* Content-Type */
    const char *xrt; /* X-Robots-Tag */
    int follow;      /* follow_nofollow */
} page_opts_t;

/* Parses html fed in pieces of chunk bytes; returns the finished parser
 * (caller frees) with the links in *g. */
static parser_t *parse(const char *html, size_t len, const page_opts_t *o, size_t chunk, got_t *g)
{
    parser_config_t cfg = {.max_url_length = 0, .follow_nofollow = o ? o->follow : 0};
    parser_t *p = parser_new(&cfg, PAGE, o ? o->ct : NULL, o ? o->xrt : NULL, collect, g);
    cr_assert_not_null(p, "parser_new");
    memset(g, 0, sizeof(*g));
    for (size_t i = 0; i < len; i += chunk) {
        size_t n = len - i < chunk ? len - i : chunk;
        cr_assert_eq(parser_feed(p, html + i, n), 0, "feed");
    }
    cr_assert_eq(parser_finish(p), 0, "finish");
    return p;
}

typedef struct page_case {
    const char *name;
    const char *html;
    const char *want; /* "K url\n" lines */
} page_case_t;

/* Checks a page with several chunkings (1 byte, 3, 4 KB, whole). */
static void check_page(const page_case_t *c, size_t len, const page_opts_t *o)
{
    static const size_t chunks[] = {1, 3, 4096, 0};
    got_t g;
    if (len == 0)
        len = strlen(c->html);
    for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
        size_t chunk = chunks[k] ? chunks[k] : (len ? len : 1);
        parser_t *p = parse(c->html, len, o, chunk, &g);
        g.buf[g.len] = '\0';
        cr_expect_str_eq(g.buf, c->want, "page '%s' (fed in %zu-byte chunks):\ngot:\n%swant:\n%s",
                         c->name, chunk, g.buf, c->want);
        parser_free(p);
    }
}

static const page_case_t rules_pages[] = {
    {"each element kind",
     "<a href=a1>x</a><area href=/area><link rel=alternate href=/alt>"
     "<frame src=/frame><iframe src=/iframe></iframe>"
     "<meta http-equiv=refresh content=\"0; url=/refresh\">",
     "A http://example.com/dir/a1\nA http://example.com/area\nL http://example.com/alt\n"
     "F http://example.com/frame\nF http://example.com/iframe\nR http://example.com/refresh\n"},
    {"resource links skipped",
     "<link rel=stylesheet href=/s.css><link rel='alternate stylesheet' href=/s2.css>"
     "<link rel=icon href=/i><link rel='shortcut icon' href=/i2><link rel=apple-touch-icon "
     "href=/i3><link rel=preload as=style href=/p><link rel=dns-prefetch href=//cdn.x>"
     "<link rel=manifest href=/m><link rel=next href=/page2><link href=/norel>",
     "L http://example.com/page2\n"}, /* no rel: no hyperlink (test_links.c) */
    {"first base only",
     "<a href=before>b</a><base href=\"http://other.org/x/\"><base href=/ignored/>"
     "<a href=after>a</a><a href=/abs>c</a>",
     "A http://example.com/dir/before\nA http://other.org/x/after\nA http://other.org/abs\n"},
    {"base without href does not count", "<base target=_blank><base href=/b/><a href=x>x</a>",
     "A http://example.com/b/x\n"},
    {"relative base", "<base href=../up/><a href=x>x</a>", "A http://example.com/up/x\n"},
    {"character references decoded",
     "<a href=\"/a?x=1&amp;y=2&#38;z=&#x33;\">x</a><a href='/caf&eacute;'>y</a>"
     "<a href=/&lt;tag&gt;>z</a>",
     "A http://example.com/a?x=1&y=2&z=3\nA http://example.com/caf%C3%A9\n"
     "A http://example.com/%3Ctag%3E\n"},
    {"dropped schemes, self links, fragments",
     "<a href='javascript:void(0)'>j</a><a href=mailto:x@y>m</a><a href=tel:1>t</a>"
     "<a href='data:text/html,x'>d</a><a href=#top>f</a><a href=''>e</a><a>no href</a>"
     "<a href='/p#frag'>p</a>",
     "A http://example.com/p\n"},
    {"rel nofollow skipped",
     "<a rel=nofollow href=/nf>n</a><a rel='external NoFollow' href=/nf2>n</a>"
     "<link rel='next nofollow' href=/nf3><a rel=nofollowers href=/kept>k</a>",
     "A http://example.com/kept\n"},
    {"meta refresh forms",
     "<meta http-equiv=REFRESH content=\"5;URL='/r1'\"><meta http-equiv=refresh content=\"3\">"
     "<meta http-equiv=refresh content=\"1, url = /r2\"><meta http-equiv=refresh "
     "content=\"0;/r3\">",
     "R http://example.com/r1\nR http://example.com/r2\nR http://example.com/r3\n"},
    {"links inside script, style, comments are not links",
     "<script>document.write('<a href=/s1>');if(a<b){}</script><style>a{}</style>"
     "<!-- <a href=/c1> --><a href=/real>r</a><script src=/x.js></script><a href=/r2>",
     "A http://example.com/real\nA http://example.com/r2\n"},
    {"uppercase tags and attributes", "<A HREF=/UP>x</A><IFRAME SRC=/IF></IFRAME>",
     "A http://example.com/UP\nF http://example.com/IF\n"},
    {"credentials of a base or a link are dropped",
     "<a href='http://u:p@example.com/d/'>s</a><base href='http://u:p@other.org/x/'>"
     "<a href=y>y</a><a href='//@h.org/'>z</a><a href='/w@x'>w</a>",
     "A http://example.com/d/\nA http://other.org/x/y\nA http://h.org/\n"
     "A http://other.org/w@x\n"},
};

Test(parser, extracts_links_by_each_rule)
{
    for (size_t i = 0; i < sizeof(rules_pages) / sizeof(rules_pages[0]); i++)
        check_page(&rules_pages[i], 0, NULL);
}

Test(parser, follow_nofollow_reports_rel_nofollow_links)
{
    page_case_t c = {"follow_nofollow", "<a rel=nofollow href=/nf>n</a>",
                     "A http://example.com/nf\n"};
    page_opts_t o = {.follow = 1};
    check_page(&c, 0, &o);
}

Test(parser, meta_robots_nofollow_stops_links)
{
    static const page_case_t cases[] = {
        {"meta robots nofollow", "<meta name=robots content='noindex, nofollow'><a href=/x>x</a>",
         ""},
        {"meta robots none", "<meta name=ROBOTS content=none><a href=/x>x</a>", ""},
        {"meta robots index", "<meta name=robots content='index,follow'><a href=/x>x</a>",
         "A http://example.com/x\n"},
    };
    got_t g;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_page(&cases[i], 0, NULL);
    parser_t *p = parse(cases[0].html, strlen(cases[0].html), NULL, 5, &g);
    cr_expect(parser_nofollow(p), "nofollow flag");
    cr_expect_eq(parser_get_stats(p)->dropped_nofollow, 1);
    parser_free(p);
}

Test(parser, x_robots_tag_nofollow_stops_links)
{
    page_case_t c = {"X-Robots-Tag", "<a href=/x>x</a><iframe src=/f></iframe>", ""};
    page_opts_t o = {.xrt = "noarchive, NOFOLLOW"};
    got_t g;
    check_page(&c, 0, &o);
    parser_t *p = parse(c.html, strlen(c.html), &o, 4096, &g);
    cr_expect(parser_nofollow(p));
    parser_free(p);
}

Test(parser, reports_canonical_with_the_page)
{
    const char *html = "<link rel=canonical href='/canon?a=1#x'><link rel=canonical href=/second>"
                       "<a href=/x>x</a>";
    got_t g;
    parser_t *p = parse(html, strlen(html), NULL, 7, &g);
    cr_expect_str_eq(parser_canonical(p), "http://example.com/canon?a=1");
    cr_expect_eq(g.count, 1, "canonical is not a link: %s", g.buf);
    parser_free(p);
    p = parse("<a href=/x>", 11, NULL, 7, &g);
    cr_expect_null(parser_canonical(p));
    parser_free(p);
}

Test(parser, counts_dropped_links_by_reason)
{
    char html[8192];
    int n = snprintf(html, sizeof(html),
                     "<a href=javascript:x>1</a><a href=mailto:y>2</a><a href='http://a b/'>3</a>"
                     "<a rel=nofollow href=/n>4</a><a href=/ok>5</a><a href='/%02100d'>6</a>",
                     0);
    got_t g;
    parser_t *p = parse(html, (size_t)n, NULL, 100, &g);
    const parser_stats_t *s = parser_get_stats(p);
    cr_expect_eq(s->links, 1);
    cr_expect_eq(s->dropped_scheme, 2);
    cr_expect_eq(s->dropped_bad, 1);
    cr_expect_eq(s->dropped_nofollow, 1);
    cr_expect_eq(s->dropped_long, 1);
    cr_expect_eq(s->bytes, (uint64_t)n);
    parser_free(p);
}

static const page_case_t malformed[] = {
    {"unclosed tags",
     "<html><body><div><p><a href=/u1>one<a href=/u2>two<table><tr><td>"
     "<a href=/u3",
     "A http://example.com/u1\nA http://example.com/u2\nA http://example.com/u3\n"},
    {"misnested tags", "<b><a href=/m1><i>x</b></a></i><p><div></p><a href=/m2></div>",
     "A http://example.com/m1\nA http://example.com/m2\n"},
    {"unquoted and odd attributes",
     "<a href=/q1 class=x>1</a><a class = 'y' href = /q2 >2</a><a href=/q3/>3</a>"
     "<a href=\"/q4\"title=t>4</a><a href='/q5'href=/dup>5</a><a hReF=/q6>6",
     "A http://example.com/q1\nA http://example.com/q2\nA http://example.com/q3/\n"
     "A http://example.com/q4\nA http://example.com/q5\nA http://example.com/q6\n"},
    {"quote inside unquoted value", "<a href=/x\"y>1</a><a href=/z>2</a>",
     "A http://example.com/x%22y\nA http://example.com/z\n"},
    {"several base tags", "<base href=/b1/><base href=/b2/><base href=/b3/><a href=x>",
     "A http://example.com/b1/x\n"},
    {"garbage around tags", "<<<a href=/g1>>>><</a><!x><? pi ?><a href=/g2></ a><a href=/g3>",
     "A http://example.com/g1\nA http://example.com/g2\nA http://example.com/g3\n"},
    {"unterminated comment", "<a href=/c1><!-- <a href=/c2>", "A http://example.com/c1\n"},
    {"unterminated script", "<a href=/s1><script>var a = '<a href=/s2>';",
     "A http://example.com/s1\n"},
    {"whitespace in href", "<a href=\"\n  /w1\t\n\">x</a><a href=' /w 2 '>",
     "A http://example.com/w1\nA http://example.com/w%202\n"},
};

Test(parser, survives_malformed_html)
{
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
        check_page(&malformed[i], 0, NULL);
}

Test(parser, survives_nul_bytes_and_invalid_utf8)
{
    static const char nul[] =
        "<a href=/n1>a\0b</a>\0<a href=/n\0\x32>\0\0<a\0href=/n3><a href=/n4>";
    static const char bad[] = "<p>\xff\xfe\xc3\x28 \xe2\x82</p><a href=/b1>\x80\x81</a>"
                              "<a href=\"/b\xc3\x28\">x</a><a href=/b3>";
    got_t g;
    parser_t *p = parse(nul, sizeof(nul) - 1, NULL, 4096, &g);
    g.buf[g.len] = '\0';
    cr_expect(strstr(g.buf, "A http://example.com/n1\n") &&
                  strstr(g.buf, "http://example.com/n4\n"),
              "NUL bytes page: %s", g.buf);
    parser_free(p);
    p = parse(bad, sizeof(bad) - 1, NULL, 4096, &g);
    g.buf[g.len] = '\0';
    cr_expect(strstr(g.buf, "A http://example.com/b1\n") &&
                  strstr(g.buf, "http://example.com/b3\n"),
              "invalid UTF-8 page: %s", g.buf);
    parser_free(p);
}

static char *read_data(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/parser/%s", TEST_DATA_DIR, name);
    char *s = fx_read_file(path, len);
    cr_assert_not_null(s, "cannot read %s", path);
    return s;
}

Test(parser, windows_1252_pages_give_utf8_urls)
{
    size_t len;
    char *meta = read_data("win1252-meta.html", &len);
    page_case_t c = {
        "windows-1252 via meta", meta,
        "A http://example.com/caf%C3%A9.html\nA http://example.com/na%C3%AFve?q=%C3%A9\n"
        "A http://example.com/euro-%E2%82%AC\n"};
    check_page(&c, len, NULL);
    char *plain = read_data("win1252-noheader.html", &len);
    page_case_t h = {"windows-1252 via Content-Type", plain,
                     "A http://example.com/caf%C3%A9.html\nA http://example.com/euro-%E2%82%AC\n"};
    page_opts_t o = {.ct = "text/html; charset=\"windows-1252\""};
    check_page(&h, len, &o);
    /* bytes windows-1252 leaves undefined do not stop the page (iconv's
     * decoder stops libxml2 there); they decode as browsers do */
    page_opts_t o1 = {.ct = "text/html; charset=windows-1252"};
    page_case_t u = {"undefined windows-1252 bytes", "<a href=/b\x8d\x81>x\x90</a><a href=/after>",
                     "A http://example.com/b%C2%8D%C2%81\nA http://example.com/after\n"};
    check_page(&u, 0, &o1);
    page_case_t um = {"undefined windows-1252 bytes, meta charset",
                      "<meta charset=windows-1252><a href=/\x80\x9d>x</a><a href=/after>",
                      "A http://example.com/%E2%82%AC%C2%9D\nA http://example.com/after\n"};
    check_page(&um, 0, NULL);
    /* no charset anywhere: libxml2 falls back to latin-1 on invalid UTF-8 */
    page_case_t l1 = {"undeclared latin-1", "<a href=/caf\xe9>x</a><a href=/after>",
                      "A http://example.com/caf%C3%A9\nA http://example.com/after\n"};
    check_page(&l1, 0, NULL);
    /* the header wins over a contradicting <meta charset> */
    page_opts_t o2 = {.ct = "text/html; charset=windows-1252"};
    page_case_t m = {"header beats meta", "<meta charset=utf-8><a href=/caf\xe9>",
                     "A http://example.com/caf%C3%A9\n"};
    check_page(&m, 0, &o2);
    free(meta);
    free(plain);
}

Test(parser, realistic_page_gives_expected_links)
{
    size_t len;
    char *html = read_data("realistic.html", &len);
    page_case_t c = {
        "realistic.html", html,
        "L http://example.com/feed.xml\nA http://example.com/\nA http://example.com/world/\n"
        "A http://example.com/tech/?ref=nav&lang=en\nA https://shop.example.com/cart\n"
        "A http://example.com/2024/01/story.html\nA http://example.com/about%20us.html\n"
        "F http://video.example.org/embed/42\nA http://example.com/privacy\n"
        "A http://example.com/terms\n"};
    check_page(&c, len, NULL);
    free(html);
}

/* "<a " + filler attributes up to pad bytes + tail + "<a href=/after>" */
static char *oversized_tag(size_t pad, const char *tail, size_t value_len)
{
    size_t tl = strlen(tail), n = 0;
    char *s = malloc(pad + tl + value_len + 64);
    cr_assert_not_null(s);
    memcpy(s, "<a ", 3);
    n = 3;
    while (n < pad)
        n += (size_t)snprintf(s + n, 16, "x=y ");
    memcpy(s + n, tail, tl);
    n += tl;
    memset(s + n, 'a', value_len);
    n += value_len;
    n += (size_t)snprintf(s + n, 64, "%s><a href=/after>", strchr(tail, '"') ? "\"" : "");
    return s;
}

Test(parser, oversized_tags_never_report_a_cut_url)
{
    static const struct {
        const char *name, *tail;
        size_t pad, value_len;
        uint64_t dropped_long;
    } cases[] = {
        {"href after the tag cap", "href=\"/late", 300 * 1024, 10, 0},
        {"quoted href across the tag cap", "href=\"/", 256 * 1024 - 100, 20000, 1},
        {"unquoted href across the tag cap", "href=/", 256 * 1024 - 100, 20000, 1},
        {"unquoted href after the tag cap", "href=/", 300 * 1024, 10, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        got_t g;
        char *html = oversized_tag(cases[i].pad, cases[i].tail, cases[i].value_len);
        parser_t *p = parse(html, strlen(html), NULL, 65536, &g);
        g.buf[g.len] = '\0';
        cr_expect_str_eq(g.buf, "A http://example.com/after\n", "%s: got %s", cases[i].name, g.buf);
        cr_expect_eq(parser_get_stats(p)->dropped_long, cases[i].dropped_long, "%s: dropped_long",
                     cases[i].name);
        parser_free(p);
        free(html);
    }
}

Test(parser, libxml2_errors_are_not_printed)
{
    static const char junk[] = "<html><<<>\xff\xfe<a href=\"x<b></i></table>&bogus;&#xFFFFFFFF;"
                               "<!DOCTYPE x><?xml ?></html></html><td></tr>\0\0<a href=/ok>";
    /* bytes undefined in windows-1252, odd bytes in UTF-16: libxml2 reports
     * these conversion errors without a parser context */
    static const char undef[] = "<a href=/x\x81\x8d\x90\x9d>\x81</a>";
    static const page_opts_t opts[] = {{NULL, NULL, 0},
                                       {"text/html; charset=windows-1252", NULL, 0},
                                       {"text/html; charset=utf-16", NULL, 0},
                                       {"text/html; charset=shift_jis", NULL, 0}};
    char *dir = fx_tmpdir(), path[512];
    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/stderr", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600), saved = dup(2);
    cr_assert(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    got_t g;
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        parser_free(parse(junk, sizeof(junk) - 1, &opts[i], 3, &g));
        parser_free(parse(undef, sizeof(undef) - 1, &opts[i], 5, &g));
    }
    dup2(saved, 2);
    close(saved);
    close(fd);
    struct stat st;
    cr_expect_eq(stat(path, &st), 0);
    char *text = fx_read_file(path, NULL);
    cr_expect_eq(st.st_size, 0, "libxml2 wrote %lld bytes to stderr: %.300s", (long long)st.st_size,
                 text ? text : "");
    free(text);
    fx_rmtree(dir);
    free(dir);
}

Test(parser, rejects_misuse)
{
    got_t g;
    parser_t *p = parse("<a href=/x>", 11, NULL, 11, &g);
    cr_expect_eq(parser_feed(p, "<a href=/y>", 11), CRAWL_EINVAL, "feed after finish");
    cr_expect_eq(parser_finish(p), CRAWL_EINVAL, "finish twice");
    cr_expect_eq(parser_feed(NULL, "x", 1), CRAWL_EINVAL);
    parser_free(p);
    parser_free(NULL);
    /* no page URL: absolute links still work, relative ones are counted bad */
    p = parser_new(NULL, NULL, NULL, NULL, collect, &g);
    cr_assert_not_null(p);
    memset(&g, 0, sizeof(g));
    cr_expect_eq(parser_feed(p, "<a href=/rel><a href=http://abs.org/>", 37), 0);
    cr_expect_eq(parser_finish(p), 0);
    cr_expect_eq(g.count, 1);
    cr_expect_eq(parser_get_stats(p)->dropped_bad, 1);
    parser_free(p);
}

/* ---- memory stays bounded: libxml2's live heap, counted ----------------- */

/* libxml2's heap is counted by tests/xmlheap.c. */
static void count_libxml2_heap(void)
{
    cr_assert_eq(xmlheap_install(), 0, "xmlMemSetup");
}

#define BIG (50u * 1024 * 1024)         /* bytes fed */
#define HEAP_BOUND (16ll * 1024 * 1024) /* generous bound on libxml2's peak heap */

/* Feeds head, then BIG bytes of filler (fill(buf, n, offset) writes the next
 * n bytes), then tail, in 64 KB chunks.  Returns the finished parser; the
 * peak growth of libxml2's heap is in *peak. */
static parser_t *feed_big(const char *head, size_t (*fill)(char *, size_t, size_t),
                          const char *tail, got_t *g, long long *peak)
{
    static char chunk[64 * 1024];
    parser_t *p = parser_new(NULL, PAGE, "text/html", NULL, collect, g);
    cr_assert_not_null(p);
    memset(g, 0, sizeof(*g));
    long long base = xmlheap_live();
    xmlheap_reset_peak();
    cr_assert_eq(parser_feed(p, head, strlen(head)), 0);
    for (size_t done = 0; done < BIG;) {
        size_t n = fill(chunk, sizeof(chunk), done);
        cr_assert_eq(parser_feed(p, chunk, n), 0);
        done += n;
    }
    cr_assert_eq(parser_feed(p, tail, strlen(tail)), 0);
    cr_assert_eq(parser_finish(p), 0);
    *peak = xmlheap_peak() - base;
    return p;
}

/* A realistic stream: paragraphs of text, one link each (items_written). */
static size_t items_written;

static size_t fill_items(char *buf, size_t cap, size_t off)
{
    size_t n = 0;
    while (n + 200 < cap) {
        int k = snprintf(buf + n, cap - n,
                         "<div class=\"item\"><p>Lorem ipsum dolor sit amet, <a "
                         "href=\"/item/%zu\">item</a> consectetur adipiscing elit.</p></div>\n",
                         off + n);
        n += (size_t)k;
        items_written++;
    }
    return n;
}

Test(parser, fifty_mb_page_in_chunks_finds_every_link_in_bounded_memory)
{
    got_t g;
    long long peak;
    count_libxml2_heap();
    items_written = 0;
    parser_t *p =
        feed_big("<html><body>", fill_items, "<a href=/last>last</a></body></html>", &g, &peak);
    cr_expect_eq(g.count, items_written + 1, "links found: %llu, want %zu",
                 (unsigned long long)g.count, items_written + 1);
    cr_expect(strstr(g.buf, "A http://example.com/item/0\n"), "first link: %.200s", g.buf);
    cr_expect_lt(peak, HEAP_BOUND, "libxml2 heap grew by %lld bytes for a %u-byte page", peak, BIG);
    parser_free(p);
}

static size_t fill_x(char *buf, size_t cap, size_t off)
{
    (void)off;
    memset(buf, 'x', cap);
    return cap;
}

/* Script-like bytes: '<' and '>' everywhere, never "</". */
static size_t fill_code(char *buf, size_t cap, size_t off)
{
    (void)off;
    for (size_t i = 0; i < cap; i++)
        buf[i] = "if (a<b && c>d) x = \"'\"; "[i % 26];
    return cap;
}

typedef struct huge_case {
    const char *name, *head;
    size_t (*fill)(char *, size_t, size_t);
    const char *tail;
    int tag; /* the huge token is inside a tag */
} huge_case_t;

Test(parser, huge_tokens_keep_memory_bounded_and_later_links_found)
{
    static const huge_case_t cases[] = {
        {"50 MB quoted href", "<a href=\"/", fill_x, "\">x</a><a href=/after>", 1},
        {"50 MB unquoted attribute", "<a title=", fill_x, " href=/t>x</a><a href=/after>", 1},
        {"50 MB text run", "<p>", fill_x, "</p><a href=/after>", 0},
        {"50 MB comment", "<!-- ", fill_x, " --><a href=/after>", 0},
        {"50 MB script with < and >", "<script>", fill_code, "</script><a href=/after>", 0},
        {"50 MB style", "<style>", fill_x, "</style><a href=/after>", 0},
        /* an element name we do not need ("axxx..."): the tag is skipped whole */
        {"50 MB tag name", "<a", fill_x, " href=/t><a href=/after>", 0},
    };
    count_libxml2_heap();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        got_t g;
        long long peak;
        parser_t *p = feed_big(cases[i].head, cases[i].fill, cases[i].tail, &g, &peak);
        g.buf[g.len] = '\0';
        cr_expect(strstr(g.buf, "http://example.com/after\n"), "%s: link after it not found: %s",
                  cases[i].name, g.buf);
        cr_expect_lt(peak, HEAP_BOUND, "%s: libxml2 heap grew by %lld bytes", cases[i].name, peak);
        if (cases[i].tag) /* text, comments, scripts, other elements: skipped, not capped */
            cr_expect_gt(parser_get_stats(p)->capped, BIG / 2, "%s: capped %llu", cases[i].name,
                         (unsigned long long)parser_get_stats(p)->capped);
        parser_free(p);
    }
}
