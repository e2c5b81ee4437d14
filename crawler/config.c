/*
 * config.c -- `crawler crawl` options: one table gives each option's name,
 * argument, default text and help, and drives getopt_long, --help and the
 * --config file alike.  Config-file lines are turned into "--name value"
 * arguments and parsed first, so the command line wins.
 */
#include "config.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "frontier.h"
#include "parser.h"
#include "robots.h"

enum {
    O_REDIS = 1,
    O_DATA_DIR,
    O_CRAWL,
    O_SEEDS,
    O_FORCE,
    O_THREADS,
    O_CONC,
    O_BATCH,
    O_WAIT,
    O_GRACE,
    O_PER_HOST,
    O_DELAY,
    O_MAX_DELAY,
    O_LEASE,
    O_MAX_TRIES,
    O_UA,
    O_IGN_ROBOTS,
    O_SITEMAPS,
    O_SCOPE,
    O_ALLOW_DOM,
    O_DENY_DOM,
    O_INCLUDE,
    O_EXCLUDE,
    O_MAX_DEPTH,
    O_MAX_PAGES,
    O_MAX_PPH,
    O_MAX_URL,
    O_MAX_SIZE,
    O_TIMEOUT,
    O_CTIMEOUT,
    O_LSL,
    O_LST,
    O_NOFOLLOW,
    O_INSECURE,
    O_BACKOFF,
    O_PRIVATE,
    O_BCAP,
    O_BFP,
    O_OUT,
    O_WARC,
    O_QUIET,
    O_CONFIG,
    O_HELP,
};

typedef struct opt {
    const char *name;
    int has_arg;
    int id;
    const char *arg;  /* argument name in --help */
    const char *dflt; /* default in --help */
    const char *help;
} opt_t;

