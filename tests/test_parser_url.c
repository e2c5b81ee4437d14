/*
 * test_parser_url.c -- the URL normalizer of parser/ (RFC 3986 section 5.4
 * examples and each normalization rule, table-driven; userinfo dropped)
 * and the one definition of origin and host (the scanning fast path
 * agreeing with the normalizer, and with libcurl's reading of our output).
 * The WHATWG URL Standard's own cases are in test_whatwg.c.  Every failure message names its
 * input.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "parser_internal.h"

/* ---- normalizer -------------------------------------------------------- */

typedef struct norm_case {
    const char *base; /* NULL: none */
    const char *ref;
    const char *want; /* expected URL when rc == 0 */
    int rc;
} norm_case_t;

static void check_norm(const norm_case_t *c, size_t max_len)
{
    char *out = NULL;
    int rc = parser_url_normalize(c->base, c->ref, max_len, &out);
    cr_expect_eq(rc, c->rc, "normalize(base=%s, ref=\"%s\"): rc %d (%s), want %d (%s), got %s",
                 c->base ? c->base : "NULL", c->ref, rc, crawl_strerror(rc), c->rc,
                 crawl_strerror(c->rc), out ? out : "NULL");
    if (rc == 0 && c->rc == 0) {
        char *again = NULL;
        cr_expect_str_eq(out, c->want, "normalize(base=%s, ref=\"%s\") = %s, want %s",
                         c->base ? c->base : "NULL", c->ref, out, c->want);
        /* normalization is idempotent */
        cr_expect_eq(parser_url_normalize(NULL, out, max_len, &again), 0, "renormalize %s", out);
        if (again)
            cr_expect_str_eq(again, out, "normalize(%s) not idempotent: %s", out, again);
        free(again);
    } else {
        cr_expect_null(out, "normalize(\"%s\") failed but set *out", c->ref);
    }
    free(out);
}

#define RFC_BASE "http://a/b/c/d;p?q"

/* RFC 3986 5.4.1; fragments are dropped, other schemes refused, "//g" gets
 * the "/" of an empty path. */
static const norm_case_t rfc_normal[] = {
    {RFC_BASE, "g:h", NULL, CRAWL_ESCHEME},     {RFC_BASE, "g", "http://a/b/c/g", 0},
    {RFC_BASE, "./g", "http://a/b/c/g", 0},     {RFC_BASE, "g/", "http://a/b/c/g/", 0},
    {RFC_BASE, "/g", "http://a/g", 0},          {RFC_BASE, "//g", "http://g/", 0},
    {RFC_BASE, "?y", "http://a/b/c/d;p?y", 0},  {RFC_BASE, "g?y", "http://a/b/c/g?y", 0},
    {RFC_BASE, "#s", "http://a/b/c/d;p?q", 0},  {RFC_BASE, "g#s", "http://a/b/c/g", 0},
    {RFC_BASE, "g?y#s", "http://a/b/c/g?y", 0}, {RFC_BASE, ";x", "http://a/b/c/;x", 0},
    {RFC_BASE, "g;x", "http://a/b/c/g;x", 0},   {RFC_BASE, "g;x?y#s", "http://a/b/c/g;x?y", 0},
    {RFC_BASE, "", "http://a/b/c/d;p?q", 0},    {RFC_BASE, ".", "http://a/b/c/", 0},
    {RFC_BASE, "./", "http://a/b/c/", 0},       {RFC_BASE, "..", "http://a/b/", 0},
    {RFC_BASE, "../", "http://a/b/", 0},        {RFC_BASE, "../g", "http://a/b/g", 0},
    {RFC_BASE, "../..", "http://a/", 0},        {RFC_BASE, "../../", "http://a/", 0},
    {RFC_BASE, "../../g", "http://a/g", 0},
};

/* RFC 3986 5.4.2; "http:g" takes the backward-compatible reading that the
 * RFC allows and browsers use. */
