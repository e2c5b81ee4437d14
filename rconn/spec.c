/*
 * spec.c -- what --redis names: the one parser of Redis URLs.
 *
 * DESIGN: three forms, each appending its nodes to an rc_spec_t:
 *     redis://[user:password@|:password@]host[:port][,host[:port]...][/db]
 *     host:port,host:port...   (a Redis Cluster's nodes, no scheme)
 *     unix:///path/to/redis.sock[?db=N]
 * The port is 6379 when left out; an IPv6 host is written [addr].  The
 * password is what follows the first ':' before the last '@' (a password
 * may hold '@' or '/').  A password or db given by several URLs must agree.
 * A URL of one node names a plain Redis or any node of a cluster; several
 * nodes (a list, or several URLs) are one cluster's.  Every error names the
 * whole URL and the form expected, in one of two texts: the one-node form
 * for a URL without a list, the list form otherwise.
 */
#include "rconn_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORM_ONE "expected redis://[:password@]host:port[/db]"
#define FORM_LIST                                                                                  \
    "expected redis://[:password@]host:port[,host:port...][/db], host:port[,host:port...] or "     \
    "unix:///path[?db=N] (one password and db for all)"

void rc_addr_clear(rc_addr_t *a)
{
    free(a->path);
    memset(a, 0, sizeof *a);
}

int rc_addr_copy(rc_addr_t *out, const rc_addr_t *a)
{
    *out = *a;
    out->path = a->path ? strdup(a->path) : NULL;
    return a->path && !out->path ? CRAWL_ENOMEM : 0;
}

void rc_addr_name(const rc_addr_t *a, char *buf, size_t len)
{
    if (a->path)
        snprintf(buf, len, "unix:%s", a->path);
    else
        snprintf(buf, len, strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
}

void rc_spec_clear(rc_spec_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        rc_addr_clear(&s->addrs[i]);
    free(s->addrs);
    free(s->password);
    memset(s, 0, sizeof *s);
}

static int parse_long(const char *p, size_t n, long lo, long hi, long *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return CRAWL_EINVAL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || buf[0] == '+' || buf[0] == '-' || v < lo || v > hi)
        return CRAWL_EINVAL;
    *out = v;
    return 0;
}

static int add(rc_spec_t *s, const rc_addr_t *a)
{
    rc_addr_t *v = realloc(s->addrs, (s->n + 1) * sizeof *v);
    if (!v)
        return CRAWL_ENOMEM;
    s->addrs = v;
    v[s->n++] = *a;
    return 0;
}

/* One "host[:port]" or "[v6][:port]" of n bytes. */
static int parse_hostport(rc_spec_t *s, const char *p, size_t n)
{
    rc_addr_t a = {.port = 6379};
    const char *end = p + n, *colon, *h = p;
    size_t hlen;
    if (n && *p == '[') {
        const char *rb = memchr(p, ']', n);
        if (!rb)
            return CRAWL_EINVAL;
        h = p + 1;
        hlen = (size_t)(rb - p - 1);
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        if (!colon && rb + 1 != end)
            return CRAWL_EINVAL;
    } else {
        colon = memchr(p, ':', n);
        hlen = (size_t)((colon ? colon : end) - p);
    }
    long port;
    if (hlen == 0 || hlen >= sizeof a.host)
        return CRAWL_EINVAL;
    if (colon) {
        if (parse_long(colon + 1, (size_t)(end - colon - 1), 1, 65535, &port) < 0)
            return CRAWL_EINVAL;
        a.port = (int)port;
    }
    memcpy(a.host, h, hlen);
    a.host[hlen] = '\0';
    return add(s, &a);
}

/* host[:port][,host[:port]...] from p to end. */
static int parse_list(rc_spec_t *s, const char *p, const char *end)
{
    if (p == end)
        return CRAWL_EINVAL;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        int rc = parse_hostport(s, p, (size_t)(e - p));
        if (rc < 0)
            return rc;
        p = comma ? comma + 1 : end;
        if (comma && p == end)
            return CRAWL_EINVAL; /* a trailing comma */
        s->several |= comma != NULL;
    }
    return 0;
}

