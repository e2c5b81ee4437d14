/*
 * test_robots_expiry.c -- a robots.txt is used for --robots-ttl at most (RFC
 * 9309: 24 hours at most), then fetched again: on two crawler processes
 * against the HTTP fixture, a host whose robots.txt starts to disallow part
 * of it mid-crawl gets its robots.txt requested again, and the part it now
 * disallows stops being requested.  The verdict is the server's own log;
 * the one bound in time is the rules' lifetime in a thread (the TTL, so two
 * TTLs after the new robots.txt was answered) plus 3 s for a slow machine.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "hosts_site.h"

#define TTL_S 2

/* /h0/p/2 and /h0/p/20 .. /h0/p/29: what the second robots.txt disallows */
static int disallowed(const char *path)
{
    return !strncmp(path, "/h0/p/2", 7);
}

Test(robots_expiry, a_changed_robots_txt_is_read_again_and_obeyed, .timeout = 180)
{
    site_t s = {.hosts = 1, .pages = 32, .slow = -1};
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    site_serve(&s, site_page);
    char *dir = fx_tmpdir(), seeds[600], ttl[16];
    cr_assert_not_null(dir);
    site_seeds(&s, dir, seeds, sizeof seeds);
    snprintf(ttl, sizeof ttl, "%d", TTL_S);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        char log[600];
        char *argv[] = {CRAWLER_BIN, "crawl",        "--redis", (char *)fx_redis_url(r),
                        "--seeds",   seeds,          "--quiet", "--delay",
                        "250",       "--robots-ttl", ttl,       NULL};
        snprintf(log, sizeof log, "%s/log%d", dir, p);
        pid[p] = fx_spawn(argv, NULL, log);
        cr_assert(pid[p] > 0, "%s", fx_error());
    }
    /* after 6 pages, the host starts to disallow /h0/p/2* */
    fx_http_req_t *log = NULL;
    size_t n = 0;
    for (int i = 0; i < 3000; i++) {
        size_t pages = 0;
        for (size_t k = 0; k < n; k++)
            pages += strncmp(log[k].path, "/h0/p/", 6) == 0;
        if (pages >= 6)
            break;
        free(log);
        usleep(10000);
        n = fx_http_log(s.h, &log);
    }
    free(log);
    uint64_t t_switch = fx_now_ms();
    fx_http_set(
        s.h, "/robots.txt",
        &(fx_route_t){.content_type = "text/plain", .body = "User-agent: *\nDisallow: /h0/p/2\n"});
    for (int p = 0; p < 2; p++) {
        int rc = fx_wait(pid[p], 150000);
        cr_expect_eq(rc, 0, "crawler %d exited %d", p, rc);
    }
    n = fx_http_log(s.h, &log);
    uint64_t v2_answered = 0;
    size_t robots = 0, late = 0, never = 0, requested[32] = {0};
    for (size_t k = 0; k < n; k++) {
        unsigned h, i;
        if (!strcmp(log[k].path, "/robots.txt")) {
            robots++;
            if (!v2_answered && log[k].arrived_us / 1000 > t_switch)
                v2_answered = log[k].answered_us;
        } else if (page_of(&s, &log[k], &h, &i) == 0) {
            requested[i]++;
        }
    }
    cr_assert_gt(v2_answered, 0,
                 "robots.txt was not requested again after it changed (%zu "
                 "requests of it)",
                 robots);
    for (size_t k = 0; k < n; k++)
        if (disallowed(log[k].path) &&
            log[k].arrived_us > v2_answered + (2 * TTL_S + 3) * 1000000u) {
            late++;
            cr_expect_fail("%s requested %.1f s after the new robots.txt was answered", log[k].path,
                           (double)(log[k].arrived_us - v2_answered) / 1e6);
        }
    for (unsigned i = 0; i < s.pages; i++) {
        char path[32];
        snprintf(path, sizeof path, "/h0/p/%u", i);
        never += disallowed(path) && !requested[i];
        cr_expect_leq(requested[i], 1, "%s requested %zu times", path, requested[i]);
    }
    cr_expect_gt(never, 0, "every disallowed page was fetched anyway");
    fprintf(stderr,
            "robots_expiry: robots.txt requested %zu times; %zu of 11 disallowed pages "
            "never requested; %zu late\n",
            robots, never, late);
    free(log);
    fx_rmtree(dir);
    free(dir);
    fx_http_stop(s.h);
    fx_redis_stop(r);
}
