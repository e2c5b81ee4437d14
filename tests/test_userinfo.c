/*
 * A URL with userinfo, end to end: the crawler never keeps credentials found
 * in a URL (the normalizer strips userinfo), so the seed's queue key, its
 * robots.txt matching and its Crawl-delay all use the one origin
 * "scheme://host:port" -- before, the C side matched robots rules against
 * "mple.com/..." and the scripts queued the URL under "user:pw@..." where the
 * host's Crawl-delay never reached it.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    redisReply *q = redisCommand(u.rc, "LRANGE crawler:{ui}:q:%s 0 -1", u.origin);
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
