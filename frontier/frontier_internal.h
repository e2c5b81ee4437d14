/*
 * frontier_internal.h -- what the frontier's files share: the handle, the
 * function table and the embedded Lua library, the calls on the handle's
 * link (calls.c), the state of a call in flight, and each kind's steps.
 * Not for other modules (frontier.h is the interface).
 */
#ifndef FRONTIER_INTERNAL_H
#define FRONTIER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "frontier.h"
#include "keys.h"
#include "rconn.h"

struct redisReply;
struct redisContext;

/* The library's functions (frontier/lua/<name>.lua; names in library.c). */
enum {
    FR_CLAIM,
    FR_FINISH,
    FR_SEED,
    FR_RETRY,
    FR_RELEASE,
    FR_HEARTBEAT,
    FR_BYE,
    FR_CHECK, /* the invariant checker, for tests (tests/side.h: side_check) */
    FR_ROBOTS_LOOK,
    FR_ROBOTS_STORE,
    FR_CONTROL,  /* `crawler pause|resume|drain|limits` (control.c) */
    FR_GRANT,    /* a crawl-wide max_pages over shards: allotments (quota.c) */
    FR_SETTINGS, /* the crawl's admission settings (settings.c) */
    FR_DEDUP,    /* exact duplicates: payload digests (dedup.c) */
    FR_BLOCK,    /* `crawler block|unblock` (block.c) */
    FR_DROP,     /* the queues a block covers dropped (block.c) */
    FR_IPGATE,   /* per-IP politeness: address slots (ipgate.c) */
    FR_SCRIPT_COUNT
};

#define FR_MAX_CLAIM 1000      /* URLs per claim call (Lua unpack limit; < 10000: lease numbers) */
#define FR_SEED_CHUNK 256      /* seeds per script */
#define FR_SEED_PIPELINE 16    /* seed scripts per round trip */
#define FR_FINISH_GROUP 128    /* most pages per finish call (one atomic step) */
#define FR_FINISH_LINKS 2048   /* most links offered per finish call, unless one page has more */
#define FR_ROBOTS_LOOK_MAX 512 /* origins per robots_look call (several pipelined) */

#define FR_FN_NAME 48     /* "cf<16 hex>_<name>" */
#define FR_ERROR_MAX 512  /* frontier_last_error's text */
#define FR_ORIGIN_MAX 512 /* longest origin "scheme://host:port" (a host is < 256) */

/* The Functions library, generated at build time from frontier/lua/ and
 * keys.def (embed_lua.cmake): its text, the hash its names carry, and where
 * each source file starts in it (line 1 is the "#!lua" line). */
typedef struct fr_lua_file {
    const char *name; /* "claim.lua" */
    long first_line;  /* its first line in fr_lua_library */
    long lines;
} fr_lua_file_t;
extern const char fr_lua_library[];
extern const char fr_lua_hash[];
extern const fr_lua_file_t fr_lua_files[];
extern const size_t fr_lua_nfiles;

const char *fr_script_name(int id);
/* The Functions library's text (static) and, in fn, the names its
 * functions are registered under ("cf<hash>_claim"). */
const char *fr_library(char fn[FR_SCRIPT_COUNT][FR_FN_NAME]);
/* Copies a Redis error reply's text into buf (always NUL-terminated,
 * truncated to buflen), each "user_function:N" (line N of the library)
 * written as the source line it is, "claim.lua:12". */
void fr_lua_error(const char *msg, char *buf, size_t buflen);

/* One shard of a crawl (docs/sharding.md): its key prefix, its ready key,
 * the hash slot of both (its server on a Redis Cluster), its visited set,
 * and what the claims and the end of the crawl keep of it. */
