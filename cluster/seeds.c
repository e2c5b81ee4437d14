/*
 * seeds.c -- the seed specs cluster_open() takes.
 *
 * DESIGN: the redis:// and unix:// forms are crawler/rconn.c's
 * (redis://[:password@]host[:port][/db], unix:///path[?db=N]) with one
 * addition: a comma-separated list of host[:port] where rconn takes one, so
 * a cluster is named by several of its nodes in one URL.  The bare form
 * host:port[,host:port] is the same list without the scheme.  Each seed is
 * appended to c->seeds; a password or db given by several specs must agree.
 */
#include "cluster_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cl_addr_clear(cl_addr_t *a)
{
    free(a->path);
    memset(a, 0, sizeof *a);
}

static int parse_long(const char *s, size_t n, long lo, long hi, long *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int add_seed(cluster_t *c, const cl_addr_t *a)
{
    cl_addr_t *s = realloc(c->seeds, (c->nseeds + 1) * sizeof *s);
    if (!s)
        return -1;
    c->seeds = s;
    s[c->nseeds++] = *a;
    return 0;
}

/* One "host[:port]" or "[v6]:port" of n bytes. */
static int parse_hostport(cluster_t *c, const char *p, size_t n)
{
    cl_addr_t a = {.port = 6379};
    const char *end = p + n, *colon, *h = p;
    size_t hlen;
    if (n && *p == '[') {
        const char *rb = memchr(p, ']', n);
        if (!rb)
            return -1;
        h = p + 1;
        hlen = (size_t)(rb - p - 1);
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        if (!colon && rb + 1 != end)
            return -1;
    } else {
        colon = memchr(p, ':', n);
        hlen = (size_t)((colon ? colon : end) - p);
    }
    long port;
    if (hlen == 0 || hlen >= sizeof a.host)
        return -1;
    if (colon) {
        if (parse_long(colon + 1, (size_t)(end - colon - 1), 1, 65535, &port))
            return -1;
        a.port = (int)port;
    }
    memcpy(a.host, h, hlen);
    a.host[hlen] = '\0';
    return add_seed(c, &a);
}

static int set_password(cluster_t *c, const char *pw, size_t n)
{
    if (c->password)
        return strlen(c->password) == n && memcmp(c->password, pw, n) == 0 ? 0 : -1;
    c->password = malloc(n + 1);
    if (!c->password)
        return -1;
    memcpy(c->password, pw, n);
    c->password[n] = '\0';
    return 0;
}

static int set_db(cluster_t *c, long db, int *db_set)
{
    if (*db_set && c->db != db)
        return -1;
    c->db = (int)db;
    *db_set = 1;
    return 0;
}

static int parse_unix(cluster_t *c, const char *p, int *db_set)
{
    const char *q = strchr(p, '?');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 0 || p[0] != '/')
        return -1;
    if (q) {
        long db;
        if (strncmp(q, "?db=", 4) != 0 || parse_long(q + 4, strlen(q + 4), 0, 1 << 20, &db) ||
            set_db(c, db, db_set))
            return -1;
    }
    cl_addr_t a = {.port = 0};
    a.path = malloc(n + 1);
    if (!a.path)
        return -1;
    memcpy(a.path, p, n);
    a.path[n] = '\0';
    snprintf(a.host, sizeof a.host, "localhost");
    if (add_seed(c, &a) == 0)
        return 0;
    free(a.path);
    return -1;
}

/* host[:port][,host[:port]...] up to end. */
static int parse_list(cluster_t *c, const char *p, const char *end)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        if (parse_hostport(c, p, (size_t)(e - p)))
            return -1;
        p = comma ? comma + 1 : end;
        if (comma && p == end)
            return -1; /* a trailing comma */
    }
    return 0;
}

static int parse_redis(cluster_t *c, const char *p, int *db_set)
{
    const char *slash = strchr(p, '/');
    const char *stop = slash ? slash : p + strlen(p);
    const char *at = NULL;
    for (const char *q = p; q < stop; q++)
        if (*q == '@')
            at = q; /* the last one: a password may hold '@' */
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p; /* "user:password@" or ":password@" */
        if (set_password(c, pw, (size_t)(at - pw)))
            return -1;
        p = at + 1;
    }
    if (p == stop || parse_list(c, p, stop))
        return -1;
    long db;
    if (slash && slash[1] &&
        (parse_long(slash + 1, strlen(slash + 1), 0, 1 << 20, &db) || set_db(c, db, db_set)))
        return -1;
    return 0;
}

int cl_parse_seed(cluster_t *c, const char *spec, char *err, size_t errlen)
{
    size_t before = c->nseeds;
    int rc;
    if (!spec || !*spec)
        rc = -1;
    else if (strncmp(spec, "unix://", 7) == 0)
        rc = parse_unix(c, spec + 7, &c->db_set);
    else if (strncmp(spec, "redis://", 8) == 0)
        rc = parse_redis(c, spec + 8, &c->db_set);
    else
        rc = parse_list(c, spec, spec + strlen(spec));
    if (rc == 0 && c->nseeds > before)
        return 0;
    snprintf(err, errlen,
             "bad Redis seed '%s': expected redis://[:password@]host:port[,host:port...][/db], "
             "host:port[,host:port...] or unix:///path[?db=N] (one password and db for all)",
             spec ? spec : "");
    return -1;
}

int cluster_check_seed(const char *spec, char *err, size_t errlen)
{
    cluster_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return CRAWL_ENOMEM;
    }
    int rc = cl_parse_seed(c, spec, err, errlen) < 0 ? CRAWL_EINVAL : 0;
    for (size_t i = 0; i < c->nseeds; i++)
        cl_addr_clear(&c->seeds[i]);
    free(c->seeds);
    free(c->password);
    free(c);
    return rc;
}
