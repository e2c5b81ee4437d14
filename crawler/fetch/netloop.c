/*
 * netloop.c -- one thread's epoll loop over libcurl multi handles
 * (netloop.h).
 *
 * DESIGN: a netloop_t owns one epoll set and `nshards` multi handles.
 * Each shard tells which sockets it waits on (on_socket: added to, changed
 * in or dropped from the epoll set, tagged with the shard) and when its next
 * timeout is (on_timer: timer_at).  netloop_wait does one epoll_wait and,
 * for each ready socket, curl_multi_socket_action on its shard, then reaps
 * that shard at once (reap: every CURLMSG_DONE taken out of its multi
 * handle and handed to `done`), so the caller can free a finished
 * transfer's state before the next socket is served.  The caller's fds (the
 * Redis connections a reply is awaited on) are in the same set, only to
 * wake the wait.
 * Invariants: a socket is in the epoll set exactly while its shard waits on
 * it; timer_at is the shard's next timeout (UINT64_MAX: none).
 */
#include "netloop.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <xxhash.h>

#include "clock.h"

#define TAG_CURL (1ull << 48)  /* epoll data: a socket of a shard's ... */
#define TAG_EXTRA (2ull << 48) /* ... or the caller's fd */
#define TAG_MASK (0xffffull << 48)
#define SHARD_OF(u) ((unsigned)(((u) >> 32) & 0xffffu))

typedef struct shard {
    netloop_t *l;
    CURLM *m;
    unsigned idx;
    uint64_t timer_at; /* curl's next timeout (clock_now_ms), UINT64_MAX: none */
} shard_t;

struct netloop {
    int ep;                     /* epoll over every shard's sockets and the caller's fds */
    int extra[NETLOOP_MAX_FDS]; /* the caller's fds in ep ... */
    size_t nextra;              /* ... this many */
    netloop_done_fn done;
    void *ud;
    unsigned nshards;
    shard_t shard[NETLOOP_MAX_SHARDS];
};

/* Takes fd out of the caller's fds (its number now is curl's socket). */
static void forget_extra(netloop_t *l, int fd)
{
    for (size_t i = 0; i < l->nextra; i++)
        if (l->extra[i] == fd) {
            l->extra[i] = l->extra[--l->nextra];
            return;
        }
}

/* CURLMOPT_SOCKETFUNCTION: what shard ud waits for on socket s.  *sockp (set
 * by curl_multi_assign) says s is in ep already. */
static int on_socket(CURL *h, curl_socket_t s, int what, void *ud, void *sockp)
{
    (void)h;
    shard_t *sh = ud;
    netloop_t *l = sh->l;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(l->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                             .data.u64 = TAG_CURL | (uint64_t)sh->idx << 32 | (uint32_t)s};
    forget_extra(l, s); /* a caller's fd was closed and its number reused */
    if (sockp || epoll_ctl(l->ep, EPOLL_CTL_ADD, s, &ev) < 0)
        epoll_ctl(l->ep, EPOLL_CTL_MOD, s, &ev);
    if (!sockp)
        curl_multi_assign(sh->m, s, sh);
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: the shard's one timeout, ms from now (-1: none). */
static int on_timer(CURLM *m, long ms, void *ud)
{
    (void)m;
    shard_t *sh = ud;
    sh->timer_at = ms < 0 ? UINT64_MAX : clock_now_ms() + (uint64_t)ms;
    return 0;
}

/* Hands the shard's finished transfers to done, out of its multi handle. */
static void reap(shard_t *sh)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(sh->m, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *h = m->easy_handle;
        CURLcode res = m->data.result;
        curl_multi_remove_handle(sh->m, h); /* m is gone */
        sh->l->done(sh->l->ud, h, res);
    }
}

