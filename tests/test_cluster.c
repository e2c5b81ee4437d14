/*
 * test_cluster.c -- the Redis Cluster client (cluster/): the slot function
 * and the error-reply sorting (tables), seed parsing, a plain Redis through
 * the same calls, and real local clusters (cluster_env.h): routing from one
 * seed, a slot migrated (MOVED), a slot half migrated (ASK), and a master
 * killed and its replica promoted (failover).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_env.h"
#include "errors.h"
#include "fixtures.h"

static fx_cluster_t *g_fx;
static fx_redis_t *g_redis;
static cluster_t *g_cl;

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* a write to a killed node is an error, not death */
}

static void teardown(void)
{
    cluster_close(g_cl);
    g_cl = NULL;
    fx_cluster_stop(g_fx);
    g_fx = NULL;
    fx_redis_stop(g_redis);
    g_redis = NULL;
}

TestSuite(cluster, .init = setup, .fini = teardown, .timeout = 120);

/* ---- pure functions ------------------------------------------------------ */

/* Expected slots from `redis-cli -p PORT CLUSTER KEYSLOT <key>` on a
 * redis-server 7.0.15 with cluster-enabled yes. */
static const struct {
    const char *key;
    int slot;
} slot_cases[] = {
    {"123456789", 12739}, /* CRC16-XMODEM("123456789") = 0x31C3 */
    {"", 0},
    {"foo", 12182},
    {"bar", 5061},
    {"{user1000}.following", 3443},
    {"{user1000}.followers", 3443},
    {"foo{}{bar}", 8363},    /* empty first tag: the whole key */
    {"foo{{bar}}zap", 4015}, /* tag "{bar" */
    {"{bar", 4015},
    {"foo{bar}{zap}", 5061}, /* first tag only: "bar" */
    {"bar}", 6624},
    {"{}", 15257},
    {"{}x", 10595},
    {"a{b}c", 3300},
    {"{b}", 3300},
    {"b", 3300},
    {"{{}}", 4092},
    {"x{}", 2608},
    {"t:{crawl/7}:q", 15351},
    {"crawl/7", 15351},
    {"}{a}", 15495},
};

Test(cluster, slot_table)
{
    for (size_t i = 0; i < sizeof slot_cases / sizeof slot_cases[0]; i++) {
        const char *k = slot_cases[i].key;
        int got = cluster_slot(k, strlen(k));
        cr_expect_eq(got, slot_cases[i].slot, "cluster_slot(\"%s\") = %d, want %d", k, got,
                     slot_cases[i].slot);
    }
}

