/*
 * heartbeat.c -- a worker's heartbeat (frontier.h: frontier_heartbeat, and
 * its halves frontier_heartbeat_start / _ready / _end / _drop for a caller
 * that works while Redis runs it).
 *
 * DESIGN.  One FCALL of heartbeat.lua (the layout above build_heartbeat)
 * renews the worker's lease and its record (P worker:<wid>), reclaims the
 * URLs of expired workers, and answers what a worker checks at every
 * heartbeat in the same round trip: whether the crawl's Bloom filter still
 * exists (P seen:meta: a FLUSHALL, or a Redis restarted without its data,
 * lost the crawl) and how many URLs were added to it (the counters seeds +
 * new_links: how full the visited set is), and whether the crawl is paused
 * or this worker is to drain (the control hash, control.c).  Keys: those of
 * heartbeat.lua.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>

/* The heartbeat call (frontier/lua/heartbeat.lua), KEYS: ready.
 *   ARGV[1]  P            the key prefix
 *   ARGV[2]  worker       this worker's id
 *   ARGV[3]  lease_ms     its lease, renewed
 *   ARGV[4]  per_host     for waking the hosts of reclaimed URLs
 *   ARGV[5..9]            its record: host pid pages pages_per_s in_flight
 *   ARGV[10] delay_ms     the crawl's delay, and ...
 *   ARGV[11] max_delay_ms ... its cap on a host's own: a reclaimed URL may
 *                         have reached its server, so its host waits its
 *                         delay from now (requeue.lua)
 * The crawl's control hash (frontier_control) is read in the same call: its
 * per_host, delay and max_delay, when set, beat ARGV[4], [10], [11].
 * Reply: {reclaimed (URLs of expired workers handed back), 1 if the Bloom
 * filter's meta hash exists else 0, seeds, new_links (the counters),
 * control (4: this worker registered before the crawl's drain, 3: the
 * crawl is paused, 0: neither)}. */
static void build_heartbeat(const frontier_t *f, const frontier_worker_stats_t *ws, fr_args_t *a)
{
    fa_fcall(a, 1);
    fa_cstr(a, f->ready_key);
    fa_cstr(a, f->prefix);
    fa_cstr(a, f->worker);
    fa_u64(a, f->cfg.lease_ms);
    fa_u64(a, f->cfg.per_host);
    fa_cstr(a, f->host);
    fa_u64(a, (uint64_t)f->pid);
    fa_u64(a, ws->pages);
    fa_dbl(a, ws->pages_per_s >= 0 && ws->pages_per_s < 1e12 ? ws->pages_per_s : 0);
    fa_u64(a, ws->in_flight);
    fa_u64(a, f->cfg.delay_ms);
    fa_u64(a, f->cfg.max_delay_ms);
}

static int parse_beat(const redisReply *r, frontier_beat_t *out)
{
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    uint64_t v[5];
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5)
        return CRAWL_EREPLY;
    for (size_t i = 0; i < 5; i++)
        if (fr_reply_u64(r->element[i], &v[i]) < 0)
            return CRAWL_EREPLY;
    *out = (frontier_beat_t){.reclaimed = (size_t)v[0],
                             .crawl_exists = v[1] != 0,
                             .bloom_added = v[2] + v[3],
                             .control = v[4] == FRONTIER_DRAIN    ? FRONTIER_DRAIN
                                        : v[4] == FRONTIER_PAUSED ? FRONTIER_PAUSED
                                                                  : FRONTIER_READY};
    return 0;
}

/* A heartbeat sent to every shard, in order, on the handle's connection. */
struct frontier_beat_call {
    size_t n;
    fr_call_t c[]; /* [n]: shard i's */
};

int frontier_heartbeat_start(frontier_t *f, const frontier_worker_stats_t *ws,
                             frontier_beat_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out)
        return CRAWL_EINVAL;
    frontier_worker_stats_t zero = {0};
    frontier_beat_call_t *c = calloc(1, sizeof *c + f->nshards * sizeof c->c[0]);
    if (!c)
        return CRAWL_ENOMEM;
    int rc = 0;
    unsigned cur = f->cur;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        fr_use(f, s);
        fa_init(&c->c[s].a);
        build_heartbeat(f, ws ? ws : &zero, &c->c[s].a);
        rc = fr_call_send(f, FR_HEARTBEAT, &c->c[s]);
        c->n = s + 1;
    }
    fr_use(f, cur);
    fr_wait_on(f, &c->c[0]);
    if (rc < 0) {
        frontier_heartbeat_drop(c);
        return rc;
    }
    *out = c;
    return 0;
}

int frontier_heartbeat_ready(frontier_t *f, frontier_beat_call_t *c)
{
    return f && c ? fr_calls_ready(f, c->c, c->n) : CRAWL_EINVAL;
}

int frontier_heartbeat_end(frontier_t *f, frontier_beat_call_t *c, frontier_beat_t *out)
{
    frontier_beat_t ignored;
    if (!out)
        out = &ignored;
    *out = (frontier_beat_t){.crawl_exists = 1};
    if (!f || !c) {
        frontier_heartbeat_drop(c);
        return CRAWL_EINVAL;
    }
    /* the shards' answers summed; the crawl exists if every shard's filter
     * does; a drain or pause of any shard's control copy is the worker's */
    int rc = fr_calls_wait(f, c->c, c->n);
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        redisReply *r = NULL;
        frontier_beat_t b = {0};
        rc = fr_call_reply(f, &c->c[i], &r);
        if (rc == 0) {
            rc = parse_beat(r, &b);
            freeReplyObject(r);
        }
        if (rc < 0)
            break;
        out->reclaimed += b.reclaimed;
        out->crawl_exists &= b.crawl_exists;
        if (b.bloom_added > out->bloom_added) /* the fullest shard's filter */
            out->bloom_added = b.bloom_added;
        if (b.control == FRONTIER_DRAIN ||
            (b.control == FRONTIER_PAUSED && out->control != FRONTIER_DRAIN))
            out->control = b.control;
    }
    frontier_heartbeat_drop(c);
    return rc;
}

void frontier_heartbeat_drop(frontier_beat_call_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        fr_call_clear(&c->c[i]);
    free(c);
}

int frontier_heartbeat(frontier_t *f, const frontier_worker_stats_t *ws, size_t *reclaimed)
{
    frontier_beat_call_t *c = NULL;
    frontier_beat_t b;
    int rc = f ? frontier_heartbeat_start(f, ws, &c) : CRAWL_EINVAL;
    if (rc == 0)
        rc = frontier_heartbeat_end(f, c, &b);
    if (rc == 0 && reclaimed)
        *reclaimed = b.reclaimed;
    return rc;
}
