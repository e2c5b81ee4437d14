/*
 * model.h -- websim's synthetic web as a pure function of (seed, host, path).
 *
 * Everything a server or the ground truth needs to know about a URL comes
 * from here: a host's name, domain, address, scheme, latency, robots.txt and
 * page count (ws_host), and what a request for (scheme, host, path) answers
 * (ws_plan): a status, a Location, a body kind and its links (ws_links_*).
 * Nothing is stored: the same arguments always give the same answer, so the
 * server (server.c, render.c) and the ground truth (truth.c) cannot disagree
 * unless one of them has a bug.  Not thread-safe only in that a ws_links_t is
 * its caller's; every function here is reentrant.
 */
#ifndef WEBSIM_MODEL_H
#define WEBSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define WS_URL_MAX 4096 /* longest URL the model writes (the deep trap stops below it) */
#define WS_NAME_MAX 64  /* longest host name */
#define WS_NOHOST UINT32_MAX

/* Every parameter of the web (params.c holds the one table of names,
 * defaults, ranges and help that the CLI, --help and README read). */
typedef struct ws_cfg {
    uint64_t seed;              /* everything derives from it */
    uint32_t hosts;             /* hosts in the web */
    uint32_t hosts_per_domain;  /* hosts under one registered domain */
    uint32_t hosts_per_ip;      /* hosts sharing one 127.x.y.z address */
    uint32_t farm_hosts;        /* the last farm_hosts hosts: one registered domain (a
                                   subdomain farm) linked only from itself and from host
                                   0's front page (0: none) */
    double pages_median;        /* pages per host: lognormal median */
    double pages_sigma;         /* ... and sigma (of ln) */
    uint32_t pages_max;         /* cap on pages per host */
    double size_median_kb;      /* HTML page size, lognormal median, KB */
    double size_sigma;          /* ... sigma */
    double share_mb;            /* share of pages of 1-5 MB */
    uint32_t size_max_kb;       /* cap on a page's size, KB */
    double links_mean;          /* mean out-degree (Pareto) */
    double links_alpha;         /* Pareto exponent of the out-degree */
    uint32_t links_max;         /* cap on a page's links */
    double share_same_host;     /* of links: to the same host */
    double share_same_domain;   /* of links: to another host of the same domain */
    double share_popular;       /* of links to other domains: to a popular host (Zipf-like) */
    double share_https;         /* hosts served over HTTPS (the rest: HTTP) */
    double share_http_link;     /* links to an HTTPS host written http:// (a 301 to https) */
    double share_broken;        /* links to a page that does not exist (404 / soft 404) */
    double share_file;          /* links to a PDF (fetched, not parsed) */
    double share_dup_link;      /* same-host links to ?ref= copies (exact duplicates) */
    double share_print_link;    /* same-host links to /print/ copies (exact duplicates) */
    double share_nofollow;      /* links with rel=nofollow */
    double share_abs;           /* same-host links written absolute */
    double share_rel;           /* same-host links written relative (else root-relative) */
    double share_base;          /* pages with <base href> */
    double share_canonical;     /* pages with <link rel=canonical> */
    double share_meta_nofollow; /* pages with <meta name=robots content=nofollow> */
    double share_redirect;      /* pages answering 301/302 (chains of 1-3) */
    double share_5xx;           /* pages answering 500/502/503 */
    double share_429;           /* pages answering 429 with Retry-After */
    double share_soft404;       /* hosts answering 200 for missing pages */
    double share_gzip;          /* hosts that gzip when asked */
    double share_br;            /* hosts that use br when asked (before gzip) */
    double share_latin;         /* hosts in a charset other than UTF-8 */
    double share_mirror;        /* hosts that mirror another host byte for byte */
    double share_cal;           /* hosts with a calendar trap */
    double share_sid;           /* hosts with session ids in their URLs */
    double share_deep;          /* hosts with an ever-deeper path trap */
    double share_loop;          /* hosts with a redirect loop */
    uint32_t cal_span;          /* calendar months each way from the start */
    uint32_t sid_sessions;      /* session ids a sid host hands out */
    double robots_disallow;     /* hosts whose robots.txt disallows parts */
    double robots_agent;        /* hosts whose robots.txt disallows all to the crawler's agent */
    double robots_delay;        /* hosts with a Crawl-delay (2-4 s) */
    double robots_404;          /* hosts without robots.txt (404) */
    double robots_5xx;          /* hosts whose robots.txt answers 503 (nothing may be fetched) */
    double robots_slow;         /* hosts whose robots.txt takes 2-4 s more */
    double robots_redirect;     /* hosts whose robots.txt is a 301 */
    double lat_median_ms;       /* response latency per host: lognormal median, ms */
    double lat_sigma;           /* ... sigma */
    double share_slow;          /* hosts taking 2-8 s a response */
    double share_blackhole;     /* addresses that accept and never answer */
    double lat_scale;           /* every latency times this */
    uint32_t retry_after_s;     /* Retry-After of a 429, s */
    char agent[64];             /* product token a robots.txt group names (the crawler's) */
} ws_cfg_t;

