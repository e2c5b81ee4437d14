/*
 * offer.c -- offering links (or seeds) to the crawl: each link's Bloom probe
 * computed on the client, and the "link section" of arguments that the
 * scripts' one offer loop (frontier/lua/offer.lua) reads.
 *
 * DESIGN: the client computes each link's Bloom probe (block + k bit
 * offsets, bloom_probe) and passes the block keys as KEYS and, per link, its
 * queue entry (entry.c), its origin and its offsets as ARGV (the layout
 * is written down above fr_offer_section).  The links of one block are sent
 * together (group_by_block), so the script sets the bits of a whole run with
 * one BITFIELD (at most 1024 bits per call) and queues an entry iff one of
 * its old bits was 0, exactly as bloom_add_many decides, so the same filter
 * serves both.  When Redis has the crawler module (bloom/redis_module.c), a
 * run's offsets go instead as one binary argument to its CRAWLER.BFADD
 * (same bits, same answers, without BITFIELD's cost of about 4.8k Redis
 * instructions per bit).  With a page limit (max_pages, max_pages_per_host)
 * the script sets the bits of one link at a time, after checking the limits.
 * Each link's origin, the name of its queue, is computed here with the
 * project's one definition, parser_url_origin (userinfo is never part of
 * it), and sent: the scripts never derive one from a URL.  Links the
 * process-local Bloom cache already knows are not sent (counted as seen);
 * the ones that reached the filter are noted in the cache afterwards
 * (fr_offer_done).  A link holding a space, tab or newline is no URL and
 * would break an entry apart, and one without an origin has no queue: both
 * are skipped (counted).
 */
#include "frontier_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <hiredis/hiredis.h>
#include <string.h>

#include "parser.h"

void fr_offer_free(fr_offer_t *o)
{
    free(o->v);
    free(o->bits);
    free(o->lblk);
    free(o->orig);
    memset(o, 0, sizeof *o);
}

static uint32_t block_hash(uint64_t key, size_t cap)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (uint32_t)(cap - 1);
}

/* Rebuilds the hash of bl's places, cap twice its entries at least. */
static int rehash(fr_blocks_t *bl, size_t cap)
{
    uint32_t *ht = calloc(cap, sizeof *ht);
    if (!ht)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < bl->n; i++) {
        uint32_t h = block_hash(bl->v[i], cap);
        while (ht[h])
            h = (h + 1) & (uint32_t)(cap - 1);
        ht[h] = (uint32_t)i + 1;
    }
    free(bl->ht);
    bl->ht = ht;
    bl->hcap = cap;
    return 0;
}

/* The place of (layer, block) in bl, added if new. */
static int block_index(fr_blocks_t *bl, uint32_t layer, uint32_t block, uint32_t *idx)
{
    uint64_t key = (uint64_t)layer << 32 | block;
    if (bl->ht) {
        uint32_t h = block_hash(key, bl->hcap);
        for (; bl->ht[h]; h = (h + 1) & (uint32_t)(bl->hcap - 1))
            if (bl->v[bl->ht[h] - 1] == key) {
                *idx = bl->ht[h] - 1;
                return 0;
            }
    } else {
        for (size_t i = 0; i < bl->n; i++)
            if (bl->v[i] == key) {
                *idx = (uint32_t)i;
                return 0;
            }
    }
    if (bl->n == bl->cap) {
        size_t cap = bl->cap ? 2 * bl->cap : 4;
        uint64_t *v = realloc(bl->v, cap * sizeof *v);
        if (!v)
            return CRAWL_ENOMEM;
        bl->v = v;
        bl->cap = cap;
    }
    bl->v[bl->n] = key;
    *idx = (uint32_t)bl->n++;
    if (bl->n >= 32 && 2 * bl->n > bl->hcap) /* beyond 32 keys a hash, at most half full */
        return rehash(bl, bl->hcap ? 2 * bl->hcap : 128);
    if (bl->ht) {
        uint32_t h = block_hash(key, bl->hcap);
        while (bl->ht[h])
            h = (h + 1) & (uint32_t)(bl->hcap - 1);
        bl->ht[h] = *idx + 1;
    }
    return 0;
}

