/*
 * handle.c -- a frontier handle: opening it on a link (the checks, the
 * shard count, the Functions library, the visited sets, the worker's
 * registration), its getters, and closing it.  Each operation lives in its
 * file: claim.c, heartbeat.c, finish.c (and offer.c, quota.c), retry.c
 * (retry and release), reconcile.c, seed.c, hostinfo.c and robots.c, stats.c
 * and control.c (handle-less), calls.c (commands on the link, and the call
 * in flight).
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
 * The Lua code is a Redis 7 Functions library (library.c); the handle sets
 * it on its link, which loads it on every connection and again when Redis
 * lost it.  The checks at open run on the link's connection to each
 * shard's server, blocking (rconn_link_context).
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

void frontier_config_defaults(frontier_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->crawl = FRONTIER_DEFAULT_CRAWL;
    cfg->per_host = FRONTIER_DEFAULT_PER_HOST;
    cfg->delay_ms = FRONTIER_DEFAULT_DELAY_MS;
    cfg->max_delay_ms = FRONTIER_DEFAULT_MAX_DELAY_MS;
    cfg->pace_pct = FRONTIER_DEFAULT_PACE_PCT;
    cfg->depth_window = FRONTIER_NO_WINDOW;
    cfg->lease_ms = FRONTIER_DEFAULT_LEASE_MS;
    cfg->max_depth = UINT32_MAX;
    cfg->max_tries = FRONTIER_DEFAULT_MAX_TRIES;
    cfg->backoff_ms = FRONTIER_DEFAULT_BACKOFF_MS;
    cfg->backoff_max_ms = FRONTIER_DEFAULT_BACKOFF_MAX_MS;
    cfg->bloom_capacity = BLOOM_DEFAULT_CAPACITY;
    cfg->bloom_fp_rate = BLOOM_DEFAULT_FP_RATE;
    cfg->bloom_growth = BLOOM_DEFAULT_GROWTH;
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

/* Shard s's server for the checks at open, blocking; NULL with errbuf. */
static redisContext *server(frontier_t *f, unsigned s, char *errbuf, size_t errlen)
{
    redisContext *c = fr_context(f, s);
    if (!c)
        snprintf(errbuf, errlen, "redis: %s", rconn_link_error(f->link));
    return c;
}

/* Checks shard s's server is Redis >= 7.0 (Functions), and whether it has
 * the crawler module loaded (CRAWLER.BFADD: bloom/redis_module.c): the
 * handle uses it only if every server of its shards has it. */
static int check_server(frontier_t *f, unsigned s, char *errbuf, size_t errlen)
{
    redisContext *c = server(f, s, errbuf, errlen);
    if (!c)
        return CRAWL_EREDIS;
    redisReply *r = redisCommand(c, "INFO server modules");
    if (r && r->type == REDIS_REPLY_ERROR) { /* Redis < 7 takes one section: for the message */
        freeReplyObject(r);
        r = redisCommand(c, "INFO server");
    }
    if (!r) {
        snprintf(errbuf, errlen, "redis: %s", c->errstr);
        rconn_link_drop(f->link, c->errstr);
        return CRAWL_EREDIS;
    }
    int major = 0, minor = 0;
    const char *v = r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    if (v)
        sscanf(v + 14, "%d.%d", &major, &minor);
    if (!v || !strstr(r->str, "\r\nmodule:name=crawler,"))
        f->bits_module = 0;
    freeReplyObject(r);
    if (major >= 7)
        return 0;
    snprintf(errbuf, errlen, "the frontier needs Redis >= 7.0 (server is %d.%d)", major, minor);
    return CRAWL_EREPLY;
}

/* The keys check_keys reads at open: every single key of keys.def but the
 * Bloom filter (bloom_open checks its own), and this worker's two. */
#define OPEN_KEYS (FR_K_COUNT + 2)

/* Checks, in one pipelined round of TYPE, that shard s's keys are of their
 * keys.def types (or absent), before frontier_open writes anything (the
 * Bloom filter, the worker's registration): CRAWL_EWRONGTYPE and errbuf
 * "<prefix>seq is a list, expected a string".  The scripts check again
 * (frontier/lua/types.lua): a key may change after this. */
