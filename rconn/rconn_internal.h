/*
 * rconn_internal.h -- what the files of rconn/ share: a node's address, a
 * parsed --redis spec, making one connection, a Redis Cluster's topology,
 * the embedded server, and the body of rconn_t.  Not for other modules
 * (rconn.h is the interface).
 */
#ifndef RCONN_INTERNAL_H
#define RCONN_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "errors.h"
#include "rconn.h"

struct redisContext;
struct redisReply;

#define RC_MAX_HOST 256                /* longest host name or address, with its NUL */
#define RC_NONE 0xffffu                /* rc_topo_t.slots[] entry: no owner known */
#define RC_MAX_NODES 4096              /* nodes a topology keeps at most */
#define RC_NAME_MAX (RC_MAX_HOST + 16) /* "host:port", "[v6]:port" or "unix:<path>" (cut) */

/* Where to connect: TCP host:port, or a unix socket (path set). */
typedef struct rc_addr {
    char host[RC_MAX_HOST];
    int port;
    char *path; /* unix socket, malloc'ed; NULL for TCP */
} rc_addr_t;

void rc_addr_clear(rc_addr_t *a);
/* Copies a into *out (the path too): 0 or CRAWL_ENOMEM. */
int rc_addr_copy(rc_addr_t *out, const rc_addr_t *a);
/* a's name, "host:port", "[v6]:port" or "unix:<path>", into buf. */
void rc_addr_name(const rc_addr_t *a, char *buf, size_t len);

/* ---- spec.c: what --redis names ---------------------------------------- */

/* Nodes, in order, and the password and db they share. */
typedef struct rc_spec {
    rc_addr_t *addrs;
    size_t n;
    char *password; /* AUTH for every node; NULL: none */
    int db;         /* SELECT (a plain Redis only) */
    int db_set;     /* a URL named a db */
    int several;    /* a URL listed several nodes (host:port,host:port) */
} rc_spec_t;

/* Parses one URL of rconn.h's forms (or a bare host:port[,host:port...]),
 * appending its nodes to s; a password or db given by an earlier one must
 * agree.  0, or CRAWL_EINVAL with the reason in err, CRAWL_ENOMEM. */
int rc_spec_parse(rc_spec_t *s, const char *url, char *err, size_t errlen);
void rc_spec_clear(rc_spec_t *s);

/* ---- connect.c: one connection ------------------------------------------- */

/* A new blocking connection to a, with the connect and command timeouts,
 * TCP keepalive, AUTH when password is set, SELECT when db is not 0, and a
 * PING that says whether the server wants a password it was not given.
 * NULL with the reason in err (the server's own words when it answered:
 * NOAUTH, WRONGPASS, ...).  Thread-safe. */
struct redisContext *rc_connect(const rc_addr_t *a, const char *password, int db, char *err,
                                size_t errlen);

/* ---- map.c: one node's slot map ------------------------------------------ */

/* One range of slots and its master, as a node's reply gives them. */
typedef struct rc_range {
    int start, end; /* inclusive */
    char host[RC_MAX_HOST];
    int port;
} rc_range_t;

typedef struct rc_map {
    int plain; /* the node is not in cluster mode */
    rc_range_t *r;
    size_t n, cap;
} rc_map_t;

/* Asks ctx (reached as host) for its map.  0, CRAWL_EREDIS (ctx failed),
 * CRAWL_EREPLY (an answer that is not a map), CRAWL_ENOMEM. */
int rc_fetch_map(struct redisContext *ctx, const char *host, rc_map_t *m);
void rc_map_clear(rc_map_t *m);

/* ---- topology.c: a Redis Cluster's masters --------------------------------- */

typedef struct rc_topo rc_topo_t;

/* The topology of the server the spec names (borrowed: it outlives the
 * topology): its map asked of each node in turn until one answers.  A plain
 * Redis is one node owning every slot.  NULL with the reason in err and
 * *code: CRAWL_EREDIS when no node answered, CRAWL_EINVAL for a cluster the
 * spec cannot name (a db, a plain node in the list), CRAWL_ENOMEM.  Not
 * thread-safe: rconn_t guards it. */
rc_topo_t *rc_topo_open(const rc_spec_t *spec, int *code, char *err, size_t errlen);
void rc_topo_close(rc_topo_t *t);
/* 1 if the server is a Redis Cluster, 0 for a plain Redis. */
int rc_topo_is_cluster(const rc_topo_t *t);
/* Asks the map again: of the masters that answered last, then of those that
 * did not, then of the seeds.  0, or CRAWL_EREDIS when no node answered (the
 * old map is kept), CRAWL_ENOMEM. */
int rc_topo_refresh(rc_topo_t *t);
/* The master of slot in the map (a copy into *out), or CRAWL_EREDIS when
 * the slot has none now; CRAWL_ENOMEM. */
