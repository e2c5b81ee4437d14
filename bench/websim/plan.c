/*
 * plan.c -- what a request answers (ws_plan, model.h): the path grammar of
 * the synthetic web, statuses, redirects and latency.
 *
 * DESIGN: a pure function of (cfg, scheme, host, path).  Paths a host serves:
 *   /robots.txt, /robots-main.txt   its robots.txt (model.c ws_robots_text)
 *   /  and  /<section>/<i>.html     page i < npages (section from the hash);
 *       ?ref=<w>                    the same bytes (a duplicate), w in ws_refs
 *       ?sid=<8 hex>                on a sid host: the page with that session
 *       ?print=1                    the same bytes again (a printable copy)
 *   /go/<i>/<k>                     hop k of page i's redirect chain
 *   /files/<n>.pdf                  a PDF (n < WS_FILES)
 *   /private/<i>.html, /search?q=   small pages robots.txt may disallow
 *   /cal/YYYY-MM                    the calendar trap (cal_span months each way)
 *   /deep/<w>/<w>/.../              the ever-deeper trap (any depth)
 *   /loop/<k>                       the redirect loop (k < WS_LOOP_MAX)
 * and anything else is a 404 (a soft 404 on soft404 hosts).  A request
 * over http:// to an HTTPS host is a 301 to https:// whatever the path.  Page
 * i > 0 may be a redirect (chain of 1-3), a 5xx or a 429, by its own draw.
 * A body depends on (content host, index, session) only, never on the URL it
 * is served at: mirrors and copies are byte-identical (equal content_id).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "model_internal.h"

const char *const ws_words[] = {"alpha",  "bravo",  "carbon", "delta",  "echo",   "forest", "gamma",
                                "harbor", "iris",   "jade",   "kilo",   "lumen",  "mango",  "nova",
                                "orbit",  "pixel",  "quartz", "river",  "sierra", "tango",  "umber",
                                "vivid",  "willow", "xenon",  "yarrow", "zephyr", "amber",  "basil",
                                "cedar",  "dune",   "ember",  "fjord"};
const char *const ws_refs[] = {"home", "nav", "rss", "feed"};

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void set_location(const ws_cfg_t *c, ws_plan_t *p, int abs, const char *path)
{
    int n = abs ? ws_origin(c, p->https, p->host, p->location, sizeof p->location) : 0;
    snprintf(p->location + n, sizeof p->location - (size_t)n, "%s", path);
}

static void robots(const ws_cfg_t *c, const ws_host_t *h, ws_plan_t *p, int main_file)
{
    p->body = WS_BODY_ROBOTS;
    p->status = 200;
    if (main_file) {
        if (h->robots != WS_ROBOTS_REDIRECT)
            p->status = 404, p->body = WS_BODY_NOTFOUND;
        return;
    }
    switch (h->robots) {
    case WS_ROBOTS_404:
        p->status = 404, p->body = WS_BODY_NOTFOUND;
        break;
    case WS_ROBOTS_5XX:
        p->status = 503, p->body = WS_BODY_SMALL;
        break;
    case WS_ROBOTS_SLOW:
        p->delay_ms +=
            (uint32_t)((2000 + ws_hash(c->seed, TAG_LAT, h->id, 1) % 2000) * c->lat_scale);
        break;
    case WS_ROBOTS_REDIRECT:
        p->status = 301, p->body = WS_BODY_MOVED;
        set_location(c, p, 0, "/robots-main.txt");
        break;
    }
}

/* Page i's own draw: a redirect chain, an error, or 200. */
static void page_kind(const ws_cfg_t *c, const ws_host_t *h, ws_plan_t *p, uint64_t i)
{
    uint64_t s = ws_hash(c->seed, TAG_KIND, h->id, i);
    double u = ws_u01(ws_next(&s));
    p->status = 200;
    p->body = WS_BODY_PAGE;
    if (!i)
        return;
    if (u < c->share_redirect) {
        p->status = ws_next(&s) & 1 ? 301 : 302;
        p->body = WS_BODY_MOVED;
        uint32_t hops = 1 + (uint32_t)(ws_next(&s) % 3);
        ws_plan_redirect(c, p, i, 0, hops, s);
    } else if ((u -= c->share_redirect) < c->share_5xx) {
        static const int code[] = {500, 502, 503};
        p->status = code[ws_next(&s) % 3];
        p->body = WS_BODY_SMALL;
    } else if ((u -= c->share_5xx) < c->share_429) {
        p->status = 429;
        p->body = WS_BODY_SMALL;
        p->retry_after = c->retry_after_s;
    }
}

