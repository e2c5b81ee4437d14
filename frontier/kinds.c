/*
 * kinds.c -- a call of any kind (frontier.h: frontier_call_ready, _end,
 * _result, _free), and the blocking form of each kind: its call started
 * and waited for.
 *
 * DESIGN: a call's kind says which file steps it (claim.c, heartbeat.c,
 * finish.c, retry.c, robots.c, hostinfo.c: fr_<kind>_step); this file
 * dispatches on it.  A step that finds its commands kept on the link for
 * the next connect (commands that may run twice, the link down) is "not
 * yet": frontier_call_end then answers CRAWL_EREDIS and leaves the call
 * as it is, to be ended after a reconnect.  Redis keys: none of its own.
 */
#include "frontier_internal.h"

#include <stdlib.h>

static int step(frontier_t *f, frontier_call_t *c, int wait)
{
    switch (c->kind) {
    case FR_CALL_CLAIM:
        return fr_claim_step(f, c, wait);
    case FR_CALL_HEARTBEAT:
        return fr_heartbeat_step(f, c, wait);
    case FR_CALL_FINISH:
        return fr_finish_step(f, c, wait);
    case FR_CALL_RETRY:
    case FR_CALL_RELEASE:
        return fr_lease_step(f, c, wait);
    case FR_CALL_LOOK:
        return fr_look_step(f, c, wait);
    case FR_CALL_STORE:
        return fr_store_step(f, c, wait);
    case FR_CALL_SEED_HOSTS:
        return fr_seed_hosts_step(f, c, wait);
    case FR_CALL_DEDUP:
        return fr_dedup_step(f, c, wait);
    case FR_CALL_IPGATE:
        return fr_ipgate_step(f, c, wait);
    }
    return fr_call_finish(c, CRAWL_EINVAL);
}

int frontier_call_ready(frontier_t *f, frontier_call_t *c)
{
    if (!f || !c)
        return 1;
    return c->done || step(f, c, 0) == 1;
}

int frontier_call_end(frontier_t *f, frontier_call_t *c)
{
    if (!f || !c)
        return CRAWL_EINVAL;
    if (!c->done && step(f, c, 1) != 1)
        return CRAWL_EREDIS; /* (a step that waits ends its call, unless the link kept it) */
    return c->rc;
}

int frontier_call_result(const frontier_call_t *c)
{
    return c && c->done ? c->rc : CRAWL_EINVAL;
}

const char *frontier_call_kind(const frontier_call_t *c)
{
    static const char *const names[] = {
        [FR_CALL_CLAIM] = "claim",
        [FR_CALL_HEARTBEAT] = "heartbeat",
        [FR_CALL_FINISH] = "finish",
        [FR_CALL_RETRY] = "retry",
        [FR_CALL_RELEASE] = "release",
        [FR_CALL_LOOK] = "robots.txt look",
        [FR_CALL_STORE] = "robots.txt store",
        [FR_CALL_SEED_HOSTS] = "seed hosts",
        [FR_CALL_DEDUP] = "dedup",
        [FR_CALL_IPGATE] = "ipgate",
    };
    return c ? names[c->kind] : "";
}

void frontier_call_free(frontier_call_t *c)
{
    if (!c)
        return;
    switch (c->kind) {
    case FR_CALL_CLAIM:
        fr_claim_free(c->st);
        break;
    case FR_CALL_FINISH:
        fr_finish_free(c->st);
        break;
    case FR_CALL_LOOK:
        fr_look_free(c->st);
        break;
    case FR_CALL_SEED_HOSTS:
        fr_seed_hosts_free(c->st);
        break;
    case FR_CALL_DEDUP:
        fr_dedup_free(c->st);
        break;
    case FR_CALL_IPGATE:
        fr_ipgate_free(c->st);
        break;
    default: /* heartbeat: a plain struct; the others: none */
        free(c->st);
        break;
    }
    fr_call_drop(c);
}

/* ---- the blocking forms -------------------------------------------------------- */

/* A started call (rc: its _start's outcome) waited for, then freed. */
static int run(frontier_t *f, int rc, frontier_call_t *c)
{
    if (rc == 0)
        rc = frontier_call_end(f, c);
    frontier_call_free(c);
    return rc;
}

int frontier_claim(frontier_t *f, size_t max, frontier_item_t *items, size_t *n,
                   frontier_state_t *state, uint32_t *wait_ms)
{
    if (!f || !items || !n || !state || max == 0)
        return CRAWL_EINVAL;
    *n = 0;
    frontier_call_t *c = NULL;
    int rc = frontier_claim_start(f, max, &c);
    /* On ENOMEM the URLs stay leased to us and come back when this worker's
     * lease expires (it stops claiming: the caller is out of memory). */
    if (rc == 0 && (rc = frontier_call_end(f, c)) == 0)
        rc = frontier_claim_found(f, c, items, n, state, wait_ms);
    frontier_call_free(c);
    return rc;
}

int frontier_heartbeat(frontier_t *f, const frontier_worker_stats_t *ws, size_t *reclaimed)
{
    frontier_call_t *c = NULL;
    frontier_beat_t b;
    int rc = f ? frontier_heartbeat_start(f, ws, &c) : CRAWL_EINVAL;
    if (rc == 0 && (rc = frontier_call_end(f, c)) == 0)
        rc = frontier_heartbeat_found(c, &b);
    if (rc == 0 && reclaimed)
        *reclaimed = b.reclaimed;
    frontier_call_free(c);
    return rc;
}

int frontier_finish(frontier_t *f, const frontier_done_t *pages, size_t n)
{
    if (!f || (!pages && n))
        return CRAWL_EINVAL;
    if (n == 0)
        return 0;
    frontier_call_t *c = NULL;
    int rc = frontier_finish_start(f, pages, n, &c);
    return run(f, rc, c);
}

int frontier_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                   uint32_t retry_after_ms)
{
    frontier_call_t *c = NULL;
    int rc = frontier_retry_start(f, item, o, retry_after_ms, &c);
    return run(f, rc, c);
}

int frontier_release(frontier_t *f, const frontier_item_t *items, size_t n)
{
    frontier_call_t *c = NULL;
    if (f && n == 0)
        return 0;
    int rc = frontier_release_start(f, items, n, &c);
    return run(f, rc, c);
}

int frontier_robots_look(frontier_t *f, frontier_robots_look_t *looks, size_t n, uint32_t lock_ms)
{
    frontier_call_t *c = NULL;
    int rc = frontier_robots_look_start(f, looks, n, lock_ms, &c);
    if (rc < 0)
        return rc == CRAWL_EINVAL ? rc : fr_look_result(looks, n, rc);
    return run(f, 0, c);
}

int frontier_robots_store(frontier_t *f, const frontier_robots_result_t *r)
{
    frontier_call_t *c = NULL;
    int rc = frontier_robots_store_start(f, r, &c);
    return run(f, rc, c);
}

int frontier_seed_hosts(frontier_t *f, char ***hosts, size_t *n)
{
    if (hosts)
        *hosts = NULL;
    if (n)
        *n = 0;
    if (!f || !hosts || !n)
        return CRAWL_EINVAL;
    frontier_call_t *c = NULL;
    int rc = frontier_seed_hosts_start(f, &c);
    if (rc == 0 && (rc = frontier_call_end(f, c)) == 0)
        rc = frontier_seed_hosts_found(c, hosts, n);
    frontier_call_free(c);
    return rc;
}