static const struct {
    const char *text; /* NULL: no reply */
    int type;
    cluster_kind_t kind;
    int slot;
    const char *host;
    int port;
} classify_cases[] = {
    {NULL, 0, CLUSTER_REPLY_OK, -1, "", 0},
    {"OK", REDIS_REPLY_STATUS, CLUSTER_REPLY_OK, -1, "", 0},
    {"MOVED 3999 127.0.0.1:6381", REDIS_REPLY_STRING, CLUSTER_REPLY_OK, -1, "", 0},
    {"MOVED 3999 127.0.0.1:6381", REDIS_REPLY_ERROR, CLUSTER_REPLY_MOVED, 3999, "127.0.0.1", 6381},
    {"ASK 16383 10.0.0.2:7000", REDIS_REPLY_ERROR, CLUSTER_REPLY_ASK, 16383, "10.0.0.2", 7000},
    {"MOVED 0 ::1:6379", REDIS_REPLY_ERROR, CLUSTER_REPLY_MOVED, 0, "::1", 6379},
    {"MOVED 7 [::1]:6379", REDIS_REPLY_ERROR, CLUSTER_REPLY_MOVED, 7, "::1", 6379},
    {"ASK 12 :6380", REDIS_REPLY_ERROR, CLUSTER_REPLY_ASK, 12, "", 6380},
    {"MOVED 16384 h:1", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"MOVED 12 h:0", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"MOVED 12 h", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"MOVED", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"MOVED ", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"MOVEDX 1 h:1", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"ASKING", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
    {"TRYAGAIN Multiple keys request during rehashing of slot", REDIS_REPLY_ERROR,
     CLUSTER_REPLY_TRYAGAIN, -1, "", 0},
    {"CLUSTERDOWN The cluster is down", REDIS_REPLY_ERROR, CLUSTER_REPLY_CLUSTERDOWN, -1, "", 0},
    {"CLUSTERDOWN Hash slot not served", REDIS_REPLY_ERROR, CLUSTER_REPLY_CLUSTERDOWN, -1, "", 0},
    {"ERR unknown command", REDIS_REPLY_ERROR, CLUSTER_REPLY_ERROR, -1, "", 0},
};

Test(cluster, classify_table)
{
    for (size_t i = 0; i < sizeof classify_cases / sizeof classify_cases[0]; i++) {
        const char *t = classify_cases[i].text;
        redisReply r = {.type = classify_cases[i].type, .str = (char *)t, .len = t ? strlen(t) : 0};
        cluster_redirect_t rd;
        cluster_kind_t k = cluster_classify(t ? &r : NULL, &rd);
        const char *name = t ? t : "(no reply)";
        cr_expect_eq(k, classify_cases[i].kind, "%s (type %d): kind %d, want %d", name, r.type, k,
                     classify_cases[i].kind);
        cr_expect_eq(rd.kind, k, "%s: rd.kind", name);
        cr_expect_eq(rd.slot, classify_cases[i].slot, "%s: slot %d", name, rd.slot);
        cr_expect_str_eq(rd.host, classify_cases[i].host, "%s: host '%s'", name, rd.host);
        cr_expect_eq(rd.port, classify_cases[i].port, "%s: port %d", name, rd.port);
    }
}

static int dead_port(void)
{
    fx_redis_t *r = fx_redis_start(); /* a port known free once its server stops */
    cr_assert(r, "%s", fx_error());
    int port = fx_redis_port(r);
    fx_redis_stop(r);
    return port;
}

Test(cluster, bad_seeds_refused)
{
    const char *bad[] = {"",
                         "redis://",
                         "redis://h:0",
                         "redis://h:70000",
                         "h1:1,",
                         ",h1:1",
                         "h1:x",
                         "redis://[::1",
                         "unix://relative.sock",
                         "redis://h:1/x",
                         "unix:///tmp/r.sock?db=x"};
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *s[1] = {bad[i]};
        err[0] = '\0';
        cluster_t *c = cluster_open(s, 1, NULL, err, sizeof err);
        cr_expect_null(c, "seed '%s' accepted", bad[i]);
        cluster_close(c);
        cr_expect(strstr(err, "bad Redis seed"), "seed '%s': error '%s'", bad[i], err);
    }
    const char *two_pw[2] = {"redis://:a@127.0.0.1:1", "redis://:b@127.0.0.1:2"};
    cr_expect_null(cluster_open(two_pw, 2, NULL, err, sizeof err), "two passwords accepted");
    cr_expect(strstr(err, "bad Redis seed"), "two passwords: '%s'", err);

    /* well-formed seeds, nobody there: every form parses and is tried */
    int port = dead_port();
    char forms[4][128];
    snprintf(forms[0], sizeof forms[0], "redis://127.0.0.1:%d", port);
    snprintf(forms[1], sizeof forms[1], "redis://:pw@127.0.0.1:%d,[::1]:%d/0", port, port);
    snprintf(forms[2], sizeof forms[2], "127.0.0.1:%d,localhost:%d", port, port);
    snprintf(forms[3], sizeof forms[3], "unix:///nonexistent/redis.sock?db=2");
    for (int i = 0; i < 4; i++) {
        const char *s[1] = {forms[i]};
        cr_expect_null(cluster_open(s, 1, NULL, err, sizeof err), "%s: opened", forms[i]);
        cr_expect(strstr(err, "none of the listed Redis nodes answered"), "%s: error '%s'",
                  forms[i], err);
    }
}

/* ---- helpers over a cluster_t ------------------------------------------- */

static int set_key(cluster_t *c, const char *key, const char *val)
{
    const char *argv[3] = {"SET", key, val};
    redisReply *r = NULL;
    int rc = cluster_command_argv(c, key, strlen(key), 3, argv, NULL, &r);
    if (rc == 0 && (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0))
        rc = CRAWL_EREPLY;
    if (r)
        freeReplyObject(r);
    return rc;
}

/* GET key: 0 with its value in buf ("(nil)" for none), or the error. */
static int get_key(cluster_t *c, const char *key, char *buf, size_t len)
{
    const char *argv[2] = {"GET", key};
    redisReply *r = NULL;
    int rc = cluster_command_argv(c, key, strlen(key), 2, argv, NULL, &r);
    if (rc == 0 && r->type == REDIS_REPLY_STRING)
        snprintf(buf, len, "%s", r->str);
    else if (rc == 0 && r->type == REDIS_REPLY_NIL)
        snprintf(buf, len, "(nil)");
    else if (rc == 0)
        snprintf(buf, len, "(reply type %d: %s)", r->type, r->str ? r->str : "");
    if (r)
        freeReplyObject(r);
    return rc;
}

