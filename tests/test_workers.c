/* The shared frontier against a real redis-server, with forked worker
 * processes: politeness across workers, and nothing lost when workers are
 * killed -- with the frontier's invariant checker run every 10 ms while the
 * workers are killed at random points.
 *
 * Each worker opens its own connection, Bloom handle and frontier handle,
 * and records what it does in "test:*" keys of the same Redis.  Verdicts
 * rest on server timestamps (claimed_ms) and on sets of URLs, never on
 * local wall-clock timing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontier_env.h"

/* ---- worker processes ----------------------------------------------------- */

/* Synthetic link graph: page i of n on host h(i mod hosts) links to 2i+1,
 * 2i+2 (so everything is reachable from page 0) and two more pages. */
#define GRAPH_HOSTS 5
static void graph_url(int i, char *buf, size_t len)
{
    snprintf(buf, len, "http://h%d.test/p%d", i % GRAPH_HOSTS, i);
}

static size_t graph_links(const char *url, int n, char links[4][64])
{
    int i;
    if (n <= 0 || sscanf(url, "http://h%*d.test/p%d", &i) != 1)
        return 0;
    int cand[4] = {2 * i + 1, 2 * i + 2, (7 * i + 3) % n, (13 * i + 5) % n};
    size_t k = 0;
    for (int j = 0; j < 4; j++)
        if (cand[j] < n)
            graph_url(cand[j], links[k++], 64);
    return k;
}

typedef struct wopts {
    int port;
    frontier_config_t cfg;
    size_t batch;
    unsigned hold_ms; /* hold each batch this long before finishing */
    int graph_n;      /* pages of the link graph (0: no links) */
    int victim;       /* record the first batch in test:victim, then hang */
} wopts_t;

/* Records a batch: claim times, fetched set, in-flight check per origin
 * (at most per_host, or 1 when the crawl has a delay). */
static void record_batch(redisContext *c, const wopts_t *o, frontier_item_t *it, size_t n)
{
    long long cap = o->cfg.delay_ms ? 1 : (long long)o->cfg.per_host;
    for (size_t i = 0; i < n; i++) {
        char origin[128];
        snprintf(origin, sizeof origin, "%.*s", (int)(strchr(it[i].url + 8, '/') - it[i].url),
                 it[i].url);
        redisReply *r = redisCommand(c, "INCR test:inflight:%s", origin);
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer > cap)
            freeReplyObject(redisCommand(c, "SET test:violation %s", it[i].url));
        if (r)
            freeReplyObject(r);
        freeReplyObject(redisCommand(c, "RPUSH test:claims %s|%llu", origin, it[i].claimed_ms));
        freeReplyObject(redisCommand(c, "SADD test:fetched %s", it[i].url));
        freeReplyObject(redisCommand(c, "HINCRBY test:count %s 1", it[i].url));
    }
}

static void unrecord_batch(redisContext *c, frontier_item_t *it, size_t n)
{
    for (size_t i = 0; i < n; i++)
        freeReplyObject(redisCommand(c, "DECR test:inflight:%b", it[i].url,
                                     (size_t)(strchr(it[i].url + 8, '/') - it[i].url)));
}

static int finish_batch(frontier_t *f, const wopts_t *o, frontier_item_t *it, size_t n)
{
    char links[64][4][64];
    const char *lp[64][4];
    frontier_done_t d[64];
    for (size_t i = 0; i < n; i++) {
        size_t k = graph_links(it[i].url, o->graph_n, links[i]);
        for (size_t j = 0; j < k; j++)
            lp[i][j] = links[i][j];
        d[i] = (frontier_done_t){.item = &it[i],
                                 .outcome = {.status = 200},
                                 .links = lp[i],
                                 .nlinks = k,
                                 .link_depth = it[i].depth + 1};
    }
    int rc = frontier_finish(f, d, n);
    return rc == CRAWL_ELEASE ? 0 : rc;
}

static int worker_loop(redisContext *c, frontier_t *f, const wopts_t *o)
{
    frontier_item_t it[64];
    uint64_t deadline = fx_now_ms() + 60000;
    while (fx_now_ms() < deadline) {
        size_t n = 0;
        frontier_state_t st;
        uint32_t wait = 0;
        if (frontier_claim(f, o->batch, it, &n, &st, &wait) < 0)
            return 4;
        if (st == FRONTIER_DONE)
            return 0;
        if (st == FRONTIER_WAIT) {
            usleep((wait > 10 ? 10 : wait) * 1000);
            continue;
        }
        if (o->victim) {
            for (size_t i = 0; i < n; i++)
                freeReplyObject(redisCommand(c, "RPUSH test:victim %s", it[i].url));
            for (;;)
                pause();
        }
        record_batch(c, o, it, n);
        usleep(o->hold_ms * 1000);
        unrecord_batch(c, it, n);
        int rc = finish_batch(f, o, it, n);
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&it[i]);
        char why[256];
        if (rc == 0 && (rc = frontier_layers_tend(f, why, sizeof why)) < 0) /* as the engine */
            fprintf(stderr, "worker: the visited set's layers: %s\n", why);
        if (rc < 0) {
            fprintf(stderr, "worker: frontier_finish: %s\n", crawl_strerror(rc));
            return 5;
        }
    }
    return 3; /* never saw the end of the crawl */
}

