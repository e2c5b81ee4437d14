/*
 * layers.c -- a worker's side of a visited set that grows (bloom/bloom.h,
 * "layers"): reading the layers again and creating the next one when the
 * scripts ask for it.
 *
 * DESIGN: the offering scripts (frontier/lua/offer.lua: LAYERS) publish a
 * layer themselves, atomically with the offers, when the newest is full and
 * the next one exists; each call carries every link's block in the next
 * layer too, so a call built before a publication is still decided exactly
 * (its links are added to the layer it did not know yet).  A reply ends
 * with '+' when the worker's count is behind or the newest layer is past
 * BLOOM_PREPARE_FILL without a next one (fr_layers_flag); then, at the
 * worker's next turn (frontier_layers_tend, never while a call is being
 * built), the shard's handle reads the layers again and, if due, creates
 * the next layer (bloom_prepare: a claim, Redis' free memory checked,
 * blocks in steps), blocking this worker for as long as that takes; other
 * workers do not wait for it.  A layer that does not fit is tried again at
 * most once a second while the newest still has room; once the newest is
 * full it stops the crawl (CRAWL_EFULL): past that point links would be
 * told "seen" wrongly ever more often.
 * Keys: those of the visited set (bloom/), through bloom_refresh and
 * bloom_prepare on the shard's server (fr_context).
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>

#define RETRY_MS 1000 /* a layer that did not fit: tried again after this */

/* Shard s: the layers read again, the next one created if due. */
static int tend(frontier_t *f, unsigned s, char *errbuf, size_t errlen)
{
    fr_shard_t *sh = &f->shard[s];
    bloom_t *bf = sh->bloom;
    uint64_t now = fr_mono_ms();
    if (now < sh->look_after)
        return 0;
    redisContext *c = fr_context(f, s);
    if (!c)
        return CRAWL_EREDIS;
    int rc = bloom_refresh(bf, c);
    if (rc >= 0 && bloom_prepare_due(bf))
        rc = bloom_prepare(bf, c);
    if (rc >= 0) {
        sh->look = 0;
        return 0;
    }
    snprintf(errbuf, errlen, "%s", bloom_errmsg(bf));
    if (rc != CRAWL_ENOROOM)
        return rc == CRAWL_EREDIS ? rc : CRAWL_EBLOOM;
    if (bloom_newest_added(bf) < bloom_newest_capacity(bf)) { /* not needed yet */
        sh->look_after = now + RETRY_MS;
        return 0;
    }
    return CRAWL_EFULL;
}

int frontier_layers_tend(frontier_t *f, char *errbuf, size_t errlen)
{
    if (errlen)
        errbuf[0] = '\0';
    int rc = 0;
    for (unsigned s = 0; rc == 0 && s < f->nshards; s++)
        if (f->shard[s].look)
            rc = tend(f, s, errbuf, errlen);
    return rc;
}
