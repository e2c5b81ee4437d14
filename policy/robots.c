/*
 * robots.c -- RFC 9309 robots.txt parser and matcher (see robots.h).
 *
 * DESIGN
 * Parsing is one pass over the lines of the (at most ROBOTS_MAX_BYTES) body.
 * Two candidate rule lists are filled at once: "spec" gets the rules of every
 * group naming our product token, "star" those of every "*" group (a group
 * naming both feeds both).  At the end spec is kept if any user-agent line
 * named us (even an empty group: RFC 9309 5.1 "quxbot"), else star if any "*"
 * line was seen, else nothing (allow all).  A group is a run of user-agent
 * lines followed by member lines (allow, disallow, crawl-delay); the next
 * user-agent line after a member starts a new group.  Sitemap lines belong
 * to no group.
 *
 * Rules are stored percent-encoding normalized (norm() below; the path is
 * normalized the same way before matching), back to back in one byte pool,
 * sorted by (pattern length desc, allow first, bytes) with exact duplicates
 * removed.  robots_allowed() walks that order and stops at the first match:
 * the first match is the longest, and allow wins ties.  With INDEX_MIN rules
 * or more, an index (slot_of()) files each rule under a hash of its literal
 * prefix cut to 16, 8, 4 or 2 octets, so a check walks one bucket per level
 * plus the catch-all slot.  A pattern is a list of literal segments
 * separated by '*', optionally ending in '$'; it is matched greedily
 * (leftmost occurrence of each segment, by a linear search), which is exact
 * for '*'-only patterns and never backtracks.
 *
 * Invariants: every rule pattern is non-empty and NUL-free; at most
 * ROBOTS_MAX_RULES rules and ROBOTS_MAX_SITEMAPS sitemaps; a robots_t is
 * immutable.  Memory is bounded by 3 x ROBOTS_MAX_BYTES per candidate list.
 */
#include "robots.h"

#include <stdlib.h>
#include <string.h>

#define PATH_STACK_BUF 4096               /* normalized paths up to this size avoid malloc */
#define INDEX_MIN 16                      /* fewer rules than this are scanned linearly */
#define NLEVEL 4                          /* index levels: literal prefixes of 2, 4, 8, 16 octets */
#define NBUCKET 64                        /* hash buckets per level */
#define NSLOT (NLEVEL * NBUCKET + 1)      /* index slots: levels + catch-all */
#define level_len(lv) ((size_t)2 << (lv)) /* prefix octets indexed at level lv */
#define SHORT_HAY 256                     /* shorter paths are searched without memmem */

/* A byte string in a pool: a rule pattern or a sitemap URL. */
struct rule {
    const char *p; /* pool + off, set once the pool stops moving; NUL-terminated */
    uint32_t off;  /* offset in the pool */
    uint32_t len;  /* octets (for a rule, also its priority) */
    uint32_t lit;  /* rule: literal prefix (octets before the first '*' or final
                      '$'); sitemap: FNV-1a of the URL, for duplicate checks */
    uint8_t allow; /* rule: 1 allow, 0 disallow */
};

/* A growable list of strings kept back to back in one pool. */
struct strv {
    struct rule *v;
    size_t n, cap;
    char *pool;
    size_t plen, pcap;
};

/* The rules of one candidate group while parsing. */
struct group {
    struct strv rules;
    uint32_t delay_ms; /* largest Crawl-delay seen, 0 none */
    int seen;          /* a user-agent line selected this group */
};

struct robots {
    struct strv rules; /* priority order */
    struct strv maps;  /* sitemap URLs, file order */
    uint32_t *index;   /* NULL, or slot starts [NSLOT + 1] then rule numbers */
    uint32_t delay_ms;
};

const char *robots_strerror(int err)
{
    static const char *const msg[] = {"success", "invalid argument", "out of memory",
                                      "serialized robots rules are truncated or corrupt",
                                      "serialized robots rules have an unknown format version"};
    if (err > 0 || err < -(int)(sizeof(msg) / sizeof(msg[0]) - 1))
        return "unknown robots error";
    return msg[-err];
}

