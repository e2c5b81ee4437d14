/*
 * cli.h -- what the crawler's subcommands share: the option tables their
 * parsing, checks, defaults and --help are made from, option value parsing
 * with clear messages, URL-list reading (seeds files, `bloom add` input),
 * and opening the crawl's Redis (shared or embedded).
 *
 * Exit statuses of every subcommand: CLI_EXIT_*.
 */
#ifndef CRAWLER_CLI_H
#define CRAWLER_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "rconn.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1,   /* runtime failure (Redis down, I/O error, ...) */
    CLI_EXIT_USAGE = 2,   /* unknown option, bad value */
    CLI_EXIT_INVALID = 3, /* finished, but some input lines were rejected */
};

/* Subcommands: each parses its own argv (argv[0] is the subcommand name) and
 * returns a CLI_EXIT_* status; each declares its options in one table,
 * cli_table_<name> below (cli_cmd_t). */
int cmd_crawl(int argc, char **argv);
int cmd_seed(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_bloom(int argc, char **argv);
int cmd_robots(int argc, char **argv);   /* cmd_robots.c */
int cmd_url(int argc, char **argv);      /* cmd_url.c */
int cmd_neardups(int argc, char **argv); /* cmd_neardups.c */
int cmd_pause(int argc, char **argv);    /* cmd_control.c: control of a running crawl */
int cmd_resume(int argc, char **argv);
int cmd_drain(int argc, char **argv);
int cmd_limits(int argc, char **argv);
int cmd_block(int argc, char **argv);
int cmd_unblock(int argc, char **argv);

/* ---- `crawler crawl`'s options (crawl_options.c) -------------------------- */

/* Fills cfg with the defaults (every field: zero where no option sets it). */
void cli_crawl_defaults(crawl_config_t *cfg);
/* Parses `crawl` options (argv[0] is "crawl"), including --config FILE
 * (one "option value", "option=value" or "option" per line, '#' comment
 * lines, the same names with or without "--", no abbreviations; command-line
 * options win).  Strings point into argv or into storage kept until
 * cli_crawl_free().  Returns 0, 1 if --help was printed to stdout, or -1 after
 * printing a message for a bad option or value to stderr.  Not thread-safe
 * (getopt_long). */
int cli_crawl_parse(crawl_config_t *cfg, int argc, char **argv);
/* Frees what cli_crawl_parse kept from --config files; cfg may be NULL. */
void cli_crawl_free(crawl_config_t *cfg);
/* Prints the `crawl` help with every option and its default. */
void cli_crawl_usage(FILE *out);

/* ---- option tables ----------------------------------------------------------
 * Each subcommand declares every option once, in one array of cli_opt_t
 * (Redis's standardConfig static_configs[] is the model): its name, value
 * name, type, range, default, help text and the field of the command's
 * options struct it fills.  Defaults (cli_defaults), getopt_long's array
 * (cli_getopt_table), value checks (cli_set) and --help (cli_help) are all
 * made from that array; `crawl` also reads its --config file through it.
 * Entries are written with the CLI_OPT_* constructors below, which check the
 * field's C type at compile time; the optional members after "set after
 * the constructor" are added as designated initializers:
 *     {CLI_OPT_U32(my_t, "max-depth", "N", max_depth, 0, UINT32_MAX - 1,
 *                  MY_DEFAULT_MAX_DEPTH, "links deeper than N are dropped"),
 *      .dflt_doc = "unlimited"},
 */
typedef enum cli_type {
    CLI_TYPE_FLAG,   /* no value: the int field becomes 1 (default 0, "off") */
    CLI_TYPE_U32,    /* whole number in lo..hi: uint32_t field */
    CLI_TYPE_U64,    /* whole number in lo..hi: uint64_t field */
    CLI_TYPE_DOUBLE, /* number in dlo..dhi: double field */
    CLI_TYPE_STRING, /* const char * field, pointing at the value (argv, not copied) */
    CLI_TYPE_ENUM,   /* one of names[]: the (int-sized) enum field gets its index */
    CLI_TYPE_LIST,   /* repeatable string: appended to a const char *field[hi],
                        its size_t count at aux */
    CLI_TYPE_CONFIG, /* --config FILE: the command's own parser reads it (config.c) */
    CLI_TYPE_HELP,   /* --help, also -h: print the help */
} cli_type_t;

typedef struct cli_opt {
    const char *name;         /* long name, without "--" */
    const char *arg;          /* the value's name in --help, its unit where it has one
                                 (MS, BYTES); NULL: none (flags) or, for an enum, the
                                 names joined by '|' */
    cli_type_t type;          /* CLI_TYPE_* */
    size_t off;               /* offsetof the field it fills (not CONFIG, HELP) */
    size_t aux;               /* LIST: offsetof its size_t count */
    uint64_t lo, hi;          /* U32, U64: accepted range; LIST: most values */
    uint64_t dflt;            /* U32, U64: default; ENUM: index of the default in names */
    double dlo, dhi, ddflt;   /* DOUBLE: accepted range and default */
    const char *sdflt;        /* STRING: default (NULL: unset) */
    const char *const *names; /* ENUM: the accepted values, NULL-terminated */
    const char *help;         /* --help text; a '\n' continues it on an indented line */
    /* set after the constructor, where needed: */
    const char *dflt_doc;      /* --help's default where it is no value the option could
                                  take: an unset string, a sentinel outside lo..hi
                                  (e.g. "unlimited"), or a dflt_fn default */
    uint64_t (*dflt_fn)(void); /* U32, U64: default computed at run time, instead of dflt */
    int (*check)(const char *cmd, const char *opt, const char *v); /* STRING, LIST (each
                                  value): 0, or -1
                                  after printing "crawler CMD: bad value ... for OPT" */
    size_t given; /* CLI_GIVEN(T, f): an int field that cli_set makes 1 when
                     the option appears (several options may share it) */
    int optional; /* the value may be left out: "--watch", "--watch=5", or
                     "--watch 5" when the next argument is a number */
    int replaces; /* LIST: values from the command line replace those of a
                     --config file (cli_crawl_parse), not add to them */
} cli_opt_t;

/* A subcommand's option table. */
typedef struct cli_cmd {
    const char *name;      /* "seed": messages start "crawler seed: " */
    const char *usage;     /* --help text before the option list, ending "options:\n" */
    const cli_opt_t *opts; /* the table */
    size_t nopts;          /* at most CLI_MAX_OPTS */
} cli_cmd_t;

#define CLI_MAX_OPTS 80
#define CLI_OPT_VAL 0x100 /* getopt_long returns CLI_OPT_VAL + the table index */

/* offsetof(T, f), checking at compile time that f is a ctype. */
#define CLI_FIELD(T, f, ctype) (offsetof(T, f) + 0 * sizeof((ctype *){&((T *)0)->f}))
/* For .given: the int field f, plus one (0 means none). */
#define CLI_GIVEN(T, f) (CLI_FIELD(T, f, int) + 1)

#define CLI_OPT_FLAG(T, name_, field, help_)                                                       \
    .name = name_, .type = CLI_TYPE_FLAG, .off = CLI_FIELD(T, field, int), .help = help_
#define CLI_OPT_U32(T, name_, arg_, field, lo_, hi_, dflt_, help_)                                 \
    .name = name_, .arg = arg_, .type = CLI_TYPE_U32, .off = CLI_FIELD(T, field, uint32_t),        \
    .lo = lo_, .hi = hi_, .dflt = dflt_, .help = help_
#define CLI_OPT_U64(T, name_, arg_, field, lo_, hi_, dflt_, help_)                                 \
    .name = name_, .arg = arg_, .type = CLI_TYPE_U64, .off = CLI_FIELD(T, field, uint64_t),        \
    .lo = lo_, .hi = hi_, .dflt = dflt_, .help = help_
#define CLI_OPT_DOUBLE(T, name_, arg_, field, lo_, hi_, dflt_, help_)                              \
    .name = name_, .arg = arg_, .type = CLI_TYPE_DOUBLE, .off = CLI_FIELD(T, field, double),       \
    .dlo = lo_, .dhi = hi_, .ddflt = dflt_, .help = help_
#define CLI_OPT_STRING(T, name_, arg_, field, dflt_, help_)                                        \
    .name = name_, .arg = arg_, .type = CLI_TYPE_STRING, .off = CLI_FIELD(T, field, const char *), \
    .sdflt = dflt_, .help = help_
/* etype: the field's enum type, which must be int-sized; dflt_ its value. */
#define CLI_OPT_ENUM(T, name_, field, etype, names_, dflt_, help_)                                 \
    .name = name_, .type = CLI_TYPE_ENUM,                                                          \
    .off = CLI_FIELD(T, field, etype) + 0 * sizeof(char[sizeof(etype) == sizeof(int) ? 1 : -1]),   \
    .names = names_, .dflt = dflt_, .help = help_
/* field: an array of const char *, count: its size_t count. */
#define CLI_OPT_LIST(T, name_, arg_, field, count, help_)                                          \
    .name = name_, .arg = arg_, .type = CLI_TYPE_LIST,                                             \
    .off = offsetof(T, field) + 0 * sizeof((const char **){((T *)0)->field}),                      \
    .aux = CLI_FIELD(T, count, size_t),                                                            \
    .hi = sizeof(((T *)0)->field) / sizeof(((T *)0)->field[0]), .help = help_
#define CLI_OPT_CONFIG(name_, arg_, help_)                                                         \
    .name = name_, .arg = arg_, .type = CLI_TYPE_CONFIG, .help = help_
#define CLI_OPT_HELP(help_) .name = "help", .type = CLI_TYPE_HELP, .help = help_

/* The --redis and --data-dir entries of the subcommands that only open the
 * crawl's Redis (seed, stats, reset, bloom; `crawl` words its own). */
#define CLI_OPT_REDIS(T, field)                                                                    \
    CLI_OPT_LIST(T, "redis", "URL", field.url, field.n,                                            \
                 "shared Redis (redis://[:pw@]host[:port][/db], unix:///path, or a "               \
                 "Redis Cluster\nby nodes: redis://[:pw@]h1:p1,h2:p2,... or --redis once a "       \
                 "node)\n"),                                                                       \
        .dflt_doc = "$REDIS_URL, else an embedded redis-server in --data-dir",                     \
        .check = cli_check_redis_url
#define CLI_OPT_DATA_DIR(T, field)                                                                 \
    CLI_OPT_STRING(T, "data-dir", "DIR", field, RCONN_DEFAULT_DATA_DIR, "embedded Redis directory")

/* Sets every field of dst the table names to its default (list counts to 0,
 * .given fields to 0); other fields are left as they were. */
void cli_defaults(const cli_cmd_t *cmd, void *dst);
/* The entry named exactly name (no "--", no abbreviation), or NULL. */
const cli_opt_t *cli_find(const cli_cmd_t *cmd, const char *name);
/* Checks value v of option o and stores it in dst (v is kept, not copied;
 * it is ignored for flags and may be NULL for an optional value).  0, or -1
 * after printing why ("crawler CMD: bad value 'V' for --NAME: expected ...",
 * "too many --NAME options (max N)") to stderr; dst is then unchanged except
 * for o->given.  Does nothing for CONFIG and HELP entries. */
int cli_set(const cli_cmd_t *cmd, const cli_opt_t *o, void *dst, const char *v);
/* Fills lo[0..nopts] (terminated) for getopt_long: each entry returns
 * CLI_OPT_VAL + its index. */
void cli_getopt_table(const cli_cmd_t *cmd, struct option lo[CLI_MAX_OPTS + 1]);
/* The entry getopt_long's return value c stands for ('h': the HELP entry),
 * or NULL ('?', ':', anything else). */
const cli_opt_t *cli_getopt_opt(const cli_cmd_t *cmd, int c);
/* After getopt_long returned option o of cmd (argv: the command's): 0, or
 * -1 after printing why (and a pointer to --help) when the option was
 * spelled as a prefix of its name ("--time" for --timeout: getopt_long
 * takes one; a script's typo must not be read as another option), or when
 * an option of one value is given again (seen: the command's counts, zeroed
 * by the caller before the first call; a list option may repeat). */
int cli_check_given(const cli_cmd_t *cmd, const cli_opt_t *o, int argc, char **argv, int *seen);
/* The default as --help shows it ("off", "32", "none", o->dflt_doc ...),
 * written into buf if it must be formatted; NULL for HELP. */
const char *cli_default_text(const cli_opt_t *o, char *buf, size_t len);
/* Prints cmd->usage, then one line per option:
 * "  --NAME ARG   help [default: D]" (the default on a line of its own when
 * the help ends with '\n'). */
void cli_help(const cli_cmd_t *cmd, FILE *out);
/* The option tables of the subcommands (each in its cmd_*.c; crawl's in
 * crawl_options.c): `crawler --man` and the tests read them. */
extern const cli_cmd_t cli_table_crawl, cli_table_seed, cli_table_stats, cli_table_reset,
    cli_table_pause, cli_table_resume, cli_table_drain, cli_table_limits, cli_table_block,
    cli_table_unblock, cli_table_bloom, cli_table_robots, cli_table_url, cli_table_neardups;

/* One subcommand as `crawler --help` lists it (main.c's table). */
typedef struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;    /* its line in `crawler --help` */
    const cli_cmd_t *table; /* its options */
} cli_command_t;
/* `crawler --man` (man.c, not in the usage): prints the man page crawler(1)
 * in roff to stdout, made from the commands cmds[0..n) and their option
 * tables.  Returns a CLI_EXIT_* status. */
