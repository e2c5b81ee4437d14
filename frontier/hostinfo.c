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
 * Each function is one plain command (no script: each is one atomic step of
 * its own), built with the frontier's argument builder, so keys and values
 * are binary-safe and no format string ever sees them.  A key of another
 * type fails the call naming it (frontier_last_error):
 * the SETs take GET, so that they refuse one instead of replacing it.
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
        int wrong = fr_reply_error(r) == CRAWL_EWRONGTYPE;
        snprintf(f->last_error, sizeof f->last_error, "%s", r->str ? r->str : "");
        freeReplyObject(r);
        if (wrong)
            fr_wrong_type(f->rc, a->v[1], a->len[1], want, f->last_error, sizeof f->last_error);
        fa_free(a);
        return CRAWL_EREPLY;
    }
    fa_free(a);
    *out = r;
    return 0;
}

/* Starts command cmd on origin's key of family id. */
static void origin_cmd(fr_args_t *a, const frontier_t *f, const char *cmd, fr_key_id_t id,
                       const char *origin)
{
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
