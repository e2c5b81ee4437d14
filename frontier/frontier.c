/*
 * frontier.c -- the handle, function loading, releasing.  Claiming lives
 * in claim.c, heartbeats in heartbeat.c, offering links in offer.c, finishing and
 * retrying in finish.c, seeding in seed.c, stats and reset in stats.c, the
 * Lua in frontier/lua/ (library.c: its names), key names in keys.c, the
 * robots.txt cache, sitemaps and seed hosts in hostinfo.c.
 *
 * DESIGN.  Keys of a crawl (P = the crawl's key prefix; keys.def lists them,
 * keys.h builds their names):
 *   P hosts         hash   origin -> URLs it admitted and its queue while short
 *   P q:<origin>    list   a longer queue (lua/queue.lua); entries NUMS REST
 *                          (entry.c): REST the URL's path after the origin, or
 *                          the whole URL when the origin does not prefix it;
 *                          NUMS "D", "D:T" or "D:T:H" (depth, tries, redirect
 *                          hops), zeros left out (origin: parser_url_origin)
 *   P ready         zset   origin -> ms when it may next be claimed; holds the
 *                          hosts with a non-empty queue and room in flight
 *   P fresh         list   more hosts claimable now (lua/wake.lua: wake_new)
 *   P hnext         hash   origin -> earliest ms of its next claim
 *   P hdelay        hash   origin -> its own delay in ms (robots Crawl-delay)
 *   P hinflight     hash   origin -> URLs in flight (absent when 0)
 *   P hadmit        hash   an older build's P hosts counts, still read
 *   P hfail         hash   origin -> consecutive retried failures
 *   P delayed       zset   "ORIGIN\tENTRY" -> ms when the retry is due
 *   P dead          list   "DEPTH TRIES [HOPS ]URL\tSTATUS\tERROR" (dead letters,
 *                          the URL whole: an operator reads them)
 *   P lease:<wid>   hash   "ORIGIN\tSEQ" -> entry: the URLs worker wid holds, by
 *                          lease number SEQ and origin of the queue they came from
 *   P workers       zset   wid -> ms when its lease expires
 *   P worker:<wid>  hash   heartbeat: host pid started last lease_until pages
 *                          pages_per_s in_flight
 *   P seq           string claim counter: claim b leases b*10000+1.. (the
 *                          lease numbers; FR_MAX_CLAIM < 10000)
 *   P stats         hash   gauges queued inflight; counters enqueued seeds
 *                          claimed fetched bytes retried dead reclaimed
 *                          released new_links seen_links skipped_links errors
 *                          status_2xx..status_5xx status_other
 *   P errors        hash   error kind -> count
 *   P seedhosts     set    hosts of the seeds, added by the seeding script
 *   P control       hash   what an operator set for the whole crawl (control.c):
 *                          paused, drain (ms), and overrides of the workers'
 *                          per_host delay max_delay max_pages max_pages_per_host
 *   P shards, P quota  (shard 0) the crawl's shard count; a page limit's
 *                          allotments over its shards (quota.c)
 *   P seen:meta, P seen:b:<i>   the Bloom filter (bloom/); frontier_open
 *                          opens it when the caller gives none
 *   P sitemaps, P robots:<origin>, P robots-lock:<origin>
 *                          what the fetchers share about hosts (hostinfo.c)
 * Times are the Redis server's clock in ms since the epoch.
 *
 * A claim moves entries from queues into the worker's lease hash (leases, not
 * pops); finish/retry/release remove them; a worker whose lease expired gets
 * its entries pushed back to the front of their queues by whichever worker
 * claims or heartbeats next.  The lease token given to the caller is
 * "ORIGIN\tSEQ@WID" (its lease field, then its worker), so any handle can
 * finish an item, and every script reads an item's origin from its lease.
 *
 * The Lua code is a Redis 7 Functions library (library.c); every call goes
 * through fr_run or fr_send + fr_collect (calls.c).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- handle -------------------------------------------------------------- */

