/*
 * bloom_open.c -- creating, opening, checking and deleting a filter in Redis.
 *
 * DESIGN
 * Keys: "NAME:meta" (hash: m, k, blocks, block_bits, seed, hash, version,
 * capacity, fp_rate) and "NAME:b:<i>" (strings of block_bits/8 bytes).
 *
 * Opening is one Lua script (OPEN_SCRIPT), so it is atomic against other
 * openers: if the meta hash exists it returns it; if the key holds another
 * type it says so; otherwise, when the caller gave parameters, it refuses if
 * any block key already exists (leftovers without metadata), then allocates
 * every block with SETBIT <last bit> 0 and writes the meta hash LAST -- a
 * meta hash therefore always describes fully allocated blocks.  Two racing
 * creators: the second one finds the first one's meta and compares.
 *
 * An existing filter is then checked in one pipelined round trip (TYPE and
 * STRLEN of every block): a missing or short block is corruption, a non-string
 * is a wrong type.  A stored geometry different from the one asked for is a
 * mismatch, reported with both.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

static const char OPEN_SCRIPT[] =
    "local t = redis.call('TYPE', KEYS[1])['ok']\n"
    "if t == 'hash' then return {'exists', redis.call('HGETALL', KEYS[1])} end\n"
    "if t ~= 'none' then return {'wrongtype', t} end\n"
    "if ARGV[1] ~= '1' then return {'absent'} end\n"
    "for i = 2, #KEYS do\n"
    "  if redis.call('EXISTS', KEYS[i]) == 1 then return {'orphan', KEYS[i]} end\n"
    "end\n"
    "for i = 2, #KEYS do redis.call('SETBIT', KEYS[i], ARGV[2], 0) end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"
    "return {'created'}\n";

/* Strict decimal u64: digits only, no sign, no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static char *meta_key(const char *name)
{
    size_t n = strlen(name) + sizeof ":meta";
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "%s:meta", name);
    return k;
}

/* ---- meta parsing ---------------------------------------------------------- */

typedef struct meta_seen {
    int m, k, blocks, block_bits, seed, hash, version;
} meta_seen_t;

static int meta_field(bloom_t *b, const redisReply *f, const redisReply *v, meta_seen_t *seen)
{
    static const char *const names[] = {"m", "k", "blocks", "block_bits", "seed"};
    int *flags[] = {&seen->m, &seen->k, &seen->blocks, &seen->block_bits, &seen->seed};
    uint64_t num;
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
        return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s' is not a field/value hash", b->name);
    if (!strcmp(f->str, "hash")) {
        seen->hash = 1;
        if (strcmp(v->str, BLOOM_HASH_NAME) != 0)
            return bloom_fail(b, CRAWL_ECORRUPT, "filter '%s' uses hash '%.40s', not '%s'", b->name,
                              v->str, BLOOM_HASH_NAME);
        return 0;
    }
    if (!strcmp(f->str, "version")) {
        seen->version = 1;
        if (parse_u64(v->str, v->len, &num) < 0 || num != BLOOM_FORMAT_VERSION)
            return bloom_fail(b, CRAWL_ECORRUPT, "filter '%s' has format version '%.40s', not %d",
                              b->name, v->str, BLOOM_FORMAT_VERSION);
        return 0;
    }
    if (!strcmp(f->str, "capacity")) {
        if (parse_u64(v->str, v->len, &b->capacity) < 0)
            b->capacity = 0; /* informational only */
        return 0;
    }
    if (!strcmp(f->str, "fp_rate")) {
        b->fp_rate = strtod(v->str, NULL);
        return 0;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(f->str, names[i]) != 0)
            continue;
        if (parse_u64(v->str, v->len, &num) < 0)
            return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s': field %s = '%.40s' is not a number",
                              b->name, names[i], v->str);
        *flags[i] = 1;
        switch (i) {
        case 0:
            b->geo.m = num;
            break;
        case 1:
            b->geo.k = num > BLOOM_MAX_K ? 0 : (uint32_t)num;
            break;
        case 2:
            b->geo.blocks = num > BLOOM_MAX_BLOCKS ? 0 : (uint32_t)num;
            break;
        case 3:
            b->geo.block_bits = num;
            break;
        default:
            b->geo.seed = num;
            break;
        }
    }
    return 0; /* unknown fields are ignored (forward compatible) */
}

