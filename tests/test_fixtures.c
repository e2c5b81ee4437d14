/* The test fixtures themselves: a real redis-server and HTTP server start,
 * answer, count and stop. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <string.h>

#include "fixtures.h"

Test(fixtures, redis_starts_answers_and_stops)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "cannot start redis-server: %s", fx_error());
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c, "%s", fx_error());
    redisReply *rep = redisCommand(c, "SET k v");
    cr_assert(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    rep = redisCommand(c, "GET k");
    cr_assert(rep && rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "v") == 0);
    freeReplyObject(rep);
    redisFree(c);
    pid_t pid = fx_redis_pid(r);
    fx_redis_stop(r);
    cr_assert(kill(pid, 0) != 0, "redis-server %d still running after stop", (int)pid);
}

Test(fixtures, http_serves_routes_redirects_and_counts_hits)
{
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "cannot start HTTP fixture: %s", fx_error());
    fx_http_page(h, "/", "<a href=/a>a</a>");
    fx_http_redirect(h, "/old", 301, "/");
    char out[] = "/tmp/crawler-fx-XXXXXX";
    int fd = mkstemp(out);
    cr_assert(fd >= 0);
    close(fd);
    char url[128], url2[128], url3[128];
    snprintf(url, sizeof url, "%s/?q=1", fx_http_base(h));
    snprintf(url2, sizeof url2, "%s/old", fx_http_base(h));
    snprintf(url3, sizeof url3, "%s/", fx_http_base(h));
    char *argv[] = {"curl",      "-s", "-w", "%{http_code} ", "-o", "/dev/null", url, "-o",
                    "/dev/null", url2, "-o", "/dev/null",     url3, NULL};
    int rc = fx_run(argv, out, NULL, 20000);
    cr_assert_eq(rc, 0, "curl exited %d", rc);
    char *codes = fx_read_file(out, NULL);
    cr_assert_str_eq(codes, "404 301 200 ");
    free(codes);
    unlink(out);
    cr_assert_eq(fx_http_hits(h, "/?q=1"), 1);
    cr_assert_eq(fx_http_hits(h, "/old"), 1);
    cr_assert_eq(fx_http_hits(h, "/"), 1);
    cr_assert_eq(fx_http_total(h), 3);
    fx_http_stop(h);
}
