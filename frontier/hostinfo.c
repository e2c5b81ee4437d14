/*
 * hostinfo.c -- what the fetchers of a crawl share about hosts, besides the
 * queues: the robots.txt cache and its fetch lock, the Sitemap: URLs found,
 * the seeds' hosts.
 *
 * DESIGN.  Keys (keys.def; P = the crawl's key prefix):
 *   P robots:<origin>       string  the robots.txt value a worker stored
 *                                   (frontier_robots_put), with its TTL
 *   P robots-lock:<origin>  string  "1" while one worker fetches that host's
 *                                   robots.txt (SET NX PX: lapses by itself)
 *   P sitemaps              set     Sitemap: URLs seen in robots.txt files
 *   P seedhosts             set     hosts of the seeds
 * The crawler's robots.txt gate uses two functions of the library, each one
 * atomic step: frontier_robots_look (robots_look.lua: for a batch of origins,
 * each one's stored value, else its fetch lock taken if free, else "held")
 * and frontier_robots_store (robots_store.lua: the value, the host's delay,
 * the Sitemap: URLs, then the unlock); since the rules are stored in the
 * same step that drops the lock, a lock won means they are missing, and no
 * caller looks again after locking.  Both check their keys' types before
 * the first write (types.lua).  The other functions are one plain command
 * each (one atomic step of its own): frontier_robots_get/_put/_lock are not
 * used by the crawler any more, but keep working.  All are built with the
 * frontier's argument builder, so keys and values are binary-safe and no
 * format string ever sees them.  A key of another type fails the call
 * naming it (frontier_last_error): the SETs take GET, so that they refuse
 * one instead of replacing it.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sends the command built in a (its key is argument 1, of type want) and
 * frees a: 0 and *out (caller frees with freeReplyObject; never an error
 * reply), or the failure: CRAWL_EREPLY for an error reply (for a key of
 * another type the command changed nothing, and frontier_last_error names
 * the key and its type). */
static int run(frontier_t *f, fr_args_t *a, const char *want, redisReply **out)
{
    *out = NULL;
    if (a->oom) {
        fa_free(a);
        return CRAWL_ENOMEM;
    }
    redisReply *r = redisCommandArgv(f->rc, (int)a->n, a->v, a->len);
    f->round_trips++;
    if (!r) {
        fa_free(a);
        return CRAWL_EREDIS;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        int e = fr_reply_error(r);
        snprintf(f->last_error, sizeof f->last_error, "%s", r->str ? r->str : "");
        freeReplyObject(r);
        if (e == CRAWL_EWRONGTYPE)
            fr_wrong_type(f->rc, a->v[1], a->len[1], want, f->last_error, sizeof f->last_error);
        fa_free(a);
        return e == CRAWL_EREDIS || e == CRAWL_ENOROOM ? e : CRAWL_EREPLY;
    }
    fa_free(a);
    *out = r;
    return 0;
}

/* Starts command cmd on origin's key of family id. */
static void origin_cmd(fr_args_t *a, const frontier_t *f, const char *cmd, fr_key_id_t id,
                       const char *origin)
{
    fr_use((frontier_t *)f, fr_shard_of(f->nshards, origin));
    fa_init(a);
    fa_cstr(a, cmd);
    fa_key(a, f->prefix, id, origin, strlen(origin));
}

int frontier_robots_get(frontier_t *f, const char *origin, char **val, size_t *len)
{
    if (val)
        *val = NULL;
    if (len)
        *len = 0;
    if (!f || !origin || !*origin || !val)
        return CRAWL_EINVAL;
    fr_args_t a;
    origin_cmd(&a, f, "GET", FR_K_ROBOTS, origin);
    redisReply *r;
    int rc = run(f, &a, "string", &r);
    if (rc < 0)
        return rc;
    if (r->type == REDIS_REPLY_STRING) {
        char *v = malloc(r->len + 1);
        if (v) {
            memcpy(v, r->str, r->len);
            v[r->len] = '\0';
            *val = v;
            if (len)
                *len = r->len;
        } else {
            rc = CRAWL_ENOMEM;
        }
    } else if (r->type != REDIS_REPLY_NIL) {
        rc = CRAWL_EREPLY;
    }
    freeReplyObject(r);
    return rc;
}

