/*
 * cmd_crawl.c -- `crawler crawl`: options, Redis (shared or embedded), the
 * crawl's frontier (which opens its Bloom filter), seeding, outputs, then the
 * engine.
 *
 * DESIGN: keeps no state of its own: the options (config.c), the Redis
 * connection (rconn.c), the seeds file and the outputs live for the call;
 * every Redis key is reached through the frontier.  Order: options, then
 * everything that can be checked without Redis (the scope's regexes, the
 * seeds file and its first batch, the outputs opened: CLI_EXIT_USAGE, and
 * nothing was written to Redis; --metrics first: its address checked and
 * bound), then Redis, seeding, engine_run.  Each
 * step's failure is printed once, here or by the step (its message), and
 * maps to the exit status (CLI_EXIT_*).
 */
#include <hiredis/hiredis.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bloom.h"
#include "cli.h"
#include "config.h"
#include "engine.h"
#include "keys.h" /* FR_KEY_MAX */
#include "metrics.h"
#include "metrics_http.h"
#include "jsonl.h"
#include "scope.h"
#include "seeds.h"
#include "outputs.h"

/* The outputs the options name. */
static outputs_spec_t outputs_spec(const crawl_config_t *cfg)
{
    return (outputs_spec_t){.out = cfg->out,
                            .warc = cfg->warc,
                            .text = cfg->text,
                            .wet = cfg->wet,
                            .links = cfg->links,
                            .rotate = cfg->out_rotate,
                            .software = "crawler/" CRAWLER_VERSION};
}

/* What can be checked before Redis: the scope (its --include/--exclude
 * regexes compile), the seeds file (seeds_open reads its first batch) and
 * the outputs (opened for appending; the WARC gets its warcinfo record, so
 * a full disk shows here).  0, or -1 after printing the reason. */
static int validate(const crawl_config_t *cfg, seeds_t **seeds, outputs_t *outs)
{
    char err[512];
    if (cfg->pages_per_inlink && !cfg->max_pages_per_domain) {
        /* (a budget that grows needs a budget: alone it would change nothing, and the
         * crawl would keep it for every later worker) */
        fprintf(stderr, "crawler crawl: --domain-pages-per-inlink needs --max-pages-per-domain "
                        "(the budget it makes grow)\n");
        return -1;
    }
    scope_config_t sc = config_scope(cfg);
    scope_t *probe = scope_new(&sc, err, sizeof err);
    if (!probe) {
        fprintf(stderr, "crawler crawl: --include/--exclude: %s\n", err);
        return -1;
    }
    scope_free(probe);
    if (cfg->seeds && !(*seeds = seeds_open(cfg->seeds, cfg->max_url_length, err, sizeof err))) {
        fprintf(stderr, "crawler crawl: --seeds: %s\n", err);
        return -1;
    }
    outputs_spec_t os = outputs_spec(cfg);
    if (outputs_open(outs, &os, err, sizeof err) < 0) {
        fprintf(stderr, "crawler crawl: %s\n", err);
        return -1;
    }
    return 0;
}

/* --metrics: the address checked, the process's registry and its server,
 * listening before anything else is done (a port in use is a usage error,
 * like a bad address).  0, or -1 after printing the reason. */
static int metrics_start(const crawl_config_t *cfg, metrics_t **m, metrics_server_t **srv)
{
    char err[512];
    if (!cfg->metrics)
        return 0;
    if (metrics_check_addr("crawl", "--metrics", cfg->metrics) < 0)
        return -1;
    if (!(*m = metrics_open(cfg->threads))) {
        fprintf(stderr, "crawler crawl: --metrics: out of memory\n");
        return -1;
    }
    if (!(*srv = metrics_server_start(cfg->metrics, metrics_render_fn, *m, err, sizeof err))) {
        fprintf(stderr, "crawler crawl: --metrics: %s\n", err);
        return -1;
    }
    if (!cfg->quiet)
        fprintf(stderr, "crawler: metrics at http://%s/metrics\n", cfg->metrics);
    return 0;
}

/* The crawl's admission settings (config.h: config_admission_*): this
 * worker's kept with the crawl if it is the first, else followed where
 * this worker left an option at its default, or refused (CRAWL_EINVAL:
 * exit 2) where it asked for another value.  0 or a CRAWL_E* code, after
 * printing why. */
