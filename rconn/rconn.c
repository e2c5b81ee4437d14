/*
 * rconn.c -- where the crawl's Redis is (rconn.h): a shared server, plain
 * or a Redis Cluster, or the embedded one; connections routed to a slot's
 * master.
 *
 * DESIGN: rconn_open parses the URLs (spec.c), then asks their nodes for
 * the slot map (topology.c); without URLs it starts or joins the embedded
 * server (embedded.c), a plain Redis at a known address.  The topology
 * stays, behind a mutex, only to route: each connect asks it for the map
 * again (one round trip: connects are rare, and a stale map after a
 * failover would send the worker to a dead or demoted node) and connects to
 * the slot's master as to a plain server (connect.c).  A single URL whose
 * server does not answer at open is kept as a plain Redis: the first
 * connect that fails says why.
 */
#include "rconn_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RC_MASTERS_RETRY_MS 20000 /* rconn_each_master waits this long for a master */

/* The description of a shared server, without the password. */
static void describe_shared(rconn_t *r, const char *const *url, size_t n)
{
    const char *at = r->spec.password ? strrchr(url[0], '@') : NULL;
    if (at)
        snprintf(r->desc, sizeof r->desc, "redis://***@%.4000s", at + 1);
    else
        snprintf(r->desc, sizeof r->desc, "%.4000s", url[0]);
    size_t used = strlen(r->desc);
    if (r->cluster && n > 1)
        used += (size_t)snprintf(r->desc + used, sizeof r->desc - used, " and %zu more", n - 1);
    if (r->cluster && used < sizeof r->desc)
        snprintf(r->desc + used, sizeof r->desc - used, " (a Redis Cluster; keys in slot %d)",
                 r->route_slot);
}

/* The servers the n URLs name: a Redis Cluster or one plain Redis (its
 * topology kept), or a single URL's server not answering yet (plain). */
static int open_shared(rconn_t *r, const char *const *url, size_t n, char *err, size_t errlen)
{
    rc_spec_t *spec = &r->spec;
    for (size_t i = 0; i < n; i++)
        if (rc_spec_parse(spec, url[i], err, errlen) < 0)
            return CRAWL_EINVAL;
    int several = spec->n > 1, code;
    char e2[512];
    r->topo = rc_topo_open(spec, &code, e2, sizeof e2);
    if (!r->topo && (several || code != CRAWL_EREDIS)) {
        snprintf(err, errlen, "%s", e2);
        return code;
    }
    r->cluster = r->topo && rc_topo_is_cluster(r->topo);
    if (several && !r->cluster) {
        snprintf(err, errlen, "bad Redis URL '%s'%s: several nodes, but not a Redis Cluster",
                 url[0], n > 1 ? " and the other --redis" : "");
        return CRAWL_EINVAL;
    }
    if (!r->cluster) { /* one plain server: no map to keep */
        rc_topo_close(r->topo);
        r->topo = NULL;
        if (rc_addr_copy(&r->plain, &spec->addrs[0]) < 0)
            return CRAWL_ENOMEM;
    }
    describe_shared(r, url, n);
    return 0;
}

rconn_t *rconn_open(const rconn_specs_t *specs, const char *data_dir, const char *route_key,
                    char *err, size_t errlen)
{
    rconn_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->route_slot = route_key ? rconn_key_slot(route_key, strlen(route_key)) : 0;
    const char *env = getenv("REDIS_URL");
    const char *const *url = specs && specs->n ? specs->url : &env;
    size_t n = specs && specs->n ? specs->n : 1;
    int rc = 0;
    if (n > RCONN_MAX_SPECS) {
        snprintf(err, errlen, "more than %d Redis URLs", RCONN_MAX_SPECS);
        rc = CRAWL_EINVAL;
    } else if (url[0] && *url[0]) {
        rc = open_shared(r, url, n, err, errlen);
    } else {
        r->embedded = rc_embedded_open(data_dir ? data_dir : RCONN_DEFAULT_DATA_DIR,
                                       specs ? specs->embed : RCONN_EMBED_OWN, &r->plain, r->desc,
                                       sizeof r->desc, err, errlen);
        rc = r->embedded ? 0 : CRAWL_EREDIS;
    }
    if (rc < 0) {
        rconn_close(r);
        return NULL;
    }
    return r;
}

rconn_t *rconn_open_url(const char *url, const char *data_dir, const char *route, char *err,
                        size_t errlen)
{
    rconn_specs_t s = {.url = {url}, .n = url != NULL};
    return rconn_open(&s, data_dir, route, err, errlen);
}

