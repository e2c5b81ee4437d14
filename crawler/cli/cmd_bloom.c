/*
 * cmd_bloom.c -- `crawler bloom add|check|info`: operators dedupe URL lists
 * against a Bloom filter in Redis and inspect a crawl's visited set.
 *
 * DESIGN: declares its options once, in OPTS[] (cli.h: parsing, checks,
 * defaults and --help are made from it), opens Redis (cli_redis_open:
 * --redis, $REDIS_URL or the embedded server in --data-dir) and the filter
 * (--name NAME, or --crawl NAME for the crawl's visited set,
 * frontier_bloom_name), then:
 *   add    reads URLs (cli_read_urls: normalized by parser_url_normalize,
 *          invalid lines reported with their number and skipped), collects
 *          --batch of them, test-and-adds each batch's visited-set keys
 *          (parser_url_key, as the frontier keys a crawl's visited set) in
 *          one round trip (bloom_add_many) and prints "new URL" / "seen URL"
 *          in input order;
 *   check  the same with bloom_contains_many ("yes URL" / "no URL"); writes
 *          nothing, and fails clearly if there is no such filter;
 *   info   bloom_info as text or --json.
 * add creates the filter if absent (--capacity/--fp-rate, else the
 * defaults); given explicitly, they must match an existing filter.
 * Keeps no state; exit statuses are CLI_EXIT_*.
 */
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "cli.h"
#include "frontier.h"
#include "keys.h" /* FRONTIER_KEY_PREFIX_HELP */
#include "parser.h"

#define BLOOM_CLI_BATCH 1000
#define BLOOM_CLI_MAX_BATCH 100000
#define STR_(x) #x
#define STR(x) STR_(x)

enum { ACT_ADD, ACT_CHECK, ACT_INFO };

typedef struct bopts {
    int action;
    const char *name;
    const char *crawl;
    rconn_specs_t redis;
    const char *data_dir;
    bloom_params_t params; /* capacity/fp_rate 0 unless given */
    int geometry_given;    /* --capacity or --fp-rate given */
    uint32_t batch;
    int json;
} bopts_t;

/* A batch of normalized URLs waiting for their round trip. */
typedef struct batch {
    bloom_t *b;
    int add;
    char **urls; /* as printed */
    char **keys; /* as tested: parser_url_key of each */
    size_t n, cap;
    uint8_t *res;
    int failed;
    unsigned long fresh, total;
} batch_t;

static const char *const ACTIONS[] = {
    [ACT_ADD] = "add", [ACT_CHECK] = "check", [ACT_INFO] = "info"};

static const cli_opt_t OPTS[] = {
    {CLI_OPT_STRING(bopts_t, "name", "NAME", name, NULL, "filter name (required unless --crawl)")},
    {CLI_OPT_STRING(bopts_t, "crawl", "NAME", crawl, NULL,
                    "use crawl NAME's visited set, " FRONTIER_KEY_PREFIX_HELP "seen"),
     .check = cli_check_crawl_name},
    {CLI_OPT_REDIS(bopts_t, redis)},
    {CLI_OPT_DATA_DIR(bopts_t, data_dir)},
    {CLI_OPT_U64(bopts_t, "capacity", "N", params.capacity, 1, BLOOM_MAX_CAPACITY,
                 BLOOM_DEFAULT_CAPACITY,
                 "add: expected items n when creating, at most 1e10; if given, an\n"
                 "existing filter must have the geometry it implies; refused (exit 2)\n"
                 "if the filter does not fit in Redis' free memory (maxmemory)"),
     .given = CLI_GIVEN(bopts_t, geometry_given)},
    {CLI_OPT_DOUBLE(bopts_t, "fp-rate", "P", params.fp_rate, 1e-12, 0.5, BLOOM_DEFAULT_FP_RATE,
                    "add: false-positive rate p at n items when creating, 1e-12..0.5;\n"
                    "same rule"),
     .given = CLI_GIVEN(bopts_t, geometry_given)},
    {CLI_OPT_DOUBLE(bopts_t, "growth", "G", params.growth, 0, BLOOM_MAX_GROWTH, 0,
                    "add: when creating, a filter that grows by layers each G times the\n"
                    "last one's capacity (as a crawl's visited set, whose default is 2);\n"
                    "0: a fixed filter of --capacity"),
     .given = CLI_GIVEN(bopts_t, geometry_given)},
    {CLI_OPT_U32(bopts_t, "batch", "N", batch, 1, BLOOM_CLI_MAX_BATCH, BLOOM_CLI_BATCH,
                 "URLs per Redis round trip, 1.." STR(BLOOM_CLI_MAX_BATCH))},
    {CLI_OPT_FLAG(bopts_t, "json", json, "info: print one JSON object")},
    {CLI_OPT_HELP("this help")},
};

