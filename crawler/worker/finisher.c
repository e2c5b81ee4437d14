/*
 * finisher.c -- a worker thread's finished pages (finisher.h).
 *
 * DESIGN: a finisher_t uses the thread's frontier handle (its link).  It
 * keeps two batches of entries: `queued`, the pages added since the last
 * send, and `fin`, the batch in flight -- one frontier_finish_start call,
 * its answer taken once frontier_call_ready says it is all there (the
 * thread's loop polls the link).  One batch is in flight at a time: pages
 * finished meanwhile make the next one, so batches grow while Redis is
 * busy.  Retries wait in `retries` for the next flush.
 * Output before acknowledgement: a flush first writes the JSON lines of the
 * queued pages and dead letters and flushes the writer (one write(2) for
 * them all), and sends nothing if that failed; a WARC exchange is written
 * (write(2), unbuffered) as soon as its page is added.  Retries are one
 * call each, waited for -- or, deferred (finisher_defer_retries: the
 * engine's), handed out as calls already sent (finisher_next_retry), whose
 * outcomes the caller reports in order (finisher_retried); until then they
 * stay in `retries` (its first nsent), counted as held.  A lost link: a
 * finish (and a retry) may run twice, so the link keeps it and sends it
 * again after the reconnect; its pages stay in `fin` meanwhile (held: the
 * reconcile leaves their leases alone) and are counted once it answers.
 * Redis keys: those of frontier_finish, frontier_retry and frontier_release
 * (the crawl's leases, queues, Bloom filter, counters: see frontier.h),
 * nothing directly.
 * Invariants: fin_call != NULL iff a batch is in flight, and then fin.n > 0
 * and fin_pages[i] points into fin.v[i]; every entry of `fin` is recorded;
 * an entry's record is written at most once.
 */
#include "finisher.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "metrics.h"
#include "linkrec.h"
#include "outputs.h"
#include "textrec.h"

struct finisher_common {
    outputs_t o; /* the writers (the crawl's: closed by whoever opened them) */
    atomic_int out_failed, warc_failed, text_failed, wet_failed, links_failed; /* reported once */
};

typedef struct entry {
    page_t p;
    uint32_t retry_after_ms; /* retries only */
    int recorded;            /* its JSON line is written (or it needs none) */
    size_t nnew;             /* in a batch in flight: its links that were new (--metrics) */
} entry_t;

typedef struct entries {
    entry_t *v;
    size_t n, cap;
} entries_t;

struct finisher {
    finisher_common_t *c;
    const crawl_config_t *cfg;
    frontier_t *fr;             /* borrowed: the thread's */
    entries_t queued;           /* added, not yet sent */
    entries_t fin;              /* the batch in flight (or being completed) */
    entries_t retries;          /* retries and dead letters: [0, nsent) sent (deferred),
                                   [nsent, nsent + nready) recorded, to hand out */
    size_t nsent, nready;       /* (finisher_defer_retries only) */
    int defer;                  /* retries handed out as calls (finisher_next_retry) */
    frontier_done_t *fin_pages; /* fin as frontier_finish_start wants it */
    size_t fin_pages_cap;
    frontier_call_t *fin_call;
    int failed; /* CRAWL_EWRITE once the WARC file failed: nothing is sent */
};

static int entries_push(entries_t *es, const entry_t *e)
{
    if (es->n == es->cap) {
        size_t cap = es->cap ? es->cap * 2 : 64;
        entry_t *n = realloc(es->v, cap * sizeof *n);
        if (!n)
            return CRAWL_ENOMEM;
        es->v = n;
        es->cap = cap;
    }
    es->v[es->n++] = *e;
    return 0;
}

/* Frees the pages of es[from..) and drops them. */
static void entries_cut(entries_t *es, size_t from)
{
    for (size_t i = from; i < es->n; i++)
        page_clear(&es->v[i].p);
    if (from < es->n)
        es->n = from;
}

finisher_common_t *finisher_common_new(const outputs_t *outs)
{
    finisher_common_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->o = *outs;
    return c;
}

void finisher_common_free(finisher_common_t *c)
{
    free(c);
}

int finisher_common_records(const finisher_common_t *c)
{
    return c->o.warc != NULL;
}

finisher_t *finisher_new(finisher_common_t *c, const crawl_config_t *cfg, frontier_t *fr)
{
    finisher_t *f = calloc(1, sizeof *f);
    if (f)
        *f = (finisher_t){.c = c, .cfg = cfg, .fr = fr};
    return f;
}

