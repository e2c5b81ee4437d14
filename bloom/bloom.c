/*
 * bloom.c -- sizing, geometry, the item hash and its probe positions, and
 * the small accessors of a Bloom filter handle.
 *
 * DESIGN
 * A filter NAME is the hash "NAME:meta" plus string keys "NAME:b:0" ..
 * "NAME:b:<blocks-1>" of block_bits bits each (bloom_open.c creates and checks
 * them; bloom_batch.c talks to them in pipelined batches).  Nothing here
 * touches Redis: these functions are pure, so every process (and frontier/'s
 * Lua scripts, through bloom_probe) derives the same bits from the same
 * geometry.
 *
 * Geometry: Guava's sizing (bloom_size), then the block count: the fewest
 * blocks of at most block_bits bits, and, for filters of BLOOM_FIT_MIN_BYTES
 * or more, the fewest from there whose strings fit Redis' allocator size
 * classes with < 1% waste.  Redis (jemalloc) rounds a string of B bytes plus
 * its sds header up to a size class -- four per power of two -- so one 1.2 MB
 * block would cost 1.31 MB; 21 blocks of 57 KB cost 0.5% more than m/8.
 * The k positions of an item all fall in one block, so one BITFIELD on one
 * key decides it.
 *
 * Hash layout (XXH3-128, seeded): hi's top 32 bits pick the block
 * (multiply-shift, uniform), lo mod M and (hi's low 32 bits) mod M start
 * enhanced double hashing (Dillinger & Manolios) over the block's M bits:
 *     x = lo mod M, y = hi32 mod M; bit[0] = x;
 *     bit[i] = x = (x + y) mod M; y = (y + i) mod M       (i = 1..k-1)
 * All in 64-bit arithmetic (M <= 2^32, so x + y < 2^33); since x is uniform
 * on [0, M), every position of every block is reachable.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

#define MAX_TOTAL_BITS ((uint64_t)BLOOM_MAX_BLOCKS * BLOOM_MAX_BLOCK_BITS)
#define FIT_SEARCH 256 /* block counts tried past the fewest */
/* Redis' cost of one more key besides its string: robj (16), dict entry (24),
 * the key's own sds (~24). */
#define KEY_OVERHEAD 64

int bloom_size(uint64_t n, double p, uint64_t *m, uint32_t *k)
{
    if (n == 0 || !(p > 0.0 && p < 1.0))
        return CRAWL_EINVAL;
    double ln2 = log(2.0);
    double md = ceil(-(double)n * log(p) / (ln2 * ln2));
    if (!(md >= 1.0 && md <= (double)MAX_TOTAL_BITS))
        return CRAWL_EINVAL;
    uint64_t mm = (uint64_t)md;
    double kd = round((double)mm / (double)n * ln2);
    uint32_t kk = kd < 1.0 ? 1 : kd > BLOOM_MAX_K ? BLOOM_MAX_K : (uint32_t)kd;
    if (m)
        *m = mm;
    if (k)
        *k = kk;
    return 0;
}

/* Bytes jemalloc really allocates for a request of s bytes: size classes
 * are 8, 16, then four per power of two (at least 16 apart). */
static uint64_t alloc_class(uint64_t s)
{
    if (s <= 16)
        return s <= 8 ? 8 : 16;
    int lg = 63 - __builtin_clzll(s - 1);
    uint64_t delta = 1ULL << (lg - 2);
    if (delta < 16)
        delta = 16;
    return (s + delta - 1) & ~(delta - 1);
}

/* Bytes Redis asks the allocator for a string of len bytes: sds header by
 * length type, the bytes, a terminating NUL. */
static uint64_t sds_bytes(uint64_t len)
{
    uint64_t hdr = len < 32             ? 1
                   : len < (1u << 8)    ? 3
                   : len < (1u << 16)   ? 5
                   : len < (1ULL << 32) ? 9
                                        : 17;
    return hdr + len + 1;
}

static uint64_t block_bytes(uint64_t m, uint64_t nb)
{
    return (m + 8 * nb - 1) / (8 * nb);
}

/* The block count for m bits, starting from the fewest (nb0). */
static uint64_t fit_blocks(uint64_t m, uint64_t nb0)
{
    uint64_t total = (m + 7) / 8;
    if (total < BLOOM_FIT_MIN_BYTES)
        return nb0;
    uint64_t best = nb0, best_waste = UINT64_MAX;
    for (uint64_t nb = nb0; nb < nb0 + FIT_SEARCH && nb <= BLOOM_MAX_BLOCKS; nb++) {
        uint64_t bytes = block_bytes(m, nb);
        uint64_t waste = nb * (alloc_class(sds_bytes(bytes)) - bytes + KEY_OVERHEAD);
        if (waste < best_waste) {
            best = nb;
            best_waste = waste;
        }
        if (waste * 100 <= total)
            break;
    }
    return best;
}

uint64_t bloom_redis_bytes(const bloom_geometry_t *g)
{
    uint64_t bytes = g->block_bits / 8;
    /* + the meta hash (a listpack of 9 short fields) and its key */
    return (uint64_t)g->blocks * (alloc_class(sds_bytes(bytes)) + KEY_OVERHEAD) + 512;
}

/* The block size of a filter that grows from m bits (bloom.h). */
static uint64_t grow_block_bits(uint64_t m)
{
    uint64_t want = m / 8 / 4, b = BLOOM_GROW_BLOCK_MIN;
    while (b < BLOOM_GROW_BLOCK_MAX && 2 * b <= want)
        b *= 2;
    return 8 * (b - 16);
}

