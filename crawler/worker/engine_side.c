/*
 * engine_side.c -- a worker thread's side calls, sent without waiting for
 * Redis (engine_internal.h): the robots.txt stores its gate hands out, the
 * retries its finisher hands out, the seed-host refresh.
 *
 * DESIGN: the side calls go over a Redis connection and frontier handle of
 * their own (engine_side_t: rc, fr), opened under the worker id of the
 * thread's main handle, like the claims' (engine_claim.c), so that the
 * retries work on the leases the claims took.  The calls wait in a FIFO
 * (q[head..n)), in the order their parts made them; the first one is sent
 * (one call in flight: `sent`) and its reply taken in a later turn of the
 * loop, once it is all there (frontier_call_ready never waits; the loop's
 * epoll_wait watches the connection, engine_side_fd).  Its outcome goes
 * back to the part that made it: robotsgate_stored (a store refused: the
 * fetch lock dropped), finisher_retried (the retry done or lost), the
 * scope's seed hosts; then the next call is sent.  When none is queued,
 * the connection carries the gate's poll of the origins other workers
 * fetch (robotsgate_poll_start, every ROBOTSGATE_POLL_MS while there are
 * some), taken the same way; dropped with a lost connection, its origins
 * are polled again.
 * Lost Redis (a transient outcome, crawl_transient, or engine_go_down): the
 * calls stay queued, the one in flight too, and go out again on the next
 * connection (engine_side_open, from the reconnect): every kind may run
 * twice (a store is idempotent, a retry run twice finds its lease gone,
 * CRAWL_ELEASE, SMEMBERS reads); the retries stay held in the finisher
 * meanwhile, so the reconcile leaves their leases alone.  Nothing the calls
 * carry is lost: a store carries no lease (and its fetch lock lapses by
 * itself), a retry's page stays in the finisher until its outcome.
 * The thread's end waits for them all (engine_side_flush).
 * Redis keys: none directly (frontier_robots_store_end, frontier_retry_end,
 * frontier_seed_hosts_end, the gate's robots.txt look).
 */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine_internal.h"

typedef enum side_kind { SIDE_STORE, SIDE_RETRY, SIDE_SEED_HOSTS } side_kind_t;

typedef struct side_call {
    frontier_call_t *c;
    side_kind_t kind;
    char *origin; /* SIDE_STORE: its origin (robotsgate_stored) */
} side_call_t;

struct engine_side {
    redisContext *rc;
    frontier_t *fr;
    side_call_t *q; /* the calls, FIFO from head */
    size_t head, n, cap;
    int sent;                   /* q[head] is sent, its reply awaited ... */
    robotsgate_look_t *polling; /* ... or (none queued) this robots.txt poll */
    int seed_hosts;             /* a seed-host refresh is queued */
};

static void call_free(side_call_t *sc)
{
    frontier_call_drop(sc->c);
    free(sc->origin);
}

int engine_side_open(worker_t *w, char *err, size_t errlen)
{
    if (!w->side && !(w->side = calloc(1, sizeof *w->side))) {
        snprintf(err, errlen, "out of memory");
        return CRAWL_ENOMEM;
    }
    redisContext *rc;
    frontier_t *fr; /* the thread's worker id: the retries are of its leases */
    if (engine_open_joined(w, &rc, &fr, err, errlen) < 0)
        return CRAWL_EREDIS;
    engine_side_t *s = w->side;
    frontier_close(s->fr);
    if (s->rc)
        redisFree(s->rc);
    s->rc = rc;
    s->fr = fr;
    s->sent = 0; /* the call in flight, if any, goes out again on this one */
    robotsgate_poll_drop(s->polling);
    s->polling = NULL;
    return 0;
}

void engine_side_close(worker_t *w)
{
    engine_side_t *s = w->side;
    if (!s)
        return;
    robotsgate_poll_drop(s->polling);
    for (size_t i = s->head; i < s->n; i++)
        call_free(&s->q[i]);
    free(s->q);
    frontier_close(s->fr);
    if (s->rc)
        redisFree(s->rc);
    free(s);
    w->side = NULL;
}

void engine_side_lost(worker_t *w)
{
    engine_side_t *s = w->side;
    if (!s)
        return;
    s->sent = 0;
    robotsgate_poll_drop(s->polling); /* its origins: polled again after the reconnect */
    s->polling = NULL;
}

int engine_side_fd(const worker_t *w)
{
    const engine_side_t *s = w->side;
    return s && (s->sent || s->polling) ? frontier_fd(s->fr) : -1;
}

size_t engine_side_busy(const worker_t *w)
{
    return w->side ? w->side->n - w->side->head : 0;
}

/* Room for one more call: 0, or CRAWL_ENOMEM. */
static int reserve(engine_side_t *s)
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

/* The calls the parts made since the last turn, queued in their order; the
 * seed-host refresh when due (now; 0: never). */