netloop_t *netloop_new(size_t max_connects, netloop_done_fn done, void *ud, char *err,
                       size_t errlen)
{
    netloop_t *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->done = done;
    l->ud = ud;
    size_t n = (max_connects + NETLOOP_CONNECTS_PER_SHARD - 1) / NETLOOP_CONNECTS_PER_SHARD;
    l->nshards = n < 1 ? 1 : n > NETLOOP_MAX_SHARDS ? NETLOOP_MAX_SHARDS : (unsigned)n;
    if ((l->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        free(l);
        return NULL;
    }
    long per = (long)((max_connects + l->nshards - 1) / l->nshards);
    for (unsigned i = 0; i < l->nshards; i++) {
        shard_t *sh = &l->shard[i];
        *sh = (shard_t){.l = l, .idx = i, .timer_at = UINT64_MAX};
        if (!(sh->m = curl_multi_init())) {
            snprintf(err, errlen, "curl_multi_init failed");
            netloop_free(l);
            return NULL;
        }
        curl_multi_setopt(sh->m, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(sh->m, CURLMOPT_SOCKETDATA, sh);
        curl_multi_setopt(sh->m, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(sh->m, CURLMOPT_TIMERDATA, sh);
        curl_multi_setopt(sh->m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
        curl_multi_setopt(sh->m, CURLMOPT_MAXCONNECTS, per);
    }
    return l;
}

void netloop_free(netloop_t *l)
{
    if (!l)
        return;
    for (unsigned i = 0; i < l->nshards; i++)
        if (l->shard[i].m)
            curl_multi_cleanup(l->shard[i].m);
    close(l->ep);
    free(l);
}

size_t netloop_shards(const netloop_t *l)
{
    return l->nshards;
}

int netloop_add(netloop_t *l, CURL *h, const char *host, unsigned *shard)
{
    unsigned i = l->nshards > 1 ? (unsigned)(XXH3_64bits(host, strlen(host)) % l->nshards) : 0;
    if (curl_multi_add_handle(l->shard[i].m, h) != CURLM_OK)
        return -1;
    *shard = i;
    return 0;
}

void netloop_remove(netloop_t *l, CURL *h, unsigned shard)
{
    curl_multi_remove_handle(l->shard[shard].m, h);
}

void netloop_timers(netloop_t *l)
{
    uint64_t now = clock_now_ms();
    for (unsigned i = 0; i < l->nshards; i++) {
        shard_t *sh = &l->shard[i];
        if (sh->timer_at > now)
            continue;
        int still;
        sh->timer_at = UINT64_MAX; /* curl sets the next one */
        curl_multi_socket_action(sh->m, CURL_SOCKET_TIMEOUT, 0, &still);
        reap(sh);
    }
}

/* Keeps the caller's fds (the ones >= 0 of fds[0..n)) in ep, level-triggered
 * for reading, and no other.  They are added again on every call: a
 * connection closed and reopened under the same number left ep on close. */
static void watch_extra(netloop_t *l, const int *fds, size_t n)
{
    for (size_t i = 0; i < l->nextra; i++) { /* the ones no longer wanted leave */
        size_t k = 0;
        while (k < n && fds[k] != l->extra[i])
            k++;
        if (k == n)
            epoll_ctl(l->ep, EPOLL_CTL_DEL, l->extra[i], NULL); /* may be closed: no matter */
    }
    l->nextra = 0;
    for (size_t i = 0; i < n && l->nextra < NETLOOP_MAX_FDS; i++) {
        if (fds[i] < 0)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_EXTRA | (uint32_t)fds[i]};
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fds[i], &ev) == 0 || errno == EEXIST)
            l->extra[l->nextra++] = fds[i];
    }
}

/* 1 if one of the caller's fds is readable now (poll(2), no wait). */
static int readable(const netloop_t *l)
{
    struct pollfd p[NETLOOP_MAX_FDS];
    for (size_t i = 0; i < l->nextra; i++)
        p[i] = (struct pollfd){.fd = l->extra[i], .events = POLLIN};
    return l->nextra && poll(p, l->nextra, 0) > 0;
}

void netloop_wait(netloop_t *l, const netloop_watch_t *watch, int ms)
{
    watch_extra(l, watch ? watch->fds : NULL, watch ? watch->nfds : 0);
    uint64_t now = clock_now_ms(), next = UINT64_MAX;
    for (unsigned i = 0; i < l->nshards; i++)
        if (l->shard[i].timer_at < next)
            next = l->shard[i].timer_at;
    if (ms < 0 || next <= now)
        ms = 0;
    else if (next - now < (uint64_t)ms)
        ms = (int)(next - now);
    struct epoll_event ev[NETLOOP_MAX_EVENTS];
    int n = epoll_wait(l->ep, ev, NETLOOP_MAX_EVENTS, ms);
    for (int i = 0; watch && watch->ready && i < n; i++)
        if ((ev[i].data.u64 & TAG_MASK) == TAG_EXTRA) { /* a reply first */
            watch->ready(watch->ud);
            break;
        }
    for (int i = 0; i < n; i++) {
        /* a reply that came while this batch is served is taken within
         * NETLOOP_POLL_EVERY sockets, not at the next wait */
        if (i % NETLOOP_POLL_EVERY == NETLOOP_POLL_EVERY - 1 && watch && watch->ready &&
            readable(l))
            watch->ready(watch->ud);
        uint64_t u = ev[i].data.u64;
        if ((u & TAG_MASK) != TAG_CURL || SHARD_OF(u) >= l->nshards)
            continue; /* a caller's fd: it only wakes us */
        int mask = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                   (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                   (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        shard_t *sh = &l->shard[SHARD_OF(u)];
        int still;
        curl_multi_socket_action(sh->m, (curl_socket_t)(uint32_t)u, mask, &still);
        reap(sh);
    }
    netloop_timers(l);
}
