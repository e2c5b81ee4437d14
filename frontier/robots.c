/*
 * robots.c -- the robots.txt gate's two functions (frontier.h:
 * frontier_robots_look and frontier_robots_store, and their calls).
 *
 * DESIGN: frontier_robots_look (robots_look.lua) answers, for a batch of
 * origins, each one's stored value, else its fetch lock taken if free, else
 * "held"; frontier_robots_store (robots_store.lua) stores the value, the
 * host's delay and the Sitemap: URLs, then drops the lock.  Since the rules
 * are stored in the same step that drops the lock, a lock won means they
 * are missing, and no caller looks again after locking.  Both check their
 * keys' types before the first write (types.lua).  A look is one command
 * of FR_ROBOTS_LOOK_MAX origins (one origin a command on a crawl of several
 * shards: each origin's keys are in its shard), all in one round trip; a
 * command Redis refused (a key of another type: nothing written) is sent
 * again origin by origin, so that only the bad origin fails.  A look takes
 * locks, so it is not sent again after a lost reply (the locks lapse); a
 * store is (a SET and a DEL: twice is once).  Keys: P robots:<origin>,
 * P robots-lock:<origin>, P hdelay, P sitemaps.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* The robots_look call (frontier/lua/robots_look.lua) to shard s, KEYS: the guard, ready.
 *   ARGV[1]  P        the key prefix
 *   ARGV[2]  lock_ms  the fetch lock's lifetime (SET NX PX)
 *   ARGV[3..]         the origins, at most FR_ROBOTS_LOOK_MAX
 * Reply: one element per origin, in order: its stored value (a string), or 1
 * (the lock was free and is the caller's now), or 0 (someone holds it). */
static rconn_call_t *build_look(frontier_t *f, const frontier_robots_look_t *o, size_t n,
                                uint32_t lock_ms)
{
    unsigned s = fr_shard_of(f->nshards, o[0].origin); /* sharded: one origin a call */
    rconn_call_t *c = fr_fcall(f, s, FR_ROBOTS_LOOK, 1, 0);
    if (!c)
        return NULL;
    rconn_args_t *a = rconn_call_args(c);
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_u64(a, lock_ms);
    for (size_t i = 0; i < n; i++)
        rconn_arg_cstr(a, o[i].origin);
    return c;
}

/* Reads one origin's element of a robots_look reply into o. */
static int read_look(const redisReply *e, frontier_robots_look_t *o)
{
    if (e->type == REDIS_REPLY_STRING) {
        if (!(o->val = malloc(e->len + 1)))
            return CRAWL_ENOMEM;
        memcpy(o->val, e->str, e->len);
        o->val[e->len] = '\0';
        o->len = e->len;
        o->found = FRONTIER_ROBOTS_STORED;
        return 0;
    }
    if (e->type != REDIS_REPLY_INTEGER)
        return CRAWL_EREPLY;
    o->found = e->integer == 1 ? FRONTIER_ROBOTS_WON : FRONTIER_ROBOTS_HELD;
    return 0;
}

/* Reads the reply of the command that carried o[0..n): 0, or the reply's
 * error (o untouched). */
static int read_looks(const redisReply *r, frontier_robots_look_t *o, size_t n)
{
    if (r->type == REDIS_REPLY_ERROR)
        return fr_reply_error(r);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        return CRAWL_EREPLY;
    for (size_t i = 0; i < n; i++)
        o[i].err = read_look(r->element[i], &o[i]);
    return 0;
}

/* A look in flight: its commands carry looks [at[i], at[i] + cnt[i]); the
 * first `first` of them are the first round's, the rest the origin-by-
 * origin round of a refused command. */
typedef struct look_st {
    frontier_robots_look_t *o;
    size_t n;
    uint32_t lock_ms;
    size_t *at, *cnt, cap;
    size_t first; /* commands of the first round (0: not read yet) */
    int round;    /* 0: the first round in flight, 1: the second */
} look_st_t;

