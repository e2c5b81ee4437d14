/*
 * test_robots.c -- robots.txt parsing and matching (crawler/robots.h).
 *
 * Table-driven: each case is a robots.txt body, a User-Agent and the verdict
 * expected for a list of paths.  Every case is also checked after a
 * serialize/deserialize round trip, which must reproduce the bytes exactly.
 * Failure messages name the case, the user agent and the path.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robots.h"

#define MAX_CHECKS 20

struct chk {
    const char *path;
    int allowed;
};

struct tcase {
    const char *name;
    const char *ua;
    const char *body;
    size_t len; /* 0: strlen(body) */
    struct chk chk[MAX_CHECKS];
};

static void expect_checks(const robots_t *r, const struct tcase *c, const char *how)
{
    for (size_t i = 0; i < MAX_CHECKS && c->chk[i].path; i++) {
        int got = robots_allowed(r, c->chk[i].path);
        cr_expect_eq(got, c->chk[i].allowed, "%s [%s, ua \"%s\"]: path \"%s\" should be %s",
                     c->name, how, c->ua, c->chk[i].path,
                     c->chk[i].allowed ? "allowed" : "disallowed");
    }
}

/* Serializes r, deserializes, checks the copy answers the same and that a
 * second serialization gives the same bytes.  Returns the copy (caller
 * frees). */
static robots_t *round_trip(const robots_t *r, const char *name)
{
    char *a = NULL, *b = NULL;
    size_t al = 0, bl = 0;
    int err = robots_serialize(r, &a, &al);
    cr_assert_eq(err, 0, "%s: serialize: %s", name, robots_strerror(err));
    robots_t *copy = robots_deserialize(a, al, &err);
    cr_assert_not_null(copy, "%s: deserialize: %s", name, robots_strerror(err));
    cr_assert_eq(robots_serialize(copy, &b, &bl), 0, "%s: serialize copy", name);
    cr_expect(al == bl && memcmp(a, b, al) == 0, "%s: round trip changed the bytes", name);
    cr_expect_eq(robots_crawl_delay_ms(copy), robots_crawl_delay_ms(r), "%s: delay", name);
    cr_expect_eq(robots_rule_count(copy), robots_rule_count(r), "%s: rule count", name);
    cr_assert_eq(robots_sitemap_count(copy), robots_sitemap_count(r), "%s: sitemaps", name);
    for (size_t i = 0; i < robots_sitemap_count(r); i++)
        cr_expect_str_eq(robots_sitemap(copy, i), robots_sitemap(r, i), "%s: sitemap %zu", name, i);
    free(a);
    free(b);
    return copy;
}

static void run_cases(const struct tcase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct tcase *c = &cases[i];
        int err = 1;
        size_t len = c->len ? c->len : strlen(c->body);
        robots_t *r = robots_parse(c->body, len, c->ua, &err);
        cr_assert_not_null(r, "%s: parse failed: %s", c->name, robots_strerror(err));
        cr_expect_eq(err, 0, "%s: err not cleared", c->name);
        expect_checks(r, c, "parsed");
        robots_t *copy = round_trip(r, c->name);
        expect_checks(copy, c, "deserialized");
        robots_free(copy);
        robots_free(r);
    }
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

/* RFC 9309 section 5.1. */
static const char rfc_example[] = "User-Agent: *\n"
                                  "Disallow: *.gif$\n"
                                  "Disallow: /example/\n"
                                  "Allow: /publications/\n"
                                  "\n"
                                  "User-Agent: foobot\n"
                                  "Disallow:/\n"
                                  "Allow:/example/page.html\n"
                                  "Allow:/example/allowed.gif\n"
                                  "\n"
                                  "User-Agent: barbot\n"
                                  "User-Agent: bazbot\n"
                                  "Disallow: /example/page.html\n"
                                  "\n"
                                  "User-Agent: quxbot\n"
                                  "\n"
                                  "EOF\n";

Test(robots, rfc9309_example_groups)
{
    static const struct tcase cases[] = {
        {"rfc 5.1 foobot",
         "foobot/1.0",
         rfc_example,
         0,
         {{"/example/page.html", 1},
          {"/example/allowed.gif", 1},
          {"/example/other.html", 0},
          {"/", 0},
          {"/publications/a", 0},
          {"/robots.txt", 1}}},
        {"rfc 5.1 barbot",
         "barbot",
         rfc_example,
         0,
         {{"/example/page.html", 0}, {"/example/other.html", 1}, {"/a.gif", 1}, {"/", 1}}},
        {"rfc 5.1 bazbot",
         "BazBot/2 (+http://baz.example)",
         rfc_example,
         0,
         {{"/example/page.html", 0}, {"/example/", 1}, {"/x.gif", 1}}},
        {"rfc 5.1 quxbot",
         "quxbot",
         rfc_example,
         0,
         {{"/example/page.html", 1}, {"/a.gif", 1}, {"/example/", 1}}},
        {"rfc 5.1 other agent uses *",
         "otherbot",
         rfc_example,
         0,
         {{"/a.gif", 0},
          {"/dir/b.gif", 0},
          {"/a.gif?x=1", 1},
          {"/example/x", 0},
          {"/publications/x", 1},
          {"/other", 1}}},
    };
    RUN(cases);
}

