/*
 * bench_bloom.c -- the Bloom filter's batched test-and-add against the
 * alternatives, side by side in one run on one local redis-server that this
 * program starts (and stops) itself.
 *
 * DESIGN
 * Workload: N distinct URLs (~75 bytes, generated), k = 7 (p = 0.01 at N).
 * Each contender test-and-adds all N URLs into fresh keys, pipelining
 * --batch items per round trip where it pipelines at all:
 *   filter   bloom_add_many (hash, local cache, one BITFIELD SET x7 per item)
 *   (a)      one SETBIT round trip per bit (the seeds' way), first --slow-items
 *   (b)      pipelined SETBIT, 7 commands per item, same bit positions
 *   (c)      raw pipelined BITFIELD SET x7 with precomputed positions and
 *            preformatted commands: no hashing, no formatting (the ceiling)
 *   (d)      pipelined SADD of the whole URL into one Redis set
 * The machine is shared and noisy, so the contenders are interleaved batch
 * by batch (each batch: every contender in turn, each timed on its own) and
 * the whole is repeated --reps times; the median rate counts.  Memory: MEMORY USAGE (SAMPLES 0) of
 * the filter's keys and of the set, per URL, and the filter's against m/8.
 * Every loop is bounded by its item count; (a) also by --slow-seconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "fixtures.h"

#define MAX_REPS 9

typedef struct cfg {
    size_t items, batch, slow_items, reps;
    double slow_seconds;
    const char *out;
} cfg_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_bloom: %s: %s\n", what, why);
    exit(1);
}

/* ---- a private redis-server (the test fixture: tests/fixtures.h) ------------ */

static fx_redis_t *redis;

static void stop_redis(void)
{
    fx_redis_stop(redis);
    redis = NULL;
}

static redisReply *cmd_ok(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    if (!r || r->type == REDIS_REPLY_ERROR)
        die(fmt, r ? r->str : c->errstr);
    return r;
}

/* Reads n replies; returns how many said "new" according to kind. */
enum { R_BITFIELD, R_SADD };
static size_t read_replies(redisContext *c, size_t n, int kind)
{
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            die("reply", c->errstr);
        if (kind == R_BITFIELD) {
            int any0 = 0;
            for (size_t j = 0; j < r->elements; j++)
                any0 |= r->element[j]->integer == 0;
            fresh += (size_t)any0;
        } else if (r->type == REDIS_REPLY_INTEGER) {
            fresh += kind == R_SADD ? (size_t)r->integer : r->integer == 0;
        } else {
            die("reply", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected type");
        }
        freeReplyObject(r);
    }
    return fresh;
}

/* ---- workload ----------------------------------------------------------------------- */

typedef struct work {
    size_t n;
    char **url;
    size_t *len;
    char *mem;
    bloom_probe_t *probe; /* each URL's bits in the filter's geometry */
    bloom_geometry_t geo;
} work_t;

static void make_work(work_t *w, size_t n)
{
    size_t stride = 96;
    w->n = n;
    w->url = malloc(n * sizeof *w->url);
    w->len = malloc(n * sizeof *w->len);
    w->mem = malloc(n * stride);
    w->probe = malloc(n * sizeof *w->probe);
    if (!w->url || !w->len || !w->mem || !w->probe)
        die("workload", "out of memory");
    for (size_t i = 0; i < n; i++) {
        w->url[i] = w->mem + i * stride;
        w->len[i] = (size_t)snprintf(w->url[i], stride,
                                     "https://www.site%zu.example.com/articles/2026/%zu/"
                                     "story-%zu.html",
                                     i * 7919 % 100003, i % 12 + 1, i);
    }
}

static void free_work(work_t *w)
{
    free(w->url);
    free(w->len);
    free(w->mem);
    free(w->probe);
}

/* (Re)creates block keys PREFIX:b:<i> of the filter's geometry, zeroed. */
static void make_blocks(redisContext *c, const char *prefix, const bloom_geometry_t *g)
{
    char key[64], last[32];
    snprintf(last, sizeof last, "%llu", (unsigned long long)(g->block_bits - 1));
    for (uint32_t i = 0; i < g->blocks; i++) {
        snprintf(key, sizeof key, "%s:b:%u", prefix, i);
        freeReplyObject(cmd_ok(c, "DEL %s", key));
        redisReply *r = redisCommand(c, "SETBIT %s %s 0", key, last);
        if (!r || r->type == REDIS_REPLY_ERROR)
            die("SETBIT", r ? r->str : c->errstr);
        freeReplyObject(r);
    }
}

