/*
 * libFuzzer target for the streaming link extractor and its text sink.  The
 * first input byte picks the options (chunk size, follow_nofollow,
 * Content-Type), the rest is the page, fed in chunks, twice: without a sink,
 * then with one (the text/ extractor, in the mode the input's length picks,
 * behind a checking sink).  Besides crashes, leaks and UB, it checks that
 * every reported URL is http(s), within max_url_length, and already in
 * normal form (normalizing it again changes nothing), with and without the
 * sink (which reads the page and its links without libxml2: the two
 * readings may differ, parser.h); that the sink's events nest (every
 * end names the innermost open element, at most PARSER_SINK_MAX_DEPTH
 * open, none left open after parser_finish) and its text is valid UTF-8,
 * never cut inside a character; and that the extracted text is valid
 * UTF-8 too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "text.h"

#define MAX_URL 256

static void check_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    char *again = NULL;
    (void)ud;
    (void)kind;
    if (len != strlen(url) || len > MAX_URL ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
        fprintf(stderr, "bad link: %s\n", url);
        abort();
    }
    if (parser_url_normalize(NULL, url, MAX_URL, &again) != 0 || strcmp(again, url) != 0) {
        fprintf(stderr, "link not in normal form: %s -> %s\n", url, again ? again : "(error)");
        abort();
    }
    free(again);
}

/* The links of one run, concatenated (each with its NUL), to compare. */
typedef struct links {
    char buf[65536];
    size_t n;
    unsigned long count;
} links_t;

static void keep_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    links_t *l = ud;
    check_link(NULL, url, len, kind);
    l->count++;
    if (l->n + len + 1 <= sizeof(l->buf)) {
        memcpy(l->buf + l->n, url, len + 1);
        l->n += len + 1;
    }
}

/* Valid UTF-8 (RFC 3629), whole characters only. */
static int utf8_ok(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80                 ? 1
                   : c >= 0xC2 && c <= 0xDF ? 2
                   : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4
                                            : 0;
        if (!k || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
            return 0;
        i += k;
    }
    return 1;
}

/* The checking sink: a stack of the open names, then on to the text/
 * extractor's sink. */
typedef struct check {
    parser_sink_t next;
    char open[PARSER_SINK_MAX_DEPTH][32];
    int depth;
} check_t;

static void c_start(void *ud, const char *name, const char *const *atts)
{
    check_t *c = ud;
    size_t n = strlen(name);
    if (c->depth == PARSER_SINK_MAX_DEPTH || n == 0 || n > 31 || !utf8_ok(name, n)) {
        fprintf(stderr, "sink: start of '%s' at depth %d\n", name, c->depth);
        abort();
    }
    for (const char *const *a = atts; a && a[0]; a += 2)
        if (!utf8_ok(a[0], strlen(a[0])) || (a[1] && !utf8_ok(a[1], strlen(a[1])))) {
            fprintf(stderr, "sink: attribute not UTF-8\n");
            abort();
        }
    memcpy(c->open[c->depth++], name, n + 1);
    c->next.start(c->next.ud, name, atts);
}

static void c_end(void *ud, const char *name)
{
    check_t *c = ud;
    if (c->depth == 0 || strcmp(c->open[c->depth - 1], name) != 0) {
        fprintf(stderr, "sink: end of '%s', open: '%s'\n", name,
                c->depth ? c->open[c->depth - 1] : "");
        abort();
    }
    c->depth--;
    c->next.end(c->next.ud, name);
}

static void c_text(void *ud, const char *s, size_t len)
{
    check_t *c = ud;
    if (len == 0 || !utf8_ok(s, len)) {
        fprintf(stderr, "sink: text not whole UTF-8 (%zu bytes)\n", len);
        abort();
    }
    c->next.text(c->next.ud, s, len);
}

/* One parse of the page; with check != NULL, through the sink. */
static void parse(const uint8_t *data, size_t size, links_t *l, check_t *check)
{
    static const char *const types[] = {NULL, "text/html; charset=windows-1252",
                                        "text/html; charset=utf-8", "text/html; charset=utf-16"};
    parser_config_t cfg = {.max_url_length = MAX_URL};
    parser_sink_t sink = {c_start, c_end, c_text, check, check ? check->next.want : NULL};
    size_t chunk = (data[0] >> 3) ? (size_t)(data[0] >> 3) : size;
    parser_t *p;
    cfg.follow_nofollow = data[0] & 1;
    cfg.sink = check ? &sink : NULL;
    p = parser_new(&cfg, "http://fuzz.example/dir/page.html", types[(data[0] >> 1) & 3],
                   (data[0] & 0x80) ? "nofollow" : NULL, keep_link, l);
    if (!p)
        return;
    for (size_t i = 1; i < size; i += chunk)
        parser_feed(p, (const char *)data + i, size - i < chunk ? size - i : chunk);
    parser_finish(p);
    if (parser_canonical(p))
        check_link(NULL, parser_canonical(p), strlen(parser_canonical(p)), PARSER_LINK_LINK);
    parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static links_t plain, with;
    static check_t check;
    text_config_t tc = {.mode = (text_mode_t)(size % 3)};
    text_t *t;
    if (size < 1)
        return 0;
    plain.n = plain.count = with.n = with.count = 0;
    parse(data, size, &plain, NULL);
    if (!(t = text_new(&tc, "http://fuzz.example/dir/page.html")))
        return 0;
    check.depth = 0;
    text_parser_sink(t, &check.next);
    parse(data, size, &with, &check);
    if (check.depth != 0) {
        fprintf(stderr, "sink: %d elements left open\n", check.depth);
        abort();
    }
    if (text_finish(t) == 0) {
        size_t n;
        const char *body = text_body(t, &n);
        if (!utf8_ok(body, n) || !utf8_ok(text_title(t), strlen(text_title(t)))) {
            fprintf(stderr, "text: not UTF-8\n");
            abort();
        }
        (void)text_simhash(t);
    }
    text_free(t);
    return 0;
}