typedef struct fr_shard {
    char prefix[FR_PREFIX_MAX]; /* fr_prefix_shard */
    char ready_key[FR_KEY_MAX];
    char guard_key[FR_KEY_MAX]; /* never written: KEYS[1] of every call (fr_fcall) */
    int slot;                   /* the slot of its hash tag: where the link sends its calls */
    bloom_t *bloom;             /* borrowed, or opened by frontier_open when bloom_owned */
    int bloom_owned;            /* 1: frontier_close closes bloom */
    uint64_t rest_until;        /* claims: not asked before this (fr_mono_ms) ... */
    uint64_t rested_at;         /* ... unless the process's wake stamp is after this */
    /* end of the crawl over all shards (claim.c: two sweeps): the shard's
     * enqueued counter at the first DONE answer of a run of DONE answers,
     * the event numbers of that answer's receipt and of the sending of the
     * latest call that answered DONE with the same counter */
    uint64_t done_enq, done_got, done_sent;
    int done;       /* 0: its last answer was not DONE; 1: DONE once; 2: DONE twice, same counter */
    uint64_t allot; /* quota: the allotment shard 0 granted it, as this handle last saw */
    int look;       /* its visited set's layers to be read again (fr_layers_flag) */
    uint64_t look_after; /* ... not before this (fr_mono_ms): a layer that did not fit */
} fr_shard_t;

/* A worker's copy of the crawl's blocks (block.c): "h:NAME" and "d:NAME",
 * sorted, and the token of the list (NULL: none blocked). */
typedef struct fr_blocklist {
    char *gen;
    char **name;
    size_t n;
} fr_blocklist_t;
/* Takes the list a claim reply brought, {token, field, ...} (token "":
 * none), unless its token is the one held.  0, CRAWL_EREPLY, CRAWL_ENOMEM
 * (the list held is kept). */
int fr_blocklist_take(fr_blocklist_t *bl, const struct redisReply *r);
void fr_blocklist_clear(fr_blocklist_t *bl);
/* 1 if host (lowercase, as parser_url_host writes it) is blocked by bl. */
int fr_blocklist_covers(const fr_blocklist_t *bl, const char *host);
/* The wait a request of outcome o asks its host for: its duration times
 * cfg.pace_pct% (finish.c). */
uint64_t fr_pace_ms(const frontier_t *f, const frontier_outcome_t *o);
/* The token of the handle's list, "" when none: the claim's ARGV[8]. */
const char *fr_blocks_known(const frontier_t *f);

struct frontier {
    rconn_link_t *link; /* borrowed: the thread's connections */
    unsigned nshards;   /* >= 1, fixed when the crawl was created (P shards of shard 0) */
    int quota;          /* the crawl's page limit is kept in allotments (quota.c), fixed likewise */
    int created;        /* no shard count was stored at open: this handle may create the crawl */
    int cluster;        /* the link's Redis is a Redis Cluster (offers wait: finish.c) */
    fr_shard_t *shard;  /* [nshards] */
    bloom_cache_t *cache;  /* the shards' filters' local cache, when the handle made it */
    unsigned ring;         /* claims: the next shard asked */
    uint64_t events;       /* claims: numbers the sends and receipts (the end of the crawl) */
    uint64_t offer_seq;    /* numbers the offers of this handle (their call ids) */
    frontier_config_t cfg; /* crawl and worker_id point into the handle */
    char crawl[FRONTIER_MAX_CRAWL_NAME + 1];
    char *worker;
    char host[64];
    long pid;
    char fn[FR_SCRIPT_COUNT][FR_FN_NAME]; /* function names (FCALL) */
    int bits_module;                      /* Redis has CRAWLER.BFADD and cfg.bitfield_only is 0 */
    uint64_t rng;                         /* xorshift state for jitter */
    char last_error[FR_ERROR_MAX];        /* the last script error (frontier_last_error) */
    fr_blocklist_t blocks;                /* the crawl's blocks, as the claims told them */
};

/* ---- shards: a crawl's and a process's (shards.c; placement in keys.c) ---- */

/* CLOCK_MONOTONIC in ms. */
uint64_t fr_mono_ms(void);
/* Marks shard s as having work now (cfg.wake), for the process's claims;
 * 1 if the stamp is after since (fr_woken). */
