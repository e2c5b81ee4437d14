/*
 * engine.c -- the fetcher threads: their loop, and the calling thread's
 * signals and progress line.
 *
 * DESIGN: each worker thread owns one Redis link (rconn.h: its connections,
 * the one owner of them) and one frontier handle on it (the worker id its
 * leases are under; the crawl's Bloom filters, with the process's shared
 * local cache), a scope, its share of --concurrency (worker.slots: its
 * transfers in flight at most) and the URLs it may hold at once
 * (worker.hold: transfers, URLs parked on robots.txt, and a reserve of
 * claimed URLs waiting in fetch for a transfer to end, so that a slot that
 * frees starts its next URL in the same wake-up; handed back at a stop).
 * Its parts, each with its own state, which only this file drives (they
 * never call one another back):
 *   fetch      the transfers (fetch/): curl multi handle in an epoll loop;
 *              finished ones come back as results;
 *   robotsgate the robots.txt rules: allow / deny / retry / wait for each
 *              claimed URL; asks for robots.txt fetches, gives parked URLs
 *              back when their rules are known;
 *   finisher   the finished pages: their records, then batched finish
 *              calls, and retries;
 *   claimer    claims and heartbeats (claimer.c), and sidecalls the stores,
 *              retries, seed-host refreshes and polls (sidecalls.c): users
 *              of the link that say what their calls got;
 *   lifeline   the link lost and got back, the crawl gone, the visited set
 *              full (lifeline.c: the reconnect policy, in one place).
 * Every call of every part is sent at once and pipelined on the link;
 * none waits for Redis in the loop.  The engine routes between them: a
 * claimed URL goes to the gate, then to fetch, the finisher (denied) or a
 * retry; a page result to the finisher or a retry; a robots.txt result to
 * the gate.  DNS answers and TLS sessions are shared between threads
 * through one CURLSH whose lock callbacks use engine.share_locks.
 * One loop turn:
 *   the link polled (what Redis answered taken in) -> the side calls' and
 *   the claimer's answers taken, the next heartbeat or claim sent -> the
 *   sockets that are ready served (fetch_wait: one epoll_wait over curl's
 *   sockets and the link's, then curl_multi_socket_action for each ready
 *   one) -> results routed -> when the previous finish batch has answered:
 *   the pages finished since go out as the next one.
 * Errors: the parts return them (engine_note); a lost link takes the
 * thread offline until it is back (lifeline.c: the transfers go on,
 * finished pages wait in the finisher, nothing is claimed), any other
 * error, or Redis away past --redis-retry-max, stops the thread
 * (worker.err) and engine_run() then fails.  A failed output (CRAWL_EWRITE)
 * sends nothing more: the thread hands its URLs back, the unrecorded pages
 * among them.  Shutdown: engine.stop 1 = stop claiming, finish what runs
 * (cfg->grace_ms); 2 = hand everything back to the frontier at once and
 * exit; `crawler drain` (engine_drain) is a first SIGTERM to every process
 * registered before it.  The counters in engine_t are written here only.
 * The thread that called engine_run() waits for signals (blocked in the
 * workers) and draws the progress line (on a connection of its own).
 */
#include "engine.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "claimer.h"
#include "clock.h"
#include "fetch.h"
#include "deduper.h"
#include "finisher.h"
#include "frontier.h"
#include "jsonl.h"
#include "lifeline.h"
#include "outputs.h"
#include "metrics.h"
#include "robotsgate.h"
#include "scope.h"
#include "sidecalls.h"

#define ENGINE_CONNECTS_PER_SLOT 4 /* connection cache: per slot of --concurrency ... */
#define ENGINE_MIN_CONNECTS 2048   /* ... at least this a thread (a broad crawl's hosts) */
#define ENGINE_FDS_PER_THREAD 16   /* Redis connections, epoll, resolver */
#define ENGINE_FDS_PROCESS 64      /* outputs, the progress line's Redis, stdio */
#define ENGINE_LINK_FDS 16         /* the link's sockets one wait watches at most */

typedef struct engine engine_t;

typedef struct worker {
    engine_t *e;
    int idx;
    uint32_t slots; /* its share of --concurrency: transfers in flight at most */
    uint32_t hold;  /* URLs it may hold at once: slots and a reserve (config_thread_held) */
    pthread_t thread;
    rconn_link_t *link; /* the thread's Redis connections: every part's calls */
    frontier_t *fr;
    scope_t *scope;
    fetch_t *fetch;
    robotsgate_t *gate;
    finisher_t *fin;
    deduper_t *dedup; /* --dedup, else NULL */
    claimer_t *claimer;
    sidecalls_t *side;
    lifeline_t life;
    frontier_state_t st; /* the frontier's, as the last claim found it */
    uint64_t pages;      /* finished by this worker, for its heartbeat */
    int err;             /* the first error (0: none): the thread stops */
    uint64_t rng;        /* seeds the lifeline's jitter */
} worker_t;

