/*
 * test_scope.c -- which links a crawl follows (policy/scope.h): --scope
 * host|domain|any against the seeds' hosts, allow/deny domains,
 * include/exclude regexes and the order in which they decide; the seed-host
 * set; registrable domains (libpsl).  Pure, table-driven; every failure
 * message names the case and the URL.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope.h"

/* A scope from "mode|allow|deny|include|exclude" ("" for none); the seeds
 * are www.example.com and www.shop.co.uk. */
static scope_t *scope_of(const char *opts)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", opts);
    char *f[5] = {0};
    char *p = buf;
    for (int k = 0; k < 5; k++) {
        char *bar = strchr(p, '|');
        if (bar)
            *bar = '\0';
        f[k] = p;
        p = bar ? bar + 1 : p + strlen(p);
    }
    const char *allow[] = {f[1]}, *deny[] = {f[2]}, *inc[] = {f[3]}, *exc[] = {f[4]};
    scope_config_t cfg = {
        .mode = !strcmp(f[0], "domain") ? SCOPE_MODE_DOMAIN
                : !strcmp(f[0], "any")  ? SCOPE_MODE_ANY
                                        : SCOPE_MODE_HOST,
        .allow_domain = allow,
        .n_allow_domain = *f[1] != '\0',
        .deny_domain = deny,
        .n_deny_domain = *f[2] != '\0',
        .include = inc,
        .n_include = *f[3] != '\0',
        .exclude = exc,
        .n_exclude = *f[4] != '\0',
    };
    char err[256];
    scope_t *sc = scope_new(&cfg, err, sizeof err);
    cr_assert_not_null(sc, "scope '%s': %s", opts, err);
    /* the config lived on this stack frame only: scope_new copied it */
    memset(buf, 'z', sizeof buf - 1);
    const char *seeds[] = {"www.example.com", "www.shop.co.uk"};
    cr_assert_eq(scope_set_seed_hosts(sc, seeds, 2), 0);
    return sc;
}

