/*
 * claim.c -- claiming URLs (frontier.h: frontier_claim, and the call
 * frontier_claim_start for a caller that works while Redis runs the claim).
 *
 * DESIGN.  One FCALL of claim.lua (the layout above build_claim) moves up
 * to FR_MAX_CLAIM entries from the ready hosts' queues into the worker's
 * lease hash, renews its lease and reclaims expired workers' URLs; the
 * reply is read into frontier_item_t's whose lease token is
 * "ORIGIN\tSEQ@WID" (fr_lease_split).  Keys: those of claim.lua (keys.def
 * lists the crawl's keys).  A claim is one FCALL per shard asked (up to
 * FR_CLAIM_FANOUT, in one round trip); it may not run twice (it would lease
 * twice), so a connection lost before its replies fails it, and
 * frontier_reconcile hands back what it leased.  A paused crawl, or a
 * drain that came after this worker registered (control.c), makes the
 * claim renew the lease and take nothing, whatever is ready.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* ---- claim --------------------------------------------------------------- */

void frontier_item_clear(frontier_item_t *it)
{
    if (!it)
        return;
    free(it->url);
    free(it->lease);
    memset(it, 0, sizeof *it);
}

/* Fills one item from an entry (entry.c's layouts), the origin of the queue
 * it came from and its lease number: its URL is the entry's rebuilt under
 * that origin, its lease token "ORIGIN\tSEQ@WORKER" (fr_lease_split), the
 * first part being its lease's field. */
static int fill_item(frontier_t *f, const redisReply *e, const redisReply *origin, uint64_t seq,
                     uint64_t now, frontier_item_t *it)
{
    memset(it, 0, sizeof *it);
    fr_entry_t en;
    if (e->type != REDIS_REPLY_STRING || origin->type != REDIS_REPLY_STRING ||
        memchr(origin->str, '\t', origin->len) || memchr(origin->str, '@', origin->len) ||
        fr_entry_parse(e->str, e->len, &en) < 0)
        return CRAWL_EREPLY;
    it->url = fr_entry_url(&en, origin->str, origin->len);
    size_t ll = origin->len + strlen(f->worker) + 24;
    it->lease = malloc(ll);
    if (!it->url || !it->lease) {
        frontier_item_clear(it);
        return CRAWL_ENOMEM;
    }
    snprintf(it->lease, ll, "%.*s\t%llu@%s", (int)origin->len, origin->str, (unsigned long long)seq,
             f->worker);
    it->depth = en.depth;
    it->tries = en.tries;
    it->hops = en.hops;
    it->claimed_ms = now;
    return 0;
}

/* Reads a claim's reply (the layout above build_claim) into items. */
static int parse_claim(frontier_t *f, const redisReply *r, size_t max, frontier_item_t *items,
                       size_t *n, frontier_state_t *state, uint32_t *wait_ms, uint64_t *enq)
{
    uint64_t st, now, wait, base, nruns = 0;
    size_t w = f->cfg.host_ip_ms ? 4 : 2;                       /* a run's elements (build_claim) */
    size_t ne = r->type == REDIS_REPLY_ARRAY ? r->elements : 0; /* its elements but the blocks */
    if (ne > 4 && r->element[ne - 1]->type == REDIS_REPLY_ARRAY) {
        int brc = fr_blocklist_take(&f->blocks, r->element[--ne]);
        if (brc < 0)
            return brc;
    }
    if (r->type != REDIS_REPLY_ARRAY || ne < 4 || fr_reply_u64(r->element[0], &st) ||
        fr_reply_u64(r->element[1], &now) || fr_reply_u64(r->element[2], &wait) ||
        fr_reply_u64(r->element[3], &base) || st > FRONTIER_DRAIN ||
        (ne > 4 && (fr_reply_u64(r->element[4], &nruns) || nruns > max || ne < 5 + w * nruns)))
        return CRAWL_EREPLY;
    size_t got = ne > 4 ? ne - 5 - w * nruns : 0, i = 0;
    redisReply *const *runs = nruns ? r->element + 5 + got : NULL; /* (origin, count[, ip, ms]) */
    int rc = got <= max ? 0 : CRAWL_EREPLY;
    for (size_t run = 0; rc == 0 && run < nruns; run++) {
        redisReply *const *rn = runs + w * run;
        uint64_t cnt, ip_ms = 0;
        if (fr_reply_u64(rn[1], &cnt) || cnt > got - i)
            rc = CRAWL_EREPLY;
        /* (a hint that does not read is no hint: the claim stands) */
        int hint = w == 4 && rn[2]->type == REDIS_REPLY_STRING && fr_reply_u64(rn[3], &ip_ms) == 0;
        for (uint64_t j = 0; rc == 0 && j < cnt; j++, i++) {
            rc = fill_item(f, r->element[5 + i], rn[0], base + i + 1, now, &items[i]);
            if (rc == 0 && hint && rn[2]->len < sizeof items[i].ip) {
                memcpy(items[i].ip, rn[2]->str, rn[2]->len);
                items[i].ip_ms = ip_ms;
            }
        }
    }
    if (rc == 0 && i != got)
        rc = CRAWL_EREPLY;
    if (rc < 0) {
        for (size_t j = 0; j < i; j++)
            frontier_item_clear(&items[j]);
        return rc;
    }
    *n = got;
    *enq = base;
    *state = got ? FRONTIER_READY : (frontier_state_t)st;
    if (wait_ms)
        *wait_ms = got ? 0 : (uint32_t)(wait > 1000 ? 1000 : wait);
    return 0;
}

