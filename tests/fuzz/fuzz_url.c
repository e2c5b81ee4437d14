/*
 * libFuzzer target for the URL normalizer.  Input: "base\nref" (no newline:
 * ref alone, no base).  Checks, besides crashes, leaks and UB: a result is
 * http(s), within max_len, idempotent, without userinfo, and has a host and
 * an origin, the origin being exactly what comes before its path.  For the
 * reference and for the result, parser_url_origin()/parser_url_host() (scan
 * first) give exactly what the normalizer path gives (url_origin_full()).
 * (It used to compare url_resolve with libcurl's own relative resolution;
 * that found libcurl 7.88 deviating from RFC 3986 -- "./?q" against
 * http://a/bc/q gives http://a/bc?q, "..///y" loses an empty segment,
 * ".:x" is refused as a scheme -- so the comparison is kept only for the
 * RFC tables in tests/test_parser.c.)  With a base, url_resolve()'s
 * same-origin shortcut must give exactly what the full parse gives.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "parser_internal.h"

#define MAX_URL 512

/* url_resolve (with its shortcut) and url_resolve_full agree. */
static void check_shortcut(const char *base, const char *ref)
{
    url_base_t *b = NULL;
    char *a = NULL, *f = NULL;
    size_t al = 0, fl = 0;
    if (url_base_new(base, strlen(base), MAX_URL, &b) != 0)
        return;
    int ra = url_resolve(b, ref, strlen(ref), MAX_URL, &a, &al);
    int rf = url_resolve_full(b, ref, strlen(ref), MAX_URL, &f, &fl);
    if (ra != rf || (ra == 0 && (strcmp(a, f) != 0 || al != fl || al != strlen(a)))) {
        fprintf(stderr, "shortcut %d [%s], full parse %d [%s]\n", ra, a ? a : "", rf, f ? f : "");
        abort();
    }
    free(a);
    free(f);
    url_base_free(b);
}

static void fail(const char *what, const char *in, const char *out)
{
    fprintf(stderr, "%s: [%s] -> [%s]\n", what, in, out ? out : "(null)");
    abort();
}

/* The scanning fast path of origin and host agrees with the normalizer. */
static void check_origin_paths(const char *url)
{
    char a[MAX_URL * 9], b[MAX_URL * 9];
    int ra = parser_url_origin(url, a, sizeof a), rb = url_origin_full(url, b, sizeof b);
    if (ra != rb || (ra >= 0 && strcmp(a, b) != 0))
        fail("origin: fast path and normalizer disagree", url, ra >= 0 ? a : "(error)");
    ra = parser_url_host(url, a, sizeof a);
    rb = url_host_full(url, b, sizeof b);
    if (ra != rb || (ra >= 0 && strcmp(a, b) != 0))
        fail("host: fast path and normalizer disagree", url, ra >= 0 ? a : "(error)");
}

/* out (normalized): no userinfo, and its origin is the part before the path. */
static void check_authority(const char *ref, const char *out)
{
    char buf[MAX_URL + 16];
    const char *auth = strstr(out, "://") + 3, *path = strchr(auth, '/');
    if (!path || memchr(auth, '@', (size_t)(path - auth)))
        fail("userinfo or no path", ref, out);
    int n = parser_url_origin(out, buf, sizeof(buf));
    if (n != (int)(path - out) || strncmp(buf, out, (size_t)n) != 0)
        fail("origin is not the authority", ref, out);
    if (parser_url_host(out, buf, sizeof(buf)) <= 0)
        fail("no host", ref, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *nl, *base = NULL, *ref, *out = NULL, *again = NULL;
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    ref = s;
    if ((nl = strchr(s, '\n'))) {
        *nl = '\0';
        base = s;
        ref = nl + 1;
    }
    if (base)
        check_shortcut(base, ref);
    check_origin_paths(ref);
    if (parser_url_normalize(base, ref, MAX_URL, &out) == 0) {
        if (strlen(out) > MAX_URL)
            fail("too long", ref, out);
        if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0)
            fail("scheme", ref, out);
        if (parser_url_normalize(NULL, out, MAX_URL, &again) != 0 || strcmp(again, out) != 0)
            fail("not idempotent", out, again);
        check_authority(ref, out);
        check_origin_paths(out);
    } else if (out) {
        fail("error but output set", ref, out);
    }
    free(again);
    free(out);
    free(s);
    return 0;
}
