/*
 * bloom_layers.c -- a filter that grows: opening and closing a filter with
 * its layers, their sizes and geometry, reading them again, the next one
 * created ahead of need, and their info.  The test-and-add over them is
 * bloom_layered.c's; one filter on its own is bloom_open.c's.
 *
 * DESIGN (bloom.h, "layers", says what a caller sees)
 * Layer 0 is the filter NAME; layer j >= 1 is the plain filter "NAME:L<j>",
 * created by bloom_open with the geometry bloom_layer_geometry gives:
 * layer 0's k, seed and block size, the blocks its capacity n0 g^j and
 * rate p (1 - t) t^j need (an item's offsets are the same in every layer;
 * only its block differs).  Layer 0's meta hash holds the stack's state --
 * growth, fp_target, layers (published), added (items in the newest),
 * full_at (the newest's capacity), n<j> (what layer j held when it froze)
 * -- written at creation (bloom_create.c), then by the adders: the
 * library's (bloom_layered.c) and frontier/'s offer scripts
 * (frontier/lua/layers.lua), which follow the same rule.  bloom_open.c
 * parses those fields with the rest of the meta.
 *
 * A handle knows the layers published when it opened or last refreshed;
 * bloom_prepare creates the next one (bloom_open with its exact geometry:
 * a claim, Redis' free memory checked, blocks in steps) without waiting
 * for another creator; the adders publish it.
 *
 * Keys: NAME:meta (HMGET, HGETALL), NAME:L<j>:meta and NAME:L<j>:b:<i>
 * (through bloom_open.c, bloom_batch.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bloom_internal.h"

static int layer_name(const bloom_t *b, uint32_t j, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s:L%u", b->name, j);
    return n > 0 && (size_t)n < len ? 0 : CRAWL_EINVAL;
}

int bloom_layer_geometry(const bloom_t *b, uint32_t j, bloom_geometry_t *out)
{
    if (b->growth <= 1.0)
        return CRAWL_EINVAL;
    if (j == 0) {
        *out = b->geo;
        return 0;
    }
    uint64_t n;
    double pj;
    int rc = bloom_layer_size(b->capacity, b->fp_target, b->growth, j, &n, &pj);
    if (rc < 0)
        return rc;
    /* k fixed: the bits an item that give rate pj, (1 - e^(-k/b))^k = pj */
    double k = (double)b->geo.k;
    double bits = -k / log1p(-pow(pj, 1.0 / k));
    double bb = (double)b->geo.block_bits;
    double nb = ceil(bits * (double)n / bb);
    if (!(nb >= 1.0 && nb <= (double)BLOOM_MAX_BLOCKS))
        return CRAWL_EINVAL;
    *out = b->geo;
    out->blocks = (uint32_t)nb;
    out->m = (uint64_t)out->blocks * out->block_bits;
    return 0;
}

uint32_t bloom_layer_block(const bloom_t *b, uint32_t j, const bloom_probe_t *pr)
{
    uint32_t blocks = j <= BLOOM_MAX_LAYERS ? b->lblocks[j] : 1;
    return (uint32_t)(((uint64_t)pr->sel * (uint64_t)(blocks ? blocks : 1)) >> 32);
}

int bloom_layer_block_key(const bloom_t *b, uint32_t j, uint32_t block, char *buf, size_t buflen)
{
    int n = j ? snprintf(buf, buflen, "%s:L%u:b:%u", b->name, j, block)
              : snprintf(buf, buflen, "%s:b:%u", b->name, block);
    return n > 0 && (size_t)n < buflen ? n : CRAWL_EINVAL;
}

int bloom_layer_meta_key(const bloom_t *b, uint32_t j, char *buf, size_t buflen)
{
    int n = j ? snprintf(buf, buflen, "%s:L%u:meta", b->name, j)
              : snprintf(buf, buflen, "%s:meta", b->name);
    return n > 0 && (size_t)n < buflen ? n : CRAWL_EINVAL;
}

/* The block counts of every layer, published or to come, for
 * bloom_layer_block. */