/* ---- contenders ----------------------------------------------------------------------
 * Each does items [from, from + cnt) -- one batch -- and adds the number of
 * "new" answers to *fresh.  run_all times them batch by batch, in turn, so
 * all of them see the same machine load. */

typedef struct ctx {
    redisContext *c;
    const work_t *w;
    bloom_t *filter;
    uint8_t *res;
    char **pre; /* (c): preformatted commands of each batch */
    size_t *pre_len;
} ctx_t;

static bloom_t *fresh_filter(redisContext *c, size_t n)
{
    bloom_params_t p = {.capacity = n, .fp_rate = 0.01};
    char err[512];
    bloom_destroy(c, "bench");
    bloom_t *b = bloom_open(c, "bench", &p, NULL, err, sizeof err);
    if (!b)
        die("bloom_open", err);
    return b;
}

static void do_filter(ctx_t *x, size_t bi, size_t from, size_t cnt, size_t *fresh)
{
    (void)bi;
    int rc = bloom_add_many(x->filter, (const char *const *)x->w->url + from, x->w->len + from, cnt,
                            x->res);
    if (rc < 0)
        die("bloom_add_many", bloom_errmsg(x->filter));
    for (size_t j = 0; j < cnt; j++)
        *fresh += x->res[j];
}

/* (a): k round trips per item, SETBIT returning the old bit. */
static void do_roundtrips(ctx_t *x, size_t bi, size_t from, size_t cnt, size_t *fresh)
{
    (void)bi;
    for (size_t i = from; i < from + cnt; i++) {
        const bloom_probe_t *p = &x->w->probe[i];
        char key[64];
        snprintf(key, sizeof key, "rt:b:%u", p->block);
        int any0 = 0;
        for (uint32_t j = 0; j < p->k; j++) {
            redisReply *r =
                redisCommand(x->c, "SETBIT %s %llu 1", key, (unsigned long long)p->bit[j]);
            if (!r || r->type != REDIS_REPLY_INTEGER)
                die("SETBIT", r && r->type == REDIS_REPLY_ERROR ? r->str : x->c->errstr);
            any0 |= r->integer == 0;
            freeReplyObject(r);
        }
        *fresh += (size_t)any0;
    }
}

/* (b): the same SETBITs, pipelined; an item is new if any of its k old bits
 * was 0. */
