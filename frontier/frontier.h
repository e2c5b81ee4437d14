/*
 * frontier.h -- the crawl's shared frontier in Redis: per-host queues, a
 * ready set ordered by the time each host may next be fetched, leases for
 * in-flight URLs, delayed retries, a dead-letter list, global limits and
 * stats.  Every state change is one Redis script (atomic), so a worker may
 * die at any instruction without losing a URL.
 *
 * All keys live under the crawl's key prefix (keys.h spells it: the crawl
 * name inside a Redis Cluster hash tag); keys.def lists every key, docs/keys.md
 * documents each.  Only frontier/ builds key names: other modules reach a
 * crawl's Redis state through the functions below.
 *
 * URLs handed to the frontier must already be normalized
 * (parser_url_normalize).  A URL's host key (its queue, its delay, its
 * in-flight count) is its origin "scheme://host[:port]" as
 * parser_url_origin gives it, never with userinfo: the frontier computes it
 * on the client and sends it, and a claimed or delayed URL keeps the origin
 * of the queue it came from.  A URL without an origin is not queued.
 *
 * Handles are NOT thread-safe: one per thread, each on the thread's own
 * link (rconn.h: rconn_link_t, borrowed: the thread's connections and their
 * one owner) and with its own worker id.  Every operation is a call on the
 * link (frontier_call_t below); the blocking functions are a call waited
 * for.
 *
 * Errors: 0 or a negative CRAWL_E* code; crawl_strerror() for text.
 *
 * The scripts are a Redis 7 Functions library (FCALL; loaded at open and
 * reloaded if the server lost it) and read the Redis server's clock (TIME),
 * so workers' clocks never matter.  Needs Redis >= 7.0.  The limits (per_host, delay,
 * max_*) come from each handle's config: every worker of a crawl should use
 * the same values; the counts they are checked against live in Redis.  A
 * limit set crawl-wide in the crawl's control hash (frontier_control: the
 * `crawler limits` command) beats the handle's, in every call that uses it.
 */
#ifndef FRONTIER_H
#define FRONTIER_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

#include "bloom.h"
#include "rconn.h"

struct redisContext;

#define FRONTIER_DEFAULT_CRAWL "default"
#define FRONTIER_DEFAULT_PER_HOST 1
#define FRONTIER_DEFAULT_DELAY_MS 1000
#define FRONTIER_DEFAULT_MAX_DELAY_MS 60000 /* cap on robots Crawl-delay */
#define FRONTIER_DEFAULT_PACE_PCT 200       /* a host waits twice its response time */
#define FRONTIER_DEFAULT_LEASE_MS 30000
#define FRONTIER_DEFAULT_MAX_TRIES 3
#define FRONTIER_DEFAULT_BACKOFF_MS 2000
#define FRONTIER_DEFAULT_BACKOFF_MAX_MS 300000
#define FRONTIER_MAX_CRAWL_NAME 64
#define FRONTIER_MAX_SHARDS 1024 /* shards of one crawl (frontier_config_t.shards; keys.h) */
/* What frontier_open says to a page limit on a crawl of several shards
 * created without one (printf: the crawl's name, its shard count as unsigned long) */
#define FRONTIER_NO_QUOTA_TEXT                                                                     \
    "crawl '%s' has %lu shards and was created without a page limit: a crawl of several "          \
    "shards takes --max-pages only if created with one (the --max-pages of the `crawl` or "        \
    "`seed` that created it; or --shards 1)"

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL
 *   CRAWL_ENOMEM
 *   CRAWL_EREDIS     Redis unreachable / connection lost
 *   CRAWL_EREPLY     unexpected reply or script error
 *   CRAWL_EBLOOM     the Bloom filter could not be opened/used
 *   CRAWL_ELEASE     the lease was lost (expired and handed to another worker) */

/* Politeness (per_host, delay_ms, max_delay_ms), all workers together.  A
 * host's delay d is delay_ms or its own (robots Crawl-delay,
 * frontier_set_host_delay) capped at max_delay_ms, the larger.  d > 0: the
 * host has at most ONE URL in flight (whatever per_host says), and its next
 * URL is claimed no sooner than d after the previous one ended
 * (frontier_finish, frontier_retry or frontier_release of it), so its server
 * sees two requests at least d apart however long a claimed URL waits
 * before its request goes out.  d = 0: up to per_host in flight, no spacing.
 * The host's pace (pace_pct) makes d follow its server: with delay_ms > 0
 * and max_delay_ms > 0, d is max(d, W) * S, at most max_delay_ms, where W is
 * the running mean of pace_pct% of its requests' durations and S a
 * slowdown doubled by each 429 or 503 and lowered by one by each other
 * answer (frontier/lua/base.lua: pace_note; P hpace, P hslow). */

/* Which shards got work lately, shared by the handles of one process on
 * one crawl (like bloom_shared_cache): a finish that queued links in a
 * shard, or freed a slot of one of its hosts, marks it, so that the
 * process's claims ask it at once instead of after the rest its last empty
 * answer gave it.  Thread-safe (atomic stamps). */
typedef struct frontier_wake frontier_wake_t;
frontier_wake_t *frontier_wake_new(void);
/* After every handle using it is closed.  Accepts NULL. */
void frontier_wake_free(frontier_wake_t *w);

#define FRONTIER_NO_WINDOW UINT32_MAX /* frontier_config_t.depth_window: no window */