int cli_man(const cli_command_t *cmds, size_t n);
/* Prints "crawler CMD: see `crawler CMD --help`" to stderr. */
void cli_see_help(const char *cmd);
/* Parses argv (argv[0] is the subcommand; GNU order: options and other
 * arguments may mix) into dst, which the caller filled with cli_defaults().
 * Returns 0 with *first the index of the first other argument (argv is
 * permuted so that they come last), 1 after printing the help to stdout,
 * or -1 after printing why to stderr (an unknown option or missing value,
 * as "unknown option or missing value 'ARG'" and cli_see_help, or a bad
 * value as cli_set says).  Not thread-safe (getopt_long). */
int cli_parse(const cli_cmd_t *cmd, void *dst, int argc, char **argv, int *first);
/* A .check for --redis: the URL's syntax (rconn_check_url), so that a
 * malformed one is bad usage (exit 2), not a failed connect. */
int cli_check_redis_url(const char *cmd, const char *opt, const char *v);
/* A .check for crawl names (cli_crawl_name). */
int cli_check_crawl_name(const char *cmd, const char *opt, const char *v);

/* Value parsers: 0 on success; on a bad value print
 * "crawler CMD: bad value 'S' for --OPT: expected ..." to stderr and return -1.
 */
int cli_u64(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
            uint64_t *out);
