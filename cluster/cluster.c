/*
 * cluster.c -- the cluster handle: seeds, the node table and its lazily
 * opened connections, and the slot-to-connection lookups.
 *
 * DESIGN: c->nodes holds every master of the current map (and, until the
 * next refresh, the nodes ASK sent us to), each with at most one
 * redisContext, opened on first use and, once it has failed (ctx->err set,
 * or cluster_lost), opened again on the next use; c->slots[s] is the index
 * of slot s's master in c->nodes.  The table only changes in cluster_moved
 * (one slot), cl_node_get (a node appended) and cluster_refresh (rebuilt,
 * refresh.c), so an index or a redisContext handed out stays valid until
 * the next call on c.  A node whose connect failed is marked and asked for
 * the map last.  Every connection gets the configured timeouts, TCP
 * keepalive, AUTH when a password was given, and SELECT on a plain Redis.
 * Nothing here is locked: one thread owns a cluster_t.
 */
#include "cluster_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t cl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void cl_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int cl_backoff(unsigned *waits, uint64_t deadline)
{
    unsigned ms = *waits < 6 ? 10u << *waits : 500u; /* 10, 20, .. 320, then 500 ms */
    if (cl_now_ms() + ms > deadline)
        return -1;
    cl_sleep_ms(ms);
    (*waits)++;
    return 0;
}

void cluster_config_defaults(cluster_config_t *cfg)
{
    cfg->connect_timeout_ms = CLUSTER_DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->command_timeout_ms = CLUSTER_DEFAULT_COMMAND_TIMEOUT_MS;
    cfg->retry_ms = CLUSTER_DEFAULT_RETRY_MS;
    cfg->max_redirects = CLUSTER_DEFAULT_MAX_REDIRECTS;
    cfg->refresh_min_ms = CLUSTER_DEFAULT_REFRESH_MIN_MS;
}