static void expect_value(cluster_t *c, const char *key, const char *want)
{
    char got[256] = "";
    int rc = get_key(c, key, got, sizeof got);
    cr_expect_eq(rc, 0, "GET %s: %s", key, crawl_strerror(rc));
    cr_expect_str_eq(got, want, "GET %s = '%s', want '%s'", key, got, want);
}

static cluster_t *open_one(const char *url, int refresh_min_ms, int retry_ms)
{
    cluster_config_t cfg;
    cluster_config_defaults(&cfg);
    cfg.refresh_min_ms = refresh_min_ms;
    cfg.retry_ms = retry_ms;
    char err[512] = "";
    const char *s[1] = {url};
    cluster_t *c = cluster_open(s, 1, &cfg, err, sizeof err);
    cr_assert(c, "cluster_open(%s): %s", url, err);
    return c;
}

/* ---- a plain Redis ------------------------------------------------------- */

Test(cluster, plain_redis_same_api)
{
    g_redis = fx_redis_start();
    cr_assert(g_redis, "%s", fx_error());
    char url[96];
    snprintf(url, sizeof url, "%s/3", fx_redis_url(g_redis));
    g_cl = open_one(url, 0, 2000);
    cr_assert_eq(cluster_is_cluster(g_cl), 0, "a plain Redis seen as a cluster");
    char key[32], val[32];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "v%d", i);
        cr_assert_eq(set_key(g_cl, key, val), 0, "SET %s", key);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "v%d", i);
        expect_value(g_cl, key, val);
    }
    redisContext *m[4];
    const char *addr[4];
    size_t n = 0;
    cr_assert_eq(cluster_masters(g_cl, m, addr, 4, &n), 0);
    cr_assert_eq(n, 1, "%zu masters", n);
    redisReply *r = redisCommand(m[0], "DBSIZE"); /* db 3, from the URL */
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 200, "DBSIZE of db 3");
    freeReplyObject(r);
    cr_expect_str_eq(cluster_slot_owner(g_cl, 9999), addr[0]);

    /* the server restarted: the call that meets the lost connection fails,
     * the next one opens a new one */
    cr_assert_eq(fx_redis_restart(g_redis, SIGKILL, 0), 0, "%s", fx_error());
    char got[64];
    int rc = get_key(g_cl, "k1", got, sizeof got);
    cr_expect(rc == CRAWL_EREDIS || rc == 0, "first call after restart: %s", crawl_strerror(rc));
    cr_expect_eq(set_key(g_cl, "after", "1"), 0, "a call after the restart");
    expect_value(g_cl, "after", "1");
}

/* ---- a 3-master cluster ------------------------------------------------- */

static int node_of(const char *addr)
{
    for (int i = 0; g_fx && i < fx_cluster_nnodes(g_fx); i++) {
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fx_cluster_port(g_fx, i));
        if (addr && strcmp(a, addr) == 0)
            return i;
    }
    return -1;
}

/* The value of key read on node i directly (after ASKING, with asking),
 * no redirect followed. */
