/*
 * finish.c -- fetched pages finished (frontier_finish and its call
 * frontier_finish_start); a page to be fetched again is retry.c's.
 *
 * DESIGN: finishing n pages is one pipelined round trip of calls of up to
 * 128 pages and 2,048 links (plan_groups: a call's fixed cost, about 200k
 * Redis instructions, is spread over as many pages as keep it short); each
 * call is atomic (leases taken + test-and-add + enqueue + counters), so a
 * crash leaves each page either still leased (re-crawled after the lease
 * expires) or fully finished.  One builder and one reader for every group:
 * the client sums the group's counters as if every lease held, and the
 * script (frontier/lua/finish.lua) takes back out the outcome of a page
 * whose lease it does not find, so the common case (one worker, no lease
 * lost) reads nothing per page.  The links go as link sections (offer.c).
 * A crawl of several shards (docs/sharding.md, "Finish"): the pages are
 * grouped by shard, each page keeps the links of its own shard, and the
 * others go first, as offers to their shards (the seed function's links
 * mode); the groups' calls follow on the same connection, or, on a Redis
 * Cluster, only once every offer has answered (an offer redirected alone
 * would leave its pages acknowledged before their links are in).  A crawl
 * that keeps its page limit in allotments (quota.c) offers every link, its
 * own shard's too, and its pages' calls wait for the offers: the links
 * refused for want of allotment are offered again after a grant
 * (fr_quota_offer_again, blocking: about once a grant's worth of admissions
 * a shard), before any page is acknowledged.
 * A lost connection: every command of a finish may run twice, so the link
 * sends again what lost its reply, and the call goes on after the
 * reconnect.  A group run twice finds its leases gone the second time and
 * changes nothing (finish.lua); an offer run twice answers its first run's
 * codes (its call id: seed.lua).  A page's nnew may then count short (the
 * second run's codes are 'x'); Redis's counters never count twice.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if the page's outcome resets its host's failure count (frontier.h). */
static int resets_host(const frontier_outcome_t *o)
{
    return (!o->error || !*o->error) && o->status > 0 && o->status < 500 && o->status != 429;
}

/* Every page's outcome, as the script reads one back when the page's lease
 * is not found: "R STATUS BYTES SEEN SKIPPED CAPPED ELEN ERROR\n" a page (R:
 * 1 if it resets its host's failure count; SEEN, SKIPPED, CAPPED: what it
 * added to those sums; ELEN: the bytes of ERROR, so any kind reads back
 * whole). */
static void page_outcomes(const frontier_done_t *p, size_t n, const fr_offer_t *o_,
                          const size_t *fseen, rconn_args_t *a)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += 6 * 21 + 7 + (p[i].outcome.error ? strlen(p[i].outcome.error) : 0);
    char *s = rconn_arg_alloc(a, len), *o = s;
    for (size_t i = 0; s && i < n; i++) {
        const frontier_outcome_t *oc = &p[i].outcome;
        const char *e = oc->error ? oc->error : "";
        size_t el = strlen(e);
        o += snprintf(o, 6 * 21 + 7, "%d %d %llu %zu %zu %d %zu ", resets_host(oc),
                      oc->status > 0 ? oc->status : 0, (unsigned long long)oc->bytes,
                      o_[i].cached + (fseen ? fseen[i] : 0), o_[i].skipped, p[i].links_over_cap > 0,
                      el);
        memcpy(o, e, el);
        o += el;
        *o++ = '\n';
    }
    if (s)
        a->len[a->n - 1] = (size_t)(o - s);
}

/* The group's counters, as finish.lua's SUMS lists them, summed over pages
 * p[0..n) as if every lease held. */
