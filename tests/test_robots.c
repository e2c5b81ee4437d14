/*
 * test_robots.c -- what a robots.txt means (policy/robots.h): group
 * selection, rules, wildcards, percent-encoding, the 500 KiB limit,
 * Crawl-delay, Sitemap: lines, caps, the fetch-outcome constructors.
 *
 * Table-driven: each case is a robots.txt body, a User-Agent and the verdict
 * expected for a list of paths.  Every case is also checked after a
 * serialize/deserialize round trip, which must reproduce the bytes exactly
 * (robots_check.h).  Failure messages name the case, the user agent and the
 * path.  Hostile and random input: test_robots_hostile.c.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robots.h"
#include "robots_check.h"

static const char rfc_example[] = ROBOTS_RFC9309_EXAMPLE;

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
    cr_expect_eq(err, CRAWL_EINVAL);
    cr_expect_null(robots_parse("x", 1, NULL, &err));
    cr_expect_eq(err, CRAWL_EINVAL);
    cr_expect_null(robots_parse("x", 1, "", &err), "empty user agent");
    cr_expect_null(robots_parse("x", 1, "123bot", &err), "no product token");
    cr_expect_eq(err, CRAWL_EINVAL);
    robots_t *r = robots_parse(NULL, 0, "mybot", &err);
    cr_expect_not_null(r, "NULL body of length 0 is an empty file");
    cr_expect_eq(robots_allowed(r, NULL), 0);
    cr_expect_eq(robots_allowed(NULL, "/"), 0);
    char *out = NULL;
    size_t len = 0;
    cr_expect_eq(robots_serialize(NULL, &out, &len), CRAWL_EINVAL);
    cr_expect_null(robots_deserialize(NULL, 0, &err));
    cr_expect_eq(err, CRAWL_EINVAL);
    cr_expect_eq(robots_sitemap_count(NULL), 0);
    cr_expect_null(robots_sitemap(NULL, 0));
    cr_expect_eq(robots_crawl_delay_ms(NULL), 0);
    robots_free(r);
    robots_free(NULL);
    for (int e = 0; e >= -5; e--)
        cr_expect_not_null(crawl_strerror(e));
}
