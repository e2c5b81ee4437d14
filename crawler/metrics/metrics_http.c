/*
 * metrics_http.c -- a /metrics endpoint's HTTP server (metrics_http.h).
 *
 * DESIGN: the listening socket is made here (socket, bind, listen), so a
 * bad address or a port in use is a clear errno message before anything
 * else starts; libmicrohttpd then serves it from one internal thread
 * (MHD_USE_AUTO_INTERNAL_THREAD: epoll or poll), so the render function
 * runs one scrape at a time on that thread, and never on a fetcher thread.
 * The thread is created with every signal blocked (it inherits the mask).
 * The body is the render's buffer, handed to libmicrohttpd (freed by it).
 * No Redis keys.
 */
#include "metrics_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define METRICS_HTTP_MAX_CONNECTIONS 32
#define METRICS_HTTP_TIMEOUT_S 30 /* an idle connection is closed after this */

struct metrics_server {
    struct MHD_Daemon *d;
    metrics_render_t render;
    void *ud;
};

/* Splits "ADDR:PORT" / "[ADDR]:PORT" into host and port. */
static int split(const char *s, char *host, size_t hlen, char *port, size_t plen)
{
    const char *colon = strrchr(s, ':'), *h = s, *he = colon;
    if (!colon || !colon[1])
        return -1;
    if (*s == '[') {
        if (colon == s || colon[-1] != ']')
            return -1;
        h = s + 1;
        he = colon - 1;
    } else if (memchr(s, ':', (size_t)(colon - s))) {
        return -1; /* an IPv6 address must be bracketed */
    }
    if (he <= h || (size_t)(he - h) >= hlen || strlen(colon + 1) >= plen)
        return -1;
    memcpy(host, h, (size_t)(he - h));
    host[he - h] = '\0';
    snprintf(port, plen, "%s", colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    long n = strtol(port, NULL, 10);
    return n >= 1 && n <= 65535 ? 0 : -1;
}

int metrics_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen)
{
    char host[256], port[8];
    if (split(s, host, sizeof host, port, sizeof port) < 0) {
        snprintf(err, errlen,
                 "expected ADDR:PORT (e.g. 127.0.0.1:9100, [::1]:9100), port 1..65535");
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV},
                    *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int metrics_check_addr(const char *cmd, const char *opt, const char *v)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char err[300];
    if (metrics_parse_addr(v, &ss, &len, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "crawler %s: bad value '%s' for %s: %s\n", cmd, v, opt, err);
    return -1;
}

/* Queues status with body (len bytes; owned: freed by libmicrohttpd after
 * sending, else static). */
static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                              int owned, const char *ctype)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls)
{
    (void)version;
    (void)upload;
    metrics_server_t *s = cls;
    static char not_found[] = "not found: the metrics are at /metrics\n";
    static char bad_method[] = "only GET and HEAD\n";
    if (!*con_cls) { /* headers only, the first call: answer on the next */
        *con_cls = s;
        return MHD_YES;
    }
    if (*upload_len) { /* a request body is not wanted: ignored */
        *upload_len = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method, sizeof bad_method - 1, 0,
                      "text/plain");
    if (strcmp(url, "/metrics") != 0)
        return answer(c, MHD_HTTP_NOT_FOUND, not_found, sizeof not_found - 1, 0, "text/plain");
    metrics_text_t t = {0};
    int status = s->render(s->ud, &t);
    if (t.oom || !t.p) {
        metrics_text_free(&t);
        return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, bad_method, 0, 0, "text/plain");
    }
    return answer(c, (unsigned)status, t.p, t.len, 1, METRICS_TEXT_CONTENT_TYPE);
}

/* A listening socket on addr: the fd, or -1 with why in err. */
static int listen_on(const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (metrics_parse_addr(addr, &ss, &len, err, errlen) < 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

metrics_server_t *metrics_server_start(const char *addr, metrics_render_t render, void *ud,
                                       char *err, size_t errlen)
{
    metrics_server_t *s = calloc(1, sizeof *s);
    int fd = s ? listen_on(addr, err, errlen) : -1;
    if (!s && errlen)
        snprintf(err, errlen, "out of memory");
    if (fd < 0) {
        free(s);
        return NULL;
    }
    s->render = render;
    s->ud = ud;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the server's thread inherits it */
    s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, s,
                            MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)METRICS_HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)METRICS_HTTP_TIMEOUT_S, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!s->d) {
        snprintf(err, errlen, "cannot serve %s: libmicrohttpd failed to start", addr);
        close(fd);
        free(s);
        return NULL;
    }
    return s;
}

void metrics_server_stop(metrics_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d); /* it closes the listening socket */
    free(s);
}
