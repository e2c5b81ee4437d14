/*
 * frontier_internal.h -- what the frontier's files share: the handle, the
 * function table and the embedded Lua library, an argv builder for
 * pipelined FCALLs.
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
    FR_CONTROL, /* `crawler pause|resume|drain|limits` (control.c) */
    FR_GRANT,   /* a crawl-wide max_pages over shards: allotments (quota.c) */
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

/* One shard of a crawl (SHARDING.md): its key prefix, its ready key, its
 * visited set, and what the claims and the end of the crawl keep of it. */
typedef struct fr_shard {
    char prefix[FR_PREFIX_MAX]; /* fr_prefix_shard */
    char ready_key[FR_KEY_MAX];
    struct redisContext *rc; /* the connection to its server (the handle's, or one of own) */
    bloom_t *bloom;          /* borrowed, or opened by frontier_open when bloom_owned */
    int bloom_owned;         /* 1: frontier_close closes bloom */
    uint64_t rest_until;     /* claims: not asked before this (fr_mono_ms) ... */
    uint64_t rested_at;      /* ... unless the process's wake stamp is after this */
    /* end of the crawl over all shards (claim.c: two sweeps): the shard's
     * enqueued counter at the first DONE answer of a run of DONE answers,
     * the event numbers of that answer's receipt and of the sending of the
     * latest call that answered DONE with the same counter */
    uint64_t done_enq, done_got, done_sent;
    int done;       /* 0: its last answer was not DONE; 1: DONE once; 2: DONE twice, same counter */
    uint64_t allot; /* quota: the allotment shard 0 granted it, as this handle last saw */
} fr_shard_t;

struct frontier {
    struct redisContext *rc; /* borrowed */
    /* The current shard (fr_use): the calls are built from these; prefix
     * and ready_key point to its fr_shard_t (to prefix0 and ready0 before
     * the shards are known), so a call built with them borrowed stays
     * right after the handle moves on to another shard. */
    bloom_t *bloom;
    const char *prefix;
    const char *ready_key;
    char prefix0[FR_PREFIX_MAX]; /* the crawl's prefix (shard 0's) */
    char ready0[FR_KEY_MAX];
    unsigned cur;
    unsigned nshards;  /* >= 1, fixed when the crawl was created (P shards of shard 0) */
    int quota;         /* the crawl's page limit is kept in allotments (quota.c), fixed likewise */
    int created;       /* no shard count was stored at open: this handle may create the crawl */
    fr_shard_t *shard; /* [nshards] */
    /* A Redis Cluster (cfg.redis): the connections the handle opened to
     * the masters of shards that rc's server does not own, closed with it. */
    struct redisContext **own;
    size_t nown;
    bloom_cache_t *cache;  /* the shards' filters' local cache, when the handle made it */
    unsigned ring;         /* claims: the next shard asked */
    int wait_fd;           /* the connection a reply is awaited on (frontier_fd), -1: rc's */
    uint64_t events;       /* claims: numbers the sends and receipts (the end of the crawl) */
    frontier_config_t cfg; /* crawl and worker_id point into the handle */
    char crawl[FRONTIER_MAX_CRAWL_NAME + 1];
    char *worker;
    char host[64];
    long pid;
    char fn[FR_SCRIPT_COUNT][FR_FN_NAME]; /* function names (FCALL) */
    int bits_module;                      /* Redis has CRAWLER.BFADD and cfg.bitfield_only is 0 */
    uint64_t round_trips;
    uint64_t rng;                  /* xorshift state for jitter */
    char last_error[FR_ERROR_MAX]; /* the last script error (frontier_last_error) */
};

/* Makes shard s the handle's current one: f->prefix, f->ready_key,
 * f->bloom and f->rc (its connection) are then s's, for the calls built
 * and sent next. */
void fr_use(frontier_t *f, unsigned s);
/* CLOCK_MONOTONIC in ms. */
uint64_t fr_mono_ms(void);
/* Marks shard s as having work now (cfg.wake), for the process's claims;
 * 1 if the stamp is after since (fr_woken). */
void fr_wake(frontier_t *f, unsigned s);
int fr_woken(const frontier_t *f, unsigned s, uint64_t since);

/* The calls just sent, the first of them c: frontier_fd names its
 * connection until fr_calls_ready has every reply. */
struct fr_call;
void fr_wait_on(frontier_t *f, const struct fr_call *c);
/* The shard of origin (or URL) in a crawl of n shards: 0 when n is 1, else
 * xxh64 of its registered domain (libpsl; an IP address, or a name that is
 * a public suffix, is its own) mod n.  Thread-safe. */
unsigned fr_shard_of(unsigned n, const char *origin);
/* fr_shard_of, and -1 (*s 0) for what has no host (not a URL). */
int fr_shard_find(unsigned n, const char *origin, unsigned *s);
/* The shard an item was claimed from (0 if it names none of the crawl's). */
unsigned fr_item_shard(const frontier_t *f, const frontier_item_t *it);