static void expect_on_node(int i, const char *key, const char *want, int asking)
{
    redisContext *ctx = fx_cluster_connect(g_fx, i);
    cr_assert(ctx, "%s", fx_error());
    redisReply *r = asking ? redisCommand(ctx, "ASKING") : NULL;
    if (r)
        freeReplyObject(r);
    r = redisCommand(ctx, "GET %s", key);
    cr_expect(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0,
              "GET %s on node %d: %s", key, i, r ? (r->str ? r->str : "(nil)") : ctx->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
}

Test(cluster, three_masters_from_one_seed)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    g_cl = open_one(fx_cluster_url(g_fx, 2), 100, 5000);
    cr_assert_eq(cluster_is_cluster(g_cl), 1);
    int per_node[3] = {0};
    char key[32], val[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "key:%d", i);
        snprintf(val, sizeof val, "val:%d", i);
        cr_assert_eq(set_key(g_cl, key, val), 0, "SET %s", key);
    }
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "key:%d", i);
        snprintf(val, sizeof val, "val:%d", i);
        expect_value(g_cl, key, val);
        int owner = node_of(cluster_slot_owner(g_cl, cluster_slot(key, strlen(key))));
        cr_assert(owner >= 0 && owner < 3, "%s: owner %d", key, owner);
        per_node[owner]++;
        if (i % 10 == 0)
            expect_on_node(owner, key, val, 0); /* routed to the node that owns it */
    }
    for (int i = 0; i < 3; i++)
        cr_expect_gt(per_node[i], 0, "no key on master %d", i);

    /* the slot of binary keys, as the server computes it */
    redisContext *ctx = fx_cluster_connect(g_fx, 0);
    cr_assert(ctx);
    for (int i = 0; i < 64; i++) {
        char k[8] = {(char)(i * 4), (char)0xff, '{', (char)i, '}', 0, (char)(255 - i), 'x'};
        size_t klen = (size_t)(i % 8) + 1;
        redisReply *r = redisCommand(ctx, "CLUSTER KEYSLOT %b", k, klen);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "CLUSTER KEYSLOT");
        cr_expect_eq(cluster_slot(k, klen), (int)r->integer, "binary key %d (%zu bytes)", i, klen);
        freeReplyObject(r);
    }
    redisFree(ctx);

    redisContext *m[8];
    const char *addr[8];
    size_t n = 0;
    cr_assert_eq(cluster_masters(g_cl, m, addr, 8, &n), 0);
    cr_assert_eq(n, 3, "%zu masters", n);
    for (size_t i = 0; i < n; i++)
        cr_expect(node_of(addr[i]) >= 0 && node_of(addr[i]) < 3, "master %s", addr[i]);
    cr_expect_eq(cluster_masters(g_cl, m, addr, 2, &n), CRAWL_ETOOLONG);
    cr_expect_eq(n, 3);
}

Test(cluster, seed_forms_and_db_refused)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    int dead = dead_port();
    char list[128], a[64], b[64], db[96];
    snprintf(list, sizeof list, "redis://127.0.0.1:%d,127.0.0.1:%d", dead,
             fx_cluster_port(g_fx, 1));
    snprintf(a, sizeof a, "127.0.0.1:%d", dead);
    snprintf(b, sizeof b, "127.0.0.1:%d", fx_cluster_port(g_fx, 0));
    snprintf(db, sizeof db, "%s/2", fx_cluster_url(g_fx, 0));
    char err[512];
    const char *one[1] = {list};
    cluster_t *c = cluster_open(one, 1, NULL, err, sizeof err);
    cr_assert(c, "%s: %s", list, err);
    cr_expect_eq(set_key(c, "s1", "x"), 0);
    cluster_close(c);
    const char *two[2] = {a, b};
    c = cluster_open(two, 2, NULL, err, sizeof err);
    cr_assert(c, "%s %s: %s", a, b, err);
    expect_value(c, "s1", "x");
    cluster_close(c);
    const char *sel[1] = {db};
    cr_expect_null(cluster_open(sel, 1, NULL, err, sizeof err), "db 2 on a cluster accepted");
    cr_expect(strstr(err, "only db 0"), "%s", err);
}

/* A key whose slot master `node` owns, as c's map says. */
static void key_on(cluster_t *c, int node, char *key, size_t len)
{
    for (int i = 0; i < 10000; i++) {
        snprintf(key, len, "on%d:%d", node, i);
        if (node_of(cluster_slot_owner(c, cluster_slot(key, strlen(key)))) == node)
            return;
    }
    cr_assert_fail("no key found on node %d", node);
}

Test(cluster, connections_lazy_kept_and_reopened)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    redisContext *raw = fx_cluster_connect(g_fx, 1); /* counts node 1's connections */
    cr_assert(raw);
    long long c0 = fx_redis_info(raw, "stats", "total_connections_received");
    g_cl = open_one(fx_cluster_url(g_fx, 0), 100, 5000);
    cr_expect_eq(fx_redis_info(raw, "stats", "total_connections_received"), c0,
                 "cluster_open connected to a node it did not need");
    char key[32];
    key_on(g_cl, 1, key, sizeof key);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(set_key(g_cl, key, "x"), 0);
    cr_expect_eq(fx_redis_info(raw, "stats", "total_connections_received"), c0 + 1,
                 "50 calls to node 1: not one kept connection");

    redisReply *r = redisCommand(raw, "CLIENT KILL TYPE normal SKIPME yes");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "CLIENT KILL");
    freeReplyObject(r);
    expect_value(g_cl, key, "x"); /* the lost connection is opened again */
    long long c1 = fx_redis_info(raw, "stats", "total_connections_received");
    cr_expect_gt(c1, c0 + 1, "no new connection after the kill");
    for (int i = 0; i < 20; i++)
        expect_value(g_cl, key, "x");
    cr_expect_eq(fx_redis_info(raw, "stats", "total_connections_received"), c1,
                 "the reopened connection is not kept");
    redisFree(raw);
}