typedef struct frontier_config {
    const char *crawl;           /* crawl name (copied); NULL: "default" */
    const char *worker_id;       /* unique per handle (copied); NULL: "<hostname>:<pid>:<n>" */
    frontier_wake_t *wake;       /* a crawl of several shards: the process's (borrowed) */
    unsigned shards;             /* the crawl's shards (docs/sharding.md), fixed when it
                                    is created: 0 joins the count the crawl has (1 for a new
                                    one); N asks for N (1..FRONTIER_MAX_SHARDS), an error
                                    naming both counts if the crawl has another */
    uint32_t per_host;           /* max URLs in flight per host of delay 0; 0: default */
    uint32_t delay_ms;           /* min ms from the end of one fetch of a host to the next claim */
    uint32_t max_delay_ms;       /* cap on a host's own delay (robots Crawl-delay) and pace */
    uint32_t pace_pct;           /* a host waits at least this % of its requests' recent
                                    duration (0: no pace); FRONTIER_DEFAULT_PACE_PCT */
    uint32_t depth_window;       /* crawl order: a host whose next URL is more than this
                                    many levels deeper than the shard's shallowest queued
                                    URL waits (claims serve the shallower hosts first);
                                    FRONTIER_NO_WINDOW (the default): none */
    uint32_t host_ip_ms;         /* per-IP politeness: a finish records the address each of
                                    its hosts was fetched from (P hostip, crawl-wide), and
                                    a claim hands it back with the host's URLs
                                    (frontier_item_t.ip) while it is younger than this;
                                    0 (the default): neither */
    uint32_t lease_ms;           /* lease lifetime; renewed by frontier_heartbeat; 0: default */
    uint32_t max_depth;          /* links deeper than this are not queued; UINT32_MAX: no limit */
    uint64_t max_pages;          /* URLs admitted in total; 0: no limit.  A new crawl of
                                    several shards opened with one keeps it in allotments
                                    (quota.c); one created without refuses it */
    uint64_t max_pages_per_host; /* URLs admitted per host; 0: no limit */
    uint64_t max_pages_per_domain; /* URLs admitted per registered domain (its hosts
                                      together); 0: no limit */
    uint64_t max_hosts_per_domain; /* hosts of one registered domain that may admit
                                      URLs; 0: no limit */
    uint64_t pages_per_inlink;     /* with max_pages_per_domain: a domain's page budget
                                      grows by this for each other registered domain
                                      that links to it (IRLbot's); 0: fixed */
    uint32_t max_tries;            /* fetch attempts before dead-lettering; 0: default */
    uint32_t backoff_ms;           /* first retry delay, doubled each try, with jitter */
    uint32_t backoff_max_ms;       /* retry delay cap */
    int bitfield_only;             /* 1: set Bloom bits with BITFIELD even when Redis has the
                                      crawler module (CRAWLER.BFADD); 0: use it if loaded */
    /* The visited set frontier_open opens itself (when given no bloom): */
    uint64_t bloom_capacity;           /* n, expected items, if it must be created; 0 and
                                          bloom_fp_rate 0: join an existing filter only */
    double bloom_fp_rate;              /* p in (0,1), if it must be created (0: see above;
                                          one of the two 0: bloom's default for it) */
    double bloom_growth;               /* if it must be created: > 1, it grows by layers this
                                          many times larger (bloom.h, "layers"; the crawl's
                                          capacity is then its first layer's); 0: fixed */
    size_t bloom_cache_bytes;          /* the handle's local cache of added URLs, bytes
                                          (0: BLOOM_DEFAULT_CACHE_BYTES, SIZE_MAX: none) */
    bloom_cache_t *bloom_shared_cache; /* if set: this cache several handles share
                                          (borrowed; outlives the handle), not a
                                          private one of bloom_cache_bytes */
} frontier_config_t;

/* Fills cfg with the defaults above (bloom_capacity BLOOM_DEFAULT_CAPACITY,
 * bloom_fp_rate BLOOM_DEFAULT_FP_RATE, bloom_growth BLOOM_DEFAULT_GROWTH,
 * default cache). */
void frontier_config_defaults(frontier_config_t *cfg);

typedef struct frontier frontier_t;

/* Opens the frontier of cfg->crawl on link (borrowed: the caller keeps it
 * until frontier_close and frees it afterwards; it must be connected: the
 * handle sets its Functions library, rconn_link_set_library).  The visited
 * set is bloom if given (borrowed; its filter frontier_bloom_name's, on the
 * caller's own connection); with bloom NULL the handle opens the crawl's
 * filter itself (on the link's connection to each shard's server) and
 * closes it in frontier_close: it joins the filter as it was created (by
 * whoever seeded first, whatever its geometry), or, if there is none and
 * cfg->bloom_capacity or bloom_fp_rate is set, creates it with them (an
 * opener racing it with another geometry gets the mismatch as an error).
 * The filter's local cache is cfg->bloom_shared_cache or a private one of
 * cfg->bloom_cache_bytes.  Then registers the worker.  cfg is copied (its
 * strings too).  NULL on failure, with a message in errbuf (always
 * NUL-terminated if errlen > 0; may be NULL); nothing stays registered. */
frontier_t *frontier_open(rconn_link_t *link, const frontier_config_t *cfg, bloom_t *bloom,
                          char *errbuf, size_t errlen);
/* 1 if the crawl is still in Redis (every shard's Bloom filter: its meta
 * hash), 0 if it is gone (FLUSHALL, `crawler reset`, a Redis restarted
 * without its data), or a failure: one EXISTS a shard, in one round trip
 * on the link, writing nothing (a worker checks it on a reconnect before
 * anything else).  */
int frontier_crawl_exists(frontier_t *f);
/* The crawl's shard count (frontier_config_t.shards), 1 and up. */
unsigned frontier_shards(const frontier_t *f);
/* The shard count crawl has in Redis (0 when it has none yet: a new crawl),
 * one GET on rc: 0, or CRAWL_EREDIS / CRAWL_EREPLY / CRAWL_EWRONGTYPE. */
int frontier_crawl_shards(struct redisContext *rc, const char *crawl, unsigned *n);
/* ... and whether it keeps a crawl-wide page limit over its shards
 * (frontier/quota.c; *quota 0 or 1). */
int frontier_crawl_shards_quota(struct redisContext *rc, const char *crawl, unsigned *n,
                                int *quota);
/* Frees the handle, and the Bloom filter handle if frontier_open opened it;
 * does not hand back leases (call frontier_release first).  Accepts NULL. */
void frontier_close(frontier_t *f);

/* The visited set the handle uses (shard 0's on a crawl of several): the
 * bloom given to frontier_open, or the one it opened (owned by the handle:
 * valid until frontier_close, never to be closed by the caller; its
 * geometry, capacity and local cache are the caller's to read, but not its
 * Redis commands: its connection was the link's, for the opening only).
 * Same thread rules as the handle. */
bloom_t *frontier_bloom(const frontier_t *f);
/* Empties the local caches of the shards' visited sets (bloom_cache_forget):
 * for a handle whose link reconnected, as Redis may have lost acknowledged
 * writes meanwhile (the links of an offer among them), and a link the cache
 * still took for seen would be dropped, never queued. */
void frontier_forget_seen(frontier_t *f);

