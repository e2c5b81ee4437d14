/*
 * robots_serial.c -- a rule set to bytes and back (robots_serialize(),
 * robots_deserialize(), see robots.h), so that one worker's parse of a
 * host's robots.txt is shared with every other worker through Redis.
 *
 * DESIGN
 * The format is described below.  Deserializing treats the bytes as hostile: every
 * length is checked against what is left and against the ROBOTS_MAX_* limits,
 * rules must come in priority order without duplicates and sitemaps without
 * duplicates (so the rebuilt rule set serializes back to exactly the same
 * bytes), and the checksum must match before anything is read.
 */
#include "robots.h"

#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"

/* The format: "RBT" VERSION, varint delay_ms, varint nrules, per rule varint
 * (len << 1 | allow) + pattern bytes, varint nsitemaps, per sitemap varint
 * len + bytes, then FNV-1a 32 of everything before, little-endian.
 * Varints are unsigned LEB128, minimal, at most 32 bits. */

static size_t put_varint(unsigned char *o, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (unsigned char)v;
    return n;
}

static int get_varint(const unsigned char *p, size_t end, size_t *pos, uint32_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 35 && *pos < end; shift += 7) {
        unsigned char b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (x > UINT32_MAX || (b == 0 && shift > 0))
                return -1; /* too large, or not minimal */
            *v = (uint32_t)x;
            return 0;
        }
    }
    return -1;
}

int robots_serialize(const robots_t *r, char **out, size_t *len)
{
    if (!r || !out || !len)
        return CRAWL_EINVAL;
    size_t cap = 4 + 5 + 5 + 5 + 4;
    for (size_t i = 0; i < r->rules.n; i++)
        cap += 5 + r->rules.v[i].len;
    for (size_t i = 0; i < r->maps.n; i++)
        cap += 5 + r->maps.v[i].len;
    unsigned char *o = malloc(cap);
    if (!o)
        return CRAWL_ENOMEM;
    size_t n = 0;
    o[n++] = 'R';
    o[n++] = 'B';
    o[n++] = 'T';
    o[n++] = ROBOTS_FORMAT_VERSION;
    n += put_varint(o + n, r->delay_ms);
    const struct strv *lists[2] = {&r->rules, &r->maps};
    for (int k = 0; k < 2; k++) {
        n += put_varint(o + n, (uint32_t)lists[k]->n);
        for (size_t i = 0; i < lists[k]->n; i++) {
            const struct rule *it = &lists[k]->v[i];
            n += put_varint(o + n, k == 0 ? it->len << 1 | it->allow : it->len);
            memcpy(o + n, it->p, it->len);
            n += it->len;
        }
    }
    uint32_t h = robots_fnv1a(o, n);
    for (int k = 0; k < 4; k++)
        o[n++] = (unsigned char)(h >> (8 * k));
    *out = (char *)o;
    *len = n;
    return 0;
}

/* Reads list k (0: rules, 1: sitemaps) into l.  Rules must come in
 * priority order, and neither list may hold duplicates. */
static int read_list(const unsigned char *p, size_t end, size_t *pos, int k, struct strv *l)
{
    uint32_t cnt, hdr;
    if (get_varint(p, end, pos, &cnt) || cnt > (k == 0 ? ROBOTS_MAX_RULES : ROBOTS_MAX_SITEMAPS))
        return CRAWL_ECORRUPT;
    for (uint32_t i = 0; i < cnt; i++) {
        if (get_varint(p, end, pos, &hdr))
            return CRAWL_ECORRUPT;
        size_t sl = k == 0 ? hdr >> 1 : hdr;
        if (sl == 0 || sl > end - *pos || (k == 1 && sl > ROBOTS_MAX_SITEMAP_LEN) ||
            memchr(p + *pos, '\0', sl))
            return CRAWL_ECORRUPT;
        const char *str = (const char *)p + *pos;
        struct rule cur = {.p = str, .len = (uint32_t)sl, .allow = hdr & 1}, prev;
        int e, dup = 0;
        if (k == 0 && i > 0) {
            prev = l->v[l->n - 1];
            prev.p = l->pool + prev.off;
            if (robots_cmp_rule(&prev, &cur) >= 0)
                return CRAWL_ECORRUPT; /* out of order or duplicate */
        }
        e = k == 0 ? robots_strv_add(l, str, sl, 0, hdr & 1) : robots_maps_add(l, str, sl, &dup);
        if (e || dup)
            return e ? e : CRAWL_ECORRUPT;
        *pos += sl;
    }
    return 0;
}

robots_t *robots_deserialize(const char *buf, size_t len, int *err)
{
    const unsigned char *p = (const unsigned char *)buf;
    struct group g = {0};
    struct strv m = {0};
    robots_t *r = NULL;
    int e = CRAWL_EINVAL;
    if (!buf)
        goto out;
    e = CRAWL_ECORRUPT;
    if (len < 4 + 3 + 4 || memcmp(p, "RBT", 3) != 0)
        goto out;
    e = CRAWL_EVERSION;
    if (p[3] != ROBOTS_FORMAT_VERSION)
        goto out;
    e = CRAWL_ECORRUPT;
    size_t end = len - 4, pos = 4;
    uint32_t h = (uint32_t)p[end] | (uint32_t)p[end + 1] << 8 | (uint32_t)p[end + 2] << 16 |
                 (uint32_t)p[end + 3] << 24;
    if (h != robots_fnv1a(p, end))
        goto out;
    if (get_varint(p, end, &pos, &g.delay_ms) || g.delay_ms > ROBOTS_MAX_CRAWL_DELAY_MS)
        goto out;
    if ((e = read_list(p, end, &pos, 0, &g.rules)) != 0 ||
        (e = read_list(p, end, &pos, 1, &m)) != 0)
        goto out;
    e = CRAWL_ECORRUPT;
    if (pos != end)
        goto out;
    r = robots_build(&g, &m);
    e = r ? 0 : CRAWL_ENOMEM;
out:
    robots_strv_free(&g.rules);
    robots_strv_free(&m);
    if (err)
        *err = e;
    return r;
}