Test(robots, rfc9309_longest_match_wins)
{
    static const struct tcase cases[] = {
        {"rfc 5.2 longest match",
         "foobot",
         "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
         0,
         {{"/example/page/", 1},
          {"/example/page/disallowed.gif", 0},
          {"/example/page/other.gif", 1},
          {"/example/", 1}}},
        {"longer allow beats shorter disallow",
         "a",
         "User-agent: *\nDisallow: /\nAllow: /pub\nDisallow: /pub/secret\nAllow: /pub/secret/ok\n",
         0,
         {{"/", 0},
          {"/pub", 1},
          {"/pub/secret", 0},
          {"/pub/secret/x", 0},
          {"/pub/secret/ok", 1},
          {"/x", 0}}},
        {"order in file does not matter",
         "a",
         "User-agent: *\nAllow: /a/b\nDisallow: /a\n",
         0,
         {{"/a", 0}, {"/a/b", 1}, {"/a/c", 0}}},
    };
    RUN(cases);
}

Test(robots, group_chosen_by_product_token)
{
    static const struct tcase cases[] = {
        {"token matched case-insensitively, version ignored",
         "FooBot/1.0 (+http://foo.example/bot)",
         "User-agent: foobot/2.1\nDisallow: /a\n\nUser-agent: FOOBOT-images\nDisallow: /b\n\n"
         "User-agent: *\nDisallow: /c\n",
         0,
         {{"/a", 0}, {"/b", 1}, {"/c", 1}}},
        {"longer or shorter tokens do not match",
         "foobot",
         "User-agent: foobotx\nDisallow: /a\nUser-agent: foo\nDisallow: /b\n"
         "User-agent: *\nDisallow: /c\n",
         0,
         {{"/a", 1}, {"/b", 1}, {"/c", 0}}},
        {"rules before any user-agent are ignored",
         "foobot",
         "Disallow: /early\nUser-agent: foobot\nDisallow: /late\n",
         0,
         {{"/early", 1}, {"/late", 0}}},
        {"group naming * and the token applies to both",
         "foobot",
         "User-agent: *\nUser-agent: foobot\nDisallow: /both\n",
         0,
         {{"/both", 0}, {"/x", 1}}},
        {"leading whitespace and comments around user-agent",
         "foobot",
         "  User-agent:   FooBot   # our bot\n\tDisallow: /x # no\n",
         0,
         {{"/x", 0}, {"/y", 1}}},
    };
    RUN(cases);
}

Test(robots, same_agent_groups_are_merged)
{
    static const struct tcase cases[] = {
        {"two foobot groups merge",
         "foobot",
         "User-agent: foobot\nDisallow: /a\n\nUser-agent: other\nDisallow: /b\n\n"
         "User-agent: FooBot\nDisallow: /c\nAllow: /a/ok\n",
         0,
         {{"/a", 0}, {"/a/ok", 1}, {"/b", 1}, {"/c", 0}}},
        {"two * groups merge",
         "nobody",
         "User-agent: *\nDisallow: /a\nUser-agent: x\nDisallow: /b\nUser-agent: *\nDisallow: /c\n",
         0,
         {{"/a", 0}, {"/b", 1}, {"/c", 0}}},
        {"consecutive user-agent lines share one group",
         "b",
         "User-agent: a\nUser-agent: b\nUser-agent: c\nDisallow: /shared\n"
         "User-agent: d\nDisallow: /d\n",
         0,
         {{"/shared", 0}, {"/d", 1}}},
        {"sitemap and unknown lines do not split a group",
         "b",
         "User-agent: a\nSitemap: http://x.example/s.xml\nFoo: bar\nUser-agent: b\n"
         "Disallow: /shared\n",
         0,
         {{"/shared", 0}}},
    };
    RUN(cases);
}

Test(robots, star_fallback_and_no_group)
{
    static const struct tcase cases[] = {
        {"* applies when no group names us",
         "mybot",
         "User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /private\n",
         0,
         {{"/", 1}, {"/private", 0}, {"/privatex", 0}}},
        {"no matching group and no * allows all",
         "mybot",
         "User-agent: otherbot\nDisallow: /\n",
         0,
         {{"/", 1}, {"/anything", 1}}},
        {"empty file allows all", "mybot", "", 0, {{"/", 1}, {"/x?y", 1}}},
        {"specific empty group beats *",
         "mybot",
         "User-agent: *\nDisallow: /\nUser-agent: mybot\n",
         0,
         {{"/", 1}, {"/x", 1}}},
        {"*bot is not a wildcard agent", "mybot", "User-agent: *bot\nDisallow: /\n", 0, {{"/", 1}}},
    };
    RUN(cases);
}

Test(robots, empty_disallow_is_no_rule)
{
    static const struct tcase cases[] = {
        {"empty disallow", "mybot", "User-agent: *\nDisallow:\n", 0, {{"/", 1}, {"/a", 1}}},
        {"empty disallow for us, everything for others",
         "mybot",
         "User-agent: mybot\nDisallow:  # nothing\n\nUser-agent: *\nDisallow: /\n",
         0,
         {{"/", 1}, {"/a", 1}}},
        {"empty allow is no rule either",
         "mybot",
         "User-agent: *\nAllow:\nDisallow: /a\n",
         0,
         {{"/a", 0}, {"/b", 1}}},
    };
    RUN(cases);
}