/* A visited set that grows (bloom.h, "layers"): the scripts publish its
 * layers; a reply flags a shard whose layers this handle should read again,
 * or whose next layer is due (frontier/layers.c).  This does it for every
 * flagged shard, blocking on its server (creating a layer takes a call per
 * 16 MB of it).  Call between calls, not while one is being built: the
 * worker's finish turn does.  0; CRAWL_EFULL when a shard's newest layer is
 * full and the next one does not fit in Redis (errbuf says how much it
 * needs: the crawl stops); CRAWL_EREDIS; CRAWL_EBLOOM (errbuf). */
int frontier_layers_tend(frontier_t *f, char *errbuf, size_t errlen);

/* Name of the Bloom filter of a crawl: the crawl's key prefix + "seen"
 * (keys.def), a key in the crawl's hash slot (a Redis Cluster connection is
 * routed by it: rconn/rconn.h).  0, or CRAWL_EINVAL for a NULL or bad
 * crawl name or a buffer too short (FRONTIER_MAX_BLOOM_NAME bytes always
 * fit).  Thread-safe. */
#define FRONTIER_MAX_BLOOM_NAME (FRONTIER_MAX_CRAWL_NAME + 48)
int frontier_bloom_name(const char *crawl, char *buf, size_t buflen);

/* One leased URL. */
typedef struct frontier_item {
    char *url;           /* normalized URL (owned by the item) */
    uint32_t depth;      /* 0 for seeds */
    uint32_t tries;      /* fetch attempts before this one */
    uint32_t hops;       /* redirects in a row that led to this URL (0: none) */
    char *lease;         /* opaque lease token (owned by the item) */
    uint64_t claimed_ms; /* Redis server time of the claim, ms since the epoch */
    unsigned shard;      /* the shard it was claimed from (finish, retry and release go
                            there, not to what this build's libpsl makes of its host) */
    char ip[46];         /* the address its host was last fetched from, by any worker
                            (P hostip, frontier_config_t.host_ip_ms), "" if unknown */
    uint64_t ip_ms;      /* when that was (Redis server time, ms since the epoch) */
} frontier_item_t;
/* Frees the item's strings and zeroes it.  Accepts NULL. */
void frontier_item_clear(frontier_item_t *it);

typedef enum frontier_state {
    FRONTIER_READY = 0,  /* *n > 0 items were claimed */
    FRONTIER_WAIT = 1,   /* nothing ready now; URLs are queued, delayed or in flight */
    FRONTIER_DONE = 2,   /* nothing queued, delayed or in flight: the crawl is over */
    FRONTIER_PAUSED = 3, /* the crawl is paused (frontier_control): nothing claimed, the
                            lease renewed; never DONE while paused */
    FRONTIER_DRAIN = 4,  /* this worker registered before a drain (frontier_control):
                            nothing claimed; it is to finish what it holds and stop */
} frontier_state_t;

/* Claims up to max URLs (one round trip), honouring per-host concurrency and
 * delay across all workers.  Also promotes due retries, renews this worker's
 * lease and reclaims the URLs of workers whose lease expired (as
 * frontier_heartbeat does).  On FRONTIER_WAIT and FRONTIER_PAUSED, *wait_ms
 * (if not NULL) is a hint of how long until something may be ready
 * (1..1000).  The crawl's control hash (frontier_control) is read in the
 * same atomic call: its per_host, delay and max_delay beat the handle's.  items[0..*n) are
 * filled on FRONTIER_READY (caller clears each with frontier_item_clear); on
 * error *n is 0 and nothing was claimed or the claim is lost with the
 * connection (the lease then expires and the URLs come back). */
int frontier_claim(frontier_t *f, size_t max, frontier_item_t *items, size_t *n,
                   frontier_state_t *state, uint32_t *wait_ms);

/* What became of one fetched URL. */
typedef struct frontier_outcome {
    int status;        /* HTTP status, 0 if none */
    const char *error; /* error kind ("timeout", "dns", "robots", ...) or NULL */
    uint64_t bytes;    /* body bytes received */
    int unfetched;     /* frontier_retry: no request was made (robots.txt unavailable): the
                          host is neither counted as failing nor backed off */
    uint32_t fetch_ms; /* how long the request took (0: unknown): the host's pace */
    const char *ip;    /* the address the request went to (NULL or "": none), recorded as
                          its host's with frontier_config_t.host_ip_ms */
} frontier_outcome_t;

/* One finished page: its outcome and the links found on it (normalized,
 * already scope-filtered and de-duplicated within the page). */
typedef struct frontier_done {
    const frontier_item_t *item;
    frontier_outcome_t outcome;
    const char *const *links;
    size_t nlinks;
    const unsigned char *link_first; /* [nlinks] or NULL: 1 puts that link, if new, ahead of
                                        its host's queue (a sitemap's <priority>) */
    uint32_t link_depth;             /* depth of the links (item depth + 1, redirect targets too) */
    uint32_t link_hops;      /* the links' hop count: 0, or item hops + 1 for a redirect target */
    uint32_t links_over_cap; /* links past the page's link cap, not given: > 0 counts the
                                page in capped_pages */
    size_t *nnew;            /* out, may be NULL: links that were new and queued */
} frontier_done_t;

/* Finishes n pages.  One atomic Redis function call per group of up to 128
 * pages and 2,048 links (a page with more links is a group of its own)
 * acknowledges each page's lease, test-and-adds its links in the Bloom
 * filter and queues the new ones (within max_depth/max_pages/
 * max_pages_per_host), and updates the counters: a crash leaves each page
 * either still leased (re-crawled later) or fully finished.  All the calls go
 * out in one pipelined round trip.  CRAWL_EINVAL (a bad item) changes
 * nothing; after another error some groups may be finished (the text of a
 * script's error: frontier_last_error).  CRAWL_ELEASE if a lease had
 * expired and been handed to another worker (that page is then neither
 * counted nor are its links offered: whoever holds its lease now fetches
 * it again and offers them).  A call run twice (sent again after its reply
 * was lost) finds its leases gone the second time and changes nothing.
 * Links deeper than max_depth are never offered; links over a page limit
 * are not added to the Bloom filter (so a
 * later run with higher limits finds them again).  Links the local Bloom
 * cache knows are skipped before the script.  The item may be claimed by
 * another handle (the lease names its worker).  A link holding a space, tab
 * or newline (normalized URLs never do) or without an origin is skipped
 * (counted in skipped_links; those over a registered domain's budget,
 * max_pages_per_domain or max_hosts_per_domain, in domain_links too). */
