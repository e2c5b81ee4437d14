/*
 * A URL with userinfo, end to end: the crawler never keeps credentials found
 * in a URL (the normalizer strips userinfo), so the seed's queue key, its
 * robots.txt matching and its Crawl-delay all use the one origin
 * "scheme://host:port" -- before, the C side matched robots rules against
 * "mple.com/..." and the scripts queued the URL under "user:pw@..." where the
 * host's Crawl-delay never reached it.  And links with userinfo (empty,
 * "a:", "u:p", "::@c@" up to the last '@') are requested without any
 * Authorization header: libcurl turns any userinfo into credentials.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixtures.h"

typedef struct ui {
    fx_redis_t *r;
    fx_http_t *h;
    redisContext *rc;
    char *dir, seeds[512], out[512], log[512], origin[128];
} ui_t;

static void ui_start(ui_t *u)
{
    memset(u, 0, sizeof *u);
    u->r = fx_redis_start();
    cr_assert_not_null(u->r, "cannot start redis-server: %s", fx_error());
    u->h = fx_http_start();
    cr_assert_not_null(u->h, "cannot start the HTTP fixture: %s", fx_error());
    u->rc = fx_redis_connect(u->r);
    cr_assert_not_null(u->rc);
    u->dir = fx_tmpdir();
    cr_assert_not_null(u->dir);
    snprintf(u->origin, sizeof u->origin, "http://127.0.0.1:%d", fx_http_port(u->h));
    snprintf(u->seeds, sizeof u->seeds, "%s/seeds.txt", u->dir);
    snprintf(u->out, sizeof u->out, "%s/out.jsonl", u->dir);
    snprintf(u->log, sizeof u->log, "%s/log", u->dir);
    char content[512];
    int port = fx_http_port(u->h);
    snprintf(content, sizeof content,
             "http://user:pw@127.0.0.1:%d/a/b?q\nhttp://user:pw@127.0.0.1:%d/\n", port, port);
    cr_assert_eq(fx_write_file(u->seeds, content), 0);
    fx_http_set(u->h, "/robots.txt",
                &(fx_route_t){.content_type = "text/plain",
                              .body = "User-agent: *\nDisallow: /a/\nCrawl-delay: 1\n"});
    fx_http_page(u->h, "/", "<a href=\"/ok\">ok</a><a href=\"/a/c\">no</a>");
    fx_http_page(u->h, "/ok", "leaf");
    fx_http_page(u->h, "/a/b?q", "must not be fetched");
    fx_http_page(u->h, "/a/c", "must not be fetched");
}

static void ui_stop(ui_t *u)
{
    redisFree(u->rc);
    fx_rmtree(u->dir);
    free(u->dir);
    fx_http_stop(u->h);
    fx_redis_stop(u->r);
}

/* Number of keys of crawl "ui" whose name contains needle. */
static size_t keys_with(redisContext *rc, const char *needle)
{
    redisReply *r = redisCommand(rc, "KEYS *%s*", needle);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    size_t n = r->elements;
    freeReplyObject(r);
    return n;
}

