/*
 * sitemap.c -- streaming <loc> extraction with libxml2's SAX2 push parser.
 *
 * DESIGN: only three callbacks: element start/end (namespace-agnostic local
 * names "url", "loc", "priority") and characters, which are gathered into a
 * fixed buffer of SITEMAP_MAX_LOC bytes while inside <loc> (and a small one
 * inside <priority>).  The <loc> child of a <url> is given at </url>, with
 * the <priority> child of that <url> (which the protocol puts after it), or
 * at the end of the document if it is cut short; any other <loc> (a sitemap
 * index's, an <image:loc> inside a <url>) at once, without a priority.  Options: XML_PARSE_NONET,
 * no entity substitution (no XXE), no DTD loading, errors silenced; memory is bounded by libxml2's
 * own limits (no XML_PARSE_HUGE).
 */
#include "sitemap.h"

#include <ctype.h>
#include <libxml/parser.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sitemap {
    xmlParserCtxtPtr ctx;
    sitemap_fn fn;
    void *ud;
    int in_loc, overflow, failed;
    int in_url, pending;             /* inside <url>; its <loc> (in pend) waits for </url> */
    int depth, url_depth, loc_depth; /* element depth now, of the <url>, of the <loc> */
    int in_prio;
    double priority; /* the <url>'s <priority>, -1: none */
    size_t len, plen, pend_len;
    char prio[32];
    char loc[SITEMAP_MAX_LOC];
    char pend[SITEMAP_MAX_LOC]; /* the <url>'s own <loc>, kept apart: an <image:loc> may follow */
};

/* The <loc> that waits for its </url>, given (once). */
static void flush_pending(sitemap_t *s)
{
    if (!s->pending)
        return;
    s->pending = 0;
    s->fn(s->ud, s->pend, s->pend_len, s->priority);
}

int sitemap_is_xml(const char *ct)
{
    if (!ct)
        return 0;
    size_t n = strcspn(ct, "; \t");
    if ((n == 8 && !strncasecmp(ct, "text/xml", 8)) ||
        (n == 15 && !strncasecmp(ct, "application/xml", 15)))
        return 1;
    return n > 4 && !strncasecmp(ct + n - 4, "+xml", 4) &&
           strncasecmp(ct, "application/xhtml+xml", 21) != 0;
}

static void on_start(void *ctx, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri,
                     int nns, const xmlChar **ns, int nattr, int ndef, const xmlChar **attrs)
{
    (void)prefix, (void)uri, (void)nns, (void)ns, (void)nattr, (void)ndef, (void)attrs;
    sitemap_t *s = ((xmlParserCtxtPtr)ctx)->_private;
    s->depth++;
    if (!strcmp((const char *)local, "loc")) {
        if (s->in_url && s->depth == s->url_depth + 1)
            flush_pending(s); /* (a second <loc> of one <url>: the first goes) */
        s->loc_depth = s->depth;
        s->in_loc = 1;
        s->len = 0;
        s->overflow = 0;
    } else if (!strcmp((const char *)local, "url")) {
        flush_pending(s);
        s->in_url = 1;
        s->url_depth = s->depth;
        s->priority = -1;
    } else if (!strcmp((const char *)local, "priority") && s->in_url &&
               s->depth == s->url_depth + 1) {
        s->in_prio = 1;
        s->plen = 0;
    }
}

static void on_end(void *ctx, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
    (void)prefix, (void)uri;
    sitemap_t *s = ((xmlParserCtxtPtr)ctx)->_private;
    int depth = s->depth--; /* (this element's) */
    if (s->in_prio && !strcmp((const char *)local, "priority")) {
        s->in_prio = 0;
        s->prio[s->plen] = '\0';
        char *end;
        double p = strtod(s->prio, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end != s->prio && !*end && p >= 0 && p <= 1)
            s->priority = p;
        return;
    }
    if (s->in_url && depth == s->url_depth && !strcmp((const char *)local, "url")) {
        s->in_url = 0;
        flush_pending(s);
        return;
    }
    if (!s->in_loc || strcmp((const char *)local, "loc") != 0)
        return;
    s->in_loc = 0;
    const char *b = s->loc, *e = s->loc + s->len;
    while (b < e && isspace((unsigned char)*b))
        b++;
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    if (!s->overflow && e > b) {
        s->loc[e - s->loc] = '\0';
        if (s->in_url && s->loc_depth == s->url_depth + 1) { /* the <url>'s own */
            s->pend_len = (size_t)(e - b);
            memcpy(s->pend, b, s->pend_len + 1);
            s->pending = 1; /* its <priority> may follow */
        } else {            /* an index's, or another one inside a <url> (an image's) */
            s->fn(s->ud, b, (size_t)(e - b), -1);
        }
    }
}

static void on_chars(void *ctx, const xmlChar *ch, int len)
{
    sitemap_t *s = ((xmlParserCtxtPtr)ctx)->_private;
    if (s->in_prio && len > 0) {
        size_t n =
            (size_t)len < sizeof s->prio - 1 - s->plen ? (size_t)len : sizeof s->prio - 1 - s->plen;
        memcpy(s->prio + s->plen, ch, n);
        s->plen += n;
        return;
    }
    if (!s->in_loc || len <= 0)
        return;
    if (s->len + (size_t)len >= sizeof s->loc) {
        s->overflow = 1;
        return;
    }
    memcpy(s->loc + s->len, ch, (size_t)len);
    s->len += (size_t)len;
}

static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx, (void)msg;
}

sitemap_t *sitemap_new(sitemap_fn fn, void *ud)
{
    sitemap_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fn = fn;
    s->ud = ud;
    xmlSAXHandler sax;
    memset(&sax, 0, sizeof sax);
    sax.initialized = XML_SAX2_MAGIC;
    sax.startElementNs = on_start;
    sax.endElementNs = on_end;
    sax.characters = on_chars;
    sax.cdataBlock = on_chars;
    sax.error = quiet;
    sax.warning = quiet;
    s->ctx = xmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL);
    if (!s->ctx) {
        free(s);
        return NULL;
    }
    s->ctx->_private = s;
    xmlCtxtUseOptions(s->ctx, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    return s;
}

int sitemap_feed(sitemap_t *s, const char *data, size_t len)
{
    while (!s->failed && len > 0) {
        int n = len > (1u << 20) ? 1 << 20 : (int)len;
        if (xmlParseChunk(s->ctx, data, n, 0) != 0 && s->ctx->wellFormed == 0)
            s->failed = 1;
        data += n;
        len -= (size_t)n;
    }
    return s->failed ? -1 : 0;
}

int sitemap_finish(sitemap_t *s)
{
    if (!s->failed && xmlParseChunk(s->ctx, NULL, 0, 1) != 0 && s->ctx->wellFormed == 0)
        s->failed = 1;
    flush_pending(s); /* (a document cut short after a <loc>) */
    return s->failed ? -1 : 0;
}

void sitemap_free(sitemap_t *s)
{
    if (!s)
        return;
    if (s->ctx) {
        xmlFreeDoc(s->ctx->myDoc);
        xmlFreeParserCtxt(s->ctx);
    }
    free(s);
}
