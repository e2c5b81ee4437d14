/*
 * fetch.h -- the transfers of one worker thread: a libcurl multi handle, a
 * pool of easy handles, page and robots.txt transfers, the private-address
 * guard, and the streaming of page bodies into the HTML (or sitemap) parser.
 *
 * The transfers only report: a finished transfer comes out of fetch_next()
 * as a result (a page with its status, error and links; or a robots.txt
 * body) and the caller decides what happens next.  Nothing here talks to
 * Redis.
 *
 * Every fetch, whatever its kind and hop, passes the private-address guard
 * for the host it connects to, and a redirect target the scope (see
 * fetch_start_robots, and a page's links).
 *
 * Not thread-safe: a fetch_t belongs to one thread.  Errors: 0 or a negative
 * CRAWL_E* code (CRAWL_ENOMEM out of memory, CRAWL_EREDIS the multi
 * handle refused the transfer).
 */
#ifndef CRAWLER_FETCH_H
#define CRAWLER_FETCH_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "frontier.h"
#include "netloop.h"
#include "page.h"
#include "scope.h"
#include "tls_sessions.h"

/* --max-links-per-page: links followed per page (a sitemap holds up to
 * 50,000); more are not followed, and counted in page_t.links_over_cap */
#define FETCH_DEFAULT_MAX_LINKS_PER_PAGE 50000
#define FETCH_ROBOTS_MAX_BYTES (500u * 1024u) /* RFC 9309: parse at least 500 KiB */
#define FETCH_SITEMAP_MAX_BYTES                                                                    \
    (50u << 20)                      /* sitemaps.org: 50 MB uncompressed; a sitemap's              \
                                        cap whatever --max-size (if smaller) */
#define FETCH_ROBOTS_MAX_REDIRECTS 5 /* RFC 9309: follow at least five */
#define FETCH_RECV_BUFFER 4096L      /* curl's receive buffer, per transfer */
#define FETCH_DNS_TTL_S 60L          /* a DNS answer is kept while used, and so long */
#define FETCH_MAX_VALIDATOR 1024     /* bytes of an ETag or Last-Modified kept, at most */

typedef struct fetch fetch_t;

typedef enum fetch_kind { FETCH_PAGE, FETCH_ROBOTS } fetch_kind_t;

/* One finished transfer. */
typedef struct fetch_result {
    fetch_kind_t kind;
    /* FETCH_PAGE.  page is the caller's (page_clear() it or hand it on):
     * links are set only on a page that was read (retry is 0 and no
     * transport error), after a late <meta name=robots content=nofollow>
     * none. */
    page_t page;
    int retry;               /* failed in a way worth another try: a transient
                                transport error, 429 or 5xx */
    uint32_t retry_after_ms; /* the response's Retry-After, 0: none */
    /* the exchange to record (WARC), NULL unless recording and a response
     * was read; valid until the next fetch_next() or fetch_free() */
    const page_exchange_t *exchange;
    /* FETCH_ROBOTS; origin and body valid until the next fetch_next() or
     * fetch_free() */
    const char *origin;     /* "scheme://host[:port]" */
    const char *moved_to;   /* a redirect to another origin's robots.txt, not followed:
                               that origin (its rules are this one's), or NULL */
    long status;            /* HTTP status of the last response, 0: none */
    int complete;           /* the body was read to its end, or to FETCH_ROBOTS_MAX_BYTES */
    int blocked;            /* the private-address guard refused the address */
    int tls_refused;        /* failed for good in TLS (a certificate that does not
                               verify): a page fetch of the origin will fail so too */
    const char *error_kind; /* the transport error's kind ("dns", ...), NULL: none */
    const char *error_text; /* its text (curl's), NULL: none */
    const char *body;       /* NUL-terminated */
    size_t body_len;
} fetch_result_t;

/* Creates the transfers of one thread, at most max_running of them in
 * flight at once (pages and robots.txt: a transfer started past that waits
 * its turn, in the order started, and starts the moment one ends), its
 * connection cache holding up to
 * max_connects connections (running and kept alive; CURLMOPT_MAXCONNECTS), DNS
 * answers shared through share (borrowed, may be NULL), TLS sessions
 * through tls (borrowed, may be NULL: libcurl's own), links filtered by
 * scope and the guard letting its seed hosts through (borrowed; the caller
 * may refresh its seed hosts between calls).  record: keep each page's
 * request and response heads and body for fetch_result_t.exchange.  cfg
 * must outlive the handle.  NULL on failure, with a message in err. */