/* The claim call (frontier/lua/claim.lua) to shard s, KEYS: the guard, ready.
 *   ARGV[1]  P             the crawl's key prefix (keys.h)
 *   ARGV[2]  worker        the claiming worker's id
 *   ARGV[3]  max           URLs to claim at most (<= FR_MAX_CLAIM)
 *   ARGV[4]  per_host      most URLs of one host in flight when its delay is 0
 *   ARGV[5]  delay_ms      a host's delay d (or its own, hdelay, if longer):
 *                          d > 0: one URL of the host in flight, claimed d
 *                          after the previous one ended (finish.lua,
 *                          retry.lua, release.lua)
 *   ARGV[6]  max_delay_ms  cap on a host's own delay (hdelay)
 *   ARGV[7]  lease_ms      the worker's lease, renewed by the claim
 *   ARGV[8]  blocks        the token of the worker's list of the crawl's
 *                          blocks (block.c), "" for none
 *   ARGV[9]  depth_window  the crawl order's window (frontier.h), 4294967295
 *                          for none
 *   ARGV[10] host_ip_ms    > 0: each run of the reply carries its host's
 *                          address from P hostip if it is younger than this
 * The crawl's control hash (P control: frontier_control) is read in the
 * same call: its per_host, delay and max_delay, when set, beat ARGV[4..6].
 * Reply: {state (0 ready, 1 wait, 2 done, 3 paused, 4 drain: this worker
 * registered before the crawl's drain), now_ms, wait_ms, lease_base (for
 * done: the shard's enqueued counter instead)}, and
 * when URLs were claimed: nruns, the entries (entry.c), then nruns
 * pairs (origin, count): the origins of the entries, run by run (with
 * host_ip_ms, nruns quadruples (origin, count, ip, ms): ip the address the
 * origin was last fetched from, at ms, or "" and 0).  The i-th
 * entry (1-based) is leased as the field "ORIGIN\tSEQ", SEQ = lease_base + i.
 * Every form of the reply ends with one more element, an array, when the
 * crawl's blocks are not the list ARGV[8] names: {token, field, ...}
 * (fr_blocklist_take; token "": nothing is blocked). */
static void build_claim(const frontier_t *f, unsigned s, size_t max, rconn_args_t *a)
{
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_cstr(a, f->worker);
    rconn_arg_u64(a, max);
    rconn_arg_u64(a, f->cfg.per_host);
    rconn_arg_u64(a, f->cfg.delay_ms);
    rconn_arg_u64(a, f->cfg.max_delay_ms);
    rconn_arg_u64(a, f->cfg.lease_ms);
    rconn_arg_cstr(a, fr_blocks_known(f));
    rconn_arg_u64(a, f->cfg.depth_window);
    rconn_arg_u64(a, f->cfg.host_ip_ms);
}

#define FR_CLAIM_FANOUT 8   /* shards one claim asks at most (pipelined) */
#define FR_DONE_REST_MS 250 /* a shard that answered done is not asked again for this long */

