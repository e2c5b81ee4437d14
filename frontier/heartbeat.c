/*
 * heartbeat.c -- a worker's heartbeat (frontier.h: frontier_heartbeat, and
 * the call frontier_heartbeat_start for a caller that works while Redis
 * runs it).
 *
 * DESIGN.  One FCALL of heartbeat.lua (the layout above build_heartbeat)
 * renews the worker's lease and its record (P worker:<wid>), reclaims the
 * URLs of expired workers, and answers what a worker checks at every
 * heartbeat in the same round trip: whether the crawl's Bloom filter still
 * exists (P seen:meta: a FLUSHALL, or a Redis restarted without its data,
 * lost the crawl) and how many URLs were added to it (the counters seeds +
 * new_links: how full the visited set is), and whether the crawl is paused
 * or this worker is to drain (the control hash, control.c).  One command a
 * shard, in one round trip; each may run twice (a renewal; the URLs of
 * expired workers are reclaimed once), so the link sends them again after
 * a lost connection.  Keys: those of heartbeat.lua.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>

/* The heartbeat call (frontier/lua/heartbeat.lua), KEYS: the guard, ready.
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
static void build_heartbeat(const frontier_t *f, unsigned s, const frontier_worker_stats_t *ws,
                            rconn_args_t *a)
{
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_cstr(a, f->worker);
    rconn_arg_u64(a, f->cfg.lease_ms);
    rconn_arg_u64(a, f->cfg.per_host);
    rconn_arg_cstr(a, f->host);
    rconn_arg_u64(a, (uint64_t)f->pid);
    rconn_arg_u64(a, ws->pages);
    rconn_arg_dbl(a, ws->pages_per_s >= 0 && ws->pages_per_s < 1e12 ? ws->pages_per_s : 0);
    rconn_arg_u64(a, ws->in_flight);
    rconn_arg_u64(a, f->cfg.delay_ms);
    rconn_arg_u64(a, f->cfg.max_delay_ms);
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

int frontier_heartbeat_start(frontier_t *f, const frontier_worker_stats_t *ws,
                             frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out)
        return CRAWL_EINVAL;
    frontier_worker_stats_t zero = {0};
    frontier_beat_t *found = calloc(1, sizeof *found);
    frontier_call_t *c = found ? fr_call_new(FR_CALL_HEARTBEAT, found) : NULL;
    if (!c) {
        free(found);
        return CRAWL_ENOMEM;
    }
    int rc = 0;
    rconn_link_cork(f->link); /* every shard's, in one round trip */
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        rconn_call_t *cmd = fr_fcall(f, s, FR_HEARTBEAT, 1, RCONN_CALL_RESEND);
        if (cmd)
            build_heartbeat(f, s, ws ? ws : &zero, rconn_call_args(cmd));
        rc = cmd ? fr_call_add(f, c, cmd) : CRAWL_ENOMEM;
    }
    rconn_link_uncork(f->link);
    if (rc < 0) {
        fr_call_drop(c);
        free(found);
        return rc;
    }
    *out = c;
    return 0;
}

/* The shards' answers summed into *out: the crawl exists if every shard's
 * filter does; a drain or pause of any shard's control copy is the
 * worker's. */
static int read_beat(frontier_t *f, frontier_call_t *c, frontier_beat_t *out)
{
    *out = (frontier_beat_t){.crawl_exists = 1};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        redisReply *r = NULL;
        frontier_beat_t b = {0};
        if ((rc = fr_answered(f, c->cmd[i], &r)) < 0 || (rc = parse_beat(r, &b)) < 0)
            break;
        out->reclaimed += b.reclaimed;
        out->crawl_exists &= b.crawl_exists;
        if (b.bloom_added > out->bloom_added) /* the fullest shard's filter */
            out->bloom_added = b.bloom_added;
        if (b.control == FRONTIER_DRAIN ||
            (b.control == FRONTIER_PAUSED && out->control != FRONTIER_DRAIN))
            out->control = b.control;
    }
    return rc;
}

int fr_heartbeat_step(frontier_t *f, frontier_call_t *c, int wait)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    return fr_call_finish(c, rc < 0 ? rc : read_beat(f, c, c->st));
}

int frontier_heartbeat_found(const frontier_call_t *c, frontier_beat_t *out)
{
    if (!fr_call_state(c, FR_CALL_HEARTBEAT) || !c->done)
        return CRAWL_EINVAL;
    if (out)
        *out = c->rc == 0 ? *(const frontier_beat_t *)c->st : (frontier_beat_t){.crawl_exists = 1};
    return c->rc;
}