/* Fills b->geo from an HGETALL reply; CRAWL_ECORRUPT on anything odd. */
static int parse_meta(bloom_t *b, const redisReply *r)
{
    meta_seen_t seen = {0};
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s' is not a field/value hash", b->name);
    for (size_t i = 0; i < r->elements; i += 2) {
        int rc = meta_field(b, r->element[i], r->element[i + 1], &seen);
        if (rc < 0)
            return rc;
    }
    if (!seen.hash || !seen.version || !seen.m || !seen.k || !seen.blocks || !seen.block_bits ||
        !seen.seed)
        return bloom_fail(b, CRAWL_ECORRUPT,
                          "meta of '%s' lacks a field (needs m k blocks block_bits seed hash "
                          "version): not a filter of this program",
                          b->name);
    const bloom_geometry_t *g = &b->geo;
    if (g->k < 1 || g->blocks < 1 || g->block_bits < 8 || g->block_bits % 8 != 0 ||
        g->block_bits > BLOOM_MAX_BLOCK_BITS || g->m != (uint64_t)g->blocks * g->block_bits)
        return bloom_fail(b, CRAWL_ECORRUPT,
                          "meta of '%s' is inconsistent: m=%llu k=%u blocks=%u block_bits=%llu",
                          b->name, (unsigned long long)g->m, g->k, g->blocks,
                          (unsigned long long)g->block_bits);
    b->geo.version = BLOOM_FORMAT_VERSION;
    return 0;
}

static void describe(char *buf, size_t len, const bloom_geometry_t *g, uint64_t n, double p)
{
    int w =
        snprintf(buf, len, "m=%llu k=%u blocks=%u x %llu bits seed=%llu", (unsigned long long)g->m,
                 g->k, g->blocks, (unsigned long long)g->block_bits, (unsigned long long)g->seed);
    if (n && w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, " (n=%llu p=%g)", (unsigned long long)n, p);
}

static int compare_geometry(bloom_t *b, const bloom_geometry_t *want, const bloom_params_t *pp)
{
    const bloom_geometry_t *g = &b->geo;
    if (g->m == want->m && g->k == want->k && g->blocks == want->blocks &&
        g->block_bits == want->block_bits && g->seed == want->seed)
        return 0;
    char have_s[128], want_s[128];
    describe(have_s, sizeof have_s, g, b->capacity, b->fp_rate);
    describe(want_s, sizeof want_s, want, pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY,
             pp->fp_rate != 0.0 ? pp->fp_rate : BLOOM_DEFAULT_FP_RATE);
    return bloom_fail(b, CRAWL_EMISMATCH, "filter '%s' exists with %s; asked for %s", b->name,
                      have_s, want_s);
}

/* ---- the open script ------------------------------------------------------- */

/* argv of EVAL OPEN_SCRIPT: strings that need storage live in store. */
typedef struct script_args {
    const char **argv;
    size_t *argvlen;
    size_t argc;
    char *keys; /* the block keys, back to back */
    char nums[10][32];
} script_args_t;

static void args_free(script_args_t *a)
{
    free(a->argv);
    free(a->argvlen);
    free(a->keys);
}

static void args_push(script_args_t *a, const char *s, size_t len)
{
    a->argv[a->argc] = s;
    a->argvlen[a->argc++] = len;
}

static void args_push_num(script_args_t *a, int slot, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->nums[slot], sizeof a->nums[slot], fmt, ap);
    va_end(ap);
    args_push(a, a->nums[slot], (size_t)n);
}

