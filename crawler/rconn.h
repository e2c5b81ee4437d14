/*
 * rconn.h -- where the crawl's Redis is, and connections to it.
 *
 * Either a shared server named by a URL (--redis, or the REDIS_URL
 * environment variable):
 *     redis://[:password@]host[:port][/db]     (port 6379, db 0 by default)
 *     redis://[:password@]host:port,host:port,...   (nodes of a Redis Cluster)
 *     unix:///path/to/redis.sock[?db=N]
 * or, with neither, an embedded private redis-server that this process starts
 * as a child in --data-dir (unix socket, append-only persistence so an
 * interrupted crawl resumes) and stops on rconn_close().  Everything after
 * that is the same code: callers only see rconn_connect().
 *
 * A Redis Cluster (any node of it named: the URL's server answers CLUSTER
 * SHARDS) is found out at open.  rconn_open() is told a route key: every
 * connection goes to the master that owns that key's hash slot, as the
 * cluster's map says at the time of the connect (asked again each time, so
 * a reconnect after a failover or a resharding finds the new owner).  The
 * frontier's keys of one crawl share one hash tag (frontier/keys.h), so one
 * route serves them all.  A call the cluster redirects (MOVED, ASK) or
 * refuses for now (TRYAGAIN, CLUSTERDOWN) is a lost connection to the
 * caller (errors.h crawl_retry_reply): it connects again and is routed
 * anew.
 *
 * Errors: constructors return NULL and write the reason into err.
 * Thread-safety: rconn_connect() may be called from any thread once open.
 */
#ifndef CRAWLER_RCONN_H
#define CRAWLER_RCONN_H

#include <stddef.h>
#include <sys/types.h>

struct redisContext;

#define RCONN_DEFAULT_DATA_DIR "./crawl-data"
#define RCONN_CONNECT_TIMEOUT_MS 5000
#define RCONN_COMMAND_TIMEOUT_MS 30000

typedef struct rconn_target {
    char *host; /* NULL for a unix socket */
    int port;
    char *unix_path; /* NULL for TCP */
    char *password;  /* NULL: no AUTH */
    int db;
} rconn_target_t;

/* Parses a Redis URL into t (strings malloc'ed; rconn_target_clear frees).
 * Returns 0, or -1 with a message in err. */
int rconn_parse_url(const char *url, rconn_target_t *t, char *err, size_t errlen);
void rconn_target_clear(rconn_target_t *t);

/* Checks a Redis URL's syntax without connecting (what
 * rconn_open would refuse before any connect: a bad scheme, port, db or
 * node list).  0, or -1 with the reason in err.  Thread-safe. */
int rconn_check_url(const char *url, char *err, size_t errlen);

typedef struct rconn rconn_t;

#define RCONN_MAX_SPECS 16 /* Redis URLs one server may be named by (--redis, repeated) */

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
 * not answer a PING. */
int rconn_embedded_running(const char *data_dir, char *buf, size_t buflen);

/* specs: the Redis's URLs (NULL or none: $REDIS_URL, or with neither, an
 * embedded redis-server in data_dir (NULL: RCONN_DEFAULT_DATA_DIR)).  route:
 * a key (NUL-terminated) whose hash slot's owner every connection goes to
 * on a Redis Cluster (NULL: slot 0); a plain Redis ignores it. */
rconn_t *rconn_open(const rconn_specs_t *specs, const char *data_dir, const char *route, char *err,
                    size_t errlen);
/* rconn_open of one URL (NULL: $REDIS_URL or embedded). */
rconn_t *rconn_open_url(const char *url, const char *data_dir, const char *route, char *err,
                        size_t errlen);
/* A new connection with AUTH and SELECT done and timeouts set, on a cluster
 * to the route's owner; caller frees with redisFree().  NULL with a message
 * in err.  Thread-safe. */
struct redisContext *rconn_connect(const rconn_t *r, char *err, size_t errlen);
/* 1 when r is a Redis Cluster, 0 for a plain or embedded Redis. */
int rconn_is_cluster(const rconn_t *r);
/* On a Redis Cluster, where each key's slot is served, for the frontier's
 * handles (frontier_config_t.router: the shards of a crawl are spread over
 * the masters); NULL on a plain or embedded Redis (every key on the one
 * server).  Valid until rconn_close; thread-safe. */
struct frontier_router;
const struct frontier_router *rconn_router(const rconn_t *r);
/* Calls fn once per master (the one server of a plain Redis) with a new
 * connection to it (AUTH done; fn must not free it) and its "host:port"
 * (or the describe text of a plain Redis), in the map's order; stops at the
 * first fn that returns < 0 and returns that.  0, or CRAWL_EREDIS (a master
 * unreachable: message in err), or fn's code. */
int rconn_each_master(const rconn_t *r,
                      int (*fn)(struct redisContext *c, const char *addr, void *ud), void *ud,
                      char *err, size_t errlen);
/* Human-readable location, e.g. "redis://127.0.0.1:6379/0" or
 * "embedded redis-server (pid 123) in ./crawl-data". */
const char *rconn_describe(const rconn_t *r);
/* pid of the embedded server, or 0 when joining a shared one. */
pid_t rconn_embedded_pid(const rconn_t *r);
/* Closes; stops the embedded server (it saves its append-only file).
 * Accepts NULL. */
void rconn_close(rconn_t *r);

#endif
