/*
 * bench_frontier.c -- throughput of the frontier (enqueue -> claim ->
 * acknowledge) with 1, 100 and 10,000 hosts, and Redis round trips per
 * crawled page for pages of 40 links in steady state.
 *
 * DESIGN: starts its own redis-server (the test fixture) on a free loopback port (no
 * persistence), runs every case against it in one invocation, and reports
 * each speed next to a reference measured in the same run: the same number
 * of URLs pushed and popped through a plain Redis list with the same
 * batching (RPUSH + LPOP count, no scripts, no Bloom, no leases).  Round
 * trips are counted in the client (frontier_round_trips).  Every loop is
 * bounded in count and time.
 *
 * The throughput cases run --clients workers (default 2), each with its own
 * connection and frontier handle on the one crawl, as crawler processes
 * share a Redis: each seeds its slice of the URLs, then all claim and
 * acknowledge until the frontier says DONE.  One client leaves Redis idle
 * while it builds its next call; two keep it busy (the Redis CPU per URL,
 * also reported, does not depend on this).
 *
 * The redis-server loads the crawler module (bloom/redis_module.c; --module
 * PATH, "none" for a stock server), and each throughput case runs twice on
 * it, side by side: the frontier setting its Bloom bits with BITFIELD (what
 * any Redis offers: frontier_config_t.bitfield_only) and with the module's
 * CRAWLER.BFADD (what the crawler does when the module is loaded).
 *
 * usage: bench_frontier [--urls N] [--pages N] [--clients N] [--fp-rate P]
 *                       [--capacity N] [--module PATH|none] [--quick 0..4]
 *                       [--list-pack N] [--list-compress D] [--out FILE.md]
 */
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "fixtures.h"
#include "fr_link.h"
#include "frontier.h"

#define BATCH 1000       /* URLs per claim */
#define FINISH_BATCH 250 /* pages per pipelined finish */
#define MAX_SECONDS 120  /* per case */

static double fp_rate = 1e-4; /* --fp-rate: the frontier filter's p (the crawler's default) */
static int nclients = 2;      /* --clients: workers, each with its own connection and handle */
static uint64_t bloom_n;      /* --capacity: the filters' n in the throughput cases (0: 4 x URLs) */
static int bitfield_only;     /* the frontier handles set Bloom bits with BITFIELD */
static int have_module;       /* redis-server loaded the crawler module */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- redis-server (the test fixture: tests/fixtures.h) ------------------ */

static fx_redis_t *redis;
static pid_t redis_pid = -1;

static redisContext *redis_start(void)
{
    if (!(redis = fx_redis_start()))
        return NULL;
    redis_pid = fx_redis_pid(redis);
    return fx_redis_connect(redis);
}

static void redis_stop(void)
{
    fx_redis_stop(redis);
    redis = NULL;
    redis_pid = -1;
}

/* CPU seconds redis-server used so far (utime + stime from /proc). */
static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double redis_cpu(void)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)redis_pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* BENCH_FRONTIER_CMDSTATS set: Redis's per-command times of one phase on stderr;
 * BENCH_FRONTIER_CALLGRIND set (redis-server run under valgrind --tool=callgrind
 * through a wrapper first in PATH): its counters dumped at each phase
 * boundary, an instruction count per phase that the shared machine cannot
 * disturb. */
static void phase_end(redisContext *c, const char *phase)
{
    if (getenv("BENCH_FRONTIER_CALLGRIND")) { /* redis-server runs under valgrind's callgrind */
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)redis_pid);
        pid_t ch = fork();
        if (ch == 0) {
            execlp("callgrind_control", "callgrind_control", "--dump", pid, (char *)NULL);
            _exit(127);
        }
        if (ch > 0)
            waitpid(ch, NULL, 0);
    }
    if (!getenv("BENCH_FRONTIER_CMDSTATS"))
        return;
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (r && r->type == REDIS_REPLY_STRING)
        fprintf(stderr, "-- %s\n%s\n", phase, r->str);
    if (r)
        freeReplyObject(r);
    if ((r = redisCommand(c, "CONFIG RESETSTAT")))
        freeReplyObject(r);
}

