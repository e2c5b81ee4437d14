/* The frontier on top of the crawler Redis module (CRAWLER.BFADD), against
 * real redis-servers the tests start themselves, with and without it: a
 * crawl whose handle uses the module (frontier_bits_module() == 1) must
 * write byte-identical filter blocks, queue the same URLs and count the
 * same as a crawl on the same server forced to BITFIELD (bitfield_only),
 * including the page-limit path that tests each link on its own; INFO
 * commandstats shows which command set the bits.  A server without the
 * module, or one that lost it after the open, is handled as frontier.h says
 * (and the error it gets names the .lua line that failed). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module_side.h"

/* ---- helpers --------------------------------------------------------------- */

/* Opens crawl `crawl` on a new connection to r: a Bloom filter of small
 * blocks (many block keys for a few thousand URLs) and a frontier handle
 * with cfg (crawl name and bitfield_only set here). */
static void open_crawl(side_t *s, fx_redis_t *r, const char *crawl, frontier_config_t cfg,
                       int bitfield_only)
{
    char name[128], err[256] = "";
    int berr = 0;
    bloom_params_t p = {.capacity = 5000, .fp_rate = 1e-6, .block_bits = 4096};
    cr_assert_eq(frontier_bloom_name(crawl, name, sizeof name), 0);
    s->c = connect_to(r);
    s->b = bloom_open(s->c, name, &p, &berr, err, sizeof err);
    cr_assert_not_null(s->b, "bloom_open %s: %s", name, err);
    cfg.crawl = crawl;
    cfg.bitfield_only = bitfield_only;
    s->f = fr_open(s->c, &cfg, s->b, err, sizeof err);
    cr_assert_not_null(s->f, "frontier_open %s: %s", crawl, err);
}

static frontier_config_t crawl_config(void)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.delay_ms = 0;
    cfg.per_host = 1000;
    return cfg;
}

/* A Bloom handle on crawl's filter with no local cache: every answer comes
 * from the bits in Redis. */
static bloom_t *uncached_bloom(redisContext *c, const char *crawl)
{
    char name[128], err[256] = "";
    int berr = 0;
    bloom_params_t p = {.cache_bytes = SIZE_MAX};
    frontier_bloom_name(crawl, name, sizeof name);
    bloom_t *b = bloom_open(c, name, &p, &berr, err, sizeof err);
    cr_assert_not_null(b, "bloom_open %s: %s", name, err);
    return b;
}

/* Asserts that the block keys of two crawls' filters hold the same bytes;
 * returns how many blocks have a bit set. */
static uint32_t same_blocks(side_t *x, side_t *y)
{
    const bloom_geometry_t *gx = bloom_geometry(x->b), *gy = bloom_geometry(y->b);
    cr_assert(gx->m == gy->m && gx->k == gy->k && gx->blocks == gy->blocks &&
                  gx->block_bits == gy->block_bits && gx->seed == gy->seed,
              "the two filters have different geometries");
    uint32_t used = 0;
    for (uint32_t i = 0; i < gx->blocks; i++) {
        char kx[256], ky[256];
        cr_assert_gt(bloom_block_key(x->b, i, kx, sizeof kx), 0);
        cr_assert_gt(bloom_block_key(y->b, i, ky, sizeof ky), 0);
        size_t lx, ly;
        char *bx = get_bytes(x->c, kx, &lx), *by = get_bytes(y->c, ky, &ly);
        cr_assert(bx && by, "block %u missing", i);
        cr_assert_eq(lx, gx->block_bits / 8, "%s: %zu bytes", kx, lx);
        cr_assert_eq(lx, ly, "%s and %s differ in length", kx, ky);
        cr_assert(memcmp(bx, by, lx) == 0, "%s and %s hold different bits", kx, ky);
        int any = 0;
        for (size_t j = 0; j < lx && !any; j++)
            any = bx[j] != 0;
        used += (uint32_t)any;
        free(bx);
        free(by);
    }
    return used;
}

/* ---- the frontier on top of it ------------------------------------------------ */

enum { NSEEDS = 3000, NHOSTS = 40, NPAGES = 64, NLINKS = 30 };

static char (*seed_buf)[48];
static const char **seed_list;

static void make_seeds(void)
{
    seed_buf = malloc(NSEEDS * sizeof *seed_buf);
    seed_list = malloc(NSEEDS * sizeof *seed_list);
    cr_assert(seed_buf && seed_list);
    for (int i = 0; i < NSEEDS; i++) {
        snprintf(seed_buf[i], sizeof seed_buf[i], "http://h%d.test/s%d", i % NHOSTS, i);
        seed_list[i] = seed_buf[i];
    }
}

