/*
 * bloom_batch.c -- the pipelined batch calls: test-and-add, contains, info,
 * and the local cache's public face.
 *
 * DESIGN
 * A batch is cut into rounds of at most BLOOM_BATCH_ITEMS items.  In a round,
 * each item is hashed once; if the local cache knows it, it is answered
 * "seen"/"present" at once; otherwise one command for it is written (RESP,
 * built by hand into the handle's reusable buffer):
 *     add:       BITFIELD    NAME:b:<blk> SET u1 <o1> 1 ... SET u1 <ok> 1
 *     contains:  BITFIELD_RO NAME:b:<blk> GET u1 <o1>   ... GET u1 <ok>
 * and written out every FLUSH_ITEMS commands (so Redis works while the rest
 * is built), then every reply of the round is read back (one round trip).  A BITFIELD is atomic, so
 * the old bits it returns decide "new" for exactly one of several concurrent adders.  Replies are
 * always all drained, even after an error reply, so the connection stays in step; a lost connection
 * (hiredis then marks the context unusable) ends the call with CRAWL_EREDIS.  Items that Redis
 * confirmed are in the filter enter the local cache only after their reply arrived.
 *
 * Keys touched: NAME:b:<i> (BITFIELD, BITFIELD_RO, BITCOUNT, MEMORY USAGE),
 * NAME:meta (MEMORY USAGE).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

#define FLUSH_ITEMS 256 /* commands built before writing starts */

/* ---- RESP buffer ------------------------------------------------------------ */

static int reserve(bloom_buf_t *buf, size_t more)
{
    if (buf->oom)
        return -1;
    if (buf->len + more <= buf->cap)
        return 0;
    size_t cap = buf->cap ? buf->cap : 4096;
    while (cap < buf->len + more)
        cap *= 2;
    char *p = realloc(buf->p, cap);
    if (!p) {
        buf->oom = 1;
        return -1;
    }
    buf->p = p;
    buf->cap = cap;
    return 0;
}

/* Decimal digits of v into d (at least 20 bytes); returns the length. */
static size_t u64_digits(uint64_t v, char *d)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        d[i] = tmp[n - 1 - i];
    return n;
}

static void put_prefixed_len(bloom_buf_t *buf, char type, uint64_t n)
{
    if (reserve(buf, 24) < 0)
        return;
    buf->p[buf->len++] = type;
    buf->len += u64_digits(n, buf->p + buf->len);
    buf->p[buf->len++] = '\r';
    buf->p[buf->len++] = '\n';
}

void bloom_buf_array(bloom_buf_t *buf, size_t n)
{
    put_prefixed_len(buf, '*', n);
}

void bloom_buf_bulk(bloom_buf_t *buf, const char *s, size_t len)
{
    put_prefixed_len(buf, '$', len);
    if (reserve(buf, len + 2) < 0)
        return;
    memcpy(buf->p + buf->len, s, len);
    buf->len += len;
    buf->p[buf->len++] = '\r';
    buf->p[buf->len++] = '\n';
}

void bloom_buf_block_key(bloom_buf_t *buf, const bloom_t *b, uint32_t block)
{
    char d[20];
    size_t dn = u64_digits(block, d);
    put_prefixed_len(buf, '$', b->name_len + 3 + dn);
    if (reserve(buf, b->name_len + 3 + dn + 2) < 0)
        return;
    char *p = buf->p + buf->len;
    memcpy(p, b->name, b->name_len);
    memcpy(p + b->name_len, ":b:", 3);
    memcpy(p + b->name_len + 3, d, dn);
    memcpy(p + b->name_len + 3 + dn, "\r\n", 2);
    buf->len += b->name_len + 3 + dn + 2;
}

void bloom_buf_free(bloom_buf_t *buf)
{
    free(buf->p);
    memset(buf, 0, sizeof *buf);
}

/* ---- SIGPIPE guard ------------------------------------------------------------ */