static void note_blocks(bloom_t *b)
{
    for (uint32_t j = 0; j <= BLOOM_MAX_LAYERS; j++) {
        bloom_geometry_t g;
        b->lblocks[j] = bloom_layer_geometry(b, j, &g) == 0 ? g.blocks : 0;
    }
}

/* The params layer j is created with: its geometry, capacity and rate. */
static int layer_params(const bloom_t *b, uint32_t j, bloom_params_t *p, bloom_geometry_t *g)
{
    uint64_t n;
    double pj;
    int rc = bloom_layer_size(b->capacity, b->fp_target, b->growth, j, &n, &pj);
    if (rc < 0 || (rc = bloom_layer_geometry(b, j, g)) < 0)
        return rc;
    *p = (bloom_params_t){
        .capacity = n, .fp_rate = pj, .exact = g, .cache_bytes = SIZE_MAX, .no_wait = 1};
    return 0;
}

/* Opens layers [b->nlayers known .. want) on rc into b->layer. */
static int open_layers(bloom_t *b, redisContext *rc, uint32_t have, uint32_t want)
{
    bloom_t **v = realloc(b->layer, want * sizeof *v);
    if (!v)
        return bloom_fail(b, CRAWL_ENOMEM, "out of memory");
    b->layer = v;
    v[0] = b;
    for (uint32_t j = have ? have : 1; j < want; j++) {
        char name[BLOOM_MAX_NAME + 16], msg[400] = "";
        int err = 0;
        if (layer_name(b, j, name, sizeof name) < 0)
            return bloom_fail(b, CRAWL_EINVAL, "filter name too long for a layer");
        bloom_params_t p = {.cache_bytes = SIZE_MAX};
        v[j] = bloom_open(rc, name, &p, &err, msg, sizeof msg);
        if (!v[j])
            return bloom_fail(b, err ? err : CRAWL_EBLOOM, "layer %u of '%s': %s", j, b->name, msg);
        b->nlayers = j + 1;
    }
    b->nlayers = want;
    note_blocks(b);
    return 0;
}

static int layers_open(bloom_t *b)
{
    if (b->nlayers == 0)
        b->nlayers = 1;
    if (b->growth <= 1.0) {
        b->lblocks[0] = b->geo.blocks;
        return 0;
    }
    uint32_t want = b->nlayers;
    b->nlayers = 1;
    return open_layers(b, b->rc, 0, want);
}

static void layers_close(bloom_t *b)
{
    free(b->local);
    b->local = NULL;
    if (!b->layer)
        return;
    for (uint32_t j = 1; j < b->nlayers; j++)
        bloom_close(b->layer[j]);
    free(b->layer);
    b->layer = NULL;
}

double bloom_fp_target(const bloom_t *b)
{
    return b->fp_target;
}

double bloom_growth(const bloom_t *b)
{
    return b->growth;
}

uint32_t bloom_layers(const bloom_t *b)
{
    return b->nlayers ? b->nlayers : 1;
}

bloom_t *bloom_layer(bloom_t *b, uint32_t j)
{
    if (j == 0)
        return b;
    return b->layer && j < b->nlayers ? b->layer[j] : NULL;
}

uint64_t bloom_newest_added(const bloom_t *b)
{
    return b->added;
}

uint64_t bloom_newest_capacity(const bloom_t *b)
{
    return b->growth > 1.0 ? b->full_at : b->capacity;
}

int bloom_prepare_due(const bloom_t *b)
{
    return b->growth > 1.0 && b->nlayers < BLOOM_MAX_LAYERS && b->prepared != b->nlayers &&
           (double)b->added >= BLOOM_PREPARE_FILL * (double)b->full_at;
}

