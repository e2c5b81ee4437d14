/*
 * test_keytypes.c -- a key of the wrong type under a crawl's prefix: every
 * key of keys.def (docs/keys.md) is turned into another type,
 * then each frontier operation that touches it runs.  Each must fail naming
 * the key and its type, change no key of the crawl (every key's DUMP before
 * and after), and work again once the key is put back.  Then the two cases
 * of issue 14 with the crawler binary: seq as a list during a crawl, ready
 * as a string during `crawler seed`.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawl_env.h"
#include "fixtures.h"
#include "side.h"

#define KT "kt"
#define P "crawler:{" KT "}:"

typedef enum op {
    OP_SEED,
    OP_CLAIM,
    OP_FINISH, /* the item claimed at setup, with links to a.test and c.test */
    OP_RETRY,
    OP_RELEASE,
    OP_HEARTBEAT,
    OP_STATS,
    OP_HOST_DELAY,
    OP_ROBOTS_GET,
    OP_ROBOTS_PUT,
    OP_ROBOTS_LOCK,
    OP_SITEMAPS,
    OP_SEED_HOSTS,
} op_t;

static const char *const op_names[] = {
    "seed",       "claim",      "finish",     "retry",       "release",  "heartbeat",  "stats",
    "host_delay", "robots_get", "robots_put", "robots_lock", "sitemaps", "seed_hosts",
};

/* One case: the key (after P), the type keys.def gives it, the operation. */
typedef struct kcase {
    const char *key, *type;
    op_t op;
} kcase_t;

static const kcase_t cases[] = {
    {"ready", "zset", OP_SEED},
    {"ready", "zset", OP_CLAIM},
    {"ready", "zset", OP_FINISH},
    {"ready", "zset", OP_RETRY},
    {"ready", "zset", OP_RELEASE},
    {"ready", "zset", OP_HEARTBEAT},
    {"ready", "zset", OP_STATS},
    {"stats", "hash", OP_SEED},
    {"stats", "hash", OP_CLAIM},
    {"stats", "hash", OP_FINISH},
    {"stats", "hash", OP_RETRY},
    {"stats", "hash", OP_RELEASE},
    {"stats", "hash", OP_HEARTBEAT},
    {"stats", "hash", OP_STATS},
    {"errors", "hash", OP_FINISH},
    {"errors", "hash", OP_RETRY},
    {"errors", "hash", OP_STATS},
    {"delayed", "zset", OP_CLAIM},
    {"delayed", "zset", OP_RETRY},
    {"delayed", "zset", OP_STATS},
    {"dead", "list", OP_RETRY},
    {"dead", "list", OP_STATS},
    {"hinflight", "hash", OP_SEED},
    {"hinflight", "hash", OP_CLAIM},
    {"hinflight", "hash", OP_FINISH},
    {"hinflight", "hash", OP_RETRY},
    {"hinflight", "hash", OP_RELEASE},
    {"hinflight", "hash", OP_HEARTBEAT},
    {"hnext", "hash", OP_SEED},
    {"hnext", "hash", OP_CLAIM},
    {"hnext", "hash", OP_FINISH},
    {"hnext", "hash", OP_RETRY},
    {"hnext", "hash", OP_RELEASE},
    {"hnext", "hash", OP_HEARTBEAT},
    {"hdelay", "hash", OP_CLAIM},
    {"hdelay", "hash", OP_FINISH},
    {"hdelay", "hash", OP_RETRY},
    {"hdelay", "hash", OP_RELEASE},
    {"hdelay", "hash", OP_HEARTBEAT},
    {"hdelay", "hash", OP_HOST_DELAY},
    {"hadmit", "hash", OP_SEED},
    {"hadmit", "hash", OP_FINISH},
    {"hadmit", "hash", OP_STATS},
    {"fresh", "list", OP_SEED},
    {"fresh", "list", OP_CLAIM},
    {"fresh", "list", OP_FINISH},
    {"fresh", "list", OP_STATS},
    {"hosts", "hash", OP_SEED},
    {"hosts", "hash", OP_CLAIM},
    {"hosts", "hash", OP_FINISH},
    {"hosts", "hash", OP_RETRY},
    {"hosts", "hash", OP_RELEASE},
    {"hosts", "hash", OP_HEARTBEAT},
    {"hosts", "hash", OP_STATS},
    {"hfail", "hash", OP_FINISH},
    {"hfail", "hash", OP_RETRY},
    {"workers", "zset", OP_CLAIM},
    {"workers", "zset", OP_HEARTBEAT},
    {"workers", "zset", OP_STATS},
    {"seq", "string", OP_CLAIM},
    {"seedhosts", "set", OP_SEED},
    {"seedhosts", "set", OP_SEED_HOSTS},
    {"sitemaps", "set", OP_SITEMAPS},
    {"seen:b:", "string", OP_SEED},   /* the Bloom block of the op's first URL */
    {"seen:b:", "string", OP_FINISH}, /* (its meta hash: frontier_open's cases) */
    {"q:http://a.test", "list", OP_SEED},
    {"q:http://b.test", "list", OP_CLAIM},  /* b.test is the ready host */
    {"q:http://c.test", "list", OP_FINISH}, /* a link's host */
    {"q:http://a.test", "list", OP_FINISH}, /* the page's host, and a link's */
    {"q:http://a.test", "list", OP_RETRY},
    {"q:http://a.test", "list", OP_RELEASE},
    {"lease:w1", "hash", OP_CLAIM},
    {"lease:w1", "hash", OP_FINISH},
    {"lease:w1", "hash", OP_RETRY},
    {"lease:w1", "hash", OP_RELEASE},
    {"worker:w1", "hash", OP_HEARTBEAT},
    {"robots:http://a.test", "string", OP_ROBOTS_GET},
    {"robots:http://a.test", "string", OP_ROBOTS_PUT},
    {"robots-lock:http://a.test", "string", OP_ROBOTS_LOCK},
};

