/*
 * calls.c -- a handle's commands on its link, and the container of a call
 * in flight (frontier_internal.h).
 *
 * DESIGN: every command of a handle is an rconn_call_t for the slot of the
 * shard whose keys it touches, sent on the handle's link (rconn.h): the
 * link owns the connections, pipelines, loads the Functions library and
 * sends a call again when Redis lost it, and sends again after a reconnect
 * what may run twice.  Here: making an FCALL of the library's function
 * (its registered name, "cf<hash>_<name>") or a plain command, sending
 * several in one round trip, reading a reply and keeping an error reply's
 * text for frontier_last_error (its library lines named by their .lua
 * source).  A frontier_call_t is a kind, its commands in the order sent,
 * its kind's state and its result; its kind's file steps it.  The
 * handle-less functions (control.c) run their one FCALL on a raw
 * connection through fr_raw_fcall, which loads the library there when
 * needed.  Redis keys: none of its own.
 */
#include "frontier_internal.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- commands ------------------------------------------------------------------- */

rconn_call_t *fr_fcall(frontier_t *f, unsigned s, int script, size_t numkeys, unsigned flags)
{
    rconn_call_t *c = rconn_call_new(f->shard[s < f->nshards ? s : 0].slot, flags);
    if (!c)
        return NULL;
    rconn_args_t *a = rconn_call_args(c);
    rconn_arg_cstr(a, "FCALL");
    rconn_arg_cstr(a, f->fn[script]);
    rconn_arg_u64(a, numkeys + 1);
    /* KEYS[1]: the shard's guard key, which never exists.  While a slot
     * migrates between two masters (a resharding), Redis runs a call only
     * where all its keys are, and refuses (ASK, then TRYAGAIN) one that
     * names a key missing on both sides: so no call runs while the shard's
     * keys are split, which would read the keys already moved as empty and
     * write new ones beside them.  The link waits the migration out. */
    rconn_arg_cstr(a, f->shard[s < f->nshards ? s : 0].guard_key);
    return c;
}

rconn_call_t *fr_cmd(frontier_t *f, unsigned s, unsigned flags)
{
    return rconn_call_new(f->shard[s < f->nshards ? s : 0].slot, flags);
}

void fr_send(frontier_t *f, rconn_call_t *c)
{
    rconn_link_send(f->link, c);
}

/* Keeps the text of an error reply for frontier_last_error, its library
 * lines as file:line.  The scripts' type check (types.lua) says "WRONGTYPE
 * <key> is a <type>, expected a <type>": kept as "<key> is a ...", without
 * the "WRONGTYPE " and the " script: ..." Redis adds. */
static void note_error(frontier_t *f, const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return;
    const char *s = r->str ? r->str : "", *tail;
    if (!strncmp(s, "WRONGTYPE ", 10) && strstr(s, ", expected a ") &&
        (tail = strstr(s, " script: ")) != NULL) {
        snprintf(f->last_error, sizeof f->last_error, "%.*s", (int)(tail - s - 10), s + 10);
        return;
    }
    fr_lua_error(s, f->last_error, sizeof f->last_error);
}

int fr_answered(frontier_t *f, rconn_call_t *c, redisReply **r)
{
    *r = NULL;
    if (!rconn_call_done(c))
        return 0;
    int st = rconn_call_status(c);
    if (st < 0)
        return st;
    *r = rconn_call_reply(c);
    note_error(f, *r);
    return 1;
}

int fr_wait(frontier_t *f, rconn_call_t *c, redisReply **r)
{
    *r = NULL;
    int rc = rconn_link_wait(f->link, c);
    if (rc < 0)
        return rc;
    rc = fr_answered(f, c, r);
    return rc < 0 ? rc : rc == 1 ? 0 : CRAWL_EREDIS;
}

int fr_run(frontier_t *f, rconn_call_t **c, size_t n)
{
    rconn_link_cork(f->link);
    for (size_t i = 0; i < n; i++)
        fr_send(f, c[i]);
    rconn_link_uncork(f->link);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r;
        int w = fr_wait(f, c[i], &r);
        if (w < 0 && rc == 0)
            rc = w;
    }
    return rc;
}

redisContext *fr_context(frontier_t *f, unsigned s)
{
    return rconn_link_context(f->link, f->shard[s < f->nshards ? s : 0].slot);
}

/* ---- replies ------------------------------------------------------------------------ */

int fr_reply_error(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return CRAWL_EREPLY;
    if (!strncmp(r->str, "WRONGTYPE", 9))
        return CRAWL_EWRONGTYPE;
    if (!strncmp(r->str, "CRAWLGONE ", 10)) /* (types.lua: need_crawl) nothing written */
        return CRAWL_ENOTFOUND;
    if (!strncmp(r->str, "OOM ", 4)) /* refused before it ran: nothing written */
        return CRAWL_ENOROOM;
    if (crawl_retry_reply(r->str)) /* not run here: connect again, to the slot's owner */
        return CRAWL_EREDIS;
    return CRAWL_EREPLY;
}

int fr_wrong_type(frontier_t *f, unsigned s, const char *key, size_t keylen, const char *want,
                  char *buf, size_t buflen)
{
    redisContext *rc = fr_context(f, s);
    redisReply *r = rc ? redisCommand(rc, "TYPE %b", key, keylen) : NULL;
    int ok = r && r->type == REDIS_REPLY_STATUS;
    snprintf(buf, buflen, "%.*s is a %s, expected a %s", (int)keylen, key, ok ? r->str : "?", want);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : CRAWL_EREDIS;
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

int fr_lease_reply(const redisReply *r)
{
    uint64_t lost;
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || fr_reply_u64(r->element[0], &lost))
        return CRAWL_EREPLY;
    return lost ? CRAWL_ELEASE : 0;
}

