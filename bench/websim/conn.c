/*
 * conn.c -- a websim connection's life (conn.h): TLS handshake,
 * reading a request head, waiting the host's latency, writing the answer,
 * keep-alive, holding black-holed and dark hosts; the timer heap; the log.
 *
 * DESIGN: conns[fd] is the only state of a connection; its in buffer (8 KiB,
 * a request head must fit) is allocated at accept and freed at close.  The
 * heap holds every connection in WAIT or HOLD, keyed by due_ms.  A request is
 * logged exactly once: when its answer is written, or when the connection
 * closes before that (flag c).  epoll is level-triggered; while waiting or
 * holding only EPOLLRDHUP is asked, so a client that leaves is seen at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "conn.h"

#define IN_CAP 8192

/* ---- timer heap ------------------------------------------------------------------- */

static int less(srv_t *s, uint32_t a, uint32_t b)
{
    return s->conns[s->heap[a]].due_ms < s->conns[s->heap[b]].due_ms;
}

static void swap_at(srv_t *s, uint32_t a, uint32_t b)
{
    int t = s->heap[a];
    s->heap[a] = s->heap[b], s->heap[b] = t;
    s->conns[s->heap[a]].heap_at = a + 1;
    s->conns[s->heap[b]].heap_at = b + 1;
}

static void sift(srv_t *s, uint32_t i)
{
    while (i && less(s, i, (i - 1) / 2))
        swap_at(s, i, (i - 1) / 2), i = (i - 1) / 2;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && less(s, l, m))
            m = l;
        if (r < s->nheap && less(s, r, m))
            m = r;
        if (m == i)
            return;
        swap_at(s, i, m);
        i = m;
    }
}

static int heap_push(srv_t *s, int fd)
{
    if (s->nheap == s->capheap) {
        uint32_t cap = s->capheap ? s->capheap * 2 : 1024;
        int *h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return -1;
        s->heap = h, s->capheap = cap;
    }
    s->heap[s->nheap] = fd;
    s->conns[fd].heap_at = ++s->nheap;
    sift(s, s->nheap - 1);
    return 0;
}

static void heap_remove(srv_t *s, int fd)
{
    uint32_t i = s->conns[fd].heap_at;
    if (!i--)
        return;
    s->conns[fd].heap_at = 0;
    if (i != --s->nheap) {
        s->heap[i] = s->heap[s->nheap];
        s->conns[s->heap[i]].heap_at = i + 1;
        sift(s, i);
    }
}

int srv_timer_wait(srv_t *s)
{
    if (!s->nheap)
        return 100;
    uint64_t now = srv_mono_ms(), due = s->conns[s->heap[0]].due_ms;
    return due <= now ? 0 : due - now > 100 ? 100 : (int)(due - now);
}

/* ---- connections ------------------------------------------------------------------ */

static void want(srv_t *s, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint32_t)fd};
    epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev);
}

/* One line of the request log; end_us: when it ended (its answer's last
 * write began, or the connection went). */
static void log_request(srv_t *s, conn_t *c, int status, size_t bytes, uint64_t end_us)
{
    char host[WS_NAME_MAX] = "-";
    if (!s->log)
        return;
    if (c->plan && c->plan->host != WS_NOHOST)
        ws_host_name(s->c, c->plan->host, host, sizeof host);
    fprintf(s->log, "%llu\t%llu\t%s\t%s\t%s\t%d\t%zu\t%llu\t%u\t%s\n",
            (unsigned long long)c->arrive_us, (unsigned long long)end_us, c->tls ? "https" : "http",
            host, c->plan ? c->plan->path : "-", status, bytes, (unsigned long long)c->id, c->nreq,
            c->flags[0] ? c->flags : "-");
}

static void conn_close(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    if (c->state == C_WAIT || c->state == C_WRITE || c->state == C_HOLD) {
        if (!c->held_dark && c->state != C_HOLD)
            s->n_aborted++;
        size_t n = strlen(c->flags);
        if (n + 1 < sizeof c->flags)
            c->flags[n] = 'c', c->flags[n + 1] = '\0';
        log_request(s, c, c->plan && c->state != C_HOLD ? c->plan->status : 0, 0, srv_now_us());
    }
    heap_remove(s, fd);
    epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
    if (c->ssl)
        SSL_free(c->ssl);
    close(fd);
    free(c->in);
    free(c->out.p);
    free(c->plan);
    memset(c, 0, sizeof *c);
    s->open--;
}