/* The crawl's shard count as stored (P shards of shard 0; 1 when there is
 * none) and (quota, may be NULL) whether it keeps a page limit in
 * allotments, one GET on rc: 0, CRAWL_EREDIS, CRAWL_EREPLY or the error
 * reply's code. */
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
 * shard 0's server and a
 * new one to each other master, also listed in own[0..*nown) (the caller
 * frees them; own has room for n).  0, CRAWL_EREDIS, CRAWL_ENOMEM. */
int fr_shard_conns(struct redisContext *rc, const rconn_t *r, const char *crawl, unsigned n,
                   struct redisContext **conn, struct redisContext **own, size_t *nown);
/* The hash slot of shard s of crawl (its keys' hash tag): 0 or CRAWL_EINVAL. */
int fr_shard_slot(const char *crawl, unsigned s, int *slot);

/* Arguments of one Redis command, binary-safe.  Strings pushed with
 * fa_str are borrowed (must outlive the call); numbers are formatted into
 * chunks owned by the builder that never move. */
typedef struct fr_chunk fr_chunk_t;
typedef struct fr_args {
    const char **v;
    size_t *len;
    size_t n, cap;
    fr_chunk_t *chunks;
    int oom;
} fr_args_t;

void fa_init(fr_args_t *a);
void fa_free(fr_args_t *a);
void fa_str(fr_args_t *a, const char *s, size_t len);
void fa_cstr(fr_args_t *a, const char *s);
void fa_u64(fr_args_t *a, uint64_t v);
/* Sets argument i (pushed before) to the number v. */
void fa_set_u64(fr_args_t *a, size_t i, uint64_t v);
void fa_dbl(fr_args_t *a, double v);
/* Copies s into the builder's chunks. */
void fa_copy(fr_args_t *a, const char *s, size_t len);
/* Appends an argument of len bytes that the caller fills in through the
 * returned pointer (in the builder's chunks); NULL when out of memory. */
char *fa_alloc(fr_args_t *a, size_t len);
/* Starts an FCALL: "FCALL" <function slot> numkeys; argv[1] is filled in
 * by fr_run. */
void fa_fcall(fr_args_t *a, size_t numkeys);

/* Runs n prepared FCALLs of one function pipelined in one round trip
 * (loading the library and resending the calls that found no function).  On 0,
 * rep[i] holds every reply (caller frees with freeReplyObject; a reply may be
 * an error reply).  CRAWL_EREDIS if the connection failed (no reply kept),
 * CRAWL_ENOMEM if a builder ran out of memory (nothing sent). */
int fr_run(frontier_t *f, int script, fr_args_t *calls, size_t n, struct redisReply **rep);

/* quota.c: a crawl-wide page limit over shards.  The page limit argument
 * of an offering call in the current shard: max_pages, or on a quota crawl
 * "max_pages:allotment" (offer.lua: page_limit_arg) ... */
void fr_page_limit(frontier_t *f, fr_args_t *a);
/* ... an offering call's reply (a string): the length of its codes (nsent)
 * and, when some were 'q' (past the allotment), *refused 1 and the shard's
 * enqueued counter that follows them in *base (else both 0); -1 if it is
 * not such a reply ... */
long fr_offer_codes(const struct redisReply *r, size_t nsent, int *refused, uint64_t *base);
/* ... and one grant, in one round trip on shard 0: for each i < n, shard
 * shard[i], want[i] links refused for want of allotment, base[i] its
 * enqueued counter then.  Each shard's allotment (fr_shard_t.allot) is
 * raised to what shard 0 granted it (room in shard s: allot > its base);
 * *more set to 1 if some shard has room.  0 or the failure.  Blocking: the
 * caller has no other call in flight on shard 0's connection. */
int fr_quota_grant(frontier_t *f, size_t n, const unsigned *shard, const uint64_t *want,
                   const uint64_t *base, int *more);
/* A page's link an offer refused for want of allotment: the link
 * (borrowed), the caller's tag (a page's index), its shard, depth and hops. */
