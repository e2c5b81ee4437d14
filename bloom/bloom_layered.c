/*
 * bloom_layered.c -- test-and-add and membership over the layers of a
 * filter that grows (bloom_layers.c keeps the layers; bloom.h, "layers",
 * says what a caller sees).
 *
 * DESIGN
 * A batch goes in rounds, each cut to the room the newest layer has (so a
 * publication leaves it just under its capacity).  In a round: (1) the
 * local cache; (2) each frozen layer: from the handle's copy of it when it
 * fits in the handle's budget (make_local: its blocks fetched once; a
 * frozen layer never changes), else read only in Redis
 * (bloom_batch_plain); (3) the rest go to the newest layer -- the fast
 * way (fast_add: plain BITFIELDs in one MULTI under WATCH of layer 0's
 * meta, which every publication and every adder's count writes) when the
 * meta says the layers are the ones the handle knows and the newest has
 * room, else ADD_SCRIPT, which checks the layer count, publishes the next
 * layer or refuses a full newest one, then sets the bits.  On CRAWL_ESTALE
 * the handle reads the layers again and checks the one that froze; on
 * CRAWL_EFULL it creates the next layer or waits for its creator.
 *
 * Keys: NAME:meta (WATCH, HMGET, HINCRBY; the script: HSET), the blocks
 * of every layer (BITFIELD, BITFIELD_RO, GET).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

/* KEYS[1] layer 0's meta, KEYS[2] the next layer's meta, KEYS[3..] block
 * keys of the newest layer.  ARGV[1] the layer count the caller knows,
 * ARGV[2] k, ARGV[3] the items n, then runs of items of one block: its
 * key's index in KEYS, the run's count, then k offsets an item.  The bits
 * of up to 1024 / k items go in one BITFIELD.  Returns {one '0'/'1' an
 * item in the order sent (1: new), added after the call}, or the errors
 * BLOOMSTALE <layers> and BLOOMFULL <layers> before any write. */
static const char ADD_SCRIPT[] =
    "local m = redis.call('HMGET', KEYS[1], 'layers', 'added', 'full_at')\n"
    "local layers = tonumber(m[1]) or 1\n"
    "local added, full = tonumber(m[2]) or 0, tonumber(m[3]) or 0\n"
    "if layers ~= tonumber(ARGV[1]) then return redis.error_reply('BLOOMSTALE ' .. layers) end\n"
    "local k, n = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "if added + n > full then\n"
    "  local cap = redis.call('HGET', KEYS[2], 'capacity')\n"
    "  if cap then\n"
    "    redis.call('HSET', KEYS[1], 'layers', layers + 1, 'added', 0, 'full_at', cap,\n"
    "               'n' .. (layers - 1), added)\n"
    "    return redis.error_reply('BLOOMSTALE ' .. (layers + 1))\n"
    "  end\n"
    "  if added >= full then return redis.error_reply('BLOOMFULL ' .. layers) end\n"
    "end\n"
    "local out, new, i, j, cmd, per = {}, 0, 4, 0, {}, math.floor(1024 / k)\n"
    "while i <= #ARGV do\n"
    "  local key, c = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])\n"
    "  i = i + 2\n"
    "  for s = 0, c - 1, per do\n"
    "    local cnt = math.min(per, c - s)\n"
    "    for q = 0, cnt * k - 1 do\n"
    "      cmd[4*q+1], cmd[4*q+2], cmd[4*q+3], cmd[4*q+4] = 'SET', 'u1', ARGV[i + q], '1'\n"
    "    end\n"
    "    local old = redis.call('BITFIELD', key, unpack(cmd, 1, 4 * cnt * k))\n"
    "    for q = 0, cnt - 1 do\n"
    "      local fresh = '0'\n"
    "      for x = q * k + 1, q * k + k do if old[x] == 0 then fresh = '1'; break end end\n"
    "      if fresh == '1' then new = new + 1 end\n"
    "      j = j + 1; out[j] = fresh\n"
    "    end\n"
    "    i = i + cnt * k\n"
    "  end\n"
    "end\n"
    "if new > 0 then redis.call('HINCRBY', KEYS[1], 'added', new) end\n"
    "return {table.concat(out), added + new}\n";

#define WAIT_STEP_MS 20 /* while another process creates the next layer */

