/*
 * pages.c -- finishing pages, seeding, retrying: the calls that offer links
 * to the Bloom filter and the queues.
 *
 * DESIGN: the client computes each link's Bloom probe (block + k bit
 * offsets, bloom_probe) and passes the block keys as KEYS and, per link, its
 * queue entry "DEPTH 0 URL" and its k offsets as ARGV, in a "link section":
 *     ngroups, then per block: KEYS index, count, (entry, origin, offset*k)*count
 * The links of one block are sent together (group_by_block), so the script
 * sets the bits of a whole run with one BITFIELD (at most 1024 bits per
 * call) and queues an entry iff one of its old bits was 0, exactly as
 * bloom_add_many decides, so the same filter serves both.  When Redis has
 * the crawler module (bloom/redis_module.c), a run's offsets go instead as
 * one binary argument to its CRAWLER.BFADD (same bits, same answers, without
 * BITFIELD's cost of about 4.8k Redis instructions per bit).  The new entries
 * are pushed with one RPUSH per host, and the per-host bookkeeping (admitted
 * counts, waking hosts in the ready set) is a few HMGET/HSET/ZADD calls per
 * script, not calls per link.  Links the process-local Bloom cache already
 * knows are not sent (counted as seen); the ones that reached the filter are
 * noted in the cache afterwards.  Finishing n pages is one pipelined round
 * trip of calls of up to 128 pages and 2,048 links (plan_groups: a call's
 * fixed cost, about 200k Redis instructions, is spread over as many pages as
 * keep it short); each call is atomic (ack + test-and-add +
 * enqueue + counters), so a crash leaves each page either still leased
 * (re-crawled after the lease expires) or fully finished.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The distinct Bloom blocks of one call (its KEYS after the ready key). */
typedef struct blocks {
    uint32_t *v;
    size_t n, cap;
} blocks_t;

/* The links of one page, probed. */
typedef struct offer {
    bloom_probe_t *pr; /* [nsent] */
    size_t *sent;      /* [nsent] index into the caller's link array */
    uint32_t *bidx;    /* [nsent] index into the call's blocks */
    size_t nsent, cached, skipped;
} offer_t;

static void offer_free(offer_t *o)
{
    free(o->pr);
    free(o->sent);
    free(o->bidx);
    memset(o, 0, sizeof *o);
}

static int block_index(blocks_t *bl, uint32_t block, uint32_t *idx)
{
    for (size_t i = 0; i < bl->n; i++)
        if (bl->v[i] == block) {
            *idx = (uint32_t)i;
            return 0;
        }
    if (bl->n == bl->cap) {
        size_t cap = bl->cap ? 2 * bl->cap : 4;
        uint32_t *v = realloc(bl->v, cap * sizeof *v);
        if (!v)
            return FRONTIER_ENOMEM;
        bl->v = v;
        bl->cap = cap;
    }
    bl->v[bl->n] = block;
    *idx = (uint32_t)bl->n++;
    return 0;
}

/* Reorders the probed links so that the links of one block are contiguous
 * (stable: blocks in order of first appearance); the script sets the bits
 * of a block's run with one BITFIELD. */
static int group_by_block(offer_t *o)
{
    size_t runs = 0, distinct = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        runs += i == 0 || o->bidx[i] != o->bidx[i - 1];
        int first = 1;
        for (size_t j = 0; first && j < i; j++)
            first = o->bidx[j] != o->bidx[i];
        distinct += first;
        if (runs > distinct)
            break;
    }
    if (runs <= distinct)
        return 0;
    bloom_probe_t *pr = malloc(o->nsent * sizeof *pr);
    size_t *sent = malloc(o->nsent * sizeof *sent);
    uint32_t *bidx = malloc(o->nsent * sizeof *bidx);
    uint8_t *done = calloc(o->nsent, 1);
    if (!pr || !sent || !bidx || !done) {
        free(pr), free(sent), free(bidx), free(done);
        return FRONTIER_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        if (done[i])
            continue;
        for (size_t j = i; j < o->nsent; j++)
            if (!done[j] && o->bidx[j] == o->bidx[i]) {
                pr[m] = o->pr[j];
                sent[m] = o->sent[j];
                bidx[m++] = o->bidx[j];
                done[j] = 1;
            }
    }
    free(o->pr), free(o->sent), free(o->bidx), free(done);
    o->pr = pr;
    o->sent = sent;
    o->bidx = bidx;
    return 0;
}

