/*
 * tree.c -- the text sink's elements: the start and end tags of a page, as
 * written, become balanced start/end events, as a browser would nest them.
 *
 * DESIGN
 * A stack of the open elements (at most PARSER_SINK_MAX_DEPTH; a start tag
 * past it is dropped, and so is its end tag, which then matches nothing)
 * and a reduced form of the HTML Standard's tree construction, enough for
 * the text of a page to land in the elements a browser would put it in:
 *  - void elements (br, img, meta, ...) and any tag written "<x/>" end at
 *    once (libxml2 does the same for "<x/>");
 *  - implied ends: a block start (div, p, ul, table, h1, ...) closes an open
 *    p in button scope; li closes the open li, dd/dt the open dd/dt (up to
 *    a special element other than address/div/p); tr, td/th, tbody/thead/
 *    tfoot close their open counterparts within the table; a heading
 *    closes a heading that is the current element; a closes an open a with
 *    no special element in between; option closes option;
 *  - <head>: an element that does not belong in the head, or text that is
 *    not whitespace, ends it; a second html, head or body tag is ignored;
 *  - end tags: of a special element (div, li, td, ...), closes it and what
 *    is open inside when it is in scope (scope ends at table, td, th,
 *    caption, html, ... -- so a stray </div> in a cell cannot close the
 *    page's layout), else is ignored; of any other element, closes the
 *    nearest one of that name unless a special element is open inside it;
 *    the end tag of any heading closes the open heading, whatever its level;
 *    </body> and </html> are ignored (what follows is still the body's),
 *    </br> is a br, </p> with no p open an empty p.
 * Formatting elements (a, b, em, font, ...) misnested with blocks
 * ("<a><p>x</a>y") close anyway: what is open inside ends with them and
 * opens again (without attributes; the Standard's adoption agency moves
 * those elements instead).  Html and body open when the page leaves them
 * out.  Not done: foster parenting of text in tables, foreign content rules
 * beyond "<x/>".
 * State: one tree_t per page, inside the sink reader; no allocation.
 */
#include "parser_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    T_VOID = 1,     /* no content, no end tag */
    T_SPECIAL = 2,  /* the Standard's "special" category */
    T_SCOPE = 4,    /* ends the default scope */
    T_CLOSEP = 8,   /* its start tag closes an open p */
    T_HEADOK = 16,  /* belongs in the head */
    T_TSCOPE = 32,  /* ends table scope */
    T_RAW = 64,     /* content dropped (raw text) */
    T_RCDATA = 128, /* content is text without markup */
    T_HEADING = 256,
    T_TABLE = 512,   /* td, th, tr, tbody, thead, tfoot, caption: table scope */
    T_FORMAT = 1024, /* a formatting element (a, b, em, ...): closed across blocks */
};
#define FM T_FORMAT