/* ---- Redis helpers ---------------------------------------------------------- */

static void cmd_ok(redisContext *c, const char *fmt, const char *key)
{
    redisReply *r = redisCommand(c, fmt, key);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s %s: %s", fmt, key, r ? r->str : c->errstr);
    freeReplyObject(r);
}

/* Makes key a value of another type than want: a list where a string, hash
 * or zset is expected... */
static const char *make_wrong(redisContext *c, const char *key, const char *want)
{
    cmd_ok(c, "DEL %s", key);
    if (!strcmp(want, "list") || !strcmp(want, "zset")) {
        cmd_ok(c, "SET %s junk", key);
        return "string";
    }
    if (!strcmp(want, "set")) {
        cmd_ok(c, "HSET %s f junk", key);
        return "hash";
    }
    cmd_ok(c, "RPUSH %s junk", key); /* string, hash */
    return "list";
}

/* Every key of the crawl with its DUMP, sorted: "key\0dump" strings joined
 * with their lengths, so that two snapshots compare with memcmp. */
typedef struct snap {
    char *buf;
    size_t len;
    size_t nkeys;
} snap_t;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void snapshot(redisContext *c, snap_t *s)
{
    redisReply *k = redisCommand(c, "KEYS %s", P "*");
    cr_assert(k && k->type == REDIS_REPLY_ARRAY);
    char **names = calloc(k->elements + 1, sizeof *names);
    for (size_t i = 0; i < k->elements; i++)
        names[i] = strdup(k->element[i]->str);
    qsort(names, k->elements, sizeof *names, cmp_str);
    s->buf = NULL;
    s->len = 0;
    s->nkeys = k->elements;
    FILE *m = open_memstream(&s->buf, &s->len);
    for (size_t i = 0; i < k->elements; i++) {
        redisReply *d = redisCommand(c, "DUMP %s", names[i]);
        cr_assert(d && d->type == REDIS_REPLY_STRING, "DUMP %s", names[i]);
        fprintf(m, "%s %zu:", names[i], d->len);
        fwrite(d->str, 1, d->len, m);
        freeReplyObject(d);
        free(names[i]);
    }
    fclose(m);
    free(names);
    freeReplyObject(k);
}

/* ---- one case --------------------------------------------------------------- */

typedef struct state {
    fx_redis_t *r;
    side_t s;
    frontier_item_t item; /* claimed at setup: http://a.test/ */
} state_t;

/* A crawl with something in every common key: three seeds on two hosts, one
 * claimed by worker w1 (per_host 1, so a.test's second seed waits). */
