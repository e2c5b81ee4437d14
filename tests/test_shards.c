/* A crawl split into shards (docs/sharding.md) on one real
 * redis-server: every URL claimed once while pages link across shards,
 * the end of the crawl found over every shard (never while a page is in
 * flight in one), stats summed, reset, the shard count fixed at creation;
 * and, over two redis-servers standing for two masters, a worker SIGKILLed
 * in the middle of finishing a page whose link is for the other shard:
 * nothing lost, the page fetched at most once more. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_env.h"
#include "rconn.h"
#include "side.h"

#define CRAWL "sh"
#define HOSTS 16
#define PAGES 10 /* a host's pages /p0 .. /p9 */

/* A handle on crawl CRAWL of `shards` shards (0: join), delay 0. */
static frontier_t *open_sharded(redisContext *c, unsigned shards, const char *worker, char *err,
                                size_t errlen)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 4;
    cfg.shards = shards;
    cfg.worker_id = worker;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    return fr_open(c, &cfg, NULL, err, errlen);
}

static void url_of(int h, int k, char *buf, size_t len)
{
    snprintf(buf, len, "http://127.0.%d.1:8080/p%d", h + 1, k);
}

/* Host and page of a URL url_of made. */
static void parse_url(const char *u, int *h, int *k)
{
    cr_assert_eq(sscanf(u, "http://127.0.%d.1:8080/p%d", h, k), 2, "claimed '%s'", u);
    (*h)--;
}

static long long count_keys(redisContext *c, const char *pattern)
{
    long long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        n += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0"));
    return n;
}

/* Claims on handle f until it answers; asserts the call worked. */
static size_t claim(frontier_t *f, frontier_item_t *items, size_t max, frontier_state_t *st)
{
    size_t n = 0;
    uint32_t wait = 0;
    int rc = frontier_claim(f, max, items, &n, st, &wait);
    cr_assert_eq(rc, 0, "frontier_claim: %s (%s)", crawl_strerror(rc), frontier_last_error(f));
    return n;
}

/* Page (h, k) links to the same page of the next host, to the next page of
 * a host four further on, and to its own next page: every page of every
 * host is reachable from the seeds (page 0 of each host). */
static void links_of(int h, int k, char buf[3][64])
{
    url_of((h + 1) % HOSTS, k, buf[0], 64);
    url_of((h + 4) % HOSTS, (k + 1) % PAGES, buf[1], 64);
    url_of(h, (k + 1) % PAGES, buf[2], 64);
}

