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
 *   P hdelay                hash    origin -> its own delay (frontier_set_host_delay)
 * The crawler's robots.txt gate uses the two functions of robots.c (the
 * look and the store, each one atomic step).  Here: one plain command each
 * (one atomic step of its own) on the link, in the origin's shard (the
 * crawl-wide sets in shard 0); frontier_robots_get/_put/_lock are not used
 * by the crawler any more, but keep working.  A command that may run twice
 * (all but the lock's SET NX, which would answer "held" to its own lock) is
 * sent again by the link after a lost reply.  All are built with the
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

/* The shard of member's key (an origin's; NULL: a crawl-wide key, shard 0's). */
static unsigned key_shard(const frontier_t *f, const char *member)
{
    return member ? fr_shard_of(f->nshards, member) : 0;
}

/* A command cmd on key id of member (key_shard); NULL when out of memory. */
static rconn_call_t *key_cmd(frontier_t *f, const char *cmd, fr_key_id_t id, const char *member,
                             unsigned flags)
{
    unsigned s = key_shard(f, member);
    rconn_call_t *c = fr_cmd(f, s, flags);
    if (c) {
        rconn_args_t *a = rconn_call_args(c);
        rconn_arg_cstr(a, cmd);
        fr_key_arg(a, f->shard[s].prefix, id, member, member ? strlen(member) : 0);
    }
    return c;
}

/* Sends c (its key is argument 1, of type want) and waits for it: 0 and
 * *r (c's), never an error reply; or the failure: an error reply is
 * CRAWL_EREPLY (for a key of another type the command changed nothing, and
 * frontier_last_error names the key and its type; with exact,
 * CRAWL_EWRONGTYPE then), unless Redis refused it for now (CRAWL_EREDIS,
 * CRAWL_ENOROOM). */
static int run_exact(frontier_t *f, unsigned s, rconn_call_t *c, const char *want, int exact,
                     redisReply **r)
{
    *r = NULL;
    if (!c)
        return CRAWL_ENOMEM;
    fr_send(f, c);
    int rc = fr_wait(f, c, r);
    if (rc < 0 || (*r)->type != REDIS_REPLY_ERROR)
        return rc;
    int e = fr_reply_error(*r);
    snprintf(f->last_error, sizeof f->last_error, "%s", (*r)->str ? (*r)->str : "");
    const rconn_args_t *a = rconn_call_args(c);
    if (e == CRAWL_EWRONGTYPE)
        fr_wrong_type(f, s, a->v[1], a->len[1], want, f->last_error, sizeof f->last_error);
    *r = NULL;
    return e == CRAWL_EREDIS || e == CRAWL_ENOROOM || (exact && e == CRAWL_EWRONGTYPE)
               ? e
               : CRAWL_EREPLY;
}

static int run(frontier_t *f, unsigned s, rconn_call_t *c, const char *want, redisReply **r)
{
    return run_exact(f, s, c, want, 0, r);
}

/* run, then frees c: 0 if the reply's type is one of ok_a/ok_b, else
 * CRAWL_EREPLY (or run's failure). */
static int run_expect(frontier_t *f, unsigned s, rconn_call_t *c, const char *want, int ok_a,
                      int ok_b)
{
    redisReply *r;
    int rc = run(f, s, c, want, &r);
    if (rc == 0 && r->type != ok_a && r->type != ok_b)
        rc = CRAWL_EREPLY;
    rconn_call_free(c);
    return rc;
}

int frontier_robots_get(frontier_t *f, const char *origin, char **val, size_t *len)
{
    if (val)
        *val = NULL;
    if (len)
        *len = 0;
    if (!f || !origin || !*origin || !val)
        return CRAWL_EINVAL;
    rconn_call_t *c = key_cmd(f, "GET", FR_K_ROBOTS, origin, RCONN_CALL_RESEND);
    redisReply *r;
    int rc = run(f, key_shard(f, origin), c, "string", &r);
    if (rc == 0 && r->type == REDIS_REPLY_STRING) {
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
    } else if (rc == 0 && r->type != REDIS_REPLY_NIL) {
        rc = CRAWL_EREPLY;
    }
    rconn_call_free(c);
    return rc;
}

int frontier_robots_put(frontier_t *f, const char *origin, const char *val, size_t len,
                        uint32_t ttl_s)
{
    if (!f || !origin || !*origin || (!val && len) || ttl_s == 0)
        return CRAWL_EINVAL;
    rconn_call_t *c = key_cmd(f, "SET", FR_K_ROBOTS, origin, RCONN_CALL_RESEND);
    if (c) {
        rconn_args_t *a = rconn_call_args(c);
        rconn_arg_str(a, val ? val : "", len);
        rconn_arg_cstr(a, "EX");
        rconn_arg_u64(a, ttl_s);
        rconn_arg_cstr(a, "GET"); /* a key of another type: an error, and nothing set */
    }
    return run_expect(f, key_shard(f, origin), c, "string", REDIS_REPLY_STRING, REDIS_REPLY_NIL);
}

int frontier_robots_lock(frontier_t *f, const char *origin, uint32_t ttl_ms, int *won)
{
    if (won)
        *won = 0;
    if (!f || !origin || !*origin || ttl_ms == 0 || !won)
        return CRAWL_EINVAL;
    rconn_call_t *c = key_cmd(f, "SET", FR_K_ROBOTS_LOCK, origin, 0);
    if (c) {
        rconn_args_t *a = rconn_call_args(c);
        rconn_arg_cstr(a, "1");
        rconn_arg_cstr(a, "NX");
        rconn_arg_cstr(a, "PX");
        rconn_arg_u64(a, ttl_ms);
        /* GET: a lock of another type is an error (SET NX alone would answer
         * "held" forever, since no TTL lapses it); nil: it was free, now ours */
        rconn_arg_cstr(a, "GET");
    }
    redisReply *r;
    int rc = run(f, key_shard(f, origin), c, "string", &r);
    if (rc == 0 && r->type == REDIS_REPLY_NIL)
        *won = 1;
    else if (rc == 0 && r->type != REDIS_REPLY_STRING)
        rc = CRAWL_EREPLY;
    rconn_call_free(c);
    return rc;
}

int frontier_robots_unlock(frontier_t *f, const char *origin)
{
    if (!f || !origin || !*origin)
        return CRAWL_EINVAL;
    rconn_call_t *c = key_cmd(f, "DEL", FR_K_ROBOTS_LOCK, origin, RCONN_CALL_RESEND);
    return run_expect(f, key_shard(f, origin), c, "string", REDIS_REPLY_INTEGER,
                      REDIS_REPLY_INTEGER);
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
    rconn_call_t *c = key_cmd(f, "SADD", FR_K_SITEMAPS, NULL, RCONN_CALL_RESEND);
    for (size_t i = 0; c && i < n; i++)
        rconn_arg_dup(rconn_call_args(c), urls[i]);
    return run_expect(f, 0, c, "set", REDIS_REPLY_INTEGER, REDIS_REPLY_INTEGER);
}

int frontier_set_host_delay(frontier_t *f, const char *origin, uint32_t delay_ms)
{
    if (!f || !origin || !*origin)
        return CRAWL_EINVAL;
    if (delay_ms > f->cfg.max_delay_ms)
        delay_ms = f->cfg.max_delay_ms;
    unsigned s = fr_shard_of(f->nshards, origin); /* (P hdelay: the origin's shard's) */
    rconn_call_t *c = fr_cmd(f, s, RCONN_CALL_RESEND);
    if (c) {
        rconn_args_t *a = rconn_call_args(c);
        rconn_arg_cstr(a, "HSET");
        fr_key_arg(a, f->shard[s].prefix, FR_K_HDELAY, NULL, 0);
        rconn_arg_dup(a, origin);
        rconn_arg_u64(a, delay_ms);
    }
    redisReply *r;
    int rc = run_exact(f, s, c, "hash", 1, &r); /* (a key of another type: its own code) */
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = CRAWL_EREPLY;
    rconn_call_free(c);
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

/* The seed hosts read: its findings, once the call is done. */
typedef struct seed_hosts_st {
    char **hosts;
    size_t n;
} seed_hosts_st_t;

void fr_seed_hosts_free(void *p)
{
    seed_hosts_st_t *st = p;
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++)
        free(st->hosts[i]);
    free(st->hosts);
    free(st);
}

int fr_seed_hosts_step(frontier_t *f, frontier_call_t *c, int wait)
{
    int rc = fr_call_settle(f, c, 0, wait);
    if (rc == 0)
        return 0;
    redisReply *r = NULL;
    if (rc > 0 && (rc = fr_answered(f, c->cmd[0], &r)) > 0) {
        if (r->type == REDIS_REPLY_ERROR) { /* as run() says it */
            int wrong = fr_reply_error(r) == CRAWL_EWRONGTYPE;
            snprintf(f->last_error, sizeof f->last_error, "%s", r->str ? r->str : "");
            const rconn_args_t *a = rconn_call_args(c->cmd[0]);
            if (wrong)
                fr_wrong_type(f, 0, a->v[1], a->len[1], "set", f->last_error, sizeof f->last_error);
            rc = CRAWL_EREPLY;
        } else {
            seed_hosts_st_t *st = c->st;
            rc = copy_members(r, &st->hosts, &st->n);
        }
    }
    return fr_call_finish(c, rc < 0 ? rc : 0);
}

int frontier_seed_hosts_start(frontier_t *f, frontier_call_t **out)
{
    if (out)
        *out = NULL;
    if (!f || !out)
        return CRAWL_EINVAL;
    seed_hosts_st_t *st = calloc(1, sizeof *st);
    frontier_call_t *c = st ? fr_call_new(FR_CALL_SEED_HOSTS, st) : NULL;
    rconn_call_t *cmd = c ? key_cmd(f, "SMEMBERS", FR_K_SEEDHOSTS, NULL, RCONN_CALL_RESEND) : NULL;
    int rc = cmd ? fr_call_add(f, c, cmd) : CRAWL_ENOMEM;
    if (rc < 0) {
        fr_call_drop(c);
        fr_seed_hosts_free(st);
        return rc;
    }
    *out = c;
    return 0;
}

int frontier_seed_hosts_found(frontier_call_t *c, char ***hosts, size_t *n)
{
    if (hosts)
        *hosts = NULL;
    if (n)
        *n = 0;
    seed_hosts_st_t *st = fr_call_state(c, FR_CALL_SEED_HOSTS);
    if (!st || !hosts || !n || !c->done)
        return CRAWL_EINVAL;
    if (c->rc < 0)
        return c->rc;
    *hosts = st->hosts;
    *n = st->n;
    st->hosts = NULL; /* the caller's now */
    st->n = 0;
    return 0;
}