void fr_wake(frontier_t *f, unsigned s);
int fr_woken(const frontier_t *f, unsigned s, uint64_t since);
/* (keys.c) The shard of origin (or URL) in a crawl of n shards: 0 when n is 1, else
 * xxh64 of its registered domain (libpsl; an IP address, or a name that is
 * a public suffix, is its own) mod n.  Thread-safe. */
unsigned fr_shard_of(unsigned n, const char *origin);
/* (keys.c) The registered domain of origin's host (libpsl; an IP address,
 * or a name that is a public suffix, is its own) into buf: its length, or
 * -1 (no host, or buf too small). */
int fr_registered_domain(const char *origin, char *buf, size_t buflen);
/* fr_registered_domain of the host without a trailing dot ("example.com."
 * reaches example.com's server): the domain the budgets count in. */
int fr_domain_key(const char *origin, char *buf, size_t buflen);
/* fr_shard_of, and -1 (*s 0) for what has no host (not a URL). */
int fr_shard_find(unsigned n, const char *origin, unsigned *s);
/* The shard an item was claimed from (0 if it names none of the crawl's). */
unsigned fr_item_shard(const frontier_t *f, const frontier_item_t *it);
/* (keys.c) The hash slot of shard s of crawl (its keys' hash tag): 0 or
 * CRAWL_EINVAL. */
int fr_shard_slot(const char *crawl, unsigned s, int *slot);
/* A uniform double in [0,1). */
double fr_random(frontier_t *f);
/* Splits a lease token "ORIGIN\tSEQ@WORKER" (fill_item in claim.c): its
 * first *fieldlen bytes are its lease's field in the lease hash of *worker,
 * "ORIGIN\tSEQ", and the first *originlen (may be NULL) its origin, the one
 * the claim stored.  0 or CRAWL_EINVAL. */
int fr_lease_split(const char *lease, const char **worker, size_t *fieldlen, size_t *originlen);

/* ---- commands on the handle's link (calls.c) ------------------------------
 * Every command of a handle is an rconn_call_t for its shard's slot, sent on
 * the handle's link: fr_fcall starts an FCALL of the library's function
 * (the link loads the library and sends the call again when Redis lost
 * it), fr_cmd a plain command; the caller pushes the rest of its arguments
 * (rconn_call_args), sends it (fr_send, or fr_run for several in one round
 * trip) and reads its reply (fr_wait, fr_answered).  flags:
 * RCONN_CALL_RESEND for a command that may run twice. */
rconn_call_t *fr_fcall(frontier_t *f, unsigned s, int script, size_t numkeys, unsigned flags);
rconn_call_t *fr_cmd(frontier_t *f, unsigned s, unsigned flags);
/* Hands c to the link (written at once unless corked). */
void fr_send(frontier_t *f, rconn_call_t *c);
/* Sends c[0..n) in one round trip and waits for them all: 0, or the first
 * failure (CRAWL_EREDIS, CRAWL_ENOMEM). */
int fr_run(frontier_t *f, rconn_call_t **c, size_t n);
/* Waits for c: 0 and *r (c's: valid until c is freed; an error reply's
 * text is noted in last_error), or the failure. */
int fr_wait(frontier_t *f, rconn_call_t *c, struct redisReply **r);
/* c's reply if it is there, never waiting: 1 and *r (as fr_wait), 0 not
 * yet, or the failure. */
int fr_answered(frontier_t *f, rconn_call_t *c, struct redisReply **r);
/* A blocking connection to shard s's server (rconn_link_context), for the
 * checks at open and a Bloom filter's own commands; NULL (the link down). */
struct redisContext *fr_context(frontier_t *f, unsigned s);
/* The code of an error reply: CRAWL_EWRONGTYPE for a key of the wrong type
 * (the scripts' own check, frontier/lua/types.lua, or Redis's WRONGTYPE),
 * CRAWL_ENOTFOUND for a call on a crawl that is gone (types.lua:
 * need_crawl, nothing written),
 * CRAWL_ENOROOM for Redis's OOM refusal, CRAWL_EREDIS for a call a Redis
 * Cluster redirected or refused for now (errors.h crawl_retry_reply), else
 * CRAWL_EREPLY.  (The link answers the last two itself: a call that meets
 * them is kept and sent again.) */
