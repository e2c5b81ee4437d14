/*
 * topology.c -- which master owns each hash slot of a Redis Cluster (or the
 * one node of a plain Redis), kept current.
 *
 * DESIGN: t->nodes holds every master of the current map, each with at
 * most one redisContext, opened when the map is asked of it and kept for
 * the next question; t->slots[s] is the index of slot s's master in
 * t->nodes (RC_NONE: none known).  A refresh asks the map (map.c) of the
 * masters that answered last, then of those whose last connect failed,
 * then of the seeds (each on a connection of its own, closed after); the
 * first good answer wins.  Applying it keeps the node (and its open
 * connection) of every master still there, adds the new ones, drops the
 * others, and rewrites all 16384 slots; the room for new nodes is reserved
 * before anything changes, so an out-of-memory leaves the old map whole.
 * When nobody answers, the old map stays.  A plain Redis is one node owning
 * every slot.  At open, a list of several nodes that mixes a plain Redis
 * with a cluster's nodes is refused.  Nothing is locked here: rconn.c holds
 * its mutex around every call.
 */
#include "rconn_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rc_node {
    rc_addr_t a;
    struct redisContext *ctx; /* NULL: not open (yet, or since it failed) */
    int master;               /* owns slots in the current map */
    int failed;               /* the last connect to it failed */
    int tried;                /* asked for the map in this refresh */
} rc_node_t;

struct rc_topo {
    const rc_spec_t *spec; /* the seeds, the password and db (rconn_t's, outlives it) */
    int is_cluster;
    rc_node_t *nodes; /* the masters of the map */
    size_t nnodes, capnodes;
    char lasterr[384];            /* why the last connect or map question failed */
    uint16_t slots[RCONN_NSLOTS]; /* index in nodes, or RC_NONE */
};

static void node_drop(rc_node_t *n)
{
    if (n->ctx)
        redisFree(n->ctx);
    n->ctx = NULL;
}

static int node_open(rc_topo_t *t, rc_node_t *n)
{
    if (n->ctx && !n->ctx->err)
        return 0;
    node_drop(n);
    n->ctx = rc_connect(&n->a, t->spec->password, t->is_cluster ? 0 : t->spec->db, t->lasterr,
                        sizeof t->lasterr);
    n->failed = n->ctx == NULL;
    return n->ctx ? 0 : CRAWL_EREDIS;
}

/* The node at host:port, added (not yet a master) when unknown; NULL past
 * RC_MAX_NODES or without room (reserve() makes it first). */
static rc_node_t *node_get(rc_topo_t *t, const char *host, int port)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].a.port == port && !t->nodes[i].a.path &&
            strcmp(t->nodes[i].a.host, host) == 0)
            return &t->nodes[i];
    size_t hlen = strlen(host);
    if (hlen >= RC_MAX_HOST || t->nnodes >= t->capnodes)
        return NULL;
    rc_node_t *n = &t->nodes[t->nnodes++];
    memset(n, 0, sizeof *n);
    memcpy(n->a.host, host, hlen + 1);
    n->a.port = port;
    return n;
}

/* Asks the map on ctx; on failure writes why into t->lasterr. */
static int ask_map(rc_topo_t *t, redisContext *ctx, const rc_addr_t *a, rc_map_t *m)
{
    char name[RC_NAME_MAX];
    rc_addr_name(a, name, sizeof name);
    int rc = rc_fetch_map(ctx, a->host, m);
    if (rc == CRAWL_EREDIS)
        snprintf(t->lasterr, sizeof t->lasterr, "%.200s: %.100s", name, ctx->errstr);
    else if (rc == CRAWL_EREPLY)
        snprintf(t->lasterr, sizeof t->lasterr,
                 "%.200s: no slot map (CLUSTER SHARDS/SLOTS answered no slot, or not a map)", name);
    return rc;
}

/* Pass 0: masters that answered last; 1: masters whose connect failed. */
static int from_nodes(rc_topo_t *t, int pass, rc_map_t *m, size_t *who)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        rc_node_t *n = &t->nodes[i];
        if (!n->master || n->failed != pass || n->tried)
            continue;
        n->tried = 1;
        if (node_open(t, n) < 0)
            continue;
        int rc = ask_map(t, n->ctx, &n->a, m);
        if (rc == 0) {
            *who = i;
            return 0;
        }
        if (rc == CRAWL_ENOMEM)
            return rc;
        if (rc == CRAWL_EREDIS)
            node_drop(n);
    }
    return CRAWL_EREDIS;
}

