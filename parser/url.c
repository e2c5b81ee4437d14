/*
 * url.c -- THE URL normalizer of the project, built on libcurl's URL API.
 *
 * DESIGN
 * Every URL (seed, link, redirect target, Bloom key) goes through
 * url_resolve(), so one resource has one spelling everywhere.  Steps:
 *   1. url_clean() (url_clean.c): one pass over the reference doing what the
 *      URL API does not -- whitespace, fragment, scheme check, backslashes,
 *      percent-normalization of the authority and the path.
 *   2. url_resolve(): the part of the base that the reference keeps (RFC
 *      3986 5.2.2: the scheme for "//h/p", the origin for "/p", the
 *      document for "?q", the directory for "p") is put in front of it --
 *      the base is kept as a normalized string with the offsets of those
 *      parts (url_base_t) -- and libcurl parses the absolute result
 *      (curl_url_set): it removes dot segments, lowercases the scheme,
 *      drops the default port, validates the host and port.
 *      Shortcut: a reference that keeps the base's origin (relative, or
 *      the base's own "scheme://authority/" byte for byte) and has no dot
 *      segment and no empty query is already normal once the prefix is in
 *      front of it, so libcurl is skipped (resolve_same_origin; most links
 *      of a page).  Tests and fuzz_url check it against url_resolve_full().
 *   3. serialize(): the URL is written from libcurl's parts, with the host
 *      lowercased, checked (letters, digits, -._ or an IP literal) and IDN
 *      hosts converted to punycode by libidn2's idn2_lookup_u8 (UTF-8 in,
 *      locale independent: libcurl's CURLU_PUNYCODE goes through
 *      idn2_lookup_ul, which depends on the process locale and fails in the
 *      "C" locale).  Userinfo is never written: a crawler does not send
 *      credentials found in a link, a seed or a redirect (libcurl would turn
 *      any userinfo, even an empty "@", into an Authorization header), and
 *      with it gone the authority is exactly the origin (url_origin.c).
 * Why not curl_url_set(relative) on a base handle: it and
 * curl_url_get(CURLUPART_URL) cost ~1.5 us each (3.8 us per link in all,
 * now ~1 us), and fuzzing found libcurl 7.88's relative resolution
 * deviating from RFC 3986 ("./?q" against http://a/bc/q gives
 * http://a/bc?q; "..///y" loses an empty segment; ".:x" is taken for a
 * scheme).  url_resolve_curl() keeps that path; tests check both agree on
 * the RFC 3986 5.4 tables.
 * References with a same-scheme prefix and no "//" ("http:g" against an
 * http base) are resolved as relative, as browsers do (RFC 3986 5.4.2
 * allows either); "http:x" against another scheme becomes "http://x/".
 * An empty query ("?") is dropped, as libcurl does.
 * No global state: every function is thread-safe.
 */
#include "parser.h"
#include "parser_internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int map_uc(CURLUcode uc)
{
    switch (uc) {
    case CURLUE_OK:
        return CRAWL_OK;
    case CURLUE_OUT_OF_MEMORY:
        return CRAWL_ENOMEM;
    case CURLUE_UNSUPPORTED_SCHEME:
        return CRAWL_ESCHEME;
    default:
        return CRAWL_EBADURL;
    }
}

/* A host we crawl: letters, digits, '-', '.', '_' (after IDN conversion), or
 * an IP literal in brackets.  libcurl decodes escapes in the host, so
 * "%7F" would otherwise come out as a raw control byte. */
static int check_host(const char *host)
{
    const char *p;
    if (host[0] == '[')
        return CRAWL_OK;
    if (host[0] == '\0')
        return CRAWL_EBADURL;
    for (p = host; *p; p++)
        if (!url_is_unreserved((unsigned char)*p) || *p == '~')
            return CRAWL_EBADURL;
    return CRAWL_OK;
}

int url_numeric_ipv4_form(const char *h, size_t len)
{
    const char *end = h + len;
    while (h < end) {
        const char *e = memchr(h, '.', (size_t)(end - h));
        size_t n = e ? (size_t)(e - h) : (size_t)(end - h);
        size_t i = 0;
        int hex = n >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X');
        if (hex)
            i = 2;
        else if (n == 0)
            return 0;
        for (; i < n; i++)
            if (!(hex ? isxdigit((unsigned char)h[i]) : isdigit((unsigned char)h[i])))
                return 0;
        h += n;
        if (h < end && *h == '.')
            h++;
    }
    return 1;
}