void bloom_sigpipe_block(bloom_sigpipe_t *g)
{
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

void bloom_sigpipe_restore(bloom_sigpipe_t *g)
{
    int saved = errno;
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* ---- batches ------------------------------------------------------------------ */

/* Unchecked writers into a reserved buffer; each returns the new end. */
static char *put_len(char *p, char type, uint64_t n)
{
    *p++ = type;
    p += u64_digits(n, p);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

static char *put_lit(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

#define LIT(p, s) put_lit((p), (s), sizeof(s) - 1)

/* One BITFIELD (write: SET u1 o 1 per bit) or BITFIELD_RO (GET u1 o) of an
 * item, with a single reservation: the hot path of every batch. */
void bloom_append_probe(bloom_buf_t *o, const bloom_t *b, const bloom_probe_t *pr, int write)
{
    if (reserve(o, 64 + b->name_len + (size_t)pr->k * 48) < 0)
        return;
    char *p = o->p + o->len, d[20];
    p = put_len(p, '*', 2 + (size_t)pr->k * (write ? 4 : 3));
    p = write ? LIT(p, "$8\r\nBITFIELD\r\n") : LIT(p, "$11\r\nBITFIELD_RO\r\n");
    size_t dn = u64_digits(pr->block, d);
    p = put_len(p, '$', b->name_len + 3 + dn);
    p = put_lit(p, b->name, b->name_len);
    p = LIT(p, ":b:");
    p = put_lit(p, d, dn);
    p = LIT(p, "\r\n");
    for (uint32_t i = 0; i < pr->k; i++) {
        p = write ? LIT(p, "$3\r\nSET\r\n$2\r\nu1\r\n") : LIT(p, "$3\r\nGET\r\n$2\r\nu1\r\n");
        dn = u64_digits(pr->bit[i], d);
        p = put_len(p, '$', dn);
        p = put_lit(p, d, dn);
        p = LIT(p, "\r\n");
        if (write)
            p = LIT(p, "$1\r\n1\r\n");
    }
    o->len = (size_t)(p - o->p);
}

static int reply_fail(bloom_t *b, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9))
        return bloom_fail(b, CRAWL_EWRONGTYPE,
                          "filter '%s': a block key has the wrong type: %.200s", b->name, r->str);
    if (r->type == REDIS_REPLY_ERROR && crawl_retry_reply(r->str))
        return bloom_fail(b, CRAWL_EREDIS, "filter '%s': Redis answered %.200s", b->name, r->str);
    if (r->type == REDIS_REPLY_ERROR)
        return bloom_fail(b, CRAWL_EREPLY, "filter '%s': Redis error: %.200s", b->name, r->str);
    return bloom_fail(b, CRAWL_EREPLY, "filter '%s': unexpected reply type %d", b->name, r->type);
}

/* The answer of one BITFIELD reply: add -> 1 if some old bit was 0 (new);
 * contains -> 1 if all bits are 1 (present).  Negative on a bad reply. */
static int bits_answer(bloom_t *b, const redisReply *r, int write)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != b->geo.k)
        return reply_fail(b, r);
    int any_zero = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER || (e->integer != 0 && e->integer != 1))
            return reply_fail(b, e);
        any_zero |= e->integer == 0;
    }
    return write ? any_zero : !any_zero;
}

/* Reads the np replies of a round; fills res, feeds the cache. */
static int read_round(bloom_t *b, size_t np, uint8_t *res, int write)
{
    int rc = 0;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    for (size_t j = 0; j < np; j++) {
        redisReply *r = NULL;
        if (redisGetReply(b->rc, (void **)&r) != REDIS_OK || !r) {
            rc = bloom_fail_io(b);
            break;
        }
        int v = bits_answer(b, r, write);
        freeReplyObject(r);
        if (v < 0) {
            rc = rc ? rc : v; /* keep draining the pipeline */
            continue;
        }
        res[b->pending[j]] = (uint8_t)v;
        if (write || v)
            bloom_cache_put(b->cc, b->fps[j]);
    }
    bloom_sigpipe_restore(&g);
    return rc;
}

/* Hands the commands built so far to hiredis and starts writing them, so
 * that Redis works on them while the rest of the round is being built (the
 * replies are read when the round is complete). */
static int send_out(bloom_t *b)
{
    bloom_buf_t *o = &b->out;
    if (o->oom)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory building a batch");
    if (o->len == 0)
        return 0;
    if (redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory queueing a batch");
    o->len = 0;
    int done = 0, rc = REDIS_OK;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    rc = redisBufferWrite(b->rc, &done);
    bloom_sigpipe_restore(&g);
    return rc == REDIS_OK ? 0 : bloom_fail_io(b);
}

/* One round: items [from, from + cnt).  First every item is hashed and its
 * cache bucket prefetched, then the cache is asked and the commands built. */
static int run_round(bloom_t *b, const char *const *items, const size_t *lens, size_t from,
                     size_t cnt, uint8_t *res, int write)
{
    for (size_t i = 0; i < cnt; i++) {
        size_t len = lens ? lens[from + i] : strlen(items[from + i]);
        b->hashes[i] = bloom_hash_item(b, items[from + i], len);
        bloom_cache_prefetch(b->cc, bloom_fingerprint(b->hashes[i]));
    }
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    size_t np = 0;
    int rc;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t fp = bloom_fingerprint(b->hashes[i]);
        if (bloom_cache_has(b->cc, fp)) {
            b->cache.hits++;
            res[from + i] = write ? 0 : 1;
            continue;
        }
        bloom_probe_t pr;
        bloom_probe_from_hash(&b->geo, b->hashes[i], &pr);
        bloom_append_probe(o, b, &pr, write);
        b->pending[np] = (uint32_t)(from + i);
        b->fps[np++] = fp;
        if (np % FLUSH_ITEMS == 0 && (rc = send_out(b)) < 0)
            return rc;
    }
    if (np == 0)
        return 0;
    if ((rc = send_out(b)) < 0)
        return rc;
    return read_round(b, np, res, write);
}

