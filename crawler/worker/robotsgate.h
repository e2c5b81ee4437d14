/*
 * robotsgate.h -- robots.txt in front of every claimed URL: the gate of one
 * worker thread answers, for each URL, allow / deny / retry, or wait (the
 * URL is parked while the rules of its origin are being fetched).
 *
 * The gate never fetches: when a robots.txt has to be fetched, it says so
 * (robotsgate_next_fetch) and the caller starts the transfer, then hands the
 * body back (robotsgate_fetched) -- or says it could not start it
 * (robotsgate_unfetched).  When the rules of parked URLs become known, the
 * URLs come out of robotsgate_next_ready() with their verdicts.  After each
 * call that may produce them (check, fetched, unfetched, poll), the caller
 * drains both.  Rules are shared with every worker of the crawl through
 * Redis (see robotsgate.c); one worker per origin fetches, the others poll.
 *
 * Not thread-safe: a gate belongs to one thread and uses that thread's
 * claiming connection and frontier handle.  Errors: 0 or a negative
 * CRAWL_E* code, returned when a Redis call failed; the gate still did
 * its work as if the shared cache were empty (verdicts stay valid), but its
 * connection is probably gone: the caller should stop.
 */
#ifndef CRAWLER_ROBOTSGATE_H
#define CRAWLER_ROBOTSGATE_H

#include <stddef.h>

#include "config.h"
#include "frontier.h"
#include "scope.h"

#define ROBOTSGATE_POLL_MS 50 /* looking for another worker's robots.txt this often */

/* The texts a denied or retried URL is finished or retried with, of kind
 * CRAWL_KIND_ROBOTS and CRAWL_KIND_ROBOTS_UNAVAILABLE (errors.h); a retried
 * URL whose robots.txt's failure is known carries that cause instead
 * (robotsgate_cause). */
#define ROBOTSGATE_DENY_TEXT "disallowed by robots.txt"
#define ROBOTSGATE_RETRY_TEXT "robots.txt answered 5xx or was unreachable; retrying later"

typedef enum robotsgate_verdict {
    ROBOTSGATE_ALLOW, /* fetch it (also: robots ignored, or out of memory) */
    ROBOTSGATE_DENY,  /* disallowed: finish it as CRAWL_KIND_ROBOTS */
    ROBOTSGATE_RETRY, /* robots.txt unavailable: retry with its cause (robotsgate_cause) */
    ROBOTSGATE_WAIT,  /* parked: the gate holds the URL until its rules are known */
} robotsgate_verdict_t;

/* A fetched robots.txt, as the transfer ended. */
typedef struct robotsgate_body {
    const char *origin;     /* "scheme://host[:port]" the fetch was asked for */
    const char *moved_to;   /* it redirected to this origin's own robots.txt (not
                               followed: origin adopts that one's rules), or NULL */
    long status;            /* HTTP status of the last response, 0: none */
    int complete;           /* read to its end (or to the size cap) */
    int blocked;            /* the private-address guard refused the host */
    int tls_refused;        /* TLS failed for good (fetch_result_t.tls_refused) */
    const char *error_kind; /* the transfer's error ("dns", "timeout", ...), or NULL */
    const char *error_text; /* its text (curl's), or NULL */
    const char *body;
    size_t len;
} robotsgate_body_t;

/* Why a URL's robots.txt is unavailable: what its record and retry say. */
#define ROBOTSGATE_CAUSE_TEXT 320
typedef struct robotsgate_cause {
    const char *kind;                 /* a kind's word (errors.h: "dns", "http-5xx", ...), static;
                                         "robots-unavailable" when the cause is not known */
    long status;                      /* robots.txt's HTTP status (5xx, 429), 0: none */
    char text[ROBOTSGATE_CAUSE_TEXT]; /* "robots.txt: <the fetch's error>" */
} robotsgate_cause_t;

typedef struct robotsgate robotsgate_t;

/* A gate using fr (borrowed: the thread's claiming frontier handle, whose
 * functions own the shared robots.txt cache, its locks and the sitemap set)
 * and scope (borrowed; for the sitemaps of robots.txt).  cfg must outlive
 * it.  NULL on out of memory. */
robotsgate_t *robotsgate_new(const crawl_config_t *cfg, frontier_t *fr, const scope_t *scope);
/* Frees the gate; parked and ready URLs are dropped, not handed back (see
 * robotsgate_take_parked).  Accepts NULL. */
void robotsgate_free(robotsgate_t *g);

/* Before the items of one claim go through robotsgate_check: the origins
 * among them this thread does not know are looked up in Redis in one round
 * trip (their rules, or the fetch lock taken, or another worker's fetch
 * noted), so that robotsgate_check answers each of them without Redis.
 * Optional (robotsgate_check looks up an unknown origin itself, one round
 * trip each).  items are only read.  Errors as robotsgate_check's. */
int robotsgate_prefetch(robotsgate_t *g, const frontier_item_t *items, size_t n);
/* robotsgate_prefetch in halves, so that the thread serves its transfers
 * while Redis answers: _start sends the look on fr (borrowed: the thread's
 * handle) and sets *out, or leaves *out NULL when no origin is new to the
 * thread (or memory is short: robotsgate_check looks them up one by one).
 * Until the look ends, a URL of one of its origins that reaches
 * robotsgate_check is parked.  _ready: 1 once it answered (or failed), 0
 * not yet (never waits: the thread polls its link).  _end applies the
 * answers (waiting for them) and frees the look; a look that failed (the
 * link lost) leaves nothing known of its origins, so they are fetched;
 * errors as robotsgate_check's.  _drop frees a look unread: as a failed
 * one.  Accepts NULL. */
