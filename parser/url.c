/*
 * url.c -- THE URL normalizer of the project: the WHATWG URL Standard's
 * basic URL parser for the special schemes http and https, resolution
 * against a base included, writing the serialization as it parses.
 *
 * DESIGN
 * Every URL (seed, link, redirect target) goes through url_resolve(), so
 * one resource has one spelling everywhere, and that spelling is the one a
 * browser would request (parser.h lists the deliberate exceptions).
 * The reference is trimmed of leading/trailing C0 controls and spaces, its
 * tabs and newlines are removed and its fragment is cut; then one pass runs
 * the Standard's states for special URLs:
 *   scheme -> (same scheme as the base, no "//": relative) -> authority,
 *   where any run of '/' and '\' is skipped, the userinfo ends at the LAST
 *   '@' and is dropped, the host is parsed by url_host.c and the port
 *   checked (0..65535, the default dropped) -> path, segment by segment:
 *   "." and ".." (also "%2e" spellings) applied to what is already written,
 *   bytes of the path percent-encode set escaped, '%' kept as it is ->
 *   query, bytes of the special-query percent-encode set escaped.
 * The output is written straight into one buffer, sized before the pass
 * for the worst case (every byte escaped: 3x), so the pass never reallocs.
 * A base (url_base_t) is a normalized URL plus the offsets of its origin,
 * path and query: the relative states copy a prefix of it.
 * No global state: every function is thread-safe.
 */
#include "parser.h"
#include "parser_internal.h"

#include <stdlib.h>
#include <string.h>

/* A reference longer than this many times max_len is refused before any
 * parsing (dot segments and a dropped userinfo can shorten it). */
#define CLEAN_SLACK 4
/* Output room besides 3 bytes per input byte: scheme, port, "/", a host
 * grown by IDNA (libidn2 caps a domain at 255 bytes), the base's prefix. */
#define OUT_SLACK 400

static const char hexdig[] = "0123456789ABCDEF";

struct url_base {
    char scheme[6];    /* "http" / "https" */
    char *doc;         /* the base URL, normalized */
    size_t len;        /* strlen(doc) */
    size_t origin_len; /* "scheme://host[:port]" */
    size_t path_end;   /* end of the path (start of "?query" or len) */
};

/* The parse of one reference: input t[0..n), output o[0..len). */
typedef struct pstate {
    const char *t;
    size_t n;
    char *o;
    size_t len, cap;
    size_t path_start; /* where the path begins in o */
    int https;
} pstate_t;

static int is_slash(char c)
{
    return c == '/' || c == '\\';
}

/* Bytes of the path percent-encode set (C0 controls, space, > 0x7E and
 * "#<>?^`{}) and of the special-query one (C0, space, > 0x7E, "#<>'). */
static int path_escape(unsigned char c)
{
    return c <= 0x20 || c >= 0x7F || c == '"' || c == '#' || c == '<' || c == '>' || c == '?' ||
           c == '^' || c == '`' || c == '{' || c == '}';
}

static int query_escape(unsigned char c)
{
    return c <= 0x20 || c >= 0x7F || c == '"' || c == '#' || c == '<' || c == '>' || c == '\'';
}

