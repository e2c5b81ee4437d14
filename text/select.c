/*
 * select.c -- the half of the extractor that runs once, at text_finish():
 * it chooses the main content from the page record (text_internal.h) and
 * renders it as plain text or Markdown.
 *
 * DESIGN
 * The choice is readability-style scoring on the blocks and containers
 * that extract.c recorded while the page streamed by (no tree needed: a
 * container is the range of blocks it spans, its parent an index):
 *  1. Each block of at least MIN_CHARS characters outside boilerplate
 *     scores 1 + its commas + one per 100 characters (at most 3).  The
 *     score goes to the element that holds the paragraph -- the owner's
 *     parent when the owner is a paragraph-like element (p, li, h*, td,
 *     ...) or holds only this block, else the owner itself (loose text in
 *     a div is a paragraph of that div) -- in full, to the next ancestor
 *     in half, to the one above in a third.
 *  0. Boilerplate: an element named so by its tag, role or a strong word of
 *     its class/id; one named so by a weak or short word only when it holds
 *     less than PROSE_CHARS characters of prose (see boilerplate()).
 *  2. A container's value: (its score + a base for its tag + the weight of
 *     its hints) * (1 - its link density), the link density being the
 *     share of its characters inside links.  The best container is the
 *     main content, after Readability's promotion: the ancestor that holds
 *     PROMOTE_MIN of the PROMOTE_TOP next best containers within 3/4 of
 *     its value, if any (a page of several items); then the first
 *     ancestor whose value exceeds the best's, climbing while values stay
 *     above a third of it.
 *  3. Its siblings (children of the same parent, and the parent's own
 *     loose text) join when their value reaches a fifth of the best's (at
 *     least 10), or when they read as a paragraph: over 80 characters with
 *     a link density under 0.25, or a shorter sentence with no link.
 *  4. Within what was chosen, blocks inside boilerplate elements and blocks
 *     mostly made of link text are left out.
 *     Then the first <h1> outside boilerplate joins when it comes before
 *     what was chosen (the headline above the text's container).
 *  5. If that yields less than RETRY_CHARS characters, steps 1-4 run again
 *     with the strong hints only (tag, role, strong words), then with
 *     none; the longest choice wins (Readability's retry: a short article
 *     beside long comments without a comment class takes them in).  If nothing scores at
 *     all, every block outside boilerplate (at last every block) is the
 *     text.
 * TEXT_ALL skips the choice: every block, in order.
 * Rendering: blocks separated by a blank line; in Markdown, headings as
 * '#', list items as "- " or "N. " indented two spaces a level (items of
 * one list on consecutive lines), <pre> fenced with ```, blockquotes with
 * "> " on each line; inline marks were written by extract.c.
 * Memory: a byte and two prefix sums a block, a float a container, the
 * output (at most the kept text plus its marks), all freed here but the
 * output.
 */
#include "text_internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define MIN_CHARS 25     /* characters for a block to score */
#define RETRY_CHARS 500  /* fewer chosen characters: choose again with fewer hints */
#define PROMOTE_TOP 5    /* containers next to the best that promotion looks at */
#define PROMOTE_MIN 3    /* of which sharing an ancestor promotes it */
#define PROSE_CHARS 1000 /* characters of prose that overrule a weak boilerplate hint */

typedef struct sel {
    text_t *t;
    int hints;      /* 2: every boilerplate hint counts, 1: the strong ones, 0: none */
    uint64_t *pc;   /* prefix sums of block characters, nblocks + 1 */
    uint64_t *pl;   /* and of link characters */
    float *value;   /* per container (step 2) */
    uint8_t *boil;  /* per container: 1 if it or an ancestor is boilerplate (step 0) */
    uint8_t *chose; /* per block: 1 chosen */
    uint8_t *saved; /* per block: the choice with the hints, while trying without */
} sel_t;

static double link_density(const sel_t *s, uint32_t b0, uint32_t b1)
{
    uint64_t c = s->pc[b1] - s->pc[b0];
    return c ? (double)(s->pl[b1] - s->pl[b0]) / (double)c : 0.0;
}

/* A base value by tag (elem.c's table). */
static float tag_base(int tag)
{
    return (float)text_elem_of(tag)->base;
}

static int is_boiler(const sel_t *s, const tblock_t *b)
{
    if (!s->hints)
        return 0;
    return b->owner >= 0 ? s->boil[b->owner] : (b->flags & BL_BOILER) != 0;
}

