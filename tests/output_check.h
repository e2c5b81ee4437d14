/*
 * output_check.h -- independent checkers for the output writers' files, for
 * tests/test_warc.c: a JSON-lines validator (strict UTF-8, RFC 8259 string
 * syntax, the documented keys in order) and a WARC reader that inflates a
 * .warc.gz member by member (windowBits 31) and parses each member as exactly
 * one record, plus expectations on records.  Static functions (one includer);
 * failures are Criterion assertions.
 */
#ifndef TESTS_OUTPUT_CHECK_H
#define TESTS_OUTPUT_CHECK_H

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fixtures.h"
#include "warc.h"

/* ---- helpers: an independent JSON-line checker -------------------------- */

/* Strict UTF-8 check (no overlongs, surrogates or code points > U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        unsigned cp, need;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3;
            cp = c & 0x07;
        } else
            return false;
        for (unsigned k = 1; k <= need; k++) {
            if (i + k >= n || (s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += need + 1;
    }
    return true;
}

/* Skips one JSON string at *p (RFC 8259 syntax); false if malformed. */
static bool json_string_ok(const char **p)
{
    const char *s = *p;
    if (*s++ != '"')
        return false;
    for (;;) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            break;
        if (c < 0x20)
            return false; /* raw control byte (or end of line) */
        if (c == '\\') {
            s++;
            if (*s == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (!isxdigit((unsigned char)s[k]))
                        return false;
                s += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", *s) || !*s)
                return false;
        }
        s++;
    }
    *p = s + 1;
    return true;
}

/* Skips one JSON value at *p (RFC 8259: object, array, string, number,
 * true, false, null; no whitespace, as the crawler writes none); false if
 * malformed or nested deeper than 32. */
__attribute__((unused)) static bool json_value_ok(const char **p, int depth)
{
    const char *s = *p;
    if (depth > 32)
        return false;
    if (*s == '"') {
        if (!json_string_ok(&s))
            return false;
    } else if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        s++;
        for (int first = 1; *s != close; first = 0) {
            if (!first && *s++ != ',')
                return false;
            if (close == '}' && (!json_string_ok(&s) || *s++ != ':'))
                return false;
            if (!json_value_ok(&s, depth + 1))
                return false;
        }
        s++;
    } else if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4)) {
        s += 4;
    } else if (!strncmp(s, "false", 5)) {
        s += 5;
    } else {
        const char *d = s + (*s == '-');
        if (!isdigit((unsigned char)*d))
            return false;
        s = d + strspn(d, "0123456789.eE+-");
    }
    *p = s;
    return true;
}

/* One line that is exactly one JSON object and its newline, valid UTF-8. */
__attribute__((unused)) static bool json_object_line_ok(const char *line, size_t len)
{
    if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len) != line + len - 1 ||
        line[0] != '{' || !utf8_valid((const unsigned char *)line, len))
        return false;
    const char *p = line;
    return json_value_ok(&p, 0) && p == line + len - 1;
}

/* Checks a line is exactly {"k":v,...}\n with the documented keys in order;
 * values are strings, null or unsigned integers. */
static bool json_line_ok(const char *line, size_t len)
{
    static const char *const keys[] = {"url",        "status",      "content_type",   "depth",
                                       "bytes",      "links_found", "links_over_cap", "fetch_ms",
                                       "error_kind", "error_text",  "location",       "canonical",
                                       "timestamp"};
    if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len) != line + len - 1)
        return false;
    if (!utf8_valid((const unsigned char *)line, len))
        return false;
    const char *p = line;
    if (*p++ != '{')
        return false;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t kl = strlen(keys[k]);
        if (k && *p++ != ',')
            return false;
        if (p[0] != '"' || strncmp(p + 1, keys[k], kl) != 0 || p[kl + 1] != '"' || p[kl + 2] != ':')
            return false;
        p += kl + 3;
        if (*p == '"') {
            if (!json_string_ok(&p))
                return false;
        } else if (strncmp(p, "null", 4) == 0)
            p += 4;
        else if (isdigit((unsigned char)*p))
            while (isdigit((unsigned char)*p))
                p++;
        else
            return false;
    }
    return p[0] == '}' && p[1] == '\n' && p + 2 == line + len;
}

/* The line of a JSON-lines text that starts {"url":"BASE+PATH", then next
 * (the key after "url" in that file's records, such as "\"links\":"; ""
 * for any), or NULL (caller frees). */
__attribute__((unused)) static char *jsonl_line_of(const char *text, const char *base,
                                                   const char *path, const char *next)
{
    char key[700];
    snprintf(key, sizeof key, "{\"url\":\"%s%s\",%s", base, path, next);
    const char *l = text ? strstr(text, key) : NULL;
    if (!l)
        return NULL;
    const char *nl = strchr(l, '\n');
    return strndup(l, nl ? (size_t)(nl - l) : strlen(l));
}

/* ---- WARC: a reader for the tests --------------------------------------- */

#define MAXH 32