void ws_plan_redirect(const ws_cfg_t *c, ws_plan_t *p, uint64_t i, uint32_t k, uint32_t hops,
                      uint64_t s)
{
    char path[WS_URL_MAX];
    ws_host_t h;
    ws_host(c, p->chost, &h);
    int abs = ws_u01(ws_hash(s, k, 1, 0)) < 0.6;
    if (k + 1 < hops) {
        snprintf(path, sizeof path, "/go/%llu/%u", (unsigned long long)i, k + 1);
        set_location(c, p, abs, path);
        return;
    }
    uint64_t t = ws_hash(s, 7, 0, 0);
    if (ws_u01(ws_next(&t)) < 0.2 && c->hosts > 1) { /* another host's home page */
        /* (the farm's hosts redirect into the farm, the others outside it) */
        uint32_t others = c->hosts - c->farm_hosts;
        uint32_t o = ws_in_farm(c, p->chost) ? others + (uint32_t)(ws_next(&t) % c->farm_hosts)
                                             : (uint32_t)(ws_next(&t) % others);
        ws_host_t oh;
        ws_host(c, o, &oh);
        int n = ws_origin(c, oh.https, o, p->location, sizeof p->location);
        snprintf(p->location + n, sizeof p->location - (size_t)n, "/");
        return;
    }
    uint64_t j = ws_next(&t) % h.npages;
    ws_page_path(c, p->chost, j == i ? 0 : j, 0, path, sizeof path);
    set_location(c, p, abs, path);
}

/* "<sec>/<i>.html" at *q (q past the leading '/'); the index or -1. */
static int64_t page_index(const ws_cfg_t *c, const ws_host_t *h, const char *q, const char *end)
{
    const char *sl = memchr(q, '/', (size_t)(end - q));
    if (!sl)
        return -1;
    const char *d = sl + 1;
    int64_t i = 0;
    const char *e = d;
    while (e < end && *e >= '0' && *e <= '9' && i < (1LL << 40))
        i = i * 10 + (*e++ - '0');
    if (e == d || (*d == '0' && e - d > 1) || i == 0 || (uint64_t)i >= h->npages ||
        (size_t)(end - e) != 5 || memcmp(e, ".html", 5))
        return -1;
    const char *sec = ws_section(c, h->content, (uint64_t)i);
    if ((size_t)(sl - q) != strlen(sec) || memcmp(q, sec, (size_t)(sl - q)))
        return -1;
    return i;
}

/* The query of a page: "" / ref=<w> / sid=<hex>; 0 if valid. */
static int page_query(const ws_cfg_t *c, const ws_host_t *h, const char *q, ws_plan_t *p)
{
    if (!q)
        return 0;
    if (!strcmp(q, "print=1") && p->index_ok)
        return p->variant = 2, 0;
    if (!strncmp(q, "ref=", 4)) {
        for (uint32_t r = 0; r < WS_NREFS; r++)
            if (!strcmp(q + 4, ws_refs[r]))
                return p->variant = 1, 0;
        return -1;
    }
    if (h->sid && !strncmp(q, "sid=", 4) && strlen(q) == 12) {
        for (uint32_t s = 1; s <= c->sid_sessions; s++) {
            char hex[16];
            snprintf(hex, sizeof hex, "%08llx",
                     (unsigned long long)(ws_hash(c->seed, TAG_SID, h->content, s) & 0xffffffffu));
            if (!strcmp(q + 4, hex))
                return p->sid = s, 0;
        }
    }
    return -1;
}

static uint64_t num(const char **s, const char *end)
{
    uint64_t v = 0;
    const char *b = *s;
    while (*s < end && **s >= '0' && **s <= '9' && v < (1ULL << 40))
        v = v * 10 + (uint64_t)(*(*s)++ - '0');
    return *s == b || (*b == '0' && *s - b > 1) ? UINT64_MAX : v;
}