static void crawl_open(state_t *t)
{
    redisContext *c = fx_redis_connect(t->r);
    cr_assert_not_null(c);
    redisReply *r = redisCommand(c, "FLUSHALL");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    side_open(&t->s, t->r, KT, "w1", 1);
    const char *seeds[] = {"http://a.test/", "http://a.test/x", "http://b.test/"};
    side_seed_all(t->s.f, seeds, 3);
    frontier_item_t it[2];
    cr_assert_eq(side_claim(t->s.f, it, 1), 1);
    cr_assert_str_eq(it[0].url, "http://a.test/");
    t->item = it[0];
}

/* Runs op; returns its code. */
static int run_op(state_t *t, op_t op)
{
    frontier_t *f = t->s.f;
    frontier_item_t it[4];
    size_t n = 0;
    frontier_state_t st;
    uint32_t wait;
    int rc, won;
    char *v = NULL;
    switch (op) {
    case OP_SEED: {
        const char *u[] = {"http://a.test/new"};
        return frontier_seed(f, u, 1, 0, NULL);
    }
    case OP_CLAIM:
        rc = frontier_claim(f, 4, it, &n, &st, &wait);
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&it[i]);
        return rc;
    case OP_FINISH: {
        const char *links[] = {"http://a.test/l1", "http://c.test/l2"};
        frontier_done_t d = {.item = &t->item,
                             .outcome = {.status = 200, .bytes = 10},
                             .links = links,
                             .nlinks = 2,
                             .link_depth = 1};
        return frontier_finish(f, &d, 1);
    }
    case OP_RETRY: {
        frontier_outcome_t o = {.status = 503, .error = "http_5xx"};
        return frontier_retry(f, &t->item, &o, 0);
    }
    case OP_RELEASE:
        return frontier_release(f, &t->item, 1);
    case OP_HEARTBEAT:
        return frontier_heartbeat(f, NULL, NULL);
    case OP_STATS: {
        frontier_stats_t s;
        return frontier_stats(t->s.c, KT, &s);
    }
    case OP_HOST_DELAY:
        return frontier_set_host_delay(f, "http://a.test", 100);
    case OP_ROBOTS_GET:
        rc = frontier_robots_get(f, "http://a.test", &v, NULL);
        free(v);
        return rc;
    case OP_ROBOTS_PUT:
        return frontier_robots_put(f, "http://a.test", "R", 1, 60);
    case OP_ROBOTS_LOCK:
        return frontier_robots_lock(f, "http://a.test", 10000, &won);
    case OP_SITEMAPS: {
        const char *u[] = {"http://a.test/sitemap.xml"};
        return frontier_sitemaps_add(f, u, 1);
    }
    case OP_SEED_HOSTS: {
        char **h = NULL;
        rc = frontier_seed_hosts(f, &h, &n);
        for (size_t i = 0; i < n; i++)
            free(h[i]);
        free(h);
        return rc;
    }
    }
    return 0;
}

/* Claims and finishes (bounded) until http://a.test/x was claimed: the crawl
 * goes on.  1 if it was. */
static int crawl_reaches_x(state_t *t)
{
    frontier_t *f = t->s.f;
    for (int round = 0; round < 300; round++) {
        frontier_item_t it[8];
        size_t n = 0;
        frontier_state_t st;
        uint32_t wait = 0;
        if (frontier_claim(f, 8, it, &n, &st, &wait) < 0)
            return 0;
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            found |= !strcmp(it[i].url, "http://a.test/x");
            frontier_done_t d = {.item = &it[i], .outcome = {.status = 200}};
            frontier_finish(f, &d, 1);
            frontier_item_clear(&it[i]);
        }
        if (found)
            return 1;
        if (st == FRONTIER_DONE)
            return 0;
        if (n == 0)
            usleep(10 * 1000);
    }
    return 0;
}

