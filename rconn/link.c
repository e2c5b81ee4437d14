/*
 * link.c -- the one owner of a thread's Redis connections (rconn.h:
 * rconn_link_t).
 *
 * DESIGN: a link keeps a server table (srv[]: one connection each, and the
 * FIFO of the calls written to it whose replies have not come), a slot
 * table (slot -> server, filled from the map as slots are first used after
 * a connect; a plain Redis has one server for every slot), and two lists of
 * calls not written: `queue` (to write when up) and `held` (kept from before
 * a held connect, written by rconn_link_resume).  Every call handed over
 * gets a sequence number; lists stay in that order, so a resend keeps the
 * first order.  Writing appends each queued call to its server's output and
 * pushes it on the server's FIFO, then writes each server touched in one
 * go (a round trip).  Reading takes the replies a server holds, one per
 * FIFO head:
 *   - "Function not found" (the library lost: a restart, FUNCTION FLUSH):
 *     the library is loaded again before the call, which goes back to the
 *     queue (it did not run);
 *   - a reply saying Redis did not run the call (crawl_retry_reply, OOM):
 *     the call is kept (unrun) and the link goes down with that text;
 *   - else the call is answered; a call made RCONN_CALL_REPLICATED, written
 *     to a master that had replicas when the link connected to it (INFO
 *     replication's connected_slaves), has a WAIT of the link's own written behind it,
 *     and its reply is kept until the WAIT's comes (the call then leaves
 *     the FIFO, the WAIT holding it: `of`).
 * A loss (an I/O error, a call unanswered for RCONN_COMMAND_TIMEOUT_MS, a
 * did-not-run reply, or the caller's rconn_link_drop) closes every
 * connection and forgets the slot table (a failover may have moved them);
 * the calls in flight that may run twice (RCONN_CALL_RESEND) or did not run
 * go back to the queue in their order, the others fail with CRAWL_EREDIS.
 * A call whose reply came but not its WAIT's is lost likewise: it ran, but
 * its write may not have reached a replica before the master went.
 * The link's own calls (a FUNCTION LOAD, a WAIT, the place of a call its
 * owner freed while it was in flight) are freed by it.  Nothing else writes on
 * the connections: rconn_link_context hands one out only once its FIFO is
 * empty.  Redis keys: none of its own.
 */
#include "rconn_internal.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RC_MAX_SERVERS 1024 /* masters one link may talk to */

typedef struct rc_list {
    rconn_call_t *head, *tail;
    size_t n;
} rc_list_t;

typedef struct rc_server {
    char name[RCONN_NAME_MAX];
    redisContext *ctx;
    rc_list_t sent; /* written, their replies awaited, in order */
    int loaded;     /* the library is loaded on ctx */
    int dirty;      /* written to in this flush, not yet sent */
    int replicas;   /* its replicas when connected (a cluster's master) */
} rc_server_t;

