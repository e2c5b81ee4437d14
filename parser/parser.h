/*
 * parser.h -- URL normalization (the WHATWG URL Standard) and streaming link
 * extraction from HTML (libxml2's push parser with SAX callbacks, no tree).
 *
 * The normalizer is THE one normalizer of the project: seeds, links,
 * redirects and Bloom keys all go through parser_url_normalize(), so one URL
 * has exactly one form everywhere.
 *
 * Errors: functions that can fail return 0 or a negative CRAWL_E* code;
 * crawl_strerror() turns it into text.
 */
#ifndef PARSER_H
#define PARSER_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

#define PARSER_DEFAULT_MAX_URL_LENGTH 2048

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL     bad argument
 *   CRAWL_ENOMEM     out of memory
 *   CRAWL_EBADURL    not a URL / cannot be resolved
 *   CRAWL_ESCHEME    scheme other than http/https (javascript:, mailto:, ...)
 *   CRAWL_ETOOLONG   longer than the configured maximum
 *   CRAWL_EPARSE     libxml2 refused the input */

/* Resolves REF against BASE (BASE may be NULL when REF is absolute) by the
 * WHATWG URL Standard's basic URL parser, for http and https, and writes
 * its serialization: what a browser requests for that link.  So: leading
 * and trailing C0 controls and spaces trimmed, tabs and newlines removed;
 * any run of '/' and '\' after "http:" is the authority's slashes, '\' is
 * '/' in the path; "http:g" against an http base is relative; the host is
 * percent-decoded, IDN -> punycode (libidn2, UTS #46), lowercased, and a
 * host that ends in a number is IPv4 in any form browsers accept ("0x7f.1",
 * "2130706433", "1.2.3.4." -> 1.2.3.4) or refused ("1.2.3.4.5", "1.2.3.08",
 * "256.256.256.256"); IPv6 compressed ("[::127.0.0.1]" -> "[::7f00:1]");
 * default port dropped; "." and ".." segments (also as "%2e") removed; the
 * path's bytes C0, space, "#<>?^`{} and non-ASCII (as UTF-8 bytes) and the
 * query's C0, space, "#<>' and non-ASCII percent-encoded; existing escapes
 * and a '%' that starts none are kept as they are ("/100%-cotton" stays).
 *
 * Deliberate differences from the Standard (each on purpose):
 *  - The fragment is dropped: it is never sent, and "#a"/"#b" are one page.
 *  - Userinfo is dropped, from every URL (links, seeds, redirects; a base's
 *    is not inherited): "http://user:pw@host/a", "http://@host/a" and
 *    "http://::@c@d:2" give "http://host/a" ... "http://d:2/".  A crawler
 *    never sends credentials found in a link, and libcurl turns any
 *    userinfo, even an empty one, into an Authorization header.  So the
 *    authority of a normalized URL is exactly its origin (parser_url_origin).
 *  - An empty query ("http://h/p?") is dropped: libcurl drops it from the
 *    request anyway, so both spellings name one request.
 *  - Hosts (after IDNA) must be letters, digits, '-', '.', '_' or an IP:
 *    the Standard also accepts !$&'()*+,;=`{}~ in a host, which libcurl
 *    refuses to request and DNS names cannot hold.  Non-ASCII hosts go
 *    through libidn2, stricter than UTS #46 in the Standard's settings in
 *    places (its hyphen and DNS length checks); ASCII hosts never do,
 *    except "xn--" labels, which it checks.
 *  - Bytes that are not UTF-8 are escaped one by one (the Standard would
 *    first decode them to U+FFFD); and the query is always encoded as
 *    UTF-8 (a browser uses the page's encoding for the query of a link on
 *    a non-UTF-8 page: only such links with non-ASCII queries differ).
 *  - The visited-set key decodes escapes of unreserved characters and
 *    uppercases the others (parser_url_key), which a browser never does to
 *    the URL it requests.
 * Returns 0 and *out, a new string (caller frees with free()), or
 * CRAWL_ESCHEME (not http/https, in REF or BASE), CRAWL_ETOOLONG (result,
 * or REF itself beyond 4 * max_len, longer than max_len), CRAWL_EBADURL
 * (the Standard's failures, relative without BASE, bad BASE), CRAWL_ENOMEM,
 * CRAWL_EINVAL (REF or out NULL); *out is NULL on failure.
 * max_len == 0 means PARSER_DEFAULT_MAX_URL_LENGTH.  Idempotent.
 * Thread-safe.  One pass, no libcurl; the HTML parser resolves links
 * against a base parsed once per page. */
int parser_url_normalize(const char *base, const char *ref, size_t max_len, char **out);

