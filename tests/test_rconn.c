/*
 * test_rconn.c -- where Redis is (rconn/): the slot function (table), URL
 * checks, a plain Redis, and real local clusters (cluster_env.h): the map
 * from one node, its masters, a list of nodes that mixes in a plain Redis,
 * a migrated slot and a promoted replica each reached by the next connect,
 * a node that answers CLUSTER SLOTS only or says cluster support is
 * disabled.
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

#include "cluster_env.h"
#include "errors.h"
#include "fixtures.h"
#include "rconn.h"

static fx_cluster_t *g_fx;
static fx_redis_t *g_redis;
static rconn_t *g_r;

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* a write to a killed node is an error, not death */
}

static void teardown(void)
{
    rconn_close(g_r);
    g_r = NULL;
    fx_cluster_stop(g_fx);
    g_fx = NULL;
    fx_redis_stop(g_redis);
    g_redis = NULL;
}

TestSuite(rconn, .init = setup, .fini = teardown, .timeout = 180);

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

Test(rconn, key_slot_table)
{
    for (size_t i = 0; i < sizeof slot_cases / sizeof slot_cases[0]; i++) {
        const char *k = slot_cases[i].key;
        int got = rconn_key_slot(k, strlen(k));
        cr_expect_eq(got, slot_cases[i].slot, "rconn_key_slot(\"%s\") = %d, want %d", k, got,
                     slot_cases[i].slot);
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

Test(rconn, bad_urls_refused_good_ones_tried)
{
    static const struct {
        const char *url, *says;
    } bad[] = {
        {"", "empty Redis URL"},
        {"redis://", "bad Redis URL"},
        {"redis://h:0", "bad Redis URL"},
        {"redis://h:70000", "bad Redis URL"},
        {"h1:1,", "bad Redis seed"},
        {",h1:1", "bad Redis seed"},
        {"h1:x", "bad Redis URL"},
        {"redis://[::1", "bad Redis URL"},
        {"unix://relative.sock", "unix:// needs an absolute socket path"},
        {"redis://h:1/x", "bad Redis URL"},
        {"unix:///tmp/r.sock?db=x", "expected ?db=N"},
        {"redis://h:1,h:2/x", "bad Redis seed"},
    };
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        cr_expect_eq(rconn_check_url(bad[i].url, err, sizeof err), CRAWL_EINVAL, "'%s' accepted",
                     bad[i].url);
        cr_expect(strstr(err, bad[i].says), "'%s': error '%s'", bad[i].url, err);
        rconn_t *r =
            rconn_open_url(bad[i].url[0] ? bad[i].url : "redis://", NULL, NULL, err, sizeof err);
        cr_expect_null(r, "'%s' opened", bad[i].url);
        rconn_close(r);
    }
    rconn_specs_t two_pw = {.url = {"redis://:a@127.0.0.1:1", "redis://:b@127.0.0.1:2"}, .n = 2};
    cr_expect_null(rconn_open(&two_pw, NULL, NULL, err, sizeof err), "two passwords accepted");
    cr_expect(strstr(err, "bad Redis"), "two passwords: '%s'", err);

    /* well-formed, nobody there: several nodes must answer now; one URL is
     * kept and its connect says why */
    int port = dead_port();
    char forms[3][128];
    snprintf(forms[0], sizeof forms[0], "redis://:pw@127.0.0.1:%d,[::1]:%d/0", port, port);
    snprintf(forms[1], sizeof forms[1], "127.0.0.1:%d,localhost:%d", port, port);
    snprintf(forms[2], sizeof forms[2], "redis://127.0.0.1:%d", port);
    for (int i = 0; i < 2; i++) {
        cr_expect_null(rconn_open_url(forms[i], NULL, NULL, err, sizeof err), "%s: opened",
                       forms[i]);
        cr_expect(strstr(err, "none of the listed Redis nodes answered"), "%s: error '%s'",
                  forms[i], err);
    }
    rconn_t *r = rconn_open_url(forms[2], NULL, NULL, err, sizeof err);
    cr_assert_not_null(r, "%s: %s", forms[2], err);
    cr_expect_null(rconn_connect(r, err, sizeof err), "connected to nobody");
    cr_expect(strstr(err, "cannot connect to Redis at 127.0.0.1:"), "connect said '%s'", err);
    rconn_close(r);
}

/* ---- a plain Redis ------------------------------------------------------- */

/* The CLUSTER MYID (or run_id of a plain Redis) of what c reaches. */
static void node_id(redisContext *c, char *buf, size_t len)
{
    redisReply *r = redisCommand(c, "CLUSTER MYID");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "CLUSTER MYID: %s", r ? r->str : c->errstr);
    snprintf(buf, len, "%s", r->str);
    freeReplyObject(r);
}

