/*
 * elem.c -- what the extractor knows of HTML elements and attributes: the
 * element table (block boundary, invisible, boilerplate by name, list,
 * quote, pre, Markdown mark), the class/id/role hints and the inline ways
 * of hiding an element.
 *
 * DESIGN
 * One table (text_internal.h's TEXT_ELEMENTS), found by a hash of the name;
 * an element id is its index + 1 (0: not in the table, an inline element
 * such as span).  The hints are
 * general words of web authoring (text/README.md lists them); none names a
 * site.  Pure functions, no state.
 */
#include "text_internal.h"

#include <pthread.h>
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

/* Name -> id: open addressing over a hash of the name, built once. */
#define HBITS 8
static unsigned char htab[1 << HBITS];
static pthread_once_t honce = PTHREAD_ONCE_INIT;

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ (h >> 13)) & ((1u << HBITS) - 1);
}

static void build(void)
{
    for (size_t i = 0; i < NELEMS; i++) {
        unsigned h = hash_name(elems[i].name);
        while (htab[h])
            h = (h + 1) & ((1u << HBITS) - 1);
        htab[h] = (unsigned char)(i + 1);
    }
}

/* Element id (index + 1), or TAG_OTHER. */
int text_elem_lookup(const char *name)
{
    pthread_once(&honce, build);
    for (unsigned h = hash_name(name); htab[h]; h = (h + 1) & ((1u << HBITS) - 1))
        if (strcmp(elems[htab[h] - 1].name, name) == 0)
            return htab[h];
    return TAG_OTHER;
}

const elem_t *text_elem_of(int tag)
{
    static const elem_t other = {"", 0, K_TEXT, 0};
    return tag > 0 && (size_t)tag <= NELEMS ? &elems[tag - 1] : &other;
}

/* Class/id words (see DESIGN), matched as substrings of the lowercased
 * value, sorted by their first letter: S strong boilerplate, W weak
 * boilerplate, P content-like. */
enum { S = 1, W = 2, P = 4 };
static const struct kw {
    const char *w;
    unsigned char len, kind;
} kws[] = {
    {"advert", 6, S},   {"article", 7, P},   {"author", 6, W},      {"banner", 6, W},
    {"blog", 4, P},     {"body", 4, P},      {"breadcrumb", 10, S}, {"byline", 6, W},
    {"comment", 7, S},  {"consent", 7, S},   {"content", 7, P},     {"cookie", 6, S},
    {"disqus", 6, S},   {"entry", 5, P},     {"extra", 5, W},       {"footer", 6, S},
    {"footnote", 8, W}, {"gdpr", 4, S},      {"header", 6, W},      {"login", 5, W},
    {"main", 4, P},     {"masthead", 8, S},  {"menu", 4, S},        {"meta", 4, W},
    {"modal", 5, W},    {"navbar", 6, S},    {"navigation", 10, S}, {"newsletter", 10, S},
    {"outbrain", 8, S}, {"pager", 5, W},     {"pagination", 10, S}, {"popup", 5, S},
    {"post", 4, P},     {"promo", 5, S},     {"prose", 5, P},       {"recommend", 9, S},
    {"related", 7, S},  {"rss", 3, W},       {"share", 5, S},       {"sidebar", 7, S},
    {"signup", 6, S},   {"skip-link", 9, S}, {"social", 6, S},      {"sponsor", 7, S},
    {"story", 5, P},    {"subscribe", 9, S}, {"taboola", 7, S},     {"tags", 4, W},
    {"toolbar", 7, W},  {"widget", 6, W},
};
#define NKWS (sizeof(kws) / sizeof(kws[0]))
static unsigned char kfirst[27]; /* kws[kfirst[c - 'a'] .. kfirst[c - 'a' + 1]) */
static pthread_once_t konce = PTHREAD_ONCE_INIT;

static void build_kw(void)
{
    size_t k = 0;
    for (int c = 0; c < 26; c++) {
        kfirst[c] = (unsigned char)k;
        while (k < NKWS && kws[k].w[0] == 'a' + c)
            k++;
    }
    kfirst[26] = (unsigned char)k;
}

/* Whole words (between non-alphanumerics), too short for substrings. */
static const char *const strong_words[] = {"nav", "ad", "ads", NULL};
static const char *const weak_words[] = {"side",  "aside", "foot", "top",    "links",
                                         "tools", "more",  "cta",  "bottom", NULL};

