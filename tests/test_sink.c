/*
 * test_sink.c -- the parser's own reading of a page for a text sink
 * (parser.h: parser_sink_t; parser/sink.c, decode.c, tree.c): the events a
 * page gives, written as a trace ("<p>text</p>", attributes as " a=v"),
 * whatever the pieces it is fed in.  Table-driven; every failure names its
 * input.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

typedef struct trace {
    char buf[8192];
    size_t n;
    int depth, max_depth;
} trace_t;

static void add(trace_t *t, const char *s, size_t n)
{
    if (t->n + n < sizeof(t->buf)) {
        memcpy(t->buf + t->n, s, n);
        t->n += n;
        t->buf[t->n] = '\0';
    }
}

static void on_start(void *ud, const char *name, const char *const *atts)
{
    trace_t *t = ud;
    add(t, "<", 1);
    add(t, name, strlen(name));
    for (; atts && atts[0]; atts += 2) {
        add(t, " ", 1);
        add(t, atts[0], strlen(atts[0]));
        if (atts[1]) {
            add(t, "=", 1);
            add(t, atts[1], strlen(atts[1]));
        }
    }
    add(t, ">", 1);
    if (++t->depth > t->max_depth)
        t->max_depth = t->depth;
}

static void on_end(void *ud, const char *name)
{
    trace_t *t = ud;
    add(t, "</", 2);
    add(t, name, strlen(name));
    add(t, ">", 1);
    t->depth--;
}

static void on_text(void *ud, const char *s, size_t n)
{
    add(ud, s, n);
}

/* The trace of html (len bytes) fed in pieces of `piece` bytes. */
static void run(const char *html, size_t len, const char *ctype, size_t piece, trace_t *t)
{
    parser_sink_t sink = {on_start, on_end, on_text, t, NULL};
    parser_config_t pc = {.sink = &sink};
    memset(t, 0, sizeof(*t));
    parser_t *p = parser_new(&pc, "http://example.com/", ctype, NULL, NULL, NULL);
    cr_assert(p, "parser_new");
    for (size_t off = 0; off < len; off += piece)
        cr_assert_eq(parser_feed(p, html + off, len - off < piece ? len - off : piece), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
}

typedef struct sink_case {
    const char *html;  /* the page */
    const char *ctype; /* Content-Type, or NULL */
    const char *want;  /* the trace */
} sink_case_t;

static void check(const sink_case_t *cases, size_t n)
{
    static const size_t pieces[] = {1, 2, 3, 7, 64, 1 << 20};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
            trace_t t;
            run(cases[i].html, strlen(cases[i].html), cases[i].ctype, pieces[k], &t);
            cr_expect_str_eq(t.buf, cases[i].want, "page [%s] in pieces of %zu: [%s]",
                             cases[i].html, pieces[k], t.buf);
            cr_expect_eq(t.depth, 0, "page [%s]: elements left open", cases[i].html);
        }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(sink, decodes_character_references)
{
    static const sink_case_t cases[] = {
        {"<p>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;", NULL,
         "<html><body><p>a & b <c> \"d\" 'e'</p></body></html>"},
        {"<p>&#233;&#xE9;&#XE9;&eacute; &hellip;&mdash;&euro; &#x1F600;", NULL,
         "<html><body><p>\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9 \xE2\x80\xA6\xE2\x80\x94\xE2\x82\xAC "
         "\xF0\x9F\x98\x80</p></body></html>"},
        /* windows-1252 for 0x80-0x9F, U+FFFD for 0 and surrogates, legacy names without ';' */
        {"<p>&#150;&#0;&#xD800; &amp &nbsp;&lt x &bogus; & y &#;", NULL,
         "<html><body><p>\xE2\x80\x93\xEF\xBF\xBD\xEF\xBF\xBD & \xC2\xA0< x &bogus; & y "
         "&#;</p></body></html>"},
        /* in values too, names lowercase, bare attributes */
        {"<a HREF=\"/x?a=1&amp;b=2\" Class=C hidden data-x='&lt;'>l</a>", NULL,
         "<html><body><a href=/x?a=1&b=2 class=C hidden data-x=<>l</a></body></html>"},
    };
    check(cases, N(cases));
}

Test(sink, decodes_the_page_charset)
{
    static const sink_case_t cases[] = {
        /* <meta charset> */
        {"<meta charset=windows-1252><p>caf\xE9 \x80 \x81", NULL,
         "<html><meta charset=windows-1252></meta><body><p>caf\xC3\xA9 \xE2\x82\xAC "
         "\xC2\x81</p></body></html>"},
        {"<meta http-equiv=Content-Type content='text/html; charset=ISO-8859-1'><p>\xE9", NULL,
         "<html><meta http-equiv=Content-Type content=text/html; charset=ISO-8859-1></meta>"
         "<body><p>\xC3\xA9</p></body></html>"},
        /* the header wins over the meta */
        {"<meta charset=windows-1252><p>\xC3\xA9", "text/html; charset=utf-8",
         "<html><meta charset=windows-1252></meta><body><p>\xC3\xA9</p></body></html>"},
        /* no charset: the first non-ASCII bytes decide */
        {"<p>\xC3\xA9", NULL, "<html><body><p>\xC3\xA9</p></body></html>"},
        {"<p>\xE9t\xE9", NULL, "<html><body><p>\xC3\xA9t\xC3\xA9</p></body></html>"},
        /* bytes that are not UTF-8 in a UTF-8 page */
        {"<p>a\xFF"
         "b\xC3(c",
         "text/html; charset=utf-8",
         "<html><body><p>a\xEF\xBF\xBD"
         "b\xEF\xBF\xBD(c</p></body></html>"},
        /* a UTF-8 byte order mark */
        {"\xEF\xBB\xBF<p>x", NULL, "<html><body><p>x</p></body></html>"},
        /* other charsets through iconv: Shift_JIS */
        {"<meta charset=shift_jis><p>\x93\xFA\x96\x7B", NULL,
         "<html><meta "
         "charset=shift_jis></meta><body><p>\xE6\x97\xA5\xE6\x9C\xAC</p></body></html>"},
    };
    check(cases, N(cases));
}

Test(sink, drops_nul_bytes_of_text)
{
    static const char page[] = "<p>a\0b\0";
    trace_t t;
    run(page, sizeof(page) - 1, NULL, 2, &t);
    cr_expect_str_eq(t.buf, "<html><body><p>ab</p></body></html>", "NUL: [%s]", t.buf);
}

Test(sink, reads_utf16_pages)
{
    static const char page[] = "\xFF\xFE<\0p\0>\0h\0\xE9\0";
    trace_t t;
    run(page, sizeof(page) - 1, NULL, 3, &t);
    cr_expect_str_eq(t.buf, "<html><body><p>h\xC3\xA9</p></body></html>", "UTF-16LE page: [%s]",
                     t.buf);
}

Test(sink, balances_elements_as_browsers_do)
{
    static const sink_case_t cases[] = {
        /* implied ends of p, li, dd/dt, cells, rows, headings */
        {"<p>a<div>b</div><p>c<p>d", NULL,
         "<html><body><p>a</p><div>b</div><p>c</p><p>d</p></body></html>"},
        {"<ul><li>a<li>b<ul><li>c</ul><li>d</ul>", NULL,
         "<html><body><ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul></body></html>"},
        {"<dl><dt>a<dd>b<dt>c</dl>", NULL,
         "<html><body><dl><dt>a</dt><dd>b</dd><dt>c</dt></dl></body></html>"},
        {"<table><tr><td>a<td>b<tr><td>c</table>x", NULL,
         "<html><body><table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>x"
         "</body></html>"},
        {"<h1>a<h2>b</h1>c", NULL, "<html><body><h1>a</h1><h2>b</h2>c</body></html>"},
        /* a stray end tag inside a cell cannot close what is outside the table */
        {"<div><table><tr><td>a</div>b</td></tr></table>c</div>d", NULL,
         "<html><body><div><table><tr><td>ab</td></tr></table>c</div>d</body></html>"},
        /* inline end tags do not cross a block; </p> alone is an empty p; </br> a br */
        {"<div><span>a<div>b</span>c</div></div></p></br>", NULL,
         "<html><body><div><span>a<div>bc</div></span></div><p></p><br></br></body></html>"},
        /* a formatting element misnested with a block closes across it */
        {"<a href=x><p>one</a>two</p>three", NULL,
         "<html><body><a href=x><p>one</p></a><p>two</p>three</body></html>"},
        {"<b>x<a href=1>y<a href=2>z", NULL,
         "<html><body><b>x<a href=1>y</a><a href=2>z</a></b></body></html>"},
        /* void elements and "<x/>" end at once; second html/body ignored */
        {"<html><body><p>a<br>b<img src=i><hr/>c<span/>d<body class=x>e</html>f", NULL,
         "<html><body><p>a<br></br>b<img src=i></img></p><hr></hr>c<span></span>de"
         "f</body></html>"},
        /* the head ends at the first element or text of the body */
        {"<head><title>T</title><meta name=a><div>x</div>", NULL,
         "<html><head><title>T</title><meta name=a></meta></head><body><div>x</div>"
         "</body></html>"},
        {"<head><title>T</title>text<head><p>y", NULL,
         "<html><head><title>T</title></head><body>text<p>y</p></body></html>"},
    };
    check(cases, N(cases));
}

Test(sink, skips_comments_and_raw_text)
{
    static const sink_case_t cases[] = {
        {"<p>a<!-- <b>x</b> -->b<!---->c<!-->d<!DOCTYPE html>e<?x y?>f", NULL,
         "<html><body><p>abcdef</p></body></html>"},
        {"<script>if (a<b) '</p>'</scri</script><style>p{}</style><p>x", NULL,
         "<html><script></script><style></style><body><p>x</p></body></html>"},
        /* textarea: no markup; noscript: markup (what a reader without scripts sees) */
        {"<p><textarea><b>no</b></textarea><noscript><p>n</noscript>y", NULL,
         "<html><body><p><textarea></textarea><noscript></noscript></p><p>ny</p></body></html>"},
        /* title and xmp: text without markup, references decoded in title */
        {"<title>a <3 &amp;</title><xmp><i>x</i></xmp>", NULL,
         "<html><title>a <3 &</title><body><xmp><i>x</i></xmp></body></html>"},
        /* a title left open ends at the first tag in it */
        {"<title>T<div>x</div>", NULL, "<html><title>T</title><body><div>x</div></body></html>"},
        {"<title>T</p><p>x", NULL, "<html><title>T</title><body><p></p><p>x</p></body></html>"},
        /* "<" that opens no markup is text; a tag cut by the end of the page is dropped */
        {"<p>a < b <3 <<c d", NULL, "<html><body><p>a < b <3 <</p></body></html>"},
    };
    check(cases, N(cases));
}

Test(sink, keeps_only_the_wanted_attributes)
{
    static const char *const want[] = {"class", "href", NULL};
    static const char page[] = "<a id=i CLASS=c href=/h style=s>x</a>";
    trace_t t;
    parser_sink_t sink = {on_start, on_end, on_text, &t, want};
    parser_config_t pc = {.sink = &sink};
    memset(&t, 0, sizeof(t));
    parser_t *p = parser_new(&pc, "http://example.com/", NULL, NULL, NULL, NULL);
    cr_assert(p);
    cr_assert_eq(parser_feed(p, page, sizeof(page) - 1), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
    cr_expect_str_eq(t.buf, "<html><body><a class=c href=/h>x</a></body></html>", "%s", page);
}

Test(sink, nesting_stays_within_the_depth_cap)
{
    size_t n = 3 * PARSER_SINK_MAX_DEPTH;
    char *page = malloc(n * 5 + 16);
    size_t len = 0;
    cr_assert(page);
    for (size_t i = 0; i < n; i++)
        memcpy(page + len, "<div>", 5), len += 5;
    memcpy(page + len, "deep", 4), len += 4;
    trace_t *t = malloc(sizeof(*t));
    cr_assert(t);
    run(page, len, NULL, 4096, t);
    cr_expect_eq(t->max_depth, PARSER_SINK_MAX_DEPTH, "deepest open: %d", t->max_depth);
    cr_expect_eq(t->depth, 0, "all closed at the end");
    free(t);
    free(page);
}

/* Links seen, one a line. */
static void on_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    trace_t *t = ud;
    (void)kind;
    add(t, url, len);
    add(t, "\n", 1);
}

/* The links of a page read with a sink, and without. */
static void links_of(const char *html, const char *ctype, int sink, trace_t *out)
{
    trace_t ev;
    parser_sink_t s = {on_start, on_end, on_text, &ev, NULL};
    parser_config_t pc = {.sink = sink ? &s : NULL};
    memset(out, 0, sizeof(*out));
    parser_t *p = parser_new(&pc, "http://example.com/d/p.html", ctype, NULL, on_link, out);
    cr_assert(p);
    for (size_t off = 0, n = strlen(html); off < n; off += 5)
        cr_assert_eq(parser_feed(p, html + off, n - off < 5 ? n - off : 5), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
}

Test(sink, links_come_from_the_same_reading)
{
    static const struct {
        const char *html, *with, *without;
    } cases[] = {
        /* ordinary markup: the same links both ways */
        {"<base href=/b/><a href=x>1</a><area href='y'><iframe src=f></iframe>"
         "<link rel=next href=n><meta http-equiv=refresh content='0; url=r'>"
         "<noscript><a href=ns>n</a></noscript><a href=\"q?a=1&amp;b=2\">q</a>",
         "http://example.com/b/x\nhttp://example.com/b/y\nhttp://example.com/b/f\n"
         "http://example.com/b/n\nhttp://example.com/b/r\nhttp://example.com/b/ns\n"
         "http://example.com/b/q?a=1&b=2\n",
         NULL},
        /* where the readings differ: a textarea's content is text */
        {"<textarea><a href=t>t</a></textarea><a href=u>u</a>", "http://example.com/d/u\n",
         "http://example.com/d/t\nhttp://example.com/d/u\n"},
        /* meta robots nofollow stops the links that follow, both ways */
        {"<a href=1>1</a><meta name=robots content=nofollow><a href=2>2</a>",
         "http://example.com/d/1\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        trace_t with, without;
        links_of(cases[i].html, NULL, 1, &with);
        links_of(cases[i].html, NULL, 0, &without);
        cr_expect_str_eq(with.buf, cases[i].with, "with a sink, [%s]: [%s]", cases[i].html,
                         with.buf);
        cr_expect_str_eq(without.buf, cases[i].without ? cases[i].without : cases[i].with,
                         "without, [%s]: [%s]", cases[i].html, without.buf);
    }
}

Test(sink, a_link_cut_by_the_tag_cap_is_dropped_not_shortened)
{
    size_t pad = 40 * 1024;
    char *html = malloc(pad + 256);
    cr_assert(html);
    size_t n = (size_t)snprintf(html, 64, "<a data-x=\"");
    memset(html + n, 'x', pad);
    n += pad;
    snprintf(html + n, 192, "\" href=/far>far</a><a href=/near>near</a>");
    trace_t links;
    links_of(html, NULL, 1, &links);
    cr_expect_str_eq(links.buf, "http://example.com/near\n", "[%s]", links.buf);
    free(html);
}