void rconn_close(rconn_t *r)
{
    if (!r)
        return;
    rc_embedded_close(r->embedded);
    rc_topo_close(r->topo);
    rc_addr_clear(&r->plain);
    rc_spec_clear(&r->spec);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int rc_route(const rconn_t *r, int slot, rc_addr_t *a, char *err, size_t errlen)
{
    if (!r->topo)
        return rc_addr_copy(a, &r->plain);
    rconn_t *m = (rconn_t *)r; /* the mutex and the map are not the caller's state */
    pthread_mutex_lock(&m->mu);
    rc_topo_refresh(m->topo); /* no node answered: the old map is kept, its owner tried */
    int rc = rc_topo_owner(m->topo, slot, a);
    pthread_mutex_unlock(&m->mu);
    if (rc == CRAWL_EREDIS)
        snprintf(err, errlen, "the Redis Cluster has no master for slot %d now", slot);
    return rc;
}

redisContext *rc_connect_to(const rconn_t *r, const rc_addr_t *a, char *err, size_t errlen)
{
    return rc_connect(a, r->spec.password, r->cluster ? 0 : r->spec.db, err, errlen);
}

int rc_route_slot(const rconn_t *r)
{
    return r->route_slot;
}

redisContext *rconn_connect_slot(const rconn_t *r, int slot, char *err, size_t errlen)
{
    rc_addr_t a;
    if (rc_route(r, slot, &a, err, errlen) < 0)
        return NULL;
    redisContext *c = rc_connect_to(r, &a, err, errlen);
    rc_addr_clear(&a);
    return c;
}

redisContext *rconn_connect(const rconn_t *r, char *err, size_t errlen)
{
    return rconn_connect_slot(r, r->route_slot, err, errlen);
}

int rconn_owners(const rconn_t *r, const int *slots, size_t n, char (*names)[RCONN_NAME_MAX],
                 char *err, size_t errlen)
{
    rconn_t *m = (rconn_t *)r;
    int rc = 0;
    if (m->topo) {
        pthread_mutex_lock(&m->mu);
        rc_topo_refresh(m->topo);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc_addr_t a;
        rc = m->topo ? rc_topo_owner(m->topo, slots[i], &a) : rc_addr_copy(&a, &m->plain);
        if (rc == 0)
            rc_addr_name(&a, names[i], RCONN_NAME_MAX);
        else
            snprintf(err, errlen, "the Redis Cluster has no master for slot %d now", slots[i]);
        if (rc == 0)
            rc_addr_clear(&a);
    }
    if (m->topo)
        pthread_mutex_unlock(&m->mu);
    return rc;
}

int rconn_is_cluster(const rconn_t *r)
{
    return r->cluster;
}

/* Connects to every master of a fresh map: *c and *names (n of them,
 * caller frees both arrays and redisFrees each), or the first failure. */
static int connect_masters(rconn_t *m, redisContext ***c, char (**names)[RCONN_NAME_MAX], size_t *n,
                           char *err, size_t errlen)
{
    rc_addr_t *a = NULL;
    pthread_mutex_lock(&m->mu);
    int rc =
        rc_topo_refresh(m->topo) == CRAWL_ENOMEM ? CRAWL_ENOMEM : rc_topo_masters(m->topo, &a, n);
    pthread_mutex_unlock(&m->mu);
    *c = rc == 0 ? calloc(*n ? *n : 1, sizeof **c) : NULL;
    *names = rc == 0 ? calloc(*n ? *n : 1, sizeof **names) : NULL;
    if (rc == 0 && (!*c || !*names))
        rc = CRAWL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        rc_addr_name(&a[i], (*names)[i], RCONN_NAME_MAX);
        if (!((*c)[i] = rc_connect(&a[i], m->spec.password, 0, err, errlen)))
            rc = CRAWL_EREDIS;
    }
    for (size_t i = 0; a && i < *n; i++)
        rc_addr_clear(&a[i]);
    free(a);
    return rc;
}

static void free_masters(redisContext **c, char (*names)[RCONN_NAME_MAX], size_t n)
{
    for (size_t i = 0; c && i < n; i++)
        if (c[i])
            redisFree(c[i]);
    free(c);
    free(names);
}

int rconn_each_master(const rconn_t *r, int (*fn)(redisContext *c, const char *addr, void *ud),
                      void *ud, char *err, size_t errlen)
{
    if (!r->topo) {
        redisContext *c = rc_connect(&r->plain, r->spec.password, r->spec.db, err, errlen);
        int rc = c ? fn(c, r->desc, ud) : CRAWL_EREDIS;
        if (c)
            redisFree(c);
        return rc;
    }
    redisContext **c = NULL;
    char(*names)[RCONN_NAME_MAX] = NULL;
    size_t n = 0;
    int rc;
    /* a master that does not answer (a failover under way): the map again,
     * at growing waits, for RC_MASTERS_RETRY_MS at most */
    for (unsigned wait = 10, spent = 0;; spent += wait, wait = wait < 500 ? wait * 2 : 500) {
        rc = connect_masters((rconn_t *)r, &c, &names, &n, err, errlen);
        if (rc != CRAWL_EREDIS || spent + wait > RC_MASTERS_RETRY_MS)
            break;
        free_masters(c, names, n);
        struct timespec ts = {wait / 1000, (long)(wait % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = fn(c[i], names[i], ud);
    free_masters(c, names, n);
    return rc;
}

const char *rconn_describe(const rconn_t *r)
{
    return r->desc;
}

int rconn_embedded_watch(rconn_t *r, char *msg, size_t msglen)
{
    if (!r || !r->embedded)
        return 0;
    pthread_mutex_lock(&r->mu); /* (desc: rconn_describe may read it elsewhere) */
    int rc = rc_embedded_watch(r->embedded, r->desc, sizeof r->desc, msg, msglen);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

pid_t rconn_embedded_pid(const rconn_t *r)
{
    return rc_embedded_pid(r->embedded);
}