void fr_blocks_free(fr_blocks_t *bl)
{
    free(bl->v);
    free(bl->ht);
    memset(bl, 0, sizeof *bl);
}

/* Reorders the links so that the links of one block are contiguous (stable:
 * blocks in order of first appearance); the script sets the bits of a
 * block's run with one call. */
static int group_by_block(fr_offer_t *o)
{
    size_t runs = 0, distinct = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        runs += i == 0 || o->v[i].block != o->v[i - 1].block;
        int first = 1;
        for (size_t j = 0; first && j < i; j++)
            first = o->v[j].block != o->v[i].block;
        distinct += first;
        if (runs > distinct)
            break;
    }
    if (runs <= distinct)
        return 0;
    fr_link_t *v = malloc(o->nsent * sizeof *v);
    uint8_t *done = calloc(o->nsent, 1);
    if (!v || !done) {
        free(v), free(done);
        return CRAWL_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        if (done[i])
            continue;
        for (size_t j = i; j < o->nsent; j++)
            if (!done[j] && o->v[j].block == o->v[i].block) {
                v[m++] = o->v[j];
                done[j] = 1;
            }
    }
    free(o->v), free(done);
    o->v = v;
    return 0;
}

/* Appends the origin of url (parser_url_origin: "scheme://host[:port]",
 * never its userinfo) to o's origins; 0, CRAWL_ENOMEM, or
 * CRAWL_EINVAL when the URL has none. */
static int add_origin(fr_offer_t *o, const char *url, fr_link_t *k)
{
    char buf[FR_ORIGIN_MAX];
    int len = parser_url_origin(url, buf, sizeof buf);
    if (len <= 0)
        return CRAWL_EINVAL;
    if (o->olen + (size_t)len > o->ocap) {
        size_t cap = o->ocap ? 2 * o->ocap : 1024;
        while (cap < o->olen + (size_t)len)
            cap *= 2;
        char *p = realloc(o->orig, cap);
        if (!p)
            return CRAWL_ENOMEM;
        o->orig = p;
        o->ocap = cap;
    }
    memcpy(o->orig + o->olen, buf, (size_t)len);
    k->oat = (uint32_t)o->olen;
    k->olen = (uint32_t)len;
    o->olen += (size_t)len;
    return 0;
}

/* Layers a link names its blocks in (offer.lua: LAYERS): the T the handle
 * knows and the next ones, not published yet, while their capacity is under
 * LOOKAHEAD_ITEMS (up to LOOKAHEAD_LAYERS): a call built before as many
 * publications still adds its links exactly.  Small layers fill in a few
 * calls; a large one takes far longer than any call is in flight. */
#define LOOKAHEAD_ITEMS 65536
#define LOOKAHEAD_LAYERS 4
static uint32_t layers_named(bloom_t *bf)
{
    uint32_t T = bloom_layers(bf), n = T + 1;
    uint64_t cap;
    double p;
    while (n < T + 1 + LOOKAHEAD_LAYERS && n < BLOOM_MAX_LAYERS &&
           bloom_layer_size(bloom_capacity(bf), bloom_fp_target(bf), bloom_growth(bf), n - 1, &cap,
                            &p) == 0 &&
           cap < LOOKAHEAD_ITEMS)
        n++;
    return n;
}

/* Probes link l (len bytes) of a page of n into k: its block (added to
 * bl) and its bit offsets (into o->bits, made for n links at the first).
 * A filter that grows (bloom.h, "layers"): the offsets are the same in
 * every layer; its block in the newest layer groups the runs, and its
 * blocks in layers 0..N-1 (layers_named: the next ones too) go to o->lblk.
 * 0, CRAWL_ENOMEM, CRAWL_EBLOOM. */
