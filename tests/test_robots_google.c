/*
 * test_robots_google.c -- where robots_parse() reads a robots.txt as
 * Google's parser does, beyond RFC 9309 (the list is in policy/robots.h):
 * misspelled directive names, "user agent" with a space, a whole or partial
 * UTF-8 byte-order mark, lines cut at Google's line length, "index.html"
 * allowing its directory; and the places where we deliberately read a file
 * differently from Google (a colon inside a colon-less line's value).
 *
 * Table-driven like test_robots.c (robots_check.h): each case is a body, a
 * User-Agent and the verdicts expected for a list of paths, checked on the
 * parse and again after a serialize/deserialize round trip.  The cases are
 * written from Google's published robots.txt rules, not copied from its
 * test suite.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "robots.h"
#include "robots_check.h"

Test(robots_google, misspelled_disallow_is_a_disallow)
{
    static const struct tcase cases[] = {
        {"dissalow", "mybot", "User-agent: *\ndissalow: /a\n", 0, {{"/a", 0}, {"/b", 1}}},
        {"diasllow", "mybot", "User-agent: *\ndiasllow: /a\n", 0, {{"/a", 0}, {"/b", 1}}},
        {"disallaw", "mybot", "User-agent: *\ndisallaw: /a\n", 0, {{"/a", 0}, {"/b", 1}}},
        {"dissallow", "mybot", "User-agent: *\ndissallow: /a\n", 0, {{"/a", 0}, {"/b", 1}}},
        {"disalow", "mybot", "User-agent: *\ndisalow: /a\n", 0, {{"/a", 0}, {"/b", 1}}},
        {"DISSALOW upper case", "mybot", "User-agent: *\nDISSALOW: /a\n", 0, {{"/a", 0}}},
        {"DiAsLlOw mixed case, no colon", "mybot", "User-agent: *\nDiAsLlOw /a\n", 0, {{"/a", 0}}},
        {"key is matched by its start (Disallowed:)",
         "mybot",
         "User-agent: *\nDisallowed: /a\nAllowed: /a/b\n",
         0,
         {{"/a", 0}, {"/a/b", 1}, {"/c", 1}}},
        {"a key that is no known misspelling is ignored",
         "mybot",
         "User-agent: *\ndisalloow: /a\ndis-allow: /b\ndsallow: /c\nallw: /\nDisallow: /d\n",
         0,
         {{"/a", 1}, {"/b", 1}, {"/c", 1}, {"/d", 0}}},
    };
    RUN(cases);
}

Test(robots_google, user_agent_spellings_start_a_group)
{
    static const struct tcase cases[] = {
        {"user agent with a space names our group",
         "mybot/1.0",
         "User-agent: *\nDisallow: /\n\nuser agent: mybot\nDisallow: /private\n",
         0,
         {{"/", 1}, {"/public", 1}, {"/private", 0}}},
        {"USER AGENT, upper case",
         "mybot",
         "User-agent: *\nDisallow: /\n\nUSER AGENT: MyBot\nDisallow: /p\n",
         0,
         {{"/", 1}, {"/p", 0}}},
        {"useragent without a hyphen",
         "mybot",
         "User-agent: *\nDisallow: /\nuseragent: mybot\nAllow: /\n",
         0,
         {{"/", 1}, {"/x", 1}}},
        {"a user agent line with a space ends the previous group",
         "otherbot",
         "User-agent: *\nDisallow: /star\nuser agent: mybot\nDisallow: /mine\n",
         0,
         {{"/star", 0}, {"/mine", 1}}},
        {"user_agent and user  agent (two blanks) are not user-agent",
         "mybot",
         "User-agent: *\nDisallow: /\nuser_agent: mybot\nAllow: /a\nuser  agent: mybot\n"
         "Allow: /b\n",
         0,
         {{"/", 0}, {"/a", 1}, {"/b", 1}, {"/c", 0}}},
    };
    RUN(cases);
}

Test(robots_google, byte_order_mark_whole_or_partial_is_skipped)
{
    static const struct tcase cases[] = {
        {"whole BOM", "mybot", "\xEF\xBB\xBFUser-agent: *\nDisallow: /a\n", 0, {{"/a", 0}}},
        {"first two BOM bytes",
         "mybot",
         "\xEF\xBBUser-agent: *\nDisallow: /a\n",
         0,
         {{"/a", 0}, {"/b", 1}}},
        {"first BOM byte",
         "mybot",
         "\xEF"
         "User-agent: *\nDisallow: /a\n",
         0,
         {{"/a", 0}}},
        {"partial BOM before a rule line that needs its first line",
         "mybot",
         "\xEF\xBBUser-agent: mybot\nDisallow: /mine\nUser-agent: *\nDisallow: /\n",
         0,
         {{"/mine", 0}, {"/other", 1}}},
        {"a broken BOM spoils the first line only",
         "mybot",
         "\xEF\x11\xBFUser-agent: mybot\nDisallow: /a\nUser-agent: *\nDisallow: /b\n",
         0,
         {{"/a", 1}, {"/b", 0}}},
        {"a BOM in the middle of the file is garbage",
         "mybot",
         "User-agent: *\n\xEF\xBB\xBF"
         "Disallow: /a\nDisallow: /b\n",
         0,
         {{"/a", 1}, {"/b", 0}}},
        {"a BOM alone", "mybot", "\xEF\xBB\xBF", 0, {{"/", 1}}},
        {"a partial BOM alone", "mybot", "\xEF\xBB", 0, {{"/", 1}}},
    };
    RUN(cases);
}

/* A body whose second line is head followed by fill bytes of c up to a line
 * of exactly line_len octets, then tail, then the rest. */
