/*
 * test_robots_cmd.c -- which rule decides a path, and on which line
 * (robots_explain(), policy/robots.h), and the command built on it,
 * `crawler robots --agent UA FILE|URL PATH...` (crawler/cmd_robots.c): one
 * tab-separated line per PATH, verdict, rule, line number, PATH.
 *
 * Table-driven for robots_explain(): each case is a body and, per path, the
 * rule text and line expected; failure messages name the case and the path.
 * The command runs as a child process on files in a temporary directory and
 * against the HTTP fixture on 127.0.0.1 (fixtures.h), which this suite
 * starts and stops itself.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "robots.h"

#define MAX_PATHS 8

struct why {
    const char *path;
    int allowed;
    const char *rule; /* "Allow: /x", "Disallow: /x", "-" none, "(robots.txt)" */
    unsigned line;    /* 0: none */
};

struct wcase {
    const char *name;
    const char *body;
    size_t len; /* 0: strlen(body) */
    struct why w[MAX_PATHS];
};

/* "Allow: PATTERN" etc. for a verdict, into buf. */
static const char *rule_text(const robots_verdict_t *v, char *buf, size_t n)
{
    if (v->why == ROBOTS_WHY_NO_RULE)
        return "-";
    if (v->why == ROBOTS_WHY_ROBOTS_TXT)
        return "(robots.txt)";
    snprintf(buf, n, "%s: %s", v->rule_allow ? "Allow" : "Disallow", v->pattern);
    return buf;
}

static void run_why(const struct wcase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct wcase *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->body);
        robots_t *r = robots_parse(c->body, len, "mybot", NULL);
        cr_assert_not_null(r, "%s: parse", c->name);
        for (size_t j = 0; j < MAX_PATHS && c->w[j].path; j++) {
            const struct why *w = &c->w[j];
            robots_verdict_t v;
            char buf[256];
            cr_assert_eq(robots_explain(r, w->path, &v), 0, "%s: explain %s", c->name, w->path);
            cr_expect_eq(v.allowed, w->allowed, "%s: %s: allowed %d", c->name, w->path, v.allowed);
            cr_expect_eq(v.allowed, robots_allowed(r, w->path), "%s: %s: explain != allowed",
                         c->name, w->path);
            cr_expect_str_eq(rule_text(&v, buf, sizeof buf), w->rule, "%s: %s: rule", c->name,
                             w->path);
            cr_expect_eq(v.line, w->line, "%s: %s: line %u, want %u", c->name, w->path, v.line,
                         w->line);
        }
        robots_free(r);
    }
}

#define RUN_WHY(cases) run_why(cases, sizeof(cases) / sizeof(cases[0]))

Test(robots_cmd, explain_names_the_deciding_rule_and_its_line)
{
    static const char nul_body[] = "User-agent: *\nDisallow: /a\0Disallow: /b\nDisallow: /c\n";
    static const struct wcase cases[] = {
        {"LF",
         "User-agent: *\nDisallow: /a\n\n# comment\nAllow: /a/b\n",
         0,
         {{"/a/x", 0, "Disallow: /a", 2},
          {"/a/b", 1, "Allow: /a/b", 5},
          {"/z", 1, "-", 0},
          {"/robots.txt", 1, "(robots.txt)", 0}}},
        {"an empty file", "", 0, {{"/", 1, "-", 0}, {"/robots.txt?x", 1, "(robots.txt)", 0}}},
        {"CRLF counts one line end",
         "User-agent: *\r\nDisallow: /a\r\n\r\nAllow: /a/b\r\n",
         0,
         {{"/a", 0, "Disallow: /a", 2}, {"/a/b", 1, "Allow: /a/b", 4}}},
        {"CR only",
         "User-agent: *\rDisallow: /a\r\rAllow: /a/b\r",
         0,
         {{"/a", 0, "Disallow: /a", 2}, {"/a/b", 1, "Allow: /a/b", 4}}},
        {"mixed line ends, LF CR is two",
         "User-agent: *\n\r\nDisallow: /a\n\rAllow: /a/b",
         0,
         {{"/a", 0, "Disallow: /a", 3}, {"/a/b", 1, "Allow: /a/b", 5}}},
        {"a BOM is no line",
         "\xEF\xBB\xBFUser-agent: *\nDisallow: /a\n",
         0,
         {{"/a", 0, "Disallow: /a", 2}}},
        {"text after a NUL keeps its line number",
         nul_body,
         sizeof nul_body - 1,
         {{"/b", 0, "Disallow: /b", 2}, {"/c", 0, "Disallow: /c", 3}}},
        {"of identical rules the first line is named",
         "User-agent: *\nDisallow: /a\nUser-agent: mybot\nDisallow: /x\nUser-agent: mybot\n"
         "Disallow: /x\nDisallow: /x\n",
         0,
         {{"/x", 0, "Disallow: /x", 4}, {"/a", 1, "-", 0}}},
        {"allow wins a tie of equal length",
         "User-agent: mybot\nDisallow: /p\nAllow: /p\n",
         0,
         {{"/p", 1, "Allow: /p", 3}}},
        {"the pattern is shown normalized",
         "User-agent: *\nDisallow: /%7euser/%e2%82%ac\n",
         0,
         {{"/~user/%E2%82%AC/x", 0, "Disallow: /~user/%E2%82%AC", 2}}},
        {"index.htm rule carries its Allow line",
         "User-agent: *\nDisallow: /\nAllow: /d/index.html\n",
         0,
         {{"/d/", 1, "Allow: /d/$", 3}, {"/d/x", 0, "Disallow: /", 2}}},
    };
    RUN_WHY(cases);
}