static int probe(bloom_t *bf, fr_offer_t *o, const char *l, size_t len, size_t n, fr_blocks_t *bl,
                 fr_link_t *k)
{
    bloom_probe_t pr;
    bloom_probe(bf, l, len, &pr);
    if (pr.k == 0 || pr.k > BLOOM_MAX_K || (o->k && pr.k != o->k))
        return CRAWL_EBLOOM;
    uint32_t T = bloom_growth(bf) > 1.0 ? bloom_layers(bf) : 0;
    if (!o->bits) { /* the first link: the offer's layers named, once */
        o->nl = T ? layers_named(bf) : 0;
        if (!(o->bits = malloc(n * pr.k * sizeof *o->bits)))
            return CRAWL_ENOMEM;
        if (T && !(o->lblk = malloc(n * o->nl * sizeof *o->lblk)))
            return CRAWL_ENOMEM;
        o->k = pr.k;
    }
    k->bat = (uint32_t)(o->nsent * pr.k);
    for (uint32_t j = 0; j < pr.k; j++)
        o->bits[k->bat + j] = (uint32_t)pr.bit[j]; /* < 2^32: BLOOM_MAX_BLOCK_BITS */
    if (!T)
        return block_index(bl, 0, pr.block, &k->block) < 0 ? CRAWL_ENOMEM : 0;
    k->lat = (uint32_t)(o->nsent * o->nl);
    for (uint32_t j = 0; j < o->nl; j++)
        if (block_index(bl, j, bloom_layer_block(bf, j, &pr), &o->lblk[k->lat + j]) < 0)
            return CRAWL_ENOMEM;
    k->block = o->lblk[k->lat + T - 1];
    return 0;
}

/* The visited-set key of URL l (len bytes): parser_url_key's (escapes of
 * unreserved characters decoded, ...), which is l itself when l holds no
 * '%' (the key changes only escapes).  NULL when not a URL (*rc
 * CRAWL_EBADURL) or out of memory (CRAWL_ENOMEM); *tmp the copy to free
 * (NULL for l itself). */
static const char *link_key(const char *l, size_t len, size_t *klen, char **tmp, int *rc)
{
    *tmp = NULL;
    *klen = len;
    *rc = 0;
    if (!memchr(l, '%', len))
        return l;
    if ((*rc = parser_url_key(l, tmp)) < 0)
        return NULL;
    *klen = strlen(*tmp);
    return *tmp;
}

int fr_offer_prepare(frontier_t *f, unsigned s, const char *const *links, size_t n, int use_cache,
                     int skip_all, fr_blocks_t *bl, fr_offer_t *o)
{
    bloom_t *bf = f->shard[s].bloom;
    memset(o, 0, sizeof *o);
    if (n == 0)
        return 0;
    if (skip_all) {
        o->skipped = n;
        return 0;
    }
    if (n > UINT32_MAX / BLOOM_MAX_K) /* a link's idx and bit offsets' place are uint32 */
        return CRAWL_EINVAL;
    if (!(o->v = malloc(n * sizeof *o->v)))
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *l = links[i];
        size_t len = l ? strlen(l) : 0;
        if (len == 0 || strpbrk(l, " \t\n")) { /* not a URL; would break an entry */
            o->skipped++;
            continue;
        }
        size_t kl;
        char *tmp;
        int krc;
        const char *key = link_key(l, len, &kl, &tmp, &krc);
        if (krc == CRAWL_ENOMEM) {
            fr_offer_free(o);
            return krc;
        }
        if (!key) { /* no "scheme://authority/": not a URL */
            o->skipped++;
            continue;
        }
        if (use_cache && bloom_cache_contains(bf, key, kl)) {
            free(tmp);
            o->cached++;
            continue;
        }
        fr_link_t *k = &o->v[o->nsent];
        int orc = len < UINT32_MAX ? add_origin(o, l, k) : CRAWL_EINVAL;
        if (orc == CRAWL_EINVAL) { /* no origin: no queue to put it in */
            free(tmp);
            o->skipped++;
            continue;
        }
        int rc = orc < 0 ? orc : probe(bf, o, key, kl, n, bl, k);
        free(tmp);
        if (rc < 0) {
            fr_offer_free(o);
            return rc;
        }
        k->idx = (uint32_t)i;
        o->nsent++;
    }
    return group_by_block(o);
}

