/*
 * Bounded input, validation before Redis, error kinds and the Retry-After
 * cap, on the real crawler binary against a real redis-server and servers
 * on 127.0.0.1: /dev/zero as seeds or config, a seed line longer than
 * --max-url-length, bad options that must exit 2 leaving no key, a seed
 * whose certificate is self-signed (openssl s_server), and a 429 with
 * Retry-After: 3600.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "fixtures.h"
#include "fx_tls.h"

#define RSS_BOUND_KB (256 * 1024) /* a crawler reading /dev/zero stays far below */

typedef struct env {
    fx_redis_t *r;
    redisContext *c;
    char *dir;
    char path[512]; /* scratch */
    char log[512];
} env_t;

static void env_start(env_t *e)
{
    e->r = fx_redis_start();
    cr_assert_not_null(e->r, "cannot start redis-server: %s", fx_error());
    e->c = fx_redis_connect(e->r);
    cr_assert_not_null(e->c);
    e->dir = fx_tmpdir();
    cr_assert_not_null(e->dir);
    snprintf(e->log, sizeof e->log, "%s/log", e->dir);
}

static void env_stop(env_t *e)
{
    redisFree(e->c);
    fx_rmtree(e->dir);
    free(e->dir);
    fx_redis_stop(e->r);
}

static const char *in_dir(env_t *e, const char *name)
{
    snprintf(e->path, sizeof e->path, "%s/%s", e->dir, name);
    return e->path;
}

static long long dbsize(env_t *e)
{
    redisReply *rep = redisCommand(e->c, "DBSIZE");
    cr_assert(rep && rep->type == REDIS_REPLY_INTEGER);
    long long n = rep->integer;
    freeReplyObject(rep);
    return n;
}

/* HGET of a crawl's stats field, 0 if missing. */
static long long stat_of(env_t *e, const char *crawl, const char *field)
{
    redisReply *rep = redisCommand(e->c, "HGET crawler:{%s}:stats %s", crawl, field);
    cr_assert_not_null(rep);
    long long v = rep->type == REDIS_REPLY_STRING ? strtoll(rep->str, NULL, 10) : 0;
    freeReplyObject(rep);
    return v;
}

static char *log_text(env_t *e)
{
    char *s = fx_read_file(e->log, NULL);
    return s ? s : strdup("");
}