int cli_u32(const char *cmd, const char *opt, const char *s, uint32_t lo, uint32_t hi,
            uint32_t *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);
/* A crawl name: 1..FRONTIER_MAX_CRAWL_NAME chars of [A-Za-z0-9._-]. */
int cli_crawl_name(const char *cmd, const char *s);

/* ---- line input ------------------------------------------------------------
 * Every line-oriented input (seeds files, `bloom add`, --config files) is
 * read with a bounded buffer: a line longer than the buffer is counted and
 * dropped as it is read, never held in memory, and a line with no end after
 * CLI_LINE_GIVE_UP bytes (/dev/zero, a binary file) ends the input with an
 * error instead of being read for ever.  There is no bound on the number of
 * lines: `zcat seeds.gz | crawler seed -` may stream any number. */
#define CLI_LINE_GIVE_UP (16u << 20) /* bytes of one line before the input is refused */
#define CLI_URL_LINE_SLACK                                                                         \
    4096 /* bytes a URL-list line may have besides its URL                                         \
            (blanks, a comment) */

enum {
    CLI_LINE_EOF = 0,     /* nothing left */
    CLI_LINE_OK = 1,      /* a line, in buf (without its '\n') */
    CLI_LINE_LONG = 2,    /* longer than cap - 1 bytes: skipped (buf holds its start) */
    CLI_LINE_ENDLESS = 3, /* no '\n' in CLI_LINE_GIVE_UP bytes: stop reading */
    CLI_LINE_ERROR = -1,  /* read error (errno) */
};
/* Reads one line of in into buf (cap >= 1 bytes, NUL-terminated; it may
 * contain NUL bytes: *len is the count kept).  *total: the line's length in
 * bytes, all of them read.  Returns a CLI_LINE_* value. */