Test(robots, wildcard_and_end_anchor)
{
    static const struct tcase cases[] = {
        {"* and $",
         "mybot",
         "User-agent: *\nDisallow: /*.php$\nDisallow: /priv*/secret\n"
         "Allow: /this/*/exactly\nDisallow: /this/\nDisallow: /fish*\nDisallow: /x$y\n"
         "Disallow: /exact$\n",
         0,
         {{"/index.php", 0},
          {"/a/b.php", 0},
          {"/index.php?x=1", 1},
          {"/index.phps", 1},
          {"/private/a/secret/z", 0},
          {"/priv/secret", 0},
          {"/pri/secret", 1},
          {"/this/is/exactly", 1},
          {"/this/is", 0},
          {"/fish", 0},
          {"/fishheads/x", 0},
          {"/Fish", 1},
          {"/x$y", 0},
          {"/x", 1},
          {"/exact", 0},
          {"/exact/", 1},
          {"/exactly", 1}}},
        {"pattern without leading slash",
         "mybot",
         "User-agent: *\nDisallow: fish\nDisallow: *.gif\n",
         0,
         {{"/fish", 0}, {"/a/fish", 1}, {"/a.gif", 0}, {"/a.gifx", 0}, {"/a.png", 1}}},
        {"$ alone means the root only",
         "mybot",
         "User-agent: a\nDisallow: *$\nUser-agent: mybot\nDisallow: $\n",
         0,
         {{"/", 0}, {"/x", 1}}},
        {"repeated stars",
         "mybot",
         "User-agent: *\nDisallow: /a**b***c$\n",
         0,
         {{"/abc", 0}, {"/aXbYc", 0}, {"/abcd", 1}, {"/acb", 1}}},
    };
    RUN(cases);
}

Test(robots, allow_wins_a_tie)
{
    static const struct tcase cases[] = {
        {"equal patterns",
         "mybot",
         "User-agent: *\nDisallow: /page\nAllow: /page\n",
         0,
         {{"/page", 1}, {"/pages", 1}}},
        {"equal lengths, different patterns",
         "mybot",
         "User-agent: *\nDisallow: /a*\nAllow: /a$\n",
         0,
         {{"/a", 1}, {"/ab", 0}}},
        {"allow listed first, same length",
         "mybot",
         "User-agent: *\nAllow: /x/\nDisallow: /x/\n",
         0,
         {{"/x/", 1}, {"/x/y", 1}}},
    };
    RUN(cases);
}

Test(robots, percent_encoding_equivalence)
{
    static const struct tcase cases[] = {
        {"rfc 2.2.2 table and RFC 3986 equivalences",
         "mybot",
         "User-agent: *\nDisallow: /foo/bar?baz=quz\nDisallow: /foo/bar/\xE3\x83\x84\n"
         "Disallow: /foo/bar/%62%61%7A\nDisallow: /~user\nDisallow: /a%2Fb\n"
         "Disallow: /sp ace\nDisallow: /q?x=%e2%82%ac\nDisallow: /100%\n",
         0,
         {{"/foo/bar?baz=quz", 0},
          {"/foo/bar?baz=qux", 1},
          {"/foo/bar/%E3%83%84", 0},
          {"/foo/bar/%e3%83%84", 0},
          {"/foo/bar/\xE3\x83\x84", 0},
          {"/foo/bar/%E3%83%85", 1},
          {"/foo/bar/baz", 0},
          {"/foo/bar/%62az", 0},
          {"/%7Euser", 0},
          {"/%7euser/x", 0},
          {"/a/b", 1},
          {"/a%2fb", 0},
          {"/a%2Fbc", 0},
          {"/sp%20ace", 0},
          {"/sp ace", 0},
          {"/q?x=%E2%82%AC", 0},
          {"/q?x=\xE2\x82\xAC", 0},
          {"/100%25", 0},
          {"/10", 1}}},
        {"encoded reserved characters stay distinct",
         "mybot",
         "User-agent: *\nDisallow: /a/\nDisallow: /q%3F\n",
         0,
         {{"/a%2Fb", 1}, {"/a/b", 0}, {"/q?", 1}, {"/q%3f", 0}}},
        {"fragment ignored, empty path is /",
         "mybot",
         "User-agent: *\nDisallow: /$\nDisallow: /frag$\n",
         0,
         {{"", 0}, {"/#top", 0}, {"/frag#x", 0}, {"/a", 1}, {"#x", 0}}},
        {"path without leading slash",
         "mybot",
         "User-agent: *\nDisallow: /?\nDisallow: /x\n",
         0,
         {{"?q=1", 0}, {"x", 0}, {"", 1}, {"/", 1}}},
    };
    RUN(cases);
}

