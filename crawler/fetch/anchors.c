/*
 * anchors.c -- a page's outlinks for --links (anchors.h).
 *
 * DESIGN: an array of anchor_t whose strings are the array's own (url and
 * rel copied, the text grown in place up to ANCHORS_TEXT_MAX).  `fresh`
 * marks a link just added: the sink's next start tag is its element's when
 * the names agree (a/area for PARSER_LINK_A, link, frame/iframe, meta), and
 * gives its rel; an a or area element then collects the text until its end
 * tag, the next link, or the end of the page.  The tree the sink sees is
 * balanced as a browser nests it (an <a> inside an <a> ends the first), so
 * "the end tag of a" closes the one being read; an img inside gives its alt
 * text as a word of the anchor text.  Bytes kept are counted:
 * past ANCHORS_MAX_BYTES a link is counted in `omitted`, not kept.
 */
#include "anchors.h"

#include <stdlib.h>
#include <string.h>

struct anchors {
    anchor_t *v;
    size_t n, cap;
    size_t bytes;
    uint64_t omitted;
    int fresh;       /* v[n - 1] was just added: the next start is maybe its element */
    int in_text;     /* v[n - 1]'s anchor text is being read */
    size_t text_len; /* of v[n - 1].text */
    int space;       /* a space is owed before the next word of the text */
    int full;        /* the text reached ANCHORS_TEXT_MAX */
    parser_sink_t inner;
    const char *want[40]; /* inner's attribute list and "rel" */
};

anchors_t *anchors_new(void)
{
    return calloc(1, sizeof(anchors_t));
}

void anchors_free(anchors_t *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free((char *)a->v[i].url);
        free((char *)a->v[i].text);
        free((char *)a->v[i].rel);
    }
    free(a->v);
    free(a);
}

/* The name of the element a link of kind k comes from. */
static int element_of(parser_link_kind_t k, const char *name)
{
    switch (k) {
    case PARSER_LINK_A:
        return !strcmp(name, "a") || !strcmp(name, "area");
    case PARSER_LINK_LINK:
        return !strcmp(name, "link");
    case PARSER_LINK_FRAME:
        return !strcmp(name, "frame") || !strcmp(name, "iframe");
    case PARSER_LINK_REFRESH:
        return !strcmp(name, "meta");
    default:
        return 0;
    }
}

static const char *att(const char *const *atts, const char *name)
{
    for (size_t i = 0; atts && atts[i]; i += 2)
        if (!strcmp(atts[i], name))
            return atts[i + 1];
    return NULL;
}

static void end_text(anchors_t *a)
{
    a->in_text = 0;
    a->space = 0;
}

static void append(anchors_t *a, const char *s, size_t n);

static void on_start(void *ud, const char *name, const char *const *atts)
{
    anchors_t *a = ud;
    if (a->inner.start)
        a->inner.start(a->inner.ud, name, atts);
    if (a->in_text && (!strcmp(name, "a") || !strcmp(name, "area")))
        end_text(a); /* (the tree would end it too) */
    const char *alt;
    if (a->in_text && !strcmp(name, "img") && (alt = att(atts, "alt"))) {
        a->space = a->text_len > 0; /* an image's alt text stands for it, as a word */
        append(a, alt, strlen(alt));
        a->space = a->text_len > 0;
    }
    if (!a->fresh)
        return;
    a->fresh = 0;
    anchor_t *l = &a->v[a->n - 1];
    if (!element_of(l->kind, name))
        return;
    const char *rel = att(atts, "rel");
    if (rel) {
        size_t len = strnlen(rel, ANCHORS_REL_MAX);
        if ((l->rel = strndup(rel, len)))
            a->bytes += len + 1;
    }
    if (l->kind == PARSER_LINK_A && !strcmp(name, "a"))
        a->in_text = 1;
}

static void on_end(void *ud, const char *name)
{
    anchors_t *a = ud;
    if (a->inner.end)
        a->inner.end(a->inner.ud, name);
    a->fresh = 0;
    if (a->in_text && !strcmp(name, "a"))
        end_text(a);
}

/* Appends s[0..n) to the text being read, whitespace collapsed, never past
 * ANCHORS_TEXT_MAX nor inside a character. */
