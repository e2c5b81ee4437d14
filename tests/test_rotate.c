/*
 * Output files that rotate (--out-rotate): a crawl whose JSON lines and WARC
 * are closed every few kilobytes while another thread moves each closed file
 * away as soon as it appears.  Every page must be in exactly one JSON line
 * and one response record across the files, each WARC must start with its
 * warcinfo record, and each WARC's CDXJ index must point at its response
 * records (offset, length, URL), sorted, naming the file.  Also: a WARC that
 * a second run appends to gets an index of both runs.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdxj.h"
#include "crawl_env.h"
#include "fixtures.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "output_check.h"
#pragma GCC diagnostic pop

#define PAGES 300

/* Page i links to 2i+1 and 2i+2, with 3 KB of text that compresses poorly. */
static int site(void *ud, const char *path, fx_route_t *out)
{
    (void)ud;
    static _Thread_local char body[8192];
    int i;
    char tail;
    if (sscanf(path, "/p/%d%c", &i, &tail) != 1 || i < 0 || i >= PAGES)
        return -1;
    int n =
        snprintf(body, sizeof body, "<html><body><a href=\"/p/%d\">a</a><a href=\"/p/%d\">b</a><p>",
                 2 * i + 1 < PAGES ? 2 * i + 1 : 0, 2 * i + 2 < PAGES ? 2 * i + 2 : 0);
    unsigned x = (unsigned)i * 2654435761u + 1;
    for (int k = 0; k < 3000; k++) {
        x = x * 1103515245u + 12345u;
        body[n++] = (char)('a' + (x >> 16) % 26);
    }
    snprintf(body + n, sizeof body - (size_t)n, "</p></body></html>");
    *out = (fx_route_t){.body = body};
    return 0;
}

/* ---- the mover: closed files away as soon as they appear ------------------ */

typedef struct mover {
    const char *dir, *to;
    volatile int stop;
    unsigned moved;
} mover_t;

/* A closed file's name: STEM-TAG-NNNNN.EXT, no temporary suffix. */
static int is_closed(const char *name)
{
    return (strstr(name, "-00") && !strstr(name, ".tmp") && !strstr(name, ".open"));
}

static void *mover_run(void *p)
{
    mover_t *m = p;
    for (int last = 0;; last = m->stop) {
        DIR *d = opendir(m->dir);
        cr_assert_not_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            if (!is_closed(e->d_name))
                continue;
            char from[1024], to[1024];
            snprintf(from, sizeof from, "%s/%s", m->dir, e->d_name);
            snprintf(to, sizeof to, "%s/%s", m->to, e->d_name);
            if (rename(from, to) == 0)
                m->moved++;
        }
        closedir(d);
        if (last)
            return NULL;
        usleep(2000);
    }
}

/* ---- checks ---------------------------------------------------------------- */

/* The page number of a URL on the fixture (ending at its end or at '"'),
 * or -1. */
static int page_of(const char *url)
{
    const char *p = strstr(url, "/p/");
    char *end = NULL;
    long i = p ? strtol(p + 3, &end, 10) : -1;
    return p && end != p + 3 && (!*end || *end == '"') && i >= 0 && i < PAGES ? (int)i : -1;
}

/* A JSON string member "name": "value" of an index line, into buf. */
static int member(const char *line, const char *name, char *buf, size_t len)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\": \"", name);
    const char *v = strstr(line, key);
    if (!v)
        return -1;
    v += strlen(key);
    const char *e = strchr(v, '"');
    if (!e || (size_t)(e - v) >= len)
        return -1;
    memcpy(buf, v, (size_t)(e - v));
    buf[e - v] = '\0';
    return 0;
}

