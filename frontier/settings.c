/*
 * settings.c -- the crawl's admission settings (frontier.h:
 * frontier_settings, frontier_read_settings): what it admits, kept with it
 * so that every worker admits by the same rules.
 *
 * DESIGN: the frontier keeps them as opaque field/value pairs in P settings
 * (shard 0), written by the first caller in the one call that reads them
 * (settings.lua): the caller (the crawler's config) decides what the
 * fields are and what a difference means.  Redis keys: P settings.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* The value of field in an HGETALL reply, a copy (NULL: not there, or out
 * of memory: *oom set). */
static char *value_of(const redisReply *r, const char *field, int *oom)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            strlen(field) != k->len || memcmp(field, k->str, k->len))
            continue;
        char *s = malloc(v->len + 1);
        if (!s) {
            *oom = 1;
            return NULL;
        }
        memcpy(s, v->str, v->len);
        s[v->len] = '\0';
        return s;
    }
    return NULL;
}

/* The settings call (frontier/lua/settings.lua) to shard 0, KEYS: the guard, ready.
 *   ARGV[1]  P      shard 0's key prefix
 *   ARGV[2..]       field, value, ...: written if the crawl keeps none
 * Reply: the settings kept (HGETALL's field/value list). */
int frontier_settings(frontier_t *f, const char *const *fields, const char *const *values, size_t n,
                      char **stored)
{
    if (!f || (n && (!fields || !values || !stored)))
        return CRAWL_EINVAL;
    for (size_t i = 0; i < n; i++)
        stored[i] = NULL;
    rconn_call_t *c = fr_fcall(f, 0, FR_SETTINGS, 1, RCONN_CALL_RESEND); /* (twice: once) */
    if (!c)
        return CRAWL_ENOMEM;
    rconn_args_t *a = rconn_call_args(c);
    rconn_arg_cstr(a, f->shard[0].ready_key);
    rconn_arg_cstr(a, f->shard[0].prefix);
    for (size_t i = 0; i < n; i++) {
        rconn_arg_cstr(a, fields[i]);
        rconn_arg_cstr(a, values[i]);
    }
    fr_send(f, c);
    redisReply *r;
    int rc = fr_wait(f, c, &r), oom = 0;
    if (rc == 0 && r->type == REDIS_REPLY_ERROR)
        rc = fr_reply_error(r);
    else if (rc == 0 && r->type != REDIS_REPLY_ARRAY)
        rc = CRAWL_EREPLY;
    for (size_t i = 0; rc == 0 && i < n; i++)
        stored[i] = value_of(r, fields[i], &oom);
    if (rc == 0 && oom)
        rc = CRAWL_ENOMEM;
    rconn_call_free(c);
    if (rc < 0)
        for (size_t i = 0; i < n; i++) {
            free(stored[i]);
            stored[i] = NULL;
        }
    return rc;
}

int frontier_read_settings(struct redisContext *rc, const char *crawl, char ***kv, size_t *n)
{
    char p[FR_PREFIX_MAX], key[FR_KEY_MAX];
    *kv = NULL;
    *n = 0;
    if (!rc || !crawl || fr_prefix(crawl, p, sizeof p) < 0 ||
        fr_key_build(p, FR_K_SETTINGS, NULL, 0, key, sizeof key) < 0)
        return CRAWL_EINVAL;
    redisReply *r = redisCommand(rc, "HGETALL %s", key);
    if (!r)
        return CRAWL_EREDIS;
    int code = r->type == REDIS_REPLY_ERROR   ? fr_reply_error(r)
               : r->type != REDIS_REPLY_ARRAY ? CRAWL_EREPLY
                                              : 0;
    char **v = code == 0 && r->elements ? calloc(r->elements, sizeof *v) : NULL;
    if (code == 0 && r->elements && !v)
        code = CRAWL_ENOMEM;
    for (size_t i = 0; code == 0 && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || !(v[i] = malloc(e->len + 1))) {
            code = e->type != REDIS_REPLY_STRING ? CRAWL_EREPLY : CRAWL_ENOMEM;
            break;
        }
        memcpy(v[i], e->str, e->len);
        v[i][e->len] = '\0';
    }
    if (code < 0 && v) {
        for (size_t i = 0; i < r->elements; i++)
            free(v[i]);
        free(v);
        v = NULL;
    }
    if (code == 0) {
        *kv = v;
        *n = r->elements;
    }
    freeReplyObject(r);
    return code;
}