struct engine {
    const crawl_config_t *cfg;
    const rconn_t *redis;
    rconn_t *owner;          /* the same, for the calling thread's watch of its embedded server */
    unsigned redis_restarts; /* the embedded server started again (the calling thread's) */
    atomic_int redis_failed; /* ... and could not be: the crawl stops (CRAWL_EREDIS) */
    finisher_common_t *fin_common; /* the outputs */
    bloom_cache_t *seen_cache;     /* the local Bloom cache every thread's handle shares */
    frontier_wake_t *wake;         /* the shards that got work, for every handle's claims */
    CURLSH *share;
    tls_sessions_t *tls; /* TLS sessions, one per origin (NULL: libcurl's, in share) */
    size_t connects;     /* connections each thread's cache keeps (running and idle) */
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    struct out *out;         /* borrowed, may be NULL: the events of Redis lost and back */
    struct metrics *metrics; /* borrowed, may be NULL (no --metrics): the threads' slots */
    atomic_int stop;
    atomic_int running;
    atomic_int redis_down; /* worker threads without Redis now */
    atomic_uint_fast64_t pages, bytes, errors, retried, released;
    worker_t *workers;
    atomic_int full;   /* the visited set reached its capacity: the crawl stops (CRAWL_EFULL) */
    atomic_int paused; /* the last claim found the crawl paused (`crawler pause`): said once */
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h;
    (void)access;
    engine_t *e = ud;
    pthread_mutex_lock(&e->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    engine_t *e = ud;
    pthread_mutex_unlock(&e->share_locks[data]);
}

static int down(const worker_t *w)
{
    return w->life.state != LIFELINE_UP;
}

/* The outcome of a part's call: a transient failure (the link lost, or
 * Redis at its maxmemory) takes the thread offline (lifeline: if
 * --redis-retry-max allows); any other error stops it. */
static void engine_note(worker_t *w, int rc)
{
    if (rc >= 0 || w->err)
        return;
    if (rc == CRAWL_ENOTFOUND) /* a call refused: the crawl is gone from Redis */
        lifeline_gone(&w->life);
    if (!crawl_transient(rc)) {
        w->err = rc;
        return;
    }
    if (rconn_link_up(w->link)) /* (a part met it first: the link goes down with it) */
        rconn_link_drop(w->link, rc == CRAWL_ENOROOM ? "Redis is at its maxmemory (OOM)"
                                                     : crawl_strerror(rc));
    const char *why = rconn_link_error(w->link);
    if (lifeline_lost(&w->life, *why ? why : crawl_strerror(rc)) == LIFELINE_GAVE_UP)
        w->err = CRAWL_EREDIS;
}

static void engine_drain(worker_t *w)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&w->e->stop, &none, 1))
        fprintf(stderr, "\ncrawler: drained (crawler drain): finishing in-flight URLs, handing "
                        "back the rest\n");
}

/* Says on stderr, once per change and per process (not only on the progress
 * line, which a journal does not get), that the crawl is paused or resumed. */
static void note_paused(worker_t *w, int paused)
{
    if (atomic_exchange(&w->e->paused, paused) == paused)
        return;
    if (paused)
        fprintf(stderr,
                "\ncrawler: crawl '%s' is paused (crawler pause): claiming nothing, "
                "leases renewed; `crawler resume --crawl %s` lets it go on\n",
                w->e->cfg->crawl, w->e->cfg->crawl);
    else
        fprintf(stderr, "\ncrawler: crawl '%s' resumed\n", w->e->cfg->crawl);
}

static void engine_frontier_config(const engine_t *e, frontier_config_t *fc)
{
    const crawl_config_t *c = e->cfg;
    frontier_config_defaults(fc);
    fc->crawl = c->crawl;
    fc->per_host = c->per_host;
    fc->delay_ms = c->delay_ms;
    fc->max_delay_ms = c->max_delay_ms;
    fc->pace_pct = (uint32_t)(c->delay_factor * 100.0 + 0.5);
    fc->depth_window = c->depth_window;
    /* per-IP politeness: each host's address is shared through the crawl
     * for as long as a DNS answer is kept here */
    fc->host_ip_ms = c->per_ip || c->ip_delay_ms ? (uint32_t)FETCH_DNS_TTL_S * 1000u : 0;
    fc->lease_ms = c->lease_ms;
    fc->max_depth = c->max_depth;
    fc->max_pages = c->max_pages;
    fc->shards = c->shards;
    fc->wake = e->wake;
    fc->max_pages_per_host = c->max_pages_per_host;
    fc->max_pages_per_domain = c->max_pages_per_domain;
    fc->max_hosts_per_domain = c->max_hosts_per_domain;
    fc->pages_per_inlink = c->pages_per_inlink;
    fc->max_tries = c->max_tries;
    fc->backoff_ms = c->backoff_ms;
    /* the frontier joins the crawl's filter as created (by whoever seeded
     * first), else creates it; with the local cache every thread shares
     * (what one learnt answers for all) */
    fc->bloom_capacity = c->bloom_capacity;
    fc->bloom_fp_rate = c->bloom_fp_rate;
    fc->bloom_growth = c->bloom_growth;
    fc->bloom_shared_cache = e->seen_cache;
}

static int refresh_seed_hosts(worker_t *w)
{
    char **hosts = NULL;
    size_t n = 0;
    int rc = frontier_seed_hosts(w->fr, &hosts, &n);
    if (rc == 0)
        scope_set_seed_hosts(w->scope, (const char *const *)hosts, n);
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    return rc == CRAWL_EREDIS ? rc : 0;
}

