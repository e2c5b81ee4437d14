/*
 * quota.c -- a crawl-wide page limit (--max-pages) on a crawl of several
 * shards (docs/sharding.md): no atomic step spans two shards, so shard
 * 0 hands each shard an allotment and each shard admits links while its
 * `enqueued` counter is below its allotment.
 *
 * DESIGN: a crawl of S > 1 shards created with a page limit says so in its
 * shard count ("Sq" in P shards: handle.c, fixed with the count, so every
 * opener agrees); its handles then send every offering call's page limit as
 * "max_pages:allotment" (fr_page_limit; offer.lua: page_limit_arg,
 * allotment), the allotment being what this handle last saw shard 0 grant
 * that shard, which the shard takes if it is more than it knows (a credit:
 * never lowered, so a stale one costs nothing).  A link past a shard's
 * allotment is answered 'q' and its Bloom bits are left unset; the reply
 * then ends with ":<the shard's enqueued counter>" (fr_offer_codes).  The
 * caller asks shard 0 for more (fr_quota_grant: frontier/lua/quota.lua,
 * one call for every shard that ran short) and offers those links again:
 * seed.c for seeds, finish.c for a page's links (on a quota crawl all of a
 * page's links go as offers, before the page's own call).  A grant adds
 * what was asked plus a slack (at most 256, less as the limit nears, so
 * that little is left stranded in shards that no longer need it), and
 * never passes the limit; a link that finds none left is over the limit,
 * as on one shard.  What a shard admitted while no limit held (a crawl
 * whose limit was lifted, `crawler limits --max-pages unlimited`, then set
 * again) counts at its next grant: the grant takes the shard's counter as
 * the least it was granted.  A worker lost between a grant and its relay
 * loses nothing: the grant stays in P quota, and the next grant for that
 * shard returns it with the rest.
 * Redis keys: P quota (shard 0; quota.lua), P stats' `granted` (each shard).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The grant call (frontier/lua/quota.lua), on shard 0.  KEYS[1]: shard 0's
 * ready key (its slot, for a Redis Cluster; quota.lua builds P quota and P
 * control from the prefix).
 *   ARGV[1]  P          shard 0's prefix
 *   ARGV[2]  max_pages  the worker's (P control's beats it)
 *   ARGV[3]  S          the crawl's shard count (a grant's slack is shared out)
 *   then, a shard: its number, the links it refused for want of allotment,
 *            its enqueued counter then
 * Reply: one integer a shard, its allotment in all. */
static void build_grant(frontier_t *f, size_t n, const unsigned *shard, const uint64_t *want,
                        const uint64_t *base, rconn_args_t *a)
{
    rconn_arg_cstr(a, f->shard[0].ready_key);
    rconn_arg_cstr(a, f->shard[0].prefix);
    rconn_arg_u64(a, f->cfg.max_pages);
    rconn_arg_u64(a, f->nshards);
    for (size_t i = 0; i < n; i++) {
        rconn_arg_u64(a, shard[i]);
        rconn_arg_u64(a, want[i]);
        rconn_arg_u64(a, base[i]);
    }
}

int fr_quota_grant(frontier_t *f, size_t n, const unsigned *shard, const uint64_t *want,
                   const uint64_t *base, int *more)
{
    *more = 0;
    if (n == 0)
        return 0;
    /* not sent again after a lost reply: what shard 0 granted stays in
     * P quota, and the next grant for those shards hands it over */
    rconn_call_t *c = fr_fcall(f, 0, FR_GRANT, 1, 0);
    if (!c)
        return CRAWL_ENOMEM;
    build_grant(f, n, shard, want, base, rconn_call_args(c));
    redisReply *r = NULL;
    fr_send(f, c);
    int rc = fr_wait(f, c, &r);
    if (rc == 0 && r->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r);
    else if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != n))
        rc = CRAWL_EREPLY;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t g;
        if (shard[i] >= f->nshards || fr_reply_u64(r->element[i], &g) < 0) {
            rc = CRAWL_EREPLY;
            break;
        }
        fr_shard_t *sh = &f->shard[shard[i]];
        if (g > sh->allot)
            sh->allot = g;
        if (g > base[i])
            *more = 1; /* room in that shard now */
    }
    rconn_call_free(c);
    return rc;
}

int fr_refused_add(frontier_t *f, fr_refused_t *q, const fr_refused_link_t *l, uint64_t base)
{
    if (!q->base && !(q->base = calloc(f->nshards, sizeof *q->base)))
        return CRAWL_ENOMEM;
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        fr_refused_link_t *v = realloc(q->v, cap * sizeof *v);
        if (!v)
            return CRAWL_ENOMEM;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = *l;
    if (base > q->base[l->shard])
        q->base[l->shard] = base;
    return 0;
}