static void finish_sums(const frontier_done_t *p, size_t n, const fr_offer_t *o,
                        const size_t *fseen, rconn_args_t *a)
{
    uint64_t c[11] = {n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        int st = p[i].outcome.status > 0 ? p[i].outcome.status : 0;
        c[1] += p[i].outcome.bytes;
        if (st >= 200 && st < 600)
            c[2 + (st / 100 - 2)]++;
        else if (st != 0)
            c[6]++;
        c[7] += p[i].outcome.error && *p[i].outcome.error;
        c[8] += o[i].cached + (fseen ? fseen[i] : 0);
        c[9] += o[i].skipped;
        c[10] += p[i].links_over_cap > 0;
    }
    for (int x = 0; x < 11; x++)
        rconn_arg_u64(a, c[x]);
}

uint64_t fr_pace_ms(const frontier_t *f, const frontier_outcome_t *o)
{
    return (uint64_t)o->fetch_ms * f->cfg.pace_pct / 100;
}

/* The group's hosts, from its pages' leases (the origins the claim stored):
 * nhosts, then per host its origin, its pages, whether one resets its
 * failure count ("1" or "0"), the longest wait its pages ask for
 * (fr_pace_ms) and the address one of them was fetched from, to record as
 * the host's (cfg.host_ip_ms; "": none). */
static void finish_hosts(const frontier_t *f, const frontier_done_t *p, size_t n, rconn_args_t *a)
{
    size_t nh = 0, hidx[FR_FINISH_GROUP], hcnt[FR_FINISH_GROUP], ol[FR_FINISH_GROUP];
    uint64_t hpace[FR_FINISH_GROUP];
    int hok[FR_FINISH_GROUP];
    const char *hip[FR_FINISH_GROUP];
    for (size_t i = 0; i < n; i++) {
        const char *w, *l = p[i].item->lease;
        size_t fl, h = 0;
        fr_lease_split(l, &w, &fl, &ol[i]);
        while (h < nh && !(ol[hidx[h]] == ol[i] && memcmp(p[hidx[h]].item->lease, l, ol[i]) == 0))
            h++;
        if (h == nh) {
            hidx[nh] = i;
            hcnt[nh] = 0;
            hpace[nh] = 0;
            hip[nh] = "";
            hok[nh++] = 0;
        }
        hcnt[h]++;
        if (f->cfg.host_ip_ms && p[i].outcome.ip && *p[i].outcome.ip)
            hip[h] = p[i].outcome.ip;
        hok[h] |= resets_host(&p[i].outcome);
        uint64_t pw = fr_pace_ms(f, &p[i].outcome);
        hpace[h] = pw > hpace[h] ? pw : hpace[h];
    }
    rconn_arg_u64(a, nh);
    for (size_t h = 0; h < nh; h++) {
        rconn_arg_str(a, p[hidx[h]].item->lease, ol[hidx[h]]);
        rconn_arg_u64(a, hcnt[h]);
        rconn_arg_cstr(a, hok[h] ? "1" : "0");
        rconn_arg_u64(a, hpace[h]);
        rconn_arg_cstr(a, hip[h]);
    }
}

/* The group's error kinds: nkinds, then per kind the kind and its pages. */
static void finish_kinds(const frontier_done_t *p, size_t n, rconn_args_t *a)
{
    size_t nk = 0, kidx[FR_FINISH_GROUP], kcnt[FR_FINISH_GROUP];
    for (size_t i = 0; i < n; i++) {
        const char *e = p[i].outcome.error;
        if (!e || !*e)
            continue;
        size_t k = 0;
        while (k < nk && strcmp(p[kidx[k]].outcome.error, e) != 0)
            k++;
        if (k == nk) {
            kidx[nk] = i;
            kcnt[nk++] = 0;
        }
        kcnt[k]++;
    }
    rconn_arg_u64(a, nk);
    for (size_t k = 0; k < nk; k++) {
        rconn_arg_cstr(a, p[kidx[k]].outcome.error);
        rconn_arg_u64(a, kcnt[k]);
    }
}