static int from_seeds(rc_topo_t *t, rc_map_t *m, size_t *who)
{
    for (size_t i = 0; i < t->spec->n; i++) {
        const rc_addr_t *a = &t->spec->addrs[i];
        redisContext *ctx = rc_connect(a, t->spec->password, 0, t->lasterr, sizeof t->lasterr);
        if (!ctx)
            continue;
        int rc = ask_map(t, ctx, a, m);
        redisFree(ctx);
        if (rc == 0) {
            *who = i;
            return 0;
        }
        if (rc == CRAWL_ENOMEM)
            return rc;
    }
    return CRAWL_EREDIS;
}

/* A plain Redis: the node that answered owns every slot. */
static int apply_plain(rc_topo_t *t, const rc_addr_t *a)
{
    rc_node_t keep = {0};
    size_t k = t->nnodes;
    for (size_t i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].a.host, a->host) == 0 && t->nodes[i].a.port == a->port)
            k = i;
    if (k < t->nnodes) {
        keep = t->nodes[k];
        t->nodes[k].ctx = NULL;
        t->nodes[k].a.path = NULL;
    } else if (rc_addr_copy(&keep.a, a) < 0) {
        return CRAWL_ENOMEM;
    }
    for (size_t i = 0; i < t->nnodes; i++) {
        node_drop(&t->nodes[i]);
        rc_addr_clear(&t->nodes[i].a);
    }
    keep.master = 1;
    t->nodes[0] = keep; /* capnodes >= 1: rc_topo_open reserved it */
    t->nnodes = 1;
    t->is_cluster = 0;
    for (int s = 0; s < RCONN_NSLOTS; s++)
        t->slots[s] = 0;
    return 0;
}

/* Room for every node m names, reserved first so that applying m cannot
 * fail half-way. */
static int reserve(rc_topo_t *t, const rc_map_t *m)
{
    size_t need = t->nnodes + m->n;
    if (need > RC_MAX_NODES)
        need = RC_MAX_NODES;
    if (need <= t->capnodes)
        return 0;
    rc_node_t *nodes = realloc(t->nodes, need * sizeof *nodes);
    if (!nodes)
        return CRAWL_ENOMEM;
    t->nodes = nodes;
    t->capnodes = need;
    return 0;
}

static size_t index_of(const rc_topo_t *t, const char *host, int port)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].a.port == port && strcmp(t->nodes[i].a.host, host) == 0)
            return i;
    return t->nnodes;
}

static int apply_cluster(rc_topo_t *t, const rc_map_t *m)
{
    if (reserve(t, m) < 0)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < t->nnodes; i++)
        t->nodes[i].master = 0;
    for (size_t i = 0; i < m->n; i++) {
        rc_node_t *n = node_get(t, m->r[i].host, m->r[i].port);
        if (n) /* NULL only past RC_MAX_NODES masters: their slots stay unowned */
            n->master = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        if (!t->nodes[i].master) {
            node_drop(&t->nodes[i]);
            rc_addr_clear(&t->nodes[i].a);
            continue;
        }
        t->nodes[k++] = t->nodes[i];
    }
    t->nnodes = k;
    t->is_cluster = 1;
    for (int s = 0; s < RCONN_NSLOTS; s++)
        t->slots[s] = RC_NONE;
    for (size_t i = 0; i < m->n; i++) {
        size_t at = index_of(t, m->r[i].host, m->r[i].port);
        uint16_t idx = at < t->nnodes ? (uint16_t)at : RC_NONE;
        for (int s = m->r[i].start; s <= m->r[i].end; s++)
            t->slots[s] = idx;
    }
    return 0;
}