static int worker_open(worker_t *w)
{
    engine_t *e = w->e;
    const crawl_config_t *c = e->cfg;
    char err[512];
    frontier_config_t fc;
    engine_frontier_config(e, &fc);
    lifeline_init(&w->life, w->idx, c, e->out, &e->redis_down, w->rng);
    if (!(w->link = rconn_link_new(e->redis))) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (!(w->fr = lifeline_open(&w->life, w->link, &fc, &e->stop, err, sizeof err)))
        goto fail;
    scope_config_t sc = config_scope(c);
    if (!(w->scope = scope_new(&sc, err, sizeof err)))
        goto fail;
    if (!(w->fetch =
              fetch_new(c, w->slots, e->connects, e->share, e->tls, w->scope,
                        finisher_common_records(e->fin_common) || c->dedup, err, sizeof err)))
        goto fail;
    if (!(w->gate = robotsgate_new(c, w->fr, w->scope)) ||
        !(w->fin = finisher_new(e->fin_common, c, w->fr)) ||
        (c->dedup && !(w->dedup = deduper_new(w->fr, w->fin))) ||
        !(w->claimer = claimer_new(c, w->fr, w->gate)) ||
        !(w->side = sidecalls_new(w->fr, w->gate, w->fin, w->scope, w->fetch))) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    robotsgate_defer_stores(w->gate); /* the side calls take their answers, the polls' */
    robotsgate_defer_polls(w->gate);  /* and the retries' */
    finisher_defer_retries(w->fin);
    engine_note(w, refresh_seed_hosts(w));
    return 0;
fail:
    fprintf(stderr, "crawler: worker %d: %s\n", w->idx, err);
    return CRAWL_EREDIS;
}

static void worker_close(worker_t *w)
{
    /* the parts' calls off the link first, then the handle (its bye), then the link */
    sidecalls_free(w->side);
    claimer_free(w->claimer);
    deduper_free(w->dedup);
    finisher_free(w->fin);
    robotsgate_free(w->gate);
    fetch_free(w->fetch);
    scope_free(w->scope);
    frontier_close(w->fr);
    rconn_link_free(w->link);
}

/* URLs this worker holds: transfers running or waiting their turn, URLs
 * parked on robots.txt and the claimer's. */
static size_t engine_held(const worker_t *w)
{
    return fetch_active(w->fetch) + robotsgate_parked(w->gate) + claimer_held(w->claimer);
}

/* ---- routing between the parts ---------------------------------------------- */

/* Pages the finisher completed: counted; their per-host slots are free, so
 * claim again now. */
static void finished(worker_t *w, int rc, size_t pages)
{
    if (pages) {
        w->pages += pages;
        atomic_fetch_add(&w->e->pages, pages);
        metrics_finished(pages);
        claimer_poke(w->claimer);
    }
    if (rc < 0 && rc != CRAWL_EREDIS && rc != CRAWL_EWRITE)
        fprintf(stderr, "crawler: worker %d: finishing pages failed: %s%s%s\n", w->idx,
                crawl_strerror(rc), *finisher_last_error(w->fin) ? ": " : "",
                finisher_last_error(w->fin));
    engine_note(w, rc);
}

/* A failed attempt worth another try (*p is taken over). */
static void retry(worker_t *w, page_t *p, uint32_t retry_after_ms)
{
    int dead = 0;
    atomic_fetch_add(&w->e->retried, 1);
    engine_note(w, finisher_retry(w->fin, p, retry_after_ms, &dead));
    metrics_retry(dead);
    if (dead) {
        atomic_fetch_add(&w->e->pages, 1);
        atomic_fetch_add(&w->e->errors, 1);
    }
}

/* Finishes a leased URL that was not fetched (*item taken). */
static void finish_unfetched(worker_t *w, frontier_item_t *item, const char *kind, const char *text)
{
    page_t p;
    page_init(&p, item, 0, kind, text);
    engine_note(w, finisher_add(w->fin, &p, NULL));
}

static void start_page(worker_t *w, frontier_item_t *item)
{
    int rc = fetch_start_page(w->fetch, item);
    if (rc < 0)
        finish_unfetched(w, item, crawl_kind_name(CRAWL_KIND_INTERNAL),
                         rc == CRAWL_ENOMEM ? "out of memory" : "cannot start the transfer");
}

/* Where the gate's verdict sends a leased URL: to a transfer, the finisher
 * or a retry (ROBOTSGATE_WAIT: the gate holds it already).  *item is left
 * zeroed. */
static void route(worker_t *w, frontier_item_t *item, robotsgate_verdict_t v)
{
    page_t p;
    robotsgate_cause_t cause;
    if (v != ROBOTSGATE_WAIT && frontier_blocked(w->fr, item->url)) { /* leased before a block */
        finish_unfetched(w, item, crawl_kind_name(CRAWL_KIND_OPERATOR_BLOCK),
                         "its host was blocked (crawler block)");
        return;
    }
    switch (v) {
    case ROBOTSGATE_ALLOW:
        start_page(w, item);
        break;
    case ROBOTSGATE_DENY:
        finish_unfetched(w, item, crawl_kind_name(CRAWL_KIND_ROBOTS), ROBOTSGATE_DENY_TEXT);
        atomic_fetch_add(&w->e->errors, 1);
        break;
    case ROBOTSGATE_RETRY: /* with the cause its robots.txt's fetch met (dns, 5xx, ...) */
        robotsgate_cause(w->gate, item->url, &cause);
        page_init(&p, item, (int)cause.status, cause.kind, cause.text);
        p.unfetched = 1; /* the URL's own backoff, not its host's */
        retry(w, &p, 0);
        break;
    case ROBOTSGATE_WAIT:
        break;
    }
}

/* What the gate has for us after a call: robots.txt fetches to start, and
 * parked URLs whose rules are known. */
