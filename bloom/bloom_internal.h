/*
 * bloom_internal.h -- what the files of bloom/ share and nobody else sees:
 * the handle's body, the item hash, the local cache, RESP building and the
 * SIGPIPE guard around pipelined I/O.
 */
#ifndef BLOOM_INTERNAL_H
#define BLOOM_INTERNAL_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "bloom.h"

#define BLOOM_CACHE_WAYS 8 /* fingerprints per bucket: one 64-byte cache line */

/* The process-local cache: buckets of BLOOM_CACHE_WAYS 64-bit fingerprints
 * (0 = empty), most recently noted first. */
struct bloom_cache {
    uint64_t *slots; /* nbuckets * BLOOM_CACHE_WAYS, NULL when disabled */
    size_t nbuckets; /* a power of two */
    uint64_t hits;
    int shared; /* bloom_shared_cache_new: atomic slot access, no reordering */
};

/* A growable output buffer of RESP commands. */
typedef struct bloom_buf {
    char *p;
    size_t len, cap;
    int oom; /* an append failed; the content is incomplete */
} bloom_buf_t;

/* The one hash of an item. */
typedef struct bloom_hash {
    uint64_t lo, hi;
} bloom_hash_t;

struct bloom {
    struct redisContext *rc; /* borrowed */
    char *name;
    size_t name_len;
    bloom_geometry_t geo;
    uint64_t capacity; /* informational, from meta */
    double fp_rate;
    bloom_cache_t cache;  /* private cache (disabled when a shared one is used); its
                             hits count this handle's hits either way */
    bloom_cache_t *cc;    /* the cache in use: &cache or a shared one */
    bloom_buf_t out;      /* reused between batches */
    uint32_t *pending;    /* indices of the items sent in the current round trip */
    uint64_t *fps;        /* their fingerprints */
    bloom_hash_t *hashes; /* the round's item hashes (BLOOM_BATCH_ITEMS) */
    /* layers (bloom_layers.c), from layer 0's meta; a layer's own handle
     * has growth 0 and nlayers 1 */
    double growth;                     /* > 1: a filter that grows; 0: fixed */
    double fp_target;                  /* p of the whole */
    uint32_t nlayers;                  /* published layers, >= 1 */
    bloom_t **layer;                   /* [nlayers]: layer[0] = this handle, the others owned */
    uint64_t added;                    /* items in the newest layer */
    uint64_t full_at;                  /* the newest layer's capacity */
    uint64_t frozen[BLOOM_MAX_LAYERS]; /* n<j>: items of layer j when it froze */
    uint32_t prepared;                 /* the next layer, once this handle created it */
    uint8_t *local;                    /* a frozen layer's bits, copied (bloom_layers.c) */
    size_t local_budget;               /* bytes of frozen layers copied at most (SIZE_MAX: none) */
    size_t local_used;
    uint32_t lblocks[BLOOM_MAX_LAYERS + 1]; /* blocks of layers 0..nlayers (the next) */
    char errmsg[512];
};

/* One filter, without its layers (bloom_open.c); bloom_open and
 * bloom_close (bloom_layers.c) add them.  Same contract. */
bloom_t *bloom_open_one(struct redisContext *rc, const char *name, const bloom_params_t *params,
                        int *err, char *errbuf, size_t errlen);
void bloom_close_one(bloom_t *b);
/* Stores code in *err and the message (or code's text) in errbuf. */
void bloom_set_err(int code, int *err, char *errbuf, size_t errlen, const char *msg);
/* bloom_info of this one filter (bloom_batch.c). */
int bloom_info_plain(bloom_t *b, bloom_info_t *out);
/* Empties a cache (bloom_cache_forget's part; thread-safe on a shared one). */
void bloom_cache_clear(bloom_cache_t *c);
/* The plain batch over this one filter (bloom_batch.c): write 1 test-and-
 * add, 0 contains; the local cache as bloom_add_many's. */
int bloom_batch_plain(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                      uint8_t *res, int write);

bloom_hash_t bloom_hash_item(const bloom_t *b, const char *item, size_t len);
/* Block and k positions from a hash (see bloom.h for the bit layout). */
void bloom_probe_from_hash(const bloom_geometry_t *g, bloom_hash_t h, bloom_probe_t *out);
/* The cache fingerprint of a hash; never 0. */
uint64_t bloom_fingerprint(bloom_hash_t h);

/* Cache: bytes == 0 means default, SIZE_MAX disabled.  Returns 0 or
 * CRAWL_ENOMEM. */
int bloom_cache_init(bloom_cache_t *c, size_t bytes);
void bloom_cache_free(bloom_cache_t *c);
int bloom_cache_has(bloom_cache_t *c, uint64_t fp);
/* Starts loading fp's bucket into the CPU cache (a hint; no effect otherwise). */
void bloom_cache_prefetch(const bloom_cache_t *c, uint64_t fp);
void bloom_cache_put(bloom_cache_t *c, uint64_t fp);

/* RESP building: every append keeps the buffer consistent; failures set
 * buf->oom. */
void bloom_buf_bulk(bloom_buf_t *buf, const char *s, size_t len);
void bloom_buf_array(bloom_buf_t *buf, size_t n);
/* Appends the BITFIELD (write: SET u1 o 1 per bit) or BITFIELD_RO of a
 * probe on b's block (bloom_batch.c's hot path). */
void bloom_append_probe(bloom_buf_t *buf, const bloom_t *b, const bloom_probe_t *pr, int write);
/* Appends the block key "<name>:b:<i>" as a bulk string. */
void bloom_buf_block_key(bloom_buf_t *buf, const bloom_t *b, uint32_t block);
void bloom_buf_free(bloom_buf_t *buf);

/* Blocks SIGPIPE for this thread around socket I/O and consumes one that the
 * I/O raised, so a dead Redis gives an error, not a killed process. */
typedef struct bloom_sigpipe {
    sigset_t old;
    int was_pending;
} bloom_sigpipe_t;
void bloom_sigpipe_block(bloom_sigpipe_t *g);
void bloom_sigpipe_restore(bloom_sigpipe_t *g);

/* A creation claimed by bloom_open.c's open script (bloom_create.c). */
typedef struct bloom_create {
    const char *mkey;  /* "<name>:meta" */
    const char *ckey;  /* "<name>:creating", the claim */
    const char *token; /* the claim's value: this creator */
    const bloom_geometry_t *geo;
    const bloom_params_t *params;
} bloom_create_t;
/* Checks the server's free memory, writes the blocks in steps and the meta
 * hash last (bloom_create.c's DESIGN); on failure deletes what it wrote and
 * the claim.  0 or a CRAWL_E* code (CRAWL_ENOROOM: no room), message in
 * b->errmsg. */
int bloom_create_blocks(bloom_t *b, const bloom_create_t *c);

/* Strict decimal u64 of s[0..len): digits only, no sign, no overflow.  0 or -1. */
int bloom_parse_u64(const char *s, size_t len, uint64_t *out);

/* Records a message in b->errmsg; returns code. */
int bloom_fail(bloom_t *b, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Maps an I/O failure of rc to CRAWL_EREDIS with hiredis' message. */
int bloom_fail_io(bloom_t *b);

#endif