static void free_seeds(void)
{
    free(seed_buf);
    free(seed_list);
}

/* Link j of the page finished in slot i: overlapping between pages, every
 * fifth one a seed (already seen). */
static void slot_link(int i, int j, char *buf, size_t len)
{
    if (j % 5 == 0)
        snprintf(buf, len, "%s", seed_list[(i * 31 + j * 7) % NSEEDS]);
    else
        snprintf(buf, len, "http://h%d.test/l%d", (i * 7 + j) % NHOSTS, (i * 13 + j * 5) % 900);
}

/* Claims NPAGES pages, half through f and half through g (another worker),
 * and finishes them all through f in one call: not one worker's pages, so
 * the script takes the leases worker by worker.  Returns the links reported
 * new. */
static size_t finish_two_workers(frontier_t *f, frontier_t *g)
{
    static frontier_item_t items[NPAGES];
    static frontier_done_t d[NPAGES];
    static char links[NPAGES][NLINKS][48];
    static const char *lp[NPAGES][NLINKS];
    size_t nnew[NPAGES], n = side_claim(f, items, NPAGES / 2);
    cr_assert_eq(n, NPAGES / 2, "claimed %zu", n);
    n += side_claim(g, items + n, NPAGES / 2);
    cr_assert_eq(n, NPAGES, "claimed %zu", n);
    for (int i = 0; i < NPAGES; i++) {
        for (int j = 0; j < NLINKS; j++) {
            slot_link(i, j, links[i][j], sizeof links[i][j]);
            lp[i][j] = links[i][j];
        }
        d[i] = (frontier_done_t){.item = &items[i],
                                 .outcome = {.status = 200, .bytes = 1},
                                 .links = lp[i],
                                 .nlinks = NLINKS,
                                 .link_depth = 1,
                                 .nnew = &nnew[i]};
    }
    int rc = frontier_finish(f, d, NPAGES);
    cr_assert_eq(rc, 0, "frontier_finish: %s", crawl_strerror(rc));
    size_t total = 0;
    for (int i = 0; i < NPAGES; i++) {
        total += nnew[i];
        frontier_item_clear(&items[i]);
    }
    return total;
}

/* The same seeds and pages into two crawls on one server with the module,
 * one forced to BITFIELD: the filters' blocks end byte-identical, and
 * bloom/'s BITFIELD client reads and extends the module-written filter as
 * its own (and the other way round). */
