/*
 * links.c -- the links of a body (ws_links_*, model.h) and a page's size.
 *
 * DESIGN: a page's links are drawn in order from ws_hash(seed, TAG_LINK,
 * content host, index) (plus the session on a sid host): first the host's
 * special entries on its home page (calendar, deep trap, loop, a PDF, and the
 * /private/ and /search pages its robots.txt may disallow), then n regular
 * links, n from a Pareto law of mean links_mean.  Each link names its target
 * (the same host's page, a ?ref= or /print/ copy, a missing page, a PDF, or
 * another host's page, popular hosts more often) and a form: absolute,
 * root-relative or relative (to the page's directory or its <base>), with
 * cosmetic noise the crawler must normalize away (upper-case host, explicit
 * default port, "./", a fragment).  ws_link.url is what the link means: the
 * normalized URL (absolute) or the reference to resolve against the URL the
 * body was served at (truth.c resolves it).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "model_internal.h"

uint32_t ws_page_size(const ws_cfg_t *c, const ws_plan_t *p)
{
    uint64_t s = ws_hash(c->seed, TAG_SIZE, p->chost, p->index);
    double b = ws_u01(ws_next(&s)) < c->share_mb
                   ? 1048576.0 * (1 + 4 * ws_u01(ws_next(&s)))
                   : ws_lognormal(&s, c->size_median_kb * 1024, c->size_sigma);
    double cap = (double)c->size_max_kb * 1024;
    return b > cap ? (uint32_t)cap : b < 512 ? 512 : (uint32_t)b;
}

/* Writes a link of that form to path (with query) on host h over scheme. */
static void emit(ws_links_t *it, ws_link_t *l, int form, int https, uint32_t h, const char *path)
{
    uint64_t r = ws_next(&it->rng);
    char abs[WS_URL_MAX];
    int n = ws_origin(it->c, https, h, abs, sizeof abs);
    snprintf(abs + n, sizeof abs - (size_t)n, "%s", path);
    l->form = form;
    if (form == WS_LINK_ABS) {
        snprintf(l->url, sizeof l->url, "%s", abs);
        if ((r & 31) == 0) { /* upper-case scheme and host */
            snprintf(l->href, sizeof l->href, "%s", abs);
            for (int i = 0; i < n; i++)
                l->href[i] = (char)toupper((unsigned char)l->href[i]);
        } else if ((r & 31) == 1) { /* explicit default port */
            snprintf(l->href, sizeof l->href, "%.*s:%s%s", n, abs, https ? "443" : "80", path);
        } else {
            snprintf(l->href, sizeof l->href, "%s", abs);
        }
    } else if (form == WS_LINK_ROOT) {
        snprintf(l->url, sizeof l->url, "%s", path);
        snprintf(l->href, sizeof l->href, "%s", path);
    } else {
        ws_rel_ref(it->base[0] ? it->base : it->dir, path, l->url, sizeof l->url);
        int dot = ((r >> 5) & 15) == 0 && strncmp(l->url, "../", 3);
        snprintf(l->href, sizeof l->href, "%s%s", dot ? "./" : "", l->url);
    }
    if (((r >> 9) & 31) == 0) { /* a fragment, dropped by a crawler */
        size_t len = strlen(l->href);
        snprintf(l->href + len, sizeof l->href - len, "#top");
    }
}

static void same_host(ws_links_t *it, ws_link_t *l, const char *path)
{
    double u = ws_u01(ws_next(&it->rng));
    int form = u < it->c->share_abs                      ? WS_LINK_ABS
               : u < it->c->share_abs + it->c->share_rel ? WS_LINK_REL
                                                         : WS_LINK_ROOT;
    emit(it, l, form, it->h.https, it->h.id, path);
}

/* The session a same-host link carries. */
static uint32_t link_sid(const ws_links_t *it)
{
    if (!it->h.sid || !it->c->sid_sessions)
        return 0;
    if (it->p->sid)
        return it->p->sid;
    return 1 + (uint32_t)(ws_hash(it->c->seed, TAG_SID, it->h.id, it->p->index + 7) %
                          it->c->sid_sessions);
}

static void special(ws_links_t *it, ws_link_t *l, uint32_t which)
{
    char path[128];
    uint64_t r = ws_next(&it->rng);
    switch (which) {
    case 0:
        snprintf(path, sizeof path, "/cal/%u-%02u", WS_CAL_START / 12, WS_CAL_START % 12 + 1);
        break;
    case 1:
        snprintf(path, sizeof path, "/deep/");
        break;
    case 2:
        snprintf(path, sizeof path, "/loop/0");
        break;
    case 3:
        snprintf(path, sizeof path, "/private/%llu.html", (unsigned long long)(r % it->h.npages));
        break;
    case 4:
        snprintf(path, sizeof path, "/search?q=%s", ws_words[r % WS_NWORDS]);
        break;
    case 6: { /* the one link into the subdomain farm */
        uint32_t f = it->c->hosts - it->c->farm_hosts;
        ws_host_t t;
        ws_host(it->c, f, &t);
        emit(it, l, WS_LINK_ABS, t.https, f, "/");
        return;
    }
    default:
        snprintf(path, sizeof path, "/files/%llu.pdf", (unsigned long long)(r % WS_FILES));
    }
    emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, path);
}

