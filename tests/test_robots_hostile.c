/*
 * test_robots_hostile.c -- robots.txt rules against hostile and random input
 * (policy/robots.h): wildcard patterns built to make a backtracking matcher
 * explode, damaged and forged serialized rules, random bodies (which must
 * parse, match and round-trip), and random rule sets checked against a
 * brute-force reference matcher.  Failure messages name the input.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robots.h"
#include "robots_check.h"

static const char rfc_example[] = ROBOTS_RFC9309_EXAMPLE;

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
            cr_expect(err == CRAWL_ECORRUPT || err == CRAWL_EVERSION, "byte %zu: err %d", i, err);
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
        {"version 2", {'R', 'B', 'T', 2, 0, 0, 0}, 7, CRAWL_EVERSION},
        {"bad magic", {'R', 'B', 'X', 1, 0, 0, 0}, 7, CRAWL_ECORRUPT},
        {"rule count too large", {'R', 'B', 'T', 1, 0, 0xff, 0xff, 0x03, 0}, 9, CRAWL_ECORRUPT},
        {"rule longer than buffer", {'R', 'B', 'T', 1, 0, 1, 40, '/', 0}, 9, CRAWL_ECORRUPT},
        {"empty rule", {'R', 'B', 'T', 1, 0, 1, 1, 0}, 8, CRAWL_ECORRUPT},
        {"NUL in rule", {'R', 'B', 'T', 1, 0, 1, 4, '/', 0, 0}, 10, CRAWL_ECORRUPT},
        {"rules out of order",
         {'R', 'B', 'T', 1, 0, 2, 2, '/', 4, '/', 'a', 0},
         12,
         CRAWL_ECORRUPT},
        {"duplicate rule", {'R', 'B', 'T', 1, 0, 2, 2, '/', 2, '/', 0}, 11, CRAWL_ECORRUPT},
        {"non-minimal varint", {'R', 'B', 'T', 1, 0x80, 0, 0, 0}, 8, CRAWL_ECORRUPT},
        {"varint too long",
         {'R', 'B', 'T', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0},
         12,
         CRAWL_ECORRUPT},
        {"delay above cap",
         {'R', 'B', 'T', 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0},
         11,
         CRAWL_ECORRUPT},
        {"duplicate sitemap",
         {'R', 'B', 'T', 1, 0, 0, 2, 3, 'h', 't', 'p', 3, 'h', 't', 'p'},
         15,
         CRAWL_ECORRUPT},
        {"missing sitemap count", {'R', 'B', 'T', 1, 0, 0}, 6, CRAWL_ECORRUPT},
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
    cr_expect_not_null(t, "well-formed forged buffer rejected: %s", crawl_strerror(err));
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