/* Defaults for every field (params.c). */
void ws_cfg_defaults(ws_cfg_t *c);

enum {
    WS_ROBOTS_ALLOW,
    WS_ROBOTS_DISALLOW,
    WS_ROBOTS_AGENT,
    WS_ROBOTS_DELAY,
    WS_ROBOTS_404,
    WS_ROBOTS_5XX,
    WS_ROBOTS_SLOW,
    WS_ROBOTS_REDIRECT
};
enum {
    WS_CS_UTF8,
    WS_CS_UTF8_META,
    WS_CS_1252,
    WS_CS_8859_1,
    WS_CS_1251,
    WS_CS_SJIS,
    WS_CS_GBK,
    WS_NCHARSETS
};

typedef struct ws_host {
    uint32_t id;
    uint32_t domain;     /* registered domain example-<domain>.test */
    uint32_t ip;         /* address index (ws_ip_addr) */
    uint32_t content;    /* host whose pages it serves (itself, or the mirrored one) */
    uint32_t npages;     /* pages /, /<sec>/<i>.html for i < npages */
    uint32_t latency_ms; /* base latency of a response */
    uint32_t crawl_delay_s;
    uint8_t https, blackhole, robots, gzip, br, soft404, charset;
    uint8_t cal, sid, deep, loop;
} ws_host_t;

/* The host h (< c->hosts). */
void ws_host(const ws_cfg_t *c, uint32_t h, ws_host_t *out);
/* Host h's registered domain: h / hosts_per_domain, or, for a host of the
 * farm (ws_in_farm), the farm's, one past the last other domain. */
uint32_t ws_domain_of(const ws_cfg_t *c, uint32_t h);
/* Whether host h is one of the subdomain farm's. */
int ws_in_farm(const ws_cfg_t *c, uint32_t h);
/* "h<h>.example-<domain>.test" into buf (WS_NAME_MAX); its length. */
int ws_host_name(const ws_cfg_t *c, uint32_t h, char *buf, size_t cap);
/* The host a name (case-insensitive, no port) names, or WS_NOHOST. */
uint32_t ws_host_parse(const ws_cfg_t *c, const char *name, size_t len);
/* Address index i as a host-order IPv4 address in 127.1.0.1 - 127.254.255.254. */
uint32_t ws_ip_addr(uint32_t i);
/* The address index of a host-order IPv4 address, or WS_NOHOST. */
uint32_t ws_ip_index(uint32_t addr);
/* Whether address index i accepts and never answers. */
int ws_ip_blackhole(const ws_cfg_t *c, uint32_t i);

