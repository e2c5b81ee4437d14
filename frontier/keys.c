/*
 * keys.c -- key names of a crawl, built from keys.def (see keys.h).
 *
 * DESIGN: keys.def is expanded once into a table of {suffix, type, family};
 * every builder checks the crawl name and lengths and writes
 * prefix + suffix [+ member].  A URL's shard, whose prefix its keys take
 * (fr_shard_find: its registered domain's hash), is computed here too.  No
 * Redis access, no state: thread-safe.
 */
#include "keys.h"

#include <arpa/inet.h>
#include <libpsl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "frontier_internal.h"
#include "parser.h"

static const struct {
    const char *suffix, *type;
    size_t len;
    int family;
} table[FR_K_COUNT] = {
#define FR_KEY(id, s, t) [FR_K_##id] = {s, t, sizeof s - 1, 0},
#define FR_KEYS(id, s, t) [FR_K_##id] = {s, t, sizeof s - 1, 1},
#include "keys.def"
#undef FR_KEY
#undef FR_KEYS
};

/* Every suffix fits FR_SUFFIX_MAX, so FR_KEY_MAX holds any single key. */
#define FR_KEY(id, s, t) _Static_assert(sizeof s <= FR_SUFFIX_MAX, "suffix too long: " s);
#define FR_KEYS(id, s, t) FR_KEY(id, s, t)
#include "keys.def"
#undef FR_KEY
#undef FR_KEYS
_Static_assert(FR_KEY_MAX <= FRONTIER_MAX_BLOOM_NAME, "frontier.h's bloom name bound too small");

const char *fr_key_suffix(fr_key_id_t id)
{
    return (unsigned)id < FR_K_COUNT ? table[id].suffix : NULL;
}

const char *fr_key_type(fr_key_id_t id)
{
    return (unsigned)id < FR_K_COUNT ? table[id].type : NULL;
}

int fr_key_is_family(fr_key_id_t id)
{
    return (unsigned)id < FR_K_COUNT ? table[id].family : -1;
}

static int valid_crawl(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > FRONTIER_MAX_CRAWL_NAME)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

/* Appends len bytes of s at *o in buf (capacity cap, a NUL kept free). */
static int put(char *buf, size_t cap, size_t *o, const char *s, size_t len)
{
    if (cap - *o <= len)
        return -1;
    memcpy(buf + *o, s, len);
    *o += len;
    buf[*o] = '\0';
    return 0;
}

int fr_prefix(const char *crawl, char *buf, size_t buflen)
{
    if (!crawl)
        crawl = FRONTIER_DEFAULT_CRAWL;
    if (!buf || buflen == 0 || !valid_crawl(crawl))
        return CRAWL_EINVAL;
    size_t o = 0;
    if (put(buf, buflen, &o, FR_PREFIX_OPEN, sizeof FR_PREFIX_OPEN - 1) < 0 ||
        put(buf, buflen, &o, crawl, strlen(crawl)) < 0 ||
        put(buf, buflen, &o, FR_PREFIX_CLOSE, sizeof FR_PREFIX_CLOSE - 1) < 0)
        return CRAWL_EINVAL;
    return 0;
}

int fr_prefix_shard(const char *crawl, unsigned s, char *buf, size_t buflen)
{
    if (s == 0)
        return fr_prefix(crawl, buf, buflen);
    if (!crawl)
        crawl = FRONTIER_DEFAULT_CRAWL;
    char num[16];
    int nl = snprintf(num, sizeof num, FR_SHARD_SEP "%u", s);
    size_t o = 0;
    if (s >= FRONTIER_MAX_SHARDS || !buf || buflen == 0 || !valid_crawl(crawl) ||
        put(buf, buflen, &o, FR_PREFIX_OPEN, sizeof FR_PREFIX_OPEN - 1) < 0 ||
        put(buf, buflen, &o, crawl, strlen(crawl)) < 0 ||
        put(buf, buflen, &o, num, (size_t)nl) < 0 ||
        put(buf, buflen, &o, FR_PREFIX_CLOSE, sizeof FR_PREFIX_CLOSE - 1) < 0)
        return CRAWL_EINVAL;
    return 0;
}

