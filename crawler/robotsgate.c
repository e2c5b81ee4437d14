/*
 * robotsgate.c -- robots.txt for every claimed URL, shared across workers
 * (robotsgate.h).
 *
 * DESIGN: the gate keeps up to ROBOTS_CACHE rule sets of its thread
 * (rentry_t: origin, parsed rules or NULL while pending, the URLs parked on
 * it), each for a minute; a queue of origins whose robots.txt the caller is
 * to fetch; and a queue of parked URLs whose verdict is known.  Rules are
 * cached in Redis for every worker, through the frontier, which owns the
 * keys (P robots:<origin>, P robots-lock:<origin>, P sitemaps):
 *   frontier_robots_put     "R" + robots_serialize() for 24 h, or "U" (5xx /
 *                           unreachable: disallow all for now, as long as the
 *                           first retry backoff, at most 60 s)
 *   frontier_robots_lock    held by the one worker that fetches (expires after
 *                           the fetch timeout, so a dead holder does not block
 *                           anyone for long)
 *   frontier_sitemaps_add   the Sitemap: lines seen
 * The workers that lose the lock poll the cache (robotsgate_poll).  The
 * "shared cache" section below is the gate's only use of Redis.  Crawl-delay sets the host's own
 * delay in the frontier; with --sitemaps the Sitemap: URLs in scope are seeded. Invariants: an
 * entry with parked URLs has no rules; a pending entry (no rules) is never evicted; `parked` is the
 * sum of the entries' nparked, and the ready queue has room for all of them besides what it holds;
 * `nremote` counts the entries with `remote` set; the fetcher stores the
 * rules before it unlocks.
 */
#include "robotsgate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "parser.h"
#include "robots.h"

#define ROBOTS_TTL_S 86400    /* cache parsed rules in Redis for 24 h */
#define ROBOTS_RETRY_TTL_S 60 /* "disallow all for now" lasts at most this */
#define ROBOTS_CACHE 1024     /* rule sets kept per thread */
#define LOCAL_TTL_MS 60000    /* ... each for a minute */

/* A robots.txt rule set known to this thread, or one being fetched. */
typedef struct rentry {
    char *origin;
    robots_t *rules; /* NULL while pending */
    int unavailable; /* 5xx/unreachable: disallow all for now */
    int remote;      /* another worker is fetching it */
    uint64_t expires_ms;
    frontier_item_t *parked; /* URLs waiting for the rules */
    size_t nparked, parked_cap;
} rentry_t;

typedef struct ready {
    frontier_item_t item;
    robotsgate_verdict_t verdict;
} ready_t;

struct robotsgate {
    const crawl_config_t *cfg;
    frontier_t *fr; /* borrowed */
    const scope_t *scope;
    rentry_t *robots; /* ROBOTS_CACHE slots, nrobots used */
    size_t nrobots;
    size_t parked;  /* URLs parked on pending entries */
    size_t nremote; /* entries waiting for another worker's robots.txt */
    uint64_t next_remote_poll_ms;
    char **fetch; /* origins to fetch (a stack) */
    size_t nfetch, fetch_cap;
    char *fetch_out; /* the one robotsgate_next_fetch() returned last */
    ready_t *ready;  /* parked URLs with their verdict, FIFO from ready_head */
    size_t nready, ready_head, ready_cap;
};

/* ---- the shared cache in Redis (the frontier's keys) -------------------------- */

/* The cached value of origin: 1 and *val (malloc'd, caller frees) and *len,
 * 0 if none (or Redis answered an error: the rules are fetched again), or
 * CRAWL_EREDIS. */
static int shared_get(robotsgate_t *g, const char *origin, char **val, size_t *len)
{
    int rc = frontier_robots_get(g->fr, origin, val, len);
    if (rc == CRAWL_EREDIS)
        return rc;
    if (rc < 0 || !*val || *len < 1) {
        free(*val);
        *val = NULL;
        return 0;
    }
    return 1;
}

