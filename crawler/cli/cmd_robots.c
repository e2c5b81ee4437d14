/*
 * cmd_robots.c -- `crawler robots --agent UA FILE|URL PATH...`: what the
 * crawler would do with each PATH under one robots.txt, and why.  For users
 * who debug a crawl (and for the tests).
 *
 * DESIGN: the robots.txt is FILE, read from disk, or URL (http:// or
 * https://), fetched once with a libcurl easy handle as the crawl fetches it:
 * User-Agent UA, at most 5 redirects, only http/https, the body cut after
 * ROBOTS_MAX_BYTES + 1 bytes (robots_parse() reads ROBOTS_MAX_BYTES); a URL
 * whose path is empty or "/" means its origin's /robots.txt.  The answer is
 * turned into rules as the crawl does (crawler/robotsgate.c): 2xx parsed,
 * 3xx (not followed) and 4xx allow everything, 5xx and no answer disallow
 * everything; the last two are said on stderr.  Then one line per PATH on
 * stdout, tab-separated:
 *     allowed|disallowed  RULE  LINE  PATH
 * RULE is "Allow: PATTERN" or "Disallow: PATTERN" (the pattern as matched:
 * percent-encoding normalized), "-" when no rule matches, or "(robots.txt)"
 * for /robots.txt itself; LINE is the rule's line number in the file, "-"
 * when there is none.  A PATH may be a full http(s) URL: its path and query
 * are used.  Keeps no state; exit statuses are CLI_EXIT_* (1: the file
 * could not be read, a PATH is no path, or out of memory).
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "config.h" /* CONFIG_DEFAULT_USER_AGENT */
#include "robots.h"

#define ROBOTS_CLI_TIMEOUT_MS 30000u
#define ROBOTS_CLI_MAX_REDIRS 5L

typedef struct ropts {
    const char *agent;
    uint32_t timeout_ms;
} ropts_t;

static const cli_opt_t OPTS[] = {
    {CLI_OPT_STRING(ropts_t, "agent", "UA", agent, CONFIG_DEFAULT_USER_AGENT,
                    "the crawler's User-Agent: its product token picks the group,\n"
                    "and a URL is fetched with it")},
    {CLI_OPT_U32(ropts_t, "timeout", "MS", timeout_ms, 1, 3600000u, ROBOTS_CLI_TIMEOUT_MS,
                 "URL: give up fetching after MS milliseconds\n(then everything is disallowed)")},
    {CLI_OPT_HELP("print this help")},
};

const cli_cmd_t cli_table_robots = {
    .name = "robots",
    .usage = "usage: crawler robots [--agent UA] FILE|URL PATH...\n\n"
             "Prints, for each PATH, what the crawler would do under the robots.txt\n"
             "in FILE or at URL (http/https; a URL without a path means its\n"
             "/robots.txt): \"allowed\" or \"disallowed\", the rule that decided it\n"
             "and its line number, and the PATH, separated by tabs (\"-\": none).\n\n"
             "options:\n",
    .opts = OPTS,
    .nopts = sizeof OPTS / sizeof OPTS[0],
};

/* A robots.txt body being read or fetched. */
typedef struct body {
    char *buf;
    size_t len, cap;
} body_t;

static int is_url(const char *s)
{
    return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0;
}

/* Appends n bytes, keeping at most ROBOTS_MAX_BYTES + 1; -1 out of memory. */
static int body_add(body_t *b, const char *p, size_t n)
{
    size_t room = ROBOTS_MAX_BYTES + 1 - b->len;
    if (n > room)
        n = room;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16384;
        while (nc < b->len + n)
            nc *= 2;
        char *nb = realloc(b->buf, nc);
        if (!nb)
            return -1;
        b->buf = nb;
        b->cap = nc;
    }
    memcpy(b->buf + b->len, p, n);
    b->len += n;
    return 0;
}

static int read_file(const char *path, body_t *b)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "crawler robots: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char chunk[16384];
    size_t n;
    int rc = 0;
    while (rc == 0 && b->len <= ROBOTS_MAX_BYTES && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = body_add(b, chunk, n);
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "crawler robots: %s: read error\n", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    body_t *b = ud;
    if (b->len > ROBOTS_MAX_BYTES)
        return 0; /* enough: what is past the limit is never read */
    return body_add(b, p, sz * nm) == 0 ? sz * nm : 0;
}

/* The URL to fetch: url itself, or its /robots.txt when its path is empty
 * or "/".  Caller frees with curl_free(); NULL if url does not parse. */
static char *robots_url(const char *url)
{
    CURLU *u = curl_url();
    char *path = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
        if (strcmp(path, "/") == 0 || path[0] == '\0')
            curl_url_set(u, CURLUPART_PATH, "/robots.txt", 0);
        curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
        if (curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK)
            out = NULL;
    }
    curl_free(path);
    curl_url_cleanup(u);
    return out;
}

/* Fetches url into b; returns the rules as the crawl would make them
 * (NULL: out of memory or the URL does not parse, said on stderr). */