static void flushall(redisContext *c)
{
    redisReply *r = redisCommand(c, "FLUSHALL");
    if (r)
        freeReplyObject(r);
}

/* ---- cases --------------------------------------------------------------- */

typedef struct ctx {
    redisContext *c;
    bloom_t *b;
    frontier_t *f;
} ctx_t;

/* A handle on the crawl "bench" (made by the first opener) on connection c. */
static int ctx_attach(ctx_t *x, redisContext *c, uint64_t capacity)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    char name[128], err[256] = "";
    frontier_bloom_name("bench", name, sizeof name);
    bloom_params_t p = {.capacity = capacity, .fp_rate = fp_rate};
    int e = 0;
    x->b = bloom_open(c, name, &p, &e, err, sizeof err);
    if (!x->b) {
        fprintf(stderr, "bloom_open: %s\n", err);
        return -1;
    }
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = "bench";
    cfg.per_host = 1000000;
    cfg.delay_ms = 0;
    cfg.bitfield_only = bitfield_only;
    x->f = fr_open(c, &cfg, x->b, err, sizeof err);
    if (!x->f)
        fprintf(stderr, "frontier_open: %s\n", err);
    return x->f ? 0 : -1;
}

static int ctx_open(ctx_t *x, redisContext *c, uint64_t capacity)
{
    flushall(c);
    return ctx_attach(x, c, capacity);
}

static void ctx_close(ctx_t *x)
{
    fr_close(x->f);
    bloom_close(x->b);
}

static char **make_urls(size_t n, size_t hosts, const char *tag)
{
    char **u = malloc(n * sizeof *u);
    for (size_t i = 0; u && i < n; i++) {
        char buf[96];
        snprintf(buf, sizeof buf, "http://h%zu.example/%s/%zu", i % hosts, tag, i);
        u[i] = strdup(buf);
    }
    return u;
}

static void free_urls(char **u, size_t n)
{
    for (size_t i = 0; u && i < n; i++)
        free(u[i]);
    free(u);
}

/* Claims and finishes (with the given links per page) until DONE or
 * max_pages; returns pages finished. */
typedef const char *const *(*links_fn)(void *ud, size_t *n);
static double claim_cpu;   /* redis-server CPU seconds spent in claims (drain) */
static int measure_claims; /* set while one client alone talks to Redis */
static size_t drain(frontier_t *f, size_t max_pages, size_t claim_batch, links_fn links, void *ud)
{
    frontier_item_t *it = calloc(BATCH, sizeof *it);
    frontier_done_t *d = calloc(BATCH, sizeof *d);
    size_t pages = 0;
    if (!it || !d)
        max_pages = 0;
    double deadline = now_s() + MAX_SECONDS;
    while (pages < max_pages && now_s() < deadline) {
        size_t n = 0;
        frontier_state_t st;
        double cc0 = measure_claims ? redis_cpu() : 0;
        int crc = frontier_claim(f, claim_batch, it, &n, &st, NULL);
        if (measure_claims)
            claim_cpu += redis_cpu() - cc0;
        if (crc < 0 || st == FRONTIER_DONE)
            break;
        if (st == FRONTIER_WAIT) {
            usleep(1000);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            d[i] = (frontier_done_t){.item = &it[i],
                                     .outcome = {.status = 200, .bytes = 20000},
                                     .link_depth = it[i].depth + 1};
            if (links)
                d[i].links = links(ud, &d[i].nlinks);
        }
        for (size_t i = 0; i < n; i += FINISH_BATCH)
            if (frontier_finish(f, d + i, n - i < FINISH_BATCH ? n - i : FINISH_BATCH) < 0)
                fprintf(stderr, "frontier_finish failed\n");
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&it[i]);
        pages += n;
    }
    free(it);
    free(d);
    return pages;
}