/* Appends p's text line to --text's buffer (a page with text). */
static int write_text(finisher_t *f, const page_t *p, int64_t now)
{
    out_t *text = f->c->o.text;
    if (!text || !p->text || p->dup_of) /* (a duplicate's text is its first URL's) */
        return 0;
    textrec_t r = {.url = p->item.url,
                   .title = text_title(p->text),
                   .lang = text_lang(p->text),
                   .simhash = text_simhash(p->text),
                   .timestamp_ms = now};
    r.text = text_body(p->text, &r.len);
    int rc = textrec_write(text, &r);
    if (rc == CRAWL_EWRITE && !atomic_exchange(&f->c->text_failed, 1))
        fprintf(stderr, "crawler: --text: %s\n", out_error(text));
    return rc;
}

/* Appends p's links line to --links's buffer (a page that was parsed). */
static int write_links(finisher_t *f, const page_t *p, int64_t now)
{
    out_t *o = f->c->o.links;
    size_t n = anchors_count(p->anchors);
    if (!o || !p->anchors)
        return 0;
    linkrec_link_t stack[64], *v = n <= 64 ? stack : malloc(n * sizeof *v);
    if (!v)
        return CRAWL_ENOMEM;
    int deep = p->link_depth > f->cfg->max_depth; /* none of its links is offered */
    for (size_t i = 0; i < n; i++) {
        const anchor_t *a = anchors_get(p->anchors, i);
        anchor_verdict_t verdict =
            deep && (a->verdict == ANCHOR_FOLLOWED || a->verdict == ANCHOR_REPEAT) ? ANCHOR_DEPTH
                                                                                   : a->verdict;
        v[i] = (linkrec_link_t){.url = a->url,
                                .kind = anchors_kind_name(a->kind),
                                .text = a->text,
                                .rel = a->rel,
                                .why = anchors_verdict_name(verdict)};
    }
    linkrec_t r = {.url = p->item.url,
                   .links = v,
                   .n = n,
                   .omitted = anchors_omitted(p->anchors),
                   .timestamp_ms = now};
    int rc = linkrec_write(o, &r);
    if (v != stack)
        free(v);
    if (rc == CRAWL_EWRITE && !atomic_exchange(&f->c->links_failed, 1))
        fprintf(stderr, "crawler: --links: %s\n", out_error(o));
    return rc;
}

/* Appends p's JSON lines to the writers' buffers (finisher_flush writes
 * them). */
static int write_record(finisher_t *f, const page_t *p)
{
    out_t *out = f->c->o.out;
    int64_t now = (int64_t)clock_wall_ms();
    int trc = write_text(f, p, now);
    if (trc == 0)
        trc = write_links(f, p, now);
    if (trc < 0)
        return trc;
    if (!out)
        return 0;
    out_record_t r = {.url = p->item.url,
                      .status = p->status,
                      .content_type = p->ctype,
                      .depth = p->item.depth,
                      .bytes = p->bytes,
                      .links_found = (uint32_t)p->nlinks,
                      .links_over_cap = p->links_over_cap,
                      .fetch_ms = p->fetch_ms,
                      .error_kind = p->error_kind,
                      .error_text = p->error_text,
                      .location = p->location,
                      .etag = p->etag,
                      .last_modified = p->last_modified,
                      .canonical = p->canonical,
                      .timestamp_ms = now,
                      .has_simhash = p->text != NULL,
                      .simhash = p->text ? text_simhash(p->text) : 0,
                      .duplicate_of = p->dup_of};
    int rc = out_write(out, &r);
    if (rc == CRAWL_EWRITE && !atomic_exchange(&f->c->out_failed, 1))
        fprintf(stderr, "crawler: --out: %s\n", out_error(out));
    return rc;
}

/* p's text as a conversion record (--wet), referring to its response
 * record (resp_id, "" if none). */
static int write_wet(finisher_t *f, const page_t *p, const page_exchange_t *ex, const char *resp_id)
{
    warc_t *wet = f->c->o.wet;
    if (!wet || !p->text || p->dup_of)
        return 0;
    warc_conversion_t x = {.target_uri = p->item.url,
                           .refers_to = resp_id[0] ? resp_id : NULL,
                           .lang = text_lang(p->text),
                           .time_ms = ex ? ex->time_ms : 0};
    x.text = text_body(p->text, &x.len);
    int rc = warc_write_conversion(wet, &x);
    if (rc == CRAWL_EWRITE && !atomic_exchange(&f->c->wet_failed, 1))
        fprintf(stderr, "crawler: --wet: %s\n", warc_error(wet));
    return rc == CRAWL_EWRITE ? CRAWL_EWRITE : 0; /* (a URL not fit for a header: no record) */
}