struct rconn_link {
    const rconn_t *r;
    char *library;
    rc_server_t *srv;
    size_t nsrv, capsrv;
    uint16_t *slot_srv; /* [RCONN_NSLOTS] server index + 1, 0: not known since the connect */
    rc_list_t queue;    /* not written: to write when up */
    rc_list_t held;     /* kept from before a held connect */
    int up, hold;
    int cork; /* > 0: calls handed over wait for the uncork, to go out in one write */
    uint64_t seq, trips;
    char err[512];
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- lists -------------------------------------------------------------------- */

static void list_remove(rc_list_t *q, rconn_call_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        q->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        q->tail = c->prev;
    c->next = c->prev = NULL;
    q->n--;
}

static void list_push(rc_list_t *q, rconn_call_t *c)
{
    c->next = NULL;
    c->prev = q->tail;
    if (q->tail)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    q->n++;
}

/* Puts c into q at its place by sequence number. */
static void list_insert(rc_list_t *q, rconn_call_t *c)
{
    rconn_call_t *at = q->tail;
    while (at && at->seq > c->seq)
        at = at->prev;
    if (!at) {
        c->prev = NULL;
        c->next = q->head;
        if (q->head)
            q->head->prev = c;
        else
            q->tail = c;
        q->head = c;
    } else {
        c->prev = at;
        c->next = at->next;
        if (at->next)
            at->next->prev = c;
        else
            q->tail = c;
        at->next = c;
    }
    q->n++;
}

/* ---- calls ------------------------------------------------------------------ */

static void fail(rconn_call_t *c, int status)
{
    c->state = RC_CALL_FAILED;
    c->status = status;
    c->link = NULL;
}

/* Whether c's reply came and it waits for its WAIT (out of every FIFO). */
static int awaits_wait(const rconn_call_t *c)
{
    return c->wait && c->wait->of == c;
}

/* c's WAIT is no longer its (c resent, failed or freed): the WAIT's reply,
 * when it comes, is dropped. */
static void unwait(rconn_call_t *c)
{
    if (c->wait)
        c->wait->of = NULL;
    c->wait = NULL;
    if (c->kept)
        freeReplyObject(c->kept);
    c->kept = NULL;
}

/* A call that is the link's own is freed; a caller's is left done. */
static void settle_own(rconn_call_t *c)
{
    if (!c->own)
        return;
    c->link = NULL;
    rconn_call_free(c);
}

/* Takes c off l (a sent call's place kept for its reply). */
static void forget(rconn_link_t *l, rconn_call_t *c)
{
    if (awaits_wait(c)) { /* in no FIFO: its WAIT's reply is dropped */
        unwait(c);
    } else if (c->state == RC_CALL_QUEUED) {
        list_remove(c->held ? &l->held : &l->queue, c);
        c->held = 0;
    } else if (c->state == RC_CALL_SENT) {
        unwait(c); /* (its WAIT, behind it, takes its own reply) */
        /* its reply will come: a place-holder of the link's own takes it */
        rconn_call_t *ph = rconn_call_new(c->slot, 0);
        rc_list_t *q = &l->srv[c->srv].sent;
        if (ph) {
            *ph = (rconn_call_t){.state = RC_CALL_SENT,
                                 .srv = c->srv,
                                 .seq = c->seq,
                                 .sent_ms = c->sent_ms,
                                 .own = RC_OWN_PLACE,
                                 .link = l,
                                 .prev = c->prev,
                                 .next = c->next};
            rconn_args_init(&ph->a);
            if (c->prev)
                c->prev->next = ph;
            else
                q->head = ph;
            if (c->next)
                c->next->prev = ph;
            else
                q->tail = ph;
            c->next = c->prev = NULL;
        } else { /* out of memory: the FIFO cannot stay in step; the link is lost */
            list_remove(q, c);
            rconn_link_drop(l, "out of memory");
        }
    }
    c->link = NULL;
    c->state = RC_CALL_NEW;
}

void rconn_call_free(rconn_call_t *c)
{
    if (!c)
        return;
    if (c->link)
        forget(c->link, c);
    if (c->r)
        freeReplyObject(c->r);
    unwait(c);
    rconn_args_free(&c->a);
    free(c);
}

/* ---- servers ---------------------------------------------------------------- */

/* Loads the library on s's connection, blocking (a new connection: nothing
 * is in flight on it).  0, or -1 with l->err. */
static int load_library(rconn_link_t *l, rc_server_t *s)
{
    if (!l->library || s->loaded)
        return 0;
    redisReply *r = redisCommand(s->ctx, "FUNCTION LOAD %s", l->library);
    int ok = r && (r->type == REDIS_REPLY_STRING ||
                   (r->type == REDIS_REPLY_ERROR && strstr(r->str, "already exists")));
    if (!ok)
        snprintf(l->err, sizeof l->err, "loading the Redis functions on %s: %s", s->name,
                 r && r->str ? r->str : s->ctx->errstr);
    if (r)
        freeReplyObject(r);
    s->loaded = ok;
    return ok ? 0 : -1;
}

/* The replicas connected to a master (INFO replication's
 * connected_slaves: online or still in their first sync, whose WAIT then
 * waits for it at most RCONN_REPLICA_WAIT_MS); 0 when it does not answer. */
static int replicas_connected(redisContext *ctx)
{
    redisReply *r = redisCommand(ctx, "INFO replication");
    const char *p =
        r && r->type == REDIS_REPLY_STRING && r->str ? strstr(r->str, "connected_slaves:") : NULL;
    long n = p ? strtol(p + strlen("connected_slaves:"), NULL, 10) : 0;
    if (r)
        freeReplyObject(r);
    return n > 0 && n < 1000 ? (int)n : 0;
}

/* The index of the server named name, connected to a (added, connected and
 * its library loaded if new).  -1 with l->err. */
static int server_add(rconn_link_t *l, const char *name, const rc_addr_t *a)
{
    for (size_t i = 0; i < l->nsrv; i++)
        if (!strcmp(l->srv[i].name, name))
            return (int)i;
    if (l->nsrv == RC_MAX_SERVERS) {
        snprintf(l->err, sizeof l->err, "more than %d Redis servers", RC_MAX_SERVERS);
        return -1;
    }
    if (l->nsrv == l->capsrv) {
        size_t cap = l->capsrv ? l->capsrv * 2 : 4;
        rc_server_t *v = realloc(l->srv, cap * sizeof *v);
        if (!v) {
            snprintf(l->err, sizeof l->err, "out of memory");
            return -1;
        }
        l->srv = v;
        l->capsrv = cap;
    }
    rc_server_t *s = &l->srv[l->nsrv];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    if (!(s->ctx = rc_connect_to(l->r, a, l->err, sizeof l->err)))
        return -1;
    if (load_library(l, s) < 0) {
        redisFree(s->ctx);
        return -1;
    }
    if (rconn_is_cluster(l->r))
        s->replicas = replicas_connected(s->ctx);
    return (int)l->nsrv++;
}

/* The server of slot, connected (found from the map on a cluster the first
 * time after a connect).  -1 with l->err (the caller takes the link down). */
static int server_of(rconn_link_t *l, int slot)
{
    int cluster = rconn_is_cluster(l->r);
    if (!cluster && l->nsrv)
        return 0;
    if (cluster && l->slot_srv[slot])
        return l->slot_srv[slot] - 1;
    rc_addr_t a;
    char name[RCONN_NAME_MAX];
    if (rc_route(l->r, slot, &a, l->err, sizeof l->err) < 0)
        return -1;
    rc_addr_name(&a, name, sizeof name);
    int i = server_add(l, name, &a);
    rc_addr_clear(&a);
    if (i >= 0 && cluster)
        l->slot_srv[slot] = (uint16_t)(i + 1);
    return i;
}

/* ---- loss ------------------------------------------------------------------- */

/* c, lost with its connection: back in the queue if it may be sent again
 * (it did not run, or may run twice), else failed.  The link's own freed. */
static void lost_call(rconn_link_t *l, rconn_call_t *c)
{
    c->next = c->prev = NULL;
    if (c->own == RC_OWN_WAIT && c->of) { /* its call ran, not known to be replicated */
        rconn_call_t *of = c->of;
        unwait(of);
        settle_own(c);
        lost_call(l, of);
        return;
    }
    unwait(c); /* (its WAIT is lost with it) */
    if (c->own) {
        settle_own(c);
    } else if (c->unrun || (c->flags & RCONN_CALL_RESEND)) {
        c->state = RC_CALL_QUEUED;
        c->unrun = 0;
        list_insert(&l->queue, c);
    } else {
        fail(c, CRAWL_EREDIS);
    }
}

static void lose(rconn_link_t *l, const char *why)
{
    if (why && why != l->err)
        snprintf(l->err, sizeof l->err, "%s", why);
    l->up = 0;
    for (size_t i = 0; i < l->nsrv; i++) {
        rc_server_t *s = &l->srv[i];
        while (s->sent.head) {
            rconn_call_t *c = s->sent.head;
            list_remove(&s->sent, c);
            lost_call(l, c);
        }
        if (s->ctx)
            redisFree(s->ctx);
    }
    l->nsrv = 0;
    if (l->slot_srv)
        memset(l->slot_srv, 0, RCONN_NSLOTS * sizeof *l->slot_srv);
}

void rconn_link_drop(rconn_link_t *l, const char *why)
{
    if (l)
        lose(l, why ? why : "dropped");
}

/* ---- writing ------------------------------------------------------------------ */

/* Appends a FUNCTION LOAD of the link's own ahead of s's next call. */
static int append_load(rconn_link_t *l, int si)
{
    rc_server_t *s = &l->srv[si];
    rconn_call_t *c = rconn_call_new(0, 0);
    if (!c)
        return -1;
    c->own = RC_OWN_LOAD;
    c->link = l;
    c->srv = si;
    c->seq = 0;
    c->state = RC_CALL_SENT;
    c->sent_ms = mono_ms();
    const char *argv[] = {"FUNCTION", "LOAD", l->library};
    if (redisAppendCommandArgv(s->ctx, 3, argv, NULL) != REDIS_OK) {
        rconn_call_free(c);
        return -1;
    }
    list_push(&s->sent, c);
    s->loaded = 1;
    s->dirty = 1;
    return 0;
}

/* Appends a WAIT of the link's own behind c, its call (RCONN_CALL_REPLICATED). */
static int append_wait(rconn_link_t *l, int si, rconn_call_t *c)
{
    rc_server_t *s = &l->srv[si];
    rconn_call_t *w = rconn_call_new(c->slot, 0);
    if (!w)
        return -1;
    w->own = RC_OWN_WAIT;
    w->link = l;
    w->srv = si;
    w->state = RC_CALL_SENT;
    w->sent_ms = c->sent_ms;
    if (redisAppendCommand(s->ctx, "WAIT %d %d", s->replicas, RCONN_REPLICA_WAIT_MS) != REDIS_OK) {
        rconn_call_free(w);
        return -1;
    }
    list_push(&s->sent, w);
    c->wait = w;
    return 0;
}

/* Writes every queued call: 0, or -1 (the link lost: l->err). */
static int flush(rconn_link_t *l)
{
    if (!l->up)
        return -1;
    while (l->queue.head) {
        rconn_call_t *c = l->queue.head;
        if (c->a.oom || c->a.n == 0) {
            list_remove(&l->queue, c);
            fail(c, CRAWL_ENOMEM);
            continue;
        }
        int si = server_of(l, c->slot);
        if (si < 0 || (l->library && !l->srv[si].loaded && append_load(l, si) < 0)) {
            lose(l, NULL);
            return -1;
        }
        rc_server_t *s = &l->srv[si];
        if (redisAppendCommandArgv(s->ctx, (int)c->a.n, c->a.v, c->a.len) != REDIS_OK) {
            lose(l, "out of memory");
            return -1;
        }
        list_remove(&l->queue, c);
        c->state = RC_CALL_SENT;
        c->srv = si;
        c->sent_ms = mono_ms();
        list_push(&s->sent, c);
        s->dirty = 1;
        if ((c->flags & RCONN_CALL_REPLICATED) && s->replicas > 0 && append_wait(l, si, c) < 0) {
            lose(l, "out of memory");
            return -1;
        }
    }
    for (size_t i = 0; i < l->nsrv; i++) {
        rc_server_t *s = &l->srv[i];
        int done = !s->dirty;
        s->dirty = 0;
        l->trips += !done;
        while (!done)
            if (redisBufferWrite(s->ctx, &done) != REDIS_OK) {
                snprintf(l->err, sizeof l->err, "writing to Redis at %s: %s", s->name,
                         s->ctx->errstr);
                lose(l, NULL);
                return -1;
            }
    }
    return 0;
}

/* ---- reading ------------------------------------------------------------------ */

static int is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "Function not found");
}