Test(robots, robots_txt_always_allowed)
{
    static const struct tcase cases[] = {
        {"disallow everything",
         "mybot",
         "User-agent: *\nDisallow: /\nDisallow: /robots.txt\n",
         0,
         {{"/robots.txt", 1}, {"/robots.txt?x=1", 1}, {"/robots.txtx", 0}, {"/x", 0}}},
    };
    RUN(cases);
}

Test(robots, garbage_nul_bom_and_line_ends)
{
    static const char nul_body[] = "User-agent: *\nDisallow: /a\0/b\nDisallow: /c\n";
    static const char bin_body[] = "\xff\xfe\0\x01\nUser-agent: *\0Disallow: /bin\n\x80\x81\n";
    static const struct tcase cases[] = {
        {"BOM and CRLF",
         "mybot",
         "\xEF\xBB\xBFUser-agent: *\r\nDisallow: /a\r\nAllow: /a/b\r\n",
         0,
         {{"/a", 0}, {"/a/b", 1}, {"/b", 1}}},
        {"CR only",
         "mybot",
         "User-agent: *\rDisallow: /a\rAllow: /a/b\r",
         0,
         {{"/a", 0}, {"/a/b", 1}}},
        {"no final newline",
         "mybot",
         "User-agent: *\nDisallow: /last",
         0,
         {{"/last", 0}, {"/x", 1}}},
        {"garbage lines and tolerated spellings",
         "mybot",
         "garbage line\n<html><body>\n:::\n: /x\nUSERAGENT: *\nDisallow /nocolon\n"
         "  DISALLOW  :  /spaced  # comment\nfoo: bar\nDissallow: /typo\nDisallow /a /b\n"
         "Disallow\n",
         0,
         {{"/nocolon", 0}, {"/spaced", 0}, {"/typo", 0}, {"/a", 1}, {"/x", 1}}},
        {"NUL ends a line",
         "mybot",
         nul_body,
         sizeof(nul_body) - 1,
         {{"/a", 0}, {"/b", 1}, {"/c", 0}}},
        {"binary noise", "mybot", bin_body, sizeof(bin_body) - 1, {{"/bin", 0}, {"/", 1}}},
        {"an HTML page served as robots.txt",
         "mybot",
         "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n<body>Disallow: /x"
         "</body></html>\n",
         0,
         {{"/", 1}, {"/x", 1}}},
    };
    RUN(cases);
}

/* Builds a body of exactly len bytes: head, '#' filler lines, then tail. */
static char *padded_body(const char *head, size_t tail_at, const char *tail, size_t *len)
{
    size_t hl = strlen(head), tl = strlen(tail);
    cr_assert(hl + 2 < tail_at);
    char *b = malloc(tail_at + tl);
    cr_assert_not_null(b);
    memcpy(b, head, hl);
    memset(b + hl, '#', tail_at - hl);
    for (size_t i = hl + 100; i < tail_at; i += 100)
        b[i - 1] = '\n';
    b[tail_at - 1] = '\n';
    memcpy(b + tail_at, tail, tl);
    *len = tail_at + tl;
    return b;
}

Test(robots, only_first_500_kib_parsed)
{
    const size_t max = ROBOTS_MAX_BYTES;
    const char *head = "User-agent: *\nDisallow: /early\n";
    size_t len;
    /* "Disallow: /edge\n" ends exactly at the limit; "/late" is beyond it. */
    char *b = padded_body(head, max - 16, "Disallow: /edge\nDisallow: /late\n", &len);
    robots_t *r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    cr_expect_eq(robots_allowed(r, "/early"), 0, "rule at the start applies");
    cr_expect_eq(robots_allowed(r, "/edge"), 0, "rule ending at the 500 KiB limit applies");
    cr_expect_eq(robots_allowed(r, "/late"), 1, "rule after 500 KiB is ignored");
    robots_free(r);
    free(b);
    /* A line cut by the limit is dropped, not parsed truncated. */
    b = padded_body(head, max - 14, "Disallow: /cutoff\n", &len);
    r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    cr_expect_eq(robots_allowed(r, "/early"), 0);
    cr_expect_eq(robots_allowed(r, "/cut"), 1, "partial line at the limit must be dropped");
    robots_free(r);
    free(b);
    /* The limit only cuts when the body is longer. */
    b = padded_body(head, max - 14, "Disallow: /end", &len);
    cr_assert_eq(len, max);
    r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    cr_expect_eq(robots_allowed(r, "/end"), 0, "a body of exactly 500 KiB is read whole");
    robots_free(r);
    free(b);
}