Test(module, bitfield_and_module_crawls_write_byte_identical_filters)
{
    fx_redis_t *r = start_redis(1);
    make_seeds();
    side_t bf, mod;
    open_crawl(&bf, r, "eqbf", crawl_config(), 1);
    open_crawl(&mod, r, "eqmod", crawl_config(), 0);
    cr_assert_eq(frontier_bits_module(bf.f), 0, "bitfield_only was set");
    cr_assert_eq(frontier_bits_module(mod.f), 1, "the module is loaded");
    const bloom_geometry_t *geo = bloom_geometry(mod.b);
    cr_assert_geq(geo->blocks, 16, "want many blocks, got %u", geo->blocks);

    side_seed_all(bf.f, seed_list, NSEEDS);
    side_seed_all(mod.f, seed_list, NSEEDS);
    cr_assert_eq(same_blocks(&bf, &mod), geo->blocks, "every block should hold seeds");

    /* pages with links, through the general finish script */
    frontier_config_t cfg = crawl_config();
    side_t bf2 = bf, mod2 = mod;
    char err[256] = "";
    cfg.crawl = "eqbf";
    cfg.bitfield_only = 1;
    bf2.f = fr_open(bf.c, &cfg, bf.b, err, sizeof err);
    cr_assert_not_null(bf2.f, "%s", err);
    cfg.crawl = "eqmod";
    cfg.bitfield_only = 0;
    mod2.f = fr_open(mod.c, &cfg, mod.b, err, sizeof err);
    cr_assert_not_null(mod2.f, "%s", err);
    cr_assert_eq(frontier_bits_module(mod2.f), 1);
    size_t new_bf = finish_two_workers(bf.f, bf2.f);
    size_t new_mod = finish_two_workers(mod.f, mod2.f);
    cr_expect_eq(new_mod, new_bf, "new links: module %zu, BITFIELD %zu", new_mod, new_bf);
    cr_expect_gt(new_bf, 100);
    frontier_stats_t sb, sm;
    cr_assert_eq(frontier_stats(bf.c, "eqbf", &sb), 0);
    cr_assert_eq(frontier_stats(mod.c, "eqmod", &sm), 0);
    cr_expect_eq(sm.new_links, sb.new_links);
    cr_expect_eq(sm.seen_links, sb.seen_links);
    cr_expect_eq(sm.enqueued, sb.enqueued);
    cr_expect_eq(sm.enqueued, NSEEDS + new_mod);
    cr_expect_eq(sm.new_links + sm.seen_links, NPAGES * NLINKS, "every link counted once");
    same_blocks(&bf, &mod);

    /* bloom/ (BITFIELD_RO, no cache) finds every URL in the module's filter */
    bloom_t *ub = uncached_bloom(mod.c, "eqmod");
    uint8_t *flag = malloc(NSEEDS);
    cr_assert_not_null(flag);
    cr_assert_eq(bloom_contains_many(ub, seed_list, NULL, NSEEDS, flag), 0);
    for (int i = 0; i < NSEEDS; i++)
        cr_assert(flag[i], "%s is not in the module-written filter", seed_list[i]);
    char link[48];
    const char *lk = link;
    for (int i = 0; i < NPAGES; i++)
        for (int j = 0; j < NLINKS; j++) {
            slot_link(i, j, link, sizeof link);
            uint8_t in = 0;
            cr_assert_eq(bloom_contains_many(ub, &lk, NULL, 1, &in), 0);
            cr_assert(in, "link %s is not in the module-written filter", link);
        }
    cr_assert_eq(bloom_add_many(ub, seed_list, NULL, NSEEDS, flag), 0);
    for (int i = 0; i < NSEEDS; i++)
        cr_assert_eq(flag[i], 0, "bloom_add_many says %s is new", seed_list[i]);

    /* and the other way: what bloom_add_many adds, the module reports seen */
    enum { NFRESH = 200 };
    char fresh_buf[NFRESH][48];
    const char *fresh[NFRESH];
    for (int i = 0; i < NFRESH; i++) {
        snprintf(fresh_buf[i], sizeof fresh_buf[i], "http://fresh%d.test/x%d", i % 7, i);
        fresh[i] = fresh_buf[i];
    }
    cr_assert_eq(bloom_add_many(ub, fresh, NULL, NFRESH, flag), 0);
    for (int i = 0; i < NFRESH; i++)
        cr_assert_eq(flag[i], 1, "%s was already in the filter", fresh[i]);
    size_t added = 99;
    cr_assert_eq(frontier_seed(mod.f, fresh, NFRESH, 0, &added), 0);
    cr_expect_eq(added, 0, "the module re-added what BITFIELD had set");
    side_seed_all(bf.f, fresh, NFRESH);
    same_blocks(&bf, &mod);

    free(flag);
    bloom_close(ub);
    fr_close(bf2.f);
    fr_close(mod2.f);
    side_check(bf.c, bf.f, 1000);
    side_check(mod.c, mod.f, 1000);
    side_close(&bf);
    side_close(&mod);
    free_seeds();
    fx_redis_stop(r);
}

/* INFO commandstats: a module-mode crawl sets its bits with CRAWLER.BFADD
 * only, one call per block run (as many as BITFIELD calls in bitfield mode,
 * where no run here exceeds BITFIELD's 1,024 bits a call); a crawl forced to
 * BITFIELD never calls the module. */
