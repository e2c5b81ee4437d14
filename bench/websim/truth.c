/*
 * truth.c -- the ground truth of a crawl (truth.h), computed from the same
 * functions the server answers with (ws_plan, ws_links_*), never over HTTP.
 *
 * DESIGN: a breadth-first walk from the seeds, as the crawler's documented
 * rules say a correct crawler walks: a URL is met once (its visited-set key is
 * the normalized URL, which the model's URLs already are); a link is followed
 * unless rel=nofollow (or its page has meta nofollow), out of --scope, longer
 * than --max-url-length or deeper than --max-depth; a 3xx's Location (and the
 * same URL in its body) is one level deeper and one hop further, not followed
 * past --max-redirects hops in a row; links of any answer below 500 but 429
 * are followed; a URL of an origin whose robots.txt (followed through up to 5
 * redirects within the scope's hosts) disallows it, or answers 5xx, is not
 * fetched; a black-hole host answers nothing.  Being breadth-first, a URL's
 * depth is its least depth: a crawler that meets a URL first on a longer path
 * (any real one, with per-host delays) may miss URLs near --max-depth, never
 * fetch one deeper; with no --max-depth the walk does not depend on order.
 * State: the urlset (class, depth by URL hash), the queue (URL strings in one
 * arena, with depth and hops), robots verdicts per origin and the seeds'
 * hosts and domains (urlsets keyed by number).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model_internal.h"
#include "truth.h"

const char *const truth_class_name[T_NCLASSES] = {"?",      "must",        "retry",    "dead",
                                                  "robots", "unavailable", "scope",    "depth",
                                                  "long",   "nofollow",    "redirects"};

typedef struct qitem {
    size_t off; /* in the arena */
    uint32_t depth, hops;
    uint8_t dup; /* met before under another class: listed once */
} qitem_t;

typedef struct walk {
    const ws_cfg_t *c;
    const truth_opts_t *o;
    urlset_t *seen, *robots, *scope;
    char *arena;
    size_t alen, acap;
    qitem_t *q; /* every URL met, in order; those to fetch are walked */
    size_t qn, qcap, qhead;
    ws_plan_t plan;
} walk_t;

int truth_split(const ws_cfg_t *c, const char *url, uint32_t *host, int *https, const char **path)
{
    const char *h;
    if (!strncmp(url, "https://", 8))
        *https = 1, h = url + 8;
    else if (!strncmp(url, "http://", 7))
        *https = 0, h = url + 7;
    else
        return -1;
    const char *p = strchr(h, '/');
    if (!p)
        return -1;
    *host = ws_host_parse(c, h, (size_t)(p - h));
    *path = p;
    return *host == WS_NOHOST ? -1 : 0;
}

static int in_scope(walk_t *w, uint32_t host)
{
    if (w->o->scope == 2)
        return 1;
    uint64_t k = w->o->scope ? ws_domain_of(w->c, (uint32_t)host) : host;
    return urlset_get(w->scope, k + 1, 0) != NULL;
}

/* Resolves a ROOT/REL reference against dir (ends with '/') into out (a path). */
static void resolve(const char *dir, const char *ref, char *out, size_t cap)
{
    char tmp[WS_URL_MAX * 2];
    snprintf(tmp, sizeof tmp, "%s%s", ref[0] == '/' ? "" : dir, ref);
    char *q = strchr(tmp, '?');
    if (q)
        *q = '\0';
    size_t n = 0;
    const char *s = tmp + 1;
    out[n++] = '/';
    while (*s) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 1 && s[0] == '.') {
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            if (n > 1) { /* drop the last segment */
                n--;
                while (n > 1 && out[n - 1] != '/')
                    n--;
            }
        } else if (n + len + 2 < cap) {
            memcpy(out + n, s, len);
            n += len;
            if (e)
                out[n++] = '/';
        }
        if (!e)
            break;
        s = e + 1;
    }
    out[n] = '\0';
    if (q)
        snprintf(out + n, cap - n, "?%s", q + 1);
}

/* The robots verdict of an origin: 0 allow all, 1 its rules (ws_host robots
 * kind in *kind), 2 unavailable (disallow all), 3 never answers. */
