/*
 * textrec.h -- the --text file's records: one JSON line per HTML page with
 * a 2xx status, written through a JSON-lines writer (jsonl.h: buffering,
 * rotation, failures as for --out):
 *
 *   {"url":"…","title":"…","lang":"en","text":"…","simhash":"9f3a…",
 *    "timestamp":"2026-11-30T00:01:02.345Z"}
 *
 *   url        string   the page's URL (as fetched, normalized)
 *   title      string   its <title> (else og:title, else its first <h1>); "" if none
 *   lang       string   <html lang> (else xml:lang, content-language, og:locale); "" if none
 *   text       string   the main content (--text-all: all visible text), paragraphs
 *                       separated by a blank line; with --text-format markdown, Markdown
 *   simhash    string   the SimHash of text, 16 hex digits (crawler near-dups)
 *   timestamp  string   when the page finished, RFC 3339 UTC, milliseconds
 *
 * Strings are made valid UTF-8 and escaped as in jsonl.h.  Thread-safe as
 * the writer is.
 */
#ifndef CRAWLER_TEXTREC_H
#define CRAWLER_TEXTREC_H

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"

typedef struct textrec {
    const char *url, *title, *lang; /* borrowed; NULL written as "" */
    const char *text;               /* len bytes */
    size_t len;
    uint64_t simhash;
    int64_t timestamp_ms; /* 0: now */
} textrec_t;

/* Formats r as one line into buf (cap bytes): the line's length, which is
 * more than cap when it did not fit (then format again with a buffer of
 * that size + 1).  Pure, thread-safe. */
size_t textrec_format(char *buf, size_t cap, const textrec_t *r);
/* Appends r's line to o: 0, CRAWL_EINVAL, CRAWL_ENOMEM or CRAWL_EWRITE. */
int textrec_write(out_t *o, const textrec_t *r);

#endif
