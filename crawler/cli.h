/*
 * cli.h -- what the crawler's subcommands share: option value parsing with
 * clear messages, URL-list reading (seeds files, `bloom add` input), and
 * opening the crawl's Redis (shared or embedded).
 *
 * Exit statuses of every subcommand: CLI_EXIT_*.
 */
#ifndef CRAWLER_CLI_H
#define CRAWLER_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rconn.h"

#define CRAWLER_VERSION "0.1.0"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1,   /* runtime failure (Redis down, I/O error, ...) */
    CLI_EXIT_USAGE = 2,   /* unknown option, bad value */
    CLI_EXIT_INVALID = 3, /* finished, but some input lines were rejected */
};

/* Subcommands: each parses its own argv (argv[0] is the subcommand name) and
 * returns a CLI_EXIT_* status. */
int cmd_crawl(int argc, char **argv);
int cmd_seed(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_bloom(int argc, char **argv);

/* Value parsers: 0 on success; on a bad value print
 * "crawler CMD: bad value 'S' for --OPT: expected ..." to stderr and return -1. */
int cli_u64(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
            uint64_t *out);
int cli_u32(const char *cmd, const char *opt, const char *s, uint32_t lo, uint32_t hi,
            uint32_t *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);
/* A crawl name: 1..FRONTIER_MAX_CRAWL_NAME chars of [A-Za-z0-9._-]. */
int cli_crawl_name(const char *cmd, const char *s);

/* Reads a URL list: one URL a line, '#' comments (whole line or after
 * whitespace) and blank lines ignored, surrounding whitespace trimmed.  Each
 * line is normalized (parser_url_normalize, max_len bytes, 0: default) and
 * passed to fn; an invalid one is reported on stderr as
 * "FNAME:LINE: invalid URL 'TEXT': reason" and skipped.  fn returns 0, or a
 * negative value to stop.  Returns the number of rejected lines, or -1 on an
 * I/O error or when fn stopped. */
typedef int (*cli_url_fn)(void *ud, const char *url, const char *line, unsigned long lineno);
long cli_read_urls(FILE *in, const char *fname, size_t max_len, cli_url_fn fn, void *ud);

/* Opens the crawl's Redis: --redis URL, else $REDIS_URL, else the embedded
 * server in data_dir.  NULL after printing the reason as "crawler CMD: ...". */
rconn_t *cli_redis_open(const char *cmd, const char *url, const char *data_dir);
/* A connection for this thread; NULL after printing the reason. */
struct redisContext *cli_redis_connect(const char *cmd, const rconn_t *r);

#endif