int bloom_refresh(bloom_t *b, redisContext *rc)
{
    if (!rc)
        rc = b->rc;
    if (b->growth <= 1.0)
        return 0;
    char mkey[BLOOM_MAX_NAME + 8];
    snprintf(mkey, sizeof mkey, "%s:meta", b->name);
    bloom_sigpipe_t g;
    bloom_sigpipe_block(&g);
    redisReply *r = redisCommand(rc, "HMGET %s layers added full_at", mkey);
    bloom_sigpipe_restore(&g);
    if (!r)
        return bloom_fail(b, CRAWL_EREDIS, "Redis connection failed: %s",
                          rc->err ? rc->errstr : "no reply");
    uint64_t v[3] = {0, 0, 0};
    int bad = r->type != REDIS_REPLY_ARRAY || r->elements != 3;
    for (size_t i = 0; !bad && i < 3; i++)
        bad = r->element[i]->type != REDIS_REPLY_STRING ||
              bloom_parse_u64(r->element[i]->str, r->element[i]->len, &v[i]) < 0;
    freeReplyObject(r);
    if (bad || v[0] < 1 || v[0] > BLOOM_MAX_LAYERS)
        return bloom_fail(b, CRAWL_ECORRUPT,
                          "meta of '%s': its layer fields are gone (the filter was deleted or "
                          "replaced)",
                          b->name);
    b->added = v[1];
    b->full_at = v[2];
    if (v[0] == b->nlayers)
        return 0;
    if (v[0] < b->nlayers) { /* a Redis restarted from its file lost a publication */
        while (b->nlayers > v[0]) {
            bloom_t *l = b->layer[--b->nlayers];
            if (l->local) /* (bloom_close frees the copy) */
                b->local_used -= (size_t)(l->geo.block_bits / 8 * l->geo.blocks);
            bloom_close(l);
        }
        b->prepared = 0;
        return 1;
    }
    int rc2 = open_layers(b, rc, b->nlayers, (uint32_t)v[0]);
    return rc2 < 0 ? rc2 : 1;
}

int bloom_prepare(bloom_t *b, redisContext *rc)
{
    if (!rc)
        rc = b->rc;
    if (b->growth <= 1.0)
        return bloom_fail(b, CRAWL_EINVAL, "filter '%s' does not grow", b->name);
    uint32_t j = b->nlayers;
    if (j >= BLOOM_MAX_LAYERS)
        return bloom_fail(b, CRAWL_EINVAL, "filter '%s' has %u layers, the most it may have",
                          b->name, j);
    bloom_params_t p;
    bloom_geometry_t lg;
    char name[BLOOM_MAX_NAME + 16], msg[400] = "";
    if (layer_params(b, j, &p, &lg) < 0 || layer_name(b, j, name, sizeof name) < 0)
        return bloom_fail(b, CRAWL_EINVAL, "layer %u of '%s' is out of range", j, b->name);
    int err = 0;
    bloom_t *l = bloom_open(rc, name, &p, &err, msg, sizeof msg);
    if (l) {
        bloom_close(l);
        b->prepared = j;
        return 0;
    }
    if (err == CRAWL_EBLOOM && strstr(msg, "being created")) /* another process is on it */
        return 0;
    return bloom_fail(b, err, "the visited set cannot grow: layer %u (capacity %llu): %s", j,
                      (unsigned long long)p.capacity, msg);
}

uint32_t bloom_layer_items(const bloom_t *b, uint64_t *items, uint32_t max)
{
    uint32_t n = bloom_layers(b);
    for (uint32_t j = 0; j < n && j < max; j++)
        items[j] = j + 1 == n ? b->added : b->frozen[j];
    return n < max ? n : max;
}

double bloom_layers_fp(const bloom_t *b, const uint64_t *items, uint32_t n)
{
    double lkeep = 0.0; /* log of prod(1 - p_j): exact for rates far below 1e-16 too */
    for (uint32_t j = 0; j < n && j < bloom_layers(b); j++) {
        const bloom_t *l = j == 0 ? b : b->layer[j];
        lkeep += log1p(-bloom_fp_estimate(&l->geo, items[j]));
    }
    return -expm1(lkeep);
}

/* ---- info ---------------------------------------------------------------------- */