Test(shards, every_url_once_across_four_shards_and_the_end_found_over_all)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r), *c2 = fx_redis_connect(r);
    char err[512] = "";
    frontier_t *a = open_sharded(c, 4, "wa", err, sizeof err);
    cr_assert_not_null(a, "frontier_open: %s", err);
    frontier_t *b = open_sharded(c2, 0, "wb", err, sizeof err); /* joins the crawl's 4 */
    cr_assert_not_null(b, "frontier_open: %s", err);
    cr_assert_eq(frontier_shards(a), 4u);
    cr_assert_eq(frontier_shards(b), 4u);

    char seeds[HOSTS][64];
    const char *sp[HOSTS];
    for (int h = 0; h < HOSTS; h++) {
        url_of(h, 0, seeds[h], sizeof seeds[h]);
        sp[h] = seeds[h];
    }
    size_t added = 0;
    cr_assert_eq(frontier_seed(a, sp, HOSTS, 0, &added), 0, "%s", frontier_last_error(a));
    cr_assert_eq(added, HOSTS);
    /* the hosts are spread: each of the 4 shards has claimable hosts (new
     * hosts are in P fresh) */
    for (int s = 0; s < 4; s++) {
        char p[64];
        if (s == 0)
            snprintf(p, sizeof p, "crawler:{" CRAWL "}:");
        else
            snprintf(p, sizeof p, "crawler:{" CRAWL "/%d}:", s);
        redisReply *z = redisCommand(c, "ZCARD %sready", p),
                   *l = redisCommand(c, "LLEN %sfresh", p);
        cr_assert(z && z->type == REDIS_REPLY_INTEGER && l && l->type == REDIS_REPLY_INTEGER);
        cr_expect_gt(z->integer + l->integer, 0, "shard %d has no claimable host", s);
        freeReplyObject(z);
        freeReplyObject(l);
    }

    int fetched[HOSTS][PAGES] = {{0}};
    size_t total = 0, admitted = HOSTS, rounds = 0;
    frontier_state_t st = FRONTIER_WAIT;
    int done[2] = {0, 0};
    while (!(done[0] && done[1]) && rounds++ < 5000) {
        frontier_t *f = rounds % 2 ? a : b; /* two workers take turns */
        frontier_item_t items[8] = {0};
        size_t n = claim(f, items, 8, &st);
        done[rounds % 2] = st == FRONTIER_DONE;
        if (st == FRONTIER_DONE)
            cr_assert_eq(total, (size_t)HOSTS * PAGES, "done after %zu of %d pages", total,
                         HOSTS * PAGES);
        char lk[8][3][64];
        const char *lp[8][3];
        size_t nnew[8] = {0};
        frontier_done_t pages[8];
        for (size_t i = 0; i < n; i++) {
            int h, k;
            parse_url(items[i].url, &h, &k);
            cr_assert_eq(fetched[h][k]++, 0, "%s claimed twice", items[i].url);
            total++;
            links_of(h, k, lk[i]);
            for (int j = 0; j < 3; j++)
                lp[i][j] = lk[i][j];
            pages[i] = (frontier_done_t){.item = &items[i],
                                         .outcome = {.status = 200, .bytes = 10},
                                         .links = lp[i],
                                         .nlinks = 3,
                                         .link_depth = items[i].depth + 1,
                                         .nnew = &nnew[i]};
        }
        if (n) {
            int rc = frontier_finish(f, pages, n);
            cr_assert_eq(rc, 0, "frontier_finish: %s (%s)", crawl_strerror(rc),
                         frontier_last_error(f));
        }
        for (size_t i = 0; i < n; i++) {
            admitted += nnew[i];
            frontier_item_clear(&items[i]);
        }
        if (!n && st == FRONTIER_WAIT)
            usleep(20000); /* shards resting (done once): the next sweep soon */
    }
    cr_assert(done[0] && done[1], "no end after %zu rounds (%zu pages)", rounds, total);
    cr_expect_eq(total, (size_t)HOSTS * PAGES);
    cr_expect_eq(admitted, (size_t)HOSTS * PAGES, "new links + seeds: each URL admitted once");

    frontier_stats_t s;
    cr_assert_eq(frontier_stats(c, CRAWL, &s), 0);
    cr_expect_eq(s.shards, 4u);
    cr_expect_eq(s.enqueued, (uint64_t)HOSTS * PAGES, "enqueued over the shards");
    cr_expect_eq(s.fetched, (uint64_t)HOSTS * PAGES);
    cr_expect_eq(s.seeds, (uint64_t)HOSTS);
    cr_expect_eq(s.new_links, (uint64_t)HOSTS * PAGES - HOSTS);
    cr_expect_eq(s.seen_links + s.new_links, (uint64_t)3 * HOSTS * PAGES, "every link counted");
    cr_expect_eq(s.queued + s.in_flight + s.delayed, 0u);
    cr_expect_eq(s.hosts, (uint64_t)HOSTS);
    cr_expect_eq(s.workers, 2u);

    fr_close(a);
    fr_close(b);
    uint64_t deleted = 0;
    cr_assert_eq(frontier_reset(c, CRAWL, &deleted), 0);
    cr_expect_gt(deleted, 4u);
    cr_expect_eq(count_keys(c, "crawler:*"), 0, "reset left keys");
    redisFree(c);
    redisFree(c2);
    fx_redis_stop(r);
}

Test(shards, no_end_while_a_page_is_in_flight_in_one_shard)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r), *c2 = fx_redis_connect(r);
    char err[512] = "";
    frontier_t *a = open_sharded(c, 8, "wa", err, sizeof err);
    cr_assert_not_null(a, "frontier_open: %s", err);
    frontier_t *b = open_sharded(c2, 8, "wb", err, sizeof err);
    cr_assert_not_null(b, "frontier_open: %s", err);
    char u0[64], u1[64] = "";
    url_of(0, 0, u0, sizeof u0);
    const char *sp[] = {u0};
    cr_assert_eq(frontier_seed(a, sp, 1, 0, NULL), 0);
    frontier_item_t it[1] = {0};
    frontier_state_t st;
    size_t first = 0; /* a claim of one URL asks one shard: the ring finds the seed's */
    for (int i = 0; i < 100 && !first; i++)
        if (!(first = claim(a, it, 1, &st)))
            usleep(5000);
    cr_assert_eq(first, 1);
    /* a link of host 0's page to a host of another shard */
    int h1 = 1;
    unsigned s0 = fr_shard_of(8, u0);
    for (; h1 < HOSTS; h1++) {
        url_of(h1, 0, u1, sizeof u1);
        if (fr_shard_of(8, u1) != s0)
            break;
    }
    cr_assert_lt(h1, HOSTS, "no host of another shard");
    /* b sweeps every shard many times while a holds the page */
    for (int i = 0; i < 40; i++) {
        frontier_item_t got[4] = {0};
        size_t n = claim(b, got, 4, &st);
        cr_assert_eq(n, 0);
        cr_assert_neq(st, FRONTIER_DONE, "done while a page is in flight (sweep %d)", i);
        usleep(10000);
    }
    const char *lp[] = {u1};
    size_t nnew = 0;
    frontier_done_t pg = {.item = &it[0],
                          .outcome = {.status = 200},
                          .links = lp,
                          .nlinks = 1,
                          .link_depth = 1,
                          .nnew = &nnew};
    cr_assert_eq(frontier_finish(a, &pg, 1), 0, "%s", frontier_last_error(a));
    cr_expect_eq(nnew, 1, "the link to another shard counted as new");
    frontier_item_clear(&it[0]);
    size_t n = 0;
    for (int i = 0; i < 200 && n == 0; i++) {
        n = claim(b, it, 1, &st);
        cr_assert(n || st != FRONTIER_DONE, "done with the link of the finished page queued");
        if (!n)
            usleep(10000);
    }
    cr_assert_eq(n, 1);
    cr_expect_str_eq(it[0].url, u1);
    cr_expect_eq(it[0].depth, 1u);
    frontier_item_clear(&it[0]);
    fr_close(a);
    fr_close(b);
    redisFree(c);
    redisFree(c2);
    fx_redis_stop(r);
}

