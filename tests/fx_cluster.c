/*
 * fx_cluster.c -- a local Redis Cluster for one test (cluster_env.h).
 *
 * DESIGN: what `redis-cli --cluster create` does, done over hiredis so the
 * test needs nothing but redis-server: start every node (free port, own
 * directory and nodes.conf, --maxmemory), give each a distinct config epoch
 * (CLUSTER SET-CONFIG-EPOCH, so no epoch collision has to be resolved
 * later), CLUSTER MEET them all from node 0, CLUSTER ADDSLOTSRANGE on each
 * master, wait until every node knows every other (no handshake left), then
 * CLUSTER REPLICATE on each replica, and wait until the cluster is whole:
 * on every node cluster_state:ok with all slots assigned, all nodes known
 * and every replica listed; on every replica the link to its master up.
 * Every wait polls at most FX_CLUSTER_WAIT_MS; a failure stops everything
 * started and says which node and what it said.
 */
#include "cluster_env.h"
#include "fixtures.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FX_CLUSTER_WAIT_MS 30000u
#define CLUSTER_SLOTS_FX 16384

typedef struct fx_node {
    pid_t pid;
    int port;
    char id[48];
    char dir[512];
    char url[64];
} fx_node_t;

struct fx_cluster {
    int masters, replicas, n;
    int node_timeout_ms;
    char *dir;
    fx_node_t node[FX_CLUSTER_MAX_NODES];
};

static redisContext *connect_port(int port, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!ctx || ctx->err) {
        fx_set_error("connect to redis port %d: %s", port, ctx ? ctx->errstr : "out of memory");
        if (ctx)
            redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, (struct timeval){10, 0});
    return ctx;
}

/* One command on node i; the reply (caller frees), or NULL with fx_error
 * for no reply or an error reply. */
static redisReply *node_cmd(const fx_cluster_t *c, int i, const char *fmt, ...)
{
    redisContext *ctx = connect_port(c->node[i].port, 1000);
    if (!ctx)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fx_set_error("node %d (port %d): %s: %s", i, c->node[i].port, fmt,
                     r ? r->str : ctx->errstr);
        if (r)
            freeReplyObject(r);
        r = NULL;
    }
    redisFree(ctx);
    return r;
}