static int check_keys(frontier_t *f, unsigned s, char *errbuf, size_t errlen)
{
    rconn_call_t *c[OPEN_KEYS] = {0};
    const char *want[OPEN_KEYS];
    const char *prefix = f->shard[s].prefix;
    size_t n = 0;
    int rc = 0;
    for (int id = 0; rc == 0 && id < FR_K_COUNT + 2; id++) {
        fr_key_id_t k = id < FR_K_COUNT    ? (fr_key_id_t)id
                        : id == FR_K_COUNT ? FR_K_LEASE
                                           : FR_K_WORKER;
        if (id < FR_K_COUNT && (fr_key_is_family(k) || k == FR_K_SEEN))
            continue;
        if (!(c[n] = fr_cmd(f, s, RCONN_CALL_RESEND))) {
            rc = CRAWL_ENOMEM;
            break;
        }
        rconn_args_t *a = rconn_call_args(c[n]);
        rconn_arg_cstr(a, "TYPE");
        if (id < FR_K_COUNT)
            fr_key_arg(a, prefix, k, NULL, 0);
        else
            fr_key_arg(a, prefix, k, f->worker, strlen(f->worker));
        want[n++] = id < FR_K_COUNT ? fr_key_type(k) : "hash";
    }
    if (rc == 0)
        rc = fr_run(f, c, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const redisReply *r = rconn_call_reply(c[i]);
        const rconn_args_t *a = rconn_call_args(c[i]);
        if (r->type != REDIS_REPLY_STATUS) {
            rc = CRAWL_EREPLY;
        } else if (strcmp(r->str, "none") && strcmp(r->str, want[i])) {
            snprintf(errbuf, errlen, "%.*s is a %s, expected a %s", (int)a->len[1], a->v[1], r->str,
                     want[i]);
            snprintf(f->last_error, sizeof f->last_error, "%s", errbuf);
            rc = CRAWL_EWRONGTYPE;
        }
    }
    if (rc == CRAWL_EREDIS || rc == CRAWL_EREPLY || rc == CRAWL_ENOMEM)
        snprintf(errbuf, errlen, "checking the crawl's keys: %s%s%s", crawl_strerror(rc),
                 rc == CRAWL_EREDIS ? ": " : "",
                 rc == CRAWL_EREDIS ? rconn_link_error(f->link) : "");
    for (size_t i = 0; i < n; i++)
        rconn_call_free(c[i]);
    return rc;
}

/* Shard s's visited set when frontier_open is given none: joins the filter
 * as created, else creates it if the config says how (frontier.h), a
 * shard of a crawl of n holding 1/n of the crawl's capacity.  The filter's
 * connection is the link's to shard s's server, for its opening only: the
 * handle uses it for its probes and cache (no Redis commands). */