Test(shards, the_count_is_fixed_when_the_crawl_is_created)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    char err[512] = "";
    frontier_t *a = open_sharded(c, 4, "wa", err, sizeof err);
    cr_assert_not_null(a, "frontier_open: %s", err);
    frontier_t *b = open_sharded(c, 8, "wb", err, sizeof err);
    cr_expect_null(b, "a second count taken");
    cr_expect(strstr(err, "has 4 shards, not the 8 asked for"), "said '%s'", err);
    fr_close(b);
    /* a crawl-wide page limit over shards is kept in allotments, which a crawl
     * takes only from its creation (quota.c): refused on this one */
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.max_pages = 10;
    b = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_expect_null(b);
    cr_expect(strstr(err, "created without a page limit"), "said '%s'", err);
    fr_close(b);
    frontier_control_change_t ch = {0};
    ch.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
    ch.value[FRONTIER_LIMIT_MAX_PAGES] = 5;
    cr_expect_eq(frontier_control(c, CRAWL, &ch, NULL, NULL, NULL, err, sizeof err), CRAWL_EINVAL);
    cr_expect(strstr(err, "created without a page limit"), "said '%s'", err);
    /* a pause is written to every shard's copy */
    memset(&ch, 0, sizeof ch);
    ch.pause = 1;
    cr_assert_eq(frontier_control(c, CRAWL, &ch, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    for (int s = 0; s < 4; s++) {
        redisReply *h = s ? redisCommand(c, "HGET crawler:{" CRAWL "/%d}:control paused", s)
                          : redisCommand(c, "HGET crawler:{" CRAWL "}:control paused");
        cr_assert(h);
        cr_expect(h->type == REDIS_REPLY_STRING && !strcmp(h->str, "1"), "shard %d not paused", s);
        freeReplyObject(h);
    }
    fr_close(a);
    /* a crawl of one shard keeps today's layout: no key of a shard 1.. */
    a = NULL;
    frontier_config_defaults(&cfg);
    cfg.crawl = "one";
    cfg.bloom_capacity = 1000;
    a = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(a, "%s", err);
    cr_expect_eq(frontier_shards(a), 1u);
    cr_expect_eq(count_keys(c, "crawler:{one/*"), 0);
    fr_close(a);
    redisFree(c);
    fx_redis_stop(r);
}

Test(shards, a_hosts_robots_txt_is_stored_and_found_in_its_shard)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r), *c2 = fx_redis_connect(r);
    char err[512] = "";
    frontier_t *a = open_sharded(c, 8, "wa", err, sizeof err);
    cr_assert_not_null(a, "frontier_open: %s", err);
    frontier_t *b = open_sharded(c2, 0, "wb", err, sizeof err);
    cr_assert_not_null(b, "frontier_open: %s", err);
    char o[HOSTS][64];
    frontier_robots_look_t lk[HOSTS];
    for (int h = 0; h < HOSTS; h++) {
        snprintf(o[h], sizeof o[h], "http://127.0.%d.1:8080", h + 1);
        lk[h] = (frontier_robots_look_t){.origin = o[h]};
    }
    cr_assert_eq(frontier_robots_look(a, lk, HOSTS, 5000), 0);
    for (int h = 0; h < HOSTS; h++) {
        cr_assert_eq(lk[h].found, FRONTIER_ROBOTS_WON, "%s not locked for a", o[h]);
        frontier_robots_result_t res = {
            .origin = o[h], .val = o[h], .len = strlen(o[h]), .ttl_s = 60};
        cr_assert_eq(frontier_robots_store(a, &res), 0, "%s", frontier_last_error(a));
    }
    /* another handle looks them up in one batch: each found, with its own value */
    cr_assert_eq(frontier_robots_look(b, lk, HOSTS, 5000), 0);
    for (int h = 0; h < HOSTS; h++) {
        cr_expect_eq(lk[h].found, FRONTIER_ROBOTS_STORED, "%s not found by b", o[h]);
        cr_expect(lk[h].val && !strcmp(lk[h].val, o[h]), "%s: '%s'", o[h],
                  lk[h].val ? lk[h].val : "");
        free(lk[h].val);
        /* in its host's shard */
        unsigned s = fr_shard_of(8, o[h]);
        redisReply *e = s ? redisCommand(c, "EXISTS crawler:{" CRAWL "/%u}:robots:%s", s, o[h])
                          : redisCommand(c, "EXISTS crawler:{" CRAWL "}:robots:%s", o[h]);
        cr_assert(e && e->type == REDIS_REPLY_INTEGER);
        cr_expect_eq(e->integer, 1, "%s's robots.txt not in shard %u", o[h], s);
        freeReplyObject(e);
    }
    fr_close(a);
    fr_close(b);
    redisFree(c);
    redisFree(c2);
    fx_redis_stop(r);
}