static void collect(worker_t *w, uint64_t now)
{
    engine_side_t *s = w->side;
    side_call_t sc;
    while (reserve(s) == 0 && robotsgate_next_store(w->gate, &sc.c, &sc.origin) == 1) {
        sc.kind = SIDE_STORE;
        s->q[s->n++] = sc;
    }
    int rc = 0;
    while ((rc = reserve(s)) == 0 && (rc = finisher_next_retry(w->fin, &sc.c)) == 1)
        s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_RETRY};
    if (rc < 0) /* out of memory: the retry waits in the finisher */
        return;
    if (now && now >= w->next_seed_refresh_ms && !s->seed_hosts && reserve(s) == 0 &&
        frontier_seed_hosts_call(s->fr, &sc.c) == 0) {
        s->q[s->n++] = (side_call_t){.c = sc.c, .kind = SIDE_SEED_HOSTS};
        s->seed_hosts = 1;
        w->next_seed_refresh_ms = now + ENGINE_SEED_REFRESH_MS;
    }
}

/* The outcome of call sc, read (its reply all there, or waited for) and,
 * unless it is transient (the call is then sent again), given to the part
 * that made it; returns it. */
static int end_call(worker_t *w, side_call_t *sc)
{
    engine_side_t *s = w->side;
    int rc = CRAWL_EINVAL;
    char **hosts = NULL;
    size_t n = 0;
    switch (sc->kind) {
    case SIDE_STORE:
        rc = frontier_robots_store_end(s->fr, sc->c);
        if (!crawl_transient(rc))
            engine_note(w, robotsgate_stored(w->gate, sc->origin, rc));
        break;
    case SIDE_RETRY:
        rc = frontier_retry_end(s->fr, sc->c);
        if (crawl_transient(rc))
            break;
        if ((rc = finisher_retried(w->fin, rc)) < 0)
            fprintf(stderr, "crawler: worker %d: a retry failed: %s%s%s\n", w->idx,
                    crawl_strerror(rc), *frontier_last_error(s->fr) ? ": " : "",
                    frontier_last_error(s->fr));
        engine_note(w, rc);
        break;
    case SIDE_SEED_HOSTS:
        rc = frontier_seed_hosts_end(s->fr, sc->c, &hosts, &n);
        if (rc == 0)
            scope_set_seed_hosts(w->scope, (const char *const *)hosts, n);
        for (size_t i = 0; i < n; i++)
            free(hosts[i]);
        free(hosts);
        s->seed_hosts = crawl_transient(rc); /* else the next one in 5 s */
        break;
    }
    return rc;
}

/* The reply of the call in flight, if it is all there (block: waited
 * for): its outcome handed on and the call freed, or (transient) kept to go
 * out again after the reconnect.  Returns its outcome (0: not there yet). */
static int take(worker_t *w, int block)
{
    engine_side_t *s = w->side;
    side_call_t *sc = &s->q[s->head];
    int ready = block ? 1 : frontier_call_ready(s->fr, sc->c);
    if (ready == 0)
        return 0;
    int rc = ready < 0 ? ready : end_call(w, sc);
    s->sent = 0;
    if (crawl_transient(rc)) {
        engine_note(w, rc); /* the thread goes offline; the call stays first */
        return rc;
    }
    call_free(sc);
    s->head++;
    return rc;
}

/* Sends the first call queued: 0, or the failure (transient: kept). */
static int send_first(worker_t *w)
{
    engine_side_t *s = w->side;
    int rc = frontier_call_send(s->fr, s->q[s->head].c);
    if (rc == 0)
        s->sent = 1;
    else
        engine_note(w, rc); /* CRAWL_EREDIS: offline, the call kept */
    return rc;
}

/* The poll's reply, if it is all there: its origins settled (their URLs
 * to the gate's ready queue), or still another worker's. */
static void take_poll(worker_t *w)
{
    engine_side_t *s = w->side;
    int ready = robotsgate_prefetch_ready(s->polling);
    if (ready == 0)
        return;
    robotsgate_look_t *lk = s->polling;
    s->polling = NULL;
    if (ready < 0) {
        robotsgate_poll_drop(lk);
        engine_note(w, ready); /* the thread goes offline */
    } else {
        engine_note(w, robotsgate_prefetch_end(w->gate, lk));
    }
}

void engine_side_turn(worker_t *w, uint64_t now)
{
    engine_side_t *s = w->side;
    if (!s || w->down || w->err)
        return;
    if (s->polling)
        take_poll(w);
    else if (s->sent && take(w, 0) < 0 && (w->down || w->err))
        return;
    if (w->down || w->err)
        return;
    collect(w, now);
    if (s->sent || s->polling)
        return;
    if (s->head < s->n)
        send_first(w);
    else /* the connection is free: the poll, when one is due */
        engine_note(w, robotsgate_poll_start(w->gate, s->fr, &s->polling));
}

void engine_side_flush(worker_t *w)
{
    engine_side_t *s = w->side;
    if (!s || w->down)
        return;
    robotsgate_poll_drop(s->polling); /* its answer does not matter any more */
    s->polling = NULL;
    for (;;) { /* each turn ends one call, or returns */
        if (s->sent && crawl_transient(take(w, 1)))
            return; /* the calls left: their retries' leases expire */
        collect(w, 0);
        if (s->head == s->n || send_first(w) < 0)
            return;
    }
}
