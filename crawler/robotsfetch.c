/*
 * robotsfetch.c -- robots.txt for every claimed URL, shared across workers.
 *
 * DESIGN: rules are cached in Redis for every worker, under
 * "crawler:{NAME}:robots:<origin>" with a TTL of 24 h ("R" + robots_serialize
 * output), or 60 s when the file was unavailable (5xx / unreachable: "U",
 * disallow all for now; URLs of that host go back to the frontier's retry).
 * Each thread keeps up to ENGINE_ROBOTS_CACHE parsed rule sets for a minute.
 * A URL whose origin has no rules yet is parked on a pending entry while one
 * robots.txt transfer (redirects followed, up to 5; 500 KiB read) runs; one
 * per host for the whole crawl: the worker that wins "P robots-lock:<origin>"
 * fetches, the others poll Redis for the result (rfetch_poll).
 * Sitemap: lines go to the set "crawler:{NAME}:sitemaps".  Crawl-delay sets
 * the host's own delay in the frontier (capped there).
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

#define LOCAL_TTL_MS 60000

static int key_for(const worker_t *w, const char *what, const char *origin, char *buf, size_t n)
{
    int len = snprintf(buf, n, "crawler:{%s}:%s%s", w->e->cfg->crawl, what, origin ? origin : "");
    return len < 0 || (size_t)len >= n ? -1 : len;
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

void rfetch_cache_free(worker_t *w)
{
    for (size_t i = 0; i < w->nrobots; i++)
        entry_clear(&w->robots[i]);
    free(w->robots);
    w->robots = NULL;
    w->nrobots = 0;
}

/* Hands parked URLs back to the frontier untouched (shutdown). */
void rfetch_release_parked(worker_t *w)
{
    for (size_t i = 0; i < w->nrobots; i++) {
        rentry_t *e = &w->robots[i];
        if (e->nparked && frontier_release(w->fr, e->parked, e->nparked) == 0)
            atomic_fetch_add(&w->e->released, e->nparked);
        for (size_t j = 0; j < e->nparked; j++)
            frontier_item_clear(&e->parked[j]);
        w->parked -= e->nparked;
        e->nparked = 0;
    }
}

static rentry_t *find(worker_t *w, const char *origin)
{
    for (size_t i = 0; i < w->nrobots; i++)
        if (!strcmp(w->robots[i].origin, origin))
            return &w->robots[i];
    return NULL;
}

/* Drops expired, settled entries; keeps pending ones. */
static void evict(worker_t *w, int all)
{
    uint64_t now = engine_now_ms();
    size_t keep = 0;
    for (size_t i = 0; i < w->nrobots; i++) {
        rentry_t *e = &w->robots[i];
        if (e->rules && (all || e->expires_ms <= now))
            entry_clear(e);
        else
            w->robots[keep++] = *e;
    }
    w->nrobots = keep;
}

static rentry_t *add_entry(worker_t *w, const char *origin)
{
    if (w->nrobots >= ENGINE_ROBOTS_CACHE)
        evict(w, 1);
    if (!w->robots && !(w->robots = calloc(ENGINE_ROBOTS_CACHE, sizeof *w->robots)))
        return NULL;
    if (w->nrobots >= ENGINE_ROBOTS_CACHE)
        return NULL;
    rentry_t *e = &w->robots[w->nrobots];
    memset(e, 0, sizeof *e);
    if (!(e->origin = strdup(origin)))
        return NULL;
    w->nrobots++;
    return e;
}

/* "Disallow all for now" lasts as long as the first retry backoff. */
static uint32_t unavailable_ttl_s(const worker_t *w)
{
    uint32_t s = w->e->cfg->backoff_ms / 1000;
    return s < 1 ? 1 : s > ENGINE_ROBOTS_RETRY_TTL_S ? ENGINE_ROBOTS_RETRY_TTL_S : s;
}

/* Reads the shared copy; 1 if found and loaded into e. */
static int load_shared(worker_t *w, rentry_t *e)
{
    char key[4200];
    if (key_for(w, "robots:", e->origin, key, sizeof key) < 0)
        return 0;
    redisReply *r = redisCommand(w->rc, "GET %s", key);
    int found = 0;
    if (r && r->type == REDIS_REPLY_STRING && r->len >= 1) {
        int err = 0;
        if (r->str[0] == 'U') {
            e->unavailable = 1;
            e->rules = robots_disallow_all();
        } else if (r->str[0] == 'R') {
            e->rules = robots_deserialize(r->str + 1, r->len - 1, &err);
        }
        found = e->rules != NULL;
    } else if (!r) {
        w->failed = 1;
    }
    if (r)
        freeReplyObject(r);
    e->expires_ms =
        engine_now_ms() + (e->unavailable ? unavailable_ttl_s(w) * 1000u : LOCAL_TTL_MS);
    return found;
}

