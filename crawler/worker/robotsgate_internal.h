/*
 * robotsgate_internal.h -- what robotsgate.c (the gate: verdicts, parked
 * URLs, the shared cache in Redis, who fetches) and robotsgate_cache.c (its
 * rule sets: slots, hash index, LRU and expiry lists) share.  Not for other
 * modules (robotsgate.h is the interface).
 */
#ifndef CRAWLER_ROBOTSGATE_INTERNAL_H
#define CRAWLER_ROBOTSGATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "robots.h"
#include "robotsgate.h"

#define ROBOTS_RETRY_TTL_S 60 /* "disallow all for now" lasts at most this */
#define ROBOTS_CACHE 16384    /* rule sets kept per thread (a power of two) */
#define LOCAL_TTL_MS 60000    /* ... each for a minute, or --robots-ttl if shorter */
#define NONE UINT32_MAX       /* no slot */
_Static_assert((ROBOTS_CACHE & (ROBOTS_CACHE - 1)) == 0, "the hash index masks with it");

enum { L_USE, L_EXP };           /* an entry's two list links */
enum { C_RULES, C_UNAVAILABLE }; /* expiry classes: LOCAL_TTL_MS, unavailable_ttl_s */

typedef struct link {
    uint32_t prev, next;
} link_t;

typedef struct list {
    uint32_t head, tail;
} list_t;

/* A robots.txt rule set known to this thread, or one being fetched. */
typedef struct rentry {
    char *origin;    /* NULL: a free slot */
    robots_t *rules; /* NULL while pending */
    uint64_t expires_ms;
    frontier_item_t *parked; /* URLs waiting for the rules */
    uint32_t nparked, parked_cap;
    uint32_t hash, hnext; /* origin's hash; the next slot of its bucket (free: of the free list) */
    link_t link[2];       /* L_USE: LRU or pending list; L_EXP: its expiry list */
    uint8_t unavailable;  /* 5xx/unreachable: disallow all for now ... */
    char *why;            /* ... and why, "KIND\tSTATUS\tTEXT" (NULL: not known) */
    uint8_t remote;       /* another worker is fetching it */
    uint8_t local;        /* rules of a fetch the guard or TLS refused: not shared */
    char *via;            /* pending: its robots.txt redirected to this origin's, whose
                             rules it adopts once known (robotsgate.c: wait_on) */
    uint64_t hold_until;  /* held: rules known, parked URLs wait until then (0: not held) */
} rentry_t;

/* A store handed out without waiting (robotsgate_defer_stores). */
typedef struct gate_store {
    frontier_call_t *c;
    char *origin;
} gate_store_t;

typedef struct ready {
    frontier_item_t item;
    robotsgate_verdict_t verdict;
} ready_t;

struct robotsgate {
    const crawl_config_t *cfg;
    frontier_t *fr; /* borrowed */
    const scope_t *scope;
    uint32_t cap;     /* slots: ROBOTS_CACHE, or more for a thread's every slot */
    rentry_t *slot;   /* cap */
    uint32_t *bucket; /* cap heads of the hash chains */
    uint32_t free;    /* the slots freed, chained through hnext */
    uint32_t fresh;   /* slots [fresh, cap) never used yet */
    list_t lru;       /* settled entries, most recently used at head */
    list_t exp[2];    /* settled entries of each class, soonest expiry at head */
    list_t pending;   /* entries without rules */
    size_t parked;    /* URLs parked on pending entries */
    size_t nremote;   /* entries waiting for another worker's robots.txt */
    size_t nheld;     /* entries held (hold_until) */
    size_t nvia;      /* entries waiting on another origin's rules (via) */
    uint64_t next_remote_poll_ms;
    char **fetch; /* origins to fetch (a stack) */
    size_t nfetch, fetch_cap;
    char *fetch_out; /* the one robotsgate_next_fetch() returned last */
    ready_t *ready;  /* parked URLs with their verdict, FIFO from ready_head */
    size_t nready, ready_head, ready_cap;
    int defer;            /* stores handed out as calls (robotsgate_next_store) */
    int defer_polls;      /* polls sent by the caller (robotsgate_poll_start) */
    gate_store_t *stores; /* ... FIFO from stores_head */
    size_t nstores, stores_head, stores_cap;
};

/* ---- robotsgate_cache.c ---- */
/* Slot i (NONE: NULL), and a slot's index. */
rentry_t *rg_at(const robotsgate_t *g, uint32_t i);
uint32_t rg_index_of(const robotsgate_t *g, const rentry_t *e);
/* "Disallow all for now" lasts as long as the first retry backoff. */
uint32_t rg_unavailable_ttl_s(const robotsgate_t *g);
/* How long a thread uses rules it holds: LOCAL_TTL_MS, or --robots-ttl if
 * shorter (so no thread uses rules older than twice --robots-ttl). */
uint64_t rg_local_ttl_ms(const robotsgate_t *g);
/* Links e into list l through its link k, at the front or the back, or
 * out of it. */
void rg_list_push(robotsgate_t *g, list_t *l, int k, rentry_t *e, int front);
void rg_list_remove(robotsgate_t *g, list_t *l, int k, rentry_t *e);
/* The entry of origin, or NULL. */
rentry_t *rg_find(const robotsgate_t *g, const char *origin);
/* Frees what e holds (its parked URLs too); drops e from every list and
 * the index, its slot to the free list. */
void rg_entry_clear(rentry_t *e);
void rg_drop(robotsgate_t *g, rentry_t *e);
/* A new pending entry for origin (a slot made if need be), or NULL. */
rentry_t *rg_add_entry(robotsgate_t *g, const char *origin);
/* e has its rules now: to the settled lists, its expiry set; a settled
 * entry used: to the LRU list's front. */
void rg_settle_entry(robotsgate_t *g, rentry_t *e);
void rg_touch(robotsgate_t *g, rentry_t *e);

/* ---- robotsgate.c, for robotsgate_look.c ---- */
/* The fetch lock's lifetime: the fetch timeout. */
uint32_t rg_lock_ms(const robotsgate_t *g);
/* The entry for origin, settled if expired (dropped then), or NULL; a
 * settled entry is marked used. */
rentry_t *rg_known(robotsgate_t *g, const char *origin);
/* What one origin's look l found, applied to pending e (settled, ours to
 * fetch, or another worker's); *rc: the first Redis error. */
void rg_apply_look(robotsgate_t *g, rentry_t *e, frontier_robots_look_t *l, int *rc);
/* The entries waiting on another origin's rules (via) whose rules are known
 * now adopt them.  0 or CRAWL_EREDIS. */
int rg_adopt_waiting(robotsgate_t *g);

#endif