static int answers_ping(int port)
{
    redisContext *ctx = connect_port(port, 200);
    int ok = 0;
    if (ctx) {
        redisReply *r = redisCommand(ctx, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        redisFree(ctx);
    }
    return ok;
}

static int spawn_node(fx_cluster_t *c, int i)
{
    fx_node_t *n = &c->node[i];
    char port[16], timeout[16], log[600];
    snprintf(port, sizeof port, "%d", n->port);
    snprintf(timeout, sizeof timeout, "%d", c->node_timeout_ms);
    snprintf(log, sizeof log, "%s/redis.log", n->dir);
    char *argv[] = {"redis-server",
                    "--port",
                    port,
                    "--bind",
                    "127.0.0.1",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    timeout,
                    "--cluster-replica-validity-factor",
                    "0",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--maxmemory",
                    FX_CLUSTER_MAXMEMORY,
                    "--dir",
                    n->dir,
                    "--daemonize",
                    "no",
                    "--protected-mode",
                    "no",
                    "--loglevel",
                    "warning",
                    NULL};
    n->pid = fx_spawn(argv, log, log);
    if (n->pid < 0)
        return -1;
    uint64_t deadline = fx_now_ms() + 10000;
    while (fx_now_ms() < deadline) {
        if (waitpid(n->pid, NULL, WNOHANG) == n->pid) {
            n->pid = -1;
            fx_set_error("cluster node %d: redis-server exited at start (port %d); see %s", i,
                         n->port, log);
            return -1;
        }
        if (answers_ping(n->port))
            return 0;
        usleep(10000);
    }
    fx_set_error("cluster node %d did not answer PING within 10 s on port %d", i, n->port);
    return -1;
}

static int start_node(fx_cluster_t *c, int i)
{
    fx_node_t *n = &c->node[i];
    snprintf(n->dir, sizeof n->dir, "%s/n%d", c->dir, i);
    if (mkdir(n->dir, 0700) < 0) {
        fx_set_error("mkdir %s failed", n->dir);
        return -1;
    }
    /* a port taken meanwhile: another; a port whose cluster bus port (port +
     * 10000) would pass 65535 is never tried (redis-server exits at start) */
    for (int attempt = 0, probes = 0; attempt < 5 && probes < 200; probes++) {
        n->port = fx_free_port();
        if (n->port <= 0 || n->port + 10000 > 65535)
            continue;
        attempt++;
        if (spawn_node(c, i) == 0) {
            snprintf(n->url, sizeof n->url, "redis://127.0.0.1:%d", n->port);
            return 0;
        }
        if (n->pid > 0)
            fx_cluster_kill(c, i, SIGKILL);
    }
    return -1;
}

static int read_id(fx_cluster_t *c, int i)
{
    redisReply *r = node_cmd(c, i, "CLUSTER MYID");
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_STRING && r->len < sizeof c->node[i].id;
    if (ok)
        memcpy(c->node[i].id, r->str, r->len + 1);
    else
        fx_set_error("node %d: CLUSTER MYID gave no id", i);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* The text answer of a command (CLUSTER INFO, CLUSTER NODES, INFO ...),
 * copied into buf; 0 or -1. */
static int node_text(const fx_cluster_t *c, int i, const char *cmd, char *buf, size_t len)
{
    redisReply *r = node_cmd(c, i, cmd);
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_STRING;
    if (ok)
        snprintf(buf, len, "%s", r->str);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int count_lines(const char *s, const char *word)
{
    int n = 0;
    for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (!word || memmem(l, len, word, strlen(word)))
            n++;
    }
    return n;
}

/* Every node knows every other one, out of handshake (and, with
 * replicas_too, lists all replicas). */
static int all_known(const fx_cluster_t *c, int replicas_too)
{
    char buf[16384];
    for (int i = 0; i < c->n; i++) {
        if (node_text(c, i, "CLUSTER NODES", buf, sizeof buf) < 0)
            return 0;
        if (count_lines(buf, NULL) != c->n || count_lines(buf, "handshake") ||
            count_lines(buf, "noaddr"))
            return 0;
        if (replicas_too && count_lines(buf, "slave") != c->n - c->masters)
            return 0;
    }
    return 1;
}

static int node_state_ok(const fx_cluster_t *c, int i)
{
    char buf[4096], want[64];
    if (node_text(c, i, "CLUSTER INFO", buf, sizeof buf) < 0)
        return 0;
    snprintf(want, sizeof want, "cluster_known_nodes:%d\r", c->n);
    if (!strstr(buf, "cluster_state:ok") || !strstr(buf, "cluster_slots_assigned:16384") ||
        !strstr(buf, want))
        return 0;
    if (i < c->masters)
        return 1;
    return node_text(c, i, "INFO replication", buf, sizeof buf) == 0 &&
           strstr(buf, "master_link_status:up") != NULL;
}

static int whole(const fx_cluster_t *c)
{
    if (!all_known(c, 1))
        return 0;
    for (int i = 0; i < c->n; i++)
        if (!node_state_ok(c, i))
            return 0;
    return 1;
}

static int wait_for(const fx_cluster_t *c, int (*pred)(const fx_cluster_t *), const char *what)
{
    uint64_t deadline = fx_now_ms() + FX_CLUSTER_WAIT_MS;
    while (fx_now_ms() < deadline) {
        if (pred(c))
            return 0;
        usleep(50000);
    }
    fx_set_error("the cluster did not get to \"%s\" within %u ms (last: %s)", what,
                 FX_CLUSTER_WAIT_MS, fx_error());
    return -1;
}

static int known(const fx_cluster_t *c)
{
    return all_known(c, 0);
}

static int join(fx_cluster_t *c)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r = node_cmd(c, i, "CLUSTER SET-CONFIG-EPOCH %d", i + 1);
        if (!r)
            return -1;
        freeReplyObject(r);
        if (read_id(c, i) < 0)
            return -1;
    }
    for (int i = 1; i < c->n; i++) {
        redisReply *r = node_cmd(c, 0, "CLUSTER MEET 127.0.0.1 %d", c->node[i].port);
        if (!r)
            return -1;
        freeReplyObject(r);
    }
    for (int m = 0; m < c->masters; m++) {
        long long lo = (long long)CLUSTER_SLOTS_FX * m / c->masters;
        long long hi = (long long)CLUSTER_SLOTS_FX * (m + 1) / c->masters - 1;
        redisReply *r = node_cmd(c, m, "CLUSTER ADDSLOTSRANGE %lld %lld", lo, hi);
        if (!r)
            return -1;
        freeReplyObject(r);
    }
    if (wait_for(c, known, "every node knows every other") < 0)
        return -1;
    for (int i = c->masters; i < c->n; i++) {
        int m = (i - c->masters) / c->replicas;
        redisReply *r = node_cmd(c, i, "CLUSTER REPLICATE %s", c->node[m].id);
        if (!r)
            return -1;
        freeReplyObject(r);
    }
    return wait_for(c, whole, "cluster_state:ok on every node, replicas linked");
}