static void drain_gate(worker_t *w)
{
    const char *origin;
    frontier_item_t item;
    robotsgate_verdict_t v;
    robotsgate_release_held(w->gate);
    for (;;) {
        if ((origin = robotsgate_next_fetch(w->gate))) {
            if (fetch_start_robots(w->fetch, origin) < 0)
                engine_note(w, robotsgate_unfetched(w->gate, origin));
        } else if (robotsgate_next_ready(w->gate, &item, &v)) {
            route(w, &item, v);
            frontier_item_clear(&item);
        } else {
            return;
        }
    }
}

static void admit(worker_t *w, frontier_item_t *item)
{
    robotsgate_verdict_t v;
    engine_note(w, robotsgate_check(w->gate, item, &v));
    route(w, item, v);
    drain_gate(w);
}

/* A claimed batch through the robots.txt gate to transfers; the items are
 * cleared (the array is the caller's). */
static void engine_admit(worker_t *w, frontier_item_t *items, size_t n)
{
    if (n)
        engine_note(w, robotsgate_prefetch(w->gate, items, n));
    for (size_t i = 0; i < n; i++) {
        admit(w, &items[i]);
        frontier_item_clear(&items[i]);
    }
}

static void on_result(worker_t *w, fetch_result_t *r)
{
    if (r->kind == FETCH_ROBOTS) {
        robotsgate_body_t b = {.origin = r->origin,
                               .moved_to = r->moved_to,
                               .status = r->status,
                               .complete = r->complete,
                               .blocked = r->blocked,
                               .tls_refused = r->tls_refused,
                               .error_kind = r->error_kind,
                               .error_text = r->error_text,
                               .body = r->body,
                               .len = r->body_len};
        engine_note(w, robotsgate_fetched(w->gate, &b));
        drain_gate(w);
        return;
    }
    atomic_fetch_add(&w->e->bytes, r->page.bytes);
    if (r->retry) {
        retry(w, &r->page, r->retry_after_ms);
        return;
    }
    if (r->page.error_kind)
        atomic_fetch_add(&w->e->errors, 1);
    if (w->dedup && deduper_wants(&r->page, r->exchange)) /* its records wait for the verdict */
        engine_note(w, deduper_add(w->dedup, &r->page, r->exchange));
    else
        engine_note(w, finisher_add(w->fin, &r->page, r->exchange));
}

/* ---- the loop --------------------------------------------------------------------- */

static void handle_completions(worker_t *w)
{
    fetch_result_t r;
    while (fetch_next(w->fetch, &r))
        on_result(w, &r);
}

/* Hands every URL this worker holds back to the frontier. */
static void release_all(worker_t *w)
{
    frontier_item_t item;
    while (fetch_cancel(w->fetch, &item)) {
        if (item.url && frontier_release(w->fr, &item, 1) == 0)
            atomic_fetch_add(&w->e->released, 1);
        frontier_item_clear(&item);
    }
    frontier_item_t *items;
    size_t n;
    while (robotsgate_take_parked(w->gate, &items, &n)) {
        if (frontier_release(w->fr, items, n) == 0)
            atomic_fetch_add(&w->e->released, n);
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&items[i]);
        free(items);
    }
}

/* A stop: the claimed URLs waiting for a transfer to end go back to the
 * frontier in one call, unfetched (nothing starts past a stop); a failed
 * call leaves them to the lease's expiry. */
static void hand_back_waiting(worker_t *w)
{
    size_t n = 0, cap = fetch_waiting(w->fetch);
    frontier_item_t *items = calloc(cap ? cap : 1, sizeof *items);
    if (!items)
        return; /* they start as transfers end, and are fetched */
    while (n < cap && fetch_unstart(w->fetch, &items[n]))
        n++;
    if (n && frontier_release(w->fr, items, n) == 0)
        atomic_fetch_add(&w->e->released, n);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    free(items);
}

static int should_exit(worker_t *w, frontier_state_t st, uint64_t stop_at)
{
    int stop = atomic_load(&w->e->stop);
    if (w->err || stop >= 2)
        return 1;
    if (down(w)) /* nothing can finish before Redis is back */
        return stop == 1 && clock_now_ms() >= stop_at;
    if (stop == 1)
        return engine_held(w) == 0 || clock_now_ms() >= stop_at;
    return st == FRONTIER_DONE && !claimer_busy(w->claimer) && !w->e->cfg->wait &&
           engine_held(w) == 0 && finisher_queued(w->fin) == 0 && !finisher_busy(w->fin) &&
           !(w->dedup && deduper_busy(w->dedup)) && sidecalls_busy(w->side) == 0;
}

static claim_room_t room_of(const worker_t *w)
{
    return (claim_room_t){.hold = w->hold,
                          .held = fetch_active(w->fetch) + robotsgate_parked(w->gate),
                          .active = fetch_in_flight(w->fetch),
                          .slots = w->slots,
                          .pages = w->pages};
}

/* What a heartbeat found: the crawl gone (the thread stops), the visited
 * set full (the crawl stops as after a first SIGINT; engine_run returns
 * CRAWL_EFULL), this worker to drain. */
static void beat_found(worker_t *w, int rc, const frontier_beat_t *b)
{
    engine_note(w, rc);
    if (rc < 0 || down(w) || w->err)
        return;
    if (lifeline_beat(&w->life, b) == LIFELINE_GONE) {
        w->err = CRAWL_ENOTFOUND;
        return;
    }
    int zero = 0;
    if (lifeline_fill(&w->life, w->fr, b->bloom_added, &w->e->full))
        atomic_compare_exchange_strong(&w->e->stop, &zero, 1);
    if (b->control == FRONTIER_DRAIN)
        engine_drain(w);
}

/* The claimer's turn: what it got acted on; once more after URLs were
 * admitted (the next claim sized by the room they left). */