static int open_bloom(frontier_t *f, unsigned s, bloom_cache_t *cache, char *errbuf, size_t errlen)
{
    char name[FR_KEY_MAX], msg[512] = "";
    int err = 0;
    if (fr_key_build(f->shard[s].prefix, FR_K_SEEN, NULL, 0, name, sizeof name) < 0)
        return CRAWL_EINVAL;
    redisContext *c = server(f, s, errbuf, errlen);
    if (!c)
        return CRAWL_EREDIS;
    uint64_t cap = f->cfg.bloom_capacity;
    if (f->nshards > 1 && cap)
        cap = (cap + f->nshards - 1) / f->nshards;
    bloom_params_t p = {.capacity = cap,
                        .fp_rate = f->cfg.bloom_fp_rate,
                        .growth = f->cfg.bloom_growth,
                        .cache_bytes = f->cfg.bloom_cache_bytes,
                        .shared_cache = cache};
    f->shard[s].bloom = bloom_join(c, name, &p, &err, msg, sizeof msg);
    if (!f->shard[s].bloom) {
        snprintf(errbuf, errlen, "visited set %s: %s", name, msg[0] ? msg : crawl_strerror(err));
        if (err == CRAWL_EREDIS)
            rconn_link_drop(f->link, msg[0] ? msg : c->errstr);
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
    char key[FR_KEY_MAX], val[24];
    if (fr_key_build(f->shard[0].prefix, FR_K_SHARDS, NULL, 0, key, sizeof key) < 0)
        return CRAWL_EINVAL;
    rconn_call_t *c[2] = {set ? fr_cmd(f, 0, RCONN_CALL_RESEND) : NULL,
                          fr_cmd(f, 0, RCONN_CALL_RESEND)};
    int rc = (set && !c[0]) || !c[1] ? CRAWL_ENOMEM : 0;
    if (rc == 0 && set) {
        /* a crawl of several shards created with a page limit keeps it in
         * allotments (quota.c): "Sq", fixed with the count */
        rconn_args_t *a = rconn_call_args(c[0]);
        snprintf(val, sizeof val, "%u%s", want, want > 1 && f->quota ? "q" : "");
        rconn_arg_cstr(a, "SET");
        rconn_arg_cstr(a, key);
        rconn_arg_cstr(a, val);
        rconn_arg_cstr(a, "NX");
    }
    if (rc == 0) {
        rconn_arg_cstr(rconn_call_args(c[1]), "GET");
        rconn_arg_cstr(rconn_call_args(c[1]), key);
        rc = fr_run(f, set ? c : c + 1, set ? 2 : 1);
    }
    unsigned n = 0;
    *have = 0;
    *quota = 0;
    const redisReply *r1 = rc == 0 && set ? rconn_call_reply(c[0]) : NULL;
    const redisReply *r2 = rc == 0 ? rconn_call_reply(c[1]) : NULL;
    if (rc == 0 && r1 && r1->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r1);
    else if (rc == 0 && r2->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r2);
    else if (rc == 0 && r2->type != REDIS_REPLY_NIL &&
             (r2->type != REDIS_REPLY_STRING || fr_parse_shards(r2->str, r2->len, &n, quota) < 0))
        rc = CRAWL_EREPLY;
    *have = n;
    rconn_call_free(c[0]);
    rconn_call_free(c[1]);
    if (rc == CRAWL_EWRONGTYPE)
        fr_wrong_type(f, 0, key, strlen(key), "string", f->last_error, sizeof f->last_error);
    else if (rc == CRAWL_EREDIS)
        snprintf(f->last_error, sizeof f->last_error, "%s", rconn_link_error(f->link));
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

/* Shard s's prefix, ready and guard keys and slot. */
static int init_shard(frontier_t *f, unsigned s)
{
    fr_shard_t *sh = &f->shard[s];
    if (fr_prefix_shard(f->crawl, s, sh->prefix, sizeof sh->prefix) < 0 ||
        fr_key_build(sh->prefix, FR_K_READY, NULL, 0, sh->ready_key, sizeof sh->ready_key) < 0 ||
        fr_key_build(sh->prefix, FR_K_GUARD, NULL, 0, sh->guard_key, sizeof sh->guard_key) < 0 ||
        fr_shard_slot(f->crawl, s, &sh->slot) < 0)
        return CRAWL_EINVAL;
    return 0;
}

/* The crawl's shards: the count stored, else the one asked for
 * (cfg.shards, 1 if none), written by fix_shards once the filters are
 * open.  A count asked for that is not the crawl's is an error naming both.
 * Shard 0 is set up already (its keys checked). */
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
    fr_shard_t *sh = realloc(f->shard, have * sizeof *sh);
    if (!sh) {
        snprintf(errbuf, errlen, "out of memory");
        return CRAWL_ENOMEM;
    }
    memset(sh + 1, 0, (have - 1) * sizeof *sh);
    f->shard = sh;
    f->nshards = (unsigned)have;
    f->quota = quota;
    f->created = !exists;
    for (unsigned s = 1; s < f->nshards; s++)
        if (init_shard(f, s) < 0) {
            snprintf(errbuf, errlen, "bad crawl name '%.80s'", f->crawl);
            return CRAWL_EINVAL;
        }
    return 0;
}

/* Every other shard's checks: its server's (Redis 7, the module), once a
 * server, and its keys'. */
static int check_shards(frontier_t *f, char *errbuf, size_t errlen)
{
    redisContext **seen = calloc(f->nshards, sizeof *seen);
    int rc = seen ? 0 : CRAWL_ENOMEM;
    size_t nseen = 0;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        redisContext *c = server(f, s, errbuf, errlen);
        size_t i = 0;
        if (!c) {
            rc = CRAWL_EREDIS;
            break;
        }
        while (i < nseen && seen[i] != c)
            i++;
        if (i == nseen) {
            seen[nseen++] = c;
            if (s > 0)
                rc = check_server(f, s, errbuf, errlen);
        }
        if (rc == 0 && s > 0)
            rc = check_keys(f, s, errbuf, errlen);
    }
    free(seen);
    if (rc == CRAWL_ENOMEM)
        snprintf(errbuf, errlen, "out of memory");
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

int frontier_crawl_exists(frontier_t *f)
{
    if (!f)
        return CRAWL_EINVAL;
    rconn_call_t **c = calloc(f->nshards, sizeof *c);
    int rc = c ? 0 : CRAWL_ENOMEM, exists = 1;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        char name[FR_KEY_MAX + 8];
        int n = fr_key_build(f->shard[s].prefix, FR_K_SEEN, NULL, 0, name, sizeof name - 5);
        if (n < 0 || !(c[s] = fr_cmd(f, s, RCONN_CALL_RESEND))) {
            rc = n < 0 ? CRAWL_EINVAL : CRAWL_ENOMEM;
            break;
        }
        /* bloom.h: the filter's geometry, "<name>:meta" */
        snprintf(name + n, sizeof name - (size_t)n, ":meta");
        rconn_arg_cstr(rconn_call_args(c[s]), "EXISTS");
        rconn_arg_dup(rconn_call_args(c[s]), name);
    }
    if (rc == 0)
        rc = fr_run(f, c, f->nshards);
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        const redisReply *r = rconn_call_reply(c[s]);
        if (r->type != REDIS_REPLY_INTEGER)
            rc = r->type == REDIS_REPLY_ERROR ? fr_reply_error(r) : CRAWL_EREPLY;
        else if (r->integer == 0)
            exists = 0;
    }
    for (unsigned s = 0; c && s < f->nshards; s++)
        rconn_call_free(c[s]);
    free(c);
    return rc < 0 ? rc : exists;
}