static const norm_case_t rfc_abnormal[] = {
    {RFC_BASE, "../../../g", "http://a/g", 0},
    {RFC_BASE, "../../../../g", "http://a/g", 0},
    {RFC_BASE, "/./g", "http://a/g", 0},
    {RFC_BASE, "/../g", "http://a/g", 0},
    {RFC_BASE, "g.", "http://a/b/c/g.", 0},
    {RFC_BASE, ".g", "http://a/b/c/.g", 0},
    {RFC_BASE, "g..", "http://a/b/c/g..", 0},
    {RFC_BASE, "..g", "http://a/b/c/..g", 0},
    {RFC_BASE, "./../g", "http://a/b/g", 0},
    {RFC_BASE, "./g/.", "http://a/b/c/g/", 0},
    {RFC_BASE, "g/./h", "http://a/b/c/g/h", 0},
    {RFC_BASE, "g/../h", "http://a/b/c/h", 0},
    {RFC_BASE, "g;x=1/./y", "http://a/b/c/g;x=1/y", 0},
    {RFC_BASE, "g;x=1/../y", "http://a/b/c/y", 0},
    {RFC_BASE, "g?y/./x", "http://a/b/c/g?y/./x", 0},
    {RFC_BASE, "g?y/../x", "http://a/b/c/g?y/../x", 0},
    {RFC_BASE, "g#s/./x", "http://a/b/c/g", 0},
    {RFC_BASE, "g#s/../x", "http://a/b/c/g", 0},
    {RFC_BASE, "http:g", "http://a/b/c/g", 0},
};

Test(parser_url, resolves_rfc3986_normal_examples)
{
    for (size_t i = 0; i < sizeof(rfc_normal) / sizeof(rfc_normal[0]); i++)
        check_norm(&rfc_normal[i], 0);
}

Test(parser_url, resolves_rfc3986_abnormal_examples)
{
    for (size_t i = 0; i < sizeof(rfc_abnormal) / sizeof(rfc_abnormal[0]); i++)
        check_norm(&rfc_abnormal[i], 0);
}

