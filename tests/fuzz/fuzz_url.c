/*
 * libFuzzer target for the URL normalizer.  Input: "base\nref" (no newline:
 * ref alone, no base).  Checks, besides crashes, leaks and UB: a result is
 * http(s), within max_len, idempotent, and has a host and an origin; and
 * url_resolve() (base prefix + reference, RFC 3986 5.2.2) agrees with
 * libcurl's own relative resolution (url_resolve_curl), except where libcurl
 * deviates from RFC 3986 (bases whose path has an empty segment).
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *nl, *base = NULL, *ref, *out = NULL, *again = NULL,
         buf[MAX_URL + 16];
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
    if (parser_url_normalize(base, ref, MAX_URL, &out) == 0) {
        if (strlen(out) > MAX_URL)
            fail("too long", ref, out);
        if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0)
            fail("scheme", ref, out);
        if (parser_url_normalize(NULL, out, MAX_URL, &again) != 0 || strcmp(again, out) != 0)
            fail("not idempotent", out, again);
        if (parser_url_host(out, buf, sizeof(buf)) <= 0 ||
            parser_url_origin(out, buf, sizeof(buf)) <= 0)
            fail("no host/origin", ref, out);
    } else if (out) {
        fail("error but output set", ref, out);
    }
    if (base) {
        url_base_t *b = NULL;
        char *fast = NULL, *slow = NULL;
        /* libcurl's relative resolution deviates from RFC 3986 5.2.3 when
         * the base path has empty segments ("//"): skip those bases */
        if (url_base_new(base, strlen(base), MAX_URL, &b) == 0 &&
            !strstr(strstr(url_base_str(b), "://") + 3, "//")) {
            int r1 = url_resolve(b, ref, strlen(ref), MAX_URL, &fast, NULL);
            int r2 = url_resolve_curl(b, ref, MAX_URL, &slow);
            if (r1 != r2 || (r1 == 0 && strcmp(fast, slow) != 0)) {
                fprintf(stderr, "base [%s] rc %d vs %d\n", base, r1, r2);
                fail("prefix resolution differs from libcurl's", fast ? fast : "", slow);
            }
        }
        free(fast);
        free(slow);
        url_base_free(b);
    }
    free(again);
    free(out);
    free(s);
    return 0;
}