static int shared_put(robotsgate_t *g, const char *origin, const char *val, size_t len,
                      uint32_t ttl_s)
{
    int rc = frontier_robots_put(g->fr, origin, val, len, ttl_s);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* One robots.txt fetch per origin for the whole crawl: 1 if this worker
 * holds the lock now, 0 if another does (or Redis refused the command), or
 * CRAWL_EREDIS. */
static int shared_lock(robotsgate_t *g, const char *origin, uint32_t ttl_ms)
{
    int won = 0;
    int rc = frontier_robots_lock(g->fr, origin, ttl_ms, &won);
    return rc == CRAWL_EREDIS ? rc : won;
}

static int shared_unlock(robotsgate_t *g, const char *origin)
{
    int rc = frontier_robots_unlock(g->fr, origin);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* Adds the Sitemap: URLs to the crawl's set (one round trip). */
static int sitemaps_add(robotsgate_t *g, const char *const *urls, size_t n)
{
    int rc = frontier_sitemaps_add(g->fr, urls, n);
    return rc == CRAWL_EREDIS ? rc : 0;
}

/* ---- the rule sets of this thread --------------------------------------------- */

static int first_error(int rc, int err)
{
    return rc < 0 ? rc : err < 0 ? err : 0;
}

static void entry_clear(rentry_t *e)
{
    free(e->origin);
    robots_free(e->rules);
    for (size_t i = 0; i < e->nparked; i++)
        frontier_item_clear(&e->parked[i]);
    free(e->parked);
    memset(e, 0, sizeof *e);
}

static rentry_t *find(robotsgate_t *g, const char *origin)
{
    for (size_t i = 0; i < g->nrobots; i++)
        if (!strcmp(g->robots[i].origin, origin))
            return &g->robots[i];
    return NULL;
}

/* Drops expired (all: every) settled entries; keeps pending ones. */
static void evict(robotsgate_t *g, int all)
{
    uint64_t now = clock_now_ms();
    size_t keep = 0;
    for (size_t i = 0; i < g->nrobots; i++) {
        rentry_t *e = &g->robots[i];
        if (e->rules && (all || e->expires_ms <= now))
            entry_clear(e);
        else
            g->robots[keep++] = *e;
    }
    g->nrobots = keep;
}

static rentry_t *add_entry(robotsgate_t *g, const char *origin)
{
    if (g->nrobots >= ROBOTS_CACHE)
        evict(g, 1);
    if (g->nrobots >= ROBOTS_CACHE)
        return NULL;
    rentry_t *e = &g->robots[g->nrobots];
    memset(e, 0, sizeof *e);
    if (!(e->origin = strdup(origin)))
        return NULL;
    g->nrobots++;
    return e;
}

/* "Disallow all for now" lasts as long as the first retry backoff. */
static uint32_t unavailable_ttl_s(const robotsgate_t *g)
{
    uint32_t s = g->cfg->backoff_ms / 1000;
    return s < 1 ? 1 : s > ROBOTS_RETRY_TTL_S ? ROBOTS_RETRY_TTL_S : s;
}

static void set_expiry(const robotsgate_t *g, rentry_t *e)
{
    e->expires_ms = clock_now_ms() + (e->unavailable ? unavailable_ttl_s(g) * 1000u : LOCAL_TTL_MS);
}

/* Reads the shared copy: 1 if found and loaded into e, 0 if not, or an
 * error (then as if not found). */
static int load_shared(robotsgate_t *g, rentry_t *e)
{
    char *val;
    size_t len;
    int rc = shared_get(g, e->origin, &val, &len);
    if (rc <= 0)
        return rc;
    int err = 0;
    if (val[0] == 'U') {
        if ((e->rules = robots_disallow_all()))
            e->unavailable = 1;
    } else if (val[0] == 'R') {
        e->rules = robots_deserialize(val + 1, len - 1, &err);
    }
    free(val);
    if (!e->rules)
        return 0;
    set_expiry(g, e);
    return 1;
}

static int store_shared(robotsgate_t *g, const rentry_t *e)
{
    char *ser = NULL;
    size_t len = 0;
    if (!e->unavailable && robots_serialize(e->rules, &ser, &len) < 0)
        return 0;
    size_t vlen = e->unavailable ? 1 : len + 1;
    char *val = malloc(vlen);
    int rc = 0;
    if (val) {
        val[0] = e->unavailable ? 'U' : 'R';
        if (!e->unavailable)
            memcpy(val + 1, ser, len);
        rc = shared_put(g, e->origin, val, vlen,
                        e->unavailable ? unavailable_ttl_s(g) : ROBOTS_TTL_S);
    }
    free(val);
    free(ser);
    return rc;
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
        size_t cap = e->parked_cap ? e->parked_cap * 2 : 8;
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

/* The rules of e are known now: its parked URLs join the ready queue (room
 * reserved by park). */
static void settle_parked(robotsgate_t *g, rentry_t *e)
{
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

/* ---- fetching: who does, and what it gives ---------------------------------------- */

/* Asks the caller to fetch e's robots.txt; the lock is held.  0, or -1 on
 * out of memory (then e allows all and the lock is released). */
static int want_fetch(robotsgate_t *g, rentry_t *e, int *rc)
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
        return 0;
    }
    e->rules = robots_allow_all();
    e->expires_ms = clock_now_ms() + LOCAL_TTL_MS;
    *rc = first_error(*rc, shared_unlock(g, e->origin));
    return -1;
}

/* With the lock held: the fetcher stores the rules before it unlocks, so
 * rules missing when we looked may have been stored between that look and
 * our lock.  Looks once more and asks for the fetch only if they are still
 * missing.  Returns 1 if a fetch is wanted; 0 if e has its rules now (found,
 * or allow-all for lack of memory), the lock then released. */
static int fetch_if_still_missing(robotsgate_t *g, rentry_t *e, int *rc)
{
    int found = load_shared(g, e);
    *rc = first_error(*rc, found);
    if (found <= 0)
        return want_fetch(g, e, rc) == 0;
    *rc = first_error(*rc, shared_unlock(g, e->origin));
    return 0;
}

static int lock_origin(robotsgate_t *g, const char *origin, int *rc)
{
    int mine = shared_lock(g, origin, g->cfg->timeout_ms + g->cfg->connect_timeout_ms);
    *rc = first_error(*rc, mine);
    return mine != 0; /* an error counts as holding it */
}

/* A new entry: its rules from Redis, or this worker fetches them, or
 * another worker does (then we poll). */
static int lookup(robotsgate_t *g, rentry_t *e)
{
    int rc = load_shared(g, e);
    if (rc > 0)
        return 0;
    if (lock_origin(g, e->origin, &rc)) {
        fetch_if_still_missing(g, e, &rc);
    } else {
        e->remote = 1;
        g->nremote++;
    }
    return rc;
}

robotsgate_t *robotsgate_new(const crawl_config_t *cfg, frontier_t *fr, const scope_t *scope)
{
    robotsgate_t *g = calloc(1, sizeof *g);
    if (!g || !(g->robots = calloc(ROBOTS_CACHE, sizeof *g->robots))) {
        free(g);
        return NULL;
    }
    g->cfg = cfg;
    g->fr = fr;
    g->scope = scope;
    return g;
}

void robotsgate_free(robotsgate_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nrobots; i++)
        entry_clear(&g->robots[i]);
    free(g->robots);
    for (size_t i = 0; i < g->nfetch; i++)
        free(g->fetch[i]);
    free(g->fetch);
    free(g->fetch_out);
    for (size_t i = g->ready_head; i < g->nready; i++)
        frontier_item_clear(&g->ready[i].item);
    free(g->ready);
    free(g);
}

int robotsgate_check(robotsgate_t *g, frontier_item_t *item, robotsgate_verdict_t *verdict)
{
    char origin[4096];
    int rc = 0;
    *verdict = ROBOTSGATE_ALLOW;
    if (g->cfg->ignore_robots || parser_url_origin(item->url, origin, sizeof origin) < 0)
        return 0;
    rentry_t *e = find(g, origin);
    if (e && e->rules && e->expires_ms <= clock_now_ms()) {
        evict(g, 0);
        e = NULL;
    }
    if (!e) {
        if (!(e = add_entry(g, origin)))
            return 0; /* out of memory: fetch rather than lose it */
        rc = lookup(g, e);
    }
    if (!e->rules) {
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
    rentry_t *e = find(g, origin);
    if (!e || e->rules)
        return 0;
    e->rules = robots_allow_all();
    e->expires_ms = clock_now_ms() + LOCAL_TTL_MS;
    int rc = shared_unlock(g, origin);
    settle_parked(g, e);
    return rc;
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
    return rc < 0 ? rc : 0;
}

static int note_sitemaps(robotsgate_t *g, const robots_t *r)
{
    size_t n = robots_sitemap_count(r);
    int rc = 0;
    if (!n)
        return 0;
    if (g->cfg->sitemaps)
        rc = seed_sitemaps(g, r);
    const char **urls = calloc(n, sizeof *urls);
    if (!urls)
        return rc;
    for (size_t i = 0; i < n; i++)
        urls[i] = robots_sitemap(r, i);
    rc = first_error(rc, sitemaps_add(g, urls, n));
    free(urls);
    return rc;
}

/* The rules a robots.txt transfer gave. */
static void rules_of(robotsgate_t *g, rentry_t *e, const robotsgate_body_t *b)
{
    robots_free(e->rules);
    e->rules = NULL;
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
        e->rules = robots_disallow_all();
    }
    if (!e->rules) { /* out of memory parsing: be conservative, retry later */
        e->unavailable = 1;
        e->rules = robots_disallow_all();
    }
    set_expiry(g, e);
}

int robotsgate_fetched(robotsgate_t *g, const robotsgate_body_t *b)
{
    rentry_t *e = find(g, b->origin);
    int rc = 0;
    if (!e)
        return 0;
    rules_of(g, e, b);
    if (!b->blocked && !b->tls_refused) /* not for 24 h: a certificate gets fixed */
        rc = store_shared(g, e);
    uint32_t delay = e->rules && !e->unavailable ? robots_crawl_delay_ms(e->rules) : 0;
    if (delay)
        rc = first_error(rc, frontier_set_host_delay(g->fr, e->origin, delay));
    if (!e->unavailable && e->rules)
        rc = first_error(rc, note_sitemaps(g, e->rules));
    rc = first_error(rc, shared_unlock(g, e->origin));
    settle_parked(g, e);
    return rc;
}

int robotsgate_poll(robotsgate_t *g)
{
    uint64_t now = clock_now_ms();
    int rc = 0;
    if (!g->nremote || now < g->next_remote_poll_ms)
        return 0;
    g->next_remote_poll_ms = now + ROBOTSGATE_POLL_MS;
    for (size_t i = 0; i < g->nrobots; i++) {
        rentry_t *e = &g->robots[i];
        if (!e->remote)
            continue;
        int found = load_shared(g, e);
        rc = first_error(rc, found);
        if (found > 0) {
            e->remote = 0;
            g->nremote--;
            settle_parked(g, e);
        } else if (lock_origin(g, e->origin, &rc)) {
            e->remote = 0;
            g->nremote--;
            if (!fetch_if_still_missing(g, e, &rc))
                settle_parked(g, e);
        }
    }
    return rc;
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
    return g->nremote > 0;
}

int robotsgate_take_parked(robotsgate_t *g, frontier_item_t **items, size_t *n)
{
    for (size_t i = 0; i < g->nrobots; i++) {
        rentry_t *e = &g->robots[i];
        if (!e->nparked)
            continue;
        *items = e->parked;
        *n = e->nparked;
        g->parked -= e->nparked;
        e->parked = NULL;
        e->nparked = e->parked_cap = 0;
        return 1;
    }
    return 0;
}

void robotsgate_each_item(const robotsgate_t *g, void (*fn)(const frontier_item_t *, void *),
                          void *ud)
{
    for (size_t i = 0; i < g->nrobots; i++)
        for (size_t j = 0; j < g->robots[i].nparked; j++)
            fn(&g->robots[i].parked[j], ud);
    for (size_t i = g->ready_head; i < g->nready; i++)
        fn(&g->ready[i].item, ud);
}

void robotsgate_set_frontier(robotsgate_t *g, frontier_t *fr)
{
    g->fr = fr;
}