static char *long_line_body(const char *head, char c, size_t line_len, const char *tail,
                            const char *rest, size_t *len)
{
    const char *ua = "User-agent: *\n";
    size_t ul = strlen(ua), hl = strlen(head), tl = strlen(tail), rl = strlen(rest);
    cr_assert(line_len > hl);
    char *b = malloc(ul + line_len + tl + rl + 1);
    cr_assert_not_null(b);
    memcpy(b, ua, ul);
    memcpy(b + ul, head, hl);
    memset(b + ul + hl, c, line_len - hl);
    memcpy(b + ul + line_len, tail, tl);
    memcpy(b + ul + line_len + tl, rest, rl + 1);
    *len = ul + line_len + tl + rl;
    return b;
}

/* A path: "/" then n copies of c then tail (caller frees). */
static char *long_path(char c, size_t n, const char *tail)
{
    size_t tl = strlen(tail);
    char *p = malloc(n + tl + 2);
    cr_assert_not_null(p);
    p[0] = '/';
    memset(p + 1, c, n);
    memcpy(p + 1 + n, tail, tl + 1);
    return p;
}

static void expect_path(const robots_t *r, char *path, int allowed, const char *what)
{
    cr_expect_eq(robots_allowed(r, path), allowed, "%s: path of %zu octets should be %s", what,
                 strlen(path), allowed ? "allowed" : "disallowed");
    free(path);
}

Test(robots_google, long_lines_are_cut_where_google_cuts_them)
{
    const size_t max = ROBOTS_MAX_LINE; /* octets of a line kept */
    cr_assert_eq(max, 8 * 2083 - 1, "Google keeps 8 x 2083 - 1 octets of a line");
    const size_t pat = max - strlen("Disallow: /"); /* 'a's of the pattern that fit */
    size_t len;
    /* The line is cut after `max` octets: "bc" is lost, so the rule is the
     * run of 'a's and matches any path that starts with it. */
    char *b = long_line_body("Disallow: /", 'a', max, "bc", "\nDisallow: /next\n", &len);
    robots_t *r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    expect_path(r, long_path('a', pat, "zz"), 0, "cut rule matches what follows its cut");
    expect_path(r, long_path('a', pat, "bc"), 0, "cut rule still matches the whole text");
    expect_path(r, long_path('a', pat - 1, ""), 1, "a path shorter than the cut rule");
    cr_expect_eq(robots_allowed(r, "/next"), 0, "the line after a long line is read");
    cr_expect_eq(robots_allowed(r, "/other"), 1);
    robots_free(r);
    free(b);

    /* A line of exactly `max` octets is kept whole: its final '$' anchors. */
    b = long_line_body("Disallow: /", 'c', max - 1, "$", "\r\nDisallow: /next\r\n", &len);
    r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    expect_path(r, long_path('c', pat - 1, ""), 0, "exactly max octets: anchored rule matches");
    expect_path(r, long_path('c', pat - 1, "x"), 1, "exactly max octets: '$' is kept");
    cr_expect_eq(robots_allowed(r, "/next"), 0, "CRLF after a long line");
    robots_free(r);
    free(b);

    /* One octet more and the '$' is what the cut drops. */
    b = long_line_body("Disallow: /", 'c', max, "$", "\n", &len);
    r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    expect_path(r, long_path('c', pat, "x"), 0, "max + 1 octets: the '$' is cut off");
    robots_free(r);
    free(b);
}