/* The record at [off, off+len) of data: exactly one gzip member, parsed. */
static wrec_t member_at(const unsigned char *data, size_t size, size_t off, size_t len)
{
    cr_assert_leq(off + len, size, "index entry past the end of the file");
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 31), Z_OK);
    size_t cap = 1 << 16, out = 0;
    char *buf = malloc(cap);
    z.next_in = (Bytef *)data + off;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (cap - out < 4096)
            buf = realloc(buf, cap *= 2);
        z.next_out = (Bytef *)buf + out;
        z.avail_out = (uInt)(cap - out);
        rc = inflate(&z, Z_NO_FLUSH);
        out = cap - z.avail_out;
        cr_assert(rc == Z_OK || rc == Z_STREAM_END, "index entry at %zu: inflate %d", off, rc);
        cr_assert(rc == Z_STREAM_END || z.avail_in > 0, "index entry at %zu: member cut", off);
    } while (rc != Z_STREAM_END);
    cr_assert_eq(z.avail_in, 0, "index entry at %zu: length %zu is not one member", off, len);
    inflateEnd(&z);
    wrec_t r = {.raw = buf, .raw_len = out};
    parse_record(&r, 0);
    return r;
}

/* Checks the WARC at path and its index path.cdxj; counts its responses
 * into seen[] and returns how many it holds. */
static unsigned check_warc(const char *path, unsigned seen[PAGES])
{
    wfile_t f = read_warc(path);
    cr_assert_geq(f.n, 1, "%s is empty", path);
    cr_expect_str_eq(hget(&f.r[0], "WARC-Type"), "warcinfo", "%s does not start with warcinfo",
                     path);
    unsigned responses = 0;
    for (size_t i = 0; i < f.n; i++) {
        if (strcmp(hget(&f.r[i], "WARC-Type"), "response") != 0)
            continue;
        int p = page_of(hget(&f.r[i], "WARC-Target-URI"));
        cr_assert_geq(p, 0);
        seen[p]++;
        responses++;
    }
    free_warc(&f);

    char idx[1100];
    snprintf(idx, sizeof idx, "%s.cdxj", path);
    size_t size = 0, ilen = 0;
    unsigned char *data = (unsigned char *)fx_read_file(path, &size);
    char *index = fx_read_file(idx, &ilen);
    cr_assert_not_null(index, "no index beside %s", path);
    const char *base = strrchr(path, '/') + 1;
    unsigned lines = 0;
    char prev[8192] = "";
    for (char *line = index; *line;) {
        char *nl = strchr(line, '\n');
        cr_assert_not_null(nl, "%s: unterminated line", idx);
        *nl = '\0';
        cr_expect_geq(strcmp(line, prev), 0, "%s: not sorted:\n%s\n%s", idx, prev, line);
        snprintf(prev, sizeof prev, "%s", line);
        char url[2048], off[32], len[32], fname[1024];
        cr_assert_eq(member(line, "url", url, sizeof url), 0, "%s: %s", idx, line);
        cr_assert_eq(member(line, "offset", off, sizeof off), 0, "%s: %s", idx, line);
        cr_assert_eq(member(line, "length", len, sizeof len), 0, "%s: %s", idx, line);
        cr_assert_eq(member(line, "filename", fname, sizeof fname), 0, "%s: %s", idx, line);
        cr_expect_str_eq(fname, base);
        cr_expect(!strncmp(line, "1,0,0,127:", 10), "%s: key of %s", idx, line);
        wrec_t r = member_at(data, size, strtoull(off, NULL, 10), strtoull(len, NULL, 10));
        cr_expect_str_eq(hget(&r, "WARC-Type"), "response");
        cr_expect_str_eq(hget(&r, "WARC-Target-URI"), url);
        free(r.raw);
        free(r.hdr);
        lines++;
        line = nl + 1;
    }
    cr_expect_eq(lines, responses, "%s: %u index lines for %u responses", idx, lines, responses);
    free(index);
    free(data);
    return responses;
}

/* Counts the JSON lines of path into seen[]. */
static void check_jsonl(const char *path, unsigned seen[PAGES])
{
    size_t len = 0;
    char *text = fx_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s", path);
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "%s: unterminated JSON line", path);
        cr_expect(json_line_ok(p, (size_t)(nl - p + 1)), "bad JSON line: %.*s", (int)(nl - p), p);
        *nl = '\0';
        const char *u = strstr(p, "\"url\":\"");
        cr_assert_not_null(u);
        int i = page_of(u + 7);
        cr_assert_geq(i, 0, "%s", p);
        seen[i]++;
        p = nl + 1;
    }
    free(text);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

