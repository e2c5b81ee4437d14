/*
 * netloop.h -- the event loop under one thread's transfers: libcurl multi
 * handles driven by one epoll set (curl_multi_socket_action, with socket
 * and timer callbacks), so that a wake-up costs the sockets that are ready,
 * not the transfers that exist.
 *
 * The transfers are spread over several multi handles ("shards") by the
 * host they connect to: a host's connections are always in one shard's
 * cache, and each cache stays small.  libcurl 7.88 walks the whole
 * connection cache of a multi handle on every curl_multi_remove_handle
 * (close_connect_only), so with one multi handle a thread with thousands of
 * kept-alive connections (a broad crawl) pays thousands of steps a transfer.
 *
 * Not thread-safe: a netloop_t belongs to one thread.  Redis keys: none.
 */
#ifndef CRAWLER_NETLOOP_H
#define CRAWLER_NETLOOP_H

#include <curl/curl.h>
#include <stddef.h>

#define NETLOOP_CONNECTS_PER_SHARD 256 /* a shard's connection cache, at most */
#define NETLOOP_MAX_SHARDS 64
#define NETLOOP_MAX_EVENTS 64 /* sockets served per epoll_wait */
#define NETLOOP_MAX_FDS 4     /* the caller's fds a wait watches ... */
#define NETLOOP_POLL_EVERY 8  /* ... looked at again every this many sockets served */

typedef struct netloop netloop_t;

/* A transfer that finished: its easy handle (already out of its multi
 * handle) and curl's result.  May add transfers (netloop_add). */
typedef void (*netloop_done_fn)(void *ud, CURL *h, CURLcode result);

/* A loop whose connection caches keep max_connects connections in all
 * (running and idle), over as many shards as that needs at
 * NETLOOP_CONNECTS_PER_SHARD each.  done is called for every finished
 * transfer, from netloop_wait and netloop_timers.  NULL on failure, with a
 * message in err. */
netloop_t *netloop_new(size_t max_connects, netloop_done_fn done, void *ud, char *err,
                       size_t errlen);
/* Frees the loop; every transfer must have been removed.  Accepts NULL. */
void netloop_free(netloop_t *l);
/* Multi handles the loop drives. */
size_t netloop_shards(const netloop_t *l);

/* Adds h, which will connect to host, to the shard of host: 0 and *shard
 * (for netloop_remove), or -1 if the multi handle refused it. */
int netloop_add(netloop_t *l, CURL *h, const char *host, unsigned *shard);
/* Takes a running transfer out (cancelled: done is not called for it). */
void netloop_remove(netloop_t *l, CURL *h, unsigned shard);

/* Runs curl's timeouts that are due. */
void netloop_timers(netloop_t *l);
/* The caller's fds a wait watches besides curl's sockets (Redis
 * connections whose replies are awaited): fds[0..nfds), those >= 0, at most
 * NETLOOP_MAX_FDS.  When the wait finds one readable, ready(ud) (if not
 * NULL) runs before any of curl's sockets of that wake-up is served, and
 * again when one is readable after every NETLOOP_POLL_EVERY sockets served,
 * so a reply is taken without waiting for a batch of transfers to be
 * served; it may add transfers. */
typedef struct netloop_watch {
    const int *fds;
    size_t nfds;
    void (*ready)(void *ud);
    void *ud;
} netloop_watch_t;

/* Serves the sockets that are ready (one epoll_wait, up to
 * NETLOOP_MAX_EVENTS of them), waiting up to ms (0: not at all, capped by
 * curl's next timeout) for one, or for one of watch's fds (watch may be
 * NULL) to be readable; then the due timeouts. */
void netloop_wait(netloop_t *l, const netloop_watch_t *watch, int ms);

#endif