int frontier_finish(frontier_t *f, const frontier_done_t *pages, size_t n);

/* A fetch that deserves a retry (timeout, 5xx, 429): the URL goes to the
 * delayed set with exponential backoff and jitter, at least retry_after_ms
 * from now (Retry-After; 0 if none), or to the dead-letter list after
 * max_tries.  The host as a whole is backed off too.  Atomic.
 * Delay: backoff_ms * 2^tries capped at backoff_max_ms, then a uniform
 * random value in [d/2, d] (equal jitter), at least retry_after_ms.  Host:
 * from its 2nd consecutive failure, its next claim waits
 * backoff_ms * 2^(failures-2) (capped, jittered) and at least retry_after_ms;
 * a finished page without error and with a status < 500 (not 429) resets it.
 * CRAWL_ELEASE if the lease was lost (nothing was done: the URL is back in
 * the frontier or held by another worker) -- benign, not a failure. */
int frontier_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                   uint32_t retry_after_ms);

/* Hands leased URLs back to the front of their queues, untouched (shutdown),
 * in one round trip.  CRAWL_ELEASE if some lease was already lost (the
 * others are still handed back). */
int frontier_release(frontier_t *f, const frontier_item_t *items, size_t n);

/* After a lost connection, on the new one: hands back to the front of
 * their queues the URLs leased under this handle's worker id that are not
 * among items[0..n) (the ones the worker still holds and will finish):
 * those of a claim whose reply was lost, or of acknowledgements a restarted
 * Redis lost.  Two round trips; nothing else may be sent on this worker's
 * leases meanwhile.  *released (may be NULL): how many.  (reconcile.c) */
int frontier_reconcile(frontier_t *f, const frontier_item_t *items, size_t n, size_t *released);

/* Sets a host's own delay (e.g. robots Crawl-delay), capped at max_delay_ms.
 * A host's effective delay is max(delay_ms, min(own delay, max_delay_ms)). */
int frontier_set_host_delay(frontier_t *f, const char *origin, uint32_t delay_ms);

/* frontier_seed's flags (or'ed; 0: none).  FORCE: queue the URLs even if
 * the Bloom filter has seen them.  NO_HOSTS: do not record their hosts as
 * seed hosts (URLs that are not a crawl's seeds, e.g. sitemap URLs). */
#define FRONTIER_SEED_FORCE 1
#define FRONTIER_SEED_NO_HOSTS 2
/* FIRST: each URL goes ahead of everything queued for its host (a seed of
 * high priority), in the order given. */
#define FRONTIER_SEED_FIRST 4

/* Adds normalized URLs at depth 0 through the Bloom filter (already seen ones
 * are skipped unless FRONTIER_SEED_FORCE) and, unless FRONTIER_SEED_NO_HOSTS,
 * records the host of each (parser_url_host) in the crawl's seed hosts, in
 * the same atomic call that queues it: no worker can claim a seed before its
 * host is a seed host.  *added (may be NULL): how many were queued.  Seeds
 * count against max_pages/max_pages_per_host like links.  The URLs are first
 * grouped by host (so fewer hosts per script; when a limit cuts a batch
 * short, which hosts' seeds get in is not input order), then sent in
 * scripts of 256 URLs, pipelined 16 at a time.  A URL holding a space, tab
 * or newline, or without an origin, is not queued.  CRAWL_EINVAL for
 * other flags (nothing sent). */
int frontier_seed(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added);

/* ---- what the fetchers share about hosts (hostinfo.c) --------------------
 * The robots.txt cache and its fetch lock (per origin), the Sitemap: URLs
 * found, the seeds' hosts.  One plain Redis command each (one round trip;
 * frontier_robots_look and frontier_robots_store: one function call) on
 * the handle's link.  origin is the origin of a URL as the crawler computes
 * it (binary-safe, copied into the command; NULL or "" is CRAWL_EINVAL).
 * Errors: CRAWL_EINVAL (bad argument, nothing sent), CRAWL_ENOMEM
 * (nothing sent), CRAWL_EREDIS (the link lost), CRAWL_EREPLY (Redis
 * answered an error, e.g. a key of another type).  Redis is unchanged by a
 * failed call. */

/* Reads the robots.txt value stored for origin by frontier_robots_put (by
 * any worker of the crawl; the crawler stores "R" + robots_serialize output,
 * or "U" for "unavailable").  On 0, *val is a copy (caller frees with
 * free(); NUL-terminated after its *len bytes, which may hold NULs), or NULL
 * with *len 0 when nothing is stored (never put, or expired).  len may be
 * NULL.  On error *val is NULL. */
int frontier_robots_get(frontier_t *f, const char *origin, char **val, size_t *len);

/* Stores val (len bytes; 0 allowed) for origin, replacing what was there,
 * expiring after ttl_s seconds (SET EX; 1.., 0 is CRAWL_EINVAL). */
int frontier_robots_put(frontier_t *f, const char *origin, const char *val, size_t len,
                        uint32_t ttl_s);

/* One robots.txt fetch per host for the whole crawl: tries to take origin's
 * fetch lock (SET NX PX ttl_ms; ttl_ms 0 is CRAWL_EINVAL).  On 0, *won is
 * 1 if this call took it (the caller fetches, stores the result with
 * frontier_robots_put, then calls frontier_robots_unlock), 0 if someone holds
 * it (it lapses ttl_ms after it was taken, so a dead holder blocks nobody for
 * long).  On error *won is 0; a caller that must not stall on a broken Redis
 * may treat CRAWL_EREDIS as won (the crawler fetches then). */
int frontier_robots_lock(frontier_t *f, const char *origin, uint32_t ttl_ms, int *won);

/* Drops origin's fetch lock (DEL), whoever holds it: the lock carries no
 * owner, so call it only after winning it.  0 also when it was not held. */
int frontier_robots_unlock(frontier_t *f, const char *origin);

/* What frontier_robots_look found for one origin. */
typedef enum frontier_robots_found {
    FRONTIER_ROBOTS_STORED, /* a value is stored: val, len */
    FRONTIER_ROBOTS_WON,    /* none stored, and this call took the fetch lock */
    FRONTIER_ROBOTS_HELD,   /* none stored; another worker holds the lock */
} frontier_robots_found_t;

