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
 * Redis keys: P lease:<wid> of every shard (read), then those of
 * frontier_release.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

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

int frontier_reconcile(frontier_t *f, const frontier_item_t *items, size_t n, size_t *released)
{
    size_t dummy;
    if (!released)
        released = &dummy;
    *released = 0;
    if (!f || (!items && n))
        return CRAWL_EINVAL;
    /* every shard's lease fields (HKEYS: a read), in one round trip */
    rconn_call_t **c = calloc(f->nshards, sizeof *c);
    int rc = c ? 0 : CRAWL_ENOMEM;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        if (!(c[s] = fr_cmd(f, s, RCONN_CALL_RESEND))) {
            rc = CRAWL_ENOMEM;
            break;
        }
        rconn_args_t *a = rconn_call_args(c[s]);
        rconn_arg_cstr(a, "HKEYS");
        fr_key_arg(a, f->shard[s].prefix, FR_K_LEASE, f->worker, strlen(f->worker));
    }
    if (rc == 0)
        rc = fr_run(f, c, f->nshards);
    size_t total = 0, k = 0, wl = strlen(f->worker);
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        redisReply *r = rconn_call_reply(c[s]);
        if (r->type != REDIS_REPLY_ARRAY)
            rc = r->type == REDIS_REPLY_ERROR ? fr_reply_error(r) : CRAWL_EREPLY;
        else
            total += r->elements;
    }
    frontier_item_t *orphans = rc == 0 ? calloc(total ? total : 1, sizeof *orphans) : NULL;
    if (rc == 0 && !orphans)
        rc = CRAWL_ENOMEM;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        const redisReply *r = rconn_call_reply(c[s]);
        for (size_t i = 0; rc == 0 && i < r->elements; i++) {
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
            orphans[k].shard = s;
            orphans[k++].lease = tok;
        }
    }
    for (unsigned s = 0; c && s < f->nshards; s++)
        rconn_call_free(c[s]);
    free(c);
    if (rc == 0 && k) {
        rc = frontier_release(f, orphans, k);
        if (rc == CRAWL_ELEASE) /* reclaimed by another worker meanwhile */
            rc = 0;
        if (rc == 0)
            *released = k;
    }
    for (size_t i = 0; i < k; i++)
        free(orphans[i].lease);
    free(orphans);
    return rc;
}