/* The specials a page of this host links: a bit per kind of special()
 * (64: host 0's front page links the subdomain farm). */
static uint32_t specials_of(const ws_cfg_t *c, const ws_host_t *h)
{
    int dis = h->robots == WS_ROBOTS_DISALLOW || h->robots == WS_ROBOTS_REDIRECT ||
              h->robots == WS_ROBOTS_AGENT;
    return (h->cal ? 1u : 0) | (h->deep ? 2u : 0) | (h->loop ? 4u : 0) | (dis ? 24u : 0) | 32u |
           (c->farm_hosts && h->id == 0 ? 64u : 0);
}

static void other_host(ws_links_t *it, ws_link_t *l)
{
    const ws_cfg_t *c = it->c;
    uint32_t h2;
    /* the hosts outside the farm; a farm host links only into the farm */
    uint32_t others = c->hosts - c->farm_hosts;
    double u = ws_u01(ws_next(&it->rng));
    if (ws_in_farm(c, it->h.id)) {
        h2 = others + (uint32_t)(ws_next(&it->rng) % c->farm_hosts);
    } else if (u < c->share_same_domain / (1 - c->share_same_host + 1e-12)) {
        uint32_t first = it->h.domain * c->hosts_per_domain;
        h2 = first + (uint32_t)(ws_next(&it->rng) % c->hosts_per_domain);
        h2 = h2 >= others ? first : h2;
    } else if (ws_u01(ws_next(&it->rng)) < c->share_popular) {
        double v = ws_u01(ws_next(&it->rng));
        h2 = (uint32_t)(others * v * v * v);
    } else {
        h2 = (uint32_t)(ws_next(&it->rng) % others);
    }
    ws_host_t t;
    ws_host(c, h2, &t);
    char path[WS_URL_MAX];
    uint64_t j = ws_u01(ws_next(&it->rng)) < 0.5 ? 0 : ws_next(&it->rng) % t.npages;
    ws_page_path(c, h2, j, 0, path, sizeof path);
    int https = t.https && !(ws_u01(ws_next(&it->rng)) < c->share_http_link);
    emit(it, l, WS_LINK_ABS, https, h2, path);
}

static void regular(ws_links_t *it, ws_link_t *l)
{
    const ws_cfg_t *c = it->c;
    char path[WS_URL_MAX];
    double u = ws_u01(ws_next(&it->rng));
    uint64_t j = ws_u01(ws_next(&it->rng)) < 0.1 ? 0 : ws_next(&it->rng) % it->h.npages;
    uint32_t sid = link_sid(it);
    if (u < c->share_broken) {
        snprintf(path, sizeof path, "/%s/%llu.html", ws_words[j % WS_NWORDS],
                 (unsigned long long)(it->h.npages + j));
    } else if ((u -= c->share_broken) < c->share_file) {
        snprintf(path, sizeof path, "/files/%llu.pdf", (unsigned long long)(j % WS_FILES));
    } else if ((u -= c->share_file) < c->share_dup_link && !sid) {
        int n = ws_page_path(c, it->h.id, j, 0, path, sizeof path);
        snprintf(path + n, sizeof path - (size_t)n, "?ref=%s", ws_refs[j % WS_NREFS]);
    } else if ((u -= c->share_dup_link) < c->share_print_link && j && !sid) {
        int n = ws_page_path(c, it->h.id, j, 0, path, sizeof path);
        snprintf(path + n, sizeof path - (size_t)n, "?print=1");
    } else if (ws_u01(ws_next(&it->rng)) >= c->share_same_host) {
        other_host(it, l);
        return;
    } else {
        ws_page_path(c, it->h.id, j, sid, path, sizeof path);
    }
    same_host(it, l, path);
}

