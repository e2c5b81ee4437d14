/*
 * text_internal.h -- shared by the files of text/, not part of the public
 * contract.  extract.c turns the parser's events into the page record
 * below (text, blocks, containers); select.c chooses from that record and
 * renders the output; simhash.c hashes it; text.c holds the handle's life
 * and getters.
 */
#ifndef TEXT_INTERNAL_H
#define TEXT_INTERNAL_H

#include "text.h"

#include <stdint.h>

#define TEXT_MAX_DEPTH 256 /* open elements tracked; deeper ones count as their parent */
#define TEXT_HINT_CACHE 64 /* class/id strings whose hints are remembered */

/* Kind of a block: what element made it, for scoring and Markdown. */
enum {
    K_TEXT, /* loose text in a container (div, section, td, ...) */
    K_P,    /* p, address, figcaption, caption, dt, dd, summary */
    K_H1,   /* h1 .. h6 are K_H1 .. K_H1 + 5 */
    K_LI = K_H1 + 6,
    K_PRE,
    K_CELL, /* td, th */
};

/* Block flags. */
enum {
    BL_BOILER = 1,   /* inside an element that names boilerplate (class/id/role/tag) */
    BL_SENTENCE = 2, /* has a sentence end: '.', '!' or '?' then a space or its end */
    BL_ORDERED = 4,  /* a list item of an ordered list */
};

/* A block: a run of text between two block-level boundaries. */
typedef struct tblock {
    uint32_t off, len;   /* its bytes in text_t.buf */
    uint32_t chars;      /* characters (UTF-8 code points), spaces included */
    uint32_t link_chars; /* of which inside <a> */
    uint32_t commas;     /* ',' and the CJK commas and full stops */
    int32_t owner;       /* container of the innermost block element, or -1 */
    uint16_t item;       /* number of an ordered list item */
    uint8_t kind;        /* K_* */
    uint8_t flags;       /* BL_* */
    uint8_t list_depth;  /* nested lists around it */
    uint8_t quote_depth; /* nested blockquotes around it */
} tblock_t;

/* A container: a block-level element that holds at least one block. */
typedef struct tcont {
    uint32_t b0, b1; /* its blocks: [b0, b1) */
    int32_t parent;  /* enclosing container, or -1 */
    int16_t weight;  /* class/id hints: +25 content-like, -25 boilerplate-like */
    uint8_t tag;     /* element id (extract.c's table) */
    uint8_t boiler;  /* 1: the element itself names boilerplate; 2: only by a weak or short
                        word of its class/id, which much prose in it overrules (select.c) */
    float score;     /* select.c's working value */
} tcont_t;

/* One open element. */
typedef struct tframe {
    uint8_t tag;    /* element id, TAG_OTHER for unknown names */
    uint8_t flags;  /* FR_* (extract.c) */
    uint16_t items; /* list items seen (ordered lists) */
    int32_t cont;   /* its container, or -1 */
    uint32_t mark;  /* Markdown: buf length when its inline mark was written */
    char *href;     /* Markdown: the resolved link target of an <a>, or NULL */
} tframe_t;

struct text {
    text_config_t cfg;
    char *url;
    int err;      /* first error (CRAWL_ENOMEM) */
    int finished; /* text_finish() was called */
    /* the page record, written by extract.c */
    char *buf; /* all kept text, blocks back to back */
    size_t len, cap;
    tblock_t *blocks;
    size_t nblocks, capblocks, maxblocks;
    tcont_t *conts;
    size_t nconts, capconts, maxconts;
    tframe_t stack[TEXT_MAX_DEPTH];
    int depth;         /* frames in stack */
    unsigned overflow; /* elements open beyond TEXT_MAX_DEPTH */
    int skip;          /* open elements whose content is not shown */
    int boiler;        /* open elements naming boilerplate */
    int links;         /* open <a> */
    int pre;           /* open <pre> */
    int lists, quotes; /* open lists, blockquotes */
    int md_pending;    /* Markdown marks opened but not yet written */
    int in_block;      /* a block is open (blocks[nblocks - 1]) */
    int space;         /* a space is due before the next character */
    int in_title;      /* inside the first <title> */
    char title[TEXT_MAX_TITLE + 1];
    size_t title_len;
    int title_space, title_done;
    char og_title[TEXT_MAX_TITLE + 1];
    char h1[TEXT_MAX_TITLE + 1];
    int in_h1; /* inside the first <h1> (title fallback) */
    size_t h1_len;
    char lang[TEXT_MAX_LANG + 1];
    int lang_rank;                      /* which source set lang (lower wins) */
    uint64_t hint_key[TEXT_HINT_CACHE]; /* hint_cached(): hash of class and id */
    uint8_t hint_val[TEXT_HINT_CACHE];  /* and its text_hint() */
    /* the results, written by select.c */
    char *out;
    size_t out_len;
    uint64_t simhash; /* text_simhash_of(out), once asked */
    int simhash_done; /* simhash is computed */
    text_stats_t st;
};

