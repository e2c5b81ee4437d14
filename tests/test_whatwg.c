/*
 * test_whatwg.c -- the URL normalizer against the WHATWG URL Standard's
 * rules for http and https (what a browser requests for a link), one table
 * per rule: userinfo, slashes, IPv4 number forms, IPv6, percent-encode
 * sets, dot segments, ports, relative references, hosts; then the charset
 * default of a page that declares none, and the `crawler url` command.
 * The cases are written from the Standard's algorithms and the examples of
 * issue #17; where we differ on purpose (parser.h), the case says so.
 * Every failure message names its input; every result is normalized again
 * (idempotence) and its visited-set key checked.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "parser.h"

typedef struct wcase {
    const char *base; /* NULL: none */
    const char *ref;
    const char *want; /* NULL: dropped with rc */
    int rc;
} wcase_t;

#define N(t) (sizeof(t) / sizeof((t)[0]))

static void check_cases(const char *what, const wcase_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *out = NULL, *again = NULL;
        int rc = parser_url_normalize(c[i].base, c[i].ref, 0, &out);
        int want_rc = c[i].want ? 0 : c[i].rc;
        cr_expect_eq(rc, want_rc, "%s: base %s ref \"%s\": rc %d (%s), want %d, got %s", what,
                     c[i].base ? c[i].base : "NULL", c[i].ref, rc, crawl_strerror(rc), want_rc,
                     out ? out : "NULL");
        if (rc == 0 && c[i].want) {
            cr_expect_str_eq(out, c[i].want, "%s: base %s ref \"%s\" = %s, want %s", what,
                             c[i].base ? c[i].base : "NULL", c[i].ref, out, c[i].want);
            cr_expect_eq(parser_url_normalize(NULL, out, 0, &again), 0, "%s: renormalize %s", what,
                         out);
            if (again)
                cr_expect_str_eq(again, out, "%s: %s not idempotent: %s", what, out, again);
        }
        free(out);
        free(again);
    }
}

/* Userinfo ends at the last '@' of the authority and is dropped (parser.h:
 * no credentials found in a link are ever sent). */
static const wcase_t userinfo[] = {
    {NULL, "http://@host/", "http://host/", 0},
    {NULL, "http://a:@host/", "http://host/", 0},
    {NULL, "http://\xc3\xa9@example.com", "http://example.com/", 0},
    {NULL, "http://foo(b]c@example.com/x", "http://example.com/x", 0},
    {NULL, "http://::@c@d:2", "http://d:2/", 0},
    {NULL, "https://@@@example", "https://example/", 0},
    {NULL, "http://user:pass@foo:21/bar;par?b#c", "http://foo:21/bar;par?b", 0},
    {NULL, "http://a:b@c\\d", "http://c/d", 0},
    {"http://h/", "//u:p@other/z", "http://other/z", 0},
    {NULL, "http://user@/www.example.com", NULL, CRAWL_EBADURL},
    {NULL, "http://@/www.example.com", NULL, CRAWL_EBADURL},
    {NULL, "http://a:b@/www.example.com", NULL, CRAWL_EBADURL},
};

/* Any run of '/' and '\' after "http:" introduces the authority. */
static const wcase_t slashes[] = {
    {NULL, "http:////example.com/x", "http://example.com/x", 0},
    {NULL, "http:///\\//\\//test", "http://test/", 0},
    {NULL, "http:\\\\example.com\\a\\b", "http://example.com/a/b", 0},
    {NULL, "http:example.com/", "http://example.com/", 0},
    {NULL, "https:/example.com/", "https://example.com/", 0},
    {"http://a/b/c", "http:/example.com/", "http://a/example.com/", 0},
    {"http://a/b/c", "http:example.com/", "http://a/b/example.com/", 0},
    {"http://a/b/c", "https:example.com/", "https://example.com/", 0},
    {"http://a/b/c", "\\\\x\\y", "http://x/y", 0},
    {"http://a/b/c", "/\\x/y", "http://x/y", 0},
    {"http://a/b/c", "\\y", "http://a/y", 0},
    {NULL, "////example.com/x", NULL, CRAWL_EBADURL},
    {NULL, "http:", NULL, CRAWL_EBADURL},
    {NULL, "http:///", NULL, CRAWL_EBADURL},
};

