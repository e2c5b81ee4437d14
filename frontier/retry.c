/*
 * retry.c -- leased URLs that go back: a fetched page to be fetched again
 * or dead-lettered (frontier_retry: retry.lua), and URLs handed back
 * untouched (frontier_release: release.lua).
 *
 * DESIGN: both are keyed by their leases: a call finds each lease it names
 * or leaves it alone (answering it "lost"), so a call run a second time
 * (its reply lost with the connection, sent again by the link) changes
 * nothing the first did not; their commands are RCONN_CALL_RESEND.  A
 * retry is one command in the item's shard; a release one a shard, the
 * items of each in their order.  One reply layout, {lost, ...}, read by
 * fr_lease_reply for both.  Every argument is copied: the call outlives
 * the caller's items.  Keys: those of retry.lua and release.lua.
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

/* The retry call (frontier/lua/retry.lua), KEYS: the guard, ready.
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
 *   ARGV[16]  unfetched       1: no request was made (robots.txt unavailable):
 *                             the host is not counted as failing, not backed off
 *   ARGV[17]  pace_ms         the wait the request's duration asks for
 *                             (fr_pace_ms; a 429 or 503 status slows the host:
 *                             base.lua, pace_note)
 * Reply: {lost, dead}. */
static void build_retry(frontier_t *f, unsigned s, const frontier_item_t *item,
                        const frontier_outcome_t *o, uint32_t retry_after_ms, rconn_args_t *a)
{
    const char *w;
    size_t seqlen;
    fr_lease_split(item->lease, &w, &seqlen, NULL);
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_dup(a, w);
    rconn_arg_copy(a, item->lease, seqlen);
    rconn_arg_u64(a, o->status > 0 ? (uint64_t)o->status : 0);
    rconn_arg_dup(a, o->error ? o->error : "");
    rconn_arg_u64(a, retry_delay(f, item->tries, retry_after_ms));
    rconn_arg_u64(a, retry_after_ms);
    rconn_arg_u64(a, f->cfg.max_tries);
    rconn_arg_u64(a, f->cfg.backoff_ms);
    rconn_arg_u64(a, f->cfg.backoff_max_ms);
    rconn_arg_dbl(a, fr_random(f));
    rconn_arg_u64(a, f->cfg.per_host);
    rconn_arg_u64(a, o->bytes);
    rconn_arg_u64(a, f->cfg.delay_ms);
    rconn_arg_u64(a, f->cfg.max_delay_ms);
    rconn_arg_u64(a, o->unfetched ? 1 : 0);
    rconn_arg_u64(a, fr_pace_ms(f, o));
}

/* The release call (frontier/lua/release.lua), KEYS: the guard, ready.
 *   ARGV[1]  P               the key prefix
 *   ARGV[2]  per_host        for waking the hosts
 *   ARGV[3]  delay_ms        the crawl's delay and ...
 *   ARGV[4]  max_delay_ms    ... its cap on a host's own: a URL handed back
 *                            may have reached its server, so a host of delay
 *                            d > 0 is claimable again d after the release
 *   ARGV[5], ARGV[6] ...     per item, in order: the worker of its lease, its
 *                            lease's field "ORIGIN\tSEQ" (fr_lease_split)
 * Reply: {lost, released}.  The first item ends up at the front of its queue.
 * The items of shard s (shard[i] == s) go in its call. */
static void build_release(const frontier_t *f, unsigned s, const frontier_item_t *items,
                          const unsigned *shard, size_t n, rconn_args_t *a)
{
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_u64(a, f->cfg.per_host);
    rconn_arg_u64(a, f->cfg.delay_ms);
    rconn_arg_u64(a, f->cfg.max_delay_ms);
    for (size_t i = 0; i < n; i++) {
        const char *w;
        size_t seqlen;
        if (shard[i] != s)
            continue;
        fr_lease_split(items[i].lease, &w, &seqlen, NULL);
        rconn_arg_dup(a, w);
        rconn_arg_copy(a, items[i].lease, seqlen);
    }
}

/* A retry or a release: done once every command answered, its outcome the
 * first failure, else CRAWL_ELEASE if a lease was lost, else 0 (a lost
 * lease in one shard does not keep the others' items from going back). */
int fr_lease_step(frontier_t *f, frontier_call_t *c, int wait)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    if (rc < 0)
        return fr_call_finish(c, rc);
    int out = 0;
    for (size_t i = 0; i < c->n; i++) {
        redisReply *r;
        int one = fr_answered(f, c->cmd[i], &r);
        if (one >= 0)
            one = fr_lease_reply(r);
        if (one < 0 && (out == 0 || out == CRAWL_ELEASE))
            out = one;
    }
    return fr_call_finish(c, out);
}

int frontier_retry_start(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                         uint32_t retry_after_ms, frontier_call_t **out)
{
    const char *w;
    size_t seqlen;
    if (out)
        *out = NULL;
    if (!f || !item || !o || !out || fr_lease_split(item->lease, &w, &seqlen, NULL) < 0)
        return CRAWL_EINVAL;
    unsigned s = fr_item_shard(f, item);
    frontier_call_t *c = fr_call_new(FR_CALL_RETRY, NULL);
    rconn_call_t *cmd = c ? fr_fcall(f, s, FR_RETRY, 1, RCONN_CALL_RESEND) : NULL;
    if (!cmd) {
        fr_call_drop(c);
        return CRAWL_ENOMEM;
    }
    build_retry(f, s, item, o, retry_after_ms, rconn_call_args(cmd));
    int rc = fr_call_add(f, c, cmd);
    if (rc < 0) {
        fr_call_drop(c);
        return rc;
    }
    *out = c;
    return 0;
}

int frontier_release_start(frontier_t *f, const frontier_item_t *items, size_t n,
                           frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || (!items && n) || !out)
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const char *w;
        size_t seqlen;
        if (fr_lease_split(items[i].lease, &w, &seqlen, NULL) < 0)
            return CRAWL_EINVAL;
    }
    unsigned *shard = malloc((n ? n : 1) * sizeof *shard);
    uint8_t *used = calloc(f->nshards, 1);
    frontier_call_t *c = shard && used ? fr_call_new(FR_CALL_RELEASE, NULL) : NULL;
    int rc = c ? 0 : CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        used[shard[i] = fr_item_shard(f, &items[i])] = 1;
    rconn_link_cork(f->link); /* one round trip */
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        if (!used[s])
            continue;
        rconn_call_t *cmd = fr_fcall(f, s, FR_RELEASE, 1, RCONN_CALL_RESEND);
        if (cmd)
            build_release(f, s, items, shard, n, rconn_call_args(cmd));
        rc = cmd ? fr_call_add(f, c, cmd) : CRAWL_ENOMEM;
    }
    rconn_link_uncork(f->link);
    free(shard);
    free(used);
    if (rc < 0) {
        fr_call_drop(c);
        return rc;
    }
    *out = c;
    return 0;
}