static void run_case(state_t *t, const kcase_t *k)
{
    const char *op = op_names[k->op];
    crawl_open(t);
    redisContext *c = t->s.c;
    char key[256], want[512];
    snprintf(key, sizeof key, P "%s", k->key);
    if (!strcmp(k->key, "seen:b:")) { /* the block of the URL the op offers first */
        bloom_probe_t pr;
        const char *u = k->op == OP_SEED ? "http://a.test/new" : "http://a.test/l1";
        bloom_probe(t->s.b, u, strlen(u), &pr);
        cr_assert(bloom_block_key(t->s.b, pr.block, key, sizeof key) > 0);
    }
    cmd_ok(c, "DEL keytypes-backup", "");
    redisReply *e = redisCommand(c, "EXISTS %s", key);
    int existed = e && e->integer == 1;
    freeReplyObject(e);
    if (existed)
        cmd_ok(c, "RENAME %s keytypes-backup", key);
    const char *got = make_wrong(c, key, k->type);
    snap_t before, after;
    snapshot(c, &before);

    int rc = run_op(t, k->op);
    /* hostinfo's calls say CRAWL_EREPLY (test_keys.c), finish.c too (so far) */
    int ereply = k->op >= OP_ROBOTS_GET || k->op == OP_FINISH;
    cr_expect(rc == CRAWL_EWRONGTYPE || (ereply && rc == CRAWL_EREPLY),
              "%s as a %s, %s: %d (%s), not a wrong-type error", key, got, op, rc,
              crawl_strerror(rc));
    snprintf(want, sizeof want, "%s is a %s, expected a %s", key, got, k->type);
    if (k->op != OP_STATS) /* frontier_stats has no handle: the code only */
        cr_expect(strstr(frontier_last_error(t->s.f), want), "%s as a %s, %s: error '%s'", key, got,
                  op, frontier_last_error(t->s.f));
    snapshot(c, &after);
    cr_expect(before.nkeys == after.nkeys && before.len == after.len &&
                  !memcmp(before.buf, after.buf, before.len),
              "%s as a %s, %s: the crawl's keys changed (%zu keys before, %zu after)", key, got, op,
              before.nkeys, after.nkeys);
    free(before.buf);
    free(after.buf);

    /* put the key back: the operation works, and so does the crawl */
    cmd_ok(c, "DEL %s", key);
    if (existed)
        cmd_ok(c, "RENAME keytypes-backup %s", key);
    rc = run_op(t, k->op);
    cr_expect_eq(rc, 0, "%s put back, %s: %s (%s)", key, op, crawl_strerror(rc),
                 frontier_last_error(t->s.f));
    if (k->op == OP_ROBOTS_LOCK)
        frontier_robots_unlock(t->s.f, "http://a.test");
    if (k->op != OP_FINISH && k->op != OP_RETRY && k->op != OP_RELEASE)
        frontier_release(t->s.f, &t->item, 1);
    cr_expect(crawl_reaches_x(t), "%s put back after %s: http://a.test/x never claimed", key, op);
    side_check(c, t->s.f, 1);
    frontier_item_clear(&t->item);
    side_close(&t->s);
    memset(&t->s, 0, sizeof t->s);
}

Test(keytypes, every_key_of_the_wrong_type_fails_its_calls_naming_it_and_changes_nothing)
{
    state_t t = {0};
    t.r = side_redis();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&t, &cases[i]);
    fx_redis_stop(t.r);
}

/* ---- frontier_open ---------------------------------------------------------- */

/* Each key frontier_open checks (every single key of keys.def, the opening
 * worker's two, the filter's meta hash through bloom_open): of the wrong
 * type, the open fails naming it before it writes anything (not even the
 * filter it would create), and works once the key is gone. */