void frontier_config_defaults(frontier_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->crawl = FRONTIER_DEFAULT_CRAWL;
    cfg->per_host = FRONTIER_DEFAULT_PER_HOST;
    cfg->delay_ms = FRONTIER_DEFAULT_DELAY_MS;
    cfg->max_delay_ms = FRONTIER_DEFAULT_MAX_DELAY_MS;
    cfg->lease_ms = FRONTIER_DEFAULT_LEASE_MS;
    cfg->max_depth = UINT32_MAX;
    cfg->max_tries = FRONTIER_DEFAULT_MAX_TRIES;
    cfg->backoff_ms = FRONTIER_DEFAULT_BACKOFF_MS;
    cfg->backoff_max_ms = FRONTIER_DEFAULT_BACKOFF_MAX_MS;
    cfg->bloom_capacity = BLOOM_DEFAULT_CAPACITY;
    cfg->bloom_fp_rate = BLOOM_DEFAULT_FP_RATE;
}

int frontier_bloom_name(const char *crawl, char *buf, size_t buflen)
{
    char p[FR_PREFIX_MAX];
    if (!crawl || fr_prefix(crawl, p, sizeof p) < 0)
        return CRAWL_EINVAL;
    return fr_key_build(p, FR_K_SEEN, NULL, 0, buf, buflen) < 0 ? CRAWL_EINVAL : 0;
}

static void normalize_config(frontier_config_t *c)
{
    if (!c->per_host)
        c->per_host = FRONTIER_DEFAULT_PER_HOST;
    if (!c->lease_ms)
        c->lease_ms = FRONTIER_DEFAULT_LEASE_MS;
    if (!c->max_tries)
        c->max_tries = FRONTIER_DEFAULT_MAX_TRIES;
    if (c->backoff_max_ms < c->backoff_ms)
        c->backoff_max_ms = c->backoff_ms;
}

static char *default_worker_id(const char *host, long pid)
{
    static atomic_uint counter;
    unsigned n = atomic_fetch_add(&counter, 1);
    char buf[160];
    snprintf(buf, sizeof buf, "%s:%ld:%u", host, pid, n);
    return strdup(buf);
}

/* Checks the server is Redis >= 7.0 (Functions) and whether it has the
 * crawler module loaded (CRAWLER.BFADD: bloom/redis_module.c). */
static int check_server(frontier_t *f, char *errbuf, size_t errlen)
{
    redisReply *r = redisCommand(f->rc, "INFO server modules");
    f->round_trips++;
    if (r && r->type == REDIS_REPLY_ERROR) { /* Redis < 7 takes one section: for the message */
        freeReplyObject(r);
        r = redisCommand(f->rc, "INFO server");
        f->round_trips++;
    }
    if (!r) {
        snprintf(errbuf, errlen, "redis: %s", f->rc->errstr);
        return CRAWL_EREDIS;
    }
    int major = 0, minor = 0;
    const char *v = r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    if (v)
        sscanf(v + 14, "%d.%d", &major, &minor);
    f->bits_module = !f->cfg.bitfield_only && v && strstr(r->str, "\r\nmodule:name=crawler,");
    freeReplyObject(r);
    if (major >= 7)
        return 0;
    snprintf(errbuf, errlen, "the frontier needs Redis >= 7.0 (server is %d.%d)", major, minor);
    return CRAWL_EREPLY;
}

/* The keys check_keys reads at open: every single key of keys.def but the
 * Bloom filter (bloom_open checks its own), and this worker's two. */
#define OPEN_KEYS (FR_K_COUNT + 2)

/* Checks, in one pipelined round of TYPE, that the crawl's keys are of their
 * keys.def types (or absent), before frontier_open writes anything (the
 * Bloom filter, the worker's registration): CRAWL_EWRONGTYPE and errbuf
 * "<prefix>seq is a list, expected a string".  The scripts check
 * again (frontier/lua/types.lua): a key may change after this. */