/* A claim in flight: one command a shard asked, its findings once read. */
typedef struct claim_st {
    size_t n; /* shards asked: the call's commands 0..n */
    unsigned shard[FR_CLAIM_FANOUT];
    size_t max[FR_CLAIM_FANOUT]; /* URLs asked of each */
    size_t room;                 /* URLs asked in all */
    uint64_t sent;               /* the event number of the sending (f->events) */
    uint32_t wait_ms;            /* n 0 (every shard resting): the shortest rest left */
    frontier_item_t *items;      /* [room]: what was claimed, once read ... */
    size_t got;                  /* ... how many ... */
    frontier_state_t state;      /* ... the state ... */
    uint32_t wait;               /* ... and the wait hint */
} claim_st_t;

#define mono_ms fr_mono_ms

/* Picks the shards a claim of max URLs asks: up to FR_CLAIM_FANOUT of them
 * from the handle's ring on, those not resting, max split among them. */
static void pick_shards(frontier_t *f, size_t max, claim_st_t *c)
{
    uint64_t now = mono_ms(), rest = UINT64_MAX;
    size_t want = max < FR_CLAIM_FANOUT ? max : FR_CLAIM_FANOUT;
    unsigned s = f->ring, tried = 0;
    for (; tried < f->nshards && c->n < want; tried++, s = (s + 1) % f->nshards) {
        fr_shard_t *sh = &f->shard[s];
        if (f->nshards > 1 && sh->rest_until > now && !fr_woken(f, s, sh->rested_at)) {
            rest = sh->rest_until - now < rest ? sh->rest_until - now : rest;
            continue;
        }
        c->shard[c->n++] = s;
    }
    f->ring = s;
    for (size_t i = 0; i < c->n; i++)
        c->max[i] = max / c->n + (i < max % c->n);
    c->wait_ms = c->n ? 0 : (uint32_t)(rest > 1000 ? 1000 : rest ? rest : 1);
}

void fr_claim_free(void *st)
{
    claim_st_t *c = st;
    if (!c)
        return;
    for (size_t i = 0; c->items && i < c->got; i++)
        frontier_item_clear(&c->items[i]);
    free(c->items);
    free(c);
}

int frontier_claim_start(frontier_t *f, size_t max, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out || max == 0)
        return CRAWL_EINVAL;
    if (max > FR_MAX_CLAIM)
        max = FR_MAX_CLAIM;
    claim_st_t *st = calloc(1, sizeof *st);
    frontier_call_t *c = st ? fr_call_new(FR_CALL_CLAIM, st) : NULL;
    if (!c) {
        free(st);
        return CRAWL_ENOMEM;
    }
    pick_shards(f, max, st);
    st->room = max;
    int rc = 0;
    rconn_link_cork(f->link); /* every shard's call in one round trip */
    for (size_t i = 0; rc == 0 && i < st->n; i++) {
        rconn_call_t *cmd = fr_fcall(f, st->shard[i], FR_CLAIM, 1, 0);
        if (cmd)
            build_claim(f, st->shard[i], st->max[i], rconn_call_args(cmd));
        rc = cmd ? fr_call_add(f, c, cmd) : CRAWL_ENOMEM;
    }
    rconn_link_uncork(f->link);
    st->sent = ++f->events;
    if (rc < 0) {
        fr_call_drop(c);
        fr_claim_free(st);
        return rc;
    }
    *out = c;
    return 0;
}

/* Notes shard s's answer (docs/sharding.md, "End of the crawl"): a done answer
 * rests the shard and starts or continues its run of done answers with one
 * enqueued counter; any other ends it. */
static void note_answer(frontier_t *f, unsigned s, frontier_state_t st, uint32_t wait_ms,
                        uint64_t enq, uint64_t sent, uint64_t got)
{
    fr_shard_t *sh = &f->shard[s];
    sh->rested_at = mono_ms();
    if (st != FRONTIER_DONE) {
        sh->done = 0;
        sh->rest_until = st == FRONTIER_WAIT ? mono_ms() + (wait_ms > 1000 ? 1000 : wait_ms) : 0;
        return;
    }
    sh->rest_until = mono_ms() + FR_DONE_REST_MS;
    if (sh->done == 0 || sh->done_enq != enq) {
        sh->done = 1;
        sh->done_enq = enq;
        sh->done_got = got;
    } else {
        sh->done = 2;
        sh->done_sent = sent;
    }
}

/* The ms until the first shard's rest ends (0: one is not resting, or was
 * woken), at most 1000. */