static void put_escaped(pstate_t *s, const char *p, size_t n, int (*esc)(unsigned char))
{
    char *o = s->o + s->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (esc(c)) {
            *o++ = '%';
            *o++ = hexdig[c >> 4];
            *o++ = hexdig[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    s->len = (size_t)(o - s->o);
}

/* "." or "%2e" (any case); ".." and its three escaped spellings. */
static int is_dot(const char *p, size_t n, size_t *dots)
{
    size_t i = 0, k = 0;
    while (i < n) {
        if (p[i] == '.')
            i++;
        else if (i + 3 <= n && p[i] == '%' && p[i + 1] == '2' && (p[i + 2] | 0x20) == 'e')
            i += 3;
        else
            return 0;
        if (++k > 2)
            return 0;
    }
    *dots = k;
    return k > 0;
}

/* Removes the last path segment already written ("shorten"). */
static void shorten(pstate_t *s)
{
    while (s->len > s->path_start && s->o[s->len - 1] != '/')
        s->len--;
    if (s->len > s->path_start)
        s->len--;
}

static int query_state(pstate_t *s, size_t p)
{
    if (p >= s->n)
        return CRAWL_OK; /* an empty query is dropped (parser.h) */
    s->o[s->len++] = '?';
    put_escaped(s, s->t + p, s->n - p, query_escape);
    return CRAWL_OK;
}

/* The path state from t[p], segments appended after what is written. */
static int path_state(pstate_t *s, size_t p)
{
    for (;;) {
        size_t q = p, dots;
        while (q < s->n && !is_slash(s->t[q]) && s->t[q] != '?')
            q++;
        int more = q < s->n && is_slash(s->t[q]);
        if (is_dot(s->t + p, q - p, &dots)) {
            if (dots == 2)
                shorten(s);
            if (!more)
                s->o[s->len++] = '/';
        } else {
            s->o[s->len++] = '/';
            put_escaped(s, s->t + p, q - p, path_escape);
        }
        if (!more)
            return q < s->n ? query_state(s, q + 1) : CRAWL_OK;
        p = q + 1;
    }
}

/* Port digits d[0..n) (empty: none): appends ":port" unless default. */
static int port_state(pstate_t *s, const char *d, size_t n)
{
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return CRAWL_EBADURL;
        v = v * 10 + (unsigned long)(d[i] - '0');
        if (v > 65535)
            return CRAWL_EBADURL;
    }
    if (n == 0 || v == (s->https ? 443u : 80u))
        return CRAWL_OK;
    char tmp[8];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    s->o[s->len++] = ':';
    while (k)
        s->o[s->len++] = tmp[--k];
    return CRAWL_OK;
}

/* The authority from t[p] (after the skipped slashes), then the path. */
static int authority_state(pstate_t *s, size_t p)
{
    size_t e = p, hs, colon, i;
    int bracket = 0, rc;
    while (p < s->n && is_slash(s->t[p])) /* special authority ignore slashes */
        p++;
    for (e = p; e < s->n && !is_slash(s->t[e]) && s->t[e] != '?'; e++)
        ;
    hs = p;
    for (i = p; i < e; i++) /* userinfo: up to the last '@', dropped */
        if (s->t[i] == '@')
            hs = i + 1;
    for (colon = hs; colon < e; colon++) {
        if (s->t[colon] == '[')
            bracket = 1;
        else if (s->t[colon] == ']')
            bracket = 0;
        else if (s->t[colon] == ':' && !bracket)
            break;
    }
    if (colon == hs)
        return CRAWL_EBADURL; /* no host */
    rc = url_host_parse(s->t + hs, colon - hs, s->o + s->len, s->cap - s->len);
    if (rc < 0)
        return rc;
    s->len += (size_t)rc;
    rc = port_state(s, s->t + colon + 1, colon < e ? e - colon - 1 : 0);
    if (rc)
        return rc;
    s->path_start = s->len;
    /* path start state: one slash is the path's own */
    return path_state(s, e < s->n && is_slash(s->t[e]) ? e + 1 : e);
}

/* The relative state from t[p]: which part of the base is kept. */
static int relative_state(pstate_t *s, const url_base_t *b, size_t p)
{
    if (p < s->n && is_slash(s->t[p])) {
        if (p + 1 < s->n && is_slash(s->t[p + 1])) { /* "//host" */
            memcpy(s->o, b->doc, strlen(b->scheme) + 3);
            s->len = strlen(b->scheme) + 3;
            return authority_state(s, p + 2);
        }
        memcpy(s->o, b->doc, b->origin_len); /* "/path" */
        s->len = s->path_start = b->origin_len;
        return path_state(s, p + 1);
    }
    s->path_start = b->origin_len;
    if (p >= s->n) { /* the base itself, without its fragment */
        memcpy(s->o, b->doc, b->len);
        s->len = b->len;
        return CRAWL_OK;
    }
    memcpy(s->o, b->doc, b->path_end);
    s->len = b->path_end;
    if (s->t[p] == '?')
        return query_state(s, p + 1);
    shorten(s);
    return path_state(s, p);
}

/* Length of a scheme at the start of t ("http" for "http:..."), 0 if none. */
static size_t scheme_len(const char *t, size_t n)
{
    size_t i = 0;
    if (n == 0 || !url_is_alpha((unsigned char)t[0]))
        return 0;
    while (i < n && (url_is_alpha((unsigned char)t[i]) || (t[i] >= '0' && t[i] <= '9') ||
                     t[i] == '+' || t[i] == '-' || t[i] == '.'))
        i++;
    return (i < n && t[i] == ':') ? i : 0;
}

/* Runs the states on t[0..n) (trimmed, no tab or newline, no fragment). */
static int parse(pstate_t *s, const url_base_t *b)
{
    size_t sl = scheme_len(s->t, s->n);
    if (sl == 0) { /* no scheme state */
        if (!b)
            return CRAWL_EBADURL;
        s->https = b->scheme[4] == 's';
        return relative_state(s, b, 0);
    }
    char sch[6] = {0};
    for (size_t i = 0; i < sl && i < 5; i++)
        sch[i] = (char)url_lower((unsigned char)s->t[i]);
    if (sl > 5 || (strcmp(sch, "http") != 0 && strcmp(sch, "https") != 0))
        return CRAWL_ESCHEME;
    s->https = sl == 5;
    if (b && strcmp(b->scheme, sch) == 0 &&
        !(sl + 2 < s->n && s->t[sl + 1] == '/' && s->t[sl + 2] == '/'))
        return relative_state(s, b, sl + 1); /* "http:g" against http: */
    memcpy(s->o, sch, sl);
    memcpy(s->o + sl, "://", 3);
    s->len = sl + 3;
    return authority_state(s, sl + 1);
}

/* ref[0..len) trimmed, tabs and newlines removed, fragment cut: *t points
 * into ref or to *copy (malloc'd when something had to be removed). */
static int preprocess(const char *ref, size_t len, size_t max_len, const char **t, size_t *n,
                      char **copy)
{
    size_t i, k = 0;
    const char *hash;
    *copy = NULL;
    while (len > 0 && (unsigned char)ref[0] <= 0x20) {
        ref++;
        len--;
    }
    while (len > 0 && (unsigned char)ref[len - 1] <= 0x20)
        len--;
    if (len > CLEAN_SLACK * max_len + 64)
        return CRAWL_ETOOLONG;
    if ((hash = memchr(ref, '#', len)))
        len = (size_t)(hash - ref);
    for (i = 0; i < len && ref[i] != '\t' && ref[i] != '\n' && ref[i] != '\r'; i++)
        ;
    *t = ref;
    *n = len;
    if (i == len)
        return CRAWL_OK;
    if (!(*copy = malloc(len)))
        return CRAWL_ENOMEM;
    for (i = 0; i < len; i++)
        if (ref[i] != '\t' && ref[i] != '\n' && ref[i] != '\r')
            (*copy)[k++] = ref[i];
    *t = *copy;
    *n = k;
    return CRAWL_OK;
}

int url_resolve(const url_base_t *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len)
{
    pstate_t s = {0};
    char *copy = NULL;
    int rc;
    *out = NULL;
    if (max_len == 0)
        max_len = PARSER_DEFAULT_MAX_URL_LENGTH;
    rc = preprocess(ref, len, max_len, &s.t, &s.n, &copy);
    if (rc)
        return rc;
    s.cap = (base ? base->len : 0) + 3 * s.n + OUT_SLACK;
    if (!(s.o = malloc(s.cap + 1))) {
        rc = CRAWL_ENOMEM;
        goto out;
    }
    rc = parse(&s, base);
    if (rc == CRAWL_OK && s.len > max_len)
        rc = CRAWL_ETOOLONG;
    if (rc == CRAWL_OK) {
        s.o[s.len] = '\0';
        *out = s.o;
        s.o = NULL;
        if (out_len)
            *out_len = s.len;
    }
out:
    free(s.o);
    free(copy);
    return rc;
}

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
    /* doc is our own serialization: scheme://host[:port]/path[?query] */
    auth = strstr(b->doc, "://") + 3;
    path = strchr(auth, '/');
    q = strchr(path, '?');
    memcpy(b->scheme, b->doc, (size_t)(auth - 3 - b->doc));
    b->origin_len = (size_t)(path - b->doc);
    b->path_end = q ? (size_t)(q - b->doc) : b->len;
    *out = b;
    return CRAWL_OK;
}