Test(robots, crawl_delay_parsing)
{
    static const struct {
        const char *value;
        uint32_t ms;
    } cases[] = {
        {"5", 5000},
        {"0.5", 500},
        {"1.25", 1250},
        {".75", 750},
        {"2.", 2000},
        {"1.2345", 1234},
        {"0", 0},
        {"-1", 0},
        {"abc", 0},
        {"1e3", 0},
        {"0x10", 0},
        {"inf", 0},
        {"nan", 0},
        {"", 0},
        {"5s", 0},
        {"1 2", 0},
        {"3 # slow", 3000},
        {"99999999999999999999", ROBOTS_MAX_CRAWL_DELAY_MS},
        {"86400.5", ROBOTS_MAX_CRAWL_DELAY_MS},
        {".", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[128];
        snprintf(body, sizeof(body), "User-agent: *\nCrawl-delay: %s\n", cases[i].value);
        robots_t *r = robots_parse(body, strlen(body), "mybot", NULL);
        cr_assert_not_null(r);
        cr_expect_eq(robots_crawl_delay_ms(r), cases[i].ms, "Crawl-delay: \"%s\" -> %u ms, got %u",
                     cases[i].value, cases[i].ms, robots_crawl_delay_ms(r));
        robots_free(r);
    }
    static const struct {
        const char *name, *body;
        uint32_t ms;
    } groups[] = {
        {"largest wins", "User-agent: *\nCrawl-delay: 2\nCrawl-delay: 7\nCrawl-delay: 1\n", 7000},
        {"our group's delay", "User-agent: *\nCrawl-delay: 9\nUser-agent: mybot\ncrawldelay: 1\n",
         1000},
        {"* delay when no group names us",
         "User-agent: x\nCrawl-delay: 9\nUser-agent: *\n"
         "Crawl-delay: 4\n",
         4000},
        {"outside any group ignored", "Crawl-delay: 5\nUser-agent: *\nDisallow: /\n", 0},
        {"delay ends the user-agent run",
         "User-agent: mybot\nCrawl-delay: 3\n"
         "User-agent: other\nDisallow: /\n",
         3000},
    };
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        robots_t *r = robots_parse(groups[i].body, strlen(groups[i].body), "mybot", NULL);
        cr_assert_not_null(r);
        cr_expect_eq(robots_crawl_delay_ms(r), groups[i].ms, "%s: expected %u ms, got %u",
                     groups[i].name, groups[i].ms, robots_crawl_delay_ms(r));
        if (i == 4)
            cr_expect_eq(robots_allowed(r, "/x"), 1, "%s: other's rules leaked", groups[i].name);
        robots_t *copy = round_trip(r, groups[i].name);
        robots_free(copy);
        robots_free(r);
    }
}

Test(robots, sitemaps_collected_anywhere)
{
    static const char body[] = "Sitemap: http://example.com/s1.xml\n"
                               "User-agent: foobot\n"
                               "Sitemap: https://example.com/s2.xml\n"
                               "Disallow: /x\n"
                               "sitemap: /relative.xml\n"
                               "SITEMAP: HTTPS://example.com/s3.xml\n"
                               "Sitemap: http://example.com/s1.xml\n"
                               "Sitemap: ftp://example.com/ftp.xml\n"
                               "Site-map: http://example.com/s4.xml # comment\n"
                               "Sitemap: http://\n"
                               "Sitemap: http://example.com/has space.xml\n"
                               "Sitemap http://example.com/s5.xml\n"
                               "User-agent: *\nDisallow: /\n";
    static const char *want[] = {"http://example.com/s1.xml", "https://example.com/s2.xml",
                                 "HTTPS://example.com/s3.xml", "http://example.com/s4.xml",
                                 "http://example.com/s5.xml"};
    const char *agents[] = {"foobot", "other"};
    for (size_t a = 0; a < 2; a++) {
        robots_t *r = robots_parse(body, strlen(body), agents[a], NULL);
        cr_assert_not_null(r);
        size_t n = sizeof(want) / sizeof(want[0]);
        cr_assert_eq(robots_sitemap_count(r), n, "ua %s: %zu sitemaps, want %zu", agents[a],
                     robots_sitemap_count(r), n);
        for (size_t i = 0; i < n; i++)
            cr_expect_str_eq(robots_sitemap(r, i), want[i], "ua %s: sitemap %zu", agents[a], i);
        cr_expect_null(robots_sitemap(r, n));
        cr_expect_eq(robots_allowed(r, "/x"), 0, "ua %s: /x", agents[a]);
        cr_expect_eq(robots_allowed(r, "/y"), a == 0, "ua %s: /y", agents[a]);
        robots_t *copy = round_trip(r, agents[a]);
        robots_free(copy);
        robots_free(r);
    }
}

/* Appends s to a growing buffer (test helper; aborts the test on OOM). */
static void append(char **b, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *b = realloc(*b, *cap);
        cr_assert_not_null(*b);
    }
    memcpy(*b + *len, s, n + 1);
    *len += n;
}

