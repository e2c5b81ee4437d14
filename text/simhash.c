/*
 * simhash.c -- a 64-bit SimHash of a text, and near-duplicate groups over
 * many SimHashes.
 *
 * DESIGN
 * SimHash (Charikar): every feature of the text -- a shingle of two
 * consecutive words, hashed with XXH3 -- adds +1 or -1 to 64 counters,
 * after the bits of its hash; the SimHash has bit i set where counter i
 * ended positive.  A few edited words change a few shingles, so a few
 * counters may cross zero: near-copies differ in a few bits, unrelated
 * texts in about 32.  How few depends on the length: an edit of one to
 * three words moves a 400-word text by 2.5 bits on average (73% within 3),
 * a 1,000-word one by 1.6 (93%), a 2,000-word one by 1.1 (98%) -- the
 * angle between the two feature sets, inherent to SimHash; word pairs
 * rather than triples, as an edited word changes fewer features, but not
 * single words, which texts of one language share too widely.  Words are runs of ASCII letters and
 * digits and of bytes >= 0x80 (so any script counts), ASCII lowercased. Grouping (text_dup_groups):
 * union-find over the records, the root of a set being its smallest index.  First the records are
 * sorted by SimHash and equal ones joined (so a thousand copies cost a sort, not a million
 * comparisons); the distinct values then go through max_dist + 1 band
 * passes: the 64 bits are cut into max_dist + 1 bands, and two values at
 * most max_dist bits apart agree on at least one band (pigeonhole), so a
 * pass sorts the values by one band and compares only values of equal
 * band, joining those within max_dist.  No pair within the distance is
 * missed; the work is the sorts plus the pairs that share a band value.
 * Memory: 16 bytes a record for the sorted pairs, 8 for the union-find.
 */
#include "text_internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static uint64_t word_hash(const char *s, size_t n)
{
    char low[64];
    uint64_t h = 0;
    size_t k = 0;
    /* lowercase in pieces, hash chained (a word longer than 64 bytes is rare) */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        low[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        if (k == sizeof(low) || i + 1 == n) {
            h = XXH3_64bits_withSeed(low, k, h);
            k = 0;
        }
    }
    return h;
}

static void vote(int32_t *v, uint64_t h)
{
    for (int i = 0; i < 64; i++)
        v[i] += (h >> i) & 1 ? 1 : -1;
}

static int word_byte(unsigned char c)
{
    return text_is_alnum(c) || c >= 0x80;
}

uint64_t text_simhash_of(const char *s, size_t len)
{
    int32_t v[64] = {0};
    uint64_t w[2] = {0, 0}, h = 0;
    size_t words = 0;
    for (size_t i = 0; s && i < len;) {
        size_t j = i;
        if (!word_byte((unsigned char)s[i])) {
            i++;
            continue;
        }
        while (j < len && word_byte((unsigned char)s[j]))
            j++;
        w[0] = w[1];
        w[1] = word_hash(s + i, j - i);
        if (++words >= 2)
            vote(v, XXH3_64bits(w, sizeof(w)));
        i = j;
    }
    if (words == 0)
        return 0;
    if (words == 1)
        vote(v, w[1]);
    for (int i = 0; i < 64; i++)
        if (v[i] > 0)
            h |= (uint64_t)1 << i;
    return h;
}

int text_hamming(uint64_t a, uint64_t b)
{
    return __builtin_popcountll(a ^ b);
}

/* ---- grouping ----------------------------------------------------------- */

typedef struct pair {
    uint64_t key; /* what the pass sorts on */
    uint64_t idx; /* a record */
} pair_t;

static int cmp_pair(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t find(size_t *up, size_t i)
{
    while (up[i] != i) {
        up[i] = up[up[i]];
        i = up[i];
    }
    return i;
}

static void join(size_t *up, size_t a, size_t b)
{
    a = find(up, a);
    b = find(up, b);
    if (a < b)
        up[b] = a;
    else if (b < a)
        up[a] = b;
}

/* One band pass over the m distinct values u[] (key: their SimHash, idx: a
 * record holding it), with the band [shift, shift + bits). */
static void band_pass(const uint64_t *hash, const pair_t *u, size_t m, pair_t *tmp, int shift,
                      int bits, unsigned max_dist, size_t *up)
{
    uint64_t mask = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    for (size_t i = 0; i < m; i++) {
        tmp[i].key = (u[i].key >> shift) & mask;
        tmp[i].idx = u[i].idx;
    }
    qsort(tmp, m, sizeof(*tmp), cmp_pair);
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        while (j < m && tmp[j].key == tmp[i].key)
            j++;
        for (size_t a = i; a < j; a++)
            for (size_t b = a + 1; b < j; b++)
                if ((unsigned)text_hamming(hash[tmp[a].idx], hash[tmp[b].idx]) <= max_dist)
                    join(up, tmp[a].idx, tmp[b].idx);
        i = j;
    }
}

int text_dup_groups(const uint64_t *hash, size_t n, unsigned max_dist, size_t *group)
{
    pair_t *p, *tmp;
    size_t *up, m = 0;
    unsigned bands = max_dist + 1;
    if ((n && (!hash || !group)) || max_dist > TEXT_MAX_DUP_DISTANCE)
        return CRAWL_EINVAL;
    if (n == 0)
        return 0;
    p = malloc(n * sizeof(*p));
    tmp = malloc(n * sizeof(*tmp));
    up = malloc(n * sizeof(*up));
    if (!p || !tmp || !up) {
        free(p);
        free(tmp);
        free(up);
        return CRAWL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        p[i].key = hash[i];
        p[i].idx = i;
        up[i] = i;
    }
    qsort(p, n, sizeof(*p), cmp_pair);
    for (size_t i = 0; i < n; i++) { /* equal SimHashes: one group, one value */
        if (m > 0 && p[m - 1].key == p[i].key)
            join(up, p[m - 1].idx, p[i].idx);
        else
            p[m++] = p[i];
    }
    for (unsigned b = 0, shift = 0; b < bands; b++) {
        int bits = (int)(64 / bands) + (b < 64 % bands ? 1 : 0);
        band_pass(hash, p, m, tmp, (int)shift, bits, max_dist, up);
        shift += (unsigned)bits;
    }
    for (size_t i = 0; i < n; i++)
        group[i] = find(up, i);
    free(p);
    free(tmp);
    free(up);
    return 0;
}