Test(robots_cmd, explain_without_line_numbers_and_bad_arguments)
{
    robots_t *r = robots_disallow_all();
    cr_assert_not_null(r);
    robots_verdict_t v;
    cr_assert_eq(robots_explain(r, "/x", &v), 0);
    cr_expect(v.why == ROBOTS_WHY_RULE && !v.allowed && !v.rule_allow && v.line == 0 &&
                  strcmp(v.pattern, "/") == 0,
              "disallow_all: the rule \"/\", no line");
    cr_expect_eq(robots_explain(r, NULL, &v), CRAWL_EINVAL);
    cr_expect_eq(robots_explain(NULL, "/", &v), CRAWL_EINVAL);
    cr_expect_eq(robots_explain(r, "/", NULL), CRAWL_EINVAL);
    robots_free(r);

    /* A deserialized rule set decides the same, without line numbers. */
    static const char body[] = "User-agent: *\nDisallow: /a\nAllow: /a/b\n";
    r = robots_parse(body, sizeof body - 1, "mybot", NULL);
    cr_assert_not_null(r);
    char *buf = NULL;
    size_t len = 0;
    cr_assert_eq(robots_serialize(r, &buf, &len), 0);
    robots_t *copy = robots_deserialize(buf, len, NULL);
    cr_assert_not_null(copy);
    cr_assert_eq(robots_explain(copy, "/a/b/c", &v), 0);
    cr_expect(v.allowed && v.rule_allow && v.line == 0 && strcmp(v.pattern, "/a/b") == 0,
              "deserialized: Allow /a/b with no line");
    free(buf);
    robots_free(copy);
    robots_free(r);
}

/* ---- the command -------------------------------------------------------- */

typedef struct run {
    int status;
    char *out, *err;
} run_t;

/* Runs the crawler with args (NULL-terminated, after "robots"). */
static run_t run_robots(const char *const *args)
{
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir, "%s", fx_error());
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    char *argv[32] = {CRAWLER_BIN, "robots"};
    size_t n = 2;
    for (; args[n - 2] && n < 31; n++)
        argv[n] = (char *)args[n - 2];
    argv[n] = NULL;
    run_t r = {.status = fx_run(argv, out, err, 60000)};
    r.out = fx_read_file(out, NULL);
    r.err = fx_read_file(err, NULL);
    cr_assert(r.out && r.err, "cannot read the command's output");
    fx_rmtree(dir);
    free(dir);
    return r;
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

/* Writes body to a file in a new temporary directory; returns its path
 * (caller frees; *dir to fx_rmtree and free). */
static char *write_robots(const char *body, char **dir)
{
    *dir = fx_tmpdir();
    cr_assert_not_null(*dir, "%s", fx_error());
    size_t n = strlen(*dir) + 32;
    char *path = malloc(n);
    cr_assert_not_null(path);
    snprintf(path, n, "%s/robots.txt", *dir);
    cr_assert_eq(fx_write_file(path, body), 0);
    return path;
}

Test(robots_cmd, file_prints_verdict_rule_line_and_path)
{
    char *dir;
    char *file = write_robots("User-agent: *\r\nDisallow: /\r\n\r\nuser agent: mybot\n"
                              "Dissalow: /secret\nAllow: /secret/ok\n",
                              &dir);
    const char *args[] = {"--agent",     "MyBot/1.0 (+http://example.com)",
                          file,          "/secret/x",
                          "/secret/ok",  "/public",
                          "/robots.txt", "https://example.com/secret/ok?a=1#frag",
                          NULL};
    run_t r = run_robots(args);
    cr_expect_eq(r.status, 0, "exit %d, stderr: %s", r.status, r.err);
    cr_expect_str_eq(r.out,
                     "disallowed\tDisallow: /secret\t5\t/secret/x\n"
                     "allowed\tAllow: /secret/ok\t6\t/secret/ok\n"
                     "allowed\t-\t-\t/public\n"
                     "allowed\t(robots.txt)\t-\t/robots.txt\n"
                     "allowed\tAllow: /secret/ok\t6\thttps://example.com/secret/ok?a=1#frag\n");
    run_free(&r);

    /* Another agent gets the "*" group. */
    const char *args2[] = {"--agent", "otherbot", file, "/public", NULL};
    r = run_robots(args2);
    cr_expect_eq(r.status, 0);
    cr_expect_str_eq(r.out, "disallowed\tDisallow: /\t2\t/public\n");
    run_free(&r);
    fx_rmtree(dir);
    free(dir);
    free(file);
}