/* host (from curl, modified in place) lowercased, or IDN -> punycode in
 * *puny (free()); *out is the host to write. */
static int norm_host(char *host, uint8_t **puny, const char **out)
{
    char *p;
    int wide = 0, ir;
    for (p = host; *p; p++)
        wide |= ((unsigned char)*p >= 0x80);
    if (!wide) {
        for (p = host; *p; p++)
            *p = (char)url_lower((unsigned char)*p);
        *out = host;
        return check_host(host);
    }
    ir = idn2_lookup_u8((const uint8_t *)host, puny, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
    if (ir != IDN2_OK)
        ir = idn2_lookup_u8((const uint8_t *)host, puny, IDN2_NFC_INPUT | IDN2_TRANSITIONAL);
    if (ir == IDN2_MALLOC)
        return CRAWL_ENOMEM;
    if (ir != IDN2_OK)
        return CRAWL_EBADURL;
    *out = (const char *)*puny;
    /* "²" maps to "2": a name that becomes an address form is refused, or
     * normalizing the output again would give another URL (0.0.0.2) */
    if (url_numeric_ipv4_form(*out, strlen(*out)))
        return CRAWL_EBADURL;
    return check_host(*out);
}

/* The parts of a parsed URL that are written, as libcurl stores them
 * (curl_free each).  Userinfo is not one of them. */
typedef struct parts {
    char *scheme, *host, *zone, *port, *path, *query;
} parts_t;

static void parts_free(parts_t *u)
{
    curl_free(u->scheme);
    curl_free(u->host);
    curl_free(u->zone);
    curl_free(u->port);
    curl_free(u->path);
    curl_free(u->query);
}

static int get_parts(CURLU *h, parts_t *u)
{
    int rc = map_uc(curl_url_get(h, CURLUPART_SCHEME, &u->scheme, 0));
    if (rc == CRAWL_OK)
        rc = map_uc(curl_url_get(h, CURLUPART_HOST, &u->host, 0));
    if (rc == CRAWL_OK)
        rc = map_uc(curl_url_get(h, CURLUPART_PATH, &u->path, 0));
    if (rc)
        return rc;
    if (strcmp(u->scheme, "http") != 0 && strcmp(u->scheme, "https") != 0)
        return CRAWL_ESCHEME;
    /* optional parts: absent -> NULL */
    (void)curl_url_get(h, CURLUPART_ZONEID, &u->zone, 0);
    (void)curl_url_get(h, CURLUPART_PORT, &u->port, CURLU_NO_DEFAULT_PORT);
    (void)curl_url_get(h, CURLUPART_QUERY, &u->query, 0);
    return CRAWL_OK;
}

/* The pieces of scheme://host[%25zone][:port]path[?query] into pc[];
 * returns their count, negated when there is a zone. */
static int url_pieces(const parts_t *u, const char *host, const char *pc[16])
{
    size_t hl = strlen(host);
    int n = 0, zone = u->zone && host[0] == '[' && hl > 1;
    pc[n++] = u->scheme;
    pc[n++] = "://";
    pc[n++] = host;
    if (zone) { /* "[fe80::1" "%25" zone "]": the ']' is cut off below */
        pc[n++] = "%25";
        pc[n++] = u->zone;
        pc[n++] = "]";
    }
    if (u->port) {
        pc[n++] = ":";
        pc[n++] = u->port;
    }
    pc[n++] = u->path[0] ? u->path : "/";
    if (u->query && u->query[0]) {
        pc[n++] = "?";
        pc[n++] = u->query;
    }
    return zone ? -n : n;
}

/* Writes the URL parsed in h into *out (malloc'd).  This is only the
 * serialization of the parts libcurl parsed; it replaces
 * curl_url_get(CURLUPART_URL), which costs ten times more, and is where the
 * host gets lowercased and IDN hosts become punycode. */
static int serialize(CURLU *h, size_t max_len, char **out, size_t *out_len)
{
    parts_t u = {0};
    uint8_t *puny = NULL;
    const char *host = NULL, *pc[16];
    size_t len[16], total = 0;
    int rc = get_parts(h, &u), n = 0, i, zone;
    if (rc == CRAWL_OK)
        rc = norm_host(u.host, &puny, &host);
    if (rc)
        goto out;
    n = url_pieces(&u, host, pc);
    zone = n < 0;
    n = zone ? -n : n;
    for (i = 0; i < n; i++) {
        len[i] = strlen(pc[i]);
        if (zone && pc[i] == host)
            len[i]--; /* the ']' comes after the zone */
        total += len[i];
    }
    if (total > max_len) {
        rc = CRAWL_ETOOLONG;
        goto out;
    }
    if (!(*out = malloc(total + 1))) {
        rc = CRAWL_ENOMEM;
        goto out;
    }
    for (i = 0, total = 0; i < n; total += len[i], i++)
        memcpy(*out + total, pc[i], len[i]);
    (*out)[total] = '\0';
    if (out_len)
        *out_len = total;
out:
    free(puny);
    parts_free(&u);
    return rc;
}

struct url_base {
    char scheme[6];    /* "http" / "https" */
    char *doc;         /* the base URL, normalized */
    size_t len;        /* strlen(doc) */
    size_t origin_len; /* "scheme://authority" */
    size_t path_end;   /* end of the path (start of "?query" or len) */
    size_t dir_len;    /* up to and including the last '/' of the path */
};

void url_base_free(url_base_t *b)
{
    if (!b)
        return;
    free(b->doc);
    free(b);
}

int url_base_new(const char *s, size_t len, size_t max_len, url_base_t **out)
{
    url_base_t *b;
    const char *auth, *path, *q;
    int rc;
    *out = NULL;
    if (!(b = calloc(1, sizeof(*b))))
        return CRAWL_ENOMEM;
    rc = url_resolve(NULL, s, len, max_len, &b->doc, &b->len);
    if (rc) {
        free(b);
        return rc;
    }
    /* doc is our own serialization: scheme://authority/path[?query] */
    auth = strstr(b->doc, "://") + 3;
    path = strchr(auth, '/');
    q = strchr(path, '?');
    memcpy(b->scheme, b->doc, (size_t)(auth - 3 - b->doc));
    b->origin_len = (size_t)(path - b->doc);
    b->path_end = q ? (size_t)(q - b->doc) : b->len;
    b->dir_len = b->path_end;
    while (b->doc[b->dir_len - 1] != '/')
        b->dir_len--;
    *out = b;
    return CRAWL_OK;
}

const char *url_base_str(const url_base_t *b)
{
    return b->doc;
}

/* Parses the absolute URL abs with a fresh handle and serializes it. */
static int parse_abs(const char *abs, size_t max_len, char **out, size_t *out_len)
{
    CURLU *h = curl_url();
    int rc;
    if (!h)
        return CRAWL_ENOMEM;
    rc = map_uc(curl_url_set(h, CURLUPART_URL, abs, 0));
    if (rc == CRAWL_OK)
        rc = serialize(h, max_len, out, out_len);
    curl_url_cleanup(h);
    return rc;
}

/* The base itself (an empty reference or a bare "#frag"). */
static int copy_base(const url_base_t *b, size_t max_len, char **out, size_t *out_len)
{
    if (b->len > max_len)
        return CRAWL_ETOOLONG;
    if (!(*out = malloc(b->len + 1)))
        return CRAWL_ENOMEM;
    memcpy(*out, b->doc, b->len + 1);
    if (out_len)
        *out_len = b->len;
    return CRAWL_OK;
}

/* 1 if the path p[0..n) has a "." or ".." segment (the only thing libcurl's
 * parse would still change in a same-origin result: url_clean() has already
 * decoded %2E and turned '\\' into '/'). */
static int has_dot_segment(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        if ((j - i == 1 && p[i] == '.') || (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
            return 1;
        i = j + 1;
    }
    return 0;
}

/* The common case without libcurl: a reference that keeps the base's
 * origin ("p", "/p", "?q", or the base's own "scheme://authority/...",
 * byte for byte) and whose result has no dot segment and no empty query is
 * already in normal form once the kept prefix is in front of it -- the base
 * is normalized, url_clean() normalized the rest.  c is the cleaned reference
 * inside buf (with room before it); on success the result is moved to the
 * start of buf and handed over as *out.  Returns 1 when it applied (rc in
 * *rc), 0 when the reference needs the full parse.  tests/test_parser.c
 * and fuzz_url check it against url_resolve_full(). */
static int resolve_same_origin(const url_base_t *b, char *buf, char *c, int absolute,
                               size_t max_len, char **out, size_t *out_len, int *rc)
{
    size_t pre, n, path_len;
    const char *q;
    if (absolute) {
        if (strncmp(c, b->doc, b->origin_len) != 0 || c[b->origin_len] != '/')
            return 0;
        c += b->origin_len; /* now an origin-relative reference */
    } else if (c[0] == '/' && c[1] == '/') {
        return 0;
    }
    n = strlen(c);
    q = memchr(c, '?', n);
    path_len = q ? (size_t)(q - c) : n;
    if (has_dot_segment(c, path_len) || (q && q[1] == '\0'))
        return 0;
    pre = c[0] == '/' ? b->origin_len : c[0] == '?' ? b->path_end : b->dir_len;
    if (pre + n > max_len) {
        *rc = CRAWL_ETOOLONG;
        return 1;
    }
    memcpy(buf, b->doc, pre);
    memmove(buf + pre, c, n + 1);
    *out = buf;
    if (out_len)
        *out_len = pre + n;
    *rc = CRAWL_OK;
    return 1;
}

static int resolve(const url_base_t *base, const char *ref, size_t len, size_t max_len,
                   int shortcut, char **out, size_t *out_len)
{
    char *buf = NULL, *c;
    size_t pre = 0, reserve = base ? base->len + 8 : 0;
    int absolute = 0, rc;
    *out = NULL;
    if (max_len == 0)
        max_len = PARSER_DEFAULT_MAX_URL_LENGTH;
    rc = url_clean(ref, len, max_len, base ? base->scheme : NULL, reserve, &buf, &absolute);
    if (rc)
        return rc;
    c = buf + reserve;
    if (!absolute && !base) {
        rc = CRAWL_EBADURL;
        goto out;
    }
    if (c[0] == '\0') {
        rc = copy_base(base, max_len, out, out_len);
        goto out;
    }
    if (shortcut && base &&
        resolve_same_origin(base, buf, c, absolute, max_len, out, out_len, &rc)) {
        if (rc != CRAWL_OK)
            free(buf); /* on success buf is *out */
        return rc;
    }
    /* RFC 3986 5.2.2: which part of the base the reference keeps, put in
     * front of it; libcurl then parses the absolute result and removes dot
     * segments. */
    if (!absolute && c[0] == '/' && c[1] == '/') {
        pre = strlen(base->scheme) + 1;
        memcpy(c - pre, base->scheme, pre - 1);
        c[-1] = ':';
    } else if (!absolute) {
        pre = c[0] == '/' ? base->origin_len : c[0] == '?' ? base->path_end : base->dir_len;
        memcpy(c - pre, base->doc, pre);
    }
    rc = parse_abs(c - pre, max_len, out, out_len);
out:
    free(buf);
    return rc;
}

int url_resolve(const url_base_t *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len)
{
    return resolve(base, ref, len, max_len, 1, out, out_len);
}

int url_resolve_full(const url_base_t *base, const char *ref, size_t len, size_t max_len,
                     char **out, size_t *out_len)
{
    return resolve(base, ref, len, max_len, 0, out, out_len);
}

int url_resolve_curl(const url_base_t *base, const char *ref, size_t max_len, char **out)
{
    char *c = NULL;
    int absolute = 0, rc;
    CURLU *h = NULL;
    *out = NULL;
    rc = url_clean(ref, strlen(ref), max_len, base->scheme, 0, &c, &absolute);
    if (rc)
        return rc;
    if (c[0] == '\0') {
        rc = copy_base(base, max_len, out, NULL);
        goto out;
    }
    if (!(h = curl_url())) {
        rc = CRAWL_ENOMEM;
        goto out;
    }
    rc = map_uc(curl_url_set(h, CURLUPART_URL, base->doc, 0));
    if (rc == CRAWL_OK)
        rc = map_uc(curl_url_set(h, CURLUPART_URL, c, 0));
    if (rc == CRAWL_OK)
        rc = serialize(h, max_len, out, NULL);
out:
    curl_url_cleanup(h);
    free(c);
    return rc;
}

int parser_url_normalize(const char *base, const char *ref, size_t max_len, char **out)
{
    url_base_t *b = NULL;
    int rc;
    if (!ref || !out)
        return CRAWL_EINVAL;
    *out = NULL;
    if (max_len == 0)
        max_len = PARSER_DEFAULT_MAX_URL_LENGTH;
    if (base && (rc = url_base_new(base, strlen(base), max_len, &b)) != CRAWL_OK)
        return rc == CRAWL_ESCHEME ? rc : CRAWL_EBADURL;
    rc = url_resolve(b, ref, strlen(ref), max_len, out, NULL);
    url_base_free(b);
    return rc;
}
