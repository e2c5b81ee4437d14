/*
 * cmd_seed.c -- `crawler seed FILE`: a seeds file into a crawl's frontier,
 * without crawling.
 *
 * DESIGN: declares its options once (cli.h tables), opens the file and
 * reads its first batch before Redis (seeds.c: normalization,
 * line-numbered errors, bounded lines), then opens the crawl's Redis
 * (cli_open_crawl) and seeds in batches (frontier_seed also records the
 * seeds' hosts).  Keeps no state.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "cli.h"
#include "frontier.h"
#include "keys.h" /* FRONTIER_KEY_PREFIX_HELP */
#include "seeds.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- seed ---------------------------------------------------------------- */

typedef struct seed_opts {
    int force;
    unsigned shards;
    uint64_t max_pages;
    bloom_params_t bp;
    cli_common_t co;
} seed_opts_t;

static const cli_opt_t SEED_OPTS[] = {
    {CLI_OPT_FLAG(seed_opts_t, "force", force, "queue the seeds even if already seen (re-crawl)")},
    {CLI_OPT_U64(seed_opts_t, "bloom-capacity", "N", bp.capacity, 1, BLOOM_MAX_CAPACITY,
                 BLOOM_DEFAULT_CAPACITY,
                 "Bloom filter capacity if it must be created, at most 1e10; exit 2 if it "
                 "does not fit in Redis' free memory (maxmemory), or if a batch of seeds "
                 "could take the crawl past its filter's capacity (nothing of it is seeded)")},
    {CLI_OPT_DOUBLE(seed_opts_t, "bloom-fp-rate", "P", bp.fp_rate, 1e-12, 0.5,
                    BLOOM_DEFAULT_FP_RATE, "Bloom false-positive rate if created")},
    {CLI_OPT_DOUBLE(seed_opts_t, "bloom-growth", "G", bp.growth, 0, BLOOM_MAX_GROWTH,
                    BLOOM_DEFAULT_GROWTH,
                    "if created: each new layer G times the last's capacity (0 or 1: fixed)")},
    {CLI_OPT_U32(seed_opts_t, "shards", "N", shards, 1, FRONTIER_MAX_SHARDS, 0,
                 "split a new crawl into N shards (docs/sharding.md); the crawl keeps "
                 "the count it was created with"),
     .dflt_doc = "the crawl's; a new one: 32 on a Redis Cluster, else 1"},
    {CLI_OPT_U64(seed_opts_t, "max-pages", "N", max_pages, 1, UINT64_MAX - 1, 0,
                 "the crawl's page limit for every worker (as `limits --max-pages`): URLs "
                 "admitted in total, these seeds included; a new crawl of several shards needs "
                 "it at creation"),
     .dflt_doc = "none set"},
    CLI_COMMON_OPTS(seed_opts_t, FRONTIER_DEFAULT_CRAWL, NULL)};
const cli_cmd_t cli_table_seed = {
    .name = "seed",
    .usage = "usage: crawler seed FILE [OPTIONS]\n"
             "Adds the URLs of FILE ('-': stdin; one a line, '#' comments and blank lines\n"
             "ignored) to the crawl's frontier at depth 0.  Each URL is normalized and goes\n"
             "through the crawl's Bloom filter: URLs already seen are skipped.  Invalid lines\n"
             "are reported as FILE:LINE; the valid ones are still seeded, and the exit status\n"
             "is 3 if any line was rejected.\n\noptions:\n",
    .opts = SEED_OPTS,
    .nopts = COUNT(SEED_OPTS),
};

/* Seeds the crawl; joins the crawl's filter, or creates it with bp's
 * capacity and rate if it does not exist (exit 2 if it does not fit).  The
 * file is opened and its first batch read before Redis is touched: a file
 * that cannot be read is a usage error and leaves no key behind. */
