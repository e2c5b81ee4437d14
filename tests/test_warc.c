/*
 * test_warc.c -- the crawler's two output writers: JSON lines (output.h) and
 * WARC/1.1 with per-record gzip (warc.h).
 *
 * JSON lines are checked byte for byte against expected lines, and every
 * line the writer produces is validated as UTF-8 and JSON string syntax by an
 * independent checker here.  WARC files are read back member by member with
 * zlib (windowBits 31), each member parsed as exactly one record, every
 * header checked, digests recomputed; /bin/gzip -t must accept the file.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fixtures.h"
#include "jsonl.h"
#include "output_check.h"
#include "warc.h"

/* ---- helpers: paths ----------------------------------------------------- */

static char *tmp_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    cr_assert_not_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *format_line(const out_record_t *r)
{
    size_t n = out_format(NULL, 0, r);
    char *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(out_format(buf, n + 1, r), n);
    return buf;
}

/* ---- JSON lines ---------------------------------------------------------- */

Test(output, escapes_strings_table)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "\"plain\""},
        {"", "\"\""},
        {"a\"b", "\"a\\\"b\""},
        {"a\\b", "\"a\\\\b\""},
        {"/slash", "\"/slash\""},
        {"\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"caf\xC3\xA9", "\"caf\xC3\xA9\""},                           /* é */
        {"\xE2\x82\xAC", "\"\xE2\x82\xAC\""},                         /* € */
        {"\xF0\x9F\x98\x80", "\"\xF0\x9F\x98\x80\""},                 /* U+1F600 */
        {"\xEF\xBF\xBF", "\"\xEF\xBF\xBF\""},                         /* U+FFFF is valid */
        {"\xff", "\"\xEF\xBF\xBD\""},                                 /* never valid */
        {"a\xC3", "\"a\xEF\xBF\xBD\""},                               /* truncated at the end */
        {"\xC0\xAF", "\"\xEF\xBF\xBD\xEF\xBF\xBD\""},                 /* overlong '/' */
        {"\xE0\x80\xAF", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""}, /* overlong */
        {"\xED\xA0\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""}, /* surrogate */
        {"\xE2\x82x", "\"\xEF\xBF\xBDx\""},                           /* maximal subpart */
        {"\xF4\x90\x80\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xF0\x9F\x98", "\"\xEF\xBF\xBD\""},                    /* truncated 4-byte */
        {"\x80x", "\"\xEF\xBF\xBDx\""},                          /* lone continuation */
        {"\xC3\xA9\"\xff\n", "\"\xC3\xA9\\\"\xEF\xBF\xBD\\n\""}, /* mixed */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        out_record_t r = {.url = cases[i].in, .timestamp_ms = 1};
        char *line = format_line(&r);
        const char *v = line + strlen("{\"url\":");
        const char *end = strstr(line, ",\"status\":");
        cr_assert_not_null(end, "case %zu: no status key in %s", i, line);
        size_t vl = (size_t)(end - v);
        cr_expect(vl == strlen(cases[i].want) && memcmp(v, cases[i].want, vl) == 0,
                  "case %zu: escaped %.*s, want %s", i, (int)vl, v, cases[i].want);
        cr_expect(json_line_ok(line, strlen(line)), "case %zu: invalid line %s", i, line);
        free(line);
    }
}

Test(output, random_bytes_always_give_valid_json)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    char s[64];
    for (int round = 0; round < 5000; round++) {
        size_t n = 1 + round % 60;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = (char)(1 + x % 255); /* any byte but NUL */
        }
        s[n] = '\0';
        out_record_t r = {.url = s, .error_text = s, .canonical = s, .timestamp_ms = 1};
        char *line = format_line(&r);
        cr_assert(json_line_ok(line, strlen(line)), "round %d: invalid line %s", round, line);
        free(line);
    }
}

