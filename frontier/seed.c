/*
 * seed.c -- seeding: URLs queued at depth 0 through the Bloom filter
 * (frontier_seed).
 *
 * DESIGN: the seeds are grouped by origin (so a script pushes to few hosts),
 * cut into scripts of FR_SEED_CHUNK URLs, and sent FR_SEED_PIPELINE scripts
 * a round trip, each written out as soon as it is built so Redis runs it
 * while the next is built.  Each script is one atomic Bloom test-and-add
 * and enqueue of its URLs (frontier/lua/seed.lua; the URLs go as a link
 * section, offer.c).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

/* The hosts of urls[0..n) (parser_url_host) that are URLs: nhosts, then
 * the hosts, one after another unless it repeats the one before (the seeds
 * come grouped by origin). */
static void seed_hosts(const char *const *urls, size_t n, fr_args_t *a)
{
    size_t at = a->n, nh = 0;
    char last[FR_ORIGIN_MAX] = "", h[FR_ORIGIN_MAX];
    fa_u64(a, 0); /* nhosts, set below */
    for (size_t i = 0; i < n; i++) {
        int len =
            urls[i] && !strpbrk(urls[i], " \t\n") ? parser_url_host(urls[i], h, sizeof h) : -1;
        if (len <= 0 || strcmp(h, last) == 0)
            continue;
        fa_copy(a, h, (size_t)len);
        memcpy(last, h, (size_t)len + 1);
        nh++;
    }
    fa_set_u64(a, at, nh);
}

/* The seed call (frontier/lua/seed.lua) for urls[0..n), n <= FR_SEED_CHUNK.
 * KEYS: ready, then the Bloom blocks of the link section.
 *   ARGV[1]  P                   the key prefix
 *   ARGV[2]  force               "1": queue the URLs even if already seen; "l":
 *                                links of a page of another shard (fr_offer_call:
 *                                counted as new/seen/skipped links, not seeds)
 *   ARGV[3]  max_pages           URLs admitted in all (0: no limit); on a crawl
 *                                that keeps it in allotments, "max_pages:allotment"
 *                                (quota.c: fr_page_limit)
 *   ARGV[4]  max_pages_per_host
 *   ARGV[5]  per_host            for waking the hosts (UINT32_MAX, see below)
 *   ARGV[6]  k                   Bloom bits a URL; < 0: the module's layout
 *   ARGV[7]  nhosts              then nhosts hosts to add to the seed hosts
 *                                (seed_hosts; none for FRONTIER_SEED_NO_HOSTS)
 *   next     the link section    fr_offer_section (offer.c), depth 0
 * Reply: the URLs' codes (fr_offer_done), then, when some were 'q' (past
 * the shard's allotment), ':' and the shard's enqueued counter
 * (fr_offer_codes). */
static int build_offer(frontier_t *f, const char *const *urls, size_t n, int flags,
                       const char *mode, uint32_t depth, uint32_t hops, fr_offer_t *o, fr_args_t *a)
{
    int force = flags & FRONTIER_SEED_FORCE;
    fr_blocks_t bl = {0};
    int rc = fr_offer_prepare(f, urls, n, !force, 0, &bl, o);
    if (rc == 0)
        rc = fr_offer_keys(f, &bl, a);
    free(bl.v);
    if (rc < 0)
        return rc;
    fa_cstr(a, f->prefix);
    fa_cstr(a, mode ? mode : force ? "1" : "0");
    fr_page_limit(f, a);
    fa_u64(a, f->cfg.max_pages_per_host);
    /* wake hosts whatever this handle's per_host: a claim re-checks room, so
     * a seeding process with another config never parks a host */
    fa_u64(a, UINT32_MAX);
    fr_offer_k(f, o, 1, a);
    if (flags & FRONTIER_SEED_NO_HOSTS)
        fa_u64(a, 0);
    else
        seed_hosts(urls, n, a);
    fr_offer_section(f, o, urls, depth, hops, a);
    return 0;
}

static int build_seed(frontier_t *f, const char *const *urls, size_t n, int flags, fr_offer_t *o,
                      fr_args_t *a)
{
    return build_offer(f, urls, n, flags, NULL, 0, 0, o, a);
}

int fr_offer_call(frontier_t *f, const char *const *links, size_t n, uint32_t depth, uint32_t hops,
                  fr_offer_t *o, fr_args_t *a)
{
    return build_offer(f, links, n, FRONTIER_SEED_NO_HOSTS, "l", depth, hops, o, a);
}