int fr_reply_error(const struct redisReply *r);
/* Writes "KEY is a TYPE, expected a WANT" into buf, TYPE read on shard s's
 * connection: what a wrong-typed key's error says.  0, or CRAWL_EREDIS (buf
 * then names the key only). */
int fr_wrong_type(frontier_t *f, unsigned s, const char *key, size_t keylen, const char *want,
                  char *buf, size_t buflen);
/* Integer value of a reply element (integer or numeric string); 0 or -1. */
int fr_reply_u64(const struct redisReply *r, uint64_t *out);
/* The outcome of a {lost, ...} reply (retry, release): 0, CRAWL_ELEASE,
 * the error reply's code, or CRAWL_EREPLY. */
int fr_lease_reply(const struct redisReply *r);
/* Runs FCALL fn (its arguments after the function name in a, numkeys
 * first) on a raw connection, loading the library there when Redis lost
 * it: the handle-less functions' one call (control.c).  0 and *out
 * (caller frees), or CRAWL_EREDIS / CRAWL_ENOMEM. */
int fr_raw_fcall(struct redisContext *rc, int script, const rconn_args_t *a,
                 struct redisReply **out);

/* ---- a call in flight (calls.c: the container; kinds.c: the dispatch;
 * each kind's steps in its file) --------------------------------------------- */

typedef enum fr_kind {
    FR_CALL_CLAIM,      /* claim.c */
    FR_CALL_HEARTBEAT,  /* heartbeat.c */
    FR_CALL_FINISH,     /* finish.c */
    FR_CALL_RETRY,      /* retry.c */
    FR_CALL_RELEASE,    /* retry.c */
    FR_CALL_LOOK,       /* robots.c */
    FR_CALL_STORE,      /* robots.c */
    FR_CALL_SEED_HOSTS, /* hostinfo.c */
    FR_CALL_DEDUP,      /* dedup.c */
    FR_CALL_IPGATE,     /* ipgate.c */
} fr_kind_t;

struct frontier_call {
    fr_kind_t kind;
    int done; /* the result is known: rc */
    int rc;
    rconn_call_t **cmd; /* its commands on the link, in the order sent */
    size_t n, cap;
    void *st; /* the kind's own state (freed by its fr_<kind>_free) */
};
/* A new call of kind, its state st (taken over by the call once made);
 * NULL on out of memory (st then the caller's). */
frontier_call_t *fr_call_new(fr_kind_t kind, void *st);
/* c's state if c is of kind, else NULL. */
void *fr_call_state(const frontier_call_t *c, fr_kind_t kind);
/* Frees c's commands and c, not its state (a kind's _start failing frees
 * its own).  Accepts NULL. */
void fr_call_drop(frontier_call_t *c);
/* Keeps cmd in c (taken over) and sends it: 0, or CRAWL_ENOMEM (cmd freed). */
int fr_call_add(frontier_t *f, frontier_call_t *c, rconn_call_t *cmd);
/* 1 when c's commands from index from on are all answered, 0 not yet,
 * or the failure of the first that failed.  Never waits. */
int fr_call_answered(const frontier_call_t *c, size_t from);
/* Waits for c's commands from index from on: 0 or the first failure. */
int fr_call_wait(frontier_t *f, frontier_call_t *c, size_t from);
/* What a step starts with: with wait, fr_call_wait as 1 (all answered) or
 * the failure; without, fr_call_answered.  A failure that leaves commands
 * on the link to be sent again (the link down, commands that may run
 * twice) is 0: not yet. */
int fr_call_settle(frontier_t *f, frontier_call_t *c, size_t from, int wait);
/* 1 if some command of c is kept on the link for its next connect. */
int fr_call_kept(const frontier_call_t *c);
/* Sets c done with rc; returns 1. */
int fr_call_finish(frontier_call_t *c, int rc);