static void do_setbit_pipe(ctx_t *x, size_t bi, size_t from, size_t cnt, size_t *fresh)
{
    (void)bi;
    for (size_t i = from; i < from + cnt; i++) {
        const bloom_probe_t *p = &x->w->probe[i];
        char key[64];
        snprintf(key, sizeof key, "sb:b:%u", p->block);
        for (uint32_t j = 0; j < p->k; j++)
            redisAppendCommand(x->c, "SETBIT %s %llu 1", key, (unsigned long long)p->bit[j]);
    }
    for (size_t i = 0; i < cnt; i++) {
        int any0 = 0;
        for (uint32_t j = 0; j < x->w->geo.k; j++) {
            redisReply *r;
            if (redisGetReply(x->c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER)
                die("SETBIT pipeline", x->c->errstr);
            any0 |= r->integer == 0;
            freeReplyObject(r);
        }
        *fresh += (size_t)any0;
    }
}

/* (c): the ceiling -- the filter's exact commands, preformatted before the
 * clock starts: only Redis and reply parsing are timed. */
static void do_raw_bitfield(ctx_t *x, size_t bi, size_t from, size_t cnt, size_t *fresh)
{
    (void)from;
    if (redisAppendFormattedCommand(x->c, x->pre[bi], x->pre_len[bi]) != REDIS_OK)
        die("append", x->c->errstr);
    *fresh += read_replies(x->c, cnt, R_BITFIELD);
}

/* (d): SADD of whole URLs, pipelined. */
static void do_sadd(ctx_t *x, size_t bi, size_t from, size_t cnt, size_t *fresh)
{
    (void)bi;
    for (size_t j = from; j < from + cnt; j++)
        redisAppendCommand(x->c, "SADD urlset %b", x->w->url[j], x->w->len[j]);
    *fresh += read_replies(x->c, cnt, R_SADD);
}

/* RESP of one BITFIELD SET x k for probe p on PREFIX:b:<block>, written at
 * out (cap bytes); returns the length. */
static size_t format_bitfield(char *out, size_t cap, const char *prefix, const bloom_probe_t *p)
{
    char key[64], off[32];
    int kl = snprintf(key, sizeof key, "%s:b:%u", prefix, p->block);
    int n = snprintf(out, cap, "*%u\r\n$8\r\nBITFIELD\r\n$%d\r\n%s\r\n", 2 + 4 * p->k, kl, key);
    for (uint32_t i = 0; i < p->k && n > 0 && (size_t)n < cap; i++) {
        int ol = snprintf(off, sizeof off, "%llu", (unsigned long long)p->bit[i]);
        n += snprintf(out + n, cap - (size_t)n, "$3\r\nSET\r\n$2\r\nu1\r\n$%d\r\n%s\r\n$1\r\n1\r\n",
                      ol, off);
    }
    if (n < 0 || (size_t)n >= cap)
        die("format", "command buffer too small");
    return (size_t)n;
}

static void preformat(ctx_t *x, size_t batch, size_t nbatches)
{
    const work_t *w = x->w;
    x->pre = calloc(nbatches, sizeof *x->pre);
    x->pre_len = calloc(nbatches, sizeof *x->pre_len);
    if (!x->pre || !x->pre_len)
        die("preformat", "out of memory");
    for (size_t bi = 0; bi < nbatches; bi++) {
        size_t from = bi * batch, cnt = w->n - from < batch ? w->n - from : batch;
        size_t cap = cnt * (64 + 48 * (size_t)BLOOM_MAX_K);
        if (!(x->pre[bi] = malloc(cap)))
            die("preformat", "out of memory");
        for (size_t j = from; j < from + cnt; j++)
            x->pre_len[bi] += format_bitfield(x->pre[bi] + x->pre_len[bi], cap - x->pre_len[bi],
                                              "raw", &w->probe[j]);
    }
}

/* ---- main ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void parse_args(int argc, char **argv, cfg_t *cf)
{
    *cf = (cfg_t){.items = 200000,
                  .batch = 1000,
                  .slow_items = 20000,
                  .reps = 5,
                  .slow_seconds = 10,
                  .out = NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        size_t *target = !strcmp(a, "--items")        ? &cf->items
                         : !strcmp(a, "--batch")      ? &cf->batch
                         : !strcmp(a, "--slow-items") ? &cf->slow_items
                         : !strcmp(a, "--reps")       ? &cf->reps
                                                      : NULL;
        if (target && v) {
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end || x == 0 || x > 100000000)
                die(a, "expected a whole number from 1 to 10^8");
            *target = (size_t)x;
            i++;
        } else if (!strcmp(a, "--out") && v) {
            cf->out = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_bloom [--items N (200000)] [--batch N (1000)] "
                            "[--reps N (5)] [--slow-items N (20000)] [--out FILE.md]\n");
            exit(2);
        }
    }
    if (cf->reps > MAX_REPS)
        cf->reps = MAX_REPS;
}

typedef struct results {
    double filter, roundtrip, setbit, raw, sadd; /* items/s, medians over the reps */
    double vs_raw, vs_setbit, vs_sadd;           /* filter rate / theirs, median of reps */
    double vs_rt;                                /* filter / (a), over the batches where (a) ran */
    size_t slow_done;
    double filter_bytes, set_bytes, m_bytes;
    bloom_geometry_t geo;
} results_t;

enum { C_RAW, C_FILTER, C_SETBIT, C_SADD, C_RT, NCONT };
typedef void (*contender_fn)(ctx_t *, size_t, size_t, size_t, size_t *);
static const contender_fn CONTENDERS[NCONT] = {do_raw_bitfield, do_filter, do_setbit_pipe, do_sadd,
                                               do_roundtrips};
static const char *const NAMES[NCONT] = {"raw BITFIELD", "filter", "pipelined SETBIT", "SADD",
                                         "SETBIT round trips"};

/* Fresh keys for every contender (not timed). */
static void reset_keys(ctx_t *x)
{
    bloom_close(x->filter);
    x->filter = fresh_filter(x->c, x->w->n);
    make_blocks(x->c, "raw", &x->w->geo);
    make_blocks(x->c, "sb", &x->w->geo);
    make_blocks(x->c, "rt", &x->w->geo);
    freeReplyObject(cmd_ok(x->c, "DEL %s", "urlset"));
}