/* Resident set of pid in KiB (/proc), 0 if unknown. */
static long rss_now_kb(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    long size = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Runs argv like fx_run (-2: killed after timeout_ms), also giving the
 * child's peak RSS in KiB; a child past RSS_BOUND_KB is killed at once
 * (so a regression cannot eat the machine's memory) and its peak is then
 * at least the bound. */
static int run_rss(char *const argv[], const char *err_path, unsigned timeout_ms, long *maxrss_kb)
{
    pid_t pid = fx_spawn(argv, NULL, err_path);
    cr_assert(pid > 0, "cannot start %s: %s", argv[0], fx_error());
    uint64_t deadline = fx_now_ms() + timeout_ms;
    int st = 0;
    struct rusage ru;
    pid_t got;
    while ((got = wait4(pid, &st, WNOHANG, &ru)) == 0 && fx_now_ms() < deadline &&
           rss_now_kb(pid) < RSS_BOUND_KB)
        usleep(2000);
    if (got == 0) {
        kill(pid, SIGKILL);
        wait4(pid, &st, 0, &ru);
        *maxrss_kb = ru.ru_maxrss;
        return -2;
    }
    *maxrss_kb = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* run_rss, failing the test past the bound. */
static int run_bounded(char *const argv[], const char *err_path, unsigned timeout_ms)
{
    long rss = 0;
    int rc = run_rss(argv, err_path, timeout_ms, &rss);
    cr_expect_lt(rss, RSS_BOUND_KB, "%s %s: peak RSS %ld KiB (killed)", argv[0], argv[1], rss);
    return rc;
}

/* ---- bounded input ---------------------------------------------------------- */

Test(validate, dev_zero_as_seeds_ends_with_an_error_in_bounded_memory_leaving_no_key)
{
    env_t e;
    env_start(&e);
    const char *cmds[][2] = {{"crawl", "--seeds"}, {"seed", NULL}};
    for (size_t i = 0; i < 2; i++) {
        char *crawl[] = {CRAWLER_BIN, "crawl",     "--redis", (char *)fx_redis_url(e.r),
                         "--seeds",   "/dev/zero", "--quiet", NULL};
        char *seed[] = {CRAWLER_BIN, "seed", "/dev/zero", "--redis", (char *)fx_redis_url(e.r),
                        NULL};
        long rss = 0;
        int rc = run_rss(i == 0 ? crawl : seed, e.log, 20000, &rss);
        char *err = log_text(&e);
        cr_expect_eq(rc, 2, "%s /dev/zero: exit %d, expected 2: %s", cmds[i][0], rc, err);
        cr_expect(strstr(err, "/dev/zero:1: no end of line"), "%s /dev/zero: message: %s",
                  cmds[i][0], err);
        cr_expect_lt(rss, RSS_BOUND_KB, "%s /dev/zero: peak RSS %ld KiB", cmds[i][0], rss);
        cr_expect_eq(dbsize(&e), 0, "%s /dev/zero left keys in Redis", cmds[i][0]);
        free(err);
    }
    env_stop(&e);
}

Test(validate, seed_line_longer_than_max_url_length_is_reported_skipped_and_the_next_seeded)
{
    env_t e;
    env_start(&e);
    enum { LONG_LINE = 8 << 20 };
    FILE *f = fopen(in_dir(&e, "seeds.txt"), "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < LONG_LINE; i++)
        putc('a', f);
    fprintf(f, "\nhttp://127.0.0.1:9/next\n");
    cr_assert_eq(fclose(f), 0);
    char *argv[] = {CRAWLER_BIN, "seed", e.path,      "--redis", (char *)fx_redis_url(e.r),
                    "--crawl",   "lng",  (char *)NULL};
    long rss = 0;
    int rc = run_rss(argv, e.log, 20000, &rss);
    char *err = log_text(&e);
    cr_expect_eq(rc, 3, "exit %d, expected 3 (a line rejected): %s", rc, err);
    char want[128];
    snprintf(want, sizeof want, "seeds.txt:1: line of %d bytes", LONG_LINE);
    cr_expect(strstr(err, want), "no '%s' in: %.300s", want, err);
    cr_expect_lt(rss, RSS_BOUND_KB, "peak RSS %ld KiB", rss);
    redisReply *q = fx_redis_queue(e.c, "crawler:{lng}:", "http://127.0.0.1:9");
    cr_assert(q && q->type == REDIS_REPLY_ARRAY);
    /* the entry is the URL's path: its queue names the origin (frontier/entry.c) */
    cr_expect(q->elements == 1 && strcmp(q->element[0]->str, "/next") == 0,
              "line 2 was not seeded (%zu queued)", q->elements);
    freeReplyObject(q);
    free(err);
    env_stop(&e);
}

/* A seeds file saved with a UTF-8 byte-order mark (as some editors do):
 * its first line is a seed like the others, not a malformed URL. */
Test(validate, a_byte_order_mark_before_the_first_seed_is_no_part_of_it)
{
    env_t e;
    env_start(&e);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"),
                               "\xEF\xBB\xBFhttp://127.0.0.1:9/first\nhttp://127.0.0.1:9/second\n"),
                 0);
    char *argv[] = {CRAWLER_BIN, "seed", e.path,      "--redis", (char *)fx_redis_url(e.r),
                    "--crawl",   "bom",  (char *)NULL};
    int rc = run_bounded(argv, e.log, 20000);
    char *err = log_text(&e);
    cr_expect_eq(rc, 0, "exit %d (3: a line rejected): %s", rc, err);
    redisReply *q = fx_redis_queue(e.c, "crawler:{bom}:", "http://127.0.0.1:9");
    cr_assert(q && q->type == REDIS_REPLY_ARRAY);
    cr_expect(q->elements == 2 && !strcmp(q->element[0]->str, "/first"),
              "the first seed was not seeded (%zu queued)", q->elements);
    freeReplyObject(q);
    free(err);
    env_stop(&e);
}

/* ---- a body that decodes to far more than it weighs ------------------------- */

/* gzip of n MiB of zeros (a "bomb": ~1 KiB a MiB); its length in *len. */
static unsigned char *gzip_zeros(size_t mib, size_t *len)
{
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = mib * 1100 + 4096;
    unsigned char *out = malloc(cap), *zeros = calloc(1, 1 << 20);
    cr_assert(out && zeros);
    z.next_out = out;
    z.avail_out = (uInt)cap;
    for (size_t i = 0; i < mib; i++) {
        z.next_in = zeros;
        z.avail_in = 1 << 20;
        cr_assert_eq(deflate(&z, i + 1 == mib ? Z_FINISH : Z_NO_FLUSH),
                     i + 1 == mib ? Z_STREAM_END : Z_OK);
    }
    *len = cap - z.avail_out;
    deflateEnd(&z);
    free(zeros);
    return out;
}

/* 40 hosts' pages each a gzip bomb (100 MiB of zeros in 100 KiB), crawled
 * with --warc: the body is archived as it came (its weight, its
 * Content-Encoding kept) and decoded only for the parser, so memory per
 * transfer stays bounded: the crawler's peak RSS stays under the bound that
 * 40 transfers of --max-size (10 MiB) of decoded body each would pass, and
 * each page is recorded too-large, cut at the cap. */
Test(validate, a_gzip_bomb_costs_its_weight_in_the_warc_and_in_memory, .timeout = 300)
{
    enum { N = 40 };
    env_t e;
    env_start(&e);
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "%s", fx_error());
    size_t blen;
    unsigned char *bomb = gzip_zeros(100, &blen);
    char seeds[N * 48] = "", path[32];
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "/bomb%d", i);
        fx_http_set(h, path,
                    &(fx_route_t){.body = (const char *)bomb,
                                  .body_len = blen,
                                  .headers = "Content-Encoding: gzip\n",
                                  .chunk_delay_ms = 300}); /* all in flight at once */
        size_t at = strlen(seeds);
        snprintf(seeds + at, sizeof seeds - at, "%s%s\n", fx_http_base(h), path);
    }
    free(bomb);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), seeds), 0);
    char warc[600], out[600];
    snprintf(warc, sizeof warc, "%s/out.warc.gz", e.dir);
    snprintf(out, sizeof out, "%s/out.jsonl", e.dir);
    char *argv[] = {CRAWLER_BIN, "crawl",      "--redis", (char *)fx_redis_url(e.r),
                    "--seeds",   e.path,       "--warc",  warc,
                    "--out",     out,          "--quiet", "--delay",
                    "0",         "--per-host", "64",      NULL};
    long rss = 0;
    int rc = run_rss(argv, e.log, 120000, &rss);
    char *err = log_text(&e);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, err);
    cr_expect_lt(rss, RSS_BOUND_KB, "peak RSS %ld KiB: the bodies were held decoded", rss);
    free(err);
    char *lines = fx_read_file(out, NULL);
    size_t too_large = 0;
    for (const char *p = lines; p && (p = strstr(p, "\"error_kind\":\"too-large\"")); p++)
        too_large++;
    cr_expect_eq(too_large, N, "%zu of %d bombs recorded too-large", too_large, N);
    free(lines);
    gzFile g = gzopen(warc, "rb"); /* every member, one after the other */
    cr_assert_not_null(g);
    size_t total = 0, cap = 64 << 20;
    char *all = malloc(cap + 1);
    cr_assert_not_null(all);
    int n;
    while (total < cap && (n = gzread(g, all + total, (unsigned)(cap - total))) > 0)
        total += (size_t)n;
    gzclose(g);
    all[total] = '\0';
    cr_expect_lt(total, (size_t)N * (blen + 4096) + (1 << 20),
                 "the WARC holds %zu bytes: more than the bombs' weight", total);
    size_t kept = 0;
    for (const char *p = all;
         (p = memmem(p, total - (size_t)(p - all), "Content-Encoding: gzip", 22)) != NULL; p++)
        kept++;
    cr_expect_geq(kept, N, "%zu responses keep their Content-Encoding", kept);
    free(all);
    fx_http_stop(h);
    env_stop(&e);
}

