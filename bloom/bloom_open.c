/*
 * bloom_open.c -- creating, opening, checking and deleting a filter in Redis.
 *
 * DESIGN
 * Keys: "NAME:meta" (hash: m, k, blocks, block_bits, seed, hash, version,
 * capacity, fp_rate), "NAME:b:<i>" (strings of block_bits/8 bytes) and,
 * while a creation runs, "NAME:creating" (bloom_create.c).
 *
 * Opening is one Lua script (OPEN_SCRIPT), so it is atomic against other
 * openers: if the meta hash exists it returns it; if the key holds another
 * type it says so; otherwise, when the caller gave parameters, it answers
 * "busy" if another creator holds the claim (we wait and ask again), refuses
 * if any block key already exists (leftovers without metadata), else claims
 * the name.  bloom_create.c then checks Redis' free memory, allocates the
 * blocks in steps and writes the meta hash LAST -- a meta hash therefore
 * always describes fully allocated blocks.  Two racing creators: the second
 * one waits for the first one's meta and compares.
 *
 * An existing filter is then checked in one pipelined round trip (TYPE and
 * STRLEN of every block): a missing or short block is corruption, a non-string
 * is a wrong type.  A stored geometry different from the one asked for is a
 * mismatch, reported with both.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

/* KEYS: meta, claim [, every block key when creating].  ARGV: "1" to create,
 * the creator's token, the claim's lease in ms. */
static const char OPEN_SCRIPT[] =
    "local t = redis.call('TYPE', KEYS[1])['ok']\n"
    "if t == 'hash' then return {'exists', redis.call('HGETALL', KEYS[1])} end\n"
    "if t ~= 'none' then return {'wrongtype', t, KEYS[1]} end\n"
    "if ARGV[1] ~= '1' then return {'absent'} end\n"
    "local c = redis.call('TYPE', KEYS[2])['ok']\n"
    "if c == 'string' then return {'busy'} end\n"
    "if c ~= 'none' then return {'wrongtype', c, KEYS[2]} end\n"
    "for i = 3, #KEYS do\n"
    "  if redis.call('EXISTS', KEYS[i]) == 1 then return {'orphan', KEYS[i]} end\n"
    "end\n"
    "redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])\n"
    "return {'begun'}\n";

int bloom_parse_u64(const char *s, size_t len, uint64_t *out)
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

/* "<name><suffix>", malloc'ed. */
static char *name_key(const char *name, const char *suffix)
{
    size_t n = strlen(name) + strlen(suffix) + 1;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "%s%s", name, suffix);
    return k;
}

static char *meta_key(const char *name)
{
    return name_key(name, ":meta");
}

/* ---- meta parsing ---------------------------------------------------------- */

/* One field of the stack's state in layer 0's meta of a filter that grows
 * (growth, fp_target, layers, added, full_at, n<j>: bloom_layers.c): 1 if it
 * was one, 0 if not, a negative code if its value is bad. */
