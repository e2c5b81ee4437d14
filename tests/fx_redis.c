/*
 * fx_redis.c -- a private redis-server for one test.
 *
 * DESIGN: picks a free loopback port (bind to port 0, read it back), starts
 * `redis-server` on it with persistence off in a fresh temporary directory,
 * and waits (bounded) until PING answers.  A port taken between our probe and
 * redis' bind is retried with another one.
 */
#include "fixtures.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct fx_redis {
    pid_t pid;
    int port;
    int aof; /* append-only persistence (fx_redis_start_aof) */
    char *dir;
    char url[64];
};

int fx_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int answers_ping(int port)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static int try_start(fx_redis_t *r)
{
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    char logpath[512];
    snprintf(logpath, sizeof logpath, "%s/redis.log", r->dir);
    char *argv[32] = {"redis-server",
                      "--port",
                      port,
                      "--bind",
                      "127.0.0.1",
                      "--save",
                      "",
                      "--appendonly",
                      r->aof ? "yes" : "no",
                      "--appendfsync",
                      "everysec",
                      "--maxmemory",
                      FX_REDIS_MAXMEMORY,
                      "--dir",
                      r->dir,
                      "--daemonize",
                      "no",
                      "--protected-mode",
                      "no",
                      "--loglevel",
                      "warning",
                      NULL};
    const char *mod = getenv("FX_REDIS_MODULE"); /* the crawler module: run the suite with it */
    if (mod && *mod) {
        int n = 0;
        while (argv[n])
            n++;
        argv[n] = "--loadmodule";
        argv[n + 1] = (char *)mod;
    }
    r->pid = fx_spawn(argv, logpath, logpath);
    if (r->pid < 0)
        return -1;
    uint64_t deadline = fx_now_ms() + 10000;
    while (fx_now_ms() < deadline) {
        int st;
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
            r->pid = -1;
            fx_set_error("redis-server exited at start (port %d); see its log", r->port);
            return -1;
        }
        if (answers_ping(r->port))
            return 0;
        usleep(10000);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = -1;
    fx_set_error("redis-server did not answer PING within 10 s on port %d", r->port);
    return -1;
}

static fx_redis_t *start(int aof)
{
    fx_redis_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->pid = -1;
    r->aof = aof;
    r->dir = fx_tmpdir();
    if (!r->dir)
        goto fail;
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = fx_free_port();
        if (r->port <= 0) {
            fx_set_error("no free loopback port");
            continue;
        }
        if (try_start(r) == 0) {
            snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
            return r;
        }
    }
fail:
    fprintf(stderr,
            "fx_redis_start: %s (is redis-server installed? apt-get install -y "
            "redis-server)\n",
            fx_error());
    fx_redis_stop(r);
    return NULL;
}

fx_redis_t *fx_redis_start(void)
{
    return start(0);
}

fx_redis_t *fx_redis_start_aof(void)
{
    return start(1);
}

int fx_redis_restart(fx_redis_t *r, int sig, unsigned down_ms)
{
    if (r->pid > 0) {
        kill(r->pid, sig);
        if (fx_wait(r->pid, 10000) == -2)
            fprintf(stderr, "fx_redis_restart: redis-server %d killed after 10 s\n", (int)r->pid);
        r->pid = -1;
    }
    usleep(down_ms * 1000u);
    for (int attempt = 0; attempt < 50; attempt++) { /* the port may linger a moment */
        if (try_start(r) == 0)
            return 0;
        usleep(100000);
    }
    return -1;
}

int fx_redis_port(const fx_redis_t *r)
{
    return r->port;
}

const char *fx_redis_url(const fx_redis_t *r)
{
    return r->url;
}

pid_t fx_redis_pid(const fx_redis_t *r)
{
    return r->pid;
}

redisContext *fx_redis_connect(const fx_redis_t *r)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    if (!c || c->err) {
        fx_set_error("connect to redis port %d: %s", r->port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, (struct timeval){30, 0});
    return c;
}

long long fx_redis_info(redisContext *c, const char *section, const char *field)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    if (!r || r->type != REDIS_REPLY_STRING) {
        fx_set_error("INFO %s: %s", section, r && r->str ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s:", field);
    const char *p = strstr(r->str, pat);
    long long v = p ? strtoll(p + strlen(pat), NULL, 10) : -1;
    if (!p)
        fx_set_error("INFO %s has no %s", section, field);
    freeReplyObject(r);
    return v;
}

redisReply *fx_redis_queue(redisContext *c, const char *p, const char *origin)
{
    /* the list if it exists, else the field's "A C\nE1\n..." entries */
    static const char lua[] =
        "local l = redis.call('LRANGE', KEYS[1], 0, -1) "
        "if #l > 0 then return l end "
        "local v = redis.call('HGET', KEYS[2], ARGV[1]) "
        "local out = {} "
        "if not v then return out end "
        "local nl = string.find(v, '\\n', 1, true) "
        "if not nl then return out end "
        "for e in string.gmatch(string.sub(v, nl + 1) .. '\\n', '([^\\n]*)\\n') do "
        "out[#out + 1] = e end "
        "return out";
    char qk[1024], hk[1024];
    snprintf(qk, sizeof qk, "%sq:%s", p, origin);
    snprintf(hk, sizeof hk, "%shosts", p);
    redisReply *r = redisCommand(c, "EVAL %s 2 %s %s %s", lua, qk, hk, origin);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        fx_set_error("reading the queue of %s: %s", origin, r && r->str ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

long long fx_redis_queue_len(redisContext *c, const char *p, const char *origin)
{
    redisReply *r = fx_redis_queue(c, p, origin);
    long long n = r ? (long long)r->elements : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

void fx_redis_stop(fx_redis_t *r)
{
    if (!r)
        return;
    if (r->pid > 0) {
        kill(r->pid, SIGTERM);
        if (fx_wait(r->pid, 5000) == -2)
            fprintf(stderr, "fx_redis_stop: redis-server %d killed after 5 s\n", (int)r->pid);
    }
    if (r->dir) {
        fx_rmtree(r->dir);
        free(r->dir);
    }
    free(r);
}