/* A host that ends in a number is an IPv4 address, or the URL fails. */
static const wcase_t ipv4[] = {
    {NULL, "http://1.2.3.4./", "http://1.2.3.4/", 0},
    {NULL, "http://192.168.257.", "http://192.168.1.1/", 0},
    {NULL, "https://0x.0x.0", "https://0.0.0.0/", 0},
    {NULL, "http://0x7f.1/", "http://127.0.0.1/", 0},
    {NULL, "http://2130706433/", "http://127.0.0.1/", 0},
    {NULL, "http://017700000001/", "http://127.0.0.1/", 0},
    {NULL, "http://0300.0250.0.01/", "http://192.168.0.1/", 0},
    {NULL, "http://127.000.0.1/", "http://127.0.0.1/", 0},
    {NULL, "http://0xffffffff/", "http://255.255.255.255/", 0},
    {NULL, "http://%30%78%37%66.1/", "http://127.0.0.1/", 0},
    {NULL, "http://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1/", "http://127.0.0.1/", 0},
    {NULL, "http://256.256.256.256", NULL, CRAWL_EBADURL},
    {NULL, "http://1.2.3.4.5", NULL, CRAWL_EBADURL},
    {NULL, "http://1.2.3.08", NULL, CRAWL_EBADURL},
    {NULL, "http://foo.0x4", NULL, CRAWL_EBADURL},
    {NULL, "http://10000000000", NULL, CRAWL_EBADURL},
    {NULL, "http://4294967296/", NULL, CRAWL_EBADURL},
    {NULL, "http://1.2.3.256/", NULL, CRAWL_EBADURL},
    {NULL, "http://1..2/", NULL, CRAWL_EBADURL},
    {NULL, "http://09.2.3.4/", NULL, CRAWL_EBADURL},
    /* not a number at the end: a name */
    {NULL, "http://1.2.3.4.x/", "http://1.2.3.4.x/", 0},
    {NULL, "http://0x.0x.g/", "http://0x.0x.g/", 0},
    {NULL, "http://1../", "http://1../", 0},
};

/* IPv6: parsed, serialized lowercase with the first longest zero run
 * compressed, embedded IPv4 as hex; zone ids are no URL. */
static const wcase_t ipv6[] = {
    {NULL, "http://[::127.0.0.1]", "http://[::7f00:1]/", 0},
    {NULL, "http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/", 0},
    {NULL, "http://[1:0::]", "http://[1::]/", 0},
    {NULL, "http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/", 0},
    {NULL, "http://[1:0:0:2:0:0:3:4]/", "http://[1::2:0:0:3:4]/", 0},
    {NULL, "http://[1:2:3:4:5:6:7:0]/", "http://[1:2:3:4:5:6:7:0]/", 0},
    {NULL, "http://[ABCD:EF01::0001]/", "http://[abcd:ef01::1]/", 0},
    {NULL, "http://[::ffff:192.168.0.1]/", "http://[::ffff:c0a8:1]/", 0},
    {NULL, "https://[::1]:443/", "https://[::1]/", 0},
    {NULL, "http://[fe80::1%25eth0]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[::1.2.3.]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[::1.2.3.04]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[1:2:3:4:5:6:7:8:9]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[1::2::3]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[:1]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[1:]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[12345::]/", NULL, CRAWL_EBADURL},
    {NULL, "http://[::1]x/", NULL, CRAWL_EBADURL},
    {NULL, "http://[::1/", NULL, CRAWL_EBADURL},
};

/* Percent-encode sets: path ("#<>?^`{} C0 space non-ASCII), special query
 * ("#<>' C0 space non-ASCII); escapes and a stray '%' kept as they are. */
static const wcase_t encoding[] = {
    {NULL, "http://x/?q=O'Brien", "http://x/?q=O%27Brien", 0},
    {NULL, "http://x/?q=O%27Brien", "http://x/?q=O%27Brien", 0},
    {NULL, "http://x/a^b", "http://x/a%5Eb", 0},
    {NULL, "http://x/100%-cotton", "http://x/100%-cotton", 0},
    {NULL, "http://x/%zz%4", "http://x/%zz%4", 0},
    {NULL, "http://x/%7euser", "http://x/%7euser", 0},
    {NULL, "http://x/a b\"<>`{}|[]", "http://x/a%20b%22%3C%3E%60%7B%7D|[]", 0},
    {NULL, "http://x/?a b\"<>`{}^'", "http://x/?a%20b%22%3C%3E`{}^%27", 0},
    {NULL, "http://x/\xc3\xbc?\xc3\xbc", "http://x/%C3%BC?%C3%BC", 0},
    {NULL, "http://x/\x7f?\x7f", "http://x/%7F?%7F", 0},
    {NULL, "http://x/a?b?c/../d\\e", "http://x/a?b?c/../d\\e", 0},
    {NULL, "http://x/!$&()*+,;=:@~", "http://x/!$&()*+,;=:@~", 0},
    {NULL, "http://x/a\tb\nc\rd", "http://x/abcd", 0},
    {NULL, "  \x01http://x/a \x1f", "http://x/a", 0},
};

