/*
 * params.c -- the one table of the web's parameters (ws_cfg_t, model.h):
 * name, type, field, default, range and help.  Defaults, the command line
 * (--name VALUE), --help and `websim params` (the README's table) all read it.
 *
 * DESIGN: a parameter is a field of ws_cfg_t reached by offsetof; nothing else
 * names a default.  Parsing uses strtoull/strtod with end-pointer checks.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

enum { P_U64, P_U32, P_DBL, P_STR };
typedef struct param {
    const char *name;
    int type;
    size_t off;
    const char *def;
    double min, max;
    const char *help;
} param_t;

#define F(f) offsetof(ws_cfg_t, f)
#define SHARE(n, f, d, h)                                                                          \
    {                                                                                              \
        n, P_DBL, F(f), d, 0, 1, h                                                                 \
    }
static const param_t params[] = {
    {"seed", P_U64, F(seed), "1", 0, 1.8e19, "the web's seed: every byte served derives from it"},
    {"hosts", P_U32, F(hosts), "10000", 1, 16000000, "hosts in the web"},
    {"hosts-per-domain", P_U32, F(hosts_per_domain), "4", 1, 1e6,
     "hosts under one registered domain (h<i>.example-<i/this>.test)"},
    {"hosts-per-ip", P_U32, F(hosts_per_ip), "8", 1, 1e6,
     "hosts sharing one address (shared hosting)"},
    {"farm-hosts", P_U32, F(farm_hosts), "0", 0, 16000000,
     "the last N of --hosts are one registered domain, a subdomain farm linking only into "
     "itself, linked from host 0's front page alone"},
    {"pages-median", P_DBL, F(pages_median), "20", 1, 1e7, "pages per host: lognormal median"},
    {"pages-sigma", P_DBL, F(pages_sigma), "1.5", 0, 5, "pages per host: sigma of ln"},
    {"pages-max", P_U32, F(pages_max), "100000", 1, 1e9, "cap on pages per host"},
    {"size-median-kb", P_DBL, F(size_median_kb), "30", 0.5, 1e5,
     "HTML page size: lognormal median, KB"},
    {"size-sigma", P_DBL, F(size_sigma), "0.9", 0, 4, "HTML page size: sigma of ln"},
    SHARE("share-mb", share_mb, "0.003", "pages of 1-5 MB (the tail)"),
    {"size-max-kb", P_U32, F(size_max_kb), "8192", 1, 1e6, "cap on a page's size, KB"},
    {"links-mean", P_DBL, F(links_mean), "40", 1, 1e4, "mean links a page (Pareto out-degree)"},
    {"links-alpha", P_DBL, F(links_alpha), "2.1", 1.05, 10, "Pareto exponent of the out-degree"},
    {"links-max", P_U32, F(links_max), "2000", 1, 1e5, "cap on a page's links"},
    SHARE("share-same-host", share_same_host, "0.8", "of regular links: to the same host"),
    SHARE("share-same-domain", share_same_domain, "0.05",
          "of all links: to another host of the same domain"),
    SHARE("share-popular", share_popular, "0.5",
          "of links to other domains: to a popular host (low ids, Zipf-like)"),
    SHARE("share-https", share_https, "0.8", "hosts served over HTTPS (the rest over HTTP)"),
    SHARE("share-http-link", share_http_link, "0.03",
          "cross-host links to an HTTPS host written http:// (a 301 to https)"),
    SHARE("share-broken", share_broken, "0.02", "links to missing pages (404, or soft 404)"),
    SHARE("share-file", share_file, "0.01", "links to a PDF (/files/<n>.pdf)"),
    SHARE("share-dup-link", share_dup_link, "0.01", "links to a ?ref= copy (exact duplicate)"),
    SHARE("share-print-link", share_print_link, "0.01",
          "links to a ?print=1 copy (exact duplicate)"),
    SHARE("share-nofollow", share_nofollow, "0.05", "links with rel=nofollow"),
    SHARE("share-abs", share_abs, "0.25", "same-host links written absolute"),
    SHARE("share-rel", share_rel, "0.3", "same-host links written relative (rest: /root)"),
    SHARE("share-base", share_base, "0.05", "pages with <base href=\"/<section>/\">"),
    SHARE("share-canonical", share_canonical, "0.1", "pages with <link rel=canonical>"),
    SHARE("share-meta-nofollow", share_meta_nofollow, "0.01",
          "pages with <meta name=robots content=nofollow>"),
    SHARE("share-redirect", share_redirect, "0.02", "pages answering 301/302 (chains of 1-3)"),
    SHARE("share-5xx", share_5xx, "0.01", "pages answering 500/502/503 (always)"),
    SHARE("share-429", share_429, "0.005", "pages answering 429 with Retry-After (always)"),
    SHARE("share-soft404", share_soft404, "0.1", "hosts answering 200 for missing pages"),
    SHARE("share-gzip", share_gzip, "0.3", "hosts that gzip when the client asks"),
    SHARE("share-br", share_br, "0.1", "hosts that use br when asked (before gzip)"),
    SHARE("share-latin", share_latin, "0.1",
          "hosts in a charset other than UTF-8 (windows-1252, iso-8859-1, windows-1251, "
          "shift_jis, gbk)"),
    SHARE("share-mirror", share_mirror, "0.02", "hosts mirroring another host byte for byte"),
    SHARE("share-cal", share_cal, "0.02", "hosts with a calendar trap (/cal/YYYY-MM)"),
    SHARE("share-sid", share_sid, "0.02", "hosts putting session ids in their links (?sid=)"),
    SHARE("share-deep", share_deep, "0.02", "hosts with an ever-deeper path trap (/deep/a/b/...)"),
    SHARE("share-loop", share_loop, "0.01", "hosts with a redirect loop (/loop/<k>)"),
    {"cal-span", P_U32, F(cal_span), "1200", 1, 1e6, "calendar months each way from 2026-12"},
    {"sid-sessions", P_U32, F(sid_sessions), "4", 1, 1e6, "session ids a sid host hands out"},
    SHARE("robots-disallow", robots_disallow, "0.2",
          "hosts whose robots.txt disallows /private/, /search, /cgi-bin/"),
    SHARE("robots-agent", robots_agent, "0.02",
          "hosts whose robots.txt disallows everything to --agent"),
    SHARE("robots-delay", robots_delay, "0.05", "hosts with a Crawl-delay of 2-4 s"),
    SHARE("robots-404", robots_404, "0.15", "hosts without robots.txt (404: allow all)"),
    SHARE("robots-5xx", robots_5xx, "0.02", "hosts whose robots.txt answers 503 (fetch nothing)"),
    SHARE("robots-slow", robots_slow, "0.03", "hosts whose robots.txt takes 2-4 s more"),
    SHARE("robots-redirect", robots_redirect, "0.03",
          "hosts whose robots.txt is a 301 to /robots-main.txt"),
    {"lat-median-ms", P_DBL, F(lat_median_ms), "100", 0, 1e5,
     "latency per host: lognormal median, ms"},
    {"lat-sigma", P_DBL, F(lat_sigma), "0.8", 0, 4, "latency per host: sigma of ln"},
    SHARE("share-slow", share_slow, "0.02", "hosts taking 2-8 s a response"),
    SHARE("share-blackhole", share_blackhole, "0.002", "addresses that accept and never answer"),
    {"lat-scale", P_DBL, F(lat_scale), "1", 0, 100, "every latency times this (0: none)"},
    {"retry-after-s", P_U32, F(retry_after_s), "2", 0, 86400, "Retry-After of a 429, s"},
    {"agent", P_STR, F(agent), "crawler", 0, 0, "product token a robots.txt group names"},
};
#define NPARAMS (sizeof params / sizeof *params)

static int set(ws_cfg_t *c, const param_t *p, const char *v, char *err, size_t errcap)
{
    char *end = NULL, *f = (char *)c + p->off;
    errno = 0;
    if (p->type == P_STR) {
        if (strlen(v) >= sizeof c->agent)
            goto bad;
        snprintf(f, sizeof c->agent, "%s", v);
        return 0;
    }
    double d = p->type == P_DBL ? strtod(v, &end) : (double)strtoull(v, &end, 10);
    if (errno || end == v || *end || d < p->min || d > p->max || (p->type != P_DBL && *v == '-'))
        goto bad;
    if (p->type == P_DBL)
        memcpy(f, &d, sizeof d);
    else if (p->type == P_U32) {
        uint32_t u = (uint32_t)strtoul(v, NULL, 10);
        memcpy(f, &u, sizeof u);
    } else {
        uint64_t u = strtoull(v, NULL, 10);
        memcpy(f, &u, sizeof u);
    }
    return 0;
bad:
    snprintf(err, errcap, "--%s: bad value '%s' (range %g..%g)", p->name, v, p->min, p->max);
    return -1;
}

void ws_cfg_defaults(ws_cfg_t *c)
{
    char err[128];
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NPARAMS; i++)
        set(c, &params[i], params[i].def, err, sizeof err);
}

int ws_param_set(ws_cfg_t *c, const char *name, const char *value, char *err, size_t errcap)
{
    for (size_t i = 0; i < NPARAMS; i++)
        if (!strcmp(params[i].name, name))
            return set(c, &params[i], value, err, errcap);
    snprintf(err, errcap, "unknown option --%s", name);
    return -2;
}

void ws_params_print(FILE *f, int markdown)
{
    if (markdown)
        fprintf(f, "| parameter | default | what |\n|---|---|---|\n");
    for (size_t i = 0; i < NPARAMS; i++)
        fprintf(f, markdown ? "| `--%s` | %s | %s |\n" : "  --%-22s %s [default: %s]\n",
                params[i].name, markdown ? params[i].def : params[i].help,
                markdown ? params[i].help : params[i].def);
}

int ws_params_write(FILE *f, const ws_cfg_t *c)
{
    for (size_t i = 0; i < NPARAMS; i++) {
        const char *p = (const char *)c + params[i].off;
        uint64_t u64;
        uint32_t u32;
        double d;
        switch (params[i].type) {
        case P_U64:
            memcpy(&u64, p, sizeof u64);
            fprintf(f, "--%s %llu ", params[i].name, (unsigned long long)u64);
            break;
        case P_U32:
            memcpy(&u32, p, sizeof u32);
            fprintf(f, "--%s %u ", params[i].name, u32);
            break;
        case P_DBL:
            memcpy(&d, p, sizeof d);
            fprintf(f, "--%s %.17g ", params[i].name, d);
            break;
        default:
            fprintf(f, "--%s %s ", params[i].name, p);
        }
    }
    return fprintf(f, "\n") < 0 ? -1 : 0;
}