static int fix_settings(crawl_config_t *cfg, frontier_t *f)
{
    const char *fields[CONFIG_ADMISSION_COUNT];
    char *values[CONFIG_ADMISSION_COUNT] = {0}, *stored[CONFIG_ADMISSION_COUNT] = {0};
    char err[768];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < CONFIG_ADMISSION_COUNT; i++) {
        fields[i] = config_admission_name(i);
        if (!(values[i] = malloc(CONFIG_ADMISSION_MAX)))
            rc = CRAWL_ENOMEM;
        else if (config_admission_text(cfg, i, values[i], CONFIG_ADMISSION_MAX) < 0)
            rc = CRAWL_ETOOLONG;
    }
    if (rc == 0)
        rc = frontier_settings(f, fields, (const char *const *)values, CONFIG_ADMISSION_COUNT,
                               stored);
    if (rc < 0)
        fprintf(stderr, "crawler crawl: the crawl's settings: %s%s%s\n", crawl_strerror(rc),
                *frontier_last_error(f) ? ": " : "", frontier_last_error(f));
    for (size_t i = 0; rc == 0 && i < CONFIG_ADMISSION_COUNT; i++) {
        int fr = config_admission_follow(cfg, i, stored[i], err, sizeof err);
        if (fr < 0) {
            fprintf(stderr, "crawler crawl: %s\n", err);
            rc = CRAWL_EINVAL;
        } else if (fr > 0 && !cfg->quiet) {
            for (char *p = stored[i]; (p = strchr(p, '\n'));)
                *p = ',';
            fprintf(stderr, "crawler: following the crawl's --%s %s\n", fields[i], stored[i]);
        }
    }
    for (size_t i = 0; i < CONFIG_ADMISSION_COUNT; i++) {
        free(values[i]);
        free(stored[i]);
    }
    return rc;
}

/* Opens the crawl's filter (joins it, or creates it with
 * --bloom-capacity/--bloom-fp-rate: refused with CRAWL_ENOROOM if it does
 * not fit in Redis), then its frontier, and seeds it from seeds (may be
 * NULL).  0, or a CRAWL_E* code after printing the reason. */
static int seed(crawl_config_t *cfg, const rconn_t *r, seeds_t *seeds, long *rejected)
{
    redisContext *rc = cli_redis_connect("crawl", r);
    if (!rc)
        return CRAWL_EREDIS;
    int rcode = CRAWL_EBLOOM;
    char err[512] = "bad crawl name", name[FR_KEY_MAX] = "";
    frontier_t *f = NULL;
    bloom_t *b = NULL;
    rconn_link_t *link = NULL;
    unsigned shards;
    int quota = 0;
    if ((rcode = cli_crawl_shards("crawl", rc, r, cfg->crawl, cfg->shards, &shards, &quota)) < 0)
        goto out;
    if (shards > 1 && cfg->max_pages && quota < 0) { /* frontier/quota.c */
        fprintf(stderr, "crawler crawl: " FRONTIER_NO_QUOTA_TEXT "\n", cfg->crawl,
                (unsigned long)shards);
        rcode = CRAWL_ENOROOM; /* exit 2 */
        goto out;
    }
    /* --bloom-capacity is the crawl's: each shard's filter holds its part */
    bloom_params_t bp = {.capacity = (cfg->bloom_capacity + shards - 1) / shards,
                         .fp_rate = cfg->bloom_fp_rate,
                         .growth = cfg->bloom_growth,
                         .cache_bytes = SIZE_MAX}; /* seeding: every URL goes to Redis anyway */
    rcode = CRAWL_EBLOOM;
    b = frontier_bloom_name(cfg->crawl, name, sizeof name) < 0
            ? NULL
            : bloom_join(rc, name, &bp, &rcode, err, sizeof err);
    if (!b) {
        fprintf(stderr, "crawler crawl: %s\n", err); /* it names the filter */
        goto out;
    }
    frontier_config_t fc;
    frontier_config_defaults(&fc);
    fc.crawl = cfg->crawl;
    fc.shards = shards;
    /* a new crawl of several shards with a page limit keeps it in allotments
     * from its creation (frontier/quota.c), its seeds counted in it */
    fc.max_pages = shards > 1 ? cfg->max_pages : 0;
    fc.bloom_capacity = cfg->bloom_capacity; /* the other shards' filters, if created */
    fc.bloom_fp_rate = cfg->bloom_fp_rate;
    fc.bloom_growth = cfg->bloom_growth;
    fc.bloom_cache_bytes = SIZE_MAX;
    if (!(link = cli_link("crawl", r))) {
        rcode = CRAWL_EREDIS;
        goto out;
    }
    f = frontier_open(link, &fc, b, err, sizeof err);
    if (!f) {
        rcode = CRAWL_EBLOOM;
        fprintf(stderr, "crawler crawl: frontier: %s\n", err);
        goto out;
    }
    if ((rcode = fix_settings(cfg, f)) < 0)
        goto out;
    if (!cfg->quiet)
        fprintf(stderr, "crawler: Bloom bits set by %s\n",
                frontier_bits_module(f) ? "the crawler module (CRAWLER.BFADD)"
                                        : "BITFIELD (redis-server --loadmodule crawler_redis.so "
                                          "makes it faster: see docs/operating.md)");
    seeds_result_t res;
    if (seeds && ((rcode = seeds_check_room(seeds, rc, r, cfg->crawl, b, err, sizeof err)) < 0 ||
                  (rcode = seeds_add(seeds, f, cfg->force_seeds, &res, err, sizeof err)) < 0)) {
        fprintf(stderr, "crawler crawl: %s\n", err);
        goto out;
    }
    if (seeds) {
        if (!cfg->quiet)
            fprintf(stderr, "crawler: %zu seeds queued, %zu already seen, %ld invalid lines\n",
                    res.added, res.valid - res.added, res.rejected);
        *rejected = res.rejected;
    }
    rcode = 0;
out:
    frontier_close(f);
    rconn_link_free(link);
    bloom_close(b);
    redisFree(rc);
    return rcode;
}

