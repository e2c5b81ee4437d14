/*
 * metrics_http.h -- the HTTP server of a /metrics endpoint (libmicrohttpd,
 * one thread of its own): GET or HEAD /metrics answers what a render
 * function writes, in the Prometheus text format; any other path 404, any
 * other method 405.
 *
 * It listens on exactly the address given (ADDR:PORT: an IPv4 address, a
 * bracketed IPv6 address or a host name resolved once at the start, and a
 * port 1..65535), nothing else.  Its thread starts with every signal
 * blocked, so SIGINT/SIGTERM reach the thread that waits for them.
 */
#ifndef CRAWLER_METRICS_HTTP_H
#define CRAWLER_METRICS_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#include "metrics_text.h"

/* Writes one scrape's text into t (empty, the caller frees it) and returns
 * the HTTP status to answer (200; 503 with a short text says the data is
 * not there).  Runs on the server's thread, one scrape at a time. */
typedef int (*metrics_render_t)(void *ud, metrics_text_t *t);

typedef struct metrics_server metrics_server_t;

/* Parses "ADDR:PORT" into *ss (*len its size): 0, or -1 with why in err. */
int metrics_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen);
/* A cli_opt_t .check for an ADDR:PORT value: 0, or -1 after printing
 * "crawler CMD: bad value 'V' for --OPT: ..." to stderr. */
int metrics_check_addr(const char *cmd, const char *opt, const char *v);

/* Binds addr (ADDR:PORT), listens, and serves /metrics with render(ud) on
 * a thread of its own until metrics_server_stop.  NULL with why in err
 * ("127.0.0.1:9100: Address already in use"). */
metrics_server_t *metrics_server_start(const char *addr, metrics_render_t render, void *ud,
                                       char *err, size_t errlen);
/* Stops the server (a scrape being answered is finished first) and frees
 * it.  Accepts NULL. */
void metrics_server_stop(metrics_server_t *s);

#endif
