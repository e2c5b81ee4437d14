/* A local Bloom cache shared by several handles (bloom_shared_cache_new),
 * against a real redis-server: what one handle learnt answers for the
 * others without a round trip, and with threads hammering it at once no
 * item is ever answered "seen" before some handle added it. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "fixtures.h"

#define NAME "share"
#define THREADS 4
#define COMMON 20000 /* items every thread adds */
#define OWN 5000     /* items only one thread adds */

static bloom_t *open_shared(redisContext *c, bloom_cache_t *cache)
{
    bloom_params_t p = {.capacity = 200000, .fp_rate = 1e-9, .shared_cache = cache};
    char err[256] = "";
    int e = 0;
    bloom_t *b = bloom_open(c, NAME, &p, &e, err, sizeof err);
    cr_assert_not_null(b, "bloom_open: %s", err);
    return b;
}

static void item(char *buf, size_t len, const char *kind, int t, int i)
{
    snprintf(buf, len, "http://h%d.test/%s/%d/%d", i % 7, kind, t, i);
}

Test(bloomshare, what_one_handle_added_answers_for_another_without_redis)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    redisContext *c1 = fx_redis_connect(r), *c2 = fx_redis_connect(r);
    cr_assert(c1 && c2, "%s", fx_error());
    bloom_cache_t *cache = bloom_shared_cache_new(1 << 20);
    cr_assert_not_null(cache);
    bloom_t *b1 = open_shared(c1, cache), *b2 = open_shared(c2, cache);

    const char *items[] = {"http://a.test/1", "http://a.test/2", "http://b.test/3"};
    uint8_t is_new[3];
    cr_assert_eq(bloom_add_many(b1, items, NULL, 3, is_new), 0);
    cr_expect(is_new[0] && is_new[1] && is_new[2]);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(bloom_cache_contains(b2, items[i], strlen(items[i])), 1, "%s", items[i]);
    cr_expect_eq(bloom_cache_contains(b2, "http://a.test/4", 15), 0);
    bloom_info_t in1, in2;
    cr_assert_eq(bloom_info(b1, &in1), 0);
    cr_assert_eq(bloom_info(b2, &in2), 0);
    cr_expect_eq(in2.cache_hits, 3, "hits are counted per handle");
    cr_expect_eq(in1.cache_hits, 0);
    cr_expect_eq(in1.cache_entries, in2.cache_entries);
    cr_expect_gt(in2.cache_entries, 0);
    /* the second handle's own add of them is answered from the cache */
    cr_assert_eq(bloom_add_many(b2, items, NULL, 3, is_new), 0);
    cr_expect(!is_new[0] && !is_new[1] && !is_new[2]);

    bloom_close(b1);
    bloom_close(b2);
    bloom_shared_cache_free(cache);
    redisFree(c1);
    redisFree(c2);
    fx_redis_stop(r);
}

typedef struct adder {
    fx_redis_t *r;
    bloom_cache_t *cache;
    int t;
    size_t common_new, own_new;
    int rc;
} adder_t;

/* Adds the common items (in an order of its own), then its own items. */
static void *adder_main(void *arg)
{
    adder_t *a = arg;
    redisContext *c = fx_redis_connect(a->r);
    char err[256] = "";
    int e = 0;
    bloom_params_t p = {.shared_cache = a->cache};
    bloom_t *b = c ? bloom_open(c, NAME, &p, &e, err, sizeof err) : NULL;
    char(*buf)[64] = malloc(256 * sizeof *buf);
    const char *items[256];
    uint8_t is_new[256];
    a->rc = b && buf ? 0 : -1;
    for (int round = 0; a->rc == 0 && round < 2; round++) {
        int total = round == 0 ? COMMON : OWN;
        for (int at = 0; a->rc == 0 && at < total; at += 256) {
            int n = total - at < 256 ? total - at : 256;
            for (int i = 0; i < n; i++) {
                int k = (at + i + a->t * 4999) % total; /* each thread its own order */
                item(buf[i], sizeof buf[i], round == 0 ? "common" : "own", round ? a->t : 0, k);
                items[i] = buf[i];
            }
            a->rc = bloom_add_many(b, items, NULL, (size_t)n, is_new);
            for (int i = 0; i < n; i++)
                *(round == 0 ? &a->common_new : &a->own_new) += is_new[i];
        }
    }
    free(buf);
    bloom_close(b);
    if (c)
        redisFree(c);
    return NULL;
}

Test(bloomshare, threads_sharing_a_cache_see_every_item_new_exactly_once, .timeout = 120)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c, "%s", fx_error());
    bloom_cache_t *cache = bloom_shared_cache_new(64 << 10); /* small: evictions too */
    cr_assert_not_null(cache);
    bloom_t *b = open_shared(c, cache); /* creates the filter */

    adder_t a[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (adder_t){.r = r, .cache = cache, .t = i};
        cr_assert_eq(pthread_create(&th[i], NULL, adder_main, &a[i]), 0);
    }
    size_t common = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(a[i].rc, 0, "thread %d failed", i);
        cr_expect_eq(a[i].own_new, OWN, "thread %d: %zu of its own items new", i, a[i].own_new);
        common += a[i].common_new;
    }
    cr_expect_eq(common, COMMON, "common items new %zu times in all", common);

    bloom_close(b);
    bloom_shared_cache_free(cache);
    redisFree(c);
    fx_redis_stop(r);
}
