/* A crawl-wide page limit (--max-pages) over the shards of a crawl
 * (frontier/quota.c) on one real redis-server: shard 0 grants each shard
 * an allotment, a shard admits while its enqueued counter is below it.
 * The limit holds exactly when one shard does all the asking, holds over
 * several, is raised and lowered by the crawl's control, a link refused
 * for want of allotment is not marked seen (offered again later, it is
 * admitted), a page's links finished past the limit are refused while the
 * page is still acknowledged, and a grant whose relay was lost comes back
 * with the next one. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "side.h"

#define CRAWL "qt"
#define SHARDS 4

typedef struct env {
    fx_redis_t *r;
    redisContext *c;
    frontier_t *f;
    char dom[2][32]; /* two registered domains in two different shards */
    unsigned shard[2];
} env_t;

static frontier_t *open_quota(redisContext *c, uint64_t max_pages, const char *worker)
{
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.delay_ms = 0;
    cfg.per_host = 4;
    cfg.shards = SHARDS;
    cfg.max_pages = max_pages;
    cfg.worker_id = worker;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    char err[512] = "";
    frontier_t *f = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(f, "frontier_open: %s", err);
    return f;
}

static void env_start(env_t *e, uint64_t max_pages)
{
    memset(e, 0, sizeof *e);
    e->r = side_redis();
    e->c = fx_redis_connect(e->r);
    cr_assert_not_null(e->c, "%s", fx_error());
    e->f = open_quota(e->c, max_pages, "w1");
    /* two registered domains of two shards: every host under one of them is
     * in its shard (a host never spans two) */
    int got = 0;
    for (int i = 0; got < 2 && i < 100; i++) {
        char d[32], u[64];
        snprintf(d, sizeof d, "quota%d.com", i);
        snprintf(u, sizeof u, "http://%s/", d);
        unsigned s = fr_shard_of(SHARDS, u);
        if (got == 1 && s == e->shard[0])
            continue;
        snprintf(e->dom[got], sizeof e->dom[got], "%s", d);
        e->shard[got++] = s;
    }
    cr_assert_eq(got, 2, "no two domains in two shards");
}

static void env_stop(env_t *e)
{
    fr_close(e->f);
    redisFree(e->c);
    fx_redis_stop(e->r);
}

/* n URLs of domain d (hosts h0.d .. h9.d), from number `from` on; the
 * caller frees urls[i] and urls. */
static char **urls_of(const char *d, int from, int n)
{
    char **u = calloc((size_t)n, sizeof *u);
    cr_assert_not_null(u);
    for (int i = 0; i < n; i++) {
        u[i] = malloc(96);
        cr_assert_not_null(u[i]);
        snprintf(u[i], 96, "http://h%d.%s/p%d", (from + i) % 10, d, from + i);
    }
    return u;
}

static void free_urls(char **u, int n)
{
    for (int i = 0; i < n; i++)
        free(u[i]);
    free(u);
}

static size_t seed(env_t *e, frontier_t *f, const char *d, int from, int n)
{
    char **u = urls_of(d, from, n);
    size_t added = 0;
    int rc = frontier_seed(f, (const char *const *)u, (size_t)n, 0, &added);
    cr_assert_eq(rc, 0, "frontier_seed: %s (%s)", crawl_strerror(rc), frontier_last_error(f));
    free_urls(u, n);
    (void)e;
    return added;
}

/* The crawl's enqueued counter, summed over its shards. */
static uint64_t enqueued(env_t *e)
{
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(e->c, CRAWL, &st), 0);
    return st.enqueued;
}

static void set_limit(env_t *e, uint64_t max_pages)
{
    frontier_control_change_t ch = {0};
    char err[512] = "";
    ch.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
    ch.value[FRONTIER_LIMIT_MAX_PAGES] = max_pages;
    cr_assert_eq(frontier_control(e->c, CRAWL, &ch, NULL, NULL, NULL, err, sizeof err), 0, "%s",
                 err);
}

Test(quota, one_shard_asking_admits_exactly_the_limit_and_others_none_past_it)
{
    env_t e;
    env_start(&e, 100);
    redisReply *r = redisCommand(e.c, "GET crawler:{" CRAWL "}:shards");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_expect_str_eq(r->str, "4q", "a crawl of 4 shards created with a page limit");
    freeReplyObject(r);
    cr_expect_eq(seed(&e, e.f, e.dom[0], 0, 150), 100, "one shard: the limit, exactly");
    cr_expect_eq(seed(&e, e.f, e.dom[1], 0, 20), 0, "past the limit, in another shard");
    cr_expect_eq(enqueued(&e), 100);
    /* raised crawl-wide: the refused seeds were not marked seen */
    set_limit(&e, 120);
    cr_expect_eq(seed(&e, e.f, e.dom[1], 0, 20), 20, "the 20 refused, admitted once raised");
    cr_expect_eq(seed(&e, e.f, e.dom[0], 150, 5), 0, "the limit holds again");
    cr_expect_eq(enqueued(&e), 120);
    /* a second worker without a page limit of its own obeys the crawl's */
    frontier_t *g = open_quota(e.c, 0, "w2");
    cr_expect_eq(seed(&e, g, e.dom[1], 20, 5), 0, "a worker of its own without a limit");
    fr_close(g);
    env_stop(&e);
}

