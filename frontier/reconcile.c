/*
 * reconcile.c -- after a lost connection: the leases a worker holds in
 * Redis against the ones it still knows (frontier_reconcile, frontier.h).
 *
 * DESIGN: a call whose reply was lost may have run (a claim leased URLs
 * the worker never saw), and a Redis restarted from its append-only file
 * may have lost the last second of writes (acknowledged pages leased again).
 * Either leaves leases under the worker's id that no part of the worker
 * holds: nothing would ever finish them, and the worker's own heartbeat
 * would keep them from being reclaimed.  One HKEYS of the worker's lease
 * hash, then one release call (release.lua) for the fields the caller does
 * not hold, hands those URLs back to the front of their queues.  The worker
 * sends nothing else on its leases in between (the caller's contract), and a
 * lease another worker reclaimed meanwhile is simply not released twice
 * (release.lua skips a field that is gone).
 * Redis keys: P lease:<wid> (read), then those of frontier_release.
 */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "frontier_internal.h"
#include "keys.h"

/* 1 if field (len bytes) is the lease field of one of items[0..n). */
static int held(const frontier_item_t *items, size_t n, const char *field, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const char *w;
        size_t fl;
        if (items[i].lease && fr_lease_split(items[i].lease, &w, &fl, NULL) == 0 && fl == len &&
            memcmp(items[i].lease, field, len) == 0)
            return 1;
    }
    return 0;
}

/* The worker's lease fields (HKEYS), as the reply. */
static int lease_fields(frontier_t *f, redisReply **out)
{
    fr_args_t a;
    fa_init(&a);
    fa_cstr(&a, "HKEYS");
    fa_key(&a, f->prefix, FR_K_LEASE, f->worker, strlen(f->worker));
    *out = NULL;
    if (a.oom) {
        fa_free(&a);
        return CRAWL_ENOMEM;
    }
    redisReply *r = redisCommandArgv(f->rc, (int)a.n, a.v, a.len);
    f->round_trips++;
    fa_free(&a);
    if (!r)
        return CRAWL_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return CRAWL_EREPLY;
    }
    *out = r;
    return 0;
}

/* The reconcile of the current shard's lease hash (one per shard). */
static int reconcile_shard(frontier_t *f, const frontier_item_t *items, size_t n, size_t *released)
{
    redisReply *r;
    int rc = lease_fields(f, &r);
    if (rc < 0)
        return rc;
    frontier_item_t *orphans = calloc(r->elements ? r->elements : 1, sizeof *orphans);
    size_t k = 0, wl = strlen(f->worker);
    if (!orphans)
        rc = CRAWL_ENOMEM;
    for (size_t i = 0; orphans && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || held(items, n, e->str, e->len))
            continue;
        /* a lease token of our own: "ORIGIN\tSEQ@WID" */
        char *tok = malloc(e->len + 1 + wl + 1);
        if (!tok) {
            rc = CRAWL_ENOMEM;
            break;
        }
        memcpy(tok, e->str, e->len);
        tok[e->len] = '@';
        memcpy(tok + e->len + 1, f->worker, wl + 1);
        orphans[k].shard = f->cur;
        orphans[k++].lease = tok;
    }
    freeReplyObject(r);
    if (rc == 0 && k) {
        rc = frontier_release(f, orphans, k);
        if (rc == CRAWL_ELEASE) /* reclaimed by another worker meanwhile */
            rc = 0;
        if (rc == 0)
            *released += k;
    }
    for (size_t i = 0; i < k; i++)
        free(orphans[i].lease);
    free(orphans);
    return rc;
}

int frontier_reconcile(frontier_t *f, const frontier_item_t *items, size_t n, size_t *released)
{
    size_t dummy;
    if (!released)
        released = &dummy;
    *released = 0;
    if (!f || (!items && n))
        return CRAWL_EINVAL;
    int rc = 0;
    unsigned cur = f->cur;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        fr_use(f, s);
        rc = reconcile_shard(f, items, n, released);
    }
    fr_use(f, cur);
    return rc;
}
