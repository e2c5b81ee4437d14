/*
 * bloom_fill.c -- how full a filter is: its false-positive rate after n
 * items, its fill against the capacity it was made for, and the message of
 * a full filter.
 *
 * DESIGN: pure functions over a geometry and a count; no Redis access.  The
 * count is the caller's (a crawl's counters: the seeds and new links its
 * scripts added), not BITCOUNT: reading 2.4 bytes a URL of bits at every
 * heartbeat would cost Redis far more than the answer is worth, and the
 * count is exact up to forced re-seeds (counted again, so a crawl errs on
 * the side of stopping early).  The rate is the textbook estimate for k
 * independent positions over m bits, (1 - e^(-k n / m))^k; blocks make the
 * real rate a little higher (bloom_info's est_fp_rate reads the bits).
 */
#include <math.h>
#include <stdio.h>

#include "bloom.h"

double bloom_fp_estimate(const bloom_geometry_t *g, uint64_t n)
{
    if (!g || g->m == 0 || g->k == 0 || n == 0)
        return 0.0;
    double k = (double)g->k;
    return pow(1.0 - exp(-k * (double)n / (double)g->m), k);
}

void bloom_fill_of(const bloom_geometry_t *g, uint64_t capacity, uint64_t added, bloom_fill_t *out)
{
    out->added = added;
    out->capacity = capacity;
    out->fill = capacity ? (double)added / (double)capacity : 0.0;
    out->fp_rate = bloom_fp_estimate(g, added);
    out->full = capacity > 0 && added >= capacity;
}

uint64_t bloom_suggest_capacity(uint64_t added, uint64_t capacity)
{
    uint64_t base = added > capacity ? added : capacity;
    if (base > BLOOM_MAX_CAPACITY / 10)
        return BLOOM_MAX_CAPACITY;
    uint64_t want = base * 10;
    if (want == 0)
        want = 1;
    static const uint64_t steps[] = {1, 2, 5};
    for (uint64_t p = 1; p <= BLOOM_MAX_CAPACITY; p *= 10)
        for (int i = 0; i < 3; i++)
            if (steps[i] * p >= want)
                return steps[i] * p;
    return BLOOM_MAX_CAPACITY;
}

int bloom_full_message(const bloom_fill_t *f, uint64_t more, char *buf, size_t buflen)
{
    char head[160];
    if (more)
        snprintf(head, sizeof head, "the visited set cannot take %llu more URLs",
                 (unsigned long long)more);
    else
        snprintf(head, sizeof head, "the visited set is full");
    return snprintf(buf, buflen,
                    "%s: %llu URLs added, capacity %llu, false-positive rate now %.3g; links are "
                    "no longer told apart from URLs already seen (new URLs would be dropped as "
                    "seen): start the crawl again (a new --crawl name, or after `crawler "
                    "reset`) with a larger --bloom-capacity (the crawl's filter cannot grow), "
                    "e.g. --bloom-capacity %llu",
                    head, (unsigned long long)f->added, (unsigned long long)f->capacity, f->fp_rate,
                    (unsigned long long)bloom_suggest_capacity(f->added + more, f->capacity));
}
