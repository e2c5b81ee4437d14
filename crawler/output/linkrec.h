/*
 * linkrec.h -- the --links file's records: one JSON line per HTML page with
 * a 2xx status, its outlinks in document order, written through a
 * JSON-lines writer (jsonl.h: buffering, rotation, failures as for --out):
 *
 *   {"url":"…","links":[{"url":"…","kind":"a","text":"…","rel":null,
 *    "followed":true,"why":null},…],"omitted":0,"timestamp":"…"}
 *
 *   url        string   the page's URL (as fetched, normalized)
 *   links      array    every link the page gave, resolved and normalized:
 *     url      string   the link's URL
 *     kind     string   a (a and area), link (link rel=next, alternate, ...),
 *                       frame (frame, iframe), refresh (meta refresh)
 *     text     string   a and area: the anchor text, whitespace collapsed,
 *                       at most 256 bytes; null for the other kinds
 *     rel      string   the rel attribute as written, or null
 *     followed bool     offered to the crawl's frontier (queued unless the
 *                       crawl had seen it: that is decided after this line)
 *     why      string   when not followed: repeat (the same URL earlier on
 *                       the page), scope, cap (--max-links-per-page),
 *                       nofollow, depth (--max-depth); else null
 *   omitted    int      links past the record's cap (512 KiB a page), not listed
 *   timestamp  string   when the page finished, RFC 3339 UTC, milliseconds
 *
 * Thread-safe as the writer is.
 */
#ifndef CRAWLER_LINKREC_H
#define CRAWLER_LINKREC_H

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"

typedef struct linkrec_link {
    const char *url, *kind, *text, *rel; /* borrowed; text and rel may be NULL */
    const char *why;                     /* NULL: followed */
} linkrec_link_t;

typedef struct linkrec {
    const char *url; /* the page's */
    const linkrec_link_t *links;
    size_t n;
    uint64_t omitted;
    int64_t timestamp_ms; /* 0: now */
} linkrec_t;

/* Formats r as one line into buf (cap bytes): the line's length, which is
 * more than cap when it did not fit.  Pure, thread-safe. */
size_t linkrec_format(char *buf, size_t cap, const linkrec_t *r);
/* Appends r's line to o: 0, CRAWL_EINVAL, CRAWL_ENOMEM or CRAWL_EWRITE. */
int linkrec_write(out_t *o, const linkrec_t *r);

#endif