static const norm_case_t rules[] = {
    /* whitespace: trimmed around, tabs and newlines removed inside */
    {NULL, "  http://x.org/a  ", "http://x.org/a", 0},
    {NULL, "\t\n http://x.org/\r\n", "http://x.org/", 0},
    {NULL, "http://x.org/a\tb\nc\rd", "http://x.org/abcd", 0},
    {NULL, "ht\ntp://x.\torg/", "http://x.org/", 0},
    /* scheme and host lowercased, path case kept */
    {NULL, "HTTP://WWW.Example.ORG/Path/To", "http://www.example.org/Path/To", 0},
    {NULL, "HtTpS://X.ORG", "https://x.org/", 0},
    /* default port dropped, others kept */
    {NULL, "http://x.org:80/", "http://x.org/", 0},
    {NULL, "https://x.org:443/a", "https://x.org/a", 0},
    {NULL, "http://x.org:443/", "http://x.org:443/", 0},
    {NULL, "https://x.org:8443/a", "https://x.org:8443/a", 0},
    {NULL, "http://x.org:0080/", "http://x.org/", 0},
    /* dot segments removed, escaped dots too */
    {NULL, "http://x.org/a/./b/../c", "http://x.org/a/c", 0},
    {NULL, "http://x.org/a/%2e%2E/b", "http://x.org/b", 0},
    {NULL, "http://x.org/../../a", "http://x.org/a", 0},
    /* fragment dropped */
    {NULL, "http://x.org/a#frag", "http://x.org/a", 0},
    {NULL, "http://x.org/a?q=1#f?g", "http://x.org/a?q=1", 0},
    /* empty path -> "/" */
    {NULL, "http://x.org", "http://x.org/", 0},
    {NULL, "http://x.org?q", "http://x.org/?q", 0},
    /* path escapes kept as they are, a stray '%' too (as browsers do; the
     * visited-set key decodes them: parser_url_key) */
    {NULL, "http://x.org/%7euser/%41%2f%3a%5F", "http://x.org/%7euser/%41%2f%3a%5F", 0},
    {NULL, "http://x.org/a%2fb%e9", "http://x.org/a%2fb%e9", 0},
    {NULL, "http://x.org/100%/%zz", "http://x.org/100%/%zz", 0},
    {NULL, "http://x.org/%%33%4%31?%%33", "http://x.org/%%33%4%31?%%33", 0},
    /* the query is kept as it is */
    {NULL, "http://x.org/p?B=%7e&a=1&a=1&%2f", "http://x.org/p?B=%7e&a=1&a=1&%2f", 0},
    {NULL, "http://x.org/p?a=/../b", "http://x.org/p?a=/../b", 0},
    /* bytes that cannot be sent are escaped (UTF-8) */
    {NULL, "http://x.org/a b?c d", "http://x.org/a%20b?c%20d", 0},
    {NULL, "http://x.org/caf\xc3\xa9?q=\xc3\xa9", "http://x.org/caf%C3%A9?q=%C3%A9", 0},
    {NULL, "http://x.org/a\"<>`{}", "http://x.org/a%22%3C%3E%60%7B%7D", 0},
    /* backslashes before the query are slashes, as in browsers */
    {NULL, "http://x.org\\a\\b?c\\d", "http://x.org/a/b?c\\d", 0},
    /* IDN hosts -> punycode */
    {NULL,
     "http://B\xc3\xbc"
     "cher.example/",
     "http://xn--bcher-kva.example/", 0},
    {NULL, "https://\xe2\x98\x83.net", "https://xn--n3h.net/", 0},
    {NULL, "http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/", 0},
    /* IP literals, userinfo (dropped: userinfo_is_dropped_from_every_url) */
    {NULL, "http://[::1]:80/x", "http://[::1]/x", 0},
    {NULL, "http://[::1]:8080/x", "http://[::1]:8080/x", 0},
    {NULL, "http://u:p@X.org/", "http://x.org/", 0},
    /* scheme-relative, same-scheme relative */
    {"https://a.org/b/c", "//c.org/d", "https://c.org/d", 0},
    {"https://a.org/b/c", "https:d", "https://a.org/b/d", 0},
    {"https://a.org/b/c", "http:d", "http://d/", 0},
    {"http://a.org/b/", "\\\\c.org\\d", "http://c.org/d", 0},
    {"http://a.org/b/", "  ", "http://a.org/b/", 0},
    /* only http and https */
    {NULL, "mailto:a@x.org", NULL, CRAWL_ESCHEME},
    {NULL, "javascript:alert(1)", NULL, CRAWL_ESCHEME},
    {NULL, "JaVa\tScRiPt:alert(1)", NULL, CRAWL_ESCHEME},
    {NULL, "data:text/html,<a>", NULL, CRAWL_ESCHEME},
    {NULL, "tel:+15551234", NULL, CRAWL_ESCHEME},
    {NULL, "ftp://x.org/f", NULL, CRAWL_ESCHEME},
    {NULL, "file:///etc/passwd", NULL, CRAWL_ESCHEME},
    {"http://a.org/", "mailto:x@y", NULL, CRAWL_ESCHEME},
    {"ftp://a.org/", "g", NULL, CRAWL_ESCHEME},
    /* not URLs */
    {NULL, "/relative/without/base", NULL, CRAWL_EBADURL},
    {NULL, "", NULL, CRAWL_EBADURL},
    {NULL, "http://", NULL, CRAWL_EBADURL},
    {NULL, "http://a b.org/", NULL, CRAWL_EBADURL},
    {NULL, "http://x.org:99999/", NULL, CRAWL_EBADURL},
    {NULL, "http://%7F%7Fx.org/", NULL, CRAWL_EBADURL},
    {NULL, "http://x%2Fy.org/", NULL, CRAWL_EBADURL},
    {NULL, "http://%E2%98%83.net/", "http://xn--n3h.net/", 0},
    {"not a url", "g", NULL, CRAWL_EBADURL},
};

Test(parser_url, applies_each_normalization_rule)
{
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        check_norm(&rules[i], 0);
}

/* Userinfo is dropped from every URL: seeds (no base), links and redirect
 * targets (against the page or request URL), and a base's credentials are
 * not inherited by the relative links resolved against it. */