/* Dot segments, "%2e" spellings included; a fragment is cut everywhere. */
static const wcase_t dots[] = {
    {NULL, "http://x/a/./b/../c", "http://x/a/c", 0},
    {NULL, "http://x/a/%2e%2E/b", "http://x/b", 0},
    {NULL, "http://x/a/.%2e/b", "http://x/b", 0},
    {NULL, "http://x/a/%2e/b", "http://x/a/b", 0},
    {NULL, "http://x/a/..", "http://x/", 0},
    {NULL, "http://x/a/.", "http://x/a/", 0},
    {NULL, "http://x/../../a", "http://x/a", 0},
    {NULL, "http://x/a/...", "http://x/a/...", 0},
    {NULL, "http://x/a/%2e%2e%2e", "http://x/a/%2e%2e%2e", 0},
    {NULL, "http://x/a\\..\\b", "http://x/b", 0},
    {NULL, "http://x/a/..?q", "http://x/?q", 0},
    {NULL, "http://x/a#b/../c", "http://x/a", 0},
    {NULL, "http://x#f?g", "http://x/", 0},
};

/* Ports: the default dropped, 0..65535, digits only. */
static const wcase_t ports[] = {
    {NULL, "http://x:80/", "http://x/", 0},
    {NULL, "http://x:0080/", "http://x/", 0},
    {NULL, "https://x:443/", "https://x/", 0},
    {NULL, "http://x:443/", "http://x:443/", 0},
    {NULL, "http://x:0/", "http://x:0/", 0},
    {NULL, "http://x:65535/", "http://x:65535/", 0},
    {NULL, "http://x:/", "http://x/", 0},
    {NULL, "http://x:65536/", NULL, CRAWL_EBADURL},
    {NULL, "http://x:8a/", NULL, CRAWL_EBADURL},
    {NULL, "http://x:1:2/", NULL, CRAWL_EBADURL},
    {NULL, "http://x:1%30/", NULL, CRAWL_EBADURL}, /* escapes are no digits */
    {NULL, "http://x:%38%30/", NULL, CRAWL_EBADURL},
    {NULL, "http://:80/", NULL, CRAWL_EBADURL},
};

#define B "http://a/b/c/d;p?q"
/* Relative references against a base (RFC 3986 5.4, as the Standard
 * resolves them). */
static const wcase_t relative[] = {
    {B, "g", "http://a/b/c/g", 0},
    {B, "./g", "http://a/b/c/g", 0},
    {B, "/g", "http://a/g", 0},
    {B, "//g", "http://g/", 0},
    {B, "?y", "http://a/b/c/d;p?y", 0},
    {B, "#s", "http://a/b/c/d;p?q", 0},
    {B, "", "http://a/b/c/d;p?q", 0},
    {B, "..", "http://a/b/", 0},
    {B, "../../../g", "http://a/g", 0},
    {B, "g;x=1/../y", "http://a/b/c/y", 0},
    {B, "g?y/../x", "http://a/b/c/g?y/../x", 0},
    {B, "http:g", "http://a/b/c/g", 0},
    {B, "http:", "http://a/b/c/d;p?q", 0},
    {B, "/\\\\/g", "http://g/", 0},
    {B, "http:\\\\\\\\g", "http://g/", 0},
    {B, "HTTP:?z", "http://a/b/c/d;p?z", 0},
    {"https://a/b", "http:g", "http://g/", 0},
    {B, "g:h", NULL, CRAWL_ESCHEME},
    {B, "mailto:x@y", NULL, CRAWL_ESCHEME},
    {B, "1:x", "http://a/b/c/1:x", 0},
    {NULL, "g", NULL, CRAWL_EBADURL},
    {"ftp://a/", "g", NULL, CRAWL_ESCHEME},
};