static int write_warc(finisher_t *f, const page_t *p, const page_exchange_t *ex, char *resp_id)
{
    warc_t *warc = f->c->o.warc;
    if (!warc || !ex)
        return 0;
    warc_exchange_t wx = {.target_uri = p->item.url,
                          .ip = ex->ip,
                          .request = ex->request,
                          .request_len = ex->request_len,
                          .response_head = ex->response_head,
                          .response_head_len = ex->response_head_len,
                          .body = ex->body,
                          .body_len = ex->body_len,
                          .body_decoded = ex->decoded,
                          .truncated = ex->truncated,
                          .fetch_time_ms = ex->time_ms,
                          .response_id = resp_id,
                          .payload_digest = p->digest[0] ? p->digest : NULL,
                          .revisit_uri = p->dup_of,
                          .revisit_time_ms = p->dup_time_ms};
    int rc = warc_write_exchange(warc, &wx);
    if (rc < 0 && !atomic_exchange(&f->c->warc_failed, 1))
        fprintf(stderr, "crawler: --warc: %s\n", warc_error(warc));
    return rc < 0 ? CRAWL_EWRITE : 0;
}

int finisher_add(finisher_t *f, page_t *p, const page_exchange_t *ex)
{
    /* a WARC that failed: the page is kept, never sent (finisher_release
     * hands it back), and the worker stops */
    char resp_id[WARC_RECORD_ID_LEN + 1] = "";
    int wrc = write_warc(f, p, ex, resp_id);
    if (wrc == 0)
        wrc = write_wet(f, p, ex, resp_id);
    if (wrc < 0)
        f->failed = wrc;
    int rc = entries_push(&f->queued, &(entry_t){.p = *p});
    if (rc < 0)
        page_clear(p);
    memset(p, 0, sizeof *p);
    return wrc < 0 ? wrc : rc;
}

int finisher_retry(finisher_t *f, page_t *p, uint32_t retry_after_ms, int *dead)
{
    *dead = p->item.tries + 1 >= f->cfg->max_tries;
    int rc = entries_push(
        &f->retries, &(entry_t){.p = *p, .retry_after_ms = retry_after_ms, .recorded = !*dead});
    if (rc < 0)
        page_clear(p);
    memset(p, 0, sizeof *p);
    return rc;
}

/* Writes the JSON lines not yet written of es, then (flush) pushes the
 * writer's buffer to the file. */
static int record_all(finisher_t *f, entries_t *es, int flush)
{
    int rc = 0;
    for (size_t i = 0; i < es->n && rc == 0; i++)
        if (!es->v[i].recorded && (rc = write_record(f, &es->v[i].p)) == 0) {
            es->v[i].recorded = 1;
            metrics_page(es->v[i].p.status, es->v[i].p.error_kind);
        }
    if (rc == 0 && flush && f->c->o.out && (rc = out_flush(f->c->o.out)) < 0 &&
        !atomic_exchange(&f->c->out_failed, 1))
        fprintf(stderr, "crawler: --out: %s\n", out_error(f->c->o.out));
    if (rc == 0 && flush && f->c->o.text && (rc = out_flush(f->c->o.text)) < 0 &&
        !atomic_exchange(&f->c->text_failed, 1))
        fprintf(stderr, "crawler: --text: %s\n", out_error(f->c->o.text));
    if (rc == 0 && flush && f->c->o.links && (rc = out_flush(f->c->o.links)) < 0 &&
        !atomic_exchange(&f->c->links_failed, 1))
        fprintf(stderr, "crawler: --links: %s\n", out_error(f->c->o.links));
    return rc;
}

/* What the frontier's retry is told of p. */
static frontier_outcome_t outcome_of(const page_t *p)
{
    return (frontier_outcome_t){.status = p->status,
                                .error = p->error_kind,
                                .bytes = p->bytes,
                                .unfetched = p->unfetched,
                                .ip = p->ip,
                                .fetch_ms =
                                    p->fetch_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)p->fetch_ms};
}

/* Sends the queued retries in order; on a lost connection the rest stay.
 * Deferred: they are ready to hand out now (their records are on file). */