static void apply(worker_t *w, rentry_t *e, frontier_item_t *item)
{
    if (e->unavailable) {
        done_t d = {.item = *item,
                    .error_kind = "robots-unavailable",
                    .error_text = "robots.txt answered 5xx or was unreachable; retrying later"};
        fetch_retry(w, &d, 0); /* the frontier's backoff */
        frontier_item_clear(item);
        return;
    }
    if (robots_allowed(e->rules, item->url + strlen(e->origin))) {
        fetch_page(w, item);
        return;
    }
    done_push(w, item, 0, "robots", "disallowed by robots.txt");
    atomic_fetch_add(&w->e->errors, 1);
}

static int park(rentry_t *e, frontier_item_t *item)
{
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
    return 0;
}

/* The rules of e are known now: its parked URLs go on. */
static void apply_parked(worker_t *w, rentry_t *e)
{
    char *origin = strdup(e->origin);
    size_t n = e->nparked;
    frontier_item_t *items = e->parked;
    e->parked = NULL;
    e->nparked = e->parked_cap = 0;
    w->parked -= n;
    for (size_t i = 0; i < n; i++) {
        rentry_t *cur = origin ? find(w, origin) : NULL;
        if (cur && cur->rules)
            apply(w, cur, &items[i]);
        else
            fetch_page(w, &items[i]); /* cannot happen; never drop a leased URL */
        frontier_item_clear(&items[i]);
    }
    free(items);
    free(origin);
}

/* One robots.txt fetch per host for the whole crawl: the fetcher holds
 * "P robots-lock:<origin>" (SET NX, expires after the fetch timeout, so a
 * dead holder does not block anyone for long); others wait for the rules to
 * appear in Redis.  1 if this worker holds the lock (or Redis failed). */
static int lock_origin(worker_t *w, const char *origin)
{
    char key[4200];
    if (key_for(w, "robots-lock:", origin, key, sizeof key) < 0)
        return 1;
    redisReply *r = redisCommand(w->rc, "SET %s 1 NX PX %u", key,
                                 w->e->cfg->timeout_ms + w->e->cfg->connect_timeout_ms);
    int mine = !r || r->type == REDIS_REPLY_STATUS;
    if (!r)
        w->failed = 1;
    if (r)
        freeReplyObject(r);
    return mine;
}

static void unlock_origin(worker_t *w, const char *origin)
{
    char key[4200];
    if (key_for(w, "robots-lock:", origin, key, sizeof key) < 0)
        return;
    redisReply *r = redisCommand(w->rc, "DEL %s", key);
    if (r)
        freeReplyObject(r);
    else
        w->failed = 1;
}

/* Starts this worker's fetch of origin's robots.txt: 0, or -1 when it
 * could not start (the entry then allows all: a page fetch will say what is
 * wrong with the host). */
static int start_robots(worker_t *w, rentry_t *e)
{
    xfer_t *x = fetch_get(w, XF_ROBOTS, e->origin);
    if (!x || !(x->origin = strdup(e->origin)) || fetch_start(w, x) < 0) {
        if (x)
            fetch_put(w, x);
        e->rules = robots_allow_all();
        e->expires_ms = engine_now_ms() + LOCAL_TTL_MS;
        return -1;
    }
    return 0;
}

/* With the lock held: the fetcher stores the rules before it unlocks, so
 * rules missing when we looked may have been stored between that look and
 * our lock.  Looks once more and starts the fetch only if they are still
 * missing.  Returns 1 if a fetch is on its way; 0 if e has its rules now
 * (found, or allow-all because the fetch could not start), the lock then
 * released and the caller to apply them to the parked URLs. */
static int fetch_if_still_missing(worker_t *w, rentry_t *e)
{
    if (!load_shared(w, e) && start_robots(w, e) == 0)
        return 1;
    unlock_origin(w, e->origin);
    return 0;
}

/* Entries waiting for another worker's fetch: look for the rules in Redis
 * every ENGINE_ROBOTS_POLL_MS, or take the fetch over if its lock has expired. */
void rfetch_poll(worker_t *w)
{
    uint64_t now = engine_now_ms();
    if (!w->nremote || now < w->next_remote_poll_ms)
        return;
    w->next_remote_poll_ms = now + ENGINE_ROBOTS_POLL_MS;
    for (size_t i = 0; i < w->nrobots; i++) {
        rentry_t *e = &w->robots[i];
        if (!e->remote)
            continue;
        if (load_shared(w, e)) {
            e->remote = 0;
            w->nremote--;
            apply_parked(w, e);
            i = (size_t)-1; /* entries may have moved: start over */
        } else if (lock_origin(w, e->origin)) {
            e->remote = 0;
            w->nremote--;
            if (!fetch_if_still_missing(w, e)) {
                apply_parked(w, e);
                i = (size_t)-1;
            }
        }
    }
}