/* One origin of frontier_robots_look. */
typedef struct frontier_robots_look {
    const char *origin;            /* in (borrowed) */
    frontier_robots_found_t found; /* out */
    char *val;  /* out, STORED: a copy, NUL-terminated after len bytes (caller frees
                   with free()); else NULL */
    size_t len; /* out: bytes of val */
    int err;    /* out: 0, or the error of this origin's look (then found is HELD) */
} frontier_robots_look_t;

/* For each of n origins, atomically: the value stored for it (by any
 * worker), else its fetch lock taken for this caller if free (SET NX PX
 * lock_ms; 0 is CRAWL_EINVAL), else "held".  The lock won means no value is
 * stored (the fetcher stores and unlocks in one atomic call,
 * frontier_robots_store), so the caller fetches without looking again.
 * One round trip for all of them (calls of FR_ROBOTS_LOOK_MAX origins,
 * pipelined); a call answering an error (a key of another type) is retried
 * origin by origin, so that only the origin with the bad key fails (its err:
 * CRAWL_EWRONGTYPE, frontier_last_error naming the key; nothing written for
 * it).  Returns 0, the first origin's err, or CRAWL_EREDIS / CRAWL_ENOMEM
 * (then every err is set and nothing is known; locks may have been taken). */
int frontier_robots_look(frontier_t *f, frontier_robots_look_t *looks, size_t n, uint32_t lock_ms);

/* What a worker's robots.txt fetch gave, for frontier_robots_store. */
typedef struct frontier_robots_result {
    const char *origin;          /* whose fetch lock this worker won */
    const char *val;             /* the value every worker reads (frontier_robots_get), or
                                    NULL: store nothing (len 0) */
    size_t len;                  /* bytes of val (> 0 with val) */
    uint32_t ttl_s;              /* val's lifetime, 1.. */
    uint32_t delay_ms;           /* the host's own delay (frontier_set_host_delay, capped
                                    likewise); 0: none set */
    uint32_t space_ms;           /* the host's next claim no sooner than this from now
                                    (the fetch was a request to it); 0: not spaced */
    const char *const *sitemaps; /* Sitemap: URLs for the crawl's set (frontier_sitemaps_add) */
    size_t nsitemaps;
} frontier_robots_result_t;

/* Stores r's value, the host's delay and the sitemaps, then drops the fetch
 * lock: one atomic call, one round trip.  On a failure nothing is changed
 * (the lock is still held: drop it with frontier_robots_unlock). */
int frontier_robots_store(frontier_t *f, const frontier_robots_result_t *r);

/* Records n Sitemap: URLs (as found in robots.txt files; copied) in the
 * crawl's sitemap set, one SADD.  n 0: 0, nothing sent.  A NULL url is
 * CRAWL_EINVAL. */
int frontier_sitemaps_add(frontier_t *f, const char *const *urls, size_t n);

/* The hosts of the crawl's seeds (the set --scope host|domain and the
 * private-address guard read), in no order.  On 0, *hosts is an array of *n
 * strings (caller frees each with free(), then the array; NULL when *n is
 * 0).  On error *hosts is NULL and *n 0. */
int frontier_seed_hosts(frontier_t *f, char ***hosts, size_t *n);

/* Per-worker numbers for the heartbeat record. */
typedef struct frontier_worker_stats {
    uint64_t pages;     /* finished by this worker */
    double pages_per_s; /* recent rate */
    uint32_t in_flight; /* URLs it holds now */
} frontier_worker_stats_t;

/* What a heartbeat found, besides renewing the lease. */
typedef struct frontier_beat {
    size_t reclaimed;         /* URLs of expired workers handed back */
    int crawl_exists;         /* 0: the crawl's Bloom filter is gone (FLUSHALL, a
                                 Redis restarted without its data) */
    uint64_t bloom_added;     /* URLs added to the filter: seeds + new links (a crawl of
                                 several shards: in its fullest shard's filter) */
    frontier_state_t control; /* FRONTIER_DRAIN: this worker is to drain; FRONTIER_PAUSED:
                                 the crawl is paused; else FRONTIER_READY */
} frontier_beat_t;

/* ---- calls in flight (calls.c; each kind in its file) -----------------------
 * Every operation a worker runs without waiting is a frontier_call_t: the
 * _start of its kind (claim, heartbeat, finish, retry, release, robots.txt
 * look and store, seed hosts) checks its arguments and hands its commands
 * to the handle's link at once (rconn.h); any number of calls may be in
 * flight on one link, in any mix.  The link's owner polls the link when its
 * sockets wake it (rconn_link_poll); frontier_call_ready then says, without
 * ever waiting, whether a call is done, and sends its next step when its
 * kind has one (on a crawl of several shards, a finish's pages go after
 * their links' offers); frontier_call_end waits for the rest.  Once done,
 * frontier_call_result is the outcome, and the reader of the kind (below)
 * its findings.
 * A lost connection: the commands that may run twice are sent again by the
 * link on its next connect, and their call goes on; those are the ones
 * each keyed so that a second run changes nothing: a finish (its pages'
 * leases: a page whose lease is gone is not counted again and its links
 * are not offered again), its offers to other shards (a call id: the
 * second run answers the first's codes), a retry and a release (their
 * leases), a heartbeat (a renewal), a robots.txt store (a SET), the seed
 * hosts (a read).  The others (a claim, a robots.txt look: each would take
 * something twice) are done with CRAWL_EREDIS; what a lost claim leased is
 * handed back by frontier_reconcile.
 * Thread: a call belongs to its handle's thread. */
typedef struct frontier_call frontier_call_t;

/* Exact duplicates (--dedup): a page's payload digest, tested and recorded
 * crawl-wide in one atomic step of the digest's shard (P digests: digest ->
 * the first URL and its fetch time).  The first URL to record a digest owns
 * it; a page with that digest under another URL is its duplicate, told the
 * first URL and time (a WARC revisit record names them).  The same URL
 * again is no duplicate, so a call run twice answers alike. */
typedef struct frontier_dedup {
    const char *digest; /* "sha1:BASE32" (the WARC payload digest) */
    const char *url;
    int64_t time_ms; /* the page's fetch time, Unix ms */
    /* set once the call is done: */
    int duplicate;        /* 1: another URL recorded the digest first */
    char *orig_url;       /* then that URL (malloc'd: the caller frees it), else NULL */
    int64_t orig_time_ms; /* and its fetch time */
} frontier_dedup_t;