Test(module, a_module_crawl_sets_bits_with_crawler_bfadd_and_never_bitfield)
{
    fx_redis_t *r = start_redis(1);
    make_seeds();
    side_t bf, mod;
    open_crawl(&bf, r, "stbf", crawl_config(), 1);
    open_crawl(&mod, r, "stmod", crawl_config(), 0);
    cr_assert_eq(frontier_bits_module(mod.f), 1);

    side_reset_stats(mod.c);
    side_seed_all(mod.f, seed_list, NSEEDS);
    long long mod_calls = side_calls(mod.c, "crawler.bfadd");
    cr_expect_eq(side_calls(mod.c, "bitfield"), 0, "module crawl called BITFIELD");
    cr_expect_gt(mod_calls, 0, "module crawl never called CRAWLER.BFADD");
    cr_expect_leq(mod_calls, (long long)(NSEEDS / 256 + 1) * bloom_geometry(mod.b)->blocks,
                  "%lld calls: more than one per block run", mod_calls);

    side_reset_stats(bf.c);
    side_seed_all(bf.f, seed_list, NSEEDS);
    long long bf_calls = side_calls(bf.c, "bitfield");
    cr_expect_eq(side_calls(bf.c, "crawler.bfadd"), 0, "bitfield_only crawl called the module");
    cr_expect_eq(bf_calls, mod_calls, "BITFIELD %lld calls, CRAWLER.BFADD %lld", bf_calls,
                 mod_calls);

    /* finishing a page (one worker: the ack script) goes the same way */
    frontier_item_t it[2];
    cr_assert_eq(side_claim(mod.f, it, 1), 1);
    cr_assert_eq(side_claim(bf.f, it + 1, 1), 1);
    char buf[50][48];
    const char *links[50];
    for (int j = 0; j < 50; j++) {
        snprintf(buf[j], sizeof buf[j], "http://h%d.test/page%d", j % 9, j);
        links[j] = buf[j];
    }
    size_t nnew = 0;
    side_reset_stats(mod.c);
    frontier_done_t d = {
        .item = &it[0], .links = links, .nlinks = 50, .link_depth = 1, .nnew = &nnew};
    cr_assert_eq(frontier_finish(mod.f, &d, 1), 0);
    cr_expect_eq(nnew, 50);
    cr_expect_gt(side_calls(mod.c, "crawler.bfadd"), 0);
    cr_expect_leq(side_calls(mod.c, "crawler.bfadd"), 50);
    cr_expect_eq(side_calls(mod.c, "bitfield"), 0);
    side_reset_stats(bf.c);
    d.item = &it[1];
    cr_assert_eq(frontier_finish(bf.f, &d, 1), 0);
    cr_expect_eq(nnew, 50);
    cr_expect_gt(side_calls(bf.c, "bitfield"), 0);
    cr_expect_eq(side_calls(bf.c, "crawler.bfadd"), 0);
    frontier_item_clear(&it[0]);
    frontier_item_clear(&it[1]);

    side_check(bf.c, bf.f, 1000);
    side_check(mod.c, mod.f, 1000);
    side_close(&bf);
    side_close(&mod);
    free_seeds();
    fx_redis_stop(r);
}

/* docs/operating.md: module and BITFIELD processes can share one crawl.  Two handles
 * on one crawl, each with its own connection and Bloom cache, offer
 * overlapping URL sets: every URL is reported new exactly once. */
Test(module, module_and_bitfield_handles_share_one_crawl)
{
    fx_redis_t *r = start_redis(1);
    make_seeds();
    side_t a, b;
    open_crawl(&a, r, "mix", crawl_config(), 0);
    open_crawl(&b, r, "mix", crawl_config(), 1);
    cr_assert_eq(frontier_bits_module(a.f), 1);
    cr_assert_eq(frontier_bits_module(b.f), 0);
    size_t na = 0, nb = 0, n2 = 0;
    /* a: seeds [0, 2000); b: [1000, 3000); then each the other's range */
    cr_assert_eq(frontier_seed(a.f, seed_list, 2000, 0, &na), 0);
    cr_assert_eq(frontier_seed(b.f, seed_list + 1000, 2000, 0, &nb), 0);
    cr_expect_eq(na, 2000);
    cr_expect_eq(nb, 1000, "b re-added %zu of a's seeds", nb - 1000);
    cr_assert_eq(frontier_seed(a.f, seed_list + 2000, 1000, 0, &n2), 0);
    cr_expect_eq(n2, 0, "a re-added b's seeds");
    cr_assert_eq(frontier_seed(b.f, seed_list, 1000, 0, &n2), 0);
    cr_expect_eq(n2, 0, "b re-added a's seeds");

    /* a page claimed through a, finished through b (same worker id is not
     * needed: the lease names it), links new to both */
    frontier_item_t it;
    cr_assert_eq(side_claim(a.f, &it, 1), 1);
    const char *links[] = {"http://h1.test/s1", "http://mix.test/new", "http://h39.test/s2999"};
    size_t nnew = 0;
    frontier_done_t d = {.item = &it, .links = links, .nlinks = 3, .link_depth = 1, .nnew = &nnew};
    cr_assert_eq(frontier_finish(b.f, &d, 1), 0);
    cr_expect_eq(nnew, 1);
    frontier_item_clear(&it);
    size_t again = 9;
    cr_assert_eq(frontier_seed(a.f, links, 3, 0, &again), 0);
    cr_expect_eq(again, 0);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(a.c, "mix", &st), 0);
    cr_expect_eq(st.enqueued, NSEEDS + 1);
    side_check(a.c, a.f, 1000);
    side_close(&a);
    side_close(&b);
    free_seeds();
    fx_redis_stop(r);
}

/* 1 when INFO replication of c says its link to the master is up. */
static int replica_linked(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO replication");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    int up = strstr(r->str, "master_link_status:up") != NULL;
    freeReplyObject(r);
    return up;
}

