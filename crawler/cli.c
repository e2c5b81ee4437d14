/*
 * cli.c -- option values, URL-list input and Redis opening shared by every
 * subcommand.  Messages go to stderr, prefixed "crawler CMD:".
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "parser.h"

int cli_u64(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
            uint64_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s))
        s++;
    unsigned long long v = *s == '-' ? 0 : strtoull(s, &end, 10);
    if (*s == '-' || *s == '\0' || errno || *end || v < lo || v > hi) {
        fprintf(stderr,
                "crawler %s: bad value '%s' for %s: expected a whole number from %llu "
                "to %llu\n",
                cmd, s, opt, (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_u32(const char *cmd, const char *opt, const char *s, uint32_t lo, uint32_t hi,
            uint32_t *out)
{
    uint64_t v;
    if (cli_u64(cmd, opt, s, lo, hi, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || errno || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "crawler %s: bad value '%s' for %s: expected a number from %g to %g\n", cmd,
                s, opt, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_crawl_name(const char *cmd, const char *s)
{
    size_t n = strlen(s);
    int ok = n > 0 && n <= FRONTIER_MAX_CRAWL_NAME;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
    if (!ok)
        fprintf(stderr,
                "crawler %s: bad crawl name '%s': 1 to %d characters of A-Z a-z 0-9 . _ -\n", cmd,
                s, FRONTIER_MAX_CRAWL_NAME);
    return ok ? 0 : -1;
}

/* Trims whitespace and strips a comment; returns the start (line modified). */
static char *clean_line(char *line)
{
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '#')
        return s + strlen(s);
    for (char *p = s; *p; p++)
        if (*p == '#' && p > s && isspace((unsigned char)p[-1])) {
            *p = '\0';
            break;
        }
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

long cli_read_urls(FILE *in, const char *fname, size_t max_len, cli_url_fn fn, void *ud)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned long lineno = 0;
    long bad = 0;
    while ((got = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)got)) {
            fprintf(stderr, "%s:%lu: invalid line: contains a NUL byte\n", fname, lineno);
            bad++;
            continue;
        }
        char *s = clean_line(line);
        if (!*s)
            continue;
        char *url = NULL;
        int rc = parser_url_normalize(NULL, s, max_len, &url);
        if (rc < 0) {
            fprintf(stderr, "%s:%lu: invalid URL '%.200s': %s\n", fname, lineno, s,
                    parser_strerror(rc));
            bad++;
            continue;
        }
        rc = fn(ud, url, s, lineno);
        free(url);
        if (rc < 0) {
            free(line);
            return -1;
        }
    }
    int ioerr = ferror(in);
    free(line);
    if (ioerr) {
        fprintf(stderr, "%s: read error: %s\n", fname, strerror(errno));
        return -1;
    }
    return bad;
}

rconn_t *cli_redis_open(const char *cmd, const char *url, const char *data_dir)
{
    char err[512];
    rconn_t *r = rconn_open(url, data_dir, err, sizeof err);
    if (!r)
        fprintf(stderr, "crawler %s: %s\n", cmd, err);
    return r;
}

redisContext *cli_redis_connect(const char *cmd, const rconn_t *r)
{
    char err[512];
    redisContext *c = rconn_connect(r, err, sizeof err);
    if (!c)
        fprintf(stderr, "crawler %s: %s\n", cmd, err);
    return c;
}
