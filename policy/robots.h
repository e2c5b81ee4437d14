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
 * Beyond RFC 9309: where we read a file as Google's parser (and Google's
 * robots.txt documentation) does, because sites test their files against
 * Googlebot:
 *   1. Directive names are matched by their start: "Disallowed:" is a
 *      disallow line, "Sitemaps:" a sitemap line (Crawl-delay, not Google's,
 *      is matched whole).
 *   2. Misspellings: "useragent" and "user agent" (one blank) for
 *      user-agent; "dissallow", "dissalow", "disalow", "diasllow",
 *      "disallaw" for disallow; "site-map" for sitemap.
 *   3. A missing colon: "Disallow /x" (exactly two words) is "Disallow: /x".
 *   4. A UTF-8 byte-order mark at the start is skipped, and so is a partial
 *      one ("\xEF" or "\xEF\xBB"); elsewhere its bytes are text.
 *   5. A line is read up to ROBOTS_MAX_LINE octets (Google: 8 x 2083 - 1);
 *      the rest of it is ignored (a cut pattern matches as a prefix).
 *   6. "Allow: /dir/index.htm..." (last segment starting "index.htm") also
 *      allows "/dir/" itself, as if "Allow: /dir/$" were written on the same
 *      line.
 *   7. The user-agent value is read up to its product token ("Foo Bar" and
 *      "Foo/1.2" name Foo); a group naming our token, however many, is merged.
 *   8. Line numbers (robots_explain()) count CR, LF and CRLF as one end each.
 * Where we read a file differently from Google's parser, on purpose:
 *   a. %XX of an unreserved character is decoded in patterns and paths
 *      ("/%62" matches "/b"), as RFC 9309 2.2.2 says; Google compares as
 *      written.
 *   b. A pattern starting with neither '/' nor '*' gets a leading '/'
 *      ("Disallow: private" is "/private"); Google's never matches.
 *   c. A colon splits a line only after a key ("Disallow /a:b" is the rule
 *      "/a:b", "Sitemap http://x/s.xml" the sitemap); Google splits at the
 *      first colon anywhere.
 *   d. A NUL byte ends the text before it, and what follows is read as more
 *      text of the same line; Google ignores the rest of that line.
 *   e. Only the first ROBOTS_MAX_BYTES are read (Google's documentation
 *      says so too; its open-source parser reads everything).
 *   f. Crawl-delay is honoured (Google ignores it).
 *   g. Octets >= 0x80, controls, space and a stray '%' are percent-encoded
 *      in patterns and paths alike; Google encodes only octets >= 0x80, and
 *      only in patterns.  A rule's length (its priority) is that of its
 *      normalized pattern; Google's, of the pattern as written.
 *   h. Crawl-delay is a member line: after it, a user-agent line starts a
 *      new group ("User-agent: a / Crawl-delay: 5 / User-agent: b /
 *      Disallow: /" gives a no rules); Google's parser ignores the line, so
 *      a and b share the Disallow.
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
#define ROBOTS_MAX_LINE 16663u              /* octets of a line read (Google), rest ignored */
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
 * that limit is dropped), and of each line its first ROBOTS_MAX_LINE octets.
 * Lines: '#' comments, case-insensitive keys matched by their start, with
 * Google's misspellings (user-agent, allow, disallow, sitemap; see "Beyond
 * RFC 9309" above), crawl-delay/crawldelay, CR, LF or CRLF ends, a leading
 * UTF-8 BOM or part of one, "key value" without a colon; anything else (NUL
 * bytes end a line's text) is ignored, and so are rule and Crawl-delay lines
 * before any user-agent line.  A pattern starting with neither '/' nor '*' gets a leading '/';
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

/* Why a path is allowed or not (robots_explain()). */
typedef enum {
    ROBOTS_WHY_NO_RULE,    /* no rule matches: allowed */
    ROBOTS_WHY_RULE,       /* the rule in pattern/line decides */
    ROBOTS_WHY_ROBOTS_TXT, /* /robots.txt itself: always allowed */
} robots_why_t;

typedef struct {
    int allowed;         /* what robots_allowed() answers: 1 or 0 */
    robots_why_t why;    /* what decided it */
    int rule_allow;      /* ROBOTS_WHY_RULE: the rule is an Allow (1) or Disallow (0) */
    const char *pattern; /* ROBOTS_WHY_RULE: its normalized pattern, NUL-terminated,
                            owned by r (valid until robots_free); else NULL */
    uint32_t line;       /* ROBOTS_WHY_RULE: its line in the parsed body (1-based; CR, LF
                            and CRLF each end one line); 0 when not known (the rule set
                            came from robots_deserialize() or robots_disallow_all()) */
} robots_verdict_t;

/* Fills *v with the verdict of robots_allowed(r, path_and_query) and the rule
 * that decided it: the longest match, allow winning a tie, and of identical
 * rules the one on the lowest line.  A rule added by "index.htm" (item 6
 * above) has the line of its Allow line.  Returns 0, CRAWL_EINVAL (NULL
 * argument; *v untouched) or CRAWL_ENOMEM (as robots_allowed()'s fail
 * closed; *v untouched).  Thread-safe. */
int robots_explain(const robots_t *r, const char *path_and_query, robots_verdict_t *v);

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
