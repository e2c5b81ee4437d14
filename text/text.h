/*
 * text.h -- main-content text of a web page, extracted while the page is
 * parsed (one streaming pass, no tree, memory bounded per page), its title
 * and language, a 64-bit SimHash of the text, and the grouping of many
 * pages' SimHashes into near-duplicate groups.
 *
 * Per page: text_new() with the page's URL, text_parser_sink() into the
 * parser's config (parser.h: parser_config_t.sink) so that the parser feeds
 * it as the body arrives, parser_finish(), then text_finish(), then ask
 * text_title(), text_lang(), text_body() and text_simhash().  The
 * algorithm is described in text/README.md and in extract.c / select.c.
 *
 * Errors: functions that can fail return 0 or a negative CRAWL_E* code
 * (errors.h); crawl_strerror() gives the text.
 */
#ifndef TEXT_H
#define TEXT_H

#include "errors.h"
#include "parser.h"

#include <stddef.h>
#include <stdint.h>

/* What text_body() holds. */
typedef enum text_mode {
    TEXT_MAIN,     /* the main content as plain text, paragraphs separated by a blank line */
    TEXT_MARKDOWN, /* the main content as Markdown: headings, lists, emphasis, code, links */
    TEXT_ALL,      /* all visible text of the page (no selection), plain, as TEXT_MAIN */
} text_mode_t;

#define TEXT_DEFAULT_MAX_TEXT (512u * 1024) /* bytes of page text kept per page */
#define TEXT_MIN_MAX_TEXT (4u * 1024)       /* smallest max_text accepted */
#define TEXT_MAX_TITLE 1024                 /* bytes of title kept */
#define TEXT_MAX_LANG 32                    /* bytes of language tag kept */
#define TEXT_DEFAULT_DUP_DISTANCE 3         /* Hamming distance of near-duplicates */
#define TEXT_MAX_DUP_DISTANCE 15            /* largest distance text_dup_groups takes */

typedef struct text_config {
    text_mode_t mode;
    /* bytes: the hard cap on the page text the extractor keeps (visible
     * text after whitespace is collapsed, Markdown marks included); text
     * past it is counted in text_stats_t.dropped, not kept, so a page's
     * main text is taken from its first max_text bytes of text.  Memory of
     * one extractor stays below about 4 * max_text + 40 KiB whatever the
     * page's size (text/README.md).  0: TEXT_DEFAULT_MAX_TEXT; less than
     * TEXT_MIN_MAX_TEXT is raised to it. */
    size_t max_text;
} text_config_t;

typedef struct text_stats {
    uint64_t chars;   /* characters of text kept (all of the page's visible text) */
    uint64_t dropped; /* bytes of visible text past max_text (not kept) */
    uint64_t blocks;  /* text blocks (paragraphs, items, cells, ...) kept */
    uint64_t chosen;  /* of which in the output */
} text_stats_t;

typedef struct text text_t;

/* A new extractor for one page.  cfg may be NULL (TEXT_MAIN, defaults);
 * url: the page's URL, copied (the base of links in Markdown, and what
 * text_url() returns); may be NULL.  NULL on out-of-memory.  Not
 * thread-safe: one per page; extractors in different threads are
 * independent. */
text_t *text_new(const text_config_t *cfg, const char *url);
/* Accepts NULL. */
void text_free(text_t *t);

/* Fills *sink with callbacks that feed t (parser.h), to be set as
 * parser_config_t.sink before parser_new(); t must outlive that parser's
 * last parser_feed/parser_finish. */
void text_parser_sink(text_t *t, parser_sink_t *sink);

/* The three events the sink delivers, for a caller with its own parser:
 * an element starts (name lowercase; atts NULL or name/value pairs ending
 * with NULL), ends, or character data (UTF-8, len bytes).  Events after
 * text_finish() are ignored.  Out-of-memory is remembered and returned by
 * text_finish(). */
void text_start(text_t *t, const char *name, const char *const *atts);
void text_end(text_t *t, const char *name);
void text_chars(text_t *t, const char *s, size_t len);

/* Ends the page: chooses the main content (or all text) and renders it.
 * Returns 0, CRAWL_ENOMEM (then the results below
 * are empty strings and 0), or CRAWL_EINVAL (NULL, or called twice). */
int text_finish(text_t *t);

/* After text_finish(), valid until text_free(); never NULL (an empty
 * string when missing):
 *  text_url    the URL given to text_new ("" for NULL)
 *  text_title  the page's <title> (else og:title, else its first <h1>),
 *              whitespace collapsed, at most TEXT_MAX_TITLE bytes
 *  text_lang   <html lang> (else xml:lang, else meta content-language,
 *              else og:locale), as written, at most TEXT_MAX_LANG bytes
 *  text_body   the text of the configured mode, NUL-terminated; *len (if
 *              len is not NULL) its length in bytes */
const char *text_url(const text_t *t);
const char *text_title(const text_t *t);
const char *text_lang(const text_t *t);
const char *text_body(const text_t *t, size_t *len);
/* The SimHash of text_body() (text_simhash_of), 0 before text_finish.
 * Computed at the first call (a caller that groups no pages pays
 * nothing for it), so the first call on a page is not thread-safe with
 * other calls on the same page; later ones only read. */
uint64_t text_simhash(const text_t *t);
/* Counters of the page; valid until text_free(). */
const text_stats_t *text_get_stats(const text_t *t);

/* 64-bit SimHash of UTF-8 text: its words (runs of ASCII letters and
 * digits and of non-ASCII bytes, ASCII lowercased) taken two at a time
 * (word shingles, hashed with a 64-bit mixer), each shingle voting on the 64
 * bits.  Texts that differ in a few words differ in a few bits -- fewer
 * the longer the text (simhash.c has figures) --, unrelated texts in about
 * 32.  One word: the word is the feature; no word at all: 0.  Pure,
 * thread-safe. */
uint64_t text_simhash_of(const char *s, size_t len);

/* Number of differing bits of a and b. */
int text_hamming(uint64_t a, uint64_t b);

/* Groups n records by their SimHashes: hash[i] is record i's.  Two records
 * whose SimHashes differ in at most max_dist bits are in one group, and
 * groups are closed under that relation (single linkage: a chain of
 * near-copies is one group).  Writes group[i] = the smallest index of
 * record i's group (so group[i] == i for the first record of each group
 * and every record alone).  Cost: near-linear -- exact duplicates are
 * merged after one sort, then the 64 bits are cut into max_dist + 1 bands
 * (two SimHashes within max_dist agree on at least one band) and only
 * records that share a band's value are compared: O(n log n) sorting plus
 * the pairs in shared buckets, about n * n / 2^(64 / (max_dist + 1)) for
 * unrelated pages.  Returns 0, CRAWL_EINVAL (NULL with n > 0, max_dist >
 * TEXT_MAX_DUP_DISTANCE) or CRAWL_ENOMEM (group unchanged then).  Memory:
 * about 24 bytes a record.  Thread-safe (no shared state). */
int text_dup_groups(const uint64_t *hash, size_t n, unsigned max_dist, size_t *group);

#endif