int cli_read_line(FILE *in, char *buf, size_t cap, size_t *len, uint64_t *total);

/* A URL list: one URL a line, '#' comments (whole line or after whitespace)
 * and blank lines ignored, surrounding whitespace trimmed.  Each line is
 * normalized (parser_url_normalize, max_len bytes, 0: default); a rejected
 * line is reported on stderr and counted: "FNAME:LINE: invalid URL 'TEXT':
 * reason", a NUL byte, or a line longer than max_len + CLI_URL_LINE_SLACK
 * ("line of N bytes, longer than M: skipped", read in bounded memory).
 * Not thread-safe; in is borrowed. */
typedef struct cli_urls cli_urls_t;
/* NULL on out of memory. */
cli_urls_t *cli_urls_new(FILE *in, const char *fname, size_t max_len);
/* Accepts NULL. */
void cli_urls_free(cli_urls_t *r);
/* The next URL: 1 with *url (normalized; caller frees), 0 at the end, or
 * CRAWL_EFILE on a read error or an endless line (cli_urls_error says
 * which, naming the file and line; nothing is printed). */
int cli_urls_next(cli_urls_t *r, char **url);
/* Lines rejected so far. */
long cli_urls_rejected(const cli_urls_t *r);
/* From now on r reads a priority after a URL ("URL 0.9": a number 0..1,
 * as a sitemap's <priority>; a seeds file's), which cli_urls_priority then
 * gives; without it, such a line is one URL as before. */