int fr_offer_keys(frontier_t *f, unsigned s, const fr_blocks_t *bl, rconn_args_t *a)
{
    bloom_t *bf = f->shard[s].bloom;
    uint32_t T = bloom_growth(bf) > 1.0 ? bloom_layers(bf) : 0;
    /* FCALL fn numkeys guard (fr_fcall); a filter that grows: its layer 0
     * meta and the next layer's after the blocks (fr_offer_k) */
    rconn_arg_set_u64(a, 2, 2 + bl->n + (T ? 2 : 0));
    rconn_arg_cstr(a, f->shard[s].ready_key);
    char key[FR_KEY_MAX + 64];
    for (size_t i = 0; i < bl->n; i++) {
        int len = bloom_layer_block_key(bf, (uint32_t)(bl->v[i] >> 32), (uint32_t)bl->v[i], key,
                                        sizeof key);
        if (len <= 0)
            return CRAWL_EBLOOM;
        rconn_arg_copy(a, key, (size_t)len);
    }
    for (uint32_t j = 0; T && j <= T; j += T) {
        int len = bloom_layer_meta_key(bf, j, key, sizeof key);
        if (len <= 0)
            return CRAWL_EBLOOM;
        rconn_arg_copy(a, key, (size_t)len);
    }
    return 0;
}

void fr_offer_k(const frontier_t *f, unsigned s, const fr_offer_t *o, size_t n, size_t nblocks,
                rconn_args_t *a)
{
    uint32_t k = 0;
    for (size_t i = 0; i < n && !k; i++)
        k = o[i].nsent ? o[i].k : 0;
    bloom_t *bf = f->shard[s].bloom;
    if (!k)
        k = bloom_geometry(bf)->k;
    char b[64];
    int len = snprintf(b, sizeof b, "%s%u", f->bits_module ? "-" : "", k);
    if (bloom_growth(bf) > 1.0)
        len += snprintf(b + len, sizeof b - (size_t)len, "/%u/%zu/%u", bloom_layers(bf),
                        3 + nblocks, layers_named(bf));
    rconn_arg_copy(a, b, (size_t)len);
}

void fr_layers_flag(frontier_t *f, unsigned s)
{
    f->shard[s].look = 1;
}

static size_t count_runs(const fr_offer_t *o)
{
    size_t runs = 0;
    for (size_t i = 0; i < o->nsent; i++)
        runs += i == 0 || o->v[i].block != o->v[i - 1].block;
    return runs;
}

size_t fr_offer_span(const frontier_t *f, const fr_offer_t *o)
{
    size_t runs = count_runs(o);
    if (f->bits_module)
        return 1 + 3 * runs + (2 + o->nl) * o->nsent;
    return 1 + 2 * runs + o->nsent * (2 + o->k + o->nl);
}

/* The offsets of links [from, from + cnt) as CRAWLER.BFADD takes them. */
static void run_offsets(const fr_offer_t *o, size_t from, size_t cnt, rconn_args_t *a)
{
    uint32_t k = o->k;
    unsigned char *p = (unsigned char *)rconn_arg_alloc(a, cnt * k * 4);
    for (size_t i = from; p && i < from + cnt; i++)
        for (uint32_t j = 0; j < k; j++, p += 4) {
            uint32_t b = o->bits[o->v[i].bat + j];
            p[0] = (unsigned char)b;
            p[1] = (unsigned char)(b >> 8);
            p[2] = (unsigned char)(b >> 16);
            p[3] = (unsigned char)(b >> 24);
        }
}

/* The domain section of an offering call, read by read_domains in
 * frontier/lua/offer.lua:
 *   budgets        "PAGES:HOSTS:INLINK": max_pages_per_domain,
 *                  max_hosts_per_domain and pages_per_inlink (0: none)
 *   ndomains       pairs that follow: none when PAGES and HOSTS are 0
 *   per distinct origin of the call's links:
 *     origin       "scheme://host[:port]"
 *     domain       its registered domain (fr_registered_domain)
 *   ninlinks       pairs that follow: none unless PAGES and INLINK are > 0
 *   per distinct (domain, linking domain) of the call's links whose page
 *   is of another registered domain:
 *     domain       the link's registered domain
 *     from         its page's
 * The script keeps each domain's admitted pages and hosts in P domains,
 * and the domains that link to it in P inl:<domain> (a HyperLogLog): its
 * page budget is PAGES + INLINK * their count. */

