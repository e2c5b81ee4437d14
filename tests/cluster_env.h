/*
 * cluster_env.h -- a real local Redis Cluster for one test (fx_cluster.c).
 *
 * Nodes are `redis-server --cluster-enabled yes` processes on free loopback
 * ports, each in its own directory under one temporary directory (its own
 * nodes.conf), with --maxmemory, no persistence, and PR_SET_PDEATHSIG so
 * none outlives the test.  The masters split the 16384 slots evenly (master
 * i gets a contiguous range, in order); each has `replicas` replicas.
 * Start returns only once every node says cluster_state:ok, knows every
 * node, and every replica's link to its master is up; NULL (and fx_error())
 * otherwise, after stopping what it started: a test asserts on it and fails
 * loudly.  Nodes 0..masters-1 are the masters, then master 0's replicas,
 * master 1's, ...
 */
#ifndef TESTS_CLUSTER_ENV_H
#define TESTS_CLUSTER_ENV_H

#include <stddef.h>
#include <sys/types.h>

struct redisContext;

#define FX_CLUSTER_MAX_NODES 12
#define FX_CLUSTER_MAXMEMORY "128mb"

typedef struct fx_cluster fx_cluster_t;

/* masters >= 1, replicas per master >= 0, node_timeout_ms: each node's
 * cluster-node-timeout (how long before a dead master is failed over). */
fx_cluster_t *fx_cluster_start(int masters, int replicas, int node_timeout_ms);
/* Stops every node still running (SIGTERM, then SIGKILL), removes the
 * directory.  Accepts NULL. */
void fx_cluster_stop(fx_cluster_t *c);

int fx_cluster_nnodes(const fx_cluster_t *c);
int fx_cluster_port(const fx_cluster_t *c, int i);
pid_t fx_cluster_pid(const fx_cluster_t *c, int i);
/* Node i's 40-character cluster id. */
const char *fx_cluster_id(const fx_cluster_t *c, int i);
/* "redis://127.0.0.1:<port>" of node i (valid until fx_cluster_stop). */
const char *fx_cluster_url(const fx_cluster_t *c, int i);
/* A new connection to node i (caller frees with redisFree), NULL on
 * failure (fx_error). */
struct redisContext *fx_cluster_connect(const fx_cluster_t *c, int i);
/* The index of the master that owns slot, as node `ask` sees it (CLUSTER
 * SLOTS), or -1 (fx_error). */
int fx_cluster_owner(const fx_cluster_t *c, int ask, int slot);
/* Kills node i with sig and reaps it (bounded); 0 or -1. */
int fx_cluster_kill(fx_cluster_t *c, int i, int sig);
/* Polls (every 50 ms, at most timeout_ms) until node i says ROLE master and
 * cluster_state:ok.  0, or -1 with fx_error. */
int fx_cluster_wait_master(const fx_cluster_t *c, int i, unsigned timeout_ms);
/* Moves nslots slots from master `from` to master `to` with redis-cli
 * --cluster reshard (the source's lowest slots first), its output in log:
 * 0, or -1 with fx_error (the start of the log).  Bounded: 120 s. */
int fx_cluster_reshard(fx_cluster_t *c, int from, int to, int nslots, const char *log);
/* The first slot of master m's lowest range (what a reshard from m moves
 * first), as node 0 sees it, or -1 (fx_error). */
int fx_cluster_first_slot(const fx_cluster_t *c, int m);
/* Keys of node i matching the glob pattern (SCAN), or -1 (fx_error). */
long long fx_cluster_count_keys(const fx_cluster_t *c, int i, const char *pattern);
/* Keys of node i in slot (CLUSTER COUNTKEYSINSLOT), or -1 (fx_error). */
long long fx_cluster_keys_in_slot(const fx_cluster_t *c, int i, int slot);

#endif