Test(output, writes_every_field_in_order)
{
    out_record_t r = {.url = "http://a.test/x",
                      .status = 301,
                      .content_type = "text/html; charset=utf-8",
                      .depth = 3,
                      .bytes = 5368709120ull,
                      .links_found = 12,
                      .links_over_cap = 7,
                      .fetch_ms = 41,
                      .error_kind = "timeout",
                      .error_text = "Operation timed out",
                      .location = "http://a.test/y",
                      .canonical = "http://a.test/c",
                      .timestamp_ms = 1764460862345};
    char *line = format_line(&r);
    cr_expect_str_eq(line, "{\"url\":\"http://a.test/x\",\"status\":301,\"content_type\":\"text/"
                           "html; charset=utf-8\",\"depth\":3,\"bytes\":5368709120,\"links_found\":"
                           "12,\"links_over_cap\":7,\"fetch_ms\":41,\"error_kind\":\"timeout\","
                           "\"error_text\":\"Operation timed out\",\"location\":\"http://a.test/"
                           "y\",\"canonical\":\"http://a.test/c\",\"timestamp\":\"2025-11-30T00:"
                           "01:02.345Z\"}\n");
    free(line);
}

Test(output, absent_values_are_null)
{
    out_record_t r = {.url = "http://a.test/", .timestamp_ms = 7};
    char *line = format_line(&r);
    cr_expect_str_eq(line, "{\"url\":\"http://a.test/\",\"status\":null,\"content_type\":null,"
                           "\"depth\":0,\"bytes\":0,\"links_found\":0,\"links_over_cap\":0,"
                           "\"fetch_ms\":0,\"error_kind\":null,\"error_text\":null,"
                           "\"location\":null,\"canonical\":null,"
                           "\"timestamp\":\"1970-01-01T00:00:00.007Z\"}\n");
    free(line);
}

Test(output, each_field_alone_is_written_in_its_place)
{
    const char *keys[] = {"content_type", "error_kind", "error_text", "location", "canonical"};
    for (int k = 0; k < 5; k++) {
        out_record_t r = {.url = "u", .timestamp_ms = 1};
        const char **slot[] = {&r.content_type, &r.error_kind, &r.error_text, &r.location,
                               &r.canonical};
        *slot[k] = "V";
        char *line = format_line(&r);
        char want[64];
        snprintf(want, sizeof want, "\"%s\":\"V\"", keys[k]);
        cr_expect_not_null(strstr(line, want), "%s: %s", keys[k], line);
        int nulls = 0;
        for (const char *p = line; (p = strstr(p, ":null")); p++)
            nulls++;
        cr_expect_eq(nulls, 5, "%s: %d nulls in %s", keys[k], nulls, line); /* status + 4 */
        free(line);
    }
}

Test(output, zero_timestamp_means_now)
{
    out_record_t r = {.url = "u"};
    char *line = format_line(&r);
    cr_expect_null(strstr(line, "\"1970-"), "%s", line);
    cr_expect(json_line_ok(line, strlen(line)), "%s", line);
    free(line);
}

Test(output, format_reports_needed_size_like_snprintf)
{
    out_record_t r = {.url = "http://a.test/", .timestamp_ms = 1};
    char small[10];
    size_t n = out_format(small, sizeof small, &r);
    cr_expect_gt(n, sizeof small);
    char *line = format_line(&r);
    cr_expect_eq(strlen(line), n);
    free(line);
    cr_expect_eq(out_format(small, sizeof small, NULL), 0);
}