static const norm_case_t userinfo[] = {
    {NULL, "http://user:pw@host/a", "http://host/a", 0},
    {NULL, "http://@host/", "http://host/", 0},
    {NULL, "http://a:@host/", "http://host/", 0},
    {NULL, "http://:@host/", "http://host/", 0},
    {NULL, "http://:pw@host/", "http://host/", 0},
    {NULL, "http://user@host", "http://host/", 0},
    {NULL, "https://u%40x:p%3Aw@host:8443/p?q", "https://host:8443/p?q", 0},
    {NULL, "HTTP://User:PW@Example.COM:80/a", "http://example.com/a", 0},
    {NULL, "http://u@[::1]:8080/x", "http://[::1]:8080/x", 0},
    {NULL, "http://u:p@0x7f.1/", "http://127.0.0.1/", 0},
    {NULL,
     "http://u@b\xc3\xbc"
     "cher.example/",
     "http://xn--bcher-kva.example/", 0},
    /* the userinfo ends at the last '@' of the authority */
    {NULL, "http://a@b@c/", "http://c/", 0},
    {NULL, "http://::@c@d:2", "http://d:2/", 0},
    {NULL, "https://@@@example", "https://example/", 0},
    {NULL, "http://\xc3\xa9@example.com", "http://example.com/", 0},
    {NULL, "http://foo(b]c@x/", "http://x/", 0},
    {NULL, "http://user@/", NULL, CRAWL_EBADURL},
    /* an '@' outside the authority is no userinfo */
    {NULL, "http://host/a@b?c@d", "http://host/a@b?c@d", 0},
    {"http://a/", "http:u@b/x", "http://a/u@b/x", 0},
    /* credentials in the base are not inherited */
    {"http://user:pw@host/dir/page", "x", "http://host/dir/x", 0},
    {"http://user:pw@host/dir/page", "/y", "http://host/y", 0},
    {"http://user:pw@host/dir/page", "?q", "http://host/dir/page?q", 0},
    {"http://user:pw@host/dir/page", "", "http://host/dir/page", 0},
    {"http://user:pw@host/dir/page", "#f", "http://host/dir/page", 0},
    {"http://user:pw@host/dir/page", "../up", "http://host/up", 0},
    {"https://u:p@host/d/", "//other/z", "https://other/z", 0},
    {"http://@host/d/", "z", "http://host/d/z", 0},
    /* nor are a link's (or a redirect's Location) */
    {"http://host/d/", "//u:p@other/z", "http://other/z", 0},
    {"http://host/d/", "http://user@host/d/z", "http://host/d/z", 0},
    {"http://host/d/", "https://:@host/", "https://host/", 0},
};

Test(parser_url, userinfo_is_dropped_from_every_url)
{
    for (size_t i = 0; i < sizeof(userinfo) / sizeof(userinfo[0]); i++)
        check_norm(&userinfo[i], 0);
}

/* "http://x.org/" + pad 'a's: a URL of exactly n bytes (caller frees). */
static char *url_of_len(size_t n)
{
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memcpy(s, "http://x.org/", 13);
    memset(s + 13, 'a', n - 13);
    s[n] = '\0';
    return s;
}

Test(parser_url, refuses_urls_longer_than_max_length)
{
    char *at = url_of_len(PARSER_DEFAULT_MAX_URL_LENGTH);
    char *over = url_of_len(PARSER_DEFAULT_MAX_URL_LENGTH + 1);
    char *huge = url_of_len(1000000);
    norm_case_t ok = {NULL, at, at, 0}, too = {NULL, over, NULL, CRAWL_ETOOLONG};
    norm_case_t huge_c = {NULL, huge, NULL, CRAWL_ETOOLONG};
    norm_case_t bigger = {NULL, over, over, 0};
    check_norm(&ok, 0);
    check_norm(&too, 0);
    check_norm(&huge_c, 0);
    check_norm(&bigger, PARSER_DEFAULT_MAX_URL_LENGTH + 1);
    /* escapes count after decoding: 3 bytes in, 1 byte out */
    char *esc = malloc(3 * 2100 + 14);
    memcpy(esc, "http://x.org/", 13);
    for (size_t i = 0; i < 2100; i++)
        memcpy(esc + 13 + 3 * i, "%61", 3);
    esc[13 + 3 * 2100] = '\0';
    norm_case_t esc_c = {NULL, esc, NULL, CRAWL_ETOOLONG};
    check_norm(&esc_c, 0);
    free(at);
    free(over);
    free(huge);
    free(esc);
}

