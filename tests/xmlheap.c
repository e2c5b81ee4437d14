/*
 * xmlheap.c -- libxml2's heap, counted (see xmlheap.h).
 *
 * DESIGN: four wrappers around malloc/realloc/free/strdup add or subtract
 * malloc_usable_size() of each block to one live count and keep its peak.
 */
#include "xmlheap.h"

#include <libxml/xmlmemory.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static long long live_bytes, peak_bytes;

static void account(long long d)
{
    live_bytes += d;
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
}

static void *m_malloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        account((long long)malloc_usable_size(p));
    return p;
}

static void *m_realloc(void *q, size_t n)
{
    long long old = q ? (long long)malloc_usable_size(q) : 0;
    void *p = realloc(q, n);
    if (p)
        account((long long)malloc_usable_size(p) - old);
    return p;
}

static void m_free(void *p)
{
    if (p)
        account(-(long long)malloc_usable_size(p));
    free(p);
}

static char *m_strdup(const char *s)
{
    char *p = strdup(s);
    if (p)
        account((long long)malloc_usable_size(p));
    return p;
}

int xmlheap_install(void)
{
    if (xmlMemSetup(m_free, m_malloc, m_realloc, m_strdup) != 0)
        return -1;
    live_bytes = peak_bytes = 0;
    return 0;
}

long long xmlheap_live(void)
{
    return live_bytes;
}

long long xmlheap_peak(void)
{
    return peak_bytes;
}

void xmlheap_reset_peak(void)
{
    peak_bytes = live_bytes;
}
