/*
 * urlset.c -- a set of URLs by 64-bit hash (truth.h): open addressing,
 * linear probing, doubled at 1/2 full.  The URL strings are not kept: two
 * URLs of one hash (odds ~n^2/2^65) would be taken for one.
 */
#include <stdlib.h>
#include <string.h>

#include "truth.h"

struct urlset {
    url_entry_t *t;
    size_t cap, n;
};

uint64_t urlset_key(const char *url, size_t len)
{
    uint64_t h = 1469598103934665603ULL, g = 0x84222325cbf29ce4ULL;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)url[i]) * 1099511628211ULL;
        g = (g ^ (unsigned char)url[i]) * 0x100000001b3ULL + (g >> 29);
    }
    h ^= g * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 31;
    return h ? h : 1;
}

urlset_t *urlset_new(void)
{
    urlset_t *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->cap = 1 << 16;
    u->t = calloc(u->cap, sizeof *u->t);
    if (!u->t) {
        free(u);
        return NULL;
    }
    return u;
}

void urlset_free(urlset_t *u)
{
    if (!u)
        return;
    free(u->t);
    free(u);
}

size_t urlset_count(const urlset_t *u)
{
    return u->n;
}

static int grow(urlset_t *u)
{
    size_t cap = u->cap * 2;
    url_entry_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < u->cap; i++) {
        if (!u->t[i].key)
            continue;
        size_t j = u->t[i].key & (cap - 1);
        while (t[j].key)
            j = (j + 1) & (cap - 1);
        t[j] = u->t[i];
    }
    free(u->t);
    u->t = t, u->cap = cap;
    return 0;
}

url_entry_t *urlset_get(urlset_t *u, uint64_t key, int create)
{
    if (create && u->n * 2 >= u->cap && grow(u) < 0)
        return NULL;
    size_t j = key & (u->cap - 1);
    while (u->t[j].key && u->t[j].key != key)
        j = (j + 1) & (u->cap - 1);
    if (u->t[j].key)
        return &u->t[j];
    if (!create)
        return NULL;
    u->t[j].key = key;
    u->n++;
    return &u->t[j];
}