/* ---- a worker killed between its page's links and its page ------------ */

/* A local Redis Cluster for the two-shard tests: with 2 masters, shard 0
 * of crawl CRAWL (slot 12452) is on master 1 and shard 1 (slot 7113) on
 * master 0; with 1 master, both on it.  r routes to them as the crawler
 * does. */
typedef struct two_masters {
    fx_cluster_t *cl;
    rconn_t *r;
} two_masters_t;

static void two_start(two_masters_t *t, int masters)
{
    t->cl = fx_cluster_start(masters, 0, 2000);
    cr_assert_not_null(t->cl, "cannot start a local Redis Cluster: %s", fx_error());
    char err[512] = "", route[FRONTIER_MAX_BLOOM_NAME];
    cr_assert_eq(frontier_bloom_name(CRAWL, route, sizeof route), 0);
    t->r = rconn_open_url(fx_cluster_url(t->cl, 0), NULL, route, err, sizeof err);
    cr_assert_not_null(t->r, "rconn_open: %s", err);
    cr_assert(masters == 1 ||
                  (fx_cluster_owner(t->cl, 0, 12452) == 1 && fx_cluster_owner(t->cl, 0, 7113) == 0),
              "the shards are not on the two masters");
}

static void two_stop(two_masters_t *t)
{
    rconn_close(t->r);
    fx_cluster_stop(t->cl);
}

/* The node that serves shard s. */
static int node_of(const two_masters_t *t, unsigned s)
{
    return fx_cluster_nnodes(t->cl) == 1 ? 0 : s == 0 ? 1 : 0;
}

/* A handle on the 2-shard crawl over t's masters, leases of 400 ms, on the
 * new connection *c to shard 0's (the caller frees it after the handle). */
static frontier_t *open_two(two_masters_t *t, const char *worker, redisContext **c)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 4;
    cfg.shards = 2;
    cfg.lease_ms = 400;
    cfg.worker_id = worker;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    char err[512] = "";
    *c = rconn_connect(t->r, err, sizeof err);
    frontier_t *f = *c ? fr_open_on(t->r, &cfg, NULL, err, sizeof err) : NULL;
    if (!f)
        fprintf(stderr, "frontier_open: %s\n", err);
    return f;
}

/* A URL of a host in shard s of 2 (host number from *h on). */
static void url_in_shard(unsigned s, int *h, char *buf, size_t len)
{
    for (;; (*h)++) {
        url_of(*h, 0, buf, len);
        if (fr_shard_of(2, buf) == s)
            return;
    }
}

/* Page u, in shard own, seeded on f; its link l in the other shard. */
static void seed_page_with_link(frontier_t *f, unsigned own, char u[64], char l[64])
{
    int h = 0;
    url_in_shard(own, &h, u, 64);
    h++;
    url_in_shard(1 - own, &h, l, 64);
    const char *sp[] = {u};
    cr_assert_eq(frontier_seed(f, sp, 1, 0, NULL), 0, "%s", frontier_last_error(f));
}

