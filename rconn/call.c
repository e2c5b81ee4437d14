/*
 * call.c -- one command to Redis and, once answered, its reply
 * (rconn.h: rconn_call_t, rconn_args_t).
 *
 * DESIGN: a call's arguments are built in an rconn_args_t, binary-safe:
 * strings are borrowed or copied, numbers formatted into chunks that never
 * move, so an argument pointer stays valid while more are added.  The call
 * keeps them until it is freed, so that its link can send it again (after
 * a lost connection, when the caller said it may run twice; or when Redis
 * answered that it did not run it).  A call belongs to its creator; while
 * it is on a link, the link keeps its place in its lists (call->next,
 * ->prev) and its state, and freeing it is the link's business
 * (link.c: rconn_call_free takes it off first).  Redis keys: none.
 */
#include "rconn_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments ------------------------------------------------------------ */

#define CHUNK_BYTES 8192
struct rconn_chunk {
    rconn_chunk_t *next;
    size_t used, cap;
    char data[];
};

void rconn_args_init(rconn_args_t *a)
{
    memset(a, 0, sizeof *a);
}

void rconn_args_free(rconn_args_t *a)
{
    if (!a)
        return;
    while (a->chunks) {
        rconn_chunk_t *next = a->chunks->next;
        free(a->chunks);
        a->chunks = next;
    }
    free(a->v);
    free(a->len);
    memset(a, 0, sizeof *a);
}

void rconn_arg_str(rconn_args_t *a, const char *s, size_t len)
{
    if (a->oom)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        const char **v = realloc(a->v, cap * sizeof *v);
        if (v)
            a->v = v;
        size_t *l = v ? realloc(a->len, cap * sizeof *l) : NULL;
        if (!v || !l) {
            a->oom = 1;
            return;
        }
        a->len = l;
        a->cap = cap;
    }
    a->v[a->n] = s;
    a->len[a->n++] = len;
}

void rconn_arg_cstr(rconn_args_t *a, const char *s)
{
    rconn_arg_str(a, s, strlen(s));
}

/* len bytes in the builder's chunks (they never move); NULL when out of
 * memory. */
static char *chunk_alloc(rconn_args_t *a, size_t len)
{
    if (a->oom)
        return NULL;
    rconn_chunk_t *c = a->chunks;
    if (!c || c->cap - c->used < len) {
        size_t cap = len > CHUNK_BYTES ? len : CHUNK_BYTES;
        c = malloc(sizeof *c + cap);
        if (!c) {
            a->oom = 1;
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->chunks;
        a->chunks = c;
    }
    char *p = c->data + c->used;
    c->used += len;
    return p;
}

char *rconn_arg_alloc(rconn_args_t *a, size_t len)
{
    char *p = chunk_alloc(a, len);
    if (p)
        rconn_arg_str(a, p, len);
    return a->oom ? NULL : p;
}

void rconn_arg_copy(rconn_args_t *a, const char *s, size_t len)
{
    char *p = rconn_arg_alloc(a, len);
    if (p && len)
        memcpy(p, s, len);
}

void rconn_arg_dup(rconn_args_t *a, const char *s)
{
    rconn_arg_copy(a, s, strlen(s));
}

void rconn_arg_u64(rconn_args_t *a, uint64_t v)
{
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    rconn_arg_copy(a, buf, (size_t)len);
}

void rconn_arg_set_u64(rconn_args_t *a, size_t i, uint64_t v)
{
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    char *p = i < a->n ? chunk_alloc(a, (size_t)len) : NULL;
    if (!p)
        return;
    memcpy(p, buf, (size_t)len);
    a->v[i] = p;
    a->len[i] = (size_t)len;
}

void rconn_arg_dbl(rconn_args_t *a, double v)
{
    char buf[48];
    int len = snprintf(buf, sizeof buf, "%.6f", v);
    rconn_arg_copy(a, buf, (size_t)len);
}

/* ---- a call ---------------------------------------------------------------- */

rconn_call_t *rconn_call_new(int slot, unsigned flags)
{
    rconn_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    rconn_args_init(&c->a);
    c->slot = slot >= 0 && slot < RCONN_NSLOTS ? slot : 0;
    c->flags = flags;
    return c;
}

rconn_args_t *rconn_call_args(rconn_call_t *c)
{
    return &c->a;
}

int rconn_call_done(const rconn_call_t *c)
{
    return c->state == RC_CALL_DONE || c->state == RC_CALL_FAILED;
}

int rconn_call_status(const rconn_call_t *c)
{
    return c->state == RC_CALL_DONE ? 0 : c->state == RC_CALL_FAILED ? c->status : CRAWL_EINVAL;
}

redisReply *rconn_call_reply(const rconn_call_t *c)
{
    return c->state == RC_CALL_DONE ? c->r : NULL;
}

void rc_call_set_reply(rconn_call_t *c, redisReply *r)
{
    if (c->r)
        freeReplyObject(c->r);
    c->r = r;
    c->state = r ? RC_CALL_DONE : RC_CALL_NEW;
    c->status = 0;
}