/* CRAWLER.BFADD replicates itself verbatim (the scripts' effects are what
 * Redis 7 replicates): a replica with the module ends with the master's
 * filter, byte for byte, having run the module's command itself. */
Test(module, a_replica_with_the_module_gets_the_same_filter)
{
    fx_redis_t *rm = start_redis(1), *rr = start_redis(1);
    make_seeds();
    redisContext *rc = connect_to(rr), *mc = connect_to(rm);
    redisReply *x = redisCommand(mc, "CONFIG SET repl-diskless-sync-delay 0"); /* sync now */
    cr_assert(x && x->type == REDIS_REPLY_STATUS, "CONFIG SET: %s", x ? x->str : mc->errstr);
    freeReplyObject(x);
    redisFree(mc);
    char port[16];
    snprintf(port, sizeof port, "%d", fx_redis_port(rm));
    x = redisCommand(rc, "REPLICAOF 127.0.0.1 %s", port);
    cr_assert(x && x->type == REDIS_REPLY_STATUS, "REPLICAOF: %s", x ? x->str : rc->errstr);
    freeReplyObject(x);
    for (int i = 0; i < 1000 && !replica_linked(rc); i++) /* a start-up bound */
        usleep(10000);
    cr_assert(replica_linked(rc), "the replica never linked to its master");

    side_t m;
    open_crawl(&m, rm, "repl", crawl_config(), 0);
    cr_assert_eq(frontier_bits_module(m.f), 1);
    side_seed_all(m.f, seed_list, NSEEDS);
    x = redisCommand(m.c, "WAIT 1 60000");
    cr_assert(x && x->type == REDIS_REPLY_INTEGER && x->integer == 1, "WAIT: the replica did not "
                                                                      "acknowledge");
    freeReplyObject(x);

    side_t copy = {.c = rc, .b = uncached_bloom(rc, "repl")};
    cr_assert_eq(same_blocks(&m, &copy), bloom_geometry(m.b)->blocks);
    cr_expect_gt(side_calls(rc, "crawler.bfadd"), 0, "the replica did not run CRAWLER.BFADD");
    cr_expect_eq(side_calls(rc, "bitfield"), 0);
    frontier_stats_t a, b;
    cr_assert_eq(frontier_stats(m.c, "repl", &a), 0);
    cr_assert_eq(frontier_stats(rc, "repl", &b), 0);
    cr_expect_eq(b.queued, a.queued);
    cr_expect_eq(b.enqueued, NSEEDS);

    bloom_close(copy.b);
    side_check(m.c, m.f, 1000);
    side_close(&m);
    redisFree(rc);
    free_seeds();
    fx_redis_stop(rr);
    fx_redis_stop(rm);
}

/* What one crawl under limits gives (see run_limits). */
typedef struct lim_run {
    size_t s1, s2, s5, nnew[4];
    long long module_calls, bitfield_calls; /* during the finish */
    frontier_stats_t st;
} lim_run_t;

static void expect_queue(redisContext *c, const char *crawl, const char *origin,
                         const char *const *want, size_t n)
{
    char p[128];
    snprintf(p, sizeof p, "crawler:{%s}:", crawl);
    redisReply *r = fx_redis_queue(c, p, origin);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(r->elements, n, "%s: queue of %s holds %zu", crawl, origin, r->elements);
    for (size_t i = 0; i < n && i < r->elements; i++)
        cr_expect_str_eq(r->element[i]->str, want[i], "%s: %s[%zu]", crawl, origin, i);
    freeReplyObject(r);
}

/* max_pages 10, max_pages_per_host 4: seeds, forced seeds, then one
 * finish (ack) of 4 pages whose links run into both limits. */