static int check_keys(frontier_t *f, char *errbuf, size_t errlen)
{
    fr_args_t k;
    const char *want[OPEN_KEYS];
    size_t n = 0;
    fa_init(&k);
    for (int id = 0; id < FR_K_COUNT; id++)
        if (!fr_key_is_family((fr_key_id_t)id) && id != FR_K_SEEN) {
            want[n++] = fr_key_type((fr_key_id_t)id);
            fa_key(&k, f->prefix, (fr_key_id_t)id, NULL, 0);
        }
    want[n++] = "hash";
    fa_key(&k, f->prefix, FR_K_LEASE, f->worker, strlen(f->worker));
    want[n++] = "hash";
    fa_key(&k, f->prefix, FR_K_WORKER, f->worker, strlen(f->worker));
    int rc = k.oom ? CRAWL_ENOMEM : 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (redisAppendCommand(f->rc, "TYPE %b", k.v[i], k.len[i]) != REDIS_OK)
            rc = CRAWL_EREDIS;
    f->round_trips += rc == 0;
    for (size_t i = 0; rc != CRAWL_EREDIS && rc != CRAWL_ENOMEM && i < n; i++) {
        redisReply *r = NULL; /* every reply is read, the first wrong one kept */
        if (redisGetReply(f->rc, (void **)&r) != REDIS_OK || !r) {
            rc = CRAWL_EREDIS;
            break;
        }
        if (rc < 0)
            ;
        else if (r->type != REDIS_REPLY_STATUS)
            rc = CRAWL_EREPLY;
        else if (strcmp(r->str, "none") && strcmp(r->str, want[i])) {
            snprintf(errbuf, errlen, "%.*s is a %s, expected a %s", (int)k.len[i], k.v[i], r->str,
                     want[i]);
            snprintf(f->last_error, sizeof f->last_error, "%s", errbuf);
            rc = CRAWL_EWRONGTYPE;
        }
        freeReplyObject(r);
    }
    if (rc == CRAWL_EREDIS || rc == CRAWL_EREPLY || rc == CRAWL_ENOMEM)
        snprintf(errbuf, errlen, "checking the crawl's keys: %s%s%s", crawl_strerror(rc),
                 f->rc->err ? ": " : "", f->rc->err ? f->rc->errstr : "");
    fa_free(&k);
    return rc;
}

/* Shard s's visited set when frontier_open is given none: joins the filter
 * as created, else creates it if the config says how (frontier.h), a
 * shard of a crawl of n holding 1/n of the crawl's capacity. */
static int open_bloom(frontier_t *f, unsigned s, bloom_cache_t *cache, char *errbuf, size_t errlen)
{
    char name[FR_KEY_MAX], msg[512] = "";
    int err = 0;
    if (fr_key_build(f->shard[s].prefix, FR_K_SEEN, NULL, 0, name, sizeof name) < 0)
        return CRAWL_EINVAL;
    uint64_t cap = f->cfg.bloom_capacity;
    if (f->nshards > 1 && cap)
        cap = (cap + f->nshards - 1) / f->nshards;
    bloom_params_t p = {.capacity = cap,
                        .fp_rate = f->cfg.bloom_fp_rate,
                        .cache_bytes = f->cfg.bloom_cache_bytes,
                        .shared_cache = cache};
    f->shard[s].bloom = bloom_join(f->shard[s].rc, name, &p, &err, msg, sizeof msg);
    if (!f->shard[s].bloom) {
        snprintf(errbuf, errlen, "visited set %s: %s", name, msg[0] ? msg : crawl_strerror(err));
        return err == CRAWL_EREDIS ? CRAWL_EREDIS : CRAWL_EBLOOM;
    }
    f->shard[s].bloom_owned = 1;
    return 0;
}

/* Reads the crawl's shard count (P shards in shard 0) into *have (0: none
 * stored yet), with SET NX first when set: one round trip. */
