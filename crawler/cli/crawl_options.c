/*
 * config.c -- `crawler crawl` options.
 *
 * DESIGN: OPTS[] below is the one place each option is declared: its name,
 * value name, type, range, default (a named macro), help text and the field
 * of crawl_config_t it fills.  cli.c makes cli_crawl_defaults(), getopt_long's
 * array, the value checks and --help from it; the --config reader here
 * looks names up in it too.  Parsing runs two passes over argv: the first
 * handles --help and reads each --config file (its values applied in file
 * order), the second applies every other command-line option, so the
 * command line wins.  Strings read from a config file are kept in a list
 * hanging off cfg->storage until cli_crawl_free().
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fetch.h" /* FETCH_DEFAULT_MAX_LINKS_PER_PAGE */
#include "frontier.h"
#include "keys.h" /* FRONTIER_KEY_PREFIX_HELP */
#include "parser.h"
#include "robots.h"

/* The constructors of cli.h for crawl_config_t fields. */
#define FLAG(...) CLI_OPT_FLAG(crawl_config_t, __VA_ARGS__)
#define U32(...) CLI_OPT_U32(crawl_config_t, __VA_ARGS__)
#define U64(...) CLI_OPT_U64(crawl_config_t, __VA_ARGS__)
#define DBL(...) CLI_OPT_DOUBLE(crawl_config_t, __VA_ARGS__)
#define STR(...) CLI_OPT_STRING(crawl_config_t, __VA_ARGS__)
#define LIST(name, arg, field, help) CLI_OPT_LIST(crawl_config_t, name, arg, field, n_##field, help)
#define DAY_MS 86400000 /* the largest time option, ms */

static uint64_t default_threads(void);
static int check_user_agent(const char *cmd, const char *opt, const char *v);
static int check_range(const char *cmd, const char *opt, const char *v);
static const char *const TEXT_FORMATS[] = {
    [TEXT_FORMAT_PLAIN] = "plain", [TEXT_FORMAT_MARKDOWN] = "markdown", NULL};
static const char *const SCOPES[] = {
    [SCOPE_HOST] = "host", [SCOPE_DOMAIN] = "domain", [SCOPE_ANY] = "any", NULL};