fx_cluster_t *fx_cluster_start(int masters, int replicas, int node_timeout_ms)
{
    fx_cluster_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->masters = masters;
    c->replicas = replicas;
    c->n = masters * (1 + replicas);
    c->node_timeout_ms = node_timeout_ms;
    for (int i = 0; i < FX_CLUSTER_MAX_NODES; i++)
        c->node[i].pid = -1;
    if (masters < 1 || replicas < 0 || c->n > FX_CLUSTER_MAX_NODES || node_timeout_ms < 100) {
        fx_set_error("fx_cluster_start: bad shape (%d masters, %d replicas each)", masters,
                     replicas);
        goto fail;
    }
    c->dir = fx_tmpdir();
    if (!c->dir)
        goto fail;
    for (int i = 0; i < c->n; i++)
        if (start_node(c, i) < 0)
            goto fail;
    if (join(c) < 0)
        goto fail;
    return c;
fail:
    fprintf(stderr,
            "fx_cluster_start: %s (is redis-server installed? apt-get install -y "
            "redis-server)\n",
            fx_error());
    fx_cluster_stop(c);
    return NULL;
}

void fx_cluster_stop(fx_cluster_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        if (c->node[i].pid > 0)
            kill(c->node[i].pid, SIGTERM);
    for (int i = 0; i < c->n; i++)
        if (c->node[i].pid > 0 && fx_wait(c->node[i].pid, 5000) == -2)
            fprintf(stderr, "fx_cluster_stop: node %d (pid %d) killed after 5 s\n", i,
                    (int)c->node[i].pid);
    if (c->dir) {
        fx_rmtree(c->dir);
        free(c->dir);
    }
    free(c);
}

int fx_cluster_nnodes(const fx_cluster_t *c)
{
    return c->n;
}

int fx_cluster_port(const fx_cluster_t *c, int i)
{
    return c->node[i].port;
}

pid_t fx_cluster_pid(const fx_cluster_t *c, int i)
{
    return c->node[i].pid;
}

const char *fx_cluster_id(const fx_cluster_t *c, int i)
{
    return c->node[i].id;
}

const char *fx_cluster_url(const fx_cluster_t *c, int i)
{
    return c->node[i].url;
}

redisContext *fx_cluster_connect(const fx_cluster_t *c, int i)
{
    return connect_port(c->node[i].port, 5000);
}