static void run_limits(fx_redis_t *r, const char *crawl, int bitfield_only, lim_run_t *out)
{
    frontier_config_t cfg = crawl_config();
    cfg.max_pages = 10;
    cfg.max_pages_per_host = 4;
    side_t s;
    open_crawl(&s, r, crawl, cfg, bitfield_only);
    cr_assert_eq(frontier_bits_module(s.f), !bitfield_only);
    const char *s1[] = {"http://a.test/0", "http://b.test/0"};
    const char *s2[] = {"http://a.test/0", "http://d.test/0"}; /* forced: a/0 again */
    cr_assert_eq(frontier_seed(s.f, s1, 2, 0, &out->s1), 0);
    cr_assert_eq(frontier_seed(s.f, s2, 2, 1, &out->s2), 0);

    frontier_item_t it[8];
    size_t n = 0;
    for (int tries = 0; n < 4 && tries < 10; tries++)
        n += side_claim(s.f, it + n, 8 - n);
    cr_assert_eq(n, 4, "%s: claimed %zu", crawl, n);
    /* pages in a fixed order whatever the claim's: a/0, a/0, b/0, d/0 */
    const char *order[4] = {"http://a.test/0", "http://a.test/0", "http://b.test/0",
                            "http://d.test/0"};
    const frontier_item_t *pg[4] = {0};
    for (int p = 0; p < 4; p++)
        for (size_t i = 0; i < n && !pg[p]; i++)
            if (strcmp(it[i].url, order[p]) == 0 && (p != 1 || &it[i] != pg[0]))
                pg[p] = &it[i];
    for (int p = 0; p < 4; p++)
        cr_assert_not_null(pg[p], "%s: %s was not claimed", crawl, order[p]);
    const char *l0[] = {"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/1"};
    const char *l1[] = {"http://b.test/1", "http://a.test/3", "http://c.test/1"};
    const char *l2[] = {"http://b.test/2", "http://b.test/3", "http://c.test/2"};
    const char *l3[] = {"http://d.test/1", "http://b.test/1"};
    const char *const *ls[4] = {l0, l1, l2, l3};
    const size_t nl[4] = {4, 3, 3, 2};
    frontier_done_t d[4];
    for (int p = 0; p < 4; p++)
        d[p] = (frontier_done_t){.item = pg[p],
                                 .outcome = {.status = 200, .bytes = 1},
                                 .links = ls[p],
                                 .nlinks = nl[p],
                                 .link_depth = 1,
                                 .nnew = &out->nnew[p]};
    side_reset_stats(s.c);
    int rc = frontier_finish(s.f, d, 4);
    cr_assert_eq(rc, 0, "%s: frontier_finish: %s", crawl, crawl_strerror(rc));
    out->module_calls = side_calls(s.c, "crawler.bfadd");
    out->bitfield_calls = side_calls(s.c, "bitfield");
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);

    const char *s5[] = {"http://c.test/9", "http://a.test/1"};
    cr_assert_eq(frontier_seed(s.f, s5, 2, 1, &out->s5), 0);
    cr_assert_eq(frontier_stats(s.c, crawl, &out->st), 0);

    const char *qa[] = {"1/1", "1/2"};
    const char *qb[] = {"1/1", "1/2", "1/3"};
    const char *qc[] = {"1/1"};
    expect_queue(s.c, crawl, "http://a.test", qa, 2);
    expect_queue(s.c, crawl, "http://b.test", qb, 3);
    expect_queue(s.c, crawl, "http://c.test", qc, 1);
    expect_queue(s.c, crawl, "http://d.test", NULL, 0);
    const char *hosts[] = {"http://a.test", "http://b.test", "http://c.test", "http://d.test"};
    const long long adm[] = {4, 4, 1, 1};
    for (int h = 0; h < 4; h++) {
        redisReply *x = redisCommand(s.c, "HGET crawler:{%s}:hosts %s", crawl, hosts[h]);
        cr_assert(x && x->type == REDIS_REPLY_STRING, "%s: no field for %s", crawl, hosts[h]);
        cr_expect_eq(strtoll(x->str, NULL, 10), adm[h], "%s: %s admitted %s", crawl, hosts[h],
                     x->str);
        freeReplyObject(x);
    }
    /* links over a limit were not added to the filter */
    bloom_t *ub = uncached_bloom(s.c, crawl);
    const char *probe[] = {"http://a.test/3", "http://c.test/2", "http://d.test/1",
                           "http://c.test/9", "http://a.test/1", "http://b.test/3",
                           "http://c.test/1", "http://d.test/0"};
    uint8_t in[8];
    cr_assert_eq(bloom_contains_many(ub, probe, NULL, 8, in), 0);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(in[i], i >= 4, "%s: %s %s in the filter", crawl, probe[i],
                     in[i] ? "is" : "is not");
    bloom_close(ub);
    side_check(s.c, s.f, 1000);
    side_close(&s);
}

/* The limits path tests each link with its own CRAWLER.BFADD (as it does
 * with its own BITFIELD) and gives the same codes and counts. */