/* Probes links[0..n) (skipping all when skip_all, and the ones the local
 * cache knows when use_cache). */
static int offer_prepare(frontier_t *f, const char *const *links, size_t n, int use_cache,
                         int skip_all, blocks_t *bl, offer_t *o)
{
    memset(o, 0, sizeof *o);
    if (n == 0)
        return 0;
    if (skip_all) {
        o->skipped = n;
        return 0;
    }
    o->pr = malloc(n * sizeof *o->pr);
    o->sent = malloc(n * sizeof *o->sent);
    o->bidx = malloc(n * sizeof *o->bidx);
    if (!o->pr || !o->sent || !o->bidx) {
        offer_free(o);
        return FRONTIER_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const char *l = links[i];
        size_t len = l ? strlen(l) : 0;
        if (len == 0 || strpbrk(l, " \t\n")) { /* not a URL; would break an entry */
            o->skipped++;
            continue;
        }
        if (use_cache && bloom_cache_contains(f->bloom, l, len)) {
            o->cached++;
            continue;
        }
        bloom_probe(f->bloom, l, len, &o->pr[o->nsent]);
        if (o->pr[o->nsent].k == 0 || o->pr[o->nsent].k > BLOOM_MAX_K) {
            offer_free(o);
            return FRONTIER_EBLOOM;
        }
        if (block_index(bl, o->pr[o->nsent].block, &o->bidx[o->nsent]) < 0) {
            offer_free(o);
            return FRONTIER_ENOMEM;
        }
        o->sent[o->nsent++] = i;
    }
    return group_by_block(o);
}

/* FCALL fn numkeys ready blockkeys... */
static int offer_keys(frontier_t *f, const blocks_t *bl, fr_args_t *a)
{
    fa_fcall(a, 1 + bl->n);
    fa_cstr(a, f->ready_key);
    for (size_t i = 0; i < bl->n; i++) {
        char key[256];
        int len = bloom_block_key(f->bloom, bl->v[i], key, sizeof key);
        if (len <= 0 || (size_t)len >= sizeof key)
            return FRONTIER_EBLOOM;
        fa_copy(a, key, (size_t)len);
    }
    return 0;
}

static uint32_t probe_k(const offer_t *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (o[i].nsent)
            return o[i].pr[0].k;
    return 1;
}

/* The scripts' k argument: negative when the link sections are in the
 * crawler module's layout (offer_links). */
static void push_k(const frontier_t *f, const offer_t *o, size_t n, fr_args_t *a)
{
    char b[16];
    int len = snprintf(b, sizeof b, "%s%u", f->bits_module ? "-" : "", probe_k(o, n));
    fa_copy(a, b, (size_t)len);
}

/* Length of a URL's origin "scheme://host[:port]", as the scripts' host_of
 * and origin read it from an entry. */
static size_t origin_len(const char *url)
{
    const char *p = strchr(url, '/');
    const char *q = p && p[1] == '/' ? strchr(p + 2, '/') : NULL;
    return p && p[1] == '/' && q ? (size_t)(q - url) : strlen(url);
}

/* Arguments of the link section: ngroups, then per block run: KEYS index,
 * count, and per link its entry "DEPTH 0 URL", its origin (as the scripts'
 * host_of would read it from the entry: a Lua pattern match costs Redis
 * about 3k instructions a link, an extra argument a few hundred) and its k
 * bit offsets.  With the crawler module (f->bits_module) a link is its entry
 * and origin only, and the run ends with one argument holding all its
 * links' offsets as little-endian uint32 (CRAWLER.BFADD's input). */
static size_t section_len(const offer_t *o, int mod, size_t *ngroups)
{
    size_t ng = 0;
    for (size_t i = 0; i < o->nsent; i++)
        ng += i == 0 || o->bidx[i] != o->bidx[i - 1];
    if (ngroups)
        *ngroups = ng;
    if (mod)
        return 1 + 3 * ng + 2 * o->nsent;
    return 1 + 2 * ng + (o->nsent ? o->nsent * (2 + o->pr[0].k) : 0);
}