static int layers_info(bloom_t *b, bloom_info_t *in)
{
    in->layers = bloom_layers(b);
    in->growth = b->growth;
    in->fp_target = b->fp_target;
    in->layer_items[0] = in->est_items > 0 && isfinite(in->est_items) ? (uint64_t)in->est_items : 0;
    in->layer_capacity[0] = b->capacity;
    if (b->growth <= 1.0) {
        in->layer_fp[0] = in->whole_fp = in->est_fp_rate;
        return 0;
    }
    int rc = bloom_refresh(b, NULL);
    if (rc < 0)
        return rc;
    /* the frozen layers' counts: HMGET meta n0 .. n<layers-2> */
    const char *argv[2 + BLOOM_MAX_LAYERS];
    size_t argl[2 + BLOOM_MAX_LAYERS];
    char mkey[BLOOM_MAX_NAME + 8], fields[BLOOM_MAX_LAYERS][8];
    argv[0] = "HMGET", argl[0] = 5;
    argl[1] = (size_t)snprintf(mkey, sizeof mkey, "%s:meta", b->name), argv[1] = mkey;
    for (uint32_t j = 0; j + 1 < b->nlayers; j++)
        argl[2 + j] = (size_t)snprintf(fields[j], sizeof fields[j], "n%u", j),
                 argv[2 + j] = fields[j];
    if (b->nlayers > 1) {
        redisReply *r = redisCommandArgv(b->rc, (int)(1 + b->nlayers), argv, argl);
        if (!r)
            return bloom_fail_io(b);
        for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && i < BLOOM_MAX_LAYERS;
             i++)
            if (r->element[i]->type != REDIS_REPLY_STRING ||
                bloom_parse_u64(r->element[i]->str, r->element[i]->len, &b->frozen[i]) < 0)
                b->frozen[i] = 0;
        freeReplyObject(r);
    }
    in->layers = bloom_layer_items(b, in->layer_items, BLOOM_MAX_LAYERS);
    in->whole_fp = bloom_layers_fp(b, in->layer_items, in->layers);
    for (uint32_t j = 0; j < b->nlayers; j++) {
        bloom_t *l = b->layer[j];
        in->layer_capacity[j] = l->capacity;
        in->layer_fp[j] = bloom_fp_estimate(&l->geo, in->layer_items[j]);
        if (j > 0) {
            bloom_info_t li;
            if ((rc = bloom_info_plain(l, &li)) < 0)
                return bloom_fail(b, rc, "%s", bloom_errmsg(l));
            in->redis_bytes += li.redis_bytes;
        }
    }
    return 0;
}

/* ---- opening and closing a filter, its layers with it --------------------------- */

bloom_t *bloom_open(redisContext *rc, const char *name, const bloom_params_t *params, int *err,
                    char *errbuf, size_t errlen)
{
    bloom_t *b = bloom_open_one(rc, name, params, err, errbuf, errlen);
    int code = b ? layers_open(b) : 0;
    if (code < 0) {
        bloom_set_err(code, err, errbuf, errlen, b->errmsg);
        bloom_close(b);
        return NULL;
    }
    return b;
}

bloom_t *bloom_join(redisContext *rc, const char *name, const bloom_params_t *params, int *err,
                    char *errbuf, size_t errlen)
{
    bloom_params_t p = params ? *params : (bloom_params_t){0};
    p.capacity = 0;
    p.fp_rate = 0;
    int code = 0;
    bloom_t *b = bloom_open(rc, name, &p, &code, errbuf, errlen);
    if (!b && code == CRAWL_ENOTFOUND && params && (params->capacity || params->fp_rate != 0.0))
        b = bloom_open(rc, name, params, &code, errbuf, errlen);
    if (err)
        *err = code;
    return b;
}

void bloom_close(bloom_t *b)
{
    if (!b)
        return;
    layers_close(b);
    bloom_close_one(b);
}

int bloom_info(bloom_t *b, bloom_info_t *out)
{
    bloom_info_t in;
    int rc = bloom_info_plain(b, &in);
    if (rc == 0 && (rc = layers_info(b, &in)) == 0)
        *out = in;
    return rc;
}
