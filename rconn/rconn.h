/*
 * rconn.h -- where the crawl's Redis is, and connections to it.
 *
 * Either a shared server named by a URL (--redis, or the REDIS_URL
 * environment variable):
 *     redis://[:password@]host[:port][/db]     (port 6379, db 0 by default)
 *     redis://[:password@]host:port,host:port,...   (nodes of a Redis Cluster)
 *     host:port,host:port,...                       (the same, without scheme)
 *     unix:///path/to/redis.sock[?db=N]
 * or, with neither, an embedded private redis-server that this process starts
 * as a child in --data-dir (unix socket, append-only persistence so an
 * interrupted crawl resumes) and stops on rconn_close().  Everything after
 * that is the same code.
 *
 * A Redis Cluster (any node of it named: the URL's server answers CLUSTER
 * SHARDS) is found out at open.  A connection goes to the master that owns
 * a hash slot, as the cluster's map says at the time of the connect (asked
 * again each time, so a reconnect after a failover or a resharding finds
 * the new owner); rconn_open() is told a route key, whose slot's owner
 * rconn_connect() reaches.  A call the cluster redirects (MOVED, ASK) or
 * refuses for now (TRYAGAIN, CLUSTERDOWN) is a lost connection to the caller
 * (errors.h crawl_retry_reply): it connects again and is routed anew.
 *
 * Errors: 0 or a negative CRAWL_E* code; constructors return NULL and write
 * the reason into err.  Thread-safety: an rconn_t may be used from any
 * thread once open (its map is behind a mutex); a redisContext belongs to
 * the thread that uses it.
 */
#ifndef RCONN_H
#define RCONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct redisContext;
struct redisReply;

#define RCONN_DEFAULT_DATA_DIR "./crawl-data"
#define RCONN_CONNECT_TIMEOUT_MS 5000
#define RCONN_COMMAND_TIMEOUT_MS 30000
#define RCONN_NSLOTS 16384 /* a Redis Cluster's hash slots */
#define RCONN_NAME_MAX 320 /* a server's name (rconn_owners), with its NUL */
#define RCONN_MAX_SPECS 16 /* Redis URLs one server may be named by (--redis, repeated) */

/* Checks a Redis URL's syntax (the forms above) without connecting: what
 * rconn_open would refuse before any connect.  0, or CRAWL_EINVAL with the
 * reason in err, CRAWL_ENOMEM.  Thread-safe. */
int rconn_check_url(const char *url, char *err, size_t errlen);

/* The hash slot of a key: CRC16-XMODEM of the key, or of its hash tag (the
 * bytes between the first '{' and the first '}' after it, when there are
 * any), mod RCONN_NSLOTS.  Pure; thread-safe. */
int rconn_key_slot(const char *key, size_t len);

/* What rconn_open does when it is to use the embedded server (no URL, no
 * $REDIS_URL) and another crawler process runs that server in data_dir:
 * refuse (a crawl: one worker per data directory), or use the running
 * server (commands that read or change a crawl: stats, seed, bloom, ...),
 * starting one only if none runs (JOIN), or never (JOIN_ONLY: control
 * commands act on a running crawl; no data directory is made). */
typedef enum rconn_embed {
    RCONN_EMBED_OWN = 0,
    RCONN_EMBED_JOIN,
    RCONN_EMBED_JOIN_ONLY,
} rconn_embed_t;

/* The Redis a command names: URLs in order, each of the forms above, the
 * pointers borrowed.  Several (or one naming several nodes) are the nodes of
 * one Redis Cluster, a password or db given by several agreeing; none:
 * $REDIS_URL, else an embedded redis-server, as embed says. */
typedef struct rconn_specs {
    const char *url[RCONN_MAX_SPECS];
    size_t n;
    rconn_embed_t embed;
} rconn_specs_t;

/* The URL of the embedded server a running crawler process keeps in
 * data_dir (it writes it to DIR/redis.url once its server answers): 1 and
 * the URL in buf, or 0 if no process holds the directory or its server does
 * not answer a PING.  Thread-safe. */