/* The argv of FCALL <fn> and a's arguments, into v/len (room for a->n + 2). */
static void fcall_argv(const char *fn, const rconn_args_t *a, const char **v, size_t *len)
{
    v[0] = "FCALL";
    len[0] = 5;
    v[1] = fn;
    len[1] = strlen(fn);
    for (size_t i = 0; i < a->n; i++) {
        v[2 + i] = a->v[i];
        len[2 + i] = a->len[i];
    }
}

int fr_raw_fcall(redisContext *rc, int script, const rconn_args_t *a, redisReply **out)
{
    char fn[FR_SCRIPT_COUNT][FR_FN_NAME];
    const char *lib = fr_library(fn);
    *out = NULL;
    const char **v = a->oom ? NULL : malloc((a->n + 2) * sizeof *v);
    size_t *len = v ? malloc((a->n + 2) * sizeof *len) : NULL;
    if (!len) {
        free(v);
        return CRAWL_ENOMEM;
    }
    fcall_argv(fn[script], a, v, len);
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        r = redisCommandArgv(rc, (int)a->n + 2, v, len);
        if (!r || r->type != REDIS_REPLY_ERROR || !strstr(r->str, "Function not found"))
            break;
        freeReplyObject(r); /* the library lost (a restart): loaded, and the call again */
        r = redisCommand(rc, "FUNCTION LOAD %s", lib);
        if (r)
            freeReplyObject(r);
        r = NULL;
    }
    free(v);
    free(len);
    *out = r;
    return r ? 0 : CRAWL_EREDIS;
}

/* ---- a call in flight --------------------------------------------------------------- */

frontier_call_t *fr_call_new(fr_kind_t kind, void *st)
{
    frontier_call_t *c = calloc(1, sizeof *c);
    if (c) {
        c->kind = kind;
        c->st = st;
    }
    return c;
}

void *fr_call_state(const frontier_call_t *c, fr_kind_t kind)
{
    return c && c->kind == kind ? c->st : NULL;
}

void fr_call_drop(frontier_call_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        rconn_call_free(c->cmd[i]);
    free(c->cmd);
    free(c);
}

int fr_call_add(frontier_t *f, frontier_call_t *c, rconn_call_t *cmd)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        rconn_call_t **v = realloc(c->cmd, cap * sizeof *v);
        if (!v) {
            rconn_call_free(cmd);
            return CRAWL_ENOMEM;
        }
        c->cmd = v;
        c->cap = cap;
    }
    c->cmd[c->n++] = cmd;
    fr_send(f, cmd);
    return 0;
}

int fr_call_answered(const frontier_call_t *c, size_t from)
{
    for (size_t i = from; i < c->n; i++) {
        if (!rconn_call_done(c->cmd[i]))
            return 0;
        int st = rconn_call_status(c->cmd[i]);
        if (st < 0)
            return st;
    }
    return 1;
}

int fr_call_wait(frontier_t *f, frontier_call_t *c, size_t from)
{
    for (size_t i = from; i < c->n; i++) {
        int rc = rconn_link_wait(f->link, c->cmd[i]);
        if (rc < 0)
            return rc;
        if (!rconn_call_done(c->cmd[i])) /* held by a connect for its resume */
            return CRAWL_EREDIS;
        if ((rc = rconn_call_status(c->cmd[i])) < 0)
            return rc;
    }
    return 0;
}

int fr_call_kept(const frontier_call_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (!rconn_call_done(c->cmd[i]))
            return 1;
    return 0;
}

int fr_call_settle(frontier_t *f, frontier_call_t *c, size_t from, int wait)
{
    int rc = wait ? fr_call_wait(f, c, from) : fr_call_answered(c, from);
    if (rc == 0 && wait)
        return 1;
    if (rc < 0 && fr_call_kept(c)) /* the link down, commands kept to be sent again: not yet */
        return 0;
    return rc;
}

int fr_call_finish(frontier_call_t *c, int rc)
{
    c->done = 1;
    c->rc = rc;
    return 1;
}

int fr_spread_send(frontier_t *f, frontier_call_t *c, fr_spread_t *sp, int fn,
                   fr_spread_build_fn build, const void *st)
{
    int rc = 0;
    rconn_link_cork(f->link); /* one round trip */
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++) {
        size_t i = 0;
        while (i < sp->n && sp->shard[i] != s)
            i++;
        if (i == sp->n)
            continue;
        rconn_call_t *cmd = fr_fcall(f, s, fn, 1, RCONN_CALL_RESEND);
        if (!cmd) {
            rc = CRAWL_ENOMEM;
            break;
        }
        build(f, s, st, rconn_call_args(cmd));
        sp->cmd_shard[c->n] = s;
        rc = fr_call_add(f, c, cmd);
    }
    rconn_link_uncork(f->link);
    return rc;
}

int fr_spread_step(frontier_t *f, frontier_call_t *c, const fr_spread_t *sp, int wait,
                   fr_spread_read_fn read, void *st)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    for (size_t k = 0; rc > 0 && k < c->n; k++) {
        redisReply *r = NULL;
        if ((rc = fr_answered(f, c->cmd[k], &r)) > 0) {
            int e = read(st, sp->cmd_shard[k], r);
            rc = e == 0 ? 1 : e;
        }
    }
    return fr_call_finish(c, rc > 0 ? 0 : rc);
}