int frontier_robots_put(frontier_t *f, const char *origin, const char *val, size_t len,
                        uint32_t ttl_s)
{
    if (!f || !origin || !*origin || (!val && len) || ttl_s == 0)
        return CRAWL_EINVAL;
    fr_args_t a;
    origin_cmd(&a, f, "SET", FR_K_ROBOTS, origin);
    fa_str(&a, val ? val : "", len);
    fa_cstr(&a, "EX");
    fa_u64(&a, ttl_s);
    fa_cstr(&a, "GET"); /* a key of another type: an error, and nothing set */
    redisReply *r;
    int rc = run(f, &a, "string", &r);
    if (rc == 0 && r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)
        rc = CRAWL_EREPLY;
    if (r)
        freeReplyObject(r);
    return rc;
}

int frontier_robots_lock(frontier_t *f, const char *origin, uint32_t ttl_ms, int *won)
{
    if (won)
        *won = 0;
    if (!f || !origin || !*origin || ttl_ms == 0 || !won)
        return CRAWL_EINVAL;
    fr_args_t a;
    origin_cmd(&a, f, "SET", FR_K_ROBOTS_LOCK, origin);
    fa_cstr(&a, "1");
    fa_cstr(&a, "NX");
    fa_cstr(&a, "PX");
    fa_u64(&a, ttl_ms);
    /* GET: a lock of another type is an error (SET NX alone would answer
     * "held" forever, since no TTL lapses it); nil: it was free, now ours */
    fa_cstr(&a, "GET");
    redisReply *r;
    int rc = run(f, &a, "string", &r);
    if (rc < 0)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        *won = 1;
    else if (r->type != REDIS_REPLY_STRING)
        rc = CRAWL_EREPLY;
    freeReplyObject(r);
    return rc;
}

int frontier_robots_unlock(frontier_t *f, const char *origin)
{
    if (!f || !origin || !*origin)
        return CRAWL_EINVAL;
    fr_args_t a;
    origin_cmd(&a, f, "DEL", FR_K_ROBOTS_LOCK, origin);
    redisReply *r;
    int rc = run(f, &a, "string", &r);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = CRAWL_EREPLY;
    if (r)
        freeReplyObject(r);
    return rc;
}

int frontier_sitemaps_add(frontier_t *f, const char *const *urls, size_t n)
{
    if (!f || (n && !urls))
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!urls[i])
            return CRAWL_EINVAL;
    if (n == 0)
        return 0;
    fr_args_t a;
    fa_init(&a);
    fr_use(f, 0); /* crawl-wide */
    fa_cstr(&a, "SADD");
    fa_key(&a, f->prefix, FR_K_SITEMAPS, NULL, 0);
    for (size_t i = 0; i < n; i++)
        fa_cstr(&a, urls[i]);
    redisReply *r;
    int rc = run(f, &a, "set", &r);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = CRAWL_EREPLY;
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Copies the string members of an SMEMBERS reply: 0 or CRAWL_ENOMEM /
 * CRAWL_EREPLY (nothing kept). */
static int copy_members(const redisReply *r, char ***out, size_t *n)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return CRAWL_EREPLY;
    if (r->elements == 0)
        return 0;
    char **v = calloc(r->elements, sizeof *v);
    if (!v)
        return CRAWL_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING)
            continue;
        if (!(v[k] = malloc(e->len + 1))) {
            while (k)
                free(v[--k]);
            free(v);
            return CRAWL_ENOMEM;
        }
        memcpy(v[k], e->str, e->len);
        v[k++][e->len] = '\0';
    }
    if (k == 0) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return 0;
}

int frontier_seed_hosts(frontier_t *f, char ***hosts, size_t *n)
{
    if (hosts)
        *hosts = NULL;
    if (n)
        *n = 0;
    if (!f || !hosts || !n)
        return CRAWL_EINVAL;
    fr_args_t a;
    fa_init(&a);
    fr_use(f, 0); /* crawl-wide: shard 0's */
    fa_cstr(&a, "SMEMBERS");
    fa_key(&a, f->prefix, FR_K_SEEDHOSTS, NULL, 0);
    redisReply *r;
    int rc = run(f, &a, "set", &r);
    if (rc < 0)
        return rc;
    rc = copy_members(r, hosts, n);
    freeReplyObject(r);
    return rc;
}

int frontier_seed_hosts_call(frontier_t *f, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out)
        return CRAWL_EINVAL;
    frontier_call_t *c = fr_async_new(FR_CALL_SEED_HOSTS, -1);
    if (!c)
        return CRAWL_ENOMEM;
    fr_use(f, 0); /* crawl-wide: shard 0's */
    c->c.shard = 0;
    fa_cstr(&c->c.a, "SMEMBERS"); /* (static) */
    fa_key(&c->c.a, f->prefix, FR_K_SEEDHOSTS, NULL, 0);
    if (c->c.a.oom) {
        frontier_call_drop(c);
        return CRAWL_ENOMEM;
    }
    *out = c;
    return 0;
}

