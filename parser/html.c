/*
 * html.c -- streaming link extraction: libxml2's HTML push parser with SAX
 * callbacks only (no tree), fed chunk by chunk from the transfer.
 *
 * DESIGN
 * A parser_t is one page.  parser_feed() runs each chunk through the bound
 * filter (bound.c: only markup passes, each tag capped, so libxml2 neither
 * buffers nor parses text), hands it to htmlParseChunk() and then resets
 * libxml2's lookahead (unstall: works around a stall and trims consumed
 * input); the only SAX callback is startElement, which looks at a handful
 * of elements:
 *   a/area[href], frame/iframe[src], meta http-equiv=refresh  -> links
 *   link[href] with a hyperlink rel (alternate, next, prev, author, ...;
 *     not stylesheet/icon/preload/search/..., none without rel) -> links
 *   link rel=canonical                           -> parser_canonical()
 *   first base[href]                             -> base for later links
 *   meta name=robots content=nofollow|none       -> no more links
 * Each link is resolved against
 * the base handle parsed once per page and normalized by url_resolve() (url.c), then given to the
 * callback; dropped links are counted by reason.  Refs that are empty or only a fragment name the
 * page itself and are skipped silently.  libxml2 decodes character references and converts the page
 * to UTF-8 (charset from Content-Type, else <meta charset>, else UTF-8 if the first non-ASCII
 * bytes are valid UTF-8 (charset_sniff), else its own detection), so URLs come
 * out right whatever the page's charset.  Errors from libxml2 go to a per-context no-op structured
 * handler: nothing is printed and no global is touched. Memory per page: the libxml2 context
 * (bounded by bound.c and unstall), one 64 KB filter buffer, the base handle and the canonical URL.
 * Streaming caveat: a link seen before a late <base> or <meta robots> has
 * already been reported; parser_nofollow() after parser_finish() is the
 * page's final word.
 * Text sink (parser_config_t.sink, for text/): the page is read once, by
 * the sink's own reader (sink.c: tokenizer, decode.c: charset and
 * references, tree.c: balanced elements), and libxml2 and bound.c are not
 * run at all: the reader hands the start tags of the link elements, with
 * all their attributes, to the same on_start, then everything to the sink.
 * Parsing the text through libxml2 cost three times the links-only parse,
 * a second lexer beside it half as much again; this way a parse with text
 * costs about what one without does.  The links are the same but where
 * the two readings of a page differ (bench/extract/README.md counts them:
 * 33 of 3,816 pages): the reader reads the content of textarea and a
 * script whose end tag is broken as text, as browsers do, where libxml2
 * reads markup; undeclared non-UTF-8 bytes as windows-1252 where libxml2
 * reads latin-1; and it finds the links of pages whose encoding stops
 * libxml2.  The reader is told the Content-Type's charset and the
 * first-bytes decision; it reads <meta charset> itself.  Without a sink,
 * nothing of it is allocated or run, and libxml2 parses as before.
 */
#include "parser.h"
#include "parser_internal.h"

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FEED_CHUNK (64u * 1024) /* bytes handed to libxml2 per call */
#define SHRINK_AT (32 * 1024)   /* consumed input bytes libxml2 may keep */

struct parser {
    parser_config_t cfg;
    htmlParserCtxtPtr ctxt;
    url_base_t *page; /* the page URL; NULL if it did not parse */
    url_base_t *base; /* first <base href>, or NULL */
    int seen_base;    /* a <base href> was seen (later ones are ignored) */
    int nofollow;     /* meta robots / X-Robots-Tag nofollow */
    int finished;     /* parser_finish() was called */
    int err;          /* first error (CRAWL_ENOMEM) */
    char *canonical;  /* rel=canonical, normalized, or NULL */
    parser_link_fn fn;
    void *ud;
    parser_stats_t st;
    bound_t bound;
    int charset_known;     /* Content-Type named one, or the first bytes decided */
    charset_sniff_t sniff; /* the decision on the first bytes (charset.c) */
    sinkrd_t *sink;        /* the sink's reader, or NULL without a sink */
};

