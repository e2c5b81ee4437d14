/*
 * calls.c -- calling the frontier's Redis functions: an argument builder and
 * pipelined FCALLs, plus the small readers of their replies.
 *
 * DESIGN: a call's arguments are built in an fr_args_t (binary-safe, its
 * numbers formatted into chunks that never move), then sent with
 * redisAppendCommandArgv.  fr_run pipelines n calls of one function in one
 * round trip and, if the server answers "Function not found" (restarted,
 * FUNCTION FLUSH), loads the library again and resends those calls;
 * fr_send + fr_collect do the same with each call written out as soon as it
 * is built, so Redis runs it while the caller builds the next (seed,
 * finish).  An error reply's text is kept on the handle, its library lines
 * named by their .lua source (frontier_last_error).
 */
#include "frontier_internal.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- argument builder ---------------------------------------------------- */

#define CHUNK_BYTES 8192
struct fr_chunk {
    fr_chunk_t *next;
    size_t used, cap;
    char data[];
};

void fa_init(fr_args_t *a)
{
    memset(a, 0, sizeof *a);
}

void fa_free(fr_args_t *a)
{
    if (!a)
        return;
    while (a->chunks) {
        fr_chunk_t *next = a->chunks->next;
        free(a->chunks);
        a->chunks = next;
    }
    free(a->v);
    free(a->len);
    memset(a, 0, sizeof *a);
}

void fa_str(fr_args_t *a, const char *s, size_t len)
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

void fa_cstr(fr_args_t *a, const char *s)
{
    fa_str(a, s, strlen(s));
}

/* len bytes in the builder's chunks (they never move); NULL when out of
 * memory. */
static char *chunk_alloc(fr_args_t *a, size_t len)
{
    if (a->oom)
        return NULL;
    fr_chunk_t *c = a->chunks;
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

char *fa_alloc(fr_args_t *a, size_t len)
{
    char *p = chunk_alloc(a, len);
    if (p)
        fa_str(a, p, len);
    return a->oom ? NULL : p;
}

void fa_set_u64(fr_args_t *a, size_t i, uint64_t v)
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

void fa_copy(fr_args_t *a, const char *s, size_t len)
{
    char *p = fa_alloc(a, len);
    if (p && len)
        memcpy(p, s, len);
}

void fa_u64(fr_args_t *a, uint64_t v)
{
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    fa_copy(a, buf, (size_t)len);
}

void fa_dbl(fr_args_t *a, double v)
{
    char buf[48];
    int len = snprintf(buf, sizeof buf, "%.6f", v);
    fa_copy(a, buf, (size_t)len);
}

void fa_fcall(fr_args_t *a, size_t numkeys)
{
    fa_cstr(a, "FCALL");
    fa_str(a, "", 0); /* function name: set by fr_run */
    fa_u64(a, numkeys);
}

/* ---- running scripts ----------------------------------------------------- */

/* Keeps the text of an error reply for frontier_last_error, its library
 * lines as file:line.  The scripts' type check (types.lua) says "WRONGTYPE
 * <key> is a <type>, expected a <type>": kept as "<key> is a ...", without
 * the "WRONGTYPE " and the " script: ..." Redis adds. */
static void note_error(frontier_t *f, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ERROR)
        return;
    const char *s = r->str ? r->str : "", *tail;
    if (!strncmp(s, "WRONGTYPE ", 10) && strstr(s, ", expected a ") &&
        (tail = strstr(s, " script: ")) != NULL) {
        snprintf(f->last_error, sizeof f->last_error, "%.*s", (int)(tail - s - 10), s + 10);
        return;
    }
    fr_lua_error(s, f->last_error, sizeof f->last_error);
}

int fr_reply_error(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return CRAWL_EREPLY;
    if (!strncmp(r->str, "WRONGTYPE", 9))
        return CRAWL_EWRONGTYPE;
    if (!strncmp(r->str, "OOM ", 4)) /* refused before it ran: nothing written */
        return CRAWL_ENOROOM;
    if (crawl_retry_reply(r->str)) /* not run here: connect again, to the slot's owner */
        return CRAWL_EREDIS;
    return CRAWL_EREPLY;
}

int fr_wrong_type(struct redisContext *rc, const char *key, size_t keylen, const char *want,
                  char *buf, size_t buflen)
{
    redisReply *r = redisCommand(rc, "TYPE %b", key, keylen);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    snprintf(buf, buflen, "%.*s is a %s, expected a %s", (int)keylen, key, ok ? r->str : "?", want);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : CRAWL_EREDIS;
}

