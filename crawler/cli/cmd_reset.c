/*
 * cmd_reset.c -- `crawler reset --crawl NAME --yes`: deletes every key of
 * one crawl, on every master of a Redis Cluster, and nothing else.  Refuses
 * without --yes.
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

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define U(x) ((unsigned long long)(x))

/* ---- reset --------------------------------------------------------------- */

typedef struct reset_opts {
    int yes;
    cli_common_t co;
} reset_opts_t;

static const cli_opt_t RESET_OPTS[] = {
    {CLI_OPT_FLAG(reset_opts_t, "yes", yes, "required: confirm the deletion")},
    CLI_COMMON_OPTS(reset_opts_t, NULL, "none, required here")};
const cli_cmd_t cli_table_reset = {
    .name = "reset",
    .usage = "usage: crawler reset --crawl NAME --yes [OPTIONS]\n"
             "Deletes every key of one crawl (" FRONTIER_KEY_PREFIX_HELP
             "*: queues, leases, stats, Bloom\n"
             "filter; a crawl of several shards: " FRONTIER_SHARD_PREFIX_HELP "* too) and nothing\n"
             "else.\n\noptions:\n",
    .opts = RESET_OPTS,
    .nopts = COUNT(RESET_OPTS),
};

typedef struct reset_run {
    const char *crawl;
    int cluster;      /* 1: say what each master held */
    int failed;       /* a master's reset failed (not its connect) */
    uint64_t deleted; /* all masters so far */
    size_t masters;
} reset_run_t;

/* rconn_each_master's fn: the crawl's keys on one master (SCAN sees only
 * the node's own keys). */
static int reset_one(redisContext *c, const char *addr, void *ud)
{
    reset_run_t *run = ud;
    uint64_t n = 0;
    int rc = frontier_reset(c, run->crawl, &n);
    run->deleted += n;
    run->masters++;
    run->failed = rc < 0;
    if (run->cluster)
        printf("%s: deleted %llu keys\n", addr, U(n));
    return rc;
}

int cmd_reset(int argc, char **argv)
{
    reset_opts_t o = {0};
    int first, st = cli_parse_cmd(&cli_table_reset, &o, argc, argv, &first);
    if (st >= 0)
        return st;
    if (first < argc || !o.co.crawl) {
        fprintf(stderr, "crawler reset: %s\n",
                first < argc ? "unexpected argument" : "--crawl NAME is required");
        cli_see_help("reset");
        return CLI_EXIT_USAGE;
    }
    if (!o.yes) {
        fprintf(stderr, "crawler reset: refusing to delete crawl '%s' without --yes\n", o.co.crawl);
        return CLI_EXIT_USAGE;
    }
    char route[FRONTIER_MAX_BLOOM_NAME], err[512] = "";
    rconn_t *r = frontier_bloom_name(o.co.crawl, route, sizeof route) < 0
                     ? NULL
                     : cli_redis_open("reset", &o.co.redis, RCONN_EMBED_JOIN, o.co.data_dir, route);
    if (!r)
        return CLI_EXIT_ERROR;
    reset_run_t run = {.crawl = o.co.crawl, .cluster = rconn_is_cluster(r)};
    int rc = rconn_each_master(r, reset_one, &run, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "crawler reset: %s (%llu keys deleted before the error)\n",
                err[0] && rc == CRAWL_EREDIS && !run.failed ? err : crawl_strerror(rc),
                U(run.deleted));
    else if (run.cluster)
        printf("deleted %llu keys of crawl %s on %zu masters\n", U(run.deleted), o.co.crawl,
               run.masters);
    else
        printf("deleted %llu keys of crawl %s\n", U(run.deleted), o.co.crawl);
    rconn_close(r);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