unsigned frontier_shards(const frontier_t *f)
{
    return f ? f->nshards : 0;
}

/* The filters the handle opened closed, and the shards freed. */
static void close_shards(frontier_t *f)
{
    for (unsigned s = 0; f->shard && s < f->nshards; s++)
        if (f->shard[s].bloom_owned)
            bloom_close(f->shard[s].bloom);
    free(f->shard);
    f->shard = NULL;
    bloom_shared_cache_free(f->cache);
    f->cache = NULL;
}

/* The handle's identity: crawl name, host, pid, worker id, jitter. */
static int identify(frontier_t *f, const frontier_config_t *cfg, char *errbuf, size_t errlen)
{
    const char *crawl = cfg->crawl ? cfg->crawl : FRONTIER_DEFAULT_CRAWL;
    char p[FR_PREFIX_MAX];
    if (strlen(crawl) > FRONTIER_MAX_CRAWL_NAME || fr_prefix(crawl, p, sizeof p) < 0) {
        snprintf(errbuf, errlen, "bad crawl name '%.80s'", crawl);
        return CRAWL_EINVAL;
    }
    snprintf(f->crawl, sizeof f->crawl, "%s", crawl);
    f->cfg.crawl = f->crawl;
    if (gethostname(f->host, sizeof f->host) != 0)
        snprintf(f->host, sizeof f->host, "localhost");
    f->host[sizeof f->host - 1] = '\0';
    f->pid = (long)getpid();
    f->worker = cfg->worker_id ? strdup(cfg->worker_id) : default_worker_id(f->host, f->pid);
    if (!f->worker) {
        snprintf(errbuf, errlen, "out of memory");
        return CRAWL_ENOMEM;
    }
    f->cfg.worker_id = f->worker;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)f->pid << 40) ^
             (uint64_t)(uintptr_t)f;
    if (!f->rng)
        f->rng = 88172645463325252ULL;
    f->offer_seq = (uint64_t)(fr_random(f) * 281474976710656.0); /* the offers' ids: 48 bits */
    return 0;
}

