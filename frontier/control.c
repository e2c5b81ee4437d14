/*
 * control.c -- control of a running crawl (frontier.h: frontier_control,
 * frontier_limit_field): the crawl's control hash, what `crawler pause`,
 * `resume`, `drain` and `limits` write and `crawler stats` reads.
 *
 * DESIGN.  Key: P control (keys.def), a hash of these fields, each absent
 * when not set:
 *   paused              "1": claims take nothing (claim.lua answers 3)
 *   drain               Redis ms of the last drain: a worker whose record's
 *                       started is at or before it drains (claim.lua and
 *                       heartbeat.lua answer 4)
 *   per_host, delay, max_delay, max_pages, max_pages_per_host
 *                       overrides of the workers' own limits (their flags,
 *                       sent as ARGV): the functions that use a limit read
 *                       the hash in the same call (base.lua: read_control,
 *                       limit), so an override holds from the next call on,
 *                       on every worker, and cleared the worker's own holds.
 * A change is one FCALL of control.lua (the layout above build_control),
 * which checks every field before it writes, sets drain from the server's
 * clock, and answers the hash as it is then.  No handle is needed: the call
 * runs on a bare one made here (the functions' names, the library loaded
 * again if the server lost it), like frontier_stats's reads.
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const fields[FRONTIER_LIMIT_COUNT] = {
    [FRONTIER_LIMIT_PER_HOST] = "per_host",
    [FRONTIER_LIMIT_DELAY] = "delay",
    [FRONTIER_LIMIT_MAX_DELAY] = "max_delay",
    [FRONTIER_LIMIT_MAX_PAGES] = "max_pages",
    [FRONTIER_LIMIT_MAX_PAGES_PER_HOST] = "max_pages_per_host",
};

const char *frontier_limit_field(frontier_limit_t l)
{
    return (unsigned)l < FRONTIER_LIMIT_COUNT ? fields[l] : NULL;
}

int fr_control_read(const redisReply *kv, frontier_control_t *out)
{
    memset(out, 0, sizeof *out);
    if (kv->type != REDIS_REPLY_ARRAY || kv->elements % 2)
        return CRAWL_EREPLY;
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
        const redisReply *k = kv->element[i];
        uint64_t v;
        if (k->type != REDIS_REPLY_STRING || fr_reply_u64(kv->element[i + 1], &v) < 0)
            continue;
        if (!strcmp(k->str, "paused"))
            out->paused = v != 0;
        else if (!strcmp(k->str, "drain"))
            out->drain_ms = v;
        for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++)
            if (!strcmp(k->str, fields[l])) {
                out->set[l] = 1;
                out->value[l] = v;
            }
    }
    return 0;
}

/* The highest value limit l takes (frontier_control_change_t). */
static uint64_t limit_max(int l)
{
    return l == FRONTIER_LIMIT_MAX_PAGES || l == FRONTIER_LIMIT_MAX_PAGES_PER_HOST ? UINT64_MAX
                                                                                   : UINT32_MAX;
}

/* The control call (frontier/lua/control.lua), KEYS: ready (routing).
 *   ARGV[1]          P       the key prefix
 *   ARGV[2], [3] ..  pairs   a field of the control hash (DESIGN) and its new
 *                            value: digits, "" (delete the field), or "now"
 *                            (the call's Redis time, for drain)
 * Reply: {now_ms, the hash after the call (HGETALL's field/value list),
 * workers whose lease is live}.  No pair: a reading, nothing written. */
static int build_control(const char *prefix, const char *ready, const frontier_control_change_t *ch,
                         rconn_args_t *a)
{
    rconn_arg_u64(a, 1);     /* numkeys (fr_raw_fcall puts FCALL and the name before) */
    rconn_arg_dup(a, ready); /* copies: the caller builds one call a shard in one buffer */
    rconn_arg_dup(a, prefix);
    if (!ch)
        return 0;
    if (ch->pause) {
        rconn_arg_cstr(a, "paused");
        rconn_arg_cstr(a, ch->pause > 0 ? "1" : "");
    }
    if (ch->drain) {
        rconn_arg_cstr(a, "drain");
        rconn_arg_cstr(a, "now");
    }
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++) {
        if (!ch->limit[l])
            continue;
        if (ch->limit[l] > 0 &&
            (ch->value[l] > limit_max(l) || (l == FRONTIER_LIMIT_PER_HOST && ch->value[l] == 0)))
            return CRAWL_EINVAL;
        rconn_arg_cstr(a, fields[l]);
        if (ch->limit[l] > 0)
            rconn_arg_u64(a, ch->value[l]);
        else
            rconn_arg_cstr(a, "");
    }
    return 0;
}

/* Reads the control call's reply. */
static int read_reply(const redisReply *r, frontier_control_t *out, uint64_t *now_ms,
                      uint32_t *live)
{
    uint64_t now, n;
    frontier_control_t ctl;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || fr_reply_u64(r->element[0], &now) ||
        fr_reply_u64(r->element[2], &n) || fr_control_read(r->element[1], &ctl) < 0)
        return CRAWL_EREPLY;
    if (out)
        *out = ctl;
    if (now_ms)
        *now_ms = now;
    if (live)
        *live = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    return 0;
}

