/*
 * rconn.c -- Redis URL parsing, connections, and the embedded redis-server.
 *
 * DESIGN: the embedded server is a child started with setsid() (so a Ctrl-C
 * at the terminal reaches only the crawler, which then hands back its URLs
 * while Redis is still up) and PR_SET_PDEATHSIG(SIGKILL) (so it never
 * outlives us).  It listens only on a unix socket in the data directory
 * when the path fits in sun_path, else on a free loopback port, with
 * append-only persistence in the same directory.  An exclusive flock on
 * <data_dir>/crawler.lock keeps two processes from starting two servers on
 * one directory; the other commands (stats, seed, pause, ...) join the
 * running server at the URL its owner writes to <data_dir>/redis.url
 * (rconn_embed_t); a crawl of several processes uses --redis instead.  The server loads the
 * crawler module (bloom/redis_module.c: the frontier sets Bloom bits about
 * 2-3x faster with it) from the first of these that is there: beside the
 * program as installed (<dir of /proc/self/exe>/CRAWLER_REDIS_MODULE_REL,
 * wherever the install tree was moved), the build tree, the install
 * prefix.  Its append-only file then holds CRAWLER.BFADD commands, so
 * resuming that data directory needs the module again.
 *
 * A shared server is asked at open whether it is a Redis Cluster (a
 * cluster_t of cluster/ over the URL's nodes).  If so, that cluster_t
 * stays, behind a mutex, only to route: each rconn_connect() asks it for
 * the map again (CLUSTER SHARDS, one round trip: connects are rare, and a
 * stale map after a failover would send the worker to a dead or demoted
 * node) and connects to the route slot's master as to a plain server.  The
 * calls themselves never go through cluster_t: the frontier pipelines on
 * the connection it was given, and a redirect is a lost connection to it.
 */
#include "rconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "errors.h"
#include "frontier.h"

struct rconn {
    cluster_t *cl;      /* a Redis Cluster: its map, to route connects; NULL otherwise */
    pthread_mutex_t mu; /* guards cl (rconn_connect runs on every thread) */
    int slot;           /* the route key's hash slot */
    rconn_target_t t;
    pid_t child;    /* embedded redis-server, 0 if none */
    int lock_fd;    /* flock on the data dir, -1 if none */
    char *url_path; /* the embedded server's DIR/redis.url, removed at close */
    char desc[PATH_MAX + 96];
    frontier_router_t router; /* a Redis Cluster: router_owners, router_connect */
};

void rconn_target_clear(rconn_target_t *t)
{
    if (!t)
        return;
    free(t->host);
    free(t->unix_path);
    free(t->password);
    memset(t, 0, sizeof *t);
}

static int parse_int(const char *s, size_t n, long lo, long hi, long *out)
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

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int parse_unix(const char *url, rconn_target_t *t, char *err, size_t errlen)
{
    const char *p = url + strlen("unix://");
    const char *q = strchr(p, '?');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 0 || p[0] != '/') {
        snprintf(err, errlen, "bad Redis URL '%s': unix:// needs an absolute socket path", url);
        return -1;
    }
    t->unix_path = dupn(p, n);
    if (q) {
        long db;
        if (strncmp(q, "?db=", 4) != 0 || parse_int(q + 4, strlen(q + 4), 0, 1 << 20, &db)) {
            snprintf(err, errlen, "bad Redis URL '%s': expected ?db=N", url);
            return -1;
        }
        t->db = (int)db;
    }
    return t->unix_path ? 0 : -1;
}

int rconn_parse_url(const char *url, rconn_target_t *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->port = 6379;
    if (strncmp(url, "unix://", 7) == 0) {
        if (parse_unix(url, t, err, errlen) == 0)
            return 0;
        rconn_target_clear(t);
        return -1;
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(err, errlen, "bad Redis URL '%s': expected redis://[:password@]host:port[/db]",
                 url);
        return -1;
    }
    const char *p = url + 8;
    const char *at = strrchr(p, '@');
    const char *slash = strchr(at ? at : p, '/');
    if (at && (!slash || at < slash)) {
        const char *pw = p;
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon)
            pw = colon + 1; /* "user:password@" or ":password@" */
        t->password = dupn(pw, (size_t)(at - pw));
        p = at + 1;
    }
    const char *hend = slash ? slash : p + strlen(p);
    const char *colon = NULL;
    if (*p == '[') { /* [::1]:port */
        const char *rb = memchr(p, ']', (size_t)(hend - p));
        if (!rb)
            goto bad;
        t->host = dupn(p + 1, (size_t)(rb - p - 1));
        colon = rb + 1 < hend && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(hend - p));
        t->host = dupn(p, (size_t)((colon ? colon : hend) - p));
    }
    if (!t->host || !*t->host)
        goto bad;
    long v;
    if (colon) {
        if (parse_int(colon + 1, (size_t)(hend - colon - 1), 1, 65535, &v))
            goto bad;
        t->port = (int)v;
    }
    if (slash && slash[1]) {
        if (parse_int(slash + 1, strlen(slash + 1), 0, 1 << 20, &v))
            goto bad;
        t->db = (int)v;
    }
    return 0;
