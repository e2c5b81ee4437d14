/*
 * cmd_control.c -- `crawler pause`, `resume`, `drain`, `limits`, `block`
 * and `unblock`: control of a running crawl through Redis, so that it
 * reaches every worker of the crawl on every machine (frontier.h:
 * frontier_control, frontier_block).
 *
 * DESIGN: each command declares its options once (cli.h tables), checks
 * every value before Redis is opened (a bad one: exit 2, nothing written),
 * then makes its change in one atomic call (frontier_control: the crawl's
 * control hash, P control) and prints the crawl's control state as it is
 * after it.  The limits take the ranges of `crawler crawl`'s options of the
 * same names (cli_table_crawl), plus the words "default" (clear the
 * override: each worker's own flag holds again) and, for the page limits,
 * "unlimited".  A block names a host or a domain, written as the crawl's
 * normalizer writes a URL's host (lowercase, IDNA), so that it matches
 * the hosts of the crawl's URLs.  No state is kept.
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
#include "parser.h"
#include "scope.h"

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
    const char *host, *domain; /* block, unblock: the one given */
    int force;                 /* change a crawl that has no keys in this Redis */
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
static const cli_opt_t BLOCK_OPTS[] = {
    {CLI_OPT_STRING(control_opts_t, "host", "H", host, NULL,
                    "a host name (any scheme and port), e.g. www.example.com"),
     .dflt_doc = "none"},
    {CLI_OPT_STRING(control_opts_t, "domain", "D", domain, NULL,
                    "a domain: D and every host under it, e.g. example.com"),
     .dflt_doc = "none"},
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

const cli_cmd_t cli_table_block = {
    .name = "block",
    .usage = "usage: crawler block (--host H | --domain D) [OPTIONS]\n"
             "Blocks a host, or a domain and every host under it, for the whole crawl: each\n"
             "worker's next claim drops it (a URL it leased before is not fetched), its\n"
             "queued URLs are dropped and counted (`crawler stats`: blocked), and new links\n"
             "to it are refused (blocked_links).  What a site owner who asks the crawl to\n"
             "stop gets at once.  `crawler limits` lists the blocks; `crawler unblock`\n"
             "lifts one.\n\noptions:\n",
    .opts = BLOCK_OPTS,
    .nopts = COUNT(BLOCK_OPTS),
};
const cli_cmd_t cli_table_unblock = {
    .name = "unblock",
    .usage = "usage: crawler unblock (--host H | --domain D) [OPTIONS]\n"
             "Lifts a block: new links to the host or domain are taken again.  The URLs the\n"
             "block dropped stay dropped (they are in the visited set): seed them again with\n"
             "`crawler seed --force` if they are wanted.\n\noptions:\n",
    .opts = BLOCK_OPTS,
    .nopts = COUNT(BLOCK_OPTS),
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

/* 1 if ch changes something (a pause, a drain, a limit). */
static int is_change(const frontier_control_change_t *ch)
{
    int change = ch->pause > 0 || ch->drain;
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++)
        change |= ch->limit[l] != 0;
    return change;
}

/* A change to a crawl with no keys (a mistyped --crawl?) is refused unless
 * --force: 0 to go on, else an exit status. */
static int check_exists(const char *cmd, const control_opts_t *o, redisContext *rc,
                        const rconn_t *r, int change)
{
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

/* Opens the crawl's Redis (*r, *rc) for cmd; change: refused for a crawl
 * with no keys unless --force.  0, or an exit status (said why; nothing
 * left open). */
static int open_crawl(const char *cmd, const control_opts_t *o, int change, rconn_t **r,
                      redisContext **rc)
{
    char route[FRONTIER_MAX_BLOOM_NAME], ubuf[PATH_MAX + 16];
    rconn_specs_t redis;
    *r = NULL;
    *rc = NULL;
    if (control_redis(cmd, o, &redis, ubuf, sizeof ubuf) < 0)
        return CLI_EXIT_USAGE;
    if (frontier_bloom_name(o->crawl, route, sizeof route) < 0)
        return CLI_EXIT_USAGE;
    *r = cli_redis_open(cmd, &redis, RCONN_EMBED_JOIN_ONLY, o->data_dir, route);
    *rc = *r ? cli_redis_connect(cmd, *r) : NULL;
    int no = *rc ? check_exists(cmd, o, *rc, *r, change) : CLI_EXIT_ERROR;
    if (no) {
        redisFree(*rc);
        rconn_close(*r);
        *r = NULL;
        *rc = NULL;
    }
    return no;
}

/* The blocks, and what they dropped and refused in the whole crawl (every
 * shard's counters: frontier_stats). */
static void print_blocks(redisContext *rc, const rconn_t *r, const char *crawl,
                         const frontier_blocks_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        char what[320];
        snprintf(what, sizeof what, "blocked %s %s", b->v[i].domain ? "domain" : "host",
                 b->v[i].name);
        print_when(what, b->v[i].since_ms);
    }
    frontier_stats_t s;
    if (frontier_stats_routed(rc, r, crawl, &s) == 0 && (b->n || s.blocked || s.blocked_links))
        printf("  blocks: %zu; queued URLs dropped %llu, links refused %llu\n", b->n,
               (unsigned long long)s.blocked, (unsigned long long)s.blocked_links);
}

/* Opens the crawl's Redis, applies ch, prints the state: an exit status. */
static int apply(const char *cmd, const control_opts_t *o, const frontier_control_change_t *ch)
{
    char err[640];
    rconn_t *r;
    redisContext *rc;
    int no = open_crawl(cmd, o, is_change(ch), &r, &rc);
    if (no)
        return no;
    frontier_control_t c;
    frontier_blocks_t b = {0};
    uint32_t live = 0;
    int rcode = frontier_control_routed(rc, r, o->crawl, ch, &c, NULL, &live, err, sizeof err);
    if (rcode == 0)
        rcode = frontier_block(rc, r, o->crawl, 0, 0, NULL, &b, NULL, err, sizeof err);
    if (rcode < 0)
        fprintf(stderr, "crawler %s: %s\n", cmd, err);
    if (rcode == 0) {
        print_state(o->crawl, &c, live);
        print_blocks(rc, r, o->crawl, &b);
        char **kv = NULL;
        size_t nkv = 0;
        frontier_read_settings(rc, o->crawl, &kv, &nkv); /* (none: an older build's crawl) */
        cli_settings_text(stdout, kv, nkv);
        for (size_t i = 0; i < nkv; i++)
            free(kv[i]);
        free(kv);
    }
    frontier_blocks_free(&b);
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

/* The name --host or --domain gave, as the crawl's normalizer writes a
 * URL's host, into buf (a domain's leading "*." or "." dropped): 0, or -1
 * after saying why. */
static int block_name(const char *cmd, const control_opts_t *o, char *buf, size_t len)
{
    const char *v = o->host ? o->host : o->domain;
    if ((o->host != NULL) == (o->domain != NULL)) {
        fprintf(stderr, "crawler %s: give one of --host H and --domain D\n", cmd);
        return -1;
    }
    if (o->domain && !strncmp(v, "*.", 2))
        v += 2;
    else if (o->domain && *v == '.')
        v++;
    char url[600], *norm = NULL;
    int ok = *v && !strpbrk(v, "/?#@ \t") &&
             snprintf(url, sizeof url, "http://%s/", v) < (int)sizeof url &&
             parser_url_normalize(NULL, url, sizeof url, &norm) == 0 &&
             parser_url_host(norm, buf, len) > 0;
    free(norm);
    if (!ok)
        fprintf(stderr, "crawler %s: not a host name: '%s'\n", cmd, v);
    return ok ? 0 : -1;
}

/* 1 if d is a public suffix ("com", "co.uk", an unknown top-level name):
 * a name under it is its own registered domain (libpsl's rule). */
static int public_suffix(const char *d)
{
    char child[300], reg[300];
    if (snprintf(child, sizeof child, "x.%s", d) >= (int)sizeof child)
        return 0;
    return scope_registrable_domain(child, reg, sizeof reg) > 0 && !strcmp(reg, child);
}

static int block_cmd(const cli_cmd_t *cmd, int change, int argc, char **argv)
{
    control_opts_t o = {0};
    char name[256], err[640];
    int st = parse(cmd, &o, argc, argv);
    if (st >= 0)
        return st;
    if (block_name(cmd->name, &o, name, sizeof name) < 0)
        return CLI_EXIT_USAGE; /* Redis not opened */
    rconn_t *r;
    redisContext *rc;
    int no = open_crawl(cmd->name, &o, 1, &r, &rc);
    if (no)
        return no;
    frontier_blocks_t b = {0};
    uint64_t dropped = 0;
    int rcode = frontier_block(rc, r, o.crawl, change, o.domain != NULL, name, &b, &dropped, err,
                               sizeof err);
    const char *what = o.domain ? "domain" : "host";
    if (rcode < 0 && strstr(err, "more than")) {
        fprintf(stderr,
                "crawler %s: crawl '%s' holds %d blocks, the most it can: unblock one first "
                "(crawler limits lists them)\n",
                cmd->name, o.crawl, FRONTIER_MAX_BLOCKS);
        rcode = CLI_EXIT_USAGE;
    } else if (rcode < 0) {
        fprintf(stderr, "crawler %s: %s\n", cmd->name, err);
        rcode = CLI_EXIT_ERROR;
    } else if (change < 0 && !b.changed) {
        fprintf(stderr, "crawler unblock: %s %s was not blocked in crawl '%s' (nothing changed)\n",
                what, name, o.crawl);
        print_blocks(rc, r, o.crawl, &b);
        rcode = CLI_EXIT_ERROR;
    } else {
        printf("crawl %s: %s %s %s", o.crawl, change > 0 ? "blocked" : "unblocked", what, name);
        if (change > 0 && !b.changed)
            printf(" (already blocked: it keeps its time)");
        else if (change > 0)
            printf(" (%llu queued URL%s dropped)", (unsigned long long)dropped,
                   dropped == 1 ? "" : "s");
        printf("\n");
        print_blocks(rc, r, o.crawl, &b);
        if (change > 0 && o.domain && public_suffix(name))
            fprintf(stderr,
                    "crawler block: note: %s is a public suffix, not one registered domain: "
                    "every host under it is blocked\n",
                    name);
    }
    frontier_blocks_free(&b);
    redisFree(rc);
    rconn_close(r);
    return rcode;
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

int cmd_block(int argc, char **argv)
{
    return block_cmd(&cli_table_block, 1, argc, argv);
}

int cmd_unblock(int argc, char **argv)
{
    return block_cmd(&cli_table_unblock, -1, argc, argv);
}