/* The offsets of links [from, from + cnt) as CRAWLER.BFADD takes them. */
static void run_offsets(const offer_t *o, size_t from, size_t cnt, fr_args_t *a)
{
    uint32_t k = o->pr[from].k;
    unsigned char *p = (unsigned char *)fa_alloc(a, cnt * k * 4);
    for (size_t i = from; p && i < from + cnt; i++)
        for (uint32_t j = 0; j < k; j++, p += 4) {
            uint64_t b = o->pr[i].bit[j]; /* < 2^32: BLOOM_MAX_BLOCK_BITS */
            p[0] = (unsigned char)b;
            p[1] = (unsigned char)(b >> 8);
            p[2] = (unsigned char)(b >> 16);
            p[3] = (unsigned char)(b >> 24);
        }
}

static void offer_links(const offer_t *o, int mod, const char *const *links, uint32_t depth,
                        fr_args_t *a)
{
    size_t ng;
    section_len(o, mod, &ng);
    fa_u64(a, ng);
    char dbuf[16];
    int dl = snprintf(dbuf, sizeof dbuf, "%u 0 ", depth);
    size_t run = 0, cnt = 0; /* the current block run: links [run, run + cnt) */
    for (size_t i = 0; i < o->nsent; i++) {
        if (i == 0 || o->bidx[i] != o->bidx[i - 1]) {
            run = i;
            cnt = 1;
            while (i + cnt < o->nsent && o->bidx[i + cnt] == o->bidx[i])
                cnt++;
            fa_u64(a, 2 + o->bidx[i]); /* KEYS index: 1 is ready */
            fa_u64(a, cnt);
        }
        const char *url = links[o->sent[i]];
        size_t ul = strlen(url);
        char *e = fa_alloc(a, (size_t)dl + ul);
        if (e) {
            memcpy(e, dbuf, (size_t)dl);
            memcpy(e + dl, url, ul);
        }
        fa_str(a, url, origin_len(url));
        if (mod) {
            if (i + 1 == run + cnt)
                run_offsets(o, run, cnt, a);
            continue;
        }
        for (uint32_t j = 0; j < o->pr[i].k; j++)
            fa_u64(a, o->pr[i].bit[j]);
    }
}

/* Notes the links that reached the filter in the local cache; returns how
 * many were new (code 'n'), or -1 if codes does not match. */
static long offer_done(frontier_t *f, const offer_t *o, const char *const *links, const char *codes,
                       size_t len)
{
    if (!codes || len != o->nsent)
        return -1;
    long nnew = 0;
    const char *noted[64];
    size_t nn = 0;
    for (size_t i = 0; i < o->nsent; i++) {
        char c = codes[i];
        nnew += c == 'n';
        if (c == 'n' || c == 's')
            noted[nn++] = links[o->sent[i]];
        if (nn == 64 || (i + 1 == o->nsent && nn)) {
            bloom_cache_note(f->bloom, noted, NULL, nn);
            nn = 0;
        }
    }
    return nnew;
}

/* ---- finish -------------------------------------------------------------- */

static void page_args(frontier_t *f, const frontier_done_t *p, const offer_t *o, fr_args_t *a)
{
    const char *w = NULL;
    size_t seqlen = 0;
    fr_lease_split(p->item->lease, &w, &seqlen);
    fa_cstr(a, w);
    fa_str(a, p->item->lease, seqlen);
    fa_u64(a, p->outcome.status > 0 ? (uint64_t)p->outcome.status : 0);
    fa_cstr(a, p->outcome.error ? p->outcome.error : "");
    fa_u64(a, p->outcome.bytes);
    fa_u64(a, p->link_depth);
    fa_u64(a, o->cached);
    fa_u64(a, o->skipped);
    if (o->nsent == 0) {
        fa_u64(a, 0); /* span: no link section */
        return;
    }
    fa_u64(a, section_len(o, f->bits_module, NULL));
    offer_links(o, f->bits_module, p->links, p->link_depth, a);
}

/* One call finishing pages p[0..n). */
static int build_finish(frontier_t *f, const frontier_done_t *p, size_t n, offer_t *o, fr_args_t *a)
{
    blocks_t bl = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *w;
        size_t seqlen;
        if (!p[i].item || fr_lease_split(p[i].item->lease, &w, &seqlen) < 0 ||
            (p[i].nlinks && !p[i].links))
            rc = FRONTIER_EINVAL;
        else
            rc = offer_prepare(f, p[i].links, p[i].nlinks, 1, p[i].link_depth > f->cfg.max_depth,
                               &bl, &o[i]);
    }
    if (rc == 0)
        rc = offer_keys(f, &bl, a);
    free(bl.v);
    if (rc < 0)
        return rc;
    fa_cstr(a, f->prefix);
    fa_u64(a, n);
    fa_u64(a, f->cfg.max_pages);
    fa_u64(a, f->cfg.max_pages_per_host);
    fa_u64(a, f->cfg.per_host);
    push_k(f, o, n, a);
    for (size_t i = 0; i < n; i++)
        page_args(f, &p[i], &o[i], a);
    return 0;
}

