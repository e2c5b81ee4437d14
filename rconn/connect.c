/*
 * connect.c -- one blocking connection to one Redis node.
 *
 * DESIGN: TCP (keepalive on) or a unix socket, with RCONN_CONNECT_TIMEOUT_MS
 * to connect and RCONN_COMMAND_TIMEOUT_MS for every reply; then AUTH when a
 * password is given, SELECT when the db is not 0, and, with neither, a PING:
 * a server that wants a password says so only when asked something.  Every
 * failure is said with the server's own words (NOAUTH, WRONGPASS, ERR
 * invalid DB index) or the network's (Connection refused, timeout).  The
 * only place a connection to Redis is made: rconn.c, the links and the
 * embedded server's readiness check all come here.
 */
#include "rconn_internal.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

static struct timeval tv_ms(int ms)
{
    return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

/* One set-up command (AUTH, SELECT, PING): 0, or -1 with why in err. */
static int setup(redisContext *c, int argc, const char **argv, const char *what, char *err,
                 size_t errlen)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok && r && r->str && !strncmp(r->str, "NOAUTH", 6))
        snprintf(err, errlen,
                 "Redis wants a password (%s): give it in the URL, redis://:PASSWORD@host:port",
                 r->str);
    else if (!ok)
        snprintf(err, errlen, "Redis %s failed: %.300s", what, r && r->str ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

redisContext *rc_connect(const rc_addr_t *a, const char *password, int db, char *err, size_t errlen)
{
    struct timeval ct = tv_ms(RCONN_CONNECT_TIMEOUT_MS);
    redisContext *c = a->path ? redisConnectUnixWithTimeout(a->path, ct)
                              : redisConnectWithTimeout(a->host, a->port, ct);
    char name[RC_NAME_MAX];
    rc_addr_name(a, name, sizeof name);
    if (!c || c->err) {
        snprintf(err, errlen, "cannot connect to Redis at %s: %s", name,
                 c ? c->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(c, tv_ms(RCONN_COMMAND_TIMEOUT_MS));
    if (!a->path)
        redisEnableKeepAlive(c);
    char dbs[16], select_what[32];
    snprintf(dbs, sizeof dbs, "%d", db);
    snprintf(select_what, sizeof select_what, "SELECT %d", db);
    const char *auth[] = {"AUTH", password}, *sel[] = {"SELECT", dbs}, *ping[] = {"PING"};
    if (password && setup(c, 2, auth, "AUTH", err, errlen) < 0)
        goto fail;
    if (db && setup(c, 2, sel, select_what, err, errlen) < 0)
        goto fail;
    if (!password && !db && setup(c, 1, ping, "PING", err, errlen) < 0)
        goto fail;
    return c;
fail:
    if (c)
        redisFree(c);
    return NULL;
}
