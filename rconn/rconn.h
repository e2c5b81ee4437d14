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
#include <sys/types.h>

struct redisContext;

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

#endif