Test(parser_url, rejects_bad_arguments)
{
    char *out = (char *)1;
    cr_expect_eq(parser_url_normalize(NULL, NULL, 0, &out), CRAWL_EINVAL);
    cr_expect_eq(parser_url_normalize(NULL, "http://x/", 0, NULL), CRAWL_EINVAL);
    cr_expect_str_eq(crawl_strerror(CRAWL_ESCHEME), "scheme is not http or https");
    cr_expect_str_neq(crawl_strerror(-999), "");
}

typedef struct hostcase {
    const char *url, *host, *origin;
} hostcase_t;

Test(parser_url, gives_host_and_origin_of_normalized_urls)
{
    static const hostcase_t cases[] = {
        {"http://x.org/a?b", "x.org", "http://x.org"},
        {"https://x.org:8443/a", "x.org", "https://x.org:8443"},
        {"http://[::1]:8080/", "[::1]", "http://[::1]:8080"},
        {"http://u:p@x.org/", "x.org", "http://x.org"},
        {"https://xn--bcher-kva.example/", "xn--bcher-kva.example",
         "https://xn--bcher-kva.example"},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = parser_url_host(cases[i].url, buf, sizeof(buf));
        cr_expect(n > 0 && strcmp(buf, cases[i].host) == 0, "host(%s) = %d %s", cases[i].url, n,
                  n > 0 ? buf : "");
        n = parser_url_origin(cases[i].url, buf, sizeof(buf));
        cr_expect(n == (int)strlen(cases[i].origin) && strcmp(buf, cases[i].origin) == 0,
                  "origin(%s) = %d %s", cases[i].url, n, n > 0 ? buf : "");
    }
    cr_expect_eq(parser_url_origin("http://x.org/", buf, 8), CRAWL_ETOOLONG);
    cr_expect_eq(parser_url_host("http://x.org/", buf, 5), CRAWL_ETOOLONG);
    cr_expect_eq(parser_url_host("no url", buf, sizeof(buf)), CRAWL_EBADURL);
    cr_expect_eq(parser_url_origin(NULL, buf, sizeof(buf)), CRAWL_EINVAL);
}

/* The scanning fast path gives what libcurl's parser gives, for the
 * normalizer's output of varied references. */
Test(parser_url, host_and_origin_agree_with_libcurl)
{
    static const char *const refs[] = {"HTTP://Example.COM:80/a/../b?x#f",
                                       "https://u:p@x.org:8443/p",
                                       "http://[::1]:8080/",
                                       "http://127.0.0.1:1/",
                                       "https://b\xc3\xbc"
                                       "cher.example/",
                                       "http://a_b.example./x",
                                       "http://x.org?q",
                                       "https://X.org:443",
                                       "http://1.2.3.4:65535/z"};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        char *url = NULL, host[256], origin[512];
        cr_assert_eq(parser_url_normalize(NULL, refs[i], 0, &url), 0, "normalize %s", refs[i]);
        cr_assert_gt(parser_url_host(url, host, sizeof host), 0, "host of %s", url);
        cr_assert_gt(parser_url_origin(url, origin, sizeof origin), 0, "origin of %s", url);
        CURLU *h = curl_url();
        char *ch = NULL, *cs = NULL, *cp = NULL;
        cr_assert_eq(curl_url_set(h, CURLUPART_URL, url, 0), CURLUE_OK);
        cr_assert_eq(curl_url_get(h, CURLUPART_HOST, &ch, 0), CURLUE_OK);
        cr_assert_eq(curl_url_get(h, CURLUPART_SCHEME, &cs, 0), CURLUE_OK);
        if (curl_url_get(h, CURLUPART_PORT, &cp, CURLU_NO_DEFAULT_PORT) != CURLUE_OK)
            cp = NULL;
        char want[512];
        snprintf(want, sizeof want, "%s://%s%s%s", cs, ch, cp ? ":" : "", cp ? cp : "");
        cr_expect_str_eq(host, ch, "host of %s", url);
        cr_expect_str_eq(origin, want, "origin of %s", url);
        curl_free(ch);
        curl_free(cs);
        curl_free(cp);
        curl_url_cleanup(h);
        free(url);
    }
}