static void claim_turn(worker_t *w, uint64_t now, int claim)
{
    for (int again = 1; again;) {
        claim_room_t room = room_of(w);
        claim_got_t got;
        claimer_turn(w->claimer, now, &room, !down(w) && !w->err, claim, &got);
        again = got.items != NULL && !got.rc;
        if (got.beat)
            beat_found(w, got.beat_rc, &got.b);
        if (got.items) {
            engine_admit(w, got.items, got.n); /* their origins are known now: no Redis call */
            free(got.items);
        }
        if (got.claimed) {
            w->st = got.state;
            if (got.state == FRONTIER_DRAIN) /* `crawler drain`: finish what runs, hand back */
                engine_drain(w);
            note_paused(w, got.state == FRONTIER_PAUSED);
        }
        engine_note(w, got.rc);
    }
}

/* The side calls' turn; the URLs a robots.txt poll settled go on at once. */
static void side_turn(worker_t *w, uint64_t now)
{
    engine_note(w, sidecalls_turn(w->side, now, !down(w) && !w->err));
    drain_gate(w);
}

/* The finisher's turn: the batch in flight answered, the next one sent. */
static void finish_turn(worker_t *w)
{
    size_t n;
    if (down(w) || w->err == CRAWL_EWRITE)
        return;
    if (w->dedup) /* the verdicts come: those pages go to the finisher */
        engine_note(w, deduper_turn(w->dedup, 0));
    /* one finish batch in flight at a time; pages finished meanwhile
     * wait for the next one (bigger batches while Redis is busy) */
    int rc = finisher_complete(w->fin, 0, &n);
    finished(w, rc, n);
    if (!down(w) && !finisher_busy(w->fin)) { /* between calls: the visited set's layers */
        int zero = 0, lrc = lifeline_layers(&w->life, w->fr, &w->e->full);
        if (lrc == 1)
            atomic_compare_exchange_strong(&w->e->stop, &zero, 1);
        engine_note(w, lrc < 0 ? lrc : 0);
    }
    if (!down(w) && !finisher_busy(w->fin)) {
        rc = finisher_flush(w->fin, 0, &n);
        finished(w, rc, n);
    }
}

/* What Redis answered taken in: the link polled (a loss noted), then the
 * parts' answers. */
static void redis_turn(worker_t *w, uint64_t now, int stop)
{
    if (!down(w) && rconn_link_poll(w->link) < 0)
        engine_note(w, CRAWL_EREDIS);
    finish_turn(w);
    side_turn(w, now);
    if (!w->err) /* a claim in flight is taken even when stopping */
        claim_turn(w, now, !stop);
    if (!down(w))
        engine_note(w, robotsgate_poll(w->gate));
}

typedef struct held_set {
    frontier_item_t *v;
    size_t n, cap;
    int oom;
} held_set_t;

static void hold(const frontier_item_t *it, void *ud)
{
    held_set_t *h = ud;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        frontier_item_t *v = realloc(h->v, cap * sizeof *v);
        if (!v) {
            h->oom = 1;
            return;
        }
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = (frontier_item_t){.lease = it->lease, .shard = it->shard}; /* borrowed */
}

/* While down, when a try is due: the lifeline's try, with the leases every
 * part still holds (the reconcile leaves them alone). */
static void reconnect(worker_t *w, uint64_t now)
{
    if (now < lifeline_next_try(&w->life))
        return;
    /* a claim answered before the link went down (its reply read, not yet
     * taken): its URLs are this worker's, so they must be in the held set,
     * or the reconcile would hand them back while the claimer hands them
     * out, and both would be fetched; one answered in part is forgotten */
    claim_turn(w, now, 0);
    claimer_abandon_claim(w->claimer);
    held_set_t h = {0};
    fetch_each_item(w->fetch, hold, &h);
    robotsgate_each_item(w->gate, hold, &h);
    finisher_each_item(w->fin, hold, &h);
    if (w->dedup)
        deduper_each_item(w->dedup, hold, &h);
    claimer_each_item(w->claimer, hold, &h);
    claim_room_t room = room_of(w);
    frontier_worker_stats_t ws = claimer_record(w->claimer, now, &room);
    /* out of memory: no reconcile (the leases not held expire instead) */
    lifeline_state_t st = h.oom ? lifeline_try(&w->life, w->link, w->fr, &ws, NULL, 0, now)
                                : lifeline_try(&w->life, w->link, w->fr, &ws, h.v, h.n, now);
    free(h.v);
    if (st == LIFELINE_GONE)
        w->err = CRAWL_ENOTFOUND;
    else if (st == LIFELINE_GAVE_UP)
        w->err = CRAWL_EREDIS;
    else if (st == LIFELINE_UP)
        claimer_poke(w->claimer);
}

static void on_reply(void *ud);

/* Sleeps in the event loop (fetch_wait: epoll) until a socket is ready
 * (curl's, or the link's with a call awaiting its answer), the next claim
 * is due, or (URLs parked on another worker's robots.txt, or held for a
 * host's delay) the next look; never spins. */
