/*
 * model.c -- hosts of the synthetic web: names, domains, addresses, and each
 * host's draw of properties (model.h).
 *
 * DESIGN: nothing is stored.  Host h belongs to domain h / hosts_per_domain
 * and address index h / hosts_per_ip (so one domain's hosts mostly share an
 * address, as on shared hosting); every other property is drawn from
 * ws_hash(seed, TAG_HOST, h, n) for the n-th draw, in a fixed order, so adding
 * a draw at the end never changes the earlier ones.  A mirror host copies the
 * mirrored host's pages, robots.txt and traps, and keeps its own name,
 * address, scheme and latency.  Address index i is 127.(1 + i / 64516).
 * (i / 254 % 254 + 1).(i % 254 + 1): never 127.0.x.x (the bench's own
 * services) nor a .0 or .255 byte.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model.h"
#include "model_internal.h"

uint64_t ws_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = seed ^ 0x9e3779b97f4a7c15ULL;
    uint64_t v[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        x += v[i] + 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        x ^= x >> 31;
    }
    return x;
}

uint64_t ws_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double ws_u01(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

double ws_lognormal(uint64_t *s, double median, double sigma)
{
    double u1 = 1.0 - ws_u01(ws_next(s)), u2 = ws_u01(ws_next(s));
    double n = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    return median * exp(sigma * n);
}

uint32_t ws_ip_addr(uint32_t i)
{
    uint32_t a = 1 + i / (254u * 254u), b = i / 254u % 254u + 1, d = i % 254u + 1;
    return (127u << 24) | (a << 16) | (b << 8) | d;
}

uint32_t ws_ip_index(uint32_t addr)
{
    uint32_t a = (addr >> 16) & 255, b = (addr >> 8) & 255, d = addr & 255;
    if ((addr >> 24) != 127 || a < 1 || a > 254 || b < 1 || b > 254 || d < 1 || d > 254)
        return WS_NOHOST;
    return (a - 1) * 254u * 254u + (b - 1) * 254u + (d - 1);
}

int ws_ip_blackhole(const ws_cfg_t *c, uint32_t i)
{
    return ws_u01(ws_hash(c->seed, TAG_IP, i, 0)) < c->share_blackhole;
}

int ws_in_farm(const ws_cfg_t *c, uint32_t h)
{
    return c->farm_hosts && h >= c->hosts - c->farm_hosts && h < c->hosts;
}

uint32_t ws_domain_of(const ws_cfg_t *c, uint32_t h)
{
    if (!ws_in_farm(c, h))
        return h / c->hosts_per_domain;
    uint32_t first = c->hosts - c->farm_hosts; /* (> 0: main.c checks it) */
    return (first - 1) / c->hosts_per_domain + 1;
}

int ws_host_name(const ws_cfg_t *c, uint32_t h, char *buf, size_t cap)
{
    return snprintf(buf, cap, "h%u.example-%u.test", h, ws_domain_of(c, h));
}

int ws_origin(const ws_cfg_t *c, int https, uint32_t h, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s://", https ? "https" : "http");
    return n + ws_host_name(c, h, buf + n, cap - (size_t)n);
}