/* The seeds one batch refused for want of allotment (quota.c), to be
 * offered again after a grant: pointers into the caller's URLs. */
typedef struct seed_refused {
    const char **url; /* room for every seed of the shard */
    size_t n;
    uint64_t base; /* the shard's enqueued counter, as the last refusal said */
} seed_refused_t;

/* One round trip: up to FR_SEED_PIPELINE scripts of FR_SEED_CHUNK seeds,
 * each sent as soon as it is built (Redis runs it while the next is built);
 * the seeds past the shard's allotment added to q (NULL: not a quota crawl). */
static int seed_batch(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added,
                      seed_refused_t *q)
{
    fr_args_t calls[FR_SEED_PIPELINE];
    fr_offer_t offers[FR_SEED_PIPELINE];
    redisReply *rep[FR_SEED_PIPELINE] = {0};
    size_t nc = (n + FR_SEED_CHUNK - 1) / FR_SEED_CHUNK, sent = 0;
    memset(offers, 0, sizeof offers);
    int rc = 0;
    for (size_t i = 0; i < nc; i++)
        fa_init(&calls[i]);
    for (size_t i = 0; rc == 0 && i < nc; i++) {
        size_t m = n - i * FR_SEED_CHUNK < FR_SEED_CHUNK ? n - i * FR_SEED_CHUNK : FR_SEED_CHUNK;
        rc = build_seed(f, urls + i * FR_SEED_CHUNK, m, flags, &offers[i], &calls[i]);
        if (rc == 0)
            rc = fr_send(f, FR_SEED, &calls[i]);
        sent += rc == 0;
    }
    /* the calls sent are read even after a failed build (they ran) */
    int crc = sent && rc != CRAWL_EREDIS ? fr_collect(f, FR_SEED, calls, sent, rep) : 0;
    if (rc == 0)
        rc = crc;
    for (size_t i = 0; crc == 0 && i < sent; i++) {
        uint64_t base;
        int refused;
        const char *const *mine = urls + i * FR_SEED_CHUNK;
        long len = fr_offer_codes(rep[i], offers[i].nsent, &refused, &base);
        long nnew = len >= 0 ? fr_offer_done(f, &offers[i], mine, rep[i]->str, (size_t)len) : -1;
        for (size_t j = 0; nnew >= 0 && refused && q && j < offers[i].nsent; j++)
            if (rep[i]->str[j] == 'q')
                q->url[q->n++] = mine[offers[i].v[j].idx];
        if (nnew >= 0 && refused && q && base > q->base)
            q->base = base;
        if (nnew < 0)
            rc = rc ? rc : fr_reply_error(rep[i]);
        else
            *added += (size_t)nnew;
    }
    for (size_t i = 0; i < nc; i++) {
        if (rep[i])
            freeReplyObject(rep[i]);
        fa_free(&calls[i]);
        fr_offer_free(&offers[i]);
    }
    return rc;
}

/* A seed's place after grouping: its origin's hash, then its input index. */
typedef struct seed_ord {
    uint64_t h;
    size_t i;
} seed_ord_t;

static int seed_ord_cmp(const void *a, const void *b)
{
    const seed_ord_t *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* urls regrouped so that the seeds of one origin are contiguous, each
 * origin's seeds in input order (hash collisions only merge two groups);
 * NULL when out of memory. */
static const char **group_by_origin(const char *const *urls, size_t n)
{
    seed_ord_t *ord = malloc(n * sizeof *ord);
    const char **out = malloc(n * sizeof *out);
    if (!ord || !out) {
        free(ord);
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 14695981039346656037ULL;
        char o[FR_ORIGIN_MAX];
        int ol = urls[i] ? parser_url_origin(urls[i], o, sizeof o) : -1;
        for (int j = 0; j < ol; j++)
            h = (h ^ (unsigned char)o[j]) * 1099511628211ULL;
        ord[i] = (seed_ord_t){h, i};
    }
    qsort(ord, n, sizeof *ord, seed_ord_cmp);
    for (size_t i = 0; i < n; i++)
        out[i] = urls[ord[i].i];
    free(ord);
    return out;
}

static int seed_shard(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added);

/* The seeds' hosts added to shard 0's seed hosts (crawl-wide) in one
 * round trip, before any seed is queued: a worker that claims a seed finds
 * its host there. */
static int add_seed_hosts(frontier_t *f, const char *const *urls, size_t n)
{
    fr_use(f, 0);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += FR_SEED_CHUNK) {
        fr_args_t h, a; /* h: nhosts, the hosts (seed_hosts); a: SADD key the hosts */
        fa_init(&h);
        fa_init(&a);
        seed_hosts(urls + i, n - i < FR_SEED_CHUNK ? n - i : FR_SEED_CHUNK, &h);
        fa_cstr(&a, "SADD");
        fa_key(&a, f->prefix, FR_K_SEEDHOSTS, NULL, 0);
        for (size_t j = 1; j < h.n; j++)
            fa_str(&a, h.v[j], h.len[j]);
        if (h.oom || a.oom)
            rc = CRAWL_ENOMEM;
        else if (a.n > 2) {
            redisReply *r = redisCommandArgv(f->rc, (int)a.n, a.v, a.len);
            f->round_trips++;
            if (!r)
                rc = CRAWL_EREDIS;
            else if (r->type != REDIS_REPLY_INTEGER)
                rc = fr_reply_error(r);
            if (r)
                freeReplyObject(r);
        }
        fa_free(&a);
        fa_free(&h);
    }
    return rc;
}