/* Reads {lost1, codes1, ...} of one call; FRONTIER_ELEASE if a lease was
 * lost. */
static int read_finish(frontier_t *f, const frontier_done_t *p, size_t n, const offer_t *o,
                       const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 * n)
        return FRONTIER_EREPLY;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t lost;
        if (p[i].nnew)
            *p[i].nnew = 0;
        const redisReply *c = r->element[2 * i + 1];
        long nnew = fr_reply_u64(r->element[2 * i], &lost) < 0 || c->type != REDIS_REPLY_STRING
                        ? -1
                        : offer_done(f, &o[i], p[i].links, c->str, c->len);
        if (nnew < 0)
            return FRONTIER_EREPLY;
        if (p[i].nnew)
            *p[i].nnew = (size_t)nnew;
        if (lost)
            rc = FRONTIER_ELEASE;
    }
    return rc;
}

/* The reply of an ack: every page's codes, one after the other (page i has
 * o[i].nsent of them). */
static int read_ack(frontier_t *f, const frontier_done_t *p, size_t n, const offer_t *o,
                    const redisReply *r)
{
    size_t at = 0;
    if (r->type != REDIS_REPLY_STRING)
        return FRONTIER_EREPLY;
    for (size_t i = 0; i < n; i++) {
        long nnew = at + o[i].nsent <= r->len
                        ? offer_done(f, &o[i], p[i].links, r->str + at, o[i].nsent)
                        : -1;
        if (nnew < 0)
            return FRONTIER_EREPLY;
        at += o[i].nsent;
        if (p[i].nnew)
            *p[i].nnew = (size_t)nnew;
    }
    return at == r->len ? 0 : FRONTIER_EREPLY;
}

/* ---- finish, common case (ack) ------------------------------------------ */

/* 1 if pages p[0..n) can take the ack path: valid items, all leased to one
 * worker, no lease twice. */
static int ack_eligible(const frontier_done_t *p, size_t n)
{
    const char *w0, *w;
    size_t s0, sl;
    if (!p[0].item || fr_lease_split(p[0].item->lease, &w0, &s0) < 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].item || !p[i].item->url || fr_lease_split(p[i].item->lease, &w, &sl) < 0 ||
            strcmp(w, w0) != 0 || (p[i].nlinks && !p[i].links))
            return 0;
        for (size_t j = 0; j < i; j++)
            if (strcmp(p[j].item->lease, p[i].item->lease) == 0)
                return 0;
    }
    return 1;
}

static int no_error(const frontier_outcome_t *o)
{
    return !o->error || !*o->error;
}

/* The hosts of the pages (origin, pages, any page fine) and the counters,
 * summed as the finish script would sum them for pages whose lease held. */