Test(robots_google, index_html_allows_its_directory)
{
    static const struct tcase cases[] = {
        {"Allow: /dir/index.html also allows /dir/",
         "mybot",
         "User-agent: *\nAllow: /dir/index.html\nDisallow: /\n",
         0,
         {{"/dir/", 1},
          {"/dir/index.html", 1},
          {"/dir/index.htm", 0},
          {"/dir/?q=1", 0},
          {"/dir/other", 0},
          {"/other/", 0}}},
        {"index.htm counts too, at the root",
         "mybot",
         "User-agent: *\nAllow: /index.htm\nDisallow: /\n",
         0,
         {{"/", 1}, {"/index.htm", 1}, {"/index.html", 1}, {"/x", 0}}},
        {"only for Allow lines",
         "mybot",
         "User-agent: *\nDisallow: /dir/index.html\n",
         0,
         {{"/dir/", 1}, {"/dir/index.html", 0}}},
        {"only when index.htm starts the last segment",
         "mybot",
         "User-agent: *\nAllow: /dir/myindex.html\nAllow: /index.html/x\nDisallow: /\n",
         0,
         {{"/dir/", 0}, {"/index.html/", 0}, {"/", 0}, {"/dir/myindex.html", 1}}},
    };
    RUN(cases);
}

Test(robots_google, key_value_separators)
{
    static const struct tcase cases[] = {
        {"blank before the colon",
         "mybot",
         "User-agent : *\nDisallow\t:\t/a\n",
         0,
         {{"/a", 0}, {"/b", 1}}},
        {"no colon: exactly two words",
         "mybot",
         "User-agent *\nDisallow /a\nDisallow /b /c\n",
         0,
         {{"/a", 0}, {"/b", 1}, {"/c", 1}}},
        /* Google's parser splits such a line at its first colon, reading
         * "Disallow /x" as the key and "y" as the value; we read the two
         * words (a listed difference in robots.h). */
        {"a colon inside a colon-less line's value",
         "mybot",
         "User-agent: *\nDisallow /x:y\n",
         0,
         {{"/x:y", 0}, {"/x", 1}, {"/y", 1}}},
        {"empty key", "mybot", "User-agent: *\n: /a\n  : /b\n", 0, {{"/a", 1}, {"/b", 1}}},
    };
    RUN(cases);
}

Test(robots_google, sitemap_without_colon_keeps_its_url)
{
    static const char body[] = "Sitemap http://example.com/s.xml\nsite-map: https://e.com/t.xml\n"
                               "Sitemaps: https://e.com/u.xml\n";
    robots_t *r = robots_parse(body, sizeof body - 1, "mybot", NULL);
    cr_assert_not_null(r);
    cr_assert_eq(robots_sitemap_count(r), 3, "sitemap lines: %zu", robots_sitemap_count(r));
    cr_expect_str_eq(robots_sitemap(r, 0), "http://example.com/s.xml");
    cr_expect_str_eq(robots_sitemap(r, 1), "https://e.com/t.xml");
    cr_expect_str_eq(robots_sitemap(r, 2), "https://e.com/u.xml");
    robots_free(r);
}
