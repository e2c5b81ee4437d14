/*
 * config.h -- the settings of a crawl process: every option of `crawler
 * crawl`, with its unit and default, and what they imply for the threads.
 * The command line and a --config file fill it (crawler/cli/crawl_options.c:
 * cli_crawl_parse); the worker and its parts read it, never write it.
 *
 * The defaults below are the only place they are written: the option
 * table names them, and cli_crawl_defaults() and --help read that table.  The
 * options that take the frontier's, parser's or Bloom filter's defaults
 * name those modules' macros (FRONTIER_DEFAULT_*, PARSER_DEFAULT_*,
 * BLOOM_DEFAULT_*, RCONN_DEFAULT_DATA_DIR).
 */
#ifndef CRAWLER_CONFIG_H
#define CRAWLER_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rconn.h"
#include "scope.h"

#define CONFIG_DEFAULT_TLS_SESSIONS 8192u /* --tls-sessions: a few KB each, at most */
#define CONFIG_MAX_TLS_SESSIONS (1u << 20)
#define CONFIG_DEFAULT_THREADS_UNKNOWN 2 /* threads when the number of cores is unknown */
#define CONFIG_DEFAULT_CONCURRENCY 1000  /* transfers in flight, the whole process */
#define CONFIG_MAX_CONCURRENCY 100000
#define CONFIG_RESERVE_DIV 4            /* a thread holds 1/4 of its slots more URLs ... */
#define CONFIG_RESERVE_MAX 64           /* ... (claimed, waiting a turn), up to this many */
#define CONFIG_DEFAULT_CLAIM_BATCH 512  /* most URLs per claim round trip */
#define CONFIG_DEFAULT_TIMEOUT_MS 30000 /* whole transfer */
#define CONFIG_DEFAULT_CONNECT_TIMEOUT_MS 10000
#define CONFIG_DEFAULT_LOW_SPEED_BPS 100       /* bytes/s ... */
#define CONFIG_DEFAULT_LOW_SPEED_S 20          /* ... for this many seconds aborts */
#define CONFIG_DEFAULT_MAX_SIZE (10u << 20)    /* bytes of (decoded) body */
#define CONFIG_DEFAULT_OUT_ROTATE (1ull << 30) /* bytes of an output file */
#define CONFIG_DEFAULT_MAX_DEPTH UINT32_MAX    /* none */
#define CONFIG_DEFAULT_MAX_REDIRECTS 10        /* redirects in a row followed */
#define CONFIG_DEFAULT_MAX_PAGES 0             /* none */
#define CONFIG_DEFAULT_MAX_PAGES_PER_HOST 0    /* none */
#define CONFIG_DEFAULT_MAX_PAGES_PER_DOMAIN 0  /* none */
#define CONFIG_DEFAULT_MAX_HOSTS_PER_DOMAIN 0  /* none */
#define CONFIG_DEFAULT_USER_AGENT "crawler/0.1"
#define CONFIG_DEFAULT_SCOPE SCOPE_HOST
#define CONFIG_DEFAULT_GRACE_MS 5000             /* finish in-flight work after SIGTERM */
#define CONFIG_DEFAULT_REDIS_RETRY_MAX_MS 300000 /* reconnect tries, 5 min in all */
#define CONFIG_REDIS_RETRY_STEP_MAX_MS 30000     /* the longest wait between two tries */
#define CONFIG_MAX_PATTERNS 32                   /* --include/--exclude/--allow/--deny each */
/* a Retry-After waits at most 10 min (--max-retry-after) */
#define CONFIG_DEFAULT_MAX_RETRY_AFTER_MS 600000
#define CONFIG_MAX_ROBOTS_TTL_S 86400 /* RFC 9309: a robots.txt is cached 24 h at most */

/* The settings that decide what a crawl admits, kept with the crawl
 * (admission.c): --scope, --max-depth, --max-pages, --max-pages-per-host,
 * --follow-nofollow, --ignore-robots, --sitemaps, --allow-private,
 * --allow-private-range, --allow-domain, --deny-domain, --include,
 * --exclude. */
#define CONFIG_ADMISSION_COUNT 16
#define CONFIG_ADMISSION_MAX 16384 /* the text of one (a list: one value a line) */