/* A round's items that Redis must answer: their pointers, lengths and
 * places in the caller's arrays. */
typedef struct round {
    const char **item;
    size_t *len;
    uint32_t *at;
    uint32_t *order; /* send_add: the items in the order sent (by block) */
    bloom_hash_t *h; /* each item's hash (one for every layer: bloom.h) */
    size_t n;
    uint8_t *found;
} round_t;

/* A round's arrays, for BLOOM_BATCH_ITEMS items: 0 or CRAWL_ENOMEM (then
 * free them with round_free all the same). */
static int round_init(bloom_t *b, round_t *r)
{
    *r = (round_t){.item = malloc(BLOOM_BATCH_ITEMS * sizeof *r->item),
                   .len = malloc(BLOOM_BATCH_ITEMS * sizeof *r->len),
                   .at = malloc(BLOOM_BATCH_ITEMS * sizeof *r->at),
                   .order = malloc(BLOOM_BATCH_ITEMS * sizeof *r->order),
                   .h = malloc(BLOOM_BATCH_ITEMS * sizeof *r->h),
                   .found = malloc(BLOOM_BATCH_ITEMS)};
    b->errmsg[0] = '\0';
    if (!r->item || !r->len || !r->at || !r->order || !r->h || !r->found)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    return b->rc->err ? bloom_fail_io(b) : 0;
}

static void round_free(round_t *r)
{
    free(r->item), free(r->len), free(r->at), free(r->order), free(r->h), free(r->found);
}

/* The next round: items from *i on, at most cap of them that the local
 * cache does not know (those are answered out[at] = known at once). */
static void round_fill(bloom_t *b, round_t *r, const char *const *items, const size_t *lens,
                       size_t n, size_t *i, size_t cap, uint8_t *out, uint8_t known)
{
    for (r->n = 0; *i < n && r->n < cap; (*i)++) {
        size_t len = lens ? lens[*i] : strlen(items[*i]);
        bloom_hash_t h = bloom_hash_item(b, items[*i], len);
        if (bloom_cache_has(b->cc, bloom_fingerprint(h))) {
            b->cache.hits++;
            out[*i] = known;
            continue;
        }
        out[*i] = !known;
        r->item[r->n] = items[*i], r->len[r->n] = len, r->h[r->n] = h;
        r->at[r->n++] = (uint32_t)*i;
    }
}

/* Item i's probe: layer 0's offsets (every layer's) and, for layer j, its
 * block there. */
static void probe_in(const bloom_t *b, const round_t *r, size_t i, uint32_t j, bloom_probe_t *pr)
{
    bloom_probe_from_hash(&b->geo, r->h[i], pr);
    pr->block = bloom_layer_block(b, j, pr);
}

/* Item x of r moved to place m (m <= x: r compacted in order). */
static void keep_item(round_t *r, size_t m, size_t x)
{
    r->item[m] = r->item[x], r->len[m] = r->len[x], r->at[m] = r->at[x], r->h[m] = r->h[x];
}

/* A local copy of frozen layer l of b (its blocks, GET in one pipelined
 * round trip), if it fits in what is left of b's budget: 1 made, 0 not
 * (too large: Redis answers for it), or a failure. */
static int make_local(bloom_t *b, bloom_t *l)
{
    uint64_t bytes = l->geo.block_bits / 8, total = bytes * l->geo.blocks;
    if (b->local_budget == SIZE_MAX || b->local_used + total > b->local_budget)
        return 0;
    uint8_t *mem = malloc(total);
    if (!mem)
        return 0; /* (not needed: Redis answers) */
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    for (uint32_t i = 0; i < l->geo.blocks; i++) {
        bloom_buf_array(o, 2);
        bloom_buf_bulk(o, "GET", 3);
        bloom_buf_block_key(o, l, i);
    }
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK) {
        free(mem);
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    }
    int rc = 0;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    for (uint32_t i = 0; i < l->geo.blocks; i++) { /* every reply read, the pipeline drained */
        redisReply *r = NULL;
        if (redisGetReply(b->rc, (void **)&r) != REDIS_OK || !r) {
            rc = bloom_fail_io(b);
            break;
        }
        if (rc == 0 && (r->type != REDIS_REPLY_STRING || (uint64_t)r->len != bytes))
            rc = bloom_fail(b, CRAWL_ECORRUPT, "layer '%s': block %u is not %llu bytes", l->name, i,
                            (unsigned long long)bytes);
        else if (rc == 0)
            memcpy(mem + (uint64_t)i * bytes, r->str, bytes);
        freeReplyObject(r);
    }
    bloom_sigpipe_restore(&g);
    if (rc < 0) {
        free(mem);
        return rc;
    }
    l->local = mem;
    b->local_used += total;
    return 1;
}

