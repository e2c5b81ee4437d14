/*
 * cmd_frontier.c -- `crawler seed`, `crawler stats`, `crawler reset`: the
 * subcommands that work on a crawl's frontier without crawling.
 *
 * DESIGN: each declares its options once, in a cli_opt_t table that
 * cli_parse() reads (cli.h: defaults, checks and --help), opens the crawl's Redis
 * (cli_redis_open: --redis, $REDIS_URL or the embedded server in --data-dir)
 * and calls the frontier module; none keeps state.  seed opens the file and
 * reads its first batch before Redis (seeds.c: normalization, line-numbered
 * errors, bounded lines), then seeds in batches (frontier_seed also records
 * the seeds' hosts); stats
 * prints once, or every N seconds with --watch until SIGINT/SIGTERM (or
 * --count refreshes), or with --serve ADDR:PORT answers Prometheus scrapes
 * of it (read from Redis at each scrape, on the server's thread, through a
 * connection of that thread's own, made again after a failure) until
 * SIGINT/SIGTERM; reset refuses without --yes.
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
#include "seeds.h"
#include "frontier.h"
#include "keys.h" /* FRONTIER_KEY_PREFIX_HELP */
#include "metrics_crawl.h"
#include "metrics_http.h"

/* Options every subcommand here shares: .co of each command's options. */
typedef struct common {
    rconn_specs_t redis;
    const char *crawl;
    const char *data_dir;
} common_t;

/* The table entries of common_t, last in each table; crawl_dflt is --crawl's
 * default, crawl_doc what --help says when it is NULL. */
/* clang-format off */
#define COMMON_OPTS(T, crawl_dflt, crawl_doc)                                                      \
    {CLI_OPT_REDIS(T, co.redis)},                                                                  \
    {CLI_OPT_STRING(T, "crawl", "NAME", co.crawl, crawl_dflt,                                      \
                    "crawl name; keys live under " FRONTIER_KEY_PREFIX_HELP),                        \
     .check = cli_check_crawl_name, .dflt_doc = crawl_doc},                                        \
    {CLI_OPT_DATA_DIR(T, co.data_dir)},                                                            \
    {CLI_OPT_HELP("this help")},