/* The finish call (frontier/lua/finish.lua) for pages p[0..n), n <=
 * FR_FINISH_GROUP.  KEYS: the guard, ready, then the Bloom blocks of the link sections.
 *   ARGV[1]       P             the key prefix
 *   ARGV[2]       npages
 *   ARGV[3]       max_pages     URLs admitted in all (0: no limit); on a crawl
 *                               that keeps it in allotments, "max_pages:allotment"
 *                               (quota.c: fr_page_limit; its pages carry no links
 *                               to admit then: all go as offers)
 *   ARGV[4]       max_pages_per_host
 *   ARGV[5]       per_host      for waking the hosts
 *   ARGV[6]       delay_ms      the crawl's delay and ...
 *   ARGV[7]       max_delay_ms  ... its cap on a host's own: a host of delay
 *                               d > 0 is claimable again d after this finish
 *   ARGV[8]       k             Bloom bits a link; < 0: the module's layout
 *   ARGV[9]       worker        the worker of the first page's lease
 *   ARGV[10]      nforeign      pages whose lease is another worker's
 *   ARGV[11..21]  sums          over all pages, as if every lease held:
 *                               fetched bytes status_2xx status_3xx status_4xx
 *                               status_5xx status_other errors seen_links
 *                               skipped_links capped_pages (finish_sums)
 *   ARGV[22]      outcomes      what each page added to them (page_outcomes)
 *   ARGV[23]      nhosts        then 5 arguments a host (finish_hosts):
 *                               origin, pages, "1" if one resets its failures,
 *                               the wait its slowest page asks for (fr_pace_ms),
 *                               the address a page came from ("": none)
 *   next          nkinds        then 2 a kind: error kind, pages with it
 *   next          the domain section of the pages' links (fr_offer_domains)
 *   then per page, 2 arguments and its link section:
 *     token       its lease's field "ORIGIN\tSEQ"; its whole lease
 *                 "ORIGIN\tSEQ@WORKER" when the worker is not ARGV[9]
 *     span        arguments of its link section, "0" for none
 *     section     fr_offer_section (offer.c)
 * Reply: {lost, codes, look}: look '+' when the visited set's layers are to
 * be read again (fr_layers_flag), else ""; lost = pages whose lease was not found (expired and
 * reclaimed, the same lease twice, or this call run again after its reply
 * was lost), codes = every page's link codes, one after the other
 * (fr_offer_done; page i has o[i].nsent of them): a page whose lease was
 * not found has its links neither offered nor counted, 'x' each (another
 * worker fetches it again, or this call's first run offered them). */
static int build_finish(frontier_t *f, unsigned s, const frontier_done_t *p, size_t n,
                        fr_offer_t *o, const size_t *fseen, rconn_args_t *a)
{
    fr_blocks_t bl = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if ((rc = fr_offer_prepare(f, s, p[i].links, p[i].nlinks, 1,
                                   p[i].link_depth > f->cfg.max_depth, &bl, &o[i])) == 0)
            o[i].firsts = p[i].link_first;
    if (rc == 0)
        rc = fr_offer_keys(f, s, &bl, a);
    size_t nblocks = bl.n;
    fr_blocks_free(&bl);
    if (rc < 0)
        return rc;
    const char *w0, *w;
    size_t fl, nforeign = 0;
    fr_lease_split(p[0].item->lease, &w0, &fl, NULL);
    for (size_t i = 0; i < n; i++) {
        fr_lease_split(p[i].item->lease, &w, &fl, NULL);
        nforeign += strcmp(w, w0) != 0;
    }
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_u64(a, n);
    fr_page_limit(f, s, a);
    rconn_arg_u64(a, f->cfg.max_pages_per_host);
    rconn_arg_u64(a, f->cfg.per_host);
    rconn_arg_u64(a, f->cfg.delay_ms);
    rconn_arg_u64(a, f->cfg.max_delay_ms);
    fr_offer_k(f, s, o, n, nblocks, a);
    rconn_arg_cstr(a, w0);
    rconn_arg_u64(a, nforeign);
    finish_sums(p, n, o, fseen, a);
    page_outcomes(p, n, o, fseen, a);
    finish_hosts(f, p, n, a);
    finish_kinds(p, n, a);
    fr_srcs_t src = {0}; /* every link of the pages, with its page: for the in-links */
    size_t nl = 0;
    for (size_t i = 0; f->cfg.pages_per_inlink && i < n; i++)
        nl += p[i].nlinks;
    const char **from = nl ? malloc(nl * sizeof *from) : NULL,
               **link = nl ? malloc(nl * sizeof *link) : NULL;
    if (nl && (!from || !link))
        rc = CRAWL_ENOMEM;
    for (size_t i = 0; from && link && i < n; i++)
        for (size_t j = 0; j < p[i].nlinks; j++, src.n++) {
            link[src.n] = p[i].links[j];
            from[src.n] = p[i].item->url;
        }
    src.link = link;
    src.from = from;
    fr_offer_domains(f, o, n, &src, a);
    free(from);
    free(link);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        fr_lease_split(p[i].item->lease, &w, &fl, NULL);
        rconn_arg_str(a, p[i].item->lease, strcmp(w, w0) == 0 ? fl : strlen(p[i].item->lease));
        if (o[i].nsent == 0) {
            rconn_arg_u64(a, 0);
            continue;
        }
        rconn_arg_u64(a, fr_offer_span(f, &o[i]));
        fr_offer_section(f, &o[i], p[i].links, p[i].link_depth, p[i].link_hops, a);
    }
    return 0;
}

