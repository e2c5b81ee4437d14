/*
 * policy_internal.h -- what the robots.txt files of policy/ share, not part
 * of any public contract: the rule-set representation (robots.c builds and
 * matches it, robots_parse.c fills it from robots.txt text, robots_serial.c
 * from its serialized form) and the helpers all three use.
 */
#ifndef POLICY_INTERNAL_H
#define POLICY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "robots.h"

/* A byte string in a pool: a rule pattern or a sitemap URL. */
struct rule {
    const char *p; /* pool + off, set once the pool stops moving; NUL-terminated */
    uint32_t off;  /* offset in the pool */
    uint32_t len;  /* octets (for a rule, also its priority) */
    uint32_t lit;  /* rule: literal prefix (octets before the first '*' or final
                      '$'); sitemap: FNV-1a of the URL, for duplicate checks */
    uint32_t line; /* rule: its line in the robots.txt (1-based), 0 unknown */
    uint8_t allow; /* rule: 1 allow, 0 disallow */
};

/* A growable list of strings kept back to back in one pool. */
struct strv {
    struct rule *v;
    size_t n, cap;
    char *pool;
    size_t plen, pcap;
};

/* The rules of one candidate group while parsing (or deserializing). */
struct group {
    struct strv rules;
    uint32_t delay_ms; /* largest Crawl-delay seen, 0 none */
    int seen;          /* a user-agent line selected this group */
};

struct robots {
    struct strv rules; /* priority order */
    struct strv maps;  /* sitemap URLs, file order */
    uint32_t *index;   /* NULL, or slot starts [NSLOT + 1] then rule numbers (robots.c) */
    uint32_t delay_ms;
};

/* ASCII-only character classes (no locale); c is an unsigned char value. */
#define is_ws(c) ((c) == ' ' || (c) == '\t' || (c) == '\v' || (c) == '\f')
#define is_alpha(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define is_digit(c) ((c) >= '0' && (c) <= '9')
#define lower(c) ((c) >= 'A' && (c) <= 'Z' ? (c) - 'A' + 'a' : (c))

/* FNV-1a 32 of buf[0..n): index buckets, sitemap duplicate checks, the
 * serialized checksum. */
static inline uint32_t robots_fnv1a(const void *buf, size_t n)
{
    const unsigned char *p = buf;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/* ---- robots.c ----------------------------------------------------------- */

/* Returns p grown to hold need (>= 1) elements of elem bytes (*cap updated),
 * or NULL (p untouched, still owned by the caller). */
void *robots_grow(void *p, size_t *cap, size_t need, size_t elem);

/* Writes the normalized form of in[0..n) to out (room for 3n bytes) and
 * returns its length.  %XX of an unreserved octet -> the octet; other valid
 * %xx -> %XX; raw octets <= 0x20, >= 0x7f and a '%' not starting a valid
 * escape -> %XX; everything else unchanged.  Patterns and paths both go
 * through it. */
size_t robots_norm(const char *in, size_t n, char *out);

/* Appends p[0..n) (n >= 1) and a NUL to l; lit and allow as in struct rule.
 * 0 or CRAWL_ENOMEM (l unchanged). */
int robots_strv_add(struct strv *l, const char *p, size_t n, uint32_t lit, int allow);
/* Appends URL u[0..n) to m unless already present (*dup set) or m holds
 * ROBOTS_MAX_SITEMAPS already.  0 or CRAWL_ENOMEM. */
int robots_maps_add(struct strv *m, const char *u, size_t n, int *dup);
/* Frees l's memory and empties it. */
void robots_strv_free(struct strv *l);

/* Priority order of rules (qsort comparator; p must be set): longer first,
 * allow before disallow, then bytes.  0 only for exact duplicates. */
int robots_cmp_rule(const void *a, const void *b);

/* Moves g's rules and m into a new robots_t (rules sorted, exact duplicates
 * removed keeping the one of the lowest line, index built).  NULL when out of memory.  The caller
 * frees g->rules and m with robots_strv_free() afterwards either way (on success they are left
 * empty). */
robots_t *robots_build(struct group *g, struct strv *m);

#endif
