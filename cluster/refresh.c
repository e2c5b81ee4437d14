/*
 * refresh.c -- learning the slot map again, and applying it to the node
 * table.
 *
 * DESIGN: the map is asked of the masters of the current map that last
 * answered, then of those whose last connect failed, then of the seeds
 * (each on a connection of its own, closed after), and the first good
 * answer wins.  Applying it keeps the node (and its open connection) of
 * every master still there, adds the new ones, drops every other node
 * (old masters, ASK targets) with its connection, and rewrites all 16384
 * slots, CL_NONE where no master is named; the room for new nodes is
 * reserved before anything changes, so an out-of-memory leaves the old map
 * whole.  A plain Redis is one node owning
 * every slot.  When nobody answers, the old map and nodes stay as they were.
 */
#include "cluster_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Asks the map on ctx; on failure writes why into c->lasterr. */
static int ask_map(cluster_t *c, redisContext *ctx, const char *host, const char *name, cl_map_t *m)
{
    int rc = cl_fetch_map(ctx, host, m);
    if (rc == CRAWL_EREDIS)
        snprintf(c->lasterr, sizeof c->lasterr, "%.200s: %.100s", name, ctx->errstr);
    else if (rc == CRAWL_EREPLY)
        snprintf(c->lasterr, sizeof c->lasterr,
                 "%.200s: no slot map (CLUSTER SHARDS/SLOTS answered no slot, or not a map)", name);
    return rc;
}

/* Pass 0: masters that answered last; 1: masters whose connect failed. */
static int from_nodes(cluster_t *c, int pass, cl_map_t *m, size_t *who)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        cl_node_t *n = &c->nodes[i];
        if (!n->master || n->failed != pass || n->tried)
            continue;
        n->tried = 1;
        if (cl_node_open(c, n) < 0)
            continue;
        int rc = ask_map(c, n->ctx, n->a.host, n->name, m);
        if (rc == 0) {
            *who = i;
            return 0;
        }
        if (rc == CRAWL_ENOMEM)
            return rc;
        if (rc == CRAWL_EREDIS)
            cl_node_drop(n);
    }
    return CRAWL_EREDIS;
}

static int from_seeds(cluster_t *c, cl_map_t *m, size_t *who)
{
    for (size_t i = 0; i < c->nseeds; i++) {
        redisContext *ctx = cl_connect(c, &c->seeds[i], 0);
        if (!ctx)
            continue;
        char name[CLUSTER_MAX_HOST + 16];
        snprintf(name, sizeof name, "seed %s:%d", c->seeds[i].host, c->seeds[i].port);
        int rc = ask_map(c, ctx, c->seeds[i].host, name, m);
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
static int apply_plain(cluster_t *c, const cl_addr_t *a)
{
    cl_node_t keep = {0};
    size_t k = c->nnodes;
    for (size_t i = 0; i < c->nnodes; i++)
        if (strcmp(c->nodes[i].a.host, a->host) == 0 && c->nodes[i].a.port == a->port)
            k = i;
    if (k < c->nnodes) {
        keep = c->nodes[k];
        c->nodes[k].ctx = NULL;
        c->nodes[k].a.path = NULL;
    } else {
        keep.a = *a;
        keep.a.path = a->path ? strdup(a->path) : NULL;
        if (a->path && !keep.a.path)
            return CRAWL_ENOMEM;
        if (a->path)
            snprintf(keep.name, sizeof keep.name, "unix:%s", a->path);
        else
            snprintf(keep.name, sizeof keep.name, "%s:%d", a->host, a->port);
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        cl_node_drop(&c->nodes[i]);
        cl_addr_clear(&c->nodes[i].a);
    }
    keep.master = 1;
    c->nodes[0] = keep; /* capnodes >= 1: cluster_open reserved it */
    c->nnodes = 1;
    c->is_cluster = 0;
    for (int s = 0; s < CLUSTER_NSLOTS; s++)
        c->slots[s] = 0;
    return 0;
}

static size_t index_of(const cluster_t *c, const char *host, int port)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].a.port == port && strcmp(c->nodes[i].a.host, host) == 0)
            return i;
    return c->nnodes;
}

/* Room for every node m names, reserved first so that applying m cannot
 * fail half-way (cl_node_get then never grows the table). */
static int reserve(cluster_t *c, const cl_map_t *m)
{
    size_t need = c->nnodes + m->n;
    if (need > CL_MAX_NODES)
        need = CL_MAX_NODES;
    if (need <= c->capnodes)
        return 0;
    cl_node_t *nodes = realloc(c->nodes, need * sizeof *nodes);
    if (!nodes)
        return CRAWL_ENOMEM;
    c->nodes = nodes;
    c->capnodes = need;
    return 0;
}

static int apply_cluster(cluster_t *c, const cl_map_t *m)
{
    if (reserve(c, m) < 0)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < c->nnodes; i++)
        c->nodes[i].master = 0;
    for (size_t i = 0; i < m->n; i++) {
        cl_node_t *n = cl_node_get(c, m->r[i].host, m->r[i].port);
        if (n) /* NULL only past CL_MAX_NODES masters: their slots stay unowned */
            n->master = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].master) {
            cl_node_drop(&c->nodes[i]);
            cl_addr_clear(&c->nodes[i].a);
            continue;
        }
        c->nodes[k++] = c->nodes[i];
    }
    c->nnodes = k;
    c->is_cluster = 1;
    for (int s = 0; s < CLUSTER_NSLOTS; s++)
        c->slots[s] = CL_NONE;
    for (size_t i = 0; i < m->n; i++) {
        size_t at = index_of(c, m->r[i].host, m->r[i].port);
        uint16_t idx = at < c->nnodes ? (uint16_t)at : CL_NONE;
        for (int s = m->r[i].start; s <= m->r[i].end; s++)
            c->slots[s] = idx;
    }
    return 0;
}

int cluster_refresh(cluster_t *c)
{
    cl_map_t m = {0};
    size_t who = 0;
    int from_seed = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        c->nodes[i].tried = 0;
    int rc = from_nodes(c, 0, &m, &who);
    if (rc == CRAWL_EREDIS)
        rc = from_nodes(c, 1, &m, &who);
    if (rc == CRAWL_EREDIS) {
        rc = from_seeds(c, &m, &who);
        from_seed = 1;
    }
    if (rc == 0 && m.plain) {
        cl_addr_t a = from_seed ? c->seeds[who] : c->nodes[who].a;
        rc = apply_plain(c, &a);
    } else if (rc == 0) {
        rc = apply_cluster(c, &m);
    }
    cl_map_clear(&m);
    c->last_refresh_ms = cl_now_ms();
    if (rc == 0)
        c->refreshes++;
    return rc == CRAWL_ENOMEM ? rc : rc ? CRAWL_EREDIS : 0;
}

int cl_refresh_soon(cluster_t *c)
{
    if (c->refreshes && cl_now_ms() - c->last_refresh_ms < (uint64_t)c->cfg.refresh_min_ms)
        return 0;
    return cluster_refresh(c);
}
