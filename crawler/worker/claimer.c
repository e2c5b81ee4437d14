/*
 * claimer.c -- a worker thread's claims and heartbeats (claimer.h).
 *
 * DESIGN: at most one call in flight (a heartbeat, a claim, or the look of
 * a claim's new origins), on the thread's frontier handle; a turn takes its
 * reply when frontier_call_ready says it is all there (the thread's loop
 * polls the link when its socket wakes it).  Sizing: the room left in
 * claim_room.hold, up to --claim-batch; while at least half the transfers
 * still run, a claim of a few free slots at most every CLAIM_GAP_MS (a
 * claim costs Redis about as much for one URL as for a dozen), of a quarter
 * of the slots or a full batch at once: waiting for a quarter alone made
 * the transfers run in waves.  The URLs the claim in flight asked for count
 * as held (claimer_held), so a thread never holds more than its hold.  A
 * paused crawl's claims take nothing and the claimer asks again every
 * 250 ms at most (the lease renewed each time); a crawl that is over (kept
 * up by --wait) is asked after 50 ms, doubled up to 1 s.  A claim or a look
 * lost with the link fails (neither may run twice: what the claim leased is
 * handed back by the reconcile), and so does a claim some of whose shards
 * answered before the loss (claimer_abandon_claim); a heartbeat stays on
 * the link and answers after the reconnect.
 * Redis keys: none directly (claim.lua, heartbeat.lua, robots_look.lua
 * through the frontier).
 */
#include "claimer.h"

#include <stdlib.h>

#include "metrics.h"

#define CLAIM_GAP_MS 5         /* a claim of a few free slots at most this often */
#define IDLE_CLAIM_MIN_MS 50   /* a crawl over (--wait): first wait between claims ... */
#define IDLE_CLAIM_MAX_MS 1000 /* ... doubled up to this */

struct claimer {
    const crawl_config_t *cfg;
    frontier_t *fr;
    robotsgate_t *gate;
    frontier_call_t *beating;   /* the heartbeat in flight, or NULL ... */
    frontier_call_t *claiming;  /* ... or the claim in flight ... */
    robotsgate_look_t *looking; /* ... or the look of its reply's new origins */
    frontier_item_t *items;     /* the claimed URLs' room ... */
    size_t max;                 /* ... for this many (held) ... */
    size_t n;                   /* ... and those claimed (looking) */
    uint64_t next_beat_ms, claim_after_ms, last_claim_ms;
    uint32_t idle_ms;               /* a crawl over: the wait before the next claim */
    uint64_t hb_pages, hb_pages_ms; /* at the last heartbeat (its pages/s) */
};

claimer_t *claimer_new(const crawl_config_t *cfg, frontier_t *fr, robotsgate_t *gate)
{
    claimer_t *c = calloc(1, sizeof *c);
    if (c)
        *c = (claimer_t){.cfg = cfg, .fr = fr, .gate = gate};
    return c;
}

/* The claimed URLs forgotten (their leases: the reconcile, or they lapse). */
static void forget_items(claimer_t *c)
{
    for (size_t i = 0; c->items && i < c->n; i++)
        frontier_item_clear(&c->items[i]);
    free(c->items);
    c->items = NULL;
    c->max = c->n = 0;
}

void claimer_free(claimer_t *c)
{
    if (!c)
        return;
    frontier_call_free(c->beating);
    frontier_call_free(c->claiming);
    robotsgate_prefetch_drop(c->gate, c->looking);
    forget_items(c);
    free(c);
}

frontier_worker_stats_t claimer_record(claimer_t *c, uint64_t now, const claim_room_t *room)
{
    double secs = (double)(now - c->hb_pages_ms) / 1000.0;
    frontier_worker_stats_t ws = {
        .pages = room->pages,
        .pages_per_s = c->hb_pages_ms && secs > 0 ? (double)(room->pages - c->hb_pages) / secs : 0,
        .in_flight = (uint32_t)(room->held + claimer_held(c))};
    c->hb_pages = room->pages;
    c->hb_pages_ms = now;
    c->next_beat_ms = now + c->cfg->lease_ms / 3;
    return ws;
}

void claimer_poke(claimer_t *c)
{
    c->claim_after_ms = 0;
}

uint64_t claimer_due(const claimer_t *c)
{
    return c->claim_after_ms;
}

size_t claimer_held(const claimer_t *c)
{
    return c->max;
}

int claimer_busy(const claimer_t *c)
{
    return c->beating || c->claiming || c->looking;
}

void claimer_each_item(const claimer_t *c, void (*fn)(const frontier_item_t *, void *), void *ud)
{
    for (size_t i = 0; c->looking && i < c->n; i++)
        fn(&c->items[i], ud);
}

/* Sends a claim if one is due and there is room. */
static int send_claim(claimer_t *c, uint64_t now, const claim_room_t *room)
{
    size_t busy = room->held, left = room->hold > busy ? room->hold - busy : 0;
    if (left > c->cfg->claim_batch)
        left = c->cfg->claim_batch;
    if (left == 0 || now < c->claim_after_ms ||
        (room->active * 2 >= room->slots && left * 4 < room->slots && left < c->cfg->claim_batch &&
         now < c->last_claim_ms + CLAIM_GAP_MS))
        return 0;
    c->last_claim_ms = now;
    if (!(c->items = calloc(left, sizeof *c->items)))
        return CRAWL_ENOMEM;
    int rc = frontier_claim_start(c->fr, left, &c->claiming);
    if (rc < 0) {
        forget_items(c);
        return rc;
    }
    c->max = left;
    metrics_redis_sent(METRICS_CALL_CLAIM);
    return 0;
}