/* clang-format on */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* cli_parse(), with its result as an exit status: -1 to go on. */
static int parse(const cli_cmd_t *cmd, void *o, int argc, char **argv, int *first)
{
    cli_defaults(cmd, o);
    int p = cli_parse(cmd, o, argc, argv, first);
    return p == 0 ? -1 : p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

/* Opens Redis; NULL (message printed) on failure.  A connect that fails
 * is a failure too, unless may_wait (then *rc is NULL, the message printed,
 * and the caller connects later). */
static rconn_t *open_redis_as(const char *cmd, const common_t *co, redisContext **rc, int may_wait)
{
    *rc = NULL;
    char route[FRONTIER_MAX_BLOOM_NAME];
    if (frontier_bloom_name(co->crawl ? co->crawl : FRONTIER_DEFAULT_CRAWL, route, sizeof route) <
        0)
        return NULL;
    rconn_t *r = cli_redis_open(cmd, &co->redis, RCONN_EMBED_JOIN, co->data_dir, route);
    if (r)
        *rc = cli_redis_connect(cmd, r);
    if (r && !*rc && !may_wait) {
        rconn_close(r);
        r = NULL;
    }
    return r;
}

static rconn_t *open_redis(const char *cmd, const common_t *co, redisContext **rc)
{
    return open_redis_as(cmd, co, rc, 0);
}

static void close_redis(rconn_t *r, redisContext *rc)
{
    if (rc)
        redisFree(rc);
    rconn_close(r);
}

/* ---- seed ---------------------------------------------------------------- */

typedef struct seed_opts {
    int force;
    unsigned shards;
    uint64_t max_pages;
    bloom_params_t bp;
    common_t co;
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
    {CLI_OPT_U32(seed_opts_t, "shards", "N", shards, 1, FRONTIER_MAX_SHARDS, 0,
                 "split a new crawl into N shards (README: Redis Cluster); the crawl keeps "
                 "the count it was created with"),
     .dflt_doc = "the crawl's; a new one: 32 on a Redis Cluster, else 1"},
    {CLI_OPT_U64(seed_opts_t, "max-pages", "N", max_pages, 1, UINT64_MAX - 1, 0,
                 "the crawl's page limit for every worker (as `limits --max-pages`): URLs "
                 "admitted in total, these seeds included; a new crawl of several shards needs "
                 "it at creation"),
     .dflt_doc = "none set"},
    COMMON_OPTS(seed_opts_t, FRONTIER_DEFAULT_CRAWL, NULL)};
static const cli_cmd_t SEED = {
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
static int seed_run(const common_t *co, const char *file, int force, unsigned shards,
                    uint64_t max_pages, const bloom_params_t *bp0)
{
    char err[512] = "";
    seeds_t *seeds = seeds_open(file, 0, err, sizeof err);
    if (!seeds) {
        fprintf(stderr, "crawler seed: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    redisContext *rc;
    rconn_t *r = open_redis("seed", co, &rc);
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
        close_redis(r, rc);
        return CLI_EXIT_USAGE;
    }
    cfg.max_pages = max_pages;
    /* --bloom-capacity is the crawl's: each shard's filter holds its part */
    bloom_params_t bpv = *bp0, *bp = &bpv;
    if (shards > 1)
        bpv.capacity = (bpv.capacity + shards - 1) / shards;
    cfg.shards = shards;
    cfg.redis = r;
    cfg.bloom_capacity = bp0->capacity; /* the other shards' filters, if created */
    cfg.bloom_fp_rate = bp0->fp_rate;
    cfg.bloom_cache_bytes = SIZE_MAX;
    bloom_t *b = go && frontier_bloom_name(co->crawl, name, sizeof name) >= 0
                     ? bloom_join(rc, name, bp, &berr, err, sizeof err)
                     : NULL;
    if (go && !b)
        fprintf(stderr, "crawler seed: %s\n", err); /* it names the filter */
    frontier_t *f = b ? frontier_open(rc, &cfg, b, err, sizeof err) : NULL;
    if (b && !f)
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
    bloom_close(b);
    close_redis(r, rc);
    return status;
}

int cmd_seed(int argc, char **argv)
{
    seed_opts_t o = {0};
    int first, st = parse(&SEED, &o, argc, argv, &first);
    if (st >= 0)
        return st;
    if (argc - first != 1) {
        fprintf(stderr, "crawler seed: expected one FILE argument\n");
        cli_see_help("seed");
        return CLI_EXIT_USAGE;
    }
    return seed_run(&o.co, argv[first], o.force, o.shards, o.max_pages, &o.bp);
}

/* ---- stats --------------------------------------------------------------- */

static void json_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(o, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(o, "\\u%04x", *p);
        else
            fputc(*p, o);
    }
    fputc('"', o);
}

#define U(x) ((unsigned long long)(x))

/* The crawl's visited set: its fill from the counters, or have = 0 when
 * the crawl has no filter (yet). */
typedef struct bloom_view {
    int have;
    bloom_fill_t fill;     /* the fullest shard's (the crawl's, with one shard) */
    bloom_geometry_t geo;  /* every shard's filter has this geometry */
    uint64_t capacity;     /* and this capacity */
    const uint64_t *added; /* [shards]: URLs added to each shard's filter */
    unsigned shards;
} bloom_view_t;

/* Shard i's filter: its fill from its count. */
static void shard_fill(const bloom_view_t *bv, unsigned i, bloom_fill_t *f)
{
    bloom_fill_of(&bv->geo, bv->capacity, bv->added[i], f);
}

static void json_bloom(FILE *o, const bloom_view_t *bv)
{
    if (!bv->have) {
        fprintf(o, ", \"bloom\": null");
        return;
    }
    const bloom_fill_t *f = &bv->fill;
    fprintf(o,
            ", \"bloom\": {\"added\": %llu, \"capacity\": %llu, \"fill\": %.6f, "
            "\"fp_rate\": %.6g, \"warn\": %s, \"full\": %s",
            (unsigned long long)f->added, (unsigned long long)f->capacity, f->fill, f->fp_rate,
            f->fill >= BLOOM_FILL_WARN ? "true" : "false", f->full ? "true" : "false");
    fprintf(o, ", \"shards\": [");
    for (unsigned i = 0; i < bv->shards; i++) {
        bloom_fill_t g;
        shard_fill(bv, i, &g);
        fprintf(o, "%s{\"added\": %llu, \"fill\": %.6f, \"fp_rate\": %.6g}", i ? ", " : "",
                U(g.added), g.fill, g.fp_rate);
    }
    fprintf(o, "]}");
}

/* The visited set's lines: fill, rate, and a warning past BLOOM_FILL_WARN. */
static void text_bloom(FILE *o, const bloom_view_t *bv)
{
    if (!bv->have) {
        fprintf(o, "  bloom: no filter\n");
        return;
    }
    const bloom_fill_t *f = &bv->fill;
    fprintf(o,
            "  bloom: %llu URLs added of capacity %llu (%.1f%% full)  false-positive rate now "
            "%.3g\n",
            (unsigned long long)f->added, (unsigned long long)f->capacity, f->fill * 100,
            f->fp_rate);
    if (bv->shards > 1)
        fprintf(o, "  bloom by shard (fill, false-positive rate now):");
    for (unsigned i = 0; bv->shards > 1 && i < bv->shards; i++) {
        bloom_fill_t g;
        shard_fill(bv, i, &g);
        fprintf(o, "%s%4u: %5.1f%% %9.3g", i % 4 ? "  " : "\n  ", i, g.fill * 100, g.fp_rate);
    }
    if (bv->shards > 1)
        fputc('\n', o);
    char msg[640];
    if (f->full) {
        bloom_full_message(f, 0, msg, sizeof msg);
        fprintf(o, "  WARNING: %s\n", msg);
    } else if (f->fill >= BLOOM_FILL_WARN) {
        fprintf(o,
                "  WARNING: the visited set is %.1f%% full; the crawl stops when it is full "
                "(%llu URLs): it cannot grow\n",
                f->fill * 100, (unsigned long long)f->capacity);
    }
}

/* The crawl's control hash (`crawler pause|drain|limits`): its JSON member,
 * and its text line (the overrides that are set only). */
static void json_control(FILE *o, const frontier_control_t *c)
{
    fprintf(o, ", \"control\": {\"paused\": %s, \"drain_ms\": ", c->paused ? "true" : "false");
    fprintf(o, c->drain_ms ? "%llu" : "null", U(c->drain_ms));
    fprintf(o, ", \"limits\": {");
    for (int l = 0, n = 0; l < FRONTIER_LIMIT_COUNT; l++)
        if (c->set[l])
            fprintf(o, "%s\"%s\": %llu", n++ ? ", " : "", frontier_limit_field(l), U(c->value[l]));
    fprintf(o, "}}");
}

static void text_control(FILE *o, const frontier_control_t *c)
{
    fprintf(o, "  control: %s", c->paused ? "PAUSED" : "running");
    if (c->drain_ms) {
        time_t t = (time_t)(c->drain_ms / 1000);
        struct tm tm;
        char when[32];
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
        fprintf(o, ", drained at %s UTC (the workers registered before then stop)", when);
    }
    for (int l = 0, n = 0; l < FRONTIER_LIMIT_COUNT; l++) {
        if (!c->set[l])
            continue;
        fprintf(o, "%s%s ", n++ ? ", " : "; crawl-wide limits: ", frontier_limit_field(l));
        int pages = l == FRONTIER_LIMIT_MAX_PAGES || l == FRONTIER_LIMIT_MAX_PAGES_PER_HOST;
        fprintf(o, pages && !c->value[l] ? "unlimited" : "%llu", U(c->value[l]));
    }
    fprintf(o, "\n");
}

static void print_json(FILE *o, const char *crawl, const frontier_stats_t *s,
                       const frontier_worker_info_t *w, size_t nw, const bloom_view_t *bv)
{
    fprintf(o, "{\"crawl\": ");
    json_str(o, crawl);
    fprintf(o,
            ", \"shards\": %u, \"time_ms\": %llu, \"queued\": %llu, \"delayed\": %llu, "
            "\"in_flight\": %llu, "
            "\"hosts\": %llu, \"ready_hosts\": %llu, \"dead\": %llu, \"enqueued\": %llu, "
            "\"seeds\": %llu, \"claimed\": %llu, \"fetched\": %llu, \"bytes\": %llu, "
            "\"retried\": %llu, \"reclaimed\": %llu, \"released\": %llu, \"new_links\": %llu, "
            "\"seen_links\": %llu, \"skipped_links\": %llu, \"capped_pages\": %llu, "
            "\"status\": {\"2xx\": %llu, "
            "\"3xx\": %llu, \"4xx\": %llu, \"5xx\": %llu, \"other\": %llu}, \"errors\": %llu, "
            "\"error_kinds\": {",
            s->shards ? s->shards : 1, U(s->now_ms), U(s->queued), U(s->delayed), U(s->in_flight),
            U(s->hosts), U(s->ready_hosts), U(s->dead), U(s->enqueued), U(s->seeds), U(s->claimed),
            U(s->fetched), U(s->bytes), U(s->retried), U(s->reclaimed), U(s->released),
            U(s->new_links), U(s->seen_links), U(s->skipped_links), U(s->capped_pages),
            U(s->status_2xx), U(s->status_3xx), U(s->status_4xx), U(s->status_5xx),
            U(s->status_other), U(s->errors));
    for (size_t i = 0; i < s->nkinds; i++) {
        fprintf(o, "%s", i ? ", " : "");
        json_str(o, s->kinds[i].kind);
        fprintf(o, ": %llu", U(s->kinds[i].count));
    }
    fprintf(o, "}");
    json_bloom(o, bv);
    json_control(o, &s->control);
    fprintf(o, ", \"live_workers\": %u, \"workers\": [", s->workers);
    for (size_t i = 0; i < nw; i++) {
        fprintf(o, "%s{\"id\": ", i ? ", " : "");
        json_str(o, w[i].id);
        fprintf(o, ", \"host\": ");
        json_str(o, w[i].host);
        fprintf(o,
                ", \"pid\": %ld, \"started_ms\": %llu, \"last_ms\": %llu, "
                "\"lease_until_ms\": %llu, \"live\": %s, \"pages\": %llu, "
                "\"pages_per_s\": %.2f, \"in_flight\": %u, \"leased\": %u}",
                w[i].pid, U(w[i].started_ms), U(w[i].last_ms), U(w[i].lease_until_ms),
                w[i].live ? "true" : "false", U(w[i].pages), w[i].pages_per_s, w[i].in_flight,
                w[i].leased);
    }
    fprintf(o, "]}\n");
}

static void print_text(FILE *o, const char *crawl, const frontier_stats_t *s,
                       const frontier_worker_info_t *w, size_t nw, const bloom_view_t *bv)
{
    time_t t = (time_t)(s->now_ms / 1000);
    struct tm tm;
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
    fprintf(o, "crawl %s at %s UTC (Redis clock)\n", crawl, when);
    fprintf(o, "  queued %llu  delayed %llu  in flight %llu  dead letters %llu\n", U(s->queued),
            U(s->delayed), U(s->in_flight), U(s->dead));
    fprintf(o, "  hosts %llu  ready hosts %llu\n", U(s->hosts), U(s->ready_hosts));
    if (s->shards > 1)
        fprintf(o, "  shards %u (each with a visited set of its own: the fullest one below)\n",
                s->shards);
    fprintf(o, "  enqueued %llu (seeds %llu)  claimed %llu  fetched %llu  bytes %llu\n",
            U(s->enqueued), U(s->seeds), U(s->claimed), U(s->fetched), U(s->bytes));
    fprintf(o, "  retried %llu  reclaimed %llu  released %llu\n", U(s->retried), U(s->reclaimed),
            U(s->released));
    fprintf(o,
            "  links: new %llu  seen %llu  skipped (limits) %llu  pages cut at the link cap %llu\n",
            U(s->new_links), U(s->seen_links), U(s->skipped_links), U(s->capped_pages));
    fprintf(o, "  status: 2xx %llu  3xx %llu  4xx %llu  5xx %llu  other %llu\n", U(s->status_2xx),
            U(s->status_3xx), U(s->status_4xx), U(s->status_5xx), U(s->status_other));
    text_bloom(o, bv);
    text_control(o, &s->control);
    fprintf(o, "  errors %llu", U(s->errors));
    for (size_t i = 0; i < s->nkinds; i++)
        fprintf(o, "%s%s %llu", i ? ", " : ": ", s->kinds[i].kind, U(s->kinds[i].count));
    fprintf(o, "\n  workers: %u live, %zu registered\n", s->workers, nw);
    for (size_t i = 0; i < nw; i++) {
        double ago = s->now_ms >= w[i].last_ms ? (double)(s->now_ms - w[i].last_ms) / 1e3 : 0;
        fprintf(o,
                "    %s  host %s pid %ld  pages %llu  %.1f pages/s  in flight %u (leased %u)"
                "  seen %.1fs ago%s\n",
                w[i].id, w[i].host[0] ? w[i].host : "?", w[i].pid, U(w[i].pages), w[i].pages_per_s,
                w[i].in_flight, w[i].leased, ago, w[i].live ? "" : "  LEASE EXPIRED");
    }
}

/* Joins the crawl's filter (never creates it) for its geometry and
 * capacity; 0 (bv->have 0 if there is none), or the join's code. */
static int read_bloom(redisContext *rc, const char *crawl, const frontier_stats_t *s,
                      bloom_view_t *bv)
{
    char name[FR_KEY_MAX], msg[512];
    int code = 0;
    memset(bv, 0, sizeof *bv);
    if (frontier_bloom_name(crawl, name, sizeof name) < 0)
        return CRAWL_EINVAL;
    bloom_params_t join = {.cache_bytes = SIZE_MAX}; /* no capacity: join only */
    bloom_t *b = bloom_join(rc, name, &join, &code, msg, sizeof msg);
    if (!b)
        return code == CRAWL_ENOTFOUND ? 0 : code;
    bv->have = 1;
    bv->geo = *bloom_geometry(b);
    bv->capacity = bloom_capacity(b);
    bv->added = s->shard_added;
    bv->shards = s->shards ? s->shards : 1;
    bloom_fill_of(&bv->geo, bv->capacity, s->bloom_added_max, &bv->fill);
    bloom_close(b);
    return 0;
}

/* One reading of the crawl: counters, workers (*w: caller frees) and its
 * filter.  0 or the first call's error. */
static int read_stats(redisContext *rc, const rconn_t *r, const char *crawl, frontier_stats_t *s,
                      frontier_worker_info_t **w, size_t *nw, bloom_view_t *bv)
{
    *w = NULL;
    *nw = 0;
    int err = frontier_stats_routed(rc, r, crawl, s); /* every shard's master */
    if (err == 0)
        err = frontier_workers(rc, crawl, w, nw);
    if (err == 0)
        err = read_bloom(rc, crawl, s, bv); /* shard 0's filter: every shard's geometry */
    return err;
}

static int print_stats(redisContext *rc, const rconn_t *r, const char *crawl, int json)
{
    frontier_stats_t s;
    frontier_worker_info_t *w = NULL;
    size_t nw = 0;
    bloom_view_t bv;
    int err = read_stats(rc, r, crawl, &s, &w, &nw, &bv);
    if (err < 0) {
        fprintf(stderr, "crawler stats: %s\n", crawl_strerror(err));
        free(w);
        return -1;
    }
    static int said; /* once, not at every --watch reading */
    if (!bv.have && !s.enqueued && !s.claimed && !s.fetched && !nw && !said++)
        fprintf(stderr,
                "crawler stats: crawl '%s' has no keys in this Redis (not started yet, reset, or "
                "another --crawl name)\n",
                crawl);
    if (json)
        print_json(stdout, crawl, &s, w, nw, &bv);
    else
        print_text(stdout, crawl, &s, w, nw, &bv);
    fflush(stdout);
    free(w);
    return 0;
}

static volatile sig_atomic_t stop_watch;
static void on_signal(int sig)
{
    (void)sig;
    stop_watch = 1;
}

static int stats_watch(redisContext *rc, const rconn_t *r, const char *crawl, int json,
                       double every, uint64_t count)
{
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int status = CLI_EXIT_OK;
    for (uint64_t i = 0; !stop_watch && (count == 0 || i < count); i++) {
        if (i && !json)
            printf("\n");
        if (print_stats(rc, r, crawl, json) < 0) {
            status = CLI_EXIT_ERROR;
            break;
        }
        if (count && i + 1 == count)
            break;
        for (double slept = 0; slept < every && !stop_watch; slept += 0.05) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return status;
}

/* --serve: what the server's thread reads the crawl with. */
typedef struct serve {
    const rconn_t *r;
    redisContext *rc; /* the server thread's; NULL: connect at the next scrape */
    const char *crawl;
    int was_up; /* the last scrape's reading worked (a change is said on stderr) */
} serve_t;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One reading of the crawl on sv's connection (made if there is none): 0,
 * or < 0 with the connection dropped and err set. */
static int serve_read(serve_t *sv, frontier_stats_t *s, frontier_worker_info_t **w, size_t *nw,
                      bloom_view_t *bv, char *err, size_t len)
{
    if (sv->rc && sv->rc->err) {
        redisFree(sv->rc);
        sv->rc = NULL;
    }
    if (!sv->rc)
        sv->rc = rconn_connect(sv->r, err, len);
    int rc = sv->rc ? read_stats(sv->rc, sv->r, sv->crawl, s, w, nw, bv) : CRAWL_EREDIS;
    if (rc < 0 && sv->rc) {
        snprintf(err, len, "%s", sv->rc->err ? sv->rc->errstr : crawl_strerror(rc));
        redisFree(sv->rc);
        sv->rc = NULL;
    }
    return rc;
}

/* metrics_server_start's render: one reading, or crawler_redis_up 0.  A
 * connection that was dropped since the last scrape (a Redis `timeout`, a
 * proxy's idle timer, CLIENT KILL) is made again at once and read again, so
 * only a Redis that cannot be read now gives 0. */
static int serve_render(void *ud, metrics_text_t *t)
{
    serve_t *sv = ud;
    char err[256] = "";
    double t0 = mono_s();
    frontier_stats_t s;
    frontier_worker_info_t *w = NULL;
    size_t nw = 0;
    bloom_view_t bv = {0};
    int had = sv->rc != NULL && !sv->rc->err;
    int rc = serve_read(sv, &s, &w, &nw, &bv, err, sizeof err);
    if (rc < 0 && had) {
        free(w);
        w = NULL;
        nw = 0;
        bv = (bloom_view_t){0};
        rc = serve_read(sv, &s, &w, &nw, &bv, err, sizeof err);
    }
    if ((rc == 0) != sv->was_up)
        fprintf(stderr,
                rc == 0 ? "crawler stats: Redis answers again\n"
                        : "crawler stats: cannot read the crawl from Redis: %s\n",
                err);
    sv->was_up = rc == 0;
    metrics_crawl_view_t v = {.crawl = sv->crawl,
                              .redis_up = rc == 0,
                              .s = &s,
                              .w = w,
                              .nw = nw,
                              .bloom = bv.have ? &bv.fill : NULL,
                              .read_s = mono_s() - t0};
    metrics_crawl_render(&v, t);
    free(w);
    return 200;
}

/* Serves the crawl's metrics at addr until SIGINT/SIGTERM (exit 0); a
 * server that cannot listen is a usage error. */
static int stats_serve(const rconn_t *r, redisContext *rc, const char *crawl, const char *addr)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* taken by sigwait below */
    serve_t sv = {.r = r, .rc = rc, .crawl = crawl, .was_up = rc != NULL};
    char err[512];
    metrics_server_t *srv = metrics_server_start(addr, serve_render, &sv, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "crawler stats: --serve: %s\n", err);
        if (rc)
            redisFree(rc);
        return CLI_EXIT_USAGE;
    }
    fprintf(stderr, "crawler stats: crawl '%s' metrics at http://%s/metrics\n", crawl, addr);
    int sig = 0;
    while (sigwait(&set, &sig) != 0 || (sig != SIGINT && sig != SIGTERM))
        ;
    metrics_server_stop(srv); /* its thread is done with sv.rc */
    if (sv.rc)
        redisFree(sv.rc);
    return CLI_EXIT_OK;
}

#define STATS_DEFAULT_WATCH_S 2 /* seconds between two readings */

typedef struct stats_opts {
    int json;
    int watch;    /* --watch given */
    double every; /* --watch SECS */
    uint64_t count;
    const char *serve; /* --serve ADDR:PORT */
    common_t co;
} stats_opts_t;

static const cli_opt_t STATS_OPTS[] = {
    {CLI_OPT_FLAG(stats_opts_t, "json", json, "one JSON object per reading")},
    {CLI_OPT_DOUBLE(stats_opts_t, "watch", "[SECS]", every, 0.01, 86400, STATS_DEFAULT_WATCH_S,
                    "print again every SECS seconds until interrupted"),
     .optional = 1, .given = CLI_GIVEN(stats_opts_t, watch)},
    {CLI_OPT_U64(stats_opts_t, "count", "N", count, 0, UINT64_MAX, 0,
                 "with --watch: stop after N readings (0: no limit)")},
    {CLI_OPT_STRING(stats_opts_t, "serve", "ADDR:PORT", serve, NULL,
                    "serve the crawl's state at http://ADDR:PORT/metrics (Prometheus),\n"
                    "read from Redis at each scrape, until SIGINT/SIGTERM"),
     .check = metrics_check_addr, .dflt_doc = "off"},
    COMMON_OPTS(stats_opts_t, FRONTIER_DEFAULT_CRAWL, NULL)};
static const cli_cmd_t STATS = {
    .name = "stats",
    .usage = "usage: crawler stats [OPTIONS]\n"
             "Prints a crawl's counters, queue sizes, error kinds and workers from Redis.\n\n"
             "options:\n",
    .opts = STATS_OPTS,
    .nopts = COUNT(STATS_OPTS),
};

int cmd_stats(int argc, char **argv)
{
    stats_opts_t o = {0};
    int first, st = parse(&STATS, &o, argc, argv, &first);
    if (st >= 0)
        return st;
    if (first < argc) {
        fprintf(stderr, "crawler stats: unexpected argument '%s'\n", argv[first]);
        cli_see_help("stats");
        return CLI_EXIT_USAGE;
    }
    if (o.serve && (o.watch || o.json)) {
        fprintf(stderr, "crawler stats: --serve does not go with --watch or --json\n");
        return CLI_EXIT_USAGE;
    }
    redisContext *rc;
    if (o.serve) { /* a Redis down now is crawler_redis_up 0, and a busy address still exit 2 */
        rconn_t *sr = open_redis_as("stats", &o.co, &rc, 1);
        if (!sr)
            return CLI_EXIT_ERROR;
        int served = stats_serve(sr, rc, o.co.crawl, o.serve); /* it frees rc */
        rconn_close(sr);
        return served;
    }
    rconn_t *r = open_redis("stats", &o.co, &rc);
    if (!r)
        return CLI_EXIT_ERROR;
    int status = o.watch
                     ? stats_watch(rc, r, o.co.crawl, o.json, o.every, o.count)
                     : (print_stats(rc, r, o.co.crawl, o.json) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK);
    close_redis(r, rc);
    return status;
}

/* ---- reset --------------------------------------------------------------- */

typedef struct reset_opts {
    int yes;
    common_t co;
} reset_opts_t;

static const cli_opt_t RESET_OPTS[] = {
    {CLI_OPT_FLAG(reset_opts_t, "yes", yes, "required: confirm the deletion")},
    COMMON_OPTS(reset_opts_t, NULL, "none, required here")};
static const cli_cmd_t RESET = {
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
    int first, st = parse(&RESET, &o, argc, argv, &first);
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