static int shards_count(frontier_t *f, int set, unsigned want, unsigned long *have, int *quota,
                        char *errbuf, size_t errlen)
{
    char key[FR_KEY_MAX];
    if (fr_key_build(f->prefix, FR_K_SHARDS, NULL, 0, key, sizeof key) < 0)
        return CRAWL_EINVAL;
    /* a crawl of several shards created with a page limit keeps it in
     * allotments (quota.c): "Sq", fixed with the count */
    if (set)
        redisAppendCommand(f->rc, "SET %s %u%s NX", key, want, want > 1 && f->quota ? "q" : "");
    redisAppendCommand(f->rc, "GET %s", key);
    f->round_trips++;
    redisReply *r1 = NULL, *r2 = NULL;
    int rc = 0;
    if ((set && redisGetReply(f->rc, (void **)&r1) != REDIS_OK) ||
        redisGetReply(f->rc, (void **)&r2) != REDIS_OK)
        rc = CRAWL_EREDIS;
    unsigned n = 0;
    *have = 0;
    *quota = 0;
    if (rc == 0 && r1 && r1->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r1);
    else if (rc == 0 && r2->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r2);
    else if (rc == 0 && r2->type != REDIS_REPLY_NIL &&
             (r2->type != REDIS_REPLY_STRING || fr_parse_shards(r2->str, r2->len, &n, quota) < 0))
        rc = CRAWL_EREPLY;
    *have = n;
    if (r1)
        freeReplyObject(r1);
    if (r2)
        freeReplyObject(r2);
    if (rc == CRAWL_EWRONGTYPE)
        fr_wrong_type(f->rc, key, strlen(key), "string", f->last_error, sizeof f->last_error);
    if (rc < 0)
        snprintf(errbuf, errlen, "reading the crawl's shard count %s: %s%s%s", key,
                 crawl_strerror(rc), *f->last_error ? ": " : "", f->last_error);
    return rc;
}

static int shards_refuse(frontier_t *f, unsigned long have, int quota, int exists, unsigned want,
                         char *errbuf, size_t errlen)
{
    if (f->cfg.shards && have != want) {
        snprintf(errbuf, errlen, "crawl '%s' has %lu shard%s, not the %u asked for (--shards)",
                 f->crawl, have, have == 1 ? "" : "s", want);
        return CRAWL_EINVAL;
    }
    if (exists && have > 1 && !quota && f->cfg.max_pages) {
        snprintf(errbuf, errlen, FRONTIER_NO_QUOTA_TEXT, f->crawl, have);
        return CRAWL_EINVAL;
    }
    return 0;
}

/* The crawl's shards: the count stored, else the one asked for
 * (cfg.shards, 1 if none), written by fix_shards once the filters are
 * open.  A count asked for that is not the crawl's is an error naming both. */
static int open_shards(frontier_t *f, char *errbuf, size_t errlen)
{
    unsigned want = f->cfg.shards ? f->cfg.shards : 1;
    unsigned long have;
    int quota;
    if (want > FRONTIER_MAX_SHARDS) {
        snprintf(errbuf, errlen, "--shards %u: at most %d", want, FRONTIER_MAX_SHARDS);
        return CRAWL_EINVAL;
    }
    int rc = shards_count(f, 0, want, &have, &quota, errbuf, errlen);
    if (rc < 0)
        return rc;
    int exists = have != 0;
    if (!exists) { /* a new crawl: what fix_shards will write */
        have = want;
        quota = want > 1 && f->cfg.max_pages;
    }
    if ((rc = shards_refuse(f, have, quota, exists, want, errbuf, errlen)) < 0)
        return rc;
    f->nshards = (unsigned)have;
    f->quota = quota;
    f->created = !exists;
    f->shard = calloc(f->nshards, sizeof *f->shard);
    if (!f->shard) {
        snprintf(errbuf, errlen, "out of memory");
        return CRAWL_ENOMEM;
    }
    for (unsigned s = 0; s < f->nshards; s++) {
        fr_prefix_shard(f->crawl, s, f->shard[s].prefix, sizeof f->shard[s].prefix);
        fr_key_build(f->shard[s].prefix, FR_K_READY, NULL, 0, f->shard[s].ready_key,
                     sizeof f->shard[s].ready_key);
        f->shard[s].rc = f->rc;
    }
    return 0;
}

/* A Redis Cluster (cfg.redis): each shard's connection, one to each
 * master that owns a shard (rc is shard 0's: its route), from one look at
 * the map.  Then every server's check (Redis 7, the crawler module: used
 * only if every master has it). */