static int robots_of(walk_t *w, uint32_t host, int https, uint8_t *kind)
{
    url_entry_t *e = urlset_get(w->robots, (uint64_t)host * 2 + (uint64_t)https + 1, 1);
    if (e && e->aux)
        return *kind = (uint8_t)e->aux2, (int)e->aux - 1;
    char path[WS_URL_MAX] = "/robots.txt";
    int v = 0;
    for (int hop = 0; hop <= 5; hop++) {
        ws_host_t h;
        ws_host(w->c, host, &h);
        if (h.blackhole) {
            v = 3;
            break;
        }
        ws_plan(w->c, https, host, path, &w->plan);
        int st = w->plan.status;
        if (st >= 200 && st < 300) {
            v = 1, *kind = h.robots == WS_ROBOTS_REDIRECT ? WS_ROBOTS_DISALLOW : h.robots;
            break;
        }
        if (st >= 500 || st == 429) {
            v = 2;
            break;
        }
        if (st < 300 || st >= 400 || hop == 5) {
            v = 0;
            break;
        }
        const char *loc = w->plan.location, *p = loc;
        uint32_t h2 = host;
        int s2 = https;
        if (loc[0] != '/' && truth_split(w->c, loc, &h2, &s2, &p) < 0)
            break;
        if (!in_scope(w, h2))
            break;
        snprintf(path, sizeof path, "%s", loc[0] == '/' ? loc : p);
        host = h2, https = s2;
    }
    if (e)
        e->aux = (uint32_t)v + 1, e->aux2 = *kind;
    return v;
}

static int disallowed(const ws_cfg_t *c, uint8_t kind, const char *path)
{
    switch (kind) {
    case WS_ROBOTS_DISALLOW:
        return !strncmp(path, "/private/", 9) || !strncmp(path, "/search", 7) ||
               !strncmp(path, "/cgi-bin/", 9);
    case WS_ROBOTS_AGENT:
        return 1; /* the crawler's own group: Disallow: / */
    case WS_ROBOTS_DELAY:
        return !strncmp(path, "/cgi-bin/", 9);
    default:
        (void)c;
        return 0;
    }
}

static int push(walk_t *w, const char *url, size_t len, uint32_t depth, uint32_t hops, int dup)
{
    if (w->qn == w->qcap) {
        size_t qc = w->qcap ? w->qcap * 2 : 65536;
        qitem_t *q = realloc(w->q, qc * sizeof *q);
        if (!q)
            return -1;
        w->q = q, w->qcap = qc;
    }
    if (w->alen + len + 1 > w->acap) {
        size_t ac = w->acap ? w->acap * 2 : 1 << 22;
        while (ac < w->alen + len + 1)
            ac *= 2;
        char *a = realloc(w->arena, ac);
        if (!a)
            return -1;
        w->arena = a, w->acap = ac;
    }
    w->q[w->qn++] = (qitem_t){w->alen, depth, hops, (uint8_t)dup};
    memcpy(w->arena + w->alen, url, len + 1);
    w->alen += len + 1;
    return 0;
}

/* Meets url at depth/hops; cls: T_MUST to follow it, else the reason it is not. */
static int meet(walk_t *w, const char *url, uint32_t depth, uint32_t hops, int cls)
{
    size_t len = strlen(url);
    if (cls == T_MUST && len > w->o->max_url_length)
        cls = T_LONG;
    url_entry_t *e = urlset_get(w->seen, urlset_key(url, len), 1);
    if (!e)
        return -1;
    int upgrade = e->cls && cls == T_MUST &&
                  (e->cls == T_NOFOLLOW || e->cls == T_REDIRECTS || e->cls == T_DEPTH);
    if (e->cls && !upgrade)
        return 0;
    e->cls = (uint8_t)cls;
    e->depth = depth;
    return push(w, url, len, depth, hops, upgrade);
}

/* The links of the answer to url (its class is T_MUST). */
static int walk_links(walk_t *w, const char *url, const qitem_t *it, uint32_t host, int https,
                      const char *path)
{
    ws_links_t li;
    ws_link_t l;
    char dir[WS_URL_MAX], target[WS_URL_MAX * 2];
    int st = w->plan.status;
    int is3xx = st >= 300 && st < 400, too_many = is3xx && it->hops >= w->o->max_redirects;
    uint32_t nhops = is3xx ? it->hops + 1 : 0;
    ws_links_begin(w->c, &w->plan, &li);
    snprintf(dir, sizeof dir, "%s", li.base[0] ? li.base : path);
    char *q = strchr(dir, '?');
    if (q)
        *q = '\0';
    *(strrchr(dir, '/') + 1) = '\0';
    (void)url;
    while (ws_links_next(&li, &l)) {
        int n = 0;
        if (l.form == WS_LINK_ABS) {
            snprintf(target, sizeof target, "%s", l.url);
        } else {
            n = ws_origin(w->c, https, host, target, sizeof target);
            resolve(dir, l.url, target + n, sizeof target - (size_t)n);
        }
        uint32_t h2;
        int s2;
        const char *p2;
        if (truth_split(w->c, target, &h2, &s2, &p2) < 0)
            continue;
        int cls = T_MUST;
        if ((l.nofollow || li.meta_nofollow) && !w->o->follow_nofollow)
            cls = T_NOFOLLOW;
        else if (too_many)
            cls = T_REDIRECTS;
        else if (!in_scope(w, h2))
            cls = T_SCOPE;
        else if (it->depth + 1 > w->o->max_depth)
            cls = T_DEPTH;
        if (meet(w, target, it->depth + 1, nhops, cls) < 0)
            return -1;
    }
    return 0;
}