static int layer_field(bloom_t *b, const char *field, const char *value, size_t len)
{
    uint64_t v = 0;
    if (!strcmp(field, "growth") || !strcmp(field, "fp_target")) {
        char *end;
        double d = strtod(value, &end);
        int ok = end == value + len &&
                 (field[0] == 'g' ? d > 1.0 && d <= BLOOM_MAX_GROWTH : d > 0.0 && d < 1.0);
        if (!ok)
            return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s': %s = '%.40s' is out of range",
                              b->name, field, value);
        *(field[0] == 'g' ? &b->growth : &b->fp_target) = d;
        return 1;
    }
    int which = !strcmp(field, "layers")                                ? 1
                : !strcmp(field, "added")                               ? 2
                : !strcmp(field, "full_at")                             ? 3
                : field[0] == 'n' && field[1] >= '0' && field[1] <= '9' ? 4
                                                                        : 0;
    if (!which)
        return 0;
    if (bloom_parse_u64(value, len, &v) < 0)
        return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s': %s = '%.40s' is not a number", b->name,
                          field, value);
    if (which == 1) {
        if (v < 1 || v > BLOOM_MAX_LAYERS)
            return bloom_fail(b, CRAWL_ECORRUPT, "meta of '%s': %llu layers", b->name,
                              (unsigned long long)v);
        b->nlayers = (uint32_t)v;
    } else if (which == 2) {
        b->added = v;
    } else if (which == 3) {
        b->full_at = v;
    } else {
        uint64_t j;
        if (bloom_parse_u64(field + 1, strlen(field + 1), &j) == 0 && j < BLOOM_MAX_LAYERS)
            b->frozen[j] = v;
    }
    return 1;
}

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
        if (bloom_parse_u64(v->str, v->len, &num) < 0 || num != BLOOM_FORMAT_VERSION)
            return bloom_fail(b, CRAWL_ECORRUPT, "filter '%s' has format version '%.40s', not %d",
                              b->name, v->str, BLOOM_FORMAT_VERSION);
        return 0;
    }
    if (!strcmp(f->str, "capacity")) {
        if (bloom_parse_u64(v->str, v->len, &b->capacity) < 0)
            b->capacity = 0; /* informational only */
        return 0;
    }
    if (!strcmp(f->str, "fp_rate")) {
        b->fp_rate = strtod(v->str, NULL);
        return 0;
    }
    int lrc = layer_field(b, f->str, v->str, v->len);
    if (lrc != 0)
        return lrc < 0 ? lrc : 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(f->str, names[i]) != 0)
            continue;
        if (bloom_parse_u64(v->str, v->len, &num) < 0)
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
    char nums[2][32];
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

/* Builds EVAL's arguments: KEYS = meta, claim [+ every block when creating]. */
static int build_args(bloom_t *b, const bloom_create_t *c, script_args_t *a)
{
    size_t nb = c->geo ? c->geo->blocks : 0;
    size_t keylen = b->name_len + 16;
    memset(a, 0, sizeof *a);
    a->argv = malloc((nb + 16) * sizeof *a->argv);
    a->argvlen = malloc((nb + 16) * sizeof *a->argvlen);
    a->keys = nb ? malloc(nb * keylen) : NULL;
    if (!a->argv || !a->argvlen || (nb && !a->keys))
        return CRAWL_ENOMEM;
    args_push(a, "EVAL", 4);
    args_push(a, OPEN_SCRIPT, sizeof OPEN_SCRIPT - 1);
    args_push_num(a, 0, "%zu", 2 + nb);
    args_push(a, c->mkey, strlen(c->mkey));
    args_push(a, c->ckey, strlen(c->ckey));
    for (size_t i = 0; i < nb; i++) {
        char *k = a->keys + i * keylen;
        int n = bloom_block_key(b, (uint32_t)i, k, keylen);
        args_push(a, k, (size_t)n);
    }
    args_push(a, c->geo ? "1" : "0", 1);
    args_push(a, c->token, strlen(c->token));
    args_push_num(a, 1, "%d", BLOOM_CREATE_LEASE_MS);
    return 0;
}

static int reply_error(bloom_t *b, const redisReply *r, const char *what)
{
    if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9))
        return bloom_fail(b, CRAWL_EWRONGTYPE, "%s: %.200s", what, r->str);
    if (r->type == REDIS_REPLY_ERROR && crawl_retry_reply(r->str))
        return bloom_fail(b, CRAWL_EREDIS, "filter '%s': Redis answered %.200s", b->name, r->str);
    if (r->type == REDIS_REPLY_ERROR)
        return bloom_fail(b, CRAWL_EREPLY, "%s: Redis error: %.200s", what, r->str);
    return bloom_fail(b, CRAWL_EREPLY, "%s: unexpected reply type %d", what, r->type);
}

enum { OPEN_EXISTS, OPEN_BEGUN, OPEN_BUSY };