/* Reads the reply of one finish call (build_finish) into the pages' nnew;
 * CRAWL_ELEASE if a lease was lost. */
static int read_finish(frontier_t *f, unsigned s, const frontier_done_t *p, size_t n,
                       const fr_offer_t *o, const redisReply *r)
{
    uint64_t lost;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || fr_reply_u64(r->element[0], &lost) ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING)
        return CRAWL_EREPLY;
    if (r->element[2]->len) /* '+': the visited set's layers (offer.lua: LAYERS.done) */
        fr_layers_flag(f, s);
    const redisReply *codes = r->element[1];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        long nnew = at + o[i].nsent <= codes->len
                        ? fr_offer_done(f, s, &o[i], p[i].links, codes->str + at, o[i].nsent)
                        : -1;
        if (nnew < 0)
            return CRAWL_EREPLY;
        at += o[i].nsent;
        if (p[i].nnew)
            *p[i].nnew = (size_t)nnew;
    }
    if (at != codes->len)
        return CRAWL_EREPLY;
    return lost ? CRAWL_ELEASE : 0;
}

/* Cuts pages[0..n) into calls: group c is pages[at[c]..at[c+1]), at most
 * FR_FINISH_GROUP pages and, unless its one page has more, FR_FINISH_LINKS
 * links (so one call never holds Redis long).  Returns the number of groups
 * (0 when out of memory, n > 0). */
static size_t plan_groups(const frontier_done_t *pages, size_t n, const unsigned *shard,
                          size_t **at_out)
{
    size_t *at = malloc((n + 1) * sizeof *at), nc = 0, links = 0;
    *at_out = at;
    if (!at)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t in = nc ? i - at[nc - 1] : 0;
        if (nc == 0 || in == FR_FINISH_GROUP || links + pages[i].nlinks > FR_FINISH_LINKS ||
            (shard && shard[i] != shard[i - 1])) {
            at[nc++] = i;
            links = 0;
        }
        links += pages[i].nlinks;
    }
    at[nc] = n;
    return nc;
}

/* The links of a batch's pages that belong to one other shard, at one depth
 * and hop count: offered there, before the pages' own calls. */
typedef struct fr_bucket {
    unsigned shard;
    uint32_t depth, hops;
    const char **links;
    size_t *page;          /* [n]: each link's page, as an index in the caller's pages */
    unsigned char *firsts; /* [n]: each link's frontier_done_t.link_first (0 without) */
    size_t n, cap;
} fr_bucket_t;