void srv_conn_start(srv_t *s, int fd, int tls, uint32_t local_addr)
{
    conn_t *c = &s->conns[fd];
    memset(c, 0, sizeof *c);
    c->in = malloc(IN_CAP);
    c->plan = malloc(sizeof *c->plan);
    c->tls = (uint8_t)tls;
    c->ip = ws_ip_index(local_addr);
    c->id = ++s->n_conns;
    c->last_ms = srv_mono_ms();
    s->open++;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint32_t)fd};
    if (!c->in || !c->plan || epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        c->state = C_READ;
        conn_close(s, fd);
        return;
    }
    c->plan->host = WS_NOHOST;
    snprintf(c->plan->path, sizeof c->plan->path, "-");
    if (c->ip != WS_NOHOST && c->ip < (s->c->hosts + s->c->hosts_per_ip - 1) / s->c->hosts_per_ip &&
        ws_ip_blackhole(s->c, c->ip)) {
        c->state = C_HOLD;
        c->arrive_us = srv_now_us();
        snprintf(c->flags, sizeof c->flags, "b");
        c->due_ms = c->last_ms + s->o->hold_ms;
        heap_push(s, fd);
        want(s, fd, EPOLLRDHUP);
        return;
    }
    if (tls) {
        c->ssl = ws_tls_new(s->tls, fd);
        c->state = C_TLS;
        if (!c->ssl)
            conn_close(s, fd);
        return;
    }
    c->state = C_READ;
}

static void begin_read(srv_t *s, int fd);

/* The answer is written: log it, then the next request or close. */
static void written(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    s->n_requests++;
    s->n_bytes += c->out.len;
    log_request(s, c, c->plan->status, c->out.len, c->write_us);
    c->flags[0] = '\0';
    c->outoff = 0;
    c->out.len = 0;
    if (c->out.cap > 262144) {
        free(c->out.p);
        c->out = (ws_buf_t){0};
    }
    if (!c->keep) {
        c->state = C_READ; /* nothing pending: no abort logged */
        conn_close(s, fd);
        return;
    }
    c->state = C_READ;
    want(s, fd, EPOLLIN);
    begin_read(s, fd);
}

static void do_write(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    while (c->outoff < c->out.len) {
        size_t n = c->out.len - c->outoff;
        ssize_t w;
        /* the end a client can have seen is no earlier than the start of
         * the write that completes the answer: stamped before it, so that a
         * server descheduled right after a write does not log a late end */
        uint64_t t = srv_now_us();
        if (c->ssl) {
            int r = SSL_write(c->ssl, c->out.p + c->outoff, n > 65536 ? 65536 : (int)n);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                    want(s, fd, e == SSL_ERROR_WANT_WRITE ? EPOLLOUT : EPOLLIN);
                    return;
                }
                conn_close(s, fd);
                return;
            }
            w = r;
        } else {
            w = write(fd, c->out.p + c->outoff, n);
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                want(s, fd, EPOLLOUT);
                return;
            }
            if (w <= 0) {
                conn_close(s, fd);
                return;
            }
        }
        c->outoff += (size_t)w;
        c->write_us = t;
        c->last_ms = srv_mono_ms();
    }
    written(s, fd);
}

/* The plan's answer is due: render and write it. */
static void answer(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    c->state = C_WRITE;
    if (c->plan->status == 0) { /* a request we could not plan: already rendered */
        do_write(s, fd);
        return;
    }
    if (ws_render(s->render, c->plan, c->accept, c->head_only, c->keep, &c->out) < 0) {
        conn_close(s, fd);
        return;
    }
    do_write(s, fd);
}

void srv_timers_run(srv_t *s, uint64_t now)
{
    while (s->nheap && s->conns[s->heap[0]].due_ms <= now) {
        int fd = s->heap[0];
        heap_remove(s, fd);
        if (s->conns[fd].state == C_WAIT)
            answer(s, fd);
        else
            conn_close(s, fd);
    }
}

