/*
 * bloom.h -- a Bloom filter ("visited set") kept in Redis, shared by every
 * worker of a crawl on every machine.
 *
 * A filter is named; its geometry lives in the hash "<name>:meta" (fields m,
 * k, blocks, block_bits, seed, hash = "xxh3-128", version, and for
 * information capacity and fp_rate) and its bits in string keys
 * "<name>:b:<i>", i = 0..blocks-1, all of block_bits bits (at most 2^32).
 * Each item is hashed once with XXH3-128 (seeded); the top 32 bits of the
 * high half pick the block, the low half and the low 32 bits of the high half
 * drive enhanced double hashing for the k positions inside it (64-bit
 * arithmetic: every position of the block is reachable).
 *
 * Test-and-add of one item is ONE Redis command,
 *     BITFIELD <block key> SET u1 <o1> 1 ... SET u1 <ok> 1
 * whose old values say whether the item was new (some old bit was 0), so of
 * several concurrent adders of one item exactly one is told "new".  Batches
 * are pipelined; read-only checks use BITFIELD_RO (Redis >= 6.2) and write
 * nothing.
 *
 * Handles are NOT thread-safe: one handle per thread, each on the thread's own
 * redisContext.  The handle borrows the redisContext; the caller keeps it open
 * for the handle's lifetime and closes it afterwards.
 *
 * A filter may grow: see "layers" below.
 *
 * Errors: functions that can fail return 0 or a negative CRAWL_E* code;
 * crawl_strerror() turns it into text.  A failed call leaves the filter in
 * Redis unchanged or partially updated only by whole items (an item is either
 * fully added or not at all).
 */
#ifndef BLOOM_H
#define BLOOM_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

struct redisContext;

#define BLOOM_MAX_K 32                         /* largest supported hash count */
#define BLOOM_MAX_BLOCK_BITS (1ULL << 32)      /* one Redis string: 512 MiB */
#define BLOOM_DEFAULT_CAPACITY 10000000ULL     /* n: expected items (24 MB at 1e-4) */
#define BLOOM_DEFAULT_FP_RATE 1e-4             /* p: target false-positive rate */
#define BLOOM_DEFAULT_CACHE_BYTES (4u << 20)   /* local "seen" cache: 4 MiB */
#define BLOOM_DEFAULT_LOCAL_BYTES (64u << 20)  /* frozen layers copied: 64 MiB */
#define BLOOM_DEFAULT_SEED 0x5EED5EEDC0FFEEULL /* hash seed when params give 0 */
#define BLOOM_FORMAT_VERSION 1
#define BLOOM_HASH_NAME "xxh3-128" /* the "hash" field of the meta hash */
#define BLOOM_MAX_BLOCKS 65536u    /* block keys of one filter */
#define BLOOM_MAX_NAME 512         /* bytes of a filter name */
#define BLOOM_BATCH_ITEMS 4096u    /* items per pipelined round trip inside the batch calls */
/* Filters of at least this many bytes get their block count chosen so that
 * Redis' memory for them (jemalloc: 4 size classes per power of two, plus
 * each key's own overhead) exceeds m/8 by < 1% -- or as little as the next
 * 256 block counts allow; a single 1.2 MB string would cost 1.31 MB. */
#define BLOOM_FIT_MIN_BYTES (64u << 10)
/* The largest capacity the crawler's options accept: 1e10 items, a filter of
 * 23.9 GB at p = 1e-4 (bloom_open itself takes any n the block limits allow;
 * its memory check against the server is what protects Redis). */
#define BLOOM_MAX_CAPACITY 10000000000ULL
/* Creation writes blocks in steps of at most this many bytes (whole blocks;
 * a larger block is one step of its own), one Redis call each. */
#define BLOOM_CREATE_STEP_BYTES (16u << 20)
/* A creator renews its claim ("<name>:creating") at every step; a claim
 * not renewed for this long is dead. */