/* One repetition: batch by batch, every contender in turn (a: only within
 * its item and time budget, first repetition only).  Adds seconds and new
 * counts per contender. */
static void one_rep(ctx_t *x, const cfg_t *cf, size_t rep, double *secs, size_t *fresh,
                    size_t *slow_done, double *filter_secs_with_rt)
{
    size_t nb = (x->w->n + cf->batch - 1) / cf->batch;
    double last_filter_secs = 0;
    reset_keys(x);
    for (size_t bi = 0; bi < nb; bi++) {
        size_t from = bi * cf->batch, cnt = x->w->n - from < cf->batch ? x->w->n - from : cf->batch;
        for (int k = 0; k < NCONT; k++) {
            if (k == C_RT &&
                (rep > 0 || *slow_done >= cf->slow_items || secs[C_RT] >= cf->slow_seconds))
                continue;
            double t0 = now_s();
            CONTENDERS[k](x, bi, from, cnt, &fresh[k]);
            double t = now_s() - t0;
            secs[k] += t;
            if (k == C_RT) {
                *slow_done += cnt;
                *filter_secs_with_rt += last_filter_secs;
            }
            if (k == C_FILTER)
                last_filter_secs = t;
        }
    }
}

static void run_all(redisContext *c, const work_t *w, const cfg_t *cf, results_t *res)
{
    ctx_t x = {.c = c, .w = w, .res = malloc(cf->batch)};
    size_t nb = (w->n + cf->batch - 1) / cf->batch;
    preformat(&x, cf->batch, nb);
    double rate[NCONT][MAX_REPS], vs[NCONT][MAX_REPS];
    double rt_secs = 0, filter_secs_with_rt = 0;
    res->slow_done = 0;
    for (size_t rep = 0; rep < cf->reps; rep++) {
        double secs[NCONT] = {0};
        size_t fresh[NCONT] = {0};
        one_rep(&x, cf, rep, secs, fresh, &res->slow_done, &filter_secs_with_rt);
        if (rep == 0)
            rt_secs = secs[C_RT];
        for (int k = 0; k < C_RT; k++)
            vs[k][rep] = secs[k] / secs[C_FILTER];
        fprintf(stderr, "rep %zu:", rep + 1);
        for (int k = 0; k < C_RT; k++) {
            rate[k][rep] = (double)w->n / secs[k];
            fprintf(stderr, " %s %.0f/s%s", NAMES[k], rate[k][rep], k + 1 < C_RT ? "," : "\n");
        }
        if (fresh[C_FILTER] != fresh[C_RAW] || fresh[C_FILTER] != fresh[C_SETBIT] ||
            fresh[C_SADD] != w->n)
            fprintf(stderr,
                    "bench_bloom: warning: new counts differ: filter %zu, raw %zu, "
                    "setbit %zu, sadd %zu\n",
                    fresh[C_FILTER], fresh[C_RAW], fresh[C_SETBIT], fresh[C_SADD]);
    }
    res->raw = median(rate[C_RAW], cf->reps);
    res->filter = median(rate[C_FILTER], cf->reps);
    res->setbit = median(rate[C_SETBIT], cf->reps);
    res->sadd = median(rate[C_SADD], cf->reps);
    res->roundtrip = (double)res->slow_done / rt_secs;
    res->vs_raw = median(vs[C_RAW], cf->reps);
    res->vs_setbit = median(vs[C_SETBIT], cf->reps);
    res->vs_sadd = median(vs[C_SADD], cf->reps);
    res->vs_rt = rt_secs / filter_secs_with_rt;
    bloom_close(x.filter);
    for (size_t bi = 0; bi < nb; bi++)
        free(x.pre[bi]);
    free(x.pre);
    free(x.pre_len);
    free(x.res);
}

static void measure_memory(redisContext *c, const work_t *w, results_t *res)
{
    char err[512];
    bloom_t *b = bloom_open(c, "bench", NULL, NULL, err, sizeof err);
    bloom_info_t in;
    if (!b || bloom_info(b, &in) < 0)
        die("bloom_info", b ? bloom_errmsg(b) : err);
    res->filter_bytes = (double)in.redis_bytes;
    res->m_bytes = (double)in.geo.m / 8;
    res->geo = in.geo;
    bloom_close(b);
    redisReply *r = cmd_ok(c, "MEMORY USAGE %s SAMPLES 0", "urlset");
    res->set_bytes = (double)r->integer;
    freeReplyObject(r);
    (void)w;
}