/* 1 if the reply says Redis did not run the call: a cluster's redirect or
 * refusal, a replica or a loading server, or its maxmemory. */
static int did_not_run(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str &&
           (crawl_retry_reply(r->str) || !strncmp(r->str, "OOM ", 4));
}

/* One reply of server si, for its FIFO's head.  0, or -1 when the reply
 * takes the link down. */
static int take_reply(rconn_link_t *l, int si, redisReply *r)
{
    rc_server_t *s = &l->srv[si];
    rconn_call_t *c = s->sent.head;
    if (!c) { /* a reply nobody asked for: the stream is out of step */
        freeReplyObject(r);
        snprintf(l->err, sizeof l->err, "a reply from %s without a call", s->name);
        return -1;
    }
    list_remove(&s->sent, c);
    if (c->own == RC_OWN_WAIT && c->of) { /* (its count: fewer in time, done as is) */
        rconn_call_t *of = c->of;
        redisReply *kept = of->kept;
        of->kept = NULL;
        of->wait = NULL;
        of->link = NULL;
        rc_call_set_reply(of, kept);
        freeReplyObject(r);
        settle_own(c);
        return 0;
    }
    if (c->own) {
        int load_failed = c->own == RC_OWN_LOAD && r->type == REDIS_REPLY_ERROR && r->str &&
                          !strstr(r->str, "already exists");
        if (load_failed)
            snprintf(l->err, sizeof l->err, "loading the Redis functions on %s: %s", s->name,
                     r->str);
        freeReplyObject(r);
        settle_own(c);
        return load_failed ? -1 : 0;
    }
    if (l->library && is_noscript(r)) { /* loaded again, then the call again */
        unwait(c);
        freeReplyObject(r);
        s->loaded = 0;
        c->state = RC_CALL_QUEUED;
        list_insert(&l->queue, c);
        return 0;
    }
    if (did_not_run(r)) {
        snprintf(l->err, sizeof l->err, "%.100s answered: %.380s", s->name, r->str);
        freeReplyObject(r);
        c->unrun = 1;
        unwait(c);
        list_push(&s->sent, c); /* back at the end: lose() sorts the calls kept */
        return -1;
    }
    if (c->wait) { /* done when its WAIT answers */
        c->kept = r;
        c->wait->of = c;
        return 0;
    }
    c->link = NULL;
    rc_call_set_reply(c, r);
    return 0;
}

