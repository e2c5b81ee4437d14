/*
 * cmd_control.c -- `crawler pause`, `resume`, `drain` and `limits`: control
 * of a running crawl through Redis, so that it reaches every worker of the
 * crawl on every machine (frontier.h: frontier_control).
 *
 * DESIGN: each command declares its options once (cli.h tables), checks
 * every value before Redis is opened (a bad one: exit 2, nothing written),
 * then makes its change in one atomic call (frontier_control: the crawl's
 * control hash, P control) and prints the crawl's control state as it is
 * after it.  The limits take the ranges of `crawler crawl`'s options of the
 * same names (cli_table_crawl), plus the words "default" (clear the
 * override: each worker's own flag holds again) and, for the page limits,
 * "unlimited".  No state is kept.
 */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "frontier.h"
#include "keys.h" /* FRONTIER_KEY_PREFIX_HELP */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The `crawl` option each limit overrides, in frontier_limit_t's order. */
static const char *const LIMIT_OPT[FRONTIER_LIMIT_COUNT] = {
    [FRONTIER_LIMIT_PER_HOST] = "per-host",
    [FRONTIER_LIMIT_DELAY] = "delay",
    [FRONTIER_LIMIT_MAX_DELAY] = "max-delay",
    [FRONTIER_LIMIT_MAX_PAGES] = "max-pages",
    [FRONTIER_LIMIT_MAX_PAGES_PER_HOST] = "max-pages-per-host",
};

typedef struct control_opts {
    const char *limit[FRONTIER_LIMIT_COUNT]; /* limits: the values given, NULL: not given */
    rconn_specs_t redis;
    const char *crawl, *data_dir;
    int force; /* change a crawl that has no keys in this Redis */
} control_opts_t;

/* clang-format off */
#define CONTROL_COMMON                                                                             \
    {CLI_OPT_REDIS(control_opts_t, redis)},                                                        \
    {CLI_OPT_STRING(control_opts_t, "crawl", "NAME", crawl, FRONTIER_DEFAULT_CRAWL,                \
                    "crawl name; keys live under " FRONTIER_KEY_PREFIX_HELP),                       \
     .check = cli_check_crawl_name},                                                               \
    {CLI_OPT_STRING(control_opts_t, "data-dir", "DIR", data_dir, RCONN_DEFAULT_DATA_DIR,          \
                    "without --redis and $REDIS_URL: the crawl of the worker running its\n"        \
                    "embedded Redis in DIR (its socket DIR/redis.sock)")},                         \
    {CLI_OPT_FLAG(control_opts_t, "force", force,                                                  \
                  "change a crawl that has no keys in this Redis yet (a crawl started later)")},  \
    {CLI_OPT_HELP("this help")}
/* clang-format on */

static const cli_opt_t STATE_OPTS[] = {CONTROL_COMMON};
static const cli_opt_t LIMITS_OPTS[] = {
    {CLI_OPT_STRING(control_opts_t, "per-host", "N", limit[FRONTIER_LIMIT_PER_HOST], NULL,
                    "requests in flight per host, all workers, when its delay is 0"),
     .dflt_doc = "unchanged"},
    {CLI_OPT_STRING(control_opts_t, "delay", "MS", limit[FRONTIER_LIMIT_DELAY], NULL,
                    "min ms from the end of a request to a host to the next one"),
     .dflt_doc = "unchanged"},
    {CLI_OPT_STRING(control_opts_t, "max-delay", "MS", limit[FRONTIER_LIMIT_MAX_DELAY], NULL,
                    "cap on a host's robots.txt Crawl-delay"),
     .dflt_doc = "unchanged"},
    {CLI_OPT_STRING(control_opts_t, "max-pages", "N", limit[FRONTIER_LIMIT_MAX_PAGES], NULL,
                    "URLs admitted in total, all workers"),
     .dflt_doc = "unchanged"},
    {CLI_OPT_STRING(control_opts_t, "max-pages-per-host", "N",
                    limit[FRONTIER_LIMIT_MAX_PAGES_PER_HOST], NULL,
                    "URLs admitted per host, all workers"),
     .dflt_doc = "unchanged"},
    CONTROL_COMMON};