/* The traps and small pages; 0 if the path was one of them. */
static int special(const ws_cfg_t *c, const ws_host_t *h, ws_plan_t *p, const char *path,
                   const char *end, const char *q)
{
    const char *s;
    if (!strncmp(path, "/go/", 4)) {
        s = path + 4;
        uint64_t i = num(&s, end), k = UINT64_MAX;
        if (s < end && *s == '/' && (++s, 1))
            k = num(&s, end);
        if (i == UINT64_MAX || k == UINT64_MAX || s != end || !i || i >= h->npages || q)
            return -1;
        uint64_t t = ws_hash(c->seed, TAG_KIND, h->content, i);
        if (!(ws_u01(ws_next(&t)) < c->share_redirect))
            return -1;
        p->status = ws_next(&t) & 1 ? 301 : 302;
        uint32_t hops = 1 + (uint32_t)(ws_next(&t) % 3);
        if (!k || k >= hops)
            return -1;
        p->body = WS_BODY_MOVED;
        ws_plan_redirect(c, p, i, (uint32_t)k, hops, t);
        return 0;
    }
    if (!strncmp(path, "/files/", 7)) {
        s = path + 7;
        uint64_t n = num(&s, end);
        if (n >= WS_FILES || (size_t)(end - s) != 4 || memcmp(s, ".pdf", 4) || q)
            return -1;
        p->status = 200, p->body = WS_BODY_FILE, p->index = n;
        return 0;
    }
    if (!strncmp(path, "/private/", 9)) {
        s = path + 9;
        uint64_t n = num(&s, end);
        if (n >= h->npages || (size_t)(end - s) != 5 || memcmp(s, ".html", 5) || q)
            return -1;
        p->status = 200, p->body = WS_BODY_SMALL, p->index = n;
        return 0;
    }
    if ((size_t)(end - path) == 7 && !memcmp(path, "/search", 7) && q && !strncmp(q, "q=", 2)) {
        p->status = 200, p->body = WS_BODY_SMALL, p->index = fnv(q, strlen(q));
        return 0;
    }
    if (h->cal && !strncmp(path, "/cal/", 5) && end - path == 12 && path[9] == '-' && !q) {
        s = path + 5;
        const char *y_end = path + 9, *m_at = path + 10;
        uint64_t y = num(&s, y_end), m = num(&m_at, end);
        uint64_t mon = y * 12 + m - 1;
        if (y == UINT64_MAX || m < 1 || m > 12 || (path[10] == '0' && path[11] == '0') ||
            mon + c->cal_span < WS_CAL_START || mon > WS_CAL_START + c->cal_span)
            return -1;
        p->status = 200, p->body = WS_BODY_CAL, p->index = mon;
        return 0;
    }
    if (h->deep && !strncmp(path, "/deep/", 6) && end[-1] == '/' && !q) {
        uint64_t level = 0;
        for (s = path + 6; s < end; s++) {
            if (*s == '/')
                level++;
            else if (*s < 'a' || *s > 'z' || (s[-1] == '/' && s[1] == '/'))
                return -1;
        }
        p->status = 200, p->body = WS_BODY_DEEP, p->index = level;
        return 0;
    }
    if (h->loop && !strncmp(path, "/loop/", 6) && !q) {
        s = path + 6;
        uint64_t k = num(&s, end);
        char next[64];
        if (k >= WS_LOOP_MAX || s != end)
            return -1;
        snprintf(next, sizeof next, "/loop/%llu", (unsigned long long)k + 1);
        p->status = 302, p->body = WS_BODY_MOVED;
        set_location(c, p, 0, next);
        return 0;
    }
    return -1;
}

static void plan_path(const ws_cfg_t *c, const ws_host_t *h, ws_plan_t *p)
{
    char buf[WS_URL_MAX];
    snprintf(buf, sizeof buf, "%s", p->path);
    char *q = strchr(buf, '?');
    if (q)
        *q++ = '\0';
    const char *end = buf + strlen(buf);
    if (!strcmp(buf, "/robots.txt") || !strcmp(buf, "/robots-main.txt")) {
        if (!q) {
            robots(c, h, p, buf[7] == '-');
            return;
        }
    } else if (!strcmp(buf, "/") || end - buf > 6) {
        int64_t i = !strcmp(buf, "/") ? 0 : page_index(c, h, buf + 1, end);
        p->index_ok = i > 0;
        if (i >= 0 && !page_query(c, h, q, p)) {
            p->index = (uint64_t)i;
            page_kind(c, h, p, (uint64_t)i);
            return;
        }
        p->variant = 0, p->sid = 0;
        if (!special(c, h, p, buf, end, q))
            return;
    }
    p->status = h->soft404 ? 200 : 404;
    p->body = h->soft404 ? WS_BODY_SOFT404 : WS_BODY_NOTFOUND;
}

void ws_plan(const ws_cfg_t *c, int https, uint32_t host, const char *path, ws_plan_t *p)
{
    ws_host_t h;
    ws_host(c, host, &h);
    memset(p, 0, offsetof(ws_plan_t, location));
    p->location[0] = '\0';
    snprintf(p->path, sizeof p->path, "%s", path);
    p->host = host;
    p->chost = h.content;
    p->https = (uint8_t)https;
    uint64_t lat = ws_hash(c->seed, TAG_LAT, host, fnv(path, strlen(path)));
    p->delay_ms = (uint32_t)(h.latency_ms * (0.8 + 0.4 * ws_u01(lat)));
    if (!https && h.https) {
        p->status = 301, p->body = WS_BODY_MOVED;
        int n = ws_origin(c, 1, host, p->location, sizeof p->location);
        snprintf(p->location + n, sizeof p->location - (size_t)n, "%s", path);
    } else {
        plan_path(c, &h, p);
    }
    p->content_id =
        p->status == 200
            ? ws_hash(c->seed, TAG_BODY, p->chost,
                      p->body == WS_BODY_DEEP || p->body == WS_BODY_SMALL ||
                              p->body == WS_BODY_SOFT404
                          ? fnv(p->path, strlen(p->path))
                          : p->index * 16 + (uint64_t)p->body + ((uint64_t)p->sid << 56))
            : 0;
}
