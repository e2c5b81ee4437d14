/*
 * finisher.c -- a worker thread's finished pages (finisher.h).
 *
 * DESIGN: a finisher_t owns a second redisContext with its own frontier_t
 * (whose Bloom handle uses the shared local cache of finisher_common_t), under
 * the claiming handle's worker id, so that it finishes that handle's
 * leases.  It keeps two batches of entries (a page and the count of its new
 * links): `queued`, the pages added since the last send, and `fin`, the
 * batch in flight -- sent with one pipelined frontier_finish_start, its
 * replies read by frontier_finish_end once they have arrived (its socket is
 * polled with the transfers).  One batch is in flight at a time: pages
 * finished meanwhile make the next one, so batches grow while Redis is busy.
 * A page's JSON line is written once its finish call has answered (with the
 * count of new links); its WARC exchange as soon as it is added.  Retries go
 * through the claiming handle (retry_fr), synchronously: the finishing
 * connection may have a batch in flight.
 * Redis keys: those of frontier_finish and frontier_retry (the crawl's
 * leases, queues, Bloom filter, counters: see frontier.h), nothing directly.
 * Invariants: fin_pending != NULL iff a batch is in flight, and then nfin
 * > 0 and fin_pages[i] points into fin[i] for i < nfin; no other command is
 * sent on the finishing connection while a batch is in flight.
 */
#include "finisher.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "output.h"
#include "warc.h"

struct finisher_common {
    struct out *out;
    struct warc *warc;
    bloom_cache_t *seen_cache;          /* shared by every finishing handle */
    atomic_int out_failed, warc_failed; /* first write error reported once */
};

typedef struct entry {
    page_t p;
    size_t nnew; /* links new to the crawl, from the finish reply */
} entry_t;

struct finisher {
    finisher_common_t *c;
    const crawl_config_t *cfg;
    frontier_t *retry_fr; /* borrowed: the claiming handle */
    redisContext *rc;
    frontier_t *fr;
    entry_t *queued; /* added, not yet sent */
    size_t nqueued, queued_cap;
    entry_t *fin; /* the batch in flight (or being completed) */
    size_t nfin, fin_cap;
    frontier_done_t *fin_pages; /* fin as frontier_finish_start wants it */
    size_t fin_pages_cap;
    frontier_pending_t *fin_pending;
};

finisher_common_t *finisher_common_new(struct out *out, struct warc *warc)
{
    finisher_common_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->out = out;
    c->warc = warc;
    if (!(c->seen_cache = bloom_shared_cache_new(0))) {
        free(c);
        return NULL;
    }
    return c;
}

void finisher_common_free(finisher_common_t *c)
{
    if (!c)
        return;
    bloom_shared_cache_free(c->seen_cache);
    free(c);
}

int finisher_common_records(const finisher_common_t *c)
{
    return c->warc != NULL;
}

finisher_t *finisher_new(finisher_common_t *c, const crawl_config_t *cfg, const rconn_t *redis,
                         const frontier_config_t *fc, frontier_t *retry_fr, char *err,
                         size_t errlen)
{
    finisher_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->c = c;
    f->cfg = cfg;
    f->retry_fr = retry_fr;
    /* the frontier joins the crawl's filter, with the local cache all
     * workers share (what one learnt answers for all) */
    frontier_config_t own = *fc;
    own.bloom_shared_cache = c->seen_cache;
    if (!(f->rc = rconn_connect(redis, err, errlen)) ||
        !(f->fr = frontier_open(f->rc, &own, NULL, err, errlen))) {
        finisher_free(f);
        return NULL;
    }
    return f;
}

static void write_record(finisher_t *f, const entry_t *d)
{
    out_t *out = f->c->out;
    if (!out)
        return;
    const page_t *p = &d->p;
    out_record_t r = {.url = p->item.url,
                      .status = p->status,
                      .content_type = p->ctype,
                      .depth = p->item.depth,
                      .bytes = p->bytes,
                      .links_found = (uint32_t)p->nlinks,
                      .links_new = (uint32_t)d->nnew,
                      .fetch_ms = p->fetch_ms,
                      .error_kind = p->error_kind,
                      .error_text = p->error_text,
                      .location = p->location,
                      .canonical = p->canonical,
                      .timestamp_ms = (int64_t)clock_wall_ms()};
    if (out_write(out, &r) < 0 && !atomic_exchange(&f->c->out_failed, 1))
        fprintf(stderr, "crawler: --out: %s\n", out_error(out));
}

static void write_warc(finisher_t *f, const page_t *p, const page_exchange_t *ex)
{
    warc_t *warc = f->c->warc;
    if (!warc || !ex)
        return;
    warc_exchange_t wx = {.target_uri = p->item.url,
                          .ip = ex->ip,
                          .request = ex->request,
                          .request_len = ex->request_len,
                          .response_head = ex->response_head,
                          .response_head_len = ex->response_head_len,
                          .body = ex->body,
                          .body_len = ex->body_len,
                          .body_decoded = 1,
                          .truncated = ex->truncated,
                          .fetch_time_ms = ex->time_ms};
    if (warc_write_exchange(warc, &wx) < 0 && !atomic_exchange(&f->c->warc_failed, 1))
        fprintf(stderr, "crawler: --warc: %s\n", warc_error(warc));
}

