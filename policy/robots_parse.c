/*
 * robots_parse.c -- robots.txt text to a rule set (robots_parse(), see
 * robots.h); the rule set itself is robots.c.
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
 * to no group.  Patterns are normalized with robots_norm() as they are read,
 * in one scratch buffer reused for every line.  Lines are read as Google's
 * parser reads them (robots.h, "Beyond RFC 9309"): a whole or partial BOM
 * skipped, each line cut at ROBOTS_MAX_LINE octets, keys matched by their
 * start with Google's misspellings; each rule keeps its line number (CR, LF
 * and CRLF each end a line) for robots_explain().
 */
#include "robots.h"

#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"

#define is_eol(c) ((c) == '\n' || (c) == '\r' || (c) == '\0')

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

/* Adds a rule from line `line` unless the list holds ROBOTS_MAX_RULES
 * already. */
static int rule_add(struct strv *l, const char *p, size_t n, int allow, uint32_t line)
{
    if (l->n >= ROBOTS_MAX_RULES)
        return 0;
    int e = robots_strv_add(l, p, n, 0, allow);
    if (e == 0)
        l->v[l->n - 1].line = line;
    return e;
}

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
    uint32_t line; /* number of the line being read (1-based) */
};

/* Google's parser matches a key by its start, case-insensitively, in this
 * order, and accepts the misspellings it lists (robots.h, "Beyond RFC
 * 9309"); "Disallowed:" is a disallow line.  Crawl-delay is ours (Google
 * ignores it): matched whole. */
static enum key key_of(const char *k, size_t n)
{
    static const struct {
        const char *name;
        enum key key;
    } starts[] = {
        {"user-agent", K_AGENT},  {"useragent", K_AGENT},   {"user agent", K_AGENT},
        {"allow", K_ALLOW},       {"disallow", K_DISALLOW}, {"dissallow", K_DISALLOW},
        {"dissalow", K_DISALLOW}, {"disalow", K_DISALLOW},  {"diasllow", K_DISALLOW},
        {"disallaw", K_DISALLOW}, {"sitemap", K_SITEMAP},   {"site-map", K_SITEMAP},
    };
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        size_t l = strlen(starts[i].name);
        if (n >= l && token_eq(k, l, starts[i].name, l))
            return starts[i].key;
    }
    if (token_eq(k, n, "crawl-delay", 11) || token_eq(k, n, "crawldelay", 10))
        return K_DELAY;
    return K_NONE;
}

#define is_keych(c) (is_alpha(c) || (c) == '-' || (c) == '_')

/* Splits a trimmed, comment-free line into key and value: "key: value",
 * where the key is letters, '-' and '_' (or "user agent", Google's one
 * misspelling with a blank), or, with no such colon, "key value" of exactly
 * two words (Google's leniency for a missing colon).  Unlike Google's parser,
 * a colon after a non-key character does not split the line: "Disallow
 * /a:b" is "/a:b" and "Sitemap http://x/" is "http://x/". */