void fr_refused_free(fr_refused_t *q)
{
    free(q->v);
    free(q->base);
    memset(q, 0, sizeof *q);
}

/* One offer (links mode) of links[0..n), all of shard s and of one depth
 * and hops, in the current round; its answers read: 'n' counted to the
 * link's tag, 'q' added to next. */
static int offer_one(frontier_t *f, unsigned s, const fr_refused_link_t *rl, const char **links,
                     size_t n, fr_refused_t *next, size_t *new)
{
    fr_offer_t o = {0};
    rconn_call_t *c = NULL;
    redisReply *r = NULL;
    unsigned char firsts[FR_SEED_CHUNK]; /* (n <= FR_SEED_CHUNK: offer_round) */
    for (size_t i = 0; i < n; i++)
        firsts[i] = rl[i].first;
    int rc = fr_offer_call(f, s, links, n, rl[0].depth, rl[0].hops, NULL, firsts, &o, &c);
    if (rc == 0) {
        fr_send(f, c);
        rc = fr_wait(f, c, &r);
    }
    uint64_t base = 0;
    int refused = 0, woke = 0, look = 0;
    long len = rc == 0 ? fr_offer_codes(r, o.nsent, &refused, &base, &look) : -1;
    if (look)
        fr_layers_flag(f, s);
    if (rc == 0 && r->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r);
    else if (rc == 0 && (len < 0 || fr_offer_done(f, s, &o, links, r->str, (size_t)len) < 0))
        rc = CRAWL_EREPLY;
    for (size_t j = 0; rc == 0 && j < o.nsent; j++) {
        const fr_refused_link_t *l = &rl[o.v[j].idx];
        if (r->str[j] == 'n') {
            new[l->tag]++;
            woke = 1;
        } else if (r->str[j] == 'q' && refused) {
            rc = fr_refused_add(f, next, l, base);
        }
    }
    if (woke)
        fr_wake(f, s);
    rconn_call_free(c);
    fr_offer_free(&o);
    return rc;
}

/* Offers again the links of round q whose shard has room now, grouped by
 * shard, depth and hops, FR_SEED_CHUNK a call; what is refused again goes
 * to next. */
static int offer_round(frontier_t *f, const fr_refused_t *q, fr_refused_t *next, size_t *new)
{
    fr_refused_link_t *rl = malloc(q->n * sizeof *rl);
    const char **links = malloc(q->n * sizeof *links);
    uint8_t *done = calloc(q->n, 1);
    int rc = rl && links && done ? 0 : CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < q->n; i++) {
        unsigned s = q->v[i].shard;
        if (done[i] || f->shard[s].allot <= q->base[s]) /* no room there: over the limit */
            continue;
        size_t m = 0;
        for (size_t j = i; j < q->n && m < FR_SEED_CHUNK; j++)
            if (!done[j] && q->v[j].shard == s && q->v[j].depth == q->v[i].depth &&
                q->v[j].hops == q->v[i].hops) {
                rl[m] = q->v[j];
                links[m++] = q->v[j].link;
                done[j] = 1;
            }
        rc = offer_one(f, s, rl, links, m, next, new); /* a group past the chunk: later i */
    }
    free(rl);
    free(links);
    free(done);
    return rc;
}

int fr_quota_offer_again(frontier_t *f, fr_refused_t *q, size_t *new)
{
    unsigned *sh = calloc(f->nshards, sizeof *sh);
    uint64_t *want = calloc(f->nshards, sizeof *want), *base = calloc(f->nshards, sizeof *base);
    int rc = sh && want && base ? 0 : CRAWL_ENOMEM;
    while (rc == 0 && q->n) {
        size_t ns = 0;
        memset(want, 0, f->nshards * sizeof *want);
        for (size_t i = 0; i < q->n; i++)
            want[q->v[i].shard]++;
        for (unsigned x = 0; x < f->nshards; x++)
            if (want[x]) {
                sh[ns] = x;
                want[ns] = want[x];
                base[ns++] = q->base[x];
            }
        int more;
        if ((rc = fr_quota_grant(f, ns, sh, want, base, &more)) < 0 || !more)
            break;
        fr_refused_t next = {0};
        rc = offer_round(f, q, &next, new);
        fr_refused_free(q);
        *q = next;
    }
    free(sh), free(want), free(base);
    fr_refused_free(q); /* what is left is over the limit */
    return rc;
}