const cli_cmd_t cli_table_bloom = {
    .name = "bloom",
    .usage = "usage: crawler bloom add|check|info (--name NAME | --crawl NAME) [OPTIONS]\n"
             "\n"
             "  add    read URLs from stdin (one a line, '#' comments and blank lines ignored),\n"
             "         normalize each as the crawler does, test-and-add it, print `new URL` or\n"
             "         `seen URL` in input order; creates the filter if it does not exist\n"
             "  check  same input, print `yes URL` or `no URL`; changes nothing\n"
             "  info   geometry, bits set, fill, estimated items and false-positive rate\n"
             "         (of a filter that grows: each layer's items, capacity and rate),\n"
             "         Redis memory\n"
             "Invalid lines are reported on stderr as <stdin>:LINE and skipped; the exit\n"
             "status is then 3.  Keys: NAME:meta (geometry hash) and NAME:b:<i> (bit blocks).\n"
             "\n"
             "options:\n",
    .opts = OPTS,
    .nopts = sizeof OPTS / sizeof OPTS[0],
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "crawler bloom: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    cli_see_help("bloom");
    return CLI_EXIT_USAGE;
}

/* Parses argv (argv[0] "bloom", argv[1] the action).  Returns -1 to go on,
 * else the exit status (help printed, or a usage error). */
static int parse(int argc, char **argv, bopts_t *o)
{
    *o = (bopts_t){.action = -1};
    cli_defaults(&cli_table_bloom, o);
    for (int i = 1; i < argc; i++) /* --help anywhere wins */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            cli_help(&cli_table_bloom, stdout);
            return CLI_EXIT_OK;
        }
    if (argc < 2)
        return usage_error("expected add, check or info%s", "");
    for (int i = 0; i < 3; i++)
        if (!strcmp(argv[1], ACTIONS[i]))
            o->action = i;
    if (o->action < 0)
        return usage_error("unknown action '%s' (expected add, check or info)", argv[1]);
    int first, p = cli_parse(&cli_table_bloom, o, argc - 1, argv + 1, &first);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (first < argc - 1)
        return usage_error("unexpected argument '%s'", argv[first + 1]);
    if (!o->geometry_given)
        o->params = (bloom_params_t){0}; /* "not given" (bloom_params_t): use what exists */
    if (!o->name == !o->crawl)
        return usage_error("give exactly one of --name NAME and --crawl NAME%s", "");
    if (o->name && (!*o->name || strlen(o->name) > BLOOM_MAX_NAME))
        return usage_error("bad filter name '%s' (1 to 512 bytes)", o->name);
    if (o->action != ACT_ADD && o->geometry_given)
        return usage_error("--capacity and --fp-rate only apply to add%s", "");
    if (o->action != ACT_INFO && o->json)
        return usage_error("--json only applies to info%s", "");
    return -1;
}

/* ---- add / check ------------------------------------------------------------ */

static int flush(batch_t *bt)
{
    if (bt->n == 0)
        return 0;
    const char *const *keys = (const char *const *)bt->keys;
    int rc = bt->add ? bloom_add_many(bt->b, keys, NULL, bt->n, bt->res)
                     : bloom_contains_many(bt->b, keys, NULL, bt->n, bt->res);
    if (rc < 0) {
        const char *m = bloom_errmsg(bt->b);
        fprintf(stderr, "crawler bloom: %s\n", *m ? m : crawl_strerror(rc));
        bt->failed = 1;
    }
    for (size_t i = 0; i < bt->n; i++) {
        if (rc == 0) {
            const char *word =
                bt->add ? (bt->res[i] ? "new " : "seen ") : (bt->res[i] ? "yes " : "no ");
            fputs(word, stdout);
            fputs(bt->urls[i], stdout);
            fputc('\n', stdout);
            bt->fresh += bt->res[i];
            bt->total++;
        }
        free(bt->urls[i]);
        free(bt->keys[i]);
    }
    bt->n = 0;
    return rc < 0 ? -1 : 0;
}