/* A call whose items are spread over the shards (dedup.c: digests,
 * ipgate.c: addresses): one command of function fn (RCONN_CALL_RESEND) per
 * shard that has items, sent in one round trip; build pushes shard s's
 * arguments (from st); the replies are read in the order sent, each by
 * read (0 or a CRAWL_E* code) with its shard.  shard[i] is item i's shard;
 * cmd_shard (nshards) is filled by fr_spread_send. */
typedef struct fr_spread {
    unsigned *shard;
    unsigned *cmd_shard;
    size_t n;
} fr_spread_t;
typedef void (*fr_spread_build_fn)(const frontier_t *f, unsigned s, const void *st,
                                   rconn_args_t *a);
typedef int (*fr_spread_read_fn)(void *st, unsigned s, const struct redisReply *r);
/* 0, or CRAWL_ENOMEM with nothing kept (the caller drops c). */
int fr_spread_send(frontier_t *f, frontier_call_t *c, fr_spread_t *sp, int fn,
                   fr_spread_build_fn build, const void *st);
/* A kind's step over fr_spread_send's commands (fr_<kind>_step's contract). */
int fr_spread_step(frontier_t *f, frontier_call_t *c, const fr_spread_t *sp, int wait,
                   fr_spread_read_fn read, void *st);

/* Each kind's step (in its file), called by kinds.c: one advance of c,
 * waiting when wait is 1, never when 0; 1 once done (fr_call_finish), else
 * 0.  And its state's free (NULL-safe). */
int fr_claim_step(frontier_t *f, frontier_call_t *c, int wait);
int fr_dedup_step(frontier_t *f, frontier_call_t *c, int wait);
void fr_dedup_free(void *st);
int fr_ipgate_step(frontier_t *f, frontier_call_t *c, int wait);
void fr_ipgate_free(void *st);
void fr_claim_free(void *st);
int fr_heartbeat_step(frontier_t *f, frontier_call_t *c, int wait);
int fr_finish_step(frontier_t *f, frontier_call_t *c, int wait);
void fr_finish_free(void *st);
int fr_lease_step(frontier_t *f, frontier_call_t *c, int wait); /* retry, release */
int fr_look_step(frontier_t *f, frontier_call_t *c, int wait);
void fr_look_free(void *st);
int fr_store_step(frontier_t *f, frontier_call_t *c, int wait);
int fr_seed_hosts_step(frontier_t *f, frontier_call_t *c, int wait);
void fr_seed_hosts_free(void *st);
/* robots.c: sets every look of looks[0..n) HELD with err rc after a
 * failure (nothing known) and returns the first origin's err. */
int fr_look_result(frontier_robots_look_t *looks, size_t n, int rc);

/* ---- at open and close (handle.c uses them) --------------------------------- */

/* The crawl's shard count as stored (P shards of shard 0; 1 when there is
 * none) and (quota, may be NULL) whether it keeps a page limit in
 * allotments, one GET on rc: 0, CRAWL_EREDIS, CRAWL_EREPLY or the error
 * reply's code.  (stats.c) */
int fr_crawl_shards(struct redisContext *rc, const char *crawl, unsigned *n, int *quota);
/* control.c: a crawl of several shards being created takes what its
 * control hash held before it existed (`crawler limits|pause --force`,
 * written to shard 0 only, the count unknown then): read here, before the
 * count is written (a page limit there makes it a quota crawl) ... */
int fr_control_before(frontier_t *f, frontier_control_t *c, char *errbuf, size_t errlen);
/* ... and written to every shard once it is (nothing set: no call). */
int fr_control_spread(frontier_t *f, const frontier_control_t *c, char *errbuf, size_t errlen);
/* P shards' value (len bytes): "S", or "Sq" for a crawl of S > 1 shards
 * created with a page limit (quota.c).  0 with *n and *quota, or -1. */
int fr_parse_shards(const char *s, size_t len, unsigned *n, int *quota);
/* The connection of each of the crawl's n shards into conn[0..n): rc for
 * all on a plain Redis (r NULL or not a cluster, or one shard), else rc for
 * shard 0's server and a new one to each other master, also listed in
 * own[0..*nown) (the caller frees them; own has room for n).  0,
 * CRAWL_EREDIS, CRAWL_ENOMEM.  (stats.c: the handle-less readings) */
