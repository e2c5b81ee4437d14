/*
 * block.c -- hosts and domains an operator blocked (frontier.h:
 * frontier_block, frontier_blocked): the crawl's P blocks, what `crawler
 * block` and `unblock` write, and each worker's copy of it.
 *
 * DESIGN.  Key: P blocks (keys.def), on every shard, a hash of
 *   h:NAME   a host blocked: NAME under any scheme and port
 *   d:NAME   a domain blocked: NAME and every name under it
 *   ~gen     a token the change wrote (the same on every shard)
 * each block's value the Redis ms it was set.  A change is one call of
 * block.lua a shard (every shard's copy written, shard 0's answer read);
 * a block then sweeps each shard's P hosts (HSCAN, FR_BLOCK_SCAN fields a
 * step) and drops the queues of the hosts it covers (drop.lua: the
 * entries counted as `blocked`), each step one bounded call, so that a
 * crawl of a million hosts costs Redis a few thousand short calls, never a
 * long one.  What a sweep misses (a host added meanwhile) its claim drops:
 * every claim, offer and seed reads the hash (base.lua: read_blocks, one
 * HGET of ~gen while it is unchanged): a claim drops a blocked host's
 * queue when it comes up, an offer refuses its links ('b', counted as
 * `blocked_links`, their Bloom bits left unset).  A claim also tells its
 * worker the list when the worker's token differs (claim.c), so that the
 * worker does not fetch a blocked host's URLs it leased before the block
 * (frontier_blocked, checked before each transfer).  Unblocking lets new
 * links in; the URLs a block dropped are gone (seen in the visited set).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parser.h"

#define FR_BLOCK_SCAN 256 /* P hosts fields a sweep step reads, at most */

/* ---- a worker's copy of the list ------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void fr_blocklist_clear(fr_blocklist_t *bl)
{
    for (size_t i = 0; i < bl->n; i++)
        free(bl->name[i]);
    free(bl->name);
    free(bl->gen);
    memset(bl, 0, sizeof *bl);
}

int fr_blocklist_take(fr_blocklist_t *bl, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return CRAWL_EREPLY;
    const redisReply *g = r->element[0];
    if (bl->gen ? (strlen(bl->gen) == g->len && !memcmp(bl->gen, g->str, g->len)) : g->len == 0)
        return 0; /* (another shard's answer to the same claim told it already) */
    fr_blocklist_t nb = {0};
    nb.name = calloc(r->elements, sizeof *nb.name);
    nb.gen = g->len ? strndup(g->str, g->len) : NULL;
    if (!nb.name || (g->len && !nb.gen)) {
        fr_blocklist_clear(&nb);
        return CRAWL_ENOMEM;
    }
    for (size_t i = 1; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len < 3 || memchr(e->str, 0, e->len)) {
            fr_blocklist_clear(&nb);
            return CRAWL_EREPLY;
        }
        if (!(nb.name[nb.n++] = strndup(e->str, e->len))) {
            fr_blocklist_clear(&nb);
            return CRAWL_ENOMEM;
        }
    }
    qsort(nb.name, nb.n, sizeof *nb.name, cmp_str);
    fr_blocklist_clear(bl);
    *bl = nb;
    return 0;
}

static int has(const fr_blocklist_t *bl, char kind, const char *name)
{
    char key[FR_ORIGIN_MAX + 3];
    const char *k = key;
    if (snprintf(key, sizeof key, "%c:%s", kind, name) >= (int)sizeof key)
        return 0;
    return bsearch(&k, bl->name, bl->n, sizeof *bl->name, cmp_str) != NULL;
}

int fr_blocklist_covers(const fr_blocklist_t *bl, const char *name)
{
    char host[FR_ORIGIN_MAX];
    size_t len = strlen(name);
    if (!bl->n || len >= sizeof host)
        return 0;
    memcpy(host, name, len + 1);
    if (len > 1 && host[len - 1] == '.') /* "example.com." reaches example.com */
        host[len - 1] = '\0';
    if (has(bl, 'h', host))
        return 1;
    for (const char *at = host; at; at = strchr(at, '.')) {
        if (*at == '.')
            at++;
        if (has(bl, 'd', at))
            return 1;
    }
    return 0;
}

int frontier_blocked(const frontier_t *f, const char *url)
{
    char host[FR_ORIGIN_MAX];
    if (!f || !url || !f->blocks.n || parser_url_host(url, host, sizeof host) <= 0)
        return 0;
    return fr_blocklist_covers(&f->blocks, host);
}

const char *fr_blocks_known(const frontier_t *f)
{
    return f->blocks.gen ? f->blocks.gen : "";
}

/* ---- the operator's change ------------------------------------------------ */

void frontier_blocks_free(frontier_blocks_t *b)
{
    if (!b)
        return;
    free(b->v);
    memset(b, 0, sizeof *b);
}