static int take_url(void *ud, const char *url, const char *line, unsigned long lineno)
{
    (void)line;
    (void)lineno;
    batch_t *bt = ud;
    int krc = parser_url_key(url, &bt->keys[bt->n]);
    if (krc < 0 || !(bt->urls[bt->n] = strdup(url))) {
        fprintf(stderr, "crawler bloom: %s\n", crawl_strerror(krc < 0 ? krc : CRAWL_ENOMEM));
        free(krc < 0 ? NULL : bt->keys[bt->n]);
        bt->failed = 1;
        return -1;
    }
    return ++bt->n == bt->cap ? flush(bt) : 0;
}

static int run_lines(bloom_t *b, const bopts_t *o)
{
    batch_t bt = {.b = b, .add = o->action == ACT_ADD, .cap = o->batch};
    bt.urls = calloc(bt.cap, sizeof *bt.urls);
    bt.keys = calloc(bt.cap, sizeof *bt.keys);
    bt.res = malloc(bt.cap);
    long bad = -1;
    if (bt.urls && bt.keys && bt.res) {
        bad = cli_read_urls(stdin, "<stdin>", 0, take_url, &bt);
        if (bad >= 0)
            flush(&bt);
    } else {
        fprintf(stderr, "crawler bloom: out of memory\n");
    }
    for (size_t i = 0; i < bt.n; i++)
        free(bt.urls[i]), free(bt.keys[i]);
    free(bt.urls);
    free(bt.keys);
    free(bt.res);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "crawler bloom: error writing standard output\n");
        return CLI_EXIT_ERROR;
    }
    if (bad < 0 || bt.failed)
        return CLI_EXIT_ERROR;
    return bad > 0 ? CLI_EXIT_INVALID : CLI_EXIT_OK;
}

/* ---- info ---------------------------------------------------------------------- */

static void json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

#define U(x) ((unsigned long long)(x))

static void info_json(const bloom_t *b, const bloom_info_t *in)
{
    const bloom_geometry_t *g = &in->geo;
    printf("{\"name\": ");
    json_str(bloom_name(b));
    printf(", \"hash\": \"%s\", \"version\": %u, \"m\": %llu, \"k\": %u, \"blocks\": %u, "
           "\"block_bits\": %llu, \"seed\": %llu, \"capacity\": %llu, \"fp_rate\": %.17g, "
           "\"bits_set\": %llu, \"fill\": %.17g, ",
           BLOOM_HASH_NAME, g->version, U(g->m), g->k, g->blocks, U(g->block_bits), U(g->seed),
           U(in->capacity), in->fp_rate, U(in->bits_set), in->fill);
    if (isfinite(in->est_items))
        printf("\"est_items\": %.17g, ", in->est_items);
    else
        printf("\"est_items\": null, ");
    printf("\"est_fp_rate\": %.17g, \"redis_bytes\": %llu", in->est_fp_rate, U(in->redis_bytes));
    if (in->growth > 1.0) { /* a filter that grows: its layers */
        printf(", \"growth\": %.17g, \"fp_target\": %.17g, \"whole_fp_rate\": %.17g, "
               "\"layers\": [",
               in->growth, in->fp_target, in->whole_fp);
        for (uint32_t j = 0; j < in->layers; j++)
            printf("%s{\"capacity\": %llu, \"items\": %llu, \"fp_rate\": %.17g}", j ? ", " : "",
                   U(in->layer_capacity[j]), U(in->layer_items[j]), in->layer_fp[j]);
        printf("]");
    }
    printf("}\n");
}