static const cli_opt_t OPTS[] = {
    {CLI_OPT_LIST(
         crawl_config_t, "redis", "URL", redis.url, redis.n,
         "shared Redis: redis://[:pw@]host:port[/db] (a cluster: h1:p1,h2:p2 or repeated)"),
     .dflt_doc = "$REDIS_URL, else embedded", .check = cli_check_redis_url, .replaces = 1},
    {STR("data-dir", "DIR", data_dir, RCONN_DEFAULT_DATA_DIR,
         "embedded Redis data (append-only, resumable)")},
    {STR("crawl", "NAME", crawl, FRONTIER_DEFAULT_CRAWL,
         "crawl name (Redis key prefix " FRONTIER_KEY_PREFIX_HELP ")"),
     .check = cli_check_crawl_name},
    {STR("seeds", "FILE", seeds, NULL, "seed URLs, one a line, # comments")},
    {FLAG("force", force_seeds, "re-queue seeds even if already seen (re-crawl)")},
    {U32("threads", "T", threads, 1, 256, 0, "fetcher threads"), .dflt_fn = default_threads,
     .dflt_doc = "number of cores"},
    {U32("concurrency", "C", concurrency, 1, CONFIG_MAX_CONCURRENCY, CONFIG_DEFAULT_CONCURRENCY,
         "transfers in flight, all threads together")},
    {U32("claim-batch", "N", claim_batch, 1, 10000, CONFIG_DEFAULT_CLAIM_BATCH,
         "most URLs claimed per Redis round trip (the free slots, up to N)")},
    {FLAG("wait", wait, "stay running for new seeds when the crawl is done")},
    {U32("grace", "MS", grace_ms, 0, 600000, CONFIG_DEFAULT_GRACE_MS,
         "on SIGINT/SIGTERM, time to finish in-flight URLs")},
    {U32("per-host", "N", per_host, 1, 100000, FRONTIER_DEFAULT_PER_HOST,
         "max requests in flight per host, all workers, when its delay is 0 (else 1)")},
    {U32("delay", "MS", delay_ms, 0, DAY_MS, FRONTIER_DEFAULT_DELAY_MS,
         "min ms from the end of a request to a host to the next one")},
    {U32("max-delay", "MS", max_delay_ms, 0, DAY_MS, FRONTIER_DEFAULT_MAX_DELAY_MS,
         "cap on a host's robots.txt Crawl-delay and on its pace (--delay-factor)")},
    {DBL("delay-factor", "F", delay_factor, 0, 1000, FRONTIER_DEFAULT_PACE_PCT / 100.0,
         "with --delay > 0, a host waits F times its recent response time, within --delay "
         "and --max-delay (0: not at all; each 429 or 503 still doubles the wait)")},
    {U32("per-ip", "N", per_ip, 0, 100000, 0,
         "max requests in flight per IP address, all workers and hosts together (0: no "
         "per-IP limit)")},
    {U32("ip-delay", "MS", ip_delay_ms, 0, DAY_MS, 0,
         "min ms between two requests to one IP address, and from the end of one to the "
         "next, all workers and hosts together")},
    {U32("depth-window", "N", depth_window, 0, 1000, FRONTIER_NO_WINDOW,
         "crawl order: a host whose next URL is more than N levels deeper than the "
         "shallowest URL queued waits, so pages nearer the seeds go first"),
     .dflt_doc = "off"},
    {U32("redis-retry-max", "MS", redis_retry_max_ms, 0, DAY_MS, CONFIG_DEFAULT_REDIS_RETRY_MAX_MS,
         "a worker that lost Redis retries this long before giving up (0: never retry)")},
    {U32("lease", "MS", lease_ms, 100, DAY_MS, FRONTIER_DEFAULT_LEASE_MS,
         "lease on claimed URLs (returned if a worker dies)")},
    {U32("max-tries", "N", max_tries, 1, 1000, FRONTIER_DEFAULT_MAX_TRIES,
         "fetch attempts before dead-lettering")},
    {U32("retry-backoff", "MS", backoff_ms, 1, DAY_MS, FRONTIER_DEFAULT_BACKOFF_MS,
         "first retry delay (doubles each try, with jitter)")},
    {U32("max-retry-after", "MS", max_retry_after_ms, 0, DAY_MS, CONFIG_DEFAULT_MAX_RETRY_AFTER_MS,
         "cap on a response's Retry-After (0: ignore it)")},
    {STR("user-agent", "UA", user_agent, CONFIG_DEFAULT_USER_AGENT,
         "User-Agent; its product token picks the robots.txt group"),
     .check = check_user_agent},
    {FLAG("ignore-robots", ignore_robots, "do not fetch or obey robots.txt")},
    {FLAG("sitemaps", sitemaps, "seed robots.txt Sitemap: URLs and follow their <loc> URLs")},
    {U32("robots-ttl", "S", robots_ttl_s, 1, CONFIG_MAX_ROBOTS_TTL_S, CONFIG_MAX_ROBOTS_TTL_S,
         "seconds a robots.txt's rules are used before it is fetched again (RFC 9309: 24 h "
         "at most)")},
    {CLI_OPT_ENUM(crawl_config_t, "scope", scope, config_scope_t, SCOPES, CONFIG_DEFAULT_SCOPE,
                  "which links to follow (seeds' hosts / domains / all)")},
    {LIST("allow-domain", "DOMAIN", allow_domain,
          "also follow this domain and its subdomains (repeatable)")},
    {LIST("deny-domain", "DOMAIN", deny_domain,
          "never follow this domain and its subdomains (repeatable)")},
    {LIST("include", "REGEX", include, "follow only URLs matching (POSIX ERE, repeatable)")},
    {LIST("exclude", "REGEX", exclude, "never follow URLs matching (POSIX ERE, repeatable)")},
    {U32("max-depth", "N", max_depth, 0, UINT32_MAX - 1, CONFIG_DEFAULT_MAX_DEPTH,
         "links deeper than N from a seed are not queued"),
     .dflt_doc = "unlimited"},
    {U32("max-redirects", "N", max_redirects, 0, 1000, CONFIG_DEFAULT_MAX_REDIRECTS,
         "redirects in a row followed (0: none), counted across hops")},
    {U32("shards", "N", shards, 1, FRONTIER_MAX_SHARDS, 0,
         "split a new crawl into N shards (a host's URLs in one; a Redis Cluster spreads them over "
         "its masters); a crawl keeps the count it was created with"),
     .dflt_doc = "the crawl's; a new one: 32 on a Redis Cluster, else 1"},
    {U64("max-pages", "N", max_pages, 1, UINT64_MAX, CONFIG_DEFAULT_MAX_PAGES,
         "URLs admitted in total, all workers"),
     .dflt_doc = "unlimited"},
    {U64("max-pages-per-host", "N", max_pages_per_host, 1, UINT64_MAX,
         CONFIG_DEFAULT_MAX_PAGES_PER_HOST, "URLs admitted per host, all workers"),
     .dflt_doc = "unlimited"},
    {U64("max-pages-per-domain", "N", max_pages_per_domain, 1, UINT64_MAX,
         CONFIG_DEFAULT_MAX_PAGES_PER_DOMAIN,
         "URLs admitted per registered domain (all its hosts), all workers"),
     .dflt_doc = "unlimited"},
    {U64("max-hosts-per-domain", "N", max_hosts_per_domain, 1, UINT64_MAX,
         CONFIG_DEFAULT_MAX_HOSTS_PER_DOMAIN,
         "hosts of one registered domain that get URLs admitted, all workers"),
     .dflt_doc = "unlimited"},
    {U64("domain-pages-per-inlink", "K", pages_per_inlink, 0, UINT64_MAX, 0,
         "with --max-pages-per-domain: a domain's budget grows by K for each other registered "
         "domain linking to it (0: a fixed budget)")},
    {U32("max-url-length", "BYTES", max_url_length, 16, 1u << 20, PARSER_DEFAULT_MAX_URL_LENGTH,
         "longer URLs are dropped")},
    {U32("max-links-per-page", "N", max_links_per_page, 1, 10000000,
         FETCH_DEFAULT_MAX_LINKS_PER_PAGE,
         "links followed per page or sitemap; more: not followed, counted in links_over_cap")},
    {U64("max-size", "BYTES", max_size, 1, UINT64_MAX, CONFIG_DEFAULT_MAX_SIZE,
         "body size cap (decoded): read up to it, then cut (sitemaps: 50 MB)")},
    {U32("timeout", "MS", timeout_ms, 1, DAY_MS, CONFIG_DEFAULT_TIMEOUT_MS,
         "whole-transfer timeout")},
    {U32("connect-timeout", "MS", connect_timeout_ms, 1, DAY_MS, CONFIG_DEFAULT_CONNECT_TIMEOUT_MS,
         "connect timeout")},
    {U32("low-speed-limit", "BPS", low_speed_bps, 0, UINT32_MAX, CONFIG_DEFAULT_LOW_SPEED_BPS,
         "abort below this many bytes/s ...")},
    {U32("low-speed-time", "S", low_speed_s, 1, 86400, CONFIG_DEFAULT_LOW_SPEED_S,
         "... for this many seconds")},
    {FLAG("follow-nofollow", follow_nofollow, "also follow rel=nofollow links")},
    {FLAG("insecure", insecure, "do not verify TLS certificates")},
    {FLAG("allow-private", allow_private, "allow non-seed hosts on loopback/private addresses")},
    {LIST("allow-private-range", "CIDR", allow_range,
          "allow non-seed hosts in this private range only, e.g. 127.16.0.0/12 (repeatable)"),
     .check = check_range},
    {STR("ca-file", "FILE", ca_file, NULL,
         "PEM file of the CA certificates to trust (instead of the system's)")},
    {U32("tls-sessions", "N", tls_sessions, 0, CONFIG_MAX_TLS_SESSIONS, CONFIG_DEFAULT_TLS_SESSIONS,
         "TLS sessions kept per process, one per origin, so that a new connection to a host "
         "resumes instead of a full handshake (0: libcurl's own cache of 8)")},
    {U64("bloom-capacity", "N", bloom_capacity, 1, BLOOM_MAX_CAPACITY, BLOOM_DEFAULT_CAPACITY,
         "visited-set size when the crawl creates it, at most 1e10 (its first layer when it "
         "grows); exit 2 if the filter does not fit in Redis' free memory (maxmemory); a fixed "
         "filter (--bloom-growth 0) stops the crawl once this many URLs were added")},
    {DBL("bloom-fp-rate", "P", bloom_fp_rate, 1e-12, 0.5, BLOOM_DEFAULT_FP_RATE,
         "visited-set false-positive rate, held however far it grows")},
    {DBL("bloom-growth", "G", bloom_growth, 0, BLOOM_MAX_GROWTH, BLOOM_DEFAULT_GROWTH,
         "when the crawl creates its visited set: each new layer G times the last one's "
         "capacity, added when the last is full (the crawl stops only when a layer does not fit "
         "in Redis); 0 or 1: a fixed filter of --bloom-capacity")},
    {STR("out", "FILE", out, NULL, "one JSON line per finished URL ('-': stdout)")},
    {STR("warc", "FILE", warc, NULL,
         "WARC/1.1 records (per-record gzip), a CDXJ index beside each closed file")},
    {STR("text", "FILE", text, NULL,
         "a JSON line per HTML page with 2xx: url, title, lang, its main text, simhash ('-': "
         "stdout)")},
    {CLI_OPT_ENUM(crawl_config_t, "text-format", text_format, config_text_format_t, TEXT_FORMATS,
                  TEXT_FORMAT_PLAIN,
                  "--text's text: plain paragraphs, or markdown (headings, lists, emphasis, code, "
                  "links)")},
    {FLAG("text-all", text_all, "--text gives all visible text of a page, not its main content")},
    {FLAG("dedup", dedup,
          "mark exact duplicates crawl-wide: a 2xx page whose body another URL had first gets a "
          "WARC revisit record naming it, \"duplicate\" in its JSON line, and no text")},
    {STR("links", "FILE", links, NULL,
         "one JSON line per HTML page with 2xx: its outlinks, each with its anchor text, rel and "
         "whether it was followed or why not (the web graph)")},
    {STR("wet", "FILE", wet, NULL,
         "the same text as WARC conversion records (Common Crawl's WET), each referring to its "
         "response record in --warc")},
    {U64("out-rotate", "BYTES", out_rotate, 0, UINT64_MAX, CONFIG_DEFAULT_OUT_ROTATE,
         "close --out and --warc files past this size under a name unique to the process and "
         "its sequence, and go on in a new one (0: never)")},
    {FLAG("quiet", quiet, "no progress line on stderr")},
    {STR("metrics", "ADDR:PORT", metrics, NULL,
         "serve this process's Prometheus metrics at http://ADDR:PORT/metrics"),
     .dflt_doc = "off"}, /* checked and bound by cmd_crawl, before anything else */
    {CLI_OPT_CONFIG("config", "FILE", "read options from FILE (one 'name value' a line)")},
    {CLI_OPT_HELP("this help")},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])