frontier_t *frontier_open(rconn_link_t *link, const frontier_config_t *cfg, bloom_t *bloom,
                          char *errbuf, size_t errlen)
{
    char dummy[8];
    if (!errbuf) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    if (!link || !cfg) {
        snprintf(errbuf, errlen, "frontier_open: NULL argument");
        return NULL;
    }
    frontier_t *f = calloc(1, sizeof *f);
    if (!f || !(f->shard = calloc(1, sizeof *f->shard))) {
        free(f);
        snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    f->link = link;
    f->nshards = 1; /* until open_shards reads the count */
    f->cfg = *cfg;
    normalize_config(&f->cfg);
    f->bits_module = !f->cfg.bitfield_only;
    f->cluster = rconn_link_is_cluster(link);
    const char *lib = fr_library(f->fn);
    if (identify(f, cfg, errbuf, errlen) < 0 || init_shard(f, 0) < 0)
        goto fail;
    if (!rconn_link_up(link)) {
        snprintf(errbuf, errlen, "redis: %s",
                 *rconn_link_error(link) ? rconn_link_error(link) : "not connected");
        goto fail;
    }
    /* shard 0's server and keys checked before anything is written (the
     * shard count), then every other shard's */
    if (check_server(f, 0, errbuf, errlen) < 0 || check_keys(f, 0, errbuf, errlen) < 0 ||
        open_shards(f, errbuf, errlen) < 0 || check_shards(f, errbuf, errlen) < 0)
        goto fail;
    int lrc = rconn_link_set_library(link, lib);
    if (lrc < 0) {
        snprintf(errbuf, errlen, "loading the frontier's Redis functions: %s: %s",
                 crawl_strerror(lrc), rconn_link_error(link));
        goto fail;
    }
    f->shard[0].bloom = bloom;
    if (f->nshards > 1 && !f->cfg.bloom_shared_cache && f->cfg.bloom_cache_bytes != SIZE_MAX) {
        /* one cache for every shard's filter: a URL is in one shard only */
        if (!(f->cache = bloom_shared_cache_new(f->cfg.bloom_cache_bytes))) {
            snprintf(errbuf, errlen, "out of memory");
            goto fail;
        }
    }
    bloom_cache_t *cache = f->cfg.bloom_shared_cache ? f->cfg.bloom_shared_cache : f->cache;
    for (unsigned s = 0; s < f->nshards; s++)
        if (!f->shard[s].bloom && open_bloom(f, s, cache, errbuf, errlen) < 0)
            goto fail;
    if (fix_shards(f, errbuf, errlen) < 0)
        goto fail;
    int hrc = frontier_heartbeat(f, NULL, NULL);
    if (hrc < 0) {
        snprintf(errbuf, errlen, "registering the worker: %s%s%s", crawl_strerror(hrc),
                 *f->last_error || hrc == CRAWL_EREDIS ? ": " : "",
                 *f->last_error        ? f->last_error
                 : hrc == CRAWL_EREDIS ? rconn_link_error(link)
                                       : "");
        goto fail;
    }
    return f;
fail:
    close_shards(f);
    free(f->worker);
    free(f);
    return NULL;
}

/* The bye call (frontier/lua/bye.lua) to shard s, KEYS: the guard, ready.
 *   ARGV[1]  P       the key prefix
 *   ARGV[2]  worker  this worker's id: unregistered if it holds no lease
 * Reply: 0. */
static rconn_call_t *build_bye(frontier_t *f, unsigned s)
{
    rconn_call_t *c = fr_fcall(f, s, FR_BYE, 1, 0);
    if (c) {
        rconn_args_t *a = rconn_call_args(c);
        rconn_arg_cstr(a, f->shard[s].ready_key);
        rconn_arg_cstr(a, f->shard[s].prefix);
        rconn_arg_cstr(a, f->worker);
    }
    return c;
}

void frontier_close(frontier_t *f)
{
    if (!f)
        return;
    /* best effort: unregistered if it holds nothing, every shard in one
     * round trip; not waited for past a lost link */
    rconn_call_t **c = rconn_link_up(f->link) ? calloc(f->nshards, sizeof *c) : NULL;
    size_t n = 0;
    for (unsigned s = 0; c && s < f->nshards; s++)
        if ((c[n] = build_bye(f, s)) != NULL)
            n++;
    if (n)
        fr_run(f, c, n);
    for (size_t i = 0; i < n; i++)
        rconn_call_free(c[i]);
    free(c);
    close_shards(f);
    fr_blocklist_clear(&f->blocks);
    free(f->worker);
    free(f);
}

bloom_t *frontier_bloom(const frontier_t *f)
{
    return f && f->shard ? f->shard[0].bloom : NULL;
}

void frontier_forget_seen(frontier_t *f)
{
    for (unsigned s = 0; f && f->shard && s < f->nshards; s++) {
        bloom_cache_forget(f->shard[s].bloom);
        fr_layers_flag(f, s); /* a publication may be lost too: read the layers again */
    }
}

const char *frontier_worker_id(const frontier_t *f)
{
    return f ? f->worker : NULL;
}

uint64_t frontier_round_trips(const frontier_t *f)
{
    return f ? rconn_link_round_trips(f->link) : 0;
}

int frontier_bits_module(const frontier_t *f)
{
    return f ? f->bits_module : 0;
}

const char *frontier_last_error(const frontier_t *f)
{
    return f ? f->last_error : "";
}