/* ---- elem.c: the element table and the attribute hints ---------------- */
/* What an element is (E_*), from the table below. */
enum {
    E_BLOCK = 1,   /* a block boundary, and a container */
    E_SKIP = 2,    /* its content is not shown */
    E_BOILER = 4,  /* the element itself names boilerplate */
    E_LIST = 8,    /* ul, ol, menu, dir */
    E_QUOTE = 16,  /* blockquote */
    E_PRE = 32,    /* pre */
    E_MAIN = 64,   /* article, main: a header inside is content */
    E_MARK = 128,  /* inline Markdown mark (a, b, strong, em, i, code, ...) */
    E_BR = 256,    /* br */
    E_ORDER = 512, /* ol */
};

/* The elements the extractor knows, sorted by name (bsearch):
 * X(name, what (E_*), kind of its blocks (K_*), base value of a container
 * of that element in select.c's scoring: prose containers up, lists, forms
 * and headings down).  An element id is the index + 1 (TAG_name). */
#define TEXT_ELEMENTS                                                                              \
    X(a, E_MARK, K_TEXT, 0)                                                                        \
    X(address, E_BLOCK, K_P, -3)                                                                   \
    X(article, E_BLOCK | E_MAIN, K_TEXT, 10)                                                       \
    X(aside, E_BLOCK | E_BOILER, K_TEXT, 0)                                                        \
    X(audio, E_SKIP, K_TEXT, 0)                                                                    \
    X(b, E_MARK, K_TEXT, 0)                                                                        \
    X(blockquote, E_BLOCK | E_QUOTE, K_TEXT, 3)                                                    \
    X(body, E_BLOCK, K_TEXT, 0)                                                                    \
    X(br, E_BR, K_TEXT, 0)                                                                         \
    X(button, E_SKIP, K_TEXT, 0)                                                                   \
    X(canvas, E_SKIP, K_TEXT, 0)                                                                   \
    X(caption, E_BLOCK, K_P, 0)                                                                    \
    X(center, E_BLOCK, K_TEXT, 0)                                                                  \
    X(code, E_MARK, K_TEXT, 0)                                                                     \
    X(datalist, E_SKIP, K_TEXT, 0)                                                                 \
    X(dd, E_BLOCK, K_P, -3)                                                                        \
    X(details, E_BLOCK, K_TEXT, 0)                                                                 \
    X(dialog, E_BLOCK | E_BOILER, K_TEXT, 0)                                                       \
    X(dir, E_BLOCK | E_LIST, K_TEXT, 0)                                                            \
    X(div, E_BLOCK, K_TEXT, 5)                                                                     \
    X(dl, E_BLOCK, K_TEXT, -3)                                                                     \
    X(dt, E_BLOCK, K_P, -3)                                                                        \
    X(em, E_MARK, K_TEXT, 0)                                                                       \
    X(embed, E_SKIP, K_TEXT, 0)                                                                    \
    X(fieldset, E_BLOCK, K_TEXT, 0)                                                                \
    X(figcaption, E_BLOCK, K_P, 0)                                                                 \
    X(figure, E_BLOCK, K_TEXT, 0)                                                                  \
    X(footer, E_BLOCK | E_BOILER, K_TEXT, 0)                                                       \
    X(form, E_BLOCK, K_TEXT, -3)                                                                   \
    X(frameset, E_SKIP, K_TEXT, 0)                                                                 \
    X(h1, E_BLOCK, K_H1, -5)                                                                       \
    X(h2, E_BLOCK, K_H1 + 1, -5)                                                                   \
    X(h3, E_BLOCK, K_H1 + 2, -5)                                                                   \
    X(h4, E_BLOCK, K_H1 + 3, -5)                                                                   \
    X(h5, E_BLOCK, K_H1 + 4, 0)                                                                    \
    X(h6, E_BLOCK, K_H1 + 5, 0)                                                                    \
    X(head, E_SKIP, K_TEXT, 0)                                                                     \
    X(header, E_BLOCK | E_BOILER, K_TEXT, 0)                                                       \
    X(hr, E_BLOCK, K_TEXT, 0)                                                                      \
    X(html, E_BLOCK, K_TEXT, 0)                                                                    \
    X(i, E_MARK, K_TEXT, 0)                                                                        \
    X(iframe, E_SKIP, K_TEXT, 0)                                                                   \
    X(kbd, E_MARK, K_TEXT, 0)                                                                      \
    X(li, E_BLOCK, K_LI, -3)                                                                       \
    X(main, E_BLOCK | E_MAIN, K_TEXT, 5)                                                           \
    X(map, E_SKIP, K_TEXT, 0)                                                                      \
    X(menu, E_BLOCK | E_LIST | E_BOILER, K_TEXT, 0)                                                \
    X(nav, E_BLOCK | E_BOILER, K_TEXT, 0)                                                          \
    X(noembed, E_SKIP, K_TEXT, 0)                                                                  \
    X(noframes, E_SKIP, K_TEXT, 0)                                                                 \
    X(noscript, E_SKIP, K_TEXT, 0)                                                                 \
    X(object, E_SKIP, K_TEXT, 0)                                                                   \
    X(ol, E_BLOCK | E_LIST | E_ORDER, K_TEXT, -3)                                                  \
    X(optgroup, E_SKIP, K_TEXT, 0)                                                                 \
    X(option, E_SKIP, K_TEXT, 0)                                                                   \
    X(p, E_BLOCK, K_P, 0)                                                                          \
    X(pre, E_BLOCK | E_PRE, K_PRE, 3)                                                              \
    X(script, E_SKIP, K_TEXT, 0)                                                                   \
    X(section, E_BLOCK, K_TEXT, 3)                                                                 \
    X(select, E_SKIP, K_TEXT, 0)                                                                   \
    X(strong, E_MARK, K_TEXT, 0)                                                                   \
    X(style, E_SKIP, K_TEXT, 0)                                                                    \
    X(summary, E_BLOCK, K_P, 0)                                                                    \
    X(svg, E_SKIP, K_TEXT, 0)                                                                      \
    X(table, E_BLOCK, K_TEXT, 0)                                                                   \
    X(tbody, E_BLOCK, K_TEXT, 0)                                                                   \
    X(td, E_BLOCK, K_CELL, 3)                                                                      \
    X(template, E_SKIP, K_TEXT, 0)                                                                 \
    X(textarea, E_SKIP, K_TEXT, 0)                                                                 \
    X(tfoot, E_BLOCK, K_TEXT, 0)                                                                   \
    X(th, E_BLOCK, K_CELL, -5)                                                                     \
    X(thead, E_BLOCK, K_TEXT, 0)                                                                   \
    X(title, E_SKIP, K_TEXT, 0)                                                                    \
    X(tr, E_BLOCK, K_TEXT, 0)                                                                      \
    X(tt, E_MARK, K_TEXT, 0)                                                                       \
    X(ul, E_BLOCK | E_LIST, K_TEXT, -3)                                                            \
    X(video, E_SKIP, K_TEXT, 0)

