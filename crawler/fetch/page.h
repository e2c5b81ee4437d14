/*
 * page.h -- one attempt at a leased URL, as a value handed between the
 * worker's parts: the transfers (fetch.c) fill it, the engine routes it, the
 * finisher (finisher.c) sends it to the frontier and writes its records.
 *
 * A page_t owns every pointer in it (item strings, strings, links and the
 * links array); whoever holds it last frees it with page_clear().  Handing
 * it on is a struct copy followed by zeroing the source.
 */
#ifndef CRAWLER_PAGE_H
#define CRAWLER_PAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "anchors.h"
#include "text.h"

typedef struct page {
    frontier_item_t item; /* the leased URL */
    int status;           /* final HTTP status, 0: no response */
    char *ctype;          /* Content-Type as sent, NULL: none */
    char *error_kind;     /* NULL: no error; else "timeout", "robots", ... */
    char *error_text;     /* NULL: none */
    char *canonical;      /* <link rel=canonical>, NULL: none */
    char *location;       /* Location of a 3xx response, NULL: none */
    char *etag;           /* the response's ETag, NULL: none */
    char *last_modified;  /* the response's Last-Modified, NULL: none */
    uint64_t bytes;       /* body bytes received */
    uint64_t fetch_ms;    /* duration of the transfer, milliseconds */
    char ip[46];          /* the address the request went to, "" if none */
    int unfetched;        /* a retry for which no request was made (its robots.txt is
                             unavailable): its host is not backed off */
    char **links;         /* normalized, in scope, de-duplicated within the page */
    size_t nlinks;
    unsigned char *link_first; /* [nlinks] or NULL: 1 for a link of high priority (a
                                  sitemap's <priority> above the default), queued first */
    /* more such links, not followed: past --max-links-per-page */
    uint32_t links_over_cap;
    uint32_t link_depth; /* depth of the links: item depth + 1 (redirect targets too) */
    uint32_t link_hops;  /* the links' hop count: item hops + 1 for a redirect target, else 0 */
    text_t *text;        /* --text: the page's text, finished (an HTML page with 2xx), or NULL */
    anchors_t *anchors;  /* --links: the page's outlinks (an HTML page with 2xx), or NULL */
    /* --dedup: the payload digest ("sha1:BASE32", "" if not tested), and the
     * URL that had it first when this page is its duplicate (else NULL) */
    char digest[40];
    char *dup_of;
    int64_t dup_time_ms; /* dup_of's fetch time, Unix ms */
} page_t;

/* The raw HTTP exchange of a page, for a WARC record.  Borrowed pointers
 * (see where it is handed out for how long they stay valid). */
typedef struct page_exchange {
    const char *request; /* request head as sent, NULL: not recorded */
    size_t request_len;
    const char *response_head; /* head of the last response */
    size_t response_head_len;
    const char *body; /* the body as received (content coding kept: --warc's transfers
                         decode themselves), or after content decoding: decoded */
    size_t body_len;
    int decoded;     /* 1: body is content-decoded (its Content-Encoding undone) */
    const char *ip;  /* peer address, NULL: unknown */
    int truncated;   /* body cut (at --max-size, decoded or as received) */
    int64_t time_ms; /* Unix epoch ms when the request was sent */
} page_exchange_t;

/* Makes p the page of *item (taken over: *item is zeroed), with status and
 * an error (kind and text copied; NULL or "" text: none).  A string that
 * cannot be copied for lack of memory is left NULL. */
static inline void page_init(page_t *p, frontier_item_t *item, int status, const char *error_kind,
                             const char *error_text)
{
    memset(p, 0, sizeof *p);
    p->item = *item;
    memset(item, 0, sizeof *item);
    p->status = status;
    p->error_kind = error_kind ? strdup(error_kind) : NULL;
    p->error_text = error_text && *error_text ? strdup(error_text) : NULL;
    p->link_depth = p->item.depth + 1;
}

/* Frees what p owns and zeroes it.  Accepts a zeroed page. */
static inline void page_clear(page_t *p)
{
    frontier_item_clear(&p->item);
    for (size_t i = 0; i < p->nlinks; i++)
        free(p->links[i]);
    free(p->links);
    free(p->link_first);
    free(p->ctype);
    free(p->error_kind);
    free(p->error_text);
    free(p->canonical);
    free(p->location);
    free(p->etag);
    free(p->last_modified);
    text_free(p->text);
    anchors_free(p->anchors);
    free(p->dup_of);
    memset(p, 0, sizeof *p);
}

#endif