int frontier_control(struct redisContext *rc, const char *crawl,
                     const frontier_control_change_t *ch, frontier_control_t *out, uint64_t *now_ms,
                     uint32_t *live, char *errbuf, size_t errlen)
{
    return frontier_control_routed(rc, NULL, crawl, ch, out, now_ms, live, errbuf, errlen);
}

/* The control call on each of the crawl's n shards, conn[s] shard s's
 * server (one call a shard, each a round trip: control is an operator's
 * command); shard 0's answer read into out, now_ms and live.  On a
 * failure, errbuf says why. */
static int control_on(struct redisContext **conn, unsigned n, const char *crawl,
                      const frontier_control_change_t *ch, frontier_control_t *out,
                      uint64_t *now_ms, uint32_t *live, char *errbuf, size_t errlen)
{
    int rc = 0;
    char why[FR_ERROR_MAX] = "";
    for (unsigned s = 0; rc == 0 && s < n; s++) {
        char p[FR_PREFIX_MAX], ready[FR_KEY_MAX];
        rconn_args_t a;
        redisReply *r = NULL;
        rconn_args_init(&a);
        fr_prefix_shard(crawl, s, p, sizeof p);
        fr_key_build(p, FR_K_READY, NULL, 0, ready, sizeof ready);
        if ((rc = build_control(p, ready, ch, &a)) < 0) {
            snprintf(errbuf, errlen, "a limit out of range");
            rconn_args_free(&a);
            return rc;
        }
        rc = fr_raw_fcall(conn[s], FR_CONTROL, &a, &r);
        if (rc == 0 && r->type == REDIS_REPLY_ERROR) {
            rc = fr_reply_error(r);
            fr_lua_error(r->str, why, sizeof why);
        } else if (rc == 0 && s == 0) {
            rc = read_reply(r, out, now_ms, live);
        } else if (rc < 0) {
            snprintf(why, sizeof why, "%s", conn[s]->err ? conn[s]->errstr : "");
        }
        if (r)
            freeReplyObject(r);
        rconn_args_free(&a);
    }
    if (rc < 0)
        snprintf(errbuf, errlen, "%s%s%s", crawl_strerror(rc), *why ? ": " : "", why);
    return rc;
}

int frontier_control_routed(struct redisContext *rc, const rconn_t *redis, const char *crawl,
                            const frontier_control_change_t *ch, frontier_control_t *out,
                            uint64_t *now_ms, uint32_t *live, char *errbuf, size_t errlen)
{
    char dummy[8], p[FR_PREFIX_MAX];
    if (!errbuf || !errlen) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    *errbuf = '\0';
    if (!rc || !crawl || fr_prefix(crawl, p, sizeof p) < 0) {
        snprintf(errbuf, errlen, "bad crawl name");
        return CRAWL_EINVAL;
    }
    fr_shard_set_t set;
    char why[FR_ERROR_MAX] = "";
    int rc_ = fr_shards_open(rc, redis, crawl, &set, why, sizeof why);
    if (rc_ < 0) {
        snprintf(errbuf, errlen, "%s%s%s", crawl_strerror(rc_), *why ? ": " : "", why);
        return rc_;
    }
    unsigned n = set.n;
    if (n > 1 && !set.quota && ch && ch->limit[FRONTIER_LIMIT_MAX_PAGES] > 0 &&
        ch->value[FRONTIER_LIMIT_MAX_PAGES] > 0) { /* (lifting one, "unlimited", is harmless) */
        snprintf(errbuf, errlen, FRONTIER_NO_QUOTA_TEXT, crawl, (unsigned long)n);
        fr_shards_close(&set);
        return CRAWL_EINVAL;
    }
    /* every shard's copy written, on its server; shard 0's answers */
    rc_ = control_on(set.conn, n, crawl, ch, out, now_ms, live, errbuf, errlen);
    fr_shards_close(&set);
    return rc_;
}

int fr_control_before(frontier_t *f, frontier_control_t *c, char *errbuf, size_t errlen)
{
    struct redisContext *c0 = fr_context(f, 0);
    if (!c0) {
        snprintf(errbuf, errlen, "%s", rconn_link_error(f->link));
        return CRAWL_EREDIS;
    }
    return control_on(&c0, 1, f->crawl, NULL, c, NULL, NULL, errbuf, errlen);
}

int fr_control_spread(frontier_t *f, const frontier_control_t *c, char *errbuf, size_t errlen)
{
    frontier_control_change_t ch = {0};
    int any = c->paused;
    ch.pause = c->paused ? 1 : 0;
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++)
        if (c->set[l]) {
            ch.limit[l] = 1;
            ch.value[l] = c->value[l];
            any = 1;
        }
    if (!any)
        return 0;
    struct redisContext **conn = calloc(f->nshards, sizeof *conn);
    int rc = conn ? 0 : CRAWL_ENOMEM;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++)
        if (!(conn[s] = fr_context(f, s))) {
            snprintf(errbuf, errlen, "%s", rconn_link_error(f->link));
            rc = CRAWL_EREDIS;
        }
    if (rc == 0)
        rc = control_on(conn, f->nshards, f->crawl, &ch, NULL, NULL, NULL, errbuf, errlen);
    free(conn);
    return rc;
}