int rc_topo_owner(const rc_topo_t *t, int slot, rc_addr_t *out);
/* Every master of the map, copies: *out (caller frees each with
 * rc_addr_clear, then the array), *n of them.  0 or CRAWL_ENOMEM. */
int rc_topo_masters(const rc_topo_t *t, rc_addr_t **out, size_t *n);
/* Why the last map question failed ("" if none did). */
const char *rc_topo_error(const rc_topo_t *t);

/* ---- embedded.c: a redis-server of this process's own ------------------- */

typedef struct rc_embedded rc_embedded_t;

/* Starts (or, per embed, joins) the embedded server in data_dir: its
 * address into *a, a description into desc.  NULL (nothing started, the
 * reason in err) on failure; a joined server is returned as a handle that
 * owns nothing. */
rc_embedded_t *rc_embedded_open(const char *data_dir, rconn_embed_t embed, rc_addr_t *a, char *desc,
                                size_t desclen, char *err, size_t errlen);
/* Stops a server this process started (SIGTERM: it flushes its append-only
 * file; SIGKILL after 10 s), drops the lock.  Accepts NULL. */
void rc_embedded_close(rc_embedded_t *e);
/* The pid of a server this process started, 0 if it joined one. */
pid_t rc_embedded_pid(const rc_embedded_t *e);
/* A server this process started that exited (reaped now, never waiting)
 * is started again in its directory on its address, its append-only file
 * read back (60 s at most): 1 with msg saying how it ended and its new pid
 * (desc: its new description), 0 when it runs (or it is not ours), or
 * CRAWL_EREDIS with msg naming it, how it ended and why the start failed. */
int rc_embedded_watch(rc_embedded_t *e, char *desc, size_t desclen, char *msg, size_t msglen);

/* ---- call.c, link.c: calls and the connection owner ----------------------- */

enum { RC_CALL_NEW, RC_CALL_QUEUED, RC_CALL_SENT, RC_CALL_DONE, RC_CALL_FAILED };
/* A call of the link's own: a FUNCTION LOAD it sent, or the place in a FIFO
 * of a call its owner freed while it was in flight (its reply dropped). */
enum { RC_OWN_LOAD = 1, RC_OWN_PLACE = 2, RC_OWN_WAIT = 3 };

struct rconn_call {
    rconn_args_t a;
    int slot;       /* the hash slot whose master it goes to */
    unsigned flags; /* RCONN_CALL_* */
    int state;      /* RC_CALL_* */
    int status;     /* RC_CALL_FAILED: why (CRAWL_EREDIS, CRAWL_ENOMEM) */
    struct redisReply *r;
    /* on a link: */
    rconn_link_t *link;
    struct rconn_call *next, *prev; /* its place in the link's queue or a server's FIFO */
    int srv;                        /* RC_CALL_SENT: the server it was written to */
    uint64_t seq;                   /* the order it was handed to the link (kept on a resend) */
    uint64_t sent_ms;               /* RC_CALL_SENT: when (monotonic) */
    int unrun;                      /* Redis answered that it did not run it */
    int held;                       /* RC_CALL_QUEUED: in the link's held list, not its queue */
    int own;                        /* the link's own: RC_OWN_LOAD, _PLACE or _WAIT */
    /* RCONN_CALL_REPLICATED: the WAIT written after it (the link's own), and
     * its reply, kept until the WAIT answers; an RC_OWN_WAIT's `of` is the
     * call it completes, set once that call's reply came. */
    struct rconn_call *wait, *of;
    struct redisReply *kept;
};

/* Sets c's reply (taken over) and makes it done; NULL: back to new. */
void rc_call_set_reply(rconn_call_t *c, struct redisReply *r);
/* rconn.c: the server of slot now, into *a (a copy), after a fresh look at
 * the map on a cluster; 0, or CRAWL_EREDIS with err. */
int rc_route(const rconn_t *r, int slot, rc_addr_t *a, char *err, size_t errlen);
/* rconn.c: a new connection to a, with r's password and db. */
struct redisContext *rc_connect_to(const rconn_t *r, const rc_addr_t *a, char *err, size_t errlen);
/* rconn.c: the route key's slot. */
int rc_route_slot(const rconn_t *r);

/* ---- rconn.c -------------------------------------------------------------- */

struct rconn {
    rc_topo_t *topo;    /* a shared server (plain or Redis Cluster): its map; NULL: embedded */
    pthread_mutex_t mu; /* guards topo (rconn_connect runs on every thread) */
    rc_spec_t spec;     /* the URLs' nodes, password and db (the topology reads them) */
    rc_addr_t plain;    /* a plain server's address (the embedded one's too) */
    int route_slot;     /* the route key's hash slot */
    int cluster;        /* topo is a Redis Cluster */
    rc_embedded_t *embedded;
    char desc[4200];
};

#endif