/* Frozen layer l's answer from its local copy: found[i] for r's items. */
static void test_local(const bloom_t *l, round_t *r)
{
    uint64_t bytes = l->geo.block_bits / 8, M = l->geo.block_bits, nb = l->geo.blocks;
    uint32_t k = l->geo.k;
    /* bloom_probe_from_hash's offsets, made one at a time: most items not
     * in the layer stop at their first or second bit */
    for (size_t i = 0; i < r->n; i++) {
        bloom_hash_t h = r->h[i];
        const uint8_t *blk = l->local + (((h.hi >> 32) * nb) >> 32) * bytes;
        uint64_t x = h.lo % M, y = (h.hi & 0xffffffffu) % M;
        int all = (blk[x >> 3] >> (7 - (x & 7))) & 1; /* Redis' bit order */
        for (uint32_t q = 1; all && q < k; q++) {
            x += y;
            if (x >= M)
                x -= M;
            y += q;
            while (y >= M)
                y -= M;
            all = (blk[x >> 3] >> (7 - (x & 7))) & 1;
        }
        r->found[i] = (uint8_t)all;
    }
}

static void forget_local(bloom_t *b)
{
    for (uint32_t j = 0; j < bloom_layers(b); j++) {
        bloom_t *l = bloom_layer(b, j);
        free(l->local);
        l->local = NULL;
    }
    b->local_used = 0;
}

/* Layers [from, to) asked for r's items, read only (a frozen one from its
 * local copy when it has or gets one): out[at] = val for each item found,
 * which leaves r. */
static int sweep(bloom_t *b, round_t *r, uint32_t from, uint32_t to, uint8_t *out, uint8_t val)
{
    for (uint32_t j = from; j < to && r->n; j++) {
        bloom_t *l = b->layer[j];
        int frozen = j + 1 < b->nlayers;
        int rc = !frozen ? 0 : l->local ? 1 : make_local(b, l);
        if (rc > 0)
            test_local(l, r);
        else if (rc == 0)
            rc = bloom_batch_plain(l, r->item, r->len, r->n, r->found, 0);
        if (rc < 0)
            return bloom_fail(b, rc, "%s", bloom_errmsg(l));
        size_t m = 0;
        for (size_t i = 0; i < r->n; i++) {
            if (r->found[i]) {
                out[r->at[i]] = val;
                bloom_cache_put(b->cc, bloom_fingerprint(r->h[i]));
                continue;
            }
            keep_item(r, m++, i);
        }
        r->n = m;
    }
    return 0;
}

/* One reply of the connection (the caller frees it), or NULL on a lost one. */
static redisReply *one_reply(bloom_t *b)
{
    redisReply *r = NULL;
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    if (redisGetReply(b->rc, (void **)&r) != REDIS_OK)
        r = NULL;
    bloom_sigpipe_restore(&g);
    return r;
}

/* An item of a round, probed: for the sort by block. */
typedef struct probed {
    uint32_t block, at; /* at: its index in the round */
} probed_t;

static int by_block(const void *x, const void *y)
{
    const probed_t *a = x, *b = y;
    return a->block != b->block ? (a->block < b->block ? -1 : 1)
                                : (a->at > b->at) - (a->at < b->at);
}

/* The ADD_SCRIPT call for r's items on the newest layer, grouped by block
 * (r->order: the order sent); *reply is the caller's to free. */