int fr_load(frontier_t *f)
{
    const char *src = fr_library(f->fn);
    redisReply *r = redisCommand(f->rc, "FUNCTION LOAD %s", src);
    f->round_trips++;
    if (!r)
        return CRAWL_EREDIS;
    int rc = r->type == REDIS_REPLY_STRING ||
                     (r->type == REDIS_REPLY_ERROR && strstr(r->str, "already exists"))
                 ? 0
             : r->type == REDIS_REPLY_ERROR && crawl_retry_reply(r->str) ? CRAWL_EREDIS
                                                                         : CRAWL_EREPLY;
    if (rc < 0)
        note_error(f, r);
    freeReplyObject(r);
    return rc;
}

static int is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strstr(r->str, "Function not found");
}

int fr_is_noscript(const redisReply *r)
{
    return is_noscript(r);
}

int fr_try_reply(frontier_t *f, redisReply **out)
{
    void *r = NULL;
    *out = NULL;
    if (redisGetReplyFromReader(f->rc, &r) != REDIS_OK)
        return CRAWL_EREDIS;
    if (!r) { /* nothing whole buffered: read once, only if that cannot block */
        struct pollfd pfd = {.fd = f->rc->fd, .events = POLLIN};
        int ready = poll(&pfd, 1, 0);
        if (ready < 0 && errno != EINTR)
            return CRAWL_EREDIS;
        if (ready <= 0)
            return 0;
        if (redisBufferRead(f->rc) != REDIS_OK || redisGetReplyFromReader(f->rc, &r) != REDIS_OK)
            return CRAWL_EREDIS;
        if (!r)
            return 0;
    }
    f->round_trips++;
    if (!is_noscript(r))
        note_error(f, r);
    *out = r;
    return 1;
}

/* Sends the calls whose rep[i] is NULL and reads their replies; sets
 * *reload if any said NOSCRIPT (that reply dropped, rep[i] left NULL). */
static int send_pending(frontier_t *f, int script, fr_args_t *calls, size_t n, redisReply **rep,
                        int *reload)
{
    for (size_t i = 0; i < n; i++) {
        if (rep[i])
            continue;
        calls[i].v[1] = f->fn[script];
        calls[i].len[1] = strlen(f->fn[script]);
        if (redisAppendCommandArgv(f->rc, (int)calls[i].n, calls[i].v, calls[i].len) != REDIS_OK)
            return CRAWL_EREDIS;
    }
    f->round_trips++;
    *reload = 0;
    int err = 0;
    for (size_t i = 0; i < n; i++) {
        if (rep[i])
            continue;
        void *r = NULL;
        if (redisGetReply(f->rc, &r) != REDIS_OK || !r)
            return CRAWL_EREDIS;
        if (is_noscript(r)) {
            freeReplyObject(r);
            *reload = 1;
            rep[i] = NULL;
            continue;
        }
        note_error(f, r);
        rep[i] = r;
    }
    return err;
}

/* Frees and clears n replies (after a failed pipelined call). */
static void free_replies(struct redisReply **rep, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (rep[i])
            freeReplyObject(rep[i]);
        rep[i] = NULL;
    }
}

int fr_run(frontier_t *f, int script, fr_args_t *calls, size_t n, redisReply **rep)
{
    for (size_t i = 0; i < n; i++) {
        rep[i] = NULL;
        if (calls[i].oom || calls[i].n < 3)
            return CRAWL_ENOMEM;
    }
    int rc = CRAWL_EREPLY;
    for (int attempt = 0; attempt < 3; attempt++) {
        int reload = 0;
        rc = send_pending(f, script, calls, n, rep, &reload);
        if (rc < 0 || !reload)
            break;
        rc = fr_load(f);
        if (rc < 0)
            break;
        rc = CRAWL_EREPLY;
    }
    if (rc < 0)
        free_replies(rep, n);
    return rc;
}

int fr_send(frontier_t *f, int script, fr_args_t *call)
{
    if (call->oom || call->n < 3)
        return CRAWL_ENOMEM;
    call->v[1] = f->fn[script];
    call->len[1] = strlen(f->fn[script]);
    if (redisAppendCommandArgv(f->rc, (int)call->n, call->v, call->len) != REDIS_OK)
        return CRAWL_EREDIS;
    int done = 0;
    while (!done)
        if (redisBufferWrite(f->rc, &done) != REDIS_OK)
            return CRAWL_EREDIS;
    return 0;
}