static void wait_for_work(worker_t *w)
{
    /* room for a claim, none in flight (its reply wakes us through the link) */
    int room = engine_held(w) < w->hold && !claimer_busy(w->claimer);
    uint64_t t = clock_now_ms(), due = claimer_due(w->claimer);
    int ms;
    if (down(w)) { /* the next reconnect try, or a transfer, wakes us */
        uint64_t next = lifeline_next_try(&w->life);
        ms = next > t ? (int)(next - t) : 0;
        fetch_wait(w->fetch, NULL, ms > 100 ? 100 : ms);
        return;
    }
    if ((finisher_queued(w->fin) && !finisher_busy(w->fin)) || fetch_ip_unsent(w->fetch))
        ms = 0; /* serve what is ready, then flush them (or send the asks for IP slots) */
    else if (fetch_active(w->fetch))
        ms = room ? 5 : 100;
    else
        ms = !room ? 100 : due > t ? (int)(due - t) : 0;
    if (ms > 250)
        ms = 250;
    if (robotsgate_polling(w->gate) && ms > ROBOTSGATE_POLL_MS)
        ms = ROBOTSGATE_POLL_MS;
    int fds[ENGINE_LINK_FDS]; /* replies awaited wake us */
    size_t nfds = rconn_link_fds(w->link, fds, ENGINE_LINK_FDS);
    netloop_watch_t watch = {.fds = fds, .nfds = (int)nfds, .ready = on_reply, .ud = w};
    fetch_wait(w->fetch, &watch, ms);
}

/* A reply the loop's wait found (netloop_watch_t.ready), taken before the
 * transfers of that wake-up are served: the finish batch's (its per-host
 * slots free again), the side calls', then the claim's or its robots.txt
 * look's (its URLs started), so a reply never waits for a turn's worth of
 * pages. */
static void on_reply(void *ud)
{
    worker_t *w = ud;
    if (down(w) || w->err)
        return;
    redis_turn(w, clock_now_ms(), atomic_load(&w->e->stop));
}

/* The crawl looks over: one heartbeat, waited for, says whether its state
 * is gone from Redis (not over then) or its visited set is full (a crawl
 * that filled it in its last seconds still exits with CRAWL_EFULL). */
static void final_check(worker_t *w)
{
    claim_room_t room = room_of(w);
    frontier_worker_stats_t ws = claimer_record(w->claimer, clock_now_ms(), &room);
    frontier_call_t *c = NULL;
    frontier_beat_t b = {.crawl_exists = 1};
    int rc = frontier_heartbeat_start(w->fr, &ws, &c);
    if (rc == 0 && (rc = frontier_call_end(w->fr, c)) == 0)
        rc = frontier_heartbeat_found(c, &b);
    frontier_call_free(c);
    beat_found(w, rc, &b);
}

/* The thread's end: what it finished goes out (unless an output failed or
 * Redis is gone), the rest is handed back. */
static void wind_down(worker_t *w)
{
    size_t n = 0;
    if (w->err == CRAWL_ENOTFOUND)
        return; /* the crawl's state is gone: nothing to finish or hand back into */
    while (w->dedup && deduper_busy(w->dedup) && !down(w) && w->err != CRAWL_EWRITE) {
        int rc = deduper_turn(w->dedup, 1); /* the verdicts of what was fetched */
        engine_note(w, rc);
        if (rc < 0)
            break;
    }
    if (!down(w) && w->err != CRAWL_EWRITE) {
        int rc = finisher_flush(w->fin, 1, &n);
        finished(w, rc, n);
    }
    if (!down(w))
        engine_note(w, sidecalls_flush(w->side)); /* the stores and retries made until now */
    if (down(w))
        return; /* nothing reaches Redis: the leases expire and the URLs come back */
    size_t back = claimer_hand_back(w->claimer);
    if (back)
        atomic_fetch_add(&w->e->released, back);
    release_all(w);
    if (finisher_release(w->fin, &n) == 0 && n)
        atomic_fetch_add(&w->e->released, n);
    if (!down(w)) /* the slots of IP addresses the transfers held, given back */
        engine_note(w, sidecalls_flush(w->side));
    if (w->err == CRAWL_EWRITE)
        fprintf(stderr,
                "crawler: worker %d stopped: an output file failed; its unrecorded pages "
                "were handed back\n",
                w->idx);
    else if (w->err == CRAWL_EREDIS)
        fprintf(stderr, "crawler: worker %d stopped: lost its Redis connection (%s)\n", w->idx,
                *rconn_link_error(w->link) ? rconn_link_error(w->link) : "error");
    else if (w->err) /* e.g. a key of the wrong type: the script's text names it */
        fprintf(stderr, "crawler: worker %d stopped: %s%s%s\n", w->idx, crawl_strerror(w->err),
                *frontier_last_error(w->fr) ? ": " : "", frontier_last_error(w->fr));
}

static void run(worker_t *w)
{
    const crawl_config_t *c = w->e->cfg;
    uint64_t stop_at = UINT64_MAX;
    w->st = FRONTIER_READY;
    for (;;) {
        uint64_t now = clock_now_ms();
        int stop = atomic_load(&w->e->stop);
        if (stop && stop_at == UINT64_MAX)
            stop_at = now + c->grace_ms;
        if (stop && !down(w) && fetch_waiting(w->fetch))
            hand_back_waiting(w);
        if (w->life.state == LIFELINE_DOWN)
            reconnect(w, now);
        redis_turn(w, now, stop);
        drain_gate(w);
        frontier_state_t st =
            claimer_busy(w->claimer) && w->st == FRONTIER_DONE ? FRONTIER_WAIT : w->st;
        if (should_exit(w, st, stop_at))
            break;
        fetch_perform(w->fetch);
        handle_completions(w);
        finish_turn(w);
        side_turn(w, clock_now_ms()); /* the stores and retries just made taken in */
        metrics_gauges(fetch_in_flight(w->fetch), robotsgate_parked(w->gate) +
                                                      claimer_held(w->claimer) +
                                                      fetch_waiting(w->fetch));
        wait_for_work(w);
    }
    if (down(w) && !w->err) /* stopped by a signal while Redis was away */
        w->err = CRAWL_EREDIS;
    if (w->st == FRONTIER_DONE && !w->err && !down(w)) /* over, or its state gone or full? */
        final_check(w);
    wind_down(w);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    metrics_thread_begin(w->e->metrics, (unsigned)w->idx); /* --metrics: this thread's counters */
    int rc = worker_open(w);
    if (rc == 0)
        run(w);
    else if (!w->err)
        w->err = rc;
    worker_close(w);
    metrics_thread_end();
    atomic_fetch_sub(&w->e->running, 1);
    return NULL;
}

