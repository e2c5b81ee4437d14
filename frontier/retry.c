/*
 * retry.c -- a fetched page to be fetched again, or dead-lettered
 * (frontier_retry, and frontier_retry_call for a caller that sends it
 * later): one call of retry.lua in the page's shard (the layout above
 * build_retry).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>

/* backoff_ms * 2^tries, capped, with equal jitter; at least retry_after. */
static uint64_t retry_delay(frontier_t *f, uint32_t tries, uint32_t retry_after_ms)
{
    uint64_t d = f->cfg.backoff_ms;
    for (uint32_t i = 0; i < tries && d < f->cfg.backoff_max_ms; i++)
        d *= 2;
    if (d > f->cfg.backoff_max_ms)
        d = f->cfg.backoff_max_ms;
    d = d / 2 + (uint64_t)(fr_random(f) * (double)(d - d / 2));
    return d < retry_after_ms ? retry_after_ms : d;
}

/* The retry call (frontier/lua/retry.lua), KEYS: ready.
 *   ARGV[1]   P               the key prefix
 *   ARGV[2]   worker          the worker of the item's lease
 *   ARGV[3]   field           its lease's field "ORIGIN\tSEQ" (fr_lease_split)
 *   ARGV[4]   status          HTTP status, 0 if none
 *   ARGV[5]   error           error kind, "" if none
 *   ARGV[6]   delay_ms        the URL's retry delay (retry_delay: backoff, jitter)
 *   ARGV[7]   retry_after_ms  Retry-After, 0 if none: the host waits at least this
 *   ARGV[8]   max_tries       attempts before the dead-letter list
 *   ARGV[9]   backoff_ms      the host's backoff: backoff_ms * 2^(failures-2) ...
 *   ARGV[10]  backoff_max_ms  ... capped at backoff_max_ms ...
 *   ARGV[11]  jitter          ... times 0.5 + 0.5 * jitter (a uniform [0,1))
 *   ARGV[12]  per_host        for waking the host
 *   ARGV[13]  bytes           body bytes received
 *   ARGV[14]  host delay_ms   the crawl's delay and ...
 *   ARGV[15]  max_delay_ms    ... its cap on a host's own: the host waits at
 *                             least its delay after this request too
 * Reply: {lost, dead}. */
static void build_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                        uint32_t retry_after_ms, fr_args_t *a)
{
    const char *w;
    size_t seqlen;
    fr_lease_split(item->lease, &w, &seqlen, NULL);
    /* every argument copied: a call (frontier_retry_call) outlives the item
     * and may outlive f */
    fa_fcall(a, 1);
    fa_dup(a, f->ready_key);
    fa_dup(a, f->prefix);
    fa_dup(a, w);
    fa_copy(a, item->lease, seqlen);
    fa_u64(a, o->status > 0 ? (uint64_t)o->status : 0);
    fa_dup(a, o->error ? o->error : "");
    fa_u64(a, retry_delay(f, item->tries, retry_after_ms));
    fa_u64(a, retry_after_ms);
    fa_u64(a, f->cfg.max_tries);
    fa_u64(a, f->cfg.backoff_ms);
    fa_u64(a, f->cfg.backoff_max_ms);
    fa_dbl(a, fr_random(f));
    fa_u64(a, f->cfg.per_host);
    fa_u64(a, o->bytes);
    fa_u64(a, f->cfg.delay_ms);
    fa_u64(a, f->cfg.max_delay_ms);
}

int frontier_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                   uint32_t retry_after_ms)
{
    const char *w;
    size_t seqlen;
    if (!f || !item || !o || fr_lease_split(item->lease, &w, &seqlen, NULL) < 0)
        return CRAWL_EINVAL;
    fr_args_t a;
    fa_init(&a);
    fr_use(f, fr_item_shard(f, item));
    build_retry(f, item, o, retry_after_ms, &a);
    return fr_run_lease_call(f, FR_RETRY, &a);
}

int frontier_retry_call(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                        uint32_t retry_after_ms, frontier_call_t **out)
{
    const char *w;
    size_t seqlen;
    if (out)
        *out = NULL;
    if (!f || !item || !o || !out || fr_lease_split(item->lease, &w, &seqlen, NULL) < 0)
        return CRAWL_EINVAL;
    frontier_call_t *c = fr_async_new(FR_CALL_RETRY, FR_RETRY);
    if (!c)
        return CRAWL_ENOMEM;
    fr_use(f, fr_item_shard(f, item));
    c->c.shard = f->cur;
    build_retry(f, item, o, retry_after_ms, &c->c.a);
    if (c->c.a.oom) {
        frontier_call_drop(c);
        return CRAWL_ENOMEM;
    }
    *out = c;
    return 0;
}

int frontier_retry_end(frontier_t *f, frontier_call_t *c)
{
    redisReply *r = NULL;
    int rc = fr_async_reply(f, c, FR_CALL_RETRY, &r);
    if (rc < 0)
        return rc;
    rc = fr_lease_reply(r);
    freeReplyObject(r);
    return rc;
}