/* One shard's stats field on its server. */
static long long shard_stat(const two_masters_t *t, unsigned s, const char *field)
{
    redisContext *c = fx_cluster_connect(t->cl, node_of(t, s));
    redisReply *r = s ? redisCommand(c, "HGET crawler:{" CRAWL "/%u}:stats %s", s, field)
                      : redisCommand(c, "HGET crawler:{" CRAWL "}:stats %s", field);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* The worker of the child: claims page u, says so ('c'), waits for 'g',
 * says 'f' and finishes u with its one link l, then 'e'.  Never returns. */
static void doomed_worker(two_masters_t *t, const char *u, const char *l, int out, int in)
{
    redisContext *c = NULL;
    frontier_t *f = open_two(t, "doomed", &c);
    frontier_item_t it = {0};
    size_t n = 0;
    frontier_state_t st;
    uint32_t wait = 0;
    for (int i = 0; i < 400 && !n; i++)
        if (!f || frontier_claim(f, 1, &it, &n, &st, &wait) < 0 || (!n && usleep(5000) < 0))
            _exit(2);
    if (!n || strcmp(it.url, u))
        _exit(3);
    char ch = 'c';
    if (write(out, &ch, 1) != 1 || read(in, &ch, 1) != 1 || ch != 'g')
        _exit(4);
    ch = 'f';
    if (write(out, &ch, 1) != 1)
        _exit(4);
    const char *lp[] = {l};
    frontier_done_t pg = {
        .item = &it, .outcome = {.status = 200}, .links = lp, .nlinks = 1, .link_depth = 1};
    int rc = frontier_finish(f, &pg, 1);
    ch = 'e';
    _exit(write(out, &ch, 1) == 1 && rc == 0 ? 0 : 5);
}

/* Claims and finishes (with link l on page u) until the crawl is done;
 * counts the fetches of u and of l. */
static void drain(frontier_t *f, const char *u, const char *l, int *nu, int *nl)
{
    frontier_state_t st = FRONTIER_WAIT;
    for (int round = 0; round < 2000 && st != FRONTIER_DONE; round++) {
        frontier_item_t it[4] = {0};
        size_t n = claim(f, it, 4, &st);
        for (size_t i = 0; i < n; i++) {
            int own = !strcmp(it[i].url, u);
            cr_assert(own || !strcmp(it[i].url, l), "claimed '%s'", it[i].url);
            (*(own ? nu : nl))++;
            const char *lp[] = {l};
            frontier_done_t pg = {.item = &it[i],
                                  .outcome = {.status = 200},
                                  .links = lp,
                                  .nlinks = own,
                                  .link_depth = it[i].depth + 1};
            cr_assert_eq(frontier_finish(f, &pg, 1), 0, "%s", frontier_last_error(f));
            frontier_item_clear(&it[i]);
        }
        if (!n)
            usleep(10000);
    }
    cr_assert_eq(st, FRONTIER_DONE, "the crawl never ended");
}

/* Page u (in shard `own`) links to l (in the other shard); a worker in a
 * child claims u and starts finishing it while server `stopped` is
 * SIGSTOPped, and is SIGKILLed there.  stopped == the foreign shard's:
 * the page's own call must not go out before its link's offer answered,
 * so u stays leased.  stopped == own's: the link is queued in its shard
 * while u is still leased.  Then a live worker drains the crawl: l fetched
 * once, u at most once more, nothing left. */
static void killed_between(unsigned own, unsigned stopped)
{
    two_masters_t t;
    two_start(&t, 2);
    redisContext *ca = NULL;
    frontier_t *a = open_two(&t, "live", &ca);
    cr_assert_not_null(a);
    char u[64], l[64];
    seed_page_with_link(a, own, u, l);

    int up[2], down[2];
    cr_assert(pipe(up) == 0 && pipe(down) == 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        doomed_worker(&t, u, l, up[1], down[0]);
    char ch = 0;
    cr_assert(read(up[0], &ch, 1) == 1 && ch == 'c', "the child did not claim %s", u);
    pid_t srv = fx_cluster_pid(t.cl, node_of(&t, stopped));
    kill(srv, SIGSTOP);
    ch = 'g';
    int said = write(down[1], &ch, 1) == 1 && read(up[0], &ch, 1) == 1 && ch == 'f';
    /* 40 looks, 10 ms apart, at the server that answers */
    int leased = 0, queued = 0;
    for (int i = 0; said && i < 40; i++) {
        if (stopped != own)
            leased += shard_stat(&t, own, "inflight") == 1 && shard_stat(&t, own, "fetched") == 0;
        else if (shard_stat(&t, 1 - own, "queued") == 1)
            queued = 1;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    kill(srv, SIGCONT);
    cr_assert(said, "the child did not reach its finish");
    cr_assert(WIFSIGNALED(status), "the child's finish returned (status %d)", status);
    if (stopped != own)
        cr_expect_eq(leased, 40, "the page acknowledged before its link's offer was answered");
    else
        cr_expect(queued, "the link not queued before the page's own call");

    int nu = 0, nl = 0;
    drain(a, u, l, &nu, &nl);
    cr_expect_eq(nl, 1, "the link fetched %d times", nl);
    cr_expect_leq(nu, 1, "the page fetched %d more times", nu);
    if (stopped != own)
        cr_expect_eq(nu, 1, "the page, never acknowledged, not fetched again");
    frontier_stats_t s;
    cr_assert_eq(frontier_stats_routed(ca, t.r, CRAWL, &s), 0);
    cr_expect_eq(s.enqueued, 2u, "the page and its link, each admitted once");
    cr_expect_eq(s.queued + s.in_flight + s.delayed + s.dead, 0u);
    /* the page finished once: by the child (its call ran when its server
     * came back) or by the live worker (nu 1); and the link */
    cr_expect_eq(s.fetched, 2u, "fetched %llu (the page %d more times)",
                 (unsigned long long)s.fetched, nu);
    fr_close(a);
    redisFree(ca);
    two_stop(&t);
}

Test(shards, killed_while_its_links_offer_waits_the_page_stays_leased_and_no_link_is_lost)
{
    killed_between(0, 1);
    killed_between(1, 0);
}

Test(shards, killed_after_its_links_were_queued_the_page_is_fetched_at_most_once_more)
{
    killed_between(0, 0);
    killed_between(1, 1);
}

/* ---- an offer refused: its page is not acknowledged -------------------- */

/* The crawl drained: the link fetched once, the page never again. */
static void drain_and_check(frontier_t *f, const char *u, const char *l, redisContext *c,
                            const rconn_t *r)
{
    int nu = 0, nl = 0;
    drain(f, u, l, &nu, &nl);
    cr_expect_eq(nl, 1, "the link fetched %d times", nl);
    cr_expect_eq(nu, 0, "the page fetched %d more times", nu);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats_routed(c, r, CRAWL, &s), 0);
    cr_expect_eq(s.enqueued, 2u);
    cr_expect_eq(s.fetched, 2u);
    cr_expect_eq(s.queued + s.in_flight + s.delayed + s.dead, 0u);
}

/* A second finish of it (the offer's server accepts again), then the
 * crawl drained. */
static void finish_again_and_drain(frontier_t *f, const char *u, const char *l, frontier_item_t *it,
                                   redisContext *c, const rconn_t *r)
{
    const char *lp[] = {l};
    frontier_done_t pg = {
        .item = it, .outcome = {.status = 200}, .links = lp, .nlinks = 1, .link_depth = 1};
    cr_assert_eq(frontier_finish(f, &pg, 1), 0, "%s", frontier_last_error(f));
    frontier_item_clear(it);
    drain_and_check(f, u, l, c, r);
}

/* Two masters: the link's one at its maxmemory refuses the offer (OOM,
 * before it runs).  Finished as the engine does (the replies looked at
 * without waiting), the page's call is not sent: the refusal takes the
 * link down, the finish stays in flight (its offer kept, to be sent again)
 * and the page stays leased, not acknowledged; once the master has room
 * and the link is back, the finish goes on and ends, the link queued once. */
Test(shards, an_offer_refused_on_another_master_keeps_the_finish_in_flight_and_the_page_leased)
{
    two_masters_t t;
    two_start(&t, 2);
    redisContext *c = NULL;
    frontier_t *f = open_two(&t, "w", &c);
    cr_assert_not_null(f);
    char u[64], l[64];
    seed_page_with_link(f, 0, u, l);

    redisContext *c1 = fx_cluster_connect(t.cl, node_of(&t, 1));
    redisReply *r = redisCommand(c1, "CONFIG GET maxmemory");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    char was[32];
    snprintf(was, sizeof was, "%s", r->element[1]->str);
    freeReplyObject(r);
    freeReplyObject(redisCommand(c1, "CONFIG SET maxmemory-policy noeviction"));
    freeReplyObject(redisCommand(c1, "CONFIG SET maxmemory 1"));

    frontier_item_t it = {0};
    frontier_state_t st = FRONTIER_WAIT;
    for (int i = 0; i < 400 && !claim(f, &it, 1, &st); i++)
        usleep(5000);
    cr_assert_not_null(it.url, "page %s never claimed", u);
    const char *lp[] = {l};
    frontier_done_t pg = {
        .item = &it, .outcome = {.status = 200}, .links = lp, .nlinks = 1, .link_depth = 1};
    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_finish_start(f, &pg, 1, &call), 0, "%s", frontier_last_error(f));
    rconn_link_t *link = fr_link_of(f);
    int down = 0;
    for (int i = 0; i < 2000 && !down; i++) /* a bound on the test, not a verdict */
        if (!(down = rconn_link_poll(link) < 0))
            usleep(1000);
    cr_assert(down, "the refusal did not take the link down");
    cr_expect(strstr(rconn_link_error(link), "OOM"), "the link's error: %s",
              rconn_link_error(link));
    cr_expect_eq(frontier_call_ready(f, call), 0, "the finish ended with its offer refused");
    cr_expect_eq(frontier_call_end(f, call), CRAWL_EREDIS, "the link is down");
    cr_expect_eq(shard_stat(&t, 0, "inflight"), 1, "the page not leased any more");
    cr_expect_eq(shard_stat(&t, 0, "fetched"), 0, "the page acknowledged");

    freeReplyObject(redisCommand(c1, "CONFIG SET maxmemory %s", was));
    redisFree(c1);
    cr_assert_eq(rconn_link_connect(link, 0), 0, "%s", rconn_link_error(link));
    cr_assert_eq(frontier_call_end(f, call), 0, "the finish after the reconnect: %s",
                 frontier_last_error(f));
    frontier_call_free(call);
    frontier_item_clear(&it);
    drain_and_check(f, u, l, c, t.r);
    fr_close(f);
    redisFree(c);
    two_stop(&t);
}

/* Both shards on one master of a cluster.  An offer can then fail alone
 * (MOVED or TRYAGAIN while its slot moves; here: an ACL that lets the
 * worker touch shard 0's keys only, refused before the offer runs) while
 * the page's call, pipelined behind it, would still run: a page
 * acknowledged without its link.  The page must stay leased. */
Test(shards, an_offer_refused_on_the_same_master_keeps_the_page_leased)
{
    two_masters_t t;
    two_start(&t, 1);
    redisContext *c = NULL;
    frontier_t *f = open_two(&t, "w", &c);
    cr_assert_not_null(f);
    char u[64], l[64];
    seed_page_with_link(f, 0, u, l);

    redisReply *r = redisCommand(c, "ACL SETUSER half on >pw ~crawler:{" CRAWL "}:* &* +@all");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s", r ? r->str : "?");
    freeReplyObject(r);
    frontier_item_t it = {0};
    frontier_state_t st = FRONTIER_WAIT;
    for (int i = 0; i < 400 && !claim(f, &it, 1, &st); i++)
        usleep(5000);
    cr_assert_not_null(it.url, "page %s never claimed", u);
    /* the handle's own connection (its link's, idle now) as the half user */
    redisContext *lc = rconn_link_context(fr_link_of(f), f->shard[0].slot);
    cr_assert_not_null(lc);
    r = redisCommand(lc, "AUTH half pw");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "AUTH: %s", r ? r->str : "?");
    freeReplyObject(r);
    const char *lp[] = {l};
    frontier_done_t pg = {
        .item = &it, .outcome = {.status = 200}, .links = lp, .nlinks = 1, .link_depth = 1};
    int rc = frontier_finish(f, &pg, 1);
    lc = rconn_link_context(fr_link_of(f), f->shard[0].slot);
    cr_assert_not_null(lc);
    r = redisCommand(lc, "AUTH default any");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "AUTH default: %s", r ? r->str : "?");
    freeReplyObject(r);
    cr_expect_lt(rc, 0, "the finish said it worked");
    cr_expect_eq(shard_stat(&t, 0, "inflight"), 1, "the page not leased any more");
    cr_expect_eq(shard_stat(&t, 0, "fetched"), 0, "the page acknowledged without its link");

    finish_again_and_drain(f, u, l, &it, c, t.r);
    fr_close(f);
    redisFree(c);
    two_stop(&t);
}