static void node_do(int i, const char *fmt, const char *a1, const char *a2)
{
    redisContext *ctx = fx_cluster_connect(g_fx, i);
    cr_assert(ctx, "%s", fx_error());
    redisReply *r = redisCommand(ctx, fmt, a1, a2);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "node %d: %s %s %s: %s", i, fmt, a1, a2,
              r ? r->str : ctx->errstr);
    freeReplyObject(r);
    redisFree(ctx);
}

/* Moves slot from master src to dst: keys keys[0..nkeys) go over; with
 * finish, every master is told dst owns the slot. */
static void migrate(int slot, int src, int dst, const char **keys, size_t nkeys, int finish)
{
    char s[16], port[16];
    snprintf(s, sizeof s, "%d", slot);
    snprintf(port, sizeof port, "%d", fx_cluster_port(g_fx, dst));
    node_do(dst, "CLUSTER SETSLOT %s IMPORTING %s", s, fx_cluster_id(g_fx, src));
    node_do(src, "CLUSTER SETSLOT %s MIGRATING %s", s, fx_cluster_id(g_fx, dst));
    for (size_t i = 0; i < nkeys; i++)
        node_do(src, "MIGRATE 127.0.0.1 %s %s 0 5000", port, keys[i]);
    if (!finish)
        return;
    int order[3] = {dst, src, 3 - dst - src};
    for (int i = 0; i < 3; i++)
        node_do(order[i], "CLUSTER SETSLOT %s NODE %s", s, fx_cluster_id(g_fx, dst));
}

Test(cluster, moved_follows_a_migrated_slot)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    g_cl = open_one(fx_cluster_url(g_fx, 0), 0, 5000);
    const char *k1 = "{mv1}:a", *k2 = "{mv2}:b";
    cr_assert_eq(set_key(g_cl, k1, "one"), 0);
    cr_assert_eq(set_key(g_cl, k2, "two"), 0);
    int s1 = cluster_slot(k1, strlen(k1)), s2 = cluster_slot(k2, strlen(k2));
    int src1 = node_of(cluster_slot_owner(g_cl, s1)), src2 = node_of(cluster_slot_owner(g_cl, s2));
    cr_assert(src1 >= 0 && src2 >= 0);
    int dst1 = (src1 + 1) % 3, dst2 = (src2 + 1) % 3;
    migrate(s1, src1, dst1, &k1, 1, 1);
    migrate(s2, src2, dst2, &k2, 1, 1);

    /* the blocking call: MOVED, a refresh, the new owner */
    unsigned long before = cluster_refreshes(g_cl);
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, s1)), src1, "map changed before any MOVED");
    expect_value(g_cl, k1, "one");
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, s1)), dst1, "slot %d not moved in the map", s1);
    cr_expect_eq(cluster_refreshes(g_cl), before + 1, "MOVED did not refresh the map");
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, s2)), dst2, "the refresh missed slot %d", s2);

    /* by hand, as a pipelining caller does: a stale map, MOVED, cluster_moved */
    cluster_t *c = open_one(fx_cluster_url(g_fx, 1), 100000, 5000);
    const char *k3 = "{mv3}:c";
    cr_assert_eq(set_key(c, k3, "three"), 0);
    int s3 = cluster_slot(k3, strlen(k3));
    int src3 = node_of(cluster_slot_owner(c, s3)), dst3 = (src3 + 1) % 3;
    migrate(s3, src3, dst3, &k3, 1, 1);
    redisContext *ctx;
    cr_assert_eq(cluster_conn(c, s3, &ctx), 0);
    redisReply *r = redisCommand(ctx, "GET %s", k3);
    cluster_redirect_t rd;
    cr_assert_eq(cluster_classify(r, &rd), CLUSTER_REPLY_MOVED, "%s", r ? r->str : "no reply");
    cr_expect_eq(rd.slot, s3);
    freeReplyObject(r);
    cr_assert_eq(cluster_moved(c, &rd), 0);
    cr_expect_eq(node_of(cluster_slot_owner(c, s3)), dst3);
    cr_assert_eq(cluster_conn(c, s3, &ctx), 0);
    r = redisCommand(ctx, "GET %s", k3);
    cr_expect(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "three") == 0, "GET %s", k3);
    freeReplyObject(r);
    cluster_close(c);
}