/* FNV-1a of s[0..len). */
static uint64_t fnv(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* A set of strings (open addressing, FNV-1a), for what a call sends once. */
typedef struct strset {
    char **v;
    size_t cap, n;
} strset_t;

static int set_init(strset_t *t, size_t items)
{
    t->cap = 16;
    while (t->cap < 2 * items)
        t->cap *= 2;
    t->n = 0;
    return (t->v = calloc(t->cap, sizeof *t->v)) ? 0 : CRAWL_ENOMEM;
}

/* 1 if s (len bytes) was added, 0 if it was there, < 0 out of memory. */
static int set_add(strset_t *t, const char *s, size_t len)
{
    size_t h = fnv(s, len) & (t->cap - 1);
    while (t->v[h] && !(strlen(t->v[h]) == len && !memcmp(t->v[h], s, len)))
        h = (h + 1) & (t->cap - 1);
    if (t->v[h])
        return 0;
    if (!(t->v[h] = strndup(s, len)))
        return CRAWL_ENOMEM;
    t->n++;
    return 1;
}

static void set_free(strset_t *t)
{
    for (size_t i = 0; t->v && i < t->cap; i++)
        free(t->v[i]);
    free(t->v);
}

/* The registered domain of link k of o (its origin) into dom: its length,
 * or -1. */
static int link_domain(const fr_offer_t *o, const fr_link_t *k, char *dom, size_t len)
{
    char origin[FR_ORIGIN_MAX];
    if (k->olen >= sizeof origin)
        return -1;
    memcpy(origin, o->orig + k->oat, k->olen);
    origin[k->olen] = '\0';
    return fr_domain_key(origin, dom, len);
}

/* The (domain, linking domain) pairs of src's links into pairs, as
 * "DOMAIN\tFROM". */
static int inlink_pairs(const fr_srcs_t *src, strset_t *pairs)
{
    char from[FR_ORIGIN_MAX], dom[FR_ORIGIN_MAX], pair[2 * FR_ORIGIN_MAX], og[FR_ORIGIN_MAX];
    const char *last = NULL;
    int fl = -1, rc = 0;
    for (size_t i = 0; rc >= 0 && i < src->n; i++) {
        const char *u = src->from[i];
        if (!u || !src->link[i])
            continue;
        if (u != last) {
            fl = fr_domain_key(u, from, sizeof from);
            last = u;
        }
        int dl = parser_url_origin(src->link[i], og, sizeof og) > 0
                     ? fr_domain_key(og, dom, sizeof dom)
                     : -1;
        if (fl <= 0 || dl <= 0 || (dl == fl && !memcmp(dom, from, (size_t)dl)))
            continue;
        int pl = snprintf(pair, sizeof pair, "%s\t%s", dom, from);
        if (pl > 0 && (size_t)pl < sizeof pair)
            rc = set_add(pairs, pair, (size_t)pl);
    }
    return rc < 0 ? rc : 0;
}

void fr_offer_domains(const frontier_t *f, const fr_offer_t *o, size_t n, const fr_srcs_t *src,
                      rconn_args_t *a)
{
    const frontier_config_t *c = &f->cfg;
    char b[72];
    snprintf(b, sizeof b, "%llu:%llu:%llu", (unsigned long long)c->max_pages_per_domain,
             (unsigned long long)c->max_hosts_per_domain, (unsigned long long)c->pages_per_inlink);
    rconn_arg_dup(a, b);
    size_t at = a->n, nl = 0;
    rconn_arg_u64(a, 0); /* ndomains, set below */
    int on = c->max_pages_per_domain || c->max_hosts_per_domain;
    for (size_t i = 0; i < n; i++)
        nl += o[i].nsent;
    strset_t origins = {0}, pairs = {0};
    int rc = on ? set_init(&origins, nl) : 0;
    for (size_t i = 0; on && rc >= 0 && i < n; i++)
        for (size_t j = 0; rc >= 0 && j < o[i].nsent; j++) {
            const fr_link_t *k = &o[i].v[j];
            char dom[FR_ORIGIN_MAX];
            if ((rc = set_add(&origins, o[i].orig + k->oat, k->olen)) <= 0)
                continue;
            int dl = link_domain(&o[i], k, dom, sizeof dom);
            if (dl <= 0)
                continue;
            rconn_arg_copy(a, o[i].orig + k->oat, k->olen);
            rconn_arg_copy(a, dom, (size_t)dl);
        }
    rconn_arg_set_u64(a, at, on ? (a->n - at - 1) / 2 : 0);
    at = a->n;
    rconn_arg_u64(a, 0); /* ninlinks, set below */
    if (rc >= 0 && src && src->n && c->max_pages_per_domain && c->pages_per_inlink &&
        (rc = set_init(&pairs, src->n)) == 0 && (rc = inlink_pairs(src, &pairs)) == 0)
        for (size_t i = 0; i < pairs.cap; i++) {
            char *t = pairs.v[i] ? strchr(pairs.v[i], '\t') : NULL;
            if (!t)
                continue;
            rconn_arg_copy(a, pairs.v[i], (size_t)(t - pairs.v[i]));
            rconn_arg_dup(a, t + 1);
        }
    rconn_arg_set_u64(a, at, (a->n - at - 1) / 2);
    if (rc < 0)
        a->oom = 1; /* (the call is not sent: rconn_args) */
    set_free(&origins);
    set_free(&pairs);
}

/* A link section: fr_offer_span(f, o) arguments, read by offer_links in
 * frontier/lua/offer.lua.
 *   nruns                    block runs that follow
 *   per run (links of one Bloom block, contiguous):
 *     block                  its KEYS index (KEYS[1] is the guard, KEYS[2] ready: 3, 4, ...)
 *     n                      links in the run
 *     per link:
 *       entry                its queue entry (entry.c: "D[:0:HOPS]" then the
 *                            URL's path, or the whole URL; "D" left out at 0)
 *                            (a leading "!I!", I its place among the links
 *                            given: ahead of its host's queue, in that order,
 *                            FRONTIER_SEED_FIRST or frontier_done_t.link_first)
 *       origin               its queue's origin "scheme://host[:port]"
 *       offset * k           (BITFIELD layout) its k bit offsets in the block
 *       layer block * N      (a filter that grows, "K/T/M/N" in the call) the
 *                            KEYS index of its block in layers 0..N-1 (T..:
 *                            the next ones; its offsets are the same in each)
 *     offsets                (module layout, k < 0 in the call) one argument
 *                            after the run's links: their n * k offsets as
 *                            little-endian uint32 (CRAWLER.BFADD's input)
 * The call says which layout by the sign of its k argument (fr_offer_k). */
void fr_offer_section(const frontier_t *f, const fr_offer_t *o, const char *const *links,
                      uint32_t depth, uint32_t hops, rconn_args_t *a)
{
    int mod = f->bits_module;
    rconn_arg_u64(a, count_runs(o));
    char dbuf[40];
    size_t dl = fr_entry_head(depth, 0, hops, dbuf, sizeof dbuf);
    size_t run = 0, cnt = 0; /* the current block run: links [run, run + cnt) */
    for (size_t i = 0; i < o->nsent; i++) {
        if (i == 0 || o->v[i].block != o->v[i - 1].block) {
            run = i;
            cnt = 1;
            while (i + cnt < o->nsent && o->v[i + cnt].block == o->v[i].block)
                cnt++;
            rconn_arg_u64(a, 3 + o->v[i].block);
            rconn_arg_u64(a, cnt);
        }
        const char *url = links[o->v[i].idx], *og = o->orig + o->v[i].oat;
        size_t ul = strlen(url), skip = fr_entry_rest(url, ul, og, o->v[i].olen);
        /* ahead of the host's queue, in the links' order (offer.lua) */
        char bang[32] = "";
        if (o->first || (o->firsts && o->firsts[o->v[i].idx]))
            snprintf(bang, sizeof bang, "!%u!", (unsigned)o->v[i].idx);
        size_t bl = strlen(bang);
        char *e = rconn_arg_alloc(a, bl + dl + ul - skip);
        if (e) {
            memcpy(e, bang, bl);
            memcpy(e + bl, dbuf, dl);
            memcpy(e + bl + dl, url + skip, ul - skip);
        }
        rconn_arg_str(a, og, o->v[i].olen);
        for (uint32_t j = 0; !mod && j < o->k; j++)
            rconn_arg_u64(a, o->bits[o->v[i].bat + j]);
        for (uint32_t j = 0; j < o->nl; j++)
            rconn_arg_u64(a, 3 + o->lblk[o->v[i].lat + j]);
        if (mod && i + 1 == run + cnt)
            run_offsets(o, run, cnt, a);
    }
}

long fr_offer_done(frontier_t *f, unsigned s, const fr_offer_t *o, const char *const *links,
                   const char *codes, size_t len)
{
    if (!codes || len != o->nsent)
        return -1;
    long nnew = 0;
    const char *noted[64];
    char *tmp[64];
    size_t nn = 0, nt = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        char c = codes[i];
        nnew += c == 'n';
        const char *l = links[o->v[i].idx];
        size_t kl;
        int krc; /* a key that cannot be made is left out of the cache: a later offer asks Redis */
        const char *key = c == 'n' || c == 's' ? link_key(l, strlen(l), &kl, &tmp[nt], &krc) : NULL;
        if (key) { /* the local cache holds what Redis holds: keys */
            nt += tmp[nt] != NULL;
            noted[nn++] = key;
        }
        if (nn == 64 || (i + 1 == o->nsent && nn)) {
            bloom_cache_note(f->shard[s].bloom, noted, NULL, nn);
            while (nt)
                free(tmp[--nt]);
            nn = 0;
        }
    }
    while (nt)
        free(tmp[--nt]);
    return nnew;
}

