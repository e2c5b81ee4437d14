/*
 * --dedup: exact duplicates across a crawl.  A site whose pages include
 * byte-identical copies under other URLs: the first URL of each body is
 * recorded in full; each copy gets "duplicate":true and "duplicate_of" (the
 * first URL) in its JSON line, a WARC revisit record (profile
 * identical-payload-digest) naming the first URL and its payload digest
 * instead of a response record, and no text line.  Across processes the
 * verdicts hold: two crawlers sharing one crawl make exactly one first URL
 * per body.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_env.h"
#include "crawl_env.h"
#include "fixtures.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "output_check.h"
#pragma GCC diagnostic pop

#define COPIES 12 /* copies of one body: /c0 .. /c11 */

static const char BODY_A[] =
    "<html><head><title>Copied</title></head><body><article><p>The same article, published "
    "under many addresses, byte for byte: a crawl keeps its text once and notes the "
    "others as copies of it.</p><p>A second paragraph, so that there is text to "
    "extract.</p></article></body></html>";
static const char BODY_B[] =
    "<html><head><title>Other</title></head><body><article><p>A page of its own, like no "
    "other on the site, which nobody copied anywhere.</p></article></body></html>";

/* /: links to /c0.. /cN-1 (BODY_A each), /b and /b2 (BODY_B), /u (unique),
 * /gone (404 with BODY_A: not a 2xx, never tested). */
static void site(crawl_env_t *e)
{
    char home[4096];
    size_t at = (size_t)snprintf(home, sizeof home, "<html><body>");
    for (int i = 0; i < COPIES; i++) {
        char path[16];
        snprintf(path, sizeof path, "/c%d", i);
        fx_http_page(e->h, path, BODY_A);
        at += (size_t)snprintf(home + at, sizeof home - at, "<a href=\"%s\">c</a> ", path);
    }
    snprintf(home + at, sizeof home - at,
             "<a href=\"/b\">b</a> <a href=\"/b2\">b2</a> <a href=\"/u\">u</a> "
             "<a href=\"/gone\">g</a></body></html>");
    fx_http_page(e->h, "/", home);
    fx_http_page(e->h, "/b", BODY_B);
    fx_http_page(e->h, "/b2", BODY_B);
    fx_http_page(e->h, "/u", "<html><body><p>unique</p></body></html>");
    fx_http_set(e->h, "/gone", &(fx_route_t){.status = 404, .body = BODY_A});
}

/* The value of "duplicate_of" in line (into out), or "" when the line has
 * none; asserts "duplicate":true goes with it. */
static void dup_of(const char *line, char *out, size_t len)
{
    const char *d = line ? strstr(line, ",\"duplicate\":true,\"duplicate_of\":\"") : NULL;
    out[0] = '\0';
    if (!d) {
        cr_expect(!line || !strstr(line, "duplicate"), "a half-marked line: %s", line);
        return;
    }
    d += strlen(",\"duplicate\":true,\"duplicate_of\":\"");
    const char *q = strchr(d, '"');
    cr_assert_not_null(q);
    snprintf(out, len, "%.*s", (int)(q - d), d);
}

/* Of the lines of out for base + paths[0..n): how many are no duplicate
 * (the first URL, named in *first) and how many name that first URL. */
static void tally(const char *out, const char *base, const char *const *paths, size_t n,
                  char *first, size_t flen, size_t *firsts, size_t *copies)
{
    *firsts = *copies = 0;
    first[0] = '\0';
    char d[512];
    for (size_t i = 0; i < n; i++) {
        char *l = jsonl_line_of(out, base, paths[i], "");
        cr_assert_not_null(l, "no line for %s", paths[i]);
        dup_of(l, d, sizeof d);
        if (!d[0]) {
            (*firsts)++;
            snprintf(first, flen, "%s%s", base, paths[i]);
        }
        free(l);
    }
    for (size_t i = 0; i < n; i++) {
        char *l = jsonl_line_of(out, base, paths[i], "");
        dup_of(l, d, sizeof d);
        if (d[0]) {
            cr_expect_str_eq(d, first, "%s names another first URL", paths[i]);
            (*copies)++;
        }
        free(l);
    }
}

static const char *copy_paths(void)
{
    static char names[COPIES][8];
    for (int i = 0; i < COPIES; i++)
        snprintf(names[i], sizeof names[i], "/c%d", i);
    return names[0];
}

static int run_crawl(crawl_env_t *e, char *const extra[])
{
    char *argv[32] = {CRAWLER_BIN, "crawl",  "--redis", (char *)fx_redis_url(e->r),
                      "--seeds",   e->seeds, "--delay", "0",
                      "--quiet",   "--out",  e->out,    "--dedup"};
    int n = 12;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return fx_run(argv, NULL, e->log, 120000);
}

