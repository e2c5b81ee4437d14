/*
 * cluster.h -- a Redis Cluster client over hiredis 0.14 (which has none), that
 * also drives a plain single Redis through the same calls.
 *
 * A cluster_t knows the slot map (which master owns each of the 16384 hash
 * slots), discovered from seed nodes with CLUSTER SHARDS (Redis 7), else
 * CLUSTER SLOTS, and keeps one connection per node, opened on first use and
 * opened again on the next use after it was lost.  A server not in cluster
 * mode is a "plain" Redis: every slot maps to it, nothing else changes.
 *
 * Two ways to call:
 *   - cluster_command_argv(): one blocking call to the owner of a key's
 *     slot, following MOVED (the map is refreshed) and ASK (ASKING, then the
 *     call once on the node named), backing off on TRYAGAIN and CLUSTERDOWN,
 *     and, on a lost or refused connection, refreshing the map from any
 *     reachable node and trying again (a promoted replica takes over), all
 *     bounded by cluster_config_t.retry_ms.
 *   - cluster_conn() for a caller that pipelines FCALLs whose keys share one
 *     hash tag: the connection of the slot's owner; cluster_classify() sorts
 *     each error reply, cluster_moved() / cluster_conn_addr() /
 *     cluster_lost() let it follow redirects itself.
 *
 * Errors: functions return 0 or a negative CRAWL_E* code (errors.h):
 * CRAWL_EREDIS for an unreachable node or map, or retries used up (transient:
 * crawl_transient() says 1), CRAWL_EINVAL for a bad argument, CRAWL_ENOMEM.
 * cluster_open() returns NULL with the reason in err.
 *
 * Thread-safety: none.  A cluster_t and the connections it hands out belong
 * to one thread, like a redisContext; each thread opens its own.
 */
#ifndef CRAWL_CLUSTER_H
#define CRAWL_CLUSTER_H

#include <stddef.h>

struct redisContext;
struct redisReply;

#define CLUSTER_NSLOTS 16384
#define CLUSTER_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define CLUSTER_DEFAULT_COMMAND_TIMEOUT_MS 30000
#define CLUSTER_DEFAULT_RETRY_MS 20000
#define CLUSTER_DEFAULT_MAX_REDIRECTS 16
#define CLUSTER_DEFAULT_REFRESH_MIN_MS 100
#define CLUSTER_MAX_HOST 256 /* longest host name or address, with its NUL */

/* The hash slot of a key: CRC16-XMODEM of the key, or of its hash tag (the
 * bytes between the first '{' and the first '}' after it, when there are
 * any), mod 16384.  Pure; thread-safe. */
int cluster_slot(const char *key, size_t len);

typedef struct cluster_config {
    int connect_timeout_ms; /* one node's TCP connect, ms */
    int command_timeout_ms; /* one reply, ms */
    int retry_ms;           /* most time one cluster_command_argv() spends waiting out TRYAGAIN,
                               CLUSTERDOWN and unreachable masters before CRAWL_EREDIS, ms */
    int max_redirects;      /* MOVED/ASK followed by one call before CRAWL_EREDIS */
    int refresh_min_ms;     /* least time between two map refreshes asked by MOVED, ms (in
                               between, the slot MOVED names is updated alone) */
} cluster_config_t;

/* Fills cfg with the CLUSTER_DEFAULT_* values. */
void cluster_config_defaults(cluster_config_t *cfg);

typedef struct cluster cluster_t;

/* Seed specs, n of them, each one of
 *     redis://[:password@]host:port[,host:port...][/db]
 *     host:port[,host:port...]
 *     unix:///path/to/redis.sock[?db=N]     (a plain Redis, or a discovery seed)
 * (port 6379 when left out).  The password (AUTH) goes to every node; a db
 * other than 0 is refused by a cluster (SELECT is a plain Redis's only).
 * Connects to the seeds in order until one answers and gives the map.
 * cfg NULL: the defaults.  Returns NULL with the reason in err. */
cluster_t *cluster_open(const char *const *seeds, size_t n, const cluster_config_t *cfg, char *err,
                        size_t errlen);
/* Checks the syntax of one seed spec (the forms above) without connecting:
 * 0, or CRAWL_EINVAL with the reason in err, CRAWL_ENOMEM.  Thread-safe. */
int cluster_check_seed(const char *spec, char *err, size_t errlen);
/* Closes every connection.  Accepts NULL. */
void cluster_close(cluster_t *c);