static pid_t spawn_worker(const wopts_t *o)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    redisContext *c = connect_port(o->port);
    bloom_t *b = c ? open_bloom(c, 0) : NULL;
    frontier_t *f = b ? open_frontier(c, b, &o->cfg) : NULL;
    int rc = f ? worker_loop(c, f, o) : 6;
    fr_close(f);
    bloom_close(b);
    if (c)
        redisFree(c);
    _exit(rc);
}

static void check_all_fetched(redisContext *c, int n)
{
    for (int i = 0; i < n; i++) {
        char url[64];
        graph_url(i, url, sizeof url);
        cr_assert_eq(redis_int(c, "SISMEMBER test:fetched %s", url), 1, "%s was never fetched",
                     url);
    }
}

static void check_drained(redisContext *c)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(c, CRAWL, &s), 0);
    cr_assert_eq(s.queued, 0, "queued %llu", (unsigned long long)s.queued);
    cr_assert_eq(s.in_flight, 0, "in flight %llu", (unsigned long long)s.in_flight);
    cr_assert_eq(s.delayed, 0);
}

/* Waits for worker pid as fx_wait does, at most rounds rounds of 10 ms,
 * running the frontier's invariant checker each round. */
static int wait_checking(env_t *e, pid_t pid, int rounds, int *checks)
{
    for (int i = 0; i < rounds; i++, (*checks)++) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        side_check(e->c, e->f, e->per_host);
        usleep(10000);
    }
    return fx_wait(pid, 0); /* kills it: it did not end in time */
}

/* ---- tests ------------------------------------------------------------------ */

Test(frontier, four_worker_processes_respect_delay_and_per_host_and_all_see_the_end)
{
    frontier_config_t cfg = test_config();
    cfg.per_host = 2;
    cfg.delay_ms = 40;
    env_t e;
    env_start(&e, &cfg);
    char buf[16][64];
    const char *urls[16];
    for (int i = 0; i < 16; i++) {
        snprintf(buf[i], sizeof buf[i], "http://one.test/p%d", i);
        urls[i] = buf[i];
    }
    seed_urls(e.f, urls, 16, 0);
    wopts_t o = {.port = fx_redis_port(e.r), .cfg = cfg, .batch = 4, .hold_ms = 100};
    pid_t pids[4];
    for (int i = 0; i < 4; i++)
        pids[i] = spawn_worker(&o);
    for (int i = 0; i < 4; i++) {
        int st = fx_wait(pids[i], 90000);
        cr_assert_eq(st, 0, "worker %d exited %d (3: never saw the end of the crawl)", i, st);
    }
    redisReply *r = redisCommand(e.c, "LRANGE test:claims 0 -1");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 16, "16 claims recorded");
    unsigned long long t[16];
    for (size_t i = 0; i < 16; i++)
        t[i] = strtoull(strchr(r->element[i]->str, '|') + 1, NULL, 10);
    freeReplyObject(r);
    for (int i = 0; i < 16; i++) /* sort the server timestamps */
        for (int j = i + 1; j < 16; j++)
            if (t[j] < t[i]) {
                unsigned long long x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    /* one URL in flight (--delay > 0, whatever per_host), each claimed 40 ms
     * after the one before was finished, which was held 100 ms (a lower
     * bound): the server clock sees 140 ms from claim to claim at least */
    for (int i = 1; i < 16; i++)
        cr_assert_geq(t[i] - t[i - 1], 140, "claims %d and %d only %llu ms apart", i - 1, i,
                      t[i] - t[i - 1]);
    cr_assert_eq(redis_int(e.c, "EXISTS %s", "test:violation"), 0, "more than 1 in flight");
    cr_assert_eq(redis_int(e.c, "SCARD %s", "test:fetched"), 16);
    check_drained(e.c);
    env_stop(&e);
}