Test(cluster, ask_during_a_migration)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    g_cl = open_one(fx_cluster_url(g_fx, 0), 0, 5000);
    const char *moved = "{ask}:moved", *stays = "{ask}:stays";
    cr_assert_eq(set_key(g_cl, moved, "m"), 0);
    cr_assert_eq(set_key(g_cl, stays, "s"), 0);
    int slot = cluster_slot(moved, strlen(moved));
    int src = node_of(cluster_slot_owner(g_cl, slot)), dst = (src + 1) % 3;
    migrate(slot, src, dst, &moved, 1, 0); /* still MIGRATING / IMPORTING */

    /* without ASKING the importing node refuses the key */
    redisContext *raw = fx_cluster_connect(g_fx, dst);
    cr_assert(raw);
    redisReply *r = redisCommand(raw, "GET %s", moved);
    cluster_redirect_t rd;
    cr_expect_eq(cluster_classify(r, &rd), CLUSTER_REPLY_MOVED, "%s", r ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(raw);

    unsigned long before = cluster_refreshes(g_cl);
    expect_value(g_cl, moved, "m");                   /* ASK, then ASKING + GET on dst */
    expect_value(g_cl, stays, "s");                   /* still on src */
    cr_expect_eq(set_key(g_cl, "{ask}:new", "n"), 0); /* a new key goes to dst */
    expect_on_node(dst, "{ask}:new", "n", 1);
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, slot)), src, "ASK changed the map");
    cr_expect_eq(cluster_refreshes(g_cl), before, "ASK refreshed the map");
}

/* ---- TRYAGAIN ------------------------------------------------------------ */

/* The count of errorstat_<what> in node i's INFO errorstats (0 if none). */
static long errorstat(int i, const char *what)
{
    redisContext *ctx = fx_cluster_connect(g_fx, i);
    redisReply *r = ctx ? redisCommand(ctx, "INFO errorstats") : NULL;
    char pat[64];
    snprintf(pat, sizeof pat, "errorstat_%s:count=", what);
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, pat) : NULL;
    long n = p ? strtol(p + strlen(pat), NULL, 10) : 0;
    if (r)
        freeReplyObject(r);
    if (ctx)
        redisFree(ctx);
    return n;
}

typedef struct finisher {
    int slot, src, dst;
    const char *key;
    long seen; /* TRYAGAIN count on src before the call */
    int done;  /* 1: migration finished after a TRYAGAIN; -1: failed */
} finisher_t;

static int raw_ok(int i, const char *fmt, const char *a1, const char *a2)
{
    redisContext *ctx = fx_cluster_connect(g_fx, i);
    redisReply *r = ctx ? redisCommand(ctx, fmt, a1, a2) : NULL;
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (r)
        freeReplyObject(r);
    if (ctx)
        redisFree(ctx);
    return ok;
}

/* Waits (bounded) until src has answered one more TRYAGAIN, then moves the
 * rest of the slot over and ends the migration.  No criterion asserts in
 * this thread: the result is in f->done. */
static void *finish_after_tryagain(void *p)
{
    finisher_t *f = p;
    f->done = -1;
    uint64_t deadline = fx_now_ms() + 20000;
    while (errorstat(f->src, "TRYAGAIN") <= f->seen && fx_now_ms() < deadline)
        usleep(10000);
    if (fx_now_ms() >= deadline)
        return NULL;
    char s[16], port[16];
    snprintf(s, sizeof s, "%d", f->slot);
    snprintf(port, sizeof port, "%d", fx_cluster_port(g_fx, f->dst));
    if (!raw_ok(f->src, "MIGRATE 127.0.0.1 %s %s 0 5000", port, f->key))
        return NULL;
    int order[3] = {f->dst, f->src, 3 - f->dst - f->src};
    for (int i = 0; i < 3; i++)
        if (!raw_ok(order[i], "CLUSTER SETSLOT %s NODE %s", s, fx_cluster_id(g_fx, f->dst)))
            return NULL;
    f->done = 1;
    return NULL;
}

static int mget2(cluster_t *c, const char *a, const char *b, redisReply **r)
{
    const char *argv[3] = {"MGET", a, b};
    return cluster_command_argv(c, a, strlen(a), 3, argv, NULL, r);
}