static void ack_totals(const frontier_done_t *p, size_t n, const offer_t *o, fr_args_t *a)
{
    size_t nh = 0, hidx[FR_FINISH_GROUP], hcnt[FR_FINISH_GROUP];
    int hok[FR_FINISH_GROUP];
    uint64_t c[10] = {n, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* as F in ack_body */
    for (size_t i = 0; i < n; i++) {
        const char *u = p[i].item->url;
        size_t ol = origin_len(u), h = 0;
        while (h < nh && !(origin_len(p[hidx[h]].item->url) == ol &&
                           memcmp(p[hidx[h]].item->url, u, ol) == 0))
            h++;
        if (h == nh) {
            hidx[nh] = i;
            hcnt[nh] = 0;
            hok[nh++] = 0;
        }
        int st = p[i].outcome.status > 0 ? p[i].outcome.status : 0;
        hcnt[h]++;
        hok[h] |= no_error(&p[i].outcome) && st > 0 && st < 500 && st != 429;
        c[1] += p[i].outcome.bytes;
        if (st >= 200 && st < 600)
            c[2 + (st / 100 - 2)]++;
        else if (st != 0)
            c[6]++;
        c[7] += !no_error(&p[i].outcome);
        c[8] += o[i].cached;
        c[9] += o[i].skipped;
    }
    fa_u64(a, nh);
    for (size_t h = 0; h < nh; h++) {
        fa_str(a, p[hidx[h]].item->url, origin_len(p[hidx[h]].item->url));
        fa_u64(a, hcnt[h]);
        fa_u64(a, (uint64_t)hok[h]);
    }
    for (int x = 0; x < 10; x++)
        fa_u64(a, c[x]);
    size_t nk = 0, kidx[FR_FINISH_GROUP], kcnt[FR_FINISH_GROUP];
    for (size_t i = 0; i < n; i++) {
        if (no_error(&p[i].outcome))
            continue;
        size_t k = 0;
        while (k < nk && strcmp(p[kidx[k]].outcome.error, p[i].outcome.error) != 0)
            k++;
        if (k == nk) {
            kidx[nk] = i;
            kcnt[nk++] = 0;
        }
        kcnt[k]++;
    }
    fa_u64(a, nk);
    for (size_t k = 0; k < nk; k++) {
        fa_cstr(a, p[kidx[k]].outcome.error);
        fa_u64(a, kcnt[k]);
    }
}

/* One ack call for pages p[0..n) (n <= FR_FINISH_GROUP, ack_eligible). */
static int build_ack(frontier_t *f, const frontier_done_t *p, size_t n, offer_t *o, fr_args_t *a)
{
    blocks_t bl = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = offer_prepare(f, p[i].links, p[i].nlinks, 1, p[i].link_depth > f->cfg.max_depth, &bl,
                           &o[i]);
    if (rc == 0)
        rc = offer_keys(f, &bl, a);
    free(bl.v);
    if (rc < 0)
        return rc;
    const char *w;
    size_t seqlen;
    fr_lease_split(p[0].item->lease, &w, &seqlen);
    fa_cstr(a, f->prefix);
    fa_u64(a, n);
    fa_u64(a, f->cfg.max_pages);
    fa_u64(a, f->cfg.max_pages_per_host);
    fa_u64(a, f->cfg.per_host);
    push_k(f, o, n, a);
    fa_cstr(a, w);
    ack_totals(p, n, o, a);
    for (size_t i = 0; i < n; i++) {
        fr_lease_split(p[i].item->lease, &w, &seqlen);
        fa_str(a, p[i].item->lease, seqlen);
        if (o[i].nsent == 0) {
            fa_u64(a, 0);
            continue;
        }
        fa_u64(a, section_len(&o[i], f->bits_module, NULL));
        offer_links(&o[i], f->bits_module, p[i].links, p[i].link_depth, a);
    }
    return 0;
}

static int is_slow(const redisReply *r)
{
    return r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
           r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "slow") == 0;
}

/* Sends again, through the finish script, the groups whose ack found a
 * lease missing (nothing was changed by it); one more round trip.  Group c
 * is pages[at[c]..at[c+1]). */
static int finish_slow_groups(frontier_t *f, const frontier_done_t *pages, const size_t *at,
                              offer_t *offers, redisReply **rep, size_t nc)
{
    size_t idx[64], ns = 0;
    fr_args_t calls[64];
    redisReply *r2[64] = {0};
    for (size_t c = 0; c < nc && ns < 64; c++)
        if (is_slow(rep[c]))
            idx[ns++] = c;
    if (ns == 0)
        return 0;
    int rc = 0;
    for (size_t s = 0; s < ns; s++) {
        size_t a = at[idx[s]], m = at[idx[s] + 1] - a;
        for (size_t i = 0; i < m; i++)
            offer_free(&offers[a + i]);
        fa_init(&calls[s]);
        if (rc == 0)
            rc = build_finish(f, pages + a, m, offers + a, &calls[s]);
    }
    if (rc == 0)
        rc = fr_run(f, FR_FINISH, calls, ns, r2);
    for (size_t s = 0; s < ns; s++) {
        fa_free(&calls[s]);
        if (rc == 0) {
            freeReplyObject(rep[idx[s]]);
            rep[idx[s]] = r2[s];
        }
    }
    return rc;
}

/* Cuts pages[0..n) into calls: group c is pages[at[c]..at[c+1]), at most
 * FR_FINISH_GROUP pages and, unless its one page has more, FR_FINISH_LINKS
 * links (so one call never holds Redis long).  Returns the number of groups
 * (0 when out of memory, n > 0). */