/* Reference: the same URLs through a plain list, same batching. */
static double raw_list(redisContext *c, char **urls, size_t n, double *cpu_us)
{
    flushall(c);
    double c0 = redis_cpu();
    double t0 = now_s();
    for (size_t i = 0; i < n; i += 4096) {
        size_t m = n - i < 4096 ? n - i : 4096;
        const char **argv = malloc((m + 2) * sizeof *argv);
        argv[0] = "RPUSH";
        argv[1] = "raw";
        for (size_t j = 0; j < m; j++)
            argv[j + 2] = urls[i + j];
        redisReply *r = redisCommandArgv(c, (int)m + 2, argv, NULL);
        if (r)
            freeReplyObject(r);
        free(argv);
    }
    for (size_t got = 0; got < n;) {
        redisReply *r = redisCommand(c, "LPOP raw %d", BATCH);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            if (r)
                freeReplyObject(r);
            break;
        }
        got += r->elements;
        freeReplyObject(r);
    }
    double t1 = now_s();
    *cpu_us = (redis_cpu() - c0) * 1e6 / (double)n;
    return (double)n / (t1 - t0);
}

/* Reference: Bloom test-and-add alone (bloom_add_many, 4096 per call) of
 * the same URLs, the floor of the enqueue path. */
static double bloom_only(redisContext *c, char **urls, size_t n, double *cpu_us)
{
    flushall(c);
    bloom_params_t p = {
        .capacity = bloom_n ? bloom_n : 4 * n, .fp_rate = fp_rate, .cache_bytes = SIZE_MAX};
    char err[256];
    int e;
    bloom_t *b = bloom_open(c, "benchbloom", &p, &e, err, sizeof err);
    uint8_t *is_new = malloc(4096);
    if (!b || !is_new) {
        bloom_close(b);
        free(is_new);
        return 0;
    }
    double c0 = redis_cpu(), t0 = now_s();
    for (size_t i = 0; i < n; i += 4096)
        bloom_add_many(b, (const char *const *)urls + i, NULL, n - i < 4096 ? n - i : 4096, is_new);
    double t1 = now_s();
    *cpu_us = (redis_cpu() - c0) * 1e6 / (double)n;
    bloom_close(b);
    free(is_new);
    return (double)n / (t1 - t0);
}

typedef struct tput {
    size_t hosts;
    double rate, raw, seed_s, drain_s;
    double cpu_us, raw_cpu_us;     /* redis-server CPU per URL */
    double client_us, seed_cpu_us; /* client CPU per URL; Redis CPU per URL enqueued */
    double claim_cpu_us;           /* Redis CPU per URL claimed */
    double bloom, bloom_cpu_us;    /* bloom_add_many alone: URLs/s, Redis CPU per URL */
    uint64_t trips;
    int module; /* the frontier set its Bloom bits with CRAWLER.BFADD, not BITFIELD */
} tput_t;

/* One client of the throughput case: its own connection and handles on the
 * one crawl; seeds its slice of the URLs, then claims and acknowledges until
 * the frontier says DONE. */
typedef struct client {
    ctx_t x;
    redisContext *c;
    const char *const *urls;
    size_t n, added, pages, phase;
    pthread_t th;
} client_t;

static void *client_run(void *arg)
{
    client_t *k = arg;
    if (k->phase == 0)
        frontier_seed(k->x.f, k->urls, k->n, 0, &k->added);
    else
        k->pages = drain(k->x.f, SIZE_MAX, BATCH, NULL, NULL);
    return NULL;
}

/* Runs phase (0 seed, 1 drain) on every client, client 0 on this thread. */
static void clients_phase(client_t *k, int nk, size_t phase)
{
    int started[8] = {0};
    for (int i = 0; i < nk; i++)
        k[i].phase = phase;
    for (int i = 1; i < nk; i++)
        started[i] = pthread_create(&k[i].th, NULL, client_run, &k[i]) == 0;
    client_run(&k[0]);
    for (int i = 1; i < nk; i++)
        if (started[i])
            pthread_join(k[i].th, NULL);
        else
            client_run(&k[i]);
}

/* One throughput case; the references (plain list, Bloom alone) are measured
 * unless ref already holds them for the same URLs (the other way of setting
 * bits, just before). */
