/*
 * map.c -- asking one node for the slot map.
 *
 * DESIGN: three questions, in order, on the node's connection:
 *   1. INFO cluster: "cluster_enabled:0" means a plain Redis (the map is that
 *      node for every slot); an INFO that fails (renamed, ACL) is not fatal.
 *   2. CLUSTER SHARDS (Redis >= 7.0), answered in RESP2 as flat arrays:
 *        [ "slots" [s1 e1 s2 e2 ...]  "nodes" [ [ "id" . "port" P "ip" IP
 *          "endpoint" E "role" "master"|"replica" ... "health" H ] ... ] ]
 *      per shard; the master taken is the one whose role is "master",
 *      preferring health "online" (a dead master keeps its role a while).
 *   3. else CLUSTER SLOTS (Redis 3.0+): [ [start end [ip port id ...]
 *      replica...] ... ].
 * The ERR "This instance has cluster support disabled" to either means a
 * plain Redis as well.  A node's address is its endpoint, else its ip; an
 * empty one (a node that does not know its own address) is the host we
 * reached it as.  Replies are hostile input: every element's type and range
 * is checked; a map with no slot at all counts as no answer.
 */
#include "rconn_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rc_map_clear(rc_map_t *m)
{
    free(m->r);
    memset(m, 0, sizeof *m);
}

static int is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) && r->str;
}

static int as_long(const redisReply *r, long *out)
{
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *out = (long)r->integer;
        return 0;
    }
    if (!is_str(r) || r->len == 0 || r->len > 20)
        return -1;
    char *end;
    long v = strtol(r->str, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

/* The value after key `name` in a flat [k v k v ...] array, or NULL. */
static const redisReply *field(const redisReply *flat, const char *name)
{
    if (!flat || flat->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < flat->elements; i += 2)
        if (is_str(flat->element[i]) && strcmp(flat->element[i]->str, name) == 0)
            return flat->element[i + 1];
    return NULL;
}

static int add_range(rc_map_t *m, long start, long end, const char *host, long port)
{
    size_t hlen = strlen(host);
    if (start < 0 || end < start || end >= RCONN_NSLOTS || port < 1 || port > 65535 ||
        hlen >= RC_MAX_HOST)
        return CRAWL_EREPLY;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        rc_range_t *r = realloc(m->r, cap * sizeof *r);
        if (!r)
            return CRAWL_ENOMEM;
        m->r = r;
        m->cap = cap;
    }
    rc_range_t *r = &m->r[m->n++];
    r->start = (int)start;
    r->end = (int)end;
    memcpy(r->host, host, hlen + 1);
    r->port = (int)port;
    return 0;
}

static const char *node_host(const redisReply *node, const char *qhost)
{
    const redisReply *e = field(node, "endpoint");
    if (is_str(e) && e->len && strcmp(e->str, "?") != 0)
        return e->str;
    e = field(node, "ip");
    return is_str(e) && e->len ? e->str : qhost;
}

/* The master of one shard's node list, or NULL. */
static const redisReply *shard_master(const redisReply *nodes)
{
    const redisReply *best = NULL;
    for (size_t i = 0; nodes && nodes->type == REDIS_REPLY_ARRAY && i < nodes->elements; i++) {
        const redisReply *n = nodes->element[i];
        const redisReply *role = field(n, "role"), *health = field(n, "health");
        if (!is_str(role) || strcmp(role->str, "master") != 0)
            continue;
        if (!best || (is_str(health) && strcmp(health->str, "online") == 0))
            best = n;
    }
    return best;
}

static int parse_shards(const redisReply *r, const char *qhost, rc_map_t *m)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *slots = field(r->element[i], "slots");
        const redisReply *master = shard_master(field(r->element[i], "nodes"));
        if (!slots || slots->type != REDIS_REPLY_ARRAY || slots->elements == 0 || !master)
            continue;
        long port;
        if (as_long(field(master, "port"), &port) || slots->elements % 2)
            return CRAWL_EREPLY;
        const char *host = node_host(master, qhost);
        for (size_t j = 0; j + 1 < slots->elements; j += 2) {
            long s, e;
            if (as_long(slots->element[j], &s) || as_long(slots->element[j + 1], &e))
                return CRAWL_EREPLY;
            int rc = add_range(m, s, e, host, port);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int parse_slots(const redisReply *r, const char *qhost, rc_map_t *m)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
            return CRAWL_EREPLY;
        const redisReply *node = e->element[2];
        long s, end, port;
        if (as_long(e->element[0], &s) || as_long(e->element[1], &end) ||
            node->type != REDIS_REPLY_ARRAY || node->elements < 2 || !is_str(node->element[0]) ||
            as_long(node->element[1], &port))
            return CRAWL_EREPLY;
        const char *host = node->element[0]->len ? node->element[0]->str : qhost;
        int rc = add_range(m, s, end, host, port);
        if (rc)
            return rc;
    }
    return 0;
}

static int disabled(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "cluster support disabled");
}

/* 1: INFO says plain, 0: cluster or unknown, CRAWL_EREDIS: ctx failed. */
static int info_plain(redisContext *ctx)
{
    redisReply *r = redisCommand(ctx, "INFO cluster");
    if (!r)
        return CRAWL_EREDIS;
    int plain = r->type == REDIS_REPLY_STRING && r->str && strstr(r->str, "cluster_enabled:0");
    freeReplyObject(r);
    return plain;
}

/* CLUSTER <sub> parsed by parse, or 1 when it was refused as unknown. */
static int ask(redisContext *ctx, const char *sub, const char *qhost, rc_map_t *m,
               int (*parse)(const redisReply *, const char *, rc_map_t *))
{
    redisReply *r = redisCommand(ctx, "CLUSTER %s", sub);
    if (!r)
        return CRAWL_EREDIS;
    int rc;
    if (disabled(r)) {
        m->plain = 1;
        rc = 0;
    } else {
        rc = r->type == REDIS_REPLY_ERROR ? 1 : parse(r, qhost, m);
    }
    freeReplyObject(r);
    return rc;
}

int rc_fetch_map(redisContext *ctx, const char *host, rc_map_t *m)
{
    m->plain = 0;
    m->n = 0;
    int rc = info_plain(ctx);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        m->plain = 1;
        return 0;
    }
    rc = ask(ctx, "SHARDS", host, m, parse_shards);
    if (rc == 1 || rc == CRAWL_EREPLY) { /* unknown (Redis < 7), or not understood */
        m->n = 0;
        rc = ask(ctx, "SLOTS", host, m, parse_slots);
    }
    if (rc == 1 || (rc == 0 && !m->plain && m->n == 0))
        rc = CRAWL_EREPLY;
    return rc;
}