#define BLOOM_CREATE_LEASE_MS 30000
/* How long bloom_open waits for another process's creation to finish. */
#define BLOOM_CREATE_WAIT_MS 120000
/* Layers (a filter that grows; see "layers" below). */
#define BLOOM_DEFAULT_GROWTH 2.0 /* the crawler's default: each layer twice the last */
#define BLOOM_MAX_GROWTH 16.0
#define BLOOM_TIGHTENING 0.8   /* layer j's rate: p (1 - t) t^j */
#define BLOOM_MAX_LAYERS 64    /* layers of one filter */
#define BLOOM_PREPARE_FILL 0.9 /* the next layer is created past this share of the newest's */
/* Block size of every layer of a filter that grows: a quarter of layer
 * 0's bytes, rounded down to a power of two between these two, less 16
 * bytes (the sds header and NUL within jemalloc's size class).  A layer
 * has at most BLOOM_MAX_BLOCKS blocks: 64 KiB blocks reach about 1.4e9
 * URLs at 1e-4, 512 KiB ones (from 1e6 URLs on) 1.1e10. */
#define BLOOM_GROW_BLOCK_MIN (64u << 10)
#define BLOOM_GROW_BLOCK_MAX (512u << 10)

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL     bad argument: n == 0, p outside (0,1), ...
 *   CRAWL_ENOMEM     out of memory
 *   CRAWL_EREDIS     Redis unreachable, connection lost mid-call
 *   CRAWL_EREPLY     Redis answered an error or an unexpected reply
 *   CRAWL_EWRONGTYPE a key under the filter's name has the wrong type
 *   CRAWL_EMISMATCH  stored geometry differs from the one asked for
 *   CRAWL_ECORRUPT   stored geometry is missing, foreign or corrupt
 *   CRAWL_ENOTFOUND  no filter under that name and no params to create one
 *   CRAWL_ENOROOM    the filter to create does not fit in the memory Redis has
 *                    free (bloom_open), or Redis reached maxmemory part-way */

typedef struct bloom bloom_t;

/* Parameters to create (or check against) a filter.  A zero field means
 * "not given": opening an existing filter with capacity and fp_rate both 0
 * just uses it (and fails with CRAWL_ENOTFOUND if there is none).  When
 * capacity or fp_rate is given, the missing one takes its default and the
 * geometry they yield (bloom_geometry_for) is created, or compared with the
 * stored one. */
/* A local cache several handles share (see bloom_shared_cache_new). */
typedef struct bloom_cache bloom_cache_t;

typedef struct bloom_params {
    uint64_t capacity;           /* n, expected items (0: not given) */
    double fp_rate;              /* p, target false-positive rate in (0,1) (0: not given) */
    uint64_t block_bits;         /* largest bits per block, 8..BLOOM_MAX_BLOCK_BITS, multiple
                                    of 8 (0: BLOOM_MAX_BLOCK_BITS) */
    uint64_t seed;               /* hash seed stored with the geometry (0: BLOOM_DEFAULT_SEED) */
    size_t cache_bytes;          /* process-local cache of added hashes, bytes (0: default,
                                    SIZE_MAX: disabled); not stored in Redis; used even
                                    when capacity and fp_rate are 0 */
    bloom_cache_t *shared_cache; /* if set: use this shared cache (not owned; it must
                                    outlive the handle) instead of a private one, and
                                    ignore cache_bytes */
    uint64_t step_bytes;         /* creation: bytes of blocks per Redis call (0:
                                    BLOOM_CREATE_STEP_BYTES) */
    /* creation: called after each step with the bytes of blocks written so far
     * and in all (NULL: none); ud is passed through. */
    void (*progress)(void *ud, uint64_t done, uint64_t total);
    void *progress_ud;
    double growth;      /* creation: > 1, a filter that grows (see "layers" below):
                           each new layer this many times the last one's capacity,
                           at most BLOOM_MAX_GROWTH; 0: a fixed filter */
    int no_wait;        /* creation: while another process creates the filter,
                           fail at once (CRAWL_EBLOOM) instead of waiting for it */
    size_t local_bytes; /* a filter that grows: bytes of its frozen layers this handle copies
                           to test items without Redis (bloom_add_many, bloom_contains_many);
                           0: BLOOM_DEFAULT_LOCAL_BYTES, SIZE_MAX: none */
    const struct bloom_geometry *exact; /* creation: exactly this geometry (a layer's,
                                           bloom_layer_geometry); capacity and fp_rate
                                           are then only recorded */
} bloom_params_t;