/* Politeness per IP address (--per-ip, --ip-delay): a slot of an address
 * is asked for before a transfer connects to it and given back when the
 * transfer ends.  Every worker of the crawl counts an address in one
 * place (its shard: a hash of the address), in one atomic step per ask or
 * return: no address has more than per_ip slots held, nor two grants
 * closer than gap_ms, nor a grant closer than gap_ms to the last return.
 * A slot not given back within hold_ms (a worker that died) lapses. */
typedef struct frontier_ipslot {
    char ip[64];    /* the address (CURLINFO_PRIMARY_IP's text) */
    uint64_t token; /* the holder's number: with the worker id, its token */
    int ret;        /* 1: the slot given back; 0: asked for */
    /* an ask's answer, set once the call is done: 0 granted, W > 0 the
     * next grant is W ms away, -1 every slot is held (ask again later) */
    int32_t wait_ms;
} frontier_ipslot_t;

/* 1 if c is done (frontier_call_result says how), 0 if not yet.  Never
 * waits: reads what the link's last poll took in. */
int frontier_call_ready(frontier_t *f, frontier_call_t *c);
/* Waits until c is done; returns its outcome (frontier_call_result).
 * CRAWL_EREDIS when the link went down: a call that may run twice is then
 * kept on the link, and _end may be called again after a reconnect. */
int frontier_call_end(frontier_t *f, frontier_call_t *c);
/* The outcome of a done call: 0 or a CRAWL_E* code, as the blocking
 * function of its kind returns it. */
int frontier_call_result(const frontier_call_t *c);
/* Frees c (a command in flight has its reply dropped when it comes).
 * Accepts NULL. */
void frontier_call_free(frontier_call_t *c);
/* Its kind's name ("claim", "finish", ...), for messages. */
const char *frontier_call_kind(const frontier_call_t *c);

/* The kinds.  Each _start returns 0 and *out, or an error with nothing
 * sent (*out NULL).  What a kind's arguments point to must stay valid until
 * its call is done (a finish's pages, a look's looks), unless said. */
/* frontier_claim: up to max URLs.  Its findings: frontier_claim_found. */
int frontier_claim_start(frontier_t *f, size_t max, frontier_call_t **out);
/* The URLs a done claim leased, into items (room for the max given to
 * _start, at most 1,000; caller clears each), the frontier's state and the
 * wait hint, as frontier_claim gives them.  Once: a second call finds none.
 * Returns the call's outcome. */
int frontier_claim_found(frontier_t *f, frontier_call_t *c, frontier_item_t *items, size_t *n,
                         frontier_state_t *state, uint32_t *wait_ms);
/* frontier_heartbeat (ws copied); its findings: frontier_heartbeat_found. */
int frontier_heartbeat_start(frontier_t *f, const frontier_worker_stats_t *ws,
                             frontier_call_t **out);
/* What a done heartbeat found, into *out; returns the call's outcome. */
int frontier_heartbeat_found(const frontier_call_t *c, frontier_beat_t *out);
/* frontier_finish: the pages' nnew are written when it is done. */
int frontier_finish_start(frontier_t *f, const frontier_done_t *pages, size_t n,
                          frontier_call_t **out);
/* frontier_retry (every argument copied; its delay's jitter drawn now). */
int frontier_retry_start(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                         uint32_t retry_after_ms, frontier_call_t **out);
/* frontier_release (the items' leases copied). */
int frontier_release_start(frontier_t *f, const frontier_item_t *items, size_t n,
                           frontier_call_t **out);
/* frontier_robots_look: looks[] filled when it is done. */
int frontier_robots_look_start(frontier_t *f, frontier_robots_look_t *looks, size_t n,
                               uint32_t lock_ms, frontier_call_t **out);
/* frontier_robots_store (r copied). */
int frontier_robots_store_start(frontier_t *f, const frontier_robots_result_t *r,
                                frontier_call_t **out);
/* frontier_seed_hosts; its findings: frontier_seed_hosts_found. */
int frontier_seed_hosts_start(frontier_t *f, frontier_call_t **out);
/* Tests and records the digests of d[0..n) (kept by the call: d must stay
 * until it is done); once done with 0, each d[i] says whether it is a
 * duplicate.  May run twice (RCONN_CALL_RESEND). */
int frontier_dedup_start(frontier_t *f, frontier_dedup_t *d, size_t n, frontier_call_t **out);
/* Asks for and gives back the slots s[0..n) (kept by the call: s must stay
 * until it is done), with per_ip slots an address (>= 1), gap_ms and
 * hold_ms as above; once done with 0, each ask has its wait_ms.  May run
 * twice (RCONN_CALL_RESEND). */
int frontier_ipgate_start(frontier_t *f, frontier_ipslot_t *s, size_t n, uint32_t per_ip,
                          uint32_t gap_ms, uint32_t hold_ms, frontier_call_t **out);
/* The hosts a done call read, as frontier_seed_hosts gives them (caller
 * frees); returns the call's outcome. */
int frontier_seed_hosts_found(frontier_call_t *c, char ***hosts, size_t *n);

/* The handle's worker id (valid until frontier_close). */
const char *frontier_worker_id(const frontier_t *f);

/* Renews this worker's lease and heartbeat record, and returns the URLs of
 * workers whose lease expired to the frontier (*reclaimed, may be NULL).
 * Call every lease_ms/3 or more often. */
int frontier_heartbeat(frontier_t *f, const frontier_worker_stats_t *ws, size_t *reclaimed);

#define FRONTIER_STATS_MAX_KINDS 16
#define FRONTIER_STATS_SLOWEST 5   /* slowest hosts frontier_stats reports */
#define FRONTIER_MAX_SLOW_HOST 128 /* bytes of such a host's origin kept (cut beyond) */
#define FRONTIER_MAX_KIND_LEN 32