static int route_shards(frontier_t *f, char *errbuf, size_t errlen)
{
    unsigned n = f->nshards;
    if (!f->cfg.redis || !rconn_is_cluster(f->cfg.redis) || n == 1)
        return 0;
    int *slots = calloc(n, sizeof *slots);
    char(*addr)[RCONN_NAME_MAX] = calloc(n, sizeof *addr);
    f->own = calloc(n, sizeof *f->own);
    int rc = slots && addr && f->own ? 0 : CRAWL_ENOMEM;
    for (unsigned s = 0; rc == 0 && s < n; s++)
        rc = fr_shard_slot(f->crawl, s, &slots[s]);
    if (rc == 0 && (rc = rconn_owners(f->cfg.redis, slots, n, addr, errbuf, errlen)) < 0)
        snprintf(errbuf, errlen, "the Redis Cluster's map: a shard of crawl '%s' has no master now",
                 f->crawl);
    for (unsigned s = 1; rc == 0 && s < n; s++) {
        unsigned t = 0; /* a shard before it on the same master: its connection */
        while (t < s && strcmp(addr[t], addr[s]))
            t++;
        if (t < s) {
            f->shard[s].rc = f->shard[t].rc;
            continue;
        }
        char e2[256];
        if (!(f->shard[s].rc = rconn_connect_slot(f->cfg.redis, slots[s], e2, sizeof e2))) {
            snprintf(errbuf, errlen, "connecting to %s (shard %u of crawl '%s'): %s", addr[s], s,
                     f->crawl, e2);
            rc = CRAWL_EREDIS;
            break;
        }
        f->own[f->nown++] = f->shard[s].rc;
        int bits = f->bits_module;
        fr_use(f, s);
        rc = check_server(f, errbuf, errlen);
        f->bits_module &= bits;
        fr_use(f, 0);
    }
    free(slots);
    free(addr);
    return rc;
}

/* Writes the shard count if the crawl has none yet (SET NX), and checks
 * the crawl's is still the handle's (an opener racing this one with
 * another count gets the error). */
static int fix_shards(frontier_t *f, char *errbuf, size_t errlen)
{
    unsigned long have;
    int quota;
    frontier_control_t c0 = {0};
    int rc = f->created && f->nshards > 1 ? fr_control_before(f, &c0, errbuf, errlen) : 0;
    if (rc < 0)
        return rc;
    if (c0.set[FRONTIER_LIMIT_MAX_PAGES] && c0.value[FRONTIER_LIMIT_MAX_PAGES] > 0)
        f->quota = 1; /* a limit set before the crawl (`limits --force`) is the crawl's */
    rc = shards_count(f, 1, f->nshards, &have, &quota, errbuf, errlen);
    if (rc == 0 && have != f->nshards) {
        snprintf(errbuf, errlen, "crawl '%s' has %lu shards, not %u (another opener set it)",
                 f->crawl, have, f->nshards);
        rc = CRAWL_EINVAL;
    } else if (rc == 0 && f->quota && !quota) { /* made meanwhile by another, without a limit */
        snprintf(errbuf, errlen, FRONTIER_NO_QUOTA_TEXT, f->crawl, have);
        rc = CRAWL_EINVAL;
    }
    f->quota = quota; /* (made meanwhile with one: kept, whatever this handle's) */
    if (rc == 0 && f->created && f->nshards > 1)
        rc = fr_control_spread(f, &c0, errbuf, errlen);
    return rc;
}

void fr_use(frontier_t *f, unsigned s)
{
    if (s == f->cur || s >= f->nshards)
        return;
    f->prefix = f->shard[s].prefix;
    f->ready_key = f->shard[s].ready_key;
    f->bloom = f->shard[s].bloom;
    if (f->shard[s].rc)
        f->rc = f->shard[s].rc;
    f->cur = s;
}

struct frontier_wake {
    _Atomic uint64_t at[FRONTIER_MAX_SHARDS]; /* fr_mono_ms of the last mark, 0: none */
};

frontier_wake_t *frontier_wake_new(void)
{
    return calloc(1, sizeof(frontier_wake_t));
}

void frontier_wake_free(frontier_wake_t *w)
{
    free(w);
}

uint64_t fr_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void fr_wake(frontier_t *f, unsigned s)
{
    if (f->cfg.wake && s < FRONTIER_MAX_SHARDS)
        atomic_store_explicit(&f->cfg.wake->at[s], fr_mono_ms() + 1, memory_order_relaxed);
}

int fr_woken(const frontier_t *f, unsigned s, uint64_t since)
{
    return f->cfg.wake && s < FRONTIER_MAX_SHARDS &&
           atomic_load_explicit(&f->cfg.wake->at[s], memory_order_relaxed) > since;
}