/* The geometry stored in Redis.  m == blocks * block_bits. */
typedef struct bloom_geometry {
    uint64_t m;          /* total bits (Guava's m rounded up to whole blocks of
                            whole bytes: at most 8 * blocks bits more) */
    uint32_t k;          /* hash functions, 1..BLOOM_MAX_K */
    uint32_t blocks;     /* number of block keys, 1..BLOOM_MAX_BLOCKS */
    uint64_t block_bits; /* bits per block, a multiple of 8, <= BLOOM_MAX_BLOCK_BITS */
    uint64_t seed;       /* XXH3-128 seed */
    uint32_t version;    /* BLOOM_FORMAT_VERSION */
} bloom_geometry_t;

/* Sizing as Guava does it, in 64-bit arithmetic:
 * m = ceil(-n ln p / (ln 2)^2), k = max(1, round(m/n ln 2)), k capped at
 * BLOOM_MAX_K (only for p < ~2^-32; the rate then ends a little above p).
 * Returns CRAWL_EINVAL for n == 0, p outside (0,1) (or NaN), or an m beyond
 * BLOOM_MAX_BLOCKS * BLOOM_MAX_BLOCK_BITS.  Thread-safe. */
int bloom_size(uint64_t n, double p, uint64_t *m, uint32_t *k);

/* The geometry bloom_open creates for params (defaults filled in as
 * documented at bloom_params_t; capacity and fp_rate may not both be 0):
 * bloom_size, then the fewest blocks of at most block_bits bits (for filters
 * of BLOOM_FIT_MIN_BYTES or more: the fewest, from there, whose allocation in
 * Redis wastes < 1%).  Pure and deterministic; thread-safe.  Returns 0 or
 * CRAWL_EINVAL. */
int bloom_geometry_for(const bloom_params_t *params, bloom_geometry_t *out);

/* Bytes Redis will hold for a filter of this geometry (its blocks as the
 * allocator rounds them, their keys, the meta hash): what bloom_open checks
 * against the server's free memory.  Pure; thread-safe. */
uint64_t bloom_redis_bytes(const bloom_geometry_t *g);

/* Opens (creating if absent) the filter NAME (1..BLOOM_MAX_NAME bytes) on rc.
 * Creation claims the name ("NAME:creating", a string holding a token,
 * renewed at every step; concurrent openers wait for the meta hash up to
 * BLOOM_CREATE_WAIT_MS), reads INFO memory and refuses with CRAWL_ENOROOM a
 * filter of more than maxmemory - used_memory bytes (bloom_redis_bytes; with
 * maxmemory 0, the server's total_system_memory stands for maxmemory), the
 * message naming the bytes needed and free.  Then it writes the blocks in
 * steps of params->step_bytes, one call each (SETBIT <last bit> 0, so all
 * memory is allocated now), each passing Redis' own maxmemory check, and the
 * meta hash last.  If a step fails (a Redis at maxmemory answers OOM:
 * CRAWL_ENOROOM), every block written and the claim are deleted: no half
 * filter is left.  An existing filter is checked: meta must be a hash with a
 * known hash/version and sane numbers (else CRAWL_ECORRUPT), every block a
 * string of the right length (CRAWL_EWRONGTYPE / CRAWL_ECORRUPT), and its
 * geometry must equal the one params ask for, if any (else CRAWL_EMISMATCH,
 * the message naming both).  Block keys without a meta hash: CRAWL_ECORRUPT.
 * On failure returns NULL and stores a CRAWL_E* code in *err (if err is not
 * NULL) and a message in errbuf (if given; always NUL-terminated).  params
 * may be NULL (use an existing filter as it is).  name is copied. */