int frontier_seed_hosts_end(frontier_t *f, frontier_call_t *c, char ***hosts, size_t *n)
{
    if (hosts)
        *hosts = NULL;
    if (n)
        *n = 0;
    if (!hosts || !n)
        return CRAWL_EINVAL;
    redisReply *r = NULL;
    int rc = fr_async_reply(f, c, FR_CALL_SEED_HOSTS, &r);
    if (rc < 0)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) { /* as run() says it */
        int wrong = fr_reply_error(r) == CRAWL_EWRONGTYPE;
        snprintf(f->last_error, sizeof f->last_error, "%s", r->str ? r->str : "");
        if (wrong)
            fr_wrong_type(f->rc, c->c.a.v[1], c->c.a.len[1], "set", f->last_error,
                          sizeof f->last_error);
        rc = CRAWL_EREPLY;
    } else {
        rc = copy_members(r, hosts, n);
    }
    freeReplyObject(r);
    return rc;
}

/* ---- the robots.txt functions (robots_look.lua, robots_store.lua) ------------ */

/* The robots_look call (frontier/lua/robots_look.lua), KEYS: ready.
 *   ARGV[1]  P        the key prefix
 *   ARGV[2]  lock_ms  the fetch lock's lifetime (SET NX PX)
 *   ARGV[3..]         the origins, at most FR_ROBOTS_LOOK_MAX
 * Reply: one element per origin, in order: its stored value (a string), or 1
 * (the lock was free and is the caller's now), or 0 (someone holds it). */
static void build_look(frontier_t *f, const frontier_robots_look_t *o, size_t n, uint32_t lock_ms,
                       fr_args_t *a)
{
    fr_use(f, fr_shard_of(f->nshards, o[0].origin)); /* sharded: one origin a call */
    fa_init(a);
    fa_fcall(a, 1);
    fa_cstr(a, f->ready_key);
    fa_cstr(a, f->prefix);
    fa_u64(a, lock_ms);
    for (size_t i = 0; i < n; i++)
        fa_cstr(a, o[i].origin);
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

/* Reads the reply of the call that carried o[0..n): 0, or the reply's error
 * (o untouched: HELD with err set by the caller). */
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

static int run_looks(frontier_t *f, frontier_robots_look_t *o, size_t n, size_t per,
                     uint32_t lock_ms);

/* Reads the replies rep[0..ncalls) of the calls that carried o[0..n), `per`
 * origins each.  A call of several origins that Redis refused (a key of
 * another type: nothing written) runs again as one call per origin
 * (pipelined), so that only the bad origin fails; a refused single-origin
 * call leaves its error in err.  0, or CRAWL_EREDIS / CRAWL_ENOMEM. */
static int read_calls(frontier_t *f, frontier_robots_look_t *o, size_t n, size_t per,
                      uint32_t lock_ms, redisReply **rep, size_t ncalls)
{
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < ncalls; c++) {
        size_t at = c * per, k = c + 1 < ncalls ? per : n - at;
        int err = read_looks(rep[c], o + at, k);
        if (err < 0 && k > 1)
            rc = run_looks(f, o + at, k, 1, lock_ms);
        for (size_t i = 0; err < 0 && k == 1 && i < k; i++)
            o[at + i].err = err;
    }
    return rc;
}

/* The calls of a look: o[0..n) in calls of `per` origins. */
struct frontier_robots_call {
    frontier_robots_look_t *o;
    size_t n, per, ncalls;
    size_t got; /* replies taken by frontier_robots_look_ready: rep[0..got) */
    uint32_t lock_ms;
    int rc; /* a send that failed (CRAWL_EREDIS: answered by _end) */
    fr_args_t *calls;
    unsigned *shard; /* [ncalls]: each call's shard (a crawl of several: one origin a call) */
    redisReply **rep;
};

void frontier_robots_look_drop(frontier_robots_call_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ncalls; i++) {
        if (c->rep && c->rep[i])
            freeReplyObject(c->rep[i]);
        if (c->calls)
            fa_free(&c->calls[i]);
    }
    free(c->calls);
    free(c->shard);
    free(c->rep);
    free(c);
}