typedef enum config_scope {
    SCOPE_HOST = 0,   /* only the seeds' hosts */
    SCOPE_DOMAIN = 1, /* the seeds' registrable-ish domains (host and its subdomains) */
    SCOPE_ANY = 2,    /* anything http(s) */
} config_scope_t;

typedef enum config_text_format {
    TEXT_FORMAT_PLAIN = 0,    /* paragraphs separated by a blank line */
    TEXT_FORMAT_MARKDOWN = 1, /* headings, lists, emphasis, code blocks, links */
} config_text_format_t;

typedef struct crawl_config {
    /* where */
    rconn_specs_t redis; /* --redis, repeatable (a cluster's nodes); none: $REDIS_URL or embedded */
    const char *data_dir; /* --data-dir for the embedded server (RCONN_DEFAULT_DATA_DIR) */
    const char *crawl;    /* --crawl NAME */
    const char *seeds;    /* --seeds FILE or NULL */
    int force_seeds;      /* --force: re-queue seeds already seen */
    /* engine */
    uint32_t threads;     /* --threads, fetcher threads (default: online cores) */
    uint32_t concurrency; /* --concurrency, transfers in flight in all (split over threads) */
    uint32_t claim_batch; /* --claim-batch, most URLs per claim (the free slots, up to it) */
    int wait;             /* --wait: keep running for new seeds when done */
    uint32_t grace_ms;    /* --grace, ms to finish in-flight work on SIGTERM */
    /* politeness (frontier) */
    uint32_t per_host;           /* --per-host */
    uint32_t delay_ms;           /* --delay, ms */
    uint32_t max_delay_ms;       /* --max-delay, ms cap on Crawl-delay and on a host's pace */
    double delay_factor;         /* --delay-factor: a host waits this many times its
                                    requests' recent duration (0: not at all) */
    uint32_t per_ip;             /* --per-ip: requests in flight per IP address, all workers
                                    (0: per-IP politeness off, unless --ip-delay) */
    uint32_t ip_delay_ms;        /* --ip-delay, ms between requests to one address */
    uint32_t depth_window;       /* --depth-window: crawl order's window in levels
                                    (FRONTIER_NO_WINDOW: none) */
    uint32_t lease_ms;           /* --lease, ms */
    uint32_t redis_retry_max_ms; /* --redis-retry-max: total ms of reconnect tries, 0: none */
    uint32_t max_tries;          /* --max-tries */
    uint32_t backoff_ms;         /* --retry-backoff, ms before the first retry */
    /* --max-retry-after, ms: cap on a response's Retry-After (0: ignored) */
    uint32_t max_retry_after_ms;
    /* robots */
    const char *user_agent; /* --user-agent */
    int ignore_robots;      /* --ignore-robots */
    int sitemaps;           /* --sitemaps: seed Sitemap: URLs */
    uint32_t robots_ttl_s;  /* --robots-ttl: a robots.txt's rules are used this long, s */
    /* scope and limits */
    config_scope_t scope;                          /* --scope host|domain|any */
    const char *allow_domain[CONFIG_MAX_PATTERNS]; /* --allow-domain (repeatable) */
    size_t n_allow_domain;
    const char *deny_domain[CONFIG_MAX_PATTERNS]; /* --deny-domain (repeatable) */
    size_t n_deny_domain;
    const char *include[CONFIG_MAX_PATTERNS]; /* --include REGEX (repeatable) */
    size_t n_include;
    const char *exclude[CONFIG_MAX_PATTERNS]; /* --exclude REGEX (repeatable) */
    size_t n_exclude;
    uint32_t max_depth;          /* --max-depth; UINT32_MAX: none */
    uint32_t max_redirects;      /* --max-redirects: redirects in a row followed; 0: none */
    uint32_t shards;             /* --shards: the crawl's shards if it is created; 0: the crawl's */
    uint64_t max_pages;          /* --max-pages; 0: none */
    uint64_t max_pages_per_host; /* --max-pages-per-host; 0: none */
    uint64_t max_pages_per_domain; /* --max-pages-per-domain (registered domain); 0: none */
    uint64_t max_hosts_per_domain; /* --max-hosts-per-domain; 0: none */
    uint64_t pages_per_inlink;     /* --domain-pages-per-inlink; 0: a fixed budget */
    uint32_t max_url_length;       /* --max-url-length, bytes */
    uint32_t max_links_per_page;   /* --max-links-per-page: links followed per page */
    uint64_t max_size;             /* --max-size, bytes of body (decoded) */
    uint32_t timeout_ms;           /* --timeout, ms */
    uint32_t connect_timeout_ms;   /* --connect-timeout, ms */
    uint32_t low_speed_bps;        /* --low-speed-limit, bytes/s */
    uint32_t low_speed_s;          /* --low-speed-time, s */
    int follow_nofollow;           /* --follow-nofollow */
    int insecure;                  /* --insecure: do not verify TLS */
    int allow_private;             /* --allow-private: allow private/loopback hosts */
    const char *allow_range[CONFIG_MAX_PATTERNS]; /* --allow-private-range CIDR: these only */
    size_t n_allow_range;
    const char *ca_file;   /* --ca-file: PEM CA bundle to trust; NULL: the system's */
    uint32_t tls_sessions; /* --tls-sessions: TLS sessions kept, one per origin (0: libcurl's) */
    /* bloom */
    uint64_t bloom_capacity; /* --bloom-capacity, items */
    double bloom_fp_rate;    /* --bloom-fp-rate */
    double bloom_growth;     /* --bloom-growth: > 1 the visited set grows (bloom.h); 0 or 1 fixed */
    /* --metrics ADDR:PORT: serve Prometheus /metrics there; NULL: none */
    const char *metrics;
    /* output */
    const char *out;                  /* --out FILE or "-" */
    const char *warc;                 /* --warc FILE */
    uint64_t out_rotate;              /* --out-rotate: bytes of a file; 0: never */
    const char *text;                 /* --text FILE or "-": a page's main text, a JSON line */
    config_text_format_t text_format; /* --text-format plain|markdown */
    int text_all;                     /* --text-all: all visible text, not the main content */
    const char *wet;                  /* --wet FILE: the text as WARC conversion records */
    const char *links;                /* --links FILE: each HTML page's outlinks */
    int dedup;     /* --dedup: exact duplicates marked crawl-wide (payload digests in Redis) */
    int quiet;     /* --quiet: no progress line */
    void *storage; /* strings read from --config (cli_crawl_free) */
    unsigned admission_given; /* bit i: admission setting i was given (command line or
                                 config file: config_admission_given) */
    char *admission[CONFIG_ADMISSION_COUNT]; /* lists followed from the crawl's settings
                                                (config_admission_follow; freed by
                                                config_admission_free) */
} crawl_config_t;