bloom_t *bloom_open(struct redisContext *rc, const char *name, const bloom_params_t *params,
                    int *err, char *errbuf, size_t errlen);
/* Joins the filter NAME as it is stored (whatever params say), or, if there
 * is none and params give a capacity or an fp_rate, creates it with them (as
 * bloom_open).  What a crawl's workers do: the first one creates, the others
 * join.  params may be NULL (join only).  Errors as bloom_open
 * (CRAWL_ENOTFOUND: none, and nothing to create it from; CRAWL_ENOROOM: it
 * does not fit in Redis). */
bloom_t *bloom_join(struct redisContext *rc, const char *name, const bloom_params_t *params,
                    int *err, char *errbuf, size_t errlen);
/* Frees the handle (not the Redis data, not rc).  Accepts NULL. */
void bloom_close(bloom_t *b);

/* 1 if the filter is still in Redis (its meta hash), 0 if it is gone (a
 * FLUSHALL, a Redis restarted without its data), or CRAWL_EREDIS /
 * CRAWL_EREPLY.  One round trip. */
int bloom_exists(bloom_t *b);

/* Geometry of an open filter; valid for the handle's lifetime. */
const bloom_geometry_t *bloom_geometry(const bloom_t *b);
/* The filter's name (the handle's copy). */
const char *bloom_name(const bloom_t *b);
/* Text of the last failure on this handle, more precise than
 * crawl_strerror (e.g. Redis' own error, the key concerned); "" if none.
 * Valid until the next call on the handle. */
const char *bloom_errmsg(const bloom_t *b);

/* Test-and-add N items in one pipelined round trip per BLOOM_BATCH_ITEMS
 * items, minus those the local cache answers.  items[i] (lens[i] bytes, or
 * strlen if lens is NULL) should be a normalized URL.  is_new[i] is set to 1
 * if item i was not in the filter before this call (exactly one concurrent
 * caller sees 1 for the same item), else 0.  A duplicate inside one batch is
 * reported new once.  On failure (CRAWL_EREDIS: connection lost, the
 * redisContext is then unusable, every later call fails with CRAWL_EREDIS too;
 * CRAWL_EWRONGTYPE / CRAWL_EREPLY: a block key was replaced) is_new is
 * undefined; each item is either fully added or not at all.  SIGPIPE from a
 * dead connection is blocked and consumed for the calling thread only. */
int bloom_add_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                   uint8_t *is_new);
/* Read-only membership test of N items (BITFIELD_RO), batched as above;
 * writes nothing in Redis.  present[i] = 1 if item i is (probably) in the
 * filter; never 0 for an added item.  Items found present are remembered in
 * the local cache (bits are never cleared).  Errors as bloom_add_many. */
int bloom_contains_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                        uint8_t *present);

/* Where an item lives: its block key index and k bit offsets inside that
 * block -- exactly the bits bloom_add_many sets, in the same order.  Lets
 * another module (frontier/) fold the test-and-add into its own atomic Redis
 * script.  Pure; safe to call from several threads on one handle. */
typedef struct bloom_probe {
    uint32_t block;
    uint32_t k;
    uint32_t sel; /* the hash bits that pick the block: a layer of B blocks takes
                     block (sel * B) >> 32 (bloom_layer_block) */
    uint64_t bit[BLOOM_MAX_K];
} bloom_probe_t;
void bloom_probe(const bloom_t *b, const char *item, size_t len, bloom_probe_t *out);
/* Writes the Redis key of block i into buf ("<name>:b:<i>").  Returns the
 * length, or a negative code if buf is too small. */