/* Reads decimal digits at *p (no sign, no leading zero but "0"); -1 if none. */
static int64_t digits(const char **p, const char *end)
{
    const char *s = *p;
    int64_t v = 0;
    if (s >= end || *s < '0' || *s > '9' ||
        (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9'))
        return -1;
    while (s < end && *s >= '0' && *s <= '9' && v < (int64_t)1 << 40)
        v = v * 10 + (*s++ - '0');
    *p = s;
    return v;
}

static int lit(const char **p, const char *end, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(end - *p) < n || strncasecmp(*p, w, n))
        return 0;
    *p += n;
    return 1;
}

uint32_t ws_host_parse(const ws_cfg_t *c, const char *name, size_t len)
{
    const char *p = name, *end = name + len;
    if (len && end[-1] == '.')
        end--;
    if (!lit(&p, end, "h"))
        return WS_NOHOST;
    int64_t h = digits(&p, end);
    if (h < 0 || !lit(&p, end, ".example-"))
        return WS_NOHOST;
    int64_t d = digits(&p, end);
    if (d < 0 || !lit(&p, end, ".test") || p != end || h >= c->hosts ||
        (uint64_t)d != (uint64_t)ws_domain_of(c, (uint32_t)h))
        return WS_NOHOST;
    return (uint32_t)h;
}

static uint8_t pick_robots(const ws_cfg_t *c, double u)
{
    const double share[] = {c->robots_disallow, c->robots_agent, c->robots_delay,   c->robots_404,
                            c->robots_5xx,      c->robots_slow,  c->robots_redirect};
    const uint8_t kind[] = {WS_ROBOTS_DISALLOW, WS_ROBOTS_AGENT, WS_ROBOTS_DELAY,   WS_ROBOTS_404,
                            WS_ROBOTS_5XX,      WS_ROBOTS_SLOW,  WS_ROBOTS_REDIRECT};
    for (size_t i = 0; i < sizeof share / sizeof *share; i++) {
        if (u < share[i])
            return kind[i];
        u -= share[i];
    }
    return WS_ROBOTS_ALLOW;
}

static uint8_t pick_charset(double u, double latin)
{
    if (u >= latin)
        return u < latin + (1 - latin) * 0.1 ? WS_CS_UTF8_META : WS_CS_UTF8;
    u /= latin; /* the other charsets, in fixed shares */
    return u < 0.35   ? WS_CS_1252
           : u < 0.55 ? WS_CS_8859_1
           : u < 0.75 ? WS_CS_1251
           : u < 0.9  ? WS_CS_SJIS
                      : WS_CS_GBK;
}

/* The content properties of host h (what a mirror copies). */
static void content_of(const ws_cfg_t *c, uint32_t h, ws_host_t *o)
{
    uint64_t s = ws_hash(c->seed, TAG_HOST, h, 1);
    double p = ws_lognormal(&s, c->pages_median, c->pages_sigma);
    o->npages = p < 1 ? 1 : p > c->pages_max ? c->pages_max : (uint32_t)p;
    o->robots = pick_robots(c, ws_u01(ws_next(&s)));
    o->crawl_delay_s = o->robots == WS_ROBOTS_DELAY ? 2 + (uint32_t)(ws_next(&s) % 3) : 0;
    o->gzip = ws_u01(ws_next(&s)) < c->share_gzip;
    o->br = ws_u01(ws_next(&s)) < c->share_br;
    o->soft404 = ws_u01(ws_next(&s)) < c->share_soft404;
    o->charset = pick_charset(ws_u01(ws_next(&s)), c->share_latin);
    o->cal = ws_u01(ws_next(&s)) < c->share_cal;
    o->sid = ws_u01(ws_next(&s)) < c->share_sid;
    o->deep = ws_u01(ws_next(&s)) < c->share_deep;
    o->loop = ws_u01(ws_next(&s)) < c->share_loop;
}

static int is_mirror(const ws_cfg_t *c, uint32_t h)
{
    return ws_u01(ws_hash(c->seed, TAG_MIRROR, h, 0)) < c->share_mirror;
}

void ws_host(const ws_cfg_t *c, uint32_t h, ws_host_t *o)
{
    memset(o, 0, sizeof *o);
    o->id = h;
    o->domain = ws_domain_of(c, h);
    o->ip = h / c->hosts_per_ip;
    o->blackhole = (uint8_t)ws_ip_blackhole(c, o->ip);
    uint64_t s = ws_hash(c->seed, TAG_HOST, h, 0);
    o->https = ws_u01(ws_next(&s)) < c->share_https;
    double lat = ws_u01(ws_next(&s)) < c->share_slow
                     ? 2000 + (double)(ws_next(&s) % 6000)
                     : ws_lognormal(&s, c->lat_median_ms, c->lat_sigma);
    lat = lat > 20000 ? 20000 : lat;
    o->latency_ms = (uint32_t)(lat * c->lat_scale);
    o->content = h;
    /* with a farm, host 0 (whose front page alone links it) neither mirrors
     * nor is mirrored, and a farm host does not mirror: so nothing else
     * links the farm, and it stays reachable */
    int farm = c->farm_hosts > 0;
    if (is_mirror(c, h) && !ws_in_farm(c, h) && !(farm && h == 0)) {
        uint32_t m = (uint32_t)(ws_hash(c->seed, TAG_MIRROR, h, 1) % (c->hosts - c->farm_hosts));
        if (m != h && !is_mirror(c, m) && !(farm && m == 0)) /* a mirror of a mirror is not one */
            o->content = m;
    }
    content_of(c, o->content, o);
}

static const char *const sections[] = {"news",  "blog", "shop", "docs",   "about", "forum",
                                       "wiki",  "help", "team", "events", "press", "jobs",
                                       "media", "data", "lab",  "archive"};

const char *ws_section(const ws_cfg_t *c, uint32_t h, uint64_t i)
{
    return sections[ws_hash(c->seed, TAG_SECTION, h, i) % 16];
}

int ws_page_path(const ws_cfg_t *c, uint32_t h, uint64_t i, uint32_t sid, char *buf, size_t cap)
{
    int n = i ? snprintf(buf, cap, "/%s/%llu.html", ws_section(c, h, i), (unsigned long long)i)
              : snprintf(buf, cap, "/");
    if (sid)
        n += snprintf(buf + n, cap - (size_t)n, "?sid=%08llx",
                      (unsigned long long)(ws_hash(c->seed, TAG_SID, h, sid) & 0xffffffffu));
    return n;
}

size_t ws_robots_text(const ws_cfg_t *c, const ws_host_t *h, char *buf, size_t cap)
{
    int n = 0;
    switch (h->robots) {
    case WS_ROBOTS_DISALLOW:
    case WS_ROBOTS_REDIRECT:
        n = snprintf(buf, cap,
                     "# robots.txt\nUser-agent: *\nDisallow: /private/\nDisallow: /search\n"
                     "Disallow: /cgi-bin/\n");
        break;
    case WS_ROBOTS_AGENT:
        n = snprintf(buf, cap,
                     "User-agent: %s\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n",
                     c->agent);
        break;
    case WS_ROBOTS_DELAY:
        n = snprintf(buf, cap, "User-agent: *\nCrawl-delay: %u\nDisallow: /cgi-bin/\n",
                     h->crawl_delay_s);
        break;
    default:
        n = snprintf(buf, cap, "User-agent: *\nDisallow:\n");
    }
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}