enum {
    WS_BODY_NONE,
    WS_BODY_PAGE,
    WS_BODY_SMALL,
    WS_BODY_NOTFOUND,
    WS_BODY_SOFT404,
    WS_BODY_FILE,
    WS_BODY_ROBOTS,
    WS_BODY_CAL,
    WS_BODY_DEEP,
    WS_BODY_MOVED
};

/* What a request answers. */
typedef struct ws_plan {
    int status;                /* 200, 301, 302, 404, 429, 500, 502, 503 */
    int body;                  /* WS_BODY_* */
    uint32_t host;             /* the serving host */
    uint32_t chost;            /* whose content (a mirror serves another host's) */
    uint64_t index;            /* page index, calendar month, deep level, file number */
    uint32_t sid;              /* session 1..sid_sessions in the links, 0: none */
    uint8_t https;             /* the request's scheme */
    uint8_t variant;           /* 0 page, 1 ?ref= copy, 2 ?print=1 copy */
    uint8_t index_ok;          /* (plan.c) the path names a page other than / */
    uint32_t delay_ms;         /* latency before the response */
    uint32_t retry_after;      /* s, for 429 */
    uint64_t content_id;       /* equal for byte-identical bodies */
    char location[WS_URL_MAX]; /* for 3xx: absolute or root-relative, as sent */
    char path[WS_URL_MAX];     /* the request's path and query */
} ws_plan_t;

/* The answer to GET scheme://host/path (path starts with '/', may hold a
 * query; no fragment).  host must be < c->hosts. */
void ws_plan(const ws_cfg_t *c, int https, uint32_t host, const char *path, ws_plan_t *out);

/* A link of a body: href as written in the HTML, and how it resolves. */
enum { WS_LINK_ABS, WS_LINK_ROOT, WS_LINK_REL };
typedef struct ws_link {
    int form;              /* WS_LINK_*: ABS is a whole URL, ROOT a path, REL relative */
    int nofollow;          /* rel=nofollow */
    char href[WS_URL_MAX]; /* as written (may differ in case, port, fragment) */
    char url[WS_URL_MAX];  /* ABS: the normalized URL; ROOT/REL: the ref to resolve */
} ws_link_t;

typedef struct ws_links {
    const ws_cfg_t *c;
    const ws_plan_t *p;
    ws_host_t h; /* the content host */
    uint64_t rng;
    uint32_t n, k;        /* links in all, given so far */
    char base[256];       /* <base href> of the page ("" none): root-relative dir */
    char dir[WS_URL_MAX]; /* directory of the page's own path (relative links without base) */
    uint32_t specials;    /* special links still to give (bits, links.c) */
    int meta_nofollow, canonical;
} ws_links_t;

/* Starts the links of a plan's body (also the page's <base>, meta nofollow
 * and canonical flags, in it->base etc.). */
void ws_links_begin(const ws_cfg_t *c, const ws_plan_t *p, ws_links_t *it);
/* The next link into *l; 0 when there is none left. */
int ws_links_next(ws_links_t *it, ws_link_t *l);

/* Size in bytes of a WS_BODY_PAGE body (the renderer makes it exactly this
 * unless its markup needs more). */
uint32_t ws_page_size(const ws_cfg_t *c, const ws_plan_t *p);
/* The robots.txt text of host h into buf; its length.  agent: the product
 * token a WS_ROBOTS_AGENT file names. */
size_t ws_robots_text(const ws_cfg_t *c, const ws_host_t *h, char *buf, size_t cap);
/* Section word of page i of host h ("news", ...). */
const char *ws_section(const ws_cfg_t *c, uint32_t h, uint64_t i);
/* The canonical path of page i of host h into buf. */
int ws_page_path(const ws_cfg_t *c, uint32_t h, uint64_t i, uint32_t sid, char *buf, size_t cap);
/* Mixing hash used everywhere (splitmix64 of a combination). */
uint64_t ws_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
/* "https://name" or "http://name" into buf. */
int ws_origin(const ws_cfg_t *c, int https, uint32_t h, char *buf, size_t cap);

#endif