/* ---- the offering call (the seed function, frontier/lua/seed.lua) ------------ */

/* The hosts of urls[0..n) (parser_url_host) that are URLs: nhosts, then
 * the hosts, one after another unless it repeats the one before (the seeds
 * come grouped by origin). */
void fr_seed_hosts_args(const char *const *urls, size_t n, rconn_args_t *a)
{
    size_t at = a->n, nh = 0;
    char last[FR_ORIGIN_MAX] = "", h[FR_ORIGIN_MAX];
    rconn_arg_u64(a, 0); /* nhosts, set below */
    for (size_t i = 0; i < n; i++) {
        int len =
            urls[i] && !strpbrk(urls[i], " \t\n") ? parser_url_host(urls[i], h, sizeof h) : -1;
        if (len <= 0 || strcmp(h, last) == 0)
            continue;
        rconn_arg_copy(a, h, (size_t)len);
        memcpy(last, h, (size_t)len + 1);
        nh++;
    }
    rconn_arg_set_u64(a, at, nh);
}

void fr_page_limit(frontier_t *f, unsigned s, rconn_args_t *a)
{
    if (!f->quota) {
        rconn_arg_u64(a, f->cfg.max_pages);
        return;
    }
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%llu:%llu", (unsigned long long)f->cfg.max_pages,
                     (unsigned long long)f->shard[s].allot);
    rconn_arg_copy(a, buf, (size_t)n);
}