Test(robots, pathological_wildcards_stay_linear)
{
    const size_t plen = 200000;
    char *path = malloc(plen + 2);
    cr_assert_not_null(path);
    path[0] = '/';
    memset(path + 1, 'a', plen);
    path[plen + 1] = '\0';
    static const char body[] = "User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\n"
                               "Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c$\n";
    robots_t *r = robots_parse(body, strlen(body), "mybot", NULL);
    cr_assert_not_null(r);
    for (int i = 0; i < 50; i++)
        cr_expect_eq(robots_allowed(r, path), 1, "long run of 'a' without b/c must be allowed");
    path[plen] = 'b';
    cr_expect_eq(robots_allowed(r, path), 0, "a...ab must be disallowed");
    path[plen] = 'c';
    cr_expect_eq(robots_allowed(r, path), 0, "a...ac must be disallowed");
    robots_free(r);

    /* A long path that needs normalization (heap buffer). */
    static const char enc_body[] = "User-agent: *\nDisallow: /~~*x$\n";
    r = robots_parse(enc_body, strlen(enc_body), "mybot", NULL);
    cr_assert_not_null(r);
    char *enc = malloc(3 * 3000 + 3);
    cr_assert_not_null(enc);
    enc[0] = '/';
    for (int i = 0; i < 3000; i++)
        memcpy(enc + 1 + 3 * i, "%7e", 3);
    memcpy(enc + 1 + 3 * 3000, "x", 2);
    cr_expect_eq(robots_allowed(r, enc), 0, "9 KB percent-encoded path must be normalized");
    enc[1 + 3 * 3000] = 'y';
    cr_expect_eq(robots_allowed(r, enc), 1, "9 KB percent-encoded path ending in y");
    free(enc);
    robots_free(r);

    /* Many wildcard rules, each a near miss, against the long path. */
    char *b = NULL;
    size_t len = 0, cap = 0;
    append(&b, &len, &cap, "User-agent: *\n");
    for (int i = 0; i < 2000; i++) {
        char line[64];
        snprintf(line, sizeof(line), "Disallow: /*a*a*a%d*$\n", i);
        append(&b, &len, &cap, line);
    }
    r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    cr_expect_eq(robots_rule_count(r), 2000);
    cr_expect_eq(robots_allowed(r, path), 1);
    robots_free(r);
    free(b);
    free(path);
}

Test(robots, rules_and_sitemaps_are_capped)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    append(&b, &len, &cap, "User-agent: *\n");
    for (unsigned i = 0; i < ROBOTS_MAX_RULES + 500; i++) {
        char line[80];
        snprintf(line, sizeof(line), "Disallow: /r%05u/\n", i);
        append(&b, &len, &cap, line);
        if (i < ROBOTS_MAX_SITEMAPS + 500) {
            snprintf(line, sizeof(line), "Sitemap: http://x.example/s%u.xml\n", i);
            append(&b, &len, &cap, line);
        }
    }
    cr_assert_lt(len, ROBOTS_MAX_BYTES, "test body must fit the read limit");
    robots_t *r = robots_parse(b, len, "mybot", NULL);
    cr_assert_not_null(r);
    cr_expect_eq(robots_rule_count(r), ROBOTS_MAX_RULES);
    cr_expect_eq(robots_sitemap_count(r), ROBOTS_MAX_SITEMAPS);
    cr_expect_eq(robots_allowed(r, "/r00000/"), 0);
    cr_expect_eq(robots_allowed(r, "/r09999/x"), 0);
    cr_expect_eq(robots_allowed(r, "/r10000/"), 1, "rules past the cap are ignored");
    robots_t *copy = round_trip(r, "capped");
    robots_free(copy);
    robots_free(r);
    free(b);
}

Test(robots, fetch_outcome_constructors)
{
    robots_t *all = robots_allow_all(), *none = robots_disallow_all();
    cr_assert_not_null(all);
    cr_assert_not_null(none);
    const char *paths[] = {"/", "/a", "/a/b?c=d", ""};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        cr_expect_eq(robots_allowed(all, paths[i]), 1, "allow_all: %s", paths[i]);
        cr_expect_eq(robots_allowed(none, paths[i]), 0, "disallow_all: %s", paths[i]);
    }
    cr_expect_eq(robots_allowed(none, "/robots.txt"), 1);
    robots_t *a2 = round_trip(all, "allow_all"), *n2 = round_trip(none, "disallow_all");
    cr_expect_eq(robots_allowed(a2, "/a"), 1);
    cr_expect_eq(robots_allowed(n2, "/a"), 0);
    robots_free(a2);
    robots_free(n2);
    robots_free(all);
    robots_free(none);
}

Test(robots, invalid_arguments)
{
    int err = 0;
    cr_expect_null(robots_parse(NULL, 5, "mybot", &err));
    cr_expect_eq(err, ROBOTS_EINVAL);
    cr_expect_null(robots_parse("x", 1, NULL, &err));
    cr_expect_eq(err, ROBOTS_EINVAL);
    cr_expect_null(robots_parse("x", 1, "", &err), "empty user agent");
    cr_expect_null(robots_parse("x", 1, "123bot", &err), "no product token");
    cr_expect_eq(err, ROBOTS_EINVAL);
    robots_t *r = robots_parse(NULL, 0, "mybot", &err);
    cr_expect_not_null(r, "NULL body of length 0 is an empty file");
    cr_expect_eq(robots_allowed(r, NULL), 0);
    cr_expect_eq(robots_allowed(NULL, "/"), 0);
    char *out = NULL;
    size_t len = 0;
    cr_expect_eq(robots_serialize(NULL, &out, &len), ROBOTS_EINVAL);
    cr_expect_null(robots_deserialize(NULL, 0, &err));
    cr_expect_eq(err, ROBOTS_EINVAL);
    cr_expect_eq(robots_sitemap_count(NULL), 0);
    cr_expect_null(robots_sitemap(NULL, 0));
    cr_expect_eq(robots_crawl_delay_ms(NULL), 0);
    robots_free(r);
    robots_free(NULL);
    for (int e = 0; e >= -5; e--)
        cr_expect_not_null(robots_strerror(e));
}

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/* A hand-made serialized buffer: body bytes + correct checksum. */
static int forged_rejected(const char *name, const unsigned char *body, size_t n)
{
    unsigned char buf[256];
    cr_assert(n + 4 <= sizeof(buf));
    memcpy(buf, body, n);
    uint32_t h = fnv1a(body, n);
    for (int k = 0; k < 4; k++)
        buf[n + k] = (unsigned char)(h >> (8 * k));
    int err = 0;
    robots_t *r = robots_deserialize((const char *)buf, n + 4, &err);
    cr_expect_null(r, "forged \"%s\" accepted", name);
    robots_free(r);
    return err;
}