/* Step 0: which containers are boilerplate.  An element named so by its
 * tag, role or a strong word of its class/id is; one named so only by a
 * weak or a short word ("nav-new-1-pixel") is not when it holds much
 * prose: PROSE_CHARS characters or more at a link density under 0.25 --
 * navigation and widgets are short or mostly links. */
static void boilerplate(sel_t *s)
{
    text_t *t = s->t;
    for (size_t c = 0; c < t->nconts; c++) {
        const tcont_t *k = &t->conts[c];
        int b =
            k->boiler == 1 ||
            (s->hints == 2 && k->boiler == 2 &&
             !(s->pc[k->b1] - s->pc[k->b0] >= PROSE_CHARS && link_density(s, k->b0, k->b1) < 0.25));
        s->boil[c] = (uint8_t)(b || (k->parent >= 0 && s->boil[k->parent]));
    }
}

/* Steps 1 and 2: the value of every container; returns the best, or -1. */
static int32_t score(sel_t *s)
{
    text_t *t = s->t;
    int32_t best = -1;
    if (s->hints)
        boilerplate(s);
    for (size_t c = 0; c < t->nconts; c++)
        t->conts[c].score = 0;
    for (size_t i = 0; i < t->nblocks; i++) {
        const tblock_t *b = &t->blocks[i];
        int32_t c = b->owner;
        float v;
        if (b->chars < MIN_CHARS || is_boiler(s, b) || c < 0)
            continue;
        v = 1.0f + (float)b->commas + (float)(b->chars / 100 < 3 ? b->chars / 100 : 3);
        if (b->kind != K_TEXT || t->conts[c].b1 - t->conts[c].b0 == 1)
            c = t->conts[c].parent;
        for (int lvl = 0; lvl < 3 && c >= 0; lvl++, c = t->conts[c].parent)
            t->conts[c].score += v / (float)(lvl + 1);
    }
    for (size_t c = 0; c < t->nconts; c++) {
        const tcont_t *k = &t->conts[c];
        float v = 0;
        if (k->score > 0 && !(s->hints && s->boil[c]))
            v = (k->score + tag_base(k->tag) + (s->hints == 2 ? k->weight : 0)) *
                (float)(1.0 - link_density(s, k->b0, k->b1));
        s->value[c] = v;
        if (v > 0 && (best < 0 || v > s->value[best]))
            best = (int32_t)c;
    }
    return best;
}

/* 1 if container a holds container c (its blocks within a's). */
static int holds(const text_t *t, int32_t a, int32_t c)
{
    return t->conts[c].b0 >= t->conts[a].b0 && t->conts[c].b1 <= t->conts[a].b1;
}

/* Step 2b (Readability's): when at least PROMOTE_MIN of the next best
 * containers score within 3/4 of the best and share an ancestor with it,
 * that ancestor is the main content (a page of several items, none of
 * which is the whole); then, while the ancestors' values rise, climb. */
static int32_t promote(sel_t *s, int32_t best)
{
    text_t *t = s->t;
    int32_t top[PROMOTE_TOP];
    int ntop = 0;
    float bar = s->value[best] * 0.75f;
    for (size_t c = 0; c < t->nconts; c++) { /* the next best, in order */
        if ((int32_t)c == best || s->value[c] < bar || holds(t, (int32_t)c, best) ||
            holds(t, best, (int32_t)c))
            continue;
        int k = ntop;
        if (ntop == PROMOTE_TOP) { /* full: c takes the last place if it beats it */
            k = PROMOTE_TOP - 1;
            if (s->value[top[k]] >= s->value[c])
                continue;
        } else {
            ntop++;
        }
        top[k] = (int32_t)c;
        for (; k > 0 && s->value[top[k - 1]] < s->value[top[k]]; k--) {
            int32_t x = top[k];
            top[k] = top[k - 1];
            top[k - 1] = x;
        }
    }
    if (ntop >= PROMOTE_MIN) {
        for (int32_t a = t->conts[best].parent; a >= 0; a = t->conts[a].parent) {
            int n = 0;
            for (int k = 0; k < ntop; k++)
                n += holds(t, a, top[k]);
            if (n >= PROMOTE_MIN) {
                best = a;
                break;
            }
        }
    }
    float last = s->value[best], floor = last / 3;
    for (int32_t a = t->conts[best].parent; a >= 0; a = t->conts[a].parent) {
        if (s->value[a] <= 0)
            continue;
        if (s->value[a] < floor)
            break;
        if (s->value[a] > last) {
            best = a;
            break;
        }
        last = s->value[a];
    }
    return best;
}