static const opt_t OPTS[] = {
    {"redis", 1, O_REDIS, "URL", "$REDIS_URL, else embedded",
     "shared Redis: redis://[:pw@]host:port[/db]"},
    {"data-dir", 1, O_DATA_DIR, "DIR", RCONN_DEFAULT_DATA_DIR,
     "embedded Redis data (append-only, resumable)"},
    {"crawl", 1, O_CRAWL, "NAME", FRONTIER_DEFAULT_CRAWL,
     "crawl name (Redis key prefix crawler:{NAME}:)"},
    {"seeds", 1, O_SEEDS, "FILE", "none", "seed URLs, one a line, # comments"},
    {"force", 0, O_FORCE, NULL, "off", "re-queue seeds even if already seen (re-crawl)"},
    {"threads", 1, O_THREADS, "T", "number of cores", "fetcher threads"},
    {"concurrency", 1, O_CONC, "C", "32", "transfers at once per thread"},
    {"claim-batch", 1, O_BATCH, "N", "64", "URLs claimed per Redis round trip"},
    {"wait", 0, O_WAIT, NULL, "off", "stay running for new seeds when the crawl is done"},
    {"grace", 1, O_GRACE, "MS", "5000", "on SIGINT/SIGTERM, time to finish in-flight URLs"},
    {"per-host", 1, O_PER_HOST, "N", "1", "max requests in flight per host, all workers"},
    {"delay", 1, O_DELAY, "MS", "1000", "min ms between two requests to one host"},
    {"max-delay", 1, O_MAX_DELAY, "MS", "60000", "cap on a host's robots.txt Crawl-delay"},
    {"lease", 1, O_LEASE, "MS", "30000", "lease on claimed URLs (returned if a worker dies)"},
    {"max-tries", 1, O_MAX_TRIES, "N", "3", "fetch attempts before dead-lettering"},
    {"retry-backoff", 1, O_BACKOFF, "MS", "2000",
     "first retry delay (doubles each try, with jitter)"},
    {"user-agent", 1, O_UA, "UA", CONFIG_DEFAULT_USER_AGENT,
     "User-Agent; its product token picks the robots.txt group"},
    {"ignore-robots", 0, O_IGN_ROBOTS, NULL, "off", "do not fetch or obey robots.txt"},
    {"sitemaps", 0, O_SITEMAPS, NULL, "off",
     "seed robots.txt Sitemap: URLs and follow their <loc> URLs"},
    {"scope", 1, O_SCOPE, "host|domain|any", "host",
     "which links to follow (seeds' hosts / domains / all)"},
    {"allow-domain", 1, O_ALLOW_DOM, "DOMAIN", "none",
     "also follow this domain and its subdomains (repeatable)"},
    {"deny-domain", 1, O_DENY_DOM, "DOMAIN", "none",
     "never follow this domain and its subdomains (repeatable)"},
    {"include", 1, O_INCLUDE, "REGEX", "none", "follow only URLs matching (POSIX ERE, repeatable)"},
    {"exclude", 1, O_EXCLUDE, "REGEX", "none",
     "never follow URLs matching (POSIX ERE, repeatable)"},
    {"max-depth", 1, O_MAX_DEPTH, "N", "unlimited",
     "links deeper than N from a seed are not queued"},
    {"max-pages", 1, O_MAX_PAGES, "N", "unlimited", "URLs admitted in total, all workers"},
    {"max-pages-per-host", 1, O_MAX_PPH, "N", "unlimited", "URLs admitted per host, all workers"},
    {"max-url-length", 1, O_MAX_URL, "BYTES", "2048", "longer URLs are dropped"},
    {"max-size", 1, O_MAX_SIZE, "BYTES", "10485760",
     "body size cap (decoded); the transfer is cut"},
    {"timeout", 1, O_TIMEOUT, "MS", "30000", "whole-transfer timeout"},
    {"connect-timeout", 1, O_CTIMEOUT, "MS", "10000", "connect timeout"},
    {"low-speed-limit", 1, O_LSL, "BPS", "100", "abort below this many bytes/s ..."},
    {"low-speed-time", 1, O_LST, "S", "20", "... for this many seconds"},
    {"follow-nofollow", 0, O_NOFOLLOW, NULL, "off", "also follow rel=nofollow links"},
    {"insecure", 0, O_INSECURE, NULL, "off", "do not verify TLS certificates"},
    {"allow-private", 0, O_PRIVATE, NULL, "off",
     "allow non-seed hosts on loopback/private addresses"},
    {"bloom-capacity", 1, O_BCAP, "N", "10000000", "visited-set size when the crawl creates it"},
    {"bloom-fp-rate", 1, O_BFP, "P", "0.0001", "visited-set false-positive rate at capacity"},
    {"out", 1, O_OUT, "FILE", "none", "one JSON line per finished URL ('-': stdout)"},
    {"warc", 1, O_WARC, "FILE", "none", "WARC/1.1 records (per-record gzip)"},
    {"quiet", 0, O_QUIET, NULL, "off", "no progress line on stderr"},
    {"config", 1, O_CONFIG, "FILE", "none", "read options from FILE (one 'name value' a line)"},
    {"help", 0, O_HELP, NULL, NULL, "this help"},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

void config_defaults(crawl_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->crawl = FRONTIER_DEFAULT_CRAWL;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = cores > 0 && cores < 256 ? (uint32_t)cores : 2;
    c->concurrency = CONFIG_DEFAULT_CONCURRENCY;
    c->claim_batch = CONFIG_DEFAULT_CLAIM_BATCH;
    c->grace_ms = CONFIG_DEFAULT_GRACE_MS;
    c->per_host = FRONTIER_DEFAULT_PER_HOST;
    c->delay_ms = FRONTIER_DEFAULT_DELAY_MS;
    c->max_delay_ms = FRONTIER_DEFAULT_MAX_DELAY_MS;
    c->lease_ms = FRONTIER_DEFAULT_LEASE_MS;
    c->max_tries = FRONTIER_DEFAULT_MAX_TRIES;
    c->backoff_ms = FRONTIER_DEFAULT_BACKOFF_MS;
    c->user_agent = CONFIG_DEFAULT_USER_AGENT;
    c->scope = SCOPE_HOST;
    c->max_depth = UINT32_MAX;
    c->max_url_length = PARSER_DEFAULT_MAX_URL_LENGTH;
    c->max_size = CONFIG_DEFAULT_MAX_SIZE;
    c->timeout_ms = CONFIG_DEFAULT_TIMEOUT_MS;
    c->connect_timeout_ms = CONFIG_DEFAULT_CONNECT_TIMEOUT_MS;
    c->low_speed_bps = CONFIG_DEFAULT_LOW_SPEED_BPS;
    c->low_speed_s = CONFIG_DEFAULT_LOW_SPEED_S;
    c->bloom_capacity = BLOOM_DEFAULT_CAPACITY;
    c->bloom_fp_rate = BLOOM_DEFAULT_FP_RATE;
}

void config_usage(FILE *out)
{
    fprintf(out, "usage: crawler crawl [OPTIONS]\n\n"
                 "Crawls from the crawl's frontier in Redis (after adding --seeds) until no URL\n"
                 "is queued, delayed or in flight on any worker.\n\noptions:\n");
    for (size_t i = 0; i < NOPTS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", OPTS[i].name, OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        fprintf(out, "  %-28s %s", left, OPTS[i].help);
        if (OPTS[i].dflt)
            fprintf(out, " [default: %s]", OPTS[i].dflt);
        fputc('\n', out);
    }
}

static int push(const char **arr, size_t *n, const char *v, const char *opt)
{
    if (*n >= CONFIG_MAX_PATTERNS) {
        fprintf(stderr, "crawler crawl: too many %s options (max %d)\n", opt, CONFIG_MAX_PATTERNS);
        return -1;
    }
    arr[(*n)++] = v;
    return 0;
}

static int set_scope(crawl_config_t *c, const char *v)
{
    if (!strcmp(v, "host"))
        c->scope = SCOPE_HOST;
    else if (!strcmp(v, "domain"))
        c->scope = SCOPE_DOMAIN;
    else if (!strcmp(v, "any"))
        c->scope = SCOPE_ANY;
    else {
        fprintf(stderr, "crawler crawl: bad value '%s' for --scope: expected host, domain or any\n",
                v);
        return -1;
    }
    return 0;
}

/* The User-Agent must have a product token: it picks the robots.txt group. */
static int set_user_agent(crawl_config_t *c, const char *v)
{
    int err = 0;
    robots_t *probe = robots_parse(NULL, 0, v, &err);
    if (!probe) {
        fprintf(stderr,
                "crawler crawl: bad value '%s' for --user-agent: it must start with a "
                "product token such as MyCrawler/1.0\n",
                v);
        return -1;
    }
    robots_free(probe);
    c->user_agent = v;
    return 0;
}

static int apply_num(crawl_config_t *c, int id, const char *v)
{
    const char *C = "crawl";
    switch (id) {
    case O_THREADS:
        return cli_u32(C, "--threads", v, 1, 256, &c->threads);
    case O_CONC:
        return cli_u32(C, "--concurrency", v, 1, 10000, &c->concurrency);
    case O_BATCH:
        return cli_u32(C, "--claim-batch", v, 1, 10000, &c->claim_batch);
    case O_GRACE:
        return cli_u32(C, "--grace", v, 0, 600000, &c->grace_ms);
    case O_PER_HOST:
        return cli_u32(C, "--per-host", v, 1, 100000, &c->per_host);
    case O_DELAY:
        return cli_u32(C, "--delay", v, 0, 86400000, &c->delay_ms);
    case O_MAX_DELAY:
        return cli_u32(C, "--max-delay", v, 0, 86400000, &c->max_delay_ms);
    case O_LEASE:
        return cli_u32(C, "--lease", v, 100, 86400000, &c->lease_ms);
    case O_BACKOFF:
        return cli_u32(C, "--retry-backoff", v, 1, 86400000, &c->backoff_ms);
    case O_MAX_TRIES:
        return cli_u32(C, "--max-tries", v, 1, 1000, &c->max_tries);
    case O_MAX_DEPTH:
        return cli_u32(C, "--max-depth", v, 0, UINT32_MAX - 1, &c->max_depth);
    case O_MAX_PAGES:
        return cli_u64(C, "--max-pages", v, 1, UINT64_MAX, &c->max_pages);
    case O_MAX_PPH:
        return cli_u64(C, "--max-pages-per-host", v, 1, UINT64_MAX, &c->max_pages_per_host);
    case O_MAX_URL:
        return cli_u32(C, "--max-url-length", v, 16, 1u << 20, &c->max_url_length);
    case O_MAX_SIZE:
        return cli_u64(C, "--max-size", v, 1, UINT64_MAX, &c->max_size);
    case O_TIMEOUT:
        return cli_u32(C, "--timeout", v, 1, 86400000, &c->timeout_ms);
    case O_CTIMEOUT:
        return cli_u32(C, "--connect-timeout", v, 1, 86400000, &c->connect_timeout_ms);
    case O_LSL:
        return cli_u32(C, "--low-speed-limit", v, 0, UINT32_MAX, &c->low_speed_bps);
    case O_LST:
        return cli_u32(C, "--low-speed-time", v, 1, 86400, &c->low_speed_s);
    case O_BCAP:
        return cli_u64(C, "--bloom-capacity", v, 1, UINT64_MAX / 64, &c->bloom_capacity);
    case O_BFP:
        return cli_double(C, "--bloom-fp-rate", v, 1e-12, 0.5, &c->bloom_fp_rate);
    }
    return 1; /* not numeric */
}

static int apply(crawl_config_t *c, int id, const char *v)
{
    int r = apply_num(c, id, v);
    if (r <= 0)
        return r;
    switch (id) {
    case O_REDIS:
        c->redis_url = v;
        return 0;
    case O_DATA_DIR:
        c->data_dir = v;
        return 0;
    case O_CRAWL:
        c->crawl = v;
        return cli_crawl_name("crawl", v);
    case O_SEEDS:
        c->seeds = v;
        return 0;
    case O_FORCE:
        c->force_seeds = 1;
        return 0;
    case O_WAIT:
        c->wait = 1;
        return 0;
    case O_UA:
        return set_user_agent(c, v);
    case O_IGN_ROBOTS:
        c->ignore_robots = 1;
        return 0;
    case O_SITEMAPS:
        c->sitemaps = 1;
        return 0;
    case O_SCOPE:
        return set_scope(c, v);
    case O_ALLOW_DOM:
        return push(c->allow_domain, &c->n_allow_domain, v, "--allow-domain");
    case O_DENY_DOM:
        return push(c->deny_domain, &c->n_deny_domain, v, "--deny-domain");
    case O_INCLUDE:
        return push(c->include, &c->n_include, v, "--include");
    case O_EXCLUDE:
        return push(c->exclude, &c->n_exclude, v, "--exclude");
    case O_NOFOLLOW:
        c->follow_nofollow = 1;
        return 0;
    case O_INSECURE:
        c->insecure = 1;
        return 0;
    case O_PRIVATE:
        c->allow_private = 1;
        return 0;
    case O_OUT:
        c->out = v;
        return 0;
    case O_WARC:
        c->warc = v;
        return 0;
    case O_QUIET:
        c->quiet = 1;
        return 0;
    }
    return -1;
}

/* Config-file strings live in a list hanging off cfg->storage. */
typedef struct strlist {
    struct strlist *next;
    char s[];
} strlist_t;

static char *keep(crawl_config_t *c, const char *s, size_t n)
{
    strlist_t *e = malloc(sizeof *e + n + 1);
    if (!e)
        return NULL;
    memcpy(e->s, s, n);
    e->s[n] = '\0';
    e->next = c->storage;
    c->storage = e;
    return e->s;
}

static const opt_t *find_opt(const char *name)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (!strcmp(OPTS[i].name, name))
            return &OPTS[i];
    return NULL;
}