Test(module, page_limits_and_forced_seeds_count_the_same_in_both_modes)
{
    fx_redis_t *r = start_redis(1);
    lim_run_t m = {0}, b = {0};
    run_limits(r, "limmod", 0, &m);
    run_limits(r, "limbf", 1, &b);
    const lim_run_t *runs[2] = {&m, &b};
    const char *label[2] = {"module", "bitfield"};
    for (int x = 0; x < 2; x++) {
        const lim_run_t *v = runs[x];
        cr_expect_eq(v->s1, 2, "%s: seeds", label[x]);
        cr_expect_eq(v->s2, 2, "%s: forced seeds (one already seen)", label[x]);
        cr_expect_eq(v->s5, 0, "%s: seeds past max_pages", label[x]);
        const size_t want[4] = {3, 1, 2, 0};
        for (int p = 0; p < 4; p++)
            cr_expect_eq(v->nnew[p], want[p], "%s: page %d: %zu new", label[x], p, v->nnew[p]);
        cr_expect_eq(v->st.enqueued, 10, "%s", label[x]);
        cr_expect_eq(v->st.seeds, 4, "%s", label[x]);
        cr_expect_eq(v->st.new_links, 6, "%s", label[x]);
        cr_expect_eq(v->st.seen_links, 1, "%s", label[x]);
        cr_expect_eq(v->st.skipped_links, 5, "%s", label[x]);
        cr_expect_eq(v->st.queued, 6, "%s", label[x]);
        cr_expect_eq(v->st.fetched, 4, "%s", label[x]);
    }
    /* one test-and-add per link that reached the filter: 3 + 2 + 2, and in
     * module mode the ack's empty call that fails it before its first write
     * when the module is gone (offer.lua need_module) */
    cr_expect_eq(m.module_calls, 7 + 1);
    cr_expect_eq(m.bitfield_calls, 0);
    cr_expect_eq(b.bitfield_calls, 7);
    cr_expect_eq(b.module_calls, 0);

    /* same bits in both filters */
    side_t xm, xb;
    open_crawl(&xm, r, "limmod", crawl_config(), 0);
    open_crawl(&xb, r, "limbf", crawl_config(), 1);
    same_blocks(&xm, &xb);
    side_check(xm.c, xm.f, 1000);
    side_check(xb.c, xb.f, 1000);
    side_close(&xm);
    side_close(&xb);
    fx_redis_stop(r);
}

/* Without the module, a handle asked to use it (bitfield_only 0) falls
 * back to BITFIELD and seeding works. */
Test(module, without_the_module_a_handle_uses_bitfield)
{
    fx_redis_t *r = start_redis(0);
    make_seeds();
    side_t s;
    open_crawl(&s, r, "plain", crawl_config(), 0);
    cr_assert_not(module_listed(s.c), "this server should not have the module");
    redisReply *e = bfadd(s.c, "x", "1", "\0\0\0\0", 4);
    cr_expect_eq(e->type, REDIS_REPLY_ERROR, "CRAWLER.BFADD exists without the module");
    freeReplyObject(e);
    cr_expect_eq(frontier_bits_module(s.f), 0);
    cr_expect_eq(frontier_bits_module(NULL), 0);

    side_reset_stats(s.c);
    side_seed_all(s.f, seed_list, 1000);
    cr_expect_gt(side_calls(s.c, "bitfield"), 0);
    size_t added = 99;
    cr_assert_eq(frontier_seed(s.f, seed_list, 1000, 0, &added), 0);
    cr_expect_eq(added, 0, "seeding twice added %zu", added);
    bloom_t *ub = uncached_bloom(s.c, "plain");
    uint8_t *in = malloc(1000);
    cr_assert_not_null(in);
    cr_assert_eq(bloom_contains_many(ub, seed_list, NULL, 1000, in), 0);
    for (int i = 0; i < 1000; i++)
        cr_assert(in[i], "%s is not in the filter", seed_list[i]);
    free(in);
    bloom_close(ub);
    side_check(s.c, s.f, 1000);
    side_close(&s);
    free_seeds();
    fx_redis_stop(r);
}

/* Starts redis-server without the module on port (in dir); asserts it
 * answers.  Returns its pid. */
static pid_t start_plain_on(int port, const char *dir)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    char *argv[] = {"redis-server", "--port",     ps,          "--bind",
                    "127.0.0.1",    "--save",     "",          "--appendonly",
                    "no",           "--dir",      (char *)dir, "--protected-mode",
                    "no",           "--loglevel", "warning",   NULL};
    pid_t pid = fx_spawn(argv, NULL, NULL);
    cr_assert_gt(pid, 0, "cannot start redis-server: %s", fx_error());
    for (int i = 0; i < 1000; i++) { /* a start-up bound, not a verdict */
        redisContext *c = redisConnect("127.0.0.1", port);
        redisReply *p = c && !c->err ? redisCommand(c, "PING") : NULL;
        int up = p && p->type == REDIS_REPLY_STATUS;
        if (p)
            freeReplyObject(p);
        if (c)
            redisFree(c);
        if (up)
            return pid;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    fx_wait(pid, 5000);
    cr_assert_fail("redis-server on port %d did not answer", port);
    return -1;
}

