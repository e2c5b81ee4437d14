/*
 * robots.c -- the rule set of a robots.txt (see robots.h): building it,
 * matching paths against it, its accessors.  Parsing robots.txt text is in
 * robots_parse.c, the serialized form in robots_serial.c; the three share
 * policy_internal.h.
 *
 * DESIGN
 * Rules are stored percent-encoding normalized (robots_norm() below; the
 * path is normalized the same way before matching), back to back in one byte
 * pool, sorted by (pattern length desc, allow first, bytes) with exact
 * duplicates removed.  robots_allowed() walks that order and stops at the
 * first match: the first match is the longest, and allow wins ties.  With
 * INDEX_MIN rules or more, an index (slot_of()) files each rule under a hash
 * of its literal prefix cut to 16, 8, 4 or 2 octets, so a check walks one
 * bucket per level plus the catch-all slot.  A pattern is a list of literal
 * segments separated by '*', optionally ending in '$'; it is matched greedily
 * (leftmost occurrence of each segment, by a linear search), which is exact
 * for '*'-only patterns and never backtracks.
 *
 * Invariants: every rule pattern is non-empty and NUL-free; at most
 * ROBOTS_MAX_RULES rules and ROBOTS_MAX_SITEMAPS sitemaps; a robots_t is
 * immutable once robots_build() returns it.  Memory is bounded by
 * 3 x ROBOTS_MAX_BYTES per candidate list.
 */
#include "robots.h"

#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "policy_internal.h"

#define PATH_STACK_BUF 4096               /* normalized paths up to this size avoid malloc */
#define INDEX_MIN 16                      /* fewer rules than this are scanned linearly */
#define NLEVEL 4                          /* index levels: literal prefixes of 2, 4, 8, 16 octets */
#define NBUCKET 64                        /* hash buckets per level */
#define NSLOT (NLEVEL * NBUCKET + 1)      /* index slots: levels + catch-all */
#define level_len(lv) ((size_t)2 << (lv)) /* prefix octets indexed at level lv */
#define SHORT_HAY 256                     /* shorter paths are searched without memmem */

#define is_unreserved(c)                                                                           \
    (is_alpha(c) || is_digit(c) || (c) == '-' || (c) == '.' || (c) == '_' || (c) == '~')
#define needs_escape(c) ((c) <= 0x20 || (c) >= 0x7f) /* robots_norm() escapes these raw octets */

void *robots_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *np = realloc(p, nc * elem);
    if (np)
        *cap = nc;
    return np;
}

/* ---- normalization ------------------------------------------------------ */

size_t robots_norm(const char *in, size_t n, char *out)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%' && i + 2 < n) {
            int h = parser_hex_digit((unsigned char)in[i + 1]),
                l = parser_hex_digit((unsigned char)in[i + 2]);
            if (h >= 0 && l >= 0) {
                unsigned char d = (unsigned char)(h * 16 + l);
                if (is_unreserved(d)) {
                    out[o++] = (char)d;
                } else {
                    out[o++] = '%';
                    out[o++] = hx[h];
                    out[o++] = hx[l];
                }
                i += 2;
                continue;
            }
        }
        if (c == '%' || needs_escape(c)) {
            out[o++] = '%';
            out[o++] = hx[c >> 4];
            out[o++] = hx[c & 15];
        } else {
            out[o++] = (char)c;
        }
    }
    return o;
}

/* True when robots_norm() would return in unchanged (the common case). */
static int is_normal(const char *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%' || needs_escape(c))
            return 0;
    }
    return 1;
}

/* ---- matching ----------------------------------------------------------- */

/* Leftmost occurrence of nd (nl >= 1) in h: memmem (linear) for long
 * haystacks, a plain scan (at most SHORT_HAY * nl steps) for short ones. */
static const char *find(const char *h, size_t hl, const char *nd, size_t nl)
{
    if (hl >= SHORT_HAY)
        return memmem(h, hl, nd, nl);
    for (size_t i = 0; i + nl <= hl; i++)
        if (h[i] == nd[0] && memcmp(h + i, nd, nl) == 0)
            return h + i;
    return NULL;
}

/* Does pattern p (normalized, '*' wildcards, optional final '$') match a
 * prefix of path s?  Linear in |s| per segment; no backtracking. */
static int match(const char *p, size_t plen, const char *s, size_t slen)
{
    int anchored = plen > 0 && p[plen - 1] == '$';
    if (anchored)
        plen--;
    const char *star = memchr(p, '*', plen);
    size_t seg = star ? (size_t)(star - p) : plen;
    if (slen < seg || memcmp(s, p, seg) != 0)
        return 0;
    if (!star)
        return !anchored || slen == seg;
    size_t pos = seg, i = seg + 1;
    for (;;) {
        const char *nx = memchr(p + i, '*', plen - i);
        size_t j = nx ? (size_t)(nx - p) : plen, l = j - i;
        if (!nx && anchored)
            return slen - pos >= l && memcmp(s + slen - l, p + i, l) == 0;
        if (l > 0) {
            const char *f = find(s + pos, slen - pos, p + i, l);
            if (!f)
                return 0;
            pos = (size_t)(f - s) + l;
        }
        if (!nx)
            return 1;
        i = j + 1;
    }
}