/* The calls for o[0..n), built (and sent: send); NULL when out of memory. */
static frontier_robots_call_t *new_call(frontier_t *f, frontier_robots_look_t *o, size_t n,
                                        size_t per, uint32_t lock_ms, int send)
{
    frontier_robots_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (f->nshards > 1) /* each origin's keys are in its shard */
        per = 1;
    *c = (frontier_robots_call_t){
        .o = o, .n = n, .per = per, .ncalls = (n + per - 1) / per, .lock_ms = lock_ms};
    c->calls = calloc(c->ncalls, sizeof *c->calls);
    c->shard = calloc(c->ncalls, sizeof *c->shard);
    c->rep = calloc(c->ncalls, sizeof *c->rep);
    if (!c->calls || !c->shard || !c->rep) {
        frontier_robots_look_drop(c);
        return NULL;
    }
    int oom = 0;
    for (size_t i = 0; i < c->ncalls; i++) {
        build_look(f, o + i * per, i + 1 < c->ncalls ? per : n - i * per, lock_ms, &c->calls[i]);
        c->shard[i] = f->cur;
        oom |= c->calls[i].oom;
    }
    if (oom && send) { /* before any is sent: then only a lost connection fails a send */
        frontier_robots_look_drop(c);
        return NULL;
    }
    for (size_t i = 0; send && c->rc == 0 && i < c->ncalls; i++) {
        fr_use(f, c->shard[i]); /* its shard's connection */
        c->rc = fr_send(f, FR_ROBOTS_LOOK, &c->calls[i]);
    }
    if (send && c->ncalls) {
        fr_use(f, c->shard[0]);
        f->wait_fd = f->rc->fd;
    }
    return c;
}

/* Runs c's calls and waits for their replies: pipelined on one connection,
 * else one call a round trip, each on its shard's connection. */
static int run_calls(frontier_t *f, frontier_robots_call_t *c)
{
    if (!f->nown)
        return fr_run(f, FR_ROBOTS_LOOK, c->calls, c->ncalls, c->rep);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->ncalls; i++) {
        fr_use(f, c->shard[i]);
        rc = fr_run(f, FR_ROBOTS_LOOK, &c->calls[i], 1, &c->rep[i]);
    }
    return rc;
}

/* Runs the looks of o[0..n) in calls of `per` origins, pipelined and waited
 * for: 0, or CRAWL_EREDIS / CRAWL_ENOMEM (nothing read). */