Test(rotate, closed_files_moved_mid_crawl_lose_no_record, .timeout = 600)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/p/0");
    fx_http_set_handler(e.h, site, NULL);
    char warc[600], moved[600];
    snprintf(warc, sizeof warc, "%s/crawl.warc.gz", e.dir);
    snprintf(moved, sizeof moved, "%s/moved", e.dir);
    cr_assert_eq(mkdir(moved, 0755), 0);
    char *argv[] = {CRAWLER_BIN, "crawl",
                    "--redis",   (char *)fx_redis_url(e.r),
                    "--seeds",   e.seeds,
                    "--delay",   "0",
                    "--out",     e.out,
                    "--warc",    warc,
                    "--quiet",   "--out-rotate",
                    "40000",     "--concurrency",
                    "8",         NULL};
    mover_t m = {.dir = e.dir, .to = moved};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, mover_run, &m), 0);
    pid_t pid = fx_spawn(argv, NULL, e.log);
    cr_assert_gt(pid, 0);
    int rc = fx_wait(pid, 300000);
    m.stop = 1;
    pthread_join(t, NULL);
    cr_assert_eq(rc, 0, "crawl exit %d; log:\n%s", rc, fx_read_file(e.log, NULL));

    unsigned in_warc[PAGES] = {0}, in_jsonl[PAGES] = {0}, warcs = 0, jsonls = 0, moved_warcs = 0;
    DIR *d = opendir(moved);
    for (struct dirent *de; (de = readdir(d));) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s", moved, de->d_name);
        if (ends_with(de->d_name, ".warc.gz")) {
            cr_expect(!strncmp(de->d_name, "crawl-", 6), "closed WARC named %s", de->d_name);
            check_warc(path, in_warc);
            warcs++;
            moved_warcs++;
        } else if (ends_with(de->d_name, ".jsonl")) {
            cr_expect(!strncmp(de->d_name, "out-", 4), "closed JSON lines named %s", de->d_name);
            check_jsonl(path, in_jsonl);
            jsonls++;
        }
    }
    closedir(d);
    check_warc(warc, in_warc); /* the file being written at the end, closed by the exit */
    check_jsonl(e.out, in_jsonl);
    cr_expect_geq(moved_warcs, 3, "only %u WARC files closed", moved_warcs);
    cr_expect_geq(jsonls, 2, "only %u JSON-lines files closed", jsonls);
    for (int i = 0; i < PAGES; i++) {
        cr_expect_eq(in_warc[i], 1, "page %d in %u response records", i, in_warc[i]);
        cr_expect_eq(in_jsonl[i], 1, "page %d in %u JSON lines", i, in_jsonl[i]);
    }
    d = opendir(e.dir); /* nothing temporary left behind */
    for (struct dirent *de; (de = readdir(d));)
        cr_expect(!strstr(de->d_name, ".tmp") && !strstr(de->d_name, ".open"), "left: %s",
                  de->d_name);
    closedir(d);
    crawl_env_stop(&e);
}

Test(rotate, a_warc_appended_to_gets_an_index_of_both_runs, .timeout = 300)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/p/0");
    fx_http_set_handler(e.h, site, NULL);
    char warc[600];
    snprintf(warc, sizeof warc, "%s/crawl.warc.gz", e.dir);
    for (int run = 0; run < 2; run++) {
        char *argv[] = {CRAWLER_BIN,
                        "crawl",
                        "--redis",
                        (char *)fx_redis_url(e.r),
                        "--seeds",
                        e.seeds,
                        "--delay",
                        "0",
                        "--warc",
                        warc,
                        "--quiet",
                        "--crawl",
                        run ? "second" : "first",
                        "--max-pages",
                        "20",
                        NULL};
        int rc = fx_run(argv, NULL, e.log, 120000);
        cr_assert_eq(rc, 0, "run %d exit %d; log:\n%s", run, rc, fx_read_file(e.log, NULL));
    }
    unsigned seen[PAGES] = {0};
    cr_expect_eq(check_warc(warc, seen), 40);
    wfile_t f = read_warc(warc);
    unsigned infos = 0;
    for (size_t i = 0; i < f.n; i++)
        infos += !strcmp(hget(&f.r[i], "WARC-Type"), "warcinfo");
    cr_expect_eq(infos, 2, "%u warcinfo records", infos);
    free_warc(&f);
    crawl_env_stop(&e);
}