void fr_look_free(void *p)
{
    look_st_t *st = p;
    if (!st)
        return;
    free(st->at);
    free(st->cnt);
    free(st);
}

/* Adds a command for o[at .. at + cnt) to c. */
static int look_add(frontier_t *f, frontier_call_t *c, look_st_t *st, size_t at, size_t cnt)
{
    if (c->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 8;
        size_t *na = realloc(st->at, cap * sizeof *na);
        if (na)
            st->at = na;
        size_t *nc = na ? realloc(st->cnt, cap * sizeof *nc) : NULL;
        if (!nc)
            return CRAWL_ENOMEM;
        st->cnt = nc;
        st->cap = cap;
    }
    st->at[c->n] = at;
    st->cnt[c->n] = cnt;
    rconn_call_t *cmd = build_look(f, st->o + at, cnt, st->lock_ms);
    return cmd ? fr_call_add(f, c, cmd) : CRAWL_ENOMEM;
}

/* The result of a look whose commands gave rc: after a failure nothing is
 * known (every origin HELD, with err rc).  Returns the first origin's err. */
int fr_look_result(frontier_robots_look_t *looks, size_t n, int rc)
{
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc < 0) {
            free(looks[i].val);
            looks[i] = (frontier_robots_look_t){
                .origin = looks[i].origin, .found = FRONTIER_ROBOTS_HELD, .err = rc};
        }
        if (!first && looks[i].err < 0)
            first = looks[i].err;
    }
    return first;
}

/* Reads the answered commands [from, to): a refused one of several origins
 * is sent again origin by origin (*again set), a refused single one leaves
 * its error in its origin's err. */
static int read_round(frontier_t *f, frontier_call_t *c, look_st_t *st, size_t from, size_t to,
                      int *again)
{
    int rc = 0;
    for (size_t i = from; rc == 0 && i < to; i++) {
        redisReply *r;
        if ((rc = fr_answered(f, c->cmd[i], &r)) < 0)
            break;
        rc = 0;
        int err = read_looks(r, st->o + st->at[i], st->cnt[i]);
        if (err < 0 && st->cnt[i] > 1) {
            rconn_link_cork(f->link);
            for (size_t k = 0; rc == 0 && k < st->cnt[i]; k++)
                rc = look_add(f, c, st, st->at[i] + k, 1);
            rconn_link_uncork(f->link);
            *again = 1;
        } else if (err < 0) {
            st->o[st->at[i]].err = err;
        }
    }
    return rc;
}

int fr_look_step(frontier_t *f, frontier_call_t *c, int wait)
{
    look_st_t *st = c->st;
    for (;;) {
        size_t from = st->round ? st->first : 0;
        int rc = fr_call_settle(f, c, from, wait);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return fr_call_finish(c, fr_look_result(st->o, st->n, rc));
        size_t to = c->n;
        int again = 0;
        if (!st->round)
            st->first = to;
        rc = read_round(f, c, st, from, to, &again);
        if (rc < 0 || !again || st->round)
            return fr_call_finish(c, fr_look_result(st->o, st->n, rc));
        st->round = 1;
    }
}

static int check_looks(const frontier_t *f, frontier_robots_look_t *looks, size_t n,
                       uint32_t lock_ms)
{
    if (!f || (n && !looks) || lock_ms == 0)
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!looks[i].origin || !*looks[i].origin)
            return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++)
        looks[i] =
            (frontier_robots_look_t){.origin = looks[i].origin, .found = FRONTIER_ROBOTS_HELD};
    return 0;
}