Test(quota, the_limit_holds_over_several_shards_asking_in_turn)
{
    env_t e;
    env_start(&e, 60);
    size_t got = 0;
    for (int round = 0; round < 8; round++) /* both shards ask, in turn, 10 at a time */
        got += seed(&e, e.f, e.dom[round % 2], round * 10, 10);
    cr_expect_leq(got, 60, "%zu admitted past the limit of 60", got);
    /* what a grant's slack left in a shard that asked no more: at most
     * 60 / (4 x 4) a grant, and only the first grants have one */
    cr_expect_geq(got, 60 - 2 * 3, "%zu admitted: more stranded than the slack allows", got);
    cr_expect_eq(enqueued(&e), got);
    env_stop(&e);
}

Test(quota, a_finish_past_the_limit_acknowledges_its_pages_and_refuses_their_links)
{
    env_t e;
    env_start(&e, 10);
    cr_assert_eq(seed(&e, e.f, e.dom[0], 0, 4), 4);
    frontier_item_t items[4];
    memset(items, 0, sizeof items);
    size_t n = 0; /* a claim asks a few shards at a time: ask until the 4 are in */
    for (int tries = 0; n < 4 && tries < 200; tries++)
        n += side_claim(e.f, items + n, 4 - n);
    cr_assert_eq(n, 4);
    /* each page links to 2 new URLs of its own domain (its own shard's,
     * which a quota crawl offers before the page's call too, so that a
     * refused one is offered again) and one of the other: 12 links for the
     * 6 left under the limit */
    char **links[4];
    size_t nnew[4] = {0}, total = 0;
    frontier_done_t done[4];
    for (size_t i = 0; i < n; i++) {
        links[i] = urls_of(e.dom[0], 100 + (int)i * 3, 3);
        free(links[i][2]);
        links[i][2] = malloc(96);
        cr_assert_not_null(links[i][2]);
        snprintf(links[i][2], 96, "http://h%zu.%s/other%zu", i, e.dom[1], i);
        done[i] = (frontier_done_t){.item = &items[i],
                                    .outcome = {.status = 200, .bytes = 10},
                                    .links = (const char *const *)links[i],
                                    .nlinks = 3,
                                    .link_depth = 1,
                                    .nnew = &nnew[i]};
    }
    int rc = frontier_finish(e.f, done, n);
    cr_expect_eq(rc, 0, "frontier_finish: %s (%s)", crawl_strerror(rc), frontier_last_error(e.f));
    for (size_t i = 0; i < n; i++)
        total += nnew[i];
    cr_expect_eq(total, 6, "%zu links admitted, 6 were left under the limit", total);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &st), 0);
    cr_expect_eq(st.enqueued, 10);
    cr_expect_eq(st.in_flight, 0, "the pages were not acknowledged");
    cr_expect_eq(st.fetched, 4);
    for (size_t i = 0; i < n; i++) {
        free_urls(links[i], 3);
        frontier_item_clear(&items[i]);
    }
    env_stop(&e);
}

/* A worker lost between a grant and its relay: the grant is in P quota,
 * never credited to its shard.  The next grant for that shard returns it
 * with the rest, so the crawl still admits up to its limit. */