int fr_shard_conns(struct redisContext *rc, const rconn_t *r, const char *crawl, unsigned n,
                   struct redisContext **conn, struct redisContext **own, size_t *nown);
/* Every shard of the crawl with its server's connection, for the calls made
 * without a handle (stats, control, block): fr_crawl_shards, then
 * fr_shard_conns.  fr_shards_open fills s (0, or a CRAWL_E* code with why
 * said in why: nothing left open); fr_shards_close frees what it opened. */
typedef struct fr_shard_set {
    struct redisContext **conn; /* [n]: shard s's server */
    unsigned n;
    int quota;   /* the crawl keeps its page limit in allotments (quota.c) */
    size_t nown; /* connections opened here: conn[n .. n + nown) */
} fr_shard_set_t;
int fr_shards_open(struct redisContext *rc, const rconn_t *r, const char *crawl, fr_shard_set_t *s,
                   char *why, size_t wl);
void fr_shards_close(fr_shard_set_t *s);

/* ---- offering links (offer.c) ------------------------------------------ */

/* The distinct Bloom blocks of one call (its KEYS after the ready key):
 * each (layer << 32 | block), layer 0 for a filter that does not grow; a
 * hash of their places once there are many. */
typedef struct fr_blocks {
    uint64_t *v;
    size_t n, cap;
    uint32_t *ht; /* [hcap]: index + 1 into v, 0 empty */
    size_t hcap;
} fr_blocks_t;
void fr_blocks_free(fr_blocks_t *bl);

/* One link that goes to a script.  Its k bit offsets are bits[bat ..
 * bat + k) of its fr_offer_t (each < BLOOM_MAX_BLOCK_BITS = 2^32): a page's
 * links wait for their finish's reply with it, so they are kept small. */
typedef struct fr_link {
    uint32_t idx;       /* its index in the caller's link array */
    uint32_t block;     /* its block's index in the call's fr_blocks_t */
    uint32_t bat;       /* its bit offsets' place in bits */
    uint32_t oat, olen; /* its origin: orig[oat .. oat + olen) of its fr_offer_t */
    uint32_t lat;       /* a filter that grows: its blocks in layers 0..T are
                           lblk[lat .. lat + nl) of its fr_offer_t */
} fr_link_t;

/* The links of one page (or one batch of seeds), probed. */
typedef struct fr_offer {
    fr_link_t *v;                /* [nsent], the links of one block contiguous */
    uint32_t *bits;              /* the links' bit offsets, k a link (bloom_probe_t's, as uint32) */
    uint32_t k;                  /* bits a link (the filter's k; 0 while nothing is sent) */
    uint32_t *lblk;              /* a filter that grows: each link's blocks' indexes in the
                                    call's fr_blocks_t, in layers 0..nl-1 (the next ones too) */
    uint32_t nl;                 /* (0: a fixed filter) */
    size_t nsent;                /* links that go to the script */
    size_t cached;               /* known to the local Bloom cache: counted as seen, not sent */
    size_t skipped;              /* not URLs (empty, whitespace, no origin), or beyond max_depth */
    char *orig;                  /* the links' origins (parser_url_origin), one after the other */
    size_t olen, ocap;           /* bytes used / allocated in orig */
    int first;                   /* FRONTIER_SEED_FIRST: each entry sent with a leading '!' ... */
    const unsigned char *firsts; /* ... or, when set, link i's if firsts[i] (the caller's,
                                    indexed as the links given to fr_offer_prepare) */
} fr_offer_t;

/* Probes links[0..n) into o for shard s's filter, adding their blocks to
 * bl: all skipped when skip_all; the ones the local Bloom cache knows left
 * out when use_cache.  0, CRAWL_ENOMEM or CRAWL_EBLOOM (o then empty). */