/* Takes the replies server si holds; waits up to ms for the first if none
 * is there (0: never waits).  0, or -1 when the link went down. */
static int read_server(rconn_link_t *l, int si, int ms)
{
    rc_server_t *s = &l->srv[si];
    for (int waited = 0; s->sent.head;) {
        void *r = NULL;
        if (redisGetReplyFromReader(s->ctx, &r) != REDIS_OK) {
            snprintf(l->err, sizeof l->err, "reading from Redis at %s: %s", s->name,
                     s->ctx->errstr);
            return -1;
        }
        if (r) {
            if (take_reply(l, si, r) < 0)
                return -1;
            continue;
        }
        struct pollfd pfd = {.fd = s->ctx->fd, .events = POLLIN};
        int ready = poll(&pfd, 1, waited ? 0 : ms);
        waited = 1;
        if (ready < 0 && errno != EINTR) {
            snprintf(l->err, sizeof l->err, "poll: %s", strerror(errno));
            return -1;
        }
        if (ready <= 0)
            return 0;
        if (redisBufferRead(s->ctx) != REDIS_OK) {
            snprintf(l->err, sizeof l->err, "reading from Redis at %s: %s", s->name,
                     s->ctx->err == REDIS_ERR_EOF ? "the server closed the connection"
                                                  : s->ctx->errstr);
            return -1;
        }
    }
    return 0;
}

