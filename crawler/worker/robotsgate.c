/*
 * robotsgate.c -- robots.txt for every claimed URL, shared across workers
 * (robotsgate.h); the rule sets' slots, index and lists are in
 * robotsgate_cache.c.
 *
 * DESIGN: the gate keeps up to ROBOTS_CACHE rule sets of its thread (more
 * when the thread may hold more URLs than that: a slot for every URL it may
 * park, so that a new origin always finds one)
 * (rentry_t: origin, parsed rules or NULL while pending, the URLs parked on
 * it) in a fixed array of slots, found by a hash index over the origins
 * (chained through the slots: O(1) per URL); a queue of origins whose
 * robots.txt the caller is to fetch; and a queue of parked URLs whose verdict
 * is known.  A settled entry (with rules) lasts a minute (LOCAL_TTL_MS; "5xx:
 * disallow all for now" as long as the first retry backoff) and is on two
 * lists: the LRU list (most recently used first) and the expiry list of its
 * lifetime class (in the order they settled, hence of expiry).  A pending
 * entry is on the pending list only.  When the slots are full, a new origin
 * takes the slot of an expired entry if there is one, else of the least
 * recently used settled one: one entry at a time, never all.
 *
 * Rules are shared with every worker through Redis, by the frontier, which
 * owns the keys (P robots:<origin>, P robots-lock:<origin>, P hdelay,
 * P sitemaps):
 *   frontier_robots_look    for a batch of origins new to this thread, in
 *                           one atomic call: each one's stored rules ("R" +
 *                           robots_serialize(), or "U": 5xx/unreachable,
 *                           disallow all for now), else its fetch lock for
 *                           us if free (we fetch), else "held" (we poll).
 *                           robotsgate_prefetch sends one for a claim's
 *                           batch; robotsgate_check one for an origin it
 *                           meets unprefetched; robotsgate_poll one for
 *                           all the origins other workers fetch (or the
 *                           caller sends it: robotsgate_poll_start,
 *                           robotsgate_look.c)
 *   frontier_robots_store   the fetcher's rules (24 h; "U" as long as the
 *                           first retry backoff, at most 60 s), Crawl-delay
 *                           and Sitemap: lines, and the unlock, in one atomic
 *                           call: rules stored before (atomically with) the
 *                           unlock, so the lock won says they are missing;
 *                           deferred, the caller sends it without waiting
 *                           (robotsgate_next_store), unless the file has a
 *                           Crawl-delay the claims do not know
 *   frontier_robots_unlock  a fetch that could not start, or whose store
 *                           failed (the lock also lapses by itself after the
 *                           fetch timeout: a dead holder blocks nobody long)
 * The "shared cache" section below is the gate's only use of Redis.  With
 * --sitemaps the Sitemap: URLs in scope are seeded.
 * A robots.txt is a request to its host like any other: when this thread
 * fetched it and the host has a delay (--delay, or the file's Crawl-delay
 * up to --max-delay), the URLs parked on it wait that delay from the end of
 * the fetch (the entry is "held": rules known, still pending, released by
 * robotsgate_poll), so the host never sees two requests closer than its
 * delay, robots.txt included.
 * A robots.txt that redirects to another origin's robots.txt ("http://h"
 * to "https://h") is not followed by the fetch: the first origin's entry
 * waits on the other's (`via`, wait_on) and adopts its rules (RFC 9309:
 * they are the first origin's), fetched once, as that origin's own
 * request, by whoever holds its lock (claims of its URLs wait on the same
 * lock, so none overlaps it; a worker that polled for it waits the delay
 * before its URLs go).
 *
 * Invariants: an entry with parked URLs has no rules, or is held
 * (hold_until set, counted by `nheld`); pending entries (no rules, or
 * held) are on the pending list and never evicted, settled ones on the LRU
 * list and one expiry list; every used slot is in the hash index, every
 * other on the free list or not used yet (from `fresh` on); `parked` is the
 * sum of the entries' nparked, and the ready queue has room for all of them
 * besides what it holds; `nremote` counts the entries with `remote` set,
 * `nvia` the pending ones with `via` set (a chain of them never closes).
 *
 * Memory: a slot is 72 bytes (+ 4 of the index), the array allocated once
 * and its pages touched as slots are first used; a settled entry adds its
 * origin and parsed rules on the heap (measured by tests/test_robotsgate.c's
 * eviction test: 590 bytes for a one-rule robots.txt), so a full cache of
 * such rule sets is about 11 MB per thread.
 */