/* The block call (frontier/lua/block.lua: block), KEYS: the ready key
 * (routing).
 *   ARGV[1]       P      the key prefix
 *   ARGV[2]       token  the change's token, the same on every shard
 *                        ([A-Za-z0-9-]+): P blocks' ~gen after it
 *   ARGV[3], [4]  field  "h:NAME" or "d:NAME", and "now" (block, at the
 *                        call's Redis time) or "" (unblock); absent: a
 *                        reading
 * Reply: {now_ms, {field, since_ms, ...}: the blocks after the call, fields
 * added or removed (a block already there keeps its time)}.  More than
 * FRONTIER_MAX_BLOCKS blocks: an error, nothing written. */
static void build_block(const char *prefix, const char *ready, const char *token, const char *field,
                        int change, rconn_args_t *a)
{
    rconn_arg_u64(a, 1); /* numkeys (fr_raw_fcall puts FCALL and the name before) */
    rconn_arg_dup(a, ready);
    rconn_arg_dup(a, prefix);
    rconn_arg_dup(a, token);
    if (change) {
        rconn_arg_dup(a, field);
        rconn_arg_cstr(a, change > 0 ? "now" : "");
    }
}

/* The drop call (frontier/lua/block.lua: drop), KEYS: the ready key.
 *   ARGV[1]       P       the key prefix
 *   ARGV[2..]     origin  hosts' origins (P hosts' fields)
 * Drops the queue of each origin a block covers now.  Reply: the entries
 * dropped. */
static void build_drop(const char *prefix, const char *ready, rconn_args_t *a)
{
    rconn_arg_u64(a, 1);
    rconn_arg_dup(a, ready);
    rconn_arg_dup(a, prefix);
}

/* Runs a built call on conn; *out the reply (caller frees) or an error
 * with its text in why. */
static int run(struct redisContext *conn, int script, rconn_args_t *a, redisReply **out, char *why,
               size_t wl)
{
    int rc = fr_raw_fcall(conn, script, a, out);
    if (rc == 0 && (*out)->type == REDIS_REPLY_ERROR) {
        rc = fr_reply_error(*out);
        fr_lua_error((*out)->str, why, wl);
    } else if (rc < 0) {
        snprintf(why, wl, "%s", conn->err ? conn->errstr : "");
    }
    return rc;
}

/* Domains first, then hosts, each by name. */
static int cmp_block(const void *a, const void *b)
{
    const frontier_block_t *x = a, *y = b;
    return x->domain != y->domain ? y->domain - x->domain : strcmp(x->name, y->name);
}

static int read_block_reply(const redisReply *r, frontier_blocks_t *out)
{
    uint64_t now, changed;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || fr_reply_u64(r->element[0], &now) ||
        r->element[1]->type != REDIS_REPLY_ARRAY || r->element[1]->elements % 2 ||
        fr_reply_u64(r->element[2], &changed))
        return CRAWL_EREPLY;
    const redisReply *kv = r->element[1];
    frontier_blocks_t b = {.now_ms = now, .changed = changed};
    if (kv->elements && !(b.v = calloc(kv->elements / 2, sizeof *b.v)))
        return CRAWL_ENOMEM;
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
        const redisReply *k = kv->element[i];
        frontier_block_t *e = &b.v[b.n];
        if (k->type != REDIS_REPLY_STRING || k->len < 3 || k->len - 2 >= sizeof e->name ||
            fr_reply_u64(kv->element[i + 1], &e->since_ms))
            continue;
        e->domain = k->str[0] == 'd';
        memcpy(e->name, k->str + 2, k->len - 2);
        b.n++;
    }
    if (b.n)
        qsort(b.v, b.n, sizeof *b.v, cmp_block);
    frontier_blocks_free(out);
    *out = b;
    return 0;
}

/* One sweep step on conn: the hosts of one HSCAN reply the list covers,
 * dropped.  Advances *cursor (0: the scan is over); adds to *dropped. */