fetch_t *fetch_new(const crawl_config_t *cfg, size_t max_running, size_t max_connects,
                   CURLSH *share, tls_sessions_t *tls, const scope_t *scope, int record, char *err,
                   size_t errlen);
/* Stops every transfer and frees the handle (the items of running page
 * transfers are dropped: fetch_cancel() them first).  Accepts NULL. */
void fetch_free(fetch_t *f);

/* Starts fetching a leased URL (now, or when a transfer ends: see
 * fetch_new).  0: the transfer took *item over (*item is zeroed); else an
 * error and *item is untouched. */
int fetch_start_page(fetch_t *f, frontier_item_t *item);
/* Starts fetching origin + "/robots.txt" (the first FETCH_ROBOTS_MAX_BYTES
 * kept).  Redirects are followed up to FETCH_ROBOTS_MAX_REDIRECTS hops, each
 * only to a host the scope's host rules allow (scope_allows_host) and
 * through the private-address guard judging that host; a redirect not
 * followed ends the transfer with its 3xx status (complete), a target the
 * guard refused with `blocked` set.  origin is copied.  0 or an error. */
int fetch_start_robots(fetch_t *f, const char *origin);

/* Transfers running, waiting their turn to start (or a slot of their IP
 * address, or a deferred robots.txt hop), or finished with their result
 * not yet taken by fetch_next (pages and robots.txt) ... */
size_t fetch_active(const fetch_t *f);
/* ... of them, the ones in flight now (at most max_running) ... */
size_t fetch_in_flight(const fetch_t *f);
/* ... and the ones not started: waiting their turn, a slot of their
 * address, or a deferred hop. */
size_t fetch_waiting(const fetch_t *f);
/* Takes the leased URL of a page transfer that has not started (waiting its
 * turn or a slot of its address) back out: 1 with *item the caller's, 0 when none is left (*item
 * zeroed).  For a stop: what has not started goes back to the frontier. */
int fetch_unstart(fetch_t *f, frontier_item_t *item);

/* Runs curl's timeouts that are due (transfers just started, timers). */
void fetch_perform(fetch_t *f);
/* Serves the sockets that are ready (one epoll_wait: the cost follows the
 * sockets ready, not the transfers running), waiting up to ms (0: not at
 * all) for a transfer to need attention or one of watch's fds (Redis
 * replies awaited; watch may be NULL) to be readable (netloop_wait); then
 * the due timeouts. */
void fetch_wait(fetch_t *f, const netloop_watch_t *watch, int ms);

/* The next finished transfer: 1 and *r filled, or 0 when none is left for
 * now.  Call after fetch_perform(). */
int fetch_next(fetch_t *f, fetch_result_t *r);

/* Shutdown: stops one transfer (a finished one whose result was not taken
 * first).  1 with *item the leased URL of a page transfer (the caller's),
 * or zeroed for a robots.txt transfer; 0 when none is left. */
int fetch_cancel(fetch_t *f, frontier_item_t *item);

/* Per-IP politeness (crawl_config_t per_ip or ip_delay_ms set): a
 * transfer connects only to an address it holds a slot of, asked for in
 * Redis (frontier_ipgate_start) by the caller on fetch's behalf: the asks
 * and returns made since the last batch, as one batch (fetch's until
 * fetch_ip_answered), *n of them; NULL when there are none, a batch is in
 * flight, or the gate is off.  per, gap and hold: the call's arguments. */
frontier_ipslot_t *fetch_ip_batch(fetch_t *f, size_t *n, uint32_t *per, uint32_t *gap,
                                  uint32_t *hold);
/* The batch answered (rc: the call's outcome; on a failure every ask
 * asks again later, every return is lost and its slot lapses): a granted
 * transfer starts, one told to wait waits. */
void fetch_ip_answered(fetch_t *f, int rc);
/* 1 if asks or returns wait for a batch to go (none is in flight). */
int fetch_ip_unsent(const fetch_t *f);

/* Calls fn on the item of every page transfer running, waiting (its turn
 * or a slot of its address) or finished and not taken (the leases they hold); fn must not call back
 * into f. */
void fetch_each_item(const fetch_t *f, void (*fn)(const frontier_item_t *, void *), void *ud);

#endif
