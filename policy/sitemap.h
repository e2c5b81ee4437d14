/*
 * sitemap.h -- <loc> URLs of an XML sitemap or sitemap index, streamed
 * (libxml2 SAX push parser, no tree, no network, no external entities).
 * Used with `crawl --sitemaps`: the Sitemap: URLs of robots.txt are seeded,
 * and the <loc> URLs of a fetched sitemap are offered like links.
 */
#ifndef SITEMAP_H
#define SITEMAP_H

#include <stddef.h>

#define SITEMAP_MAX_LOC 4096 /* longer <loc> values are dropped */
#define SITEMAP_PRIORITY                                                                           \
    0.5 /* the protocol's default <priority>: a URL above it goes                                  \
           ahead of its host's queue */

/* Called per <loc> value (whitespace trimmed, entities decoded, not yet
 * normalized; url is valid only during the call), with the <priority> of
 * its <url> (0..1), or -1 when it has none (or is a sitemap index's). */
typedef void (*sitemap_fn)(void *ud, const char *url, size_t len, double priority);

typedef struct sitemap sitemap_t;

/* 1 if a Content-Type value is XML (text/xml, application/xml, *+xml but not
 * XHTML), else 0. */
int sitemap_is_xml(const char *content_type);
/* NULL on out of memory.  Not thread-safe: one per transfer. */
sitemap_t *sitemap_new(sitemap_fn fn, void *ud);
/* Feeds a chunk; 0, or -1 once the document is not well-formed (later
 * chunks are ignored; what was found is kept). */
int sitemap_feed(sitemap_t *s, const char *data, size_t len);
int sitemap_finish(sitemap_t *s);
void sitemap_free(sitemap_t *s);

#endif