/* Hosts: percent-decoded, IDNA, lowercase; forbidden code points fail. */
static const wcase_t hosts[] = {
    {NULL, "http://EXAMPLE.com/", "http://example.com/", 0},
    {NULL,
     "http://B\xc3\xbc"
     "cher.example/",
     "http://xn--bcher-kva.example/", 0},
    {NULL, "http://%E2%98%83.net/", "http://xn--n3h.net/", 0},
    {NULL, "http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/", 0},
    {NULL, "http://\xef\xbc\xa7\xef\xbd\x8f.com/", "http://go.com/", 0},
    {NULL, "http://a_b.example./", "http://a_b.example./", 0},
    {NULL, "http://ex%41mple.com/", "http://example.com/", 0},
    {NULL, "http://a b/", NULL, CRAWL_EBADURL},
    {NULL, "http://a%20b/", NULL, CRAWL_EBADURL},
    {NULL, "http://a<b/", NULL, CRAWL_EBADURL},
    {NULL, "http://a^b/", NULL, CRAWL_EBADURL},
    {NULL, "http://a|b/", NULL, CRAWL_EBADURL},
    {NULL, "http://x%2Fy/", NULL, CRAWL_EBADURL},
    {NULL, "http://%00x/", NULL, CRAWL_EBADURL},
    {NULL, "http://xn--a.example/", NULL, CRAWL_EBADURL},
    /* deliberate (parser.h): the Standard accepts these, libcurl refuses */
    {NULL, "http://a!b/", NULL, CRAWL_EBADURL},
    {NULL, "http://a$b/", NULL, CRAWL_EBADURL},
};

Test(whatwg, userinfo_is_skipped_up_to_the_last_at_and_dropped)
{
    check_cases("userinfo", userinfo, N(userinfo));
}

Test(whatwg, any_run_of_slashes_and_backslashes_starts_the_authority)
{
    check_cases("slashes", slashes, N(slashes));
}

Test(whatwg, hosts_ending_in_a_number_are_ipv4_or_fail)
{
    check_cases("ipv4", ipv4, N(ipv4));
}

Test(whatwg, ipv6_hosts_are_parsed_and_compressed)
{
    check_cases("ipv6", ipv6, N(ipv6));
}

Test(whatwg, path_and_query_use_the_standards_percent_encode_sets)
{
    check_cases("encoding", encoding, N(encoding));
}

Test(whatwg, dot_segments_and_fragments)
{
    check_cases("dots", dots, N(dots));
}

Test(whatwg, ports)
{
    check_cases("ports", ports, N(ports));
}

Test(whatwg, relative_references)
{
    check_cases("relative", relative, N(relative));
}

Test(whatwg, hosts_are_decoded_mapped_and_checked)
{
    check_cases("hosts", hosts, N(hosts));
}

/* The visited-set key: unreserved escapes decoded, others uppercased;
 * the URL to request keeps them (a browser sends them as they are). */
Test(whatwg, visited_set_key_decodes_unreserved_escapes)
{
    static const struct {
        const char *url, *key;
    } cases[] = {
        {"http://x/%7euser/%41%2f%3a", "http://x/~user/A%2F%3A"},
        {"http://x/?q=%41%2b&r=%7E", "http://x/?q=A%2B&r=~"},
        {"http://x/100%-cotton%zz%4", "http://x/100%25-cotton%25zz%254"},
        {"http://x/%2%66?%2%66", "http://x/%252f?%252f"}, /* found by fuzz_url */
        {"http://x/%252e", "http://x/%252e"},
        {"http://[::1]:8080/a", "http://[::1]:8080/a"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char *k = NULL, *k2 = NULL;
        cr_assert_eq(parser_url_key(cases[i].url, &k), 0, "key(%s)", cases[i].url);
        cr_expect_str_eq(k, cases[i].key, "key(%s) = %s, want %s", cases[i].url, k, cases[i].key);
        cr_expect_eq(parser_url_key(k, &k2), 0, "key(%s)", k);
        if (k2)
            cr_expect_str_eq(k2, k, "key(%s) not idempotent: %s", k, k2);
        free(k);
        free(k2);
    }
    char *k = NULL;
    cr_expect_eq(parser_url_key("no url", &k), CRAWL_EBADURL);
    cr_expect_eq(parser_url_key(NULL, &k), CRAWL_EINVAL);
}

/* ---- the charset of a page that declares none --------------------------- */

typedef struct links {
    char buf[1024];
    size_t len;
} links_t;

static void on_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    links_t *l = ud;
    (void)kind;
    if (l->len + len + 2 < sizeof l->buf) {
        memcpy(l->buf + l->len, url, len);
        l->len += len;
        l->buf[l->len++] = '\n';
        l->buf[l->len] = '\0';
    }
}

