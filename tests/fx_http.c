/*
 * fx_http.c -- a programmable HTTP/1.1 server on 127.0.0.1 for tests.
 *
 * DESIGN: libmicrohttpd (Debian's libmicrohttpd-dev) with one thread per
 * connection, so a delayed or slow response never holds up the others and
 * keep-alive, chunked encoding and HEAD are handled by a mature server rather
 * than by test code.  Routes map an exact path (with query) to a response;
 * a dynamic handler may answer first (generated sites).  Every request is
 * counted per path in a chained hash table guarded by `lock`; the raw request
 * URI comes from MHD's URI log callback so the query string is kept as sent.
 *
 * Many hosts (fx_http_start_hosts): MHD takes one listening socket per
 * daemon, so the server opens its own on 127.0.1.1 .. 127.0.1.n (one port)
 * and an acceptor thread hands each accepted connection to one daemon
 * without a listening socket (MHD_add_connection); a request's host is the
 * local address of its connection.  Every request is also logged (arrival
 * and answer times, host, path) and counted as pending per host from its
 * arrival until just before its response is queued; a route with `hold`
 * waits on `released` (a condition variable on CLOCK_MONOTONIC) first.
 */
#include "fixtures.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NBUCKETS 4096

typedef struct entry {
    struct entry *next;
    char *path;
    unsigned hits;
    int has_route;
    fx_route_t route; /* strings owned by the entry */
} entry_t;

struct fx_http {
    struct MHD_Daemon *d;
    int port;
    char base[64];
    pthread_mutex_t lock; /* guards everything below */
    entry_t *bucket[NBUCKETS];
    size_t total, distinct;
    unsigned cur, max_cur;
    int stopping; /* set by fx_http_stop: delays end early */
    fx_http_fn fn;
    void *ud;
    fx_http_req_t *log; /* every request, in arrival order */
    size_t nlog, caplog;
    unsigned pending[FX_HTTP_MAX_HOSTS], max_pending[FX_HTTP_MAX_HOSTS];
    unsigned all_pending, all_max_pending;
    int released;               /* fx_http_release was called */
    pthread_cond_t wake;        /* released or stopping (CLOCK_MONOTONIC) */
    unsigned nhosts;            /* 0: fx_http_start's one address; else its addresses */
    unsigned nports;            /* ports on each address (1 but for fx_http_start_grid) */
    unsigned nlfd;              /* nhosts * nports: the origins */
    int lfd[FX_HTTP_MAX_HOSTS]; /* listening sockets: port k of address a at k * nhosts + a */
    int ports[FX_HTTP_MAX_HOSTS];
    pthread_t acceptor;
    char (*bases)[64]; /* nlfd base URLs */
};

/* One request's state (MHD's req_cls): its log entry and raw path. */
typedef struct req {
    size_t logi;
    int logged;   /* logi is set */
    int answered; /* counted out of pending */
    unsigned host;
    char path[];
} req_t;

static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % NBUCKETS;
}

/* lock held */
static entry_t *lookup(fx_http_t *h, const char *path, int create)
{
    unsigned b = hash_str(path);
    for (entry_t *e = h->bucket[b]; e; e = e->next)
        if (strcmp(e->path, path) == 0)
            return e;
    if (!create)
        return NULL;
    entry_t *e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(path))) {
        free(e);
        return NULL;
    }
    e->next = h->bucket[b];
    h->bucket[b] = e;
    return e;
}