Test(robots, corrupt_serialized_input_rejected)
{
    robots_t *r = robots_parse(rfc_example, strlen(rfc_example), "foobot", NULL);
    cr_assert_not_null(r);
    char *blob = NULL;
    size_t len = 0;
    cr_assert_eq(robots_serialize(r, &blob, &len), 0);
    robots_free(r);
    int err = 0;
    for (size_t cut = 0; cut < len; cut++) {
        robots_t *t = robots_deserialize(blob, cut, &err);
        cr_expect_null(t, "truncated to %zu of %zu bytes accepted", cut, len);
        robots_free(t);
    }
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            blob[i] ^= (char)(1 << bit);
            robots_t *t = robots_deserialize(blob, len, &err);
            cr_expect_null(t, "bit %d of byte %zu flipped accepted", bit, i);
            cr_expect(err == ROBOTS_ECORRUPT || err == ROBOTS_EVERSION, "byte %zu: err %d", i, err);
            robots_free(t);
            blob[i] ^= (char)(1 << bit);
        }
    }
    char *longer = malloc(len + 1);
    cr_assert_not_null(longer);
    memcpy(longer, blob, len);
    longer[len] = 0;
    cr_expect_null(robots_deserialize(longer, len + 1, &err), "trailing byte accepted");
    free(longer);
    free(blob);

    static const struct {
        const char *name;
        unsigned char b[16];
        size_t n;
        int err;
    } forged[] = {
        {"version 2", {'R', 'B', 'T', 2, 0, 0, 0}, 7, ROBOTS_EVERSION},
        {"bad magic", {'R', 'B', 'X', 1, 0, 0, 0}, 7, ROBOTS_ECORRUPT},
        {"rule count too large", {'R', 'B', 'T', 1, 0, 0xff, 0xff, 0x03, 0}, 9, ROBOTS_ECORRUPT},
        {"rule longer than buffer", {'R', 'B', 'T', 1, 0, 1, 40, '/', 0}, 9, ROBOTS_ECORRUPT},
        {"empty rule", {'R', 'B', 'T', 1, 0, 1, 1, 0}, 8, ROBOTS_ECORRUPT},
        {"NUL in rule", {'R', 'B', 'T', 1, 0, 1, 4, '/', 0, 0}, 10, ROBOTS_ECORRUPT},
        {"rules out of order",
         {'R', 'B', 'T', 1, 0, 2, 2, '/', 4, '/', 'a', 0},
         12,
         ROBOTS_ECORRUPT},
        {"duplicate rule", {'R', 'B', 'T', 1, 0, 2, 2, '/', 2, '/', 0}, 11, ROBOTS_ECORRUPT},
        {"non-minimal varint", {'R', 'B', 'T', 1, 0x80, 0, 0, 0}, 8, ROBOTS_ECORRUPT},
        {"varint too long",
         {'R', 'B', 'T', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0},
         12,
         ROBOTS_ECORRUPT},
        {"delay above cap",
         {'R', 'B', 'T', 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0},
         11,
         ROBOTS_ECORRUPT},
        {"duplicate sitemap",
         {'R', 'B', 'T', 1, 0, 0, 2, 3, 'h', 't', 'p', 3, 'h', 't', 'p'},
         15,
         ROBOTS_ECORRUPT},
        {"missing sitemap count", {'R', 'B', 'T', 1, 0, 0}, 6, ROBOTS_ECORRUPT},
    };
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        int e = forged_rejected(forged[i].name, forged[i].b, forged[i].n);
        cr_expect_eq(e, forged[i].err, "forged \"%s\": error %d, want %d", forged[i].name, e,
                     forged[i].err);
    }
    /* Sanity: the forging helper itself makes acceptable buffers. */
    unsigned char ok[] = {'R', 'B', 'T', 1, 0, 1, 3, '/', 0};
    unsigned char buf[16];
    memcpy(buf, ok, sizeof(ok));
    uint32_t h = fnv1a(ok, sizeof(ok));
    for (int k = 0; k < 4; k++)
        buf[sizeof(ok) + k] = (unsigned char)(h >> (8 * k));
    robots_t *t = robots_deserialize((const char *)buf, sizeof(ok) + 4, &err);
    cr_expect_not_null(t, "well-formed forged buffer rejected: %s", robots_strerror(err));
    cr_expect_eq(robots_allowed(t, "/x"), 1, "allow / rule");
    robots_free(t);
}