/* 1 if the server is a Redis Cluster, 0 for a plain Redis. */
int cluster_is_cluster(const cluster_t *c);
/* Full map refreshes done so far (the one in cluster_open included). */
unsigned long cluster_refreshes(const cluster_t *c);
/* "host:port" of the master that owns slot in the current map, or NULL
 * (bad slot, or no owner).  Valid until the map changes (any call but this
 * one and cluster_slot may change it). */
const char *cluster_slot_owner(const cluster_t *c, int slot);

/* Asks the map again from the known nodes, then the seeds, keeping the
 * connections of nodes still there.  0, or CRAWL_EREDIS when no node
 * answered (the old map is kept). */
int cluster_refresh(cluster_t *c);

/* The connection to the master of slot (0..16383), opened if needed or
 * lost (ctx->err set).  An unreachable master makes it refresh the map once
 * and try the owner it names.  *out is owned by c: valid until the next
 * call on c; after an I/O error on it, call cluster_lost().  0, CRAWL_EREDIS,
 * CRAWL_EINVAL. */
int cluster_conn(cluster_t *c, int slot, struct redisContext **out);
/* The connection to the node at host:port (an ASK target), opened if
 * needed.  Same ownership and errors as cluster_conn. */
int cluster_conn_addr(cluster_t *c, const char *host, int port, struct redisContext **out);
/* Tells c that ctx (one it handed out) failed: it is dropped (reopened on
 * next use) and, on a cluster, the map is refreshed from any reachable
 * node.  Returns what cluster_refresh returns (0 on a plain Redis). */
int cluster_lost(cluster_t *c, struct redisContext *ctx);

/* What an error reply asks of the caller. */
typedef enum cluster_kind {
    CLUSTER_REPLY_OK = 0,      /* not an error reply */
    CLUSTER_REPLY_ERROR,       /* any other error: the caller's */
    CLUSTER_REPLY_MOVED,       /* the slot has a new owner: cluster_moved(), send it there */
    CLUSTER_REPLY_ASK,         /* send ASKING then the call to that node, once */
    CLUSTER_REPLY_TRYAGAIN,    /* multi-key call during a migration: wait, try again */
    CLUSTER_REPLY_CLUSTERDOWN, /* the cluster cannot serve now: wait, try again */
} cluster_kind_t;

typedef struct cluster_redirect {
    cluster_kind_t kind;
    int slot;                    /* MOVED/ASK: the slot; else -1 */
    char host[CLUSTER_MAX_HOST]; /* MOVED/ASK: the node named; else "" */
    int port;                    /* MOVED/ASK; else 0 */
} cluster_redirect_t;

/* Sorts reply (NULL: CLUSTER_REPLY_OK) into *rd and returns rd->kind.  A
 * MOVED or ASK that cannot be parsed is CLUSTER_REPLY_ERROR.  Pure. */
cluster_kind_t cluster_classify(const struct redisReply *reply, cluster_redirect_t *rd);
/* Notes a MOVED: the slot's owner is rd's node at once, and the whole map is
 * refreshed unless one was less than refresh_min_ms ago.  0, CRAWL_EINVAL
 * (not a MOVED), CRAWL_ENOMEM. */
int cluster_moved(cluster_t *c, const cluster_redirect_t *rd);

/* One blocking call: argv[0..argc) (lengths argvlen, NULL: strlen) to the
 * owner of key's slot (key NULL: the owner of slot 0, for a keyless call),
 * following MOVED, ASK, TRYAGAIN, CLUSTERDOWN and, on a cluster, lost
 * connections as said above.  A call whose connection broke after it was
 * sent is sent again: give only calls that are safe to repeat.  0 with
 * *reply set (caller frees with freeReplyObject; it may be an error reply
 * that is not a redirect, e.g. a script's error), or CRAWL_EREDIS (no reply:
 * unreachable, or retries or redirects used up), CRAWL_ENOMEM,
 * CRAWL_EINVAL. */
int cluster_command_argv(cluster_t *c, const char *key, size_t keylen, int argc, const char **argv,
                         const size_t *argvlen, struct redisReply **reply);

/* Every master that owns slots (the one server of a plain Redis),
 * connected: out[i] (owned by c, valid until the next call on c) and, if
 * addrs is not NULL, addrs[i] its "host:port" (same lifetime), at most cap
 * of them, their number in *n.  A master that cannot be reached makes it
 * refresh the map and start again (bounded by retry_ms).  0, CRAWL_EREDIS,
 * CRAWL_ETOOLONG (more than cap masters, e.g. cap 0 to count them; *n says
 * how many). */
int cluster_masters(cluster_t *c, struct redisContext **out, const char **addrs, size_t cap,
                    size_t *n);

#endif