/* The filter's output, handed to libxml2 (which copies it) before
 * parser_feed returns: scratch of the calling thread, not of the parser,
 * so that a parser in the middle of a page costs what libxml2 keeps, not
 * 64 KiB more (a thousand transfers receiving at once hold a thousand). */
static _Thread_local char fbuf[FEED_CHUNK + BOUND_SLACK];

int parser_is_html(const char *ct)
{
    size_t n;
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    n = strcspn(ct, "; \t");
    return (n == 9 && strncasecmp(ct, "text/html", 9) == 0) ||
           (n == 21 && strncasecmp(ct, "application/xhtml+xml", 21) == 0);
}

/* Value of attribute name in atts, or NULL. */
static const char *attr(const xmlChar **atts, const char *name)
{
    if (!atts)
        return NULL;
    for (; atts[0]; atts += 2)
        if (strcasecmp((const char *)atts[0], name) == 0)
            return atts[1] ? (const char *)atts[1] : "";
    return NULL;
}

/* True if s holds token tok (ASCII case-insensitive) delimited by
 * whitespace or commas; with prefix, tok may start a longer token. */
static int has_token(const char *s, const char *tok, int prefix)
{
    size_t tl = strlen(tok);
    while (s && *s) {
        size_t n;
        s += strspn(s, " \t\r\n\f,");
        n = strcspn(s, " \t\r\n\f,");
        if (n >= tl && strncasecmp(s, tok, tl) == 0 && (prefix || n == tl))
            return 1;
        s += n;
    }
    return 0;
}

static int contains_ci(const char *s, const char *needle)
{
    size_t nl = strlen(needle);
    for (; s && *s; s++)
        if (strncasecmp(s, needle, nl) == 0)
            return 1;
    return 0;
}

/* "nofollow" or "none" in a robots directive list. */
static int robots_nofollow(const char *s)
{
    return has_token(s, "nofollow", 0) || has_token(s, "none", 0);
}

/* Resolves ref against the current base.  Returns 0 and *out (free()) or a
 * negative code, counted in the stats. */
static int resolve(parser_t *p, const char *ref, size_t len, char **out, size_t *out_len)
{
    int rc =
        url_resolve(p->base ? p->base : p->page, ref, len, p->cfg.max_url_length, out, out_len);
    switch (rc) {
    case CRAWL_OK:
        break;
    case CRAWL_ESCHEME:
        p->st.dropped_scheme++;
        break;
    case CRAWL_ETOOLONG:
        p->st.dropped_long++;
        break;
    case CRAWL_ENOMEM:
        if (!p->err)
            p->err = rc;
        break;
    default:
        p->st.dropped_bad++;
        break;
    }
    return rc;
}

/* Reports one link (ref: len bytes, as found in the page). */
static void report(parser_t *p, const char *ref, size_t len, parser_link_kind_t kind, int nofollow)
{
    char *url = NULL;
    size_t n = 0, i = 0;
    while (i < len && (unsigned char)ref[i] <= 0x20)
        i++;
    if (i == len || ref[i] == '#')
        return; /* the page itself */
    int dropped = p->nofollow || (nofollow && !p->cfg.follow_nofollow);
    if (dropped) {
        p->st.dropped_nofollow++;
        if (!p->cfg.give_nofollow)
            return;
    }
    parser_stats_t before = p->st;
    if (resolve(p, ref, len, &url, &n) != CRAWL_OK) {
        if (dropped) /* counted once, as nofollow */
            p->st = before;
        return;
    }
    if (dropped)
        kind = (parser_link_kind_t)(kind | PARSER_LINK_NOFOLLOW);
    else
        p->st.links++;
    if (p->fn)
        p->fn(p->ud, url, n, kind);
    free(url);
}

/* The URL in a meta refresh content ("5; url='/next'"), or NULL. */
static const char *refresh_url(const char *c, size_t *len)
{
    const char *e;
    c += strspn(c, " \t\r\n\f");
    c += strspn(c, "0123456789.");
    c += strspn(c, " \t\r\n\f");
    if (*c != ';' && *c != ',')
        return NULL;
    c++;
    c += strspn(c, " \t\r\n\f");
    if (strncasecmp(c, "url", 3) == 0) {
        const char *q = c + 3;
        q += strspn(q, " \t\r\n\f");
        if (*q == '=')
            c = q + 1 + strspn(q + 1, " \t\r\n\f");
    }
    if (*c == '"' || *c == '\'') {
        e = strchr(c + 1, *c);
        c++;
        *len = e ? (size_t)(e - c) : strlen(c);
    } else {
        *len = strlen(c);
    }
    return *len ? c : NULL;
}