int rc_topo_refresh(rc_topo_t *t)
{
    rc_map_t m = {0};
    size_t who = 0;
    int from_seed = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        t->nodes[i].tried = 0;
    int rc = from_nodes(t, 0, &m, &who);
    if (rc == CRAWL_EREDIS)
        rc = from_nodes(t, 1, &m, &who);
    if (rc == CRAWL_EREDIS) {
        rc = from_seeds(t, &m, &who);
        from_seed = 1;
    }
    if (rc == 0 && m.plain)
        rc = apply_plain(t, from_seed ? &t->spec->addrs[who] : &t->nodes[who].a);
    else if (rc == 0)
        rc = apply_cluster(t, &m);
    rc_map_clear(&m);
    return rc == CRAWL_ENOMEM ? rc : rc ? CRAWL_EREDIS : 0;
}

/* 1 (reason in err) when a listed node that answers is not in cluster mode:
 * a list that mixes a plain Redis with a cluster's nodes is a mistake, in
 * whichever order it comes.  Nodes that do not answer are not judged (a
 * node may be down).  One connection a seed, at open only. */
static int plain_seed(rc_topo_t *t, char *err, size_t errlen)
{
    for (size_t i = 0; t->spec->n > 1 && i < t->spec->n; i++) {
        const rc_addr_t *a = &t->spec->addrs[i];
        char e2[256], name[RC_NAME_MAX];
        redisContext *ctx = rc_connect(a, t->spec->password, 0, e2, sizeof e2);
        redisReply *r = ctx ? redisCommand(ctx, "CLUSTER MYID") : NULL;
        int plain = r && r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "disabled");
        rc_addr_name(a, name, sizeof name);
        if (plain)
            snprintf(err, errlen, "the listed node %s is not part of a Redis Cluster", name);
        if (r)
            freeReplyObject(r);
        if (ctx)
            redisFree(ctx);
        if (plain)
            return 1;
    }
    return 0;
}

rc_topo_t *rc_topo_open(const rc_spec_t *spec, int *code, char *err, size_t errlen)
{
    rc_topo_t *t = calloc(1, sizeof *t);
    *code = CRAWL_ENOMEM;
    if (!t || !(t->nodes = calloc(4, sizeof *t->nodes))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    *code = CRAWL_EINVAL;
    t->capnodes = 4;
    t->spec = spec;
    if (spec->n == 0) {
        snprintf(err, errlen, "no Redis node given");
        goto fail;
    }
    for (int s = 0; s < RCONN_NSLOTS; s++)
        t->slots[s] = RC_NONE;
    if ((*code = rc_topo_refresh(t)) < 0) {
        snprintf(err, errlen, "none of the listed Redis nodes answered with a slot map; last: %s",
                 t->lasterr);
        goto fail;
    }
    *code = CRAWL_EINVAL;
    if (t->is_cluster && spec->db) {
        snprintf(err, errlen, "a Redis Cluster has only db 0 (the URL asked for db %d)", spec->db);
        goto fail;
    }
    if (t->is_cluster && plain_seed(t, err, errlen))
        goto fail;
    *code = 0;
    return t;
fail:
    rc_topo_close(t);
    return NULL;
}

void rc_topo_close(rc_topo_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nnodes; i++) {
        node_drop(&t->nodes[i]);
        rc_addr_clear(&t->nodes[i].a);
    }
    free(t->nodes);
    free(t);
}

int rc_topo_is_cluster(const rc_topo_t *t)
{
    return t->is_cluster;
}

int rc_topo_owner(const rc_topo_t *t, int slot, rc_addr_t *out)
{
    if (slot < 0 || slot >= RCONN_NSLOTS || t->slots[slot] == RC_NONE)
        return CRAWL_EREDIS;
    return rc_addr_copy(out, &t->nodes[t->slots[slot]].a);
}

int rc_topo_masters(const rc_topo_t *t, rc_addr_t **out, size_t *n)
{
    *n = 0;
    *out = calloc(t->nnodes ? t->nnodes : 1, sizeof **out);
    if (!*out)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].master && rc_addr_copy(&(*out)[(*n)++], &t->nodes[i].a) < 0) {
            while (*n)
                rc_addr_clear(&(*out)[--*n]);
            free(*out);
            *out = NULL;
            return CRAWL_ENOMEM;
        }
    return 0;
}

const char *rc_topo_error(const rc_topo_t *t)
{
    return t->lasterr;
}