void fr_wait_on(frontier_t *f, const fr_call_t *c)
{
    struct redisContext *rc = c && c->shard < f->nshards ? f->shard[c->shard].rc : NULL;
    f->wait_fd = rc ? rc->fd : -1;
}

unsigned fr_item_shard(const frontier_t *f, const frontier_item_t *it)
{
    return it->shard < f->nshards ? it->shard : 0;
}

unsigned frontier_shards(const frontier_t *f)
{
    return f ? f->nshards : 0;
}

static int open_scripts(frontier_t *f, char *errbuf, size_t errlen)
{
    int rc = fr_load(f);
    if (rc < 0)
        snprintf(errbuf, errlen, "loading the frontier's Redis functions: %s%s%s",
                 crawl_strerror(rc), f->rc->err || *f->last_error ? ": " : "",
                 f->rc->err ? f->rc->errstr : f->last_error);
    return rc;
}

/* Closes the filters the handle opened, and frees the shards. */
static void close_shards(frontier_t *f)
{
    for (size_t i = 0; i < f->nown; i++)
        redisFree(f->own[i]);
    free(f->own);
    f->own = NULL;
    f->nown = 0;
    for (unsigned s = 0; f->shard && s < f->nshards; s++)
        if (f->shard[s].bloom_owned)
            bloom_close(f->shard[s].bloom);
    free(f->shard);
    f->shard = NULL;
    bloom_shared_cache_free(f->cache);
    f->cache = NULL;
}

frontier_t *frontier_open(struct redisContext *rc, const frontier_config_t *cfg, bloom_t *bloom,
                          char *errbuf, size_t errlen)
{
    char dummy[8];
    if (!errbuf) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    if (!rc || !cfg) {
        snprintf(errbuf, errlen, "frontier_open: NULL argument");
        return NULL;
    }
    frontier_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    f->rc = rc;
    f->wait_fd = -1;
    f->cfg = *cfg;
    normalize_config(&f->cfg);
    const char *crawl = cfg->crawl ? cfg->crawl : FRONTIER_DEFAULT_CRAWL;
    f->prefix = f->prefix0;
    f->ready_key = f->ready0;
    if (fr_prefix(crawl, f->prefix0, sizeof f->prefix0) < 0) {
        snprintf(errbuf, errlen, "bad crawl name '%.80s'", crawl);
        goto fail;
    }
    snprintf(f->crawl, sizeof f->crawl, "%s", crawl);
    fr_key(f, FR_K_READY, f->ready0, sizeof f->ready0);
    f->cfg.crawl = f->crawl;
    if (gethostname(f->host, sizeof f->host) != 0)
        snprintf(f->host, sizeof f->host, "localhost");
    f->host[sizeof f->host - 1] = '\0';
    f->pid = (long)getpid();
    f->worker = cfg->worker_id ? strdup(cfg->worker_id) : default_worker_id(f->host, f->pid);
    if (!f->worker) {
        snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    f->cfg.worker_id = f->worker;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)f->pid << 40) ^
             (uint64_t)(uintptr_t)f;
    if (!f->rng)
        f->rng = 88172645463325252ULL;
    /* shard 0's keys checked before anything is written (the shard count) */
    if (check_server(f, errbuf, errlen) < 0 || check_keys(f, errbuf, errlen) < 0 ||
        open_shards(f, errbuf, errlen) < 0 || route_shards(f, errbuf, errlen) < 0)
        goto fail;
    f->shard[0].bloom = bloom;
    f->bloom = bloom;
    if (f->nshards > 1 && !f->cfg.bloom_shared_cache && f->cfg.bloom_cache_bytes != SIZE_MAX) {
        /* one cache for every shard's filter: a URL is in one shard only */
        if (!(f->cache = bloom_shared_cache_new(f->cfg.bloom_cache_bytes))) {
            snprintf(errbuf, errlen, "out of memory");
            goto fail;
        }
    }
    bloom_cache_t *cache = f->cfg.bloom_shared_cache ? f->cfg.bloom_shared_cache : f->cache;
    for (unsigned s = 1; s < f->nshards; s++) {
        fr_use(f, s);
        if (check_keys(f, errbuf, errlen) < 0)
            goto fail;
    }
    for (unsigned s = 0; s < f->nshards; s++) { /* the library, on each server once */
        unsigned t = 0;
        while (t < s && f->shard[t].rc != f->shard[s].rc)
            t++;
        fr_use(f, s);
        if (t == s && open_scripts(f, errbuf, errlen) < 0)
            goto fail;
    }
    for (unsigned s = 0; s < f->nshards; s++)
        if (!f->shard[s].bloom && open_bloom(f, s, cache, errbuf, errlen) < 0)
            goto fail;
    f->cur = f->nshards; /* none: fr_use copies shard 0 back, with its filter */
    fr_use(f, 0);
    if (fix_shards(f, errbuf, errlen) < 0)
        goto fail;
    int hrc = frontier_heartbeat(f, NULL, NULL);
    if (hrc < 0) {
        snprintf(errbuf, errlen, "registering the worker: %s%s%s", crawl_strerror(hrc),
                 *f->last_error ? ": " : "", f->last_error);
        goto fail;
    }
    return f;