static int throughput(redisContext *c, size_t n, size_t hosts, const tput_t *ref, tput_t *out)
{
    client_t k[8];
    int nk = nclients;
    memset(k, 0, sizeof k);
    char **urls = make_urls(n, hosts, "t");
    uint64_t cap = bloom_n ? bloom_n : 4 * n;
    if (!urls || ctx_open(&k[0].x, c, cap) < 0)
        return -1;
    k[0].c = c;
    for (int i = 1; i < nk; i++)
        if (!(k[i].c = fx_redis_connect(redis)) || ctx_attach(&k[i].x, k[i].c, cap) < 0)
            return -1;
    for (int i = 0; i < nk; i++) { /* contiguous slices: each client seeds every host */
        k[i].urls = (const char *const *)urls + n * (size_t)i / (size_t)nk;
        k[i].n = n * (size_t)(i + 1) / (size_t)nk - n * (size_t)i / (size_t)nk;
    }
    uint64_t rt0 = 0;
    out->module = frontier_bits_module(k[0].x.f);
    for (int i = 0; i < nk; i++)
        rt0 += frontier_round_trips(k[i].x.f);
    phase_end(c, "before");
    double c0 = redis_cpu(), s0 = self_cpu();
    double t0 = now_s();
    clients_phase(k, nk, 0);
    double t1 = now_s();
    phase_end(c, "enqueue");
    out->seed_cpu_us = (redis_cpu() - c0) * 1e6 / (double)n;
    claim_cpu = 0;
    measure_claims = nk == 1;
    clients_phase(k, nk, 1);
    out->claim_cpu_us = nk == 1 ? claim_cpu * 1e6 / (double)n : -1;
    double t2 = now_s();
    out->cpu_us = (redis_cpu() - c0) * 1e6 / (double)n;
    phase_end(c, "claim + ack");
    out->client_us = (self_cpu() - s0) * 1e6 / (double)n;
    size_t added = 0, pages = 0;
    uint64_t rt1 = 0;
    for (int i = 0; i < nk; i++) {
        added += k[i].added;
        pages += k[i].pages;
        rt1 += frontier_round_trips(k[i].x.f);
    }
    out->hosts = hosts;
    out->rate = (double)pages / (t2 - t0);
    out->seed_s = t1 - t0;
    out->drain_s = t2 - t1;
    out->trips = rt1 - rt0;
    if (added != n || pages != n)
        fprintf(stderr, "hosts %zu: added %zu, crawled %zu of %zu\n", hosts, added, pages, n);
    for (int i = nk - 1; i >= 0; i--) {
        ctx_close(&k[i].x);
        if (i > 0)
            redisFree(k[i].c);
    }
    if (ref && ref->hosts == hosts) {
        out->raw = ref->raw;
        out->raw_cpu_us = ref->raw_cpu_us;
        out->bloom = ref->bloom;
        out->bloom_cpu_us = ref->bloom_cpu_us;
    } else {
        out->raw = raw_list(c, urls, n, &out->raw_cpu_us);
        out->bloom = bloom_only(c, urls, n, &out->bloom_cpu_us);
    }
    free_urls(urls, n);
    return 0;
}

/* Pages of 40 links: 4 new (fresh URLs on 100 hosts), 36 already seen. */
typedef struct graph {
    char **pool; /* previously generated links */
    size_t npool, next;
    const char *links[40];
    char *fresh[4];
} graph_t;

static const char *const *page_links(void *ud, size_t *n)
{
    graph_t *g = ud;
    for (int i = 0; i < 4; i++) {
        char buf[96];
        snprintf(buf, sizeof buf, "http://h%zu.example/new/%zu", g->next % 100, g->next);
        g->next++;
        free(g->fresh[i]);
        g->fresh[i] = strdup(buf);
        g->links[i] = g->fresh[i];
    }
    for (int i = 4; i < 40; i++)
        g->links[i] = g->pool[(g->next * 7919 + (size_t)i * 104729) % g->npool];
    *n = 40;
    return g->links;
}

