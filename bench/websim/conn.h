/*
 * conn.h -- a connection of the server (conn.c: its states, requests,
 * timers, the log) and the server state it works on, which server.c (loop,
 * listeners, stats) owns.
 */
#ifndef WEBSIM_CONN_H
#define WEBSIM_CONN_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "model.h"
#include "render.h"
#include "server.h"

enum { C_FREE, C_TLS, C_READ, C_WAIT, C_WRITE, C_HOLD };

typedef struct conn {
    uint8_t state, tls, keep, head_only, accept, flags_tls, held_dark;
    void *ssl;        /* SSL *, NULL for HTTP */
    uint32_t ip;      /* address index connected to (WS_NOHOST: another address) */
    uint64_t id;      /* connection number */
    uint32_t nreq;    /* requests begun on it */
    uint64_t last_ms; /* last activity (monotonic) */
    uint64_t due_ms;  /* WAIT: when to answer; HOLD: when to give up */
    uint32_t heap_at; /* index in the timer heap + 1, 0: not in it */
    char *in;         /* IN_CAP bytes while open */
    size_t inlen;
    ws_buf_t out;
    size_t outoff;
    uint64_t arrive_us; /* the current request's arrival */
    uint64_t write_us;  /* when the last write of its answer began */
    char flags[8];
    ws_plan_t *plan; /* the current request's plan */
} conn_t;

typedef struct srv {
    const ws_cfg_t *c;
    const ws_serve_opts_t *o;
    ws_render_t *render;
    ws_tls_t *tls;
    int ep, lfd[2];
    FILE *log;
    conn_t *conns; /* by fd */
    uint32_t nfd, open;
    int *heap; /* fds, min-heap on conns[fd].due_ms */
    uint32_t nheap, capheap;
    int dark;
    uint64_t n_requests, n_conns, n_tls_full, n_tls_resumed, n_bytes, n_aborted;
} srv_t;

/* The log's clock (CLOCK_REALTIME, µs) and the timers' (CLOCK_MONOTONIC, ms). */
static inline uint64_t srv_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t srv_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* conn.c */
void srv_conn_start(srv_t *s, int fd, int tls, uint32_t local_addr);
void srv_conn_event(srv_t *s, int fd, uint32_t events);
int srv_timer_wait(srv_t *s); /* epoll timeout until the next timer, ms */
void srv_timers_run(srv_t *s, uint64_t now_ms);
void srv_sweep(srv_t *s, uint64_t now_ms); /* closes idle connections */
void srv_close_all(srv_t *s);

#endif
