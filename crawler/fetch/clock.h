/*
 * clock.h -- the crawler's two clocks, in milliseconds: monotonic (due
 * times, timeouts, durations) and wall (timestamps in the output records).
 * Thread-safe; header only.
 */
#ifndef CRAWLER_CLOCK_H
#define CRAWLER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds on the monotonic clock (arbitrary origin). */
static inline uint64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Milliseconds since the Unix epoch. */
static inline uint64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