int bloom_block_key(const bloom_t *b, uint32_t block, char *buf, size_t buflen);
/* 1 if the local cache already knows the item is in the filter (no Redis
 * access), else 0.  The cache holds 64-bit fingerprints of items Redis
 * confirmed, so a false "yes" beyond the filter's own needs a 64-bit
 * collision (probability < entries / 2^64).  Counts a hit in cache_hits. */
int bloom_cache_contains(bloom_t *b, const char *item, size_t len);
/* A local cache for several handles of one process (say, one per thread) on
 * the same filter, so that what one handle learnt answers for all: bytes as
 * cache_bytes (0: default, SIZE_MAX: disabled), passed as bloom_params_t.shared_cache.  Safe to
 * use from several threads at once (atomic slots, no reordering on a hit;
 * the handles themselves stay single-thread).  NULL when out of memory. */
bloom_cache_t *bloom_shared_cache_new(size_t bytes);
/* After every handle using it is closed.  Accepts NULL. */
void bloom_shared_cache_free(bloom_cache_t *c);

/* Tells the local cache that these items are now in the filter (after an
 * external script added them; lens may be NULL: strlen).  Never fails; may
 * evict older entries (8-way buckets, least recently noted goes). */
void bloom_cache_note(bloom_t *b, const char *const *items, const size_t *lens, size_t n);
/* Empties the local cache b uses (its own or the shared one): after Redis
 * may have lost writes it had acknowledged (a server restarted from its
 * append-only file, a failover), an item the cache remembers may no longer
 * be in the filter, and a link dropped for it would never be queued.
 * Thread-safe on a shared cache (entries noted meanwhile by other handles
 * are kept or dropped, either is safe: a miss only costs a Redis look).
 * The handle's copies of frozen layers (local_bytes) go too. */
void bloom_cache_forget(bloom_t *b);

typedef struct bloom_info {
    bloom_geometry_t geo;
    uint64_t capacity;      /* n the filter was created for (0 if not recorded) */
    double fp_rate;         /* p the filter was created for (0 if not recorded) */
    uint64_t bits_set;      /* BITCOUNT over all blocks */
    uint64_t redis_bytes;   /* MEMORY USAGE (SAMPLES 0) summed over meta and blocks */
    double fill;            /* bits_set / m */
    double est_items;       /* -(m/k) ln(1 - X/m) (infinity when every bit is set) */
    double est_fp_rate;     /* (X/m)^k */
    uint64_t cache_hits;    /* this handle's local cache hits */
    uint64_t cache_entries; /* slots of this handle's local cache (0: disabled) */
    /* A filter that grows: the fields above are layer 0's but for
     * redis_bytes (all layers); per layer: */
    uint32_t layers;                        /* published layers (1: fixed or not grown) */
    double growth;                          /* 0: a fixed filter */
    double fp_target;                       /* p of the whole (0: not recorded) */
    uint64_t layer_items[BLOOM_MAX_LAYERS]; /* items each holds (meta n<j>, added) */
    uint64_t layer_capacity[BLOOM_MAX_LAYERS];
    double layer_fp[BLOOM_MAX_LAYERS]; /* each one's rate at its items */
    double whole_fp;                   /* 1 - prod(1 - layer_fp) */
} bloom_info_t;
/* Reads the counters above in one pipelined round trip.  Errors as
 * bloom_add_many. */
int bloom_info(bloom_t *b, bloom_info_t *out);

/* ---- fill: how full a filter is, from a count of the items added ---------
 * A filter made for capacity n at rate p keeps that rate only up to n items:
 * at 2n the default filter (1e7, 1e-4) answers "seen" for 2% of new items,
 * at 10n for 98.5%.  The crawl knows how many items it added (its counters);
 * these pure functions turn that count into a fill and a rate, and the text
 * a crawl prints when its filter is full (it cannot grow). */

/* Past this fill (added / capacity) `crawler stats` and the progress line warn. */
#define BLOOM_FILL_WARN 0.9

