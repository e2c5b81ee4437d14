/*
 * http.c -- a request head into a plan (srv_parse_head, conn.h).
 *
 * DESIGN: accepts "GET|HEAD SP target SP HTTP/1.x" and the headers Host,
 * Accept-Encoding and Connection; anything else in the head is ignored.  The
 * target may be origin-form (/path) or absolute-form (http://host/path).  A
 * Host that names no host of the web answers 400; a host reached on another
 * host's address is answered (flag m), so a wrong DNS answer shows in the log.
 */
#include <string.h>
#include <strings.h>

#include "conn.h"

static const char *line_end(const char *p, const char *end)
{
    const char *e = memchr(p, '\r', (size_t)(end - p));
    return e ? e : end;
}

static void add_flag(conn_t *c, char f)
{
    size_t n = strlen(c->flags);
    if (n + 1 < sizeof c->flags)
        c->flags[n] = f, c->flags[n + 1] = '\0';
}

/* Accept-Encoding tokens we know. */
static int accept_of(const char *v, const char *e)
{
    int a = 0;
    while (v < e) {
        while (v < e && (*v == ' ' || *v == ','))
            v++;
        const char *t = v;
        while (v < e && *v != ',' && *v != ';' && *v != ' ')
            v++;
        if (v - t == 4 && !strncasecmp(t, "gzip", 4))
            a |= WS_ACCEPT_GZIP;
        if (v - t == 2 && !strncasecmp(t, "br", 2))
            a |= WS_ACCEPT_BR;
        while (v < e && *v != ',')
            v++;
    }
    return a;
}

int srv_parse_head(srv_t *s, conn_t *c, size_t len)
{
    const char *p = c->in, *end = c->in + len, *le = line_end(p, end);
    const char *sp1 = memchr(p, ' ', (size_t)(le - p));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(le - sp1 - 1)) : NULL;
    char path[WS_URL_MAX];
    c->plan->host = WS_NOHOST;
    snprintf(c->plan->path, sizeof c->plan->path, "-");
    if (!sp2 || le - sp2 < 9 || strncmp(sp2 + 1, "HTTP/1.", 7))
        return 1;
    c->head_only = sp1 - p == 4 && !memcmp(p, "HEAD", 4);
    if (!c->head_only && !(sp1 - p == 3 && !memcmp(p, "GET", 3)))
        return 1;
    const char *t = sp1 + 1;
    size_t tl = (size_t)(sp2 - t);
    if (tl > 7 && !strncasecmp(t, "http", 4)) { /* absolute-form */
        const char *slash = memchr(t + 8, '/', tl - 8);
        if (!slash)
            return 1;
        tl -= (size_t)(slash - t), t = slash;
    }
    if (!tl || *t != '/' || tl >= sizeof path)
        return 1;
    memcpy(path, t, tl);
    path[tl] = '\0';
    c->keep = sp2[8] == '1';
    c->accept = 0;
    uint32_t host = WS_NOHOST;
    for (p = le + 2; p < end; p = le + 2) {
        le = line_end(p, end);
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (!colon)
            continue;
        const char *v = colon + 1;
        while (v < le && *v == ' ')
            v++;
        size_t nl = (size_t)(colon - p);
        if (nl == 4 && !strncasecmp(p, "host", 4)) {
            const char *pe = memchr(v, ':', (size_t)(le - v));
            host = ws_host_parse(s->c, v, (size_t)((pe ? pe : le) - v));
            if (host == WS_NOHOST)
                add_flag(c, 'u');
        } else if (nl == 15 && !strncasecmp(p, "accept-encoding", 15)) {
            c->accept = (uint8_t)accept_of(v, le);
        } else if (nl == 10 && !strncasecmp(p, "connection", 10)) {
            if (le - v >= 5 && !strncasecmp(v, "close", 5))
                c->keep = 0;
            else if (le - v >= 10 && !strncasecmp(v, "keep-alive", 10))
                c->keep = 1;
        }
    }
    if (host == WS_NOHOST)
        return 1;
    ws_plan(s->c, c->tls, host, path, c->plan);
    if (c->ip != WS_NOHOST && c->ip != host / s->c->hosts_per_ip)
        add_flag(c, 'm');
    return 0;
}
