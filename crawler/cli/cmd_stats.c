/*
 * cmd_stats.c -- `crawler stats`: a crawl's counters, queues, visited set,
 * control state and workers, from Redis.
 *
 * DESIGN: prints once (text or --json), or every N seconds with --watch
 * until SIGINT/SIGTERM (or --count readings), or with --serve ADDR:PORT
 * answers Prometheus scrapes of it (read from Redis at each scrape, on the
 * server's thread, through a connection of that thread's own, made again
 * after a failure) until SIGINT/SIGTERM.  Keeps nothing between readings.
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
#include "metrics_crawl.h"
#include "metrics_http.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- stats --------------------------------------------------------------- */

#define json_str cli_json_str

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
    /* a filter that grows (bloom.h, "layers"), shard 0's: */
    double growth;               /* 0: fixed */
    uint32_t layers;             /* published */
    uint64_t newest, newest_cap; /* the newest layer's items and capacity */
    double whole_fp;             /* the rate of all layers now */
    double fp_target;            /* the rate it is held under */
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
    if (bv->growth > 1.0) {
        fprintf(o,
                ", \"bloom\": {\"added\": %llu, \"capacity\": %llu, \"growth\": %g, "
                "\"layers\": %u, \"newest_items\": %llu, \"newest_capacity\": %llu, "
                "\"fp_rate\": %.6g, \"fp_target\": %.6g, \"warn\": false, \"full\": false, "
                "\"shards\": [",
                U(f->added), U(bv->capacity), bv->growth, bv->layers, U(bv->newest),
                U(bv->newest_cap), bv->whole_fp, bv->fp_target);
        for (unsigned i = 0; i < bv->shards; i++)
            fprintf(o, "%s{\"added\": %llu}", i ? ", " : "", U(bv->added[i]));
        fprintf(o, "]}");
        return;
    }
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
    if (bv->growth > 1.0) {
        fprintf(o,
                "  bloom: %llu URLs added; grows x%g from %llu: %u layers%s, the newest holds "
                "%llu of %llu (%.1f%%); false-positive rate now %.3g (held under %.3g)\n",
                U(f->added), bv->growth, U(bv->capacity), bv->layers,
                bv->shards > 1 ? " (shard 0)" : "", U(bv->newest), U(bv->newest_cap),
                bv->newest_cap ? 100.0 * (double)bv->newest / (double)bv->newest_cap : 0.0,
                bv->whole_fp, bv->fp_target);
        if (bv->shards > 1)
            fprintf(o, "  bloom by shard (URLs added):");
        for (unsigned i = 0; bv->shards > 1 && i < bv->shards; i++)
            fprintf(o, "%s%4u: %9llu", i % 4 ? "  " : "\n  ", i, U(bv->added[i]));
        if (bv->shards > 1)
            fputc('\n', o);
        return;
    }
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
                       const frontier_worker_info_t *w, size_t nw, const bloom_view_t *bv,
                       char *const *kv, size_t nkv)
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
            "\"blocked\": %llu, \"blocked_links\": %llu, \"domain_links\": %llu, "
            "\"status\": {\"2xx\": %llu, "
            "\"3xx\": %llu, \"4xx\": %llu, \"5xx\": %llu, \"other\": %llu}, \"errors\": %llu, "
            "\"error_kinds\": {",
            s->shards ? s->shards : 1, U(s->now_ms), U(s->queued), U(s->delayed), U(s->in_flight),
            U(s->hosts), U(s->ready_hosts), U(s->dead), U(s->enqueued), U(s->seeds), U(s->claimed),
            U(s->fetched), U(s->bytes), U(s->retried), U(s->reclaimed), U(s->released),
            U(s->new_links), U(s->seen_links), U(s->skipped_links), U(s->capped_pages),
            U(s->blocked), U(s->blocked_links), U(s->domain_links), U(s->status_2xx),
            U(s->status_3xx), U(s->status_4xx), U(s->status_5xx), U(s->status_other), U(s->errors));
    for (size_t i = 0; i < s->nkinds; i++) {
        fprintf(o, "%s", i ? ", " : "");
        json_str(o, s->kinds[i].kind);
        fprintf(o, ": %llu", U(s->kinds[i].count));
    }
    fprintf(o, "}");
    json_bloom(o, bv);
    json_control(o, &s->control);
    fprintf(o, ", \"blocks\": %llu, \"paced_hosts\": %llu, \"slowest_hosts\": [", U(s->blocks),
            U(s->paced_hosts));
    for (size_t i = 0; i < s->nslow; i++) {
        fprintf(o, "%s{\"host\": ", i ? ", " : "");
        json_str(o, s->slow[i].host);
        fprintf(o, ", \"delay_ms\": %llu}", U(s->slow[i].delay_ms));
    }
    fprintf(o, "]");
    cli_settings_json(o, kv, nkv);
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
                       const frontier_worker_info_t *w, size_t nw, const bloom_view_t *bv,
                       char *const *kv, size_t nkv)
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
    if (s->domain_links)
        fprintf(o, "  links over a domain's budget (of skipped): %llu\n", U(s->domain_links));
    if (s->blocks || s->blocked || s->blocked_links)
        fprintf(o,
                "  blocks (crawler limits lists them): %llu; queued URLs dropped %llu  links "
                "refused %llu\n",
                U(s->blocks), U(s->blocked), U(s->blocked_links));
    fprintf(o, "  status: 2xx %llu  3xx %llu  4xx %llu  5xx %llu  other %llu\n", U(s->status_2xx),
            U(s->status_3xx), U(s->status_4xx), U(s->status_5xx), U(s->status_other));
    text_bloom(o, bv);
    text_control(o, &s->control);
    if (s->paced_hosts) {
        fprintf(o, "  hosts paced above their delay (slow, or 429/503): %llu; slowest:",
                U(s->paced_hosts));
        for (size_t i = 0; i < s->nslow; i++)
            fprintf(o, "%s %s %.1f s", i ? "," : "", s->slow[i].host,
                    (double)s->slow[i].delay_ms / 1000.0);
        fprintf(o, "\n");
    }
    cli_settings_text(o, kv, nkv);
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
    if ((bv->growth = bloom_growth(b)) > 1.0) {
        uint64_t items[BLOOM_MAX_LAYERS];
        bv->layers = bloom_layer_items(b, items, BLOOM_MAX_LAYERS);
        bv->newest = items[bv->layers - 1];
        bv->newest_cap = bloom_newest_capacity(b);
        bv->whole_fp = bloom_layers_fp(b, items, bv->layers);
        bv->fp_target = bloom_fp_target(b);
        /* what the metrics read: the newest layer's fill, the whole's rate,
         * never full (no capacity to pass) */
        bv->fill.full = 0;
        bv->fill.fill = bv->newest_cap ? (double)bv->newest / (double)bv->newest_cap : 0.0;
        bv->fill.fp_rate = bv->whole_fp;
        bv->fill.fill = 0;
    }
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
    char **kv = NULL;
    size_t nkv = 0;
    frontier_read_settings(rc, crawl, &kv, &nkv); /* (none: a crawl from an older build) */
    if (json)
        print_json(stdout, crawl, &s, w, nw, &bv, kv, nkv);
    else
        print_text(stdout, crawl, &s, w, nw, &bv, kv, nkv);
    fflush(stdout);
    for (size_t i = 0; i < nkv; i++)
        free(kv[i]);
    free(kv);
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
    cli_common_t co;
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
    CLI_COMMON_OPTS(stats_opts_t, FRONTIER_DEFAULT_CRAWL, NULL)};
const cli_cmd_t cli_table_stats = {
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
    int first, st = cli_parse_cmd(&cli_table_stats, &o, argc, argv, &first);
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
        rconn_t *sr = cli_open_crawl("stats", &o.co, &rc, 1);
        if (!sr)
            return CLI_EXIT_ERROR;
        int served = stats_serve(sr, rc, o.co.crawl, o.serve); /* it frees rc */
        rconn_close(sr);
        return served;
    }
    rconn_t *r = cli_open_crawl("stats", &o.co, &rc, 0);
    if (!r)
        return CLI_EXIT_ERROR;
    int status = o.watch
                     ? stats_watch(rc, r, o.co.crawl, o.json, o.every, o.count)
                     : (print_stats(rc, r, o.co.crawl, o.json) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK);
    cli_close_crawl(r, rc);
    return status;
}