Test(output, rejects_bad_arguments)
{
    char err[256] = "";
    cr_expect_null(out_open("/nonexistent-dir/x/out.jsonl", err, sizeof err));
    cr_expect_not_null(strstr(err, "No such file"), "%s", err);
    cr_expect_null(out_open("", err, sizeof err));
    cr_expect_eq(out_close(NULL), 0);
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "o.jsonl");
    out_t *o = out_open(path, err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    out_record_t r = {0};
    cr_expect_eq(out_write(o, &r), CRAWL_EINVAL);
    cr_expect_eq(out_write(o, NULL), CRAWL_EINVAL);
    cr_expect_eq(out_close(o), 0);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(output, flush_and_close_write_whole_lines_and_append)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "o.jsonl");
    cr_assert_eq(fx_write_file(path, "{\"old\":1}\n"), 0);
    out_t *o = out_open(path, err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    out_record_t r = {.url = "http://a.test/1", .status = 200, .timestamp_ms = 1};
    cr_assert_eq(out_write(o, &r), 0);
    cr_assert_eq(out_flush(o), 0);
    char *one = format_line(&r);
    size_t len = 0;
    char *got = fx_read_file(path, &len);
    cr_assert_not_null(got);
    cr_expect(len == 10 + strlen(one) && memcmp(got + 10, one, strlen(one)) == 0, "%s", got);
    free(got);
    r.url = "http://a.test/2";
    cr_assert_eq(out_write(o, &r), 0);
    cr_assert_eq(out_close(o), 0);
    got = fx_read_file(path, &len);
    cr_assert_not_null(got);
    cr_expect_eq(len, 10 + 2 * strlen(one));
    cr_expect_not_null(strstr(got, "\"http://a.test/2\""));
    free(got);
    free(one);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(output, quiet_writer_flushes_by_itself)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "o.jsonl");
    out_t *o = out_open(path, err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    out_record_t r = {.url = "http://a.test/tail", .timestamp_ms = 1};
    cr_assert_eq(out_write(o, &r), 0);
    /* No flush call: the background thread must write it (bounded wait; the
     * verdict is whether it shows up, not how fast). */
    size_t len = 0;
    uint64_t until = fx_now_ms() + 20000;
    while (len == 0 && fx_now_ms() < until) {
        free(fx_read_file(path, &len));
        if (len == 0)
            usleep(50 * 1000);
    }
    cr_expect_gt(len, 0, "the line never reached the file without a flush");
    cr_expect_eq(out_close(o), 0);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(output, dash_writes_to_stdout)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "stdout.txt");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    out_t *o = out_open("-", err, sizeof err);
    out_record_t r = {.url = "http://a.test/stdout", .timestamp_ms = 1};
    int wrc = o ? out_write(o, &r) : -99;
    int crc = out_close(o);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    cr_assert_not_null(o, "%s", err);
    cr_expect_eq(wrc, 0);
    cr_expect_eq(crc, 0);
    char *want = format_line(&r);
    char *got = fx_read_file(path, NULL);
    cr_expect_str_eq(got, want);
    free(got);
    free(want);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(output, disk_full_is_reported_not_ignored)
{
    char err[256];
    out_t *o = out_open("/dev/full", err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    out_record_t r = {.url = "http://a.test/", .timestamp_ms = 1};
    cr_expect_eq(out_write(o, &r), 0); /* buffered */
    cr_expect_eq(out_flush(o), CRAWL_EWRITE);
    cr_expect_not_null(strstr(out_error(o), "No space left"), "%s", out_error(o));
    cr_expect_eq(out_write(o, &r), CRAWL_EWRITE);
    cr_expect_eq(out_close(o), CRAWL_EWRITE);
}

Test(output, full_buffer_is_written_out_and_errors_surface_in_write)
{
    char err[256];
    out_t *o = out_open("/dev/full", err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    out_record_t r = {.url = "http://a.test/", .timestamp_ms = 1};
    int rc = 0, i;
    for (i = 0; i < 10000 && rc == 0; i++)
        rc = out_write(o, &r);
    cr_expect_eq(rc, CRAWL_EWRITE, "a full buffer was never written (%d writes)", i);
    cr_expect_eq(out_close(o), CRAWL_EWRITE);
}

#define JT 8    /* writer threads */
#define JN 1500 /* records per thread */

typedef struct jarg {
    out_t *o;
    int t;
    int failures;
} jarg_t;

/* Record i of thread t: lengths vary, a few exceed the stack buffer, one
 * exceeds the whole output buffer. */
static void make_record(int t, int i, out_record_t *r, char *url, size_t cap, char *big,
                        size_t bigcap)
{
    snprintf(url, cap, "http://t%d.test/%d", t, i);
    *r = (out_record_t){.url = url,
                        .status = 200 + i % 5,
                        .depth = (uint32_t)i,
                        .bytes = (uint64_t)i * 3,
                        .timestamp_ms = 1000 + i};
    if (i % 97 == 0 || i == 777) {
        size_t n = i == 777 ? bigcap - 1 : 3000 + (size_t)i;
        memset(big, 'x', n);
        big[n] = '\0';
        r->error_text = big;
    }
}

static void *json_writer(void *p)
{
    jarg_t *a = p;
    char url[64];
    size_t bigcap = OUT_BUFFER_BYTES + 1000;
    char *big = malloc(bigcap);
    for (int i = 0; i < JN && big; i++) {
        out_record_t r;
        make_record(a->t, i, &r, url, sizeof url, big, bigcap);
        if (out_write(a->o, &r) != 0)
            a->failures++;
    }
    free(big);
    return NULL;
}

Test(output, concurrent_writers_produce_whole_lines)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "o.jsonl");
    out_t *o = out_open(path, err, sizeof err);
    cr_assert_not_null(o, "%s", err);
    pthread_t th[JT];
    jarg_t args[JT];
    for (int t = 0; t < JT; t++) {
        args[t] = (jarg_t){.o = o, .t = t};
        cr_assert_eq(pthread_create(&th[t], NULL, json_writer, &args[t]), 0);
    }
    for (int t = 0; t < JT; t++) {
        pthread_join(th[t], NULL);
        cr_expect_eq(args[t].failures, 0);
    }
    cr_assert_eq(out_close(o), 0);
    size_t len = 0;
    char *data = fx_read_file(path, &len);
    cr_assert_not_null(data);
    static unsigned char seen[JT][JN];
    memset(seen, 0, sizeof seen);
    size_t bigcap = OUT_BUFFER_BYTES + 1000, lines = 0;
    char *big = malloc(bigcap);
    cr_assert_not_null(big);
    for (size_t at = 0; at < len; lines++) {
        char *nl = memchr(data + at, '\n', len - at);
        cr_assert_not_null(nl, "last line has no newline");
        size_t ll = (size_t)(nl - (data + at)) + 1;
        int t = -1, i = -1;
        cr_assert_eq(sscanf(data + at, "{\"url\":\"http://t%d.test/%d\"", &t, &i), 2,
                     "line %zu: %.80s", lines, data + at);
        cr_assert(t >= 0 && t < JT && i >= 0 && i < JN, "line %zu", lines);
        out_record_t r;
        char url[64];
        make_record(t, i, &r, url, sizeof url, big, bigcap);
        char *want = format_line(&r);
        cr_assert(ll == strlen(want) && memcmp(data + at, want, ll) == 0,
                  "line %zu (t%d #%d) is not whole", lines, t, i);
        free(want);
        cr_assert_eq(seen[t][i]++, 0, "t%d #%d twice", t, i);
        at += ll;
    }
    cr_expect_eq(lines, (size_t)JT * JN);
    free(big);
    free(data);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- WARC tests -------------------------------------------------------- */

Test(warc, sha1_base32_matches_known_vectors)
{
    static const struct {
        const char *in, *want;
    } v[] = {
        {"", "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
        {"abc", "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
        {"The quick brown fox jumps over the lazy dog", "sha1:F7KODRT2FUUPZ3MET3Q3W5XHHENZH2YS"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char got[WARC_DIGEST_LEN + 1];
        cr_assert_eq(warc_digest(v[i].in, strlen(v[i].in), got), 0);
        cr_expect_str_eq(got, v[i].want, "sha1(\"%s\")", v[i].in);
    }
}

static const char req1[] =
    "GET /a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip\r\n\r\n";
static const char req4[] = "POST /form HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\na=1";

static unsigned char sample_bin[25600];
static const char sample_h1[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                                "Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n";

/* Four varied exchanges: decoded chunked gzip, no request and LF head,
 * truncated binary over IPv6, POST with a request body and no response body. */
static const warc_exchange_t sample[] = {
    {.target_uri = "http://127.0.0.1:8080/a",
     .ip = "127.0.0.1",
     .request = req1,
     .request_len = sizeof req1 - 1,
     .response_head = sample_h1,
     .response_head_len = sizeof sample_h1 - 1,
     .body = "<html>hello</html>",
     .body_len = 18,
     .body_decoded = 1,
     .fetch_time_ms = 1764460862345},
    {.target_uri = "http://127.0.0.1:8080/missing",
     .response_head = "HTTP/1.0 404 Not Found\nContent-Length: 9\n\n",
     .response_head_len = 42,
     .body = "not found",
     .body_len = 9},
    {.target_uri = "http://[::1]:8080/big.bin",
     .ip = "::1",
     .request = req1,
     .request_len = sizeof req1 - 1,
     .response_head = "HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n",
     .response_head_len = 43,
     .body = sample_bin,
     .body_len = sizeof sample_bin,
     .truncated = 1},
    {.target_uri = "http://127.0.0.1/form",
     .ip = "127.0.0.1",
     .request = req4,
     .request_len = sizeof req4 - 1,
     .response_head = "HTTP/1.1 204 No Content\r\n\r\n",
     .response_head_len = 27},
};
#define NSAMPLE (sizeof sample / sizeof sample[0])

static void write_sample(const char *path)
{
    char err[256];
    for (size_t i = 0; i < sizeof sample_bin; i++)
        sample_bin[i] = (unsigned char)(i * 7 + i / 256);
    warc_t *w = warc_open(path, "test-suite/1.0", err, sizeof err);
    cr_assert_not_null(w, "%s", err);
    for (size_t i = 0; i < NSAMPLE; i++)
        cr_assert_eq(warc_write_exchange(w, &sample[i]), 0, "exchange %zu", i);
    warc_close(w, NULL, 0);
}

Test(warc, records_read_back_field_by_field)
{
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "x.warc.gz");
    write_sample(path);
    wfile_t f = read_warc(path);
    cr_assert_eq(f.n, 1 + 2 * NSAMPLE - 1, "one exchange has no recorded request");
    expect_warcinfo(&f.r[0], "x.warc.gz");
    const char *info = hget(&f.r[0], "WARC-Record-ID");
    size_t at = 1, post_req = 0;
    for (size_t i = 0; i < NSAMPLE; i++) {
        const wrec_t *rq = sample[i].request_len ? &f.r[at++] : NULL;
        if (sample[i].request == req4)
            post_req = at - 1;
        expect_exchange(rq, &f.r[at++], &sample[i], info);
    }
    cr_expect_str_eq(hget(&f.r[1], "WARC-Date"), "2025-11-30T00:01:02.345Z");
    /* the request payload digest covers what follows the request head */
    expect_digest(hget(&f.r[post_req], "WARC-Payload-Digest"), "a=1", 3, "POST payload");
    expect_digest(hget(&f.r[1], "WARC-Payload-Digest"), "", 0, "GET payload");
    /* every record ID is unique */
    for (size_t i = 0; i < f.n; i++)
        for (size_t j = i + 1; j < f.n; j++)
            cr_expect_str_neq(hget(&f.r[i], "WARC-Record-ID"), hget(&f.r[j], "WARC-Record-ID"));
    free_warc(&f);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(warc, gzip_accepts_the_file_and_sees_the_same_records)
{
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "x.warc.gz"), *plain = tmp_path(dir, "plain.warc");
    write_sample(path);
    char *argv[] = {"/bin/gzip", "-t", path, NULL};
    cr_expect_eq(fx_run(argv, NULL, NULL, 60000), 0, "gzip -t rejects the file");
    /* gzip -dc gives the same bytes as inflating member by member */
    char *zargv[] = {"/bin/gzip", "-dc", path, NULL};
    cr_assert_eq(fx_run(zargv, plain, NULL, 60000), 0);
    size_t plen = 0, at = 0;
    char *p = fx_read_file(plain, &plen);
    cr_assert_not_null(p);
    wfile_t f = read_warc(path);
    for (size_t i = 0; i < f.n; i++) {
        cr_assert(at + f.r[i].raw_len <= plen && memcmp(p + at, f.r[i].raw, f.r[i].raw_len) == 0,
                  "record %zu differs under gzip -dc", i);
        at += f.r[i].raw_len;
    }
    cr_expect_eq(at, plen);
    free(p);
    free_warc(&f);
    fx_rmtree(dir);
    free(plain);
    free(path);
    free(dir);
}

Test(warc, response_head_is_made_consistent_with_the_stored_body)
{
    static const struct {
        const char *head;
        int decoded;
        const char *want; /* stored head for the body "hello" */
    } c[] = {
        /* chunked + gzip undone by libcurl: both renamed, length added */
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n", 1,
         "HTTP/1.1 200 OK\r\nX-Crawler-Original-Transfer-Encoding: chunked\r\n"
         "X-Crawler-Original-Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"},
        /* compressed length replaced by the decoded one */
        {"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 3\r\nVary: x\r\n\r\n", 1,
         "HTTP/1.1 200 OK\r\nX-Crawler-Original-Content-Encoding: br\r\n"
         "X-Crawler-Original-Content-Length: 3\r\nVary: x\r\nContent-Length: 5\r\n\r\n"},
        /* body still encoded: Content-Encoding kept */
        {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n", 0,
         "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"},
        /* a correct length is kept; a duplicate is renamed */
        {"HTTP/1.1 200 OK\r\ncontent-length:  5 \r\nContent-Length: 5\r\n\r\n", 0,
         "HTTP/1.1 200 OK\r\ncontent-length:  5 \r\nX-Crawler-Original-Content-Length: 5\r\n\r\n"},
        /* interim 100 Continue dropped: only the final response is kept */
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nServer: t\r\n\r\n", 0,
         "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\n"},
        /* LF-only lines kept as received; added lines follow the status line's EOL */
        {"HTTP/1.0 200 OK\nServer: t\n\n", 0, "HTTP/1.0 200 OK\nServer: t\nContent-Length: 5\n\n"},
        /* HTTP/2 as libcurl reports it */
        {"HTTP/2 200\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\n", 0,
         "HTTP/2 200\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\n"},
        /* a head without its blank line (or last newline) is completed */
        {"HTTP/1.1 200 OK\r\nServer: x", 0,
         "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n\r\n"},
        /* a folded continuation is never taken for a header of its own */
        {"HTTP/1.1 200 OK\r\nX-A: a\r\n Content-Length: 7\r\n\r\n", 0,
         "HTTP/1.1 200 OK\r\nX-A: a\r\n Content-Length: 7\r\nContent-Length: 5\r\n\r\n"},
        /* a folded header line stays with its (renamed) header */
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,\r\n chunked\r\n\r\n", 1,
         "HTTP/1.1 200 OK\r\nX-Crawler-Original-Transfer-Encoding: gzip,\r\n chunked\r\n"
         "Content-Length: 5\r\n\r\n"},
    };
    size_t nc = sizeof c / sizeof c[0];
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "heads.warc.gz");
    warc_t *w = warc_open(path, "test-suite/1.0", err, sizeof err);
    cr_assert_not_null(w, "%s", err);
    for (size_t i = 0; i < nc; i++) {
        warc_exchange_t x = {.target_uri = "http://a.test/",
                             .response_head = c[i].head,
                             .response_head_len = strlen(c[i].head),
                             .body = "hello",
                             .body_len = 5,
                             .body_decoded = c[i].decoded};
        cr_assert_eq(warc_write_exchange(w, &x), 0, "case %zu", i);
    }
    warc_close(w, NULL, 0);
    wfile_t f = read_warc(path);
    cr_assert_eq(f.n, 1 + nc, "no request recorded: one record per exchange");
    for (size_t i = 0; i < nc; i++) {
        const wrec_t *rs = &f.r[1 + i];
        size_t wl = strlen(c[i].want);
        cr_expect(rs->block_len == wl + 5 && memcmp(rs->block, c[i].want, wl) == 0 &&
                      memcmp(rs->block + wl, "hello", 5) == 0,
                  "case %zu: stored block\n%.*s\nwant head\n%s", i, (int)rs->block_len, rs->block,
                  c[i].want);
        expect_digest(hget(rs, "WARC-Payload-Digest"), "hello", 5, "payload");
    }
    free_warc(&f);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(warc, rejects_header_injection_and_bad_exchanges)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "bad.warc.gz");
    warc_t *w = warc_open(path, "test-suite/1.0", err, sizeof err);
    cr_assert_not_null(w, "%s", err);
    const char *head = "HTTP/1.1 200 OK\r\n\r\n";
    const char *uris[] = {"http://a/\r\nWARC-Type: evil", "http://a/ b", "", "http://a/\x7f"};
    for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
        warc_exchange_t x = {
            .target_uri = uris[i], .response_head = head, .response_head_len = strlen(head)};
        cr_expect_eq(warc_write_exchange(w, &x), CRAWL_EINVAL, "uri %zu", i);
    }
    warc_exchange_t x = {.target_uri = "http://a/",
                         .ip = "1.2.3.4\r\nX: y",
                         .response_head = head,
                         .response_head_len = strlen(head)};
    cr_expect_eq(warc_write_exchange(w, &x), CRAWL_EINVAL);
    x.ip = NULL;
    x.response_head_len = 0;
    cr_expect_eq(warc_write_exchange(w, &x), CRAWL_EINVAL);
    x.response_head_len = strlen(head);
    x.body_len = 3; /* with a NULL body */
    cr_expect_eq(warc_write_exchange(w, &x), CRAWL_EINVAL);
    cr_expect_eq(warc_write_exchange(w, NULL), CRAWL_EINVAL);
    cr_expect_eq(warc_write_exchange(NULL, &x), CRAWL_EINVAL);
    warc_close(w, NULL, 0);
    warc_close(NULL, NULL, 0);
    wfile_t f = read_warc(path);
    cr_expect_eq(f.n, 1, "only the warcinfo record may be in the file");
    free_warc(&f);
    cr_expect_null(warc_open(path, "bad\r\nsoftware", err, sizeof err));
    cr_expect_null(warc_open("/nonexistent-dir/x.warc.gz", NULL, err, sizeof err));
    cr_expect_not_null(strstr(err, "No such file"), "%s", err);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