/* A finish in flight.  The caller's pages are put in shard order, each
 * with the links of its own shard; the links of other shards go to buckets
 * (one a shard, depth and hop count), offered in calls of FR_SEED_CHUNK
 * links.  c->cmd: the offers first (nof), then the groups' calls as sent. */
typedef struct finish_st {
    const frontier_done_t *caller; /* the caller's pages [n] */
    size_t n;
    frontier_done_t *pages;   /* [n] the caller's pages in shard order, each with its own links */
    size_t *orig;             /* [n] pages[i] is caller[orig[i]] */
    unsigned *shard;          /* [n] pages[i]'s shard */
    const char **own;         /* the pages' own links, one page after the other */
    unsigned char *own_first; /* [as own] their link_first flags */
    size_t *own_new;          /* [n] pages[i]'s new links of its own shard */
    size_t *other_new;        /* [n] caller[j]'s new links of other shards */
    size_t *fseen;            /* [n] pages[i]: links of other shards counted as seen */
    fr_bucket_t *b;
    size_t nb, bcap;
    size_t nof;           /* offers: c->cmd[0..nof) */
    fr_offer_t *offers;   /* [nof + n]: the offers' then the pages' */
    size_t *ob, *oat;     /* offer k: bucket ob[k], from its link oat[k] */
    size_t *at, nc;       /* group g: pages[at[g]..at[g+1]) */
    rconn_call_t **group; /* [nc] the groups' calls, built; sent in c->cmd[nof..] */
    int deferred;         /* the groups wait for the offers' answers (a Redis Cluster, or a
                             quota crawl) */
    int phase;            /* 0: the offers in flight (deferred), 1: the groups in flight */
    fr_refused_t q;       /* links the offers refused for want of allotment (quota.c) */
    int err;              /* a failure while sending: the outcome, once what went out is read */
} finish_st_t;

void fr_finish_free(void *p)
{
    finish_st_t *s = p;
    if (!s)
        return;
    for (size_t i = 0; i < s->nb; i++) {
        free(s->b[i].links);
        free(s->b[i].page);
        free(s->b[i].firsts);
    }
    for (size_t i = 0; s->offers && i < s->nof + s->n; i++)
        fr_offer_free(&s->offers[i]);
    for (size_t g = 0; s->group && g < s->nc; g++)
        rconn_call_free(s->group[g]); /* (NULL once handed to the call) */
    fr_refused_free(&s->q);
    free(s->group);
    free(s->b);
    free(s->pages);
    free(s->orig);
    free(s->shard);
    free(s->own);
    free(s->own_first);
    free(s->own_new);
    free(s->other_new);
    free(s->fseen);
    free(s->offers);
    free(s->ob);
    free(s->oat);
    free(s->at);
    free(s);
}

/* Adds link (of caller page pg, depth/hops) to the bucket of its shard. */
static int bucket_add(finish_st_t *s, unsigned shard, const frontier_done_t *pg, size_t page,
                      const char *link, unsigned char first)
{
    size_t i = 0;
    while (i < s->nb && !(s->b[i].shard == shard && s->b[i].depth == pg->link_depth &&
                          s->b[i].hops == pg->link_hops))
        i++;
    if (i == s->nb) {
        if (s->nb == s->bcap) {
            size_t cap = s->bcap ? 2 * s->bcap : 16;
            fr_bucket_t *nb = realloc(s->b, cap * sizeof *nb);
            if (!nb)
                return CRAWL_ENOMEM;
            s->b = nb;
            s->bcap = cap;
        }
        s->b[s->nb++] =
            (fr_bucket_t){.shard = shard, .depth = pg->link_depth, .hops = pg->link_hops};
    }
    fr_bucket_t *b = &s->b[i];
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        const char **nl = realloc(b->links, cap * sizeof *nl);
        if (nl)
            b->links = nl;
        size_t *np = nl ? realloc(b->page, cap * sizeof *np) : NULL;
        if (np)
            b->page = np;
        unsigned char *nf = np ? realloc(b->firsts, cap) : NULL;
        if (!nf)
            return CRAWL_ENOMEM;
        b->firsts = nf;
        b->cap = cap;
    }
    b->links[b->n] = link;
    b->firsts[b->n] = first;
    b->page[b->n++] = page;
    return 0;
}