static int config_line(crawl_config_t *c, const char *path, unsigned long lineno, char *line)
{
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s || *s == '#')
        return 0;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    char *sp = s;
    while (*sp && !isspace((unsigned char)*sp) && *sp != '=')
        sp++;
    char *val = NULL;
    if (*sp) {
        *sp++ = '\0';
        while (isspace((unsigned char)*sp) || *sp == '=')
            sp++;
        val = *sp ? sp : NULL;
    }
    if (!strncmp(s, "--", 2))
        s += 2;
    const opt_t *o = find_opt(s);
    if (!o || o->id == O_CONFIG || o->id == O_HELP || (o->has_arg && !val) ||
        (!o->has_arg && val)) {
        fprintf(stderr, "crawler crawl: %s:%lu: %s option '%s'\n", path, lineno,
                !o ? "unknown" : "bad use of", s);
        return -1;
    }
    const char *v = val ? keep(c, val, strlen(val)) : NULL;
    if (val && !v)
        return -1;
    return apply(c, o->id, v);
}

static int read_config_file(crawl_config_t *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "crawler crawl: cannot read config file %s: %m\n", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    unsigned long lineno = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0)
        rc = config_line(c, path, ++lineno, line);
    free(line);
    fclose(f);
    return rc;
}

int config_parse(crawl_config_t *c, int argc, char **argv)
{
    struct option lo[NOPTS + 1];
    for (size_t i = 0; i < NOPTS; i++)
        lo[i] = (struct option){OPTS[i].name, OPTS[i].has_arg ? required_argument : no_argument,
                                NULL, OPTS[i].id};
    lo[NOPTS] = (struct option){0};
    /* pass 1: --config and --help; pass 2: everything else (command line wins) */
    for (int pass = 1; pass <= 2; pass++) {
        optind = 0;
        opterr = pass == 1;
        int id;
        while ((id = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
            if (id == '?' || id == ':') {
                fprintf(stderr, "crawler crawl: see `crawler crawl --help`\n");
                return -1;
            }
            if (pass == 1 && (id == O_HELP || id == 'h')) {
                config_usage(stdout);
                return 1;
            }
            if (pass == 1 && id == O_CONFIG && read_config_file(c, optarg) < 0)
                return -1;
            if (pass == 2 && id != O_CONFIG && apply(c, id, optarg) < 0)
                return -1;
        }
        if (optind < argc) {
            fprintf(stderr, "crawler crawl: unexpected argument '%s'\n", argv[optind]);
            return -1;
        }
    }
    return 0;
}

void config_free(crawl_config_t *c)
{
    strlist_t *e = c ? c->storage : NULL;
    while (e) {
        strlist_t *n = e->next;
        free(e);
        e = n;
    }
    if (c)
        c->storage = NULL;
}