/* ---- validation before Redis ---------------------------------------------------- */

typedef struct refusal {
    const char *what;
    const char *opt, *val;   /* val "@x": path x in the test's directory */
    const char *opt2, *val2; /* a second option, or NULL */
    const char *message;     /* in the one line printed */
} refusal_t;

static const refusal_t REFUSED[] = {
    {"bad --include regex", "--include", "(", NULL, NULL, "bad regular expression '('"},
    {"bad --exclude regex", "--exclude", "a[", NULL, NULL, "bad regular expression 'a['"},
    {"--out in a missing directory", "--out", "@none/out.jsonl", NULL, NULL, "--out"},
    {"--warc in a missing directory", "--warc", "@none/w.warc.gz", NULL, NULL, "--warc"},
    {"--warc on a full disk", "--warc", "/dev/full", NULL, NULL, "No space left"},
    {"missing seeds file", "--seeds", "@missing.txt", NULL, NULL, "No such file"},
    {"seeds file a directory", "--seeds", "@", NULL, NULL, "Is a directory"},
    {"--config /dev/zero", "--config", "/dev/zero", NULL, NULL, "not a config line"},
    {"bad regex after a good seeds file", "--seeds", "@seeds.txt", "--include", "*x",
     "bad regular expression"},
    {"--out and --warc one file", "--out", "@both", "--warc", "@both", "name one file"},
    {"--out and --warc one file by two paths", "--out", "@both", "--warc", "@./both",
     "name one file"},
    {"an earned domain budget without a budget", "--domain-pages-per-inlink", "5", NULL, NULL,
     "--domain-pages-per-inlink needs --max-pages-per-domain"},
};