Test(cluster, tryagain_backs_off_bounded_then_succeeds)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    g_cl = open_one(fx_cluster_url(g_fx, 0), 0, 300);
    const char *a = "{ta}:a", *b = "{ta}:b";
    cr_assert_eq(set_key(g_cl, a, "A"), 0);
    cr_assert_eq(set_key(g_cl, b, "B"), 0);
    int slot = cluster_slot(a, strlen(a));
    int src = node_of(cluster_slot_owner(g_cl, slot)), dst = (src + 1) % 3;
    migrate(slot, src, dst, &a, 1, 0); /* a on dst, b on src: MGET gets TRYAGAIN */

    redisReply *r = NULL;
    long before = errorstat(src, "TRYAGAIN");
    cr_expect_eq(mget2(g_cl, a, b, &r), CRAWL_EREDIS, "a TRYAGAIN that lasts: not bounded");
    cr_expect_null(r);
    cr_expect_gt(errorstat(src, "TRYAGAIN"), before + 1, "no TRYAGAIN tried again");
    cluster_close(g_cl);

    g_cl = open_one(fx_cluster_url(g_fx, 0), 0, 30000);
    finisher_t f = {.slot = slot, .src = src, .dst = dst, .key = b};
    f.seen = errorstat(src, "TRYAGAIN");
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, finish_after_tryagain, &f), 0);
    int rc = mget2(g_cl, a, b, &r);
    pthread_join(th, NULL);
    cr_assert_eq(f.done, 1, "the migration was not finished after a TRYAGAIN");
    cr_assert_eq(rc, 0, "MGET: %s", crawl_strerror(rc));
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "MGET reply");
    cr_expect(r->element[0]->str && strcmp(r->element[0]->str, "A") == 0, "MGET[0]");
    cr_expect(r->element[1]->str && strcmp(r->element[1]->str, "B") == 0, "MGET[1]");
    freeReplyObject(r);
    /* the call may have ended through an ASK (the keys moved while the slot
     * was still migrating), which leaves the map as it was: after a refresh
     * the map must name the new owner */
    cr_assert_eq(cluster_refresh(g_cl), 0);
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, slot)), dst);
}

/* ---- a fake seed: CLUSTER SLOTS (Redis < 7), and "cluster support disabled" */

typedef struct fake {
    int fd, port;
    int conns;                                 /* connections it serves before it ends */
    const char *info, *shards, *slots, *other; /* raw RESP answers */
} fake_t;

static void *fake_serve(void *p)
{
    fake_t *f = p;
    for (int conns = 0; conns < f->conns; conns++) {
        struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
        if (poll(&pfd, 1, 5000) <= 0)
            break;
        int c = accept(f->fd, NULL, NULL);
        char buf[4096];
        ssize_t n;
        while (c >= 0 && (n = read(c, buf, sizeof buf - 1)) > 0) {
            buf[n] = '\0';
            const char *ans = strstr(buf, "INFO")     ? f->info
                              : strstr(buf, "SHARDS") ? f->shards
                              : strstr(buf, "SLOTS")  ? f->slots
                                                      : f->other;
            if (write(c, ans, strlen(ans)) < 0)
                break;
        }
        if (c >= 0)
            close(c);
    }
    return NULL;
}