/* link rel values that name resources or hints, not pages: one of them
 * anywhere in rel makes the <link> no hyperlink (rel="alternate stylesheet"
 * is a stylesheet). */
static int rel_is_resource(const char *rel)
{
    static const char *const skip[] = {
        "stylesheet",  "preload",   "modulepreload", "prefetch", "dns-prefetch",
        "preconnect",  "prerender", "manifest",      "pingback", "edituri",
        "wlwmanifest", "search",    "serviceworker", "expect",   "compression-dictionary",
        NULL};
    size_t i;
    for (i = 0; skip[i]; i++)
        if (has_token(rel, skip[i], 0))
            return 1;
    return contains_ci(rel, "icon"); /* icon, shortcut icon, apple-touch-icon, mask-icon */
}

/* link rel values that make a hyperlink to another page: the HTML
 * Standard's (alternate, author, help, license, next, prev, privacy-policy,
 * terms-of-service) and HTML 4's navigation types still written by
 * documentation generators (index, contents, up, start, first, last, ...). */
static int rel_is_hyperlink(const char *rel)
{
    static const char follow[] = "alternate author help license next prev previous index contents "
                                 "toc up start first last home chapter section subsection appendix "
                                 "glossary copyright archives privacy-policy terms-of-service";
    char tok[32];
    for (const char *s = rel; *s;) {
        s += strspn(s, " \t\r\n\f,");
        size_t n = strcspn(s, " \t\r\n\f,");
        if (n > 0 && n < sizeof tok) {
            memcpy(tok, s, n);
            tok[n] = '\0';
            if (has_token(follow, tok, 0))
                return !rel_is_resource(rel);
        }
        s += n;
    }
    return 0;
}

/* <link>: rel=canonical is the page's canonical URL; only hyperlink
 * relations are links (none without rel). */
static void on_link(parser_t *p, const xmlChar **atts)
{
    const char *href = attr(atts, "href"), *rel = attr(atts, "rel");
    if (!href || !rel)
        return;
    if (has_token(rel, "canonical", 0)) {
        char *url = NULL;
        if (!p->canonical && resolve(p, href, strlen(href), &url, NULL) == CRAWL_OK)
            p->canonical = url;
        return;
    }
    if (rel_is_hyperlink(rel))
        report(p, href, strlen(href), PARSER_LINK_LINK, has_token(rel, "nofollow", 0));
}

static void on_meta(parser_t *p, const xmlChar **atts)
{
    const char *equiv = attr(atts, "http-equiv"), *name = attr(atts, "name");
    const char *content = attr(atts, "content"), *url;
    size_t len = 0;
    if (!content)
        return;
    if (name && strcasecmp(name, "robots") == 0 && robots_nofollow(content))
        p->nofollow = 1;
    if (equiv && strcasecmp(equiv, "refresh") == 0 && (url = refresh_url(content, &len)))
        report(p, url, len, PARSER_LINK_REFRESH, 0);
}

static void on_base(parser_t *p, const xmlChar **atts)
{
    const char *href = attr(atts, "href");
    char *url = NULL;
    size_t n = 0;
    if (!href || p->seen_base)
        return;
    p->seen_base = 1; /* first <base href> only, as browsers do */
    if (url_resolve(p->page, href, strlen(href), p->cfg.max_url_length, &url, &n) == CRAWL_OK &&
        url_base_new(url, n, p->cfg.max_url_length, &p->base) == CRAWL_ENOMEM && !p->err)
        p->err = CRAWL_ENOMEM;
    free(url);
}