typedef struct bloom_fill {
    uint64_t added;    /* items added (the caller's count) */
    uint64_t capacity; /* n the filter was made for (0: not recorded: never full) */
    double fill;       /* added / capacity (0 when capacity is 0) */
    double fp_rate;    /* the rate now: (1 - e^(-k added / m))^k */
    int full;          /* capacity > 0 and added >= capacity */
} bloom_fill_t;

/* The false-positive rate of a filter of geometry g after n distinct items:
 * (1 - e^(-k n / m))^k; 0 for n == 0 or m == 0.  Pure; thread-safe. */
double bloom_fp_estimate(const bloom_geometry_t *g, uint64_t n);
/* Fills *out from the geometry, the capacity the filter was made for and
 * the items added.  Pure; thread-safe. */
void bloom_fill_of(const bloom_geometry_t *g, uint64_t capacity, uint64_t added, bloom_fill_t *out);
/* A capacity to start again with: 10 times max(added, capacity), rounded up
 * to 1, 2 or 5 times a power of ten, at most BLOOM_MAX_CAPACITY.  Pure. */
uint64_t bloom_suggest_capacity(uint64_t added, uint64_t capacity);
/* Writes the message of a full filter (what `crawler crawl` and `crawler
 * seed` print, and the crawl's event line carries) into buf, NUL-terminated
 * (truncated to buflen): more == 0, "the visited set is full: ..."; more >
 * 0, the refusal of that many more items that would pass the capacity.  The
 * advice names the crawler's --bloom-capacity.  Returns what snprintf
 * returns.  Pure. */
int bloom_full_message(const bloom_fill_t *f, uint64_t more, char *buf, size_t buflen);
/* The capacity the filter was created for, as its meta hash records it (0
 * if it does not).  No Redis access. */
uint64_t bloom_capacity(const bloom_t *b);

/* ---- layers: a filter that grows (Almeida et al., "Scalable Bloom Filters") --
 * A filter created with params.growth > 1 is a stack of plain filters, its
 * layers: layer 0 is NAME itself, layer j >= 1 the filter "NAME:L<j>".
 * Layer j is made for capacity n0 * growth^j and rate p * (1 - t) * t^j (t =
 * BLOOM_TIGHTENING), so the rate of the whole, 1 - prod(1 - p_j), stays
 * below p however many layers there are.  Every layer has layer 0's k, seed
 * and block size (BLOOM_GROW_BLOCK_MIN/MAX), and as many blocks as its bits
 * need (its rate is reached with more bits an item, not more hashes): an
 * item's k offsets are the same in every layer, only its block differs
 * (bloom_layer_block), so a caller hashes an item once for all layers.  Layer 0's meta hash keeps
 * the stack's state: growth, fp_target (p), layers (how many are published), added (items in the
 * newest layer), full_at (the newest layer's capacity), and n<j>, the items layer j held when the
 * next one was published.
 *
 * An item is in the filter when all its bits are set in some layer; an item
 * is added to the newest layer only, after the older ones (frozen once a
 * newer one is published: nothing writes them again) said it is not there.
 * Every adder names the layer count it knows; the atomic add refuses a stale
 * count (CRAWL_ESTALE: read the layers again and check the one that just
 * froze), so of several racing adders of one item exactly one is told
 * "new", across a publication too.  The add also publishes: a call that
 * would take the newest layer past its capacity while the next layer is
 * already created publishes it and refuses (CRAWL_ESTALE); when the next
 * one is not there yet and the newest is full, it refuses with CRAWL_EFULL.
 * Adders create the next layer ahead (bloom_prepare) once the newest holds
 * BLOOM_PREPARE_FILL of its capacity: the same creation as bloom_open's (a
 * claim, Redis' free memory checked, blocks in steps), so a layer that does
 * not fit is refused with CRAWL_ENOROOM and nothing is published.  The
 * caller's local cache serves every layer. */

/* Capacity and rate of layer j of a filter made for n0 at p growing by
 * growth (> 1).  CRAWL_EINVAL for bad arguments or a capacity past
 * BLOOM_MAX_CAPACITY * 1000.  Pure. */
