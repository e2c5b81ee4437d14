/*
 * parser.h -- URL normalization (on libcurl's URL API) and streaming link
 * extraction from HTML (libxml2's push parser with SAX callbacks, no tree).
 *
 * The normalizer is THE one normalizer of the project: seeds, links,
 * redirects and Bloom keys all go through parser_url_normalize(), so one URL
 * has exactly one form everywhere.
 *
 * Errors: functions that can fail return 0 or a negative PARSER_E* code;
 * parser_strerror() turns it into text.
 */
#ifndef PARSER_H
#define PARSER_H

#include <stddef.h>
#include <stdint.h>

#define PARSER_DEFAULT_MAX_URL_LENGTH 2048

enum {
    PARSER_OK = 0,
    PARSER_EINVAL = -1,   /* bad argument */
    PARSER_ENOMEM = -2,   /* out of memory */
    PARSER_EBADURL = -3,  /* not a URL / cannot be resolved */
    PARSER_ESCHEME = -4,  /* scheme other than http/https (javascript:, mailto:, ...) */
    PARSER_ETOOLONG = -5, /* longer than the configured maximum */
    PARSER_EPARSE = -6,   /* libxml2 refused the input */
};

/* Resolves REF against BASE (BASE may be NULL when REF is absolute) and
 * normalizes the result: whitespace trimmed, tabs/newlines removed, scheme and
 * host lowercased, default port dropped, dot segments removed, fragment
 * dropped, empty path -> "/", percent-escapes uppercased and unreserved ones
 * decoded, IDN host -> punycode, query kept.  Only http/https pass.
 * On success *out is a new string (caller frees with free()) and 0 is
 * returned.  max_len == 0 means PARSER_DEFAULT_MAX_URL_LENGTH.  Thread-safe. */
int parser_url_normalize(const char *base, const char *ref, size_t max_len, char **out);

/* Host part ("example.com") and origin ("http://example.com:8080") of a
 * normalized URL, written into buf.  Return length or negative code. */
int parser_url_host(const char *url, char *buf, size_t buflen);
int parser_url_origin(const char *url, char *buf, size_t buflen);

/* What kind of element a link came from. */
typedef enum parser_link_kind {
    PARSER_LINK_A,       /* a[href], area[href] */
    PARSER_LINK_LINK,    /* link[href] (not stylesheet/icon) */
    PARSER_LINK_FRAME,   /* frame[src], iframe[src] */
    PARSER_LINK_REFRESH, /* meta http-equiv=refresh */
} parser_link_kind_t;

/* Called once per extracted link, url normalized and absolute, valid only
 * during the call. */
typedef void (*parser_link_fn)(void *ud, const char *url, size_t len, parser_link_kind_t kind);

typedef struct parser_config {
    size_t max_url_length; /* bytes; 0: PARSER_DEFAULT_MAX_URL_LENGTH */
    int follow_nofollow;   /* 1: also report rel=nofollow links */
} parser_config_t;

/* Counters of one page. */
typedef struct parser_stats {
    uint64_t links;          /* reported to the callback */
    uint64_t dropped_scheme; /* javascript:, mailto:, data:, tel:, ... */
    uint64_t dropped_long;   /* longer than max_url_length */
    uint64_t dropped_bad;    /* unparsable */
    uint64_t dropped_nofollow;
    uint64_t bytes;  /* fed */
    uint64_t capped; /* bytes not given to libxml2: beyond the per-token caps that
                        keep memory bounded (text, comments, scripts, attribute
                        values too long to be a URL); see parser_internal.h */
} parser_stats_t;

typedef struct parser parser_t;

/* True if a Content-Type header value names a type we parse
 * (text/html, application/xhtml+xml).  NULL -> false. */
int parser_is_html(const char *content_type);

/* A new page parser.  page_url: the (normalized) URL of the page, the base
 * for relative links until <base href>; content_type: the HTTP header value
 * or NULL (its charset is used if present); x_robots_tag: header value or
 * NULL.  Strings are copied.  NULL on out-of-memory.  Not thread-safe; use
 * one per transfer. */
parser_t *parser_new(const parser_config_t *cfg, const char *page_url, const char *content_type,
                     const char *x_robots_tag, parser_link_fn fn, void *ud);
/* Feeds the next chunk of the body.  Memory stays bounded whatever the total. */
int parser_feed(parser_t *p, const char *data, size_t len);
/* Ends the document (flushes pending callbacks). */
int parser_finish(parser_t *p);
/* After parser_finish(): page-level results. canonical is NULL or valid until
 * parser_free(). */
int parser_nofollow(const parser_t *p);
const char *parser_canonical(const parser_t *p);
const parser_stats_t *parser_get_stats(const parser_t *p);
void parser_free(parser_t *p);

const char *parser_strerror(int err);

#endif