bad:
    snprintf(err, errlen, "bad Redis URL '%s': expected redis://[:password@]host:port[/db]", url);
    rconn_target_clear(t);
    return -1;
}

static redisContext *connect_target(const rconn_target_t *t, char *err, size_t errlen)
{
    struct timeval ct = {RCONN_CONNECT_TIMEOUT_MS / 1000, (RCONN_CONNECT_TIMEOUT_MS % 1000) * 1000};
    redisContext *c = t->unix_path ? redisConnectUnixWithTimeout(t->unix_path, ct)
                                   : redisConnectWithTimeout(t->host, t->port, ct);
    if (!c || c->err) {
        if (t->unix_path)
            snprintf(err, errlen, "cannot connect to Redis at unix:%s: %s", t->unix_path,
                     c ? c->errstr : "out of memory");
        else
            snprintf(err, errlen, "cannot connect to Redis at %s:%d: %s", t->host, t->port,
                     c ? c->errstr : "out of memory");
        goto fail;
    }
    struct timeval cmd = {RCONN_COMMAND_TIMEOUT_MS / 1000, 0};
    redisSetTimeout(c, cmd);
    if (!t->unix_path)
        redisEnableKeepAlive(c);
    redisReply *r;
    if (t->password) {
        r = redisCommand(c, "AUTH %s", t->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "Redis AUTH failed: %s", r ? r->str : c->errstr);
            if (r)
                freeReplyObject(r);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (t->db) {
        r = redisCommand(c, "SELECT %d", t->db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "Redis SELECT %d failed: %s", t->db, r ? r->str : c->errstr);
            if (r)
                freeReplyObject(r);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (!t->password && !t->db) { /* a server that wants a password says so only here */
        r = redisCommand(c, "PING");
        int noauth = r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOAUTH", 6);
        if (noauth)
            snprintf(err, errlen,
                     "Redis wants a password (%s): give it in the URL, "
                     "redis://:PASSWORD@host:port",
                     r->str);
        if (r)
            freeReplyObject(r);
        if (noauth)
            goto fail;
    }
    return c;
fail:
    if (c)
        redisFree(c);
    return NULL;
}

/* Slot's master, as the map says after a fresh look: into t (host
 * malloc'ed).  0, or -1 with err. */
static int route(const rconn_t *r, int slot, rconn_target_t *t, char *err, size_t errlen)
{
    rconn_t *m = (rconn_t *)r; /* the mutex and the map are not the caller's state */
    pthread_mutex_lock(&m->mu);
    cluster_refresh(m->cl); /* no node answered: the old map is kept, its owner tried */
    const char *own = cluster_slot_owner(m->cl, slot);
    const char *colon = own ? strrchr(own, ':') : NULL;
    int rc = -1;
    long port;
    if (colon && parse_int(colon + 1, strlen(colon + 1), 1, 65535, &port) == 0) {
        *t = (rconn_target_t){.port = (int)port, .password = r->t.password};
        t->host = dupn(own, (size_t)(colon - own));
        rc = t->host ? 0 : -1;
    }
    if (rc < 0)
        snprintf(err, errlen, "the Redis Cluster has no master for slot %d now", slot);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

redisContext *rconn_connect(const rconn_t *r, char *err, size_t errlen)
{
    if (!r->cl)
        return connect_target(&r->t, err, errlen);
    rconn_target_t t;
    if (route(r, r->slot, &t, err, errlen) < 0)
        return NULL;
    redisContext *c = connect_target(&t, err, errlen);
    free(t.host);
    return c;
}

/* frontier_router_t's owners: every key's slot owner, from one look. */
static int router_owners(void *ud, const char *const *keys, size_t n,
                         char (*addr)[FRONTIER_ADDR_MAX])
{
    rconn_t *m = ud;
    pthread_mutex_lock(&m->mu);
    cluster_refresh(m->cl);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *own = cluster_slot_owner(m->cl, cluster_slot(keys[i], strlen(keys[i])));
        if (!own)
            rc = CRAWL_EREDIS;
        else
            snprintf(addr[i], FRONTIER_ADDR_MAX, "%s", own);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* frontier_router_t's connect: to key's slot owner. */
static redisContext *router_connect(void *ud, const char *key)
{
    const rconn_t *r = ud;
    char err[256];
    rconn_target_t t;
    if (route(r, cluster_slot(key, strlen(key)), &t, err, sizeof err) < 0)
        return NULL;
    redisContext *c = connect_target(&t, err, sizeof err);
    free(t.host);
    return c;
}

const frontier_router_t *rconn_router(const rconn_t *r)
{
    return r && r->cl ? &r->router : NULL;
}

int rconn_is_cluster(const rconn_t *r)
{
    return r->cl != NULL;
}

/* The "host:port" of every master, copied (the cluster's strings live only
 * until its next call): *out malloc'ed, n of them.  0 or -1 with err. */
static int master_list(const rconn_t *r, char (**out)[CLUSTER_MAX_HOST + 8], size_t *n, char *err,
                       size_t errlen)
{
    rconn_t *m = (rconn_t *)r;
    pthread_mutex_lock(&m->mu);
    size_t k = 0;
    int rc = cluster_masters(m->cl, NULL, NULL, 0, &k) == CRAWL_ETOOLONG || k == 0 ? 0 : -1;
    redisContext **ctx = rc == 0 ? calloc(k, sizeof *ctx) : NULL;
    const char **addr = rc == 0 ? calloc(k, sizeof *addr) : NULL;
    *out = rc == 0 ? calloc(k ? k : 1, sizeof **out) : NULL;
    if (!ctx || !addr || !*out || cluster_masters(m->cl, ctx, addr, k, n) < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < *n; i++)
        snprintf((*out)[i], sizeof(*out)[i], "%s", addr[i]);
    pthread_mutex_unlock(&m->mu);
    free(ctx);
    free(addr);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        snprintf(err, errlen, "cannot list the Redis Cluster's masters (one unreachable)");
    }
    return rc;
}

int rconn_each_master(const rconn_t *r, int (*fn)(redisContext *c, const char *addr, void *ud),
                      void *ud, char *err, size_t errlen)
{
    if (!r->cl) {
        redisContext *c = connect_target(&r->t, err, errlen);
        int rc = c ? fn(c, r->desc, ud) : CRAWL_EREDIS;
        if (c)
            redisFree(c);
        return rc;
    }
    char(*addr)[CLUSTER_MAX_HOST + 8];
    size_t n = 0;
    if (master_list(r, &addr, &n, err, errlen) < 0)
        return CRAWL_EREDIS;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *colon = strrchr(addr[i], ':');
        long port;
        if (!colon || parse_int(colon + 1, strlen(colon + 1), 1, 65535, &port) < 0) {
            rc = CRAWL_EREDIS;
            break;
        }
        *colon = '\0';
        rconn_target_t t = {.host = addr[i], .port = (int)port, .password = r->t.password};
        redisContext *c = connect_target(&t, err, errlen);
        *colon = ':';
        rc = c ? fn(c, addr[i], ud) : CRAWL_EREDIS;
        if (c)
            redisFree(c);
    }
    free(addr);
    return rc;
}

const char *rconn_describe(const rconn_t *r)
{
    return r->desc;
}

pid_t rconn_embedded_pid(const rconn_t *r)
{
    return r->child;
}

static int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The crawler module's path (in buf, PATH_MAX bytes, when it is the one
 * beside the program), or NULL if none of the places the DESIGN comment
 * lists has it. */
static const char *find_module(char buf[PATH_MAX])
{
    char exe[PATH_MAX], rel[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
    if (slash) {
        *slash = '\0';
        int w = snprintf(rel, sizeof rel, "%s/%s", exe, CRAWLER_REDIS_MODULE_REL);
        if (w > 0 && (size_t)w < sizeof rel && access(rel, R_OK) == 0 && realpath(rel, buf))
            return buf;
    }
    const char *mods[] = {CRAWLER_REDIS_MODULE_BUILT, CRAWLER_REDIS_MODULE_INSTALLED};
    for (int i = 0; i < 2; i++)
        if (access(mods[i], R_OK) == 0)
            return mods[i];
    return NULL;
}

static pid_t spawn_redis(const char *dir, const rconn_target_t *t)
{
    char modbuf[PATH_MAX];
    const char *mod = find_module(modbuf);
    char port[16], logfile[PATH_MAX + 16];
    snprintf(port, sizeof port, "%d", t->unix_path ? 0 : t->port);
    snprintf(logfile, sizeof logfile, "%s/redis.log", dir);
    char *argv[40];
    int n = 0;
    argv[n++] = "redis-server";
    argv[n++] = "--port";
    argv[n++] = port;
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    if (t->unix_path) {
        argv[n++] = "--unixsocket";
        argv[n++] = t->unix_path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    }
    char *fixed[] = {"--dir",
                     (char *)dir,
                     "--appendonly",
                     "yes",
                     "--appendfsync",
                     "everysec",
                     "--save",
                     "",
                     "--daemonize",
                     "no",
                     "--logfile",
                     logfile,
                     "--protected-mode",
                     "yes",
                     NULL};
    for (int i = 0; fixed[i]; i++)
        argv[n++] = fixed[i];
    /* queues in nodes of 16 entries, all but the head and tail node
     * LZF-compressed: half the bytes of a queued URL (bench/frontier_mem.md),
     * no measurable Redis CPU */
    argv[n++] = "--list-max-listpack-size";
    argv[n++] = "16";
    argv[n++] = "--list-compress-depth";
    argv[n++] = "1";
    if (mod) {
        argv[n++] = "--loadmodule";
        argv[n++] = (char *)mod;
    }
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        close(devnull);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run redis-server: %s (install it: apt-get install -y redis-server)\n",
            strerror(errno));
    _exit(127);
}

static int wait_ready(rconn_t *r, char *err, size_t errlen)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 500; i++) { /* 10 s */
        int st;
        if (waitpid(r->child, &st, WNOHANG) == r->child) {
            r->child = 0;
            snprintf(err, errlen, "embedded redis-server exited at start (status %d); see %s",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, "redis.log in the data directory");
            return -1;
        }
        char e2[256];
        redisContext *c = connect_target(&r->t, e2, sizeof e2);
        if (c) {
            redisReply *rep = redisCommand(c, "PING");
            int ok = rep && rep->type == REDIS_REPLY_STATUS;
            if (rep)
                freeReplyObject(rep);
            redisFree(c);
            if (ok)
                return 0;
        }
        nanosleep(&step, NULL);
    }
    snprintf(err, errlen, "embedded redis-server did not answer within 10 s");
    return -1;
}