int fr_shard_slot(const char *crawl, unsigned s, int *slot)
{
    char p[FR_PREFIX_MAX];
    if (fr_prefix_shard(crawl, s, p, sizeof p) < 0)
        return CRAWL_EINVAL;
    *slot = rconn_key_slot(p, strlen(p)); /* the prefix holds the shard's hash tag */
    return 0;
}

/* The length of key id with a member of mlen bytes, or -1 if the id or the
 * member/family combination is wrong (a family needs a member, a single key
 * none) or the key would be longer than INT32_MAX. */
static long key_len(const char *prefix, fr_key_id_t id, const char *member, size_t mlen)
{
    if (!prefix || (unsigned)id >= FR_K_COUNT)
        return -1;
    if (table[id].family ? !member : member || mlen)
        return -1;
    size_t n = strlen(prefix) + table[id].len;
    return mlen > (size_t)INT32_MAX - n ? -1 : (long)(n + mlen);
}

int fr_key_build(const char *prefix, fr_key_id_t id, const char *member, size_t mlen, char *buf,
                 size_t buflen)
{
    long n = key_len(prefix, id, member, mlen);
    if (n < 0 || !buf || (size_t)n >= buflen)
        return CRAWL_EINVAL;
    size_t o = 0;
    put(buf, buflen, &o, prefix, strlen(prefix));
    put(buf, buflen, &o, table[id].suffix, table[id].len);
    if (member)
        put(buf, buflen, &o, member, mlen);
    return (int)n;
}

const char *fr_key_arg(rconn_args_t *a, const char *prefix, fr_key_id_t id, const char *member,
                       size_t mlen)
{
    long n = key_len(prefix, id, member, mlen);
    if (n < 0) {
        a->oom = 1;
        return NULL;
    }
    char *p = rconn_arg_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    a->len[a->n - 1] = (size_t)n; /* the argument is the key, without its NUL */
    fr_key_build(prefix, id, member, mlen, p, (size_t)n + 1);
    return p;
}

unsigned fr_shard_of(unsigned n, const char *origin)
{
    unsigned s = 0;
    return fr_shard_find(n, origin, &s) < 0 ? 0 : s;
}

/* The registered domain of host h (modified) into buf. */
static int domain_of(char *h, char *buf, size_t buflen)
{
    struct in_addr a4;
    const char *dom = NULL;
    if (!strchr(h, ':') && !strchr(h, '[') && inet_pton(AF_INET, h, &a4) != 1 && psl_builtin())
        dom = psl_registrable_domain(psl_builtin(), h);
    if (!dom)
        dom = h;
    int n = snprintf(buf, buflen, "%s", dom);
    return n < 0 || (size_t)n >= buflen ? -1 : n;
}

int fr_registered_domain(const char *origin, char *buf, size_t buflen)
{
    char h[FR_ORIGIN_MAX];
    int len = origin ? parser_url_host(origin, h, sizeof h) : -1;
    return len <= 0 ? -1 : domain_of(h, buf, buflen);
}

int fr_domain_key(const char *origin, char *buf, size_t buflen)
{
    char h[FR_ORIGIN_MAX];
    int len = origin ? parser_url_host(origin, h, sizeof h) : -1;
    if (len > 1 && h[len - 1] == '.') /* "example.com." is example.com's server */
        h[--len] = '\0';
    return len <= 0 ? -1 : domain_of(h, buf, buflen);
}

int fr_shard_find(unsigned n, const char *origin, unsigned *out)
{
    *out = 0;
    if (n <= 1)
        return 0;
    char dom[FR_ORIGIN_MAX];
    int len = fr_registered_domain(origin, dom, sizeof dom);
    if (len <= 0)
        return -1;
    *out = (unsigned)(XXH64(dom, (size_t)len, 0) % n);
    return 0;
}