Test(dedup, copies_are_marked_with_their_first_url_and_get_revisit_records_and_no_text)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    char warc[600], text[600];
    snprintf(warc, sizeof warc, "%s/c.warc.gz", e.dir);
    snprintf(text, sizeof text, "%s/text.jsonl", e.dir);
    char *extra[] = {"--warc", warc, "--text", text, NULL};
    cr_assert_eq(run_crawl(&e, extra), 0, "%s", fx_read_file(e.log, NULL));
    const char *base = fx_http_base(e.h);
    char *out = fx_read_file(e.out, NULL), *t = fx_read_file(text, NULL);
    cr_assert_not_null(out);

    const char *cp[COPIES];
    for (int i = 0; i < COPIES; i++)
        cp[i] = copy_paths() + 8 * i;
    char first_a[512], first_b[512];
    size_t firsts, copies;
    tally(out, base, cp, COPIES, first_a, sizeof first_a, &firsts, &copies);
    cr_expect_eq(firsts, 1, "%zu first URLs among the copies of one body:\n%s", firsts, out);
    cr_expect_eq(copies, COPIES - 1);
    const char *bs[] = {"/b", "/b2"};
    tally(out, base, bs, 2, first_b, sizeof first_b, &firsts, &copies);
    cr_expect_eq(firsts, 1, "%s", out);
    cr_expect_eq(copies, 1, "%s", out);
    const char *own[] = {"/", "/u", "/gone"};
    char d[512];
    for (size_t i = 0; i < 3; i++) { /* pages of their own, and a 404 with a copied body */
        char *l = jsonl_line_of(out, base, own[i], "");
        cr_assert_not_null(l, "no line for %s", own[i]);
        dup_of(l, d, sizeof d);
        cr_expect_str_eq(d, "", "%s marked a duplicate", own[i]);
        free(l);
    }

    /* text: one line per distinct body of a 2xx HTML page (/, A, B, /u) */
    size_t nt = 0;
    for (const char *p = t; p && (p = strchr(p, '\n')); p++)
        nt++;
    cr_expect_eq(nt, 4, "text lines:\n%s", t);
    char key[600];
    snprintf(key, sizeof key, "{\"url\":\"%s\",", first_a);
    cr_expect(t && strstr(t, key), "no text line for the first URL %s", first_a);

    /* WARC: a response record for each first URL, a revisit record for each
     * copy, its payload digest that of the first URL's response */
    wfile_t w = read_warc(warc);
    const char *digest_a = NULL;
    size_t revisits = 0, responses_a = 0;
    for (size_t i = 0; i < w.n; i++)
        if (!strcmp(hget(&w.r[i], "WARC-Type"), "response") &&
            !strcmp(hget(&w.r[i], "WARC-Target-URI"), first_a)) {
            digest_a = hget(&w.r[i], "WARC-Payload-Digest");
            expect_digest(digest_a, BODY_A, strlen(BODY_A), "the first URL's payload");
        }
    cr_assert_not_null(digest_a, "no response record for %s", first_a);
    for (size_t i = 0; i < w.n; i++) {
        const wrec_t *r = &w.r[i];
        const char *type = hget(r, "WARC-Type"), *uri = hget(r, "WARC-Target-URI");
        if (!uri || !strstr(uri, "/c"))
            continue;
        if (!strcmp(type, "response"))
            responses_a++;
        if (strcmp(type, "revisit"))
            continue;
        revisits++;
        cr_expect_str_eq(hget(r, "WARC-Profile"),
                         "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest");
        cr_expect_str_eq(hget(r, "WARC-Refers-To-Target-URI"), first_a, "%s", uri);
        expect_date(hget(r, "WARC-Refers-To-Date"), "WARC-Refers-To-Date");
        cr_expect_str_eq(hget(r, "WARC-Payload-Digest"), digest_a, "%s", uri);
        cr_expect(r->block_len > 12 && !memcmp(r->block, "HTTP/1.1 200", 12) &&
                      !memmem(r->block, r->block_len, "same article", 12),
                  "%s: a revisit's block is the response head only", uri);
        cr_expect_str_eq(hget(r, "Content-Type"), "application/http;msgtype=response");
    }
    cr_expect_eq(responses_a, 1, "%zu response records for one body", responses_a);
    cr_expect_eq(revisits, COPIES - 1);
    free_warc(&w);
    free(out);
    free(t);
    crawl_env_stop(&e);
}

/* Two crawler processes on one crawl, each with its own connections, the
 * copies answering slowly and each process fetching two at a time so that
 * both fetch some: one first URL per body
 * all the same. */
