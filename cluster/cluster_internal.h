/*
 * cluster_internal.h -- what the cluster module's files share: the handle's
 * body, the node table, seeds, and the map as discovery reads it.
 */
#ifndef CRAWL_CLUSTER_INTERNAL_H
#define CRAWL_CLUSTER_INTERNAL_H

#include <stdint.h>

#include "cluster.h"
#include "errors.h"

#define CL_NONE 0xffffu /* slots[] entry: no owner known */
#define CL_MAX_NODES 4096

/* Where to connect: TCP host:port, or a unix socket (path set). */
typedef struct cl_addr {
    char host[CLUSTER_MAX_HOST];
    int port;
    char *path; /* unix socket, malloc'ed; NULL for TCP */
} cl_addr_t;

typedef struct cl_node {
    cl_addr_t a;
    char name[CLUSTER_MAX_HOST + 8]; /* "host:port" or "unix:<path>" */
    struct redisContext *ctx;        /* NULL: not open (yet, or since it was lost) */
    int master;                      /* owns slots in the current map */
    int failed;                      /* the last connect to it failed */
    int tried;                       /* asked for the map in this refresh */
} cl_node_t;

struct cluster {
    cluster_config_t cfg;
    cl_addr_t *seeds;
    size_t nseeds;
    char *password; /* AUTH for every node; NULL: none */
    int db;         /* SELECT on a plain Redis */
    int db_set;     /* a seed spec named db */
    int is_cluster;
    cl_node_t *nodes; /* masters of the map first, then ASK targets */
    size_t nnodes, capnodes;
    uint64_t last_refresh_ms;
    unsigned long refreshes;
    char lasterr[384];              /* why the last connect or map question failed */
    uint16_t slots[CLUSTER_NSLOTS]; /* index in nodes, or CL_NONE */
};

/* One range of slots and its master, as a node's reply gives them. */
typedef struct cl_range {
    int start, end; /* inclusive */
    char host[CLUSTER_MAX_HOST];
    int port;
} cl_range_t;

typedef struct cl_map {
    int plain; /* the node is not in cluster mode */
    cl_range_t *r;
    size_t n, cap;
} cl_map_t;

/* seeds.c: parses one seed spec, appending to c->seeds (password and db
 * to c).  0, or -1 with err. */
int cl_parse_seed(cluster_t *c, const char *spec, char *err, size_t errlen);
void cl_addr_clear(cl_addr_t *a);

/* map.c: asks ctx (reached as host) for its map.  0, CRAWL_EREDIS (ctx
 * failed), CRAWL_EREPLY (an answer that is not a map), CRAWL_ENOMEM. */
int cl_fetch_map(struct redisContext *ctx, const char *host, cl_map_t *m);
void cl_map_clear(cl_map_t *m);

/* cluster.c */
uint64_t cl_now_ms(void);
void cl_sleep_ms(unsigned ms);
/* A new connection to a (AUTH and SELECT done), or NULL. */
struct redisContext *cl_connect(cluster_t *c, const cl_addr_t *a, int select_db);
/* The node at host:port, added (not a master) when unknown; NULL on OOM
 * or a full table. */
cl_node_t *cl_node_get(cluster_t *c, const char *host, int port);
/* Opens n's connection when it has none or lost it.  0 or CRAWL_EREDIS. */
int cl_node_open(cluster_t *c, cl_node_t *n);
void cl_node_drop(cl_node_t *n);
/* Refresh unless one was done less than refresh_min_ms ago (then 0). */
int cl_refresh_soon(cluster_t *c);
/* Sleeps the next of growing waits (*waits counts them), or returns -1
 * without sleeping when it would end past deadline (cl_now_ms clock). */
int cl_backoff(unsigned *waits, uint64_t deadline);

#endif
