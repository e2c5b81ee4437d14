/*
 * robotsgate_look.c -- the robots.txt looks a caller sends without waiting
 * (robotsgate.h: robotsgate_prefetch_start and the rest): the look of a
 * claim's new origins, and the poll of the origins other workers fetch.
 *
 * DESIGN: a look in flight (robotsgate_look_t) holds the pending entries it
 * asks about and their frontier_robots_look_t's, sent on the caller's
 * handle (frontier_robots_look_start); its answers settle the entries, as
 * a look that waited does (rg_apply_look, robotsgate.c).  A poll asks about
 * the remote entries (another worker holds their fetch lock); dropped with
 * its connection, it leaves them remote, polled again.  A pending entry
 * is never evicted, so the entries stay valid while the look is in flight.
 * Redis keys: those of frontier_robots_look (robots_look.lua).
 */
#include <stdlib.h>

#include "clock.h"
#include "parser.h"
#include "robotsgate_internal.h"

/* A look in flight (robotsgate_prefetch_start): the pending entries es[]
 * and their looks l[], n of each, sent on fr. */
struct robotsgate_look {
    frontier_t *fr;
    frontier_call_t *call;
    size_t n;
    rentry_t **es;
    frontier_robots_look_t *l;
};

static void look_free(robotsgate_look_t *lk)
{
    free(lk->es);
    free(lk->l);
    free(lk);
}

/* What the look found (err: its outcome), applied to its entries; frees lk.
 * CRAWL_EREDIS, or 0 (an origin's own failure: we fetch it). */
static int look_done(robotsgate_t *g, robotsgate_look_t *lk, int err)
{
    int rc = err == CRAWL_EREDIS ? err : 0;
    for (size_t i = 0; i < lk->n; i++)
        rg_apply_look(g, lk->es[i], &lk->l[i], &rc);
    look_free(lk);
    int arc = rg_adopt_waiting(g);
    return rc < 0 ? rc : arc;
}

int robotsgate_prefetch_start(robotsgate_t *g, frontier_t *fr, const frontier_item_t *items,
                              size_t n, robotsgate_look_t **out)
{
    char origin[4096];
    *out = NULL;
    if (g->cfg->ignore_robots || n == 0)
        return 0;
    robotsgate_look_t *lk = calloc(1, sizeof *lk);
    if (!lk || !(lk->es = calloc(n, sizeof *lk->es)) || !(lk->l = calloc(n, sizeof *lk->l))) {
        if (lk)
            look_free(lk);
        return 0; /* out of memory: robotsgate_check looks them up one by one */
    }
    lk->fr = fr;
    for (size_t i = 0; i < n; i++) {
        rentry_t *e;
        if (!items[i].url || parser_url_origin(items[i].url, origin, sizeof origin) < 0 ||
            rg_known(g, origin) || !(e = rg_add_entry(g, origin)))
            continue;
        lk->l[lk->n].origin = e->origin;
        lk->es[lk->n++] = e;
    }
    if (lk->n == 0) {
        look_free(lk);
        return 0;
    }
    int rc = frontier_robots_look_start(fr, lk->l, lk->n, rg_lock_ms(g), &lk->call);
    if (rc < 0) { /* nothing sent: as a failed look, we fetch them */
        for (size_t i = 0; i < lk->n; i++)
            lk->l[i] = (frontier_robots_look_t){
                .origin = lk->es[i]->origin, .found = FRONTIER_ROBOTS_HELD, .err = rc};
        return look_done(g, lk, rc);
    }
    *out = lk;
    return 0;
}

int robotsgate_prefetch_ready(robotsgate_look_t *lk)
{
    return frontier_call_ready(lk->fr, lk->call);
}

int robotsgate_prefetch_end(robotsgate_t *g, robotsgate_look_t *lk)
{
    int err = frontier_call_end(lk->fr, lk->call); /* (failed: every origin HELD, its err) */
    frontier_call_free(lk->call);
    return look_done(g, lk, err);
}

void robotsgate_prefetch_drop(robotsgate_t *g, robotsgate_look_t *lk)
{
    if (!lk)
        return;
    frontier_call_free(lk->call);
    for (size_t i = 0; i < lk->n; i++) {
        free(lk->l[i].val);
        lk->l[i] = (frontier_robots_look_t){
            .origin = lk->es[i]->origin, .found = FRONTIER_ROBOTS_HELD, .err = CRAWL_EREDIS};
    }
    look_done(g, lk, 0); /* nothing known: as after a failed look, we fetch them */
}

int robotsgate_prefetch(robotsgate_t *g, const frontier_item_t *items, size_t n)
{
    robotsgate_look_t *lk = NULL;
    int rc = robotsgate_prefetch_start(g, g->fr, items, n, &lk);
    return lk ? robotsgate_prefetch_end(g, lk) : rc;
}

/* ---- the poll of the origins other workers fetch, in halves -------------------- */

void robotsgate_defer_polls(robotsgate_t *g)
{
    g->defer_polls = 1;
}

int robotsgate_poll_start(robotsgate_t *g, frontier_t *fr, robotsgate_look_t **out)
{
    *out = NULL;
    robotsgate_release_held(g);
    uint64_t now = clock_now_ms();
    if (!g->nremote || now < g->next_remote_poll_ms)
        return 0;
    g->next_remote_poll_ms = now + ROBOTSGATE_POLL_MS;
    robotsgate_look_t *lk = calloc(1, sizeof *lk);
    if (!lk || !(lk->es = calloc(g->nremote, sizeof *lk->es)) ||
        !(lk->l = calloc(g->nremote, sizeof *lk->l))) {
        if (lk)
            look_free(lk);
        return 0; /* out of memory: next time */
    }
    lk->fr = fr;
    for (rentry_t *e = rg_at(g, g->pending.head); e && lk->n < g->nremote;
         e = rg_at(g, e->link[L_USE].next))
        if (e->remote) {
            lk->l[lk->n].origin = e->origin;
            lk->es[lk->n++] = e;
        }
    int rc = lk->n ? frontier_robots_look_start(fr, lk->l, lk->n, rg_lock_ms(g), &lk->call) : 0;
    if (rc < 0 || !lk->call) { /* nothing sent: they stay remote, polled again */
        look_free(lk);
        return rc == CRAWL_EREDIS ? rc : 0;
    }
    *out = lk;
    return 0;
}

void robotsgate_poll_drop(robotsgate_look_t *lk)
{
    if (!lk)
        return;
    frontier_call_free(lk->call);
    for (size_t i = 0; i < lk->n; i++) /* (an answer taken already: its values) */
        free(lk->l[i].val);
    look_free(lk);
}
