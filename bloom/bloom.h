/*
 * bloom.h -- a Bloom filter ("visited set") kept in Redis, shared by every
 * worker of a crawl on every machine.
 *
 * A filter is named; its geometry lives in the hash "<name>:meta" and its bits
 * in string keys "<name>:b:<i>" (blocks of at most 2^32 bits each).  Each item
 * is hashed once with XXH3-128; independent bits of that hash pick the block,
 * enhanced double hashing picks the k positions inside it.
 *
 * Handles are NOT thread-safe: one handle per thread, each on the thread's own
 * redisContext.  The handle borrows the redisContext; the caller keeps it open
 * for the handle's lifetime and closes it afterwards.
 *
 * Errors: functions that can fail return 0 or a negative BLOOM_E* code;
 * bloom_strerror() turns it into text.  A failed call leaves the filter in
 * Redis unchanged or partially updated only by whole items (an item is either
 * fully added or not at all).
 */
#ifndef BLOOM_H
#define BLOOM_H

#include <stddef.h>
#include <stdint.h>

struct redisContext;

#define BLOOM_MAX_K 32                      /* largest supported hash count */
#define BLOOM_MAX_BLOCK_BITS (1ULL << 32)   /* one Redis string: 512 MiB */
#define BLOOM_DEFAULT_CAPACITY 100000000ULL /* n: expected items */
#define BLOOM_DEFAULT_FP_RATE 1e-4          /* p: target false-positive rate */
#define BLOOM_DEFAULT_CACHE_BYTES (4u << 20) /* local "seen" cache: 4 MiB */
#define BLOOM_FORMAT_VERSION 1

enum {
    BLOOM_OK = 0,
    BLOOM_EINVAL = -1,    /* bad argument: n == 0, p outside (0,1), ... */
    BLOOM_ENOMEM = -2,    /* out of memory */
    BLOOM_EIO = -3,       /* Redis unreachable, connection lost mid-call */
    BLOOM_EREPLY = -4,    /* Redis answered an error or an unexpected reply */
    BLOOM_EWRONGTYPE = -5, /* a key under the filter's name has the wrong type */
    BLOOM_EMISMATCH = -6, /* stored geometry differs from the one asked for */
    BLOOM_ECORRUPT = -7,  /* stored geometry is missing, foreign or corrupt */
    BLOOM_ENOTFOUND = -8, /* no filter under that name and no params to create one */
};

typedef struct bloom bloom_t;

/* Parameters to create (or check against) a filter.  A zero field means
 * "not given": opening an existing filter with all zeros just uses it. */
typedef struct bloom_params {
    uint64_t capacity;   /* n, expected items (0: not given) */
    double fp_rate;      /* p, target false-positive rate in (0,1) (0: not given) */
    uint64_t block_bits; /* bits per block, <= BLOOM_MAX_BLOCK_BITS, multiple of 8
                            (0: BLOOM_MAX_BLOCK_BITS) */
    uint64_t seed;       /* hash seed stored with the geometry (0: default) */
    size_t cache_bytes;  /* process-local cache of added hashes (0: default,
                            SIZE_MAX: disabled); not stored in Redis */
} bloom_params_t;

/* The geometry stored in Redis. */
typedef struct bloom_geometry {
    uint64_t m;          /* total bits */
    uint32_t k;          /* hash functions */
    uint32_t blocks;     /* number of block keys */
    uint64_t block_bits; /* bits per block (the last block may be used partly) */
    uint64_t seed;
    uint32_t version;
} bloom_geometry_t;

/* Sizing as Guava does it, in 64-bit arithmetic.  Returns BLOOM_EINVAL for
 * n == 0 or p outside (0,1).  Thread-safe. */
int bloom_size(uint64_t n, double p, uint64_t *m, uint32_t *k);

/* Opens (creating if absent) the filter NAME on rc.  Creating allocates every
 * block at once.  On failure returns NULL and stores a BLOOM_E* code in *err
 * (if err is not NULL) and a message in errbuf (if given).  params may be NULL
 * (use an existing filter as it is).  name is copied. */
bloom_t *bloom_open(struct redisContext *rc, const char *name, const bloom_params_t *params,
                    int *err, char *errbuf, size_t errlen);
/* Frees the handle (not the Redis data, not rc).  Accepts NULL. */
void bloom_close(bloom_t *b);

/* Geometry of an open filter; valid for the handle's lifetime. */
const bloom_geometry_t *bloom_geometry(const bloom_t *b);

/* Test-and-add N items in one pipelined round trip (fewer if the local cache
 * answers).  items[i] (len[i] bytes, or strlen if lens is NULL) should be a
 * normalized URL.  is_new[i] is set to 1 if item i was not in the filter
 * before this call (exactly one concurrent caller sees 1 for the same item),
 * else 0.  A duplicate inside one batch is reported new once. */
int bloom_add_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                   uint8_t *is_new);
/* Read-only membership test of N items in one round trip; writes nothing. */
int bloom_contains_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                        uint8_t *present);

/* Where an item lives: its block key index and k bit offsets inside that
 * block.  Lets another module (frontier/) fold the test-and-add into its own
 * atomic Redis script.  Pure; thread-safe. */
typedef struct bloom_probe {
    uint32_t block;
    uint32_t k;
    uint64_t bit[BLOOM_MAX_K];
} bloom_probe_t;
void bloom_probe(const bloom_t *b, const char *item, size_t len, bloom_probe_t *out);
/* Writes the Redis key of block i into buf ("<name>:b:<i>").  Returns the
 * length, or a negative code if buf is too small. */
int bloom_block_key(const bloom_t *b, uint32_t block, char *buf, size_t buflen);
/* 1 if the local cache already knows the item is in the filter (no Redis
 * access, never a false "yes" beyond the filter's own), else 0. */
int bloom_cache_contains(bloom_t *b, const char *item, size_t len);
/* Tells the local cache that these items are now in the filter (after an
 * external script added them).  Never fails; may evict. */
void bloom_cache_note(bloom_t *b, const char *const *items, const size_t *lens, size_t n);

typedef struct bloom_info {
    bloom_geometry_t geo;
    uint64_t bits_set;     /* BITCOUNT over all blocks */
    uint64_t redis_bytes;  /* MEMORY USAGE summed over the keys */
    double fill;           /* bits_set / m */
    double est_items;      /* -(m/k) ln(1 - X/m) */
    double est_fp_rate;    /* (X/m)^k */
    uint64_t cache_hits;   /* this handle's local cache hits */
} bloom_info_t;
int bloom_info(bloom_t *b, bloom_info_t *out);

/* Deletes the filter's keys. */
int bloom_destroy(struct redisContext *rc, const char *name);

const char *bloom_strerror(int err);

#endif