fail:
    close_shards(f);
    free(f->worker);
    free(f);
    return NULL;
}

#define FR_BYE_PIPELINE 64 /* shards unregistered a round trip */

/* The bye call (frontier/lua/bye.lua), KEYS: ready.
 *   ARGV[1]  P       the key prefix
 *   ARGV[2]  worker  this worker's id: unregistered if it holds no lease
 * Reply: 0. */
static void build_bye(const frontier_t *f, fr_args_t *a)
{
    fa_fcall(a, 1);
    fa_cstr(a, f->ready_key);
    fa_cstr(a, f->prefix);
    fa_cstr(a, f->worker);
}

void frontier_close(frontier_t *f)
{
    if (!f)
        return;
    if (f->rc && !f->rc->err && f->nshards) { /* best effort: unregister if we hold nothing */
        fr_args_t a[FR_BYE_PIPELINE];
        /* pipelined on one connection; one shard a round trip over several */
        unsigned per = f->nown ? 1 : FR_BYE_PIPELINE;
        for (unsigned s0 = 0; s0 < f->nshards; s0 += per) {
            unsigned n = f->nshards - s0 < per ? f->nshards - s0 : per;
            fr_use(f, s0);
            if (f->rc->err)
                continue;
            redisReply *r[FR_BYE_PIPELINE] = {0};
            for (unsigned i = 0; i < n; i++) {
                fa_init(&a[i]);
                fr_use(f, s0 + i);
                build_bye(f, &a[i]);
            }
            if (fr_run(f, FR_BYE, a, n, r) == 0)
                for (unsigned i = 0; i < n; i++)
                    freeReplyObject(r[i]);
            for (unsigned i = 0; i < n; i++)
                fa_free(&a[i]);
        }
    }
    close_shards(f);
    free(f->worker);
    free(f);
}

bloom_t *frontier_bloom(const frontier_t *f)
{
    return f ? f->bloom : NULL;
}

const char *frontier_worker_id(const frontier_t *f)
{
    return f ? f->worker : NULL;
}

uint64_t frontier_round_trips(const frontier_t *f)
{
    return f ? f->round_trips : 0;
}

int frontier_bits_module(const frontier_t *f)
{
    return f ? f->bits_module : 0;
}

const char *frontier_last_error(const frontier_t *f)
{
    return f ? f->last_error : "";
}

void frontier_item_clear(frontier_item_t *it)
{
    if (!it)
        return;
    free(it->url);
    free(it->lease);
    memset(it, 0, sizeof *it);
}

/* ---- release, host delay ------------------------------------------------- */

/* Runs one prepared call of a script answering {lost, ...} (release,
 * retry) and frees the arguments: 0, CRAWL_ELEASE if the lease was lost,
 * or the failure. */
int fr_run_lease_call(frontier_t *f, int script, fr_args_t *a)
{
    redisReply *r = NULL;
    int rc = fr_run(f, script, a, 1, &r);
    fa_free(a);
    if (rc < 0)
        return rc;
    uint64_t lost;
    if (r->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r);
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || fr_reply_u64(r->element[0], &lost))
        rc = CRAWL_EREPLY;
    else if (lost)
        rc = CRAWL_ELEASE;
    freeReplyObject(r);
    return rc;
}