int bloom_batch_plain(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                      uint8_t *res, int write)
{
    if (!b || (n && (!items || !res)))
        return CRAWL_EINVAL;
    b->errmsg[0] = '\0';
    if (b->rc->err)
        return bloom_fail_io(b);
    for (size_t from = 0; from < n; from += BLOOM_BATCH_ITEMS) {
        size_t cnt = n - from < BLOOM_BATCH_ITEMS ? n - from : BLOOM_BATCH_ITEMS;
        int rc = run_round(b, items, lens, from, cnt, res, write);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- the cache's public face ------------------------------------------------- */

int bloom_cache_contains(bloom_t *b, const char *item, size_t len)
{
    if (!bloom_cache_has(b->cc, bloom_fingerprint(bloom_hash_item(b, item, len))))
        return 0;
    b->cache.hits++;
    return 1;
}

void bloom_cache_note(bloom_t *b, const char *const *items, const size_t *lens, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = lens ? lens[i] : strlen(items[i]);
        bloom_cache_put(b->cc, bloom_fingerprint(bloom_hash_item(b, items[i], len)));
    }
}

/* ---- info ------------------------------------------------------------------------ */

static void append_memory_usage(bloom_buf_t *o, const bloom_t *b, int64_t block)
{
    bloom_buf_array(o, 5);
    bloom_buf_bulk(o, "MEMORY", 6);
    bloom_buf_bulk(o, "USAGE", 5);
    if (block >= 0) {
        bloom_buf_block_key(o, b, (uint32_t)block);
    } else {
        char key[BLOOM_MAX_NAME + 8];
        int n = snprintf(key, sizeof key, "%s:meta", b->name);
        bloom_buf_bulk(o, key, (size_t)n);
    }
    bloom_buf_bulk(o, "SAMPLES", 7);
    bloom_buf_bulk(o, "0", 1);
}

/* One integer reply of info; a nil means the key vanished. */
static int info_int(bloom_t *b, const redisReply *r, uint64_t *sum)
{
    if (r->type == REDIS_REPLY_NIL)
        return bloom_fail(b, CRAWL_ECORRUPT, "filter '%s': a key vanished (deleted meanwhile?)",
                          b->name);
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        return reply_fail(b, r);
    *sum += (uint64_t)r->integer;
    return 0;
}

/* Reads 1 + 2 * blocks replies: meta memory, then per block BITCOUNT and
 * memory.  Drains them all. */
static int read_info(bloom_t *b, bloom_info_t *out)
{
    int rc = 0;
    size_t want = 1 + 2 * (size_t)b->geo.blocks;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    for (size_t j = 0; j < want; j++) {
        redisReply *r = NULL;
        if (redisGetReply(b->rc, (void **)&r) != REDIS_OK || !r) {
            rc = bloom_fail_io(b);
            break;
        }
        int v = info_int(b, r, j % 2 == 1 ? &out->bits_set : &out->redis_bytes);
        rc = rc ? rc : v;
        freeReplyObject(r);
    }
    bloom_sigpipe_restore(&g);
    return rc;
}

int bloom_info_plain(bloom_t *b, bloom_info_t *out)
{
    if (!b || !out)
        return CRAWL_EINVAL;
    b->errmsg[0] = '\0';
    if (b->rc->err)
        return bloom_fail_io(b);
    bloom_info_t in = {.geo = b->geo, .capacity = b->capacity, .fp_rate = b->fp_rate};
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    append_memory_usage(o, b, -1);
    for (uint32_t i = 0; i < b->geo.blocks; i++) {
        bloom_buf_array(o, 2);
        bloom_buf_bulk(o, "BITCOUNT", 8);
        bloom_buf_block_key(o, b, i);
        append_memory_usage(o, b, i);
    }
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    int rc = read_info(b, &in);
    if (rc < 0)
        return rc;
    double m = (double)b->geo.m, x = (double)in.bits_set, k = (double)b->geo.k;
    in.fill = x / m;
    in.est_items = in.bits_set >= b->geo.m ? INFINITY : -(m / k) * log1p(-x / m);
    in.est_fp_rate = pow(in.fill, k);
    in.cache_hits = b->cache.hits;
    in.cache_entries = b->cc->nbuckets * BLOOM_CACHE_WAYS;
    *out = in;
    return 0;
}
