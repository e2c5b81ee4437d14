/*
 * bloom_create.c -- creating a filter without hurting a shared Redis.
 *
 * DESIGN
 * Keys: "NAME:creating" (string: the creator's token, PX BLOOM_CREATE_LEASE_MS),
 * then "NAME:b:<i>" and "NAME:meta" as bloom_open.c describes them.
 *
 * bloom_open.c's open script claims the name (sets "NAME:creating") when
 * neither the meta hash, nor a claim, nor any block key exists.  Then, here:
 *   1. INFO memory: the filter's bytes (bloom_redis_bytes) must fit in
 *      maxmemory - used_memory (maxmemory 0: total_system_memory stands for
 *      it), else CRAWL_ENOROOM naming both, and nothing is left behind;
 *   2. the blocks, in steps of at most step_bytes of whole blocks (a larger
 *      block is a step of its own), one EVAL each.  Redis checks maxmemory
 *      before each call (the step's first write is its first SETBIT), so a
 *      server whose limit is reached part-way answers OOM to the next step
 *      and overshoots by at most one step; each step also checks the claim
 *      is still ours and renews it;
 *   3. the meta hash, written last (with the claim deleted) by one script:
 *      a meta hash always describes fully allocated blocks.
 * If any step fails, one script deletes every block key and the claim (only
 * while the claim is ours), so no half filter is left.  A creator killed
 * part-way leaves blocks without meta (the claim expires): the next creator
 * reports them as leftovers, as before.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

/* KEYS: claim, block keys.  ARGV: token, lease ms, last bit of a block. */
static const char STEP_SCRIPT[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'lost' end\n"
    "for i = 2, #KEYS do redis.call('SETBIT', KEYS[i], ARGV[3], 0) end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "return 'ok'\n";

/* KEYS: claim, meta.  ARGV: token, then the meta hash's fields and values. */
static const char FINISH_SCRIPT[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'lost' end\n"
    "redis.call('HSET', KEYS[2], unpack(ARGV, 2))\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 'ok'\n";

/* KEYS: claim, meta, block keys.  ARGV: token.  Deletes the blocks and the
 * claim unless another creator holds the claim or a meta hash exists. */
static const char CLEANUP_SCRIPT[] =
    "local c = redis.call('GET', KEYS[1])\n"
    "if (c and c ~= ARGV[1]) or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end\n"
    "for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 1\n";

/* "1.2 GiB" style, into buf. */
static const char *human(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " bytes", v);
    else
        snprintf(buf, len, "%.*f %s", d < 10.0 ? 1 : 0, d, units[u]);
    return buf;
}

/* The value of "\r\nNAME:" in an INFO reply; 0 and *found 0 if absent. */
static uint64_t info_field(const char *info, const char *name, int *found)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s:", name);
    const char *p = strstr(info, pat);
    *found = p != NULL;
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* Step 1: INFO memory, one round trip.  0, or CRAWL_ENOROOM with the
 * message. */
static int check_memory(bloom_t *b, const bloom_geometry_t *want)
{
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    redisReply *r = redisCommand(b->rc, "INFO memory");
    bloom_sigpipe_restore(&g);
    if (!r)
        return bloom_fail_io(b);
    if (r->type != REDIS_REPLY_STRING) {
        int rc = bloom_fail(b, CRAWL_EREPLY, "INFO memory: unexpected reply type %d", r->type);
        freeReplyObject(r);
        return rc;
    }
    int has_used, has_max, has_sys;
    uint64_t used = info_field(r->str, "used_memory", &has_used);
    uint64_t max = info_field(r->str, "maxmemory", &has_max);
    uint64_t sys = info_field(r->str, "total_system_memory", &has_sys);
    freeReplyObject(r);
    if (!has_used || !has_max)
        return bloom_fail(b, CRAWL_EREPLY, "INFO memory lacks used_memory or maxmemory");
    uint64_t limit = max ? max : sys;
    if (limit == 0)
        return 0; /* no limit and no RAM size known: nothing to check against */
    uint64_t need = bloom_redis_bytes(want), avail = limit > used ? limit - used : 0;
    if (need <= avail)
        return 0;
    char hn[32], ha[32], hl[32], hu[32];
    return bloom_fail(b, CRAWL_ENOROOM,
                      "the Bloom filter '%s' needs %s (%" PRIu64
                      " bytes) but Redis has %s (%" PRIu64
                      " bytes) free under %s (%s, %s used): ask for a smaller capacity or a "
                      "larger false-positive rate, or raise Redis' maxmemory",
                      b->name, human(need, hn, sizeof hn), need, human(avail, ha, sizeof ha), avail,
                      max ? "maxmemory" : "the server's RAM (maxmemory is 0: no limit)",
                      human(limit, hl, sizeof hl), human(used, hu, sizeof hu));
}

/* Sends the RESP command in b->out and reads one reply. */
static int roundtrip(bloom_t *b, redisReply **out)
{
    *out = NULL;
    if (b->out.oom || redisAppendFormattedCommand(b->rc, b->out.p, b->out.len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    int ok = redisGetReply(b->rc, (void **)out) == REDIS_OK;
    bloom_sigpipe_restore(&g);
    return ok ? 0 : bloom_fail_io(b);
}

static void buf_num(bloom_buf_t *o, uint64_t v)
{
    char s[24];
    int n = snprintf(s, sizeof s, "%" PRIu64, v);
    bloom_buf_bulk(o, s, (size_t)n);
}

static void buf_str(bloom_buf_t *o, const char *s)
{
    bloom_buf_bulk(o, s, strlen(s));
}

/* A script's reply: 0 for "ok", else the failure (OOM: CRAWL_ENOROOM). */
static int script_reply(bloom_t *b, const redisReply *r, const char *what)
{
    if ((r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) && !strcmp(r->str, "ok"))
        return 0;
    if ((r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) && !strcmp(r->str, "lost"))
        return bloom_fail(b, CRAWL_EREPLY,
                          "%s: another process took over the creation of filter '%s' (our "
                          "claim expired)",
                          what, b->name);
    if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "OOM"))
        return bloom_fail(b, CRAWL_ENOROOM,
                          "%s: Redis reached its maxmemory part-way and refused (%.120s)", what,
                          r->str);
    if (r->type == REDIS_REPLY_ERROR && crawl_retry_reply(r->str))
        return bloom_fail(b, CRAWL_EREDIS, "%s: Redis answered %.200s", what, r->str);
    if (r->type == REDIS_REPLY_ERROR)
        return bloom_fail(b, CRAWL_EREPLY, "%s: Redis error: %.200s", what, r->str);
    return bloom_fail(b, CRAWL_EREPLY, "%s: unexpected reply type %d", what, r->type);
}

/* One step: blocks [from, to) in one EVAL. */
static int write_step(bloom_t *b, const bloom_create_t *c, uint32_t from, uint32_t to)
{
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    bloom_buf_array(o, 3 + 1 + (to - from) + 3);
    buf_str(o, "EVAL");
    bloom_buf_bulk(o, STEP_SCRIPT, sizeof STEP_SCRIPT - 1);
    buf_num(o, 1 + (to - from));
    buf_str(o, c->ckey);
    for (uint32_t i = from; i < to; i++)
        bloom_buf_block_key(o, b, i);
    buf_str(o, c->token);
    buf_num(o, BLOOM_CREATE_LEASE_MS);
    buf_num(o, c->geo->block_bits - 1);
    redisReply *r;
    int rc = roundtrip(b, &r);
    if (rc < 0)
        return rc;
    char what[96];
    snprintf(what, sizeof what, "writing blocks %u..%u of %u", from, to - 1, c->geo->blocks);
    rc = script_reply(b, r, what);
    freeReplyObject(r);
    return rc;
}

static int write_meta(bloom_t *b, const bloom_create_t *c)
{
    const bloom_geometry_t *g = c->geo;
    const bloom_params_t *pp = c->params;
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    int grows = pp->growth > 1.0;
    bloom_buf_array(o, 6 + 18 + (grows ? 10 : 0));
    buf_str(o, "EVAL");
    bloom_buf_bulk(o, FINISH_SCRIPT, sizeof FINISH_SCRIPT - 1);
    buf_str(o, "2");
    buf_str(o, c->ckey);
    buf_str(o, c->mkey);
    buf_str(o, c->token);
    static const char *const names[] = {"m", "k", "blocks", "block_bits", "seed"};
    uint64_t vals[] = {g->m, g->k, g->blocks, g->block_bits, g->seed};
    for (int i = 0; i < 5; i++) {
        buf_str(o, names[i]);
        buf_num(o, vals[i]);
    }
    buf_str(o, "hash");
    buf_str(o, BLOOM_HASH_NAME);
    buf_str(o, "version");
    buf_num(o, BLOOM_FORMAT_VERSION);
    buf_str(o, "capacity");
    buf_num(o, pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY);
    double fp = pp->fp_rate != 0.0 ? pp->fp_rate : BLOOM_DEFAULT_FP_RATE;
    char p[32];
    snprintf(p, sizeof p, "%.17g", grows ? fp * (1.0 - BLOOM_TIGHTENING) : fp);
    buf_str(o, "fp_rate");
    buf_str(o, p);
    if (grows) { /* layer 0 of a filter that grows: the stack's state (bloom_layers.c) */
        char gs[32], ts[32];
        snprintf(gs, sizeof gs, "%.17g", pp->growth);
        snprintf(ts, sizeof ts, "%.17g", fp);
        buf_str(o, "growth");
        buf_str(o, gs);
        buf_str(o, "fp_target");
        buf_str(o, ts);
        buf_str(o, "layers");
        buf_str(o, "1");
        buf_str(o, "added");
        buf_str(o, "0");
        buf_str(o, "full_at");
        buf_num(o, pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY);
    }
    redisReply *r;
    int rc = roundtrip(b, &r);
    if (rc < 0)
        return rc;
    rc = script_reply(b, r, "writing the filter's meta hash");
    freeReplyObject(r);
    return rc;
}

/* Deletes what this creation wrote (every block key, the claim), keeping
 * b->errmsg; best effort on a connection that still works. */
static void cleanup(bloom_t *b, const bloom_create_t *c)
{
    if (b->rc->err)
        return;
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    bloom_buf_array(o, 3 + 2 + c->geo->blocks + 1);
    buf_str(o, "EVAL");
    bloom_buf_bulk(o, CLEANUP_SCRIPT, sizeof CLEANUP_SCRIPT - 1);
    buf_num(o, 2 + (uint64_t)c->geo->blocks);
    buf_str(o, c->ckey);
    buf_str(o, c->mkey);
    for (uint32_t i = 0; i < c->geo->blocks; i++)
        bloom_buf_block_key(o, b, i);
    buf_str(o, c->token);
    char keep[sizeof b->errmsg];
    memcpy(keep, b->errmsg, sizeof keep);
    redisReply *r;
    if (roundtrip(b, &r) == 0)
        freeReplyObject(r);
    memcpy(b->errmsg, keep, sizeof keep);
}

int bloom_create_blocks(bloom_t *b, const bloom_create_t *c)
{
    const bloom_geometry_t *g = c->geo;
    uint64_t step = c->params->step_bytes ? c->params->step_bytes : BLOOM_CREATE_STEP_BYTES;
    uint64_t bytes = g->block_bits / 8, total = bytes * g->blocks;
    uint64_t per = bytes >= step ? 1 : step / bytes; /* blocks per step */
    int rc = check_memory(b, g);
    for (uint32_t i = 0; rc == 0 && i < g->blocks;) {
        uint32_t to = (uint64_t)g->blocks - i > per ? i + (uint32_t)per : g->blocks;
        rc = write_step(b, c, i, to);
        i = to;
        if (rc == 0 && c->params->progress)
            c->params->progress(c->params->progress_ud, (uint64_t)i * bytes, total);
    }
    if (rc == 0)
        rc = write_meta(b, c);
    if (rc < 0)
        cleanup(b, c);
    return rc;
}