typedef struct wrec {
    char *raw; /* the whole decompressed member */
    size_t raw_len;
    char *hdr; /* copy of the header lines, split in place */
    int nh;
    char *name[MAXH], *value[MAXH];
    const char *block;
    size_t block_len;
} wrec_t;

typedef struct wfile {
    wrec_t *r;
    size_t n;
} wfile_t;

static const char *hget(const wrec_t *r, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < r->nh; i++)
        if (strcmp(r->name[i], name) == 0) {
            cr_assert_null(v, "header %s appears twice", name);
            v = r->value[i];
        }
    return v;
}

/* Parses one member as exactly one record. */
static void parse_record(wrec_t *r, size_t idx)
{
    cr_assert(r->raw_len > 10 && memcmp(r->raw, "WARC/1.1\r\n", 10) == 0,
              "record %zu: bad version line", idx);
    char *end = memmem(r->raw, r->raw_len, "\r\n\r\n", 4);
    cr_assert_not_null(end, "record %zu: no end of headers", idx);
    size_t hlen = (size_t)(end - r->raw) - 10;
    r->hdr = malloc(hlen + 3);
    cr_assert_not_null(r->hdr);
    memcpy(r->hdr, r->raw + 10, hlen);
    memcpy(r->hdr + hlen, "\r\n", 3);
    for (char *line = r->hdr; *line;) {
        char *crlf = strstr(line, "\r\n");
        cr_assert_not_null(crlf, "record %zu: header line without CRLF", idx);
        *crlf = '\0';
        char *colon = strstr(line, ": ");
        cr_assert_not_null(colon, "record %zu: bad header line %s", idx, line);
        cr_assert_lt(r->nh, MAXH);
        *colon = '\0';
        r->name[r->nh] = line;
        r->value[r->nh++] = colon + 2;
        line = crlf + 2;
    }
    const char *cl = hget(r, "Content-Length");
    cr_assert_not_null(cl, "record %zu: no Content-Length", idx);
    char *e = NULL;
    unsigned long long n = strtoull(cl, &e, 10);
    cr_assert(e && *e == '\0', "record %zu: bad Content-Length %s", idx, cl);
    r->block = end + 4;
    r->block_len = (size_t)n;
    size_t used = (size_t)(r->block - r->raw) + r->block_len;
    cr_assert_eq(used + 4, r->raw_len, "record %zu: Content-Length %llu does not match the block",
                 idx, n);
    cr_assert(memcmp(r->raw + used, "\r\n\r\n", 4) == 0, "record %zu: no CRLFCRLF after block",
              idx);
}

/* Inflates the file member by member (windowBits 31, one inflateReset per
 * member) and parses each member as one record. */
static wfile_t read_warc(const char *path)
{
    size_t len = 0;
    unsigned char *data = (unsigned char *)fx_read_file(path, &len);
    cr_assert_not_null(data, "cannot read %s", path);
    wfile_t f = {0};
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 31), Z_OK);
    for (size_t at = 0; at < len;) {
        size_t cap = 4096, out = 0;
        char *buf = malloc(cap);
        cr_assert_not_null(buf);
        z.next_in = data + at;
        z.avail_in = (uInt)(len - at);
        int rc;
        do {
            if (cap - out < 4096) {
                cap *= 2;
                buf = realloc(buf, cap);
                cr_assert_not_null(buf);
            }
            z.next_out = (Bytef *)buf + out;
            z.avail_out = (uInt)(cap - out);
            rc = inflate(&z, Z_NO_FLUSH);
            out = cap - z.avail_out;
            cr_assert(rc == Z_OK || rc == Z_STREAM_END, "member %zu: inflate error %d", f.n, rc);
        } while (rc != Z_STREAM_END);
        at = len - z.avail_in;
        cr_assert_eq(inflateReset(&z), Z_OK);
        f.r = realloc(f.r, (f.n + 1) * sizeof *f.r);
        cr_assert_not_null(f.r);
        f.r[f.n] = (wrec_t){.raw = buf, .raw_len = out};
        parse_record(&f.r[f.n], f.n);
        f.n++;
    }
    inflateEnd(&z);
    free(data);
    return f;
}

static void free_warc(wfile_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->r[i].raw);
        free(f->r[i].hdr);
    }
    free(f->r);
}

static void expect_id(const char *id, const char *what)
{
    cr_assert_not_null(id, "%s: no record id", what);
    cr_expect_eq(strlen(id), (size_t)WARC_RECORD_ID_LEN, "%s: %s", what, id);
    cr_expect(strncmp(id, "<urn:uuid:", 10) == 0 && id[46] == '>', "%s: %s", what, id);
    for (int i = 10; i < 46; i++) {
        bool dash = i == 18 || i == 23 || i == 28 || i == 33;
        cr_expect(dash ? id[i] == '-' : (isxdigit((unsigned char)id[i]) && !isupper(id[i])),
                  "%s: %s", what, id);
    }
    cr_expect(id[24] == '4' && strchr("89ab", id[29]), "%s: not a v4 UUID: %s", what, id);
}