/* Interprets the script's answer: 0 and *state, or a failure. */
static int open_reply(bloom_t *b, const redisReply *r, const char *mkey, int *state)
{
    if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "OOM"))
        return bloom_fail(b, CRAWL_ENOROOM,
                          "Redis is at its maxmemory: no room for a new Bloom filter '%s' "
                          "(%.120s)",
                          b->name, r->str);
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return reply_error(b, r, "opening the filter");
    const char *tag = r->element[0]->str;
    *state = !strcmp(tag, "begun") ? OPEN_BEGUN : !strcmp(tag, "busy") ? OPEN_BUSY : OPEN_EXISTS;
    if (*state != OPEN_EXISTS)
        return 0;
    if (!strcmp(tag, "exists") && r->elements == 2)
        return parse_meta(b, r->element[1]);
    if (!strcmp(tag, "wrongtype"))
        return bloom_fail(b, CRAWL_EWRONGTYPE, "key '%s' is a %s, not a Bloom filter's %s",
                          r->elements == 3 ? r->element[2]->str : mkey,
                          r->elements >= 2 ? r->element[1]->str : "?",
                          r->elements == 3 && strcmp(r->element[2]->str, mkey) != 0
                              ? "creation claim (a string)"
                              : "meta hash");
    if (!strcmp(tag, "absent"))
        return bloom_fail(b, CRAWL_ENOTFOUND,
                          "no Bloom filter '%s' (no hash '%s') and no capacity/fp rate given to "
                          "create one",
                          b->name, mkey);
    if (!strcmp(tag, "orphan"))
        return bloom_fail(b, CRAWL_ECORRUPT,
                          "key '%s' exists but '%s' does not: leftovers of another filter (or "
                          "of a creator killed part-way); delete them first",
                          r->elements == 2 ? r->element[1]->str : "?", mkey);
    return reply_error(b, r, "opening the filter");
}

/* A token no other creator has: pid, clock, a counter. */
static void make_token(char *buf, size_t len)
{
    static atomic_uint counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, len, "%ld.%lld.%ld.%u", (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec,
             atomic_fetch_add(&counter, 1));
}

static int run_open_script(bloom_t *b, const bloom_create_t *c, int *state)
{
    script_args_t a;
    int rc = build_args(b, c, &a);
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
    rc = open_reply(b, r, c->mkey, state);
    freeReplyObject(r);
out:
    args_free(&a);
    return rc;
}

/* Joins the filter, or creates it when want is set: claims the name, then
 * bloom_create_blocks.  While another process holds the claim, waits for it
 * (BLOOM_CREATE_WAIT_MS at most).  *created tells which way it went. */
static int open_or_create(bloom_t *b, const bloom_geometry_t *want, const bloom_params_t *pp,
                          int *created)
{
    char token[96];
    make_token(token, sizeof token);
    bloom_create_t c = {.mkey = meta_key(b->name),
                        .ckey = name_key(b->name, ":creating"),
                        .token = token,
                        .geo = want,
                        .params = pp};
    int rc = c.mkey && c.ckey ? 0 : bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    int state = OPEN_BUSY;
    for (unsigned waited = 0; rc == 0 && state == OPEN_BUSY; waited += 50) {
        if (waited > 0)
            nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000L}, NULL);
        rc = run_open_script(b, &c, &state);
        if (rc == 0 && state == OPEN_BUSY && pp && pp->no_wait)
            rc = bloom_fail(b, CRAWL_EBLOOM, "filter '%s' is being created by another process",
                            b->name);
        if (rc == 0 && state == OPEN_BUSY && waited >= BLOOM_CREATE_WAIT_MS)
            rc = bloom_fail(b, CRAWL_EBLOOM,
                            "filter '%s' is still being created by another process after %d s "
                            "(key '%s')",
                            b->name, BLOOM_CREATE_WAIT_MS / 1000, c.ckey);
    }
    if (rc == 0 && state == OPEN_BEGUN) {
        rc = bloom_create_blocks(b, &c);
        if (rc == 0) {
            b->geo = *want;
            b->capacity = pp->capacity ? pp->capacity : BLOOM_DEFAULT_CAPACITY;
            b->fp_rate = pp->fp_rate != 0.0 ? pp->fp_rate : BLOOM_DEFAULT_FP_RATE;
            if (pp->growth > 1.0) {
                b->growth = pp->growth;
                b->fp_target = b->fp_rate;
                b->fp_rate *= 1.0 - BLOOM_TIGHTENING;
                b->full_at = b->capacity;
            }
            *created = 1;
        }
    }
    free((char *)c.mkey);
    free((char *)c.ckey);
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

