/*
 * shards.c -- what a handle knows of its crawl's shards besides their keys
 * (keys.c places URLs and keys): which shards got work lately in this
 * process (frontier_wake_t, shared by the process's handles), the shard an
 * item came from, a lease token's parts, and the handle's jitter.
 *
 * DESIGN: the wake stamps are one atomic per shard, the monotonic time of
 * the last finish that queued links in the shard or freed a slot of one of
 * its hosts; a claim asks a resting shard again at once when its stamp is
 * newer than its rest (claim.c).  Lease tokens are "ORIGIN\tSEQ@WORKER"
 * (claim.c makes them): everything a finish, retry or release needs to find
 * the lease, whichever handle of the worker sends it.  And, for the
 * handle-less readings (stats.c, control.c) and the open: the crawl's shard
 * count as stored in shard 0 (P shards: "S", or "Sq" for a crawl that keeps
 * a page limit in allotments, quota.c) and a connection to each shard's
 * server.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct frontier_wake {
    _Atomic uint64_t at[FRONTIER_MAX_SHARDS]; /* fr_mono_ms of the last mark, 0: none */
};

frontier_wake_t *frontier_wake_new(void)
{
    return calloc(1, sizeof(frontier_wake_t));
}

void frontier_wake_free(frontier_wake_t *w)
{
    free(w);
}

uint64_t fr_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void fr_wake(frontier_t *f, unsigned s)
{
    if (f->cfg.wake && s < FRONTIER_MAX_SHARDS)
        atomic_store_explicit(&f->cfg.wake->at[s], fr_mono_ms() + 1, memory_order_relaxed);
}

int fr_woken(const frontier_t *f, unsigned s, uint64_t since)
{
    return f->cfg.wake && s < FRONTIER_MAX_SHARDS &&
           atomic_load_explicit(&f->cfg.wake->at[s], memory_order_relaxed) > since;
}

unsigned fr_item_shard(const frontier_t *f, const frontier_item_t *it)
{
    return it->shard < f->nshards ? it->shard : 0;
}

int fr_lease_split(const char *lease, const char **worker, size_t *fieldlen, size_t *originlen)
{
    const char *tab = lease ? strchr(lease, '\t') : NULL, *at;
    if (!tab)
        return CRAWL_EINVAL;
    for (const char *p = lease; p < tab; p++)
        if (*p == '@' || *p == ' ' || *p == '\n')
            return CRAWL_EINVAL;
    for (at = tab + 1; *at >= '0' && *at <= '9'; at++)
        ;
    if (at == tab + 1 || *at != '@' || at[1] == '\0')
        return CRAWL_EINVAL;
    *worker = at + 1;
    *fieldlen = (size_t)(at - lease);
    if (originlen)
        *originlen = (size_t)(tab - lease);
    return 0;
}

