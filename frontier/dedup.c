/*
 * dedup.c -- exact duplicates across a crawl (frontier.h:
 * frontier_dedup_start): each page's payload digest tested and recorded in
 * one atomic call of its shard (frontier/lua/dedup.lua).
 *
 * DESIGN: a digest's shard is its first 12 base32 characters (60 bits of a
 * SHA-1) mod the shard count, so the digests spread evenly whatever the
 * hosts; one call per shard present in the batch, pipelined.  The pages
 * are the caller's (kept until the call is done); their findings are
 * written into them when the replies are read.  A call may run twice
 * (RCONN_CALL_RESEND: a second run finds the first's record under the same
 * URL, which is no duplicate).  Redis keys: P digests (a hash: digest ->
 * "URL\tms"), one per shard.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

typedef struct dedup_st {
    frontier_dedup_t *d; /* the caller's */
    fr_spread_t sp;      /* [n] pages over the shards */
} dedup_st_t;

static unsigned digest_shard(unsigned nshards, const char *digest)
{
    const char *v = strchr(digest, ':');
    v = v ? v + 1 : digest;
    uint64_t h = 0;
    for (int i = 0; i < 12 && v[i]; i++) {
        char c = v[i];
        unsigned x = c >= 'A' && c <= 'Z'   ? (unsigned)(c - 'A')
                     : c >= '2' && c <= '7' ? 26u + (unsigned)(c - '2')
                                            : 0u;
        h = h << 5 | x;
    }
    return nshards > 1 ? (unsigned)(h % nshards) : 0;
}

void fr_dedup_free(void *p)
{
    dedup_st_t *st = p;
    if (!st)
        return;
    free(st->sp.shard);
    free(st->sp.cmd_shard);
    free(st);
}

/* The dedup call (frontier/lua/dedup.lua) of shard s, KEYS: the guard, ready.
 *   ARGV[1]  P
 *   then per page: its digest (without "sha1:"), its URL, its fetch time (ms)
 * Reply: per page, "" (recorded now, or by this URL before) or the first
 * URL's "URL\tms". */
static void build_dedup(const frontier_t *f, unsigned s, const void *arg, rconn_args_t *a)
{
    const dedup_st_t *st = arg;
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    for (size_t i = 0; i < st->sp.n; i++) {
        if (st->sp.shard[i] != s)
            continue;
        const char *v = strchr(st->d[i].digest, ':');
        rconn_arg_dup(a, v ? v + 1 : st->d[i].digest);
        rconn_arg_dup(a, st->d[i].url);
        rconn_arg_u64(a, (uint64_t)(st->d[i].time_ms > 0 ? st->d[i].time_ms : 0));
    }
}

/* Reads shard s's reply into its pages. */
static int read_dedup(void *arg, unsigned s, const redisReply *r)
{
    dedup_st_t *st = arg;
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    size_t k = 0;
    for (size_t i = 0; i < st->sp.n; i++) {
        if (st->sp.shard[i] != s)
            continue;
        const redisReply *e = k < r->elements ? r->element[k++] : NULL;
        if (!e || e->type != REDIS_REPLY_STRING)
            return CRAWL_EREPLY;
        frontier_dedup_t *d = &st->d[i];
        d->duplicate = e->len > 0;
        if (!d->duplicate)
            continue;
        const char *tab = memchr(e->str, '\t', e->len);
        if (!tab)
            return CRAWL_EREPLY;
        free(d->orig_url);
        if (!(d->orig_url = strndup(e->str, (size_t)(tab - e->str))))
            return CRAWL_ENOMEM;
        d->orig_time_ms = strtoll(tab + 1, NULL, 10);
    }
    return k == r->elements ? 0 : CRAWL_EREPLY;
}

int fr_dedup_step(frontier_t *f, frontier_call_t *c, int wait)
{
    dedup_st_t *st = c->st;
    return fr_spread_step(f, c, &st->sp, wait, read_dedup, st);
}

int frontier_dedup_start(frontier_t *f, frontier_dedup_t *d, size_t n, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out || (!d && n))
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!d[i].digest || !d[i].url)
            return CRAWL_EINVAL;
        d[i].duplicate = 0;
        d[i].orig_url = NULL;
        d[i].orig_time_ms = 0;
    }
    dedup_st_t *st = calloc(1, sizeof *st);
    if (st) {
        st->d = d;
        st->sp.n = n;
        st->sp.shard = calloc(n ? n : 1, sizeof *st->sp.shard);
        st->sp.cmd_shard = calloc(f->nshards, sizeof *st->sp.cmd_shard);
    }
    frontier_call_t *c =
        st && st->sp.shard && st->sp.cmd_shard ? fr_call_new(FR_CALL_DEDUP, st) : NULL;
    if (!c) {
        fr_dedup_free(st);
        return CRAWL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        st->sp.shard[i] = digest_shard(f->nshards, d[i].digest);
    int rc = fr_spread_send(f, c, &st->sp, FR_DEDUP, build_dedup, st);
    if (rc < 0) {
        fr_call_drop(c);
        fr_dedup_free(st);
        return rc;
    }
    *out = c;
    return 0;
}