static int count_master(redisContext *c, const char *addr, void *ud)
{
    (void)addr;
    redisReply *r = redisCommand(c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    (*(int *)ud)++;
    return ok ? 0 : CRAWL_EREDIS;
}

Test(rconn, a_plain_redis_is_one_server_for_every_slot)
{
    g_redis = fx_redis_start();
    cr_assert(g_redis, "%s", fx_error());
    char err[512] = "";
    g_r = rconn_open_url(fx_redis_url(g_redis), NULL, "crawler:{x}:seen", err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    cr_expect_eq(rconn_is_cluster(g_r), 0);
    cr_expect_str_eq(rconn_describe(g_r), fx_redis_url(g_redis));
    redisContext *c = rconn_connect_slot(g_r, 16000, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    redisReply *p = redisCommand(c, "PING");
    cr_expect(p && p->type == REDIS_REPLY_STATUS);
    freeReplyObject(p);
    redisFree(c);
    int slots[3] = {0, 8000, 16383};
    char names[3][RCONN_NAME_MAX];
    cr_assert_eq(rconn_owners(g_r, slots, 3, names, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(names[0], names[1]);
    cr_expect_str_eq(names[1], names[2]);
    int n = 0;
    cr_expect_eq(rconn_each_master(g_r, count_master, &n, err, sizeof err), 0, "%s", err);
    cr_expect_eq(n, 1, "%d servers", n);
}

/* ---- a 3-master cluster ------------------------------------------------- */

/* The index of the cluster node whose id c reaches, or -1. */
static int reached(redisContext *c)
{
    char id[64];
    node_id(c, id, sizeof id);
    for (int i = 0; i < fx_cluster_nnodes(g_fx); i++)
        if (!strcmp(fx_cluster_id(g_fx, i), id))
            return i;
    return -1;
}

/* A connect to slot reaches node want (the slot's owner). */
static void expect_reaches(int slot, int want)
{
    char err[512] = "";
    redisContext *c = rconn_connect_slot(g_r, slot, err, sizeof err);
    cr_assert_not_null(c, "slot %d: %s", slot, err);
    int got = reached(c);
    cr_expect_eq(got, want, "slot %d reached node %d, want %d", slot, got, want);
    redisFree(c);
}

Test(rconn, three_masters_from_one_node)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char err[512] = "";
    g_r = rconn_open_url(fx_cluster_url(g_fx, 2), NULL, "{t}", err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    cr_expect_eq(rconn_is_cluster(g_r), 1);
    cr_expect(strstr(rconn_describe(g_r), "(a Redis Cluster; keys in slot"), "%s",
              rconn_describe(g_r));
    int slots[3] = {0, 8192, 16383};
    char names[3][RCONN_NAME_MAX];
    cr_assert_eq(rconn_owners(g_r, slots, 3, names, err, sizeof err), 0, "%s", err);
    cr_expect(strcmp(names[0], names[1]) && strcmp(names[1], names[2]) &&
                  strcmp(names[0], names[2]),
              "three slots of three masters named %s, %s, %s", names[0], names[1], names[2]);
    for (int i = 0; i < 3; i++)
        expect_reaches(slots[i], fx_cluster_owner(g_fx, 0, slots[i]));
    redisContext *c = rconn_connect(g_r, err, sizeof err); /* the route key's slot */
    cr_assert_not_null(c, "%s", err);
    cr_expect_eq(reached(c), fx_cluster_owner(g_fx, 0, rconn_key_slot("{t}", 3)));
    redisFree(c);
    int n = 0;
    cr_expect_eq(rconn_each_master(g_r, count_master, &n, err, sizeof err), 0, "%s", err);
    cr_expect_eq(n, 3, "%d masters", n);
}

Test(rconn, url_forms_a_db_and_a_plain_node_in_the_list)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    g_redis = fx_redis_start();
    cr_assert(g_redis, "%s", fx_error());
    char url[256], err[512];
    int p0 = fx_cluster_port(g_fx, 0), p1 = fx_cluster_port(g_fx, 1);
    snprintf(url, sizeof url, "127.0.0.1:%d,127.0.0.1:%d", p0, p1);
    rconn_t *r = rconn_open_url(url, NULL, NULL, err, sizeof err);
    cr_expect_not_null(r, "%s: %s", url, err);
    cr_expect(r && rconn_is_cluster(r));
    rconn_close(r);
    rconn_specs_t two = {.url = {fx_cluster_url(g_fx, 1), fx_cluster_url(g_fx, 2)}, .n = 2};
    r = rconn_open(&two, NULL, NULL, err, sizeof err);
    cr_expect_not_null(r, "two --redis: %s", err);
    rconn_close(r);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/1", p0);
    cr_expect_null(rconn_open_url(url, NULL, NULL, err, sizeof err), "db 1 of a cluster opened");
    cr_expect(strstr(err, "only db 0"), "db 1: '%s'", err);
    rconn_specs_t mixed = {.url = {fx_cluster_url(g_fx, 0), fx_redis_url(g_redis)}, .n = 2};
    cr_expect_null(rconn_open(&mixed, NULL, NULL, err, sizeof err), "a plain node in the list");
    cr_expect(strstr(err, "is not part of a Redis Cluster"), "mixed: '%s'", err);
    rconn_specs_t plain2 = {.url = {fx_redis_url(g_redis), fx_redis_url(g_redis)}, .n = 2};
    cr_expect_null(rconn_open(&plain2, NULL, NULL, err, sizeof err), "two plain nodes");
    cr_expect(strstr(err, "not a Redis Cluster"), "two plain: '%s'", err);
}

/* A slot moved to another master: the next connect reaches the new one. */
Test(rconn, a_migrated_slot_is_reached_on_its_new_master)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char err[512] = "", log[600];
    g_r = rconn_open_url(fx_cluster_url(g_fx, 0), NULL, NULL, err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    int slot = fx_cluster_first_slot(g_fx, 0);
    cr_assert_geq(slot, 0, "%s", fx_error());
    expect_reaches(slot, 0);
    char *dir = fx_tmpdir();
    snprintf(log, sizeof log, "%s/reshard.log", dir);
    cr_assert_eq(fx_cluster_reshard(g_fx, 0, 2, 1, log), 0, "%s", fx_error());
    expect_reaches(slot, 2);
    fx_rmtree(dir);
    free(dir);
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

/* A node that answers CLUSTER SLOTS only (Redis < 7): its map is used; one
 * that says cluster support is disabled is a plain Redis. */
Test(rconn, cluster_slots_fallback_and_cluster_support_disabled)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char slots[256], url[64], err[512] = "";
    /* every slot to node 0, named by an empty ip (the seed's host) */
    snprintf(slots, sizeof slots, "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$0\r\n\r\n:%d\r\n$1\r\nx\r\n",
             fx_cluster_port(g_fx, 0));
    fake_t f = {.conns = 1, /* the seed's connect: its PING, then the map */
                .info = "$19\r\ncluster_enabled:1\r\n\r\n",
                .shards = "-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n",
                .slots = slots,
                .other = "+PONG\r\n"};
    fake_listen(&f);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fake_serve, &f), 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    rconn_t *r = rconn_open_url(url, NULL, NULL, err, sizeof err);
    pthread_join(th, NULL);
    close(f.fd);
    cr_assert_not_null(r, "%s", err);
    cr_expect_eq(rconn_is_cluster(r), 1, "the SLOTS answer not used");
    rconn_close(r);

    fake_t plain = {.conns = 2,
                    .info = "-ERR unknown command 'INFO'\r\n",
                    .shards = "-ERR This instance has cluster support disabled\r\n",
                    .slots = "-ERR This instance has cluster support disabled\r\n",
                    .other = "+PONG\r\n"};
    fake_listen(&plain);
    cr_assert_eq(pthread_create(&th, NULL, fake_serve, &plain), 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", plain.port);
    r = rconn_open_url(url, NULL, NULL, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_expect_eq(rconn_is_cluster(r), 0, "cluster support disabled: not seen as plain");
    redisContext *c = rconn_connect(r, err, sizeof err);
    cr_expect_not_null(c, "the plain node: %s", err);
    if (c)
        redisFree(c);
    rconn_close(r);
    pthread_join(th, NULL);
    close(plain.fd);
}

/* ---- failover ---------------------------------------------------------- */

/* A master killed: once its replica is promoted, the next connect to its
 * slots reaches the replica, and the masters listed are the live ones. */
Test(rconn, failover_to_the_promoted_replica)
{
    g_fx = fx_cluster_start(3, 1, 1000);
    cr_assert(g_fx, "%s", fx_error());
    char err[512] = "";
    g_r = rconn_open_url(fx_cluster_url(g_fx, 0), NULL, NULL, err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    const int victim = 1, heir = 3 + victim; /* master 1's replica */
    int slot = fx_cluster_first_slot(g_fx, victim);
    cr_assert_geq(slot, 0, "%s", fx_error());
    expect_reaches(slot, victim);
    cr_assert_eq(fx_cluster_kill(g_fx, victim, SIGKILL), 0);
    cr_assert_eq(fx_cluster_wait_master(g_fx, heir, 30000), 0, "%s", fx_error());
    /* the other nodes learn of it in their own time: a connect that finds
     * the dead master is tried again later, as the workers do */
    redisContext *c = NULL;
    for (int i = 0; i < 300 && !c; i++)
        if (!(c = rconn_connect_slot(g_r, slot, err, sizeof err)))
            usleep(100 * 1000);
    cr_assert_not_null(c, "slot %d never reached after the failover: %s", slot, err);
    cr_expect_eq(reached(c), heir, "slot %d reached node %d, not the promoted replica", slot,
                 reached(c));
    redisFree(c);
    int n = 0;
    cr_expect_eq(rconn_each_master(g_r, count_master, &n, err, sizeof err), 0, "%s", err);
    cr_expect_eq(n, 3, "%d masters", n);
}

/* ---- calls that wait for a replica (RCONN_CALL_REPLICATED) --------------- */

/* How many WAITs node i ran (INFO commandstats). */
static long long waits_run(int i)
{
    redisContext *c = fx_cluster_connect(g_fx, i);
    cr_assert_not_null(c);
    redisReply *r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    const char *w = strstr(r->str, "cmdstat_wait:calls=");
    long long n = w ? atoll(w + strlen("cmdstat_wait:calls=")) : 0;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* SET key "v" through a link, with flags: its reply status. */
static int set_through(rconn_link_t *l, const char *key, unsigned flags)
{
    rconn_call_t *c = rconn_call_new(rconn_key_slot(key, strlen(key)), flags);
    rconn_args_t *a = rconn_call_args(c);
    rconn_arg_cstr(a, "SET");
    rconn_arg_cstr(a, key);
    rconn_arg_cstr(a, "v");
    cr_assert_eq(rconn_link_send(l, c), 0);
    cr_assert_eq(rconn_link_wait(l, c), 0, "%s", rconn_link_error(l));
    redisReply *r = rconn_call_reply(c);
    int ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    rconn_call_free(c);
    return ok;
}

Test(rconn, a_replicated_call_is_done_once_the_replica_has_its_write)
{
    g_fx = fx_cluster_start(3, 1, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char err[512] = "";
    g_r = rconn_open_url(fx_cluster_url(g_fx, 0), NULL, NULL, err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    rconn_link_t *l = rconn_link_new(g_r);
    cr_assert_eq(rconn_link_connect(l, 0), 0, "%s", rconn_link_error(l));
    int slot = rconn_key_slot("{r}", 3), m = fx_cluster_owner(g_fx, 0, slot);
    cr_assert_geq(m, 0);
    long long before = waits_run(m);
    cr_expect(set_through(l, "{r}plain", RCONN_CALL_RESEND));
    cr_expect_eq(waits_run(m), before, "a call without the flag waited");
    for (int i = 0; i < 20; i++) { /* each done only once the replica has it */
        char key[32];
        snprintf(key, sizeof key, "{r}k%d", i);
        cr_expect(set_through(l, key, RCONN_CALL_RESEND | RCONN_CALL_REPLICATED));
        redisContext *rep = fx_cluster_connect(g_fx, 3 + m); /* master m's replica */
        cr_assert_not_null(rep);
        redisReply *r = redisCommand(rep, "READONLY");
        freeReplyObject(r);
        r = redisCommand(rep, "GET %s", key);
        cr_expect(r && r->type == REDIS_REPLY_STRING, "%s not on the replica when done", key);
        freeReplyObject(r);
        redisFree(rep);
    }
    cr_expect_eq(waits_run(m), before + 20, "%lld WAITs for 20 replicated calls",
                 waits_run(m) - before);
    rconn_link_free(l);
}

Test(rconn, a_replicated_call_to_a_master_without_replicas_does_not_wait)
{
    g_fx = fx_cluster_start(3, 0, 2000);
    cr_assert(g_fx, "%s", fx_error());
    char err[512] = "";
    g_r = rconn_open_url(fx_cluster_url(g_fx, 0), NULL, NULL, err, sizeof err);
    cr_assert_not_null(g_r, "%s", err);
    rconn_link_t *l = rconn_link_new(g_r);
    cr_assert_eq(rconn_link_connect(l, 0), 0, "%s", rconn_link_error(l));
    int m = fx_cluster_owner(g_fx, 0, rconn_key_slot("{r}", 3));
    cr_expect(set_through(l, "{r}k", RCONN_CALL_RESEND | RCONN_CALL_REPLICATED));
    cr_expect_eq(waits_run(m), 0, "a WAIT sent to a master without replicas");
    rconn_link_free(l);
}