int fr_offer_prepare(frontier_t *f, unsigned s, const char *const *links, size_t n, int use_cache,
                     int skip_all, fr_blocks_t *bl, fr_offer_t *o);
void fr_offer_free(fr_offer_t *o);
/* The links of an offering call and the pages they were found on, for the
 * domain budgets earned from in-links: link[i] found on from[i], every
 * link the pages gave (also those the local Bloom cache knows, which are
 * not sent: a link to a URL already seen is an in-link too). */
typedef struct fr_srcs {
    const char *const *link;
    const char *const *from;
    size_t n;
} fr_srcs_t;
/* The domain section of an offering call (layout above it in offer.c):
 * the crawl's budgets per registered domain and, when there are some, the
 * domain of each distinct origin of o[0..n)'s links and the (domain,
 * linking domain) pairs src tells (src may be NULL). */
void fr_offer_domains(const frontier_t *f, const fr_offer_t *o, size_t n, const fr_srcs_t *src,
                      rconn_args_t *a);
/* The call of the seed function (seed.lua) that offers urls[0..n)
 * (n <= FR_SEED_CHUNK) to shard s at depth/hops, probed into o: seeds
 * (flags: FRONTIER_SEED_*, mode NULL), or links of a page of another shard
 * (mode "l": counted as links; with an id: the call may run twice, the
 * second run answering the first's codes).  Its reply: the codes
 * (fr_offer_codes, fr_offer_done).  src[i] (src may be NULL): the URL of
 * the page urls[i] was found on (fr_srcs_t).  0 and *out, or the failure. */
int fr_offer_build(frontier_t *f, unsigned s, const char *const *urls, size_t n, int flags,
                   const char *mode, uint32_t depth, uint32_t hops, const char *const *src,
                   const unsigned char *firsts, fr_offer_t *o, rconn_call_t **out);
/* The seed call's hosts: nhosts, then the distinct hosts of urls[0..n)
 * (parser_url_host), one after another unless it repeats the one before. */
void fr_seed_hosts_args(const char *const *urls, size_t n, rconn_args_t *a);
/* The call that offers links[0..n) of a page of another shard to shard s
 * (fr_offer_build's links mode, with a call id: it may run twice). */
int fr_offer_call(frontier_t *f, unsigned s, const char *const *links, size_t n, uint32_t depth,
                  uint32_t hops, const char *const *src, const unsigned char *firsts, fr_offer_t *o,
                  rconn_call_t **out);
/* Pushes an offering call's keys: ready, then its Bloom blocks in shard s. */
int fr_offer_keys(frontier_t *f, unsigned s, const fr_blocks_t *bl, rconn_args_t *a);
/* The calls' k argument: the Bloom k of o[0..n), negative when the link
 * sections are in the crawler module's layout; for a filter that grows
 * "K/T/M/N" (layers.lua), T the layers shard s's handle knows, M the KEYS
 * index of layer 0's meta hash (after the nblocks blocks), N the layers
 * each link names its blocks in (the next ones too). */
void fr_offer_k(const frontier_t *f, unsigned s, const fr_offer_t *o, size_t n, size_t nblocks,
                rconn_args_t *a);
/* A reply said shard s's visited set should be looked at: a layer was
 * published since this handle read them, or the newest one is near full
 * (offer.lua: LAYERS.done); frontier_layers_tend acts on it. */
void fr_layers_flag(frontier_t *f, unsigned s);
/* Arguments of o's link section, and the section itself (its layout is
 * written above fr_offer_section in offer.c). */
size_t fr_offer_span(const frontier_t *f, const fr_offer_t *o);
void fr_offer_section(const frontier_t *f, const fr_offer_t *o, const char *const *links,
                      uint32_t depth, uint32_t hops, rconn_args_t *a);
/* Reads a link section's codes ('n' new, 's' seen, 'l' over a page limit;
 * one per link sent), notes the links that reached the filter in the local
 * cache, and returns how many were new; -1 if codes does not fit o. */
long fr_offer_done(frontier_t *f, unsigned s, const fr_offer_t *o, const char *const *links,
                   const char *codes, size_t len);