static char *arg_of(env_t *e, const char *v, char *buf, size_t len)
{
    if (v[0] != '@')
        return (char *)v;
    snprintf(buf, len, "%s/%s", e->dir, v + 1);
    return buf;
}

Test(validate, bad_options_exit_2_with_one_message_before_any_redis_key)
{
    env_t e;
    env_start(&e);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), "http://127.0.0.1:9/\n"), 0);
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        const refusal_t *t = &REFUSED[i];
        char v1[600], v2[600], v3[600];
        char *argv[16] = {
            CRAWLER_BIN, "crawl", "--redis",      (char *)fx_redis_url(e.r),        "--quiet",
            "--crawl",   "v",     (char *)t->opt, arg_of(&e, t->val, v1, sizeof v1)};
        int n = 9;
        if (t->opt2) {
            argv[n++] = (char *)t->opt2;
            argv[n++] = arg_of(&e, t->val2, v2, sizeof v2);
        }
        if (strcmp(t->opt, "--seeds") != 0) {
            argv[n++] = "--seeds";
            argv[n++] = arg_of(&e, "@seeds.txt", v3, sizeof v3);
        }
        argv[n] = NULL;
        int rc = run_bounded(argv, e.log, 20000);
        char *err = log_text(&e);
        size_t lines = 0;
        for (const char *p = err; *p; p++)
            lines += *p == '\n';
        cr_expect_eq(rc, 2, "%s: exit %d, expected 2: %s", t->what, rc, err);
        cr_expect_eq(lines, 1, "%s: %zu lines printed, expected one: %s", t->what, lines, err);
        cr_expect(strstr(err, t->message), "%s: no '%s' in: %s", t->what, t->message, err);
        cr_expect_eq(dbsize(&e), 0, "%s: %lld keys in Redis after the refusal", t->what,
                     dbsize(&e));
        freeReplyObject(redisCommand(e.c, "FLUSHALL")); /* each case on its own */
        free(err);
    }
    /* crawler seed: the same for its FILE */
    char *seed[] = {CRAWLER_BIN,
                    "seed",
                    (char *)in_dir(&e, "missing.txt"),
                    "--redis",
                    (char *)fx_redis_url(e.r),
                    NULL};
    int rc = run_bounded(seed, e.log, 20000);
    cr_expect_eq(rc, 2, "seed with a missing file: exit %d", rc);
    cr_expect_eq(dbsize(&e), 0, "seed with a missing file: %lld keys left", dbsize(&e));
    env_stop(&e);
}

/* ---- error kinds --------------------------------------------------------------- */

/* openssl s_server (fx_tls.h) for 127.0.0.1, its files in the test's dir. */
static pid_t tls_server(env_t *e, int *port)
{
    return fx_tls_server(e->dir, "IP:127.0.0.1", port);
}