int rconn_embedded_running(const char *data_dir, char *buf, size_t buflen);

typedef struct rconn rconn_t;

/* specs: the Redis's URLs (NULL or none: $REDIS_URL, or with neither, an
 * embedded redis-server in data_dir (NULL: RCONN_DEFAULT_DATA_DIR)).  route:
 * a key (NUL-terminated) whose hash slot's owner rconn_connect reaches on a
 * Redis Cluster (NULL: slot 0); a plain Redis ignores it.  A single URL
 * whose server does not answer yet is taken as a plain Redis (its connects
 * say why they fail); several nodes must give a map now.  NULL with the
 * reason in err. */
rconn_t *rconn_open(const rconn_specs_t *specs, const char *data_dir, const char *route, char *err,
                    size_t errlen);
/* rconn_open of one URL (NULL: $REDIS_URL or embedded). */
rconn_t *rconn_open_url(const char *url, const char *data_dir, const char *route, char *err,
                        size_t errlen);
/* Closes; stops the embedded server (it saves its append-only file).
 * Accepts NULL. */
void rconn_close(rconn_t *r);

/* A new blocking connection with AUTH and SELECT done and timeouts set
 * (RCONN_*_TIMEOUT_MS), on a cluster to the route's owner; caller frees
 * with redisFree().  NULL with a message in err (the server's or the
 * network's words).  Thread-safe. */
struct redisContext *rconn_connect(const rconn_t *r, char *err, size_t errlen);
/* rconn_connect to the master of a slot (0..RCONN_NSLOTS-1) as the map says
 * after a fresh look; the one server of a plain Redis for any slot. */
struct redisContext *rconn_connect_slot(const rconn_t *r, int slot, char *err, size_t errlen);
/* The name of the server that serves each of slots[0..n) now, from one
 * fresh look at the map (the same name for the same server; the one
 * server's name on a plain Redis) into names[i].  0, or CRAWL_EREDIS when a
 * slot has no master now (err says which), CRAWL_ENOMEM.  Thread-safe. */
int rconn_owners(const rconn_t *r, const int *slots, size_t n, char (*names)[RCONN_NAME_MAX],
                 char *err, size_t errlen);
/* 1 when r is a Redis Cluster, 0 for a plain or embedded Redis. */
int rconn_is_cluster(const rconn_t *r);
/* Calls fn once per master (the one server of a plain Redis) with a new
 * connection to it (AUTH done; fn must not free it) and its "host:port"
 * (or the describe text of a plain Redis), in the map's order; stops at the
 * first fn that returns < 0 and returns that.  0, or CRAWL_EREDIS (a master
 * unreachable: message in err), or fn's code. */
int rconn_each_master(const rconn_t *r,
                      int (*fn)(struct redisContext *c, const char *addr, void *ud), void *ud,
                      char *err, size_t errlen);
/* Human-readable location, e.g. "redis://127.0.0.1:6379/0" or
 * "embedded redis-server (pid 123) in ./crawl-data"; never the password. */
const char *rconn_describe(const rconn_t *r);
/* pid of the embedded server this process started, or 0. */
pid_t rconn_embedded_pid(const rconn_t *r);
/* For the process that started the embedded server (its parent): if the
 * server exited (killed, crashed), it is started again at once in its data
 * directory, on the same socket or port, from its append-only file (up to
 * a second of writes lost with appendfsync everysec: the crawl's
 * reconnects reconcile them).  Never waits unless it restarts (60 s at
 * most).  0 when it runs (or r has no server of its own), 1 when it was
 * restarted, CRAWL_EREDIS when the restart failed; msg says how the server
 * ended, its new pid or the restart's error.  Call it from one thread. */
int rconn_embedded_watch(rconn_t *r, char *msg, size_t msglen);

/* ---- the arguments of one command -------------------------------------------
 * Binary-safe; strings pushed with rconn_arg_str are borrowed (they must
 * outlive the command), every other push is a copy in chunks owned by the
 * builder that never move.  Out of memory sets oom and ignores the pushes
 * after (the call then fails with CRAWL_ENOMEM when sent).  Not
 * thread-safe. */