Test(warc, disk_full_is_reported)
{
    char err[256] = "";
    cr_expect_null(warc_open("/dev/full", "test-suite/1.0", err, sizeof err));
    cr_expect_not_null(strstr(err, "No space left"), "%s", err);
}

Test(warc, reopening_appends_a_new_warcinfo)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "again.warc.gz");
    const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
    warc_exchange_t x = {.target_uri = "http://a.test/",
                         .request = req1,
                         .request_len = strlen(req1),
                         .response_head = head,
                         .response_head_len = strlen(head),
                         .body = "ok",
                         .body_len = 2};
    for (int round = 0; round < 2; round++) {
        warc_t *w = warc_open(path, "test-suite/1.0", err, sizeof err);
        cr_assert_not_null(w, "%s", err);
        cr_assert_eq(warc_write_exchange(w, &x), 0);
        warc_close(w, NULL, 0);
    }
    wfile_t f = read_warc(path);
    cr_assert_eq(f.n, 6);
    expect_warcinfo(&f.r[0], "again.warc.gz");
    expect_warcinfo(&f.r[3], "again.warc.gz");
    cr_expect_str_neq(hget(&f.r[0], "WARC-Record-ID"), hget(&f.r[3], "WARC-Record-ID"));
    expect_exchange(&f.r[1], &f.r[2], &x, hget(&f.r[0], "WARC-Record-ID"));
    expect_exchange(&f.r[4], &f.r[5], &x, hget(&f.r[3], "WARC-Record-ID"));
    free_warc(&f);
    fx_rmtree(dir);
    free(path);
    free(dir);
}