/* Splits the caller's pages (finish_split): each page's own links stay with it (the pages
 * put in shard order), the others go to their shard's bucket. */
static int finish_split(frontier_t *f, finish_st_t *s)
{
    size_t n = s->n, nl = 0;
    for (size_t i = 0; i < n; i++)
        nl += s->caller[i].nlinks;
    s->pages = calloc(n, sizeof *s->pages);
    s->orig = calloc(n, sizeof *s->orig);
    s->shard = calloc(n, sizeof *s->shard);
    s->own = calloc(nl ? nl : 1, sizeof *s->own);
    s->own_first = calloc(nl ? nl : 1, 1);
    s->own_new = calloc(n, sizeof *s->own_new);
    s->other_new = calloc(n, sizeof *s->other_new);
    s->fseen = calloc(n, sizeof *s->fseen);
    unsigned *ps = calloc(n, sizeof *ps);
    int rc = s->pages && s->orig && s->shard && s->own && s->own_first && s->own_new &&
                     s->other_new && s->fseen && ps
                 ? 0
                 : CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        ps[i] = fr_item_shard(f, s->caller[i].item);
    /* pages in shard order (each shard's in the caller's order) */
    size_t k = 0, used = 0;
    for (unsigned sh = 0; rc == 0 && k < n && sh < f->nshards; sh++)
        for (size_t i = 0; i < n; i++)
            if (ps[i] == sh) {
                s->orig[k] = i;
                s->shard[k++] = sh;
            }
    for (size_t x = 0; rc == 0 && x < n; x++) {
        size_t i = s->orig[x];
        const frontier_done_t *pg = &s->caller[i];
        s->pages[x] = *pg;
        s->pages[x].links = s->own + used;
        s->pages[x].link_first = pg->link_first ? s->own_first + used : NULL;
        s->pages[x].nlinks = 0;
        s->pages[x].nnew = &s->own_new[x];
        int skip_all = pg->link_depth > f->cfg.max_depth; /* all skipped by the page's call */
        for (size_t j = 0; rc == 0 && j < pg->nlinks; j++) {
            unsigned ls;
            /* a quota crawl's page admits none of its links itself: its own
             * shard's go as an offer too, which can be refused and made again */
            unsigned char first = pg->link_first ? pg->link_first[j] : 0;
            if (skip_all || !pg->links[j] || fr_shard_find(f->nshards, pg->links[j], &ls) < 0 ||
                (ls == ps[i] && !f->quota)) {
                s->own_first[used + s->pages[x].nlinks] = first;
                s->own[used + s->pages[x].nlinks++] = pg->links[j];
            } else {
                rc = bucket_add(s, ls, pg, i, pg->links[j], first);
            }
        }
        used += s->pages[x].nlinks;
    }
    free(ps);
    return rc;
}

/* Reads offer call k's reply: its links' codes, each new one counted to
 * its page, each refused for want of allotment (a quota crawl) kept for
 * fr_quota_offer_again. */
static int read_offer(frontier_t *f, finish_st_t *s, size_t k, const redisReply *r)
{
    const fr_bucket_t *b = &s->b[s->ob[k]];
    const fr_offer_t *o = &s->offers[k];
    uint64_t base;
    int refused, look;
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    long len = fr_offer_codes(r, o->nsent, &refused, &base, &look);
    if (look)
        fr_layers_flag(f, b->shard);
    if (len < 0 || fr_offer_done(f, b->shard, o, b->links + s->oat[k], r->str, (size_t)len) < 0)
        return CRAWL_EREPLY;
    int woke = 0, rc = 0;
    for (size_t j = 0; rc == 0 && j < o->nsent; j++) {
        size_t l = s->oat[k] + o->v[j].idx; /* its index in the bucket */
        if (r->str[j] == 'n') {
            s->other_new[b->page[l]]++;
            woke = 1;
        } else if (r->str[j] == 'q' && refused) {
            fr_refused_link_t rl = {.link = b->links[l],
                                    .tag = b->page[l],
                                    .shard = b->shard,
                                    .depth = b->depth,
                                    .hops = b->hops,
                                    .first = b->firsts[l]};
            rc = fr_refused_add(f, &s->q, &rl, base);
        }
    }
    if (woke)
        fr_wake(f, b->shard);
    return rc;
}

