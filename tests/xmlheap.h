/*
 * xmlheap.h -- counts the bytes libxml2 holds on the heap, for the tests
 * and the benchmark that check the link extractor's memory stays bounded
 * (tests/test_parser.c, bench/bench_parser.c).
 *
 * libxml2's allocations are routed through counting wrappers installed with
 * xmlMemSetup.  Sizes are malloc_usable_size(), so a block allocated before
 * the wrappers were installed can still be freed through them (the count
 * then goes below what it would be, never wrong afterwards); this works
 * under ASan too.  Counters are plain process globals: one thread of
 * libxml2 use at a time.
 */
#ifndef TESTS_XMLHEAP_H
#define TESTS_XMLHEAP_H

/* Installs the counting wrappers and sets both counters to 0.  Returns 0,
 * or -1 when libxml2 refuses them. */
int xmlheap_install(void);

/* Bytes libxml2 holds now, counted since xmlheap_install(). */
long long xmlheap_live(void);
/* The highest xmlheap_live() since xmlheap_install() or the last
 * xmlheap_reset_peak(). */
long long xmlheap_peak(void);
/* Restarts the peak at the current live count. */
void xmlheap_reset_peak(void);

#endif