static char *dup_or_null(const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void route_free(fx_route_t *r)
{
    free((char *)r->content_type);
    free((char *)r->body);
    free((char *)r->headers);
    memset(r, 0, sizeof *r);
}

void fx_http_set(fx_http_t *h, const char *path, const fx_route_t *r)
{
    pthread_mutex_lock(&h->lock);
    entry_t *e = lookup(h, path, 1);
    if (e) {
        route_free(&e->route);
        e->route = *r;
        size_t blen = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
        e->route.body = dup_or_null(r->body, blen);
        e->route.body_len = blen;
        e->route.content_type =
            r->content_type ? dup_or_null(r->content_type, strlen(r->content_type)) : NULL;
        e->route.headers = r->headers ? dup_or_null(r->headers, strlen(r->headers)) : NULL;
        e->has_route = 1;
    }
    pthread_mutex_unlock(&h->lock);
}

void fx_http_page(fx_http_t *h, const char *path, const char *html)
{
    fx_route_t r = {.status = 200, .body = html};
    fx_http_set(h, path, &r);
}

void fx_http_redirect(fx_http_t *h, const char *path, int status, const char *location)
{
    char hdr[2048];
    snprintf(hdr, sizeof hdr, "Location: %s\n", location);
    fx_route_t r = {.status = status, .headers = hdr, .body = "moved\n"};
    fx_http_set(h, path, &r);
}

void fx_http_set_handler(fx_http_t *h, fx_http_fn fn, void *ud)
{
    pthread_mutex_lock(&h->lock);
    h->fn = fn;
    h->ud = ud;
    pthread_mutex_unlock(&h->lock);
}

/* Streaming body: the route's body `repeat` times, optionally slowly. */
typedef struct stream {
    char *body;
    size_t len, repeat;
    unsigned chunk_delay_ms;
} stream_t;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_t *s = cls;
    uint64_t total = (uint64_t)s->len * s->repeat;
    if (pos >= total)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (s->chunk_delay_ms && pos > 0)
        usleep(s->chunk_delay_ms * 1000u);
    size_t off = (size_t)(pos % s->len);
    size_t n = s->len - off;
    if (n > max)
        n = max;
    if (s->chunk_delay_ms && n > 1024)
        n = 1024;
    memcpy(buf, s->body + off, n);
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_t *s = cls;
    free(s->body);
    free(s);
}

static void add_headers(struct MHD_Response *resp, const char *headers)
{
    if (!headers)
        return;
    char *copy = strdup(headers), *save = NULL;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        size_t vl = strlen(v);
        if (vl && v[vl - 1] == '\r')
            v[vl - 1] = '\0';
        MHD_add_response_header(resp, line, v);
    }
    free(copy);
}

static struct MHD_Response *build(const fx_route_t *r)
{
    struct MHD_Response *resp;
    size_t repeat = r->repeat ? r->repeat : 1;
    if (repeat == 1 && !r->chunk_delay_ms && !r->chunked) {
        resp = MHD_create_response_from_buffer(r->body_len, (void *)(r->body ? r->body : ""),
                                               MHD_RESPMEM_MUST_COPY);
    } else {
        stream_t *s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        s->len = r->body_len ? r->body_len : 1;
        s->body = dup_or_null(r->body ? r->body : " ", s->len);
        s->repeat = repeat;
        s->chunk_delay_ms = r->chunk_delay_ms;
        resp = MHD_create_response_from_callback(r->chunked ? MHD_SIZE_UNKNOWN
                                                            : (uint64_t)s->len * repeat,
                                                 64 * 1024, stream_read, s, stream_free);
    }
    if (!resp)
        return NULL;
    MHD_add_response_header(resp, "Content-Type",
                            r->content_type ? r->content_type : "text/html; charset=utf-8");
    add_headers(resp, r->headers);
    return resp;
}

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *con)
{
    (void)cls;
    (void)con;
    const char *u = uri ? uri : "/";
    req_t *q = calloc(1, sizeof *q + strlen(u) + 1);
    if (q)
        memcpy(q->path, u, strlen(u) + 1);
    return q;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The index of the local address con came to (0 for a one-host server). */
static unsigned host_of(const fx_http_t *h, struct MHD_Connection *con)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (!h->nhosts || !ci || getsockname(ci->connect_fd, (struct sockaddr *)&a, &len) != 0 ||
        a.sin_family != AF_INET)
        return 0;
    uint32_t ip = ntohl(a.sin_addr.s_addr), first = (127u << 24) | (1u << 8) | 1u;
    return ip >= first && ip - first < h->nhosts ? ip - first : 0;
}

