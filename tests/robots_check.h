/*
 * robots_check.h -- what the robots.txt suites (test_robots.c,
 * test_robots_hostile.c) share: the table-driven case runner, which checks
 * every case's verdicts on the parsed rules and again after a
 * serialize/deserialize round trip that must reproduce the bytes exactly,
 * and the RFC 9309 example file.  Static inline functions; failures are
 * Criterion assertions naming the case, the user agent and the path.
 */
#ifndef TESTS_ROBOTS_CHECK_H
#define TESTS_ROBOTS_CHECK_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "robots.h"

/* RFC 9309 section 5.1. */
#define ROBOTS_RFC9309_EXAMPLE                                                                     \
    "User-Agent: *\n"                                                                              \
    "Disallow: *.gif$\n"                                                                           \
    "Disallow: /example/\n"                                                                        \
    "Allow: /publications/\n"                                                                      \
    "\n"                                                                                           \
    "User-Agent: foobot\n"                                                                         \
    "Disallow:/\n"                                                                                 \
    "Allow:/example/page.html\n"                                                                   \
    "Allow:/example/allowed.gif\n"                                                                 \
    "\n"                                                                                           \
    "User-Agent: barbot\n"                                                                         \
    "User-Agent: bazbot\n"                                                                         \
    "Disallow: /example/page.html\n"                                                               \
    "\n"                                                                                           \
    "User-Agent: quxbot\n"                                                                         \
    "\n"                                                                                           \
    "EOF\n"

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

static inline void expect_checks(const robots_t *r, const struct tcase *c, const char *how)
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
static inline robots_t *round_trip(const robots_t *r, const char *name)
{
    char *a = NULL, *b = NULL;
    size_t al = 0, bl = 0;
    int err = robots_serialize(r, &a, &al);
    cr_assert_eq(err, 0, "%s: serialize: %s", name, crawl_strerror(err));
    robots_t *copy = robots_deserialize(a, al, &err);
    cr_assert_not_null(copy, "%s: deserialize: %s", name, crawl_strerror(err));
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

static inline void run_cases(const struct tcase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct tcase *c = &cases[i];
        int err = 1;
        size_t len = c->len ? c->len : strlen(c->body);
        robots_t *r = robots_parse(c->body, len, c->ua, &err);
        cr_assert_not_null(r, "%s: parse failed: %s", c->name, crawl_strerror(err));
        cr_expect_eq(err, 0, "%s: err not cleared", c->name);
        expect_checks(r, c, "parsed");
        robots_t *copy = round_trip(r, c->name);
        expect_checks(copy, c, "deserialized");
        robots_free(copy);
        robots_free(r);
    }
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

/* Appends s to a growing buffer (test helper; aborts the test on OOM). */
static inline void append(char **b, size_t *len, size_t *cap, const char *s)
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

#endif