static struct timeval tv_ms(int ms)
{
    return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

/* AUTH or SELECT; 0, or -1 with lasterr. */
static int setup_call(cluster_t *c, redisContext *ctx, const char *what, const char *arg)
{
    const char *argv[2] = {what, arg};
    redisReply *r = redisCommandArgv(ctx, 2, argv, NULL);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        snprintf(c->lasterr, sizeof c->lasterr, "Redis %s failed: %.200s", what,
                 r && r->str ? r->str : ctx->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

redisContext *cl_connect(cluster_t *c, const cl_addr_t *a, int select_db)
{
    struct timeval ct = tv_ms(c->cfg.connect_timeout_ms);
    redisContext *ctx = a->path ? redisConnectUnixWithTimeout(a->path, ct)
                                : redisConnectWithTimeout(a->host, a->port, ct);
    if (!ctx || ctx->err) {
        snprintf(c->lasterr, sizeof c->lasterr, "cannot connect to Redis at %s%.200s:%d: %.100s",
                 a->path ? "unix:" : "", a->path ? a->path : a->host, a->path ? 0 : a->port,
                 ctx ? ctx->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(ctx, tv_ms(c->cfg.command_timeout_ms));
    if (!a->path)
        redisEnableKeepAlive(ctx);
    if (c->password && setup_call(c, ctx, "AUTH", c->password) < 0)
        goto fail;
    char db[16];
    snprintf(db, sizeof db, "%d", c->db);
    if (select_db && c->db && setup_call(c, ctx, "SELECT", db) < 0)
        goto fail;
    return ctx;
fail:
    if (ctx)
        redisFree(ctx);
    return NULL;
}

void cl_node_drop(cl_node_t *n)
{
    if (n->ctx)
        redisFree(n->ctx);
    n->ctx = NULL;
}

int cl_node_open(cluster_t *c, cl_node_t *n)
{
    if (n->ctx && !n->ctx->err)
        return 0;
    cl_node_drop(n);
    n->ctx = cl_connect(c, &n->a, !c->is_cluster);
    n->failed = n->ctx == NULL;
    return n->ctx ? 0 : CRAWL_EREDIS;
}

cl_node_t *cl_node_get(cluster_t *c, const char *host, int port)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].a.port == port && !c->nodes[i].a.path &&
            strcmp(c->nodes[i].a.host, host) == 0)
            return &c->nodes[i];
    size_t hlen = strlen(host);
    if (hlen >= CLUSTER_MAX_HOST || c->nnodes >= CL_MAX_NODES)
        return NULL;
    if (c->nnodes == c->capnodes) {
        size_t cap = 2 * c->capnodes;
        cl_node_t *nodes = realloc(c->nodes, cap * sizeof *nodes);
        if (!nodes)
            return NULL;
        c->nodes = nodes;
        c->capnodes = cap;
    }
    cl_node_t *n = &c->nodes[c->nnodes++];
    memset(n, 0, sizeof *n);
    memcpy(n->a.host, host, hlen + 1);
    n->a.port = port;
    snprintf(n->name, sizeof n->name, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    return n;
}

static int check_config(const cluster_config_t *g)
{
    return g->connect_timeout_ms > 0 && g->command_timeout_ms > 0 && g->retry_ms >= 0 &&
           g->max_redirects >= 0 && g->refresh_min_ms >= 0;
}

/* 1 (reason in err) when a listed node that answers is not in cluster mode:
 * a list that mixes a plain Redis with a cluster's nodes is a mistake, in
 * whichever order it comes.  Nodes that do not answer are not judged (a
 * node may be down).  One connection a seed, at open only. */
static int plain_seed(cluster_t *c, char *err, size_t errlen)
{
    for (size_t i = 0; c->nseeds > 1 && i < c->nseeds; i++) {
        redisContext *ctx = cl_connect(c, &c->seeds[i], 0);
        redisReply *r = ctx ? redisCommand(ctx, "CLUSTER MYID") : NULL;
        int plain = r && r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "disabled");
        if (plain)
            snprintf(err, errlen, "the listed node %s%s:%d is not part of a Redis Cluster",
                     c->seeds[i].path ? "unix:" : "",
                     c->seeds[i].path ? c->seeds[i].path : c->seeds[i].host,
                     c->seeds[i].path ? 0 : c->seeds[i].port);
        if (r)
            freeReplyObject(r);
        if (ctx)
            redisFree(ctx);
        if (plain)
            return 1;
    }
    return 0;
}

cluster_t *cluster_open(const char *const *seeds, size_t n, const cluster_config_t *cfg, char *err,
                        size_t errlen)
{
    cluster_t *c = calloc(1, sizeof *c);
    if (!c || !(c->nodes = calloc(4, sizeof *c->nodes))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    c->capnodes = 4;
    if (cfg)
        c->cfg = *cfg;
    else
        cluster_config_defaults(&c->cfg);
    if (!check_config(&c->cfg)) {
        snprintf(err, errlen, "bad cluster configuration (a timeout <= 0, or a count < 0)");
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (cl_parse_seed(c, seeds[i], err, errlen) < 0)
            goto fail;
    if (c->nseeds == 0) {
        snprintf(err, errlen, "no Redis seed node given");
        goto fail;
    }
    for (int s = 0; s < CLUSTER_NSLOTS; s++)
        c->slots[s] = CL_NONE;
    if (cluster_refresh(c) < 0) {
        snprintf(err, errlen, "none of the listed Redis nodes answered with a slot map; last: %s",
                 c->lasterr);
        goto fail;
    }
    if (c->is_cluster && c->db) {
        snprintf(err, errlen, "a Redis Cluster has only db 0 (the seed asked for db %d)", c->db);
        goto fail;
    }
    if (c->is_cluster && plain_seed(c, err, errlen))
        goto fail;
    return c;
fail:
    cluster_close(c);
    return NULL;
}

void cluster_close(cluster_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nnodes; i++) {
        cl_node_drop(&c->nodes[i]);
        cl_addr_clear(&c->nodes[i].a);
    }
    for (size_t i = 0; i < c->nseeds; i++)
        cl_addr_clear(&c->seeds[i]);
    free(c->seeds);
    free(c->nodes);
    free(c->password);
    free(c);
}

int cluster_is_cluster(const cluster_t *c)
{
    return c->is_cluster;
}

unsigned long cluster_refreshes(const cluster_t *c)
{
    return c->refreshes;
}

const char *cluster_slot_owner(const cluster_t *c, int slot)
{
    if (slot < 0 || slot >= CLUSTER_NSLOTS || c->slots[slot] == CL_NONE)
        return NULL;
    return c->nodes[c->slots[slot]].name;
}

int cluster_conn(cluster_t *c, int slot, redisContext **out)
{
    if (!c || slot < 0 || slot >= CLUSTER_NSLOTS || !out)
        return CRAWL_EINVAL;
    for (int pass = 0; pass < 2; pass++) {
        uint16_t i = c->slots[slot];
        if (i != CL_NONE && cl_node_open(c, &c->nodes[i]) == 0) {
            *out = c->nodes[i].ctx;
            return 0;
        }
        if (!c->is_cluster || pass || cluster_refresh(c) == CRAWL_ENOMEM)
            break;
    }
    return CRAWL_EREDIS;
}

int cluster_conn_addr(cluster_t *c, const char *host, int port, redisContext **out)
{
    if (!c || !host || !out || port < 1 || port > 65535)
        return CRAWL_EINVAL;
    cl_node_t *n = cl_node_get(c, host, port);
    if (!n)
        return CRAWL_ENOMEM;
    if (cl_node_open(c, n) < 0)
        return CRAWL_EREDIS;
    *out = n->ctx;
    return 0;
}

int cluster_lost(cluster_t *c, redisContext *ctx)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (ctx && c->nodes[i].ctx == ctx)
            cl_node_drop(&c->nodes[i]);
    return c->is_cluster ? cluster_refresh(c) : 0;
}

int cluster_moved(cluster_t *c, const cluster_redirect_t *rd)
{
    if (!c || !rd || rd->kind != CLUSTER_REPLY_MOVED || rd->slot < 0 || rd->slot >= CLUSTER_NSLOTS)
        return CRAWL_EINVAL;
    if (!rd->host[0]) /* the node does not know its address: ask the map */
        return cluster_refresh(c) == CRAWL_ENOMEM ? CRAWL_ENOMEM : 0;
    cl_node_t *n = cl_node_get(c, rd->host, rd->port);
    if (!n)
        return CRAWL_ENOMEM;
    n->master = 1;
    c->slots[rd->slot] = (uint16_t)(n - c->nodes);
    return cl_refresh_soon(c) == CRAWL_ENOMEM ? CRAWL_ENOMEM : 0;
}

/* Every master connected, or the index of the first that is not. */
static int connect_masters(cluster_t *c, redisContext **out, const char **addrs, size_t cap,
                           size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].master)
            continue;
        if (k < cap) {
            if (cl_node_open(c, &c->nodes[i]) < 0)
                return CRAWL_EREDIS;
            out[k] = c->nodes[i].ctx;
            if (addrs)
                addrs[k] = c->nodes[i].name;
        }
        k++;
    }
    *n = k;
    return k > cap ? CRAWL_ETOOLONG : 0;
}

int cluster_masters(cluster_t *c, redisContext **out, const char **addrs, size_t cap, size_t *n)
{
    if (!c || (!out && cap) || !n)
        return CRAWL_EINVAL;
    uint64_t deadline = cl_now_ms() + (uint64_t)c->cfg.retry_ms;
    unsigned waits = 0;
    for (;;) {
        int rc = connect_masters(c, out, addrs, cap, n);
        if (rc != CRAWL_EREDIS)
            return rc;
        if (!c->is_cluster || cl_backoff(&waits, deadline) < 0)
            return CRAWL_EREDIS;
        if (cluster_refresh(c) == CRAWL_ENOMEM)
            return CRAWL_ENOMEM;
    }
}