long fr_offer_codes(const redisReply *r, size_t nsent, int *refused, uint64_t *base, int *look)
{
    *refused = 0;
    *base = 0;
    *look = 0;
    if (!r || r->type != REDIS_REPLY_STRING || r->len < nsent)
        return -1;
    const char *p = r->str + nsent, *end = r->str + r->len;
    if (end > p && end[-1] == '+') { /* (offer.lua: LAYERS.done) */
        *look = 1;
        end--;
    }
    if (p == end)
        return (long)nsent;
    if (*p++ != ':' || p == end)
        return -1;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *refused = 1;
    *base = v;
    return (long)nsent;
}

/* The seed call (frontier/lua/seed.lua) for urls[0..n), n <= FR_SEED_CHUNK.
 * KEYS: the guard, ready, then the Bloom blocks of the link section.
 *   ARGV[1]  P                   the key prefix
 *   ARGV[2]  mode                "1": queue the URLs even if already seen; "0":
 *                                seeds; "l": links of a page of another shard
 *                                (counted as new/seen/skipped links, not seeds);
 *                                "l:TTL:ID": the same, a call that may run twice
 *                                (fr_offer_call: its codes kept TTL ms under
 *                                P offered:ID, which a second run answers)
 *   ARGV[3]  max_pages           URLs admitted in all (0: no limit); on a crawl
 *                                that keeps it in allotments, "max_pages:allotment"
 *                                (fr_page_limit)
 *   ARGV[4]  max_pages_per_host
 *   ARGV[5]  per_host            for waking the hosts (UINT32_MAX, see below)
 *   ARGV[6]  k                   Bloom bits a URL; < 0: the module's layout
 *   ARGV[7]  nhosts              then nhosts hosts to add to the seed hosts
 *                                (fr_seed_hosts_args; none for FRONTIER_SEED_NO_HOSTS)
 *   next     the domain section  fr_offer_domains
 *   next     the link section    fr_offer_section, at depth/hops
 * Reply: the URLs' codes (fr_offer_done), then, when some were 'q' (past
 * the shard's allotment), ':' and the shard's enqueued counter, then '+'
 * when the visited set's layers should be looked at (fr_offer_codes). */