/* ---- the calling thread: signals and progress ----------------------------- */

static void progress(engine_t *e, redisContext *rc, const bloom_geometry_t *g, uint64_t cap,
                     uint64_t t0, int final)
{
    frontier_stats_t fs = {0};
    int down = atomic_load(&e->redis_down);
    if (!rc || rc->err || frontier_stats_routed(rc, e->redis, e->cfg->crawl, &fs) < 0)
        memset(&fs, 0, sizeof fs);
    double secs = (double)(clock_now_ms() - t0) / 1000.0;
    uint64_t pages = atomic_load(&e->pages);
    /* fill estimated from the items added, not BITCOUNT: cheap every second */
    double fill = g && g->m ? 1.0 - exp(-(double)g->k * (double)fs.bloom_added / (double)g->m) : 0;
    bloom_fill_t bf; /* past BLOOM_FILL_WARN of its capacity, the line says so */
    bloom_fill_of(g, cap, fs.bloom_added, &bf);
    char warn[96] = "";
    if (bf.fill >= BLOOM_FILL_WARN)
        snprintf(warn, sizeof warn, "  VISITED SET %.0f%% FULL (fp %.2g)", bf.fill * 100,
                 bf.fp_rate);
    char restarts[64] = "";
    if (e->redis_restarts)
        snprintf(restarts, sizeof restarts, "  redis restarted %u time%s", e->redis_restarts,
                 e->redis_restarts == 1 ? "" : "s");
    if (down) {
        fprintf(stderr,
                "\r%llu pages  %.1f pages/s  Redis unreachable (%d of %u threads waiting)  errors "
                "%llu%s   %s",
                (unsigned long long)pages, secs > 0 ? (double)pages / secs : 0.0, down,
                e->cfg->threads, (unsigned long long)atomic_load(&e->errors), restarts,
                final ? "\n" : "");
        return;
    }
    const char *ctl = atomic_load(&e->stop) ? "  STOPPING" : fs.control.paused ? "  PAUSED" : "";
    fprintf(stderr,
            "\r%llu pages  %.1f pages/s  queued %llu  in flight %llu  errors %llu  bloom fill "
            "%.4f%%%s%s%s   %s",
            (unsigned long long)pages, secs > 0 ? (double)pages / secs : 0.0,
            (unsigned long long)fs.queued, (unsigned long long)fs.in_flight,
            (unsigned long long)atomic_load(&e->errors), fill * 100, warn, restarts, ctl,
            final ? "\n" : "");
}

/* The progress line's connection, opened again once a second while lost. */
static redisContext *progress_conn(engine_t *e, redisContext *rc)
{
    char err[256];
    if (rc && !rc->err)
        return rc;
    if (rc)
        redisFree(rc);
    return rconn_connect(e->redis, err, sizeof err);
}

/* The embedded redis-server of this process (its child), if any: one that
 * died is started again at once (the threads reconnect to it and reconcile
 * what its append-only file lost); one that cannot be started again stops
 * the crawl at once, naming the server, how it ended and why. */
static void watch_embedded(engine_t *e)
{
    char msg[1024];
    int rc = rconn_embedded_watch(e->owner, msg, sizeof msg);
    if (rc == 0)
        return;
    fprintf(stderr, "\ncrawler: %s%s\n", msg, rc > 0 ? "" : "; stopping");
    if (e->out)
        out_event(e->out, &(out_event_t){.event = rc > 0 ? "redis-restarted" : "redis-failed",
                                         .worker = -1,
                                         .error_text = msg});
    if (rc > 0) {
        e->redis_restarts++;
        return;
    }
    atomic_store(&e->redis_failed, 1);
    atomic_store(&e->stop, 2); /* nothing reaches Redis: the leases expire, nothing is lost */
}

static void supervise(engine_t *e, int show)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP); /* a closed terminal: as SIGTERM */
    char err[256], bname[256];
    redisContext *rc = show ? rconn_connect(e->redis, err, sizeof err) : NULL;
    bloom_geometry_t geo = {0};
    uint64_t cap = 0;
    if (rc && frontier_bloom_name(e->cfg->crawl, bname, sizeof bname) >= 0) {
        bloom_t *b = bloom_open(rc, bname, NULL, NULL, err, sizeof err);
        if (b) {
            geo = *bloom_geometry(b);
            cap = bloom_capacity(b);
        }
        bloom_close(b);
    }
    uint64_t t0 = clock_now_ms(), next = t0 + 1000;
    while (atomic_load(&e->running) > 0) {
        struct timespec ts = {0, 20 * 1000 * 1000}; /* the exit is seen within 20 ms */
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            int was = atomic_fetch_add(&e->stop, 1);
            fprintf(stderr, "\ncrawler: %s; %s\n",
                    sig == SIGINT   ? "interrupted"
                    : sig == SIGHUP ? "hung up (SIGHUP)"
                                    : "terminated",
                    was == 0 ? "finishing in-flight URLs (again to hand them back now)"
                             : "handing in-flight URLs back");
        }
        watch_embedded(e);
        if (show && clock_now_ms() >= next) {
            rc = progress_conn(e, rc);
            progress(e, rc, &geo, cap, t0, 0);
            next += 1000;
        }
    }
    if (show)
        progress(e, rc, &geo, cap, t0, 1);
    if (rc)
        redisFree(rc);
}