/* Notes that option name was given (an admission setting's: its bit). */
void config_admission_given(crawl_config_t *c, const char *name);
/* Setting i's option name ("scope", ...), or NULL past the last. */
const char *config_admission_name(size_t i);
/* Setting i of c as text ("host", "3", "1", a list's values one a line)
 * into buf: its length, or -1 if it does not fit. */
int config_admission_text(const crawl_config_t *c, size_t i, char *buf, size_t len);
/* The crawl keeps stored for setting i (NULL: nothing stored, from a build
 * before): 0 when c's value is the same (or nothing is stored), 1 when the
 * option was not given (config_admission_given) and c takes the crawl's
 * value, -1 when it was given another value (err names the setting and
 * both values: the worker is to be refused). */
int config_admission_follow(crawl_config_t *c, size_t i, const char *stored, char *err,
                            size_t errlen);
/* Frees the lists config_admission_follow copied. */
void config_admission_free(crawl_config_t *c);

/* The scope's part of the options, for scope_new (which copies what it
 * keeps); the pointers point into cfg. */
scope_config_t config_scope(const crawl_config_t *cfg);
/* Thread idx's share of --concurrency (of threads threads): the budget
 * split as evenly as it goes, at least 1. */
uint32_t config_thread_slots(uint32_t concurrency, uint32_t threads, uint32_t idx);
/* The URLs a thread of `slots` slots may hold at once: its slots and a
 * reserve of slots / CONFIG_RESERVE_DIV (at least 1, at most
 * CONFIG_RESERVE_MAX) claimed URLs that wait for a transfer to end, so that
 * a slot that frees starts its next URL at once, not a claim's round trip
 * later. */
uint32_t config_thread_held(uint32_t slots);
#endif
