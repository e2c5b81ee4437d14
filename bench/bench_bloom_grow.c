/*
 * bench_bloom_grow.c -- a visited set that grows (bloom.h, "layers")
 * against one filter sized in advance, side by side on one local
 * redis-server this program starts (and stops) itself.
 *
 * DESIGN
 * 1. Growth: a filter made for --start URLs at --p grows while --items
 *    distinct URLs (~60 bytes, generated) are added in batches of --batch;
 *    at each checkpoint (a list of sizes, chosen not to land on layer
 *    boundaries) its Redis memory (MEMORY USAGE of every key, bloom_info)
 *    is set against what one filter made for exactly that many URLs at --p
 *    would take (bloom_redis_bytes of its geometry) -- the ratio the issue
 *    bounds at 1.6.
 * 2. Rate of the whole: --fresh URLs never added are tested
 *    (bloom_contains_many): the false positives over their count, with its
 *    95% confidence interval (Wilson), against --p.
 * 3. Test-and-add rate at the same size: the grown filter and one filter
 *    made for --items at --p (filled with the same URLs first) each
 *    test-and-add the same --rate-items fresh URLs, interleaved batch by
 *    batch (the machine is noisy), both on this connection; the ratio of
 *    their rates pair by pair, median over the batches.  Then the same
 *    pairs again with every URL already in (the seen case, which a crawl
 *    meets most).
 * Every loop is bounded by its item count.
 */
#include <hiredis/hiredis.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "fixtures.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_bloom_grow: %s: %s\n", what, why);
    exit(1);
}

typedef struct cfg {
    uint64_t start, items, fresh, rate_items;
    size_t batch;
    double p, growth;
    const char *out;
} cfg_t;

/* URL i of series s into buf. */
static size_t url(char *buf, size_t len, char s, uint64_t i)
{
    return (size_t)snprintf(buf, len, "https://h%llu.example-%c.test/p/%llu/page.html",
                            (unsigned long long)(i % 100003), s, (unsigned long long)i);
}

/* A batch of URLs of series s from i: pointers into mem. */
typedef struct batch {
    char *mem;
    const char **v;
    size_t *len;
    uint8_t *res;
    size_t n;
} batch_t;

static void fill(batch_t *b, char s, uint64_t from, size_t n)
{
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        b->v[i] = b->mem + i * 96;
        b->len[i] = url(b->mem + i * 96, 96, s, from + i);
    }
}

static size_t count(const uint8_t *r, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += r[i];
    return c;
}

static bloom_t *open_filter(redisContext *c, const char *name, uint64_t n, double p, double g)
{
    int err = 0;
    char msg[512];
    bloom_params_t bp = {.capacity = n, .fp_rate = p, .growth = g, .cache_bytes = SIZE_MAX};
    bloom_t *b = bloom_open(c, name, &bp, &err, msg, sizeof msg);
    if (!b)
        die(name, msg);
    return b;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Interleaved test-and-add of series s from `from`, rate_items in all:
 * grown vs fixed, each batch timed on its own; returns the median ratio
 * grown/fixed (items/s), the medians' rates in *rg and *rf. */
static double race(const cfg_t *cf, bloom_t *grown, bloom_t *fixed, batch_t *b, char s,
                   uint64_t from, double *rg, double *rf)
{
    size_t nb = (size_t)((cf->rate_items + cf->batch - 1) / cf->batch);
    double *ratio = calloc(nb, sizeof *ratio), *ag = calloc(nb, sizeof *ag),
           *af = calloc(nb, sizeof *af);
    if (!ratio || !ag || !af)
        die("race", "out of memory");
    for (size_t i = 0; i < nb; i++) {
        fill(b, s, from + i * cf->batch, cf->batch);
        bloom_t *order[2] = {i % 2 ? fixed : grown, i % 2 ? grown : fixed};
        double t[2];
        for (int x = 0; x < 2; x++) {
            double t0 = now_s();
            if (bloom_add_many(order[x], b->v, b->len, b->n, b->res) < 0)
                die("test-and-add", bloom_errmsg(order[x]));
            t[x] = now_s() - t0;
        }
        double tg = i % 2 ? t[1] : t[0], tf = i % 2 ? t[0] : t[1];
        ag[i] = (double)b->n / tg;
        af[i] = (double)b->n / tf;
        ratio[i] = tf / tg;
    }
    qsort(ratio, nb, sizeof *ratio, cmp_double);
    qsort(ag, nb, sizeof *ag, cmp_double);
    qsort(af, nb, sizeof *af, cmp_double);
    double m = ratio[nb / 2];
    *rg = ag[nb / 2];
    *rf = af[nb / 2];
    free(ratio), free(ag), free(af);
    return m;
}

static void parse(int argc, char **argv, cfg_t *cf)
{
    *cf = (cfg_t){.start = 100000,
                  .items = 10000000,
                  .fresh = 10000000,
                  .rate_items = 1000000,
                  .batch = 4096,
                  .p = 1e-4,
                  .growth = BLOOM_DEFAULT_GROWTH};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die(a, "needs a value");
        if (!strcmp(a, "--start"))
            cf->start = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--items"))
            cf->items = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--fresh"))
            cf->fresh = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--rate-items"))
            cf->rate_items = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--p"))
            cf->p = strtod(v, NULL);
        else if (!strcmp(a, "--growth"))
            cf->growth = strtod(v, NULL);
        else if (!strcmp(a, "--out"))
            cf->out = v;
        else
            die(a, "unknown option (--start N --items N --fresh N --rate-items N --p P "
                   "--growth G --out FILE)");
        i++;
    }
    if (!cf->start || !cf->items || cf->items > 100000000 || cf->fresh > 100000000 ||
        !cf->rate_items || cf->rate_items > 10000000)
        die("options", "out of range");
}