static int send_add(bloom_t *b, round_t *r, redisReply **reply)
{
    bloom_t *top = b->layer ? b->layer[b->nlayers - 1] : b;
    uint32_t k = top->geo.k;
    probed_t *pv = malloc(r->n * sizeof *pv);
    uint64_t *offs = malloc(r->n * k * sizeof *offs);
    if (!pv || !offs) {
        free(pv), free(offs);
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->n; i++) {
        bloom_probe_t pr;
        probe_in(b, r, i, b->nlayers - 1, &pr);
        pv[i] = (probed_t){.block = pr.block, .at = (uint32_t)i};
        memcpy(offs + i * k, pr.bit, k * sizeof *offs);
    }
    qsort(pv, r->n, sizeof *pv, by_block);
    uint32_t nb = 0;
    for (size_t i = 0; i < r->n; i++) {
        nb += i == 0 || pv[i].block != pv[i - 1].block;
        r->order[i] = pv[i].at;
    }
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    char num[32], next[BLOOM_MAX_NAME + 24];
    bloom_buf_array(o, 3 + 2 + nb + 3 + 2 * nb + r->n * k);
    bloom_buf_bulk(o, "EVAL", 4);
    bloom_buf_bulk(o, ADD_SCRIPT, sizeof ADD_SCRIPT - 1);
    bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%u", 2 + nb));
    bloom_buf_bulk(o, next, (size_t)snprintf(next, sizeof next, "%s:meta", b->name));
    bloom_buf_bulk(o, next,
                   (size_t)snprintf(next, sizeof next, "%s:L%u:meta", b->name, b->nlayers));
    for (size_t i = 0; i < r->n; i++)
        if (i == 0 || pv[i].block != pv[i - 1].block)
            bloom_buf_block_key(o, top, pv[i].block);
    bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%u", b->nlayers));
    bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%u", k));
    bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%zu", r->n));
    uint32_t key = 2;
    for (size_t i = 0; i < r->n; i++) {
        if (i == 0 || pv[i].block != pv[i - 1].block) {
            size_t c = 1;
            while (i + c < r->n && pv[i + c].block == pv[i].block)
                c++;
            bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%u", ++key));
            bloom_buf_bulk(o, num, (size_t)snprintf(num, sizeof num, "%zu", c));
        }
        for (uint32_t x = 0; x < k; x++)
            bloom_buf_bulk(o, num,
                           (size_t)snprintf(num, sizeof num, "%llu",
                                            (unsigned long long)offs[pv[i].at * k + x]));
    }
    free(pv), free(offs);
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    return (*reply = one_reply(b)) ? 0 : bloom_fail_io(b);
}

/* The fast way of a round: the newest layer's bits set by plain BITFIELDs
 * in one MULTI, under WATCH of layer 0's meta, which every publication and
 * every count of an adder writes: if any changed it after our reading of
 * it, EXEC runs nothing and the round goes to ADD_SCRIPT.  Taken only when
 * that reading says the layers are the ones this handle knows and the
 * newest has room for the round.  The count follows the EXEC (it lags one
 * round of this handle: the newest passes its capacity by that at most).
 * 1 done, 0 not taken (nothing written), or a failure. */