const cli_cmd_t cli_table_pause = {
    .name = "pause",
    .usage = "usage: crawler pause [OPTIONS]\n"
             "Pauses the crawl on every worker: no URL is claimed from the next claim on\n"
             "(Redis refuses it), what runs is finished, leases are renewed, and the crawl is\n"
             "never taken for over while paused.  `crawler resume` undoes it.\n\noptions:\n",
    .opts = STATE_OPTS,
    .nopts = COUNT(STATE_OPTS),
};
const cli_cmd_t cli_table_resume = {
    .name = "resume",
    .usage = "usage: crawler resume [OPTIONS]\n"
             "Resumes a paused crawl: the workers claim again (within 250 ms).\n\noptions:\n",
    .opts = STATE_OPTS,
    .nopts = COUNT(STATE_OPTS),
};
const cli_cmd_t cli_table_drain = {
    .name = "drain",
    .usage = "usage: crawler drain [OPTIONS]\n"
             "Drains the workers running now (--wait ones too): each claims nothing more,\n"
             "finishes its in-flight URLs (within its --grace, as after one SIGTERM), hands\n"
             "back what it claimed but did not start, and exits 0.  A worker started after\n"
             "the drain is not affected: it crawls what is left.\n\noptions:\n",
    .opts = STATE_OPTS,
    .nopts = COUNT(STATE_OPTS),
};
const cli_cmd_t cli_table_limits = {
    .name = "limits",
    .usage = "usage: crawler limits [--per-host N] [--delay MS] [--max-delay MS]\n"
             "                      [--max-pages N] [--max-pages-per-host N] [OPTIONS]\n"
             "Sets crawl-wide limits in Redis that beat each worker's own flag of the same\n"
             "name, on every worker from its next Redis call on; 'default' clears one (the\n"
             "workers' flags hold again), 'unlimited' lifts a page limit.  The values take\n"
             "the ranges of `crawler crawl`.  With no limit given, prints the current ones.\n"
             "\noptions:\n",
    .opts = LIMITS_OPTS,
    .nopts = COUNT(LIMITS_OPTS),
};

/* Checks the limits given into ch: 0, or -1 after saying which is bad. */
static int read_limits(const control_opts_t *o, frontier_control_change_t *ch)
{
    const cli_cmd_t *crawl = &cli_table_crawl; /* the ranges of `crawl`'s options */
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++) {
        const char *v = o->limit[l];
        const cli_opt_t *co = cli_find(crawl, LIMIT_OPT[l]);
        int pages = l == FRONTIER_LIMIT_MAX_PAGES || l == FRONTIER_LIMIT_MAX_PAGES_PER_HOST;
        char opt[64];
        snprintf(opt, sizeof opt, "--%s", LIMIT_OPT[l]);
        if (!v)
            continue;
        if (!co)
            return -1;
        if (!strcmp(v, "default")) {
            ch->limit[l] = -1;
        } else if (pages && !strcmp(v, "unlimited")) {
            ch->limit[l] = 1;
            ch->value[l] = 0;
        } else if (cli_u64("limits", opt, v, co->lo, co->hi, &ch->value[l]) < 0) {
            fprintf(stderr, "crawler limits: %s also takes 'default' (clear the override)%s\n", opt,
                    pages ? " and 'unlimited'" : "");
            return -1;
        } else {
            ch->limit[l] = 1;
        }
    }
    return 0;
}

static void print_when(const char *what, uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
    printf("  %s at %s.%03u UTC (Redis clock)\n", what, when, (unsigned)(ms % 1000));
}

static void print_state(const char *crawl, const frontier_control_t *c, uint32_t live)
{
    printf("crawl %s: %s, %u live worker%s\n", crawl, c->paused ? "paused" : "running", live,
           live == 1 ? "" : "s");
    if (c->drain_ms)
        print_when("drained (the workers registered before then stop)", c->drain_ms);
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++) {
        int pages = l == FRONTIER_LIMIT_MAX_PAGES || l == FRONTIER_LIMIT_MAX_PAGES_PER_HOST;
        if (!c->set[l])
            printf("  %-19s default (each worker's --%s)\n", LIMIT_OPT[l], LIMIT_OPT[l]);
        else if (pages && c->value[l] == 0)
            printf("  %-19s unlimited (crawl-wide)\n", LIMIT_OPT[l]);
        else
            printf("  %-19s %llu (crawl-wide)\n", LIMIT_OPT[l], (unsigned long long)c->value[l]);
    }
}

/* The Redis to act on (into *s): --redis, else $REDIS_URL, else the
 * embedded Redis of the worker running in --data-dir (its URL in buf; a
 * control command never starts one: a crawl no worker runs there has
 * nothing to control).  0, or -1 after saying why. */
static int control_redis(const char *cmd, const control_opts_t *o, rconn_specs_t *s, char *buf,
                         size_t len)
{
    const char *env = getenv("REDIS_URL");
    *s = o->redis;
    if (s->n)
        return 0;
    *s = (rconn_specs_t){.url = {env}, .n = 1};
    if (env && *env)
        return 0;
    s->url[0] = buf;
    if (rconn_embedded_running(o->data_dir, buf, len))
        return 0;
    fprintf(stderr,
            "crawler %s: no Redis named (--redis URL or $REDIS_URL), and no worker runs its "
            "embedded Redis in %s (--data-dir): a control command acts on the Redis of a "
            "running crawl\n",
            cmd, o->data_dir);
    return -1;
}