static void append(anchors_t *a, const char *s, size_t n)
{
    char *t = (char *)a->v[a->n - 1].text;
    for (size_t i = 0; i < n && !a->full; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
            a->space = a->text_len > 0;
            continue;
        }
        size_t clen = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (a->text_len + a->space + clen > ANCHORS_TEXT_MAX || i + clen > n) {
            a->full = 1;
            break;
        }
        if (a->space)
            t[a->text_len++] = ' ';
        a->space = 0;
        memcpy(t + a->text_len, s + i, clen);
        a->text_len += clen;
        i += clen - 1;
    }
    t[a->text_len] = '\0';
}

static void on_text(void *ud, const char *s, size_t n)
{
    anchors_t *a = ud;
    if (a->inner.text)
        a->inner.text(a->inner.ud, s, n);
    if (a->in_text)
        append(a, s, n);
}

void anchors_sink(anchors_t *a, const parser_sink_t *inner, parser_sink_t *out)
{
    a->inner = inner ? *inner : (parser_sink_t){0};
    size_t n = 0;
    if (inner && inner->want) {
        for (const char *const *w = inner->want; *w && n + 2 < sizeof a->want / sizeof a->want[0];
             w++)
            a->want[n++] = *w;
        a->want[n++] = "rel";
        a->want[n++] = "alt";
        a->want[n] = NULL;
    }
    *out = (parser_sink_t){.start = on_start,
                           .end = on_end,
                           .text = on_text,
                           .ud = a,
                           .want = inner && inner->want ? a->want : NULL};
    if (!inner) { /* only rel and alt are read */
        a->want[0] = "rel";
        a->want[1] = "alt";
        a->want[2] = NULL;
        out->want = a->want;
    }
}

void anchors_link(anchors_t *a, const char *url, size_t len, parser_link_kind_t kind,
                  anchor_verdict_t v)
{
    end_text(a);
    a->fresh = 0;
    size_t cost = sizeof(anchor_t) + len + 1 + (kind == PARSER_LINK_A ? ANCHORS_TEXT_MAX + 1 : 0);
    if (a->bytes + cost > ANCHORS_MAX_BYTES) {
        a->omitted++;
        return;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 32;
        anchor_t *nv = realloc(a->v, cap * sizeof *nv);
        if (!nv) {
            a->omitted++;
            return;
        }
        a->v = nv;
        a->cap = cap;
    }
    anchor_t l = {.kind = kind, .verdict = v, .url = strndup(url, len)};
    if (kind == PARSER_LINK_A)
        l.text = calloc(1, ANCHORS_TEXT_MAX + 1);
    if (!l.url || (kind == PARSER_LINK_A && !l.text)) {
        free((char *)l.url);
        free((char *)l.text);
        a->omitted++;
        return;
    }
    a->v[a->n++] = l;
    a->bytes += cost;
    a->fresh = 1;
    a->text_len = 0;
    a->full = 0;
}

void anchors_none_followed(anchors_t *a, anchor_verdict_t v)
{
    for (size_t i = 0; a && i < a->n; i++)
        if (a->v[i].verdict == ANCHOR_FOLLOWED || a->v[i].verdict == ANCHOR_REPEAT)
            a->v[i].verdict = v;
}

void anchors_finish(anchors_t *a)
{
    if (a) {
        end_text(a);
        a->fresh = 0;
    }
}

size_t anchors_count(const anchors_t *a)
{
    return a ? a->n : 0;
}

const anchor_t *anchors_get(const anchors_t *a, size_t i)
{
    return a && i < a->n ? &a->v[i] : NULL;
}

uint64_t anchors_omitted(const anchors_t *a)
{
    return a ? a->omitted : 0;
}

const char *anchors_kind_name(parser_link_kind_t k)
{
    switch ((parser_link_kind_t)(k & ~PARSER_LINK_NOFOLLOW)) {
    case PARSER_LINK_A:
        return "a";
    case PARSER_LINK_LINK:
        return "link";
    case PARSER_LINK_FRAME:
        return "frame";
    case PARSER_LINK_REFRESH:
        return "refresh";
    default:
        return "a";
    }
}

const char *anchors_verdict_name(anchor_verdict_t v)
{
    static const char *const names[] = {
        [ANCHOR_FOLLOWED] = NULL, [ANCHOR_REPEAT] = "repeat",     [ANCHOR_SCOPE] = "scope",
        [ANCHOR_CAP] = "cap",     [ANCHOR_NOFOLLOW] = "nofollow", [ANCHOR_DEPTH] = "depth",
    };
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : NULL;
}
