/*
 * server.h -- websim's HTTP/HTTPS server: one process, one epoll loop
 * (server.c), TLS with per-domain certificates minted from a local CA (tls.c).
 */
#ifndef WEBSIM_SERVER_H
#define WEBSIM_SERVER_H

#include <stdint.h>

#include "model.h"

typedef struct ws_serve_opts {
    const char *bind;    /* IPv4 address to listen on; "0.0.0.0" only where every
                            interface address is loopback (a private netns) */
    uint16_t http_port;  /* 80 */
    uint16_t https_port; /* 443; 0: no HTTPS */
    const char *ca_cert; /* PEM CA certificate that signs the hosts' certificates */
    const char *ca_key;  /* its PEM private key */
    const char *log;     /* request log (TSV, one line a request), NULL: none */
    const char *stats;   /* counters, rewritten every second, NULL: none */
    const char *pidfile; /* written once listening, NULL: none */
    double dark_share;   /* hosts that go dark on SIGUSR1 (back on SIGUSR2) */
    uint32_t max_conns;  /* connections at once (more wait in the backlog) */
    uint32_t idle_ms;    /* an idle keep-alive connection is closed after this */
    uint32_t hold_ms;    /* a black-holed connection is closed after this */
} ws_serve_opts_t;

/* Serves until SIGINT/SIGTERM; 0, or -1 with the reason on stderr. */
int ws_serve(const ws_cfg_t *c, const ws_serve_opts_t *o);

/* TLS (tls.c) */
typedef struct ws_tls ws_tls_t;
/* A server context whose certificates (one per registered domain, on demand,
 * cached) the CA signs; NULL with the reason in err. */
ws_tls_t *ws_tls_open(const ws_cfg_t *c, const char *ca_cert, const char *ca_key, char *err,
                      size_t errcap);
void ws_tls_close(ws_tls_t *t);
/* A new SSL object (an SSL *, as void * to keep OpenSSL out of this header). */
void *ws_tls_new(ws_tls_t *t, int fd);

#endif