static int walk_one(walk_t *w, size_t i)
{
    qitem_t it = w->q[i];
    const char *url = w->arena + it.off, *path;
    url_entry_t *e = urlset_get(w->seen, urlset_key(url, strlen(url)), 0);
    if (!e || e->cls != T_MUST || e->aux)
        return 0;
    e->aux = 1; /* walked */
    uint32_t host;
    int https;
    if (truth_split(w->c, url, &host, &https, &path) < 0)
        return 0;
    ws_host_t h;
    ws_host(w->c, host, &h);
    if (h.blackhole) {
        e->cls = T_DEAD;
        return 0;
    }
    if (!w->o->ignore_robots) {
        uint8_t kind = 0;
        int v = robots_of(w, host, https, &kind);
        if (v >= 2 || (v == 1 && disallowed(w->c, kind, path))) {
            e = urlset_get(w->seen, urlset_key(url, strlen(url)), 0);
            e->cls = v == 3 ? T_DEAD : v == 2 ? T_UNAVAIL : T_ROBOTS;
            return 0;
        }
    }
    ws_plan(w->c, https, host, path, &w->plan);
    if (w->plan.status >= 500 || w->plan.status == 429) {
        e->cls = T_RETRY;
        return 0;
    }
    return walk_links(w, url, &it, host, https, path);
}

static int read_seeds(walk_t *w, FILE *seeds)
{
    char line[WS_URL_MAX];
    size_t first = w->qn;
    while (fgets(line, sizeof line, seeds)) {
        line[strcspn(line, "\r\n")] = '\0';
        uint32_t h;
        int https;
        const char *p;
        if (!line[0] || line[0] == '#')
            continue;
        if (truth_split(w->c, line, &h, &https, &p) < 0) {
            fprintf(stderr, "websim truth: not a URL of this web: %s\n", line);
            return -1;
        }
        uint64_t k = w->o->scope == 1 ? ws_domain_of(w->c, (uint32_t)h) : h;
        if (!urlset_get(w->scope, k + 1, 1) || meet(w, line, 0, 0, T_MUST) < 0)
            return -1;
    }
    return w->qn > first ? 0 : -1;
}

int truth_run(const ws_cfg_t *c, const truth_opts_t *o, FILE *seeds, FILE *out)
{
    walk_t w = {.c = c, .o = o};
    size_t count[T_NCLASSES] = {0};
    int rc = -1;
    w.seen = urlset_new(), w.robots = urlset_new(), w.scope = urlset_new();
    if (!w.seen || !w.robots || !w.scope || read_seeds(&w, seeds) < 0)
        goto out;
    for (w.qhead = 0; w.qhead < w.qn; w.qhead++)
        if (walk_one(&w, w.qhead) < 0)
            goto out;
    for (size_t i = 0; i < w.qn; i++) {
        if (w.q[i].dup)
            continue;
        const char *url = w.arena + w.q[i].off;
        url_entry_t *e = urlset_get(w.seen, urlset_key(url, strlen(url)), 0);
        count[e->cls]++;
        fprintf(out, "%s\t%u\t%s\n", truth_class_name[e->cls], e->depth, url);
    }
    fprintf(stderr, "websim truth: %zu URLs met:", urlset_count(w.seen));
    for (int k = 1; k < T_NCLASSES; k++)
        fprintf(stderr, " %s %zu", truth_class_name[k], count[k]);
    fprintf(stderr, "\n");
    rc = fflush(out) == 0 ? 0 : -1;
out:
    urlset_free(w.seen);
    urlset_free(w.robots);
    urlset_free(w.scope);
    free(w.arena);
    free(w.q);
    return rc;
}