int frontier_robots_look_start(frontier_t *f, frontier_robots_look_t *looks, size_t n,
                               uint32_t lock_ms, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    int rc = out ? check_looks(f, looks, n, lock_ms) : CRAWL_EINVAL;
    if (rc < 0)
        return rc;
    look_st_t *st = calloc(1, sizeof *st);
    frontier_call_t *c = st ? fr_call_new(FR_CALL_LOOK, st) : NULL;
    if (!c) {
        free(st);
        return CRAWL_ENOMEM;
    }
    *st = (look_st_t){.o = looks, .n = n, .lock_ms = lock_ms};
    size_t per = f->nshards > 1 ? 1 : FR_ROBOTS_LOOK_MAX; /* each origin's keys in its shard */
    rconn_link_cork(f->link);                             /* one round trip */
    for (size_t at = 0; rc == 0 && at < n; at += per)
        rc = look_add(f, c, st, at, n - at < per ? n - at : per);
    rconn_link_uncork(f->link);
    if (rc < 0) {
        fr_call_drop(c);
        fr_look_free(st);
        return rc;
    }
    *out = c;
    return 0;
}

/* The robots_store call (frontier/lua/robots_store.lua), KEYS: the guard, ready.
 *   ARGV[1]  P         the key prefix
 *   ARGV[2]  origin
 *   ARGV[3]  value     stored at robots:<origin> for ARGV[4] s; '': nothing stored
 *   ARGV[4]  ttl_s
 *   ARGV[5]  delay_ms  set in hdelay (capped at max_delay_ms); 0: not set
 *   ARGV[6]  space_ms  the origin's next claim no sooner than this from now
 *                      (hnext, its score in ready); 0: not spaced
 *   ARGV[7..]          Sitemap: URLs, added to sitemaps
 * Then robots-lock:<origin> is deleted.  Reply: 0.  Every argument copied
 * (the call outlives r). */
static void build_store(const frontier_t *f, unsigned s, const frontier_robots_result_t *r,
                        rconn_args_t *a)
{
    uint32_t delay = r->delay_ms > f->cfg.max_delay_ms ? f->cfg.max_delay_ms : r->delay_ms;
    rconn_arg_cstr(a, f->shard[s].ready_key);
    rconn_arg_cstr(a, f->shard[s].prefix);
    rconn_arg_dup(a, r->origin);
    rconn_arg_copy(a, r->val ? r->val : "", r->val ? r->len : 0);
    rconn_arg_u64(a, r->ttl_s);
    rconn_arg_u64(a, delay);
    rconn_arg_u64(a, r->space_ms);
    for (size_t i = 0; i < r->nsitemaps; i++)
        rconn_arg_dup(a, r->sitemaps[i]);
}

static int check_store(const frontier_t *f, const frontier_robots_result_t *r)
{
    if (!f || !r || !r->origin || !*r->origin || (r->val && (!r->len || !r->ttl_s)) ||
        (r->nsitemaps && !r->sitemaps))
        return CRAWL_EINVAL;
    for (size_t i = 0; i < r->nsitemaps; i++)
        if (!r->sitemaps[i])
            return CRAWL_EINVAL;
    return 0;
}

int fr_store_step(frontier_t *f, frontier_call_t *c, int wait)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    redisReply *r = NULL;
    if (rc > 0 && (rc = fr_answered(f, c->cmd[0], &r)) > 0)
        rc = r->type == REDIS_REPLY_ERROR     ? fr_reply_error(r)
             : r->type == REDIS_REPLY_INTEGER ? 0
                                              : CRAWL_EREPLY;
    return fr_call_finish(c, rc);
}

int frontier_robots_store_start(frontier_t *f, const frontier_robots_result_t *r,
                                frontier_call_t **out)
{
    if (out)
        *out = NULL;
    int rc = out ? check_store(f, r) : CRAWL_EINVAL;
    if (rc < 0)
        return rc;
    unsigned s = fr_shard_of(f->nshards, r->origin);
    frontier_call_t *c = fr_call_new(FR_CALL_STORE, NULL);
    rconn_call_t *cmd = c ? fr_fcall(f, s, FR_ROBOTS_STORE, 1, RCONN_CALL_RESEND) : NULL;
    if (!cmd) {
        fr_call_drop(c);
        return CRAWL_ENOMEM;
    }
    build_store(f, s, r, rconn_call_args(cmd));
    if ((rc = fr_call_add(f, c, cmd)) < 0) {
        fr_call_drop(c);
        return rc;
    }
    *out = c;
    return 0;
}