Test(validate, self_signed_seed_is_recorded_as_tls_with_curls_text_and_not_retried)
{
    env_t e;
    env_start(&e);
    int port;
    pid_t srv = tls_server(&e, &port);
    char seeds[256];
    snprintf(seeds, sizeof seeds, "https://127.0.0.1:%d/\n", port);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), seeds), 0);
    char seeds_path[600], out[600];
    snprintf(seeds_path, sizeof seeds_path, "%s", e.path);
    snprintf(out, sizeof out, "%s/out.jsonl", e.dir);
    char *argv[] = {CRAWLER_BIN,   "crawl", "--redis",         (char *)fx_redis_url(e.r),
                    "--crawl",     "tls",   "--seeds",         seeds_path,
                    "--out",       out,     "--delay",         "0",
                    "--max-tries", "3",     "--retry-backoff", "50",
                    "--quiet",     NULL};
    int rc = fx_run(argv, NULL, e.log, 120000);
    kill(srv, SIGTERM);
    fx_wait(srv, 5000);
    char *err = log_text(&e);
    cr_expect_eq(rc, 0, "crawl exited %d: %s", rc, err);
    char *rec = fx_read_file(out, NULL);
    cr_assert_not_null(rec, "no --out file");
    cr_expect(strstr(rec, "\"error_kind\":\"tls\""), "not recorded as tls: %s", rec);
    cr_expect(strstr(rec, "certificate"), "curl's text (certificate) missing: %s", rec);
    size_t lines = 0;
    for (const char *p = rec; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 1, "%zu records for one seed: %s", lines, rec);
    cr_expect_eq(stat_of(&e, "tls", "retried"), 0, "a certificate error was retried");
    free(rec);
    free(err);
    env_stop(&e);
}

/* --ca-file names the PEM file of the CAs to trust: the same self-signed
 * server, its certificate given, is fetched (200), not a tls error. */
Test(validate, ca_file_makes_a_self_signed_seed_trusted)
{
    env_t e;
    env_start(&e);
    int port;
    pid_t srv = tls_server(&e, &port);
    char seeds[256];
    snprintf(seeds, sizeof seeds, "https://127.0.0.1:%d/\n", port);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), seeds), 0);
    char seeds_path[600], out[600], crt[600];
    snprintf(seeds_path, sizeof seeds_path, "%s", e.path);
    snprintf(out, sizeof out, "%s/out.jsonl", e.dir);
    snprintf(crt, sizeof crt, "%s/crt.pem", e.dir);
    char *argv[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_redis_url(e.r),
                    "--crawl",   "ca",    "--seeds", seeds_path,
                    "--out",     out,     "--delay", "0",
                    "--ca-file", crt,     "--quiet", "--ignore-robots",
                    NULL};
    int rc = fx_run(argv, NULL, e.log, 120000);
    kill(srv, SIGTERM);
    fx_wait(srv, 5000);
    char *err = log_text(&e);
    cr_expect_eq(rc, 0, "crawl exited %d: %s", rc, err);
    char *rec = fx_read_file(out, NULL);
    cr_assert_not_null(rec, "no --out file");
    cr_expect(strstr(rec, "\"status\":200"), "the trusted server was not fetched: %s", rec);
    cr_expect(!strstr(rec, "\"error_kind\":\"tls\""), "recorded as tls: %s", rec);
    free(rec);
    free(err);
    env_stop(&e);
}

/* A seed whose host does not resolve is recorded with the real cause,
 * "dns" and the resolver's text, whether or not robots.txt is asked first
 * (its fetch meets the same failure; the record says it came from there).
 * The crawler runs in a network namespace of its own with no interface
 * up (unshare --net, as root), its embedded Redis on a unix socket: the
 * name fails at once and no query leaves the machine. */
Test(validate, an_unresolvable_seed_is_recorded_as_dns_with_or_without_robots)
{
    env_t e;
    env_start(&e);
    cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), "http://nowhere.example.test/\n"), 0);
    static const struct {
        const char *flag, *text;
    } cases[] = {{"--respect-robots", "robots.txt: "}, {"--ignore-robots", ""}};
    for (size_t i = 0; i < 2; i++) {
        char seeds[600], out[600], data[600];
        snprintf(seeds, sizeof seeds, "%s/seeds.txt", e.dir);
        snprintf(out, sizeof out, "%s/out%zu.jsonl", e.dir, i);
        snprintf(data, sizeof data, "%s/data%zu", e.dir, i);
        char *argv[] = {"unshare",     "--net",
                        CRAWLER_BIN,   "crawl",
                        "--data-dir",  data,
                        "--seeds",     seeds,
                        "--out",       out,
                        "--max-tries", "1",
                        "--quiet",     (char *)cases[i].flag,
                        NULL};
        if (!strcmp(cases[i].flag, "--respect-robots"))
            argv[13] = NULL; /* robots.txt asked first: the default */
        int rc = fx_run_without("REDIS_URL", argv, 120000);
        cr_assert_eq(rc, 0, "[%s] unshare --net crawler crawl exited %d (unshare needs root)",
                     cases[i].flag, rc);
        char *rec = fx_read_file(out, NULL), want[128];
        cr_assert_not_null(rec, "[%s] no --out file", cases[i].flag);
        cr_expect(strstr(rec, "\"error_kind\":\"dns\""), "[%s] not recorded as dns: %s",
                  cases[i].flag, rec);
        snprintf(want, sizeof want, "\"error_text\":\"%sCould not resolve host", cases[i].text);
        cr_expect(strstr(rec, want), "[%s] no '%s' in: %s", cases[i].flag, want, rec);
        free(rec);
    }
    env_stop(&e);
}