int fr_collect(frontier_t *f, int script, fr_args_t *calls, size_t n, redisReply **rep)
{
    f->round_trips++;
    int reload = 0, rc = 0;
    for (size_t i = 0; i < n; i++)
        rep[i] = NULL;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        void *r = NULL;
        if (redisGetReply(f->rc, &r) != REDIS_OK || !r)
            rc = CRAWL_EREDIS;
        else if (is_noscript(r)) {
            freeReplyObject(r);
            reload = 1;
        } else {
            note_error(f, r);
            rep[i] = r;
        }
    }
    for (int attempt = 0; rc == 0 && reload && attempt < 2; attempt++) {
        rc = fr_load(f);
        if (rc == 0)
            rc = send_pending(f, script, calls, n, rep, &reload);
    }
    if (rc == 0 && reload)
        rc = CRAWL_EREPLY;
    if (rc < 0)
        free_replies(rep, n);
    return rc;
}

int fr_reply_u64(const redisReply *r, uint64_t *out)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (r->integer < 0)
            return -1;
        *out = (uint64_t)r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20)
        return -1;
    char buf[24], *end;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || *end || buf[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int fr_lease_split(const char *lease, const char **worker, size_t *fieldlen, size_t *originlen)
{
    const char *tab = lease ? strchr(lease, '\t') : NULL, *at;
    if (!tab)
        return CRAWL_EINVAL;
    for (const char *p = lease; p < tab; p++)
        if (*p == '@' || *p == ' ' || *p == '\n')
            return CRAWL_EINVAL;
    for (at = tab + 1; *at >= '0' && *at <= '9'; at++)
        ;
    if (at == tab + 1 || *at != '@' || at[1] == '\0')
        return CRAWL_EINVAL;
    *worker = at + 1;
    *fieldlen = (size_t)(at - lease);
    if (originlen)
        *originlen = (size_t)(tab - lease);
    return 0;
}

double fr_random(frontier_t *f)
{
    uint64_t x = f->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f->rng = x;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* ---- one call without waiting ---------------------------------------------- */

int fr_call_send(frontier_t *f, int script, fr_call_t *c)
{
    c->script = script;
    c->r = NULL;
    c->shard = f->cur;
    return fr_send(f, script, &c->a);
}

int fr_call_ready(frontier_t *f, fr_call_t *c)
{
    if (c->r)
        return 1;
    fr_use(f, c->shard);
    return fr_try_reply(f, &c->r);
}

int fr_call_reply(frontier_t *f, fr_call_t *c, redisReply **out)
{
    int rc = 0;
    fr_use(f, c->shard); /* its connection */
    redisReply *r = c->r;
    c->r = NULL;
    *out = NULL;
    if (!r) /* not all there yet: wait for it (reloading the library if need be) */
        rc = fr_collect(f, c->script, &c->a, 1, &r);
    else if (is_noscript(r)) { /* the library is gone: load it, send the call again */
        freeReplyObject(r);
        r = NULL;
        rc = fr_load(f);
        if (rc == 0)
            rc = fr_run(f, c->script, &c->a, 1, &r);
    }
    if (rc == 0)
        *out = r;
    return rc;
}

int fr_calls_ready(frontier_t *f, fr_call_t *c, size_t n)
{
    /* each connection's replies come in the order its calls were sent:
     * reading them in the calls' order takes each from its connection */
    for (size_t i = 0; i < n; i++)
        if (!c[i].r) {
            fr_use(f, c[i].shard);
            f->wait_fd = f->rc->fd;
            int rc = fr_try_reply(f, &c[i].r);
            if (rc <= 0)
                return rc;
        }
    f->wait_fd = -1;
    return 1;
}

int fr_calls_wait(frontier_t *f, fr_call_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!c[i].r) {
            void *r = NULL;
            fr_use(f, c[i].shard);
            if (redisGetReply(f->rc, &r) != REDIS_OK || !r)
                return CRAWL_EREDIS;
            f->round_trips += i == 0;
            if (!is_noscript(r))
                note_error(f, r);
            c[i].r = r;
        }
    return 0;
}

void fr_call_clear(fr_call_t *c)
{
    if (c->r)
        freeReplyObject(c->r);
    c->r = NULL;
    fa_free(&c->a);
}
