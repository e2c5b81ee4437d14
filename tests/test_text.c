/*
 * test_text.c -- the main-content extractor of text/, fed through the
 * parser's sink as a crawl would: boilerplate dropped and the article kept,
 * Markdown and all-text modes, title and lang, bounded memory on a huge and
 * a deeply nested page, links unchanged by the sink, SimHash and the
 * grouping of near-copies.  Every failure message names its input.
 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "text.h"

#define URL "http://example.com/news/story.html"

/* Links seen, one per line. */
typedef struct links {
    char buf[4096];
    size_t len;
} links_t;

static void on_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    links_t *l = ud;
    (void)kind;
    if (l && l->len + len + 2 < sizeof(l->buf)) {
        memcpy(l->buf + l->len, url, len);
        l->len += len;
        l->buf[l->len++] = '\n';
        l->buf[l->len] = '\0';
    }
}

/* Parses html (fed in pieces of `piece` bytes) with a text sink; returns
 * the finished extractor (caller frees). */
static text_t *extract_in(const char *html, text_mode_t mode, size_t piece, links_t *links)
{
    text_config_t tc = {.mode = mode};
    parser_sink_t sink;
    parser_config_t pc = {.sink = &sink};
    text_t *t = text_new(&tc, URL);
    cr_assert(t, "text_new");
    text_parser_sink(t, &sink);
    parser_t *p = parser_new(&pc, URL, "text/html; charset=utf-8", NULL, on_link, links);
    cr_assert(p, "parser_new");
    size_t len = strlen(html);
    for (size_t off = 0; off < len; off += piece)
        cr_assert_eq(parser_feed(p, html + off, len - off < piece ? len - off : piece), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
    cr_assert_eq(text_finish(t), 0, "text_finish");
    return t;
}

static text_t *extract(const char *html, text_mode_t mode)
{
    return extract_in(html, mode, 7, NULL); /* small pieces: every split is exercised */
}

#define ARTICLE                                                                                    \
    "<article><h1>Rivers of the north</h1>"                                                        \
    "<p>The river leaves the lake in a wide bend, slow and brown, and the town was built where "   \
    "the first bridge could stand, three hundred years ago, on rock.</p>"                          \
    "<p>Boats still carry timber down to the sea in spring, although the railway took most of "    \
    "the trade, and the old quays are now a park with benches and lime trees.</p>"                 \
    "<p>In winter the ice is thick enough for cars, and the ferry stops running until April, "     \
    "when the first warm rain opens the channel again.</p></article>"

Test(text, drops_boilerplate_and_keeps_the_article)
{
    static const struct {
        const char *what, *html;
    } cases[] = {
        {"nav", "<nav><ul><li><a href=/a>Navmark home</a></li><li><a href=/b>Navmark world</a>"
                "</li></ul></nav>"},
        {"header", "<header><div class=logo>Headermark Daily</div></header>"},
        {"footer", "<footer><p>Footermark copyright 2024, all rights reserved, contact us any "
                   "time by mail or phone.</p></footer>"},
        {"sidebar", "<div class=\"sidebar\"><h3>Sidebarmark popular</h3><p>Sidebarmark the ten "
                    "most read stories of the week, with pictures, comments and more.</p></div>"},
        {"comments", "<div id=\"comments\"><p>Commentmark: I grew up by that river, and it was "
                     "always like this, brown and slow, a lovely place.</p></div>"},
        {"cookie banner", "<div class=\"cookie-consent\"><p>Cookiemark: we use cookies to give "
                          "you the best experience, by continuing you accept them.</p>"
                          "<button>Accept</button></div>"},
        {"ad", "<div class=\"ad\"><p>Admark buy the best boats in town today, fifty percent off, "
               "free delivery, call now.</p></div>"},
        {"script and style", "<script>var Scriptmark = 1;</script><style>.Stylemark{}</style>"},
        {"hidden", "<div style=\"display: none\"><p>Hiddenmark text nobody sees on the page, long "
                   "enough to count as a paragraph anywhere.</p></div>"},
        {"related links", "<ul><li><a href=/r1>Relatedmark one story about a lake</a></li>"
                          "<li><a href=/r2>Relatedmark another story</a></li></ul>"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char html[8192];
        snprintf(html, sizeof(html),
                 "<html><head><title>T</title></head><body>%s<main>" ARTICLE "</main>%s</body>"
                 "</html>",
                 cases[i].html, cases[i].html);
        text_t *t = extract(html, TEXT_MAIN);
        const char *body = text_body(t, NULL);
        cr_expect(strstr(body, "wide bend, slow and brown"), "%s: article kept: [%s]",
                  cases[i].what, body);
        cr_expect(strstr(body, "ferry stops running"), "%s: last paragraph kept: [%s]",
                  cases[i].what, body);
        cr_expect(!strstr(body, "mark"), "%s: dropped: [%s]", cases[i].what, body);
        text_free(t);
    }
}

/* n copies of a paragraph of prose, as one string (caller frees). */
static char *prose(const char *open, const char *close, int n)
{
    static const char para[] = "The ferry leaves at nine, crosses the lake in an hour and comes "
                               "back before noon, except on Sundays when it does not run. ";
    size_t cap = strlen(open) + strlen(close) + (size_t)n * sizeof(para) + 1;
    char *s = malloc(cap);
    cr_assert(s);
    snprintf(s, cap, "%s", open);
    for (int i = 0; i < n; i++)
        strcat(s, para); /* bounded: cap counts every piece */
    strcat(s, close);
    return s;
}

Test(text, a_weak_class_hint_does_not_drop_much_prose)
{
    /* a table cell whose class names navigation by a short word holds the
     * whole review; a short one with the same class is navigation */
    char *review = prose("<td class=\"nav-cell-1\"><p>", "</p></td>", 12);
    char html[16384];
    snprintf(html, sizeof(html),
             "<body><table><tr><td class=nav-cell-1><a href=/a>Home</a> <a href=/b>Shop</a>"
             "</td></tr><tr>%s</tr></table></body>",
             review);
    text_t *t = extract(html, TEXT_MAIN);
    const char *body = text_body(t, NULL);
    cr_expect(strstr(body, "except on Sundays"), "review kept: [%s]", body);
    cr_expect(!strstr(body, "Shop"), "navigation dropped: [%s]", body);
    text_free(t);
    /* a strong word (comments) stays boilerplate however long (beside an
     * article of RETRY_CHARS or more: a shorter one is chosen again
     * without hints, and the longest choice wins) */
    free(review);
    review = prose("<div id=comments><p>Commentmark ", "</p></div>", 12);
    snprintf(html, sizeof(html), "<body><main>" ARTICLE ARTICLE "</main>%s</body>", review);
    t = extract(html, TEXT_MAIN);
    body = text_body(t, NULL);
    cr_expect(strstr(body, "wide bend") && !strstr(body, "Commentmark"), "[%s]", body);
    text_free(t);
    free(review);
}

Test(text, title_outside_the_head_is_not_text)
{
    text_t *t = extract("<p>x</p><title>Titlemark</title><main>" ARTICLE "</main>", TEXT_MAIN);
    const char *body = text_body(t, NULL);
    cr_expect(!strstr(body, "Titlemark"), "[%s]", body);
    cr_expect_str_eq(text_title(t), "Titlemark");
    text_free(t);
}

Test(text, headline_above_the_text_joins)
{
    text_t *t = extract("<body><div class=intro><h1>Headline of the day</h1><p class=date>May 1</p>"
                        "</div><div class=text><p>The river leaves the lake in a wide bend, slow "
                        "and brown, and the town was built where the first bridge could stand.</p>"
                        "<p>Boats still carry timber down to the sea in spring, although the "
                        "railway took most of the trade, and the old quays are now a park.</p>"
                        "<p>In winter the ice is thick enough for cars, and the ferry stops "
                        "running until April.</p></div></body>",
                        TEXT_MAIN);
    const char *body = text_body(t, NULL);
    cr_expect(strncmp(body, "Headline of the day\n\nThe river", 30) == 0, "[%s]", body);
    cr_expect(!strstr(body, "May 1"), "[%s]", body);
    text_free(t);
}

Test(text, a_page_of_several_items_keeps_them_all)
{
    /* items in rows of their own, each as good as the others: their common
     * table is the main content, not the first row */
    char html[16384] = "<body><div class=menu><a href=/>Home</a></div><table>";
    for (int i = 0; i < 5; i++) {
        char item[1024];
        snprintf(item, sizeof(item),
                 "<tr><td><h3>Item %d</h3><p>A boat of painted wood, %d metres long, with oars, "
                 "a sail and a small cabin, built in the north, sold with its trailer.</p></td>"
                 "</tr>",
                 i, i + 4);
        strcat(html, item);
    }
    strcat(html, "</table></body>");
    text_t *t = extract(html, TEXT_MAIN);
    const char *body = text_body(t, NULL);
    cr_expect(strstr(body, "0 metres") || strstr(body, "4 metres"), "first item: [%s]", body);
    cr_expect(strstr(body, "8 metres"), "last item: [%s]", body);
    text_free(t);
}

Test(text, simhash_is_that_of_the_body)
{
    text_t *t = extract("<main>" ARTICLE "</main>", TEXT_MAIN);
    size_t n;
    const char *body = text_body(t, &n);
    uint64_t h = text_simhash(t);
    cr_expect_eq(h, text_simhash_of(body, n));
    cr_expect_eq(text_simhash(t), h, "asked twice");
    text_free(t);
}

Test(text, separates_paragraphs_by_a_blank_line)
{
    text_t *t = extract("<body><div class=story>" ARTICLE "</div></body>", TEXT_MAIN);
    const char *body = text_body(t, NULL);
    cr_expect(strstr(body, "on rock.\n\nBoats still"), "[%s]", body);
    cr_expect(strncmp(body, "Rivers of the north\n\nThe river", 30) == 0, "[%s]", body);
    text_free(t);
}

Test(text, renders_markdown)
{
    static const char *want[] = {
        "# Rivers of the north\n\n",
        "## Boats\n\n",
        "The **river** leaves the *lake* and `grep` finds [the map](http://example.com/maps/1).",
        "- timber\n- fish\n  - salmon\n",
        "1. spring\n2. summer",
        "```\nint x = 1;\n  y();\n```",
        "> Slow and brown, said the ferryman, who had seen it for sixty years now.",
    };
    const char *html =
        "<body><article><h1>Rivers of the north</h1>"
        "<p>The <b>river</b> leaves the <em>lake</em> and <code>grep</code> finds "
        "<a href=\"../maps/1\">the map</a>. It is a long and slow river, wide and brown.</p>"
        "<h2>Boats</h2><p>Boats still carry timber down to the sea in spring, as they did, "
        "although the railway took most of the trade.</p>"
        "<ul><li>timber</li><li>fish<ul><li>salmon</li></ul></li></ul>"
        "<ol><li>spring</li><li>summer</li></ol>"
        "<pre>int x = 1;\n  y();</pre>"
        "<blockquote><p>Slow and brown, said the ferryman, who had seen it for sixty years "
        "now.</p></blockquote></article></body>";
    text_t *t = extract(html, TEXT_MARKDOWN);
    const char *body = text_body(t, NULL);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_expect(strstr(body, want[i]), "markdown has [%s]: [%s]", want[i], body);
    text_free(t);
}

Test(text, all_text_mode_keeps_every_visible_text)
{
    text_t *t = extract("<body><nav><a href=/a>Home page</a></nav>" ARTICLE
                        "<footer>Contact</footer><script>no()</script></body>",
                        TEXT_ALL);
    const char *body = text_body(t, NULL);
    cr_expect(strstr(body, "Home page") && strstr(body, "Contact") && strstr(body, "ferry"), "[%s]",
              body);
    cr_expect(!strstr(body, "no()"), "[%s]", body);
    text_free(t);
}

Test(text, reads_title_and_lang)
{
    static const struct {
        const char *html, *title, *lang;
    } cases[] = {
        {"<html lang=\"de-AT\"><head><title> Die  Donau\n</title></head><body>x</body></html>",
         "Die Donau", "de-AT"},
        {"<html><head><meta http-equiv=content-language content=fr><title>Seine</title>"
         "</head></html>",
         "Seine", "fr"},
        {"<html xml:lang=\"nl\"><head><meta property=og:locale content=en_US>"
         "<meta property=og:title content=\"Og title\"></head><body></body></html>",
         "Og title", "nl"},
        {"<html><body><svg><title>icon</title></svg><h1>First <i>heading</i></h1></body>"
         "</html>",
         "First heading", ""},
        {"<html><head><meta property=og:locale content=en_US></head></html>", "", "en_US"},
        {"<html lang=\"&quot;><script>\"><title>&lt;b&gt; &amp; co</title></html>", "<b> & co", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        text_t *t = extract(cases[i].html, TEXT_MAIN);
        cr_expect_str_eq(text_title(t), cases[i].title, "title of %s", cases[i].html);
        cr_expect_str_eq(text_lang(t), cases[i].lang, "lang of %s", cases[i].html);
        cr_expect_str_eq(text_url(t), URL, "url of %s", cases[i].html);
        text_free(t);
    }
}

Test(text, links_are_the_same_with_or_without_the_sink)
{
    const char *html = "<html><head><link rel=next href=/p2><base href=\"/base/\"></head><body>"
                       "<p>a < b <a href=x>one</a> <div><a href='y'>two</a></div>"
                       "<iframe src=f></iframe><table><tr><td><a href=/z>z</a></table>"
                       "<!-- <a href=no> --><script>'<a href=no2>'</script></body></html>";
    links_t with = {{0}, 0}, without = {{0}, 0};
    text_t *t = extract_in(html, TEXT_MAIN, 5, &with);
    parser_t *p = parser_new(NULL, URL, NULL, NULL, on_link, &without);
    cr_assert(p);
    cr_assert_eq(parser_feed(p, html, strlen(html)), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
    cr_expect_str_eq(with.buf, without.buf, "links with the sink vs without");
    cr_expect(strstr(with.buf, "http://example.com/base/y"), "[%s]", with.buf);
    text_free(t);
}

/* Bytes the process holds on the heap (glibc). */
static size_t heap_now(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Feeds `total` bytes made of `unit` repeated through parser + extractor;
 * returns the peak heap growth seen between chunks. */
static size_t feed_huge(const char *head, const char *unit, size_t total, text_t **out)
{
    text_config_t tc = {.mode = TEXT_MAIN, .max_text = 256 * 1024};
    parser_sink_t sink;
    parser_config_t pc = {.sink = &sink};
    size_t base = heap_now(), peak = 0, ulen = strlen(unit), fed = 0;
    char *chunk = malloc(64 * 1024);
    size_t clen = 0;
    cr_assert(chunk);
    while (clen + ulen <= 64 * 1024)
        memcpy(chunk + clen, unit, ulen), clen += ulen;
    text_t *t = text_new(&tc, URL);
    text_parser_sink(t, &sink);
    parser_t *p = parser_new(&pc, URL, NULL, NULL, NULL, NULL);
    cr_assert(t && p);
    cr_assert_eq(parser_feed(p, head, strlen(head)), 0);
    for (; fed < total; fed += clen) {
        cr_assert_eq(parser_feed(p, chunk, clen), 0);
        size_t h = heap_now();
        if (h > base && h - base > peak)
            peak = h - base;
    }
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
    cr_assert_eq(text_finish(t), 0);
    free(chunk);
    *out = t;
    return peak;
}

Test(text, memory_stays_flat_on_a_50_mb_page)
{
    static const struct {
        const char *what, *head, *unit;
    } cases[] = {
        {"paragraphs", "<html><body><article>",
         "<p>The river leaves the lake in a wide bend, slow and brown, and the town.</p>\n"},
        {"one text run", "<html><body><p>", "word and word and more words, "},
        {"nested divs", "<html><body>", "<div class=x><span>deep "},
        {"one long line", "<html><body><pre>", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        text_t *t = NULL;
        size_t peak = feed_huge(cases[i].head, cases[i].unit, 50u * 1024 * 1024, &t);
        size_t len;
        text_body(t, &len);
        /* 256 KiB of text kept: the record, libxml2's bounded buffers, no more */
        cr_expect_lt(peak, 6u * 1024 * 1024, "%s: heap growth %zu bytes", cases[i].what, peak);
        cr_expect_leq(len, 2 * 256 * 1024, "%s: body of %zu bytes", cases[i].what, len);
        cr_expect_gt(text_get_stats(t)->dropped, 0, "%s: text past the cap counted", cases[i].what);
        text_free(t);
    }
}

/* ---- SimHash and near-duplicate groups ----------------------------------- */

static const char *const words[] = {
    "river",  "lake",  "town",    "bridge",  "boat",   "timber", "sea",   "spring", "railway",
    "trade",  "quay",  "park",    "bench",   "lime",   "tree",   "ice",   "car",    "ferry",
    "april",  "rain",  "channel", "north",   "south",  "brown",  "slow",  "wide",   "rock",
    "year",   "old",   "new",     "green",   "hill",   "road",   "house", "market", "church",
    "school", "mill",  "field",   "farm",    "wood",   "stone",  "water", "wind",   "snow",
    "summer", "light", "night",   "morning", "evening"};

/* A text of n words from seed (a fixed PRNG), into buf: words of the list
 * with a number, so that texts share words but not phrases. */
static void gen_text(unsigned seed, size_t n, char *buf, size_t cap)
{
    size_t len = 0;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n && len + 16 < cap; i++) {
        x = x * 1664525u + 1013904223u;
        len +=
            (size_t)snprintf(buf + len, cap - len, "%s%u ",
                             words[(x >> 8) % (sizeof(words) / sizeof(words[0]))], (x >> 20) % 40);
    }
}

/* Replaces words at..at+edits-1 of buf by "edited". */
static void edit(char *buf, size_t cap, size_t at, size_t edits)
{
    char *out = malloc(cap);
    size_t w = 0, len = 0;
    cr_assert(out);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "), w++)
        len +=
            (size_t)snprintf(out + len, cap - len, "%s ", w >= at && w < at + edits ? "edited" : s);
    memcpy(buf, out, len + 1);
    free(out);
}

Test(text, simhash_is_stable_and_close_for_near_copies)
{
    char a[8192], b[8192];
    gen_text(1, 400, a, sizeof(a));
    cr_expect_eq(text_simhash_of(a, strlen(a)), text_simhash_of(a, strlen(a)), "stable");
    memcpy(b, a, sizeof(a));
    for (char *s = b; *s; s++)
        *s = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
    cr_expect_eq(text_simhash_of(a, strlen(a)), text_simhash_of(b, strlen(b)),
                 "case and spacing do not count");
    cr_expect_eq(text_simhash_of("", 0), 0);
    cr_expect_neq(text_simhash_of("one", 3), 0);
    cr_expect_eq(text_hamming(0, ~(uint64_t)0), 64);
}

/* Near-copies: 1 to 3 consecutive words edited in a 1,500-word text.  The
 * distance a few edited words make depends on the length (simhash.c):
 * at 1,500 words about 1.3 bits, so nearly all copies are within 3. */
Test(text, groups_near_copies_and_separates_unrelated_pages)
{
    enum { BASES = 40, COPIES = 5, N = BASES * COPIES, WORDS = 1500, CAP = 16 * WORDS };
    char *text = malloc(CAP);
    uint64_t hash[N];
    size_t group[N], joined = 0, copies = 0;
    cr_assert(text);
    for (int i = 0; i < BASES; i++) {
        for (int c = 0; c < COPIES; c++) {
            gen_text((unsigned)i + 100, WORDS, text, CAP);
            if (c > 0) /* edits of a few words, at different places */
                edit(text, CAP, (size_t)(337 * c + 111 * i) % (WORDS - 5), (size_t)c % 3 + 1);
            hash[i * COPIES + c] = text_simhash_of(text, strlen(text));
        }
    }
    free(text);
    cr_assert_eq(text_dup_groups(hash, N, TEXT_DEFAULT_DUP_DISTANCE, group), 0);
    for (int i = 0; i < BASES; i++) {
        cr_expect_eq(group[i * COPIES], (size_t)(i * COPIES), "base %d joined another base", i);
        for (int c = 1; c < COPIES; c++, copies++) {
            size_t g = group[i * COPIES + c];
            joined += g == (size_t)(i * COPIES);
            cr_expect(g >= (size_t)(i * COPIES) && g < (size_t)(i * COPIES + COPIES),
                      "base %d copy %d in the group of record %zu", i, c, g);
        }
    }
    cr_expect_geq(joined * 100, copies * 95, "%zu of %zu near-copies with their base", joined,
                  copies);
}

Test(text, dup_groups_follow_the_distance_exactly)
{
    static const struct {
        const char *what;
        uint64_t h[4];
        unsigned d;
        size_t want[4];
    } cases[] = {
        {"equal", {5, 5, 5, 5}, 0, {0, 0, 0, 0}},
        {"3 bits apart at distance 3", {0, 0x7, 0xF0, 0xFF00}, 3, {0, 0, 2, 3}},
        {"4 bits apart at distance 3", {0, 0xF, 0xF000, 0xF0000}, 3, {0, 1, 2, 3}},
        {"a chain links the ends", {0, 0x7, 0x3F, 0x1FF}, 3, {0, 0, 0, 0}},
        {"far apart", {0, ~(uint64_t)0, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA}, 15, {0, 1, 2, 3}},
        {"high bits", {0x8000000000000000, 0xC000000000000000, 7, 3}, 1, {0, 0, 2, 2}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t g[4];
        cr_assert_eq(text_dup_groups(cases[i].h, 4, cases[i].d, g), 0, "%s", cases[i].what);
        for (int k = 0; k < 4; k++)
            cr_expect_eq(g[k], cases[i].want[k], "%s: record %d in group %zu", cases[i].what, k,
                         g[k]);
    }
    cr_expect_eq(text_dup_groups(NULL, 0, 3, NULL), 0, "no records");
    cr_expect_eq(text_dup_groups(NULL, 2, 3, NULL), CRAWL_EINVAL, "NULL records");
    uint64_t one = 1;
    size_t g1;
    cr_expect_eq(text_dup_groups(&one, 1, TEXT_MAX_DUP_DISTANCE + 1, &g1), CRAWL_EINVAL);
}

Test(text, calls_in_the_wrong_order_are_refused)
{
    text_t *t = text_new(NULL, NULL);
    cr_assert(t);
    cr_expect_str_eq(text_body(t, NULL), "", "no body before finish");
    cr_expect_eq(text_finish(t), 0);
    cr_expect_eq(text_finish(t), CRAWL_EINVAL, "finish twice");
    text_chars(t, "late", 4);
    cr_expect_str_eq(text_body(t, NULL), "");
    cr_expect_str_eq(text_url(t), "");
    cr_expect_eq(text_finish(NULL), CRAWL_EINVAL);
    text_free(t);
    text_free(NULL);
}