static int send_retries(finisher_t *f)
{
    if (f->defer) {
        f->nready = f->retries.n - f->nsent;
        return 0;
    }
    size_t i = 0;
    int rc = 0;
    for (; i < f->retries.n; i++) {
        const page_t *p = &f->retries.v[i].p;
        frontier_outcome_t o = outcome_of(p);
        rc = frontier_retry(f->fr, &p->item, &o, f->retries.v[i].retry_after_ms);
        if (crawl_transient(rc)) /* kept for the next try */
            break;
        page_clear(&f->retries.v[i].p);
        if (rc == CRAWL_ELEASE) /* lease lost: another worker owns the URL now */
            rc = 0;
        if (rc < 0) {
            i++;
            break;
        }
    }
    if (i > 0) { /* (v is NULL while nothing was ever queued) */
        memmove(f->retries.v, f->retries.v + i, (f->retries.n - i) * sizeof *f->retries.v);
        f->retries.n -= i;
    }
    return rc;
}

/* --metrics: the links of a batch the frontier answered. */
static void count_links(const entries_t *es)
{
    uint64_t found = 0, nnew = 0, over = 0;
    for (size_t i = 0; i < es->n; i++) {
        found += es->v[i].p.nlinks;
        nnew += es->v[i].nnew;
        over += es->v[i].p.links_over_cap;
    }
    metrics_links(nnew, found > nnew ? found - nnew : 0, over);
}

/* The batch in flight has answered (rc: its call's outcome, or _start's).  A lost connection puts
 * its pages back in front of the queued ones (recorded: they are sent again after a reconnect);
 * otherwise they are freed.  Returns the error, if any. */
static int batch_finished(finisher_t *f, int rc, size_t *pages)
{
    if (crawl_transient(rc) && f->fin.n) {
        size_t n = f->fin.n;
        entries_t *q = &f->queued;
        if (q->n + n > q->cap) {
            entry_t *v = realloc(q->v, (q->n + n) * sizeof *v);
            if (!v) {
                entries_cut(&f->fin, 0); /* their leases expire: refetched */
                return rc;
            }
            q->v = v;
            q->cap = q->n + n;
        }
        memmove(q->v + n, q->v, q->n * sizeof *q->v);
        memcpy(q->v, f->fin.v, n * sizeof *q->v);
        q->n += n;
        f->fin.n = 0;
        return rc;
    }
    *pages += f->fin.n;
    if ((rc == 0 || rc == CRAWL_ELEASE) && metrics_enabled())
        count_links(&f->fin);
    entries_cut(&f->fin, 0);
    return rc == CRAWL_ELEASE ? 0 : rc;
}

int finisher_complete(finisher_t *f, int block, size_t *pages)
{
    *pages = 0;
    if (!f->fin_call)
        return 0;
    if (!block && !frontier_call_ready(f->fr, f->fin_call))
        return 0; /* not there yet */
    int rc = frontier_call_end(f->fr, f->fin_call);
    if (frontier_call_result(f->fin_call) == CRAWL_EINVAL)
        return rc; /* kept on the link, which is down: it answers after the reconnect */
    frontier_call_free(f->fin_call);
    f->fin_call = NULL;
    metrics_redis_answered(METRICS_CALL_FINISH);
    return batch_finished(f, rc, pages);
}

/* queued becomes the batch in flight (the buffers swap). */
static int swap_batches(finisher_t *f)
{
    if (f->fin_pages_cap < f->queued.n) {
        frontier_done_t *np = realloc(f->fin_pages, f->queued.n * sizeof *np);
        if (!np)
            return CRAWL_ENOMEM;
        f->fin_pages = np;
        f->fin_pages_cap = f->queued.n;
    }
    entries_t t = f->fin;
    f->fin = f->queued;
    f->queued = t;
    f->queued.n = 0;
    for (size_t i = 0; i < f->fin.n; i++) {
        entry_t *d = &f->fin.v[i];
        f->fin_pages[i] = (frontier_done_t){.item = &d->p.item,
                                            .outcome = outcome_of(&d->p),
                                            .links = (const char *const *)d->p.links,
                                            .nlinks = d->p.nlinks,
                                            .link_first = d->p.link_first,
                                            .link_depth = d->p.link_depth,
                                            .link_hops = d->p.link_hops,
                                            .links_over_cap = d->p.links_over_cap,
                                            .nnew = &d->nnew};
        d->nnew = 0;
    }
    return 0;
}