/* Builds EVAL's arguments: KEYS = meta [+ every block when creating]. */
static int build_args(bloom_t *b, const char *mkey, const bloom_geometry_t *want,
                      const bloom_params_t *pp, script_args_t *a)
{
    size_t nb = want ? want->blocks : 0;
    size_t keylen = b->name_len + 16;
    memset(a, 0, sizeof *a);
    a->argv = malloc((nb + 32) * sizeof *a->argv);
    a->argvlen = malloc((nb + 32) * sizeof *a->argvlen);
    a->keys = nb ? malloc(nb * keylen) : NULL;
    if (!a->argv || !a->argvlen || (nb && !a->keys))
        return CRAWL_ENOMEM;
    args_push(a, "EVAL", 4);
    args_push(a, OPEN_SCRIPT, sizeof OPEN_SCRIPT - 1);
    args_push_num(a, 0, "%zu", 1 + nb);
    args_push(a, mkey, strlen(mkey));
    for (size_t i = 0; i < nb; i++) {
        char *k = a->keys + i * keylen;
        int n = bloom_block_key(b, (uint32_t)i, k, keylen);
        args_push(a, k, (size_t)n);
    }
    args_push(a, want ? "1" : "0", 1);
    if (!want)
        return 0;
    args_push_num(a, 1, "%llu", (unsigned long long)(want->block_bits - 1));
    static const char *const names[] = {"m", "k", "blocks", "block_bits", "seed"};
    uint64_t vals[] = {want->m, want->k, want->blocks, want->block_bits, want->seed};
    for (int i = 0; i < 5; i++) {
        args_push(a, names[i], strlen(names[i]));
        args_push_num(a, 2 + i, "%llu", (unsigned long long)vals[i]);
    }
    args_push(a, "hash", 4);
    args_push(a, BLOOM_HASH_NAME, strlen(BLOOM_HASH_NAME));
    args_push(a, "version", 7);
    args_push_num(a, 7, "%d", BLOOM_FORMAT_VERSION);
    args_push(a, "capacity", 8);
    args_push_num(a, 8, "%llu",
                  (unsigned long long)(pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY));
    args_push(a, "fp_rate", 7);
    args_push_num(a, 9, "%.17g", pp->fp_rate != 0.0 ? pp->fp_rate : BLOOM_DEFAULT_FP_RATE);
    return 0;
}

static int reply_error(bloom_t *b, const redisReply *r, const char *what)
{
    if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9))
        return bloom_fail(b, CRAWL_EWRONGTYPE, "%s: %.200s", what, r->str);
    if (r->type == REDIS_REPLY_ERROR)
        return bloom_fail(b, CRAWL_EREPLY, "%s: Redis error: %.200s", what, r->str);
    return bloom_fail(b, CRAWL_EREPLY, "%s: unexpected reply type %d", what, r->type);
}

/* Interprets the script's answer; *created tells which way it went. */
static int open_reply(bloom_t *b, const redisReply *r, const char *mkey,
                      const bloom_geometry_t *want, const bloom_params_t *pp, int *created)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return reply_error(b, r, "opening the filter");
    const char *tag = r->element[0]->str;
    if (!strcmp(tag, "exists") && r->elements == 2)
        return parse_meta(b, r->element[1]);
    if (!strcmp(tag, "wrongtype"))
        return bloom_fail(b, CRAWL_EWRONGTYPE, "key '%s' is a %s, not a Bloom filter's meta hash",
                          mkey, r->elements == 2 ? r->element[1]->str : "?");
    if (!strcmp(tag, "absent"))
        return bloom_fail(b, CRAWL_ENOTFOUND,
                          "no Bloom filter '%s' (no hash '%s') and no capacity/fp rate given to "
                          "create one",
                          b->name, mkey);
    if (!strcmp(tag, "orphan"))
        return bloom_fail(b, CRAWL_ECORRUPT,
                          "key '%s' exists but '%s' does not: leftovers of another filter; "
                          "delete them first",
                          r->elements == 2 ? r->element[1]->str : "?", mkey);
    if (!strcmp(tag, "created")) {
        b->geo = *want;
        b->capacity = pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY;
        b->fp_rate = pp->fp_rate != 0.0 ? pp->fp_rate : BLOOM_DEFAULT_FP_RATE;
        *created = 1;
        return 0;
    }
    return reply_error(b, r, "opening the filter");
}