void ws_links_begin(const ws_cfg_t *c, const ws_plan_t *p, ws_links_t *it)
{
    memset(it, 0, sizeof *it);
    it->c = c;
    it->p = p;
    ws_host(c, p->chost, &it->h);
    it->rng = ws_hash(c->seed, TAG_LINK, p->chost, p->index * 64 + p->body) + p->sid;
    snprintf(it->dir, sizeof it->dir, "/");
    switch (p->body) {
    case WS_BODY_PAGE: {
        uint64_t s = it->rng;
        double xmin = c->links_mean * (c->links_alpha - 1) / c->links_alpha;
        double n = xmin / pow(1.0 - ws_u01(ws_next(&s)), 1.0 / c->links_alpha);
        it->n = n > c->links_max ? c->links_max : (uint32_t)n;
        it->n = !p->index && it->n < 10 ? 10 : it->n;
        it->specials = p->index ? 0 : specials_of(c, &it->h);
        for (uint32_t b = it->specials; b; b &= b - 1)
            it->n++;
        it->meta_nofollow = ws_u01(ws_next(&s)) < c->share_meta_nofollow;
        it->canonical = ws_u01(ws_next(&s)) < c->share_canonical;
        if (p->index) {
            char path[WS_URL_MAX];
            ws_page_path(c, p->chost, p->index, 0, path, sizeof path);
            *strrchr(path, '/') = '\0';
            snprintf(it->dir, sizeof it->dir, "%s/", path);
        }
        if (ws_u01(ws_next(&s)) < c->share_base)
            snprintf(it->base, sizeof it->base, "/%s/", ws_section(c, p->chost, ws_next(&s)));
        break;
    }
    case WS_BODY_CAL:
        it->n = 6;
        break;
    case WS_BODY_DEEP:
        it->n = 3;
        break;
    case WS_BODY_NOTFOUND:
    case WS_BODY_SOFT404:
    case WS_BODY_SMALL:
    case WS_BODY_MOVED:
        it->n = 1;
        break;
    default:
        it->n = 0;
    }
}

static void cal_link(ws_links_t *it, ws_link_t *l, uint32_t k)
{
    char path[64];
    uint64_t m = it->p->index;
    if (k < 2) {
        uint64_t to = k ? m + 1 : m - 1;
        if ((k ? m >= WS_CAL_START + it->c->cal_span : m + it->c->cal_span <= WS_CAL_START))
            to = m; /* the end of the range links itself */
        snprintf(path, sizeof path, "/cal/%llu-%02llu", (unsigned long long)(to / 12),
                 (unsigned long long)(to % 12 + 1));
        emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, path);
    } else if (k == 2) {
        emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, "/");
    } else {
        ws_page_path(it->c, it->h.id, ws_next(&it->rng) % it->h.npages, 0, path, sizeof path);
        emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, path);
    }
}

int ws_links_next(ws_links_t *it, ws_link_t *l)
{
    if (it->k >= it->n)
        return 0;
    uint32_t k = it->k++;
    l->nofollow = 0;
    switch (it->p->body) {
    case WS_BODY_PAGE:
        if (it->specials) {
            uint32_t bit = it->specials & -it->specials;
            it->specials &= ~bit;
            special(it, l, (uint32_t)__builtin_ctz(bit));
            return 1;
        }
        regular(it, l);
        l->nofollow = ws_u01(ws_next(&it->rng)) < it->c->share_nofollow;
        return 1;
    case WS_BODY_CAL:
        cal_link(it, l, k);
        return 1;
    case WS_BODY_DEEP:
        if (k == 0) {
            char w[64];
            uint64_t r = ws_hash(it->c->seed, TAG_DEEP, it->p->content_id, 0);
            snprintf(w, sizeof w, "%s/", ws_words[r % WS_NWORDS]);
            snprintf(l->href, sizeof l->href, "%s", w);
            snprintf(l->url, sizeof l->url, "%s", w);
            l->form = WS_LINK_REL;
        } else {
            emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, k == 1 ? "/" : "/deep/");
        }
        return 1;
    case WS_BODY_MOVED:
        l->form = strstr(it->p->location, "://") ? WS_LINK_ABS : WS_LINK_ROOT;
        snprintf(l->href, sizeof l->href, "%s", it->p->location);
        snprintf(l->url, sizeof l->url, "%s", it->p->location);
        return 1;
    default:
        emit(it, l, WS_LINK_ROOT, it->h.https, it->h.id, "/");
        return 1;
    }
}

void ws_rel_ref(const char *dir, const char *target, char *out, size_t cap)
{
    size_t common = 0;
    for (size_t i = 0; dir[i] && dir[i] == target[i]; i++)
        if (dir[i] == '/')
            common = i + 1;
    size_t n = 0;
    out[0] = '\0';
    for (const char *d = dir + common; *d; d++)
        if (*d == '/' && n + 4 < cap)
            n += (size_t)snprintf(out + n, cap - n, "../");
    snprintf(out + n, cap - n, "%s", target + common);
    if (!out[0] || out[0] == '?') { /* "./" keeps the directory (a bare "?q" keeps the file) */
        char tmp[WS_URL_MAX];
        snprintf(tmp, sizeof tmp, "./%s", out);
        snprintf(out, cap, "%s", tmp);
    }
}