_Static_assert(NOPTS <= CLI_MAX_OPTS, "crawl has more options than cli_getopt_table takes");

const cli_cmd_t cli_table_crawl = {
    .name = "crawl",
    .usage = "usage: crawler crawl [OPTIONS]\n\n"
             "Crawls from the crawl's frontier in Redis (after adding --seeds) until no URL\n"
             "is queued, delayed or in flight on any worker.\n\noptions:\n",
    .opts = OPTS,
    .nopts = NOPTS,
};

static uint64_t default_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 && cores < 256 ? (uint64_t)cores : CONFIG_DEFAULT_THREADS_UNKNOWN;
}

/* The User-Agent must have a product token: it picks the robots.txt group. */
static int check_user_agent(const char *cmd, const char *opt, const char *v)
{
    int err = 0;
    robots_t *probe = robots_parse(NULL, 0, v, &err);
    if (!probe) {
        fprintf(stderr,
                "crawler %s: bad value '%s' for %s: it must start with a "
                "product token such as MyCrawler/1.0\n",
                cmd, v, opt);
        return -1;
    }
    robots_free(probe);
    return 0;
}

static int check_range(const char *cmd, const char *opt, const char *v)
{
    char err[256];
    if (scope_check_range(v, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "crawler %s: bad value for %s: %s\n", cmd, opt, err);
    return -1;
}

void cli_crawl_defaults(crawl_config_t *c)
{
    memset(c, 0, sizeof *c);
    cli_defaults(&cli_table_crawl, c);
}

void cli_crawl_usage(FILE *out)
{
    cli_help(&cli_table_crawl, out);
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

/* Splits "name value", "name=value" or "name" (surrounding blanks trimmed);
 * *val is NULL without a value.  Returns the name, "" for a blank or comment line. */
static char *split_line(char *line, char **val)
{
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    *val = NULL;
    if (!*s || *s == '#')
        return "";
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    char *sp = s;
    while (*sp && !isspace((unsigned char)*sp) && *sp != '=')
        sp++;
    if (*sp) {
        *sp++ = '\0';
        while (isspace((unsigned char)*sp) || *sp == '=')
            sp++;
        *val = *sp ? sp : NULL;
    }
    return strncmp(s, "--", 2) ? s : s + 2;
}

static int config_line(crawl_config_t *c, const char *path, unsigned long lineno, char *line)
{
    char *val;
    const char *name = split_line(line, &val);
    if (!*name)
        return 0;
    const cli_opt_t *o = cli_find(&cli_table_crawl, name);
    int wants = o && o->type != CLI_TYPE_FLAG;
    if (!o || o->type == CLI_TYPE_CONFIG || o->type == CLI_TYPE_HELP ||
        (wants && !val && !o->optional) || (!wants && val)) {
        fprintf(stderr, "crawler crawl: %s:%lu: %s option '%s'\n", path, lineno,
                !o ? "unknown" : "bad use of", name);
        return -1;
    }
    const char *v = val ? keep(c, val, strlen(val)) : NULL;
    if (val && !v) {
        fprintf(stderr, "crawler crawl: %s:%lu: out of memory\n", path, lineno);
        return -1;
    }
    config_admission_given(c, o->name);
    return cli_set(&cli_table_crawl, o, c, v);
}

/* A --config line longer than this is refused (the file is not a config file). */
#define CONFIG_LINE_MAX 65536

static int read_config_file(crawl_config_t *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "crawler crawl: cannot read config file %s: %m\n", path);
        return -1;
    }
    char *line = malloc(CONFIG_LINE_MAX + 1);
    unsigned long lineno = 0;
    int rc = line ? 0 : -1, st;
    size_t len;
    uint64_t total;
    while (rc == 0 && (st = cli_read_line(f, line, CONFIG_LINE_MAX + 1, &len, &total)) != 0) {
        lineno++;
        const char *why = st == CLI_LINE_ERROR      ? strerror(errno)
                          : st != CLI_LINE_OK       ? "longer than 65536 bytes"
                          : memchr(line, '\0', len) ? "a NUL byte"
                                                    : NULL;
        if (why)
            fprintf(stderr, "crawler crawl: %s:%lu: not a config line: %s\n", path, lineno, why);
        rc = why ? -1 : config_line(c, path, lineno, line);
    }
    if (!line)
        fprintf(stderr, "crawler crawl: %s: out of memory\n", path);
    free(line);
    fclose(f);
    return rc;
}