static int run_open_script(bloom_t *b, const bloom_geometry_t *want, const bloom_params_t *pp,
                           int *created)
{
    script_args_t a;
    char *mkey = meta_key(b->name);
    int rc = mkey ? build_args(b, mkey, want, pp, &a) : CRAWL_ENOMEM;
    if (rc < 0) {
        rc = bloom_fail(b, rc, "out of memory");
        goto out;
    }
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    redisReply *r = redisCommandArgv(b->rc, (int)a.argc, a.argv, a.argvlen);
    bloom_sigpipe_restore(&g);
    if (!r) {
        rc = bloom_fail_io(b);
        goto out;
    }
    rc = open_reply(b, r, mkey, want, pp, created);
    freeReplyObject(r);
out:
    if (mkey)
        args_free(&a);
    free(mkey);
    return rc;
}

/* ---- checks of an existing filter ------------------------------------------ */

static int check_block(bloom_t *b, uint32_t i, const redisReply *type, const redisReply *len)
{
    char key[BLOOM_MAX_NAME + 32];
    bloom_block_key(b, i, key, sizeof key);
    if (type->type != REDIS_REPLY_STATUS && type->type != REDIS_REPLY_STRING)
        return reply_error(b, type, key);
    if (!strcmp(type->str, "none"))
        return bloom_fail(b, CRAWL_ECORRUPT, "block key '%s' is missing", key);
    if (strcmp(type->str, "string") != 0)
        return bloom_fail(b, CRAWL_EWRONGTYPE, "block key '%s' is a %s, not a string", key,
                          type->str);
    if (len->type != REDIS_REPLY_INTEGER)
        return reply_error(b, len, key);
    if ((uint64_t)len->integer != b->geo.block_bits / 8)
        return bloom_fail(b, CRAWL_ECORRUPT, "block key '%s' holds %lld bytes, expected %llu", key,
                          len->integer, (unsigned long long)(b->geo.block_bits / 8));
    return 0;
}

/* TYPE and STRLEN of every block, in one round trip. */
static int check_blocks(bloom_t *b)
{
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    for (uint32_t i = 0; i < b->geo.blocks; i++) {
        bloom_buf_array(o, 2);
        bloom_buf_bulk(o, "TYPE", 4);
        bloom_buf_block_key(o, b, i);
        bloom_buf_array(o, 2);
        bloom_buf_bulk(o, "STRLEN", 6);
        bloom_buf_block_key(o, b, i);
    }
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    int rc = 0;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    for (uint32_t i = 0; i < b->geo.blocks; i++) {
        redisReply *t = NULL, *l = NULL;
        if (redisGetReply(b->rc, (void **)&t) != REDIS_OK ||
            redisGetReply(b->rc, (void **)&l) != REDIS_OK) {
            if (t)
                freeReplyObject(t);
            rc = bloom_fail_io(b);
            break;
        }
        int brc = check_block(b, i, t, l);
        if (rc == 0)
            rc = brc; /* keep reading: the pipeline must be drained */
        freeReplyObject(t);
        freeReplyObject(l);
    }
    bloom_sigpipe_restore(&g);
    return rc;
}

/* ---- public ------------------------------------------------------------------ */

static void set_err(int code, int *err, char *errbuf, size_t errlen, const char *msg)
{
    if (err)
        *err = code;
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "%s", msg && *msg ? msg : crawl_strerror(code));
}

static int open_checks(bloom_t *b, const bloom_params_t *params)
{
    int create = params && (params->capacity != 0 || params->fp_rate != 0.0);
    bloom_geometry_t want;
    int rc = create ? bloom_geometry_for(params, &want) : 0;
    if (rc < 0)
        return bloom_fail(b, rc,
                          "invalid filter parameters: capacity %llu, fp rate %g, block "
                          "bits %llu (need capacity >= 1, 0 < p < 1, block bits a multiple "
                          "of 8 up to 2^32, at most %u blocks)",
                          (unsigned long long)params->capacity, params->fp_rate,
                          (unsigned long long)params->block_bits, BLOOM_MAX_BLOCKS);
    int shared = params && params->shared_cache;
    rc = bloom_cache_init(&b->cache, shared ? SIZE_MAX : params ? params->cache_bytes : 0);
    b->cc = shared ? params->shared_cache : &b->cache;
    if (rc < 0)
        return bloom_fail(b, rc, "out of memory for the local cache");
    b->pending = malloc(BLOOM_BATCH_ITEMS * sizeof *b->pending);
    b->fps = malloc(BLOOM_BATCH_ITEMS * sizeof *b->fps);
    b->hashes = malloc(BLOOM_BATCH_ITEMS * sizeof *b->hashes);
    if (!b->pending || !b->fps || !b->hashes)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    int created = 0;
    rc = run_open_script(b, create ? &want : NULL, params, &created);
    if (rc < 0 || created)
        return rc;
    if (create && (rc = compare_geometry(b, &want, params)) < 0)
        return rc;
    return check_blocks(b);
}