typedef struct steady {
    size_t batch, pages;
    double rate, trips_per_page, cpu_us;
} steady_t;

static int steady_state(redisContext *c, size_t pages, size_t batch, steady_t *out)
{
    ctx_t x;
    graph_t g = {.npool = 20000};
    g.pool = make_urls(g.npool, 100, "old");
    if (!g.pool || ctx_open(&x, c, 8 * pages + 4 * g.npool) < 0)
        return -1;
    frontier_seed(x.f, (const char *const *)g.pool, g.npool, 0, NULL);
    drain(x.f, pages / 4, batch, page_links, &g); /* warm up */
    uint64_t rt0 = frontier_round_trips(x.f);
    double c0 = redis_cpu();
    double t0 = now_s();
    size_t done = drain(x.f, pages, batch, page_links, &g);
    double t1 = now_s();
    out->cpu_us = (redis_cpu() - c0) * 1e6 / (double)(done ? done : 1);
    frontier_worker_stats_t ws = {.pages = done};
    frontier_heartbeat(x.f, &ws, NULL); /* one per lease_ms/3 in a real crawl */
    out->batch = batch;
    out->pages = done;
    out->rate = (double)done / (t1 - t0);
    out->trips_per_page = (double)(frontier_round_trips(x.f) - rt0) / (double)done;
    for (int i = 0; i < 4; i++)
        free(g.fresh[i]);
    free_urls(g.pool, g.npool);
    ctx_close(&x);
    return 0;
}