/* 1 (l->err set) if a call has waited for its reply past the timeout. */
static int timed_out(rconn_link_t *l)
{
    uint64_t now = mono_ms();
    for (size_t i = 0; i < l->nsrv; i++) {
        const rconn_call_t *c = l->srv[i].sent.head;
        if (c && now - c->sent_ms > RCONN_COMMAND_TIMEOUT_MS) {
            snprintf(l->err, sizeof l->err,
                     "no reply from Redis at %s within %d s (it accepts connections but does "
                     "not answer)",
                     l->srv[i].name, RCONN_COMMAND_TIMEOUT_MS / 1000);
            return 1;
        }
    }
    return 0;
}

int rconn_link_poll(rconn_link_t *l)
{
    if (!l->up || flush(l) < 0)
        return CRAWL_EREDIS;
    for (size_t i = 0; i < l->nsrv; i++)
        if (read_server(l, (int)i, 0) < 0) {
            lose(l, NULL);
            return CRAWL_EREDIS;
        }
    if (timed_out(l)) {
        lose(l, NULL);
        return CRAWL_EREDIS;
    }
    if (l->queue.head && flush(l) < 0) /* a call to send again after a library load */
        return CRAWL_EREDIS;
    return 0;
}

int rconn_link_wait(rconn_link_t *l, rconn_call_t *c)
{
    while (!rconn_call_done(c)) {
        if (c->link != l || !l->up || flush(l) < 0)
            return CRAWL_EREDIS;
        if (c->state != RC_CALL_SENT) /* held: only a resume sends it */
            return c->state == RC_CALL_QUEUED ? CRAWL_EREDIS : 0;
        if (read_server(l, c->srv, 100) < 0 || timed_out(l)) {
            lose(l, NULL);
            return CRAWL_EREDIS;
        }
    }
    return 0;
}

/* ---- the link ------------------------------------------------------------------ */

rconn_link_t *rconn_link_new(const rconn_t *r)
{
    rconn_link_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->r = r;
    if (rconn_is_cluster(r) && !(l->slot_srv = calloc(RCONN_NSLOTS, sizeof *l->slot_srv))) {
        free(l);
        return NULL;
    }
    return l;
}