/* The links of html fed in pieces of chunk bytes (0: whole), content type ct. */
static void page_links(const char *html, size_t chunk, const char *ct, links_t *l)
{
    memset(l, 0, sizeof *l);
    parser_t *p = parser_new(NULL, "http://e.com/", ct, NULL, on_link, l);
    cr_assert_not_null(p);
    size_t n = strlen(html), step = chunk ? chunk : n;
    for (size_t i = 0; i < n; i += step)
        cr_assert_eq(parser_feed(p, html + i, n - i < step ? n - i : step), 0);
    cr_assert_eq(parser_finish(p), 0);
    parser_free(p);
}

Test(whatwg, undeclared_charset_defaults_to_utf8_when_the_bytes_are_utf8)
{
    static const struct {
        const char *html, *ct, *want;
    } cases[] = {
        /* valid UTF-8, no charset anywhere: UTF-8, as browsers */
        {"<a href=\"/\xc3\xbc\">x</a>", NULL, "http://e.com/%C3%BC\n"},
        {"<p>gr\xc3\xbc\xc3\x9f</p><a href=/\xc3\xbc>", "text/html", "http://e.com/%C3%BC\n"},
        {"<a href=/\xe2\x82\xac>", NULL, "http://e.com/%E2%82%AC\n"},
        /* not UTF-8: libxml2's fallback (latin-1) as before */
        {"<a href=/caf\xe9>x</a><a href=/after>", NULL,
         "http://e.com/caf%C3%A9\nhttp://e.com/after\n"},
        {"<a href=/\xe2\x82>x</a>", NULL, "http://e.com/%C3%A2%C2%82\n"}, /* cut sequence */
        /* a declared charset still wins */
        {"<meta charset=windows-1252><a href=/\xc3\xbc>", NULL, "http://e.com/%C3%83%C2%BC\n"},
        {"<a href=/\xc3\xbc>", "text/html; charset=iso-8859-1", "http://e.com/%C3%83%C2%BC\n"},
    };
    /* whole, and in pieces that cut sequences anywhere */
    static const size_t chunks[] = {0, 1, 2, 3, 7, 10};
    for (size_t i = 0; i < N(cases); i++) {
        for (size_t k = 0; k < N(chunks); k++) {
            links_t l;
            page_links(cases[i].html, chunks[k], cases[i].ct, &l);
            cr_expect_str_eq(l.buf, cases[i].want,
                             "page \"%s\" (content type %s, pieces of %zu): links\n%s\nwant\n%s",
                             cases[i].html, cases[i].ct ? cases[i].ct : "none", chunks[k], l.buf,
                             cases[i].want);
        }
    }
}

/* ---- crawler url -------------------------------------------------------- */

Test(whatwg, crawler_url_prints_url_and_key_or_the_reason, .timeout = 60)
{
    char *dir = fx_tmpdir(), out[512];
    cr_assert_not_null(dir);
    snprintf(out, sizeof out, "%s/out", dir);
    char *argv[] = {
        CRAWLER_BIN,         "url",     "--base", "http://a/b/c", "../%7Ed?q=O'B#f", "mailto:x@y",
        "http://1.2.3.4.5/", "//@h:80", NULL};
    int rc = fx_run(argv, out, NULL, 30000);
    char *text = fx_read_file(out, NULL);
    cr_assert_not_null(text);
    cr_expect_eq(rc, 1, "exit status %d (a REF was dropped: want 1)", rc);
    cr_expect_str_eq(text,
                     "http://a/%7Ed?q=O%27B\thttp://a/~d?q=O%27B\n"
                     "-\tscheme is not http or https\n"
                     "-\tmalformed URL\n"
                     "http://h/\thttp://h/\n",
                     "output:\n%s", text);
    free(text);
    char *ok[] = {CRAWLER_BIN, "url", "HTTP://X/a/../b", NULL};
    rc = fx_run(ok, out, NULL, 30000);
    text = fx_read_file(out, NULL);
    cr_expect_eq(rc, 0, "exit status %d", rc);
    cr_expect(text && !strcmp(text, "http://x/b\thttp://x/b\n"), "output: %s", text ? text : "");
    free(text);
    char *none[] = {CRAWLER_BIN, "url", NULL};
    cr_expect_eq(fx_run(none, NULL, NULL, 30000), 2, "no REF: usage error");
    char *badbase[] = {CRAWLER_BIN, "url", "--base", "ftp://x/", "g", NULL};
    cr_expect_eq(fx_run(badbase, NULL, NULL, 30000), 2, "bad --base: usage error");
    fx_rmtree(dir);
    free(dir);
}
