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
                         fr_args_t *a)
{
    fa_fcall(a, 1);
    fa_dup(a, ready); /* copies: the caller builds one call a shard in one buffer */
    fa_dup(a, prefix);
    if (!ch)
        return 0;
    if (ch->pause) {
        fa_cstr(a, "paused");
        fa_cstr(a, ch->pause > 0 ? "1" : "");
    }
    if (ch->drain) {
        fa_cstr(a, "drain");
        fa_cstr(a, "now");
    }
    for (int l = 0; l < FRONTIER_LIMIT_COUNT; l++) {
        if (!ch->limit[l])
            continue;
        if (ch->limit[l] > 0 &&
            (ch->value[l] > limit_max(l) || (l == FRONTIER_LIMIT_PER_HOST && ch->value[l] == 0)))
            return CRAWL_EINVAL;
        fa_cstr(a, fields[l]);
        if (ch->limit[l] > 0)
            fa_u64(a, ch->value[l]);
        else
            fa_cstr(a, "");
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

int frontier_control_routed(struct redisContext *rc, const rconn_t *redis, const char *crawl,
                            const frontier_control_change_t *ch, frontier_control_t *out,
                            uint64_t *now_ms, uint32_t *live, char *errbuf, size_t errlen)
{
    char dummy[8];
    if (!errbuf || !errlen) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    *errbuf = '\0';
    frontier_t f; /* a bare handle: what fr_run needs */
    memset(&f, 0, sizeof f);
    f.rc = rc;
    f.prefix = f.prefix0;
    f.ready_key = f.ready0;
    if (!rc || fr_prefix(crawl, f.prefix0, sizeof f.prefix0) < 0 ||
        fr_key(&f, FR_K_READY, f.ready0, sizeof f.ready0) < 0) {
        snprintf(errbuf, errlen, "bad crawl name");
        return CRAWL_EINVAL;
    }
    fr_library(f.fn);
    unsigned n = 1;
    int quota = 0;
    int rc_ = fr_crawl_shards(rc, crawl, &n, &quota);
    if (rc_ == 0 && n > 1 && !quota && ch && ch->limit[FRONTIER_LIMIT_MAX_PAGES] > 0 &&
        ch->value[FRONTIER_LIMIT_MAX_PAGES] > 0) { /* (lifting one, "unlimited", is harmless) */
        snprintf(errbuf, errlen, FRONTIER_NO_QUOTA_TEXT, crawl, (unsigned long)n);
        return CRAWL_EINVAL;
    }
    /* every shard's copy written, in one round trip on one server (one a
     * shard over several); shard 0's answers */
    fr_args_t *a = rc_ == 0 ? calloc(n, sizeof *a) : NULL;
    redisReply **rep = a ? calloc(n, sizeof *rep) : NULL;
    struct redisContext **conn = rep ? calloc(2 * (size_t)n, sizeof *conn) : NULL;
    size_t nown = 0;
    if (rc_ == 0 && !conn)
        rc_ = CRAWL_ENOMEM;
    if (rc_ == 0 && (rc_ = fr_shard_conns(rc, redis, crawl, n, conn, conn + n, &nown)) < 0)
        snprintf(errbuf, errlen, "the Redis Cluster's masters of the crawl's shards");
    for (unsigned s = 0; rc_ == 0 && s < n; s++) {
        char p[FR_PREFIX_MAX], ready[FR_KEY_MAX];
        fa_init(&a[s]);
        fr_prefix_shard(crawl, s, p, sizeof p);
        fr_key_build(p, FR_K_READY, NULL, 0, ready, sizeof ready);
        rc_ = build_control(p, ready, ch, &a[s]);
        if (rc_ < 0)
            snprintf(errbuf, errlen, "a limit out of range");
    }
    if (rc_ == 0 && !nown)
        rc_ = fr_run(&f, FR_CONTROL, a, n, rep);
    for (unsigned s = 0; rc_ == 0 && nown && s < n; s++) {
        f.rc = conn[s];
        rc_ = fr_run(&f, FR_CONTROL, &a[s], 1, &rep[s]);
    }
    f.rc = rc;
    for (unsigned s = 0; rc_ == 0 && s < n; s++)
        if (rep[s]->type == REDIS_REPLY_ERROR) {
            rc_ = fr_reply_error(rep[s]);
            break;
        }
    if (rc_ == 0)
        rc_ = read_reply(rep[0], out, now_ms, live);
    for (unsigned s = 0; rep && s < n; s++)
        if (rep[s])
            freeReplyObject(rep[s]);
    for (unsigned s = 0; a && s < n; s++)
        fa_free(&a[s]);
    free(a);
    free(rep);
    for (size_t i = 0; i < nown; i++)
        redisFree(conn[n + i]);
    free(conn);
    if (rc_ == CRAWL_EINVAL)
        return rc_;
    if (rc_ < 0)
        snprintf(errbuf, errlen, "%s%s%s", crawl_strerror(rc_), *f.last_error ? ": " : "",
                 *f.last_error ? f.last_error
                 : rc->err     ? rc->errstr
                               : "");
    return rc_;
}

int fr_control_before(frontier_t *f, frontier_control_t *c, char *errbuf, size_t errlen)
{
    /* routed: another opener may have fixed the count meanwhile */
    return frontier_control_routed(f->shard[0].rc, f->cfg.redis, f->crawl, NULL, c, NULL, NULL,
                                   errbuf, errlen);
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
    return any ? frontier_control_routed(f->shard[0].rc, f->cfg.redis, f->crawl, &ch, NULL, NULL,
                                         NULL, errbuf, errlen)
               : 0;
}
