/*
 * engine_internal.h -- what engine.c, fetch.c and robotsfetch.c share: the
 * engine, the per-thread worker, and one transfer.
 *
 * Ownership: a worker is owned by its thread; every field of it is touched
 * only by that thread.  The engine's counters are atomics; `stop` is the
 * shutdown flag (0 run, 1 stop claiming and finish, 2 hand back at once).
 */
#ifndef CRAWLER_ENGINE_INTERNAL_H
#define CRAWLER_ENGINE_INTERNAL_H

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bloom.h"
#include "config.h"
#include "engine.h"
#include "frontier.h"
#include "parser.h"
#include "rconn.h"
#include "robots.h"
#include "scope.h"
#include "sitemap.h"

#define ENGINE_MAX_LINKS_PER_PAGE 20000
#define ENGINE_ROBOTS_MAX_BYTES (500u * 1024u) /* RFC 9309: parse at least 500 KiB */
#define ENGINE_ROBOTS_TTL_S 86400              /* cache parsed rules for 24 h */
#define ENGINE_ROBOTS_RETRY_TTL_S 60           /* "disallow all for now" lasts at most this */
#define ENGINE_ROBOTS_CACHE 1024               /* parsed rule sets kept per thread */
#define ENGINE_SEED_REFRESH_MS 5000
#define ENGINE_ROBOTS_POLL_MS 50 /* looking for another worker's robots.txt */

typedef struct engine engine_t;

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;
int buf_add(buf_t *b, const void *data, size_t n);
void buf_free(buf_t *b);

typedef enum xfer_kind { XF_PAGE, XF_ROBOTS } xfer_kind_t;

typedef struct worker worker_t;

typedef struct xfer {
    xfer_kind_t kind;
    worker_t *w;
    CURL *h;
    struct xfer *next_free;
    struct xfer *prev, *next; /* worker's list of running transfers */
    frontier_item_t item;     /* XF_PAGE: the leased URL */
    char *origin;             /* XF_ROBOTS: origin whose robots.txt this is */
    char host[256];           /* host of the URL, for the private-address guard */
    int seed_host;            /* host is a seed host: the guard lets it through */
    int blocked;              /* the guard refused the address */
    int too_large;            /* body passed --max-size */
    int parse_started;
    parser_t *parser;
    sitemap_t *sitemap; /* --sitemaps and an XML body */
    char *ctype, *location, *xrobots;
    uint32_t retry_after_ms;
    uint64_t bytes;
    char **links;
    size_t nlinks, links_cap;
    uint64_t *seen; /* open-addressing set of link hashes (page-local dedupe) */
    size_t seen_cap, nseen;
    buf_t body;     /* robots body, or the page body when writing WARC */
    buf_t reqhead;  /* raw request head (WARC) */
    buf_t resphead; /* raw response head (WARC) */
    uint64_t t_start;
    char ip[64];
    char errbuf[CURL_ERROR_SIZE];
} xfer_t;

/* A robots.txt rule set known to this thread, or one being fetched. */
typedef struct rentry {
    char *origin;
    robots_t *rules; /* NULL while pending */
    int unavailable; /* 5xx/unreachable: disallow all for now */
    int remote;      /* another worker is fetching it (rfetch_poll) */
    uint64_t expires_ms;
    frontier_item_t *parked; /* URLs waiting for the rules */
    size_t nparked, parked_cap;
} rentry_t;

/* One finished page waiting for the batched frontier_finish. */
typedef struct done {
    frontier_item_t item;
    int status;
    char *ctype, *error_kind, *error_text, *canonical, *location;
    uint64_t bytes, fetch_ms, links_found;
    char **links;
    size_t nlinks;
    uint32_t link_depth;
    size_t nnew;
} done_t;

struct worker {
    engine_t *e;
    int idx;
    pthread_t thread;
    redisContext *rc;
    bloom_t *bloom;
    frontier_t *fr;
    scope_t *scope;
    CURLM *multi;
    xfer_t *free_xfers;
    xfer_t *running; /* transfers in the multi handle */
    size_t active;   /* transfers running */
    size_t parked;   /* URLs waiting for robots.txt */
    rentry_t *robots;
    size_t nrobots;
    size_t nremote; /* entries waiting for another worker's robots.txt */
    uint64_t next_remote_poll_ms;
    done_t *done; /* pages finished by the transfers, not yet sent to Redis */
    size_t ndone, done_cap;
    /* Finishing runs on its own connection and frontier handle (same worker
     * id), so that the thread goes on fetching and parsing while Redis runs
     * the finish calls: fin_pending is the batch in flight, fin_done its
     * pages (kept until the replies are read). */
    redisContext *fin_rc;
    bloom_t *fin_bloom;
    frontier_t *fin_fr;
    frontier_pending_t *fin_pending;
    frontier_done_t *fin_pages;
    done_t *fin_done;
    size_t nfin, fin_cap, fin_done_cap;
    uint64_t next_heartbeat_ms, next_seed_refresh_ms, claim_after_ms;
    uint64_t pages;                 /* finished by this worker, for its heartbeat */
    uint64_t hb_pages, hb_pages_ms; /* at the last heartbeat (its pages/s) */
    int failed;                     /* Redis lost: the thread stops */
};

struct engine {
    const crawl_config_t *cfg;
    const rconn_t *redis;
    struct out *out;
    struct warc *warc;
    CURLSH *share;
    bloom_cache_t *seen_cache; /* the finishing handles' shared local Bloom cache */
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    atomic_int stop;
    atomic_int running;
    atomic_int out_failed, warc_failed; /* first write error reported once */
    atomic_uint_fast64_t pages, bytes, errors, retried, released;
    worker_t *workers;
};

uint64_t engine_now_ms(void);
uint64_t engine_wall_ms(void);

/* fetch.c */
xfer_t *fetch_get(worker_t *w, xfer_kind_t kind, const char *url);
void fetch_put(worker_t *w, xfer_t *x);
void fetch_unlink(worker_t *w, xfer_t *x);
int fetch_start(worker_t *w, xfer_t *x);
void fetch_page(worker_t *w, frontier_item_t *item);
void fetch_page_done(worker_t *w, xfer_t *x, CURLcode res);
void fetch_free_pool(worker_t *w);
int done_push(worker_t *w, frontier_item_t *item, int status, const char *error_kind,
              const char *error_text);
/* Sends the pages finished so far to Redis (frontier_finish_start on the
 * finishing connection), after completing the batch still in flight, if
 * any; with wait, also completes the batch it sent. */
void done_flush(worker_t *w, int wait);
/* Completes the batch in flight (reads the replies, writes the output
 * records) -- at once if it has answered (or block), else returns 0 and
 * leaves it. Returns 1 when a batch was completed. */
int done_complete(worker_t *w, int block);
void fetch_retry(worker_t *w, const done_t *d, uint32_t retry_after_ms);

/* robotsfetch.c (prefix rfetch_) */
void rfetch_dispatch(worker_t *w, frontier_item_t *item);
void rfetch_done(worker_t *w, xfer_t *x, CURLcode res);
void rfetch_cache_free(worker_t *w);
void rfetch_release_parked(worker_t *w);
void rfetch_poll(worker_t *w);

#endif