Test(keytypes, open_refuses_a_key_of_the_wrong_type_before_writing_anything)
{
    fx_redis_t *r = side_redis();
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    char keys[FR_K_COUNT + 3][256];
    const char *types[FR_K_COUNT + 3];
    size_t n = 0;
    for (int id = 0; id < FR_K_COUNT; id++)
        if (!fr_key_is_family((fr_key_id_t)id) && id != FR_K_SEEN) {
            snprintf(keys[n], sizeof keys[n], P "%s", fr_key_suffix((fr_key_id_t)id));
            types[n++] = fr_key_type((fr_key_id_t)id);
        }
    snprintf(keys[n], sizeof keys[n], P "lease:w2");
    types[n++] = "hash";
    snprintf(keys[n], sizeof keys[n], P "worker:w2");
    types[n++] = "hash";
    snprintf(keys[n], sizeof keys[n], P "seen:meta");
    types[n++] = "hash";
    for (size_t i = 0; i < n; i++) {
        redisReply *fl = redisCommand(c, "FLUSHALL");
        freeReplyObject(fl);
        const char *got = make_wrong(c, keys[i], types[i]);
        snap_t before, after;
        snapshot(c, &before);
        frontier_config_t cfg;
        frontier_config_defaults(&cfg);
        cfg.crawl = KT;
        cfg.worker_id = "w2";
        cfg.bloom_capacity = 1000;
        char err[512] = "", want[512];
        frontier_t *f = fr_open(c, &cfg, NULL, err, sizeof err);
        cr_expect_null(f, "%s as a %s: frontier_open worked", keys[i], got);
        fr_close(f);
        if (i == n - 1) /* bloom_open's words */
            snprintf(want, sizeof want, "'%s' is a %s", keys[i], got);
        else
            snprintf(want, sizeof want, "%s is a %s, expected a %s", keys[i], got, types[i]);
        cr_expect(strstr(err, want), "%s as a %s: frontier_open said '%s'", keys[i], got, err);
        snapshot(c, &after);
        cr_expect(before.nkeys == after.nkeys && before.len == after.len &&
                      !memcmp(before.buf, after.buf, before.len),
                  "%s as a %s: frontier_open changed the crawl's keys (%zu keys, then %zu)",
                  keys[i], got, before.nkeys, after.nkeys);
        free(before.buf);
        free(after.buf);
        cmd_ok(c, "DEL %s", keys[i]);
        f = fr_open(c, &cfg, NULL, err, sizeof err);
        cr_expect_not_null(f, "%s deleted: frontier_open: %s", keys[i], err);
        fr_close(f);
    }
    redisFree(c);
    fx_redis_stop(r);
}

/* ---- the crawler binary: the two cases of issue 14 -------------------------- */

#define NPAGES 12

/* /p0 -> /p1 -> ... -> /p<NPAGES-1>, each answering after delay_ms. */
static void chain_site(fx_http_t *h, unsigned delay_ms)
{
    fx_http_set(h, "/robots.txt", &(fx_route_t){.content_type = "text/plain", .body = "\n"});
    for (int i = 0; i < NPAGES; i++) {
        char path[32], body[128];
        snprintf(path, sizeof path, "/p%d", i);
        snprintf(body, sizeof body, i + 1 < NPAGES ? "<a href=\"/p%d\">next</a>" : "<p>end%d</p>",
                 i + 1);
        fx_http_set(h, path, &(fx_route_t){.body = body, .delay_ms = delay_ms});
    }
}

/* The chain site on its own server, seeded at /p0, on the suite's Redis,
 * with a connection to it. */
static redisContext *chain_start(crawl_env_t *e, unsigned delay_ms)
{
    crawl_env_start(e, side_redis(), "/p0");
    chain_site(e->h, delay_ms);
    redisContext *c = fx_redis_connect(e->r);
    cr_assert_not_null(c, "%s", fx_error());
    return c;
}

static void chain_stop(crawl_env_t *e, redisContext *c)
{
    redisFree(c);
    crawl_env_stop(e);
}

/* How many of the chain's pages were fetched at least once. */
static int pages_fetched(fx_http_t *h)
{
    int n = 0;
    for (int i = 0; i < NPAGES; i++) {
        char path[32];
        snprintf(path, sizeof path, "/p%d", i);
        n += fx_http_hits(h, path) > 0;
    }
    return n;
}

static void redis_eval(redisContext *c, const char *script, const char *key)
{
    redisReply *r = redisCommand(c, "EVAL %s 1 %s", script, key);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "EVAL: %s", r ? r->str : c->errstr);
    freeReplyObject(r);
}

static char *read_text(const char *path)
{
    char *s = fx_read_file(path, NULL);
    return s ? s : strdup("");
}

/* seq turned into a list while a crawl runs: the crawler stops (no hang),
 * a new one refuses to start naming the key, and once the key is deleted a
 * crawl fetches every page (no URL lost in the failed claim). */