static size_t plan_groups(const frontier_done_t *pages, size_t n, size_t **at_out)
{
    size_t *at = malloc((n + 1) * sizeof *at), nc = 0, links = 0;
    *at_out = at;
    if (!at)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t in = nc ? i - at[nc - 1] : 0;
        if (nc == 0 || in == FR_FINISH_GROUP || links + pages[i].nlinks > FR_FINISH_LINKS) {
            at[nc++] = i;
            links = 0;
        }
        links += pages[i].nlinks;
    }
    at[nc] = n;
    return nc;
}

struct frontier_pending {
    const frontier_done_t *pages;
    size_t n, nc, sent;
    size_t *at; /* [nc + 1]: group c is pages[at[c]..at[c+1]) */
    fr_args_t *calls;
    offer_t *offers;
    redisReply **rep;
    int fast, rc;
};

static void pending_free(frontier_pending_t *p)
{
    for (size_t c = 0; c < p->nc; c++) {
        if (p->rep && p->rep[c])
            freeReplyObject(p->rep[c]);
        if (p->calls)
            fa_free(&p->calls[c]);
    }
    for (size_t i = 0; p->offers && i < p->n; i++)
        offer_free(&p->offers[i]);
    free(p->calls);
    free(p->at);
    free(p->offers);
    free(p->rep);
    free(p);
}

int frontier_finish_start(frontier_t *f, const frontier_done_t *pages, size_t n,
                          frontier_pending_t **out)
{
    if (out)
        *out = NULL;
    if (!f || (!pages && n) || !out)
        return FRONTIER_EINVAL;
    for (size_t i = 0; i < n; i++) { /* before any group is sent */
        const char *w;
        size_t seqlen;
        if (!pages[i].item || fr_lease_split(pages[i].item->lease, &w, &seqlen) < 0 ||
            (pages[i].nlinks && !pages[i].links))
            return FRONTIER_EINVAL;
    }
    frontier_pending_t *p = calloc(1, sizeof *p);
    if (!p)
        return FRONTIER_ENOMEM;
    p->pages = pages;
    p->n = n;
    p->nc = n ? plan_groups(pages, n, &p->at) : 0;
    p->calls = calloc(p->nc ? p->nc : 1, sizeof *p->calls);
    p->offers = calloc(n ? n : 1, sizeof *p->offers);
    p->rep = calloc(p->nc ? p->nc : 1, sizeof *p->rep);
    int rc = p->calls && p->offers && p->rep && (n == 0 || p->nc) ? 0 : FRONTIER_ENOMEM;
    p->fast = p->nc <= 64; /* finish_slow_groups handles up to 64 groups */
    for (size_t c = 0; rc == 0 && p->fast && c < p->nc; c++)
        p->fast = ack_eligible(pages + p->at[c], p->at[c + 1] - p->at[c]);
    for (size_t c = 0; rc == 0 && c < p->nc; c++) {
        size_t at = p->at[c], m = p->at[c + 1] - at;
        rc = p->fast ? build_ack(f, pages + at, m, p->offers + at, &p->calls[c])
                     : build_finish(f, pages + at, m, p->offers + at, &p->calls[c]);
        if (rc == 0)
            rc = fr_send(f, p->fast ? FR_ACK : FR_FINISH, &p->calls[c]);
        p->sent += rc == 0;
    }
    p->rc = rc;
    if (rc < 0 && (p->sent == 0 || rc == FRONTIER_EIO)) {
        pending_free(p); /* nothing to read back */
        return rc;
    }
    *out = p;
    return 0;
}

int frontier_finish_end(frontier_t *f, frontier_pending_t *p)
{
    if (!p)
        return 0;
    if (!f) {
        pending_free(p);
        return FRONTIER_EINVAL;
    }
    int rc = p->rc;
    /* calls already sent ran: read their replies even after a failed build */
    if (p->sent) {
        int crc = fr_collect(f, p->fast ? FR_ACK : FR_FINISH, p->calls, p->sent, p->rep);
        if (rc == 0 || crc < 0)
            rc = crc;
    }
    if (rc == 0 && p->fast)
        rc = finish_slow_groups(f, p->pages, p->at, p->offers, p->rep, p->nc);
    for (size_t c = 0; rc >= 0 && c < p->nc; c++) {
        size_t at = p->at[c], m = p->at[c + 1] - at;
        const redisReply *r = p->rep[c];
        int prc = r->type == REDIS_REPLY_ERROR ? FRONTIER_EREPLY
                  : r->type == REDIS_REPLY_STRING
                      ? read_ack(f, p->pages + at, m, p->offers + at, r)
                      : read_finish(f, p->pages + at, m, p->offers + at, r);
        if (prc < 0 && (rc == 0 || rc == FRONTIER_ELEASE))
            rc = prc; /* a script error outranks a lost lease */
    }
    pending_free(p);
    return rc;
}