int finisher_add(finisher_t *f, page_t *p, const page_exchange_t *ex)
{
    write_warc(f, p, ex);
    if (f->nqueued == f->queued_cap) {
        size_t cap = f->queued_cap ? f->queued_cap * 2 : 64;
        entry_t *n = realloc(f->queued, cap * sizeof *n);
        if (!n) {
            page_clear(p);
            return CRAWL_ENOMEM;
        }
        f->queued = n;
        f->queued_cap = cap;
    }
    f->queued[f->nqueued++] = (entry_t){.p = *p};
    memset(p, 0, sizeof *p);
    return 0;
}

int finisher_retry(finisher_t *f, const page_t *p, uint32_t retry_after_ms, int *dead)
{
    frontier_outcome_t o = {.status = p->status, .error = p->error_kind, .bytes = p->bytes};
    *dead = 0;
    int rc = frontier_retry(f->retry_fr, &p->item, &o, retry_after_ms);
    if (rc == CRAWL_ELEASE)
        return 0; /* lease lost: another worker owns the URL now */
    if (rc < 0)
        return rc;
    if (p->item.tries + 1 >= f->cfg->max_tries) {
        write_record(f, &(entry_t){.p = *p});
        *dead = 1;
    }
    return 0;
}

/* The batch in flight has answered (rc: what frontier_finish_end or _start
 * returned): its records, then it is freed.  Returns the error, if any. */
static int batch_finished(finisher_t *f, int rc, size_t *pages)
{
    for (size_t i = 0; i < f->nfin; i++) {
        if (rc == 0 || rc == CRAWL_ELEASE)
            write_record(f, &f->fin[i]);
        page_clear(&f->fin[i].p);
    }
    *pages += f->nfin;
    f->nfin = 0;
    return rc == CRAWL_ELEASE ? 0 : rc;
}

int finisher_complete(finisher_t *f, int block, size_t *pages)
{
    *pages = 0;
    if (!f->fin_pending)
        return 0;
    if (!block) { /* only when the first bytes of the reply are there */
        struct pollfd pfd = {.fd = f->rc->fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0)
            return 0;
    }
    int rc = frontier_finish_end(f->fr, f->fin_pending);
    f->fin_pending = NULL;
    return batch_finished(f, rc, pages);
}

/* queued becomes the batch in flight (the buffers swap). */
static int swap_batches(finisher_t *f)
{
    if (f->fin_pages_cap < f->nqueued) {
        frontier_done_t *np = realloc(f->fin_pages, f->nqueued * sizeof *np);
        if (!np)
            return CRAWL_ENOMEM;
        f->fin_pages = np;
        f->fin_pages_cap = f->nqueued;
    }
    entry_t *t = f->fin;
    size_t tcap = f->fin_cap;
    f->fin = f->queued;
    f->fin_cap = f->queued_cap;
    f->nfin = f->nqueued;
    f->queued = t;
    f->queued_cap = tcap;
    f->nqueued = 0;
    for (size_t i = 0; i < f->nfin; i++) {
        entry_t *d = &f->fin[i];
        f->fin_pages[i] = (frontier_done_t){
            .item = &d->p.item,
            .outcome = {.status = d->p.status, .error = d->p.error_kind, .bytes = d->p.bytes},
            .links = (const char *const *)d->p.links,
            .nlinks = d->p.nlinks,
            .link_depth = d->p.link_depth,
            .link_hops = d->p.link_hops,
            .nnew = &d->nnew};
    }
    return 0;
}

int finisher_flush(finisher_t *f, int wait, size_t *pages)
{
    size_t n = 0;
    int first = finisher_complete(f, 1, pages), rc;
    if (!f->nqueued)
        return first;
    if ((rc = swap_batches(f)) < 0)
        return first < 0 ? first : rc;
    rc = frontier_finish_start(f->fr, f->fin_pages, f->nfin, &f->fin_pending);
    if (rc < 0)
        rc = batch_finished(f, rc, &n);
    else if (wait)
        rc = finisher_complete(f, 1, &n);
    *pages += n;
    return first < 0 ? first : rc;
}

size_t finisher_queued(const finisher_t *f)
{
    return f->nqueued;
}

int finisher_fd(const finisher_t *f)
{
    return f->fin_pending ? f->rc->fd : -1;
}

void finisher_free(finisher_t *f)
{
    if (!f)
        return;
    size_t n;
    finisher_complete(f, 1, &n);
    for (size_t i = 0; i < f->nqueued; i++)
        page_clear(&f->queued[i].p);
    frontier_close(f->fr);
    if (f->rc)
        redisFree(f->rc);
    free(f->queued);
    free(f->fin);
    free(f->fin_pages);
    free(f);
}