#define SP T_SPECIAL
#define CP (T_SPECIAL | T_CLOSEP)
/* The elements the rules know: X(name, flags). */
#define TREE_ELEMENTS                                                                              \
    X(a, FM)                                                                                       \
    X(address, CP)                                                                                 \
    X(applet, SP | T_SCOPE)                                                                        \
    X(area, SP | T_VOID)                                                                           \
    X(article, CP)                                                                                 \
    X(aside, CP)                                                                                   \
    X(b, FM)                                                                                       \
    X(base, SP | T_VOID | T_HEADOK)                                                                \
    X(basefont, SP | T_VOID | T_HEADOK)                                                            \
    X(bgsound, SP | T_VOID | T_HEADOK)                                                             \
    X(big, FM)                                                                                     \
    X(blockquote, CP)                                                                              \
    X(body, SP)                                                                                    \
    X(br, SP | T_VOID)                                                                             \
    X(button, SP)                                                                                  \
    X(caption, SP | T_SCOPE | T_TABLE)                                                             \
    X(center, CP)                                                                                  \
    X(code, FM)                                                                                    \
    X(col, SP | T_VOID)                                                                            \
    X(colgroup, SP)                                                                                \
    X(dd, CP)                                                                                      \
    X(details, CP)                                                                                 \
    X(dialog, CP)                                                                                  \
    X(dir, CP)                                                                                     \
    X(div, CP)                                                                                     \
    X(dl, CP)                                                                                      \
    X(dt, CP)                                                                                      \
    X(em, FM)                                                                                      \
    X(embed, SP | T_VOID)                                                                          \
    X(fieldset, CP)                                                                                \
    X(figcaption, CP)                                                                              \
    X(figure, CP)                                                                                  \
    X(font, FM)                                                                                    \
    X(footer, CP)                                                                                  \
    X(form, CP)                                                                                    \
    X(frame, SP | T_VOID)                                                                          \
    X(frameset, SP)                                                                                \
    X(h1, CP | T_HEADING)                                                                          \
    X(h2, CP | T_HEADING)                                                                          \
    X(h3, CP | T_HEADING)                                                                          \
    X(h4, CP | T_HEADING)                                                                          \
    X(h5, CP | T_HEADING)                                                                          \
    X(h6, CP | T_HEADING)                                                                          \
    X(head, SP)                                                                                    \
    X(header, CP)                                                                                  \
    X(hgroup, CP)                                                                                  \
    X(hr, CP | T_VOID)                                                                             \
    X(html, SP | T_SCOPE | T_TSCOPE)                                                               \
    X(i, FM)                                                                                       \
    X(iframe, SP)                                                                                  \
    X(img, SP | T_VOID)                                                                            \
    X(input, SP | T_VOID)                                                                          \
    X(keygen, SP | T_VOID)                                                                         \
    X(li, CP)                                                                                      \
    X(link, SP | T_VOID | T_HEADOK)                                                                \
    X(listing, CP)                                                                                 \
    X(main, CP)                                                                                    \
    X(marquee, SP | T_SCOPE)                                                                       \
    X(menu, CP)                                                                                    \
    X(meta, SP | T_VOID | T_HEADOK)                                                                \
    X(nav, CP)                                                                                     \
    X(nobr, FM)                                                                                    \
    X(noembed, SP)                                                                                 \
    X(noframes, SP | T_HEADOK)                                                                     \
    X(noscript, SP | T_HEADOK)                                                                     \
    X(object, SP | T_SCOPE)                                                                        \
    X(ol, CP)                                                                                      \
    X(option, 0)                                                                                   \
    X(p, CP)                                                                                       \
    X(param, SP | T_VOID)                                                                          \
    X(plaintext, CP)                                                                               \
    X(pre, CP)                                                                                     \
    X(s, FM)                                                                                       \
    X(script, SP | T_RAW | T_HEADOK)                                                               \
    X(search, CP)                                                                                  \
    X(section, CP)                                                                                 \
    X(select, SP)                                                                                  \
    X(small, FM)                                                                                   \
    X(source, SP | T_VOID)                                                                         \
    X(strike, FM)                                                                                  \
    X(strong, FM)                                                                                  \
    X(style, SP | T_RAW | T_HEADOK)                                                                \
    X(summary, CP)                                                                                 \
    X(table, CP | T_SCOPE | T_TSCOPE)                                                              \
    X(tbody, SP | T_TABLE)                                                                         \
    X(td, SP | T_SCOPE | T_TABLE)                                                                  \
    X(template, SP | T_SCOPE | T_TSCOPE | T_HEADOK)                                                \
    X(textarea, SP | T_RAW)                                                                        \
    X(tfoot, SP | T_TABLE)                                                                         \
    X(th, SP | T_SCOPE | T_TABLE)                                                                  \
    X(thead, SP | T_TABLE)                                                                         \
    X(title, SP | T_RCDATA | T_HEADOK)                                                             \
    X(tr, SP | T_TABLE)                                                                            \
    X(track, SP | T_VOID)                                                                          \
    X(tt, FM)                                                                                      \
    X(u, FM)                                                                                       \
    X(ul, CP)                                                                                      \
    X(wbr, SP | T_VOID)                                                                            \
    X(xmp, CP | T_RCDATA)

typedef struct tel {
    const char *name;
    unsigned short f;
} tel_t;

#define X(n, f) {#n, f},
static const tel_t tels[] = {TREE_ELEMENTS};
#undef X
/* id = index + 1 */
#define X(n, f) ID_##n,
enum { ID_NONE_, TREE_ELEMENTS };
#undef X
#define NTELS (sizeof(tels) / sizeof(tels[0]))

enum { TS_HTML = 1, TS_BODY = 2 };

/* Name -> id: open addressing over a hash of the name, built once. */
#define HBITS 9
static unsigned char htab[1 << HBITS];
static pthread_once_t honce = PTHREAD_ONCE_INIT;

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ (h >> 15)) & ((1u << HBITS) - 1);
}

static void build(void)
{
    for (size_t i = 0; i < NTELS; i++) {
        unsigned h = hash_name(tels[i].name);
        while (htab[h])
            h = (h + 1) & ((1u << HBITS) - 1);
        htab[h] = (unsigned char)(i + 1);
    }
}

static int lookup(const char *name)
{
    pthread_once(&honce, build);
    for (unsigned h = hash_name(name); htab[h]; h = (h + 1) & ((1u << HBITS) - 1))
        if (strcmp(tels[htab[h] - 1].name, name) == 0)
            return htab[h];
    return 0;
}

