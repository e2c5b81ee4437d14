/*
 * test_tls.c -- TLS sessions, one per origin (--tls-sessions;
 * crawler/fetch/tls_sessions.c), on real crawler processes against
 * `openssl s_server -www` (fx_tls.h), which closes every connection after
 * one response and says in the page whether its session was resumed.
 * HOSTS names (hN.localhost: libcurl resolves every *.localhost name to the
 * loopback address) on the one server, two pages each, at --delay 300: a
 * host's second page comes after every other host's first handshake, so a
 * session cache of a few entries has lost its session by then.  The
 * verdict is the server's own word in each page (--text --text-all).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "fx_tls.h"

#define HOSTS 40

typedef struct run {
    fx_redis_t *r;
    char *dir;
    pid_t srv;
    int port;
    char seeds[600], crt[600];
} run_t;

static void run_start(run_t *t)
{
    t->r = fx_redis_start();
    cr_assert_not_null(t->r, "%s", fx_error());
    t->dir = fx_tmpdir();
    cr_assert_not_null(t->dir);
    char san[4096];
    size_t n = 0;
    for (unsigned h = 0; h < HOSTS; h++)
        n += (size_t)snprintf(san + n, sizeof san - n, "%sDNS:h%u.localhost", h ? "," : "", h);
    t->srv = fx_tls_server(t->dir, san, &t->port);
    snprintf(t->crt, sizeof t->crt, "%s/crt.pem", t->dir);
    snprintf(t->seeds, sizeof t->seeds, "%s/seeds.txt", t->dir);
    FILE *f = fopen(t->seeds, "w");
    cr_assert_not_null(f);
    for (unsigned p = 1; p <= 2; p++)
        for (unsigned h = 0; h < HOSTS; h++)
            fprintf(f, "https://h%u.localhost:%d/?p=%u\n", h, t->port, p);
    cr_assert_eq(fclose(f), 0);
}

static void run_stop(run_t *t)
{
    kill(t->srv, SIGTERM);
    fx_wait(t->srv, 5000);
    fx_rmtree(t->dir);
    free(t->dir);
    fx_redis_stop(t->r);
}

/* A crawl of the seeds (a crawl of its own name, so each run starts
 * afresh) with these options more; the pages the server said were on a
 * resumed session, and on a new one, in *fresh. */
static unsigned crawl(run_t *t, const char *name, const char *sessions, unsigned *fresh)
{
    char text[700], log[700];
    snprintf(text, sizeof text, "%s/%s.text.jsonl", t->dir, name);
    snprintf(log, sizeof log, "%s/%s.log", t->dir, name);
    char *argv[] = {CRAWLER_BIN,      "crawl",
                    "--redis",        (char *)fx_redis_url(t->r),
                    "--crawl",        (char *)name,
                    "--seeds",        t->seeds,
                    "--ca-file",      t->crt,
                    "--delay",        "300",
                    "--quiet",        "--ignore-robots",
                    "--text",         text,
                    "--text-all",     "--tls-sessions",
                    (char *)sessions, NULL};
    int rc = fx_run(argv, NULL, log, 120000);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawl exited %d: %s", rc, err ? err : "");
    free(err);
    char *s = fx_read_file(text, NULL);
    cr_assert_not_null(s, "no --text file");
    unsigned lines = 0, reused = 0;
    *fresh = 0;
    for (char *l = s; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        char *end = strchr(l, '\n');
        if (end)
            *end = '\0';
        lines++;
        reused += strstr(l, "Reused, TLS") != NULL;
        *fresh += strstr(l, "New, TLS") != NULL;
        if (end)
            *end = '\n';
    }
    cr_expect_eq(lines, 2 * HOSTS, "%u text records for %d pages", lines, 2 * HOSTS);
    free(s);
    return reused;
}

Test(tls, every_hosts_second_connection_resumes_its_session, .timeout = 240)
{
    run_t t;
    run_start(&t);
    unsigned fresh, reused = crawl(&t, "kept", "8192", &fresh);
    cr_expect_eq(reused, HOSTS, "second pages on a resumed session: %u of %d", reused, HOSTS);
    cr_expect_eq(fresh, HOSTS, "pages on a new session: %u (one a host)", fresh);
    unsigned fresh0, reused0 = crawl(&t, "curls", "0", &fresh0);
    cr_expect_lt(reused0, reused, "libcurl's own cache of 8 resumed as many: %u", reused0);
    fprintf(stderr, "tls: %d hosts, 2 pages each: resumed %u with --tls-sessions, %u without\n",
            HOSTS, reused, reused0);
    run_stop(&t);
}

/* A table of 4 slots (one bucket): the hosts take them from one another,
 * and a session is offered only to the origin it was made for.  s_server
 * takes any of its tickets on any name (one key, one certificate for all),
 * so a session offered to another origin would resume: about every second
 * page would.  Only a host whose two pages came within 4 handshakes of
 * each other may. */
Test(tls, a_table_smaller_than_the_hosts_offers_each_origin_only_its_own, .timeout = 240)
{
    run_t t;
    run_start(&t);
    unsigned fresh, reused = crawl(&t, "one", "4", &fresh);
    cr_expect_eq(reused + fresh, 2 * HOSTS, "every page fetched: %u resumed, %u new", reused,
                 fresh);
    cr_expect_lt(reused, HOSTS / 2, "%u pages resumed a session with 4 slots for %d hosts", reused,
                 HOSTS);
    run_stop(&t);
}

/* The CA file is read when a connection pool makes its first TLS
 * connection, not at every connection (libcurl's CA cache, which holds
 * only when no CA directory is named beside the file): emptied once every
 * host's first page is in (every pool a host's connections go to has made
 * one: a host's connections stay in one pool), it still verifies every
 * later connection. */
Test(tls, the_ca_file_is_read_once_not_at_every_connection, .timeout = 240)
{
    run_t t;
    run_start(&t);
    char text[700], log[700];
    snprintf(text, sizeof text, "%s/ca.text.jsonl", t.dir);
    snprintf(log, sizeof log, "%s/ca.log", t.dir);
    char *argv[] = {CRAWLER_BIN,  "crawl",
                    "--redis",    (char *)fx_redis_url(t.r),
                    "--crawl",    "ca",
                    "--seeds",    t.seeds,
                    "--ca-file",  t.crt,
                    "--delay",    "300",
                    "--quiet",    "--ignore-robots",
                    "--text",     text,
                    "--text-all", "--threads",
                    "1",          "--concurrency",
                    "32",         NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    cr_assert_gt(pid, 0, "%s", fx_error());
    int emptied = 0;
    for (int i = 0; i < 6000 && !emptied; i++) { /* (bounded: 60 s) */
        char *s = fx_read_file(text, NULL);
        unsigned n = 0; /* first pages in */
        for (const char *p = s; p && (p = strstr(p, "/?p=1\"")); p++)
            n++;
        if (n >= HOSTS)
            emptied = fx_write_file(t.crt, "") == 0;
        free(s);
        if (!emptied)
            usleep(10000);
    }
    cr_assert(emptied, "the first pages did not come in to empty the CA file after");
    int rc = fx_wait(pid, 120000);
    char *err = fx_read_file(log, NULL);
    cr_expect_eq(rc, 0, "crawl exited %d: %s", rc, err ? err : "");
    free(err);
    char *s = fx_read_file(text, NULL);
    cr_assert_not_null(s);
    unsigned lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 2 * HOSTS,
                 "%u of %d pages fetched (their TLS verified) after the CA "
                 "file was emptied",
                 lines, 2 * HOSTS);
    free(s);
    run_stop(&t);
}
