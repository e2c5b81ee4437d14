/*
 * url_clean.c -- step 1 of the URL normalizer (url.c): one pass over a
 * reference doing what libcurl's URL API does not.
 *
 * DESIGN
 * url_clean() trims leading/trailing C0 controls and spaces, removes
 * tabs/CR/LF anywhere, cuts the fragment, refuses schemes other than
 * http/https (CRAWL_ESCHEME), turns '\' into '/' before the query (as
 * browsers do), and percent-normalizes: in the authority and the path,
 * escapes of unreserved characters (ALPHA DIGIT - . _ ~) are decoded, other
 * escapes get uppercase hex, a '%' that starts no escape becomes "%25", and
 * bytes that cannot be sent (controls, space, "<>`{}, non-ASCII) are escaped
 * in the path; the QUERY is kept byte for byte except that bytes which cannot
 * be sent (controls, space, "<>, non-ASCII) are escaped.  Non-ASCII bytes in
 * the host are left for IDN (url.c).  "http:g" against an http base stays
 * relative (as browsers do); "http:x" without one becomes "http://x".
 * The output is written after free room the caller asks for, where
 * url_resolve() puts the part of the base the reference keeps.  No state:
 * thread-safe.
 */
#include "parser.h"
#include "parser_internal.h"

#include <stdlib.h>
#include <string.h>

/* A reference longer than this many times max_len is refused before any
 * parsing: decoding escapes shrinks it at most threefold. */
#define CLEAN_SLACK 4

static const char hexdig[] = "0123456789ABCDEF";

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Where a byte sits in the reference; decides how it is escaped. */
enum part { PART_AUTHORITY, PART_PATH, PART_QUERY };

static int must_encode(unsigned char c, enum part part)
{
    if (c <= 0x20 || c >= 0x7F)
        return part != PART_AUTHORITY || c <= 0x20 || c == 0x7F;
    if (c == '"' || c == '<' || c == '>')
        return part != PART_AUTHORITY;
    if (c == '`' || c == '{' || c == '}')
        return part == PART_PATH;
    return 0;
}

/* Appends s[*i] (and, for an escape, the two digits after it) to o. */
static size_t put_char(const char *s, size_t len, size_t *i, char *o, enum part part)
{
    unsigned char c = (unsigned char)s[*i];
    if (c == '%' && part != PART_QUERY && *i + 2 < len && hexval((unsigned char)s[*i + 1]) >= 0 &&
        hexval((unsigned char)s[*i + 2]) >= 0) {
        unsigned char v = (unsigned char)(hexval((unsigned char)s[*i + 1]) * 16 +
                                          hexval((unsigned char)s[*i + 2]));
        *i += 2;
        if (url_is_unreserved(v)) {
            o[0] = (char)v;
            return 1;
        }
        c = v;
    } else if (c == '\\' && part == PART_PATH) {
        o[0] = '/';
        return 1;
    } else if (c == '%' && part != PART_QUERY) {
        /* a '%' that starts no escape is escaped itself: decoding the
         * escapes after it could otherwise form a new one next time */
    } else if (!must_encode(c, part)) {
        o[0] = (char)c;
        return 1;
    }
    o[0] = '%';
    o[1] = hexdig[c >> 4];
    o[2] = hexdig[c & 15];
    return 3;
}

/* Length of a scheme at the start of s ("http" for "http://..."), 0 if none. */
static size_t scheme_len(const char *s, size_t len)
{
    size_t i = 0;
    if (len == 0 || !url_is_alpha((unsigned char)s[0]))
        return 0;
    while (i < len && (url_is_alpha((unsigned char)s[i]) || (s[i] >= '0' && s[i] <= '9') ||
                       s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    return (i < len && s[i] == ':') ? i : 0;
}

static int is_slash(char c)
{
    return c == '/' || c == '\\';
}

/* Copies t[0..len) (already trimmed, no tabs/newlines, no fragment) into o,
 * escaping per part.  abs: t starts with "//" (an authority follows). */
static size_t copy_parts(const char *t, size_t len, int abs, char *o)
{
    size_t i = 0, n = 0;
    enum part part = PART_PATH;
    if (abs) {
        o[n++] = '/';
        o[n++] = '/';
        i = 2;
        part = PART_AUTHORITY;
    }
    for (; i < len; i++) {
        char c = t[i];
        if (part == PART_AUTHORITY && (is_slash(c) || c == '?'))
            part = PART_PATH;
        if (part == PART_PATH && c == '?') {
            part = PART_QUERY;
            o[n++] = '?';
            continue;
        }
        n += put_char(t, len, &i, o + n, part);
    }
    o[n] = '\0';
    return n;
}

/* t[0..n) starts with "http:" or "https:" (sch, lowercased): writes the
 * cleaned reference into o, returns its length; *absolute is set unless it
 * is a same-scheme relative reference. */
static size_t with_scheme(char *t, size_t n, const char *sch, const char *base_scheme, char *o,
                          int *absolute)
{
    size_t sl = strlen(sch), k = sl + 1;
    if (n - k >= 2 && is_slash(t[k]) && is_slash(t[k + 1])) {
        /* scheme://authority... */
    } else if (base_scheme && strcmp(base_scheme, sch) == 0) {
        /* "http:g" against an http base: relative, as browsers do */
        return copy_parts(t + k, n - k, 0, o);
    } else {
        /* "http:x" or "http:/x" without such a base: "http://x" */
        while (k < n && is_slash(t[k]))
            k++;
        k -= 2; /* k >= sl + 1 >= 5: overwrite two bytes with "//" */
        t[k] = '/';
        t[k + 1] = '/';
    }
    memcpy(o, sch, sl);
    o[sl] = ':';
    *absolute = 1;
    return sl + 1 + copy_parts(t + k, n - k, 1, o + sl + 1);
}

int url_clean(const char *ref, size_t len, size_t max_len, const char *base_scheme, size_t reserve,
              char **out, int *absolute)
{
    size_t i, n = 0, sl;
    char tbuf[1024], *t, *o, *buf;
    while (len > 0 && (unsigned char)ref[0] <= 0x20) {
        ref++;
        len--;
    }
    while (len > 0 && (unsigned char)ref[len - 1] <= 0x20)
        len--;
    if (len > CLEAN_SLACK * max_len + 64)
        return CRAWL_ETOOLONG;
    t = len < sizeof(tbuf) ? tbuf : malloc(len + 1);
    if (!t)
        return CRAWL_ENOMEM;
    for (i = 0; i < len && ref[i] != '#'; i++)
        if (ref[i] != '\t' && ref[i] != '\r' && ref[i] != '\n')
            t[n++] = ref[i];
    t[n] = '\0';
    buf = malloc(reserve + 3 * n + 16);
    if (!buf) {
        if (t != tbuf)
            free(t);
        return CRAWL_ENOMEM;
    }
    o = buf + reserve;
    *absolute = 0;
    sl = scheme_len(t, n);
    if (sl > 0) {
        char sch[6] = {0};
        for (i = 0; i < sl && i < 5; i++)
            sch[i] = (char)url_lower((unsigned char)t[i]);
        if (sl > 5 || (strcmp(sch, "http") != 0 && strcmp(sch, "https") != 0))
            goto bad_scheme;
        n = with_scheme(t, n, sch, base_scheme, o, absolute);
    } else {
        n = copy_parts(t, n, n >= 2 && is_slash(t[0]) && is_slash(t[1]), o);
    }
    if (t != tbuf)
        free(t);
    *out = buf;
    return CRAWL_OK;
bad_scheme:
    if (t != tbuf)
        free(t);
    free(buf);
    return CRAWL_ESCHEME;
}