int fx_cluster_owner(const fx_cluster_t *c, int ask, int slot)
{
    redisReply *r = node_cmd(c, ask, "CLUSTER SLOTS");
    int owner = -1;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->integer > slot ||
            e->element[1]->integer < slot || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2)
            continue;
        for (int n = 0; n < c->n; n++)
            if (c->node[n].port == e->element[2]->element[1]->integer)
                owner = n;
    }
    if (r)
        freeReplyObject(r);
    if (owner < 0)
        fx_set_error("node %d: no owner of slot %d in CLUSTER SLOTS", ask, slot);
    return owner;
}

int fx_cluster_kill(fx_cluster_t *c, int i, int sig)
{
    if (c->node[i].pid <= 0)
        return -1;
    kill(c->node[i].pid, sig);
    int st = fx_wait(c->node[i].pid, 5000);
    c->node[i].pid = -1;
    return st == -2 || st == -1 ? -1 : 0;
}

int fx_cluster_wait_master(const fx_cluster_t *c, int i, unsigned timeout_ms)
{
    uint64_t deadline = fx_now_ms() + timeout_ms;
    char buf[4096];
    while (fx_now_ms() < deadline) {
        redisReply *r = node_cmd(c, i, "ROLE");
        int master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING &&
                     strcmp(r->element[0]->str, "master") == 0;
        if (r)
            freeReplyObject(r);
        if (master && node_text(c, i, "CLUSTER INFO", buf, sizeof buf) == 0 &&
            strstr(buf, "cluster_state:ok"))
            return 0;
        usleep(50000);
    }
    fx_set_error("node %d was not a master with cluster_state:ok within %u ms", i, timeout_ms);
    return -1;
}

int fx_cluster_reshard(fx_cluster_t *c, int from, int to, int nslots, const char *log)
{
    char addr[64], n[16];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", fx_cluster_port(c, 0));
    snprintf(n, sizeof n, "%d", nslots);
    char *argv[] = {"redis-cli",       "--cluster",
                    "reshard",         addr,
                    "--cluster-from",  (char *)fx_cluster_id(c, from),
                    "--cluster-to",    (char *)fx_cluster_id(c, to),
                    "--cluster-slots", n,
                    "--cluster-yes",   NULL};
    if (fx_run(argv, log, log, 120000) == 0)
        return 0;
    char *text = fx_read_file(log, NULL);
    fx_set_error("redis-cli --cluster reshard failed: %.3000s", text ? text : "(no output)");
    free(text);
    return -1;
}

int fx_cluster_first_slot(const fx_cluster_t *c, int m)
{
    int first = -1;
    for (int s = 0; s < 16384 && first < 0; s += 64) {
        int o = fx_cluster_owner(c, 0, s);
        if (o < 0)
            return -1;
        if (o == m)
            first = s;
    }
    while (first > 0 && fx_cluster_owner(c, 0, first - 1) == m)
        first--;
    if (first < 0)
        fx_set_error("master %d owns no slot", m);
    return first;
}

long long fx_cluster_count_keys(const fx_cluster_t *c, int i, const char *pattern)
{
    redisContext *rc = fx_cluster_connect(c, i);
    if (!rc)
        return -1;
    long long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(rc, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            fx_set_error("SCAN on node %d: %s", i, r && r->str ? r->str : rc->errstr);
            if (r)
                freeReplyObject(r);
            redisFree(rc);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        n += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0"));
    redisFree(rc);
    return n;
}

long long fx_cluster_keys_in_slot(const fx_cluster_t *c, int i, int slot)
{
    redisContext *rc = fx_cluster_connect(c, i);
    if (!rc)
        return -1;
    redisReply *r = redisCommand(rc, "CLUSTER COUNTKEYSINSLOT %d", slot);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (n < 0)
        fx_set_error("CLUSTER COUNTKEYSINSLOT on node %d: %s", i,
                     r && r->str ? r->str : rc->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(rc);
    return n;
}