static int fast_add(bloom_t *b, round_t *r, uint8_t *is_new)
{
    char mkey[BLOOM_MAX_NAME + 8];
    int ml = snprintf(mkey, sizeof mkey, "%s:meta", b->name);
    bloom_buf_t *o = &b->out;
    o->len = 0;
    o->oom = 0;
    bloom_buf_array(o, 2);
    bloom_buf_bulk(o, "WATCH", 5);
    bloom_buf_bulk(o, mkey, (size_t)ml);
    bloom_buf_array(o, 5);
    bloom_buf_bulk(o, "HMGET", 5);
    bloom_buf_bulk(o, mkey, (size_t)ml);
    bloom_buf_bulk(o, "layers", 6);
    bloom_buf_bulk(o, "added", 5);
    bloom_buf_bulk(o, "full_at", 7);
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    redisReply *w = one_reply(b), *h = w ? one_reply(b) : NULL;
    uint64_t v[3] = {0, 0, 0};
    int ok = w && h && h->type == REDIS_REPLY_ARRAY && h->elements == 3;
    for (size_t i = 0; ok && i < 3; i++)
        ok = h->element[i]->type == REDIS_REPLY_STRING &&
             bloom_parse_u64(h->element[i]->str, h->element[i]->len, &v[i]) == 0;
    if (w)
        freeReplyObject(w);
    if (h)
        freeReplyObject(h);
    if (!w || !h)
        return bloom_fail_io(b);
    if (!ok || v[0] != b->nlayers || v[1] + r->n > v[2]) {
        redisReply *u = redisCommand(b->rc, "UNWATCH");
        if (!u)
            return bloom_fail_io(b);
        freeReplyObject(u);
        return 0;
    }
    bloom_t *top = b->layer ? b->layer[b->nlayers - 1] : b;
    o->len = 0;
    bloom_buf_array(o, 1);
    bloom_buf_bulk(o, "MULTI", 5);
    for (size_t i = 0; i < r->n; i++) {
        bloom_probe_t pr;
        probe_in(b, r, i, b->nlayers - 1, &pr);
        bloom_append_probe(o, top, &pr, 1);
    }
    bloom_buf_array(o, 1);
    bloom_buf_bulk(o, "EXEC", 4);
    if (o->oom || redisAppendFormattedCommand(b->rc, o->p, o->len) != REDIS_OK)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    int rc = 0, refused = 0;
    for (size_t i = 0; i < r->n + 1; i++) { /* +OK, then +QUEUED each */
        redisReply *q = one_reply(b);
        if (!q)
            return bloom_fail_io(b);
        refused |= q->type == REDIS_REPLY_ERROR; /* (an OOM: EXEC then runs nothing) */
        freeReplyObject(q);
    }
    redisReply *x = one_reply(b);
    if (!x)
        return bloom_fail_io(b);
    if (refused || x->type == REDIS_REPLY_NIL || x->type == REDIS_REPLY_ERROR) {
        freeReplyObject(x); /* not run (the meta changed, or a command refused): the script */
        return 0;
    }
    if (x->type != REDIS_REPLY_ARRAY || x->elements != r->n)
        rc = bloom_fail(b, CRAWL_EREPLY, "filter '%s': unexpected EXEC answer", b->name);
    uint64_t nnew = 0;
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        const redisReply *e = x->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != top->geo.k) {
            rc = bloom_fail(b, e->type == REDIS_REPLY_ERROR ? CRAWL_EWRONGTYPE : CRAWL_EREPLY,
                            "filter '%s': %.200s", b->name,
                            e->type == REDIS_REPLY_ERROR ? e->str : "unexpected BITFIELD answer");
            break;
        }
        int fresh = 0;
        for (size_t z = 0; z < e->elements; z++)
            fresh |= e->element[z]->type == REDIS_REPLY_INTEGER && e->element[z]->integer == 0;
        is_new[r->at[i]] = (uint8_t)fresh;
        nnew += (uint64_t)fresh;
        bloom_cache_put(b->cc, bloom_fingerprint(r->h[i]));
    }
    freeReplyObject(x);
    if (rc < 0)
        return rc;
    b->added = v[1] + nnew;
    if (nnew) {
        redisReply *c =
            redisCommand(b->rc, "HINCRBY %s added %llu", mkey, (unsigned long long)nnew);
        if (!c)
            return bloom_fail_io(b);
        freeReplyObject(c);
    }
    return 1;
}

/* Reads ADD_SCRIPT's answer into is_new: 0, CRAWL_ESTALE, CRAWL_EFULL or a
 * failure. */
static int read_add(bloom_t *b, const round_t *r, const redisReply *rep, uint8_t *is_new)
{
    if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "BLOOMSTALE", 10))
        return CRAWL_ESTALE;
    if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "BLOOMFULL", 9))
        return CRAWL_EFULL;
    if (rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "OOM"))
        return bloom_fail(b, CRAWL_ENOROOM, "filter '%s': Redis is at its maxmemory: %.200s",
                          b->name, rep->str);
    if (rep->type == REDIS_REPLY_ERROR)
        return bloom_fail(b, crawl_retry_reply(rep->str) ? CRAWL_EREDIS : CRAWL_EREPLY,
                          "filter '%s': Redis answered %.200s", b->name, rep->str);
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING || rep->element[0]->len != r->n ||
        rep->element[1]->type != REDIS_REPLY_INTEGER || rep->element[1]->integer < 0)
        return bloom_fail(b, CRAWL_EREPLY, "filter '%s': unexpected answer to a layered add",
                          b->name);
    for (size_t i = 0; i < r->n; i++) {
        uint32_t x = r->order[i];
        is_new[r->at[x]] = rep->element[0]->str[i] == '1';
        bloom_cache_put(b->cc, bloom_fingerprint(r->h[x]));
    }
    b->added = (uint64_t)rep->element[1]->integer;
    return 0;
}