/* ---- small helpers ------------------------------------------------------ */

/* Returns p grown to hold need (>= 1) elements, or NULL (p untouched). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
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

static uint32_t fnv1a(const void *buf, size_t n)
{
    const unsigned char *p = buf;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/* ASCII-only character classes (no locale); c is an unsigned char value. */
#define is_ws(c) ((c) == ' ' || (c) == '\t' || (c) == '\v' || (c) == '\f')
#define is_alpha(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define is_digit(c) ((c) >= '0' && (c) <= '9')
#define lower(c) ((c) >= 'A' && (c) <= 'Z' ? (c) - 'A' + 'a' : (c))
#define is_unreserved(c)                                                                           \
    (is_alpha(c) || is_digit(c) || (c) == '-' || (c) == '.' || (c) == '_' || (c) == '~')
#define is_eol(c) ((c) == '\n' || (c) == '\r' || (c) == '\0')
#define needs_escape(c) ((c) <= 0x20 || (c) >= 0x7f) /* norm() escapes these raw octets */

static int hexval(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    c = (unsigned char)lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_ws((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_ws((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/* Product token: leading run of [A-Za-z_-] (RFC 9309 2.2.1). */
static size_t token_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (is_alpha((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
        i++;
    return i;
}

static int token_eq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return 0;
    return 1;
}

/* ---- normalization ------------------------------------------------------ */

/* Writes the normalized form of in[0..n) to out (room for 3n bytes) and
 * returns its length.  %XX of an unreserved octet -> the octet; other valid
 * %xx -> %XX; raw octets <= 0x20, >= 0x7f and a '%' not starting a valid
 * escape -> %XX; everything else unchanged. */
static size_t norm(const char *in, size_t n, char *out)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%' && i + 2 < n) {
            int h = hexval((unsigned char)in[i + 1]), l = hexval((unsigned char)in[i + 2]);
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

/* True when norm() would return in unchanged (the common case). */
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
            return lv * NBUCKET + fnv1a(ru->p, level_len(lv)) % NBUCKET;
    return NSLOT - 1;
}

/* Verdict for normalized path s: the first matching rule in priority order.
 * With an index, only the path's bucket of each level and the catch-all slot
 * are walked, merged by rule number (which is priority order). */
static int decide(const robots_t *r, const char *s, size_t n)
{
    static const char rt[] = "/robots.txt";
    size_t rtl = sizeof(rt) - 1;
    if (n >= rtl && memcmp(s, rt, rtl) == 0 && (n == rtl || s[rtl] == '?'))
        return 1;
    if (!r->index) {
        for (size_t i = 0; i < r->rules.n; i++)
            if (rule_matches(&r->rules.v[i], s, n))
                return r->rules.v[i].allow;
        return 1;
    }
    const uint32_t *start = r->index, *order = r->index + NSLOT + 1;
    size_t cur[NLEVEL + 1], end[NLEVEL + 1], k = 0;
    for (size_t lv = 0; lv < NLEVEL && n >= level_len(lv); lv++, k++) {
        size_t sl = lv * NBUCKET + fnv1a(s, level_len(lv)) % NBUCKET;
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
            return 1;
        const struct rule *ru = &r->rules.v[order[cur[best]++]];
        if (rule_matches(ru, s, n))
            return ru->allow;
    }
}

int robots_allowed(const robots_t *r, const char *path_and_query)
{
    if (!r || !path_and_query)
        return 0;
    const char *s = path_and_query;
    size_t n = strcspn(s, "#");
    if (r->rules.n == 0)
        return 1;
    int slash = n == 0 || s[0] != '/'; /* "" and "?q" mean "/" and "/?q" */
    if (!slash && is_normal(s, n))
        return decide(r, s, n);
    char stackbuf[PATH_STACK_BUF];
    char *buf = stackbuf;
    if (n >= sizeof(stackbuf) / 3) {
        buf = malloc(3 * n + 1);
        if (!buf)
            return 0;
    }
    buf[0] = '/';
    size_t m = (size_t)slash + norm(s, n, buf + slash);
    int ok = decide(r, buf, m);
    if (buf != stackbuf)
        free(buf);
    return ok;
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

static void strv_free(struct strv *l)
{
    free(l->v);
    free(l->pool);
    memset(l, 0, sizeof *l);
}

void robots_free(robots_t *r)
{
    if (!r)
        return;
    strv_free(&r->rules);
    strv_free(&r->maps);
    free(r->index);
    free(r);
}

/* ---- building ----------------------------------------------------------- */

/* Appends p[0..n) (n >= 1) and a NUL. */
static int strv_add(struct strv *l, const char *p, size_t n, uint32_t lit, int allow)
{
    struct rule *v = grow(l->v, &l->cap, l->n + 1, sizeof *v);
    if (!v)
        return ROBOTS_ENOMEM;
    l->v = v;
    char *pool = grow(l->pool, &l->pcap, l->plen + n + 1, 1);
    if (!pool)
        return ROBOTS_ENOMEM;
    l->pool = pool;
    memcpy(pool + l->plen, p, n);
    pool[l->plen + n] = '\0';
    v[l->n++] = (struct rule){
        .off = (uint32_t)l->plen, .len = (uint32_t)n, .lit = lit, .allow = (uint8_t)allow};
    l->plen += n + 1;
    return 0;
}

static int rule_add(struct strv *l, const char *p, size_t n, int allow)
{
    return l->n < ROBOTS_MAX_RULES ? strv_add(l, p, n, 0, allow) : 0;
}

/* Appends URL u[0..n) unless already present (*dup set) or the list is full. */
static int maps_add(struct strv *m, const char *u, size_t n, int *dup)
{
    uint32_t h = fnv1a(u, n);
    *dup = 0;
    if (m->n >= ROBOTS_MAX_SITEMAPS)
        return 0; /* full: skip the duplicate scan too */
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].lit == h && m->v[i].len == n && !memcmp(m->pool + m->v[i].off, u, n)) {
            *dup = 1;
            return 0;
        }
    }
    return strv_add(m, u, n, h, 0);
}

/* Priority order: longer first, allow before disallow, then bytes. */
static int cmp_rule(const void *a, const void *b)
{
    const struct rule *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    if (x->allow != y->allow)
        return x->allow > y->allow ? -1 : 1;
    return memcmp(x->p, y->p, x->len);
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
        return ROBOTS_ENOMEM;
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

/* Moves g's rules and m into a new robots_t (rules sorted, exact duplicates
 * removed); g and m are left empty.  NULL when out of memory. */
static robots_t *finish(struct group *g, struct strv *m)
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
        qsort(l->v, l->n, sizeof *l->v, cmp_rule);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
        if (k == 0 || cmp_rule(&l->v[k - 1], &l->v[i]) != 0)
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
    return finish(&g, &m);
}

robots_t *robots_disallow_all(void)
{
    struct group g = {0};
    struct strv m = {0};
    robots_t *r = NULL;
    if (strv_add(&g.rules, "/", 1, 0, 0) == 0)
        r = finish(&g, &m);
    strv_free(&g.rules);
    return r;
}

/* ---- parsing ------------------------------------------------------------ */

enum key { K_NONE, K_AGENT, K_ALLOW, K_DISALLOW, K_DELAY, K_SITEMAP };

struct pstate {
    const char *tok; /* our product token */
    size_t toklen;
    struct group spec, star;
    struct strv maps;
    int cur_spec, cur_star; /* the current group applies to spec / star */
    int in_rules;           /* a member line followed the last user-agent line */
    char *scratch;          /* normalization buffer */
    size_t scap;
};

static enum key key_of(const char *k, size_t n)
{
    static const struct {
        const char *name;
        enum key key;
    } keys[] = {
        {"user-agent", K_AGENT},  {"useragent", K_AGENT},    {"allow", K_ALLOW},
        {"disallow", K_DISALLOW}, {"dissallow", K_DISALLOW}, {"disalow", K_DISALLOW},
        {"crawl-delay", K_DELAY}, {"crawldelay", K_DELAY},   {"sitemap", K_SITEMAP},
        {"site-map", K_SITEMAP},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (token_eq(k, n, keys[i].name, strlen(keys[i].name)))
            return keys[i].key;
    return K_NONE;
}

/* Splits a trimmed, comment-free line into key and value: "key: value" or
 * "key value" (value one word). */
static enum key split_line(const char *s, size_t n, const char **val, size_t *vlen)
{
    size_t k = 0;
    while (k < n && (is_alpha((unsigned char)s[k]) || s[k] == '-' || s[k] == '_'))
        k++;
    size_t j = k;
    while (j < n && is_ws((unsigned char)s[j]))
        j++;
    if (k == 0 || j >= n)
        return K_NONE;
    const char *v = s + j;
    size_t vl = n - j;
    if (s[j] == ':') {
        v++;
        vl--;
        trim(&v, &vl);
    } else {
        if (j == k)
            return K_NONE;
        for (size_t i = 0; i < vl; i++)
            if (is_ws((unsigned char)v[i]))
                return K_NONE;
    }
    *val = v;
    *vlen = vl;
    return key_of(s, k);
}

static void on_agent(struct pstate *ps, const char *v, size_t n)
{
    if (ps->in_rules) {
        ps->cur_spec = ps->cur_star = 0;
        ps->in_rules = 0;
    }
    if (n >= 1 && v[0] == '*' && (n == 1 || is_ws((unsigned char)v[1]))) {
        ps->cur_star = ps->star.seen = 1;
        return;
    }
    size_t t = token_len(v, n);
    if (t > 0 && token_eq(v, t, ps->tok, ps->toklen))
        ps->cur_spec = ps->spec.seen = 1;
}

static int on_rule(struct pstate *ps, const char *v, size_t n, int allow)
{
    ps->in_rules = 1;
    if (n == 0 || (!ps->cur_spec && !ps->cur_star))
        return 0; /* "Disallow:" with no path is no rule */
    char *buf = grow(ps->scratch, &ps->scap, 3 * n + 1, 1);
    if (!buf)
        return ROBOTS_ENOMEM;
    ps->scratch = buf;
    size_t m = 0;
    if (v[0] != '/' && v[0] != '*')
        buf[m++] = '/';
    m += norm(v, n, buf + m);
    int e = 0;
    if (ps->cur_spec)
        e = rule_add(&ps->spec.rules, buf, m, allow);
    if (e == 0 && ps->cur_star)
        e = rule_add(&ps->star.rules, buf, m, allow);
    return e;
}

/* "3", "0.5", ".25", "2." -> milliseconds (truncated, clamped); -1 if bad. */
static int64_t parse_delay(const char *v, size_t n)
{
    size_t i = 0;
    int digits = 0;
    uint64_t ms = 0, frac = 0, scale = 100;
    for (; i < n && is_digit((unsigned char)v[i]); i++, digits++)
        if (ms <= ROBOTS_MAX_CRAWL_DELAY_MS)
            ms = ms * 10 + (uint64_t)(v[i] - '0') * 1000;
    if (i < n && v[i] == '.')
        for (i++; i < n && is_digit((unsigned char)v[i]); i++, digits++, scale /= 10)
            frac += (uint64_t)(v[i] - '0') * scale;
    if (digits == 0 || i != n)
        return -1;
    ms += frac;
    return ms > ROBOTS_MAX_CRAWL_DELAY_MS ? ROBOTS_MAX_CRAWL_DELAY_MS : (int64_t)ms;
}

static void on_delay(struct pstate *ps, const char *v, size_t n)
{
    ps->in_rules = 1;
    int64_t ms = parse_delay(v, n);
    if (ms < 0)
        return;
    if (ps->cur_spec && (uint32_t)ms > ps->spec.delay_ms)
        ps->spec.delay_ms = (uint32_t)ms;
    if (ps->cur_star && (uint32_t)ms > ps->star.delay_ms)
        ps->star.delay_ms = (uint32_t)ms;
}

static int has_prefix_ci(const char *s, size_t n, const char *pre)
{
    size_t pn = strlen(pre);
    return n > pn && token_eq(s, pn, pre, pn);
}

static int on_sitemap(struct pstate *ps, const char *v, size_t n)
{
    if (n > ROBOTS_MAX_SITEMAP_LEN ||
        !(has_prefix_ci(v, n, "http://") || has_prefix_ci(v, n, "https://")))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f)
            return 0;
    int dup;
    return maps_add(&ps->maps, v, n, &dup);
}

static int on_line(struct pstate *ps, const char *s, size_t n)
{
    const char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    trim(&s, &n);
    const char *v = NULL;
    size_t vl = 0;
    switch (split_line(s, n, &v, &vl)) {
    case K_AGENT:
        on_agent(ps, v, vl);
        return 0;
    case K_ALLOW:
        return on_rule(ps, v, vl, 1);
    case K_DISALLOW:
        return on_rule(ps, v, vl, 0);
    case K_DELAY:
        on_delay(ps, v, vl);
        return 0;
    case K_SITEMAP:
        return on_sitemap(ps, v, vl);
    default:
        return 0;
    }
}

robots_t *robots_parse(const char *body, size_t len, const char *user_agent, int *err)
{
    struct pstate ps = {0};
    robots_t *r = NULL;
    int e = ROBOTS_EINVAL;
    if (!user_agent || (!body && len > 0))
        goto out;
    ps.tok = user_agent + strspn(user_agent, " \t");
    ps.toklen = token_len(ps.tok, strlen(ps.tok));
    if (ps.toklen == 0)
        goto out;
    size_t n = len;
    if (n > ROBOTS_MAX_BYTES) { /* drop the line the limit cuts */
        n = ROBOTS_MAX_BYTES;
        while (!is_eol(body[n]) && n > 0 && !is_eol(body[n - 1]))
            n--;
    }
    size_t i = (n >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    while (i < n) {
        size_t j = i;
        while (j < n && !is_eol(body[j]))
            j++;
        if ((e = on_line(&ps, body + i, j - i)) != 0)
            goto out;
        i = j + 1;
    }
    struct group none = {0};
    struct group *keep = ps.spec.seen ? &ps.spec : ps.star.seen ? &ps.star : &none;
    r = finish(keep, &ps.maps);
    e = r ? 0 : ROBOTS_ENOMEM;
out:
    strv_free(&ps.spec.rules);
    strv_free(&ps.star.rules);
    strv_free(&ps.maps);
    free(ps.scratch);
    if (err)
        *err = e;
    return r;
}

/* ---- serialization ------------------------------------------------------
 * "RBT" VERSION, varint delay_ms, varint nrules, per rule varint
 * (len << 1 | allow) + pattern bytes, varint nsitemaps, per sitemap varint
 * len + bytes, then FNV-1a 32 of everything before, little-endian.
 * Varints are unsigned LEB128, minimal, at most 32 bits. */

static size_t put_varint(unsigned char *o, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (unsigned char)v;
    return n;
}

static int get_varint(const unsigned char *p, size_t end, size_t *pos, uint32_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 35 && *pos < end; shift += 7) {
        unsigned char b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (x > UINT32_MAX || (b == 0 && shift > 0))
                return -1; /* too large, or not minimal */
            *v = (uint32_t)x;
            return 0;
        }
    }
    return -1;
}

int robots_serialize(const robots_t *r, char **out, size_t *len)
{
    if (!r || !out || !len)
        return ROBOTS_EINVAL;
    size_t cap = 4 + 5 + 5 + 5 + 4;
    for (size_t i = 0; i < r->rules.n; i++)
        cap += 5 + r->rules.v[i].len;
    for (size_t i = 0; i < r->maps.n; i++)
        cap += 5 + r->maps.v[i].len;
    unsigned char *o = malloc(cap);
    if (!o)
        return ROBOTS_ENOMEM;
    size_t n = 0;
    o[n++] = 'R';
    o[n++] = 'B';
    o[n++] = 'T';
    o[n++] = ROBOTS_FORMAT_VERSION;
    n += put_varint(o + n, r->delay_ms);
    const struct strv *lists[2] = {&r->rules, &r->maps};
    for (int k = 0; k < 2; k++) {
        n += put_varint(o + n, (uint32_t)lists[k]->n);
        for (size_t i = 0; i < lists[k]->n; i++) {
            const struct rule *it = &lists[k]->v[i];
            n += put_varint(o + n, k == 0 ? it->len << 1 | it->allow : it->len);
            memcpy(o + n, it->p, it->len);
            n += it->len;
        }
    }
    uint32_t h = fnv1a(o, n);
    for (int k = 0; k < 4; k++)
        o[n++] = (unsigned char)(h >> (8 * k));
    *out = (char *)o;
    *len = n;
    return 0;
}

/* Reads list k (0: rules, 1: sitemaps) into l.  Rules must come in
 * priority order, and neither list may hold duplicates. */
static int read_list(const unsigned char *p, size_t end, size_t *pos, int k, struct strv *l)
{
    uint32_t cnt, hdr;
    if (get_varint(p, end, pos, &cnt) || cnt > (k == 0 ? ROBOTS_MAX_RULES : ROBOTS_MAX_SITEMAPS))
        return ROBOTS_ECORRUPT;
    for (uint32_t i = 0; i < cnt; i++) {
        if (get_varint(p, end, pos, &hdr))
            return ROBOTS_ECORRUPT;
        size_t sl = k == 0 ? hdr >> 1 : hdr;
        if (sl == 0 || sl > end - *pos || (k == 1 && sl > ROBOTS_MAX_SITEMAP_LEN) ||
            memchr(p + *pos, '\0', sl))
            return ROBOTS_ECORRUPT;
        const char *str = (const char *)p + *pos;
        struct rule cur = {.p = str, .len = (uint32_t)sl, .allow = hdr & 1}, prev;
        int e, dup = 0;
        if (k == 0 && i > 0) {
            prev = l->v[l->n - 1];
            prev.p = l->pool + prev.off;
            if (cmp_rule(&prev, &cur) >= 0)
                return ROBOTS_ECORRUPT; /* out of order or duplicate */
        }
        e = k == 0 ? strv_add(l, str, sl, 0, hdr & 1) : maps_add(l, str, sl, &dup);
        if (e || dup)
            return e ? e : ROBOTS_ECORRUPT;
        *pos += sl;
    }
    return 0;
}

robots_t *robots_deserialize(const char *buf, size_t len, int *err)
{
    const unsigned char *p = (const unsigned char *)buf;
    struct group g = {0};
    struct strv m = {0};
    robots_t *r = NULL;
    int e = ROBOTS_EINVAL;
    if (!buf)
        goto out;
    e = ROBOTS_ECORRUPT;
    if (len < 4 + 3 + 4 || memcmp(p, "RBT", 3) != 0)
        goto out;
    e = ROBOTS_EVERSION;
    if (p[3] != ROBOTS_FORMAT_VERSION)
        goto out;
    e = ROBOTS_ECORRUPT;
    size_t end = len - 4, pos = 4;
    uint32_t h = (uint32_t)p[end] | (uint32_t)p[end + 1] << 8 | (uint32_t)p[end + 2] << 16 |
                 (uint32_t)p[end + 3] << 24;
    if (h != fnv1a(p, end))
        goto out;
    if (get_varint(p, end, &pos, &g.delay_ms) || g.delay_ms > ROBOTS_MAX_CRAWL_DELAY_MS)
        goto out;
    if ((e = read_list(p, end, &pos, 0, &g.rules)) != 0 ||
        (e = read_list(p, end, &pos, 1, &m)) != 0)
        goto out;
    e = ROBOTS_ECORRUPT;
    if (pos != end)
        goto out;
    r = finish(&g, &m);
    e = r ? 0 : ROBOTS_ENOMEM;
out:
    strv_free(&g.rules);
    strv_free(&m);
    if (err)
        *err = e;
    return r;
}