Test(frontier, worker_killed_mid_batch_has_its_urls_crawled_by_others)
{
    frontier_config_t cfg = test_config();
    cfg.lease_ms = 300;
    env_t e;
    env_start(&e, &cfg);
    char buf[40][64];
    const char *urls[40];
    for (int i = 0; i < 40; i++) {
        graph_url(i, buf[i], sizeof buf[i]);
        urls[i] = buf[i];
    }
    seed_urls(e.f, urls, 40, 0);
    wopts_t o = {.port = fx_redis_port(e.r), .cfg = cfg, .batch = 10, .victim = 1};
    pid_t victim = spawn_worker(&o);
    for (int i = 0; i < 1000 && redis_int(e.c, "LLEN %s", "test:victim") < 10; i++)
        usleep(10000);
    cr_assert_eq(redis_int(e.c, "LLEN %s", "test:victim"), 10, "the victim claimed a batch");
    kill(victim, SIGKILL);
    fx_wait(victim, 10000);
    o.victim = 0;
    o.batch = 4;
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = spawn_worker(&o);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(fx_wait(pids[i], 90000), 0, "survivor %d failed", i);
    redisReply *r = redisCommand(e.c, "LRANGE test:victim 0 -1");
    for (size_t i = 0; i < r->elements; i++)
        cr_assert_eq(redis_int(e.c, "SISMEMBER test:fetched %s", r->element[i]->str), 1,
                     "%s (held by the killed worker) was never crawled", r->element[i]->str);
    freeReplyObject(r);
    check_all_fetched(e.c, 40);
    check_drained(e.c);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_geq(s.reclaimed, 10);
    env_stop(&e);
}

/* The graph of GRAPH_N pages from page 0, crawled to its end by 4 worker
 * processes of e's crawl, `kills` of them SIGKILLed at random points (rng
 * from seed) and started again, the frontier's invariants checked every
 * 10 ms while they run and after each kill.  Every page fetched, nothing
 * left; returns the checks made. */
#define GRAPH_N 2000
static int graph_crawl(env_t *e, const frontier_config_t *cfg, int kills, unsigned seed)
{
    char first[64];
    graph_url(0, first, sizeof first);
    const char *start[] = {first};
    seed_urls(e->f, start, 1, 0);
    wopts_t o = {
        .port = fx_redis_port(e->r), .cfg = *cfg, .batch = 8, .hold_ms = 1, .graph_n = GRAPH_N};
    pid_t pids[4];
    for (int i = 0; i < 4; i++)
        pids[i] = spawn_worker(&o);
    unsigned rng = seed;
    int checks = 0;
    for (int kill_no = 0; kill_no < kills; kill_no++) {
        for (unsigned t = 0, wait = 20 + rand_r(&rng) % 120; t < wait; t += 10, checks++) {
            usleep(10000);
            side_check(e->c, e->f, cfg->per_host);
        }
        int w = rand_r(&rng) % 4;
        kill(pids[w], SIGKILL);
        fx_wait(pids[w], 10000);
        side_check(e->c, e->f, cfg->per_host);
        pids[w] = spawn_worker(&o);
    }
    for (int i = 0; i < 4; i++)
        cr_assert_eq(wait_checking(e, pids[i], 12000, &checks), 0,
                     "worker %d did not finish the crawl", i);
    check_all_fetched(e->c, GRAPH_N);
    check_drained(e->c);
    return checks;
}

Test(frontier, killing_workers_at_random_points_never_loses_a_url)
{
    frontier_config_t cfg = test_config();
    cfg.lease_ms = 300;
    cfg.per_host = 4;
    env_t e;
    env_start(&e, &cfg);
    int checks = graph_crawl(&e, &cfg, 12, 12345);
    cr_log_info("random kills: the invariants held at %d checks", checks);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_log_info("random kills: %llu pages fetched, %llu URLs reclaimed from killed workers",
                (unsigned long long)s.fetched, (unsigned long long)s.reclaimed);
    env_stop(&e);
}

/* ---- a visited set that grows ------------------------------------------------- */

/* The graph of n pages crawled by 4 worker processes on a visited set that
 * starts at 64 URLs (so through 5 layers, each published while the others
 * race), kills at random points when kills is set.  Every page fetched;
 * without kills, each exactly once. */