#define WT 8  /* writer threads */
#define WN 40 /* exchanges per thread */

typedef struct warg {
    warc_t *w;
    int t;
    int failures;
} warg_t;

static void make_exchange(int t, int i, warc_exchange_t *x, char *uri, size_t cap, char *body,
                          size_t bodycap)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
    snprintf(uri, cap, "http://t%d.test/%d", t, i);
    size_t n = ((size_t)i * 1237 + (size_t)t * 311) % bodycap;
    for (size_t k = 0; k < n; k++)
        body[k] = (char)('a' + (k * (size_t)(t + 1) + (size_t)i) % 26);
    *x = (warc_exchange_t){.target_uri = uri,
                           .ip = "127.0.0.1",
                           .request = req1,
                           .request_len = strlen(req1),
                           .response_head = head,
                           .response_head_len = strlen(head),
                           .body = body,
                           .body_len = n};
}

static void *warc_writer(void *p)
{
    warg_t *a = p;
    char uri[64], *body = malloc(60000);
    for (int i = 0; i < WN && body; i++) {
        warc_exchange_t x;
        make_exchange(a->t, i, &x, uri, sizeof uri, body, 60000);
        if (warc_write_exchange(a->w, &x) != 0)
            a->failures++;
    }
    free(body);
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

Test(warc, concurrent_writers_produce_whole_linked_records)
{
    char err[256];
    char *dir = fx_tmpdir();
    char *path = tmp_path(dir, "many.warc.gz");
    warc_t *w = warc_open(path, "test-suite/1.0", err, sizeof err);
    cr_assert_not_null(w, "%s", err);
    pthread_t th[WT];
    warg_t args[WT];
    for (int t = 0; t < WT; t++) {
        args[t] = (warg_t){.w = w, .t = t};
        cr_assert_eq(pthread_create(&th[t], NULL, warc_writer, &args[t]), 0);
    }
    for (int t = 0; t < WT; t++) {
        pthread_join(th[t], NULL);
        cr_expect_eq(args[t].failures, 0);
    }
    warc_close(w, NULL, 0);
    char *argv[] = {"/bin/gzip", "-t", path, NULL};
    cr_expect_eq(fx_run(argv, NULL, NULL, 60000), 0, "gzip -t rejects the file");

    wfile_t f = read_warc(path);
    cr_assert_eq(f.n, 1 + 2 * WT * WN);
    const char *info = hget(&f.r[0], "WARC-Record-ID");
    static unsigned char seen[WT][WN];
    memset(seen, 0, sizeof seen);
    char *body = malloc(60000), uri[64];
    const char **ids = malloc(f.n * sizeof *ids);
    cr_assert(body && ids);
    for (size_t i = 1; i < f.n; i += 2) {
        int t = -1, k = -1;
        const char *u = hget(&f.r[i], "WARC-Target-URI");
        cr_assert(u && sscanf(u, "http://t%d.test/%d", &t, &k) == 2, "record %zu", i);
        cr_assert(t >= 0 && t < WT && k >= 0 && k < WN);
        cr_assert_eq(seen[t][k]++, 0, "%s twice", u);
        warc_exchange_t x;
        make_exchange(t, k, &x, uri, sizeof uri, body, 60000);
        expect_exchange(&f.r[i], &f.r[i + 1], &x, info);
    }
    for (size_t i = 0; i < f.n; i++)
        ids[i] = hget(&f.r[i], "WARC-Record-ID");
    qsort(ids, f.n, sizeof *ids, cmp_str);
    for (size_t i = 1; i < f.n; i++)
        cr_expect_str_neq(ids[i - 1], ids[i], "duplicate record id");
    free(ids);
    free(body);
    free_warc(&f);
    fx_rmtree(dir);
    free(path);
    free(dir);
}