/* lock held: logs q's arrival and counts it pending. */
static void log_arrival(fx_http_t *h, req_t *q)
{
    if (h->nlog == h->caplog) {
        size_t cap = h->caplog ? 2 * h->caplog : 1024;
        fx_http_req_t *n = realloc(h->log, cap * sizeof *n);
        if (!n)
            return;
        h->log = n;
        h->caplog = cap;
    }
    fx_http_req_t *l = &h->log[h->nlog];
    memset(l, 0, sizeof *l);
    l->arrived_us = now_us();
    l->host = q->host;
    snprintf(l->path, sizeof l->path, "%s", q->path);
    q->logi = h->nlog++;
    q->logged = 1;
    if (++h->pending[q->host] > h->max_pending[q->host])
        h->max_pending[q->host] = h->pending[q->host];
    if (++h->all_pending > h->all_max_pending)
        h->all_max_pending = h->all_pending;
}

/* q is about to be answered (or dropped): out of pending, time logged. */
static void log_answer(fx_http_t *h, req_t *q)
{
    pthread_mutex_lock(&h->lock);
    if (q && q->logged && !q->answered) {
        q->answered = 1;
        h->log[q->logi].answered_us = now_us();
        h->pending[q->host]--;
        h->all_pending--;
    }
    pthread_mutex_unlock(&h->lock);
}

/* A held route: waits until fx_http_release, fx_http_stop or the cap. */
static void hold(fx_http_t *h)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += FX_HTTP_HOLD_MAX_MS / 1000u;
    pthread_mutex_lock(&h->lock);
    while (!h->released && !h->stopping)
        if (pthread_cond_timedwait(&h->wake, &h->lock, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&h->lock);
}

