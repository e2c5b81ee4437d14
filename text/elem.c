/*
 * elem.c -- what the extractor knows of HTML elements and attributes: the
 * element table (block boundary, invisible, boilerplate by name, list,
 * quote, pre, Markdown mark), the class/id/role hints and the inline ways
 * of hiding an element.
 *
 * DESIGN
 * One sorted table, searched with bsearch; an element id is its index + 1
 * (0: not in the table, an inline element such as span).  The hints are
 * general words of web authoring (text/README.md lists them); none names a
 * site.  Pure functions, no state.
 */
#include "text_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *text_attr(const char *const *atts, const char *name)
{
    for (; atts && atts[0]; atts += 2)
        if (strcasecmp(atts[0], name) == 0)
            return atts[1] ? atts[1] : "";
    return NULL;
}

/* Sorted by name (bsearch).  Index + 1 is the element id. */
static const elem_t elems[] = {
    {"a", E_MARK, K_TEXT},
    {"address", E_BLOCK, K_P},
    {"article", E_BLOCK | E_MAIN, K_TEXT},
    {"aside", E_BLOCK | E_BOILER, K_TEXT},
    {"audio", E_SKIP, K_TEXT},
    {"b", E_MARK, K_TEXT},
    {"blockquote", E_BLOCK | E_QUOTE, K_TEXT},
    {"body", E_BLOCK, K_TEXT},
    {"br", E_BR, K_TEXT},
    {"button", E_SKIP, K_TEXT},
    {"canvas", E_SKIP, K_TEXT},
    {"caption", E_BLOCK, K_P},
    {"center", E_BLOCK, K_TEXT},
    {"code", E_MARK, K_TEXT},
    {"datalist", E_SKIP, K_TEXT},
    {"dd", E_BLOCK, K_P},
    {"details", E_BLOCK, K_TEXT},
    {"dialog", E_BLOCK | E_BOILER, K_TEXT},
    {"dir", E_BLOCK | E_LIST, K_TEXT},
    {"div", E_BLOCK, K_TEXT},
    {"dl", E_BLOCK, K_TEXT},
    {"dt", E_BLOCK, K_P},
    {"em", E_MARK, K_TEXT},
    {"embed", E_SKIP, K_TEXT},
    {"fieldset", E_BLOCK, K_TEXT},
    {"figcaption", E_BLOCK, K_P},
    {"figure", E_BLOCK, K_TEXT},
    {"footer", E_BLOCK | E_BOILER, K_TEXT},
    {"form", E_BLOCK, K_TEXT},
    {"frameset", E_SKIP, K_TEXT},
    {"h1", E_BLOCK, K_H1},
    {"h2", E_BLOCK, K_H1 + 1},
    {"h3", E_BLOCK, K_H1 + 2},
    {"h4", E_BLOCK, K_H1 + 3},
    {"h5", E_BLOCK, K_H1 + 4},
    {"h6", E_BLOCK, K_H1 + 5},
    {"head", E_SKIP, K_TEXT},
    {"header", E_BLOCK | E_BOILER, K_TEXT},
    {"hr", E_BLOCK, K_TEXT},
    {"html", E_BLOCK, K_TEXT},
    {"i", E_MARK, K_TEXT},
    {"iframe", E_SKIP, K_TEXT},
    {"kbd", E_MARK, K_TEXT},
    {"li", E_BLOCK, K_LI},
    {"main", E_BLOCK | E_MAIN, K_TEXT},
    {"map", E_SKIP, K_TEXT},
    {"menu", E_BLOCK | E_LIST | E_BOILER, K_TEXT},
    {"nav", E_BLOCK | E_BOILER, K_TEXT},
    {"noembed", E_SKIP, K_TEXT},
    {"noframes", E_SKIP, K_TEXT},
    {"noscript", E_SKIP, K_TEXT},
    {"object", E_SKIP, K_TEXT},
    {"ol", E_BLOCK | E_LIST | E_ORDER, K_TEXT},
    {"optgroup", E_SKIP, K_TEXT},
    {"option", E_SKIP, K_TEXT},
    {"p", E_BLOCK, K_P},
    {"pre", E_BLOCK | E_PRE, K_PRE},
    {"script", E_SKIP, K_TEXT},
    {"section", E_BLOCK, K_TEXT},
    {"select", E_SKIP, K_TEXT},
    {"strong", E_MARK, K_TEXT},
    {"style", E_SKIP, K_TEXT},
    {"summary", E_BLOCK, K_P},
    {"svg", E_SKIP, K_TEXT},
    {"table", E_BLOCK, K_TEXT},
    {"tbody", E_BLOCK, K_TEXT},
    {"td", E_BLOCK, K_CELL},
    {"template", E_SKIP, K_TEXT},
    {"textarea", E_SKIP, K_TEXT},
    {"tfoot", E_BLOCK, K_TEXT},
    {"th", E_BLOCK, K_CELL},
    {"thead", E_BLOCK, K_TEXT},
    {"tr", E_BLOCK, K_TEXT},
    {"tt", E_MARK, K_TEXT},
    {"ul", E_BLOCK | E_LIST, K_TEXT},
    {"video", E_SKIP, K_TEXT},
};
#define NELEMS (sizeof(elems) / sizeof(elems[0]))