static void report(FILE *o, size_t n, const tput_t *t, size_t nt, const steady_t *s, size_t ns)
{
    double load[3] = {0, 0, 0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = 0;
        fclose(la);
    }
    fprintf(
        o,
        "# Frontier benchmark\n\n"
        "`bench_frontier --urls %zu`: one run, its own redis-server on 127.0.0.1 (TCP), %ld "
        "CPUs, load average %.1f at the end of the run.  Wall-clock "
        "rates depend on how much CPU the shared machine leaves; redis-server CPU per URL "
        "(from /proc, utime+stime) does not, so it is reported too, with the URLs/s one "
        "Redis core sustains at that cost.\n\n"
        "## Throughput: enqueue -> claim -> acknowledge (%zu URLs, per_host high, delay 0, "
        "%d client%s, Bloom p = %g, n = %llu)\n\n"
        "Each client has its own connection and frontier handle; it seeds its slice of the "
        "URLs, then all claim and acknowledge until the frontier is done.  "
        "Enqueue = frontier_seed (Bloom test-and-add + queue, 256 URLs per call, 16 calls "
        "per round trip); claim = %d URLs per call; acknowledge = frontier_finish, %d pages "
        "per pipelined round trip (atomic calls of up to 128 pages).  Reference (same run, same "
        "URLs): one plain Redis list, "
        "RPUSH 4096 / LPOP %d, no script, no Bloom, no lease; and the Bloom test-and-add "
        "alone (bloom_add_many, 4096 per call, local cache off), the floor of any "
        "enqueue.\n\n"
        "Each case runs twice on the one redis-server: with the Bloom bits set by BITFIELD "
        "(any Redis; `bitfield_only`) and by the crawler module's CRAWLER.BFADD (loaded: %s); "
        "the references are measured once per host count, after the BITFIELD case.\n\n"
        "| hosts | Bloom bits by | URLs/s | enqueue s | claim+ack s | round trips | Redis CPU "
        "us/URL "
        "(enqueue + claim + ack, or enqueue + claim and ack) | URLs/s per Redis core | client "
        "CPU us/URL | plain list URLs/s "
        "(Redis CPU us/URL) | bloom_add_many alone URLs/s (Redis CPU us/URL) | frontier / "
        "plain list | frontier / Bloom alone |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        n, sysconf(_SC_NPROCESSORS_ONLN), load[0], n, nclients, nclients == 1 ? "" : "s", fp_rate,
        (unsigned long long)(bloom_n ? bloom_n : 4 * n), BATCH, FINISH_BATCH, BATCH,
        have_module ? "yes" : "no");
    for (size_t i = 0; i < nt; i++) {
        if (t[i].hosts == 0)
            continue;   /* case not run (--quick, or no module) */
        char split[64]; /* claim and ack apart only with one client */
        if (t[i].claim_cpu_us >= 0)
            snprintf(split, sizeof split, "%.1f + %.1f + %.1f", t[i].seed_cpu_us, t[i].claim_cpu_us,
                     t[i].cpu_us - t[i].seed_cpu_us - t[i].claim_cpu_us);
        else
            snprintf(split, sizeof split, "%.1f + %.1f", t[i].seed_cpu_us,
                     t[i].cpu_us - t[i].seed_cpu_us);
        fprintf(o,
                "| %zu | %s | %.0f | %.2f | %.2f | %llu | %.1f (%s) | %.0f | %.1f | "
                "%.0f (%.1f) | "
                "%.0f (%.1f) | %.3f | %.2f |\n",
                t[i].hosts, t[i].module ? "module" : "BITFIELD", t[i].rate, t[i].seed_s,
                t[i].drain_s, (unsigned long long)t[i].trips, t[i].cpu_us, split,
                t[i].cpu_us > 0 ? 1e6 / t[i].cpu_us : 0, t[i].client_us, t[i].raw, t[i].raw_cpu_us,
                t[i].bloom, t[i].bloom_cpu_us, t[i].rate / t[i].raw,
                t[i].bloom > 0 ? t[i].rate / t[i].bloom : 0);
    }
    fprintf(o, "\n## Steady state: pages of 40 links (4 new, 36 already seen), 100 hosts\n\n"
               "Round trips counted in the client over every frontier call (claim, finish, one "
               "heartbeat).  A one-round-trip-per-link design (scrapy-redis style: pop, then SADD "
               "+ LPUSH per link) needs 1 + 40 = 41 per page.\n\n"
               "| claim batch | pages | pages/s | links offered/s | Redis CPU us/page | "
               "round trips per page |\n|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < ns; i++)
        fprintf(o, "| %zu | %zu | %.0f | %.0f | %.0f | %.3f |\n", s[i].batch, s[i].pages, s[i].rate,
                s[i].rate * 40, s[i].cpu_us, s[i].trips_per_page);
    fprintf(o, "\n## Module / BITFIELD, same run\n\n| hosts | URLs/s | Redis CPU per URL |\n"
               "|---:|---:|---:|\n");
    for (size_t i = 0; i + 1 < nt; i += 2)
        if (t[i].hosts && t[i + 1].hosts && t[i].rate > 0 && t[i + 1].cpu_us > 0)
            fprintf(o, "| %zu | %.2f | %.2f |\n", t[i].hosts, t[i + 1].rate / t[i].rate,
                    t[i + 1].cpu_us / t[i].cpu_us);
    double worst_trips = 0;
    for (size_t i = 0; i < ns; i++)
        worst_trips = s[i].trips_per_page > worst_trips ? s[i].trips_per_page : worst_trips;
    fprintf(o, "\n## Against the targets\n\n");
    for (int mod = 1; mod >= 0; mod--) {
        double worst = 0;
        size_t counted = 0, at = 0;
        char each[256] = "";
        for (size_t i = 0; i < nt; i++) {
            if (t[i].hosts == 0 || t[i].module != mod)
                continue; /* case not run (--quick, or no module) */
            worst = counted++ == 0 || t[i].rate < worst ? t[i].rate : worst;
            int w =
                snprintf(each + at, sizeof each - at, "%s%zu host%s: %.0f (%.0f per Redis core)",
                         at ? ", " : "", t[i].hosts, t[i].hosts == 1 ? "" : "s", t[i].rate,
                         t[i].cpu_us > 0 ? 1e6 / t[i].cpu_us : 0);
            at += w > 0 && (size_t)w < sizeof each - at ? (size_t)w : 0;
        }
        if (counted)
            fprintf(o,
                    "- >= 50,000 URLs/s through the frontier, in every case, Bloom bits by %s: %s "
                    "in this run (URLs/s wall clock: %s).\n",
                    mod ? "the crawler module" : "BITFIELD (stock Redis)",
                    worst >= 50000 ? "met" : "NOT met", each);
    }
    if (ns)
        fprintf(o,
                "- <= 3 round trips per crawled page in steady state: %s (worst case, claim "
                "batch 1: %.3f).\n",
                worst_trips <= 3 ? "met" : "NOT met", worst_trips);
}

/* CONFIG SET NAME VALUE on the bench's server (VALUE NULL: leave the default). */
static int set_list_config(redisContext *c, const char *name, const char *value)
{
    if (!value)
        return 0;
    redisReply *r = redisCommand(c, "CONFIG SET %s %s", name, value);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "bench_frontier: CONFIG SET %s %s: %s\n", name, value,
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    size_t n = 100000, pages = 20000;
    const char *out = NULL, *module = CRAWLER_REDIS_MODULE;
    const char *list_pack = NULL, *list_compress = NULL; /* CONFIG SET when given */
    int quick = 0; /* --quick 1: throughput cases only; 2..4: only the case of 1/100/10000 hosts */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--quick"))
            quick = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--urls"))
            n = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--pages"))
            pages = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--clients"))
            nclients = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--capacity"))
            bloom_n = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--fp-rate"))
            fp_rate = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--module"))
            module = argv[i + 1];
        else if (!strcmp(argv[i], "--out"))
            out = argv[i + 1];
        else if (!strcmp(argv[i], "--list-pack"))
            list_pack = argv[i + 1];
        else if (!strcmp(argv[i], "--list-compress"))
            list_compress = argv[i + 1];
    }
    if (n == 0 || n > 10000000 || pages == 0 || pages > 10000000 || nclients < 1 || nclients > 8) {
        fprintf(stderr, "usage: bench_frontier [--urls N] [--pages N] [--clients 1..8] "
                        "[--fp-rate P] [--capacity N] [--module PATH|none] [--quick 0..4] "
                        "[--list-pack N] [--list-compress D] [--out FILE]\n");
        return 2;
    }
    have_module = strcmp(module, "none") != 0;
    if (have_module && (access(module, R_OK) != 0 || setenv("FX_REDIS_MODULE", module, 1) != 0)) {
        fprintf(stderr, "bench_frontier: cannot read the module %s (--module none: without it)\n",
                module);
        return 2;
    }
    redisContext *c = redis_start();
    if (!c) {
        fprintf(stderr, "bench_frontier: cannot start redis-server\n");
        redis_stop();
        return 1;
    }
    if (set_list_config(c, "list-max-listpack-size", list_pack) < 0 ||
        set_list_config(c, "list-compress-depth", list_compress) < 0) {
        redis_stop();
        return 2;
    }
    tput_t t[6]; /* per host count: BITFIELD, then the module */
    const size_t hosts[3] = {1, 100, 10000};
    steady_t s[3];
    const size_t batches[3] = {1, 16, 256};
    int rc = 0;
    memset(t, 0, sizeof t);
    for (int i = 0; rc == 0 && i < 6; i++) {
        bitfield_only = i % 2 == 0;
        if ((quick <= 1 || quick == i / 2 + 2) && (bitfield_only || have_module))
            rc = throughput(c, n, hosts[i / 2], i % 2 ? &t[i - 1] : NULL, &t[i]);
    }
    bitfield_only = 0; /* steady state: as the crawler runs (the module if loaded) */
    for (int i = 0; rc == 0 && !quick && i < 3; i++)
        rc = steady_state(c, batches[i] == 1 ? pages / 10 : pages, batches[i], &s[i]);
    if (rc == 0) {
        report(stdout, n, t, 6, s, quick ? 0 : 3);
        FILE *o = out ? fopen(out, "w") : NULL;
        if (o) {
            report(o, n, t, 6, s, quick ? 0 : 3);
            fclose(o);
        }
    }
    redisFree(c);
    redis_stop();
    return rc ? 1 : 0;
}
