/*
 * sidecalls.c -- a worker thread's side calls (sidecalls.h).
 *
 * DESIGN: the calls wait in a FIFO (q[head..n)) in the order their parts
 * made them; each went out when it was made (frontier_*_start), pipelined
 * on the thread's link with everything else.  A turn takes the answers
 * from the head on, while the head is answered (frontier_call_ready never
 * waits), and gives each to the part that made it: robotsgate_stored (a
 * store refused: the fetch lock dropped), finisher_retried (the retry done
 * or lost: its outcomes are reported in order), the scope's seed hosts.
 * The slots of addresses the transfers ask for and give back (per-IP
 * politeness: fetch_ip_batch, one batch in flight at a time) go the same
 * way, their answers back to fetch (fetch_ip_answered).
 * The gate's poll of the origins other workers fetch (robotsgate_poll_start,
 * every ROBOTSGATE_POLL_MS while there are some) is one call of its own,
 * taken the same way.  A lost link: the stores, retries and the seed-host
 * read may run twice (a store is a SET and a DEL, a retry run twice finds
 * its lease gone, SMEMBERS reads), so the link keeps them and they answer
 * after the reconnect; the retries stay held in the finisher meanwhile, so
 * the reconcile leaves their leases alone.  The poll (a look: it takes
 * locks) fails with the link; its origins stay another worker's, polled
 * again.
 * Redis keys: none directly (robots_store.lua, retry.lua, P seedhosts,
 * robots_look.lua through the frontier).
 */
#include "sidecalls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum side_kind { SIDE_STORE, SIDE_RETRY, SIDE_SEED_HOSTS, SIDE_IPGATE } side_kind_t;

typedef struct side_call {
    frontier_call_t *c;
    side_kind_t kind;
    char *origin; /* SIDE_STORE: its origin (robotsgate_stored) */
} side_call_t;

struct sidecalls {
    frontier_t *fr;
    robotsgate_t *gate;
    finisher_t *fin;
    scope_t *scope;
    fetch_t *fetch;
    side_call_t *q; /* the calls, FIFO from head */
    size_t head, n, cap;
    robotsgate_look_t *polling; /* the gate's poll in flight */
    int seed_hosts;             /* a seed-host refresh is in flight */
    uint64_t next_refresh_ms;
};

sidecalls_t *sidecalls_new(frontier_t *fr, robotsgate_t *gate, finisher_t *fin, scope_t *scope,
                           fetch_t *fetch)
{
    sidecalls_t *s = calloc(1, sizeof *s);
    if (s)
        *s = (sidecalls_t){.fr = fr, .gate = gate, .fin = fin, .scope = scope, .fetch = fetch};
    return s;
}

static void call_free(side_call_t *sc)
{
    frontier_call_free(sc->c);
    free(sc->origin);
}

void sidecalls_free(sidecalls_t *s)
{
    if (!s)
        return;
    robotsgate_poll_drop(s->polling);
    for (size_t i = s->head; i < s->n; i++)
        call_free(&s->q[i]);
    free(s->q);
    free(s);
}

size_t sidecalls_busy(const sidecalls_t *s)
{
    return s->n - s->head + (s->polling != NULL);
}

/* Room for one more call: 0, or CRAWL_ENOMEM. */
static int reserve(sidecalls_t *s)
{
    if (s->head == s->n)
        s->head = s->n = 0;
    if (s->n == s->cap && s->head) { /* the calls done make room */
        s->n -= s->head;
        memmove(s->q, s->q + s->head, s->n * sizeof *s->q);
        s->head = 0;
    }
    if (s->n < s->cap)
        return 0;
    size_t cap = s->cap ? s->cap * 2 : 16;
    side_call_t *q = realloc(s->q, cap * sizeof *q);
    if (!q)
        return CRAWL_ENOMEM;
    s->q = q;
    s->cap = cap;
    return 0;
}

/* The calls the parts made since the last turn, in their order; the
 * seed-host refresh when due (now; 0: never).  0, or a part's failure. */