Test(quota, a_grant_never_relayed_comes_back_with_the_next_one)
{
    env_t e;
    env_start(&e, 50);
    char s[16], ready0[FR_KEY_MAX], p0[FR_PREFIX_MAX];
    snprintf(s, sizeof s, "%u", e.shard[1]);
    cr_assert_eq(fr_prefix(CRAWL, p0, sizeof p0), 0);
    cr_assert_gt(fr_key_build(p0, FR_K_READY, NULL, 0, ready0, sizeof ready0), 0);
    const char *argv[] = {"FCALL", e.f->fn[FR_GRANT], "1", ready0, p0, "50", "4", s, "30", "0"};
    redisReply *r = redisCommandArgv(e.c, 10, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1, "grant: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
    cr_expect_geq(r->element[0]->integer, 30, "the grant gave %lld", r->element[0]->integer);
    freeReplyObject(r);
    cr_expect_eq(seed(&e, e.f, e.dom[1], 0, 80), 50, "the lost grant did not come back");
    cr_expect_eq(enqueued(&e), 50);
    env_stop(&e);
}

/* A shard at its allotment still answers "seen" for a link it has: a seen
 * link needs no allotment, so re-offering what a crawl knows costs the
 * limit nothing and new links elsewhere get all that is left. */
Test(quota, seen_links_at_a_full_allotment_take_none_of_the_limit)
{
    env_t e;
    env_start(&e, 100);
    cr_assert_eq(seed(&e, e.f, e.dom[0], 0, 30), 30);
    /* 30 + a slack of 100 / 16: its allotment full */
    cr_assert_eq(seed(&e, e.f, e.dom[0], 30, 6), 6);
    /* another worker (a Bloom cache of its own: the offers reach Redis) */
    frontier_t *g = open_quota(e.c, 100, "w2");
    cr_expect_eq(seed(&e, g, e.dom[0], 0, 30), 0, "seen seeds admitted again");
    fr_close(g);
    cr_expect_eq(seed(&e, e.f, e.dom[1], 0, 64), 64, "the seen ones took some of the limit");
    cr_expect_eq(enqueued(&e), 100);
    env_stop(&e);
}

/* A limit lifted (`crawler limits --max-pages unlimited`) and set again: what
 * the shards admitted meanwhile went through allotments too (granted without
 * bound, 256 beyond what was asked), so it counts, and the limit set again
 * is not passed.  What those grants left unused in a shard stays its own:
 * here the 256 beyond the 20 the first shard asked, so the other shard gets
 * nothing of the 10 left. */
Test(quota, admissions_while_the_limit_is_lifted_count_when_it_is_set_again)
{
    env_t e;
    env_start(&e, 10);
    cr_assert_eq(seed(&e, e.f, e.dom[0], 0, 10), 10);
    set_limit(&e, 0); /* unlimited */
    cr_expect_eq(seed(&e, e.f, e.dom[0], 10, 20), 20, "the limit lifted, all admitted");
    set_limit(&e, 40);
    size_t other = seed(&e, e.f, e.dom[1], 0, 30);
    cr_expect_eq(other, 0, "%zu admitted: the 20 admitted unlimited, or the grant, not counted",
                 other);
    cr_expect_eq(enqueued(&e), 30);
    env_stop(&e);
}

/* Lowered mid-crawl, the limit holds for the allotments still to be
 * granted; what a shard was granted before stays its own (it cannot be taken
 * back), so the crawl passes a lowered limit by at most that. */
Test(quota, a_lowered_limit_holds_past_what_was_already_granted)
{
    env_t e;
    env_start(&e, 1000);
    cr_assert_eq(seed(&e, e.f, e.dom[0], 0, 30), 30); /* granted 30 + 1000 / 16 = 92 */
    set_limit(&e, 50);
    size_t more = seed(&e, e.f, e.dom[0], 30, 100);
    cr_expect_eq(more, 92 - 30, "%zu more admitted in the shard holding 92", more);
    cr_expect_eq(seed(&e, e.f, e.dom[1], 0, 20), 0, "another shard was granted past 50");
    env_stop(&e);
}

/* A page limit set before the crawl exists (`crawler limits --force`, which
 * can only write shard 0: the count is not known yet) is the crawl's when a
 * crawl of several shards is created: it keeps it in allotments, and every
 * shard's control holds it. */
Test(quota, a_limit_set_before_the_crawl_makes_it_a_quota_crawl)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    frontier_control_change_t ch = {0};
    char err[512] = "";
    ch.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
    ch.value[FRONTIER_LIMIT_MAX_PAGES] = 10;
    cr_assert_eq(frontier_control(c, CRAWL, &ch, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    env_t e = {.r = r, .c = c};
    e.f = open_quota(c, 0, "w1"); /* no page limit of its own */
    redisReply *rep = redisCommand(c, "GET crawler:{" CRAWL "}:shards");
    cr_assert(rep && rep->type == REDIS_REPLY_STRING);
    cr_expect_str_eq(rep->str, "4q");
    freeReplyObject(rep);
    for (int s = 1; s < SHARDS; s++) {
        rep = redisCommand(c, "HGET crawler:{" CRAWL "/%d}:control max_pages", s);
        cr_assert(rep);
        cr_expect(rep->type == REDIS_REPLY_STRING && !strcmp(rep->str, "10"),
                  "shard %d's control lacks the limit", s);
        freeReplyObject(rep);
    }
    size_t got = seed(&e, e.f, "quota0.com", 0, 30) + seed(&e, e.f, "quota1.com", 0, 30);
    cr_expect_eq(got, 10, "%zu admitted under a limit of 10", got);
    env_stop(&e);
}

/* A crawl of several shards created without a page limit cannot take one
 * later (its workers admit a page's own links in the page's call): refused
 * at open and by the control, with the way out named. */
Test(quota, a_crawl_created_without_a_limit_refuses_one_later)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    frontier_t *f = open_quota(c, 0, "w1");
    frontier_config_t cfg;
    frontier_config_defaults(&cfg);
    cfg.crawl = CRAWL;
    cfg.max_pages = 5;
    char err[512] = "";
    frontier_t *g = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_expect_null(g);
    cr_expect(strstr(err, "created without a page limit") && strstr(err, "--shards 1"), "said %s",
              err);
    fr_close(g);
    frontier_control_change_t ch = {0};
    ch.limit[FRONTIER_LIMIT_MAX_PAGES] = 1;
    ch.value[FRONTIER_LIMIT_MAX_PAGES] = 5;
    cr_expect_eq(frontier_control(c, CRAWL, &ch, NULL, NULL, NULL, err, sizeof err), CRAWL_EINVAL);
    cr_expect(strstr(err, "created without a page limit"), "said %s", err);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}
