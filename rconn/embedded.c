/*
 * embedded.c -- the private redis-server a crawl without --redis runs in
 * its --data-dir, and the other commands' way to it.
 *
 * DESIGN: the server is a child started with setsid() (so a Ctrl-C at the
 * terminal reaches only the crawler, which then hands back its URLs while
 * Redis is still up) and PR_SET_PDEATHSIG(SIGKILL) (so it never outlives
 * us).  It listens only on a unix socket in the data directory when the
 * path fits in sun_path, else on a free loopback port, with append-only
 * persistence in the same directory.  An exclusive flock on
 * <data_dir>/crawler.lock keeps two processes from starting two servers on
 * one directory; the other commands (stats, seed, pause, ...) join the
 * running server at the URL its owner writes to <data_dir>/redis.url
 * (rconn_embed_t); a crawl of several processes uses --redis instead.  The
 * server loads the crawler module (bloom/redis_module.c: the frontier sets
 * Bloom bits about 2-3x faster with it) from the first of these that is
 * there: beside the program as installed (<dir of
 * /proc/self/exe>/CRAWLER_REDIS_MODULE_REL, wherever the install tree was
 * moved), the build tree, the install prefix.  Its append-only file then
 * holds CRAWLER.BFADD commands, so resuming that data directory needs the
 * module again.  Queues are kept in listpack nodes of 16 entries, all but
 * the ends LZF-compressed (bench/frontier_mem.md).
 */
#include "rconn_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <netinet/in.h>
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

struct rc_embedded {
    pid_t child;    /* the server this process started, 0: joined one */
    int lock_fd;    /* flock on the data dir, -1 if none */
    char *url_path; /* DIR/redis.url, removed at close */
    char *sock;     /* the unix socket, removed at close */
    char *dir;      /* the data directory (a server of our own: to start it again) */
    rc_addr_t addr; /* where it listens (the same after a restart) */
    unsigned restarts;
};

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

