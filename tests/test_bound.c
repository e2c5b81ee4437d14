/* The markup filter in front of libxml2 (parser/bound.c): its bulk paths
 * (text, comments, raw text, quoted values skipped or copied a run at a
 * time) must give exactly what the byte-by-byte lexer gives, whatever the
 * chunking of the input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser_internal.h"

/* Filters in[0..len) in chunks of `chunk` bytes; returns the output
 * (malloc'd, *out_len bytes) and the bytes dropped past the caps. */
static char *filter(const char *in, size_t len, size_t chunk, int slow, size_t attr_cap,
                    size_t *out_len, uint64_t *dropped)
{
    bound_t b;
    bound_init(&b, attr_cap);
    b.slow = (unsigned char)slow;
    char *out = malloc(len + BOUND_SLACK * (len / chunk + 2));
    cr_assert_not_null(out);
    size_t n = 0;
    for (size_t at = 0; at < len; at += chunk)
        n += bound_filter(&b, in + at, len - at < chunk ? len - at : chunk, out + n);
    *out_len = n;
    *dropped = b.dropped;
    return out;
}

static void check_same(const char *what, const char *in, size_t len, size_t attr_cap)
{
    static const size_t chunks[] = {1, 2, 3, 7, 64, 1000, 16384};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        size_t n1, n2;
        uint64_t d1, d2;
        char *slow = filter(in, len, chunks[c], 1, attr_cap, &n1, &d1);
        char *fast = filter(in, len, chunks[c], 0, attr_cap, &n2, &d2);
        cr_expect(n1 == n2 && memcmp(slow, fast, n1) == 0 && d1 == d2,
                  "%s, chunks of %zu: byte by byte %zu bytes (%llu dropped), bulk %zu bytes "
                  "(%llu dropped)",
                  what, chunks[c], n1, (unsigned long long)d1, n2, (unsigned long long)d2);
        free(slow);
        free(fast);
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return s;
}

Test(bound, bulk_paths_match_the_byte_lexer_on_real_pages)
{
    static const char *const files[] = {"realistic.html", "win1252-meta.html",
                                        "win1252-noheader.html"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/parser/%s", TEST_DATA_DIR, files[i]);
        size_t len;
        char *page = read_file(path, &len);
        check_same(files[i], page, len, 0);
        free(page);
    }
}

/* Appends the string t at s + n; returns the new length. */
static size_t put(char *s, size_t n, const char *t)
{
    size_t len = strlen(t);
    memcpy(s + n, t, len);
    return n + len;
}

Test(bound, bulk_paths_match_the_byte_lexer_on_edge_cases)
{
    static const char *const cases[] = {
        "<a href=\"/x\" title='it''s'>t</a><a href=x>y</a>",
        "<a href=\"unterminated value ... <b> \" x='>'>",
        "<img alt=\"\" src=\"\"><a href=\"\"></a>",
        "<!-- c --><script>if (a<b) x=\"</scr\"+\"ipt>\";</script><a href='/s'>",
        "<a\thref\n=\n\"/t\"\f>",
        "<a href=\"a\"b\" c='d'e'>",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_same(cases[i], cases[i], strlen(cases[i]), 0);

    /* NUL bytes inside values become spaces; a value past the attribute cap
     * is cut, one past the tag cap dropped whole */
    const char nul[] = "<a href=\"/a\0b\0\" x='\0'>";
    check_same("NUL in values", nul, sizeof nul - 1, 0);
    size_t big = BOUND_ATTR_MIN_CAP * 3 + BOUND_TAG_CAP;
    char *s = malloc(big + 64);
    cr_assert_not_null(s);
    size_t n = put(s, 0, "<a href=\"");
    memset(s + n, 'v', BOUND_ATTR_MIN_CAP * 2);
    n = put(s, n + BOUND_ATTR_MIN_CAP * 2, "\" y=");
    memset(s + n, 'w', BOUND_TAG_CAP);
    n = put(s, n + BOUND_TAG_CAP, " z=\"late value\">");
    check_same("values over the caps", s, n, BOUND_ATTR_MIN_CAP);
    free(s);
}

Test(bound, passes_only_the_tags_of_elements_that_hold_links)
{
    static const char page[] =
        "<!DOCTYPE html><html><head><title>t</title>"
        "<META charset=utf-8><link rel=stylesheet href=/s.css><base href='/b/'></head>"
        "<body><div class=\"a\"><p>text <a href=\"/x\">x</a> <span>s</span></p>"
        "<ul><li><area href=/m><iframe src=/f></iframe></li></ul><abbr title=x>y</abbr>"
        "<anchor href=/no><a-b href=/no><script>var a='<a href=/s>';</script></div></body>";
    static const char want[] =
        "<!DOCTYPE html><meta charset=utf-8><link rel=stylesheet href=/s.css><base href='/b/'>"
        "<a href=\"/x\"></a><area href=/m><iframe src=/f></iframe><script></script>";
    size_t n;
    uint64_t dropped;
    char *out = filter(page, sizeof page - 1, sizeof page, 0, 0, &n, &dropped);
    cr_expect(n == sizeof want - 1 && memcmp(out, want, n) == 0, "got [%.*s]", (int)n, out);
    cr_expect_eq(dropped, 0, "skipped elements are not counted as capped");
    free(out);
}