Test(robots, random_input_never_crashes)
{
    static const char *atoms[] = {"User-agent:",
                                  " *",
                                  " mybot",
                                  "Disallow:",
                                  "Allow:",
                                  " /",
                                  "a",
                                  "*",
                                  "$",
                                  "%",
                                  "%4",
                                  "%41",
                                  "\n",
                                  "\r",
                                  "\0",
                                  "\xff",
                                  "#",
                                  "Sitemap: http://x/",
                                  "Crawl-delay:",
                                  " 1.5",
                                  ":",
                                  " "};
    const size_t natoms = sizeof(atoms) / sizeof(atoms[0]);
    static const char *paths[] = {"/", "/a", "/a*", "/%41", "/%", "/aa$", "/\xff"};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char body[600];
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 0;
        while (len < sizeof(body) - 32) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            if ((seed >> 60) == 0 && len > 0)
                break;
            const char *a = atoms[(seed >> 33) % natoms];
            size_t al = a[0] ? strlen(a) : 1;
            memcpy(body + len, a, al);
            len += al;
        }
        robots_t *r = robots_parse(body, len, "mybot", NULL);
        cr_assert_not_null(r, "iteration %d", iter);
        int verdict[sizeof(paths) / sizeof(paths[0])];
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++)
            verdict[p] = robots_allowed(r, paths[p]);
        char *blob = NULL;
        size_t bl = 0;
        cr_assert_eq(robots_serialize(r, &blob, &bl), 0);
        robots_t *copy = robots_deserialize(blob, bl, NULL);
        cr_assert_not_null(copy, "iteration %d: round trip", iter);
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++)
            cr_expect_eq(robots_allowed(copy, paths[p]), verdict[p], "iteration %d: %s", iter,
                         paths[p]);
        free(blob);
        robots_free(copy);
        robots_free(r);
    }
}

/* Reference matcher: plain recursion, fine for the short strings below. */
static int ref_match(const char *p, const char *s)
{
    if (*p == '\0')
        return 1;
    if (p[0] == '$' && p[1] == '\0')
        return *s == '\0';
    if (*p == '*') {
        for (const char *t = s;; t++) {
            if (ref_match(p + 1, t))
                return 1;
            if (!*t)
                return 0;
        }
    }
    return *s == *p && ref_match(p + 1, s + 1);
}

static uint64_t rng_next(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void random_string(uint64_t *x, char *out, size_t maxlen, const char *first,
                          const char *alpha)
{
    size_t n = 1 + rng_next(x) % maxlen;
    out[0] = first[rng_next(x) % strlen(first)];
    for (size_t i = 1; i < n; i++)
        out[i] = alpha[rng_next(x) % strlen(alpha)];
    out[n] = '\0';
}

/* A random path, or (pat given) one built to nearly match pat: each '*'
 * becomes 0-2 random octets, '$' is dropped, and sometimes an octet is
 * changed or appended. */
static void random_path(uint64_t *x, char *out, size_t cap, const char *pat)
{
    if (!pat) {
        random_string(x, out, 10, "/", "/abc$");
        return;
    }
    size_t n = 0;
    out[n++] = '/';
    for (const char *p = pat + (*pat == '/'); *p && n + 4 < cap; p++) {
        if (*p == '*')
            for (uint64_t k = rng_next(x) % 3; k > 0; k--)
                out[n++] = "abc/"[rng_next(x) % 4];
        else if (*p != '$' || p[1] != '\0')
            out[n++] = *p;
    }
    if (rng_next(x) % 3 == 0)
        out[rng_next(x) % n] = "abc"[rng_next(x) % 3];
    if (rng_next(x) % 3 == 0)
        out[n++] = 'a';
    out[n] = '\0';
    if (out[0] != '/')
        out[0] = '/';
}

Test(robots, matches_brute_force_reference)
{
    uint64_t x = 42;
    char pats[64][24], body[64 * 40], path[48];
    int allow[64];
    for (int set = 0; set < 400; set++) {
        size_t np = 1 + rng_next(&x) % 64, len = 0;
        len += (size_t)snprintf(body, sizeof(body), "User-agent: *\n");
        for (size_t i = 0; i < np; i++) {
            random_string(&x, pats[i], set % 2 ? 8 : 20, "/*", set % 3 ? "/abc*$" : "/ab*");
            allow[i] = rng_next(&x) % 2;
            len += (size_t)snprintf(body + len, sizeof(body) - len, "%s: %s\n",
                                    allow[i] ? "Allow" : "Disallow", pats[i]);
        }
        robots_t *r = robots_parse(body, len, "mybot", NULL);
        cr_assert_not_null(r);
        for (int k = 0; k < 60; k++) {
            random_path(&x, path, sizeof(path), k % 2 ? pats[rng_next(&x) % np] : NULL);
            int best = -1, want = 1;
            for (size_t i = 0; i < np; i++) {
                int l = (int)strlen(pats[i]);
                if (ref_match(pats[i], path) && (l > best || (l == best && allow[i]))) {
                    best = l;
                    want = allow[i];
                }
            }
            cr_expect_eq(robots_allowed(r, path), want, "set %d (%zu rules): path \"%s\"\n%s", set,
                         np, path, body);
        }
        robots_free(r);
    }
}
