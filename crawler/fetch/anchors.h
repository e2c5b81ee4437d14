/*
 * anchors.h -- a page's outlinks as --links records them: each link the
 * parser resolved, in document order, with its kind, its anchor text (a and
 * area), its rel attribute, and whether the page's links were offered to
 * the crawl's frontier or why not.
 *
 * Per transfer: anchors_new(), anchors_sink() installs a parser sink that
 * reads the rel and anchor text of each link element (and passes every
 * event on to another sink, the text extractor's, when there is one), then
 * the transfer's link callback calls anchors_link() for every link with its
 * verdict.  The parser calls the link callback for an element's start tag
 * just before the sink's start for it: so the next start, if it is that
 * element, is the link's.  Memory is bounded: at most ANCHORS_MAX_BYTES of
 * links and texts per page (past that, links are only counted:
 * anchors_omitted), anchor text cut at ANCHORS_TEXT_MAX bytes and rel at
 * ANCHORS_REL_MAX.  Not thread-safe: one per transfer.
 */
#ifndef CRAWLER_ANCHORS_H
#define CRAWLER_ANCHORS_H

#include <stddef.h>
#include <stdint.h>

#include "parser.h"

#define ANCHORS_MAX_BYTES (512u * 1024)
#define ANCHORS_TEXT_MAX 256
#define ANCHORS_REL_MAX 128

/* Whether a link was offered to the frontier, or why not. */
typedef enum anchor_verdict {
    ANCHOR_FOLLOWED, /* offered: queued unless the crawl had seen it */
    ANCHOR_REPEAT,   /* the same URL earlier on the page (offered once) */
    ANCHOR_SCOPE,    /* outside the crawl's scope (--scope, domains, include/exclude) */
    ANCHOR_CAP,      /* past --max-links-per-page */
    ANCHOR_NOFOLLOW, /* rel=nofollow, or the page's robots nofollow */
    ANCHOR_DEPTH,    /* the page is at --max-depth: none of its links is offered */
} anchor_verdict_t;

typedef struct anchor {
    const char *url;
    const char *text; /* a/area: the anchor text, whitespace collapsed ("" if none); else NULL */
    const char *rel;  /* the rel attribute as written, or NULL */
    parser_link_kind_t kind;
    anchor_verdict_t verdict;
} anchor_t;

typedef struct anchors anchors_t;

/* NULL on out of memory. */
anchors_t *anchors_new(void);
/* Accepts NULL. */
void anchors_free(anchors_t *a);
/* Fills *out with a sink reading a's anchors and passing everything on to
 * inner (NULL: none; copied).  a must outlive the parser. */
void anchors_sink(anchors_t *a, const parser_sink_t *inner, parser_sink_t *out);
/* One link, as the parser gave it (kind without PARSER_LINK_NOFOLLOW). */
void anchors_link(anchors_t *a, const char *url, size_t len, parser_link_kind_t kind,
                  anchor_verdict_t v);
/* Every link offered becomes `v` (a late meta robots nofollow, or a page
 * at --max-depth). */
void anchors_none_followed(anchors_t *a, anchor_verdict_t v);
/* Ends the last link's anchor text (parser_finish done). */
void anchors_finish(anchors_t *a);

size_t anchors_count(const anchors_t *a);
const anchor_t *anchors_get(const anchors_t *a, size_t i);
/* Links past ANCHORS_MAX_BYTES, counted only. */
uint64_t anchors_omitted(const anchors_t *a);
/* "a", "link", "frame", "refresh"; verdict: NULL (followed), "repeat", ... */
const char *anchors_kind_name(parser_link_kind_t k);
const char *anchors_verdict_name(anchor_verdict_t v);

#endif