/* parser_url_origin()/parser_url_host() answer from a scan when the URL is
 * already in normalized form and through the normalizer otherwise; both
 * must give the origin of the normalized URL, for any input. */
static void expect_fast_equals_full(const char *url, size_t buflen)
{
    char a[512], b[512];
    int ra = parser_url_origin(url, a, buflen), rb = url_origin_full(url, b, buflen);
    cr_expect(ra == rb && (ra < 0 || strcmp(a, b) == 0),
              "origin(\"%s\", %zu): fast path %d %s, through the normalizer %d %s", url, buflen, ra,
              ra >= 0 ? a : "", rb, rb >= 0 ? b : "");
    ra = parser_url_host(url, a, buflen);
    rb = url_host_full(url, b, buflen);
    cr_expect(ra == rb && (ra < 0 || strcmp(a, b) == 0),
              "host(\"%s\", %zu): fast path %d %s, through the normalizer %d %s", url, buflen, ra,
              ra >= 0 ? a : "", rb, rb >= 0 ? b : "");
}

Test(parser_url, origin_fast_path_and_normalizer_agree)
{
    static const struct {
        const char *url, *origin, *host; /* NULL: rc */
        int rc;
    } cases[] = {
        {"http://x.org/a?b", "http://x.org", "x.org", 0},
        {"https://x.org:8443/a", "https://x.org:8443", "x.org", 0},
        {"http://x.org:0/", "http://x.org:0", "x.org", 0},
        {"http://x.org:443/", "http://x.org:443", "x.org", 0},
        {"http://x.org:65535/", "http://x.org:65535", "x.org", 0},
        {"http://127.0.0.1:8080/", "http://127.0.0.1:8080", "127.0.0.1", 0},
        {"http://a_b-c.x.org./", "http://a_b-c.x.org.", "a_b-c.x.org.", 0},
        {"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example", "xn--bcher-kva.example",
         0},
        /* not in normalized form: through the normalizer */
        {"http://user:pw@x.org/a", "http://x.org", "x.org", 0},
        {"http://@x.org/", "http://x.org", "x.org", 0},
        {"http://a:@x.org:8080/", "http://x.org:8080", "x.org", 0},
        {"HTTP://X.ORG/", "http://x.org", "x.org", 0},
        {"http://X.org/", "http://x.org", "x.org", 0},
        {"http://x.org:80/", "http://x.org", "x.org", 0},
        {"https://x.org:443/", "https://x.org", "x.org", 0},
        {"http://x.org:0080/", "http://x.org", "x.org", 0},
        {"http://x.org:08080/", "http://x.org:8080", "x.org", 0},
        {"http://x.org", "http://x.org", "x.org", 0},
        {"http://x.org?q/x", "http://x.org", "x.org", 0},
        {"http://x.org#f/x", "http://x.org", "x.org", 0},
        {"http://x.org\\a/b", "http://x.org", "x.org", 0},
        {"http://x%2Eorg/", "http://x.org", "x.org", 0},
        {" http://x.org/", "http://x.org", "x.org", 0},
        {"http://0x7f.1/", "http://127.0.0.1", "127.0.0.1", 0},
        {"http://2130706433/", "http://127.0.0.1", "127.0.0.1", 0},
        {"http://127.000.0.1/", "http://127.0.0.1", "127.0.0.1", 0},
        {"http://0/", "http://0.0.0.0", "0.0.0.0", 0},
        {"http://1.2.3.4./", "http://1.2.3.4", "1.2.3.4", 0},
        {"http://0x.0x.0/", "http://0.0.0.0", "0.0.0.0", 0},
        {"http://[::1]/", "http://[::1]", "[::1]", 0},
        {"http://[0:0::1]:8080/", "http://[::1]:8080", "[::1]", 0},
        {"http://[::127.0.0.1]/", "http://[::7f00:1]", "[::7f00:1]", 0},
        {"http://b\xc3\xbc"
         "cher.example/",
         "http://xn--bcher-kva.example", "xn--bcher-kva.example", 0},
        /* no origin */
        {"http://x.org:65536/", NULL, NULL, CRAWL_EBADURL},
        {"http://a@b@c/", "http://c", "c", 0},
        {"http://1.2.3.4.5/", NULL, NULL, CRAWL_EBADURL},
        {"http://08/", NULL, NULL, CRAWL_EBADURL},
        {"http://[FE80::1%25eth0]/", NULL, NULL, CRAWL_EBADURL},
        {"http://xn--a.example/", NULL, NULL, CRAWL_EBADURL},
        {"http://h:1:2/", NULL, NULL, CRAWL_EBADURL},
        {"http://x.org:/", "http://x.org", "x.org", 0},
        {"http:///", NULL, NULL, CRAWL_EBADURL},
        {"ftp://x.org/", NULL, NULL, CRAWL_ESCHEME},
        {"no url", NULL, NULL, CRAWL_EBADURL},
        {"/relative", NULL, NULL, CRAWL_EBADURL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *url = cases[i].url;
        char buf[512];
        int n = parser_url_origin(url, buf, sizeof buf);
        if (cases[i].origin) {
            cr_expect(n == (int)strlen(cases[i].origin) && strcmp(buf, cases[i].origin) == 0,
                      "origin(\"%s\") = %d %s, want %s", url, n, n >= 0 ? buf : "",
                      cases[i].origin);
            n = parser_url_host(url, buf, sizeof buf);
            cr_expect(n == (int)strlen(cases[i].host) && strcmp(buf, cases[i].host) == 0,
                      "host(\"%s\") = %d %s, want %s", url, n, n >= 0 ? buf : "", cases[i].host);
        } else {
            cr_expect_eq(n, cases[i].rc, "origin(\"%s\") = %d, want %d", url, n, cases[i].rc);
        }
        for (size_t len = 1; len <= 40; len++)
            expect_fast_equals_full(url, len);
        expect_fast_equals_full(url, sizeof buf);
    }
}

/* The origin of a normalized URL is exactly what comes before its path. */
Test(parser_url, origin_is_the_authority_of_the_normalized_url)
{
    const norm_case_t *tables[] = {rules, userinfo};
    size_t sizes[] = {sizeof(rules) / sizeof(rules[0]), sizeof(userinfo) / sizeof(userinfo[0])};
    for (size_t t = 0; t < 2; t++) {
        for (size_t i = 0; i < sizes[t]; i++) {
            char *out = NULL, origin[512];
            if (parser_url_normalize(tables[t][i].base, tables[t][i].ref, 0, &out) != 0)
                continue;
            const char *path = strchr(strstr(out, "://") + 3, '/');
            int n = parser_url_origin(out, origin, sizeof origin);
            cr_expect(n == (int)(path - out) && strncmp(origin, out, (size_t)n) == 0,
                      "origin(%s) = %d %s", out, n, n >= 0 ? origin : "");
            expect_fast_equals_full(out, sizeof origin);
            expect_fast_equals_full(tables[t][i].ref, sizeof origin);
            free(out);
        }
    }
}

/* Found by fuzz_url: NFKC maps U+00B2 (superscript two) to "2"; the Standard checks "ends in
 * a number" after IDNA, so the host is then the IPv4 address 0.0.0.2 (which
 * normalizes to itself). */
Test(parser_url, idn_host_that_becomes_a_number_is_an_ipv4_address)
{
    static const norm_case_t cases[] = {
        {NULL, "HTTP:\xc2\xb2", "http://0.0.0.2/", 0},
        {NULL, "http://\xc2\xb9.\xc2\xb2/", "http://1.0.0.2/", 0},
        {NULL, "http://\xc2\xb9.\xc2\xb2.3.4.5/", NULL, CRAWL_EBADURL},
        {NULL,
         "http://b\xc3\xbc"
         "cher.example/",
         "http://xn--bcher-kva.example/", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_norm(&cases[i], 0);
}