/* frontier.h: a Redis restarted without the module after the open makes
 * the handle's link-offering calls fail with CRAWL_EREPLY, before any
 * write: a seed queues nothing, and a finish leaves its page leased (not
 * acknowledged with its links lost); a handle opened afterwards sees no
 * module and works, and can finish that page. */
Test(module, a_handle_whose_redis_lost_the_module_fails_with_ereply)
{
    fx_redis_t *r = start_redis(1);
    int port = fx_redis_port(r);
    side_t s;
    open_crawl(&s, r, "lost", crawl_config(), 0);
    cr_assert_eq(frontier_bits_module(s.f), 1);
    const char *one[] = {"http://a.test/1"}, *two[] = {"http://a.test/2"};
    size_t added = 0;
    cr_assert_eq(frontier_seed(s.f, one, 1, 0, &added), 0);
    cr_assert_eq(added, 1);

    fx_redis_stop(r); /* the same port, now without the module */
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir);
    pid_t pid = start_plain_on(port, dir);
    cr_assert_eq(redisReconnect(s.c), REDIS_OK, "reconnect: %s", s.c->errstr);
    cr_assert_not(module_listed(s.c));
    rconn_link_t *l = fr_link_of(s.f); /* the handle's link, as a worker's lifeline does */
    rconn_link_drop(l, "test: Redis restarted");
    cr_assert_eq(rconn_link_connect(l, 0), 0, "%s", rconn_link_error(l));

    /* the crawl again on the new server (its filter: the crawl exists there), and a
     * new handle on the same connection: BITFIELD, and it works */
    side_t t = {.c = s.c};
    char name[128], err[256] = "";
    int berr = 0;
    bloom_params_t p = {.capacity = 5000, .fp_rate = 1e-6, .block_bits = 4096};
    frontier_bloom_name("lost", name, sizeof name);
    t.b = bloom_open(s.c, name, &p, &berr, err, sizeof err);
    cr_assert_not_null(t.b, "%s", err);
    frontier_config_t cfg = crawl_config();
    cfg.crawl = "lost";
    t.f = fr_open(s.c, &cfg, t.b, err, sizeof err);
    cr_assert_not_null(t.f, "%s", err);
    cr_expect_eq(frontier_bits_module(t.f), 0);
    added = 99;
    int rc = frontier_seed(s.f, two, 1, 0, &added);
    cr_expect_eq(rc, CRAWL_EREPLY, "seed: %s", crawl_strerror(rc));
    cr_expect_eq(added, 0);
    const char *why = frontier_last_error(s.f); /* Redis's error, at its .lua line */
    cr_expect(strstr(why, "Unknown Redis command"), "last error: %s", why);
    cr_expect(strstr(why, "@offer.lua:") && !strstr(why, "user_function"),
              "the error does not name the Lua source line: %s", why);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(s.c, "lost", &st), 0);
    cr_expect_eq(st.queued, 0, "the failed call queued something");

    side_seed_all(t.f, two, 1);

    frontier_item_t it;
    cr_assert_eq(side_claim(t.f, &it, 1), 1);
    const char *links[] = {"http://a.test/3", "http://b.test/1"};
    frontier_done_t d = {.item = &it,
                         .outcome = {.status = 200, .bytes = 10},
                         .links = links,
                         .nlinks = 2,
                         .link_depth = 1};
    rc = frontier_finish(s.f, &d, 1); /* the module's layout, on a Redis without it */
    cr_expect_eq(rc, CRAWL_EREPLY, "finish: %s", crawl_strerror(rc));
    cr_assert_eq(frontier_stats(s.c, "lost", &st), 0);
    cr_expect_eq(st.in_flight, 1, "the failed finish let go of its page");
    cr_expect_eq(st.fetched, 0, "the failed finish counted its page");
    cr_expect_eq(st.queued, 0, "the failed finish queued something");
    cr_expect_eq(frontier_finish(t.f, &d, 1), 0, "the page is still leased: it can be finished");
    cr_assert_eq(frontier_stats(s.c, "lost", &st), 0);
    cr_expect_eq(st.in_flight, 0);
    cr_expect_eq(st.fetched, 1);
    cr_expect_eq(st.queued, 2, "the page's links");
    frontier_item_clear(&it);
    fr_close(t.f);
    bloom_close(t.b);

    side_check(s.c, s.f, 1000);
    side_close(&s);
    kill(pid, SIGTERM);
    cr_expect_eq(fx_wait(pid, 10000), 0, "redis-server did not stop");
    fx_rmtree(dir);
    free(dir);
}