static void expect_date(const char *d, const char *what)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    cr_assert_not_null(d, "%s: no WARC-Date", what);
    cr_expect_eq(strlen(d), strlen(pat), "%s: %s", what, d);
    for (size_t i = 0; i < strlen(pat) && d[i]; i++)
        cr_expect(pat[i] == 'd' ? isdigit((unsigned char)d[i]) : d[i] == pat[i], "%s: %s", what, d);
}

static void expect_digest(const char *got, const void *data, size_t len, const char *what)
{
    char want[WARC_DIGEST_LEN + 1];
    cr_assert_eq(warc_digest(data, len, want), 0);
    cr_expect(got && strcmp(got, want) == 0, "%s: digest %s, recomputed %s", what,
              got ? got : "(none)", want);
}

/* The head of a response block (up to and with its blank line). */
static size_t block_head_len(const wrec_t *r)
{
    const char *e = memmem(r->block, r->block_len, "\r\n\r\n", 4);
    const char *lf = memmem(r->block, r->block_len, "\n\n", 2);
    if (lf && (!e || lf < e))
        return (size_t)(lf - r->block) + 2;
    cr_assert_not_null(e, "response block without end of head");
    return (size_t)(e - r->block) + 4;
}

/* Checks the records of one exchange (rq NULL when the request was not
 * recorded): headers, digests, links. */
static void expect_exchange(const wrec_t *rq, const wrec_t *rs, const warc_exchange_t *x,
                            const char *info_id)
{
    const char *u = x->target_uri;
    cr_assert_eq(rq != NULL, x->request_len > 0, "%s: request record present iff recorded", u);
    cr_expect_str_eq(hget(rs, "WARC-Type"), "response", "%s", u);
    expect_id(hget(rs, "WARC-Record-ID"), u);
    expect_date(hget(rs, "WARC-Date"), u);
    for (int k = 0; k < 2; k++) {
        const wrec_t *r = k ? rs : rq;
        if (!r)
            continue;
        cr_expect_str_eq(hget(r, "WARC-Target-URI"), u);
        if (x->ip)
            cr_expect_str_eq(hget(r, "WARC-IP-Address"), x->ip, "%s", u);
        else
            cr_expect_null(hget(r, "WARC-IP-Address"), "%s", u);
        cr_expect_str_eq(hget(r, "WARC-Warcinfo-ID"), info_id, "%s", u);
        cr_expect_str_eq(hget(r, "Content-Type"), k ? "application/http;msgtype=response"
                                                    : "application/http;msgtype=request");
        expect_digest(hget(r, "WARC-Block-Digest"), r->block, r->block_len, u);
    }
    if (rq) {
        cr_expect_str_eq(hget(rq, "WARC-Type"), "request", "%s", u);
        expect_id(hget(rq, "WARC-Record-ID"), u);
        cr_expect_str_eq(hget(rq, "WARC-Date"), hget(rs, "WARC-Date"));
        cr_expect_str_eq(hget(rq, "WARC-Concurrent-To"), hget(rs, "WARC-Record-ID"), "%s", u);
        cr_expect_str_eq(hget(rs, "WARC-Concurrent-To"), hget(rq, "WARC-Record-ID"), "%s", u);
        cr_expect_str_neq(hget(rq, "WARC-Record-ID"), hget(rs, "WARC-Record-ID"));
        /* the request block is the request exactly */
        cr_expect(rq->block_len == x->request_len &&
                      memcmp(rq->block, x->request, x->request_len) == 0,
                  "%s: request block differs", u);
    } else
        cr_expect_null(hget(rs, "WARC-Concurrent-To"), "%s", u);
    /* the response block is a head and then the body exactly */
    size_t hl = block_head_len(rs);
    cr_expect(rs->block_len - hl == x->body_len &&
                  (!x->body_len || memcmp(rs->block + hl, x->body, x->body_len) == 0),
              "%s: response body differs", u);
    expect_digest(hget(rs, "WARC-Payload-Digest"), rs->block + hl, rs->block_len - hl, u);
    if (x->truncated)
        cr_expect_str_eq(hget(rs, "WARC-Truncated"), "length");
    else
        cr_expect_null(hget(rs, "WARC-Truncated"));
}

static void expect_warcinfo(const wrec_t *r, const char *fname)
{
    cr_expect_str_eq(hget(r, "WARC-Type"), "warcinfo");
    expect_id(hget(r, "WARC-Record-ID"), "warcinfo");
    expect_date(hget(r, "WARC-Date"), "warcinfo");
    cr_expect_str_eq(hget(r, "WARC-Filename"), fname);
    cr_expect_str_eq(hget(r, "Content-Type"), "application/warc-fields");
    cr_expect_null(hget(r, "WARC-Target-URI"));
    expect_digest(hget(r, "WARC-Block-Digest"), r->block, r->block_len, "warcinfo");
    cr_expect_not_null(memmem(r->block, r->block_len, "software: test-suite/1.0\r\n", 26));
    cr_expect_not_null(memmem(r->block, r->block_len, "format: WARC File Format 1.1\r\n", 30));
    cr_expect_not_null(memmem(r->block, r->block_len, "\r\nhostname: ", 12));
}

#endif