#include "robotsgate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "parser.h"
#include "robots.h"
#include "robotsgate_internal.h"

/* ---- verdicts, parked URLs ------------------------------------------------------- */

static int first_error(int rc, int err)
{
    return rc < 0 ? rc : err < 0 ? err : 0;
}

static robotsgate_verdict_t verdict_of(const rentry_t *e, const char *url)
{
    if (!e->rules) /* cannot happen; never drop a leased URL */
        return ROBOTSGATE_ALLOW;
    if (e->unavailable)
        return ROBOTSGATE_RETRY;
    return robots_allowed(e->rules, url + strlen(e->origin)) ? ROBOTSGATE_ALLOW : ROBOTSGATE_DENY;
}

/* Room in the ready queue for every parked URL and one more, so that
 * settling never needs memory. */
static int reserve_ready(robotsgate_t *g)
{
    size_t need = g->nready - g->ready_head + g->parked + 1;
    if (need <= g->ready_cap)
        return 0;
    size_t cap = g->ready_cap ? g->ready_cap * 2 : 64;
    while (cap < need)
        cap *= 2;
    ready_t *n = realloc(g->ready, cap * sizeof *n);
    if (!n)
        return -1;
    g->ready = n;
    g->ready_cap = cap;
    return 0;
}

static int park(robotsgate_t *g, rentry_t *e, frontier_item_t *item)
{
    if (reserve_ready(g) < 0)
        return -1;
    if (e->nparked == e->parked_cap) {
        uint32_t cap = e->parked_cap ? e->parked_cap * 2 : 8;
        frontier_item_t *n = realloc(e->parked, cap * sizeof *n);
        if (!n)
            return -1;
        e->parked = n;
        e->parked_cap = cap;
    }
    e->parked[e->nparked++] = *item;
    memset(item, 0, sizeof *item);
    g->parked++;
    return 0;
}

/* The rules of pending e are known now (e->rules set): it is settled, and
 * its parked URLs join the ready queue (room reserved by park). */
static void settle(robotsgate_t *g, rentry_t *e)
{
    if (e->remote) {
        e->remote = 0;
        g->nremote--;
    }
    rg_settle_entry(g, e);
    if (g->ready_head) {
        size_t left = g->nready - g->ready_head;
        memmove(g->ready, g->ready + g->ready_head, left * sizeof *g->ready);
        g->ready_head = 0;
        g->nready = left;
    }
    for (size_t i = 0; i < e->nparked; i++)
        g->ready[g->nready++] =
            (ready_t){.item = e->parked[i], .verdict = verdict_of(e, e->parked[i].url)};
    g->parked -= e->nparked;
    e->nparked = 0;
}

/* ---- the shared cache in Redis (the frontier's keys) -------------------------- */

uint32_t rg_lock_ms(const robotsgate_t *g)
{
    uint32_t ms = g->cfg->timeout_ms + g->cfg->connect_timeout_ms;
    return ms ? ms : 1;
}

