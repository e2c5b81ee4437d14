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

#define X(n, w, k, b) {#n, w, k, b},
static const elem_t elems[] = {TEXT_ELEMENTS};
#undef X
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
    static const elem_t other = {"", 0, K_TEXT, 0};
    return tag > 0 && (size_t)tag <= NELEMS ? &elems[tag - 1] : &other;
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