static int seed_run(const cli_common_t *co, const char *file, int force, unsigned shards,
                    uint64_t max_pages, const bloom_params_t *bp0)
{
    char err[512] = "";
    seeds_t *seeds = seeds_open(file, 0, err, sizeof err);
    if (!seeds) {
        fprintf(stderr, "crawler seed: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    redisContext *rc;
    rconn_t *r = cli_open_crawl("seed", co, &rc, 0);
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = co->crawl;
    char name[FR_KEY_MAX] = "";
    int berr = 0;
    int go = r != NULL, quota = 0;
    if (go && cli_crawl_shards("seed", rc, r, co->crawl, shards, &shards, &quota) < 0)
        go = 0;
    if (go && shards > 1 && max_pages && quota < 0) { /* frontier/quota.c */
        fprintf(stderr, "crawler seed: " FRONTIER_NO_QUOTA_TEXT "\n", co->crawl,
                (unsigned long)shards);
        seeds_close(seeds);
        cli_close_crawl(r, rc);
        return CLI_EXIT_USAGE;
    }
    cfg.max_pages = max_pages;
    /* --bloom-capacity is the crawl's: each shard's filter holds its part */
    bloom_params_t bpv = *bp0, *bp = &bpv;
    if (shards > 1)
        bpv.capacity = (bpv.capacity + shards - 1) / shards;
    cfg.shards = shards;
    cfg.bloom_capacity = bp0->capacity; /* the other shards' filters, if created */
    cfg.bloom_fp_rate = bp0->fp_rate;
    cfg.bloom_growth = bp0->growth;
    cfg.bloom_cache_bytes = SIZE_MAX;
    bloom_t *b = go && frontier_bloom_name(co->crawl, name, sizeof name) >= 0
                     ? bloom_join(rc, name, bp, &berr, err, sizeof err)
                     : NULL;
    if (go && !b)
        fprintf(stderr, "crawler seed: %s\n", err); /* it names the filter */
    rconn_link_t *link = b ? cli_link("seed", r) : NULL;
    frontier_t *f = link ? frontier_open(link, &cfg, b, err, sizeof err) : NULL;
    if (link && !f)
        fprintf(stderr, "crawler seed: %s\n", err);
    int status = berr == CRAWL_ENOROOM ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    seeds_result_t res;
    int rcode = f ? seeds_check_room(seeds, rc, r, co->crawl, b, err, sizeof err) : CRAWL_EBLOOM;
    if (rcode == 0)
        rcode = seeds_add(seeds, f, force, &res, err, sizeof err);
    if (rcode == 0 && max_pages) { /* the crawl's, for every worker */
        frontier_control_change_t ch = {0};
        ch.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
        ch.value[FRONTIER_LIMIT_MAX_PAGES] = max_pages;
        rcode = frontier_control_routed(rc, r, co->crawl, &ch, NULL, NULL, NULL, err, sizeof err);
    }
    if (f && rcode < 0)
        fprintf(stderr, "crawler seed: %s\n", err);
    if (rcode == CRAWL_EFULL) /* refused: the visited set would be full */
        status = CLI_EXIT_USAGE;
    if (rcode == 0) {
        printf("%zu added, %zu already seen, %ld rejected (crawl %s)\n", res.added,
               res.valid - res.added, res.rejected, co->crawl);
        status = res.rejected ? CLI_EXIT_INVALID : CLI_EXIT_OK;
    }
    seeds_close(seeds);
    frontier_close(f);
    rconn_link_free(link);
    bloom_close(b);
    cli_close_crawl(r, rc);
    return status;
}

int cmd_seed(int argc, char **argv)
{
    seed_opts_t o = {0};
    int first, st = cli_parse_cmd(&cli_table_seed, &o, argc, argv, &first);
    if (st >= 0)
        return st;
    if (argc - first != 1) {
        fprintf(stderr, "crawler seed: expected one FILE argument\n");
        cli_see_help("seed");
        return CLI_EXIT_USAGE;
    }
    return seed_run(&o.co, argv[first], o.force, o.shards, o.max_pages, &o.bp);
}