int bloom_geometry_for(const bloom_params_t *params, bloom_geometry_t *out)
{
    if (!params || (params->capacity == 0 && params->fp_rate == 0.0))
        return CRAWL_EINVAL;
    if (params->exact) { /* a layer's (bloom_layer_geometry) */
        const bloom_geometry_t *g = params->exact;
        if (g->k < 1 || g->k > BLOOM_MAX_K || g->blocks < 1 || g->blocks > BLOOM_MAX_BLOCKS ||
            g->block_bits < 8 || g->block_bits % 8 || g->block_bits > BLOOM_MAX_BLOCK_BITS ||
            g->m != (uint64_t)g->blocks * g->block_bits || g->seed == 0)
            return CRAWL_EINVAL;
        *out = *g;
        out->version = BLOOM_FORMAT_VERSION;
        return 0;
    }
    uint64_t n = params->capacity ? params->capacity : BLOOM_DEFAULT_CAPACITY;
    double p = params->fp_rate != 0.0 ? params->fp_rate : BLOOM_DEFAULT_FP_RATE;
    if (params->growth > 1.0) /* layer 0 of a filter that grows (bloom_layer_size) */
        p *= 1.0 - BLOOM_TIGHTENING;
    uint64_t max_bb = params->block_bits ? params->block_bits : BLOOM_MAX_BLOCK_BITS;
    if (max_bb < 8 || max_bb > BLOOM_MAX_BLOCK_BITS || max_bb % 8 != 0)
        return CRAWL_EINVAL;
    uint64_t m;
    uint32_t k;
    int rc = bloom_size(n, p, &m, &k);
    if (rc < 0)
        return rc;
    if (params->growth > 1.0) /* every layer's block size (bloom_layer_geometry) */
        max_bb = grow_block_bits(m);
    uint64_t nb = (m + max_bb - 1) / max_bb;
    if (nb > BLOOM_MAX_BLOCKS)
        return CRAWL_EINVAL;
    if (params->growth <= 1.0)
        nb = fit_blocks(m, nb);
    uint64_t bytes = params->growth > 1.0 ? max_bb / 8 : block_bytes(m, nb);
    *out = (bloom_geometry_t){
        .m = nb * bytes * 8,
        .k = k,
        .blocks = (uint32_t)nb,
        .block_bits = bytes * 8,
        .seed = params->seed ? params->seed : BLOOM_DEFAULT_SEED,
        .version = BLOOM_FORMAT_VERSION,
    };
    return 0;
}

int bloom_layer_size(uint64_t n0, double p, double growth, uint32_t j, uint64_t *n, double *pj)
{
    if (n0 == 0 || !(p > 0.0 && p < 1.0) || !(growth > 1.0 && growth <= BLOOM_MAX_GROWTH) ||
        j >= BLOOM_MAX_LAYERS)
        return CRAWL_EINVAL;
    double nd = ceil((double)n0 * pow(growth, (double)j));
    if (!(nd <= (double)BLOOM_MAX_CAPACITY * 1000.0))
        return CRAWL_EINVAL;
    *n = (uint64_t)nd;
    *pj = p * (1.0 - BLOOM_TIGHTENING) * pow(BLOOM_TIGHTENING, (double)j);
    return 0;
}

bloom_hash_t bloom_hash_item(const bloom_t *b, const char *item, size_t len)
{
    XXH128_hash_t h = XXH3_128bits_withSeed(item, len, b->geo.seed);
    return (bloom_hash_t){.lo = h.low64, .hi = h.high64};
}

void bloom_probe_from_hash(const bloom_geometry_t *g, bloom_hash_t h, bloom_probe_t *out)
{
    uint64_t M = g->block_bits;
    out->sel = (uint32_t)(h.hi >> 32);
    out->block = (uint32_t)(((uint64_t)out->sel * (uint64_t)g->blocks) >> 32);
    out->k = g->k;
    uint64_t x = h.lo % M;
    uint64_t y = (h.hi & 0xffffffffu) % M;
    out->bit[0] = x;
    for (uint32_t i = 1; i < g->k; i++) {
        x += y;
        if (x >= M)
            x -= M;
        y += i; /* (y + i) mod M without a division: i < 32 and M >= 8 */
        while (y >= M)
            y -= M;
        out->bit[i] = x;
    }
}

uint64_t bloom_fingerprint(bloom_hash_t h)
{
    uint64_t fp = h.lo ^ (h.hi * 0x9E3779B97F4A7C15ULL);
    return fp ? fp : 1;
}

void bloom_probe(const bloom_t *b, const char *item, size_t len, bloom_probe_t *out)
{
    bloom_probe_from_hash(&b->geo, bloom_hash_item(b, item, len), out);
}

int bloom_block_key(const bloom_t *b, uint32_t block, char *buf, size_t buflen)
{
    int n = snprintf(buf, buflen, "%s:b:%u", b->name, block);
    if (n < 0 || (size_t)n >= buflen)
        return CRAWL_EINVAL;
    return n;
}

const bloom_geometry_t *bloom_geometry(const bloom_t *b)
{
    return &b->geo;
}

uint64_t bloom_capacity(const bloom_t *b)
{
    return b->capacity;
}

const char *bloom_name(const bloom_t *b)
{
    return b->name;
}

const char *bloom_errmsg(const bloom_t *b)
{
    return b->errmsg;
}

int bloom_fail(bloom_t *b, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->errmsg, sizeof b->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int bloom_fail_io(bloom_t *b)
{
    redisContext *c = b->rc;
    return bloom_fail(b, CRAWL_EREDIS, "Redis connection failed: %s",
                      c->err ? c->errstr : "no reply");
}