/* Parses the head at c->in[0..end) into the plan; 0, or -1 (bad request). */
int srv_parse_head(srv_t *s, conn_t *c, size_t end);

static void request(srv_t *s, int fd, size_t head_len)
{
    conn_t *c = &s->conns[fd];
    c->arrive_us = srv_now_us();
    c->nreq++;
    if (c->nreq == 1 && c->ssl)
        snprintf(c->flags, sizeof c->flags, "%s", SSL_session_reused(c->ssl) ? "R" : "T");
    int bad = srv_parse_head(s, c, head_len);
    memmove(c->in, c->in + head_len, c->inlen - head_len);
    c->inlen -= head_len;
    if (bad) {
        c->keep = 0;
        c->plan->status = 0;
        c->out.len = 0;
        ws_buf_printf(&c->out, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                      bad == 2 ? "421 Misdirected Request" : "400 Bad Request");
        c->state = C_WRITE;
        do_write(s, fd);
        return;
    }
    if (s->dark && s->o->dark_share > 0 &&
        ws_hash(s->c->seed, 0xda4c, c->plan->host, 0) % 1000000 <
            (uint64_t)(s->o->dark_share * 1e6)) {
        c->state = C_HOLD;
        c->held_dark = 1;
        size_t n = strlen(c->flags);
        snprintf(c->flags + n, sizeof c->flags - n, "d");
        c->due_ms = srv_mono_ms() + s->o->hold_ms;
    } else {
        c->state = C_WAIT;
        c->due_ms = srv_mono_ms() + c->plan->delay_ms;
    }
    heap_push(s, fd);
    want(s, fd, EPOLLRDHUP);
}

/* Reads what is there; starts a request when a whole head is in. */
static void begin_read(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    for (;;) {
        char *e = c->inlen >= 4 ? memmem(c->in, c->inlen, "\r\n\r\n", 4) : NULL;
        if (e) {
            request(s, fd, (size_t)(e - c->in) + 4);
            return;
        }
        if (c->inlen == IN_CAP) {
            conn_close(s, fd);
            return;
        }
        ssize_t n;
        if (c->ssl) {
            int r = SSL_read(c->ssl, c->in + c->inlen, (int)(IN_CAP - c->inlen));
            if (r <= 0) {
                int err = SSL_get_error(c->ssl, r);
                if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
                    want(s, fd, err == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT);
                    return;
                }
                conn_close(s, fd);
                return;
            }
            n = r;
        } else {
            n = read(fd, c->in + c->inlen, IN_CAP - c->inlen);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            if (n <= 0) {
                conn_close(s, fd);
                return;
            }
        }
        c->inlen += (size_t)n;
        c->last_ms = srv_mono_ms();
    }
}

static void handshake(srv_t *s, int fd)
{
    conn_t *c = &s->conns[fd];
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        if (SSL_session_reused(c->ssl))
            s->n_tls_resumed++;
        else
            s->n_tls_full++;
        c->state = C_READ;
        want(s, fd, EPOLLIN);
        begin_read(s, fd);
        return;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        want(s, fd, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT);
    else
        conn_close(s, fd);
}

void srv_conn_event(srv_t *s, int fd, uint32_t events)
{
    conn_t *c = &s->conns[fd];
    if (c->state == C_FREE)
        return;
    if ((events & (EPOLLHUP | EPOLLERR)) ||
        ((events & EPOLLRDHUP) && (c->state == C_WAIT || c->state == C_HOLD))) {
        conn_close(s, fd);
        return;
    }
    switch (c->state) {
    case C_TLS:
        handshake(s, fd);
        break;
    case C_READ:
        begin_read(s, fd);
        break;
    case C_WRITE:
        do_write(s, fd);
        break;
    }
}

void srv_sweep(srv_t *s, uint64_t now)
{
    for (uint32_t fd = 0; fd < s->nfd && s->open; fd++) {
        conn_t *c = &s->conns[fd];
        if ((c->state == C_READ || c->state == C_TLS) && now - c->last_ms > s->o->idle_ms)
            conn_close(s, (int)fd);
    }
}

void srv_close_all(srv_t *s)
{
    for (uint32_t fd = 0; s->conns && fd < s->nfd && s->open; fd++)
        if (s->conns[fd].state != C_FREE)
            conn_close(s, (int)fd);
}
