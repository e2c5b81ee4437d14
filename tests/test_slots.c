/*
 * test_slots.c -- the process's budget of transfers in flight: --concurrency
 * split over the threads (config_thread_slots), whose shares the engine
 * hands each worker thread and the robots gate sizes its cache from.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "config.h"

/* --concurrency is the process's budget: the threads' shares add up to it
 * (none below one), and differ by at most one. */
Test(config, concurrency_is_split_over_threads)
{
    static const struct {
        uint32_t conc, threads;
    } CASES[] = {{1000, 2}, {1001, 2}, {7, 3}, {1, 1}, {2, 4}, {100000, 256}, {5, 0}};
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        uint32_t c = CASES[i].conc, t = CASES[i].threads, sum = 0, lo = UINT32_MAX, hi = 0;
        for (uint32_t k = 0; k < (t ? t : 1); k++) {
            uint32_t n = config_thread_slots(c, t, k);
            sum += n;
            lo = n < lo ? n : lo;
            hi = n > hi ? n : hi;
        }
        uint32_t want = c > (t ? t : 1) ? c : (t ? t : 1); /* at least one a thread */
        cr_expect_eq(sum, want, "--concurrency %u over %u threads: shares add up to %u, not %u", c,
                     t, sum, want);
        cr_expect_leq(hi - lo, 1, "--concurrency %u over %u threads: shares %u..%u", c, t, lo, hi);
    }
}