static int shared_unlock(robotsgate_t *g, const char *origin)
{
    int rc = frontier_robots_unlock(g->fr, origin);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* Rules from a stored value ("R" + serialized, or "U" + the cause, if
 * known, as rentry_t.why has it), or NULL (corrupt, or out of memory);
 * e->unavailable and e->why set for "U". */
static robots_t *rules_of_value(rentry_t *e, const char *val, size_t len)
{
    int err = 0;
    e->unavailable = 0;
    free(e->why);
    e->why = NULL;
    if (len >= 1 && val[0] == 'U') {
        e->unavailable = 1;
        if (len > 1 && !memchr(val + 1, '\0', len - 1))
            e->why = strndup(val + 1, len - 1);
        return robots_disallow_all();
    }
    return len >= 1 && val[0] == 'R' ? robots_deserialize(val + 1, len - 1, &err) : NULL;
}

/* The value every worker reads for e's rules (caller frees), or NULL. */
static char *value_of(const rentry_t *e, size_t *vlen)
{
    char *ser = NULL, *val;
    size_t len = 0;
    if (!e->unavailable && robots_serialize(e->rules, &ser, &len) < 0)
        return NULL;
    if (e->unavailable) /* "U" and the cause, for the other workers' records */
        len = e->why ? strlen(e->why) : 0;
    *vlen = len + 1;
    if ((val = malloc(*vlen))) {
        val[0] = e->unavailable ? 'U' : 'R';
        if (len)
            memcpy(val + 1, e->unavailable ? e->why : ser, len);
    }
    free(ser);
    return val;
}

/* The store r, sent, as a call for the caller to take the answer of
 * (robotsgate_next_store): 0, or -1 (out of memory: nothing sent). */
static int defer_store(robotsgate_t *g, const frontier_robots_result_t *r)
{
    if (g->nstores == g->stores_cap) { /* (emptied by robotsgate_next_store: it
                                          starts again at 0) */
        size_t cap = g->stores_cap ? g->stores_cap * 2 : 16;
        gate_store_t *n = realloc(g->stores, cap * sizeof *n);
        if (!n)
            return -1;
        g->stores = n;
        g->stores_cap = cap;
    }
    gate_store_t st = {.origin = strdup(r->origin)};
    if (!st.origin || frontier_robots_store_start(g->fr, r, &st.c) < 0) {
        free(st.origin);
        return -1;
    }
    g->stores[g->nstores++] = st;
    return 0;
}

/* Stores the fetcher's rules, Crawl-delay and Sitemap: lines, spaces the
 * host by space_ms, and unlocks (one call; shared: 0 to unlock only).  The
 * lock is dropped even when the store fails.  Deferred
 * (robotsgate_defer_stores), unless wait: the call is handed out
 * (robotsgate_next_store), its outcome comes back through
 * robotsgate_stored. */
static int store_and_unlock(robotsgate_t *g, const rentry_t *e, int shared, int wait,
                            uint64_t space_ms)
{
    frontier_robots_result_t r = {.origin = e->origin, .space_ms = (uint32_t)space_ms};
    const robots_t *rules = e->unavailable ? NULL : e->rules;
    size_t n = rules ? robots_sitemap_count(rules) : 0;
    const char **maps = n ? calloc(n, sizeof *maps) : NULL;
    for (size_t i = 0; maps && i < n; i++)
        maps[i] = robots_sitemap(rules, i);
    char *val = shared ? value_of(e, &r.len) : NULL;
    r.val = val;
    r.ttl_s = e->unavailable             ? rg_unavailable_ttl_s(g)
              : g->cfg->robots_ttl_s > 0 ? g->cfg->robots_ttl_s
                                         : CONFIG_MAX_ROBOTS_TTL_S;
    r.delay_ms = rules ? robots_crawl_delay_ms(rules) : 0;
    r.sitemaps = maps;
    r.nsitemaps = maps ? n : 0;
    int rc = 0;
    if (!g->defer || wait || defer_store(g, &r) < 0)
        rc = frontier_robots_store(g->fr, &r);
    /* a waited store the lost link failed: sent as a deferred one, which
     * the link keeps and writes when it is back, before the thread's later
     * calls (the rules and a Crawl-delay known here must reach Redis, or
     * the claims space the host by --delay alone until the robots.txt is
     * fetched again: bench/longhaul.md) */
    if (rc == CRAWL_EREDIS && g->defer && wait)
        defer_store(g, &r);
    if (rc < 0 && rc != CRAWL_EREDIS) /* refused: nothing done, the lock still ours */
        rc = shared_unlock(g, e->origin);
    free(val);
    free(maps);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* ---- fetching: who does, and what it gives ---------------------------------------- */

/* Asks the caller to fetch e's robots.txt; the lock is held (or Redis could
 * not say).  On out of memory e allows all instead, the lock released. */
static void want_fetch(robotsgate_t *g, rentry_t *e, int *rc)
{
    char *o = NULL;
    if (g->nfetch == g->fetch_cap) {
        size_t cap = g->fetch_cap ? g->fetch_cap * 2 : 8;
        char **n = realloc(g->fetch, cap * sizeof *n);
        if (n) {
            g->fetch = n;
            g->fetch_cap = cap;
        }
    }
    if (g->nfetch < g->fetch_cap && (o = strdup(e->origin))) {
        g->fetch[g->nfetch++] = o;
        return;
    }
    e->rules = robots_allow_all();
    *rc = first_error(*rc, shared_unlock(g, e->origin));
    settle(g, e);
}

/* The host's delay once its rules are known: --delay, or its Crawl-delay
 * (capped at --max-delay) when larger (as the frontier reckons it). */
static uint64_t host_delay_ms(const robotsgate_t *g, const robots_t *rules)
{
    uint64_t own = rules ? robots_crawl_delay_ms(rules) : 0;
    if (own > g->cfg->max_delay_ms)
        own = g->cfg->max_delay_ms;
    return own > g->cfg->delay_ms ? own : g->cfg->delay_ms;
}

/* The parked URLs of e from `from` on go back to the frontier (one round
 * trip), which spaces their host by its delay: a host whose delay the
 * claim did not know (its robots.txt Crawl-delay, with --delay 0) may have
 * had several URLs claimed at once; they must not all go now.  A failed
 * call leaves their leases to lapse (the URLs come back then). */
static int hand_back(robotsgate_t *g, rentry_t *e, uint32_t from)
{
    if (e->nparked <= from)
        return 0;
    uint32_t n = e->nparked - from;
    int rc = frontier_release(g->fr, e->parked + from, n);
    for (uint32_t i = from; i < e->nparked; i++)
        frontier_item_clear(&e->parked[i]);
    e->nparked = from;
    g->parked -= n;
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* What one origin's look found, for pending e: its rules (settled), or the
 * fetch is ours (a lock won, or an error: then as if won, so that no URL
 * waits on a broken Redis), or another worker's (e->remote: we poll). */
void rg_apply_look(robotsgate_t *g, rentry_t *e, frontier_robots_look_t *l, int *rc)
{
    if (l->err == 0 && l->found == FRONTIER_ROBOTS_STORED) {
        e->rules = rules_of_value(e, l->val, l->len);
        free(l->val);
        l->val = NULL;
        if (e->rules) { /* another worker fetched it just now, maybe: with a
                           delay, its URLs wait their turn in the frontier */
            uint64_t d = e->unavailable ? 0 : host_delay_ms(g, e->rules);
            if (d > g->cfg->delay_ms)
                *rc = first_error(*rc, hand_back(g, e, 0));
            else if (e->remote && d && e->nparked) {
                /* we waited on its fetch, which may have ended a poll ago
                 * (one made without the host's slot: wait_on): the URLs
                 * wait the delay from now */
                e->remote = 0;
                g->nremote--;
                e->hold_until = clock_now_ms() + d + 1;
                g->nheld++;
                return;
            }
            settle(g, e);
            return;
        } /* corrupt: fetched again, and the store replaces it */
    }
    if (l->err == 0 && l->found == FRONTIER_ROBOTS_HELD) {
        if (!e->remote) {
            e->remote = 1;
            g->nremote++;
        }
        return;
    }
    if (e->remote) {
        e->remote = 0;
        g->nremote--;
    }
    want_fetch(g, e, rc);
}

/* One look (one round trip) for the n pending entries es[]. */
static int look(robotsgate_t *g, rentry_t **es, size_t n)
{
    frontier_robots_look_t stack[64], *l = n <= 64 ? stack : calloc(n, sizeof *l);
    int rc = 0;
    if (!l) { /* out of memory: as a Redis error, we fetch */
        for (size_t i = 0; i < n; i++)
            want_fetch(g, es[i], &rc);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        l[i].origin = es[i]->origin;
    int err = frontier_robots_look(g->fr, l, n, rg_lock_ms(g));
    rc = err == CRAWL_EREDIS ? err : 0;
    for (size_t i = 0; i < n; i++)
        rg_apply_look(g, es[i], &l[i], &rc);
    if (l != stack)
        free(l);
    return rc;
}

/* The entry for origin, settled if expired (dropped then), or NULL; a
 * settled entry is marked used.  A held entry has rules but is pending (on
 * the pending list, never settled: no expiry): it is returned as it is. */
rentry_t *rg_known(robotsgate_t *g, const char *origin)
{
    rentry_t *e = rg_find(g, origin);
    if (!e || !e->rules || e->hold_until)
        return e;
    if (e->expires_ms <= clock_now_ms()) {
        rg_drop(g, e);
        return NULL;
    }
    rg_touch(g, e);
    return e;
}

/* Slots for a thread: ROBOTS_CACHE, or (a power of two) more than the URLs
 * the thread may hold at once, so that a new origin always finds a slot
 * (pending entries are never evicted: each holds a URL). */
static uint32_t capacity(const crawl_config_t *cfg)
{
    uint32_t held = config_thread_held(config_thread_slots(cfg->concurrency, cfg->threads, 0));
    uint32_t cap = ROBOTS_CACHE;
    while (cap <= held && cap < (1u << 30))
        cap *= 2;
    return cap;
}

robotsgate_t *robotsgate_new(const crawl_config_t *cfg, frontier_t *fr, const scope_t *scope)
{
    robotsgate_t *g = calloc(1, sizeof *g);
    if (g)
        g->cap = capacity(cfg);
    if (!g || !(g->slot = calloc(g->cap, sizeof *g->slot)) ||
        !(g->bucket = malloc(g->cap * sizeof *g->bucket))) {
        if (g)
            free(g->slot);
        free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < g->cap; i++)
        g->bucket[i] = NONE;
    g->free = NONE;
    g->lru = g->exp[0] = g->exp[1] = g->pending = (list_t){NONE, NONE};
    g->cfg = cfg;
    g->fr = fr;
    g->scope = scope;
    return g;
}

void robotsgate_free(robotsgate_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->fresh; i++)
        if (g->slot[i].origin)
            rg_entry_clear(&g->slot[i]);
    free(g->slot);
    free(g->bucket);
    for (size_t i = 0; i < g->nfetch; i++)
        free(g->fetch[i]);
    free(g->fetch);
    free(g->fetch_out);
    for (size_t i = g->ready_head; i < g->nready; i++)
        frontier_item_clear(&g->ready[i].item);
    free(g->ready);
    for (size_t i = g->stores_head; i < g->nstores; i++) {
        frontier_call_free(g->stores[i].c);
        free(g->stores[i].origin);
    }
    free(g->stores);
    free(g);
}

void robotsgate_defer_stores(robotsgate_t *g)
{
    g->defer = 1;
}

int robotsgate_next_store(robotsgate_t *g, frontier_call_t **call, char **origin)
{
    if (g->stores_head == g->nstores)
        return 0;
    gate_store_t *st = &g->stores[g->stores_head++];
    *call = st->c;
    *origin = st->origin;
    if (g->stores_head == g->nstores)
        g->stores_head = g->nstores = 0;
    return 1;
}

int robotsgate_stored(robotsgate_t *g, const char *origin, int rc)
{
    /* refused (nothing done): the lock is still ours */
    return rc < 0 && rc != CRAWL_EREDIS ? shared_unlock(g, origin) : 0;
}

int robotsgate_check(robotsgate_t *g, frontier_item_t *item, robotsgate_verdict_t *verdict)
{
    char origin[4096];
    int rc = 0;
    *verdict = ROBOTSGATE_ALLOW;
    if (g->cfg->ignore_robots || parser_url_origin(item->url, origin, sizeof origin) < 0)
        return 0;
    rentry_t *e = rg_known(g, origin);
    if (!e) {
        if (!(e = rg_add_entry(g, origin)))
            return 0; /* out of memory: fetch rather than lose it */
        rc = first_error(look(g, &e, 1), rg_adopt_waiting(g));
    }
    if (!e->rules || e->hold_until) {
        if (park(g, e, item) == 0)
            *verdict = ROBOTSGATE_WAIT;
        return rc; /* not parked for lack of memory: fetch it */
    }
    *verdict = verdict_of(e, item->url);
    return rc;
}

const char *robotsgate_next_fetch(robotsgate_t *g)
{
    free(g->fetch_out);
    g->fetch_out = g->nfetch ? g->fetch[--g->nfetch] : NULL;
    return g->fetch_out;
}

int robotsgate_unfetched(robotsgate_t *g, const char *origin)
{
    rentry_t *e = rg_find(g, origin);
    if (!e || e->rules)
        return 0;
    e->rules = robots_allow_all();
    int rc = shared_unlock(g, origin);
    settle(g, e);
    return first_error(rc, rg_adopt_waiting(g));
}

/* --sitemaps: the Sitemap: URLs in scope are seeded (through the Bloom
 * filter, so each once); their <loc> URLs are then offered like links. */
static int seed_sitemaps(robotsgate_t *g, const robots_t *r)
{
    size_t n = robots_sitemap_count(r), k = 0;
    char **urls = calloc(n + 1, sizeof *urls);
    int rc = 0;
    for (size_t i = 0; urls && i < n; i++) {
        char *u = NULL;
        if (parser_url_normalize(NULL, robots_sitemap(r, i), g->cfg->max_url_length, &u) == 0 &&
            scope_allows(g->scope, u))
            urls[k++] = u;
        else
            free(u);
    }
    if (k)
        rc = frontier_seed(g->fr, (const char *const *)urls, k, FRONTIER_SEED_NO_HOSTS, NULL);
    for (size_t i = 0; i < k; i++)
        free(urls[i]);
    free(urls);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* The rules a robots.txt transfer gave. */
/* Why b's robots.txt is unavailable, as rentry_t.why keeps it (NULL: out
 * of memory). */
static char *cause_of(const robotsgate_body_t *b)
{
    char why[ROBOTSGATE_CAUSE_TEXT + 64];
    if (b->error_kind)
        snprintf(why, sizeof why, "%s\t%ld\trobots.txt: %s", b->error_kind, b->status,
                 b->error_text ? b->error_text : b->error_kind);
    else if (b->status == 429 || b->status >= 500)
        snprintf(why, sizeof why, "%s\t%ld\trobots.txt answered HTTP %ld",
                 crawl_kind_name(b->status == 429 ? CRAWL_KIND_HTTP_429 : CRAWL_KIND_HTTP_5XX),
                 b->status, b->status);
    else
        snprintf(why, sizeof why, "%s\t%ld\trobots.txt was cut short (HTTP %ld)",
                 crawl_kind_name(CRAWL_KIND_ROBOTS_UNAVAILABLE), b->status, b->status);
    for (char *p = why; *p; p++) /* one line: the text goes into records */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return strdup(why);
}

static void rules_of(robotsgate_t *g, rentry_t *e, const robotsgate_body_t *b)
{
    robots_free(e->rules);
    e->rules = NULL;
    free(e->why);
    e->why = NULL;
    if (b->complete && b->status >= 200 && b->status < 300) {
        int err = 0;
        e->rules = robots_parse(b->body, b->len, g->cfg->user_agent, &err);
    } else if (b->blocked || b->tls_refused ||
               (b->complete && b->status >= 300 && b->status < 500)) {
        /* 4xx: no rules.  3xx: a redirect the fetch did not follow (past 5
         * hops, or out of the scope's hosts: RFC 9309 "unavailable", as a
         * 4xx).  blocked: the guard refused the address (the origin's, or a
         * redirect target's); tls_refused: a certificate that does not
         * verify.  The page fetches meet the same refusal themselves and
         * record it ("blocked", "tls" with curl's text), so nothing is
         * fetched without rules. */
        e->rules = robots_allow_all();
    } else {
        e->unavailable = 1;
        e->why = cause_of(b);
        e->rules = robots_disallow_all();
    }
    if (!e->rules) { /* out of memory parsing: be conservative, retry later */
        e->unavailable = 1;
        e->rules = robots_disallow_all();
    }
}

/* e's rules are known (fetched by this thread, or adopted): stored for
 * every worker (shared; 0: the unlock only) and the lock dropped; unless
 * adopted (no request made), its host's next claim spaced by its delay
 * (the fetch may have been made without a claim: wait_on) and its
 * Sitemap: URLs seeded; its parked URLs wait the host's delay. */
static int have_rules(robotsgate_t *g, rentry_t *e, int blocked, int shared, int adopted)
{
    /* the host's next request waits its delay after this one (none was
     * made if the guard refused it; "unavailable" retries, fetching nothing) */
    uint64_t d = blocked || e->unavailable ? 0 : host_delay_ms(g, e->rules);
    /* blocked / TLS refused: not shared for 24 h (a certificate gets fixed).
     * A Crawl-delay the claims did not know: the store is waited for, so
     * that Redis has the host's delay before the next claim (which would
     * give out more of its URLs at once) and before the URLs handed back
     * below reach their queue */
    int rc = store_and_unlock(g, e, shared, d > g->cfg->delay_ms, adopted ? 0 : d);
    if (!adopted && g->cfg->sitemaps && !e->unavailable && e->rules &&
        robots_sitemap_count(e->rules))
        rc = first_error(rc, seed_sitemaps(g, e->rules));
    if (d > g->cfg->delay_ms) /* a Crawl-delay the claims did not know: one URL waits, */
        rc = first_error(rc, hand_back(g, e, 1)); /* the others go back */
    if (d && e->nparked) {
        e->hold_until = clock_now_ms() + d + 1;
        g->nheld++;
        return rc;
    }
    settle(g, e);
    return rc;
}

/* ---- a robots.txt that moved to another origin's ---------------------------------- */

#define ROBOTSGATE_MAX_VIA 5 /* origins in a chain of moves (RFC 9309: five redirects) */

/* Pending e (its robots.txt fetched by us, its lock ours) redirected to
 * the robots.txt of origin `to` ("http://h" to "https://h", "h" to
 * "www.h"): e waits on to's entry, made and looked up in Redis if this
 * thread has none -- its rules stored (adopted at once), its lock won (the
 * caller fetches it: a request of to's own, which no claim of to's URLs
 * can overlap, because they wait on the same lock), or another worker's
 * fetch (polled).  RFC 9309: the rules reached through a redirect are the
 * first origin's.  0, or -1 when e cannot wait (a cycle of redirects, a
 * chain past ROBOTSGATE_MAX_VIA, out of memory): then the
 * redirect counts as not followed. */
static int wait_on(robotsgate_t *g, rentry_t *e, const char *to, int *rc)
{
    const rentry_t *c = rg_find(g, to);
    for (int i = 0; c && c->via; i++) { /* to's own chain: not back to e, not too long */
        if (i + 1 >= ROBOTSGATE_MAX_VIA || !strcmp(c->via, e->origin))
            return -1;
        c = rg_find(g, c->via);
    }
    if (!strcmp(to, e->origin) || !(e->via = strdup(to)))
        return -1;
    g->nvia++;
    rentry_t *t = rg_known(g, to);
    if (!t && (t = rg_add_entry(g, to)))
        *rc = first_error(*rc, look(g, &t, 1));
    if (t)
        return 0;
    free(e->via);
    e->via = NULL;
    g->nvia--;
    return -1;
}

/* e (waiting) adopts t's rules: the value every worker would read for t,
 * read back as e's, stored for e's own origin (unless t's are this
 * thread's only: a fetch the guard or TLS refused). */
static int adopt(robotsgate_t *g, rentry_t *e, const rentry_t *t)
{
    size_t len = 0;
    char *val = value_of(t, &len);
    e->rules = val ? rules_of_value(e, val, len) : NULL;
    free(val);
    free(e->via);
    e->via = NULL;
    g->nvia--;
    if (!e->rules) { /* out of memory: be conservative, retry later */
        e->unavailable = 1;
        e->rules = robots_disallow_all();
    }
    e->local = t->local;
    return have_rules(g, e, 0, !e->local, 1);
}

int rg_adopt_waiting(robotsgate_t *g)
{
    int rc = 0, again = 1;
    while (g->nvia && again) { /* (a chain settles one link a pass) */
        again = 0;
        for (rentry_t *e = rg_at(g, g->pending.head), *next; e && g->nvia; e = next) {
            next = rg_at(g, e->link[L_USE].next);
            if (!e->via)
                continue;
            const rentry_t *t = rg_find(g, e->via);
            if (t && t->rules) {
                rc = first_error(rc, adopt(g, e, t));
                again = 1;
            } else if (!t) { /* settled and evicted since: looked up again */
                char *to = e->via;
                e->via = NULL;
                g->nvia--;
                if (wait_on(g, e, to, &rc) < 0) { /* a redirect not followed: allow all */
                    e->rules = robots_allow_all();
                    if (!e->rules) {
                        e->unavailable = 1;
                        e->rules = robots_disallow_all();
                    }
                    rc = first_error(rc, have_rules(g, e, 0, 1, 1));
                }
                free(to);
                again = 1;
            }
        }
    }
    return rc;
}

int robotsgate_fetched(robotsgate_t *g, const robotsgate_body_t *b)
{
    rentry_t *e = rg_find(g, b->origin);
    if (!e || e->rules || e->via)
        return 0;
    int rc = 0;
    if (b->moved_to && b->complete && !b->blocked && b->status >= 300 && b->status < 400 &&
        wait_on(g, e, b->moved_to, &rc) == 0)
        return first_error(rc, rg_adopt_waiting(g));
    rules_of(g, e, b);
    e->local = b->blocked || b->tls_refused;
    rc = first_error(rc, have_rules(g, e, b->blocked, !e->local, 0));
    return first_error(rc, rg_adopt_waiting(g));
}

void robotsgate_cause(const robotsgate_t *g, const char *url, robotsgate_cause_t *c)
{
    char origin[4096];
    const rentry_t *e =
        parser_url_origin(url, origin, sizeof origin) >= 0 ? rg_find(g, origin) : NULL;
    const char *why = e && e->unavailable ? e->why : NULL;
    const char *t1 = why ? strchr(why, '\t') : NULL, *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    c->kind = crawl_kind_name(CRAWL_KIND_ROBOTS_UNAVAILABLE);
    c->status = 0;
    snprintf(c->text, sizeof c->text, "%s", ROBOTSGATE_RETRY_TEXT);
    if (!t2 || t1 == why)
        return;
    char kind[32]; /* one of the vocabulary's words: its static string */
    snprintf(kind, sizeof kind, "%.*s", (int)(t1 - why), why);
    int k = crawl_kind_find(kind);
    if (k >= 0)
        c->kind = crawl_kind_name((crawl_kind_t)k);
    c->status = strtol(t1 + 1, NULL, 10);
    snprintf(c->text, sizeof c->text, "%s", t2 + 1);
}

void robotsgate_release_held(robotsgate_t *g)
{
    if (!g->nheld)
        return;
    uint64_t now = clock_now_ms();
    rentry_t *e = rg_at(g, g->pending.head);
    while (e && g->nheld) {
        rentry_t *next = rg_at(g, e->link[L_USE].next);
        if (e->hold_until && e->hold_until <= now) {
            e->hold_until = 0;
            g->nheld--;
            settle(g, e);
        }
        e = next;
    }
}

int robotsgate_poll(robotsgate_t *g)
{
    robotsgate_release_held(g);
    uint64_t now = clock_now_ms();
    if (g->defer_polls || !g->nremote || now < g->next_remote_poll_ms)
        return 0;
    g->next_remote_poll_ms = now + ROBOTSGATE_POLL_MS;
    rentry_t *stack[64], **es = g->nremote <= 64 ? stack : calloc(g->nremote, sizeof *es);
    size_t k = 0;
    if (!es)
        return 0; /* out of memory: next time */
    for (rentry_t *e = rg_at(g, g->pending.head); e && k < g->nremote;
         e = rg_at(g, e->link[L_USE].next))
        if (e->remote)
            es[k++] = e;
    int rc = look(g, es, k);
    if (es != stack)
        free(es);
    return first_error(rc, rg_adopt_waiting(g));
}

int robotsgate_next_ready(robotsgate_t *g, frontier_item_t *item, robotsgate_verdict_t *verdict)
{
    if (g->ready_head == g->nready)
        return 0;
    ready_t *r = &g->ready[g->ready_head++];
    *item = r->item;
    *verdict = r->verdict;
    return 1;
}

size_t robotsgate_parked(const robotsgate_t *g)
{
    return g->parked;
}

int robotsgate_polling(const robotsgate_t *g)
{
    return g->nremote > 0 || g->nheld > 0;
}

int robotsgate_take_parked(robotsgate_t *g, frontier_item_t **items, size_t *n)
{
    for (rentry_t *e = rg_at(g, g->pending.head); e; e = rg_at(g, e->link[L_USE].next)) {
        if (!e->nparked)
            continue;
        *items = e->parked;
        *n = e->nparked;
        g->parked -= e->nparked;
        e->parked = NULL;
        e->nparked = e->parked_cap = 0;
        if (e->hold_until) { /* nothing left to hold */
            e->hold_until = 0;
            g->nheld--;
            settle(g, e);
        }
        return 1;
    }
    return 0;
}

void robotsgate_each_item(const robotsgate_t *g, void (*fn)(const frontier_item_t *, void *),
                          void *ud)
{
    for (const rentry_t *e = rg_at(g, g->pending.head); e; e = rg_at(g, e->link[L_USE].next))
        for (size_t j = 0; j < e->nparked; j++)
            fn(&e->parked[j], ud);
    for (size_t i = g->ready_head; i < g->nready; i++)
        fn(&g->ready[i].item, ud);
}