static void fail_all(rc_list_t *q)
{
    while (q->head) {
        rconn_call_t *c = q->head;
        list_remove(q, c);
        rconn_call_t *of = c->own == RC_OWN_WAIT ? c->of : NULL;
        if (of) { /* a call whose reply came, its WAIT's not */
            unwait(of);
            fail(of, CRAWL_EREDIS);
        }
        unwait(c);
        if (c->own)
            settle_own(c);
        else
            fail(c, CRAWL_EREDIS);
    }
}

void rconn_link_free(rconn_link_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nsrv; i++) {
        fail_all(&l->srv[i].sent);
        if (l->srv[i].ctx)
            redisFree(l->srv[i].ctx);
    }
    fail_all(&l->queue);
    fail_all(&l->held);
    free(l->srv);
    free(l->slot_srv);
    free(l->library);
    free(l);
}

int rconn_link_set_library(rconn_link_t *l, const char *text)
{
    char *t = strdup(text);
    if (!t)
        return CRAWL_ENOMEM;
    free(l->library);
    l->library = t;
    for (size_t i = 0; i < l->nsrv; i++) {
        l->srv[i].loaded = 0;
        if (!l->srv[i].sent.head && load_library(l, &l->srv[i]) < 0) {
            lose(l, NULL);
            return CRAWL_EREDIS;
        }
    }
    return 0;
}

int rconn_link_connect(rconn_link_t *l, int hold)
{
    if (l->up)
        return 0;
    lose(l, l->err); /* (nothing open: forgets the slot table) */
    l->up = 1;
    if (server_of(l, rc_route_slot(l->r)) < 0) {
        lose(l, NULL);
        return CRAWL_EREDIS;
    }
    l->hold = hold;
    if (hold) /* the calls kept wait for rconn_link_resume */
        while (l->queue.head) {
            rconn_call_t *c = l->queue.head;
            list_remove(&l->queue, c);
            c->held = 1;
            list_insert(&l->held, c);
        }
    return flush(l) < 0 ? CRAWL_EREDIS : 0;
}

void rconn_link_resume(rconn_link_t *l)
{
    l->hold = 0;
    while (l->held.head) {
        rconn_call_t *c = l->held.head;
        list_remove(&l->held, c);
        c->held = 0;
        list_insert(&l->queue, c);
    }
    if (l->up)
        flush(l);
}

int rconn_link_up(const rconn_link_t *l)
{
    return l->up;
}

int rconn_link_is_cluster(const rconn_link_t *l)
{
    return rconn_is_cluster(l->r);
}

const char *rconn_link_error(const rconn_link_t *l)
{
    return l->err;
}

int rconn_link_send(rconn_link_t *l, rconn_call_t *c)
{
    if (c->link || c->state == RC_CALL_SENT || c->state == RC_CALL_QUEUED)
        return CRAWL_EINVAL;
    rc_call_set_reply(c, NULL);
    c->link = l;
    c->seq = ++l->seq;
    c->unrun = 0;
    c->state = RC_CALL_QUEUED;
    list_push(&l->queue, c);
    if (l->up && !l->cork)
        flush(l);
    return 0;
}

void rconn_link_cork(rconn_link_t *l)
{
    l->cork++;
}

void rconn_link_uncork(rconn_link_t *l)
{
    if (l->cork && --l->cork == 0 && l->up)
        flush(l);
}

size_t rconn_link_fds(const rconn_link_t *l, int *fds, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < l->nsrv && n < max; i++)
        if (l->srv[i].sent.head && l->srv[i].ctx)
            fds[n++] = l->srv[i].ctx->fd;
    return n;
}

size_t rconn_link_pending(const rconn_link_t *l)
{
    size_t n = l->queue.n + l->held.n;
    for (size_t i = 0; i < l->nsrv; i++)
        n += l->srv[i].sent.n;
    return n;
}

uint64_t rconn_link_round_trips(const rconn_link_t *l)
{
    return l->trips;
}

redisContext *rconn_link_context(rconn_link_t *l, int slot)
{
    if (!l->up || flush(l) < 0)
        return NULL;
    int si = server_of(l, slot);
    if (si < 0) {
        lose(l, NULL);
        return NULL;
    }
    while (l->srv[si].sent.head)
        if (read_server(l, si, 100) < 0 || timed_out(l)) {
            lose(l, NULL);
            return NULL;
        }
    return l->srv[si].ctx;
}
