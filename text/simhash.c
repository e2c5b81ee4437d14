/*
 * simhash.c -- a 64-bit SimHash of a text, and near-duplicate groups over
 * many SimHashes.
 *
 * DESIGN
 * SimHash (Charikar): every feature of the text -- a shingle of two
 * consecutive words, each word hashed 8 bytes at a time through splitmix64's
 * finalizer, the pair mixed again -- adds +1 or -1 to 64 counters,
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

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A 64-bit finalizer (splitmix64's): every input bit moves every output
 * bit with probability about one half. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The votes: byte k of acc[j] counts the set bits k of byte j of the
 * hashes (8-bit counters, emptied into cnt every 255 votes). */
typedef struct votes {
    uint32_t cnt[64];
    uint32_t n, pending;
} votes_t;

/* spread[x]: bit k of x as byte k. */
static uint64_t spread[256];
static pthread_once_t sonce = PTHREAD_ONCE_INIT;

static void build_spread(void)
{
    for (unsigned x = 0; x < 256; x++)
        for (int k = 0; k < 8; k++)
            spread[x] |= (uint64_t)((x >> k) & 1) << (8 * k);
}

static void drain(votes_t *v, uint64_t *acc)
{
    for (int j = 0; j < 8; j++) {
        for (int k = 0; k < 8; k++)
            v->cnt[8 * j + k] += (uint32_t)(acc[j] >> (8 * k)) & 0xFF;
        acc[j] = 0;
    }
    v->pending = 0;
}

/* Bytes of words: ASCII letters and digits, and every non-ASCII byte. */
#define R10(c)                                                                                     \
    [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, [c + 4] = 1, [c + 5] = 1, [c + 6] = 1,         \
    [c + 7] = 1, [c + 8] = 1, [c + 9] = 1
#define R16(c)                                                                                     \
    R10(c), [c + 10] = 1, [c + 11] = 1, [c + 12] = 1, [c + 13] = 1, [c + 14] = 1, [c + 15] = 1
static const unsigned char word_byte[256] = {
    R10('0'),  R10('A'),  R16('A' + 10), R10('a'),  R16('a' + 10), R16(0x80), R16(0x90),
    R16(0xA0), R16(0xB0), R16(0xC0),     R16(0xD0), R16(0xE0),     R16(0xF0),
};
#undef R10
#undef R16

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

/* g with its ASCII capitals lowercased, eight bytes at once. */
static uint64_t lower8(uint64_t g)
{
    uint64_t h7 = g & ~HIGH;
    uint64_t upper = (h7 + ONES * 0x3F) & ~(h7 + ONES * 0x25) & ~g & HIGH;
    return g | (upper >> 2);
}

/* The hash of the word at s[0..n), ASCII lowercased: its bytes eight at a
 * time, each group mixed into the state; end: the end of the text (a
 * group is read whole when eight bytes are there). */
static uint64_t word_hash(const unsigned char *s, size_t n, const unsigned char *end)
{
    uint64_t h = n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t g = 0;
        size_t m = n - i < 8 ? n - i : 8;
        if (end - (s + i) >= 8) {
            memcpy(&g, s + i, 8);
            if (m < 8)
                g &= ((uint64_t)1 << (8 * m)) - 1;
        } else {
            for (size_t k = 0; k < m; k++)
                g |= (uint64_t)s[i + k] << (8 * k);
        }
        h = mix(h ^ lower8(g)) + 0x9e3779b97f4a7c15ULL;
    }
    return h;
}

uint64_t text_simhash_of(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    votes_t v;
    uint64_t acc[8] = {0}, prev = 0, cur = 0, h = 0;
    size_t words = 0;
    pthread_once(&sonce, build_spread);
    memset(&v, 0, sizeof(v));
    for (size_t i = 0; s && i < len;) {
        while (i < len && !word_byte[s[i]])
            i++;
        if (i == len)
            break;
        size_t j = i + 1;
        while (j < len && word_byte[s[j]])
            j++;
        prev = cur;
        cur = word_hash(s + i, j - i, s + len);
        i = j;
        if (++words < 2)
            continue;
        uint64_t f = mix(prev * 0x9e3779b97f4a7c15ULL ^ cur); /* the pair, order kept */
        for (int k = 0; k < 8; k++)
            acc[k] += spread[(f >> (8 * k)) & 0xFF];
        v.n++;
        if (++v.pending == 255)
            drain(&v, acc);
    }
    if (words == 0)
        return 0;
    if (words == 1) {
        for (int k = 0; k < 8; k++)
            acc[k] += spread[(cur >> (8 * k)) & 0xFF];
        v.n++;
    }
    drain(&v, acc);
    /* counter i of the +1/-1 votes: 2 * cnt[i] - n; the bit is set when > 0 */
    for (int i = 0; i < 64; i++)
        if (2 * (uint64_t)v.cnt[i] > v.n)
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
