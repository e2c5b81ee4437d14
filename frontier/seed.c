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

/* The seeds one batch refused for want of allotment (quota.c), to be
 * offered again after a grant: pointers into the caller's URLs. */
typedef struct seed_refused {
    const char **url; /* room for every seed of the shard */
    size_t n;
    uint64_t base; /* the shard's enqueued counter, as the last refusal said */
} seed_refused_t;

/* One round trip: up to FR_SEED_PIPELINE calls of FR_SEED_CHUNK seeds to
 * shard s, each written out as soon as it is built (Redis runs it while the
 * next is built); the seeds past the shard's allotment added to q (NULL:
 * not a quota crawl).  A seed call is not sent again after a lost reply
 * (a FORCE seed would be queued twice): the caller seeds again. */
static int seed_batch(frontier_t *f, unsigned s, const char *const *urls, size_t n, int flags,
                      size_t *added, seed_refused_t *q)
{
    rconn_call_t *calls[FR_SEED_PIPELINE] = {0};
    fr_offer_t offers[FR_SEED_PIPELINE];
    size_t nc = (n + FR_SEED_CHUNK - 1) / FR_SEED_CHUNK, sent = 0;
    memset(offers, 0, sizeof offers);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nc; i++) {
        size_t m = n - i * FR_SEED_CHUNK < FR_SEED_CHUNK ? n - i * FR_SEED_CHUNK : FR_SEED_CHUNK;
        rc = fr_offer_build(f, s, urls + i * FR_SEED_CHUNK, m, flags, NULL, 0, 0, NULL, NULL,
                            &offers[i], &calls[i]);
        if (rc == 0)
            fr_send(f, calls[i]);
        sent += rc == 0;
    }
    /* the calls sent are read even after a failed build (they ran) */
    for (size_t i = 0; i < sent; i++) {
        redisReply *r;
        int wrc = fr_wait(f, calls[i], &r);
        if (wrc < 0) {
            rc = rc ? rc : wrc;
            continue;
        }
        uint64_t base;
        int refused, look;
        const char *const *mine = urls + i * FR_SEED_CHUNK;
        long len = fr_offer_codes(r, offers[i].nsent, &refused, &base, &look);
        if (look)
            fr_layers_flag(f, s);
        long nnew = len >= 0 ? fr_offer_done(f, s, &offers[i], mine, r->str, (size_t)len) : -1;
        for (size_t j = 0; nnew >= 0 && refused && q && j < offers[i].nsent; j++)
            if (r->str[j] == 'q')
                q->url[q->n++] = mine[offers[i].v[j].idx];
        if (nnew >= 0 && refused && q && base > q->base)
            q->base = base;
        if (nnew < 0)
            rc = rc ? rc : fr_reply_error(r);
        else
            *added += (size_t)nnew;
    }
    for (size_t i = 0; i < nc; i++) {
        rconn_call_free(calls[i]);
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

static int seed_shard(frontier_t *f, unsigned s, const char *const *urls, size_t n, int flags,
                      size_t *added);

/* The seeds' hosts added to shard 0's seed hosts (crawl-wide) in one
 * round trip, before any seed is queued: a worker that claims a seed finds
 * its host there. */
static int add_seed_hosts(frontier_t *f, const char *const *urls, size_t n)
{
    size_t nc = (n + FR_SEED_CHUNK - 1) / FR_SEED_CHUNK, k = 0;
    rconn_call_t **c = calloc(nc ? nc : 1, sizeof *c);
    int rc = c ? 0 : CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i += FR_SEED_CHUNK) {
        rconn_args_t h; /* nhosts, the hosts (fr_seed_hosts_args) */
        rconn_args_init(&h);
        fr_seed_hosts_args(urls + i, n - i < FR_SEED_CHUNK ? n - i : FR_SEED_CHUNK, &h);
        rconn_call_t *cmd =
            h.n > 1 ? fr_cmd(f, 0, RCONN_CALL_RESEND) : NULL; /* SADD: twice is once */
        rconn_args_t *a = cmd ? rconn_call_args(cmd) : NULL;
        if (a) {
            rconn_arg_cstr(a, "SADD");
            fr_key_arg(a, f->shard[0].prefix, FR_K_SEEDHOSTS, NULL, 0);
            for (size_t j = 1; j < h.n; j++)
                rconn_arg_copy(a, h.v[j], h.len[j]);
            c[k++] = cmd;
        }
        if (h.oom || (h.n > 1 && !cmd))
            rc = CRAWL_ENOMEM;
        rconn_args_free(&h);
    }
    if (rc == 0 && k)
        rc = fr_run(f, c, k);
    for (size_t i = 0; rc == 0 && i < k; i++) {
        redisReply *r = rconn_call_reply(c[i]);
        if (r->type != REDIS_REPLY_INTEGER)
            rc = fr_reply_error(r);
    }
    for (size_t i = 0; i < k; i++)
        rconn_call_free(c[i]);
    free(c);
    return rc;
}

int frontier_seed(frontier_t *f, const char *const *urls, size_t n, int flags, size_t *added)
{
    size_t dummy = 0;
    if (!added)
        added = &dummy;
    *added = 0;
    if (!f || (!urls && n) ||
        (flags & ~(FRONTIER_SEED_FORCE | FRONTIER_SEED_NO_HOSTS | FRONTIER_SEED_FIRST)))
        return CRAWL_EINVAL;
    if (f->nshards == 1)
        return seed_shard(f, 0, urls, n, flags, added);
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
        rc = seed_shard(f, s, mine, k, flags | FRONTIER_SEED_NO_HOSTS, added);
    }
    free(mine);
    free(sh);
    return rc;
}

/* frontier_seed in shard s. */
static int seed_shard(frontier_t *f, unsigned s, const char *const *urls, size_t n, int flags,
                      size_t *added)
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
        rc = seed_batch(f, s, in + i, n - i < per_trip ? n - i : per_trip, flags, added, qp);
    /* the seeds past the shard's allotment, offered again while shard 0
     * grants more; those it cannot are over the page limit, as on one shard */
    while (rc == 0 && q.n) {
        uint64_t want = q.n;
        int more;
        rc = fr_quota_grant(f, 1, &s, &want, &q.base, &more);
        if (rc < 0 || !more)
            break;
        size_t m = q.n;
        memcpy(again, q.url, m * sizeof *again);
        q.n = 0;
        for (size_t i = 0; rc == 0 && i < m; i += per_trip)
            rc = seed_batch(f, s, again + i, m - i < per_trip ? m - i : per_trip, flags, added, qp);
    }
    free(again);
    free(q.url);
    free(grouped);
    return rc < 0 ? rc : 0;
}