Test(rotate, surt_keys)
{
    static const struct {
        const char *url, *key;
    } cases[] = {
        /* the surt library's own cases (its tests/test_surt.py) */
        {"http://www.archive.org/", "org,archive)/"},
        {"http://archive.org/goo/", "org,archive)/goo"},
        {"http://archive.org/goo/?", "org,archive)/goo"},
        {"http://archive.org/goo/?b&a", "org,archive)/goo?a&b"},
        {"http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"},
        {"http://www.archive.org:80/", "org,archive)/"},
        {"https://www.archive.org:80/", "org,archive:80)/"},
        {"https://www.archive.org:443/", "org,archive)/"},
        {"http://www12.foo.com/", "com,foo)/"},
        {"http://www2foo.com/", "com,www2foo)/"},
        {"http://example.com/foo?X=Y", "com,example)/foo?x=y"},
        /* and ours */
        {"http://www.Example.COM/A/b?x=1#frag", "com,example)/a/b?x=1"},
        {"https://example.com", "com,example)/"},
        {"http://127.0.0.1:8080/p/1", "1,0,0,127:8080)/p/1"},
        {"http://user:pw@sub.example.org:81?q", "org,example,sub:81)/?q"},
        {"http://[::1]:9/x", "[::1]:9)/x"},
        {"http://a.example/?a-b=1&a=2", "example,a)/?a=2&a-b=1"},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(cdxj_surt(cases[i].url, buf, sizeof buf), 0, "%s", cases[i].url);
        cr_expect_str_eq(buf, cases[i].key, "%s", cases[i].url);
    }
    cr_expect_eq(cdxj_surt("not a url", buf, sizeof buf), -1);
}

/* An index too big to sort in memory at once: sorted in runs and merged
 * (here runs of 32 KB; 20000 lines make about 60 of them). */
Test(rotate, an_index_sorted_in_runs_and_merged)
{
    char *dir = fx_tmpdir(), warc[600], idx[700], err[256];
    snprintf(warc, sizeof warc, "%s/w.warc.gz", dir);
    cdxj_t *x = cdxj_open(warc, err, sizeof err);
    cr_assert_not_null(x, "%s", err);
    cdxj_sort_chunk(x, 32 << 10);
    unsigned r = 7;
    for (int i = 0; i < 20000; i++) {
        char url[128];
        r = r * 1103515245u + 12345u;
        snprintf(url, sizeof url, "http://h%u.example/p/%u", (r >> 8) % 97, r % 100000);
        cr_assert_eq(cdxj_add(x, url, 1700000000000 + i, 200, "text/html", "sha1:X",
                              (uint64_t)i * 10, 10, err, sizeof err),
                     0, "%s", err);
    }
    cr_assert_eq(cdxj_finish(x, warc, err, sizeof err), 0, "%s", err);
    snprintf(idx, sizeof idx, "%s.cdxj", warc);
    char *text = fx_read_file(idx, NULL);
    cr_assert_not_null(text);
    unsigned lines = 0;
    char *prev = NULL;
    for (char *line = text; *line; lines++) {
        char *nl = strchr(line, '\n');
        cr_assert_not_null(nl);
        *nl = '\0';
        cr_assert(!prev || strcmp(prev, line) <= 0, "not sorted:\n%s\n%s", prev, line);
        cr_assert(strstr(line, "\"filename\": \"w.warc.gz\"}"), "%s", line);
        prev = line;
        line = nl + 1;
    }
    cr_expect_eq(lines, 20000);
    free(text);
    DIR *d = opendir(dir); /* only the WARC's index is left */
    unsigned files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += de->d_name[0] != '.';
    closedir(d);
    cr_expect_eq(files, 1, "%u files left", files);
    fx_rmtree(dir);
    free(dir);
}