Test(dedup, two_processes_on_one_crawl_agree_on_one_first_url, .timeout = 240)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    for (int i = 0; i < COPIES; i++) {
        char path[16];
        snprintf(path, sizeof path, "/c%d", i);
        fx_http_set(e.h, path, &(fx_route_t){.body = BODY_A, .delay_ms = 200});
    }
    char *seed[] = {CRAWLER_BIN, "seed", e.seeds, "--redis", (char *)fx_redis_url(e.r), NULL};
    cr_assert_eq(fx_run(seed, NULL, e.log, 60000), 0, "%s", fx_read_file(e.log, NULL));
    char out[2][600], log[2][600];
    pid_t pid[2];
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof out[k], "%s/out%d.jsonl", e.dir, k);
        snprintf(log[k], sizeof log[k], "%s/log%d", e.dir, k);
        char *argv[] = {CRAWLER_BIN, "crawl",   "--redis",       (char *)fx_redis_url(e.r),
                        "--delay",   "0",       "--quiet",       "--out",
                        out[k],      "--dedup", "--per-host",    "16",
                        "--threads", "1",       "--concurrency", "2",
                        NULL};
        pid[k] = fx_spawn(argv, NULL, log[k]);
        cr_assert_gt(pid[k], 0);
    }
    for (int k = 0; k < 2; k++) {
        int st = 0;
        cr_assert_eq(waitpid(pid[k], &st, 0), pid[k]);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crawler %d ended with %d: %s", k, st,
                  fx_read_file(log[k], NULL));
    }
    char *o1 = fx_read_file(out[0], NULL), *o2 = fx_read_file(out[1], NULL), *all = NULL;
    cr_assert(asprintf(&all, "%s%s", o1 ? o1 : "", o2 ? o2 : "") > 0);
    const char *cp[COPIES];
    size_t mine[2] = {0, 0};
    for (int i = 0; i < COPIES; i++) {
        cp[i] = copy_paths() + 8 * i;
        char key[600];
        snprintf(key, sizeof key, "{\"url\":\"%s%s\",", fx_http_base(e.h), cp[i]);
        mine[0] += o1 && strstr(o1, key);
        mine[1] += o2 && strstr(o2, key);
    }
    cr_log_info("copies fetched by each process: %zu and %zu", mine[0], mine[1]);
    char first[512];
    size_t firsts, copies;
    tally(all, fx_http_base(e.h), cp, COPIES, first, sizeof first, &firsts, &copies);
    cr_expect_eq(firsts, 1, "%zu first URLs:\n%s", firsts, all);
    cr_expect_eq(copies, COPIES - 1);
    free(o1);
    free(o2);
    free(all);
    crawl_env_stop(&e);
}

/* On a Redis Cluster of three masters, a crawl of 16 shards: a digest's
 * shard is its own (not its page's host's), so the digests of one host's
 * pages spread over the masters, and the verdicts hold as on one server. */
Test(dedup, on_a_cluster_the_digests_spread_over_the_masters_and_agree, .timeout = 300)
{
    fx_cluster_t *cl = fx_cluster_start(3, 0, 1000);
    cr_assert_not_null(cl, "cannot start a Redis Cluster: %s", fx_error());
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    site(&e);
    char *argv[] = {CRAWLER_BIN, "crawl", "--redis", (char *)fx_cluster_url(cl, 1),
                    "--seeds",   e.seeds, "--delay", "0",
                    "--quiet",   "--out", e.out,     "--dedup",
                    "--shards",  "16",    "--crawl", "dd",
                    NULL};
    cr_assert_eq(fx_run(argv, NULL, e.log, 120000), 0, "%s", fx_read_file(e.log, NULL));
    char *out = fx_read_file(e.out, NULL);
    const char *cp[COPIES];
    for (int i = 0; i < COPIES; i++)
        cp[i] = copy_paths() + 8 * i;
    char first[512];
    size_t firsts, copies;
    tally(out, fx_http_base(e.h), cp, COPIES, first, sizeof first, &firsts, &copies);
    cr_expect_eq(firsts, 1, "%zu first URLs:\n%s", firsts, out);
    cr_expect_eq(copies, COPIES - 1);
    const char *bs[] = {"/b", "/b2"};
    tally(out, fx_http_base(e.h), bs, 2, first, sizeof first, &firsts, &copies);
    cr_expect_eq(firsts, 1, "%s", out);
    int masters = 0;
    long long total = 0;
    for (int i = 0; i < 3; i++) {
        long long n = fx_cluster_count_keys(cl, i, "crawler:{dd*}:digests");
        cr_assert_geq(n, 0, "%s", fx_error());
        masters += n > 0;
        total += n;
    }
    /* distinct bodies: /, A, B, /u (the 404 is not tested) */
    cr_expect_gt(masters, 1, "the digests of one host's pages on %d master(s)", masters);
    cr_log_info("digest keys: %lld over %d masters", total, masters);
    free(out);
    crawl_env_stop(&e);
    fx_cluster_stop(cl);
}