/* Builds the calls: the offers to other shards (sent), then each group of
 * pages in its shard (sent unless deferred).  On one connection Redis runs
 * them in that order, so a page is acknowledged only after its links are in
 * their shards. */
static int finish_send(frontier_t *f, frontier_call_t *c, finish_st_t *s)
{
    for (size_t i = 0; i < s->nb; i++)
        s->nof += (s->b[i].n + FR_SEED_CHUNK - 1) / FR_SEED_CHUNK;
    s->nc = s->n ? plan_groups(s->pages, s->n, s->shard, &s->at) : 0;
    if (s->n && !s->nc)
        return CRAWL_ENOMEM;
    s->offers = calloc(s->nof + s->n + 1, sizeof *s->offers);
    s->ob = calloc(s->nof + 1, sizeof *s->ob);
    s->oat = calloc(s->nof + 1, sizeof *s->oat);
    s->group = calloc(s->nc + 1, sizeof *s->group);
    if (!s->offers || !s->ob || !s->oat || !s->group)
        return CRAWL_ENOMEM;
    s->deferred = s->nof && (f->cluster || f->quota);
    int rc = 0;
    size_t k = 0;
    rconn_link_cork(f->link); /* one round trip */
    for (size_t i = 0; rc == 0 && i < s->nb; i++) {
        const fr_bucket_t *b = &s->b[i];
        for (size_t at = 0; rc == 0 && at < b->n; at += FR_SEED_CHUNK, k++) {
            size_t m = b->n - at < FR_SEED_CHUNK ? b->n - at : FR_SEED_CHUNK;
            rconn_call_t *cmd = NULL;
            s->ob[k] = i;
            s->oat[k] = at;
            const char *src[FR_SEED_CHUNK]; /* each link's page */
            for (size_t j = 0; j < m; j++)
                src[j] = s->caller[b->page[at + j]].item->url;
            rc = fr_offer_call(f, b->shard, b->links + at, m, b->depth, b->hops, src,
                               b->firsts + at, &s->offers[k], &cmd);
            s->fseen[0] += s->offers[k].cached; /* the batch's seen_links: counted once */
            if (rc == 0)
                rc = fr_call_add(f, c, cmd);
        }
    }
    for (size_t g = 0; rc == 0 && g < s->nc; g++) {
        size_t at = s->at[g], m = s->at[g + 1] - at;
        unsigned sh = s->shard[at];
        rconn_call_t *cmd = fr_fcall(f, sh, FR_FINISH, 1, RCONN_CALL_RESEND);
        rc = cmd ? build_finish(f, sh, s->pages + at, m, s->offers + s->nof + at, s->fseen + at,
                                rconn_call_args(cmd))
                 : CRAWL_ENOMEM;
        if (rc < 0)
            rconn_call_free(cmd);
        else if (s->deferred)
            s->group[g] = cmd;
        else
            rc = fr_call_add(f, c, cmd);
    }
    rconn_link_uncork(f->link);
    s->phase = !s->deferred;
    return rc;
}

/* The offers answered (a deferred finish): their codes read, the links
 * refused for want of allotment offered again (blocking), then the groups
 * sent.  0, or the failure (the pages stay leased, their calls unsent). */