/* Reads as a paragraph (step 3). */
static int prose(const sel_t *s, uint32_t b0, uint32_t b1)
{
    uint64_t chars = s->pc[b1] - s->pc[b0];
    double ld = link_density(s, b0, b1);
    int sentence = 0;
    for (uint32_t i = b0; i < b1; i++)
        sentence |= (s->t->blocks[i].flags & BL_SENTENCE) != 0;
    return (chars > 80 && ld < 0.25) || (chars > 0 && chars <= 80 && ld == 0 && sentence);
}

/* Step 3: marks the best container's blocks and its siblings'. */
static void choose(sel_t *s, int32_t best)
{
    text_t *t = s->t;
    int32_t parent = t->conts[best].parent;
    float bar = s->value[best] / 5 > 10 ? s->value[best] / 5 : 10;
    memset(s->chose, 0, t->nblocks);
    memset(s->chose + t->conts[best].b0, 1, t->conts[best].b1 - t->conts[best].b0);
    if (parent < 0)
        return;
    for (size_t c = (size_t)parent + 1; c < t->nconts && t->conts[c].b0 < t->conts[parent].b1;
         c++) {
        const tcont_t *k = &t->conts[c];
        if (k->parent != parent || (int32_t)c == best)
            continue;
        if (s->value[c] >= bar || (!(s->hints && s->boil[c]) && prose(s, k->b0, k->b1)))
            memset(s->chose + k->b0, 1, k->b1 - k->b0);
    }
    for (uint32_t i = t->conts[parent].b0; i < t->conts[parent].b1; i++)
        if (t->blocks[i].owner == parent && prose(s, i, i + 1))
            s->chose[i] = 1;
}

/* Step 4, and the count of what stays. */
static uint64_t keep(sel_t *s)
{
    uint64_t chars = 0;
    for (size_t i = 0; i < s->t->nblocks; i++) {
        const tblock_t *b = &s->t->blocks[i];
        if (s->chose[i] && (is_boiler(s, b) || b->link_chars * 2 > b->chars))
            s->chose[i] = 0;
        chars += s->chose[i] ? b->chars : 0;
    }
    return chars;
}

/* Step 4b: the headline.  When the first <h1> outside boilerplate comes
 * before what was chosen (a page whose title sits above the container of
 * the text), it joins. */
static void headline(sel_t *s)
{
    text_t *t = s->t;
    size_t first = 0;
    while (first < t->nblocks && !s->chose[first])
        first++;
    for (size_t i = 0; i < first; i++) {
        const tblock_t *b = &t->blocks[i];
        if (b->kind == K_H1 && !is_boiler(s, b) && b->link_chars * 2 <= b->chars) {
            s->chose[i] = 1;
            return;
        }
    }
}

/* Steps 1-5. */
static void select_main(sel_t *s)
{
    text_t *t = s->t;
    uint64_t got = 0;
    int level = 2;
    for (s->hints = 2; s->hints >= 0; s->hints--) {
        uint64_t n = 0;
        int32_t best;
        if (s->hints < 2)
            memcpy(s->saved, s->chose, t->nblocks);
        if ((best = score(s)) >= 0) {
            choose(s, promote(s, best));
            n = keep(s);
        }
        if (n > got) {
            got = n;
            level = s->hints;
        } else if (s->hints < 2) {
            memcpy(s->chose, s->saved, t->nblocks);
        }
        if (got >= RETRY_CHARS)
            break;
    }
    s->hints = level;
    if (got > 0) {
        headline(s);
        return;
    }
    s->hints = 2;
    boilerplate(s);
    for (int pass = 1; pass >= 0; pass--) { /* nothing scored */
        uint64_t chars = 0;
        for (size_t i = 0; i < t->nblocks; i++) {
            s->chose[i] = pass == 0 || !is_boiler(s, &t->blocks[i]);
            chars += s->chose[i] ? t->blocks[i].chars : 0;
        }
        if (chars > 0)
            return;
    }
}

/* ---- rendering ------------------------------------------------------- */