/* Waits for the next layer: creates it, or lets its creator finish. */
static int wait_next(bloom_t *b, unsigned *waited)
{
    int rc = bloom_prepare(b, NULL);
    if (rc < 0)
        return rc;
    if (*waited >= BLOOM_CREATE_WAIT_MS)
        return bloom_fail(b, CRAWL_EBLOOM,
                          "filter '%s': its next layer is still being created after %d s", b->name,
                          BLOOM_CREATE_WAIT_MS / 1000);
    if (*waited)
        nanosleep(&(struct timespec){.tv_nsec = WAIT_STEP_MS * 1000000L}, NULL);
    *waited += WAIT_STEP_MS;
    rc = bloom_refresh(b, NULL);
    return rc < 0 ? rc : 0;
}

/* One round's items in r: frozen layers, then the add on the newest. */
static int add_round(bloom_t *b, round_t *r, uint8_t *is_new)
{
    uint32_t checked = 1; /* frozen layers [0, checked - 1) are checked */
    unsigned waited = 0;
    for (;;) {
        if (b->nlayers - 1 > checked - 1) {
            int rc = sweep(b, r, checked - 1, b->nlayers - 1, is_new, 0); /* the frozen ones */
            if (rc < 0)
                return rc;
            checked = b->nlayers;
        }
        if (r->n == 0)
            return 0;
        int fast = fast_add(b, r, is_new);
        if (fast != 0)
            return fast < 0 ? fast : 0;
        redisReply *rep = NULL;
        int rc = send_add(b, r, &rep);
        if (rc == 0) {
            rc = read_add(b, r, rep, is_new);
            freeReplyObject(rep);
        }
        if (rc == CRAWL_ESTALE)
            rc = bloom_refresh(b, NULL);
        else if (rc == CRAWL_EFULL)
            rc = wait_next(b, &waited);
        else
            return rc;
        if (rc < 0)
            return rc;
    }
}

static int layers_add(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                      uint8_t *is_new)
{
    if (!b || (n && (!items || !is_new)))
        return CRAWL_EINVAL;
    round_t r;
    int rc = round_init(b, &r);
    for (size_t i = 0; rc == 0 && i < n;) {
        /* a round: at most the room the newest layer has (at least one item) */
        uint64_t room = b->full_at > b->added ? b->full_at - b->added : 1;
        round_fill(b, &r, items, lens, n, &i, room < BLOOM_BATCH_ITEMS ? room : BLOOM_BATCH_ITEMS,
                   is_new, 0);
        rc = add_round(b, &r, is_new);
        if (rc == 0 && bloom_prepare_due(b) && bloom_prepare(b, NULL) == CRAWL_EREDIS)
            rc = CRAWL_EREDIS; /* no room yet is not an error: the layer is not needed yet */
    }
    round_free(&r);
    return rc;
}

static int layers_contains(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                           uint8_t *present)
{
    if (n && (!items || !present))
        return CRAWL_EINVAL;
    round_t r;
    int rc = round_init(b, &r);
    for (size_t i = 0; rc == 0 && i < n;) {
        round_fill(b, &r, items, lens, n, &i, BLOOM_BATCH_ITEMS, present, 1);
        rc = sweep(b, &r, 0, b->nlayers, present, 1);
    }
    round_free(&r);
    return rc;
}

/* ---- the public batch calls: one filter, or its layers ---------------------------- */

int bloom_add_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                   uint8_t *is_new)
{
    if (b && b->growth > 1.0)
        return layers_add(b, items, lens, n, is_new);
    return bloom_batch_plain(b, items, lens, n, is_new, 1);
}

int bloom_contains_many(bloom_t *b, const char *const *items, const size_t *lens, size_t n,
                        uint8_t *present)
{
    if (b && bloom_layers(b) > 1)
        return layers_contains(b, items, lens, n, present);
    return bloom_batch_plain(b, items, lens, n, present, 0);
}

void bloom_cache_forget(bloom_t *b)
{
    if (!b)
        return;
    forget_local(b); /* the frozen layers' copies too */
    bloom_cache_clear(b->cc);
}