void cli_urls_priorities(cli_urls_t *r);
/* The priority written after the last URL cli_urls_next gave, or -1 when
 * none was (or r does not read them). */
double cli_urls_priority(const cli_urls_t *r);
/* Lines read so far. */
unsigned long cli_urls_line(const cli_urls_t *r);
/* Why cli_urls_next returned CRAWL_EFILE ("" before); valid as long as r. */
const char *cli_urls_error(const cli_urls_t *r);

/* Reads a whole URL list (cli_urls_*), passing each URL to fn with the
 * trimmed line it came from; fn returns 0, or a negative value to stop.
 * Returns the number of rejected lines, or -1 on an I/O error or an endless
 * line (printed), out of memory, or when fn stopped. */
typedef int (*cli_url_fn)(void *ud, const char *url, const char *line, unsigned long lineno);
long cli_read_urls(FILE *in, const char *fname, size_t max_len, cli_url_fn fn, void *ud);

/* Opens the crawl's Redis: --redis URLs, else $REDIS_URL, else the embedded
 * server in data_dir (embed: whether the one a running crawler keeps there
 * is used: rconn_embed_t); on a Redis Cluster, connections go to the owner
 * of route's hash slot (rconn_open).  NULL after printing the reason as
 * "crawler CMD: ...". */