int finisher_flush(finisher_t *f, int wait, size_t *pages)
{
    size_t n = 0;
    int first = finisher_complete(f, 1, pages), rc;
    if (crawl_transient(first))
        return first;
    if (f->failed) /* an output failed: nothing more is marked done */
        return f->failed;
    if (!f->queued.n && f->retries.n == f->nsent + f->nready) /* nothing new */
        return first;
    /* the records first: nothing is marked done before its line is on file */
    if ((rc = record_all(f, &f->retries, 0)) < 0 || (rc = record_all(f, &f->queued, 1)) < 0 ||
        (rc = send_retries(f)) < 0)
        return first < 0 ? first : rc;
    if (!f->queued.n)
        return first;
    if ((rc = swap_batches(f)) < 0)
        return first < 0 ? first : rc;
    rc = frontier_finish_start(f->fr, f->fin_pages, f->fin.n, &f->fin_call);
    if (rc == 0)
        metrics_redis_sent(METRICS_CALL_FINISH);
    if (rc < 0)
        rc = batch_finished(f, rc, &n);
    else if (wait)
        rc = finisher_complete(f, 1, &n);
    *pages += n;
    return first < 0 ? first : rc;
}

void finisher_defer_retries(finisher_t *f)
{
    f->defer = 1;
}

int finisher_next_retry(finisher_t *f, frontier_call_t **call)
{
    *call = NULL;
    if (!f->nready || f->failed)
        return 0;
    const page_t *p = &f->retries.v[f->nsent].p;
    frontier_outcome_t o = outcome_of(p);
    int rc = frontier_retry_start(f->fr, &p->item, &o, f->retries.v[f->nsent].retry_after_ms, call);
    if (rc < 0)
        return rc; /* kept: handed out by a later call */
    f->nsent++;
    f->nready--;
    return 1;
}

int finisher_retried(finisher_t *f, int rc)
{
    if (!f->nsent)
        return 0;
    page_clear(&f->retries.v[0].p);
    memmove(f->retries.v, f->retries.v + 1, (f->retries.n - 1) * sizeof *f->retries.v);
    f->retries.n--;
    f->nsent--;
    return rc == CRAWL_ELEASE ? 0 : rc;
}

/* Hands es's pages back (one round trip) and drops them. */
static int release_entries(finisher_t *f, entries_t *es, size_t *n)
{
    int rc = 0;
    if (!es->n)
        return 0;
    frontier_item_t *items = malloc(es->n * sizeof *items);
    if (!items)
        rc = CRAWL_ENOMEM;
    else {
        for (size_t i = 0; i < es->n; i++)
            items[i] = es->v[i].p.item;
        rc = frontier_release(f->fr, items, es->n);
        if (rc == 0 || rc == CRAWL_ELEASE)
            *n += es->n;
        free(items);
    }
    entries_cut(es, 0);
    return rc == CRAWL_ELEASE ? 0 : rc;
}

int finisher_release(finisher_t *f, size_t *n)
{
    size_t ignored;
    *n = 0;
    if (f->fin_call) /* already sent: let Redis answer it */
        finisher_complete(f, 1, &ignored);
    int rc = release_entries(f, &f->fin, n);
    int r2 = release_entries(f, &f->queued, n);
    int r3 = release_entries(f, &f->retries, n);
    f->nsent = f->nready = 0;
    return rc < 0 ? rc : r2 < 0 ? r2 : r3;
}

void finisher_each_item(const finisher_t *f, void (*fn)(const frontier_item_t *, void *), void *ud)
{
    const entries_t *all[] = {&f->queued, &f->fin, &f->retries};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < all[k]->n; i++)
            fn(&all[k]->v[i].p.item, ud);
}

const char *finisher_last_error(const finisher_t *f)
{
    return frontier_last_error(f->fr);
}

size_t finisher_queued(const finisher_t *f)
{
    return f->queued.n + f->retries.n - f->nsent;
}

int finisher_busy(const finisher_t *f)
{
    return f->fin_call != NULL;
}

void finisher_free(finisher_t *f)
{
    if (!f)
        return;
    size_t n;
    finisher_complete(f, 1, &n);
    frontier_call_free(f->fin_call); /* (kept on a link that is down: dropped) */
    entries_cut(&f->fin, 0);
    entries_cut(&f->queued, 0);
    entries_cut(&f->retries, 0);
    f->nsent = f->nready = 0;
    free(f->queued.v);
    free(f->fin.v);
    free(f->retries.v);
    free(f->fin_pages);
    free(f);
}