/* The visited-set key of a normalized URL (parser_url_normalize's output):
 * the URL with, after its authority, escapes of unreserved characters
 * (ALPHA DIGIT -._~) decoded, the hex of other escapes uppercased and a
 * '%' that starts no escape written "%25", so "/%7Euser?a=%41" and
 * "/~user?a=A" (one resource, RFC 3986 6.2.2) have one key, and so do
 * "/100%-cotton" and "/100%25-cotton".  Returns 0 and *out (caller frees with free()),
 * CRAWL_EBADURL (no "scheme://authority/"), CRAWL_ENOMEM or CRAWL_EINVAL.  Idempotent; thread-safe.
 */
int parser_url_key(const char *url, char **out);

/* The value of hex digit c (either case) in a percent-escape, or -1 when c
 * is not one.  Pure; thread-safe. */
int parser_hex_digit(unsigned char c);

/* Origin ("http://example.com:8080") and host ("example.com", "[::1]") of
 * url, written into buf with a NUL.  THE one definition of origin in the
 * project: "scheme://host[:port]" of parser_url_normalize(NULL, url) -- so
 * lowercase, IDN as punycode, the port only when not the default, never
 * userinfo -- which for a normalized URL is the part before the path.  The
 * host is the host part of that origin.  Cost: a scan without allocation for
 * a URL already in normalized form (the common case); otherwise url is
 * normalized first.  Return the length, or CRAWL_ETOOLONG (buf too small),
 * CRAWL_EBADURL or CRAWL_ESCHEME (url does not normalize), CRAWL_ENOMEM,
 * CRAWL_EINVAL (NULL argument).  Thread-safe. */
int parser_url_origin(const char *url, char *buf, size_t buflen);
int parser_url_host(const char *url, char *buf, size_t buflen);

/* What kind of element a link came from. */
typedef enum parser_link_kind {
    PARSER_LINK_A,       /* a[href], area[href] */
    PARSER_LINK_LINK,    /* link[href] whose rel names a hyperlink (alternate, next, prev, ...) */
    PARSER_LINK_FRAME,   /* frame[src], iframe[src] */
    PARSER_LINK_REFRESH, /* meta http-equiv=refresh */
    /* a flag or'ed into the kind, with give_nofollow only: a link the page
     * says not to follow (rel=nofollow, or any once the page is nofollow) */
    PARSER_LINK_NOFOLLOW = 0x100,
} parser_link_kind_t;

/* Called once per extracted link, in document order, url normalized and
 * absolute (NUL-terminated, len = strlen), valid only during the call.
 * Not called for: links whose ref is empty or only a fragment (the page
 * itself), rel=canonical (see parser_canonical), links after a
 * meta robots nofollow, rel=nofollow (unless follow_nofollow), a <link>
 * whose rel names no hyperlink (none without rel; never stylesheet, icon,
 * preload, prefetch, prerender, preconnect, dns-prefetch, modulepreload,
 * manifest, pingback, search, ...), dropped URLs (counted in
 * parser_stats_t). */
typedef void (*parser_link_fn)(void *ud, const char *url, size_t len, parser_link_kind_t kind);

/* A text sink: an optional second consumer of the page, fed its elements
 * and its character data (what the text/ module's extractor needs:
 * text_parser_sink() fills one).  With a sink the parser reads the page
 * itself, without libxml2, and takes the links from that reading too (one
 * pass for both: a parse with text costs about what one without does).
 * The links are those of a parse without a sink but where the two
 * readings differ: links inside textarea, or after a script whose end tag
 * is broken, are not reported (browsers read them as text); undeclared
 * non-UTF-8 bytes are windows-1252, not latin-1; pages whose encoding
 * stops libxml2 still give their links.  The reading: a tokenizer after
 * the HTML Standard's (comments, DOCTYPE and the content of script, style
 * and textarea are never given; the text of title and xmp is given without
 * markup, and a title that meets a tag ends there), elements balanced as a
 * browser nests them (implied ends of p, li, dd/dt, table parts, headings,
 * a; a stray end tag that closes nothing in scope is ignored; void
 * elements and "<x/>" end at once), text decoded to UTF-8 from the page's
 * charset (the Content-Type's, else a UTF-8 BOM, else <meta charset>, else
 * UTF-8 if the first non-ASCII bytes are UTF-8, else windows-1252; other
 * charsets through iconv; bytes that do not decode become U+FFFD; NUL is
 * dropped) with character references decoded (numeric, and HTML 4's names
 * and &apos;).  Each callback may be NULL.  name: the element name,
 * lowercase, at most 31 bytes (elements with longer names are dropped,
 * start and end); atts: NULL or name/value pairs ending with NULL, names
 * lowercase, a value NULL for a bare attribute, at most 32 pairs (the
 * attributes of a tag longer than 32 KiB that lie past that are dropped);
 * s: len bytes of UTF-8, not NUL-terminated, never cut inside a character;
 * all valid only during the call.  start/end come balanced (what is left
 * open ends at parser_finish); elements nested deeper than
 * PARSER_SINK_MAX_DEPTH are dropped (their text still comes, inside the
 * deepest open element).  Text comes in pieces of at most 4 KiB, or as a
 * text run is written. */