static int in_words(const char *w, size_t n, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strlen(list[i]) == n && memcmp(w, list[i], n) == 0)
            return 1;
    return 0;
}

/* The hint bits of a lowercased value v[0..n). */
static int hint_of(const char *v, size_t n)
{
    int h = 0;
    pthread_once(&konce, build_kw);
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)v[i] - 'a';
        if (c >= 26)
            continue;
        for (unsigned k = kfirst[c]; k < kfirst[c + 1]; k++)
            if (kws[k].len <= n - i && v[i + 1] == kws[k].w[1] && v[i + 2] == kws[k].w[2] &&
                memcmp(v + i, kws[k].w, kws[k].len) == 0)
                h |= kws[k].kind;
    }
    for (size_t i = 0; i < n;) { /* the short words, whole */
        size_t j = i;
        while (j < n && text_is_alnum((unsigned char)v[j]))
            j++;
        if (j - i >= 2 && j - i <= 6) {
            h |= in_words(v + i, j - i, strong_words) ? HINT_WORD : 0;
            h |= in_words(v + i, j - i, weak_words) ? W : 0;
        }
        i = j + 1;
    }
    return h;
}

void text_atts_read(const char *const *atts, text_atts_t *a)
{
    memset(a, 0, sizeof(*a));
    for (; atts && atts[0]; atts += 2) {
        const char *n = atts[0], *v = atts[1] ? atts[1] : "";
        switch (n[0] | 0x20) {
        case 'a':
            if (strcasecmp(n, "aria-hidden") == 0)
                a->aria_hidden = v;
            break;
        case 'c':
            if (!a->cls && strcasecmp(n, "class") == 0)
                a->cls = v;
            break;
        case 'h':
            if (!a->href && strcasecmp(n, "href") == 0)
                a->href = v;
            else if (strcasecmp(n, "hidden") == 0)
                a->hidden = v;
            break;
        case 'i':
            if (!a->id && strcasecmp(n, "id") == 0)
                a->id = v;
            else if (strcasecmp(n, "itemprop") == 0)
                a->itemprop = v;
            break;
        case 'r':
            if (strcasecmp(n, "role") == 0)
                a->role = v;
            break;
        case 's':
            if (strcasecmp(n, "style") == 0)
                a->style = v;
            break;
        default:
            break;
        }
    }
}

/* Hints of class, id, role and itemprop: HINT_* bits or'ed. */
int text_hint(const text_atts_t *a)
{
    char v[512];
    size_t n = 0;
    const char *vals[] = {a->cls, a->id};
    const char *role = a->role, *prop = a->itemprop;
    int h = 0;
    for (int i = 0; i < 2; i++) {
        const char *s = vals[i];
        for (; s && *s && n < sizeof(v) - 2; s++)
            v[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
        v[n++] = ' ';
    }
    if (n > 2)
        h = hint_of(v, n);
    if (role && (strcasecmp(role, "navigation") == 0 || strcasecmp(role, "banner") == 0 ||
                 strcasecmp(role, "contentinfo") == 0 || strcasecmp(role, "complementary") == 0 ||
                 strcasecmp(role, "search") == 0 || strcasecmp(role, "menu") == 0 ||
                 strcasecmp(role, "dialog") == 0 || strcasecmp(role, "alertdialog") == 0))
        h |= HINT_STRONG;
    if ((role && (strcasecmp(role, "main") == 0 || strcasecmp(role, "article") == 0)) ||
        (prop && strcasestr(prop, "articlebody")))
        h |= HINT_CONTENT;
    return h;
}

/* hidden, aria-hidden="true", or an inline style that hides. */
int text_hidden(const text_atts_t *a)
{
    const char *s = a->style;
    char v[256];
    size_t n = 0;
    if (a->hidden || (a->aria_hidden && strcasecmp(a->aria_hidden, "true") == 0))
        return 1;
    if (!s || !strchr(s, ':'))
        return 0;
    for (; *s && n < sizeof(v) - 1; s++)
        if (!text_is_space((unsigned char)*s))
            v[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
    v[n] = '\0';
    return n && (strstr(v, "display:none") || strstr(v, "visibility:hidden"));
}