static uint32_t rest_left(const frontier_t *f)
{
    uint64_t now = mono_ms(), left = 1000;
    for (unsigned s = 0; s < f->nshards && left; s++) {
        const fr_shard_t *sh = &f->shard[s];
        if (sh->rest_until <= now || fr_woken(f, s, sh->rested_at))
            left = 0;
        else if (sh->rest_until - now < left)
            left = sh->rest_until - now;
    }
    return (uint32_t)left;
}

/* 1 if the crawl is over in every shard: each answered done twice with
 * the same enqueued counter, and every second answer's call was sent after
 * every first answer was received (docs/sharding.md says why that suffices). */
static int all_done(const frontier_t *f)
{
    uint64_t last_first = 0, first_second = UINT64_MAX;
    for (unsigned s = 0; s < f->nshards; s++) {
        const fr_shard_t *sh = &f->shard[s];
        if (sh->done != 2)
            return 0;
        last_first = sh->done_got > last_first ? sh->done_got : last_first;
        first_second = sh->done_sent < first_second ? sh->done_sent : first_second;
    }
    return last_first < first_second;
}

/* Reads every shard's answer into st (the call's commands all answered). */
static int read_claim(frontier_t *f, frontier_call_t *c, claim_st_t *st)
{
    uint64_t got = ++f->events;
    int control = 0, any_wait = st->n == 0, rc = 0;
    uint32_t wait = st->n ? 1000 : st->wait_ms;
    frontier_state_t one = FRONTIER_WAIT;
    uint32_t one_wait = 0;
    if (!(st->items = calloc(st->room ? st->room : 1, sizeof *st->items)))
        return CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < st->n; i++) {
        redisReply *r = NULL;
        size_t m = 0;
        frontier_state_t s1 = FRONTIER_WAIT;
        uint32_t w = 0;
        uint64_t enq = 0;
        if ((rc = fr_answered(f, c->cmd[i], &r)) < 0)
            break;
        rc = r->type == REDIS_REPLY_ERROR
                 ? fr_reply_error(r)
                 : parse_claim(f, r, st->max[i], st->items + st->got, &m, &s1, &w, &enq);
        if (rc < 0)
            break;
        for (size_t j = 0; j < m; j++)
            st->items[st->got + j].shard = st->shard[i];
        st->got += m;
        one = s1;
        one_wait = w;
        if (f->nshards > 1)
            note_answer(f, st->shard[i], s1, w, enq, st->sent, got);
        if (s1 == FRONTIER_DRAIN || (s1 == FRONTIER_PAUSED && control != FRONTIER_DRAIN))
            control = s1;
        if (s1 == FRONTIER_WAIT) {
            any_wait = 1;
            wait = w < wait ? w : wait;
        }
    }
    if (rc < 0) /* the items of this call are not handed out: their leases lapse */
        return rc;
    if (st->got) {
        st->state = FRONTIER_READY;
        wait = 0;
    } else if (f->nshards == 1) {
        st->state = one; /* one shard: its answer is the crawl's (the claim is atomic) */
        wait = one_wait;
    } else if (control) {
        st->state = (frontier_state_t)control;
    } else if (!any_wait && all_done(f)) {
        st->state = FRONTIER_DONE;
        wait = 0;
    } else { /* ask again at once if a shard is not resting, else when the first wakes */
        st->state = FRONTIER_WAIT;
        wait = rest_left(f);
    }
    st->wait = wait;
    return 0;
}

int fr_claim_step(frontier_t *f, frontier_call_t *c, int wait)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    return fr_call_finish(c, rc < 0 ? rc : read_claim(f, c, c->st));
}

int frontier_claim_found(frontier_t *f, frontier_call_t *c, frontier_item_t *items, size_t *n,
                         frontier_state_t *state, uint32_t *wait_ms)
{
    (void)f;
    claim_st_t *st = fr_call_state(c, FR_CALL_CLAIM);
    if (n)
        *n = 0;
    if (!st || !items || !n || !state)
        return CRAWL_EINVAL;
    if (!c->done || c->rc < 0)
        return c->done ? c->rc : CRAWL_EINVAL;
    memcpy(items, st->items, st->got * sizeof *items);
    *n = st->got;
    st->got = 0; /* the caller's now */
    *state = st->state;
    if (wait_ms)
        *wait_ms = st->wait;
    return 0;
}