static unsigned flags_of(int id)
{
    return id ? tels[id - 1].f : 0;
}

/* Node n is element id (known), or called name (id 0). */
static int is_el(const tree_node_t *n, int id, const char *name)
{
    return id ? n->id == id : n->id == 0 && name && strcmp(n->name, name) == 0;
}

void tree_init(tree_t *t, const parser_sink_t *sink)
{
    memset(t, 0, sizeof(*t));
    t->sink = *sink;
}

/* Ends the open elements down to index i (included). */
static void pop_to(tree_t *t, int i)
{
    while (t->n > i) {
        t->n--;
        if (t->head == 1 && t->st[t->n].id == ID_head)
            t->head = 2;
        if (t->sink.end)
            t->sink.end(t->sink.ud, t->st[t->n].name);
    }
}

/* The index of the nearest open element id/name, looking down from the
 * current one and stopping (-1) past an element with a flag of stop. */
static int find(const tree_t *t, int id, const char *name, unsigned stop)
{
    for (int i = t->n - 1; i >= 0; i--) {
        if (is_el(&t->st[i], id, name))
            return i;
        if (flags_of(t->st[i].id) & stop)
            return -1;
    }
    return -1;
}

/* The open p in button scope, or -1. */
static int p_in_scope(const tree_t *t)
{
    for (int i = t->n - 1; i >= 0; i--) {
        int id = t->st[i].id;
        if (id == ID_p)
            return i;
        if ((flags_of(id) & T_SCOPE) || id == ID_button)
            return -1;
    }
    return -1;
}

/* li, dd, dt: closes the open item (a or b) unless a special element other
 * than address, div and p is open inside it. */
static void close_item(tree_t *t, int a, int b)
{
    for (int i = t->n - 1; i >= 0; i--) {
        int id = t->st[i].id;
        if (id == a || id == b) {
            pop_to(t, i);
            return;
        }
        if ((flags_of(id) & T_SPECIAL) && id != ID_address && id != ID_div && id != ID_p)
            return;
    }
}

/* Table parts: closes the nearest open element a, b or c within the
 * current table. */
static void close_in_table(tree_t *t, int a, int b, int c)
{
    for (int i = t->n - 1; i >= 0; i--) {
        int id = t->st[i].id;
        if (id == a || id == b || id == c) {
            pop_to(t, i);
            return;
        }
        if (flags_of(id) & T_TSCOPE)
            return;
    }
}

/* Opens an element the page did not write (html, body). */
static void implied_start(tree_t *t, int id)
{
    const char *name = tels[id - 1].name;
    if (t->n == PARSER_SINK_MAX_DEPTH)
        return;
    if (t->sink.start)
        t->sink.start(t->sink.ud, name, NULL);
    t->st[t->n].id = (unsigned char)id;
    memcpy(t->st[t->n++].name, name, strlen(name) + 1);
}

/* Content of the body begins (an element that is not of the head, or
 * text): the head ends, and a body opens if none was written; a later
 * <head> or <body> is ignored. */
static void body_begins(tree_t *t)
{
    int i;
    if (t->head == 1 && (i = find(t, ID_head, NULL, 0)) >= 0)
        pop_to(t, i);
    t->head = 2;
    if (!(t->seen & TS_BODY)) {
        t->seen |= TS_BODY;
        implied_start(t, ID_body);
    }
}

/* Closes the formatting element at index i although elements are open
 * inside it (misnested: "<a><p>x</a>y</p>"): they end with it and open
 * again, without their attributes (the Standard's adoption agency moves
 * them instead).  Up to 16 of them; more, and the element stays open. */
static void close_format(tree_t *t, int i)
{
    tree_node_t keep[16];
    int n = t->n - i - 1;
    if (n > 16)
        return;
    memcpy(keep, &t->st[i + 1], (size_t)n * sizeof(keep[0]));
    pop_to(t, i);
    for (int k = 0; k < n; k++) {
        if (t->sink.start)
            t->sink.start(t->sink.ud, keep[k].name, NULL);
        t->st[t->n++] = keep[k];
    }
}

/* The nearest open formatting element id in scope, or -1. */
static int find_format(const tree_t *t, int id)
{
    return find(t, id, NULL, T_SCOPE);
}