/* The page limit argument of an offering call in shard s: max_pages, or on
 * a quota crawl "max_pages:allotment" (offer.lua: page_limit_arg). */
void fr_page_limit(frontier_t *f, unsigned s, rconn_args_t *a);
/* An offering call's reply (a string): the length of its codes (nsent)
 * and, when some were 'q' (past the allotment), *refused 1 and the shard's
 * enqueued counter that follows them in *base (else both 0); *look 1 when
 * it ends with '+' (fr_layers_flag); -1 if it is not such a reply. */
long fr_offer_codes(const struct redisReply *r, size_t nsent, int *refused, uint64_t *base,
                    int *look);

/* ---- a crawl-wide page limit over shards (quota.c) -------------------------- */

/* One grant, in one round trip on shard 0: for each i < n, shard shard[i],
 * want[i] links refused for want of allotment, base[i] its enqueued counter
 * then.  Each shard's allotment (fr_shard_t.allot) is raised to what shard
 * 0 granted it (room in shard s: allot > its base); *more set to 1 if some
 * shard has room.  0 or the failure.  Waits for its reply. */
int fr_quota_grant(frontier_t *f, size_t n, const unsigned *shard, const uint64_t *want,
                   const uint64_t *base, int *more);
/* A page's link an offer refused for want of allotment: the link
 * (borrowed), the caller's tag (a page's index), its shard, depth and hops. */
typedef struct fr_refused_link {
    const char *link;
    size_t tag;
    unsigned shard;
    uint32_t depth, hops;
    unsigned char first; /* its frontier_done_t.link_first mark */
} fr_refused_link_t;
/* The links refused, to be offered again (fr_quota_offer_again), and each
 * shard's enqueued counter as its last refusal said. */
typedef struct fr_refused {
    fr_refused_link_t *v;
    size_t n, cap;
    uint64_t *base; /* [nshards], made at the first add */
} fr_refused_t;
/* Adds link l (its shard's counter then: base): 0 or CRAWL_ENOMEM. */
int fr_refused_add(frontier_t *f, fr_refused_t *q, const fr_refused_link_t *l, uint64_t base);
void fr_refused_free(fr_refused_t *q);
/* Offers q's links again, in their shards (links mode, as a finish's
 * offers), while shard 0 grants their shards more (one grant a round for
 * every shard in q); each one admitted counts new[its tag]++; what no grant
 * makes room for is over the limit.  q is empty after.  0 or the failure.
 * Waits for its replies. */
int fr_quota_offer_again(frontier_t *f, fr_refused_t *q, size_t *new);

/* The queue entry's layout (entry.c's DESIGN): NUMS then REST. */
typedef struct fr_entry {
    uint32_t depth, tries, hops;
    const char *rest; /* into the parsed string: the path or the whole URL */
    size_t restlen;
    int relative; /* rest is the path after the queue's origin */
} fr_entry_t;
/* Writes NUMS for these numbers into buf; its length (0: none, all zero). */
size_t fr_entry_head(uint32_t depth, uint32_t tries, uint32_t hops, char *buf, size_t buflen);
/* Where REST starts in url, queued under origin: olen if url is origin
 * followed by "/", else 0 (the whole URL). */
size_t fr_entry_rest(const char *url, size_t ulen, const char *origin, size_t olen);
/* Reads an entry (either layout); 0 or CRAWL_EREPLY (no URL part). */
int fr_entry_parse(const char *e, size_t len, fr_entry_t *out);
/* The entry's URL, rebuilt under the queue's origin; caller frees; NULL on
 * out-of-memory. */
char *fr_entry_url(const fr_entry_t *en, const char *origin, size_t olen);

/* Reads a control hash's HGETALL reply (control.lua's fields) into out
 * (zeroed first); fields it does not know, or values that are not
 * numbers, are left out.  0, or CRAWL_EREPLY for a reply that is no
 * field/value array.  (control.c) */
int fr_control_read(const struct redisReply *kv, frontier_control_t *out);

#endif