static void info_text(const bloom_t *b, const bloom_info_t *in, const char *where)
{
    const bloom_geometry_t *g = &in->geo;
    printf("filter       %s (%s)\n", bloom_name(b), where);
    printf("created for  n = %llu items at p = %g\n", U(in->capacity), in->fp_rate);
    printf("bits (m)     %llu = %u block(s) of %llu bits (%.1f MiB)\n", U(g->m), g->blocks,
           U(g->block_bits), (double)g->m / 8 / 1048576);
    printf("hashes (k)   %u (%s, seed %llu, format %u)\n", g->k, BLOOM_HASH_NAME, U(g->seed),
           g->version);
    printf("bits set     %llu (fill %.6f)\n", U(in->bits_set), in->fill);
    if (isfinite(in->est_items))
        printf("est. items   %.0f\n", in->est_items);
    else
        printf("est. items   unknown (every bit is set)\n");
    printf("est. fp rate %.3g\n", in->est_fp_rate);
    if (in->growth <= 1.0) {
        printf("Redis memory %llu bytes (%.4f x m/8)\n", U(in->redis_bytes),
               (double)in->redis_bytes / ((double)g->m / 8));
        return;
    }
    printf("grows        x%g a layer, its rate held under %g; %u layer(s), the lines above "
           "are layer 0's\n",
           in->growth, in->fp_target, in->layers);
    for (uint32_t j = 0; j < in->layers; j++)
        printf("  layer %-3u  %llu of %llu items (%5.1f%%), fp rate %.3g\n", j,
               U(in->layer_items[j]), U(in->layer_capacity[j]),
               in->layer_capacity[j]
                   ? 100.0 * (double)in->layer_items[j] / (double)in->layer_capacity[j]
                   : 0.0,
               in->layer_fp[j]);
    printf("whole fp     %.3g (1 - prod(1 - layer rates))\n", in->whole_fp);
    printf("Redis memory %llu bytes, every layer\n", U(in->redis_bytes));
}

static int run_info(bloom_t *b, const bopts_t *o, const char *where)
{
    bloom_info_t in;
    int rc = bloom_info(b, &in);
    if (rc < 0) {
        const char *m = bloom_errmsg(b);
        fprintf(stderr, "crawler bloom: %s\n", *m ? m : crawl_strerror(rc));
        return CLI_EXIT_ERROR;
    }
    if (o->json)
        info_json(b, &in);
    else
        info_text(b, &in, where);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

/* ---- main ------------------------------------------------------------------------ */

/* add without --capacity/--fp-rate: use what exists, else create with the
 * defaults; with them: create, or insist on that geometry. */
static bloom_t *open_filter(redisContext *rc, const char *name, const bopts_t *o, const char *where,
                            int *errp)
{
    char msg[512] = "";
    int err = 0;
    bloom_params_t p = o->params;
    int given = p.capacity || p.fp_rate != 0.0;
    bloom_t *b = bloom_open(rc, name, given ? &p : NULL, &err, msg, sizeof msg);
    if (!b && err == CRAWL_ENOTFOUND && o->action == ACT_ADD) {
        p.capacity = BLOOM_DEFAULT_CAPACITY;
        p.fp_rate = BLOOM_DEFAULT_FP_RATE;
        b = bloom_open(rc, name, &p, &err, msg, sizeof msg);
    }
    if (!b && err == CRAWL_ENOTFOUND)
        fprintf(stderr,
                "crawler bloom: no Bloom filter '%s' in %s (create one with "
                "`crawler bloom add`)\n",
                name, where);
    else if (!b)
        fprintf(stderr, "crawler bloom: %s\n", msg[0] ? msg : crawl_strerror(err));
    *errp = err;
    return b;
}

int cmd_bloom(int argc, char **argv)
{
    bopts_t o;
    int st = parse(argc, argv, &o);
    if (st >= 0)
        return st;
    char name[BLOOM_MAX_NAME + 1];
    if (o.crawl && frontier_bloom_name(o.crawl, name, sizeof name) < 0)
        return usage_error("bad crawl name '%s'", o.crawl);
    if (!o.crawl)
        snprintf(name, sizeof name, "%s", o.name);
    rconn_t *r = cli_redis_open("bloom", &o.redis, RCONN_EMBED_JOIN, o.data_dir, name);
    if (!r)
        return CLI_EXIT_ERROR;
    const char *lb = strchr(name, '{'), *rb = lb ? strchr(lb + 1, '}') : NULL;
    if (rconn_is_cluster(r) && (!rb || rb == lb + 1)) { /* its blocks would span slots */
        rconn_close(r);
        return usage_error("on a Redis Cluster a filter's name needs a hash tag, so that its "
                           "keys share one slot: --name '{%s}'",
                           name);
    }
    redisContext *rc = cli_redis_connect("bloom", r);
    int err = 0;
    bloom_t *b = rc ? open_filter(rc, name, &o, rconn_describe(r), &err) : NULL;
    /* a filter too large for the Redis is a bad --capacity/--fp-rate */
    st = err == CRAWL_ENOROOM ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    if (b && o.action == ACT_INFO)
        st = run_info(b, &o, rconn_describe(r));
    else if (b)
        st = run_lines(b, &o);
    bloom_close(b);
    if (rc)
        redisFree(rc);
    rconn_close(r);
    return st;
}