static void on_start(void *ud, const xmlChar *xname, const xmlChar **atts)
{
    parser_t *p = ud;
    const char *name = (const char *)xname, *v;
    switch (name[0]) { /* libxml2 gives HTML element names in lowercase */
    case 'a':
        if ((strcmp(name, "a") == 0 || strcmp(name, "area") == 0) && (v = attr(atts, "href"))) {
            const char *rel = attr(atts, "rel");
            report(p, v, strlen(v), PARSER_LINK_A, rel && has_token(rel, "nofollow", 0));
        }
        break;
    case 'b':
        if (strcmp(name, "base") == 0)
            on_base(p, atts);
        break;
    case 'f':
    case 'i':
        if ((strcmp(name, "frame") == 0 || strcmp(name, "iframe") == 0) && (v = attr(atts, "src")))
            report(p, v, strlen(v), PARSER_LINK_FRAME, 0);
        break;
    case 'l':
        if (strcmp(name, "link") == 0)
            on_link(p, atts);
        break;
    case 'm':
        if (strcmp(name, "meta") == 0)
            on_meta(p, atts);
        break;
    default:
        break;
    }
}

/* The reader's start tags of link elements (sink mode). */
static void on_reader_start(void *ud, const char *name, const char *const *atts)
{
    on_start(ud, (const xmlChar *)name, (const xmlChar **)atts);
}

static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void quiet_structured(void *ctx, xmlErrorPtr err)
{
    (void)ctx;
    (void)err;
}

/* The charset parameter of a Content-Type value into buf, or 0. */
static int header_charset(const char *ct, char *buf, size_t buflen)
{
    const char *c = ct;
    size_t n;
    while (c && (c = strchr(c, ';'))) {
        c++;
        c += strspn(c, " \t");
        if (strncasecmp(c, "charset=", 8) != 0)
            continue;
        c += 8;
        if (*c == '"')
            c++;
        n = strcspn(c, "\"; \t");
        if (n == 0 || n >= buflen)
            return 0;
        memcpy(buf, c, n);
        buf[n] = '\0';
        return 1;
    }
    return 0;
}

/* Applies the Content-Type charset; later <meta charset> cannot override. */
static void apply_charset(parser_t *p, const char *content_type)
{
    char cs[64];
    xmlCharEncodingHandlerPtr h;
    if (!content_type || !header_charset(content_type, cs, sizeof(cs)))
        return;
    p->charset_known = 1;
    if (strncasecmp(cs, "utf-16", 6) == 0 || strncasecmp(cs, "utf-32", 6) == 0)
        p->bound.passthrough = 1;
    h = xmlFindCharEncodingHandler(cs);
    if (h)
        xmlSwitchToEncoding(p->ctxt, h);
}