/* 1 if the crawl has keys in this Redis (it was seeded, claimed from or has
 * workers), 0 if not, -1 on a Redis error (said). */
static int crawl_exists(const char *cmd, redisContext *rc, const rconn_t *r, const char *crawl)
{
    frontier_stats_t s;
    if (frontier_stats_routed(rc, r, crawl, &s) < 0) {
        fprintf(stderr, "crawler %s: cannot read the crawl's counters: %s\n", cmd,
                rc->err ? rc->errstr : "unexpected reply");
        return -1;
    }
    return s.enqueued || s.seeds || s.claimed || s.fetched || s.workers;
}

/* A change to a crawl with no keys (a mistyped --crawl?) is refused unless
 * --force: 0 to go on, else an exit status. */
static int check_exists(const char *cmd, const control_opts_t *o, redisContext *rc,
                        const rconn_t *r, const frontier_control_change_t *ch)
{
    int change = ch->pause > 0 || ch->drain;
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++)
        change |= ch->limit[l] != 0;
    int e = change && !o->force ? crawl_exists(cmd, rc, r, o->crawl) : 1;
    if (e < 0)
        return CLI_EXIT_ERROR;
    if (e == 0) {
        fprintf(stderr,
                "crawler %s: crawl '%s' has no keys in this Redis (not started yet, reset, or "
                "another --crawl name); nothing written (--force: set it for a crawl started "
                "later)\n",
                cmd, o->crawl);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Opens the crawl's Redis, applies ch, prints the state: an exit status. */
static int apply(const char *cmd, const control_opts_t *o, const frontier_control_change_t *ch)
{
    char route[FRONTIER_MAX_BLOOM_NAME], err[640], ubuf[PATH_MAX + 16];
    rconn_specs_t redis;
    if (control_redis(cmd, o, &redis, ubuf, sizeof ubuf) < 0)
        return CLI_EXIT_USAGE;
    if (frontier_bloom_name(o->crawl, route, sizeof route) < 0)
        return CLI_EXIT_USAGE;
    rconn_t *r = cli_redis_open(cmd, &redis, RCONN_EMBED_JOIN_ONLY, o->data_dir, route);
    redisContext *rc = r ? cli_redis_connect(cmd, r) : NULL;
    frontier_control_t c;
    uint32_t live = 0;
    int no = rc ? check_exists(cmd, o, rc, r, ch) : 0;
    if (no) {
        redisFree(rc);
        rconn_close(r);
        return no;
    }
    int rcode =
        rc ? frontier_control_routed(rc, r, o->crawl, ch, &c, NULL, &live, err, sizeof err) : -1;
    if (rc && rcode < 0)
        fprintf(stderr, "crawler %s: %s\n", cmd, err);
    if (rcode == 0) {
        print_state(o->crawl, &c, live);
        char **kv = NULL;
        size_t nkv = 0;
        frontier_read_settings(rc, o->crawl, &kv, &nkv); /* (none: an older build's crawl) */
        cli_settings_text(stdout, kv, nkv);
        for (size_t i = 0; i < nkv; i++)
            free(kv[i]);
        free(kv);
    }
    if (rc)
        redisFree(rc);
    rconn_close(r);
    return rcode == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

/* Parses argv with cmd's table: an exit status, or -1 to go on. */
static int parse(const cli_cmd_t *cmd, control_opts_t *o, int argc, char **argv)
{
    int first;
    cli_defaults(cmd, o);
    int p = cli_parse(cmd, o, argc, argv, &first);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (first < argc) {
        fprintf(stderr, "crawler %s: unexpected argument '%s'\n", cmd->name, argv[first]);
        cli_see_help(cmd->name);
        return CLI_EXIT_USAGE;
    }
    return -1;
}

static int state_cmd(const cli_cmd_t *cmd, const frontier_control_change_t *ch, int argc,
                     char **argv)
{
    control_opts_t o = {0};
    int st = parse(cmd, &o, argc, argv);
    return st >= 0 ? st : apply(cmd->name, &o, ch);
}

int cmd_pause(int argc, char **argv)
{
    return state_cmd(&cli_table_pause, &(frontier_control_change_t){.pause = 1}, argc, argv);
}

int cmd_resume(int argc, char **argv)
{
    return state_cmd(&cli_table_resume, &(frontier_control_change_t){.pause = -1}, argc, argv);
}

int cmd_drain(int argc, char **argv)
{
    return state_cmd(&cli_table_drain, &(frontier_control_change_t){.drain = 1}, argc, argv);
}

int cmd_limits(int argc, char **argv)
{
    control_opts_t o = {0};
    frontier_control_change_t ch = {0};
    int st = parse(&cli_table_limits, &o, argc, argv);
    if (st >= 0)
        return st;
    if (read_limits(&o, &ch) < 0)
        return CLI_EXIT_USAGE; /* said why; Redis not opened */
    return apply("limits", &o, &ch);
}