typedef struct elem {
    const char *name;
    unsigned short what; /* E_* */
    unsigned char kind;  /* K_* of its blocks */
    signed char base;    /* select.c: base value of a container */
} elem_t;

#define X(n, w, k, b) TAG_##n,
enum { TAG_OTHER = 0, TEXT_ELEMENTS };
#undef X
/* Element id of a lowercase name (index in the table + 1), or TAG_OTHER. */
int text_elem_lookup(const char *name);
/* The table's entry of an id (an empty inline entry for TAG_OTHER). */
const elem_t *text_elem_of(int tag);
/* The attributes the extractor reads, found in one pass over atts (the
 * first of each; values as given, "" for a bare one, NULL if absent). */
typedef struct text_atts {
    const char *cls, *id, *role, *itemprop, *style, *href, *hidden, *aria_hidden;
} text_atts_t;
void text_atts_read(const char *const *atts, text_atts_t *a);
/* class/id/role/itemprop hints, bits: */
enum {
    HINT_STRONG = 1,  /* a strong word as a substring (comment, sidebar, ...) or a role */
    HINT_WEAK = 2,    /* a weak word (header, widget, ...; side, top, ...) */
    HINT_CONTENT = 4, /* a content word (article, content, ...) */
    HINT_WORD = 8,    /* a strong short word, whole (nav, ad, ads): "nav-new-1-pixel" too */
};
int text_hint(const text_atts_t *a);
/* The value of attribute name (ASCII case-insensitive) in atts, "" for a
 * bare one, NULL if absent. */
const char *text_attr(const char *const *atts, const char *name);
/* 1 if the attributes hide the element (hidden, aria-hidden, inline style). */
int text_hidden(const text_atts_t *a);

/* extract.c: the page ended: every open element and the open block end. */
void text_close_all(text_t *t);

/* select.c: chooses and renders into t->out (and t->out_len).  Returns 0
 * or CRAWL_ENOMEM. */
int text_select(text_t *t);

static inline int text_is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static inline int text_is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

#endif