static void fake_listen(fake_t *f)
{
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    cr_assert(f->fd >= 0 && bind(f->fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              listen(f->fd, 4) == 0 && getsockname(f->fd, (struct sockaddr *)&a, &len) == 0);
    f->port = ntohs(a.sin_port);
}

Test(cluster, cluster_slots_fallback_and_moved_corrections)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char slots[256];
    /* every slot to node 0, named by an empty ip (the seed's host) */
    snprintf(slots, sizeof slots, "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$0\r\n\r\n:%d\r\n$1\r\nx\r\n",
             fx_cluster_port(g_fx, 0));
    fake_t f = {.conns = 1, /* the map, asked once: later ones are asked of node 0 */
                .info = "$19\r\ncluster_enabled:1\r\n\r\n",
                .shards = "-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n",
                .slots = slots,
                .other = "-ERR fake\r\n"};
    fake_listen(&f);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fake_serve, &f), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    g_cl = open_one(url, 0, 5000);
    cr_expect_eq(cluster_is_cluster(g_cl), 1);
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, 16383)), 0, "the SLOTS answer not used");
    char key[32];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "fb:%d", i);
        cr_expect_eq(set_key(g_cl, key, key), 0, "SET %s", key);
        expect_value(g_cl, key, key);
    }
    cr_expect_eq(node_of(cluster_slot_owner(g_cl, 16383)), 2, "MOVED did not correct the map");
    cluster_close(g_cl);
    g_cl = NULL;
    pthread_join(th, NULL);
    close(f.fd);

    fake_t plain = {.conns = 2, /* the map, then the plain node's connection */
                    .info = "-ERR unknown command 'INFO'\r\n",
                    .shards = "-ERR This instance has cluster support disabled\r\n",
                    .slots = "-ERR This instance has cluster support disabled\r\n",
                    .other = "+PONG\r\n"};
    fake_listen(&plain);
    cr_assert_eq(pthread_create(&th, NULL, fake_serve, &plain), 0);
    snprintf(url, sizeof url, "127.0.0.1:%d", plain.port);
    g_cl = open_one(url, 0, 5000);
    cr_expect_eq(cluster_is_cluster(g_cl), 0, "cluster support disabled: not seen as plain");
    const char *ping[1] = {"PING"};
    redisReply *r = NULL;
    cr_expect_eq(cluster_command_argv(g_cl, "k", 1, 1, ping, NULL, &r), 0);
    cr_expect(r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0, "PING");
    if (r)
        freeReplyObject(r);
    cluster_close(g_cl);
    g_cl = NULL;
    pthread_join(th, NULL);
    close(plain.fd);
}

/* ---- failover ---------------------------------------------------------- */

Test(cluster, failover_to_the_promoted_replica)
{
    g_fx = fx_cluster_start(3, 1, 1000);
    cr_assert(g_fx, "%s", fx_error());
    g_cl = open_one(fx_cluster_url(g_fx, 0), 100, 30000);
    char key[32], val[32];
    int on_victim = 0, victim_slot = -1;
    char vkey[32] = "";                      /* a key on the master killed */
    const int victim = 1, heir = 3 + victim; /* master 1's replica */
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "f:%d", i);
        snprintf(val, sizeof val, "v:%d", i);
        cr_assert_eq(set_key(g_cl, key, val), 0, "SET %s", key);
        int slot = cluster_slot(key, strlen(key));
        if (node_of(cluster_slot_owner(g_cl, slot)) == victim) {
            if (on_victim++ == 0)
                snprintf(vkey, sizeof vkey, "%s", key);
            victim_slot = slot;
        }
    }
    cr_assert_gt(on_victim, 0);
    /* the replica has every write: WAIT on the connection that made them */
    redisContext *ctx = NULL;
    cr_assert_eq(cluster_conn(g_cl, victim_slot, &ctx), 0);
    redisReply *r = redisCommand(ctx, "WAIT 1 10000");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "WAIT");
    freeReplyObject(r);

    cr_assert_eq(fx_cluster_kill(g_fx, victim, SIGKILL), 0);
    uint64_t t0 = fx_now_ms();
    /* the first call rides out the failover itself (retry_ms 30 s) */
    char got[64] = "";
    int rc = get_key(g_cl, vkey, got, sizeof got);
    cr_assert_eq(rc, 0, "GET %s during the failover: %s", vkey, crawl_strerror(rc));
    char want[32];
    snprintf(want, sizeof want, "v:%s", vkey + 2);
    cr_assert_str_eq(got, want, "GET %s during the failover", vkey);
    cr_assert_eq(fx_cluster_wait_master(g_fx, heir, 30000), 0, "%s", fx_error());
    fprintf(stderr, "failover: replica promoted and seen %llu ms after the kill\n",
            (unsigned long long)(fx_now_ms() - t0));
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "f:%d", i);
        snprintf(val, sizeof val, "v:%d", i);
        expect_value(g_cl, key, val);
        int owner = node_of(cluster_slot_owner(g_cl, cluster_slot(key, strlen(key))));
        cr_expect(owner != victim, "%s still mapped to the dead master", key);
    }
    cr_expect_eq(set_key(g_cl, "f:after", "x"), 0);
    redisContext *m[8];
    const char *addr[8];
    size_t n = 0;
    cr_assert_eq(cluster_masters(g_cl, m, addr, 8, &n), 0);
    cr_expect_eq(n, 3, "%zu masters", n);
    for (size_t i = 0; i < n; i++)
        cr_expect_neq(node_of(addr[i]), victim, "the dead master is still listed");
}
