/*
 * extract.c -- the streaming half of the extractor: the parser's element
 * and text events become a compact record of the page.
 *
 * DESIGN
 * A text_t keeps, for one page:
 *   buf     every piece of visible text, whitespace collapsed (kept as is
 *           inside <pre>), block after block; in Markdown mode with the
 *           inline marks (**, *, `, [text](url)) already in place;
 *   blocks  one record per block -- the text between two block-level
 *           boundaries (p, div, li, h1, td, ...): its span of buf, its
 *           characters, those inside links, its commas, its kind, whether
 *           it ends a sentence, whether an element around it names
 *           boilerplate, and its owner: the innermost block element;
 *   conts   one record per block-level element that holds a block, in
 *           document order: the range of blocks it spans, its parent, its
 *           tag and the weight of its class/id/role hints;
 *   stack   the open elements (at most TEXT_MAX_DEPTH; deeper ones are
 *           counted and their text goes to the deepest tracked one).
 * Nothing else of the page is kept: no tree, no attribute past its use.
 * Invisible content is never recorded: head (but its <title>), script,
 * style, noscript, template, svg, iframe, form controls, media fallbacks,
 * and any element with the hidden attribute, aria-hidden="true" or an
 * inline display:none / visibility:hidden.
 * Boilerplate hints (hint()): nav, aside, footer, menu, dialog, a header
 * outside article/main, role navigation/banner/contentinfo/complementary/
 * search/menu/dialog, and class/id words of two strengths -- strong ones
 * (comment, sidebar, footer, cookie, consent, share, social, related,
 * newsletter, breadcrumb, advert, sponsor, promo, popup, ...) always mark
 * the element, weak ones (nav, menu, header, widget, banner, tags, meta,
 * ad, ...) only when no content word (article, content, entry, main, post,
 * story, body, text, ...) is there too.  The hints are general words of
 * web authoring; no rule names a site.
 * Bounds (text_config_t.max_text = M): buf <= M bytes, blocks <= M / 16
 * records (32 bytes), conts <= M / 8 records (24 bytes), the stack fixed
 * (TEXT_MAX_DEPTH frames, plus one href of at most 4 * 2048 bytes each in
 * Markdown mode); text past M is counted in st.dropped.  Arrays grow by
 * doubling, so a small page costs little.
 * Errors: out-of-memory sets t->err; later events are ignored.
 */
#include "text_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

/* Frame flags. */
enum {
    FR_SKIP = 1,     /* counted in t->skip */
    FR_BOILER = 2,   /* counted in t->boiler */
    FR_LINK = 4,     /* an <a href>: counted in t->links */
    FR_MD = 8,       /* has a Markdown mark */
    FR_MDOPEN = 16,  /* its opening mark was written */
    FR_BLOCK = 32,   /* a block element */
    FR_ARTICLE = 64, /* article/main */
    FR_SVG = 128,    /* svg: a <title> inside is no page title */
};