/* ---- a resharding that has moved part of a shard ------------------------------ */

/* A Redis command on node i of t's cluster, asserted not to fail. */
static redisReply *node_cmd(two_masters_t *t, int i, const char *fmt, ...)
{
    redisContext *c = fx_cluster_connect(t->cl, i);
    cr_assert_not_null(c, "%s", fx_error());
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "node %d: %s: %s", i, fmt, r ? r->str : c->errstr);
    redisFree(c);
    return r;
}

/* A field of node i's INFO section (0 if absent). */
static long long node_info(two_masters_t *t, int i, const char *section, const char *field)
{
    redisReply *r = node_cmd(t, i, "INFO %s", section);
    const char *at = strstr(r->str, field);
    long long v = at ? strtoll(at + strlen(field), NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

/* Calls turned away by a slot's migration: ASK and TRYAGAIN errors of the
 * old master (from) and the new one (to). */
static long long refusals(two_masters_t *t, int from, int to)
{
    return node_info(t, from, "errorstats", "errorstat_ASK:count=") +
           node_info(t, from, "errorstats", "errorstat_TRYAGAIN:count=") +
           node_info(t, to, "errorstats", "errorstat_TRYAGAIN:count=");
}

/* Moves key (of slot `slot`) from node `from` to node `to` (MIGRATE, no
 * REPLACE: a key of the same name on `to` fails it, as redis-cli's reshard
 * fails). */
static void migrate_key(two_masters_t *t, int from, int to, const char *key)
{
    redisReply *r =
        node_cmd(t, from, "MIGRATE 127.0.0.1 %d %s 0 5000", fx_cluster_port(t->cl, to), key);
    freeReplyObject(r);
}

/* A resharding that has moved some of shard 0's keys to the other master
 * and not the others (CLUSTER SETSLOT MIGRATING / IMPORTING and MIGRATE, as
 * redis-cli --cluster reshard does it, stopped half way): a claim on that
 * shard is refused (ASK, then TRYAGAIN: the guard key every call names
 * never exists) and runs nowhere, so no key of the shard is written on
 * either side; once every key has moved and the slot is the new master's,
 * the same claim runs there and takes the shard's URLs, each once. */
Test(shards, no_call_runs_while_a_resharding_has_moved_part_of_its_shard, .timeout = 120)
{
    two_masters_t t;
    two_start(&t, 2);
    redisContext *c0 = NULL;
    frontier_t *f = open_two(&t, "w1", &c0);
    cr_assert_not_null(f);
    char urls[6][64];
    const char *u[6];
    int h = 0;
    for (int i = 0; i < 6; i++, h++) {
        url_in_shard(0, &h, urls[i], sizeof urls[i]);
        u[i] = urls[i];
    }
    side_seed_all(f, u, 6);
    /* claimed and handed back: the hosts wait in the ready set (new hosts
     * are in `fresh`, and a call naming only an absent ready key would be
     * turned away, guard or not) */
    frontier_item_t first[6] = {0};
    size_t nfirst = 0, nback = 0;
    for (int i = 0; i < 100 && nfirst < 6; i++)
        nfirst += side_claim(f, first + nfirst, 6 - nfirst);
    cr_assert_eq(nfirst, 6);
    cr_assert_eq(frontier_reconcile(f, NULL, 0, &nback), 0, "%s", frontier_last_error(f));
    cr_assert_eq(nback, 6);
    for (size_t i = 0; i < nfirst; i++)
        frontier_item_clear(&first[i]);
    const int slot = 12452, from = 1, to = 0; /* shard 0's slot and its master */
    char key[128];
    snprintf(key, sizeof key, "crawler:{%s}:stats", CRAWL);
    freeReplyObject(
        node_cmd(&t, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, fx_cluster_id(t.cl, from)));
    freeReplyObject(
        node_cmd(&t, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, fx_cluster_id(t.cl, to)));
    char ready[128];
    snprintf(ready, sizeof ready, "crawler:{%s}:ready", CRAWL);
    redisReply *zr = node_cmd(&t, from, "ZCARD %s", ready);
    cr_assert_gt(zr->integer, 0, "no host in the ready set");
    freeReplyObject(zr);
    migrate_key(&t, from, to, key); /* the counters moved, the queues not yet */
    long long refused0 = refusals(&t, from, to);

    frontier_call_t *call = NULL;
    cr_assert_eq(frontier_claim_start(f, 6, &call), 0, "%s", frontier_last_error(f));
    rconn_link_t *l = fr_link_of(f);
    /* refused (not a wall-clock verdict: the counters say the call was
     * turned away), the link trying again meanwhile */
    for (int i = 0; i < 20000 && refusals(&t, from, to) == refused0; i++) {
        if (rconn_link_poll(l) < 0)
            rconn_link_connect(l, 0);
        usleep(1000);
    }
    cr_assert_gt(refusals(&t, from, to), refused0, "the claim was never turned away");
    cr_expect_eq(frontier_call_ready(f, call), 0, "a claim answered while its shard is split");
    char pat[128];
    snprintf(pat, sizeof pat, "crawler:{%s}:lease:*", CRAWL);
    for (int i = 0; i < 2; i++)
        cr_expect_eq(fx_cluster_count_keys(t.cl, i, pat), 0, "node %d: a lease written", i);
    redisContext *oc = fx_cluster_connect(t.cl, from);
    cr_assert_not_null(oc);
    redisReply *ex = redisCommand(oc, "EXISTS %s", key); /* a key it lacks: ASK */
    cr_expect(ex && (ex->type == REDIS_REPLY_ERROR ? !strncmp(ex->str, "ASK ", 4) : !ex->integer),
              "the moved counters written anew on the old master");
    freeReplyObject(ex);
    redisFree(oc);

    /* the rest of the shard moves, then the slot is the new master's */
    for (;;) {
        redisReply *k = node_cmd(&t, from, "CLUSTER GETKEYSINSLOT %d 100", slot);
        size_t n = k->elements;
        for (size_t i = 0; i < n; i++)
            migrate_key(&t, from, to, k->element[i]->str);
        freeReplyObject(k);
        if (!n)
            break;
    }
    for (int i = 0; i < 2; i++)
        freeReplyObject(
            node_cmd(&t, i, "CLUSTER SETSLOT %d NODE %s", slot, fx_cluster_id(t.cl, to)));
    /* the claim answers now: with the URLs, or failed with the link (a
     * claim is not sent twice: its part on the other shard was in flight
     * when a refusal dropped the link); a worker then reconciles and claims
     * again, as here */
    for (int i = 0; i < 20000 && !frontier_call_ready(f, call); i++) {
        if (rconn_link_poll(l) < 0)
            rconn_link_connect(l, 0);
        usleep(1000);
    }
    frontier_item_t items[12] = {0};
    size_t n = 0;
    frontier_state_t st;
    uint32_t wait_ms = 0;
    int rc = frontier_call_end(f, call);
    if (rc == 0)
        cr_assert_eq(frontier_claim_found(f, call, items, &n, &st, &wait_ms), 0);
    else
        cr_assert_eq(rc, CRAWL_EREDIS, "the claim after the move: %s (%s)", crawl_strerror(rc),
                     frontier_last_error(f));
    frontier_call_free(call);
    for (int i = 0; i < 1000 && !rconn_link_up(l); i++)
        if (rconn_link_connect(l, 0) < 0)
            usleep(1000);
    size_t back = 0;
    cr_assert_eq(frontier_reconcile(f, items, n, &back), 0, "%s", frontier_last_error(f));
    for (int i = 0; i < 100 && n < 6; i++)
        n += side_claim(f, items + n, 12 - n);
    cr_expect_eq(n, 6, "%zu URLs claimed for the shard's 6 (%zu handed back)", n, back);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            cr_expect_str_neq(items[i].url, items[j].url, "claimed twice");
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    cr_expect_eq(fx_cluster_keys_in_slot(t.cl, from, slot), 0, "keys of the shard left behind");
    fr_close(f);
    redisFree(c0);
    two_stop(&t);
}