/* The file where a running embedded server's URL is written. */
static int url_file(const char *dir, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/redis.url", dir);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Writes the server's URL to DIR/redis.url (a new file renamed over the
 * old: a reader sees the whole line or none). */
static void write_url(const char *dir, const rconn_target_t *t)
{
    char path[PATH_MAX + 16], tmp[PATH_MAX + 32], url[PATH_MAX + 32];
    if (url_file(dir, path, sizeof path) < 0 ||
        snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return;
    if (t->unix_path)
        snprintf(url, sizeof url, "unix://%s\n", t->unix_path);
    else
        snprintf(url, sizeof url, "redis://127.0.0.1:%d\n", t->port);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fputs(url, f) >= 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/* 1 if the directory's lock is held by another process (a crawler runs
 * there), 0 if not (nothing is locked by this call), -1 if it cannot be
 * told (no such directory). */
static int dir_in_use(const char *dir)
{
    char lock[PATH_MAX + 16];
    snprintf(lock, sizeof lock, "%s/crawler.lock", dir);
    int fd = open(lock, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int busy = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd); /* (a shared lock taken here is dropped with the descriptor) */
    return busy;
}

int rconn_embedded_running(const char *data_dir, char *buf, size_t buflen)
{
    char dir[PATH_MAX], path[PATH_MAX + 16], err[256];
    if (!data_dir || !realpath(data_dir, dir) || dir_in_use(dir) != 1 ||
        url_file(dir, path, sizeof path) < 0)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int got = fgets(buf, (int)buflen, f) != NULL;
    fclose(f);
    size_t n = got ? strlen(buf) : 0;
    if (!n || buf[n - 1] != '\n')
        return 0;
    buf[n - 1] = '\0';
    rconn_target_t t;
    if (rconn_parse_url(buf, &t, err, sizeof err) < 0)
        return 0;
    redisContext *c = connect_target(&t, err, sizeof err);
    rconn_target_clear(&t);
    redisReply *rep = c ? redisCommand(c, "PING") : NULL;
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
        freeReplyObject(rep);
    if (c)
        redisFree(c);
    return ok;
}

/* Uses the embedded server another crawler process runs in data_dir: 0,
 * or -1 with err when none runs there. */
static int join_embedded(rconn_t *r, const char *data_dir, char *err, size_t errlen)
{
    char url[PATH_MAX + 32];
    if (!rconn_embedded_running(data_dir, url, sizeof url)) {
        snprintf(err, errlen, "no crawler process runs its embedded Redis in %s", data_dir);
        return -1;
    }
    if (rconn_parse_url(url, &r->t, err, errlen) < 0)
        return -1;
    snprintf(r->desc, sizeof r->desc, "the embedded redis-server of the crawler running in %s",
             data_dir);
    return 0;
}

static int open_embedded(rconn_t *r, const char *data_dir, rconn_embed_t embed, char *err,
                         size_t errlen)
{
    char dir[PATH_MAX];
    if (embed == RCONN_EMBED_JOIN_ONLY)
        return join_embedded(r, data_dir, err, errlen);
    if (embed == RCONN_EMBED_JOIN && join_embedded(r, data_dir, err, errlen) == 0)
        return 0;
    if (mkdir_p(data_dir) < 0 || !realpath(data_dir, dir)) {
        snprintf(err, errlen, "cannot create data directory %s: %s", data_dir, strerror(errno));
        return -1;
    }
    char lock[PATH_MAX + 16];
    snprintf(lock, sizeof lock, "%s/crawler.lock", dir);
    r->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (r->lock_fd < 0 || flock(r->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen,
                 "data directory %s is in use by another crawler process; to run several "
                 "processes on one crawl, start redis-server and pass --redis redis://host:port",
                 dir);
        return -1;
    }
    char sock[PATH_MAX + 16];
    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    if (strlen(sock) < sizeof(((struct sockaddr_un *)0)->sun_path)) {
        unlink(sock);
        r->t.unix_path = strdup(sock);
    } else {
        r->t.host = strdup("127.0.0.1");
        r->t.port = free_port();
    }
    if ((!r->t.unix_path && !r->t.host) || r->t.port < 0) {
        snprintf(err, errlen, "out of memory or no free port");
        return -1;
    }
    r->child = spawn_redis(dir, &r->t);
    if (r->child < 0) {
        r->child = 0;
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (wait_ready(r, err, errlen) < 0)
        return -1;
    snprintf(r->desc, sizeof r->desc, "embedded redis-server (pid %d) in %s", (int)r->child, dir);
    write_url(dir, &r->t); /* for the commands that join it (rconn_embedded_running) */
    char path[PATH_MAX + 16];
    if (url_file(dir, path, sizeof path) == 0)
        r->url_path = strdup(path);
    return 0;
}

int rconn_check_url(const char *url, char *err, size_t errlen)
{
    if (!url || !*url) {
        snprintf(err, errlen, "empty Redis URL");
        return -1;
    }
    if (strchr(url, ',')) /* the nodes of a Redis Cluster */
        return cluster_check_seed(url, err, errlen) < 0 ? -1 : 0;
    rconn_target_t t = {0};
    int rc = rconn_parse_url(url, &t, err, errlen);
    rconn_target_clear(&t);
    return rc < 0 ? -1 : 0;
}

/* The servers the n URLs name: a Redis Cluster (r->cl kept, r->t has the
 * password for the nodes: cluster_open checked that the URLs agree on it)
 * or one plain Redis (r->t). */
static int open_shared(rconn_t *r, const char *const *url, size_t n, char *err, size_t errlen)
{
    cluster_config_t cc;
    cluster_config_defaults(&cc);
    cc.connect_timeout_ms = RCONN_CONNECT_TIMEOUT_MS;
    cc.command_timeout_ms = RCONN_COMMAND_TIMEOUT_MS;
    char e2[512];
    int several = n > 1 || strchr(url[0], ',');
    cluster_t *cl = cluster_open(url, n, &cc, e2, sizeof e2);
    if (!cl && several) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    if (cl && cluster_is_cluster(cl)) {
        r->cl = cl;
        for (size_t i = 0; i < n && !r->t.password; i++) {
            const char *at = strncmp(url[i], "redis://", 8) ? NULL : strrchr(url[i], '@');
            if (at) { /* the password, for each node's AUTH */
                const char *p = url[i] + 8, *colon = memchr(p, ':', (size_t)(at - p));
                const char *pw = colon ? colon + 1 : p;
                if (!(r->t.password = dupn(pw, (size_t)(at - pw))))
                    return -1;
            }
        }
        return 0;
    }
    cluster_close(cl); /* a plain Redis, or none answered: its connects will say why */
    if (several) {
        snprintf(err, errlen, "bad Redis URL '%s'%s: several nodes, but not a Redis Cluster",
                 url[0], n > 1 ? " and the other --redis" : "");
        return -1;
    }
    return rconn_parse_url(url[0], &r->t, err, errlen);
}

rconn_t *rconn_open_url(const char *url, const char *data_dir, const char *route, char *err,
                        size_t errlen)
{
    rconn_specs_t s = {.url = {url}, .n = url != NULL};
    return rconn_open(&s, data_dir, route, err, errlen);
}

rconn_t *rconn_open(const rconn_specs_t *specs, const char *data_dir, const char *route_key,
                    char *err, size_t errlen)
{
    rconn_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->lock_fd = -1;
    pthread_mutex_init(&r->mu, NULL);
    r->slot = route_key ? cluster_slot(route_key, strlen(route_key)) : 0;
    r->router = (frontier_router_t){.owners = router_owners, .connect = router_connect, .ud = r};
    const char *env = getenv("REDIS_URL");
    const char *const *url = specs && specs->n ? specs->url : &env;
    size_t n = specs && specs->n ? specs->n : 1;
    if (n > RCONN_MAX_SPECS) {
        snprintf(err, errlen, "more than %d Redis URLs", RCONN_MAX_SPECS);
        goto fail;
    }
    if (url[0] && *url[0]) {
        if (open_shared(r, url, n, err, errlen) < 0)
            goto fail;
        snprintf(r->desc, sizeof r->desc, "%s", url[0]);
        char *at = strrchr(r->desc, '@'); /* never print the password */
        if (at && r->t.password) {
            char rest[PATH_MAX];
            snprintf(rest, sizeof rest, "%s", at + 1);
            snprintf(r->desc, sizeof r->desc, "redis://***@%s", rest);
        }
        if (r->cl) {
            size_t used = strlen(r->desc);
            if (n > 1)
                used +=
                    (size_t)snprintf(r->desc + used, sizeof r->desc - used, " and %zu more", n - 1);
            if (used < sizeof r->desc)
                snprintf(r->desc + used, sizeof r->desc - used,
                         " (a Redis Cluster; keys in slot %d)", r->slot);
        }
        return r;
    }
    if (open_embedded(r, data_dir ? data_dir : RCONN_DEFAULT_DATA_DIR,
                      specs ? specs->embed : RCONN_EMBED_OWN, err, errlen) < 0)
        goto fail;
    return r;
fail:
    rconn_close(r);
    return NULL;
}

void rconn_close(rconn_t *r)
{
    if (!r)
        return;
    if (r->child > 0) {
        kill(r->child, SIGTERM); /* redis flushes its append-only file and exits */
        int st;
        for (int i = 0; i < 1000; i++) { /* 10 s */
            if (waitpid(r->child, &st, WNOHANG) == r->child) {
                r->child = 0;
                break;
            }
            struct timespec step = {0, 10 * 1000 * 1000};
            nanosleep(&step, NULL);
        }
        if (r->child > 0) {
            kill(r->child, SIGKILL);
            waitpid(r->child, &st, 0);
        }
        if (r->t.unix_path)
            unlink(r->t.unix_path);
    }
    if (r->url_path)
        unlink(r->url_path); /* before the lock goes: a joiner never reads a stale one */
    free(r->url_path);
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    cluster_close(r->cl);
    pthread_mutex_destroy(&r->mu);
    rconn_target_clear(&r->t);
    free(r);
}
