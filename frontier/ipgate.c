/*
 * ipgate.c -- politeness per IP address (frontier.h: frontier_ipgate_start):
 * the slots of a batch of addresses asked for and given back, in one
 * atomic call per shard (frontier/lua/ipgate.lua).
 *
 * DESIGN: an address's shard is xxh64 of its text mod the shard count, so
 * every worker of the crawl, on any machine, counts an address in one
 * place whatever the hosts that resolve to it (their own shards follow
 * their registered domains).  One call per shard present in the batch,
 * pipelined on the link; the slots are the caller's until the call is done
 * and get their answers when the replies are read.  A holder's token is
 * "WORKER:N" (the handle's worker id and the caller's number).  A call
 * may run twice (RCONN_CALL_RESEND: an ask with a token already holding
 * keeps it, a second return changes nothing).  Redis keys: P ip:ADDR (a
 * sorted set, one per address in use), on the address's shard.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct ipgate_st {
    frontier_ipslot_t *s; /* the caller's */
    fr_spread_t sp;       /* [n] slots over the shards */
    uint32_t per, gap, hold;
} ipgate_st_t;

static unsigned ip_shard(unsigned nshards, const char *ip)
{
    return nshards > 1 ? (unsigned)(XXH64(ip, strlen(ip), 0) % nshards) : 0;
}

void fr_ipgate_free(void *p)
{
    ipgate_st_t *st = p;
    if (!st)
        return;
    free(st->sp.shard);
    free(st->sp.cmd_shard);
    free(st);
}

/* The ipgate call (frontier/lua/ipgate.lua) of shard s, KEYS: the guard, ready.
 *   ARGV[1]  P
 *   ARGV[2]  per_ip: slots of an address
 *   ARGV[3]  gap (ms): between two grants, and from a return to the next grant
 *   ARGV[4]  hold (ms): a slot not given back by then lapses
 *   then per slot: "a" (an ask) or "r" (a return), the address, the token
 * Reply: per slot, in order: an ask's 0 (granted), W > 0 (the next grant
 * is W ms away) or -1 (every slot is held); a return's 0. */
static void build_ipgate(const frontier_t *f, unsigned s, const void *arg, rconn_args_t *a)
{
    const ipgate_st_t *st = arg;
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_u64(a, st->per);
    rconn_arg_u64(a, st->gap);
    rconn_arg_u64(a, st->hold);
    char tok[256];
    for (size_t i = 0; i < st->sp.n; i++) {
        if (st->sp.shard[i] != s)
            continue;
        rconn_arg_cstr(a, st->s[i].ret ? "r" : "a");
        rconn_arg_dup(a, st->s[i].ip);
        snprintf(tok, sizeof tok, "%s:%llu", f->worker, (unsigned long long)st->s[i].token);
        rconn_arg_dup(a, tok);
    }
}

/* Reads shard s's reply into its slots. */
static int read_ipgate(void *arg, unsigned s, const redisReply *r)
{
    ipgate_st_t *st = arg;
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    size_t k = 0;
    for (size_t i = 0; i < st->sp.n; i++) {
        if (st->sp.shard[i] != s)
            continue;
        const redisReply *e = k < r->elements ? r->element[k++] : NULL;
        if (!e || e->type != REDIS_REPLY_INTEGER)
            return CRAWL_EREPLY;
        long long w = e->integer;
        st->s[i].wait_ms = w < -1 ? -1 : w > INT32_MAX ? INT32_MAX : (int32_t)w;
    }
    return k == r->elements ? 0 : CRAWL_EREPLY;
}

int fr_ipgate_step(frontier_t *f, frontier_call_t *c, int wait)
{
    ipgate_st_t *st = c->st;
    return fr_spread_step(f, c, &st->sp, wait, read_ipgate, st);
}

int frontier_ipgate_start(frontier_t *f, frontier_ipslot_t *s, size_t n, uint32_t per_ip,
                          uint32_t gap_ms, uint32_t hold_ms, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out || !n || !s || per_ip == 0)
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!s[i].ip[0])
            return CRAWL_EINVAL;
        s[i].wait_ms = -1;
    }
    ipgate_st_t *st = calloc(1, sizeof *st);
    if (st) {
        *st = (ipgate_st_t){.s = s, .per = per_ip, .gap = gap_ms, .hold = hold_ms};
        st->sp.n = n;
        st->sp.shard = calloc(n, sizeof *st->sp.shard);
        st->sp.cmd_shard = calloc(f->nshards, sizeof *st->sp.cmd_shard);
    }
    frontier_call_t *c =
        st && st->sp.shard && st->sp.cmd_shard ? fr_call_new(FR_CALL_IPGATE, st) : NULL;
    if (!c) {
        fr_ipgate_free(st);
        return CRAWL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        st->sp.shard[i] = ip_shard(f->nshards, s[i].ip);
    int rc = fr_spread_send(f, c, &st->sp, FR_IPGATE, build_ipgate, st);
    if (rc < 0) {
        fr_call_drop(c);
        fr_ipgate_free(st);
        return rc;
    }
    *out = c;
    return 0;
}