Test(userinfo, seed_queue_key_robots_and_crawl_delay_use_one_origin, .timeout = 120)
{
    ui_t u;
    ui_start(&u);
    char *seed[] = {CRAWLER_BIN, "seed", u.seeds, "--redis", (char *)fx_redis_url(u.r),
                    "--crawl",   "ui",   NULL};
    int rc = fx_run(seed, NULL, u.log, 60000);
    cr_assert_eq(rc, 0, "crawler seed exited %d", rc);

    /* queued under the origin without userinfo; no key names the credentials */
    redisReply *q = fx_redis_queue(u.rc, "crawler:{ui}:", u.origin);
    cr_assert(q && q->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(q->elements, 2, "queue q:%s holds %zu entries", u.origin, q->elements);
    for (size_t i = 0; i < q->elements; i++)
        cr_expect_null(strstr(q->element[i]->str, "user"), "entry keeps userinfo: %s",
                       q->element[i]->str);
    freeReplyObject(q);
    cr_expect_eq(keys_with(u.rc, "user"), 0, "a key names the userinfo");

    char *crawl[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_redis_url(u.r),
                     "--crawl",   "ui",    "--delay", "0",
                     "--out",     u.out,   "--quiet", NULL};
    rc = fx_run(crawl, NULL, u.log, 60000);
    char *err = fx_read_file(u.log, NULL);
    cr_expect_eq(rc, 0, "crawler exited %d: %.2000s", rc, err ? err : "");
    free(err);

    /* robots.txt matched against the path, not against "mple.com/..." */
    cr_expect_eq(fx_http_hits(u.h, "/a/b?q"), 0, "the disallowed seed was fetched");
    cr_expect_eq(fx_http_hits(u.h, "/a/c"), 0, "the disallowed link was fetched");
    cr_expect_eq(fx_http_hits(u.h, "/"), 1);
    cr_expect_eq(fx_http_hits(u.h, "/ok"), 1);
    cr_expect_eq(fx_http_hits(u.h, "/robots.txt"), 1);

    /* the Crawl-delay reached the origin the URLs are queued under */
    redisReply *d = redisCommand(u.rc, "HGET crawler:{ui}:hdelay %s", u.origin);
    cr_assert_not_null(d);
    cr_expect(d->type == REDIS_REPLY_STRING && !strcmp(d->str, "1000"),
              "hdelay of %s: %s (want 1000)", u.origin,
              d->type == REDIS_REPLY_STRING ? d->str : "(none)");
    freeReplyObject(d);
    cr_expect_eq(keys_with(u.rc, "user"), 0, "a key names the userinfo after the crawl");

    /* the records name the URL as requested, without userinfo */
    char *out = fx_read_file(u.out, NULL);
    cr_assert_not_null(out);
    char want[256];
    snprintf(want, sizeof want, "\"url\":\"%s/a/b?q\"", u.origin);
    char *rec = strstr(out, want);
    cr_expect_not_null(rec, "no record for %s/a/b?q in: %.1000s", u.origin, out);
    if (rec) {
        char *eol = strchr(rec, '\n');
        if (eol)
            *eol = '\0';
        cr_expect_not_null(strstr(rec, "\"error_kind\":\"robots\""), "record: %s", rec);
    }
    cr_expect_null(strstr(out, "user:pw"), "a record keeps the userinfo");
    free(out);
    ui_stop(&u);
}

/* ---- no credentials are ever sent ----------------------------------------
 * A raw loopback HTTP server that keeps every request head it gets, so the
 * test sees the headers libcurl sent (the fixture server does not keep
 * them).  One connection at a time, Connection: close; bounded in
 * connections and in time. */

#define RAW_MAX_CONNS 64
#define RAW_POLLS 1200 /* of 100 ms: 2 minutes at most */

typedef struct raw {
    int fd, port, stop;
    pthread_t th;
    pthread_mutex_t mu;
    char page[1024];
    char log[32768];
    size_t len;
} raw_t;

/* Reads one request head from c into the log and answers it. */
static void raw_serve(raw_t *s, int c)
{
    char req[4096], resp[2048];
    size_t n = 0;
    struct timeval tv = {2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (n < sizeof req - 1) {
        ssize_t k = recv(c, req + n, sizeof req - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[n] = '\0';
    pthread_mutex_lock(&s->mu);
    size_t room = sizeof s->log - 1 - s->len;
    size_t take = n < room ? n : room;
    memcpy(s->log + s->len, req, take);
    s->len += take;
    s->log[s->len] = '\0';
    pthread_mutex_unlock(&s->mu);
    const char *body = !strncmp(req, "GET / ", 6) ? s->page : "leaf";
    int status = !strncmp(req, "GET /robots.txt ", 16) ? 404 : 200;
    int len = snprintf(resp, sizeof resp,
                       "HTTP/1.1 %d X\r\nContent-Type: text/html\r\nContent-Length: %zu\r\n"
                       "Connection: close\r\n\r\n%s",
                       status, strlen(body), body);
    if (len > 0)
        (void)send(c, resp, (size_t)len, MSG_NOSIGNAL);
    close(c);
}

static void *raw_loop(void *arg)
{
    raw_t *s = arg;
    int conns = 0;
    for (int i = 0; i < RAW_POLLS && conns < RAW_MAX_CONNS && !__atomic_load_n(&s->stop, 0); i++) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            continue;
        conns++;
        raw_serve(s, c);
    }
    return NULL;
}

static void raw_start(raw_t *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s->fd, 0);
    cr_assert_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s->fd, 16), 0);
    cr_assert_eq(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    snprintf(s->page, sizeof s->page,
             "<a href=\"http://@127.0.0.1:%d/e1\">1</a>"
             "<a href=\"http://a:@127.0.0.1:%d/e2\">2</a>"
             "<a href=\"http://u:p@127.0.0.1:%d/e3\">3</a>"
             "<a href=\"//x:y@127.0.0.1:%d/e4\">4</a>"
             "<a href=\"http:\\\\::@c@127.0.0.1:%d/e5\">5</a>",
             s->port, s->port, s->port, s->port, s->port);
    cr_assert_eq(pthread_create(&s->th, NULL, raw_loop, s), 0);
}

static void raw_stop(raw_t *s)
{
    __atomic_store_n(&s->stop, 1, 0);
    pthread_join(s->th, NULL);
    close(s->fd);
    pthread_mutex_destroy(&s->mu);
}

Test(userinfo, links_with_userinfo_are_fetched_without_credentials, .timeout = 120)
{
    raw_t s;
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    char *dir = fx_tmpdir(), seeds[512], out[512], log[512], seed[128];
    cr_assert_not_null(dir);
    raw_start(&s);
    snprintf(seeds, sizeof seeds, "%s/seeds.txt", dir);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(seed, sizeof seed, "http://127.0.0.1:%d/\n", s.port);
    cr_assert_eq(fx_write_file(seeds, seed), 0);
    char *crawl[] = {CRAWLER_BIN, "crawl", "--seeds", seeds, "--redis", (char *)fx_redis_url(r),
                     "--crawl",   "cred",  "--delay", "0",   "--out",   out,
                     "--quiet",   NULL};
    int rc = fx_run(crawl, NULL, log, 90000);
    raw_stop(&s);
    cr_expect_eq(rc, 0, "crawler exited %d", rc);
    /* every link was requested (the Standard accepts each), none with
     * credentials: no Authorization header, no userinfo anywhere */
    static const char *const want[] = {"GET /e1 ", "GET /e2 ", "GET /e3 ", "GET /e4 ", "GET /e5 "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_not_null(strstr(s.log, want[i]), "no \"%s\" request in:\n%s", want[i], s.log);
    cr_expect_null(strcasestr(s.log, "authorization"), "credentials were sent:\n%s", s.log);
    char *o = fx_read_file(out, NULL);
    cr_expect(o && !strchr(o, '@'), "a record keeps userinfo: %s", o ? o : "(none)");
    free(o);
    fx_rmtree(dir);
    free(dir);
    fx_redis_stop(r);
}