static int run_looks(frontier_t *f, frontier_robots_look_t *o, size_t n, size_t per,
                     uint32_t lock_ms)
{
    frontier_robots_call_t *c = new_call(f, o, n, per, lock_ms, 0);
    if (!c)
        return CRAWL_ENOMEM;
    int rc = run_calls(f, c);
    if (rc == 0)
        rc = read_calls(f, o, n, c->per, lock_ms, c->rep, c->ncalls);
    frontier_robots_look_drop(c);
    return rc;
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

/* The result of a look whose calls gave rc: after a failure nothing is
 * known (every origin HELD, with err rc).  Returns the first origin's err. */
static int look_result(frontier_robots_look_t *looks, size_t n, int rc)
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

int frontier_robots_look(frontier_t *f, frontier_robots_look_t *looks, size_t n, uint32_t lock_ms)
{
    int rc = check_looks(f, looks, n, lock_ms);
    if (rc < 0 || n == 0)
        return rc;
    return look_result(looks, n, run_looks(f, looks, n, FR_ROBOTS_LOOK_MAX, lock_ms));
}

int frontier_robots_look_start(frontier_t *f, frontier_robots_look_t *looks, size_t n,
                               uint32_t lock_ms, frontier_robots_call_t **out)
{
    if (out)
        *out = NULL;
    int rc = out ? check_looks(f, looks, n, lock_ms) : CRAWL_EINVAL;
    if (rc < 0 || n == 0)
        return rc;
    frontier_robots_call_t *c = new_call(f, looks, n, FR_ROBOTS_LOOK_MAX, lock_ms, 1);
    if (!c)
        return CRAWL_ENOMEM;
    *out = c; /* a send that failed (connection lost) is answered by _end */
    return 0;
}

int frontier_robots_look_ready(frontier_t *f, frontier_robots_call_t *c)
{
    if (!f || !c)
        return CRAWL_EINVAL;
    if (c->rc < 0)
        return 1; /* _end answers it */
    while (c->got < c->ncalls) {
        fr_use(f, c->shard[c->got]);
        f->wait_fd = f->rc->fd;
        int r = fr_try_reply(f, &c->rep[c->got]);
        if (r <= 0)
            return r;
        c->got++;
    }
    f->wait_fd = -1;
    return 1;
}

int frontier_robots_look_end(frontier_t *f, frontier_robots_call_t *c)
{
    if (!f || !c) {
        frontier_robots_look_drop(c);
        return CRAWL_EINVAL;
    }
    int rc = c->rc;
    f->round_trips += rc == 0 && c->got < c->ncalls; /* the rest, waited for: one round trip */
    for (; rc == 0 && c->got < c->ncalls; c->got++) {
        void *r = NULL;
        fr_use(f, c->shard[c->got]);
        if (redisGetReply(f->rc, &r) != REDIS_OK || !r)
            rc = CRAWL_EREDIS;
        c->rep[c->got] = r;
    }
    f->wait_fd = -1;
    int lost = 0; /* a reply said the library is gone */
    for (size_t i = 0; rc == 0 && i < c->got; i++)
        lost |= fr_is_noscript(c->rep[i]);
    if (rc == 0 && lost) { /* load it and send them all again */
        for (size_t i = 0; i < c->ncalls; i++) {
            if (c->rep[i])
                freeReplyObject(c->rep[i]);
            c->rep[i] = NULL;
        }
        for (size_t i = 0; rc == 0 && i < c->ncalls; i++) { /* on each server */
            fr_use(f, c->shard[i]);
            rc = fr_load(f);
        }
        if (rc == 0)
            rc = run_calls(f, c);
    }
    if (rc == 0)
        rc = read_calls(f, c->o, c->n, c->per, c->lock_ms, c->rep, c->ncalls);
    rc = look_result(c->o, c->n, rc);
    frontier_robots_look_drop(c);
    return rc;
}

/* The robots_store call (frontier/lua/robots_store.lua), KEYS: ready.
 *   ARGV[1]  P         the key prefix
 *   ARGV[2]  origin
 *   ARGV[3]  value     stored at robots:<origin> for ARGV[4] s; '': nothing stored
 *   ARGV[4]  ttl_s
 *   ARGV[5]  delay_ms  set in hdelay (capped at max_delay_ms); 0: not set
 *   ARGV[6..]          Sitemap: URLs, added to sitemaps
 * Then robots-lock:<origin> is deleted.  Reply: 0. */
static void build_store(const frontier_t *f, const frontier_robots_result_t *r, fr_args_t *a)
{
    uint32_t delay = r->delay_ms > f->cfg.max_delay_ms ? f->cfg.max_delay_ms : r->delay_ms;
    /* every argument copied: a call (frontier_robots_store_call) outlives r
     * and may outlive f */
    fa_fcall(a, 1);
    fa_dup(a, f->ready_key);
    fa_dup(a, f->prefix);
    fa_dup(a, r->origin);
    fa_copy(a, r->val ? r->val : "", r->val ? r->len : 0);
    fa_u64(a, r->ttl_s);
    fa_u64(a, delay);
    for (size_t i = 0; i < r->nsitemaps; i++)
        fa_dup(a, r->sitemaps[i]);
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

/* The outcome of a robots_store reply. */
static int read_store(const redisReply *rep)
{
    if (rep->type == REDIS_REPLY_ERROR)
        return fr_reply_error(rep);
    return rep->type == REDIS_REPLY_INTEGER ? 0 : CRAWL_EREPLY;
}

int frontier_robots_store(frontier_t *f, const frontier_robots_result_t *r)
{
    int rc = check_store(f, r);
    if (rc < 0)
        return rc;
    fr_args_t a;
    fa_init(&a);
    fr_use(f, fr_shard_of(f->nshards, r->origin));
    build_store(f, r, &a);
    redisReply *rep = NULL;
    rc = fr_run(f, FR_ROBOTS_STORE, &a, 1, &rep);
    fa_free(&a);
    if (rc < 0)
        return rc;
    rc = read_store(rep);
    freeReplyObject(rep);
    return rc;
}

int frontier_robots_store_call(frontier_t *f, const frontier_robots_result_t *r,
                               frontier_call_t **out)
{
    if (out)
        *out = NULL;
    int rc = out ? check_store(f, r) : CRAWL_EINVAL;
    if (rc < 0)
        return rc;
    frontier_call_t *c = fr_async_new(FR_CALL_STORE, FR_ROBOTS_STORE);
    if (!c)
        return CRAWL_ENOMEM;
    fr_use(f, fr_shard_of(f->nshards, r->origin));
    c->c.shard = f->cur;
    build_store(f, r, &c->c.a);
    if (c->c.a.oom) {
        frontier_call_drop(c);
        return CRAWL_ENOMEM;
    }
    *out = c;
    return 0;
}

int frontier_robots_store_end(frontier_t *f, frontier_call_t *c)
{
    redisReply *r = NULL;
    int rc = fr_async_reply(f, c, FR_CALL_STORE, &r);
    if (rc < 0)
        return rc;
    rc = read_store(r);
    freeReplyObject(r);
    return rc;
}