typedef struct rconn_chunk rconn_chunk_t;
typedef struct rconn_args {
    const char **v;
    size_t *len;
    size_t n, cap;
    rconn_chunk_t *chunks;
    int oom;
} rconn_args_t;

void rconn_args_init(rconn_args_t *a);
/* Frees what a holds; a is empty after.  Accepts NULL. */
void rconn_args_free(rconn_args_t *a);
void rconn_arg_str(rconn_args_t *a, const char *s, size_t len);
void rconn_arg_cstr(rconn_args_t *a, const char *s);
void rconn_arg_copy(rconn_args_t *a, const char *s, size_t len);
void rconn_arg_dup(rconn_args_t *a, const char *s);
void rconn_arg_u64(rconn_args_t *a, uint64_t v);
void rconn_arg_dbl(rconn_args_t *a, double v);
/* Sets argument i (pushed before) to the number v. */
void rconn_arg_set_u64(rconn_args_t *a, size_t i, uint64_t v);
/* Pushes an argument of len bytes that the caller fills in through the
 * returned pointer; NULL when out of memory. */
char *rconn_arg_alloc(rconn_args_t *a, size_t len);

/* ---- one call -----------------------------------------------------------------
 * One command for the master of a hash slot, and its reply once answered.
 * The caller builds it (rconn_call_args), hands it to a link
 * (rconn_link_send), reads it once done, and frees it; the link never frees
 * a caller's call.  A call lost with its connection before its reply came
 * is failed (CRAWL_EREDIS), unless it was made with RCONN_CALL_RESEND: then
 * the link sends it again on its next connection, so such a call must be
 * idempotent (keyed by a lease, a call id, or a pure read).  A call Redis
 * answered without running it (OOM, MOVED, ASK, TRYAGAIN, CLUSTERDOWN,
 * LOADING, READONLY, MASTERDOWN: errors.h crawl_retry_reply, or "OOM") is
 * always sent again: the link goes down with that answer as its error.
 * Not thread-safe: a call belongs to its link's thread. */
#define RCONN_CALL_RESEND 1u /* may run twice: sent again after a lost reply */
/* Done only once its writes reached the replicas of its master (on a Redis
 * Cluster whose master had replicas when the link connected to it):
 * a WAIT follows it on its connection, and its reply is handed over when
 * the WAIT answers (RCONN_REPLICA_WAIT_MS at most: past it, done as is).
 * A connection lost before the WAIT answered loses the call as above, so a
 * call whose write a failover must not lose is RESEND as well. */
#define RCONN_CALL_REPLICATED 2u
#define RCONN_REPLICA_WAIT_MS 2000

typedef struct rconn_call rconn_call_t;
/* A new call for slot's master (any slot on a plain Redis); NULL on out of
 * memory. */
rconn_call_t *rconn_call_new(int slot, unsigned flags);
/* Its arguments, to be pushed before it is sent. */
rconn_args_t *rconn_call_args(rconn_call_t *c);
/* 1 once answered or failed, 0 while queued or in flight. */
int rconn_call_done(const rconn_call_t *c);
/* Once done: 0 (answered: rconn_call_reply), or CRAWL_EREDIS (lost with its
 * connection), CRAWL_ENOMEM (its arguments); CRAWL_EINVAL while not done. */
int rconn_call_status(const rconn_call_t *c);
/* The reply of an answered call (owned by the call: valid until it is
 * freed; it may be an error reply), else NULL. */
struct redisReply *rconn_call_reply(const rconn_call_t *c);
/* Takes the call off its link (a call in flight keeps its place, its reply
 * dropped when it comes) and frees it.  Accepts NULL. */
void rconn_call_free(rconn_call_t *c);