typedef struct parser_sink {
    void (*start)(void *ud, const char *name, const char *const *atts);
    void (*end)(void *ud, const char *name);
    void (*text)(void *ud, const char *s, size_t len);
    void *ud; /* first argument of each callback */
    /* NULL: every attribute is given; else the NULL-terminated list of the
     * (lowercase) attribute names start wants, the others are skipped
     * unread (decoding every value costs); the list must outlive the
     * parser.  The reader reads <meta charset> whatever the list. */
    const char *const *want;
} parser_sink_t;

#define PARSER_SINK_MAX_DEPTH 256 /* open elements the sink's reader holds */

typedef struct parser_config {
    size_t max_url_length; /* bytes; 0: PARSER_DEFAULT_MAX_URL_LENGTH */
    int follow_nofollow;   /* 1: also report rel=nofollow links */
    /* 1: also give the links not reported for nofollow (above) to the
     * callback, their kind or'ed with PARSER_LINK_NOFOLLOW (a record of a
     * page's links: --links); they still count in dropped_nofollow */
    int give_nofollow;
    /* NULL: no sink, libxml2 parses the markup only (text is skipped, as
     * it costs most of a parse).  Otherwise the struct is copied by
     * parser_new and the page is read by the parser's own reader, for the
     * sink and the links (see parser_sink_t). */
    const parser_sink_t *sink;
} parser_config_t;

/* Counters of one page. */
typedef struct parser_stats {
    uint64_t links;            /* reported to the callback */
    uint64_t dropped_scheme;   /* javascript:, mailto:, data:, tel:, ... */
    uint64_t dropped_long;     /* longer than max_url_length */
    uint64_t dropped_bad;      /* unparsable, or relative without a page URL */
    uint64_t dropped_nofollow; /* rel=nofollow, or any link once the page is nofollow */
    uint64_t bytes;            /* fed */
    uint64_t capped;           /* tag bytes not parsed: beyond the caps that keep memory
                                  bounded (256 KB per tag; per quoted attribute value
                                  4 * max_url_length + 1 KB, at least 64 KB) */
} parser_stats_t;

typedef struct parser parser_t;

/* True if a Content-Type header value names a type we parse
 * (text/html, application/xhtml+xml).  NULL -> false. */
int parser_is_html(const char *content_type);

/* A new page parser.  page_url: the URL of the page (normalized again
 * here), the base for relative links until the first <base href>; NULL or
 * unparsable: relative links are counted in dropped_bad.  content_type: the
 * HTTP header value or NULL; its charset, if any, wins over <meta charset>
 * (windows-1252 is decoded as browsers do).  With no charset in either,
 * the page is UTF-8 when its first non-ASCII bytes are valid UTF-8 (what
 * browsers default to for such bytes); otherwise libxml2 reads it as
 * latin-1 (browsers: windows-1252, which differs in 0x80-0x9F; the HTML
 * Standard's fuller sniffing is not done).  x_robots_tag: header value or
 * NULL ("nofollow" or "none" in it: no links).  cfg may be NULL (defaults).
 * Strings are copied.  NULL on out-of-memory.  Not thread-safe: one per
 * transfer; several parsers may run in different threads at once. */
parser_t *parser_new(const parser_config_t *cfg, const char *page_url, const char *content_type,
                     const char *x_robots_tag, parser_link_fn fn, void *ud);
/* Feeds the next chunk of the body (any size, any split).  Memory stays
 * bounded whatever the total: libxml2 is given markup only (text, comments
 * and script/style bodies are skipped) with every tag capped, and never
 * holds more than one pending tag; with a sink, the reader holds one tag
 * of at most 32 KiB (an attribute cut by that cap is dropped, never given
 * shortened; the bytes past it count in capped) and PARSER_SINK_MAX_DEPTH
 * open elements.  libxml2 prints
 * nothing.  Returns 0, CRAWL_ENOMEM, or CRAWL_EINVAL (NULL parser, or
 * after parser_finish). */
int parser_feed(parser_t *p, const char *data, size_t len);
/* Ends the document (flushes pending callbacks).  Returns 0, CRAWL_ENOMEM,
 * or CRAWL_EINVAL if already finished. */
int parser_finish(parser_t *p);
/* After parser_finish(): page-level results.  parser_nofollow() is the
 * page's final word: links before a late <meta name=robots> were already
 * reported (streaming), so a caller that batches links per page drops the
 * batch when it is true.  canonical: the first link rel=canonical,
 * normalized, or NULL; valid until parser_free().  Stats: valid until
 * parser_free().  parser_free accepts NULL. */
int parser_nofollow(const parser_t *p);
const char *parser_canonical(const parser_t *p);
const parser_stats_t *parser_get_stats(const parser_t *p);
void parser_free(parser_t *p);

#endif