/* ---- control of a running crawl (control.c) -----------------------------
 * The crawl's control hash (P control, keys.def) is what an operator sets
 * for every worker of the crawl at once (`crawler pause|resume|drain|
 * limits`).  Every claim, finish, seed, retry, release and heartbeat reads
 * it in the same atomic call that uses it, so a change holds from the next
 * call of any worker on, whichever machine it runs on:
 *   paused   claims take nothing (FRONTIER_PAUSED), leases are renewed, what
 *            runs is finished; the crawl is never over while paused;
 *   drain    a Redis time: a worker registered at or before it (its record's
 *            started) is told FRONTIER_DRAIN by its claims and heartbeats;
 *            one registered later is not;
 *   limits   a limit set there beats the value of the caller's
 *            frontier_config_t (the worker's flag); cleared, the worker's
 *            own holds again. */
typedef enum frontier_limit {
    FRONTIER_LIMIT_PER_HOST,           /* per_host, 1.. */
    FRONTIER_LIMIT_DELAY,              /* delay_ms */
    FRONTIER_LIMIT_MAX_DELAY,          /* max_delay_ms */
    FRONTIER_LIMIT_MAX_PAGES,          /* max_pages, 0: no limit */
    FRONTIER_LIMIT_MAX_PAGES_PER_HOST, /* max_pages_per_host, 0: no limit */
    FRONTIER_LIMIT_COUNT
} frontier_limit_t;

/* The field of limit l in the control hash ("per_host", "delay",
 * "max_delay", "max_pages", "max_pages_per_host"), or NULL out of range.
 * Static; thread-safe. */
const char *frontier_limit_field(frontier_limit_t l);

/* What the control hash holds. */
typedef struct frontier_control {
    int paused;                           /* 1: paused */
    uint64_t drain_ms;                    /* Redis time of the last drain, 0: none */
    int set[FRONTIER_LIMIT_COUNT];        /* 1: limit overridden ... */
    uint64_t value[FRONTIER_LIMIT_COUNT]; /* ... with this value (ms for the delays) */
} frontier_control_t;

/* A change of the control hash: each field 0 leaves it as it is. */
typedef struct frontier_control_change {
    int pause;                            /* 1: pause, -1: resume */
    int drain;                            /* 1: drain, at the call's Redis time */
    int limit[FRONTIER_LIMIT_COUNT];      /* 1: override with value[l], -1: clear */
    uint64_t value[FRONTIER_LIMIT_COUNT]; /* per_host 1..UINT32_MAX, the delays
                                             0..UINT32_MAX, pages any (0: none) */
} frontier_control_change_t;

/* Applies ch (NULL: no change, a reading) to the crawl's control hash in
 * one atomic call (one round trip; the frontier's Functions library loaded
 * first if the server lacks it), and reads it back into *out (may be
 * NULL), with the Redis time of the call (*now_ms) and the number of
 * workers with a live lease (*live); both may be NULL.  Works without a
 * handle (like frontier_stats).  CRAWL_EINVAL (a bad crawl name or a value
 * out of range: nothing sent), CRAWL_EREDIS, CRAWL_EWRONGTYPE (a key of the
 * wrong type: nothing written), CRAWL_EREPLY; errbuf (may be NULL) then
 * says why. */
int frontier_control(struct redisContext *rc, const char *crawl,
                     const frontier_control_change_t *ch, frontier_control_t *out, uint64_t *now_ms,
                     uint32_t *live, char *errbuf, size_t errlen);
/* frontier_control with every shard's copy written on its master (r: as
 * frontier_stats_routed). */
int frontier_control_routed(struct redisContext *rc, const struct rconn *r, const char *crawl,
                            const frontier_control_change_t *ch, frontier_control_t *out,
                            uint64_t *now_ms, uint32_t *live, char *errbuf, size_t errlen);

/* ---- blocks: hosts and domains an operator blocked (block.c) -----------
 * `crawler block --host H | --domain D`: every worker stops requesting H
 * (any scheme and port), or D and every name under it, within a claim: a
 * claim drops a blocked host's queue (its entries counted as `blocked`)
 * and tells its worker the list, which checks it before each transfer
 * (frontier_blocked); an offer or seed refuses links to it (counted as
 * `blocked_links`, left out of the visited set, so an unblock lets them in
 * again).  Kept in P blocks on every shard. */
#define FRONTIER_MAX_BLOCKS 10000 /* blocks a crawl holds at most */

typedef struct frontier_block {
    int domain;        /* 1: a domain (the name and every name under it), 0: a host */
    char name[256];    /* the host or domain, as the crawl's normalizer writes it */
    uint64_t since_ms; /* Redis time it was set */
} frontier_block_t;

typedef struct frontier_blocks {
    frontier_block_t *v; /* [n], caller frees with frontier_blocks_free */
    size_t n;
    uint64_t now_ms;  /* Redis time of the call */
    uint64_t changed; /* blocks the call added or removed (0: it was so already); what
                         the blocks dropped and refused: frontier_stats' blocked and
                         blocked_links */
} frontier_blocks_t;
void frontier_blocks_free(frontier_blocks_t *b);

/* change > 0 blocks name (domain 1: a domain, 0: a host; lowercase ASCII,
 * as parser_url_host writes a host), < 0 unblocks it, 0 reads; on every
 * shard of the crawl (r: as frontier_stats_routed), shard 0's list
 * (domains first, then hosts, by name) after the change into *out (freed
 * and replaced).  A block then drops the
 * queues of the hosts it covers, shard by shard, in calls of at most
 * FR_BLOCK_SCAN hosts; *dropped (may be NULL) the entries dropped.  Works
 * without a handle.  CRAWL_EINVAL (a bad name: nothing sent),
 * CRAWL_EREDIS, CRAWL_EWRONGTYPE, CRAWL_ENOTFOUND (no such crawl),
 * CRAWL_EREPLY (among others: more than FRONTIER_MAX_BLOCKS); errbuf (may
 * be NULL) then says why. */
int frontier_block(struct redisContext *rc, const struct rconn *r, const char *crawl, int change,
                   int domain, const char *name, frontier_blocks_t *out, uint64_t *dropped,
                   char *errbuf, size_t errlen);
/* 1 if url's host is blocked by the list this handle's claims last
 * brought (the crawl's P blocks as of the handle's latest claim), else 0.
 * No Redis access; the handle's thread only. */
int frontier_blocked(const frontier_t *f, const char *url);