/* ---- a link: one thread's connections, and the one owner of them -----------
 * A link holds one connection to each server its calls go to (one on a
 * plain Redis; the masters of their slots on a Redis Cluster, found from
 * the map when a slot is first used after a connect).  It queues the calls
 * handed to it, writes them in order (pipelined: any number in flight),
 * gives each its reply as it comes (rconn_link_poll never waits;
 * rconn_link_wait does), notices a loss (an I/O error, no reply within
 * RCONN_COMMAND_TIMEOUT_MS, a reply saying a call did not run) and keeps
 * the reason (rconn_link_error), and on a connect (rconn_link_connect,
 * when the caller's reconnect policy says so) sends again what is safe:
 * calls never written, calls Redis did not run, and RCONN_CALL_RESEND calls
 * whose replies were lost, in their first order.  With a Functions library
 * set (rconn_link_set_library) it loads it on every new connection and
 * sends again a call answered "Function not found" after loading it.
 * Not thread-safe: a link belongs to one thread. */
typedef struct rconn_link rconn_link_t;

/* A link to r (borrowed: it outlives the link), down until the first
 * rconn_link_connect.  NULL on out of memory. */
rconn_link_t *rconn_link_new(const rconn_t *r);
/* Closes its connections; every call still on it is failed (CRAWL_EREDIS)
 * and left to its owner.  Accepts NULL. */
void rconn_link_free(rconn_link_t *l);
/* The library text (copied) loaded on every connection from now on (at
 * once on the open ones: 0, or the failure with rconn_link_error). */
int rconn_link_set_library(rconn_link_t *l, const char *text);
/* One try to be up: connects to the server of the route slot (rconn_open's)
 * and, later, to each other server its calls need.  With hold, the calls
 * kept from before stay unsent until rconn_link_resume (the caller first
 * sends what must go before them: a check, a reconcile); new calls go out
 * at once.  0, or CRAWL_EREDIS (still down; why: rconn_link_error). */
int rconn_link_connect(rconn_link_t *l, int hold);
/* Sends the calls a held connect kept. */
void rconn_link_resume(rconn_link_t *l);
/* The caller takes the link down (why: its error): as a loss. */
void rconn_link_drop(rconn_link_t *l, const char *why);
/* 1 while up. */
int rconn_link_up(const rconn_link_t *l);
/* 1 when the link's Redis is a Redis Cluster (rconn_is_cluster). */
int rconn_link_is_cluster(const rconn_link_t *l);
/* Why the link last went down or failed to connect, in Redis's or the
 * network's words ("" if never). */
const char *rconn_link_error(const rconn_link_t *l);
/* Hands c over (its arguments built): queued, and written at once when the
 * link is up.  0, or CRAWL_EINVAL (c on a link already).  A failure of the
 * link shows as its calls' status and as rconn_link_poll's answer. */
int rconn_link_send(rconn_link_t *l, rconn_call_t *c);
/* Between cork and uncork (they nest), the calls handed over are queued,
 * not written; the last uncork writes them, one write a server: a
 * pipeline that costs one round trip. */
void rconn_link_cork(rconn_link_t *l);
void rconn_link_uncork(rconn_link_t *l);
/* Takes what the connections hold without waiting: writes queued calls,
 * reads every reply there, completes their calls.  0, or CRAWL_EREDIS when
 * the link went down (now or before). */
int rconn_link_poll(rconn_link_t *l);
/* Waits until c (on l) is done, reading and completing the calls before it
 * meanwhile.  0 (c done: its status says how), or CRAWL_EREDIS (the link is
 * down: c failed, or is kept for the next connect). */
int rconn_link_wait(rconn_link_t *l, rconn_call_t *c);
/* The sockets with calls awaiting replies (to wait for with epoll), into
 * fds[0..max); returns how many. */
size_t rconn_link_fds(const rconn_link_t *l, int *fds, size_t max);
/* Calls queued, held or in flight (the link's own included). */
size_t rconn_link_pending(const rconn_link_t *l);
/* Writes done so far, a write to one server each: the round trips. */
uint64_t rconn_link_round_trips(const rconn_link_t *l);
/* The connection to slot's server, for blocking use by the caller (a
 * module with its own commands, e.g. opening a Bloom filter), once every
 * call in flight on it has its reply; valid until the next call on l.
 * NULL when the link is down or the server cannot be reached (it is then
 * down, why: rconn_link_error). */
struct redisContext *rconn_link_context(rconn_link_t *l, int slot);

#endif