int fr_offer_build(frontier_t *f, unsigned s, const char *const *urls, size_t n, int flags,
                   const char *mode, uint32_t depth, uint32_t hops, const char *const *src,
                   const unsigned char *firsts, fr_offer_t *o, rconn_call_t **out)
{
    *out = NULL;
    int force = flags & FRONTIER_SEED_FORCE;
    /* on a cluster, acknowledged only once a replica has it: a failover
     * must not lose what a page's finish (on another master) counts on */
    unsigned cf = (mode ? RCONN_CALL_RESEND : 0) | (f->cluster ? RCONN_CALL_REPLICATED : 0);
    rconn_call_t *c = fr_fcall(f, s, FR_SEED, 1, cf);
    if (!c)
        return CRAWL_ENOMEM;
    rconn_args_t *a = rconn_call_args(c);
    fr_blocks_t bl = {0};
    int rc = fr_offer_prepare(f, s, urls, n, !force, 0, &bl, o);
    if (rc == 0)
        rc = fr_offer_keys(f, s, &bl, a);
    size_t nblocks = bl.n;
    fr_blocks_free(&bl);
    if (rc < 0) {
        rconn_call_free(c);
        fr_offer_free(o);
        return rc;
    }
    o->first = (flags & FRONTIER_SEED_FIRST) != 0;
    o->firsts = firsts;
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_dup(a, mode ? mode : force ? "1" : "0");
    fr_page_limit(f, s, a);
    rconn_arg_u64(a, f->cfg.max_pages_per_host);
    /* wake hosts whatever this handle's per_host: a claim re-checks room, so
     * a seeding process with another config never parks a host */
    rconn_arg_u64(a, UINT32_MAX);
    fr_offer_k(f, s, o, 1, nblocks, a);
    if (flags & FRONTIER_SEED_NO_HOSTS)
        rconn_arg_u64(a, 0);
    else
        fr_seed_hosts_args(urls, n, a);
    fr_offer_domains(f, o, 1, &(fr_srcs_t){.link = urls, .from = src, .n = src ? n : 0}, a);
    fr_offer_section(f, o, urls, depth, hops, a);
    *out = c;
    return 0;
}

int fr_offer_call(frontier_t *f, unsigned s, const char *const *links, size_t n, uint32_t depth,
                  uint32_t hops, const char *const *src, const unsigned char *firsts, fr_offer_t *o,
                  rconn_call_t **out)
{
    /* the id: this worker's, and a number that starts at random at open (a
     * worker id a restarted process reuses names other calls) */
    size_t ml = strlen(f->worker) + 48;
    char *mode = malloc(ml);
    if (!mode) {
        *out = NULL;
        return CRAWL_ENOMEM;
    }
    snprintf(mode, ml, "l:%u:%s/%llu", f->cfg.lease_ms, f->worker,
             (unsigned long long)++f->offer_seq);
    int rc = fr_offer_build(f, s, links, n, FRONTIER_SEED_NO_HOSTS, mode, depth, hops, src, firsts,
                            o, out);
    free(mode);
    return rc;
}
