/*
 * parser_internal.h -- shared between the files of parser/, not part of the
 * public contract.  The html parser parses the page's base URL once
 * (url_base_new) and resolves every link against that handle (url_resolve),
 * instead of re-parsing the base string for each link.  The normalizer is
 * url_clean.c (the reference, step 1) and url.c (resolution through libcurl
 * and serialization); url_origin.c reads host and origin back.
 */
#ifndef PARSER_INTERNAL_H
#define PARSER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* A base URL, normalized once per page, kept as a string with the offsets
 * of its parts (RFC 3986 5.2.2 takes a prefix of it for each reference). */
typedef struct url_base url_base_t;

/* Cleans and normalizes an absolute http/https URL (len bytes) into a new
 * base (caller frees with url_base_free).  Returns 0 or a CRAWL_E* code. */
int url_base_new(const char *base, size_t len, size_t max_len, url_base_t **out);
void url_base_free(url_base_t *b);
/* The normalized base URL (valid until url_base_free). */
const char *url_base_str(const url_base_t *b);

/* Resolves ref (len bytes, need not be NUL-terminated) against base (may be
 * NULL) and normalizes the result: the reference is cleaned (url_clean.c), the
 * base prefix it keeps is put in front (RFC 3986 5.2.2), libcurl parses the
 * absolute result (dot segments, default port, ...) and it is serialized
 * from libcurl's parts.  *out: malloc'd, caller frees with free(); *out_len
 * its length.  Returns 0 or a CRAWL_E* code.  Thread-safe (base is only
 * read). */
int url_resolve(const url_base_t *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len);

/* url_resolve() without its same-origin shortcut (every result parsed by
 * libcurl): what tests and fuzz_url check the shortcut against. */
int url_resolve_full(const url_base_t *base, const char *ref, size_t len, size_t max_len,
                     char **out, size_t *out_len);

/* The same through libcurl's own relative resolution (curl_url_set of the
 * reference on a handle holding the base): slower, the reference that
 * url_resolve() is checked against in tests and fuzzing. */
int url_resolve_curl(const url_base_t *base, const char *ref, size_t max_len, char **out);

/* origin and host through the normalizer only, never by the scanning fast
 * path of parser_url_origin()/parser_url_host() (url_origin.c): what tests
 * and fuzz_url check the fast path against.  Same contract. */
int url_origin_full(const char *url, char *buf, size_t buflen);
int url_host_full(const char *url, char *buf, size_t buflen);

/* ---- url_clean.c: step 1 of the normalizer --------------------------------
 * Cleans ref[0..len) into a malloc'd string *out (see url_clean.c), written
 * after reserve free bytes (room for a base prefix); the caller frees *out.
 * base_scheme: the scheme of the base ("http"/"https") or NULL without a
 * base.  *absolute is set when the result carries its own scheme.  Returns
 * 0, CRAWL_ETOOLONG (len beyond 4 * max_len + 64), CRAWL_ESCHEME or
 * CRAWL_ENOMEM (*out untouched on failure). */
int url_clean(const char *ref, size_t len, size_t max_len, const char *base_scheme, size_t reserve,
              char **out, int *absolute);

/* 1 if every dot-separated label of h[0..n) is a number as libcurl reads
 * IPv4 parts (decimal, or 0x hex): libcurl would re-read such a host as an
 * address (url.c). */
int url_numeric_ipv4_form(const char *h, size_t n);

/* ASCII character classes of RFC 3986 (no locale). */
static inline int url_is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline int url_is_unreserved(unsigned char c)
{
    return url_is_alpha(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

static inline unsigned char url_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* ---- charset.c: registers a WHATWG windows-1252 decoder with libxml2
 * (iconv's stops the parse at the five undefined bytes).  Once per process;
 * thread-safe. */
void charset_init(void);

/* ---- bound.c: the markup-only, capped feed of libxml2 --------------------
 * See bound.c: character data, comments and script/style text are dropped,
 * tags pass with at most BOUND_TAG_CAP bytes each and quoted attribute
 * values at most attr_cap bytes, so what libxml2 buffers stays bounded. */
#ifndef BOUND_TAG_CAP                   /* (smaller in the fuzzing build, to reach the caps) */
#define BOUND_TAG_CAP (256u * 1024)     /* bytes of one tag, besides its values */
#define BOUND_ATTR_MIN_CAP (64u * 1024) /* minimum cap of one attribute value */
#endif
#define BOUND_SLACK 32 /* extra output bytes one call may emit */

typedef struct bound {
    int st;               /* lexer state (bound.c) */
    int passthrough;      /* 1: UTF-16/32 input, no filtering */
    size_t run;           /* bytes in the current tag */
    size_t attr;          /* bytes in the current attribute value */
    size_t attr_cap;      /* cap of an attribute value */
    size_t seen;          /* bytes seen so far */
    char quote;           /* quote that opened the value */
    unsigned char flags;  /* BF_* (bound.c) */
    unsigned char nlen;   /* bytes in name[] */
    unsigned char dashes; /* consecutive '-' in a comment */
    unsigned char slow;   /* 1: no bulk paths, byte by byte (tests compare both) */
    char name[8];         /* tag name being read, lowercase, truncated */
    char raw[8];          /* "script"/"style" while inside one */
    uint64_t dropped;     /* tag bytes dropped beyond the caps */
} bound_t;

/* attr_cap: cap of an attribute value (at least BOUND_ATTR_MIN_CAP); keep
 * it above what url_clean.c refuses as too long before parsing (4 * max_len + 64)
 * so that a cut value is never reported as a shorter URL. */
void bound_init(bound_t *b, size_t attr_cap);
/* Filters in[0..len) into out, which has room for len + BOUND_SLACK bytes;
 * returns the number of bytes written. */
size_t bound_filter(bound_t *b, const char *in, size_t len, char *out);

#endif
