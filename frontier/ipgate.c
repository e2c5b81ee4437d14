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
    size_t n;
    unsigned *shard;     /* [n] */
    unsigned *cmd_shard; /* the shard of each command, in the order sent */
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
    free(st->shard);
    free(st->cmd_shard);
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
static void build_ipgate(const frontier_t *f, unsigned s, const ipgate_st_t *st, uint32_t per,
                         uint32_t gap, uint32_t hold, rconn_args_t *a)
{
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_u64(a, per);
    rconn_arg_u64(a, gap);
    rconn_arg_u64(a, hold);
    char tok[256];
    for (size_t i = 0; i < st->n; i++) {
        if (st->shard[i] != s)
            continue;
        rconn_arg_cstr(a, st->s[i].ret ? "r" : "a");
        rconn_arg_dup(a, st->s[i].ip);
        snprintf(tok, sizeof tok, "%s:%llu", f->worker, (unsigned long long)st->s[i].token);
        rconn_arg_dup(a, tok);
    }
}

/* Reads shard s's reply into its slots. */
static int read_ipgate(ipgate_st_t *st, unsigned s, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    size_t k = 0;
    for (size_t i = 0; i < st->n; i++) {
        if (st->shard[i] != s)
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
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    ipgate_st_t *st = c->st;
    for (size_t k = 0; rc > 0 && k < c->n; k++) {
        redisReply *r = NULL;
        if ((rc = fr_answered(f, c->cmd[k], &r)) > 0) {
            int e = read_ipgate(st, st->cmd_shard[k], r);
            rc = e == 0 ? 1 : e;
        }
    }
    return fr_call_finish(c, rc > 0 ? 0 : rc);
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
        st->s = s;
        st->n = n;
        st->shard = calloc(n, sizeof *st->shard);
        st->cmd_shard = calloc(f->nshards, sizeof *st->cmd_shard);
    }
    frontier_call_t *c = st && st->shard && st->cmd_shard ? fr_call_new(FR_CALL_IPGATE, st) : NULL;
    if (!c) {
        fr_ipgate_free(st);
        return CRAWL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        st->shard[i] = ip_shard(f->nshards, s[i].ip);
    int rc = 0;
    rconn_link_cork(f->link); /* one round trip */
    for (unsigned sh = 0; rc == 0 && sh < f->nshards; sh++) {
        size_t i = 0;
        while (i < n && st->shard[i] != sh)
            i++;
        if (i == n)
            continue;
        rconn_call_t *cmd = fr_fcall(f, sh, FR_IPGATE, 1, RCONN_CALL_RESEND);
        if (!cmd) {
            rc = CRAWL_ENOMEM;
            break;
        }
        build_ipgate(f, sh, st, per_ip, gap_ms, hold_ms, rconn_call_args(cmd));
        st->cmd_shard[c->n] = sh;
        rc = fr_call_add(f, c, cmd);
    }
    rconn_link_uncork(f->link);
    if (rc < 0) {
        fr_call_drop(c);
        fr_ipgate_free(st);
        return rc;
    }
    *out = c;
    return 0;
}