void rfetch_dispatch(worker_t *w, frontier_item_t *item)
{
    char origin[4096];
    if (w->e->cfg->ignore_robots || parser_url_origin(item->url, origin, sizeof origin) < 0) {
        fetch_page(w, item);
        return;
    }
    rentry_t *e = find(w, origin);
    if (e && e->rules && e->expires_ms <= engine_now_ms()) {
        evict(w, 0);
        e = NULL;
    }
    if (!e) {
        if (!(e = add_entry(w, origin))) {
            fetch_page(w, item); /* out of memory: fetch rather than lose it */
            return;
        }
        if (!load_shared(w, e)) {
            if (lock_origin(w, origin)) {
                fetch_if_still_missing(w, e);
            } else {
                e->remote = 1; /* another worker is fetching it */
                w->nremote++;
            }
        }
    }
    if (!e->rules) {
        if (park(e, item) == 0) {
            w->parked++;
            return;
        }
        fetch_page(w, item);
        return;
    }
    apply(w, e, item);
}

static void store_shared(worker_t *w, rentry_t *e)
{
    char key[4200];
    char *ser = NULL;
    size_t len = 0;
    if (key_for(w, "robots:", e->origin, key, sizeof key) < 0)
        return;
    if (!e->unavailable && robots_serialize(e->rules, &ser, &len) < 0)
        return;
    size_t vlen = e->unavailable ? 1 : len + 1;
    char *val = malloc(vlen);
    if (val) {
        val[0] = e->unavailable ? 'U' : 'R';
        if (!e->unavailable)
            memcpy(val + 1, ser, len);
        uint32_t ttl = e->unavailable ? unavailable_ttl_s(w) : ENGINE_ROBOTS_TTL_S;
        redisReply *r = redisCommand(w->rc, "SET %s %b EX %u", key, val, vlen, ttl);
        if (r)
            freeReplyObject(r);
        else
            w->failed = 1;
    }
    free(val);
    free(ser);
}

/* --sitemaps: the Sitemap: URLs in scope are seeded (through the Bloom
 * filter, so each once); their <loc> URLs are then offered like links. */
static void seed_sitemaps(worker_t *w, const robots_t *r)
{
    size_t n = robots_sitemap_count(r), k = 0;
    char **urls = calloc(n + 1, sizeof *urls);
    for (size_t i = 0; urls && i < n; i++) {
        char *u = NULL;
        if (parser_url_normalize(NULL, robots_sitemap(r, i), w->e->cfg->max_url_length, &u) == 0 &&
            scope_allows(w->scope, u))
            urls[k++] = u;
        else
            free(u);
    }
    if (k && frontier_seed(w->fr, (const char *const *)urls, k, 0, NULL) < 0)
        w->failed = 1;
    for (size_t i = 0; i < k; i++)
        free(urls[i]);
    free(urls);
}

static void note_sitemaps(worker_t *w, const robots_t *r)
{
    size_t n = robots_sitemap_count(r);
    char key[256];
    if (!n || key_for(w, "sitemaps", NULL, key, sizeof key) < 0)
        return;
    if (w->e->cfg->sitemaps)
        seed_sitemaps(w, r);
    for (size_t i = 0; i < n; i++)
        redisAppendCommand(w->rc, "SADD %s %s", key, robots_sitemap(r, i));
    for (size_t i = 0; i < n; i++) {
        redisReply *rep = NULL;
        if (redisGetReply(w->rc, (void **)&rep) != REDIS_OK) {
            w->failed = 1;
            return;
        }
        freeReplyObject(rep);
    }
}

/* The robots.txt transfer of x->origin ended. */
void rfetch_done(worker_t *w, xfer_t *x, CURLcode res)
{
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    rentry_t *e = find(w, x->origin);
    if (!e)
        return;
    int complete =
        res == CURLE_OK || (res == CURLE_WRITE_ERROR && x->body.len >= ENGINE_ROBOTS_MAX_BYTES);
    if (complete && code >= 200 && code < 300) {
        int err = 0;
        e->rules = robots_parse(x->body.p, x->body.len, w->e->cfg->user_agent, &err);
    } else if (x->blocked || (complete && code >= 300 && code < 500)) {
        e->rules = robots_allow_all(); /* 4xx: no rules; blocked: the page fetch says so */
    } else {
        e->unavailable = 1;
        e->rules = robots_disallow_all();
    }
    if (!e->rules) { /* out of memory parsing: be conservative, retry later */
        e->unavailable = 1;
        e->rules = robots_disallow_all();
    }
    e->expires_ms =
        engine_now_ms() + (e->unavailable ? unavailable_ttl_s(w) * 1000u : LOCAL_TTL_MS);
    if (!x->blocked)
        store_shared(w, e);
    uint32_t delay = e->rules && !e->unavailable ? robots_crawl_delay_ms(e->rules) : 0;
    if (delay && frontier_set_host_delay(w->fr, e->origin, delay) < 0)
        w->failed = 1;
    if (!e->unavailable)
        note_sitemaps(w, e->rules);
    unlock_origin(w, e->origin);
    apply_parked(w, e);
}