Test(scope, rules_table)
{
    static const struct {
        const char *opts; /* mode|allow|deny|include|exclude, "" for none */
        const char *url;
        int want;
    } cases[] = {
        {"host||||", "http://www.example.com/x", 1},
        {"host||||", "http://example.com/x", 0},
        {"host||||", "http://blog.example.com/", 0},
        {"domain||||", "http://blog.example.com/", 1},
        {"domain||||", "http://example.com/", 1},
        {"domain||||", "http://example.org/", 0},
        {"domain||||", "http://www.shop.co.uk/", 1},
        {"domain||||", "http://other.co.uk/", 0},
        {"any||||", "http://anything.test/", 1},
        {"host|partner.org|||", "http://a.partner.org/", 1},
        {"any||ads.example.com||", "http://x.ads.example.com/", 0},
        {"any||ads.example.com||", "http://example.com/", 1},
        {"any|||/docs/|", "http://a.test/docs/1", 1},
        {"any|||/docs/|", "http://a.test/blog/1", 0},
        {"any||||\\.pdf$", "http://a.test/f.pdf", 0},
        {"any||||\\.pdf$", "http://a.test/f.html", 1},
        /* the order of decisions: deny, exclude, include, allow, mode */
        {"host|partner.org|partner.org||", "http://partner.org/", 0},
        {"host|partner.org||/docs/|", "http://partner.org/blog", 0},
        {"any|||/docs/|\\.pdf$", "http://a.test/docs/f.pdf", 0},
        {"host|||/docs/|", "http://other.test/docs/", 0},
        /* domains match case-insensitively, on label boundaries only */
        {"host|Partner.ORG|||", "http://a.partner.org/", 1},
        {"host|partner.org|||", "http://notpartner.org/", 0},
        {"any||ads.example.com||", "http://badads.example.com/", 1},
        /* no host, no follow */
        {"any||||", "not a url", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scope_t *sc = scope_of(cases[i].opts);
        cr_expect_eq(scope_allows(sc, cases[i].url), cases[i].want, "scope '%s' url %s: want %d",
                     cases[i].opts, cases[i].url, cases[i].want);
        scope_free(sc);
    }
}

Test(scope, several_patterns_of_each_kind)
{
    const char *inc[] = {"/docs/", "/blog/"}, *exc[] = {"\\.pdf$", "\\.zip$"};
    const char *deny[] = {"ads.test", "track.test"}, *allow[] = {"cdn.test", "img.test"};
    scope_config_t cfg = {.mode = SCOPE_MODE_HOST,
                          .allow_domain = allow,
                          .n_allow_domain = 2,
                          .deny_domain = deny,
                          .n_deny_domain = 2,
                          .include = inc,
                          .n_include = 2,
                          .exclude = exc,
                          .n_exclude = 2};
    static const struct {
        const char *url;
        int want;
    } cases[] = {
        {"http://img.test/docs/a", 1},    {"http://cdn.test/blog/b", 1},
        {"http://img.test/other/", 0},    {"http://img.test/docs/a.zip", 0},
        {"http://x.track.test/docs/", 0}, {"http://seed.test/blog/", 1},
        {"http://unknown.test/blog/", 0}, {"http://seed.test/docs/a.pdf", 0},
    };
    char err[256];
    scope_t *sc = scope_new(&cfg, err, sizeof err);
    cr_assert_not_null(sc, "%s", err);
    const char *seeds[] = {"seed.test"};
    cr_assert_eq(scope_set_seed_hosts(sc, seeds, 1), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(scope_allows(sc, cases[i].url), cases[i].want, "url %s: want %d", cases[i].url,
                     cases[i].want);
    scope_free(sc);
}

Test(scope, bad_regex_is_refused_with_a_message_naming_it)
{
    const char *inc[] = {"([unclosed"};
    scope_config_t cfg = {.mode = SCOPE_MODE_ANY, .include = inc, .n_include = 1};
    char err[256] = "";
    cr_expect_null(scope_new(&cfg, err, sizeof err), "a bad regex was accepted");
    cr_expect(strstr(err, "([unclosed") != NULL, "message does not name the regex: %s", err);
    const char *exc[] = {"ok", "*bad"};
    scope_config_t cfg2 = {.mode = SCOPE_MODE_ANY, .exclude = exc, .n_exclude = 2};
    cr_expect_null(scope_new(&cfg2, err, sizeof err), "a bad exclude regex was accepted");
    cr_expect_null(scope_new(&cfg2, NULL, 0), "refused without an error buffer too");
    scope_free(NULL);
}

Test(scope, seed_hosts_are_replaced_as_a_set)
{
    scope_config_t cfg = {.mode = SCOPE_MODE_HOST};
    char err[256];
    scope_t *sc = scope_new(&cfg, err, sizeof err);
    cr_assert_not_null(sc, "%s", err);
    cr_expect_eq(scope_is_seed_host(sc, "a.test"), 0, "no seeds yet");
    cr_expect_eq(scope_allows(sc, "http://a.test/"), 0, "host scope without seeds");
    const char *first[] = {"c.test", "a.test", "b.test", "a.test"};
    cr_assert_eq(scope_set_seed_hosts(sc, first, 4), 0);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(scope_is_seed_host(sc, first[i]), 1, "seed %s", first[i]);
    cr_expect_eq(scope_is_seed_host(sc, "d.test"), 0);
    cr_expect_eq(scope_allows(sc, "http://b.test:8080/x"), 1, "the port is not part of the host");
    const char *second[] = {"d.test"};
    cr_assert_eq(scope_set_seed_hosts(sc, second, 1), 0);
    cr_expect_eq(scope_is_seed_host(sc, "a.test"), 0, "old set replaced");
    cr_expect_eq(scope_is_seed_host(sc, "d.test"), 1);
    cr_assert_eq(scope_set_seed_hosts(sc, NULL, 0), 0);
    cr_expect_eq(scope_is_seed_host(sc, "d.test"), 0, "emptied");
    scope_free(sc);
}

Test(scope, registrable_domain_follows_the_public_suffix_list)
{
    static const struct {
        const char *host, *want;
    } cases[] = {
        {"www.example.com", "example.com"},
        {"example.com", "example.com"},
        {"a.b.example.co.uk", "example.co.uk"},
        {"www.shop.co.uk", "shop.co.uk"},
        {"127.0.0.1", "127.0.0.1"},
        {"10.1.2.3", "10.1.2.3"},
        {"[::1]", "[::1]"},
        {"localhost", "localhost"},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = scope_registrable_domain(cases[i].host, buf, sizeof buf);
        cr_expect(n == (int)strlen(cases[i].want) && strcmp(buf, cases[i].want) == 0,
                  "registrable domain of %s: %d '%s', want '%s'", cases[i].host, n,
                  n >= 0 ? buf : "", cases[i].want);
    }
    cr_expect_eq(scope_registrable_domain("www.example.com", buf, 5), -1, "buffer too small");
}

/* libpsl alone gave "0.1" for both 127.0.0.1 and 10.0.0.1, so in domain
 * mode an address seed let in every address sharing its last two numbers. */
Test(scope, address_seed_in_domain_mode_covers_only_itself)
{
    scope_config_t cfg = {.mode = SCOPE_MODE_DOMAIN};
    char err[256];
    scope_t *sc = scope_new(&cfg, err, sizeof err);
    cr_assert_not_null(sc, "%s", err);
    const char *seeds[] = {"1.2.3.4", "[::1]"};
    cr_assert_eq(scope_set_seed_hosts(sc, seeds, 2), 0);
    static const struct {
        const char *url;
        int want;
    } cases[] = {
        {"http://1.2.3.4/", 1},
        {"http://9.9.3.4/", 0},
        {"http://[::1]:8080/", 1},
        {"http://[::2]/", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(scope_allows(sc, cases[i].url), cases[i].want, "url %s: want %d", cases[i].url,
                     cases[i].want);
    scope_free(sc);
}