static int collect(sidecalls_t *s, uint64_t now)
{
    side_call_t sc = {0};
    int rc;
    while ((rc = reserve(s)) == 0 && robotsgate_next_store(s->gate, &sc.c, &sc.origin) == 1)
        s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_STORE, .origin = sc.origin};
    while (rc == 0 && (rc = reserve(s)) == 0 && (rc = finisher_next_retry(s->fin, &sc.c)) == 1) {
        s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_RETRY};
        rc = 0;
    }
    if (rc < 0) /* out of memory: the call waits in its part */
        return 0;
    size_t n;
    uint32_t per, gap, hold;
    frontier_ipslot_t *slots;
    if (s->fetch && reserve(s) == 0 &&
        (slots = fetch_ip_batch(s->fetch, &n, &per, &gap, &hold)) != NULL) {
        if (frontier_ipgate_start(s->fr, slots, n, per, gap, hold, &sc.c) == 0)
            s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_IPGATE};
        else /* (out of memory) its asks ask again later */
            fetch_ip_answered(s->fetch, CRAWL_ENOMEM);
    }
    if (now && now >= s->next_refresh_ms && !s->seed_hosts && reserve(s) == 0 &&
        frontier_seed_hosts_start(s->fr, &sc.c) == 0) {
        s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_SEED_HOSTS};
        s->seed_hosts = 1;
        s->next_refresh_ms = now + SIDECALLS_SEED_REFRESH_MS;
    }
    return 0;
}

/* The outcome of answered call sc, given to the part that made it;
 * returns what the part says. */
static int end_call(sidecalls_t *s, side_call_t *sc)
{
    int rc = frontier_call_result(sc->c);
    char **hosts = NULL;
    size_t n = 0;
    switch (sc->kind) {
    case SIDE_STORE:
        return robotsgate_stored(s->gate, sc->origin, rc);
    case SIDE_RETRY:
        if ((rc = finisher_retried(s->fin, rc)) < 0 && rc != CRAWL_EREDIS)
            fprintf(stderr, "crawler: a retry failed: %s%s%s\n", crawl_strerror(rc),
                    *frontier_last_error(s->fr) ? ": " : "", frontier_last_error(s->fr));
        return rc;
    case SIDE_SEED_HOSTS:
        s->seed_hosts = 0;
        if (rc == 0 && (rc = frontier_seed_hosts_found(sc->c, &hosts, &n)) == 0)
            scope_set_seed_hosts(s->scope, (const char *const *)hosts, n);
        for (size_t i = 0; i < n; i++)
            free(hosts[i]);
        free(hosts);
        return rc == CRAWL_EREDIS ? rc : 0; /* else the next one in 5 s */
    case SIDE_IPGATE:
        fetch_ip_answered(s->fetch, rc); /* (a failure: the asks ask again) */
        return rc == CRAWL_EREDIS ? rc : 0;
    }
    return 0;
}

/* The answers from the head on (block: waited for); the first failure. */
static int take(sidecalls_t *s, int block)
{
    int first = 0;
    while (s->head < s->n) {
        side_call_t *sc = &s->q[s->head];
        int rc = block ? frontier_call_end(s->fr, sc->c) : !frontier_call_ready(s->fr, sc->c);
        if (block && rc == CRAWL_EREDIS && frontier_call_result(sc->c) == CRAWL_EINVAL)
            return first ? first : rc; /* kept on the link, which is down */
        if (!block && rc)
            return first; /* not answered yet: the ones after it wait */
        rc = end_call(s, sc);
        if (rc < 0 && !first)
            first = rc;
        call_free(sc);
        s->head++;
    }
    return first;
}

/* The poll's answer, if it is there: its origins settled (their URLs to
 * the gate's ready queue), or still another worker's. */
static int take_poll(sidecalls_t *s)
{
    if (!robotsgate_prefetch_ready(s->polling))
        return 0;
    robotsgate_look_t *lk = s->polling;
    s->polling = NULL;
    return robotsgate_prefetch_end(s->gate, lk);
}

int sidecalls_turn(sidecalls_t *s, uint64_t now, int send)
{
    int rc = s->polling ? take_poll(s) : 0;
    int trc = take(s, 0);
    int crc = collect(s, send ? now : 0);
    if (!rc)
        rc = trc ? trc : crc;
    if (send && !s->polling && rc == 0)
        rc = robotsgate_poll_start(s->gate, s->fr, &s->polling);
    return rc;
}

int sidecalls_flush(sidecalls_t *s)
{
    robotsgate_poll_drop(s->polling); /* its answer does not matter any more */
    s->polling = NULL;
    int rc;
    do { /* (the slots of addresses given back go too: one batch at a time) */
        collect(s, 0);
        rc = take(s, 1);
    } while (rc == 0 && s->fetch && fetch_ip_unsent(s->fetch));
    return rc;
}
