/*
 * fx_proxy.c -- a TCP proxy on 127.0.0.1 in front of a test's redis-server
 * that can lose replies (fixtures.h: fx_proxy_*).
 *
 * DESIGN: one thread polls the listening socket and every pair of sockets
 * (a client's, and the proxy's own connection to the server for it), and
 * copies bytes each way.  While swallowing, what the server sends is read
 * and dropped: the calls run, their replies never reach the client.  A cut
 * closes every pair: the client sees its connection lost with replies it
 * never got, exactly as when a network or a proxy fails after Redis ran its
 * calls.  The settings are atomics the thread reads every turn; cut is a
 * request the thread carries out and counts (fx_proxy_cut waits for it).
 */
#include "fixtures.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FX_PROXY_PAIRS 64

typedef struct pair {
    int client, server; /* -1: free */
} pair_t;

struct fx_proxy {
    int listen_fd, port, target;
    pthread_t thread;
    atomic_int stop, swallow, cut_asked, cuts;
    atomic_ullong swallowed; /* bytes of the server's dropped */
    pair_t pair[FX_PROXY_PAIRS];
};

static int connect_target(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void close_pair(pair_t *p)
{
    if (p->client >= 0)
        close(p->client);
    if (p->server >= 0)
        close(p->server);
    p->client = p->server = -1;
}

/* Copies what from holds to to (NULL: dropped); -1 when from is closed or
 * failed. */
static int copy(int from, int to, atomic_ullong *dropped)
{
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN) ? 0 : -1;
    if (to < 0) {
        atomic_fetch_add(dropped, (unsigned long long)n);
        return 0;
    }
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += w;
    }
    return 0;
}

static void *proxy_main(void *arg)
{
    fx_proxy_t *p = arg;
    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->cut_asked)) {
            for (int i = 0; i < FX_PROXY_PAIRS; i++)
                if (p->pair[i].client >= 0)
                    close_pair(&p->pair[i]);
            atomic_store(&p->swallow, 0);
            atomic_store(&p->cut_asked, 0);
            atomic_fetch_add(&p->cuts, 1);
        }
        struct pollfd pf[1 + 2 * FX_PROXY_PAIRS];
        int at[1 + 2 * FX_PROXY_PAIRS], n = 0;
        pf[n] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        at[n++] = -1;
        for (int i = 0; i < FX_PROXY_PAIRS; i++)
            if (p->pair[i].client >= 0) {
                pf[n] = (struct pollfd){.fd = p->pair[i].client, .events = POLLIN};
                at[n++] = 2 * i;
                pf[n] = (struct pollfd){.fd = p->pair[i].server, .events = POLLIN};
                at[n++] = 2 * i + 1;
            }
        if (poll(pf, (nfds_t)n, 20) <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (at[k] < 0) {
                int c = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                int s = c >= 0 ? connect_target(p->target) : -1;
                int i = 0;
                while (i < FX_PROXY_PAIRS && p->pair[i].client >= 0)
                    i++;
                if (c >= 0 && s >= 0 && i < FX_PROXY_PAIRS) {
                    p->pair[i] = (pair_t){.client = c, .server = s};
                } else {
                    if (c >= 0)
                        close(c);
                    if (s >= 0)
                        close(s);
                }
                continue;
            }
            pair_t *pr = &p->pair[at[k] / 2];
            if (pr->client < 0)
                continue; /* closed earlier in this turn */
            int from_server = at[k] & 1;
            int to = from_server ? (atomic_load(&p->swallow) ? -1 : pr->client) : pr->server;
            if (copy(from_server ? pr->server : pr->client, to, &p->swallowed) < 0)
                close_pair(pr);
        }
    }
    for (int i = 0; i < FX_PROXY_PAIRS; i++)
        close_pair(&p->pair[i]);
    return NULL;
}

fx_proxy_t *fx_proxy_start(int target_port)
{
    fx_proxy_t *p = calloc(1, sizeof *p);
    if (!p) {
        fx_set_error("out of memory");
        return NULL;
    }
    p->target = target_port;
    for (int i = 0; i < FX_PROXY_PAIRS; i++)
        p->pair[i] = (pair_t){-1, -1};
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* never beyond loopback */
    socklen_t len = sizeof a;
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->listen_fd, 64) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0) {
        fx_set_error("proxy: %s", strerror(errno));
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return NULL;
    }
    p->port = ntohs(a.sin_port);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        fx_set_error("proxy: no thread");
        close(p->listen_fd);
        free(p);
        return NULL;
    }
    return p;
}

int fx_proxy_port(const fx_proxy_t *p)
{
    return p->port;
}

void fx_proxy_swallow(fx_proxy_t *p)
{
    atomic_store(&p->swallow, 1);
}

unsigned long long fx_proxy_swallowed(fx_proxy_t *p)
{
    return atomic_load(&p->swallowed);
}

int fx_proxy_cut(fx_proxy_t *p)
{
    int before = atomic_load(&p->cuts);
    atomic_store(&p->cut_asked, 1);
    uint64_t deadline = fx_now_ms() + 5000;
    while (atomic_load(&p->cuts) == before && fx_now_ms() < deadline)
        usleep(1000);
    if (atomic_load(&p->cuts) == before) {
        fx_set_error("proxy: the cut was not carried out within 5 s");
        return -1;
    }
    return 0;
}

void fx_proxy_stop(fx_proxy_t *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    free(p);
}