/* Grows *p (of *cap elements of size sz) to hold need; 0 or -1. */
static int grow(void **p, size_t *cap, size_t need, size_t sz)
{
    size_t n = *cap ? *cap : 64;
    void *q;
    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    q = realloc(*p, n * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static void oom(text_t *t)
{
    if (!t->err)
        t->err = CRAWL_ENOMEM;
}

/* Appends n bytes to buf, within max_text.  0, or -1 (full or no memory). */
static int put(text_t *t, const char *s, size_t n)
{
    if (t->len + n > t->cfg.max_text) {
        t->st.dropped += n;
        return -1;
    }
    if (grow((void **)&t->buf, &t->cap, t->len + n + 1, 1) < 0) {
        oom(t);
        return -1;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return 0;
}

/* The innermost frame with a container, or -1. */
static int32_t cur_cont(const text_t *t)
{
    for (int i = t->depth - 1; i >= 0; i--)
        if (t->stack[i].cont >= 0)
            return t->stack[i].cont;
    return -1;
}

/* Ends the open block, if any. */
static void close_block(text_t *t)
{
    tblock_t *b;
    if (!t->in_block)
        return;
    b = &t->blocks[t->nblocks - 1];
    b->len = (uint32_t)(t->len - b->off);
    if (b->len && strchr(".!?", t->buf[t->len - 1]))
        b->flags |= BL_SENTENCE;
    t->in_block = 0;
    t->space = 0;
}

/* Opens a block for the text about to come.  0 or -1. */
static int open_block(text_t *t)
{
    tblock_t *b;
    if (t->nblocks >= t->maxblocks)
        return -1;
    if (grow((void **)&t->blocks, &t->capblocks, t->nblocks + 1, sizeof(*b)) < 0) {
        oom(t);
        return -1;
    }
    b = &t->blocks[t->nblocks++];
    memset(b, 0, sizeof(*b));
    b->off = (uint32_t)t->len;
    b->owner = cur_cont(t);
    b->list_depth = (uint8_t)(t->lists < 255 ? t->lists : 255);
    b->quote_depth = (uint8_t)(t->quotes < 255 ? t->quotes : 255);
    b->flags = t->boiler ? BL_BOILER : 0;
    for (int i = t->depth - 1; i >= 0; i--) {
        const tframe_t *f = &t->stack[i];
        if (f->flags & FR_BLOCK) {
            b->kind = text_elem_of(f->tag)->kind;
            if (b->kind == K_LI) {
                b->item = f->items;
                b->flags |=
                    i > 0 && (text_elem_of(t->stack[i - 1].tag)->what & E_ORDER) ? BL_ORDERED : 0;
            }
            break;
        }
    }
    if (t->pre)
        b->kind = K_PRE;
    t->in_block = 1;
    t->space = 0;
    t->st.blocks++;
    return 0;
}

/* Markdown: the opening marks of the frames that wait for their first
 * character, outermost first. */
static const char *mark_open(int tag)
{
    const char *n = text_elem_of(tag)->name;
    if (n[0] == 'a')
        return "[";
    if (strcmp(n, "b") == 0 || strcmp(n, "strong") == 0)
        return "**";
    if (strcmp(n, "i") == 0 || strcmp(n, "em") == 0)
        return "*";
    return "`";
}

static void write_marks(text_t *t)
{
    for (int i = 0; i < t->depth; i++) {
        tframe_t *f = &t->stack[i];
        if ((f->flags & (FR_MD | FR_MDOPEN)) == FR_MD) {
            const char *m = mark_open(f->tag);
            f->flags |= FR_MDOPEN;
            f->mark = (uint32_t)t->len;
            put(t, m, strlen(m));
        }
    }
    t->md_pending = 0;
}

/* Length of the UTF-8 sequence that starts with c (1 for stray bytes). */
static size_t seq_len(unsigned char c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Collapses whitespace of s[0..n) into dst (cap bytes, *len used); stops
 * at the first character that does not fit. */
static void put_small(char *dst, size_t cap, size_t *len, int *space, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = seq_len(c);
        if (text_is_space(c)) {
            *space = *len > 0;
            i++;
            continue;
        }
        if (i + k > n)
            k = n - i;
        if (*len + k + (*space != 0) >= cap)
            break;
        if (*space)
            dst[(*len)++] = ' ';
        *space = 0;
        memcpy(dst + *len, s + i, k);
        *len += k;
        i += k;
    }
    dst[*len] = '\0';
}

/* 1 if c ends a sentence. */
static int sentence_end(char c)
{
    return c == '.' || c == '!' || c == '?';
}

/* A run of n bytes with no whitespace (whole characters) into the open
 * block, after the space that is due. */
static void put_run(text_t *t, const char *s, size_t n)
{
    tblock_t *b;
    uint32_t chars = 0, commas = 0;
    if (!t->in_block && open_block(t) < 0) {
        t->st.dropped += n;
        return;
    }
    if (t->space && put(t, " ", 1) == 0) {
        b = &t->blocks[t->nblocks - 1];
        b->chars++;
        b->link_chars += t->links > 0;
        if (t->len >= 2 && sentence_end(t->buf[t->len - 2]))
            b->flags |= BL_SENTENCE;
    }
    t->space = 0;
    if (t->md_pending)
        write_marks(t);
    if (put(t, s, n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        chars += (c & 0xC0) != 0x80;
        if (c == ',')
            commas++;
        else if ((c == 0xEF || c == 0xE3) && i + 2 < n &&
                 (memcmp(s + i, "\xEF\xBC\x8C", 3) == 0 || memcmp(s + i, "\xE3\x80\x81", 3) == 0 ||
                  memcmp(s + i, "\xE3\x80\x82", 3) == 0))
            commas++;
    }
    b = &t->blocks[t->nblocks - 1];
    b->chars += chars;
    b->link_chars += t->links > 0 ? chars : 0;
    b->commas += commas;
    t->st.chars += chars;
}

/* <pre>: every character as it is (but CR). */
static void pre_chars(text_t *t, const char *s, size_t len)
{
    for (size_t i = 0; i < len && !t->err;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = seq_len(c);
        if (i + n > len)
            n = len - i;
        if (c == '\r') {
            i++;
            continue;
        }
        if (c == '\n' || c == '\t' || c == ' ') {
            if (t->in_block && put(t, s + i, 1) == 0)
                t->blocks[t->nblocks - 1].chars++;
            i++;
            continue;
        }
        put_run(t, s + i, n);
        i += n;
    }
}

/* Byte classes of chars_fast: every control byte is a space. */
enum { C_SPACE = 1, C_END = 2, C_COMMA = 4, C_RARE = 8 };
#define SP4(b) [b] = C_SPACE, [b + 1] = C_SPACE, [b + 2] = C_SPACE, [b + 3] = C_SPACE
static const unsigned char cls[256] = {
    SP4(0),          SP4(4),          SP4(8),          SP4(12),
    SP4(16),         SP4(20),         SP4(24),         SP4(28),
    [' '] = C_SPACE, ['.'] = C_END,   ['!'] = C_END,   ['?'] = C_END,
    [','] = C_COMMA, [0xA0] = C_RARE, [0xE3] = C_RARE, [0xEF] = C_RARE,
};
#undef SP4

/* The state of one chars_fast pass. */
typedef struct run {
    char *o;  /* where the piece goes */
    size_t k; /* bytes written */
    uint32_t chars, commas;
    unsigned prev; /* the last byte was a space */
    unsigned last; /* the last byte (a space as ' ') */
    unsigned sentence;
} run_t;

/* One byte of chars_fast; s[i] with n bytes in all. */
static inline void one_byte(run_t *r, const char *s, size_t i, size_t n)
{
    unsigned c = (unsigned char)s[i], f = cls[c];
    if (f & C_RARE) {
        if (c == 0xA0 && r->last == 0xC2) { /* NBSP: the 0xC2 written becomes the space */
            r->k--;
            r->chars--;
            f = C_SPACE;
            c = ' ';
            if (r->prev) {
                r->last = c;
                return;
            }
        } else if (i + 2 < n && (memcmp(s + i, "\xEF\xBC\x8C", 3) == 0 ||
                                 memcmp(s + i, "\xE3\x80\x81", 3) == 0 ||
                                 memcmp(s + i, "\xE3\x80\x82", 3) == 0)) {
            r->commas++;
        }
    }
    unsigned sp = f & C_SPACE, keep = !(sp & r->prev);
    r->sentence |= sp & keep & (cls[r->last] >> 1);
    r->o[r->k] = sp ? ' ' : (char)c;
    r->k += keep;
    r->chars += keep & ((c & 0xC0) != 0x80);
    r->commas += (f >> 2) & 1;
    r->prev = sp;
    r->last = sp ? ' ' : c;
}

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

/* The number of bytes whose high bit m has (m: high bits only). */
static inline uint32_t count_high(uint64_t m)
{
    return (uint32_t)(((m >> 7) * ONES) >> 56);
}

/* The high bit of each byte of w equal to c. */
static inline uint64_t eq_mask(uint64_t w, unsigned c)
{
    uint64_t x = w ^ (ONES * c);
    return ~(((x & ~HIGH) + ~HIGH) | x | ~HIGH);
}

/* Eight bytes at once, when none is rare and no two spaces meet (what
 * one_byte would do eight times).  Returns 0 to leave them to one_byte. */
static inline int eight_bytes(run_t *r, const char *s)
{
    uint64_t w, sp, ends, out, spb;
    memcpy(&w, s, 8);
    if (eq_mask(w, 0xA0) | eq_mask(w, 0xE3) | eq_mask(w, 0xEF))
        return 0;
    sp = ~(((w & ~HIGH) + ONES * 0x5F) | w) & HIGH; /* bytes below 0x21 */
    if (sp & ((sp << 8) | (r->prev ? 0x80 : 0)))
        return 0; /* spaces that collapse */
    ends = eq_mask(w, '.') | eq_mask(w, '!') | eq_mask(w, '?');
    r->sentence |= ((((ends << 8) | ((cls[r->last] & C_END) ? 0x80 : 0)) & sp) != 0);
    spb = (sp >> 7) * 0xFF;
    out = (w & ~spb) | (spb & (ONES * ' '));
    memcpy(r->o + r->k, &out, 8);
    r->k += 8;
    r->chars += 8 - count_high(w & ~(w << 1) & HIGH);
    r->commas += count_high(eq_mask(w, ','));
    r->prev = (unsigned)(sp >> 63);
    r->last = (unsigned)(out >> 56);
    return 1;
}

/* The rest of a piece of text, s[0..n) starting with a character that is
 * no space, into the open block in one pass (the block is open, no
 * Markdown mark is waiting and the piece fits within max_text): what
 * put_run does word by word, eight bytes at a time where it can, without a
 * branch per byte but for the rare bytes (NBSP, CJK commas). */
static void chars_fast(text_t *t, const char *s, size_t n)
{
    tblock_t *b = &t->blocks[t->nblocks - 1];
    run_t r = {0};
    if (grow((void **)&t->buf, &t->cap, t->len + n + 2 + 8, 1) < 0) {
        oom(t);
        return;
    }
    r.o = t->buf + t->len;
    if (t->space) { /* the space due before this piece */
        r.sentence = t->len > 0 && (cls[(unsigned char)r.o[-1]] & C_END);
        r.o[r.k++] = ' ';
        r.chars++;
        r.last = ' ';
    }
    size_t i = 0;
    while (i + 8 <= n) {
        if (!eight_bytes(&r, s + i))
            for (size_t e = i + 8; i < e; i++)
                one_byte(&r, s, i, n);
        else
            i += 8;
    }
    for (; i < n; i++)
        one_byte(&r, s, i, n);
    t->space = r.prev; /* a trailing space is due, not written */
    r.k -= r.prev;
    r.chars -= r.prev;
    t->len += r.k;
    b->chars += r.chars;
    b->link_chars += t->links > 0 ? r.chars : 0;
    b->commas += r.commas;
    if (r.sentence)
        b->flags |= BL_SENTENCE;
    t->st.chars += r.chars;
}

void text_chars(text_t *t, const char *s, size_t len)
{
    if (!t || t->finished || t->err)
        return;
    if (t->in_title)
        put_small(t->title, sizeof(t->title), &t->title_len, &t->title_space, s, len);
    if (t->in_h1) {
        int sp = t->h1_len > 0;
        put_small(t->h1, sizeof(t->h1), &t->h1_len, &sp, s, len);
    }
    if (t->skip)
        return;
    if (t->pre) {
        pre_chars(t, s, len);
        return;
    }
    for (size_t i = 0; i < len && !t->err;) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || (c == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] == 0xA0)) {
            t->space = t->in_block;
            i += c == 0xC2 ? 2 : 1;
            continue;
        }
        if (t->in_block && !t->md_pending && t->len + (len - i) + 1 <= t->cfg.max_text) {
            chars_fast(t, s + i, len - i);
            return;
        }
        size_t j = i + 1;
        while (j < len) {
            unsigned char d = (unsigned char)s[j];
            if (d <= ' ' || (d == 0xC2 && j + 1 < len && (unsigned char)s[j + 1] == 0xA0))
                break;
            j++;
        }
        put_run(t, s + i, j - i);
        i = j;
    }
}

/* html lang, xml:lang, meta content-language, og:locale: the first source
 * in that order wins, whatever comes first in the page. */
static void set_lang(text_t *t, const char *v, int rank)
{
    size_t n = 0;
    if (!v || (t->lang_rank && t->lang_rank <= rank))
        return;
    while (text_is_space((unsigned char)*v))
        v++;
    while (n < TEXT_MAX_LANG && (text_is_alnum((unsigned char)v[n]) || v[n] == '-' || v[n] == '_'))
        n++;
    if (n == 0)
        return;
    memcpy(t->lang, v, n);
    t->lang[n] = '\0';
    t->lang_rank = rank;
}

static void on_meta(text_t *t, const char *const *atts)
{
    const char *c = text_attr(atts, "content"), *p = text_attr(atts, "property"), *e;
    if (!c)
        return;
    e = text_attr(atts, "http-equiv");
    if (e && strcasecmp(e, "content-language") == 0)
        set_lang(t, c, 3);
    if (p && strcasecmp(p, "og:locale") == 0)
        set_lang(t, c, 4);
    if (p && strcasecmp(p, "og:title") == 0 && !t->og_title[0]) {
        size_t n = 0;
        int sp = 0;
        put_small(t->og_title, sizeof(t->og_title), &n, &sp, c, strlen(c));
    }
}

/* Markdown: the resolved target of an <a href>, or NULL (javascript:, ...). */
static char *link_target(text_t *t, const char *href)
{
    char *out = NULL;
    int rc = parser_url_normalize(t->url[0] ? t->url : NULL, href, 0, &out);
    if (rc == CRAWL_ENOMEM)
        oom(t);
    return rc == CRAWL_OK ? out : NULL;
}

/* A new container for frame f, if the cap allows. */
static void open_cont(text_t *t, tframe_t *f, int h, int tagboiler)
{
    tcont_t *c;
    f->cont = -1;
    if (t->nconts >= t->maxconts)
        return;
    if (grow((void **)&t->conts, &t->capconts, t->nconts + 1, sizeof(*c)) < 0) {
        oom(t);
        return;
    }
    c = &t->conts[t->nconts];
    memset(c, 0, sizeof(*c));
    c->b0 = c->b1 = (uint32_t)t->nblocks;
    c->parent = cur_cont(t);
    c->tag = f->tag;
    c->weight = (int16_t)((h & HINT_CONTENT ? 25 : 0) - (h & ~HINT_CONTENT ? 25 : 0));
    c->boiler = (uint8_t)(tagboiler || (h & HINT_STRONG) ? 1 : (f->flags & FR_BOILER) ? 2 : 0);
    f->cont = (int32_t)t->nconts++;
}

/* text_hint, remembered by a hash of class and id (pages repeat them:
 * one class string on hundreds of elements); role and itemprop, rare,
 * are read each time. */
static int hint_cached(text_t *t, const text_atts_t *a)
{
    uint64_t k;
    unsigned slot;
    if (!a->cls && !a->id && !a->role && !a->itemprop)
        return 0;
    if (a->role || a->itemprop)
        return text_hint(a);
    k = XXH3_64bits_withSeed(a->cls ? a->cls : "", a->cls ? strlen(a->cls) : 0, 1) ^
        XXH3_64bits_withSeed(a->id ? a->id : "", a->id ? strlen(a->id) : 0, 2);
    k |= 1; /* 0 marks an empty slot */
    slot = (unsigned)(k >> 58) & (TEXT_HINT_CACHE - 1);
    if (t->hint_key[slot] != k) {
        t->hint_key[slot] = k;
        t->hint_val[slot] = (uint8_t)text_hint(a);
    }
    return t->hint_val[slot];
}

static void start_visible(text_t *t, tframe_t *f, const elem_t *e, const text_atts_t *a)
{
    /* hints on block elements only: inline ones hold little text */
    int h = (e->what & E_BLOCK) ? hint_cached(t, a) : 0;
    int tagboiler = (e->what & E_BOILER) && !(f->tag == TAG_header && (f->flags & FR_ARTICLE));
    int root = f->tag == TAG_html || f->tag == TAG_body;
    if (e->what & E_BLOCK)
        close_block(t);
    if ((e->what & E_BR) && t->in_block && put(t, "\n", 1) == 0) {
        t->blocks[t->nblocks - 1].chars++;
        t->space = 0;
    }
    if (!root && (tagboiler || (h & (HINT_STRONG | HINT_WORD)) ||
                  ((h & HINT_WEAK) && !(h & HINT_CONTENT)))) {
        f->flags |= FR_BOILER;
        t->boiler++;
    }
    if (e->what & E_MAIN)
        f->flags |= FR_ARTICLE;
    if (e->what & E_BLOCK) {
        f->flags |= FR_BLOCK;
        open_cont(t, f, h, tagboiler);
    }
    if (f->tag == TAG_li) {
        for (int i = t->depth - 1; i >= 0; i--)
            if (text_elem_of(t->stack[i].tag)->what & E_LIST) {
                f->items = ++t->stack[i].items;
                break;
            }
    }
    t->lists += (e->what & E_LIST) != 0;
    t->quotes += (e->what & E_QUOTE) != 0;
    t->pre += (e->what & E_PRE) != 0;
    if (f->tag == TAG_a) {
        const char *href = a->href;
        if (href) {
            f->flags |= FR_LINK;
            t->links++;
            if (t->cfg.mode == TEXT_MARKDOWN && (f->href = link_target(t, href)))
                f->flags |= FR_MD;
        }
    } else if ((e->what & E_MARK) && t->cfg.mode == TEXT_MARKDOWN && !t->pre) {
        f->flags |= FR_MD;
    }
    t->md_pending += (f->flags & FR_MD) != 0;
}

void text_start(text_t *t, const char *name, const char *const *atts)
{
    tframe_t *f;
    const elem_t *e;
    text_atts_t a;
    if (!t || t->finished || t->err)
        return;
    if (t->overflow || t->depth == TEXT_MAX_DEPTH) {
        t->overflow++;
        return;
    }
    f = &t->stack[t->depth];
    memset(f, 0, sizeof(*f));
    f->cont = -1;
    f->tag = (uint8_t)text_elem_lookup(name);
    e = text_elem_of(f->tag);
    if (t->depth > 0)
        f->flags |= t->stack[t->depth - 1].flags & (FR_ARTICLE | FR_SVG);
    if (f->tag == TAG_svg)
        f->flags |= FR_SVG;
    if (f->tag == TAG_html) {
        set_lang(t, text_attr(atts, "lang"), 1);
        set_lang(t, text_attr(atts, "xml:lang"), 2);
    } else if (f->tag == TAG_OTHER && strcmp(name, "meta") == 0) {
        on_meta(t, atts);
    } else if (f->tag == TAG_title && !t->title_done && !(f->flags & FR_SVG)) {
        t->in_title = 1;
    } else if (f->tag == TAG_h1 && !t->h1_len && !t->skip) {
        t->in_h1 = 1;
    }
    t->depth++;
    if (t->skip || (e->what & E_SKIP)) {
        f->flags |= FR_SKIP;
        t->skip++;
        return;
    }
    text_atts_read(atts, &a);
    if (text_hidden(&a)) {
        f->flags |= FR_SKIP;
        t->skip++;
        return;
    }
    start_visible(t, f, e, &a);
}

/* Markdown: the closing mark of frame f, if its opening one is in the
 * block still open. */
static void close_mark(text_t *t, tframe_t *f)
{
    const char *m;
    if (!(f->flags & FR_MDOPEN) || !t->in_block || f->mark < t->blocks[t->nblocks - 1].off)
        return;
    m = mark_open(f->tag);
    if (m[0] != '[') {
        put(t, m, strlen(m));
        return;
    }
    put(t, "](", 2);
    for (const char *u = f->href; u && *u; u++)
        put(t, *u == ')' ? "%29" : u, *u == ')' ? 3 : 1);
    put(t, ")", 1);
}

void text_end(text_t *t, const char *name)
{
    tframe_t *f;
    const elem_t *e;
    (void)name; /* the parser's events are balanced: the top frame is name's */
    if (!t || t->finished || t->err || t->depth == 0)
        return;
    if (t->overflow) {
        t->overflow--;
        return;
    }
    f = &t->stack[--t->depth];
    e = text_elem_of(f->tag);
    if (t->in_title && f->tag == TAG_title) {
        t->in_title = 0;
        t->title_done = 1;
    }
    if (t->in_h1 && f->tag == TAG_h1)
        t->in_h1 = 0;
    if (f->flags & FR_SKIP) {
        t->skip--;
        return;
    }
    if (f->flags & FR_MD) {
        if (!(f->flags & FR_MDOPEN))
            t->md_pending--;
        close_mark(t, f);
    }
    free(f->href);
    f->href = NULL;
    if (e->what & E_BLOCK)
        close_block(t);
    if (f->cont >= 0) {
        tcont_t *c = &t->conts[f->cont];
        c->b1 = (uint32_t)t->nblocks;
        if (c->b1 == c->b0 && (size_t)f->cont == t->nconts - 1)
            t->nconts--; /* held no text: forgotten (its children were too) */
    }
    t->boiler -= (f->flags & FR_BOILER) != 0;
    t->links -= (f->flags & FR_LINK) != 0;
    t->lists -= (e->what & E_LIST) != 0;
    t->quotes -= (e->what & E_QUOTE) != 0;
    t->pre -= (e->what & E_PRE) != 0;
}

static void sink_start(void *ud, const char *name, const char *const *atts)
{
    text_start(ud, name, atts);
}

static void sink_end(void *ud, const char *name)
{
    text_end(ud, name);
}

static void sink_text(void *ud, const char *s, size_t len)
{
    text_chars(ud, s, len);
}

void text_parser_sink(text_t *t, parser_sink_t *sink)
{
    /* the attributes text_start reads (elem.c's text_atts_read, the lang
     * of html, meta's) */
    static const char *const want[] = {
        "class", "id",       "role",    "itemprop", "style",      "hidden", "aria-hidden", "href",
        "lang",  "xml:lang", "content", "property", "http-equiv", "name",   NULL};
    sink->start = sink_start;
    sink->end = sink_end;
    sink->text = sink_text;
    sink->ud = t;
    sink->want = want;
}

void text_close_all(text_t *t)
{
    while (t->depth > 0 && !t->err)
        text_end(t, "");
    close_block(t);
}
