/*
 * command.c -- one blocking call that follows the cluster wherever the slot
 * went.
 *
 * DESIGN: a loop over tries, each one sending the call to the slot's owner
 * (or, right after an ASK, "ASKING" and the call pipelined to the node ASK
 * named: the ASKING flag lasts one command) and sorting the reply:
 *   - not an error, or an error of the caller's: that is the answer;
 *   - MOVED: cluster_moved() (the slot at once, the map soon), next try;
 *   - ASK: next try on the named node, the map left alone;
 *   - TRYAGAIN, CLUSTERDOWN (after which the map is asked again, since a
 *     failover may have changed it): wait the next backoff step;
 *   - no reply (refused, lost, timed out): cluster_lost() drops the
 *     connection and refreshes the map, then wait the next backoff step;
 *     on a plain Redis there is nobody else to ask, so CRAWL_EREDIS at
 *     once, as a bare redisCommand would fail (the connection is opened
 *     again on the next call).
 * Bounds: at most max_redirects MOVED/ASK, and waits that would end past
 * retry_ms after the call began are not started (CRAWL_EREDIS instead).
 */
#include "cluster_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

typedef struct try_state {
    uint64_t deadline;
    unsigned waits;
    int redirects;
    int asking; /* the next try goes to host:port with ASKING */
    char host[CLUSTER_MAX_HOST];
    int port;
} try_state_t;

/* Sends the call (ASKING first when asking); the reply, or NULL with
 * ctx->err set. */
static redisReply *send_call(redisContext *ctx, int asking, int argc, const char **argv,
                             const size_t *argvlen)
{
    void *r = NULL;
    if (asking && redisAppendCommand(ctx, "ASKING") != REDIS_OK)
        return NULL;
    if (redisAppendCommandArgv(ctx, argc, argv, argvlen) != REDIS_OK)
        return NULL;
    if (asking) {
        if (redisGetReply(ctx, &r) != REDIS_OK)
            return NULL;
        freeReplyObject(r);
        r = NULL;
    }
    if (redisGetReply(ctx, &r) != REDIS_OK)
        return NULL;
    return r;
}

/* After a redirect reply: 0 to try again, or the call's error code. */
static int redirected(cluster_t *c, try_state_t *st, cluster_redirect_t *rd, redisContext *ctx)
{
    if (++st->redirects > c->cfg.max_redirects)
        return CRAWL_EREDIS;
    if (!rd->host[0] && ctx->tcp.host) /* a node that does not know its own address */
        snprintf(rd->host, sizeof rd->host, "%s", ctx->tcp.host);
    if (rd->kind == CLUSTER_REPLY_MOVED) {
        st->asking = 0;
        return cluster_moved(c, rd) == CRAWL_ENOMEM ? CRAWL_ENOMEM : 0;
    }
    st->asking = 1;
    memcpy(st->host, rd->host, sizeof st->host);
    st->port = rd->port;
    return 0;
}

/* One try: 1 with *reply set when the call is answered, 0 to try again,
 * or a negative code. */
static int one_try(cluster_t *c, try_state_t *st, int slot, int argc, const char **argv,
                   const size_t *argvlen, redisReply **reply)
{
    redisContext *ctx = NULL;
    int rc =
        st->asking ? cluster_conn_addr(c, st->host, st->port, &ctx) : cluster_conn(c, slot, &ctx);
    if (rc && rc != CRAWL_EREDIS)
        return rc;
    redisReply *r = rc ? NULL : send_call(ctx, st->asking, argc, argv, argvlen);
    st->asking = 0;
    if (!r) {
        if (ctx && ctx->err == REDIS_ERR_OOM)
            return CRAWL_ENOMEM;
        if (ctx && cluster_lost(c, ctx) == CRAWL_ENOMEM)
            return CRAWL_ENOMEM;
        if (!c->is_cluster || cl_backoff(&st->waits, st->deadline) < 0)
            return CRAWL_EREDIS;
        return 0;
    }
    cluster_redirect_t rd;
    switch (cluster_classify(r, &rd)) {
    case CLUSTER_REPLY_OK:
    case CLUSTER_REPLY_ERROR:
        *reply = r;
        return 1;
    case CLUSTER_REPLY_MOVED:
    case CLUSTER_REPLY_ASK:
        freeReplyObject(r);
        return redirected(c, st, &rd, ctx);
    case CLUSTER_REPLY_CLUSTERDOWN:
        if (cl_refresh_soon(c) == CRAWL_ENOMEM) {
            freeReplyObject(r);
            return CRAWL_ENOMEM;
        }
        /* fall through */
    case CLUSTER_REPLY_TRYAGAIN:
        break;
    }
    freeReplyObject(r);
    return cl_backoff(&st->waits, st->deadline) < 0 ? CRAWL_EREDIS : 0;
}

int cluster_command_argv(cluster_t *c, const char *key, size_t keylen, int argc, const char **argv,
                         const size_t *argvlen, redisReply **reply)
{
    if (!c || argc < 1 || !argv || !reply)
        return CRAWL_EINVAL;
    *reply = NULL;
    int slot = key ? cluster_slot(key, keylen) : 0;
    try_state_t st = {.deadline = cl_now_ms() + (uint64_t)c->cfg.retry_ms};
    for (;;) {
        int rc = one_try(c, &st, slot, argc, argv, argvlen, reply);
        if (rc)
            return rc > 0 ? 0 : rc;
    }
}
