/*
 * deduper.c -- pages waiting for the crawl's word on their payload
 * (deduper.h).
 *
 * DESIGN: two lists of held pages, `next` (added since the last call) and
 * `sent` (the call in flight, with its frontier_dedup_t array pointing into
 * the pages).  A held page owns a copy of its exchange: its heads, body and
 * address in one allocation.  When the call answers, each page of `sent`
 * gets its verdict (page_t.dup_of) and goes to finisher_add with its copy,
 * which then writes a revisit record or a response.  A call that failed for
 * good (the crawl gone, a script error): its pages go to the finisher
 * untested (recorded in full: a false negative, never a lost record).
 * Redis keys: those of frontier_dedup_start (P digests), nothing directly.
 */
#include "deduper.h"

#include <stdlib.h>
#include <string.h>

#include "warc.h"

typedef struct held {
    page_t p;
    page_exchange_t ex; /* pointing into buf */
    char *buf;
} held_t;

typedef struct list {
    held_t *v;
    size_t n, cap;
} list_t;

struct deduper {
    frontier_t *fr;
    finisher_t *fin;
    list_t next, sent;
    frontier_dedup_t *ask; /* [sent.n]: the call's pages */
    frontier_call_t *call;
};

deduper_t *deduper_new(frontier_t *fr, finisher_t *fin)
{
    deduper_t *d = calloc(1, sizeof *d);
    if (d) {
        d->fr = fr;
        d->fin = fin;
    }
    return d;
}

static void list_drop(list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        page_clear(&l->v[i].p);
        free(l->v[i].buf);
    }
    l->n = 0;
}

void deduper_free(deduper_t *d)
{
    if (!d)
        return;
    frontier_call_free(d->call);
    for (size_t i = 0; d->ask && i < d->sent.n; i++)
        free(d->ask[i].orig_url);
    list_drop(&d->next);
    list_drop(&d->sent);
    free(d->next.v);
    free(d->sent.v);
    free(d->ask);
    free(d);
}

int deduper_wants(const page_t *p, const page_exchange_t *ex)
{
    return ex && ex->body_len > 0 && p->status >= 200 && p->status < 300;
}

/* A copy of ex in one allocation (*buf). */
static int copy_exchange(const page_exchange_t *ex, page_exchange_t *out, char **buf)
{
    size_t ipl = ex->ip ? strlen(ex->ip) + 1 : 0;
    char *b = malloc(ex->request_len + ex->response_head_len + ex->body_len + ipl + 1);
    if (!b)
        return CRAWL_ENOMEM;
    *out = *ex;
    char *at = b;
    if (ex->request_len)
        memcpy(at, ex->request, ex->request_len);
    out->request = ex->request ? at : NULL;
    at += ex->request_len;
    memcpy(at, ex->response_head, ex->response_head_len);
    out->response_head = at;
    at += ex->response_head_len;
    if (ex->body_len)
        memcpy(at, ex->body, ex->body_len);
    out->body = at;
    at += ex->body_len;
    if (ipl)
        memcpy(at, ex->ip, ipl);
    out->ip = ipl ? at : NULL;
    *buf = b;
    return 0;
}

int deduper_add(deduper_t *d, page_t *p, const page_exchange_t *ex)
{
    held_t h = {0};
    int rc = warc_digest(ex->body, ex->body_len, p->digest);
    if (rc == 0)
        rc = copy_exchange(ex, &h.ex, &h.buf);
    if (rc == 0 && d->next.n == d->next.cap) {
        size_t cap = d->next.cap ? 2 * d->next.cap : 16;
        held_t *v = realloc(d->next.v, cap * sizeof *v);
        if (!v)
            rc = CRAWL_ENOMEM;
        else {
            d->next.v = v;
            d->next.cap = cap;
        }
    }
    if (rc < 0) { /* recorded in full, untested */
        free(h.buf);
        p->digest[0] = '\0';
        int frc = finisher_add(d->fin, p, ex);
        return frc < 0 ? frc : 0;
    }
    h.p = *p;
    memset(p, 0, sizeof *p);
    d->next.v[d->next.n++] = h;
    return 0;
}

/* The answered call's pages to the finisher (verdicts if ok). */
static int hand_over(deduper_t *d, int ok)
{
    int rc = 0;
    for (size_t i = 0; i < d->sent.n; i++) {
        held_t *h = &d->sent.v[i];
        if (ok && d->ask[i].duplicate) {
            h->p.dup_of = d->ask[i].orig_url; /* (the page's now) */
            h->p.dup_time_ms = d->ask[i].orig_time_ms;
        } else {
            free(d->ask[i].orig_url);
        }
        d->ask[i].orig_url = NULL;
        int frc = finisher_add(d->fin, &h->p, &h->ex);
        free(h->buf);
        h->buf = NULL;
        if (frc < 0 && rc == 0)
            rc = frc;
    }
    d->sent.n = 0;
    return rc;
}

/* next becomes the call in flight. */
static int send_next(deduper_t *d)
{
    list_t t = d->sent;
    d->sent = d->next;
    d->next = t;
    d->next.n = 0;
    frontier_dedup_t *ask = realloc(d->ask, d->sent.n * sizeof *ask);
    if (!ask)
        return hand_over(d, 0) < 0 ? CRAWL_EWRITE : CRAWL_ENOMEM;
    d->ask = ask;
    for (size_t i = 0; i < d->sent.n; i++) {
        const held_t *h = &d->sent.v[i];
        d->ask[i] = (frontier_dedup_t){
            .digest = h->p.digest, .url = h->p.item.url, .time_ms = h->ex.time_ms};
    }
    int rc = frontier_dedup_start(d->fr, d->ask, d->sent.n, &d->call);
    if (rc < 0) { /* not sent: untested, recorded in full */
        int hrc = hand_over(d, 0);
        return hrc < 0 ? hrc : crawl_transient(rc) ? rc : 0;
    }
    return 0;
}

int deduper_turn(deduper_t *d, int block)
{
    if (d->call) {
        if (!block && !frontier_call_ready(d->fr, d->call))
            return 0;
        int rc = frontier_call_end(d->fr, d->call);
        if (frontier_call_result(d->call) == CRAWL_EINVAL)
            return rc; /* kept on the link, which is down: it answers after the reconnect */
        frontier_call_free(d->call);
        d->call = NULL;
        int hrc = hand_over(d, rc == 0);
        if (hrc < 0)
            return hrc;
        if (crawl_transient(rc))
            return rc;
    }
    return d->next.n ? send_next(d) : 0;
}

int deduper_busy(const deduper_t *d)
{
    return d->call != NULL || d->next.n > 0;
}

void deduper_each_item(const deduper_t *d, void (*fn)(const frontier_item_t *, void *), void *ud)
{
    for (size_t i = 0; i < d->sent.n; i++)
        fn(&d->sent.v[i].p.item, ud);
    for (size_t i = 0; i < d->next.n; i++)
        fn(&d->next.v[i].p.item, ud);
}