Test(keytypes, seq_as_a_list_during_a_crawl_stops_it_and_loses_no_url, .timeout = 120)
{
    crawl_env_t e;
    redisContext *c = chain_start(&e, 150);
    fx_redis_t *r = e.r;
    fx_http_t *h = e.h;
    char *seeds = e.seeds, *log = e.log, *out = e.out;
    char *argv[] = {CRAWLER_BIN,
                    "crawl",
                    "--redis",
                    (char *)fx_redis_url(r),
                    "--crawl",
                    KT,
                    "--seeds",
                    seeds,
                    "--delay",
                    "0",
                    "--bloom-capacity",
                    "10000",
                    "--threads",
                    "1",
                    "--out",
                    out,
                    "--quiet",
                    NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert(pid > 0);
    for (int i = 0; i < 1000 && fx_http_hits(h, "/p2") == 0; i++)
        usleep(10 * 1000);
    cr_assert(fx_http_hits(h, "/p2") > 0, "the crawl did not start");
    redis_eval(c, "redis.call('DEL', KEYS[1]); return redis.call('RPUSH', KEYS[1], 'x')", P "seq");
    int rc = fx_wait(pid, 30000);
    cr_expect_neq(rc, -2, "the crawler hung with seq a list (killed after 30 s)");
    cr_expect_neq(rc, 0, "the crawler exited 0 with seq a list");

    rc = fx_run(argv, NULL, log, 30000);
    char *text = read_text(log);
    cr_expect(rc != 0 && rc != -2, "a new crawler with seq a list exited %d", rc);
    cr_expect(strstr(text, P "seq is a list, expected a string"), "stderr: %s", text);
    free(text);

    cmd_ok(c, "DEL %s", P "seq");
    char *rerun[] = {CRAWLER_BIN, "crawl", "--redis",          (char *)fx_redis_url(r),
                     "--crawl",   KT,      "--delay",          "0",
                     "--threads", "1",     "--bloom-capacity", "10000",
                     "--quiet",   NULL};
    rc = fx_run(rerun, NULL, log, 60000);
    text = read_text(log);
    cr_expect_eq(rc, 0, "the crawl after deleting seq exited %d: %s", rc, text);
    free(text);
    cr_expect_eq(pages_fetched(h), NPAGES, "%d of %d pages fetched after the fix", pages_fetched(h),
                 NPAGES);
    chain_stop(&e, c);
}

/* ready a string during `crawler seed`: it fails naming the key and records
 * nothing (not even the seed as seen), so once the key is deleted the same
 * seeding adds the seed and the crawl fetches it. */
Test(keytypes, ready_as_a_string_during_seed_records_nothing_and_the_seed_is_crawled_after,
     .timeout = 120)
{
    crawl_env_t e;
    redisContext *c = chain_start(&e, 0);
    fx_redis_t *r = e.r;
    fx_http_t *h = e.h;
    char *seeds = e.seeds, *log = e.log, *outp = e.out; /* crawler seed's stdout */
    cmd_ok(c, "SET %s junk", P "ready");
    char *seed[] = {
        CRAWLER_BIN,        "seed",  seeds, "--redis", (char *)fx_redis_url(r), "--crawl", KT,
        "--bloom-capacity", "10000", NULL};
    int rc = fx_run(seed, outp, log, 30000);
    char *text = read_text(log);
    cr_expect(rc != 0 && rc != -2, "crawler seed with ready a string exited %d", rc);
    cr_expect(strstr(text, P "ready is a string, expected a zset"), "stderr: %s", text);
    free(text);

    cmd_ok(c, "DEL %s", P "ready");
    rc = fx_run(seed, outp, log, 30000);
    text = read_text(outp);
    cr_expect_eq(rc, 0, "crawler seed after the fix exited %d", rc);
    cr_expect(!strncmp(text, "1 added", 7), "crawler seed after the fix said: %s", text);
    free(text);
    char *crawl[] = {CRAWLER_BIN, "crawl", "--redis",          (char *)fx_redis_url(r),
                     "--crawl",   KT,      "--delay",          "0",
                     "--threads", "1",     "--bloom-capacity", "10000",
                     "--quiet",   NULL};
    rc = fx_run(crawl, NULL, log, 60000);
    cr_expect_eq(rc, 0, "the crawl exited %d", rc);
    cr_expect_eq(pages_fetched(h), NPAGES, "%d of %d pages fetched", pages_fetched(h), NPAGES);
    chain_stop(&e, c);
}