int cli_crawl_parse(crawl_config_t *c, int argc, char **argv)
{
    struct option lo[CLI_MAX_OPTS + 1];
    cli_getopt_table(&cli_table_crawl, lo);
    /* pass 1: --config and --help; pass 2: everything else (command line wins:
     * a list that replaces starts again at its first value there) */
    int seen[CLI_MAX_OPTS] = {0}, given[CLI_MAX_OPTS] = {0};
    for (int pass = 1; pass <= 2; pass++) {
        optind = 0;
        opterr = pass == 1;
        int id;
        while ((id = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
            const cli_opt_t *o = cli_getopt_opt(&cli_table_crawl, id);
            if (!o) {
                cli_see_help("crawl");
                return -1;
            }
            if (pass == 1 && o->type == CLI_TYPE_HELP) {
                cli_crawl_usage(stdout);
                return 1;
            }
            if (pass == 2 && cli_check_given(&cli_table_crawl, o, argc, argv, given) < 0)
                return -1;
            if (pass == 1 && o->type == CLI_TYPE_CONFIG && read_config_file(c, optarg) < 0)
                return -1;
            size_t k = (size_t)(o - cli_table_crawl.opts);
            if (pass == 2 && o->type == CLI_TYPE_LIST && o->replaces && k < CLI_MAX_OPTS &&
                !seen[k]++)
                *(size_t *)(void *)((char *)c + o->aux) = 0;
            if (pass == 2)
                config_admission_given(c, o->name);
            if (pass == 2 && cli_set(&cli_table_crawl, o, c, optarg) < 0)
                return -1;
        }
        if (optind < argc) {
            fprintf(stderr, "crawler crawl: unexpected argument '%s'\n", argv[optind]);
            return -1;
        }
    }
    return 0;
}

void cli_crawl_free(crawl_config_t *c)
{
    if (c)
        config_admission_free(c);
    strlist_t *e = c ? c->storage : NULL;
    while (e) {
        strlist_t *n = e->next;
        free(e);
        e = n;
    }
    if (c)
        c->storage = NULL;
}