static void completed(void *cls, struct MHD_Connection *con, void **req_cls,
                      enum MHD_RequestTerminationCode code)
{
    (void)con;
    (void)code;
    fx_http_t *h = cls;
    if (*req_cls) {
        log_answer(h, *req_cls);
        pthread_mutex_lock(&h->lock);
        if (h->cur)
            h->cur--;
        pthread_mutex_unlock(&h->lock);
    }
    free(*req_cls);
    *req_cls = NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *con, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req_cls)
{
    (void)url;
    (void)method;
    (void)version;
    (void)upload;
    fx_http_t *h = cls;
    req_t *q = *req_cls;
    const char *path = q ? q->path : "/";
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (q)
        q->host = host_of(h, con);
    fx_route_t r = {0};
    int found = 0;
    pthread_mutex_lock(&h->lock);
    if (q && !q->logged)
        log_arrival(h, q);
    entry_t *e = lookup(h, path, 1);
    if (e) {
        e->hits++;
        if (e->hits == 1)
            h->distinct++;
    }
    h->total++;
    if (++h->cur > h->max_cur)
        h->max_cur = h->cur;
    fx_http_fn fn = h->fn;
    void *ud = h->ud;
    if (e && e->has_route) {
        r = e->route;
        found = 1;
    }
    struct MHD_Response *resp = NULL;
    if (found)
        resp = build(&r); /* copies the body while the lock keeps the route alive */
    pthread_mutex_unlock(&h->lock);
    if (!found && fn) {
        fx_route_t d = {0};
        if (fn(ud, path, &d) == 0) {
            if (d.body && !d.body_len)
                d.body_len = strlen(d.body);
            r = d;
            found = 1;
            resp = build(&d);
        }
    }
    if (!found) {
        r.status = 404;
        fx_route_t nf = {.status = 404, .body = "not found\n", .body_len = 10};
        resp = build(&nf);
    }
    if (!resp) {
        log_answer(h, q);
        return MHD_NO;
    }
    if (r.hold)
        hold(h);
    for (unsigned waited = 0;
         waited < r.delay_ms && !__atomic_load_n(&h->stopping, __ATOMIC_RELAXED); waited += 10)
        usleep(10000);
    log_answer(h, q);
    enum MHD_Result ret = MHD_queue_response(con, r.status ? (unsigned)r.status : 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A server's state, no daemon yet; NULL on OOM. */
static fx_http_t *http_new(void)
{
    fx_http_t *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    return h;
}

static void http_free(fx_http_t *h)
{
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h->log);
    free(h->bases);
    free(h);
}

fx_http_t *fx_http_start(void)
{
    fx_http_t *h = http_new();
    if (!h)
        return NULL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR, &a,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, h, MHD_OPTION_NOTIFY_COMPLETED,
                            completed, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!h->d) {
        fx_set_error("libmicrohttpd could not start on 127.0.0.1");
        fprintf(stderr, "fx_http_start: %s\n", fx_error());
        http_free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    snprintf(h->base, sizeof h->base, "http://127.0.0.1:%d", h->port);
    return h;
}

/* A non-blocking listening socket on 127.0.1.<i+1>:port (0: any free
 * port); -1 on failure. */
static int listen_on(unsigned i, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl((127u << 24) | (1u << 8) | (i + 1));
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4096) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Opens the listening sockets of port k: one on each of h->nhosts
 * addresses, on one port (tries a few ports: one may be taken on another
 * 127.0.1.x address).  0 or -1. */
static int listen_port(fx_http_t *h, unsigned k)
{
    int *fd = h->lfd + k * h->nhosts;
    for (int attempt = 0; attempt < 20; attempt++) {
        unsigned n = 0;
        fd[n] = listen_on(0, 0);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        if (fd[0] < 0 || getsockname(fd[0], (struct sockaddr *)&a, &len) != 0)
            return -1;
        h->ports[k] = ntohs(a.sin_port);
        for (n = 1; n < h->nhosts; n++)
            if ((fd[n] = listen_on(n, h->ports[k])) < 0)
                break;
        if (n == h->nhosts)
            return 0;
        while (n > 0)
            close(fd[--n]);
    }
    return -1;
}

/* Every port's sockets (lfd[k * nhosts + a]): 0 or -1 (none left open). */
static int listen_all(fx_http_t *h)
{
    for (unsigned k = 0; k < h->nports; k++)
        if (listen_port(h, k) != 0) {
            for (unsigned i = 0; i < k * h->nhosts; i++)
                close(h->lfd[i]);
            return -1;
        }
    h->port = h->ports[0];
    return 0;
}

/* The acceptor: every connection on any listening socket goes to h->d. */
static void *accept_loop(void *arg)
{
    fx_http_t *h = arg;
    struct pollfd p[FX_HTTP_MAX_HOSTS];
    for (unsigned i = 0; i < h->nlfd; i++)
        p[i] = (struct pollfd){.fd = h->lfd[i], .events = POLLIN};
    while (!__atomic_load_n(&h->stopping, __ATOMIC_RELAXED)) {
        if (poll(p, h->nlfd, 50) <= 0)
            continue;
        for (unsigned i = 0; i < h->nlfd; i++) {
            if (!(p[i].revents & POLLIN))
                continue;
            for (int k = 0; k < 256; k++) { /* bounded: the others get their turn */
                struct sockaddr_in peer;
                socklen_t len = sizeof peer;
                int c = accept4(h->lfd[i], (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
                if (c < 0)
                    break;
                MHD_add_connection(h->d, c, (struct sockaddr *)&peer,
                                   len); /* closes c on failure */
            }
        }
    }
    return NULL;
}

fx_http_t *fx_http_start_hosts(unsigned n)
{
    return fx_http_start_grid(n, 1);
}

fx_http_t *fx_http_start_grid(unsigned n, unsigned ports)
{
    if (n == 0 || ports == 0 || n * ports > FX_HTTP_MAX_HOSTS) {
        fx_set_error("fx_http_start_grid: %u hosts x %u ports (1..%d)", n, ports,
                     FX_HTTP_MAX_HOSTS);
        return NULL;
    }
    fx_http_t *h = http_new();
    if (!h)
        return NULL;
    h->nhosts = n;
    h->nports = ports;
    h->nlfd = n * ports;
    h->bases = calloc(h->nlfd, sizeof *h->bases);
    if (!h->bases || listen_all(h) != 0) {
        fx_set_error("cannot listen on 127.0.1.1..127.0.1.%u on one port: %s", n, strerror(errno));
        http_free(h);
        return NULL;
    }
    h->d =
        MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                             MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
                         0, NULL, NULL, answer, h, MHD_OPTION_URI_LOG_CALLBACK, uri_log, h,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000, MHD_OPTION_END);
    if (!h->d || pthread_create(&h->acceptor, NULL, accept_loop, h) != 0) {
        fx_set_error("libmicrohttpd could not start on %u loopback hosts", n);
        if (h->d)
            MHD_stop_daemon(h->d);
        for (unsigned i = 0; i < h->nlfd; i++)
            close(h->lfd[i]);
        http_free(h);
        return NULL;
    }
    for (unsigned i = 0; i < h->nlfd; i++) /* origin i: address i / ports, port i % ports */
        snprintf(h->bases[i], sizeof h->bases[i], "http://127.0.1.%u:%d", i / ports + 1,
                 h->ports[i % ports]);
    snprintf(h->base, sizeof h->base, "%s", h->bases[0]);
    return h;
}

const char *fx_http_host_base(const fx_http_t *h, unsigned i)
{
    if (!h->nhosts)
        return i == 0 ? h->base : NULL;
    return i < h->nlfd ? h->bases[i] : NULL;
}

unsigned fx_http_nhosts(const fx_http_t *h)
{
    return h->nhosts ? h->nhosts : 1;
}

size_t fx_http_log(fx_http_t *h, fx_http_req_t **out)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->nlog;
    *out = n ? malloc(n * sizeof **out) : NULL;
    if (*out)
        memcpy(*out, h->log, n * sizeof **out);
    else
        n = 0;
    pthread_mutex_unlock(&h->lock);
    return n;
}

unsigned fx_http_pending(fx_http_t *h, int host)
{
    pthread_mutex_lock(&h->lock);
    unsigned n = host < 0 ? h->all_pending : host < FX_HTTP_MAX_HOSTS ? h->pending[host] : 0;
    pthread_mutex_unlock(&h->lock);
    return n;
}

unsigned fx_http_max_pending(fx_http_t *h, int host)
{
    pthread_mutex_lock(&h->lock);
    unsigned n = host < 0                   ? h->all_max_pending
                 : host < FX_HTTP_MAX_HOSTS ? h->max_pending[host]
                                            : 0;
    pthread_mutex_unlock(&h->lock);
    return n;
}

void fx_http_release(fx_http_t *h)
{
    pthread_mutex_lock(&h->lock);
    h->released = 1;
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

int fx_http_port(const fx_http_t *h)
{
    return h->port;
}

const char *fx_http_base(const fx_http_t *h)
{
    return h->base;
}

unsigned fx_http_hits(fx_http_t *h, const char *path)
{
    pthread_mutex_lock(&h->lock);
    entry_t *e = lookup(h, path, 0);
    unsigned n = e ? e->hits : 0;
    pthread_mutex_unlock(&h->lock);
    return n;
}

size_t fx_http_total(fx_http_t *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->total;
    pthread_mutex_unlock(&h->lock);
    return n;
}

size_t fx_http_distinct(fx_http_t *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->distinct;
    pthread_mutex_unlock(&h->lock);
    return n;
}

unsigned fx_http_max_concurrent(fx_http_t *h)
{
    pthread_mutex_lock(&h->lock);
    unsigned n = h->max_cur;
    pthread_mutex_unlock(&h->lock);
    return n;
}

void fx_http_foreach(fx_http_t *h, void (*fn)(void *ud, const char *path, unsigned hits), void *ud)
{
    pthread_mutex_lock(&h->lock);
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (entry_t *e = h->bucket[b]; e; e = e->next)
            if (e->hits)
                fn(ud, e->path, e->hits);
    pthread_mutex_unlock(&h->lock);
}

void fx_http_stop(fx_http_t *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    __atomic_store_n(&h->stopping, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
    if (h->nhosts) {
        pthread_join(h->acceptor, NULL);
        for (unsigned i = 0; i < h->nlfd; i++)
            close(h->lfd[i]);
    }
    if (h->d)
        MHD_stop_daemon(h->d);
    for (unsigned b = 0; b < NBUCKETS; b++) {
        entry_t *e = h->bucket[b];
        while (e) {
            entry_t *n = e->next;
            route_free(&e->route);
            free(e->path);
            free(e);
            e = n;
        }
    }
    http_free(h);
}