int frontier_finish(frontier_t *f, const frontier_done_t *pages, size_t n)
{
    if (!f || (!pages && n))
        return FRONTIER_EINVAL;
    if (n == 0)
        return 0;
    frontier_pending_t *p = NULL;
    int rc = frontier_finish_start(f, pages, n, &p);
    return rc < 0 ? rc : frontier_finish_end(f, p);
}

/* ---- seed ---------------------------------------------------------------- */

static int build_seed(frontier_t *f, const char *const *urls, size_t n, int force, offer_t *o,
                      fr_args_t *a)
{
    blocks_t bl = {0};
    int rc = offer_prepare(f, urls, n, !force, 0, &bl, o);
    if (rc == 0)
        rc = offer_keys(f, &bl, a);
    free(bl.v);
    if (rc < 0)
        return rc;
    fa_cstr(a, f->prefix);
    fa_cstr(a, force ? "1" : "0");
    fa_u64(a, f->cfg.max_pages);
    fa_u64(a, f->cfg.max_pages_per_host);
    /* wake hosts whatever this handle's per_host: a claim re-checks room, so
     * a seeding process with another config never parks a host */
    fa_u64(a, UINT32_MAX);
    push_k(f, o, 1, a);
    offer_links(o, f->bits_module, urls, 0, a);
    return 0;
}

/* One round trip: up to FR_SEED_PIPELINE scripts of FR_SEED_CHUNK seeds,
 * each sent as soon as it is built (Redis runs it while the next is built). */
static int seed_batch(frontier_t *f, const char *const *urls, size_t n, int force, size_t *added)
{
    fr_args_t calls[FR_SEED_PIPELINE];
    offer_t offers[FR_SEED_PIPELINE];
    redisReply *rep[FR_SEED_PIPELINE] = {0};
    size_t nc = (n + FR_SEED_CHUNK - 1) / FR_SEED_CHUNK, sent = 0;
    memset(offers, 0, sizeof offers);
    int rc = 0;
    for (size_t i = 0; i < nc; i++)
        fa_init(&calls[i]);
    for (size_t i = 0; rc == 0 && i < nc; i++) {
        size_t m = n - i * FR_SEED_CHUNK < FR_SEED_CHUNK ? n - i * FR_SEED_CHUNK : FR_SEED_CHUNK;
        rc = build_seed(f, urls + i * FR_SEED_CHUNK, m, force, &offers[i], &calls[i]);
        if (rc == 0)
            rc = fr_send(f, FR_SEED, &calls[i]);
        sent += rc == 0;
    }
    /* the calls sent are read even after a failed build (they ran) */
    int crc = sent && rc != FRONTIER_EIO ? fr_collect(f, FR_SEED, calls, sent, rep) : 0;
    if (rc == 0)
        rc = crc;
    for (size_t i = 0; crc == 0 && i < sent; i++) {
        long nnew =
            rep[i]->type == REDIS_REPLY_STRING
                ? offer_done(f, &offers[i], urls + i * FR_SEED_CHUNK, rep[i]->str, rep[i]->len)
                : -1;
        if (nnew < 0)
            rc = rc ? rc : FRONTIER_EREPLY;
        else
            *added += (size_t)nnew;
    }
    for (size_t i = 0; i < nc; i++) {
        if (rep[i])
            freeReplyObject(rep[i]);
        fa_free(&calls[i]);
        offer_free(&offers[i]);
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
        const char *u = urls[i] ? urls[i] : "";
        for (size_t j = 0, ol = origin_len(u); j < ol; j++)
            h = (h ^ (unsigned char)u[j]) * 1099511628211ULL;
        ord[i] = (seed_ord_t){h, i};
    }
    qsort(ord, n, sizeof *ord, seed_ord_cmp);
    for (size_t i = 0; i < n; i++)
        out[i] = urls[ord[i].i];
    free(ord);
    return out;
}

