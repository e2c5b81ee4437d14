/*
 * libFuzzer target for the URL normalizer.  Input: "base\nref" (no newline:
 * ref alone, no base).  Checks, besides crashes, leaks and UB: a result is
 * http(s), within max_len, idempotent, without userinfo, and has a host and
 * an origin, the origin being exactly what comes before its path.  For the
 * reference and for the result, parser_url_origin()/parser_url_host() (scan
 * first) give exactly what the normalizer path gives (url_origin_full()).
 * The normalizer is the WHATWG URL Standard's parser (url.c), so a result
 * parsed again must come back byte for byte, and the visited-set key
 * (parser_url_key) of a result is idempotent too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "parser_internal.h"

#define MAX_URL 512

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

/* The key of a normalized URL keeps its origin and is its own key. */
static void check_key(const char *url)
{
    char *k = NULL, *k2 = NULL;
    if (parser_url_key(url, &k) != 0)
        fail("no key", url, NULL);
    if (parser_url_key(k, &k2) != 0 || strcmp(k, k2) != 0)
        fail("key not idempotent", k, k2);
    size_t ol = (size_t)(strchr(strstr(url, "://") + 3, '/') - url);
    if (strncmp(k, url, ol) != 0)
        fail("key changed the origin", url, k);
    free(k);
    free(k2);
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
    check_origin_paths(ref);
    if (parser_url_normalize(base, ref, MAX_URL, &out) == 0) {
        if (strlen(out) > MAX_URL)
            fail("too long", ref, out);
        if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0)
            fail("scheme", ref, out);
        if (parser_url_normalize(NULL, out, MAX_URL, &again) != 0 || strcmp(again, out) != 0)
            fail("not idempotent", out, again);
        check_authority(ref, out);
        check_key(out);
        check_origin_paths(out);
    } else if (out) {
        fail("error but output set", ref, out);
    }
    free(again);
    free(out);
    free(s);
    return 0;
}
