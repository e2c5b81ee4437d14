/*
 * fixtures.h -- real services for the tests: a private redis-server on a free
 * loopback port, a programmable HTTP server on 127.0.0.1 (libmicrohttpd), and
 * a helper to run the crawler binary with a bounded wait.
 *
 * Every child process started here gets PR_SET_PDEATHSIG(SIGKILL), so it dies
 * with the test process even when a test fails or crashes; the *_stop
 * functions stop it politely first.  Start functions return NULL on failure
 * and leave the reason in fx_error(); tests assert on that, so a test that
 * cannot start its services fails loudly instead of being skipped.
 */
#ifndef TESTS_FIXTURES_H
#define TESTS_FIXTURES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct redisContext;

/* Text of the last fixture failure (thread-local buffer). */
const char *fx_error(void);
void fx_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- a proxy that loses replies ----------------------------------------- */
/* A TCP proxy on 127.0.0.1:<free port> in front of 127.0.0.1:target_port
 * (a test's redis-server), copying bytes both ways until told otherwise. */
typedef struct fx_proxy fx_proxy_t;
fx_proxy_t *fx_proxy_start(int target_port);
int fx_proxy_port(const fx_proxy_t *p);
/* From now on what the server sends is dropped: the calls run, their
 * replies never reach the clients ... */
void fx_proxy_swallow(fx_proxy_t *p);
/* ... (bytes dropped so far) ... */
unsigned long long fx_proxy_swallowed(fx_proxy_t *p);
/* ... until the cut: every client's connection closed (and its own to the
 * server), swallowing off; new connections are copied again.  0, or -1
 * (fx_error). */
int fx_proxy_cut(fx_proxy_t *p);
void fx_proxy_stop(fx_proxy_t *p);

/* ---- redis-server ------------------------------------------------------- */
typedef struct fx_redis fx_redis_t;
/* Starts redis-server on 127.0.0.1:<free port>, no persistence, in a fresh
 * temporary directory; waits until it answers PING.  With FX_REDIS_MODULE
 * set to a path, the server also loads that module (ctest runs the frontier
 * suites once more that way, with the crawler module: bloom/redis_module.c). */
/* A TCP port free on 127.0.0.1 now (bound and released), or -1. */
int fx_free_port(void);
fx_redis_t *fx_redis_start(void);
/* Every test server's memory cap (--maxmemory): a runaway test fails with
 * Redis's OOM error instead of growing without bound. */
#define FX_REDIS_MAXMEMORY "1gb"
/* The same with append-only persistence (appendfsync everysec), so that
 * fx_redis_restart brings its data back. */
fx_redis_t *fx_redis_start_aof(void);
/* Stops the server with signal sig (SIGTERM: it writes its file; SIGKILL:
 * up to a second of writes is lost), waits down_ms, then starts it again on
 * the same port and directory and waits until it answers.  0 or -1
 * (fx_error). */
int fx_redis_restart(fx_redis_t *r, int sig, unsigned down_ms);
int fx_redis_port(const fx_redis_t *r);
/* "redis://127.0.0.1:<port>" (valid until fx_redis_stop). */
const char *fx_redis_url(const fx_redis_t *r);
pid_t fx_redis_pid(const fx_redis_t *r);
/* A new connection (caller frees with redisFree), NULL on failure. */
struct redisContext *fx_redis_connect(const fx_redis_t *r);
/* The number `field` of `INFO section` on c (e.g. "memory", "used_memory"),
 * or -1 if the command failed or the field is not there (fx_error). */
long long fx_redis_info(struct redisContext *c, const char *section, const char *field);
/* Stops it (SIGTERM, then SIGKILL after 5 s), removes its directory.
 * Accepts NULL. */
void fx_redis_stop(fx_redis_t *r);
/* The queue of host `origin` in the crawl of key prefix p ("crawler:{t}:"),
 * read the way frontier/lua/queue.lua keeps it (its list P q:<origin>, or
 * the entries packed in its field of P hosts): an array reply of its
 * entries, oldest first, as LRANGE gives (caller frees), NULL on failure. */
struct redisReply *fx_redis_queue(struct redisContext *c, const char *p, const char *origin);
/* Its length (fx_redis_queue's elements), -1 on failure. */
long long fx_redis_queue_len(struct redisContext *c, const char *p, const char *origin);

/* ---- HTTP server -------------------------------------------------------- */
typedef struct fx_route {
    int status;               /* 0: 200 */
    const char *content_type; /* NULL: "text/html; charset=utf-8" */
    const char *body;         /* copied; NULL: empty */
    size_t body_len;          /* 0 with body set: strlen(body) */
    const char *headers;      /* extra "Name: value\n" lines, copied; may be NULL */
    unsigned delay_ms;        /* wait before answering */
    unsigned chunk_delay_ms;  /* wait between body chunks (slow response) */
    size_t repeat;            /* send the body this many times (0 or 1: once) */
    int hold;                 /* wait for fx_http_release (at most FX_HTTP_HOLD_MAX_MS) first */
    int chunked;              /* no Content-Length: the body sent chunked */
} fx_route_t;

typedef struct fx_http fx_http_t;

/* A dynamic handler: fills *out for path (with query).  Strings it sets in
 * *out must stay valid until the next call from the same thread, or be
 * static; return 0 to answer, -1 to fall back to the route table / 404. */
typedef int (*fx_http_fn)(void *ud, const char *path, fx_route_t *out);