typedef struct robotsgate_look robotsgate_look_t;
int robotsgate_prefetch_start(robotsgate_t *g, frontier_t *fr, const frontier_item_t *items,
                              size_t n, robotsgate_look_t **out);
int robotsgate_prefetch_ready(robotsgate_look_t *l);
int robotsgate_prefetch_end(robotsgate_t *g, robotsgate_look_t *l);
void robotsgate_prefetch_drop(robotsgate_t *g, robotsgate_look_t *l);

/* The verdict for a claimed URL (no Redis call when its origin is known to
 * the thread: prefetched, or seen within the last minute).  On
 * ROBOTSGATE_WAIT *item is taken over (zeroed); otherwise it stays the
 * caller's. */
int robotsgate_check(robotsgate_t *g, frontier_item_t *item, robotsgate_verdict_t *verdict);

/* An origin whose robots.txt the caller is to fetch now, or NULL.  Valid
 * until the next robotsgate_next_fetch() or robotsgate_free(). */
const char *robotsgate_next_fetch(robotsgate_t *g);
/* The robots.txt of b->origin was fetched: its rules are stored for every
 * worker and settle the parked URLs. */
int robotsgate_fetched(robotsgate_t *g, const robotsgate_body_t *b);
/* The fetch of origin's robots.txt could not start: its URLs are allowed
 * (a page fetch will say what is wrong with the host). */
int robotsgate_unfetched(robotsgate_t *g, const char *origin);
/* For URLs parked on another worker's fetch: looks in Redis for the rules
 * every ROBOTSGATE_POLL_MS, or takes the fetch over if its lock expired.
 * Cheap when nothing is due. */
int robotsgate_poll(robotsgate_t *g);
/* URLs held after their robots.txt (the host's delay after the fetch)
 * whose time has come go to the ready queue.  No Redis: call it every loop
 * turn, Redis reachable or not (robotsgate_poll calls it too). */
void robotsgate_release_held(robotsgate_t *g);

/* Why url got ROBOTSGATE_RETRY: the failure of its origin's robots.txt
 * fetch, by whichever worker made it (the cause is shared with the rules),
 * into *c; CRAWL_KIND_ROBOTS_UNAVAILABLE and ROBOTSGATE_RETRY_TEXT when it is
 * not known (an entry
 * an older build stored, or one evicted since).  No Redis call. */
void robotsgate_cause(const robotsgate_t *g, const char *url, robotsgate_cause_t *c);

/* A parked URL whose rules are known now: 1 with *item (the caller's) and
 * *verdict (never ROBOTSGATE_WAIT), or 0. */
int robotsgate_next_ready(robotsgate_t *g, frontier_item_t *item, robotsgate_verdict_t *verdict);

/* URLs parked now. */
size_t robotsgate_parked(const robotsgate_t *g);
/* 1 if some are parked on another worker's fetch (call robotsgate_poll
 * at least every ROBOTSGATE_POLL_MS), else 0. */
int robotsgate_polling(const robotsgate_t *g);

/* Shutdown: the URLs parked on one origin, to hand back to the frontier.
 * 1 with *items (n of them; caller clears each and frees the array with
 * free()), or 0 when none is left. */
int robotsgate_take_parked(robotsgate_t *g, frontier_item_t **items, size_t *n);

/* Calls fn on every URL the gate holds (parked, or with a verdict not yet
 * taken): the leases it keeps. */
void robotsgate_each_item(const robotsgate_t *g, void (*fn)(const frontier_item_t *, void *),
                          void *ud);

/* From now on a robots.txt's store (rules, Crawl-delay, Sitemap: lines and
 * the unlock: frontier_robots_store) is not sent by robotsgate_fetched but
 * handed out as a call (robotsgate_next_store), for the caller to send on a
 * connection of its own without waiting -- unless the file has a
 * Crawl-delay longer than --delay (one the claims did not know): then it is
 * waited for, so that Redis knows the host's delay before the next claim
 * and before the URLs handed back after it reach their queue.  The rules
 * apply to this thread's URLs at once either way. */
void robotsgate_defer_stores(robotsgate_t *g);
/* The next store, sent: 1 with *call and *origin (the caller's: it takes
 * the call's answer, frees it with frontier_call_free and origin with
 * free(), and reports the outcome with robotsgate_stored), or 0. */
int robotsgate_next_store(robotsgate_t *g, frontier_call_t **call, char **origin);
/* The outcome rc of origin's store (its call's result): a store refused
 * (nothing done) drops the fetch lock (one round trip).  Errors as
 * robotsgate_check's. */
int robotsgate_stored(robotsgate_t *g, const char *origin, int rc);

/* From now on robotsgate_poll does not look in Redis itself (it still
 * releases the held URLs): the caller sends the polls without waiting,
 * robotsgate_poll_start when one is due, and ends each as a prefetch ends
 * (robotsgate_prefetch_ready, _end), or with robotsgate_poll_drop. */
void robotsgate_defer_polls(robotsgate_t *g);
/* The poll of the origins other workers fetch, if one is due (every
 * ROBOTSGATE_POLL_MS while there are some), sent on fr (borrowed: the
 * thread's handle): *out, or NULL when none is due (or memory is short:
 * next time).  Errors as robotsgate_check's (nothing sent).  At most one at
 * a time: the caller ends it before the next. */
int robotsgate_poll_start(robotsgate_t *g, frontier_t *fr, robotsgate_look_t **out);
/* Frees a poll unread: its origins stay another worker's, polled again.
 * Accepts NULL. */
void robotsgate_poll_drop(robotsgate_look_t *lk);

#endif