static int sweep_step(struct redisContext *conn, const char *prefix, const char *ready,
                      const char *hosts, const fr_blocklist_t *bl, char *cursor, size_t cl,
                      uint64_t *dropped, char *why, size_t wl)
{
    redisReply *r = redisCommand(conn, "HSCAN %s %s COUNT %d", hosts, cursor, FR_BLOCK_SCAN);
    if (!r) {
        snprintf(why, wl, "%s", conn->errstr);
        return CRAWL_EREDIS;
    }
    int rc = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = fr_reply_error(r);
        snprintf(why, wl, "%s", r->str);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
               r->element[0]->type != REDIS_REPLY_STRING ||
               r->element[1]->type != REDIS_REPLY_ARRAY || r->element[0]->len >= cl) {
        rc = CRAWL_EREPLY;
    }
    rconn_args_t a;
    rconn_args_init(&a);
    build_drop(prefix, ready, &a);
    size_t nh = 0;
    for (size_t i = 0; rc == 0 && i + 1 < r->element[1]->elements; i += 2) {
        const redisReply *o = r->element[1]->element[i];
        char host[FR_ORIGIN_MAX];
        if (o->type == REDIS_REPLY_STRING && !memchr(o->str, 0, o->len) &&
            parser_url_host(o->str, host, sizeof host) > 0 && fr_blocklist_covers(bl, host)) {
            rconn_arg_copy(&a, o->str, o->len); /* (r is freed before the call) */
            nh++;
        }
    }
    if (rc == 0) {
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
    }
    freeReplyObject(r);
    redisReply *d = NULL;
    uint64_t n = 0;
    if (rc == 0 && nh && (rc = run(conn, FR_DROP, &a, &d, why, wl)) == 0 && fr_reply_u64(d, &n) < 0)
        rc = CRAWL_EREPLY;
    *dropped += n;
    if (d)
        freeReplyObject(d);
    rconn_args_free(&a);
    return rc;
}

/* The block call on each of the n shards (shard 0's answer into out), then,
 * for a block, the sweep of each. */
static int block_on(struct redisContext **conn, unsigned n, const char *crawl, const char *field,
                    int change, frontier_blocks_t *out, uint64_t *dropped, char *why, size_t wl)
{
    char token[48];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(token, sizeof token, "%llx-%lx-%lx", (unsigned long long)ts.tv_sec,
             (unsigned long)ts.tv_nsec, (unsigned long)getpid());
    int rc = 0;
    for (unsigned s = 0; rc == 0 && s < n; s++) {
        char p[FR_PREFIX_MAX], ready[FR_KEY_MAX];
        rconn_args_t a;
        redisReply *r = NULL;
        rconn_args_init(&a);
        fr_prefix_shard(crawl, s, p, sizeof p);
        fr_key_build(p, FR_K_READY, NULL, 0, ready, sizeof ready);
        build_block(p, ready, token, field, change, &a);
        rc = run(conn[s], FR_BLOCK, &a, &r, why, wl);
        if (rc == 0 && s == 0)
            rc = read_block_reply(r, out);
        if (r)
            freeReplyObject(r);
        rconn_args_free(&a);
    }
    if (rc < 0 || change <= 0)
        return rc;
    fr_blocklist_t bl = {0}; /* only the new block: what the sweep looks for */
    char *one = strdup(field);
    if (!one)
        return CRAWL_ENOMEM;
    bl.name = &one;
    bl.n = 1;
    for (unsigned s = 0; rc == 0 && s < n; s++) {
        char p[FR_PREFIX_MAX], ready[FR_KEY_MAX], hosts[FR_KEY_MAX], cursor[64] = "0";
        fr_prefix_shard(crawl, s, p, sizeof p);
        fr_key_build(p, FR_K_READY, NULL, 0, ready, sizeof ready);
        fr_key_build(p, FR_K_HOSTS, NULL, 0, hosts, sizeof hosts);
        do
            rc = sweep_step(conn[s], p, ready, hosts, &bl, cursor, sizeof cursor, dropped, why, wl);
        while (rc == 0 && strcmp(cursor, "0") != 0);
    }
    free(one);
    return rc;
}

int frontier_block(struct redisContext *rc, const rconn_t *redis, const char *crawl, int change,
                   int domain, const char *name, frontier_blocks_t *out, uint64_t *dropped,
                   char *errbuf, size_t errlen)
{
    char dummy[8], p[FR_PREFIX_MAX], field[FR_ORIGIN_MAX + 3] = "", why[FR_ERROR_MAX] = "";
    uint64_t drop = 0;
    if (!errbuf || !errlen) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    *errbuf = '\0';
    if (dropped)
        *dropped = 0;
    if (!rc || !out || !crawl || fr_prefix(crawl, p, sizeof p) < 0) {
        snprintf(errbuf, errlen, "bad crawl name");
        return CRAWL_EINVAL;
    }
    if (change && (!name || !*name || strlen(name) >= FR_ORIGIN_MAX ||
                   strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789.-_:[]") != strlen(name))) {
        snprintf(errbuf, errlen, "bad host or domain name: %s", name ? name : "(none)");
        return CRAWL_EINVAL;
    }
    if (change)
        snprintf(field, sizeof field, "%c:%s", domain ? 'd' : 'h', name);
    fr_shard_set_t set;
    int rc_ = fr_shards_open(rc, redis, crawl, &set, why, sizeof why);
    if (rc_ == 0)
        rc_ = block_on(set.conn, set.n, crawl, field, change, out, &drop, why, sizeof why);
    fr_shards_close(&set);
    if (dropped)
        *dropped = drop;
    if (rc_ < 0)
        snprintf(errbuf, errlen, "%s%s%s", crawl_strerror(rc_), *why ? ": " : "", why);
    return rc_;
}
