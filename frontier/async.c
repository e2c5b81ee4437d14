/*
 * async.c -- frontier calls built now, sent when their connection is free,
 * their replies taken without waiting (frontier.h: frontier_call_t).
 *
 * DESIGN: a frontier_call_t is one command (an FCALL of the library, or a
 * plain command such as SMEMBERS) whose arguments are all copies, so that it
 * outlives the handle that built it: a caller queues calls, sends one at a
 * time on a connection of its own (frontier_call_send), takes the reply once
 * it is all there (frontier_call_ready: one read(2) when the socket is
 * readable, never a wait), and reads it with the _end of its kind
 * (frontier_robots_store_end, frontier_retry_end in finish.c,
 * frontier_seed_hosts_end in hostinfo.c).  A call whose connection was lost
 * before its reply is sent again as it is, on the next connection: each
 * kind is safe to run twice (a store is idempotent; a retry run twice finds
 * its lease gone the second time: CRAWL_ELEASE; SMEMBERS reads).  Redis
 * keys: those of the calls' kinds, nothing here.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

frontier_call_t *fr_async_new(int kind, int script)
{
    frontier_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kind = kind;
    c->c.script = script;
    fa_init(&c->c.a);
    return c;
}

void fa_dup(fr_args_t *a, const char *s)
{
    fa_copy(a, s, strlen(s));
}

int frontier_call_send(frontier_t *f, frontier_call_t *c)
{
    if (!f || !c)
        return CRAWL_EINVAL;
    if (c->c.a.oom || c->c.a.n == 0)
        return CRAWL_ENOMEM;
    if (c->c.r) /* the reply of an earlier send: dropped */
        freeReplyObject(c->c.r);
    c->c.r = NULL;
    fr_use(f, c->c.shard); /* the shard it was built for: its connection on f */
    if (c->c.script >= 0)
        return fr_call_send(f, c->c.script, &c->c);
    if (redisAppendCommandArgv(f->rc, (int)c->c.a.n, c->c.a.v, c->c.a.len) != REDIS_OK)
        return CRAWL_EREDIS;
    int done = 0;
    while (!done)
        if (redisBufferWrite(f->rc, &done) != REDIS_OK)
            return CRAWL_EREDIS;
    return 0;
}

int frontier_call_ready(frontier_t *f, frontier_call_t *c)
{
    return f && c ? fr_call_ready(f, &c->c) : CRAWL_EINVAL;
}

int fr_async_reply(frontier_t *f, frontier_call_t *c, int kind, redisReply **out)
{
    *out = NULL;
    if (!f || !c || c->kind != kind)
        return CRAWL_EINVAL;
    if (c->c.script >= 0)
        return fr_call_reply(f, &c->c, out);
    void *r = c->c.r;
    c->c.r = NULL;
    fr_use(f, c->c.shard);
    if (!r) { /* not all there yet: waited for */
        if (redisGetReply(f->rc, &r) != REDIS_OK || !r)
            return CRAWL_EREDIS;
        f->round_trips++;
    }
    *out = r;
    return 0;
}

int fr_lease_reply(const redisReply *r)
{
    uint64_t lost;
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || fr_reply_u64(r->element[0], &lost))
        return CRAWL_EREPLY;
    return lost ? CRAWL_ELEASE : 0;
}

void frontier_call_drop(frontier_call_t *c)
{
    if (!c)
        return;
    fr_call_clear(&c->c);
    free(c);
}