double fr_random(frontier_t *f)
{
    uint64_t x = f->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f->rng = x;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* ---- the crawl's shard count, and its shards' servers ------------------------ */

/* The crawl's stored shard count in *n, 0 when none is stored; 0 or an
 * error (a stored value out of 1..FRONTIER_MAX_SHARDS: CRAWL_EREPLY). */
int fr_parse_shards(const char *s, size_t len, unsigned *n, int *quota)
{
    unsigned long v = 0;
    size_t i = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9' && v <= FRONTIER_MAX_SHARDS; i++)
        v = v * 10 + (unsigned long)(s[i] - '0');
    int q = i + 1 == len && s[i] == 'q';
    if (i == 0 || (i != len && !q) || v == 0 || v > FRONTIER_MAX_SHARDS || (q && v == 1))
        return -1;
    *n = (unsigned)v;
    *quota = q;
    return 0;
}

static int read_shards(struct redisContext *rc, const char *crawl, unsigned *n, int *quota)
{
    char p[FR_PREFIX_MAX], key[FR_KEY_MAX];
    int dummy;
    if (!quota)
        quota = &dummy;
    *n = 0;
    *quota = 0;
    if (fr_prefix(crawl, p, sizeof p) < 0 ||
        fr_key_build(p, FR_K_SHARDS, NULL, 0, key, sizeof key) < 0)
        return CRAWL_EINVAL;
    redisReply *r = redisCommand(rc, "GET %s", key);
    if (!r)
        return CRAWL_EREDIS;
    int rc_ = 0;
    if (r->type == REDIS_REPLY_STRING) {
        if (fr_parse_shards(r->str, r->len, n, quota) < 0)
            rc_ = CRAWL_EREPLY;
    } else if (r->type == REDIS_REPLY_ERROR)
        rc_ = fr_reply_error(r);
    else if (r->type != REDIS_REPLY_NIL)
        rc_ = CRAWL_EREPLY;
    freeReplyObject(r);
    return rc_;
}

int fr_crawl_shards(struct redisContext *rc, const char *crawl, unsigned *n, int *quota)
{
    int rc_ = read_shards(rc, crawl, n, quota);
    if (*n == 0)
        *n = 1; /* none stored: a crawl of one shard */
    return rc_;
}

int frontier_crawl_shards(struct redisContext *rc, const char *crawl, unsigned *n)
{
    unsigned dummy;
    if (!n)
        n = &dummy;
    *n = 0;
    return rc ? read_shards(rc, crawl, n, NULL) : CRAWL_EINVAL;
}

int frontier_crawl_shards_quota(struct redisContext *rc, const char *crawl, unsigned *n, int *quota)
{
    *n = 0;
    *quota = 0;
    return rc ? read_shards(rc, crawl, n, quota) : CRAWL_EINVAL;
}

int fr_shards_open(struct redisContext *rc, const rconn_t *r, const char *crawl, fr_shard_set_t *s,
                   char *why, size_t wl)
{
    *s = (fr_shard_set_t){.n = 1};
    int rc_ = fr_crawl_shards(rc, crawl, &s->n, &s->quota);
    if (rc_ < 0) {
        snprintf(why, wl, "%s", rc->err ? rc->errstr : "");
        return rc_;
    }
    if (!(s->conn = calloc(2 * (size_t)s->n, sizeof *s->conn))) {
        snprintf(why, wl, "out of memory");
        return CRAWL_ENOMEM;
    }
    if ((rc_ = fr_shard_conns(rc, r, crawl, s->n, s->conn, s->conn + s->n, &s->nown)) < 0) {
        snprintf(why, wl, "the Redis Cluster's masters of the crawl's shards");
        fr_shards_close(s);
    }
    return rc_;
}

void fr_shards_close(fr_shard_set_t *s)
{
    for (size_t i = 0; s->conn && i < s->nown; i++)
        redisFree(s->conn[s->n + i]);
    free(s->conn);
    *s = (fr_shard_set_t){0};
}

int fr_shard_conns(struct redisContext *rc, const rconn_t *r, const char *crawl, unsigned n,
                   struct redisContext **conn, struct redisContext **own, size_t *nown)
{
    *nown = 0;
    for (unsigned s = 0; s < n; s++)
        conn[s] = rc;
    if (!r || !rconn_is_cluster(r) || n == 1)
        return 0;
    int *slots = calloc(n, sizeof *slots);
    char(*addr)[RCONN_NAME_MAX] = calloc(n, sizeof *addr);
    char err[256];
    int rc_ = slots && addr ? 0 : CRAWL_ENOMEM;
    for (unsigned s = 0; rc_ == 0 && s < n; s++)
        rc_ = fr_shard_slot(crawl, s, &slots[s]);
    if (rc_ == 0)
        rc_ = rconn_owners(r, slots, n, addr, err, sizeof err);
    for (unsigned s = 1; rc_ == 0 && s < n; s++) {
        unsigned t = 0;
        while (t < s && strcmp(addr[t], addr[s]))
            t++;
        if (t < s)
            conn[s] = conn[t];
        else if ((conn[s] = rconn_connect_slot(r, slots[s], err, sizeof err)))
            own[(*nown)++] = conn[s];
        else
            rc_ = CRAWL_EREDIS;
    }
    free(slots);
    free(addr);
    return rc_;
}
