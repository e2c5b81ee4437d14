/*
 * robots.h -- robots.txt per RFC 9309: parse once, then answer "may this
 * path be fetched?" for every URL of the host.  Pure: no I/O, no Redis.
 *
 * The engine fetches /robots.txt itself and calls robots_parse() on a 2xx
 * body, robots_allow_all() on 4xx (or no file), robots_disallow_all() on 5xx
 * or an unreachable host.  The result is shared through Redis with
 * robots_serialize()/robots_deserialize().
 *
 * What is kept: only the group that applies to the crawler's user agent
 * (chosen at parse time), its allow/disallow rules in percent-encoding
 * normalized form, its Crawl-delay, and every Sitemap: URL of the file.
 *
 * Thread-safety: a robots_t never changes after construction.  Every const
 * function may be called concurrently on one handle from any number of
 * threads; robots_free() must not race with them.  Constructors are
 * thread-safe (no global state).
 *
 * Errors: constructors return NULL and store a negative CRAWL_E* code in
 * *err (if err is not NULL); crawl_strerror() turns it into text.  The body
 * and serialized buffers are treated as hostile: bad input never crashes,
 * never asserts, and memory stays bounded (see the limits below).
 */
#ifndef ROBOTS_H
#define ROBOTS_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

#define ROBOTS_MAX_BYTES (500u * 1024u)     /* body bytes parsed (RFC 9309 2.5) */
#define ROBOTS_MAX_RULES 10000u             /* rules kept per group, extra ignored */
#define ROBOTS_MAX_SITEMAPS 1000u           /* Sitemap: URLs kept, extra ignored */
#define ROBOTS_MAX_SITEMAP_LEN 2048u        /* longer Sitemap: URLs are ignored */
#define ROBOTS_MAX_CRAWL_DELAY_MS 86400000u /* Crawl-delay is clamped to 1 day */
#define ROBOTS_FORMAT_VERSION 1             /* serialized format version */

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL     bad argument (NULL body with len > 0, no product token)
 *   CRAWL_ENOMEM     out of memory
 *   CRAWL_ECORRUPT   serialized data truncated, damaged or not ours
 *   CRAWL_EVERSION   serialized data of an unknown format version */

typedef struct robots robots_t;

/* Parses a robots.txt body for the crawler whose User-Agent header is
 * user_agent (e.g. "MyCrawler/1.0 (+http://x)").  Its product token (the
 * leading run of letters, '_' and '-': "mycrawler") selects the group,
 * case-insensitively, against the same token of each user-agent line
 * ("User-agent: MyCrawler/2" matches).  All groups naming the token are
 * merged; without one, all "*" groups are merged; with neither, everything is
 * allowed.  Only the first ROBOTS_MAX_BYTES of body are read (a line cut by
 * that limit is dropped).  Lines: '#' comments, case-insensitive keys
 * (user-agent/useragent, allow, disallow/dissallow/disalow, crawl-delay/
 * crawldelay, sitemap/site-map), CR, LF or CRLF ends, a leading UTF-8 BOM,
 * "key value" without a colon; anything else (NUL bytes end a line) is
 * ignored, and so are rule and Crawl-delay lines before any user-agent
 * line.  A pattern starting with neither '/' nor '*' gets a leading '/';
 * '$' anchors only at the end of a pattern.  body need not be NUL-terminated and is not kept;
 * user_agent is not kept.  body may be NULL when len is 0 (an empty file: allow all). Returns NULL
 * with CRAWL_EINVAL (user_agent NULL or without a product token) or CRAWL_ENOMEM. */
robots_t *robots_parse(const char *body, size_t len, const char *user_agent, int *err);

/* A robots_t that allows everything (robots.txt answered 4xx or is absent).
 * Returns NULL only when out of memory. */
robots_t *robots_allow_all(void);

/* A robots_t that disallows everything but /robots.txt (5xx or unreachable:
 * RFC 9309 2.3.1.3, "complete disallow" until a later fetch succeeds).
 * Returns NULL only when out of memory. */
robots_t *robots_disallow_all(void);

/* Frees r.  Accepts NULL. */
void robots_free(robots_t *r);

/* 1 if the crawler may fetch path_and_query ("/a/b?x=1", everything after
 * the authority; a '#' fragment is ignored; "" means "/" and "?q" means
 * "/?q"), 0 if not.
 * Longest matching pattern wins (length in octets of the normalized
 * pattern, '*' and '$' included), allow wins a tie; no match allows.
 * Patterns and path are compared after the same normalization: %XX of an
 * unreserved character (A-Z a-z 0-9 - . _ ~) is decoded, other %xx get
 * uppercase hex, octets >= 0x80, controls, space and a stray '%' are
 * percent-encoded; reserved characters are not touched ("%2F" != "/").
 * "/robots.txt" (with any query) is always allowed.
 * Cost: one pass over the path (plus a copy if it needs normalization),
 * then rules are tried in priority order until the first match.  With 16
 * rules or more an index narrows that to the rules whose literal prefix
 * (the part before the first '*') could match this path, plus every rule
 * whose literal prefix is shorter than 2 octets (a '*' right after the
 * leading '/', or a leading '*'); each try is a prefix compare and, for a
 * wildcard rule, one linear substring search per '*' segment (no
 * backtracking).  Returns 0 for r == NULL or path_and_query == NULL, and
 * when a path of 1365 octets or more needs normalization and memory runs out
 * (fail closed).  Thread-safe (no shared mutable state). */
int robots_allowed(const robots_t *r, const char *path_and_query);

/* Crawl-delay of the chosen group in milliseconds (fractional seconds
 * honoured to 1 ms, clamped to ROBOTS_MAX_CRAWL_DELAY_MS, the largest when
 * several are given); 0 when absent.  Thread-safe. */
uint32_t robots_crawl_delay_ms(const robots_t *r);

/* Number of Sitemap: URLs (absolute http/https, file order, duplicates
 * removed, at most ROBOTS_MAX_SITEMAPS).  Thread-safe. */
size_t robots_sitemap_count(const robots_t *r);

/* The i-th Sitemap: URL, NUL-terminated, owned by r (valid until
 * robots_free); NULL if i is out of range.  Thread-safe. */
const char *robots_sitemap(const robots_t *r, size_t i);

/* Number of allow/disallow rules kept (after merging and removing exact
 * duplicates).  For diagnostics and tests.  Thread-safe. */
size_t robots_rule_count(const robots_t *r);

/* Serializes r into a new buffer *out of *len bytes (binary, not
 * NUL-terminated; caller frees with free()).  Format version
 * ROBOTS_FORMAT_VERSION, checksummed; identical rules give identical bytes.
 * Returns 0, CRAWL_EINVAL (NULL argument) or CRAWL_ENOMEM (*out and *len
 * untouched on failure).  Thread-safe. */
int robots_serialize(const robots_t *r, char **out, size_t *len);

/* Rebuilds a robots_t from robots_serialize() output; buf is not kept.
 * robots_serialize() of the result gives back exactly buf.  Returns NULL with
 * CRAWL_ECORRUPT (truncated, damaged, trailing bytes, limits exceeded),
 * CRAWL_EVERSION, CRAWL_EINVAL (buf NULL) or CRAWL_ENOMEM. */
robots_t *robots_deserialize(const char *buf, size_t len, int *err);

#endif