static pid_t spawn_redis(const char *dir, const rc_addr_t *a)
{
    char modbuf[PATH_MAX];
    const char *mod = find_module(modbuf);
    char port[16], logfile[PATH_MAX + 16];
    snprintf(port, sizeof port, "%d", a->path ? 0 : a->port);
    snprintf(logfile, sizeof logfile, "%s/redis.log", dir);
    char *argv[40];
    int n = 0;
    char *head[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", NULL};
    for (int i = 0; head[i]; i++)
        argv[n++] = head[i];
    if (a->path) {
        argv[n++] = "--unixsocket";
        argv[n++] = a->path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    }
    char *fixed[] = {"--dir", (char *)dir, "--appendonly", "yes", "--appendfsync", "everysec",
                     "--save", "", "--daemonize", "no", "--logfile", logfile, "--protected-mode",
                     "yes",
                     /* queues in nodes of 16 entries, all but the ends compressed */
                     "--list-max-listpack-size", "16", "--list-compress-depth", "1", NULL};
    for (int i = 0; fixed[i]; i++)
        argv[n++] = fixed[i];
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

/* Waits (limit_ms at most) until the child answers a PING. */
static int wait_ready(rc_embedded_t *e, const rc_addr_t *a, int limit_ms, char *err, size_t errlen)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    for (int i = 0; i < limit_ms / 20; i++) {
        int st;
        if (waitpid(e->child, &st, WNOHANG) == e->child) {
            e->child = 0;
            snprintf(err, errlen,
                     "embedded redis-server exited at start (status %d); see redis.log in the "
                     "data directory",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            return -1;
        }
        char e2[256];
        redisContext *c = rc_connect(a, NULL, 0, e2, sizeof e2);
        if (c) {
            redisFree(c);
            return 0;
        }
        nanosleep(&step, NULL);
    }
    snprintf(err, errlen, "embedded redis-server did not answer within %d s", limit_ms / 1000);
    return -1;
}

static int url_file(const char *dir, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/redis.url", dir);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Writes the server's URL to DIR/redis.url (a new file renamed over the
 * old: a reader sees the whole line or none). */
static void write_url(rc_embedded_t *e, const char *dir, const rc_addr_t *a)
{
    char path[PATH_MAX + 16], tmp[PATH_MAX + 32], url[PATH_MAX + 32];
    if (url_file(dir, path, sizeof path) < 0 ||
        snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return;
    if (a->path)
        snprintf(url, sizeof url, "unix://%s\n", a->path);
    else
        snprintf(url, sizeof url, "redis://127.0.0.1:%d\n", a->port);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fputs(url, f) >= 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
    else
        e->url_path = strdup(path);
}

/* 1 if the directory's lock is held by another process (a crawler runs
 * there), 0 if not (nothing is locked by this call), -1 if it cannot be
 * told. */
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
    rc_spec_t s = {0};
    redisContext *c = rc_spec_parse(&s, buf, err, sizeof err) == 0
                          ? rc_connect(&s.addrs[0], NULL, 0, err, sizeof err)
                          : NULL;
    rc_spec_clear(&s);
    if (c)
        redisFree(c);
    return c != NULL;
}

/* Uses the server another crawler process runs in data_dir: its address
 * into *a.  0, or -1 with err when none runs there. */
static int join(const char *data_dir, rc_addr_t *a, char *desc, size_t desclen, char *err,
                size_t errlen)
{
    char url[PATH_MAX + 32];
    rc_spec_t s = {0};
    if (!rconn_embedded_running(data_dir, url, sizeof url) ||
        rc_spec_parse(&s, url, err, errlen) < 0 || rc_addr_copy(a, &s.addrs[0]) < 0) {
        rc_spec_clear(&s);
        snprintf(err, errlen, "no crawler process runs its embedded Redis in %s", data_dir);
        return -1;
    }
    rc_spec_clear(&s);
    snprintf(desc, desclen, "the embedded redis-server of the crawler running in %s", data_dir);
    return 0;
}

/* Starts a server of this process's own in data_dir. */
static int start(rc_embedded_t *e, const char *data_dir, rc_addr_t *a, char *desc, size_t desclen,
                 char *err, size_t errlen)
{
    char dir[PATH_MAX];
    if (mkdir_p(data_dir) < 0 || !realpath(data_dir, dir)) {
        snprintf(err, errlen, "cannot create data directory %s: %s", data_dir, strerror(errno));
        return -1;
    }
    char lock[PATH_MAX + 16];
    snprintf(lock, sizeof lock, "%s/crawler.lock", dir);
    e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen,
                 "data directory %s is in use by another crawler process; to run several "
                 "processes on one crawl, start redis-server and pass --redis redis://host:port",
                 dir);
        return -1;
    }
    char sock[PATH_MAX + 16];
    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    memset(a, 0, sizeof *a);
    snprintf(a->host, sizeof a->host, "127.0.0.1");
    if (strlen(sock) < sizeof(((struct sockaddr_un *)0)->sun_path)) {
        unlink(sock);
        if (!(a->path = strdup(sock)) || !(e->sock = strdup(sock))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    } else if ((a->port = free_port()) < 0) {
        snprintf(err, errlen, "no free loopback port for the embedded redis-server");
        return -1;
    }
    e->child = spawn_redis(dir, a);
    if (e->child < 0) {
        e->child = 0;
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (wait_ready(e, a, 10000, err, errlen) < 0)
        return -1;
    snprintf(desc, desclen, "embedded redis-server (pid %d) in %s", (int)e->child, dir);
    write_url(e, dir, a); /* for the commands that join it (rconn_embedded_running) */
    if (!(e->dir = strdup(dir)) || rc_addr_copy(&e->addr, a) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* How a child ended, from its wait status. */
static void ended(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int rc_embedded_watch(rc_embedded_t *e, char *desc, size_t desclen, char *msg, size_t msglen)
{
    int st;
    if (!e || e->child <= 0 || waitpid(e->child, &st, WNOHANG) != e->child)
        return 0;
    char how[96], err[512] = "";
    pid_t was = e->child;
    e->child = 0;
    ended(st, how, sizeof how);
    if (e->sock)
        unlink(e->sock); /* the dead server's */
    struct stat sb;
    if (!e->dir || stat(e->dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        snprintf(err, sizeof err, "its data directory %s: %s", e->dir ? e->dir : "?",
                 strerror(errno));
    else if ((e->child = spawn_redis(e->dir, &e->addr)) < 0) {
        e->child = 0;
        snprintf(err, sizeof err, "fork: %s", strerror(errno));
    } else if (wait_ready(e, &e->addr, 60000, err, sizeof err) < 0) {
        if (e->child > 0) {
            kill(e->child, SIGKILL);
            waitpid(e->child, &st, 0);
            e->child = 0;
        }
    }
    if (!e->child) {
        snprintf(msg, msglen,
                 "the embedded redis-server (pid %d) in %s %s, and starting it again failed: %s",
                 (int)was, e->dir ? e->dir : "?", how, err);
        return CRAWL_EREDIS;
    }
    e->restarts++;
    snprintf(desc, desclen, "embedded redis-server (pid %d) in %s", (int)e->child, e->dir);
    snprintf(msg, msglen,
             "the embedded redis-server (pid %d) in %s %s; started it again (pid %d) from its "
             "append-only file",
             (int)was, e->dir, how, (int)e->child);
    return 1;
}

rc_embedded_t *rc_embedded_open(const char *data_dir, rconn_embed_t embed, rc_addr_t *a, char *desc,
                                size_t desclen, char *err, size_t errlen)
{
    rc_embedded_t *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->lock_fd = -1;
    int rc;
    if (embed == RCONN_EMBED_JOIN_ONLY)
        rc = join(data_dir, a, desc, desclen, err, errlen);
    else if (embed == RCONN_EMBED_JOIN && join(data_dir, a, desc, desclen, err, errlen) == 0)
        rc = 0;
    else
        rc = start(e, data_dir, a, desc, desclen, err, errlen);
    if (rc < 0) {
        rc_embedded_close(e);
        return NULL;
    }
    return e;
}

void rc_embedded_close(rc_embedded_t *e)
{
    if (!e)
        return;
    if (e->child > 0) {
        kill(e->child, SIGTERM); /* redis flushes its append-only file and exits */
        int st;
        for (int i = 0; i < 1000; i++) { /* 10 s */
            if (waitpid(e->child, &st, WNOHANG) == e->child) {
                e->child = 0;
                break;
            }
            struct timespec step = {0, 10 * 1000 * 1000};
            nanosleep(&step, NULL);
        }
        if (e->child > 0) {
            kill(e->child, SIGKILL);
            waitpid(e->child, &st, 0);
        }
    }
    if (e->sock)
        unlink(e->sock);
    if (e->url_path)
        unlink(e->url_path); /* before the lock goes: a joiner never reads a stale one */
    if (e->lock_fd >= 0)
        close(e->lock_fd);
    free(e->sock);
    free(e->url_path);
    free(e->dir);
    rc_addr_clear(&e->addr);
    free(e);
}

pid_t rc_embedded_pid(const rc_embedded_t *e)
{
    return e ? e->child : 0;
}