static int finish_groups(frontier_t *f, frontier_call_t *c, finish_st_t *s)
{
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->nof; k++) {
        redisReply *r;
        rc = fr_answered(f, c->cmd[k], &r);
        rc = rc < 0 ? rc : read_offer(f, s, k, r); /* one failed: no page acknowledged */
    }
    if (rc == 0 && s->q.n) /* a quota crawl: links refused for want of allotment */
        rc = fr_quota_offer_again(f, &s->q, s->other_new);
    rconn_link_cork(f->link);
    for (size_t g = 0; rc == 0 && g < s->nc; g++) {
        rconn_call_t *cmd = s->group[g];
        s->group[g] = NULL;
        rc = fr_call_add(f, c, cmd);
    }
    rconn_link_uncork(f->link);
    s->phase = 1;
    return rc;
}

/* Every command answered: the offers' codes (unless read before the
 * groups were sent) and the groups' replies read, the pages' nnew written.
 * The outcome: a failure, else a script's error, else CRAWL_ELEASE if a
 * lease was lost, else 0. */
static int finish_read(frontier_t *f, frontier_call_t *c, finish_st_t *s)
{
    int rc = 0;
    for (size_t k = s->deferred ? s->nof : 0; k < c->n; k++) {
        redisReply *r;
        int prc = fr_answered(f, c->cmd[k], &r);
        if (prc > 0 && k < s->nof) {
            prc = read_offer(f, s, k, r);
        } else if (prc > 0) {
            size_t g = k - s->nof, at = s->at[g], m = s->at[g + 1] - at;
            prc = r->type == REDIS_REPLY_ERROR
                      ? fr_reply_error(r)
                      : read_finish(f, s->shard[at], s->pages + at, m, s->offers + s->nof + at, r);
            fr_wake(f, s->shard[at]); /* its hosts have room again, its links are queued */
        }
        if (prc == CRAWL_EREDIS) {
            rc = prc;
            break;
        }
        if (prc < 0 && (rc == 0 || rc == CRAWL_ELEASE))
            rc = prc; /* a script error outranks a lost lease */
    }
    for (size_t x = 0; x < s->n; x++) {
        size_t i = s->orig[x];
        if (s->caller[i].nnew)
            *s->caller[i].nnew = s->own_new[x] + s->other_new[i];
    }
    return s->err && rc != CRAWL_EREDIS ? s->err : rc;
}

int fr_finish_step(frontier_t *f, frontier_call_t *c, int wait)
{
    finish_st_t *s = c->st;
    for (;;) {
        int rc = fr_call_settle(f, c, 0, wait);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return fr_call_finish(c, rc);
        if (s->phase == 1)
            return fr_call_finish(c, finish_read(f, c, s));
        if ((rc = finish_groups(f, c, s)) < 0)
            return fr_call_finish(c, rc);
    }
}

int frontier_finish_start(frontier_t *f, const frontier_done_t *pages, size_t n,
                          frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || (!pages && n) || !out)
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++) { /* before any group is sent */
        const char *w;
        size_t seqlen;
        if (!pages[i].item || fr_lease_split(pages[i].item->lease, &w, &seqlen, NULL) < 0 ||
            (pages[i].nlinks && !pages[i].links))
            return CRAWL_EINVAL;
    }
    finish_st_t *s = calloc(1, sizeof *s);
    frontier_call_t *c = s ? fr_call_new(FR_CALL_FINISH, s) : NULL;
    if (!c) {
        free(s);
        return CRAWL_ENOMEM;
    }
    s->caller = pages;
    s->n = n;
    int rc = finish_split(f, s);
    if (rc == 0)
        rc = finish_send(f, c, s);
    if (rc < 0 && c->n) {
        /* some commands went out and run: read (waiting for them), the
         * outcome this failure; the pages of the rest stay leased */
        s->err = rc;
        s->phase = 1;
        s->deferred = 0;
        if (fr_call_wait(f, c, 0) == 0)
            rc = finish_read(f, c, s);
    }
    if (rc < 0) {
        fr_call_drop(c);
        fr_finish_free(s);
        return rc;
    }
    *out = c;
    return 0;
}