static void report(FILE *o, const cfg_t *cf, const results_t *r, const char *redis_version)
{
    double n = (double)cf->items;
    fprintf(o, "# Bloom filter benchmark (bench/bench_bloom.c)\n\n");
    fprintf(o,
            "One run of `bench_bloom --items %zu --batch %zu --reps %zu`: one private "
            "redis-server %s on 127.0.0.1 (TCP), this machine (%ld cores, shared with other "
            "jobs), %zu distinct URLs of ~75 bytes, k = %u (p = 0.01 at n = %zu), %zu items "
            "per round trip.  Contenders run in turn batch by batch, so they see the same "
            "load; ratios are medians of the per-repetition ratios.\n\n",
            cf->items, cf->batch, cf->reps, redis_version, sysconf(_SC_NPROCESSORS_ONLN), cf->items,
            r->geo.k, cf->items, cf->batch);
    fprintf(o, "| contender | items/s (median) | filter vs it |\n|---|---:|---:|\n");
    fprintf(o, "| **filter: bloom_add_many** (hash, cache, BITFIELD) | %.0f | 1 |\n", r->filter);
    fprintf(o, "| (a) one SETBIT round trip per bit (first %zu items) | %.0f | %.1fx |\n",
            r->slow_done, r->roundtrip, r->vs_rt);
    fprintf(o, "| (b) pipelined SETBIT (k commands per item) | %.0f | %.2fx |\n", r->setbit,
            r->vs_setbit);
    fprintf(o,
            "| (c) raw pipelined BITFIELD, preformatted, no hashing (ceiling) | %.0f | %.1f%% "
            "|\n",
            r->raw, 100 * r->vs_raw);
    fprintf(o, "| (d) pipelined SADD of whole URLs | %.0f | %.2fx |\n\n", r->sadd, r->vs_sadd);
    fprintf(o, "| Redis memory (MEMORY USAGE) | bytes | per URL |\n|---|---:|---:|\n");
    fprintf(o, "| filter (m = %llu bits in %u blocks) | %.0f = %.4f x m/8 | %.2f |\n",
            (unsigned long long)r->geo.m, r->geo.blocks, r->filter_bytes,
            r->filter_bytes / r->m_bytes, r->filter_bytes / n);
    fprintf(o, "| (d) SET of the URLs | %.0f | %.2f (%.0fx the filter) |\n\n", r->set_bytes,
            r->set_bytes / n, r->set_bytes / r->filter_bytes);
    fprintf(o,
            "Targets: >= 90%% of (c): %s; >= 40x (a): %s; >= 100,000 URLs/s: %s; memory "
            "within 2%% of m/8: %s.\n",
            r->vs_raw >= 0.9 ? "met" : "NOT met", r->vs_rt >= 40 ? "met" : "NOT met",
            r->filter >= 100000 ? "met" : "NOT met",
            fabs(r->filter_bytes / r->m_bytes - 1) <= 0.02 ? "met" : "NOT met");
}

int main(int argc, char **argv)
{
    cfg_t cf;
    parse_args(argc, argv, &cf);
    signal(SIGPIPE, SIG_IGN);
    if (!(redis = fx_redis_start()))
        die("redis-server", fx_error());
    atexit(stop_redis);
    redisContext *c = fx_redis_connect(redis);
    if (!c)
        die("connect", fx_error());
    redisSetTimeout(c, (struct timeval){60, 0});
    redisReply *v = cmd_ok(c, "INFO %s", "server");
    char version[32] = "?";
    const char *p = strstr(v->str, "redis_version:");
    if (p)
        sscanf(p, "redis_version:%31[^\r\n]", version);
    freeReplyObject(v);
    work_t w;
    make_work(&w, cf.items);
    bloom_t *b = fresh_filter(c, w.n);
    w.geo = *bloom_geometry(b);
    for (size_t i = 0; i < w.n; i++)
        bloom_probe(b, w.url[i], w.len[i], &w.probe[i]);
    bloom_close(b);
    results_t res;
    run_all(c, &w, &cf, &res);
    measure_memory(c, &w, &res);
    report(stdout, &cf, &res, version);
    if (cf.out) {
        FILE *o = fopen(cf.out, "w");
        if (!o)
            die(cf.out, strerror(errno));
        report(o, &cf, &res, version);
        fclose(o);
    }
    free_work(&w);
    redisFree(c);
    return 0;
}