/* The claimed URLs out to the caller, the counts reset. */
static void hand_out(claimer_t *c, claim_got_t *got)
{
    got->items = c->items;
    got->n = c->n;
    c->items = NULL;
    c->max = c->n = 0;
}

/* The look of the claimed URLs' origins, if it answered (block: waited for). */
static void take_look(claimer_t *c, int block, claim_got_t *got)
{
    if (!block && !robotsgate_prefetch_ready(c->looking))
        return;
    robotsgate_look_t *lk = c->looking;
    c->looking = NULL;
    int rc = robotsgate_prefetch_end(c->gate, lk); /* (failed: its origins fetched by us) */
    if (rc < 0)
        got->rc = rc;
    hand_out(c, got);
}

/* The next claim's time, from the state and what the claim got. */
static void pace(claimer_t *c, uint64_t now, frontier_state_t st, uint32_t wait_ms, size_t n,
                 size_t room)
{
    c->idle_ms = st != FRONTIER_DONE                  ? 0
                 : c->idle_ms < IDLE_CLAIM_MIN_MS / 2 ? IDLE_CLAIM_MIN_MS
                 : c->idle_ms * 2 > IDLE_CLAIM_MAX_MS ? IDLE_CLAIM_MAX_MS
                                                      : c->idle_ms * 2;
    if (c->idle_ms)
        c->claim_after_ms = now + c->idle_ms;
    else if (st != FRONTIER_READY) /* (paused: claim again, and so renew the lease, in 250 ms) */
        c->claim_after_ms = now + (wait_ms < 10 ? 10 : wait_ms > 250 ? 250 : wait_ms);
    else if (n < room) /* hosts saturated: ask again after a finish, or in 20 ms */
        c->claim_after_ms = now + 20;
}

/* The claim's reply, if it is there (block: waited for): its URLs kept,
 * the look of their new origins sent or, when none is new, the URLs handed
 * out at once. */
static void take_claim(claimer_t *c, uint64_t now, int block, claim_got_t *got)
{
    if (!block && !frontier_call_ready(c->fr, c->claiming))
        return;
    size_t n = 0, room = c->max;
    uint32_t wait_ms = 100;
    frontier_state_t st = FRONTIER_WAIT;
    int rc = frontier_call_end(c->fr, c->claiming);
    if (rc == 0)
        rc = frontier_claim_found(c->fr, c->claiming, c->items, &n, &st, &wait_ms);
    frontier_call_free(c->claiming);
    c->claiming = NULL;
    metrics_redis_answered(METRICS_CALL_CLAIM);
    if (rc < 0) {
        forget_items(c);
        got->rc = rc;
        return;
    }
    c->n = n;
    c->max = n; /* the slots not filled are free again */
    got->claimed = 1;
    got->state = st;
    int lrc = robotsgate_prefetch_start(c->gate, c->fr, c->items, n, &c->looking);
    if (lrc < 0)
        got->rc = lrc;
    if (!c->looking)
        hand_out(c, got);
    else if (block)
        take_look(c, 1, got);
    pace(c, now, st, wait_ms, n, room);
}

/* The heartbeat's reply, if it is there (block: waited for). */
static void take_beat(claimer_t *c, int block, claim_got_t *got)
{
    if (!block && !frontier_call_ready(c->fr, c->beating))
        return;
    int rc = frontier_call_end(c->fr, c->beating);
    got->beat = 1;
    got->b = (frontier_beat_t){.crawl_exists = 1};
    got->beat_rc = rc == 0 ? frontier_heartbeat_found(c->beating, &got->b) : rc;
    frontier_call_free(c->beating);
    c->beating = NULL;
    metrics_redis_answered(METRICS_CALL_HEARTBEAT);
}

void claimer_turn(claimer_t *c, uint64_t now, const claim_room_t *room, int send, int claim,
                  claim_got_t *got)
{
    *got = (claim_got_t){0};
    if (c->beating)
        take_beat(c, 0, got);
    else if (c->looking)
        take_look(c, 0, got);
    else if (c->claiming)
        take_claim(c, now, 0, got);
    if (!send || got->rc || claimer_busy(c) || got->items)
        return; /* (URLs handed out: the caller's room changes once it admits them) */
    if (now >= c->next_beat_ms) { /* leases are renewed while stopping too */
        frontier_worker_stats_t ws = claimer_record(c, now, room);
        got->rc = frontier_heartbeat_start(c->fr, &ws, &c->beating);
        metrics_redis_sent(METRICS_CALL_HEARTBEAT);
    } else if (claim) {
        got->rc = send_claim(c, now, room);
    }
}

void claimer_abandon_claim(claimer_t *c)
{
    if (!c->claiming)
        return;
    frontier_call_free(c->claiming);
    c->claiming = NULL;
    forget_items(c);
    metrics_redis_answered(METRICS_CALL_CLAIM);
}

size_t claimer_hand_back(claimer_t *c)
{
    claim_got_t got = {0};
    if (c->beating)
        take_beat(c, 1, &got);
    if (c->claiming)
        take_claim(c, 0, 1, &got);
    else if (c->looking) /* the look's answer does not matter any more */
        take_look(c, 1, &got);
    size_t n = got.n;
    size_t back = n && frontier_release(c->fr, got.items, n) == 0 ? n : 0;
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&got.items[i]);
    free(got.items);
    return back; /* not handed back: the lease expires, or the reconcile takes them */
}