static int rule_matches(const struct rule *ru, const char *s, size_t n)
{
    return ru->lit <= n && memcmp(s, ru->p, ru->lit) == 0 && match(ru->p, ru->len, s, n);
}

/* Index slot of a rule: at the deepest level whose prefix length its literal
 * prefix covers, the bucket of the hash of that prefix; a rule there can
 * only match paths with the same prefix, so a path need only look at one
 * bucket per level.  Rules with a literal prefix under 2 octets: catch-all. */
static size_t slot_of(const struct rule *ru)
{
    for (size_t lv = NLEVEL; lv-- > 0;)
        if (ru->lit >= level_len(lv))
            return lv * NBUCKET + robots_fnv1a(ru->p, level_len(lv)) % NBUCKET;
    return NSLOT - 1;
}

/* "/robots.txt" itself decides for /robots.txt (RFC 9309 2.5): this rule,
 * never stored, is what decide() returns for it. */
static const struct rule robots_txt_rule = {.p = "/robots.txt", .len = 11, .allow = 1};

/* The rule that decides normalized path s: the first matching rule in
 * priority order, &robots_txt_rule, or NULL (no rule matches: allowed).
 * With an index, only the path's bucket of each level and the catch-all
 * slot are walked, merged by rule number (which is priority order). */
static const struct rule *decide(const robots_t *r, const char *s, size_t n)
{
    static const char rt[] = "/robots.txt";
    size_t rtl = sizeof(rt) - 1;
    if (n >= rtl && memcmp(s, rt, rtl) == 0 && (n == rtl || s[rtl] == '?'))
        return &robots_txt_rule;
    if (!r->index) {
        for (size_t i = 0; i < r->rules.n; i++)
            if (rule_matches(&r->rules.v[i], s, n))
                return &r->rules.v[i];
        return NULL;
    }
    const uint32_t *start = r->index, *order = r->index + NSLOT + 1;
    size_t cur[NLEVEL + 1], end[NLEVEL + 1], k = 0;
    for (size_t lv = 0; lv < NLEVEL && n >= level_len(lv); lv++, k++) {
        size_t sl = lv * NBUCKET + robots_fnv1a(s, level_len(lv)) % NBUCKET;
        cur[k] = start[sl];
        end[k] = start[sl + 1];
    }
    cur[k] = start[NSLOT - 1];
    end[k++] = start[NSLOT];
    for (;;) {
        size_t best = k;
        for (size_t j = 0; j < k; j++)
            if (cur[j] < end[j] && (best == k || order[cur[j]] < order[cur[best]]))
                best = j;
        if (best == k)
            return NULL;
        const struct rule *ru = &r->rules.v[order[cur[best]++]];
        if (rule_matches(ru, s, n))
            return ru;
    }
}

/* decide() for a raw path_and_query (normalized first).  *ok is 0 when
 * memory ran out normalizing a long path, else 1. */
static const struct rule *decide_path(const robots_t *r, const char *path, int *ok)
{
    const char *s = path;
    size_t n = strcspn(s, "#");
    *ok = 1;
    int slash = n == 0 || s[0] != '/'; /* "" and "?q" mean "/" and "/?q" */
    if (!slash && is_normal(s, n))
        return decide(r, s, n);
    char stackbuf[PATH_STACK_BUF];
    char *buf = stackbuf;
    if (n >= sizeof(stackbuf) / 3) {
        buf = malloc(3 * n + 1);
        if (!buf) {
            *ok = 0;
            return NULL;
        }
    }
    buf[0] = '/';
    size_t m = (size_t)slash + robots_norm(s, n, buf + slash);
    const struct rule *ru = decide(r, buf, m);
    if (buf != stackbuf)
        free(buf);
    return ru;
}

int robots_allowed(const robots_t *r, const char *path_and_query)
{
    if (!r || !path_and_query)
        return 0;
    if (r->rules.n == 0)
        return 1;
    int ok;
    const struct rule *ru = decide_path(r, path_and_query, &ok);
    return ok && (!ru || ru->allow);
}

int robots_explain(const robots_t *r, const char *path_and_query, robots_verdict_t *v)
{
    if (!r || !path_and_query || !v)
        return CRAWL_EINVAL;
    int ok = 1;
    const struct rule *ru = decide_path(r, path_and_query, &ok);
    if (!ok)
        return CRAWL_ENOMEM;
    *v = (robots_verdict_t){.allowed = 1, .why = ROBOTS_WHY_NO_RULE};
    if (ru == &robots_txt_rule) {
        v->why = ROBOTS_WHY_ROBOTS_TXT;
    } else if (ru) {
        *v = (robots_verdict_t){.allowed = ru->allow,
                                .why = ROBOTS_WHY_RULE,
                                .rule_allow = ru->allow,
                                .pattern = ru->p,
                                .line = ru->line};
    }
    return 0;
}