/* The connection caches: ENGINE_CONNECTS_PER_SLOT connections a transfer
 * slot (a broad crawl comes back to a host every few seconds: its
 * connection should still be there), at least ENGINE_MIN_CONNECTS a thread,
 * within the open-file limit (raised to its hard limit if need be) once the
 * transfers, the Redis connections and the outputs have theirs.  Returns
 * the connections a thread may keep. */
static size_t connection_budget(const crawl_config_t *cfg)
{
    struct rlimit rl;
    uint64_t reserve = (uint64_t)cfg->threads * ENGINE_FDS_PER_THREAD + ENGINE_FDS_PROCESS;
    uint64_t want = (uint64_t)cfg->concurrency * ENGINE_CONNECTS_PER_SLOT;
    if (want < (uint64_t)cfg->threads * ENGINE_MIN_CONNECTS)
        want = (uint64_t)cfg->threads * ENGINE_MIN_CONNECTS;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return (size_t)(want / cfg->threads);
    uint64_t need = want + reserve;
    if (rl.rlim_cur < need) {
        rlim_t to =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? (rlim_t)need : rl.rlim_max;
        if (to > rl.rlim_cur) {
            rl.rlim_cur = to;
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
                getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    uint64_t have = rl.rlim_cur > reserve ? rl.rlim_cur - reserve : 0;
    if (have < cfg->concurrency)
        fprintf(stderr,
                "crawler: warning: --concurrency %u needs at least %llu open files, the limit "
                "is %llu (ulimit -n): connections past it fail and are retried\n",
                cfg->concurrency, (unsigned long long)(cfg->concurrency + reserve),
                (unsigned long long)rl.rlim_cur);
    uint64_t n = want < have ? want : have;
    n /= cfg->threads;
    return n ? (size_t)n : 1;
}

int engine_run(const crawl_config_t *cfg, rconn_t *redis, const outputs_t *outs,
               struct metrics *metrics, engine_totals_t *totals)
{
    engine_t e = {.cfg = cfg, .redis = redis, .owner = redis, .out = outs->out, .metrics = metrics};
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&e.share_locks[i], NULL);
    e.share = curl_share_init();
    e.tls = tls_sessions_new(cfg->tls_sessions); /* (NULL: libcurl's own cache) */
    e.workers = calloc(cfg->threads, sizeof *e.workers);
    e.fin_common = finisher_common_new(outs);
    e.seen_cache = bloom_shared_cache_new(0);
    e.wake = frontier_wake_new();
    if (!e.share || !e.workers || !e.fin_common || !e.seen_cache || !e.wake) {
        free(e.workers);
        curl_share_cleanup(e.share);
        tls_sessions_free(e.tls);
        finisher_common_free(e.fin_common);
        bloom_shared_cache_free(e.seen_cache);
        frontier_wake_free(e.wake);
        return CRAWL_ENOMEM;
    }
    curl_share_setopt(e.share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(e.share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(e.share, CURLSHOPT_USERDATA, &e);
    curl_share_setopt(e.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    /* TLS sessions too: resumed across threads, and no session table of its
     * own in every easy handle (~0.9 KiB a transfer in flight, bench/broad.md) */
    curl_share_setopt(e.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    e.connects = connection_budget(cfg);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uint32_t started = 0;
    for (uint32_t i = 0; i < cfg->threads; i++) {
        e.workers[i].e = &e;
        e.workers[i].idx = (int)i;
        e.workers[i].slots = config_thread_slots(cfg->concurrency, cfg->threads, i);
        e.workers[i].hold = config_thread_held(e.workers[i].slots);
        e.workers[i].rng = (clock_now_ms() ^ (uint64_t)getpid() << 20) * 2654435761u + i + 1;
        atomic_fetch_add(&e.running, 1);
        if (pthread_create(&e.workers[i].thread, NULL, worker_main, &e.workers[i]) != 0) {
            atomic_fetch_sub(&e.running, 1);
            break;
        }
        started++;
    }
    supervise(&e, !cfg->quiet && isatty(2));
    int err = started == 0 ? CRAWL_ENOMEM : 0; /* no thread could start */
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(e.workers[i].thread, NULL);
        if (!err && e.workers[i].err < 0)
            err = e.workers[i].err;
    }
    if (atomic_load(&e.redis_failed)) /* its embedded server died and could not start again */
        err = CRAWL_EREDIS;
    if (!err && atomic_load(&e.full)) /* stopped because the visited set is full */
        err = CRAWL_EFULL;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (totals)
        *totals = (engine_totals_t){.pages = atomic_load(&e.pages),
                                    .bytes = atomic_load(&e.bytes),
                                    .errors = atomic_load(&e.errors),
                                    .retried = atomic_load(&e.retried),
                                    .released = atomic_load(&e.released)};
    curl_share_cleanup(e.share);
    tls_sessions_free(e.tls);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&e.share_locks[i]);
    free(e.workers);
    finisher_common_free(e.fin_common);
    bloom_shared_cache_free(e.seen_cache);
    frontier_wake_free(e.wake);
    return err;
}