parser_t *parser_new(const parser_config_t *cfg, const char *page_url, const char *content_type,
                     const char *x_robots_tag, parser_link_fn fn, void *ud)
{
    htmlSAXHandler sax;
    parser_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    charset_init();
    if (cfg)
        p->cfg = *cfg;
    if (p->cfg.sink) {
        char cs[64];
        int known = content_type && header_charset(content_type, cs, sizeof(cs));
        if (!(p->sink = sinkrd_new(p->cfg.sink, known ? cs : NULL)))
            goto fail;
        sinkrd_links(p->sink, on_reader_start, p);
        p->charset_known = known; /* the reader has it: no sniffing */
    }
    p->cfg.sink = NULL; /* the reader holds its copy */
    if (p->cfg.max_url_length == 0)
        p->cfg.max_url_length = PARSER_DEFAULT_MAX_URL_LENGTH;
    p->fn = fn;
    p->ud = ud;
    /* a truncated value must still be refused as too long: see url.c */
    bound_init(&p->bound, 4 * p->cfg.max_url_length + 1024);
    if (page_url &&
        url_base_new(page_url, strlen(page_url), p->cfg.max_url_length, &p->page) == CRAWL_ENOMEM)
        goto fail;
    p->nofollow = x_robots_tag && robots_nofollow(x_robots_tag);
    if (p->sink)
        return p; /* the reader gives the links: no libxml2 */
    memset(&sax, 0, sizeof(sax));
    sax.initialized = XML_SAX2_MAGIC; /* so that libxml2 copies serror too */
    sax.startElement = on_start;
    sax.warning = quiet;
    sax.error = quiet;
    sax.fatalError = quiet;
    sax.serror = quiet_structured;
    p->ctxt = htmlCreatePushParserCtxt(&sax, p, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
    if (!p->ctxt)
        goto fail;
    htmlCtxtUseOptions(p->ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                    HTML_PARSE_NONET | HTML_PARSE_NOBLANKS);
    apply_charset(p, content_type);
    return p;
fail:
    parser_free(p);
    return NULL;
}

/* Two workarounds for libxml2 2.9's HTML push parser, run after each chunk:
 * - it resumes its lookahead scans (for the '>' of a tag, "-->", ...) from
 *   ctxt->checkIndex with a saved "inside a quoted value" flag; when a chunk
 *   ends inside an attribute value that state goes wrong, the scan never
 *   finds the end of the tag, and the parser stalls and buffers the rest of
 *   the page until parser_finish (98 MB of heap and quadratic time for a
 *   48 MB page).  Resetting checkIndex restarts the next scan from the
 *   current position with a fresh state (a rescan of one partial tag).
 * - it shrinks its input buffer only while parsing text, which bound.c no
 *   longer passes on; so drop the consumed input here, as its XML push
 *   parser does (xmlParserInputShrink).  checkIndex is an offset into that
 *   buffer: hence the reset first. */
static void unstall(htmlParserCtxtPtr c)
{
    xmlParserInputPtr in = c->input;
    c->checkIndex = 0;
    if (in && in->buf && in->base && in->cur && in->cur - in->base > SHRINK_AT)
        xmlParserInputShrink(in);
}

/* htmlParseChunk with the calling thread's generic error handler silenced:
 * libxml2 reports charset conversion errors (bytes undefined in
 * windows-1252, odd UTF-16) without a parser context, so the per-context
 * handlers set in parser_new do not see them and they would go to stderr.
 * The previous handler is restored before returning. */
static void parse_chunk(parser_t *p, const char *data, size_t len, int terminate)
{
    xmlGenericErrorFunc old = xmlGenericError;
    void *old_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, quiet);
    htmlParseChunk(p->ctxt, data, (int)len, terminate);
    xmlSetGenericErrorFunc(old_ctx, old);
}

int parser_feed(parser_t *p, const char *data, size_t len)
{
    if (!p || (!data && len) || p->finished)
        return CRAWL_EINVAL;
    p->st.bytes += len;
    if (!p->charset_known && len > 0) { /* no charset in Content-Type */
        int utf8 = charset_sniff(&p->sniff, data, len);
        p->charset_known = utf8 >= 0;
        if (utf8 == 1 && p->ctxt)
            xmlSwitchEncoding(p->ctxt, XML_CHAR_ENCODING_UTF8);
        if (utf8 >= 0 && p->sink)
            sinkrd_sniffed(p->sink, utf8);
    }
    if (p->sink) {
        if (sinkrd_feed(p->sink, data, len) != 0 && !p->err)
            p->err = CRAWL_ENOMEM;
        p->st.capped = sinkrd_capped(p->sink);
        return p->err;
    }
    while (len > 0 && !p->err) {
        size_t take = len < FEED_CHUNK ? len : FEED_CHUNK;
        size_t n = bound_filter(&p->bound, data, take, fbuf);
        if (n > 0)
            parse_chunk(p, fbuf, n, 0);
        unstall(p->ctxt);
        data += take;
        len -= take;
    }
    p->st.capped = p->bound.dropped;
    return p->err;
}

int parser_finish(parser_t *p)
{
    if (!p || p->finished)
        return CRAWL_EINVAL;
    p->finished = 1;
    if (p->sink)
        sinkrd_finish(p->sink);
    else
        parse_chunk(p, NULL, 0, 1);
    return p->err;
}

int parser_nofollow(const parser_t *p)
{
    return p ? p->nofollow : 0;
}

const char *parser_canonical(const parser_t *p)
{
    return p ? p->canonical : NULL;
}

const parser_stats_t *parser_get_stats(const parser_t *p)
{
    return p ? &p->st : NULL;
}

void parser_free(parser_t *p)
{
    if (!p)
        return;
    if (p->ctxt)
        htmlFreeParserCtxt(p->ctxt);
    url_base_free(p->page);
    url_base_free(p->base);
    sinkrd_free(p->sink);
    free(p->canonical);
    free(p);
}
