/* fr_link.h -- a frontier handle on a link of its own, for the suites that
 * open handles on a test's redis-server: fr_open(c, ...) opens the link to
 * the server c is connected to (its host and port, or its socket) and the
 * handle on it; fr_close closes both.  fr_link_of(f) gives the link (to
 * poll it, drop it, connect it again).  A table of the handles open, per
 * test file (static). */
#ifndef TESTS_FR_LINK_H
#define TESTS_FR_LINK_H

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "frontier.h"
#include "rconn.h"

#define FR_LINK_MAX 256 /* handles one test file keeps open at once */

typedef struct fr_link_entry {
    frontier_t *f;
    rconn_t *r; /* NULL: the caller's (fr_open_on) */
    rconn_link_t *l;
} fr_link_entry_t;

static fr_link_entry_t fr_links[FR_LINK_MAX];

/* The URL of the server c is connected to. */
static inline void fr_url_of(const redisContext *c, char *buf, size_t len)
{
    if (c->connection_type == REDIS_CONN_UNIX)
        snprintf(buf, len, "unix://%s", c->unix_sock.path);
    else
        snprintf(buf, len, "redis://%s:%d", c->tcp.host, c->tcp.port);
}

/* frontier_open on a new link of r (borrowed, outlives the handle). */
static inline frontier_t *fr_open_on(const rconn_t *r, const frontier_config_t *cfg, bloom_t *b,
                                     char *err, size_t errlen)
{
    size_t i = 0;
    while (i < FR_LINK_MAX && fr_links[i].f)
        i++;
    if (i == FR_LINK_MAX) {
        snprintf(err, errlen, "fr_link.h: too many handles open");
        return NULL;
    }
    rconn_link_t *l = rconn_link_new(r);
    if (!l || rconn_link_connect(l, 0) < 0) {
        snprintf(err, errlen, "link: %s", l ? rconn_link_error(l) : "out of memory");
        rconn_link_free(l);
        return NULL;
    }
    frontier_t *f = frontier_open(l, cfg, b, err, errlen);
    if (!f) {
        rconn_link_free(l);
        return NULL;
    }
    fr_links[i] = (fr_link_entry_t){.f = f, .l = l};
    return f;
}

/* frontier_open on a new link to the server c is connected to. */
static inline frontier_t *fr_open(const redisContext *c, const frontier_config_t *cfg, bloom_t *b,
                                  char *err, size_t errlen)
{
    char url[512];
    fr_url_of(c, url, sizeof url);
    rconn_t *r = rconn_open_url(url, NULL, NULL, err, errlen);
    if (!r)
        return NULL;
    frontier_t *f = fr_open_on(r, cfg, b, err, errlen);
    if (!f) {
        rconn_close(r);
        return NULL;
    }
    for (size_t i = 0; i < FR_LINK_MAX; i++)
        if (fr_links[i].f == f)
            fr_links[i].r = r;
    return f;
}

static inline fr_link_entry_t *fr_entry_of(const frontier_t *f)
{
    for (size_t i = 0; f && i < FR_LINK_MAX; i++)
        if (fr_links[i].f == f)
            return &fr_links[i];
    return NULL;
}

/* The link of a handle fr_open made (NULL for another). */
static inline rconn_link_t *fr_link_of(const frontier_t *f)
{
    fr_link_entry_t *e = fr_entry_of(f);
    return e ? e->l : NULL;
}

/* frontier_close, then its link (and rconn).  Accepts NULL. */
static inline void fr_close(frontier_t *f)
{
    fr_link_entry_t *e = fr_entry_of(f);
    frontier_close(f);
    if (!e)
        return;
    rconn_link_free(e->l);
    rconn_close(e->r);
    memset(e, 0, sizeof *e);
}

#endif