int bloom_layer_size(uint64_t n0, double p, double growth, uint32_t j, uint64_t *n, double *pj);
/* The geometry of layer j of b (j may be bloom_layers(b), the next one, not
 * created yet): layer 0's k, seed and block size, the blocks its capacity
 * and rate need.  Pure.  0 or CRAWL_EINVAL (b does not grow, j out of
 * range, more than BLOOM_MAX_BLOCKS blocks). */
int bloom_layer_geometry(const bloom_t *b, uint32_t j, bloom_geometry_t *out);
/* The block of an item's probe (bloom_probe on b) in layer j (j <
 * BLOOM_MAX_LAYERS: layers to come too); its offsets are pr->bit in every
 * layer.  Pure. */
uint32_t bloom_layer_block(const bloom_t *b, uint32_t j, const bloom_probe_t *pr);
/* The key of block i of layer j (j <= bloom_layers(b)), as bloom_block_key. */
int bloom_layer_block_key(const bloom_t *b, uint32_t j, uint32_t block, char *buf, size_t buflen);
/* The key of layer j's meta hash ("NAME:meta", "NAME:L<j>:meta"). */
int bloom_layer_meta_key(const bloom_t *b, uint32_t j, char *buf, size_t buflen);
/* The rate a filter that grows is held under (its meta's fp_target). */
double bloom_fp_target(const bloom_t *b);
/* The growth factor of the filter (0: a fixed filter, one layer forever). */
double bloom_growth(const bloom_t *b);
/* Published layers the handle knows (1 for a fixed filter). */
uint32_t bloom_layers(const bloom_t *b);
/* Layer j's handle (j < bloom_layers(b); layer 0 is b itself): its
 * geometry, probes and block keys are the layer's own.  Owned by b. */
bloom_t *bloom_layer(bloom_t *b, uint32_t j);
/* The layer count and the newest layer's load as last read or answered. */
uint64_t bloom_newest_added(const bloom_t *b);
uint64_t bloom_newest_capacity(const bloom_t *b);
/* Reads the layer count (and the newest's load) again from layer 0's meta
 * on rc (NULL: the handle's own) and opens the layers published since, on
 * it (or drops the ones a Redis restarted from its file no longer counts).
 * 1 if the count changed, 0 if not, or a negative code. */
int bloom_refresh(bloom_t *b, struct redisContext *rc);
/* Creates the next layer (bloom_layers(b)) unless it exists, on rc (NULL:
 * the handle's own), without waiting for another creator of it (0 then:
 * it is under way).  0, or CRAWL_ENOROOM (it does not fit: the filter
 * cannot grow; the message says how many bytes it needs), CRAWL_EINVAL (a
 * fixed filter, or BLOOM_MAX_LAYERS reached), or another code. */
int bloom_prepare(bloom_t *b, struct redisContext *rc);
/* 1 if the newest layer is past BLOOM_PREPARE_FILL of its capacity (by the
 * handle's last reading), so that bloom_prepare is due. */
int bloom_prepare_due(const bloom_t *b);
/* Items each layer holds, by the handle's last reading of layer 0's meta
 * (bloom_open, bloom_refresh): the frozen ones' final counts, the newest's
 * `added`, into items[0..max); returns the layers written. */
uint32_t bloom_layer_items(const bloom_t *b, uint64_t *items, uint32_t max);
/* The rate of the whole now: 1 - prod over layers of (1 - rate of layer j
 * at its items), from the counts in info (bloom_info fills them). */
double bloom_layers_fp(const bloom_t *b, const uint64_t *items, uint32_t n);

/* Deletes the filter's keys (meta and every block it names) in one DEL.
 * 0 also when there was no filter; CRAWL_EWRONGTYPE if "<name>:meta" is not
 * a hash, CRAWL_ECORRUPT if its block count is unreadable (nothing deleted).
 * Handles still open on the filter keep stale cache entries. */
int bloom_destroy(struct redisContext *rc, const char *name);

#endif