static int set_password(rc_spec_t *s, const char *pw, size_t n)
{
    if (s->password)
        return strlen(s->password) == n && memcmp(s->password, pw, n) == 0 ? 0 : CRAWL_EINVAL;
    if (!(s->password = strndup(pw, n)))
        return CRAWL_ENOMEM;
    return 0;
}

static int set_db(rc_spec_t *s, const char *p, size_t n)
{
    long db;
    if (parse_long(p, n, 0, 1 << 20, &db) < 0 || (s->db_set && s->db != db))
        return CRAWL_EINVAL;
    s->db = (int)db;
    s->db_set = 1;
    return 0;
}

static int parse_unix(rc_spec_t *s, const char *p)
{
    const char *q = strchr(p, '?');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 0 || p[0] != '/')
        return CRAWL_EINVAL;
    if (q && (strncmp(q, "?db=", 4) != 0 || set_db(s, q + 4, strlen(q + 4)) < 0))
        return CRAWL_EINVAL;
    rc_addr_t a = {.port = 0};
    snprintf(a.host, sizeof a.host, "localhost");
    if (!(a.path = strndup(p, n)))
        return CRAWL_ENOMEM;
    int rc = add(s, &a);
    if (rc < 0)
        free(a.path);
    return rc;
}

static int parse_redis(rc_spec_t *s, const char *p)
{
    const char *at = strrchr(p, '@');
    const char *slash = strchr(at ? at : p, '/');
    const char *stop = slash ? slash : p + strlen(p);
    int rc;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p; /* "user:password@" or ":password@" */
        if ((rc = set_password(s, pw, (size_t)(at - pw))) < 0)
            return rc;
        p = at + 1;
    }
    if ((rc = parse_list(s, p, stop)) < 0)
        return rc;
    return slash && slash[1] ? set_db(s, slash + 1, strlen(slash + 1)) : 0;
}

int rc_spec_parse(rc_spec_t *s, const char *url, char *err, size_t errlen)
{
    size_t before = s->n;
    int rc;
    if (!url || !*url)
        rc = CRAWL_EINVAL;
    else if (strncmp(url, "unix://", 7) == 0)
        rc = parse_unix(s, url + 7);
    else if (strncmp(url, "redis://", 8) == 0)
        rc = parse_redis(s, url + 8);
    else if (strchr(url, ','))
        rc = parse_list(s, url, url + strlen(url));
    else
        rc = CRAWL_EINVAL;
    if (rc == 0 && s->n > before)
        return 0;
    while (s->n > before) /* nothing of a bad URL is kept */
        rc_addr_clear(&s->addrs[--s->n]);
    if (rc == CRAWL_ENOMEM)
        snprintf(err, errlen, "out of memory");
    else if (url && !strncmp(url, "unix://", 7) && url[7] != '/')
        snprintf(err, errlen, "bad Redis URL '%s': unix:// needs an absolute socket path", url);
    else if (url && !strncmp(url, "unix://", 7))
        snprintf(err, errlen, "bad Redis URL '%s': expected ?db=N", url);
    else if (url && strchr(url, ','))
        snprintf(err, errlen, "bad Redis seed '%s': " FORM_LIST, url);
    else
        snprintf(err, errlen, "bad Redis URL '%s': " FORM_ONE, url ? url : "");
    return rc == CRAWL_ENOMEM ? rc : CRAWL_EINVAL;
}

int rconn_check_url(const char *url, char *err, size_t errlen)
{
    if (!url || !*url) {
        snprintf(err, errlen, "empty Redis URL");
        return CRAWL_EINVAL;
    }
    rc_spec_t s = {0};
    int rc = rc_spec_parse(&s, url, err, errlen);
    rc_spec_clear(&s);
    return rc;
}