int frontier_seed(frontier_t *f, const char *const *urls, size_t n, int force, size_t *added)
{
    size_t dummy = 0;
    if (!added)
        added = &dummy;
    *added = 0;
    if (!f || (!urls && n))
        return FRONTIER_EINVAL;
    /* Each script pushes once per host it touches and updates each host's
     * bookkeeping, so seeds grouped by host cost fewer calls per seed (100k
     * seeds over 10,000 hosts: ~26 hosts per script of 256, not 256). */
    const char **grouped = n > FR_SEED_CHUNK ? group_by_origin(urls, n) : NULL;
    if (n > FR_SEED_CHUNK && !grouped)
        return FRONTIER_ENOMEM;
    const char *const *in = grouped ? grouped : urls;
    const size_t per_trip = (size_t)FR_SEED_CHUNK * FR_SEED_PIPELINE;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += per_trip)
        rc = seed_batch(f, in + i, n - i < per_trip ? n - i : per_trip, force, added);
    free(grouped);
    return rc < 0 ? rc : 0;
}

/* ---- retry --------------------------------------------------------------- */

/* backoff_ms * 2^tries, capped, with equal jitter; at least retry_after. */
static uint64_t retry_delay(frontier_t *f, uint32_t tries, uint32_t retry_after_ms)
{
    uint64_t d = f->cfg.backoff_ms;
    for (uint32_t i = 0; i < tries && d < f->cfg.backoff_max_ms; i++)
        d *= 2;
    if (d > f->cfg.backoff_max_ms)
        d = f->cfg.backoff_max_ms;
    d = d / 2 + (uint64_t)(fr_random(f) * (double)(d - d / 2));
    return d < retry_after_ms ? retry_after_ms : d;
}

/* The retry call (frontier/lua/retry.lua), KEYS: ready.
 *   ARGV[1]   P               the key prefix
 *   ARGV[2]   worker          the worker of the item's lease
 *   ARGV[3]   token           its lease number
 *   ARGV[4]   status          HTTP status, 0 if none
 *   ARGV[5]   error           error kind, "" if none
 *   ARGV[6]   delay_ms        the URL's retry delay (retry_delay: backoff, jitter)
 *   ARGV[7]   retry_after_ms  Retry-After, 0 if none: the host waits at least this
 *   ARGV[8]   max_tries       attempts before the dead-letter list
 *   ARGV[9]   backoff_ms      the host's backoff: backoff_ms * 2^(failures-2) ...
 *   ARGV[10]  backoff_max_ms  ... capped at backoff_max_ms ...
 *   ARGV[11]  jitter          ... times 0.5 + 0.5 * jitter (a uniform [0,1))
 *   ARGV[12]  per_host        for waking the host
 *   ARGV[13]  bytes           body bytes received
 * Reply: {lost, dead}. */
static void build_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                        uint32_t retry_after_ms, fr_args_t *a)
{
    const char *w;
    size_t seqlen;
    fr_lease_split(item->lease, &w, &seqlen);
    fa_fcall(a, 1);
    fa_cstr(a, f->ready_key);
    fa_cstr(a, f->prefix);
    fa_cstr(a, w);
    fa_str(a, item->lease, seqlen);
    fa_u64(a, o->status > 0 ? (uint64_t)o->status : 0);
    fa_cstr(a, o->error ? o->error : "");
    fa_u64(a, retry_delay(f, item->tries, retry_after_ms));
    fa_u64(a, retry_after_ms);
    fa_u64(a, f->cfg.max_tries);
    fa_u64(a, f->cfg.backoff_ms);
    fa_u64(a, f->cfg.backoff_max_ms);
    fa_dbl(a, fr_random(f));
    fa_u64(a, f->cfg.per_host);
    fa_u64(a, o->bytes);
}

int frontier_retry(frontier_t *f, const frontier_item_t *item, const frontier_outcome_t *o,
                   uint32_t retry_after_ms)
{
    const char *w;
    size_t seqlen;
    if (!f || !item || !o || fr_lease_split(item->lease, &w, &seqlen) < 0)
        return FRONTIER_EINVAL;
    fr_args_t a;
    fa_init(&a);
    build_retry(f, item, o, retry_after_ms, &a);
    return fr_run_lease_call(f, FR_RETRY, &a);
}