/* The release call (frontier/lua/release.lua), KEYS: ready.
 *   ARGV[1]  P               the key prefix
 *   ARGV[2]  per_host        for waking the hosts
 *   ARGV[3]  delay_ms        the crawl's delay and ...
 *   ARGV[4]  max_delay_ms    ... its cap on a host's own: a URL handed back
 *                            may have reached its server, so a host of delay
 *                            d > 0 is claimable again d after the release
 *   ARGV[5], ARGV[6] ...     per item, in order: the worker of its lease, its
 *                            lease's field "ORIGIN\tSEQ" (fr_lease_split)
 * Reply: {lost, released}.  The first item ends up at the front of its queue. */
static int build_release(const frontier_t *f, const frontier_item_t *items, size_t n, fr_args_t *a)
{
    fa_fcall(a, 1);
    fa_cstr(a, f->ready_key);
    fa_cstr(a, f->prefix);
    fa_u64(a, f->cfg.per_host);
    fa_u64(a, f->cfg.delay_ms);
    fa_u64(a, f->cfg.max_delay_ms);
    for (size_t i = 0; i < n; i++) {
        const char *w;
        size_t seqlen;
        if (fr_lease_split(items[i].lease, &w, &seqlen, NULL) < 0)
            return CRAWL_EINVAL;
        fa_cstr(a, w);
        fa_str(a, items[i].lease, seqlen);
    }
    return 0;
}

static int release_in(frontier_t *f, const frontier_item_t *items, size_t n)
{
    fr_args_t a;
    fa_init(&a);
    if (build_release(f, items, n, &a) < 0) {
        fa_free(&a);
        return CRAWL_EINVAL;
    }
    return fr_run_lease_call(f, FR_RELEASE, &a);
}

int frontier_release(frontier_t *f, const frontier_item_t *items, size_t n)
{
    if (!f || (!items && n))
        return CRAWL_EINVAL;
    if (n == 0)
        return 0;
    if (f->nshards == 1)
        return release_in(f, items, n);
    /* one call a shard, the items of each in their order; a lost lease in
     * one shard does not keep the others' items from going back */
    frontier_item_t *mine = malloc(n * sizeof *mine);
    unsigned *sh = malloc(n * sizeof *sh);
    int rc = mine && sh ? 0 : CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        sh[i] = fr_item_shard(f, &items[i]);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (sh[i] == UINT32_MAX)
            continue;
        size_t k = 0;
        unsigned s = sh[i];
        for (size_t j = i; j < n; j++)
            if (sh[j] == s) {
                mine[k++] = items[j];
                sh[j] = UINT32_MAX;
            }
        fr_use(f, s);
        int r = release_in(f, mine, k);
        if (r < 0 && (rc == 0 || rc == CRAWL_ELEASE))
            rc = r;
    }
    free(mine);
    free(sh);
    return rc;
}

int frontier_set_host_delay(frontier_t *f, const char *origin, uint32_t delay_ms)
{
    if (!f || !origin || !*origin)
        return CRAWL_EINVAL;
    if (delay_ms > f->cfg.max_delay_ms)
        delay_ms = f->cfg.max_delay_ms;
    fr_use(f, fr_shard_of(f->nshards, origin));
    char key[FR_KEY_MAX];
    if (fr_key(f, FR_K_HDELAY, key, sizeof key) < 0)
        return CRAWL_EINVAL;
    redisReply *r = redisCommand(f->rc, "HSET %s %s %u", key, origin, delay_ms);
    f->round_trips++;
    if (!r)
        return CRAWL_EREDIS;
    int rc = r->type == REDIS_REPLY_INTEGER ? 0 : fr_reply_error(r);
    freeReplyObject(r);
    if (rc == CRAWL_EWRONGTYPE)
        fr_wrong_type(f->rc, key, strlen(key), "hash", f->last_error, sizeof f->last_error);
    return rc;
}

int frontier_fd(const frontier_t *f)
{
    if (!f || !f->rc)
        return -1;
    return f->wait_fd >= 0 ? f->wait_fd : f->rc->fd;
}