int frontier_seed(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added)
{
    size_t dummy = 0;
    if (!added)
        added = &dummy;
    *added = 0;
    if (!f || (!urls && n) || (flags & ~(FRONTIER_SEED_FORCE | FRONTIER_SEED_NO_HOSTS)))
        return CRAWL_EINVAL;
    if (f->nshards == 1) {
        fr_use(f, 0);
        return seed_shard(f, urls, n, flags, added);
    }
    int rc = flags & FRONTIER_SEED_NO_HOSTS ? 0 : add_seed_hosts(f, urls, n);
    const char **mine = rc == 0 ? malloc((n ? n : 1) * sizeof *mine) : NULL;
    unsigned *sh = mine ? malloc((n ? n : 1) * sizeof *sh) : NULL;
    if (rc == 0 && !sh)
        rc = CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        sh[i] = urls[i] ? fr_shard_of(f->nshards, urls[i]) : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) { /* one shard after the other */
        if (sh[i] == UINT32_MAX)
            continue;
        unsigned s = sh[i];
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (sh[j] == s) {
                mine[k++] = urls[j];
                sh[j] = UINT32_MAX;
            }
        fr_use(f, s);
        rc = seed_shard(f, mine, k, flags | FRONTIER_SEED_NO_HOSTS, added);
    }
    free(mine);
    free(sh);
    fr_use(f, 0);
    return rc;
}

/* frontier_seed in the current shard. */
static int seed_shard(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added)
{
    /* Each script pushes once per host it touches and updates each host's
     * bookkeeping, so seeds grouped by host cost fewer calls per seed (100k
     * seeds over 10,000 hosts: ~26 hosts per script of 256, not 256). */
    const char **grouped = n > FR_SEED_CHUNK ? group_by_origin(urls, n) : NULL;
    if (n > FR_SEED_CHUNK && !grouped)
        return CRAWL_ENOMEM;
    const char *const *in = grouped ? grouped : urls;
    const size_t per_trip = (size_t)FR_SEED_CHUNK * FR_SEED_PIPELINE;
    seed_refused_t q = {0}, *qp = NULL;
    const char **again = NULL;
    if (f->quota && n &&
        (!(q.url = malloc(n * sizeof *q.url)) || !(again = malloc(n * sizeof *again)))) {
        free(q.url);
        free(grouped);
        return CRAWL_ENOMEM;
    }
    if (f->quota)
        qp = &q;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += per_trip)
        rc = seed_batch(f, in + i, n - i < per_trip ? n - i : per_trip, flags, added, qp);
    /* the seeds past the shard's allotment, offered again while shard 0
     * grants more; those it cannot are over the page limit, as on one shard */
    while (rc == 0 && q.n) {
        unsigned s = f->cur;
        uint64_t want = q.n;
        int more;
        rc = fr_quota_grant(f, 1, &s, &want, &q.base, &more);
        if (rc < 0 || !more)
            break;
        size_t m = q.n;
        memcpy(again, q.url, m * sizeof *again);
        q.n = 0;
        for (size_t i = 0; rc == 0 && i < m; i += per_trip)
            rc = seed_batch(f, again + i, m - i < per_trip ? m - i : per_trip, flags, added, qp);
    }
    free(again);
    free(q.url);
    free(grouped);
    return rc < 0 ? rc : 0;
}