int cmd_crawl(int argc, char **argv)
{
    crawl_config_t cfg;
    cli_crawl_defaults(&cfg);
    int p = cli_crawl_parse(&cfg, argc, argv);
    if (p != 0) {
        cli_crawl_free(&cfg);
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    int status = CLI_EXIT_USAGE;
    long rejected = 0;
    seeds_t *seeds = NULL;
    outputs_t outs = {0};
    outputs_spec_t os = outputs_spec(&cfg);
    rconn_t *r = NULL;
    metrics_t *m = NULL;
    metrics_server_t *msrv = NULL;
    if (metrics_start(&cfg, &m, &msrv) < 0 || validate(&cfg, &seeds, &outs) < 0)
        goto out; /* the reason is printed; Redis was not touched */
    status = CLI_EXIT_ERROR;
    char route[FRONTIER_MAX_BLOOM_NAME];
    if (frontier_bloom_name(cfg.crawl, route, sizeof route) < 0 ||
        !(r = cli_redis_open("crawl", &cfg.redis, RCONN_EMBED_OWN, cfg.data_dir, route)))
        goto out;
    if (!cfg.quiet)
        fprintf(stderr, "crawler: crawl '%s' on %s\n", cfg.crawl, rconn_describe(r));
    int sc = seed(&cfg, r, seeds, &rejected);
    seeds_close(seeds);
    seeds = NULL;
    if (sc < 0) { /* the reason is printed */
        /* the filter asked for does not fit in Redis, or seeding would fill it */
        if (sc == CRAWL_ENOROOM || sc == CRAWL_EFULL || sc == CRAWL_EINVAL)
            status = CLI_EXIT_USAGE;
        goto out;
    }
    engine_totals_t t;
    int rc = engine_run(&cfg, r, &outs, m, &t);
    if (!cfg.quiet)
        fprintf(stderr,
                "crawler: %llu pages, %llu bytes, %llu errors, %llu retried, %llu handed back\n",
                (unsigned long long)t.pages, (unsigned long long)t.bytes,
                (unsigned long long)t.errors, (unsigned long long)t.retried,
                (unsigned long long)t.released);
    status = rc == CRAWL_EFULL ? CLI_EXIT_USAGE /* the visited set is full: said by the engine */
             : rc < 0          ? CLI_EXIT_ERROR
             : rejected        ? CLI_EXIT_INVALID
                               : CLI_EXIT_OK;
out:
    metrics_server_stop(msrv); /* before the outputs and the registry go */
    metrics_close(m);
    seeds_close(seeds);
    char oerr[1024];
    if (outputs_close(&outs, &os, oerr, sizeof oerr) < 0) {
        fprintf(stderr, "crawler crawl: %s\n", oerr);
        status = CLI_EXIT_ERROR;
    }
    rconn_close(r);
    cli_crawl_free(&cfg);
    return status;
}