bloom_t *bloom_open(redisContext *rc, const char *name, const bloom_params_t *params, int *err,
                    char *errbuf, size_t errlen)
{
    size_t nlen = name ? strnlen(name, BLOOM_MAX_NAME + 1) : 0;
    if (!rc || nlen == 0 || nlen > BLOOM_MAX_NAME) {
        set_err(CRAWL_EINVAL, err, errbuf, errlen, "bad filter name (1 to 512 bytes)");
        return NULL;
    }
    if (rc->err) {
        char msg[200];
        snprintf(msg, sizeof msg, "Redis connection failed: %s", rc->errstr);
        set_err(CRAWL_EREDIS, err, errbuf, errlen, msg);
        return NULL;
    }
    bloom_t *b = calloc(1, sizeof *b);
    if (!b || !(b->name = strdup(name))) {
        free(b);
        set_err(CRAWL_ENOMEM, err, errbuf, errlen, NULL);
        return NULL;
    }
    b->rc = rc;
    b->name_len = nlen;
    int code = open_checks(b, params);
    if (code < 0) {
        set_err(code, err, errbuf, errlen, b->errmsg);
        bloom_close(b);
        return NULL;
    }
    b->errmsg[0] = '\0';
    set_err(0, err, errbuf, errlen, "");
    return b;
}

void bloom_close(bloom_t *b)
{
    if (!b)
        return;
    bloom_cache_free(&b->cache);
    bloom_buf_free(&b->out);
    free(b->pending);
    free(b->fps);
    free(b->hashes);
    free(b->name);
    free(b);
}

/* HGET blocks, then one DEL of meta and every block. */
int bloom_destroy(redisContext *rc, const char *name)
{
    size_t nlen = name ? strnlen(name, BLOOM_MAX_NAME + 1) : 0;
    if (!rc || nlen == 0 || nlen > BLOOM_MAX_NAME)
        return CRAWL_EINVAL;
    if (rc->err)
        return CRAWL_EREDIS;
    char *mkey = meta_key(name);
    if (!mkey)
        return CRAWL_ENOMEM;
    bloom_t tmp = {.rc = rc, .name = (char *)name, .name_len = nlen};
    int code = 0;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    redisReply *r = redisCommand(rc, "HGET %s blocks", mkey);
    uint64_t nb = 0;
    if (!r)
        code = CRAWL_EREDIS;
    else if (r->type == REDIS_REPLY_NIL)
        nb = 0;
    else if (r->type != REDIS_REPLY_STRING)
        code = reply_error(&tmp, r, mkey);
    else if (parse_u64(r->str, r->len, &nb) < 0 || nb < 1 || nb > BLOOM_MAX_BLOCKS)
        code = CRAWL_ECORRUPT;
    if (r)
        freeReplyObject(r);
    if (code == 0) {
        bloom_buf_array(&tmp.out, 2 + nb);
        bloom_buf_bulk(&tmp.out, "DEL", 3);
        bloom_buf_bulk(&tmp.out, mkey, strlen(mkey));
        for (uint32_t i = 0; i < nb; i++)
            bloom_buf_block_key(&tmp.out, &tmp, i);
        if (tmp.out.oom || redisAppendFormattedCommand(rc, tmp.out.p, tmp.out.len) != REDIS_OK)
            code = CRAWL_ENOMEM;
        else if (redisGetReply(rc, (void **)&r) != REDIS_OK)
            code = CRAWL_EREDIS;
        else {
            if (r->type != REDIS_REPLY_INTEGER)
                code = reply_error(&tmp, r, mkey);
            freeReplyObject(r);
        }
    }
    bloom_sigpipe_restore(&g);
    bloom_buf_free(&tmp.out);
    free(mkey);
    return code;
}