/* ---- the crawl's admission settings (settings.c) ---------------------------
 * What the crawl admits (the caller's fields: the crawler's scope, limits
 * and patterns), kept with the crawl in P settings (shard 0) so that every
 * worker admits by the same rules.  frontier_settings writes the caller's
 * fields[i] = values[i] if the crawl keeps none yet, in the one atomic call
 * that reads them (two first workers racing agree on one), and gives each
 * field's stored value in stored[i] (a copy the caller frees; NULL when
 * the crawl keeps none for it: a crawl made before this build, or a field
 * it did not know).  CRAWL_ENOTFOUND if the crawl is gone.  One round trip
 * on the handle's link. */
int frontier_settings(frontier_t *f, const char *const *fields, const char *const *values, size_t n,
                      char **stored);
/* The settings a crawl keeps, without a handle (stats, limits): *kv an
 * array of *n strings, field, value, field, value, ... (caller frees each,
 * then the array; NULL when none).  One HGETALL on rc (shard 0's server). */
int frontier_read_settings(struct redisContext *rc, const char *crawl, char ***kv, size_t *n);

/* Gauges (now): queued, delayed, in_flight, hosts (ever admitted a URL),
 * ready_hosts (with queued URLs and room for one more fetch), dead.
 * Counters (since the crawl began): enqueued (URLs admitted: seeds + new
 * links), seeds, claimed, fetched (pages finished, whatever the outcome),
 * bytes, retried, reclaimed (from dead workers), released, seen_links (links
 * already in the filter), new_links, skipped_links (over max_depth or a page
 * limit), capped_pages (pages with more links than the link cap: the rest
 * were not followed), blocked (queued URLs dropped by an operator's block),
 * blocked_links (links and seeds a block refused), status classes of fetched/retried responses,
 * errors (outcomes with an error kind; by kind in kinds[], largest first, at most
 * FRONTIER_STATS_MAX_KINDS). */
typedef struct frontier_stats {
    uint64_t queued, delayed, in_flight, hosts, ready_hosts, dead;
    uint64_t claimed, fetched, bytes, retried, seen_links, new_links;
    uint64_t status_2xx, status_3xx, status_4xx, status_5xx, errors;
    uint32_t workers; /* with a live lease */
    uint64_t enqueued, seeds, reclaimed, released, skipped_links, status_other;
    uint64_t capped_pages, blocked, blocked_links, domain_links;
    unsigned shards; /* the crawl's shards: every count is their sum */
    uint64_t now_ms; /* Redis server time of the reading */
    size_t nkinds;
    struct {
        char kind[FRONTIER_MAX_KIND_LEN];
        uint64_t count;
    } kinds[FRONTIER_STATS_MAX_KINDS];
    /* URLs the crawl added to its Bloom filter: seeds + new_links (a forced
     * re-seed of a URL already seen counts again: the count errs high) */
    uint64_t bloom_added;
    /* the same in the fullest shard (each shard has a filter of its own, of
     * the same geometry): what says whether the crawl's filters are full */
    uint64_t bloom_added_max;
    /* the same for each shard, shard_added[0..shards): its filter's fill */
    uint64_t shard_added[FRONTIER_MAX_SHARDS];
    frontier_control_t control; /* the crawl's control hash (frontier_control) */
    /* the hosts whose pace makes them wait longer than the crawl's delay
     * (P hslow), and the slowest of them, slowest first */
    uint64_t paced_hosts;
    uint64_t blocks; /* hosts and domains blocked (crawler block; shard 0's list) */
    size_t nslow;
    struct {
        char host[FRONTIER_MAX_SLOW_HOST];
        uint64_t delay_ms;
    } slow[FRONTIER_STATS_SLOWEST];
} frontier_stats_t;

/* Reads the crawl's counters, summed over its shards, in two round trips
 * (the shard count, then every shard's keys; works without an open
 * handle).  Workers and control are shard 0's (every worker registers in
 * every shard; control writes every shard's copy). */
int frontier_stats(struct redisContext *rc, const char *crawl, frontier_stats_t *out);
/* frontier_stats of a crawl whose shards a Redis Cluster spreads over its
 * masters: rc is shard 0's server, r says where the others are (a
 * connection opened to each other master for the reading, closed after);
 * r NULL, or not a cluster: frontier_stats. */
int frontier_stats_routed(struct redisContext *rc, const struct rconn *r, const char *crawl,
                          frontier_stats_t *out);
/* Deletes every key of one crawl (and nothing else): SCAN MATCH on the
 * crawl's exact key prefix (glob characters escaped), then on its shards'
 * (keys.h: the crawl name and "/<shard>" in the hash tag; a crawl name holds no '/'), UNLINK
 * in batches:
 * every key of keys.def, families and the Bloom filter included.  *deleted
 * may be NULL. */
int frontier_reset(struct redisContext *rc, const char *crawl, uint64_t *deleted);

/* One worker's heartbeat record. */
typedef struct frontier_worker_info {
    char id[128];
    char host[64];
    long pid;
    uint64_t started_ms, last_ms; /* server time: registered, last heartbeat */
    uint64_t lease_until_ms;      /* its lease expires then */
    uint64_t pages;               /* as last reported */
    double pages_per_s;
    uint32_t in_flight; /* as last reported */
    uint32_t leased;    /* URLs leased to it in Redis now */
    int live;           /* lease not expired */
} frontier_worker_info_t;

/* Lists the crawl's registered workers (two round trips).  *out is an array
 * of *n records (caller frees with free(); NULL when *n == 0). */
int frontier_workers(struct redisContext *rc, const char *crawl, frontier_worker_info_t **out,
                     size_t *n);

/* Redis round trips this handle made so far (for benchmarks).  Thread-safe
 * as far as the handle is. */
uint64_t frontier_round_trips(const frontier_t *f);

/* 1 if this handle sets Bloom bits through the crawler module's CRAWLER.BFADD
 * (the Redis it opened on had it loaded, and cfg.bitfield_only was 0), 0 if
 * through BITFIELD.  Both write the same bits.  A Redis restarted without the
 * module after the open makes the handle's link-offering calls fail with
 * CRAWL_EREPLY before they change anything (the script's error names the
 * command); a handle opened afterwards uses BITFIELD. */
int frontier_bits_module(const frontier_t *f);

/* The text of the last error reply a frontier function (or loading the
 * library) got from Redis on this handle, "" if none yet; a line of the Lua
 * library in it is named by its source, "frontier/lua/claim.lua" line 12 as
 * "claim.lua:12".  Valid until the next call on the handle; not cleared by
 * a call that succeeds. */
const char *frontier_last_error(const frontier_t *f);

#endif