const char *url_base_str(const url_base_t *b)
{
    return b->doc;
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

int parser_url_key(const char *url, char **out)
{
    const char *auth, *p;
    char *o;
    size_t n = 0;
    if (!url || !out)
        return CRAWL_EINVAL;
    *out = NULL;
    auth = strstr(url, "://");
    if (!auth || !(p = strchr(auth + 3, '/')))
        return CRAWL_EBADURL;
    if (!(o = malloc(3 * strlen(url) + 1)))
        return CRAWL_ENOMEM;
    memcpy(o, url, (size_t)(p - url));
    n = (size_t)(p - url);
    for (; *p; p++) {
        int hi, lo;
        if (*p == '%' && (hi = parser_hex_digit((unsigned char)p[1])) >= 0 &&
            (lo = parser_hex_digit((unsigned char)p[2])) >= 0) {
            unsigned char v = (unsigned char)(hi * 16 + lo);
            if (url_is_unreserved(v)) {
                o[n++] = (char)v;
            } else {
                o[n++] = '%';
                o[n++] = hexdig[hi];
                o[n++] = hexdig[lo];
            }
            p += 2;
        } else if (*p == '%') {
            /* a '%' that starts no escape: escaped, or decoding the escape
             * after it could make a new one ("%2%66" -> "%2f") */
            memcpy(o + n, "%25", 3);
            n += 3;
        } else {
            o[n++] = *p;
        }
    }
    o[n] = '\0';
    *out = o;
    return CRAWL_OK;
}