/* The implied ends (and starts) a start tag brings. */
static void implied_ends(tree_t *t, int id, unsigned f)
{
    int i;
    if (!(t->seen & TS_HTML) && id != ID_html) {
        t->seen |= TS_HTML;
        implied_start(t, ID_html);
    }
    if (id == ID_body) {
        if (t->head == 1 && (i = find(t, ID_head, NULL, 0)) >= 0)
            pop_to(t, i);
        t->head = 2;
    } else if (!(t->seen & TS_BODY) && !(f & T_HEADOK) && id != ID_html) {
        body_begins(t);
    }
    if (id == ID_li)
        close_item(t, ID_li, -1);
    else if (id == ID_dd || id == ID_dt)
        close_item(t, ID_dd, ID_dt);
    if ((f & T_CLOSEP) && (i = p_in_scope(t)) >= 0)
        pop_to(t, i);
    if ((f & T_HEADING) && t->n > 0 && (flags_of(t->st[t->n - 1].id) & T_HEADING))
        pop_to(t, t->n - 1);
    if (id == ID_tr)
        close_in_table(t, ID_tr, -1, -1);
    else if (id == ID_td || id == ID_th)
        close_in_table(t, ID_td, ID_th, -1);
    else if (id == ID_tbody || id == ID_thead || id == ID_tfoot)
        close_in_table(t, ID_tbody, ID_thead, ID_tfoot);
    else if (id == ID_a && (i = find_format(t, ID_a)) >= 0)
        close_format(t, i);
    else if (id == ID_option && t->n > 0 && t->st[t->n - 1].id == ID_option)
        pop_to(t, t->n - 1);
}

int tree_start(tree_t *t, const char *name, const char *const *atts, int selfclose)
{
    int id = lookup(name);
    unsigned f = flags_of(id);
    int raw = f & T_RAW ? 1 : f & T_RCDATA ? 2 : 0;
    if (id == ID_html || id == ID_body) {
        int bit = id == ID_html ? TS_HTML : TS_BODY;
        if (t->seen & bit)
            return 0; /* a second one: ignored */
        t->seen |= bit;
    } else if (id == ID_head) {
        if (t->head)
            return 0;
        t->head = 1;
        f |= T_HEADOK;
    }
    implied_ends(t, id, f);
    if (t->n == PARSER_SINK_MAX_DEPTH && !(f & T_VOID) && !selfclose)
        return raw; /* too deep: dropped (its end tag will match nothing) */
    if (t->sink.start)
        t->sink.start(t->sink.ud, name, atts);
    if ((f & T_VOID) || selfclose) {
        if (t->sink.end)
            t->sink.end(t->sink.ud, name);
        return 0;
    }
    tree_node_t *n = &t->st[t->n++];
    n->id = (unsigned char)id;
    memcpy(n->name, name, strlen(name) + 1);
    return raw;
}

void tree_end(tree_t *t, const char *name)
{
    int id = lookup(name), i = -1;
    unsigned f = flags_of(id);
    if (id == ID_body || id == ID_html)
        return;
    if (id == ID_br) {
        tree_start(t, "br", NULL, 1);
        return;
    }
    if (id == ID_p) {
        if ((i = p_in_scope(t)) >= 0)
            pop_to(t, i);
        else
            tree_start(t, "p", NULL, 1);
        return;
    }
    if (f & T_SPECIAL) {
        unsigned stop = (f & (T_TABLE | T_TSCOPE)) ? T_TSCOPE : T_SCOPE;
        for (int k = t->n - 1; k >= 0; k--) {
            int nid = t->st[k].id;
            if (nid == id || ((f & T_HEADING) && (flags_of(nid) & T_HEADING))) {
                i = k;
                break;
            }
            if ((flags_of(nid) & stop) || (id == ID_li && (nid == ID_ul || nid == ID_ol)))
                break;
        }
    } else if (f & T_FORMAT) {
        if ((i = find_format(t, id)) >= 0)
            close_format(t, i);
        return;
    } else {
        i = find(t, id, name, T_SPECIAL);
    }
    if (i >= 0)
        pop_to(t, i);
}

void tree_text(void *ud, const char *s, size_t n)
{
    tree_t *t = ud;
    if (!(t->seen & TS_BODY)) { /* text that is not whitespace begins the body */
        for (size_t k = 0; k < n; k++)
            if (!(s[k] == ' ' || s[k] == '\n' || s[k] == '\t' || s[k] == '\r' || s[k] == '\f')) {
                if (t->n > 0 && (flags_of(t->st[t->n - 1].id) & T_RCDATA))
                    break; /* the title's text */
                if (!(t->seen & TS_HTML)) {
                    t->seen |= TS_HTML;
                    implied_start(t, ID_html);
                }
                body_begins(t);
                break;
            }
    }
    if (t->sink.text && n > 0)
        t->sink.text(t->sink.ud, s, n);
}

void tree_finish(tree_t *t)
{
    pop_to(t, 0);
}