static int out_put(text_t *t, size_t *cap, const char *p, size_t n)
{
    if (t->out_len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        char *q;
        while (c < t->out_len + n + 1)
            c *= 2;
        if (!(q = realloc(t->out, c)))
            return -1;
        t->out = q;
        *cap = c;
    }
    memcpy(t->out + t->out_len, p, n);
    t->out_len += n;
    t->out[t->out_len] = '\0';
    return 0;
}

/* The Markdown prefix of block b into p (room for 64 + 2 * depth bytes). */
static size_t md_prefix(const tblock_t *b, char *p)
{
    size_t n = 0;
    if (b->kind >= K_H1 && b->kind < K_H1 + 6) {
        for (int i = 0; i <= b->kind - K_H1; i++)
            p[n++] = '#';
        p[n++] = ' ';
    } else if (b->kind == K_LI) {
        for (int i = 1; i < b->list_depth && i < 16; i++, n += 2)
            memcpy(p + n, "  ", 2);
        if (b->flags & BL_ORDERED)
            n += (size_t)snprintf(p + n, 16, "%u. ", (unsigned)(b->item ? b->item : 1));
        else
            p[n++] = '-', p[n++] = ' ';
    } else if (b->kind == K_PRE) {
        memcpy(p, "```\n", 4);
        n = 4;
    }
    return n;
}

/* One block, with its quote marks on every line. */
static int render_block(text_t *t, size_t *cap, const tblock_t *b, int md)
{
    char pre[96];
    const char *s = t->buf + b->off, *e = s + b->len;
    size_t q = md ? (b->quote_depth < 8 ? b->quote_depth : 8) : 0;
    size_t n = md ? md_prefix(b, pre) : 0;
    for (size_t i = 0; i < q; i++)
        if (out_put(t, cap, "> ", 2) < 0)
            return -1;
    if (out_put(t, cap, pre, n) < 0)
        return -1;
    while (s < e) {
        const char *nl = memchr(s, '\n', (size_t)(e - s));
        size_t k = nl ? (size_t)(nl - s) + 1 : (size_t)(e - s);
        if (out_put(t, cap, s, k) < 0)
            return -1;
        s += k;
        for (size_t i = 0; nl && s < e && i < q; i++)
            if (out_put(t, cap, "> ", 2) < 0)
                return -1;
    }
    if (md && b->kind == K_PRE && out_put(t, cap, "\n```", 4) < 0)
        return -1;
    return 0;
}

static int render(text_t *t, const uint8_t *chose)
{
    size_t cap = 0;
    int md = t->cfg.mode == TEXT_MARKDOWN, prev_li = 0, first = 1;
    if (out_put(t, &cap, "", 0) < 0)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < t->nblocks; i++) {
        const tblock_t *b = &t->blocks[i];
        if (chose && !chose[i])
            continue;
        if (!first && out_put(t, &cap, "\n\n", md && prev_li && b->kind == K_LI ? 1 : 2) < 0)
            return CRAWL_ENOMEM;
        if (render_block(t, &cap, b, md) < 0)
            return CRAWL_ENOMEM;
        first = 0;
        prev_li = b->kind == K_LI;
        t->st.chosen++;
    }
    return 0;
}

int text_select(text_t *t)
{
    sel_t s = {.t = t};
    int rc = CRAWL_ENOMEM;
    size_t n = t->nblocks;
    if (t->cfg.mode == TEXT_ALL)
        return render(t, NULL);
    s.pc = malloc((n + 1) * sizeof(*s.pc));
    s.pl = malloc((n + 1) * sizeof(*s.pl));
    s.chose = calloc(n + 1, 1);
    s.saved = malloc(n + 1);
    s.value = malloc((t->nconts + 1) * sizeof(*s.value));
    s.boil = malloc(t->nconts + 1);
    if (!s.pc || !s.pl || !s.chose || !s.saved || !s.value || !s.boil)
        goto out;
    s.pc[0] = s.pl[0] = 0;
    for (size_t i = 0; i < n; i++) {
        s.pc[i + 1] = s.pc[i] + t->blocks[i].chars;
        s.pl[i + 1] = s.pl[i] + t->blocks[i].link_chars;
    }
    select_main(&s);
    rc = render(t, s.chose);
out:
    free(s.pc);
    free(s.pl);
    free(s.chose);
    free(s.saved);
    free(s.value);
    free(s.boil);
    return rc;
}