rconn_t *cli_redis_open(const char *cmd, const rconn_specs_t *redis, rconn_embed_t embed,
                        const char *data_dir, const char *route);
/* A connection for this thread; NULL after printing the reason. */
struct redisContext *cli_redis_connect(const char *cmd, const rconn_t *r);
/* A link to r (rconn.h), connected, for a frontier handle; NULL after
 * printing why (as cli_redis_connect).  The caller frees it with
 * rconn_link_free after the handle. */
rconn_link_t *cli_link(const char *cmd, const rconn_t *r);
/* s as a JSON string (quoted, escaped) to o. */
void cli_json_str(FILE *o, const char *s);
/* The crawl's admission settings (frontier_read_settings: kv[0..n), field,
 * value, ...) for stats and limits: one text line ("  settings (fixed when
 * the crawl was created): --scope host, ..."; a list's values joined with
 * ','), or the JSON member ', "settings": {...}'; nothing when n is 0. */
void cli_settings_text(FILE *o, char *const *kv, size_t n);
void cli_settings_json(FILE *o, char *const *kv, size_t n);

/* The shards of a crawl created without --shards: CLI_CLUSTER_SHARDS on a
 * Redis Cluster (spread over its masters), else 1. */
#define CLI_CLUSTER_SHARDS 32
unsigned cli_default_shards(const rconn_t *r);
/* The shard count for opening crawl on rc: `asked` if not 0, else the
 * crawl's own, else cli_default_shards; *quota: 1 if the crawl keeps a
 * page limit over its shards (frontier/quota.c), -1 if it exists without,
 * 0 if it is new.  0, or the error (printed as "crawler CMD: ..."). */
int cli_crawl_shards(const char *cmd, struct redisContext *rc, const rconn_t *r, const char *crawl,
                     unsigned asked, unsigned *out, int *quota);

/* ---- what the commands on a crawl's frontier share (seed, stats, reset) -- */

/* Their common options: .co of each command's options struct. */
typedef struct cli_common {
    rconn_specs_t redis;
    const char *crawl;
    const char *data_dir;
} cli_common_t;

/* The table entries of cli_common_t, last in each table; crawl_dflt is
 * --crawl's default, crawl_doc what --help says when it is NULL. */
/* clang-format off */
#define CLI_COMMON_OPTS(T, crawl_dflt, crawl_doc)                                                  \
    {CLI_OPT_REDIS(T, co.redis)},                                                                  \
    {CLI_OPT_STRING(T, "crawl", "NAME", co.crawl, crawl_dflt,                                      \
                    "crawl name; keys live under " FRONTIER_KEY_PREFIX_HELP),                        \
     .check = cli_check_crawl_name, .dflt_doc = crawl_doc},                                        \
    {CLI_OPT_DATA_DIR(T, co.data_dir)},                                                            \
    {CLI_OPT_HELP("this help")},
/* clang-format on */

/* cli_defaults() then cli_parse() of o, the result as an exit status, or
 * -1 to go on (*first: the first other argument). */
int cli_parse_cmd(const cli_cmd_t *cmd, void *o, int argc, char **argv, int *first);
/* Opens co's Redis (joining the embedded server of a crawler running in
 * --data-dir) and a connection *rc routed to the crawl's keys.  NULL
 * (message printed) on failure; a connect that fails is one too, unless
 * may_wait (then *rc is NULL, the message printed, and the caller connects
 * later). */
rconn_t *cli_open_crawl(const char *cmd, const cli_common_t *co, struct redisContext **rc,
                        int may_wait);
/* Closes what cli_open_crawl opened; either may be NULL. */
void cli_close_crawl(rconn_t *r, struct redisContext *rc);

#endif