static void grow_crawl(int kills)
{
    env_grow_from = 64;
    frontier_config_t cfg = test_config();
    cfg.lease_ms = 300;
    cfg.per_host = 4;
    env_t e;
    env_start(&e, &cfg);
    cr_assert_eq(bloom_growth(e.b), 2.0);
    int checks = graph_crawl(&e, &cfg, kills, 777);
    long long layers = redis_int(e.c, "HGET %s layers", "crawler:{" CRAWL "}:seen:meta");
    cr_expect_geq(layers, 5, "%lld layers for %d URLs from 64", layers, GRAPH_N);
    cr_expect_eq(redis_int(e.c, "HGET %s unrecorded_links", "crawler:{" CRAWL "}:stats"), 0,
                 "links queued without being recorded in the visited set");
    redisReply *r = redisCommand(e.c, "HGETALL test:count");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    size_t twice = 0;
    for (size_t i = 1; i < r->elements; i += 2)
        twice += strtol(r->element[i]->str, NULL, 10) > 1;
    freeReplyObject(r);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    if (!kills)
        cr_expect_eq(twice, 0, "%zu URLs fetched twice", twice);
    else /* a URL leased by a killed worker is fetched again: those only */
        cr_expect_leq(twice, s.reclaimed, "%zu URLs fetched twice, %llu reclaimed", twice,
                      (unsigned long long)s.reclaimed);
    cr_log_info("growing visited set: %lld layers, %zu URLs fetched twice, %llu reclaimed, "
                "%d checks",
                layers, twice, (unsigned long long)s.reclaimed, checks);
    env_stop(&e);
    env_grow_from = 0;
}

Test(frontier, a_growing_visited_set_fetches_each_url_once_across_racing_workers)
{
    grow_crawl(0);
}

Test(frontier, a_growing_visited_set_loses_nothing_when_workers_are_killed)
{
    grow_crawl(8);
}

/* A visited set whose newest layer is full and whose next layer does not
 * fit in what Redis has left under maxmemory: the worker's tending of the
 * layers says so (CRAWL_EFULL, the bytes needed in the message: the crawl
 * stops on it), publishes nothing and leaves no block of the layer; while
 * the newest still has room, the same refusal is not an error. */
/* Sets the test server's maxmemory to what it uses now plus room bytes
 * (room < 0: no limit). */
static void limit_memory(redisContext *c, long long room)
{
    long long used = fx_redis_info(c, "memory", "used_memory");
    char cmd[64];
    snprintf(cmd, sizeof cmd, "CONFIG SET maxmemory %lld", room < 0 ? 0 : used + room);
    redisReply *r = redisCommand(c, cmd);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s", cmd);
    freeReplyObject(r);
}

Test(frontier, a_next_layer_that_does_not_fit_is_reported_when_the_newest_is_full)
{
    /* a first layer of 10^6 URLs (3 MB), whose fill the test sets in its
     * meta: the next layer takes 6 MB, far more than the 1 MB left */
    env_grow_from = 1000000;
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *meta = "crawler:{" CRAWL "}:seen:meta";
    const char *one[] = {"http://a.test/1"}, *two[] = {"http://a.test/2"},
               *three[] = {"http://a.test/3"};
    char cmd[128], why[512];
    /* 95%: past the 90% that asks for the next layer, which does not fit:
     * not needed yet, not an error */
    snprintf(cmd, sizeof cmd, "HSET %s added 950000", meta);
    freeReplyObject(redisCommand(e.c, cmd));
    cr_assert_eq(seed_urls(e.f, one, 1, 0), 1);
    limit_memory(e.c, 1 << 20);
    cr_expect_eq(frontier_layers_tend(e.f, why, sizeof why), 0, "not needed yet: %s", why);
    /* full */
    limit_memory(e.c, -1);
    snprintf(cmd, sizeof cmd, "HSET %s added 1000000", meta);
    freeReplyObject(redisCommand(e.c, cmd));
    cr_assert_eq(seed_urls(e.f, two, 1, 0), 1);
    limit_memory(e.c, 1 << 20);
    usleep(1100 * 1000); /* (a layer that did not fit is tried again after a second) */
    int rc = frontier_layers_tend(e.f, why, sizeof why);
    cr_expect_eq(rc, CRAWL_EFULL, "tend: %s (%s)", crawl_strerror(rc), why);
    cr_expect(strstr(why, "cannot grow") && strstr(why, "bytes"), "message: %s", why);
    cr_expect_eq(redis_int(e.c, "HGET %s layers", meta), 1);
    cr_expect_eq(redis_int(e.c, "EXISTS %s", "crawler:{" CRAWL "}:seen:L1:b:0"), 0);
    cr_expect_eq(redis_int(e.c, "EXISTS %s", "crawler:{" CRAWL "}:seen:L1:meta"), 0);
    /* with room again, the layer is made; the next offer publishes it */
    limit_memory(e.c, -1);
    usleep(1100 * 1000);
    cr_expect_eq(frontier_layers_tend(e.f, why, sizeof why), 0, "%s", why);
    cr_expect_eq(redis_int(e.c, "EXISTS %s", "crawler:{" CRAWL "}:seen:L1:meta"), 1);
    cr_assert_eq(seed_urls(e.f, three, 1, 0), 1);
    cr_expect_eq(redis_int(e.c, "HGET %s layers", meta), 2);
    env_stop(&e);
    env_grow_from = 0;
}