static int cmp_elem(const void *key, const void *e)
{
    return strcmp(key, ((const elem_t *)e)->name);
}

/* Element id (index + 1), or TAG_OTHER. */
int text_elem_lookup(const char *name)
{
    const elem_t *e = bsearch(name, elems, NELEMS, sizeof(elems[0]), cmp_elem);
    return e ? (int)(e - elems) + 1 : TAG_OTHER;
}

const elem_t *text_elem_of(int tag)
{
    static const elem_t other = {"", 0, K_TEXT};
    return tag > 0 && (size_t)tag <= NELEMS ? &elems[tag - 1] : &other;
}

int text_tag_is(int tag, const char *name)
{
    return tag > 0 && strcmp(text_elem_of(tag)->name, name) == 0;
}

/* Class/id words (see DESIGN).  Substrings of the lowercased value. */
static const char *const strong_neg[] = {
    "comment", "sidebar",  "footer",     "cookie",     "consent",    "gdpr",      "share",
    "social",  "related",  "newsletter", "breadcrumb", "advert",     "sponsor",   "promo",
    "popup",   "disqus",   "outbrain",   "taboola",    "subscribe",  "signup",    "navbar",
    "menu",    "masthead", "pagination", "recommend",  "navigation", "skip-link", NULL};
static const char *const weak_neg[] = {"header", "widget",  "banner", "tags",  "meta",
                                       "pager",  "toolbar", "login",  "modal", "footnote",
                                       "byline", "author",  "rss",    "extra", NULL};
static const char *const pos[] = {"article", "content", "entry", "main", "post",
                                  "story",   "body",    "prose", "blog", NULL};
/* Whole words (between non-alphanumerics), too short for substrings. */
static const char *const strong_words[] = {"nav", "ad", "ads", NULL};
static const char *const weak_words[] = {"side",  "aside", "foot", "top",    "links",
                                         "tools", "more",  "cta",  "bottom", NULL};

static int any_sub(const char *v, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strstr(v, list[i]))
            return 1;
    return 0;
}

static int any_word(const char *v, const char *const *list)
{
    while (*v) {
        size_t n = 0;
        while (v[n] && text_is_alnum((unsigned char)v[n]))
            n++;
        for (int i = 0; n && list[i]; i++)
            if (strlen(list[i]) == n && memcmp(v, list[i], n) == 0)
                return 1;
        v += n;
        while (*v && !text_is_alnum((unsigned char)*v))
            v++;
    }
    return 0;
}

/* Hints of class, id, role and itemprop: 1 strong boilerplate, 2 weak
 * boilerplate, 4 content-like.  Bits or'ed. */
int text_hint(const char *const *atts)
{
    char v[512];
    size_t n = 0;
    const char *names[] = {"class", "id", NULL};
    const char *role = text_attr(atts, "role"), *prop = text_attr(atts, "itemprop");
    int h = 0;
    for (int i = 0; names[i]; i++) {
        const char *s = text_attr(atts, names[i]);
        for (; s && *s && n < sizeof(v) - 2; s++)
            v[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
        v[n++] = ' ';
    }
    v[n] = '\0';
    if (n > 2) {
        h |= any_sub(v, strong_neg) || any_word(v, strong_words) ? 1 : 0;
        h |= any_sub(v, weak_neg) || any_word(v, weak_words) ? 2 : 0;
        h |= any_sub(v, pos) ? 4 : 0;
    }
    if (role && (strcasecmp(role, "navigation") == 0 || strcasecmp(role, "banner") == 0 ||
                 strcasecmp(role, "contentinfo") == 0 || strcasecmp(role, "complementary") == 0 ||
                 strcasecmp(role, "search") == 0 || strcasecmp(role, "menu") == 0 ||
                 strcasecmp(role, "dialog") == 0 || strcasecmp(role, "alertdialog") == 0))
        h |= 1;
    if ((role && (strcasecmp(role, "main") == 0 || strcasecmp(role, "article") == 0)) ||
        (prop && strcasestr(prop, "articlebody")))
        h |= 4;
    return h;
}

/* hidden, aria-hidden="true", or an inline style that hides. */
int text_hidden(const char *const *atts)
{
    const char *a = text_attr(atts, "aria-hidden"), *s = text_attr(atts, "style");
    char v[256];
    size_t n = 0;
    if (text_attr(atts, "hidden") || (a && strcasecmp(a, "true") == 0))
        return 1;
    for (; s && *s && n < sizeof(v) - 1; s++)
        if (!text_is_space((unsigned char)*s))
            v[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
    v[n] = '\0';
    return n && (strstr(v, "display:none") || strstr(v, "visibility:hidden"));
}