typedef struct fr_refused_link {
    const char *link;
    size_t tag;
    unsigned shard;
    uint32_t depth, hops;
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
 * Blocking, on connections with nothing else in flight. */
int fr_quota_offer_again(frontier_t *f, fr_refused_t *q, size_t *new);
/* Sends one prepared FCALL now (appended and written out), so that Redis
 * runs it while the caller prepares the next one; fr_collect then reads the
 * replies of the calls sent so far.  CRAWL_ENOMEM (nothing sent) or
 * CRAWL_EREDIS. */
int fr_send(frontier_t *f, int script, fr_args_t *call);
/* Reads the replies of the n calls sent with fr_send (one round trip),
 * reloading the library and resending the calls that found no function, as
 * fr_run does; same results as fr_run. */
int fr_collect(frontier_t *f, int script, fr_args_t *calls, size_t n, struct redisReply **rep);
/* Runs one prepared call of a script that answers {lost, ...} (release,
 * retry), freeing a: 0, CRAWL_ELEASE when the lease was lost, or the
 * failure. */
int fr_run_lease_call(frontier_t *f, int script, fr_args_t *a);
/* Loads the library (FUNCTION LOAD; "already exists" is fine). */
int fr_load(frontier_t *f);
/* The reply of the next call sent with fr_send, if it is all there: reads
 * what the connection holds (one read(2), only when the socket is readable:
 * never waits).  1 and *out (caller frees with freeReplyObject; an error
 * reply's text is kept as fr_collect keeps it), 0 if not whole yet, or
 * CRAWL_EREDIS.  A NOSCRIPT reply is handed out as it is (fr_is_noscript). */
int fr_try_reply(frontier_t *f, struct redisReply **out);
/* 1 if r says the function was not found (the library is gone). */
int fr_is_noscript(const struct redisReply *r);

/* One FCALL sent without waiting, its reply not read yet: the arguments
 * (kept, to send again after a NOSCRIPT), the function, and the reply once
 * fr_call_ready saw all of it.  The caller builds a, then fr_call_send. */
typedef struct fr_call {
    fr_args_t a;
    int script;
    unsigned shard; /* the shard it goes to (its connection: fr_use); set by fr_call_send,
                       or by the builder of a call sent later */
    struct redisReply *r;
} fr_call_t;
/* Sends c (built in c->a) to the current shard: 0, or CRAWL_ENOMEM /
 * CRAWL_EREDIS (nothing to read back). */
int fr_call_send(frontier_t *f, int script, fr_call_t *c);
/* 1 once c's whole reply is there (never waits), 0 not yet, CRAWL_EREDIS. */
int fr_call_ready(frontier_t *f, fr_call_t *c);
/* c's reply, waited for if not all there, the library loaded and c sent
 * again after a NOSCRIPT: 0 and *out (caller frees; may be an error reply),
 * or the failure. */
int fr_call_reply(frontier_t *f, fr_call_t *c, struct redisReply **out);
/* Calls c[0..n) sent in this order on the handle's connection (several
 * shards' calls pipelined): fr_calls_ready is 1 once every reply is there
 * (never waits; 0 not yet, or CRAWL_EREDIS), fr_calls_wait reads every
 * reply not there yet (0 or CRAWL_EREDIS).  Then fr_call_reply takes each,
 * in order (a NOSCRIPT reloads and sends that one call again: safe once
 * every reply is read). */
int fr_calls_ready(frontier_t *f, fr_call_t *c, size_t n);
int fr_calls_wait(frontier_t *f, fr_call_t *c, size_t n);
/* Frees c's arguments and reply (not c). */
void fr_call_clear(fr_call_t *c);

/* ---- offering links (offer.c) ------------------------------------------ */

/* The distinct Bloom blocks of one call (its KEYS after the ready key). */
typedef struct fr_blocks {
    uint32_t *v;
    size_t n, cap;
} fr_blocks_t;

/* One link that goes to a script.  Its k bit offsets are bits[bat ..
 * bat + k) of its fr_offer_t (each < BLOOM_MAX_BLOCK_BITS = 2^32): a page's
 * links wait for their finish's reply with it, so they are kept small. */
typedef struct fr_link {
    uint32_t idx;       /* its index in the caller's link array */
    uint32_t block;     /* its block's index in the call's fr_blocks_t */
    uint32_t bat;       /* its bit offsets' place in bits */
    uint32_t oat, olen; /* its origin: orig[oat .. oat + olen) of its fr_offer_t */
} fr_link_t;

/* The links of one page (or one batch of seeds), probed. */
typedef struct fr_offer {
    fr_link_t *v;      /* [nsent], the links of one block contiguous */
    uint32_t *bits;    /* the links' bit offsets, k a link (bloom_probe_t's, as uint32) */
    uint32_t k;        /* bits a link (the filter's k; 0 while nothing is sent) */
    size_t nsent;      /* links that go to the script */
    size_t cached;     /* known to the local Bloom cache: counted as seen, not sent */
    size_t skipped;    /* not URLs (empty, whitespace, no origin), or beyond max_depth */
    char *orig;        /* the links' origins (parser_url_origin), one after the other */
    size_t olen, ocap; /* bytes used / allocated in orig */
} fr_offer_t;

/* Probes links[0..n) into o, adding their blocks to bl: all skipped when
 * skip_all; the ones the local Bloom cache knows left out when use_cache.
 * 0, CRAWL_ENOMEM or CRAWL_EBLOOM (o then empty). */
int fr_offer_prepare(frontier_t *f, const char *const *links, size_t n, int use_cache, int skip_all,
                     fr_blocks_t *bl, fr_offer_t *o);
void fr_offer_free(fr_offer_t *o);
/* Builds in a the call that offers links[0..n) (n <= FR_SEED_CHUNK) of a
 * page of another shard to the current shard, at depth/hops: the seed
 * function in its links mode (seed.c).  Its reply: the codes
 * (fr_offer_done). */
int fr_offer_call(frontier_t *f, const char *const *links, size_t n, uint32_t depth, uint32_t hops,
                  fr_offer_t *o, fr_args_t *a);
/* Starts a call that offers links: FCALL <fn> numkeys ready <block keys>. */
int fr_offer_keys(frontier_t *f, const fr_blocks_t *bl, fr_args_t *a);
/* The calls' k argument: the Bloom k of o[0..n), negative when the link
 * sections are in the crawler module's layout. */
void fr_offer_k(const frontier_t *f, const fr_offer_t *o, size_t n, fr_args_t *a);
/* Arguments of o's link section, and the section itself (its layout is
 * written above fr_offer_section in offer.c). */
size_t fr_offer_span(const frontier_t *f, const fr_offer_t *o);
void fr_offer_section(const frontier_t *f, const fr_offer_t *o, const char *const *links,
                      uint32_t depth, uint32_t hops, fr_args_t *a);
/* Reads a link section's codes ('n' new, 's' seen, 'l' over a page limit;
 * one per link sent), notes the links that reached the filter in the local
 * cache, and returns how many were new; -1 if codes does not fit o. */
long fr_offer_done(frontier_t *f, const fr_offer_t *o, const char *const *links, const char *codes,
                   size_t len);

/* Splits a lease token "ORIGIN\tSEQ@WORKER" (fill_item in frontier.c): its
 * first *fieldlen bytes are its lease's field in the lease hash of *worker,
 * "ORIGIN\tSEQ", and the first *originlen (may be NULL) its origin, the one
 * the claim stored.  0 or CRAWL_EINVAL. */
int fr_lease_split(const char *lease, const char **worker, size_t *fieldlen, size_t *originlen);
/* A uniform double in [0,1). */
double fr_random(frontier_t *f);

/* The code of an error reply: CRAWL_EWRONGTYPE for a key of the wrong type
 * (the scripts' own check, frontier/lua/types.lua, or Redis's WRONGTYPE),
 * CRAWL_ENOROOM for Redis's OOM refusal (maxmemory reached; the call did
 * not run), CRAWL_EREDIS for a call a Redis Cluster redirected or refused
 * for now (errors.h crawl_retry_reply: not run; the worker connects again),
 * else CRAWL_EREPLY. */
int fr_reply_error(const struct redisReply *r);
/* Writes "KEY is a TYPE, expected a WANT" into buf, TYPE read with TYPE
 * (one round trip on rc): what a wrong-typed key's error says.  0, or
 * CRAWL_EREDIS (buf then names the key only). */
int fr_wrong_type(struct redisContext *rc, const char *key, size_t keylen, const char *want,
                  char *buf, size_t buflen);

/* Integer value of a reply element (integer or numeric string); 0 or -1. */
int fr_reply_u64(const struct redisReply *r, uint64_t *out);

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

/* ---- calls built now, sent later (async.c; frontier.h: frontier_call_t) --- */

/* The kinds of frontier_call_t, each read by its own _end. */
enum { FR_CALL_STORE, FR_CALL_RETRY, FR_CALL_SEED_HOSTS };
struct frontier_call {
    fr_call_t c; /* its arguments (all copies) and, once taken, its reply;
                    c.script < 0: a plain command, not an FCALL */
    int kind;    /* FR_CALL_* */
};
/* A new call of kind, for the library's function script (-1: a plain
 * command), its arguments to be built in c.a; NULL on out of memory. */
frontier_call_t *fr_async_new(int kind, int script);
/* Copies the C string s into the builder (a call's arguments outlive the
 * handle that built them). */
void fa_dup(fr_args_t *a, const char *s);
/* c's reply, if c is of kind (else CRAWL_EINVAL): as fr_call_reply (waited
 * for if not all there; the library loaded and c sent again after a
 * NOSCRIPT): 0 and *out (caller frees; may be an error reply), or the
 * failure.  c keeps its arguments (it may be sent again). */
int fr_async_reply(frontier_t *f, frontier_call_t *c, int kind, struct redisReply **out);
/* The outcome of a {lost, ...} reply (retry, release): 0, CRAWL_ELEASE,
 * the error reply's code, or CRAWL_EREPLY. */
int fr_lease_reply(const struct redisReply *r);

#endif
