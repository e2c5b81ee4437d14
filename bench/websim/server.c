/*
 * server.c -- websim's server (server.h): HTTP/1.1 and HTTPS on one epoll
 * loop, every answer planned by ws_plan and rendered by ws_render.
 *
 * DESIGN: connections live in an array indexed by fd.  A connection is in one
 * state: TLS (handshake), READ (a request head), WAIT (the host's latency, a
 * timer in a binary min-heap keyed by due time), WRITE, or HOLD (a black-hole
 * address, or a host gone dark: the connection is kept open and never answered
 * until the client leaves or hold_ms passes).  Each request is logged when it
 * ends (answered, or the client left) as one TSV line:
 *   arrive_us end_us scheme host path status bytes conn req flags
 * (times CLOCK_REALTIME in microseconds; req 1 is a connection's first request;
 * flags: T full TLS handshake, R resumed session, c client left first,
 * d held dark, m host not on the address connected to, u unknown host;
 * "-" none).  A black-holed connection logs one line with host "-" and flag b.
 * Nothing listens beyond the address given: "0.0.0.0" is refused unless every
 * interface address of the namespace is a loopback one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "render.h"
#include "server.h"
#include "conn.h"

static volatile sig_atomic_t stop_flag, dark_flag = -1;

static void on_signal(int s)
{
    if (s == SIGUSR1)
        dark_flag = 1;
    else if (s == SIGUSR2)
        dark_flag = 0;
    else
        stop_flag = 1;
}

/* Every interface address is loopback (127/8 or ::1). */
static int only_loopback(void)
{
    struct ifaddrs *ifa, *i;
    int ok = 1;
    if (getifaddrs(&ifa) < 0)
        return 0;
    for (i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
            ok &= (a >> 24) == 127;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            ok &= IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
        }
    }
    freeifaddrs(ifa);
    return ok;
}

static int listen_on(const char *addr, uint16_t port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    int one = 1;
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "websim: bad --bind address %s\n", addr);
        return -1;
    }
    uint32_t a = ntohl(sa.sin_addr.s_addr);
    if ((a >> 24) != 127 && !(a == 0 && only_loopback())) {
        fprintf(stderr,
                "websim: refusing to listen on %s: only 127.0.0.0/8, or 0.0.0.0 in a "
                "network namespace whose only interface is lo\n",
                addr);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4096) < 0) {
        fprintf(stderr, "websim: cannot listen on %s:%u: %s\n", addr, port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void write_stats(srv_t *s)
{
    char tmp[512];
    if (!s->o->stats)
        return;
    snprintf(tmp, sizeof tmp, "%s.tmp", s->o->stats);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f,
            "time_ms %llu\nrequests %llu\nconnections %llu\ntls_full %llu\ntls_resumed %llu\n"
            "bytes %llu\naborted %llu\nopen %u\ndark %d\n",
            (unsigned long long)(srv_now_us() / 1000), (unsigned long long)s->n_requests,
            (unsigned long long)s->n_conns, (unsigned long long)s->n_tls_full,
            (unsigned long long)s->n_tls_resumed, (unsigned long long)s->n_bytes,
            (unsigned long long)s->n_aborted, s->open, s->dark);
    if (fclose(f) == 0)
        rename(tmp, s->o->stats);
}

static int setup(srv_t *s, const ws_cfg_t *c, const ws_serve_opts_t *o)
{
    char err[256];
    struct rlimit rl = {.rlim_cur = 1 << 20, .rlim_max = 1 << 20};
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    s->c = c, s->o = o;
    uint64_t want = (uint64_t)o->max_conns * 2 + 1024;
    s->nfd = (uint32_t)(rl.rlim_cur < want ? rl.rlim_cur : want);
    s->conns = calloc(s->nfd, sizeof *s->conns);
    s->render = ws_render_open(c);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (!s->conns || !s->render || s->ep < 0)
        return -1;
    if (o->https_port && o->ca_cert && o->ca_key) {
        s->tls = ws_tls_open(c, o->ca_cert, o->ca_key, err, sizeof err);
        if (!s->tls) {
            fprintf(stderr, "websim: %s\n", err);
            return -1;
        }
    }
    s->lfd[0] = listen_on(o->bind, o->http_port);
    s->lfd[1] = s->tls ? listen_on(o->bind, o->https_port) : -1;
    if (s->lfd[0] < 0 || (s->tls && s->lfd[1] < 0))
        return -1;
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i << 32 | 0xffffffffu};
        if (s->lfd[i] >= 0 && epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd[i], &ev) < 0)
            return -1;
    }
    if (o->log && !(s->log = fopen(o->log, "a"))) {
        fprintf(stderr, "websim: cannot open %s: %s\n", o->log, strerror(errno));
        return -1;
    }
    if (s->log)
        setvbuf(s->log, NULL, _IOFBF, 1 << 20);
    return 0;
}

static void accept_all(srv_t *s, int tls)
{
    for (;;) {
        struct sockaddr_in local;
        socklen_t ll = sizeof local;
        int fd = accept4(s->lfd[tls], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if ((uint32_t)fd >= s->nfd || s->open >= s->o->max_conns ||
            getsockname(fd, (struct sockaddr *)&local, &ll) < 0) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        srv_conn_start(s, fd, tls, ntohl(local.sin_addr.s_addr));
    }
}

int ws_serve(const ws_cfg_t *c, const ws_serve_opts_t *o)
{
    srv_t s = {.lfd = {-1, -1}, .ep = -1};
    int rc = -1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (setup(&s, c, o) < 0)
        goto out;
    if (o->pidfile) {
        FILE *f = fopen(o->pidfile, "w");
        if (f)
            fprintf(f, "%d\n", (int)getpid()), fclose(f);
    }
    struct epoll_event ev[256];
    uint64_t last_tick = 0;
    while (!stop_flag) {
        if (dark_flag >= 0) {
            s.dark = dark_flag;
            dark_flag = -1;
        }
        int n = epoll_wait(s.ep, ev, 256, srv_timer_wait(&s));
        for (int i = 0; i < n; i++) {
            uint32_t fd = (uint32_t)ev[i].data.u64;
            if (fd == 0xffffffffu)
                accept_all(&s, (int)(ev[i].data.u64 >> 32));
            else
                srv_conn_event(&s, (int)fd, ev[i].events);
        }
        uint64_t now = srv_mono_ms();
        srv_timers_run(&s, now);
        if (now - last_tick >= 1000) {
            last_tick = now;
            srv_sweep(&s, now);
            write_stats(&s);
            if (s.log)
                fflush(s.log);
        }
    }
    rc = 0;
out:
    srv_close_all(&s);
    if (s.log)
        fclose(s.log);
    for (int i = 0; i < 2; i++)
        if (s.lfd[i] >= 0)
            close(s.lfd[i]);
    if (s.ep >= 0)
        close(s.ep);
    write_stats(&s);
    ws_tls_close(s.tls);
    ws_render_close(s.render);
    free(s.conns);
    free(s.heap);
    return rc;
}