void bloom_set_err(int code, int *err, char *errbuf, size_t errlen, const char *msg)
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
    b->local_budget =
        !params || !params->local_bytes ? BLOOM_DEFAULT_LOCAL_BYTES : params->local_bytes;
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
    rc = open_or_create(b, create ? &want : NULL, params, &created);
    if (rc < 0 || created)
        return rc;
    if (create && (rc = compare_geometry(b, &want, params)) < 0)
        return rc;
    return check_blocks(b);
}

bloom_t *bloom_open_one(redisContext *rc, const char *name, const bloom_params_t *params, int *err,
                        char *errbuf, size_t errlen)
{
    size_t nlen = name ? strnlen(name, BLOOM_MAX_NAME + 1) : 0;
    if (!rc || nlen == 0 || nlen > BLOOM_MAX_NAME) {
        bloom_set_err(CRAWL_EINVAL, err, errbuf, errlen, "bad filter name (1 to 512 bytes)");
        return NULL;
    }
    if (rc->err) {
        char msg[200];
        snprintf(msg, sizeof msg, "Redis connection failed: %s", rc->errstr);
        bloom_set_err(CRAWL_EREDIS, err, errbuf, errlen, msg);
        return NULL;
    }
    bloom_t *b = calloc(1, sizeof *b);
    if (!b || !(b->name = strdup(name))) {
        free(b);
        bloom_set_err(CRAWL_ENOMEM, err, errbuf, errlen, NULL);
        return NULL;
    }
    b->rc = rc;
    b->name_len = nlen;
    int code = open_checks(b, params);
    if (code < 0) {
        bloom_set_err(code, err, errbuf, errlen, b->errmsg);
        bloom_close_one(b);
        return NULL;
    }
    b->errmsg[0] = '\0';
    bloom_set_err(0, err, errbuf, errlen, "");
    return b;
}

void bloom_close_one(bloom_t *b)
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

/* HGET blocks, then one DEL of meta, the creation claim and every block. */
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
    else if (bloom_parse_u64(r->str, r->len, &nb) < 0 || nb < 1 || nb > BLOOM_MAX_BLOCKS)
        code = CRAWL_ECORRUPT;
    if (r)
        freeReplyObject(r);
    if (code == 0) {
        bloom_buf_array(&tmp.out, 3 + nb);
        bloom_buf_bulk(&tmp.out, "DEL", 3);
        bloom_buf_bulk(&tmp.out, mkey, strlen(mkey));
        char *ckey = name_key(name, ":creating");
        bloom_buf_bulk(&tmp.out, ckey ? ckey : mkey, strlen(ckey ? ckey : mkey));
        free(ckey);
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

int bloom_exists(bloom_t *b)
{
    if (!b)
        return CRAWL_EINVAL;
    char *mk = meta_key(b->name);
    if (!mk)
        return CRAWL_ENOMEM;
    redisReply *r = redisCommand(b->rc, "EXISTS %s", mk);
    free(mk);
    if (!r)
        return CRAWL_EREDIS;
    int rc = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : CRAWL_EREPLY;
    freeReplyObject(r);
    return rc;
}