static enum key split_line(const char *s, size_t n, const char **val, size_t *vlen)
{
    size_t k = 0;
    while (k < n && is_keych((unsigned char)s[k]))
        k++;
    if (k == 4 && token_eq(s, 4, "user", 4) && n > 5 && s[4] == ' ' &&
        lower((unsigned char)s[5]) == 'a')
        for (k = 5; k < n && is_keych((unsigned char)s[k]);)
            k++;
    while (k < n && is_ws((unsigned char)s[k]))
        k++;
    const char *v;
    size_t vl, kl;
    if (k < n && s[k] == ':') {
        kl = k;
        v = s + k + 1;
        vl = n - k - 1;
    } else {
        kl = 0;
        while (kl < n && !is_ws((unsigned char)s[kl]))
            kl++;
        v = s + kl;
        vl = n - kl;
        trim(&v, &vl);
        if (vl == 0)
            return K_NONE;
        for (size_t i = 0; i < vl; i++)
            if (is_ws((unsigned char)v[i]))
                return K_NONE;
    }
    while (kl > 0 && is_ws((unsigned char)s[kl - 1]))
        kl--;
    if (kl == 0)
        return K_NONE;
    trim(&v, &vl);
    *val = v;
    *vlen = vl;
    return key_of(s, kl);
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

/* Adds the normalized pattern buf[0..m) to the groups the current lines
 * apply to. */
static int add_to_groups(struct pstate *ps, const char *buf, size_t m, int allow)
{
    int e = 0;
    if (ps->cur_spec)
        e = rule_add(&ps->spec.rules, buf, m, allow, ps->line);
    if (e == 0 && ps->cur_star)
        e = rule_add(&ps->star.rules, buf, m, allow, ps->line);
    return e;
}

/* Google: "Allow: /d/index.htm..." (the last segment starts with
 * "index.htm") also allows the directory itself, as "Allow: /d/$".  buf has
 * room for one more octet after its m. */
static int add_index_dir(struct pstate *ps, char *buf, size_t m)
{
    static const char ix[] = "/index.htm";
    const char *slash = NULL;
    for (size_t i = m; i-- > 0;)
        if (buf[i] == '/') {
            slash = buf + i;
            break;
        }
    size_t d = slash ? (size_t)(slash - buf) + 1 : 0;
    if (!slash || m - (d - 1) < sizeof ix - 1 || memcmp(slash, ix, sizeof ix - 1) != 0)
        return 0;
    buf[d] = '$';
    return add_to_groups(ps, buf, d + 1, 1);
}

static int on_rule(struct pstate *ps, const char *v, size_t n, int allow)
{
    ps->in_rules = 1;
    if (n == 0 || (!ps->cur_spec && !ps->cur_star))
        return 0; /* "Disallow:" with no path is no rule */
    char *buf = robots_grow(ps->scratch, &ps->scap, 3 * n + 2, 1);
    if (!buf)
        return CRAWL_ENOMEM;
    ps->scratch = buf;
    size_t m = 0;
    if (v[0] != '/' && v[0] != '*')
        buf[m++] = '/';
    m += robots_norm(v, n, buf + m);
    int e = add_to_groups(ps, buf, m, allow);
    return e == 0 && allow ? add_index_dir(ps, buf, m) : e;
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
    return robots_maps_add(&ps->maps, v, n, &dup);
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

/* Octets of the UTF-8 byte-order mark, or of a prefix of it, that body
 * starts with (Google skips a partial BOM too). */
static size_t bom_len(const char *body, size_t n)
{
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    size_t i = 0;
    while (i < n && i < sizeof bom && (unsigned char)body[i] == bom[i])
        i++;
    return i;
}

/* Feeds body[0..n) to on_line(), line by line.  CR, LF and CRLF each end a
 * line (and count one in ps->line, as Google counts them); a NUL ends the
 * text of a line too, and what follows it is read as more text of the same
 * line number.  Only the first ROBOTS_MAX_LINE octets of a line are read. */
static int read_lines(struct pstate *ps, const char *body, size_t n)
{
    size_t i = bom_len(body, n), start = i;
    ps->line = 1;
    while (i < n) {
        size_t j = i;
        while (j < n && !is_eol(body[j]))
            j++;
        size_t cut = start + ROBOTS_MAX_LINE, end = j < cut ? j : cut;
        int e = i < end ? on_line(ps, body + i, end - i) : 0;
        if (e != 0)
            return e;
        if (j < n && body[j] != '\0') {
            if (body[j] == '\r' && j + 1 < n && body[j + 1] == '\n')
                j++;
            ps->line++;
            start = j + 1;
        }
        i = j + 1;
    }
    return 0;
}

robots_t *robots_parse(const char *body, size_t len, const char *user_agent, int *err)
{
    struct pstate ps = {0};
    robots_t *r = NULL;
    int e = CRAWL_EINVAL;
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
    if ((e = read_lines(&ps, body, n)) != 0)
        goto out;
    struct group none = {0};
    struct group *keep = ps.spec.seen ? &ps.spec : ps.star.seen ? &ps.star : &none;
    r = robots_build(keep, &ps.maps);
    e = r ? 0 : CRAWL_ENOMEM;
out:
    robots_strv_free(&ps.spec.rules);
    robots_strv_free(&ps.star.rules);
    robots_strv_free(&ps.maps);
    free(ps.scratch);
    if (err)
        *err = e;
    return r;
}