static robots_t *fetch_rules(const char *url, const ropts_t *o, body_t *b)
{
    char *target = robots_url(url), errbuf[CURL_ERROR_SIZE] = "";
    CURL *h = target ? curl_easy_init() : NULL;
    if (!h) {
        fprintf(stderr, "crawler robots: %s: %s\n", url, target ? "out of memory" : "bad URL");
        curl_free(target);
        return NULL;
    }
    curl_easy_setopt(h, CURLOPT_URL, target);
    curl_easy_setopt(h, CURLOPT_USERAGENT, o->agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, ROBOTS_CLI_MAX_REDIRS);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    int complete = cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && b->len > ROBOTS_MAX_BYTES);
    robots_t *r;
    if (complete && status >= 200 && status < 300) {
        r = robots_parse(b->buf, b->len, o->agent, NULL);
    } else if (complete && status >= 300 && status < 500) {
        fprintf(stderr, "crawler robots: %s: HTTP %ld: no rules, everything is allowed\n", target,
                status);
        r = robots_allow_all();
    } else {
        if (complete)
            fprintf(stderr, "crawler robots: %s: HTTP %ld: unavailable, everything is disallowed\n",
                    target, status);
        else
            fprintf(stderr, "crawler robots: %s: %s: unreachable, everything is disallowed\n",
                    target, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        r = robots_disallow_all();
    }
    if (!r)
        fprintf(stderr, "crawler robots: out of memory\n");
    curl_free(target);
    return r;
}

/* Prints the verdict line of one PATH argument; -1 if it is no path. */
static int print_verdict(const robots_t *r, const char *arg)
{
    const char *path = arg;
    char *upath = NULL, *query = NULL, *joined = NULL;
    CURLU *u = NULL;
    if (is_url(arg)) {
        u = curl_url();
        if (!u || curl_url_set(u, CURLUPART_URL, arg, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PATH, &upath, 0) != CURLUE_OK) {
            fprintf(stderr, "crawler robots: %s: bad URL\n", arg);
            curl_url_cleanup(u);
            return -1;
        }
        if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
            query = NULL;
        size_t n = strlen(upath) + (query ? strlen(query) + 1 : 0) + 1;
        joined = malloc(n);
        if (joined)
            snprintf(joined, n, "%s%s%s", upath, query ? "?" : "", query ? query : "");
        path = joined;
    }
    robots_verdict_t v;
    int rc = path ? robots_explain(r, path, &v) : CRAWL_ENOMEM;
    if (rc == 0) {
        char line[16] = "-";
        if (v.why == ROBOTS_WHY_RULE && v.line > 0)
            snprintf(line, sizeof line, "%u", (unsigned)v.line);
        printf("%s\t%s%s\t%s\t%s\n", v.allowed ? "allowed" : "disallowed",
               v.why == ROBOTS_WHY_RULE ? (v.rule_allow ? "Allow: " : "Disallow: ") : "",
               v.why == ROBOTS_WHY_RULE         ? v.pattern
               : v.why == ROBOTS_WHY_ROBOTS_TXT ? "(robots.txt)"
                                                : "-",
               line, arg);
    } else {
        fprintf(stderr, "crawler robots: %s: %s\n", arg, crawl_strerror(rc));
    }
    free(joined);
    curl_free(upath);
    curl_free(query);
    curl_url_cleanup(u);
    return rc == 0 ? 0 : -1;
}

int cmd_robots(int argc, char **argv)
{
    ropts_t o;
    cli_defaults(&cli_table_robots, &o);
    int first, p = cli_parse(&cli_table_robots, &o, argc, argv, &first);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (argc - first < 2) {
        fprintf(stderr, "crawler robots: %s\n",
                first < argc ? "no PATH given" : "FILE or URL, and a PATH, are required");
        cli_see_help("robots");
        return CLI_EXIT_USAGE;
    }
    int err = 0;
    robots_t *r = robots_parse(NULL, 0, o.agent, &err);
    robots_free(r);
    if (!r) {
        fprintf(stderr, "crawler robots: --agent '%s': %s\n", o.agent,
                err == CRAWL_EINVAL ? "no product token (letters, '-', '_')" : crawl_strerror(err));
        return err == CRAWL_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    }
    body_t b = {0};
    r = NULL;
    const char *src = argv[first];
    if (is_url(src)) {
        r = fetch_rules(src, &o, &b);
    } else if (read_file(src, &b) == 0) {
        r = robots_parse(b.buf, b.len, o.agent, &err);
        if (!r)
            fprintf(stderr, "crawler robots: %s\n", crawl_strerror(err));
    }
    free(b.buf);
    if (!r)
        return CLI_EXIT_ERROR;
    int bad = 0;
    for (int i = first + 1; i < argc; i++)
        bad |= print_verdict(r, argv[i]) != 0;
    robots_free(r);
    if (fflush(stdout) != 0) {
        perror("crawler robots: stdout");
        return CLI_EXIT_ERROR;
    }
    return bad ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