/* ---- Retry-After ----------------------------------------------------------------- */

/* The delay of the first entry of P delayed, from Redis' own clock (ms),
 * waiting for it at most 30 s; INT64_MIN if none appeared. */
static long long first_delay_ms(env_t *e, const char *crawl)
{
    uint64_t deadline = fx_now_ms() + 30000;
    while (fx_now_ms() < deadline) {
        redisReply *z = redisCommand(e->c, "ZRANGE crawler:{%s}:delayed 0 0 WITHSCORES", crawl);
        redisReply *t = redisCommand(e->c, "TIME");
        cr_assert(z && t && z->type == REDIS_REPLY_ARRAY && t->elements == 2);
        long long d = INT64_MIN;
        if (z->elements == 2)
            d = strtoll(z->element[1]->str, NULL, 10) -
                (strtoll(t->element[0]->str, NULL, 10) * 1000 +
                 strtoll(t->element[1]->str, NULL, 10) / 1000);
        freeReplyObject(z);
        freeReplyObject(t);
        if (d != INT64_MIN)
            return d;
        usleep(2000);
    }
    return INT64_MIN;
}

Test(validate, retry_after_3600_waits_at_most_max_retry_after)
{
    const struct {
        const char *cap; /* --max-retry-after, NULL: the default */
        long long cap_ms;
    } cases[] = {{"1500", 1500}, {NULL, 600000}};
    for (size_t i = 0; i < 2; i++) {
        env_t e;
        env_start(&e);
        fx_http_t *h = fx_http_start();
        cr_assert_not_null(h, "cannot start the HTTP fixture: %s", fx_error());
        fx_http_set(h, "/robots.txt", &(fx_route_t){.status = 404, .body = "no"});
        fx_http_set(h, "/busy",
                    &(fx_route_t){.status = 429, .headers = "Retry-After: 3600\n", .body = "wait"});
        char seeds[256];
        snprintf(seeds, sizeof seeds, "%s/busy\n", fx_http_base(h));
        cr_assert_eq(fx_write_file(in_dir(&e, "seeds.txt"), seeds), 0);
        char *argv[32] = {CRAWLER_BIN,   "crawl", "--redis",         (char *)fx_redis_url(e.r),
                          "--crawl",     "ra",    "--seeds",         e.path,
                          "--delay",     "0",     "--retry-backoff", "50",
                          "--max-tries", "2",     "--quiet",         NULL};
        if (cases[i].cap) {
            argv[15] = "--max-retry-after";
            argv[16] = (char *)cases[i].cap;
        }
        pid_t pid = fx_spawn(argv, NULL, e.log);
        cr_assert(pid > 0);
        long long d = first_delay_ms(&e, "ra");
        cr_expect_neq(d, INT64_MIN, "cap %lld: the 429 never reached the delayed set",
                      cases[i].cap_ms);
        cr_expect_leq(d, cases[i].cap_ms, "cap %lld: retry due in %lld ms", cases[i].cap_ms, d);
        cr_expect_gt(d, cases[i].cap_ms - 60000, "cap %lld: Retry-After not honoured (%lld ms)",
                     cases[i].cap_ms, d);
        if (!cases[i].cap)
            kill(pid, SIGTERM); /* 10 min: not waited for */
        int rc = fx_wait(pid, 60000);
        cr_expect_eq(rc, 0, "cap %lld: crawl exited %d", cases[i].cap_ms, rc);
        if (cases[i].cap)
            cr_expect_eq(fx_http_hits(h, "/busy"), 2, "cap 1500: %u tries, expected 2",
                         fx_http_hits(h, "/busy"));
        fx_http_stop(h);
        env_stop(&e);
    }
}