uint32_t robots_crawl_delay_ms(const robots_t *r)
{
    return r ? r->delay_ms : 0;
}

size_t robots_sitemap_count(const robots_t *r)
{
    return r ? r->maps.n : 0;
}

const char *robots_sitemap(const robots_t *r, size_t i)
{
    return r && i < r->maps.n ? r->maps.v[i].p : NULL;
}

size_t robots_rule_count(const robots_t *r)
{
    return r ? r->rules.n : 0;
}

void robots_strv_free(struct strv *l)
{
    free(l->v);
    free(l->pool);
    memset(l, 0, sizeof *l);
}

void robots_free(robots_t *r)
{
    if (!r)
        return;
    robots_strv_free(&r->rules);
    robots_strv_free(&r->maps);
    free(r->index);
    free(r);
}

/* ---- building ----------------------------------------------------------- */

int robots_strv_add(struct strv *l, const char *p, size_t n, uint32_t lit, int allow)
{
    struct rule *v = robots_grow(l->v, &l->cap, l->n + 1, sizeof *v);
    if (!v)
        return CRAWL_ENOMEM;
    l->v = v;
    char *pool = robots_grow(l->pool, &l->pcap, l->plen + n + 1, 1);
    if (!pool)
        return CRAWL_ENOMEM;
    l->pool = pool;
    memcpy(pool + l->plen, p, n);
    pool[l->plen + n] = '\0';
    v[l->n++] = (struct rule){
        .off = (uint32_t)l->plen, .len = (uint32_t)n, .lit = lit, .allow = (uint8_t)allow};
    l->plen += n + 1;
    return 0;
}

int robots_maps_add(struct strv *m, const char *u, size_t n, int *dup)
{
    uint32_t h = robots_fnv1a(u, n);
    *dup = 0;
    if (m->n >= ROBOTS_MAX_SITEMAPS)
        return 0; /* full: skip the duplicate scan too */
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].lit == h && m->v[i].len == n && !memcmp(m->pool + m->v[i].off, u, n)) {
            *dup = 1;
            return 0;
        }
    }
    return robots_strv_add(m, u, n, h, 0);
}

int robots_cmp_rule(const void *a, const void *b)
{
    const struct rule *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    if (x->allow != y->allow)
        return x->allow > y->allow ? -1 : 1;
    return memcmp(x->p, y->p, x->len);
}

/* robots_cmp_rule(), then the lower line first: of exact duplicates the
 * rule that robots_build() keeps is the first in the file. */
static int cmp_rule_line(const void *a, const void *b)
{
    int c = robots_cmp_rule(a, b);
    if (c != 0)
        return c;
    const struct rule *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Groups rule numbers by slot_of() (counting sort, so each slot stays in
 * priority order). */
static int build_index(robots_t *r)
{
    size_t n = r->rules.n;
    if (n < INDEX_MIN)
        return 0;
    uint32_t *ix = calloc(NSLOT + 1 + n, sizeof *ix);
    if (!ix)
        return CRAWL_ENOMEM;
    uint32_t *start = ix, *order = ix + NSLOT + 1, cur[NSLOT];
    for (size_t i = 0; i < n; i++)
        start[slot_of(&r->rules.v[i]) + 1]++;
    for (size_t b = 1; b < NSLOT + 1; b++)
        start[b] += start[b - 1];
    memcpy(cur, start, sizeof cur);
    for (size_t i = 0; i < n; i++)
        order[cur[slot_of(&r->rules.v[i])]++] = (uint32_t)i;
    r->index = ix;
    return 0;
}

robots_t *robots_build(struct group *g, struct strv *m)
{
    robots_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    struct strv *l = &g->rules;
    for (size_t i = 0; i < l->n; i++) {
        struct rule *ru = &l->v[i];
        ru->p = l->pool + ru->off;
        const char *star = memchr(ru->p, '*', ru->len);
        ru->lit = star ? (uint32_t)(star - ru->p) : ru->len - (ru->p[ru->len - 1] == '$');
    }
    for (size_t i = 0; i < m->n; i++)
        m->v[i].p = m->pool + m->v[i].off;
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, cmp_rule_line);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
        if (k == 0 || robots_cmp_rule(&l->v[k - 1], &l->v[i]) != 0)
            l->v[k++] = l->v[i];
    l->n = k;
    r->rules = *l;
    r->maps = *m;
    r->delay_ms = g->delay_ms;
    memset(g, 0, sizeof *g);
    memset(m, 0, sizeof *m);
    if (build_index(r) != 0) {
        robots_free(r);
        return NULL;
    }
    return r;
}

robots_t *robots_allow_all(void)
{
    struct group g = {0};
    struct strv m = {0};
    return robots_build(&g, &m);
}

robots_t *robots_disallow_all(void)
{
    struct group g = {0};
    struct strv m = {0};
    robots_t *r = NULL;
    if (robots_strv_add(&g.rules, "/", 1, 0, 0) == 0)
        r = robots_build(&g, &m);
    robots_strv_free(&g.rules);
    return r;
}