Test(robots_cmd, usage_and_input_errors)
{
    char *dir;
    char *file = write_robots("User-agent: *\nDisallow: /\n", &dir);
    struct {
        const char *args[6];
        int status;
        const char *err; /* in stderr */
    } cases[] = {
        {{file, NULL}, 2, "no PATH given"},
        {{NULL}, 2, "FILE or URL, and a PATH, are required"},
        {{"--agent", "", file, "/", NULL}, 2, "bad value '' for --agent: empty"},
        {{"--agent", "/1.0", file, "/", NULL}, 2, "no product token"},
        {{"/nonexistent/robots.txt", "/", NULL}, 1, "No such file"},
        {{"--bogus", file, "/", NULL}, 2, "bogus"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r = run_robots(cases[i].args);
        cr_expect_eq(r.status, cases[i].status, "case %zu: exit %d, want %d (%s)", i, r.status,
                     cases[i].status, r.err);
        cr_expect(strstr(r.err, cases[i].err) != NULL, "case %zu: stderr \"%s\" lacks \"%s\"", i,
                  r.err, cases[i].err);
        cr_expect_str_eq(r.out, "", "case %zu: nothing on stdout", i);
        run_free(&r);
    }
    fx_rmtree(dir);
    free(dir);
    free(file);
}

Test(robots_cmd, url_is_fetched_and_answers_map_as_the_crawl_maps_them)
{
    fx_http_t *h = fx_http_start();
    cr_assert_not_null(h, "%s", fx_error());
    fx_route_t ok = {.content_type = "text/plain",
                     .body = "User-agent: *\nDisallow: /private\nsitemap: /s.xml\n"};
    fx_http_set(h, "/robots.txt", &ok);
    fx_route_t down = {.status = 503, .content_type = "text/plain", .body = "busy"};
    fx_http_set(h, "/down/robots.txt", &down);
    fx_http_redirect(h, "/moved/robots.txt", 301, "/robots.txt");
    char root[256], gone[256], busy[256], moved[256];
    snprintf(root, sizeof root, "%s", fx_http_base(h)); /* no path: its /robots.txt */
    snprintf(gone, sizeof gone, "%s/gone/robots.txt", fx_http_base(h));
    snprintf(busy, sizeof busy, "%s/down/robots.txt", fx_http_base(h));
    snprintf(moved, sizeof moved, "%s/moved/robots.txt", fx_http_base(h));
    struct {
        const char *url;
        const char *out;
        const char *err; /* in stderr, or "" */
    } cases[] = {
        {root, "disallowed\tDisallow: /private\t2\t/private/x\nallowed\t-\t-\t/x\n", ""},
        {moved, "disallowed\tDisallow: /private\t2\t/private/x\nallowed\t-\t-\t/x\n", ""},
        {gone, "allowed\t-\t-\t/private/x\nallowed\t-\t-\t/x\n", "HTTP 404: no rules"},
        {busy, "disallowed\tDisallow: /\t-\t/private/x\ndisallowed\tDisallow: /\t-\t/x\n",
         "HTTP 503: unavailable"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--agent", "mybot", cases[i].url, "/private/x", "/x", NULL};
        run_t r = run_robots(args);
        cr_expect_eq(r.status, 0, "%s: exit %d (%s)", cases[i].url, r.status, r.err);
        cr_expect_str_eq(r.out, cases[i].out, "%s: stdout", cases[i].url);
        cr_expect(strstr(r.err, cases[i].err) != NULL, "%s: stderr \"%s\" lacks \"%s\"",
                  cases[i].url, r.err, cases[i].err);
        run_free(&r);
    }
    cr_expect_eq(fx_http_hits(h, "/robots.txt"), 2, "root and the redirect's target fetched");
    cr_expect_eq(fx_http_hits(h, "/"), 0, "a URL without a path fetches its /robots.txt");
    fx_http_stop(h);

    /* Nothing listening: unreachable, everything disallowed. */
    char dead[64];
    int port = fx_free_port();
    cr_assert(port > 0);
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d/robots.txt", port);
    const char *args[] = {"--timeout", "5000", dead, "/x", NULL};
    run_t r = run_robots(args);
    cr_expect_eq(r.status, 0, "unreachable: exit %d", r.status);
    cr_expect_str_eq(r.out, "disallowed\tDisallow: /\t-\t/x\n");
    cr_expect(strstr(r.err, "unreachable") != NULL, "stderr: %s", r.err);
    run_free(&r);
}