int main(int argc, char **argv)
{
    cfg_t cf;
    parse(argc, argv, &cf);
    signal(SIGPIPE, SIG_IGN);
    fx_redis_t *r = fx_redis_start();
    if (!r)
        die("redis-server", fx_error());
    redisContext *c = fx_redis_connect(r);
    if (!c)
        die("connect", fx_error());
    FILE *o = cf.out ? fopen(cf.out, "w") : stdout;
    if (!o)
        die(cf.out, "cannot write");
    batch_t b = {.mem = malloc(cf.batch * 96),
                 .v = malloc(cf.batch * sizeof *b.v),
                 .len = malloc(cf.batch * sizeof *b.len),
                 .res = malloc(cf.batch)};
    if (!b.mem || !b.v || !b.len || !b.res)
        die("batch", "out of memory");

    /* 1. growth, with checkpoints off the layer boundaries */
    bloom_t *g = open_filter(c, "grow", cf.start, cf.p, cf.growth);
    const double marks[] = {0.2, 0.35, 0.5, 0.6, 0.75, 0.9, 1.0};
    fprintf(o,
            "# Growing visited set (bench/bench_bloom_grow.c)\n\n"
            "One run: a filter made for %llu URLs at p = %g that grows by %g "
            "(BLOOM_TIGHTENING %.2g, blocks of %llu KiB), fed %llu distinct URLs in batches of "
            "%zu on a private redis-server (TCP, 127.0.0.1).\n\n"
            "| URLs added | layers | Redis bytes (all layers) | one filter sized for them | "
            "ratio | seconds |\n|---:|---:|---:|---:|---:|---:|\n",
            (unsigned long long)cf.start, cf.p, cf.growth, BLOOM_TIGHTENING,
            (unsigned long long)(bloom_geometry(g)->block_bits / 8 / 1024),
            (unsigned long long)cf.items, cf.batch);
    uint64_t added = 0, fresh_seen = 0;
    double t0 = now_s();
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        uint64_t to = (uint64_t)(marks[m] * (double)cf.items);
        while (added < to) {
            size_t n = to - added < cf.batch ? (size_t)(to - added) : cf.batch;
            fill(&b, 'a', added, n);
            if (bloom_add_many(g, b.v, b.len, n, b.res) < 0)
                die("add", bloom_errmsg(g));
            fresh_seen += n - count(b.res, n);
            added += n;
        }
        bloom_info_t in;
        if (bloom_info(g, &in) < 0)
            die("info", bloom_errmsg(g));
        bloom_geometry_t one;
        bloom_params_t op = {.capacity = added, .fp_rate = cf.p};
        if (bloom_geometry_for(&op, &one) < 0)
            die("geometry", "bad size");
        uint64_t ob = bloom_redis_bytes(&one);
        fprintf(o, "| %llu | %u | %llu | %llu | %.3f | %.1f |\n", (unsigned long long)added,
                in.layers, (unsigned long long)in.redis_bytes, (unsigned long long)ob,
                (double)in.redis_bytes / (double)ob, now_s() - t0);
        fflush(o);
    }
    fprintf(o,
            "\nWhile being added, %llu of the %llu URLs were answered \"seen\" (false "
            "positives of the filter as it grew).\n",
            (unsigned long long)fresh_seen, (unsigned long long)added);

    /* 2. the rate of the whole on URLs never added */
    uint64_t fp = 0;
    for (uint64_t i = 0; i < cf.fresh; i += cf.batch) {
        size_t n = cf.fresh - i < cf.batch ? (size_t)(cf.fresh - i) : cf.batch;
        fill(&b, 'f', i, n);
        if (bloom_contains_many(g, b.v, b.len, n, b.res) < 0)
            die("contains", bloom_errmsg(g));
        fp += count(b.res, n);
    }
    double ph = cf.fresh ? (double)fp / (double)cf.fresh : 0, z = 1.96, nn = (double)cf.fresh;
    double centre = (ph + z * z / (2 * nn)) / (1 + z * z / nn);
    double half = z * sqrt(ph * (1 - ph) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
    bloom_info_t gi;
    if (bloom_info(g, &gi) < 0)
        die("info", bloom_errmsg(g));
    fprintf(o,
            "\nFalse-positive rate of the whole on %llu URLs never added: %llu, %.3g "
            "(95%% interval %.3g .. %.3g) against p = %g: %s; the layers' own estimate "
            "1 - prod(1 - p_j) = %.3g.\n\n| layer | capacity | items | rate at its items |\n"
            "|---:|---:|---:|---:|\n",
            (unsigned long long)cf.fresh, (unsigned long long)fp, ph, centre - half, centre + half,
            cf.p, centre - half <= cf.p ? "within" : "ABOVE", gi.whole_fp);
    for (uint32_t j = 0; j < gi.layers; j++)
        fprintf(o, "| %u | %llu | %llu | %.3g |\n", j, (unsigned long long)gi.layer_capacity[j],
                (unsigned long long)gi.layer_items[j], gi.layer_fp[j]);

    /* 3. test-and-add at the same size: one filter made for all of them */
    bloom_t *f = open_filter(c, "fixed", cf.items, cf.p, 0);
    for (uint64_t i = 0; i < cf.items; i += cf.batch) {
        size_t n = cf.items - i < cf.batch ? (size_t)(cf.items - i) : cf.batch;
        fill(&b, 'a', i, n);
        if (bloom_add_many(f, b.v, b.len, n, b.res) < 0)
            die("fill the fixed filter", bloom_errmsg(f));
    }
    double rg, rf, rn = race(&cf, g, f, &b, 'n', 0, &rg, &rf);
    double sg, sf, rs = race(&cf, g, f, &b, 'n', 0, &sg, &sf); /* again: all seen now */
    fprintf(o,
            "\nTest-and-add, %llu URLs in batches of %zu, grown filter (%u layers) and one "
            "filter made for %llu, interleaved batch by batch (median of the per-batch "
            "ratios):\n\n| URLs | grown, URLs/s | one filter, URLs/s | grown vs one |\n"
            "|---|---:|---:|---:|\n| new | %.0f | %.0f | %.3f |\n| already in | %.0f | %.0f | "
            "%.3f |\n",
            (unsigned long long)cf.rate_items, cf.batch, bloom_layers(g),
            (unsigned long long)cf.items, rg, rf, rn, sg, sf, rs);
    bloom_close(g);
    bloom_close(f);
    if (o != stdout)
        fclose(o);
    free(b.mem), free(b.v), free(b.len), free(b.res);
    redisFree(c);
    fx_redis_stop(r);
    return 0;
}
