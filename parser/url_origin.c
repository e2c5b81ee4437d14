/*
 * url_origin.c -- the host and the origin of a URL: THE one definition of
 * "origin" in the project (robots.txt, politeness queues and Crawl-delay
 * are all per origin).
 *
 * DESIGN
 * The origin of a URL is "scheme://host[:port]" of its normalized form
 * (parser_url_normalize(), url.c): lowercase scheme and host, IDN hosts in
 * punycode, IPv4 in dotted-quad form, no default port, and never userinfo,
 * which the normalizer drops.  The host is the host part of that origin.
 * Both are asked for every link, so a scan answers the common case without
 * allocating: a URL "http[s]://host[:port]/..." whose scheme, host and port
 * normalization would give back byte for byte (split(), strict).  Anything
 * else -- userinfo, capitals, IP literals, hosts that end in a number (IPv4
 * forms), "xn--" labels (IDNA checks them), a default or zero-padded port,
 * no '/' after the authority -- is normalized first and the result scanned.
 * url_origin_full() and url_host_full() take the second path always;
 * tests/test_parser_url.c and fuzz_url check that both paths agree.
 * No state: thread-safe.
 */
#include "parser.h"
#include "parser_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Scheme, host and port of a URL in the normalizer's output form. */
typedef struct authority {
    const char *scheme; /* "http" / "https", scheme_len bytes */
    size_t scheme_len;
    const char *host; /* lowercase name, dotted-quad IPv4, or "[v6]" */
    size_t host_len;
    const char *port; /* NULL, or the digits after ':' */
    size_t port_len;
} authority_t;

static int host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/* 1 if p[0..n) (digits) is a port the normalizer writes as it is: at most
 * 65535, no leading zero, not the scheme's default. */
static int canonical_port(const char *p, size_t n, size_t scheme_len)
{
    unsigned long v = 0;
    if (n == 0 || n > 5 || (p[0] == '0' && n > 1))
        return 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned long)(p[i] - '0');
    return v <= 65535 && v != (scheme_len == 4 ? 80u : 443u);
}

/* 1 if h[0..n) is four decimal numbers 0..255 without leading zeros, the
 * form the normalizer writes an IPv4 address in. */
static int dotted_quad(const char *h, size_t n)
{
    const char *end = h + n;
    for (int part = 0; part < 4; part++) {
        const char *d = h;
        unsigned v = 0;
        while (h < end && *h >= '0' && *h <= '9' && h - d < 3)
            v = v * 10 + (unsigned)(*h++ - '0');
        if (h == d || v > 255 || (*d == '0' && h - d > 1))
            return 0;
        if (part < 3 && (h == end || *h++ != '.'))
            return 0;
    }
    return h == end;
}

/* 1 if a label of the name h[0..n) (lowercase) starts with "xn--". */
static int has_a_label(const char *h, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if ((i == 0 || h[i - 1] == '.') && memcmp(h + i, "xn--", 4) == 0)
            return 1;
    return 0;
}

/* Splits "http[s]://host[:port]/...".  strict (url from anywhere): 0 only
 * when normalizing url gives the same scheme, host and port; not strict (the
 * normalizer's own output): IP literals too.  -1 when url is not so. */
static int split(const char *url, authority_t *a, int strict)
{
    if (!strncmp(url, "http://", 7))
        a->scheme_len = 4;
    else if (!strncmp(url, "https://", 8))
        a->scheme_len = 5;
    else
        return -1;
    a->scheme = url;
    const char *h = url + a->scheme_len + 3, *end = strchr(h, '/'), *q = h;
    if (!end)
        return -1;
    if (*q == '[') {
        if (strict) /* IPv6 is rewritten (zeros, case): ask the normalizer */
            return -1;
        while (q < end && *q != ']')
            q++;
        if (q == end)
            return -1;
        q++;
    } else {
        while (q < end && host_char(*q))
            q++;
    }
    a->host = h;
    a->host_len = (size_t)(q - h);
    a->port = NULL;
    a->port_len = 0;
    if (q < end && *q == ':') {
        a->port = q + 1;
        a->port_len = (size_t)(end - q - 1);
        for (const char *d = a->port; d < end; d++)
            if (*d < '0' || *d > '9')
                return -1;
        if (a->port_len == 0 || (strict && !canonical_port(a->port, a->port_len, a->scheme_len)))
            return -1;
    } else if (q != end) {
        return -1; /* userinfo, capitals, '%', '\\', '?' or '#' in the authority */
    }
    if (a->host_len == 0)
        return -1;
    /* dotted_quad first: it settles the common IP literal, and fails at the
     * first letter of a name */
    if (strict && h[0] != '[' && !dotted_quad(h, a->host_len) &&
        (url_ends_in_number(h, a->host_len) || has_a_label(h, a->host_len)))
        return -1; /* "0x7f.1", "2130706433", "1.2.3.4.": IPv4 forms; "xn--": checked by IDNA */
    return 0;
}

/* Normalizes url into *norm (caller frees) and splits the result. */
static int split_normalized(const char *url, char **norm, authority_t *a)
{
    size_t len = strlen(url);
    /* room for every escape and for IDN, so that length never refuses what
     * the scan would have answered */
    if (len > (SIZE_MAX - 64) / 8)
        return CRAWL_ETOOLONG;
    int rc = url_resolve(NULL, url, len, 8 * len + 64, norm, NULL);
    if (rc != CRAWL_OK)
        return rc;
    return split(*norm, a, 0) == 0 ? CRAWL_OK : CRAWL_EBADURL;
}

/* Writes the host (origin == 0) or the origin of url into buf; fast: try
 * the scan first. */
static int host_or_origin(const char *url, char *buf, size_t buflen, int origin, int fast)
{
    authority_t a;
    char *norm = NULL;
    int rc = CRAWL_OK;
    if (!url || !buf)
        return CRAWL_EINVAL;
    if (!fast || split(url, &a, 1) != 0)
        rc = split_normalized(url, &norm, &a);
    if (rc == CRAWL_OK) {
        size_t n = origin ? (size_t)(a.host + a.host_len + (a.port ? 1 + a.port_len : 0) - a.scheme)
                          : a.host_len;
        const char *from = origin ? a.scheme : a.host;
        if (n >= buflen || n > INT32_MAX) {
            rc = CRAWL_ETOOLONG;
        } else {
            memcpy(buf, from, n);
            buf[n] = '\0';
            rc = (int)n;
        }
    }
    free(norm);
    return rc;
}

int parser_url_host(const char *url, char *buf, size_t buflen)
{
    return host_or_origin(url, buf, buflen, 0, 1);
}

int parser_url_origin(const char *url, char *buf, size_t buflen)
{
    return host_or_origin(url, buf, buflen, 1, 1);
}

int url_host_full(const char *url, char *buf, size_t buflen)
{
    return host_or_origin(url, buf, buflen, 0, 0);
}

int url_origin_full(const char *url, char *buf, size_t buflen)
{
    return host_or_origin(url, buf, buflen, 1, 0);
}