/* Starts a server on 127.0.0.1:<free port>; unknown paths answer 404. */
fx_http_t *fx_http_start(void);
int fx_http_port(const fx_http_t *h);
/* "http://127.0.0.1:<port>" */
const char *fx_http_base(const fx_http_t *h);
/* Programs path (exact, with query) -> response.  Thread-safe. */
void fx_http_set(fx_http_t *h, const char *path, const fx_route_t *r);
/* Shorthands: 200 text/html, and a redirect with a Location header. */
void fx_http_page(fx_http_t *h, const char *path, const char *html);
void fx_http_redirect(fx_http_t *h, const char *path, int status, const char *location);
void fx_http_set_handler(fx_http_t *h, fx_http_fn fn, void *ud);
/* How many requests reached path; total requests; distinct paths. */
unsigned fx_http_hits(fx_http_t *h, const char *path);
size_t fx_http_total(fx_http_t *h);
size_t fx_http_distinct(fx_http_t *h);
/* Calls fn for every requested path with its hit count. */
void fx_http_foreach(fx_http_t *h, void (*fn)(void *ud, const char *path, unsigned hits), void *ud);
/* Most requests in flight at the same time so far. */
unsigned fx_http_max_concurrent(fx_http_t *h);
void fx_http_stop(fx_http_t *h);

/* ---- one server on many loopback hosts, and what each request did ------- */
/* At most this many addresses on one server, and the longest a held
 * response waits for fx_http_release. */
#define FX_HTTP_MAX_HOSTS 250
#define FX_HTTP_HOLD_MAX_MS 120000u

/* Starts one server listening on n loopback addresses, 127.0.1.1 ..
 * 127.0.1.n, all on the same free port (host i is 127.0.1.<i+1>); the
 * route table, counters and handler are shared by all of them.  NULL on
 * failure (fx_error).  fx_http_base is host 0's base; fx_http_stop stops it. */
fx_http_t *fx_http_start_hosts(unsigned n);
/* The same on n addresses times `ports` ports (n * ports <= FX_HTTP_MAX_HOSTS
 * origins: many hosts on one address, as on shared hosting); origin i is
 * address i / ports (fx_http_req_t.host, fx_http_pending's host) on the
 * (i % ports)th port. */
fx_http_t *fx_http_start_grid(unsigned n, unsigned ports);
/* Origin i's "http://127.0.1.<a+1>:<port>" (or fx_http_base for i 0 of a
 * one-host server); NULL past the last origin. */
const char *fx_http_host_base(const fx_http_t *h, unsigned i);
unsigned fx_http_nhosts(const fx_http_t *h);

/* One request as the server saw it.  Times are CLOCK_MONOTONIC
 * microseconds (the clock of fx_now_ms, times 1000): `arrived` when its
 * headers were in, `answered` just before the server queued its response
 * (0: not yet).  The client had the request in flight over all of
 * [arrived, answered], so overlaps of these intervals are a lower bound on
 * what the client had in flight at once. */
typedef struct fx_http_req {
    uint64_t arrived_us, answered_us;
    unsigned host; /* index of the local address it came to (0 on fx_http_start's) */
    char path[120];
} fx_http_req_t;
/* A copy of every request so far, in arrival order (caller frees *out);
 * returns their number, *out NULL when there are none or on OOM. */
size_t fx_http_log(fx_http_t *h, fx_http_req_t **out);
/* Requests arrived and not yet answered, now (host: an index, or -1 for
 * all hosts), and the most there were at once so far. */
unsigned fx_http_pending(fx_http_t *h, int host);
unsigned fx_http_max_pending(fx_http_t *h, int host);
/* Lets every held response go on, now and from now on (routes with hold
 * no longer wait).  Thread-safe. */
void fx_http_release(fx_http_t *h);

/* ---- processes ---------------------------------------------------------- */
/* The crawler binary under test: $CRAWLER_BIN if set (e.g. a TSan build of
 * the program driven by these tests), else the one built with them. */
char *fx_crawler_bin(const char *built);
#ifdef CRAWLER_BIN_DEFAULT
#define CRAWLER_BIN fx_crawler_bin(CRAWLER_BIN_DEFAULT)
#endif

/* Runs argv (argv[0] a path) with stdout/stderr to files (may be NULL: to
 * /dev/null), waits at most timeout_ms, killing it past that.  Returns the
 * exit status (0..255), 128+signal if killed by a signal, -1 on failure to
 * run, -2 on timeout. */
int fx_run(char *const argv[], const char *out_path, const char *err_path, unsigned timeout_ms);
/* fx_run with the environment variable var unset for the child (and set
 * back as it was after), output to /dev/null.  Not thread-safe (setenv). */
int fx_run_without(const char *var, char *const argv[], unsigned timeout_ms);
/* Starts argv in the background (PDEATHSIG set); returns its pid or -1. */
pid_t fx_spawn(char *const argv[], const char *out_path, const char *err_path);
/* Waits for pid at most timeout_ms; returns as fx_run. */
int fx_wait(pid_t pid, unsigned timeout_ms);

/* A fresh temporary directory (caller frees the string; fx_rmtree removes). */
char *fx_tmpdir(void);
void fx_rmtree(const char *dir);
/* Reads a whole file (caller frees); NULL on error.  *len may be NULL. */
char *fx_read_file(const char *path, size_t *len);
int fx_write_file(const char *path, const char *data);

/* Milliseconds on a monotonic clock. */
uint64_t fx_now_ms(void);

#endif
