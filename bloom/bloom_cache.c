/*
 * bloom_cache.c -- the process-local cache of items known to be in the
 * filter, in front of Redis.
 *
 * DESIGN
 * A fixed table of 64-bit fingerprints (bloom_fingerprint of the item's
 * XXH3-128 hash), in buckets of BLOOM_CACHE_WAYS = 8 (one 64-byte cache
 * line), most recently used first; a new entry pushes out the bucket's last.
 * Memory is fixed at init (cache_bytes rounded down to a power of two of
 * buckets) and never grows.  Only fingerprints of items that Redis confirmed
 * are in the filter get in (bloom_batch.c, bloom_cache_note), and bits are
 * never cleared, so a hit can only mean "seen".  One cache per handle, and
 * handles are single-thread: no locks -- or one shared by several handles
 * (bloom_shared_cache_new), whose slots are then read and written
 * atomically, without the reordering.
 */
#include <stdlib.h>
#include <string.h>

#include "bloom_internal.h"

int bloom_cache_init(bloom_cache_t *c, size_t bytes)
{
    memset(c, 0, sizeof *c);
    if (bytes == SIZE_MAX)
        return 0;
    if (bytes == 0)
        bytes = BLOOM_DEFAULT_CACHE_BYTES;
    size_t bucket = BLOOM_CACHE_WAYS * sizeof(uint64_t);
    size_t nb = 1;
    while (nb * 2 <= bytes / bucket)
        nb *= 2;
    if (bytes < bucket)
        return 0; /* too small to hold a bucket: disabled */
    c->slots = aligned_alloc(bucket, nb * bucket);
    if (!c->slots)
        return CRAWL_ENOMEM;
    memset(c->slots, 0, nb * bucket);
    c->nbuckets = nb;
    return 0;
}

void bloom_cache_free(bloom_cache_t *c)
{
    free(c->slots);
    c->slots = NULL;
    c->nbuckets = 0;
}

static uint64_t *bucket_of(const bloom_cache_t *c, uint64_t fp)
{
    /* the high bits pick the bucket; the whole fingerprint is compared */
    size_t i = (size_t)((fp * 0xD6E8FEB86659FD93ULL) >> 32) & (c->nbuckets - 1);
    return c->slots + i * BLOOM_CACHE_WAYS;
}

void bloom_cache_prefetch(const bloom_cache_t *c, uint64_t fp)
{
    if (c->slots)
        __builtin_prefetch(bucket_of(c, fp), 1);
}

/* Moves way j of bucket s to the front. */
static void to_front(uint64_t *s, int j, uint64_t fp)
{
    memmove(s + 1, s, (size_t)j * sizeof *s);
    s[0] = fp;
}

/* Shared caches: every slot is read and written atomically (relaxed: a
 * slot only ever holds 0 or a fingerprint some handle confirmed, so any
 * value read is valid); a bucket fills from its front (compare-and-swap of
 * its first empty way), and a full one replaces the way fp picks.  No
 * reordering on a hit, so lookups never write. */
static int shared_has(const uint64_t *s, uint64_t fp)
{
    for (int j = 0; j < BLOOM_CACHE_WAYS; j++) {
        uint64_t v = __atomic_load_n(&s[j], __ATOMIC_RELAXED);
        if (v == fp)
            return 1;
        if (v == 0)
            return 0;
    }
    return 0;
}

static void shared_put(uint64_t *s, uint64_t fp)
{
    for (int j = 0; j < BLOOM_CACHE_WAYS; j++) {
        uint64_t v = __atomic_load_n(&s[j], __ATOMIC_RELAXED);
        if (v == fp)
            return;
        if (v == 0) {
            if (__atomic_compare_exchange_n(&s[j], &v, fp, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return;
            if (v == fp) /* another handle put it there first */
                return;
        }
    }
    __atomic_store_n(&s[(fp >> 7) & (BLOOM_CACHE_WAYS - 1)], fp, __ATOMIC_RELAXED);
}

void bloom_cache_clear(bloom_cache_t *c)
{
    if (!c || !c->slots)
        return;
    size_t n = c->nbuckets * BLOOM_CACHE_WAYS;
    if (!c->shared) {
        memset(c->slots, 0, n * sizeof *c->slots);
        return;
    }
    for (size_t i = 0; i < n; i++)
        __atomic_store_n(&c->slots[i], 0, __ATOMIC_RELAXED);
}

bloom_cache_t *bloom_shared_cache_new(size_t bytes)
{
    bloom_cache_t *c = calloc(1, sizeof *c);
    if (!c || bloom_cache_init(c, bytes) < 0) {
        free(c);
        return NULL;
    }
    c->shared = 1;
    return c;
}

void bloom_shared_cache_free(bloom_cache_t *c)
{
    if (!c)
        return;
    bloom_cache_free(c);
    free(c);
}

int bloom_cache_has(bloom_cache_t *c, uint64_t fp)
{
    if (!c->slots)
        return 0;
    if (c->shared)
        return shared_has(bucket_of(c, fp), fp);
    uint64_t *s = bucket_of(c, fp);
    for (int j = 0; j < BLOOM_CACHE_WAYS; j++) {
        if (s[j] == fp) {
            to_front(s, j, fp);
            return 1;
        }
        if (s[j] == 0)
            return 0;
    }
    return 0;
}

void bloom_cache_put(bloom_cache_t *c, uint64_t fp)
{
    if (!c->slots)
        return;
    if (c->shared) {
        shared_put(bucket_of(c, fp), fp);
        return;
    }
    uint64_t *s = bucket_of(c, fp);
    int j = 0;
    while (j < BLOOM_CACHE_WAYS - 1 && s[j] != fp && s[j] != 0)
        j++;
    to_front(s, j, fp); /* j: its old place, the first empty way, or the last */
}
