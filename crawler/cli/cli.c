/*
 * cli.c -- what every subcommand shares: the option-table machinery, option
 * values, URL-list input and Redis opening.  Messages go to stderr, prefixed
 * "crawler CMD:".
 *
 * DESIGN: an option table (cli_cmd_t, see cli.h) is the only place an option
 * is spelled; this file turns it into defaults, getopt_long's array, checked
 * values and the --help text, by the entry's type, writing through the
 * entry's offsetof into the caller's options struct.  It keeps no state of
 * its own (getopt_long's globals excepted).
 */
#include "cli.h"

#include <assert.h>
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
    /* digits only: strtoull would take " 5" or "+5" too */
    unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
    if (!(*s >= '0' && *s <= '9') || errno || *end || v < lo || v > hi) {
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
    if (*s == '\0' || isspace((unsigned char)*s) || errno || *end || !isfinite(v) || v < lo ||
        v > hi) {
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

int cli_check_crawl_name(const char *cmd, const char *opt, const char *v)
{
    (void)opt;
    return cli_crawl_name(cmd, v);
}

int cli_check_redis_url(const char *cmd, const char *opt, const char *v)
{
    char err[512];
    if (rconn_check_url(v, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "crawler %s: bad value for %s: %s\n", cmd, opt, err);
    return -1;
}

/* ---- option tables ----------------------------------------------------------- */

#define FIELD(dst, off, type) ((type *)(void *)((char *)(dst) + (off)))

void cli_defaults(const cli_cmd_t *cmd, void *dst)
{
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        uint64_t d = o->dflt_fn ? o->dflt_fn() : o->dflt;
        int e = (int)d;
        switch (o->type) {
        case CLI_TYPE_FLAG:
            *FIELD(dst, o->off, int) = 0;
            break;
        case CLI_TYPE_U32:
            *FIELD(dst, o->off, uint32_t) = (uint32_t)d;
            break;
        case CLI_TYPE_U64:
            *FIELD(dst, o->off, uint64_t) = d;
            break;
        case CLI_TYPE_DOUBLE:
            *FIELD(dst, o->off, double) = o->ddflt;
            break;
        case CLI_TYPE_STRING:
            *FIELD(dst, o->off, const char *) = o->sdflt;
            break;
        case CLI_TYPE_ENUM: /* an int-sized enum (CLI_OPT_ENUM checks) */
            memcpy(FIELD(dst, o->off, char), &e, sizeof e);
            break;
        case CLI_TYPE_LIST:
            *FIELD(dst, o->aux, size_t) = 0;
            break;
        case CLI_TYPE_CONFIG:
        case CLI_TYPE_HELP:
            break;
        }
        if (o->given)
            *FIELD(dst, o->given - 1, int) = 0;
    }
}

const cli_opt_t *cli_find(const cli_cmd_t *cmd, const char *name)
{
    for (size_t i = 0; i < cmd->nopts; i++)
        if (!strcmp(cmd->opts[i].name, name))
            return &cmd->opts[i];
    return NULL;
}

/* "a, b or c" from an enum's names. */
static void join_names(const cli_opt_t *o, const char *sep, const char *last, char *buf, size_t len)
{
    size_t n = 0, used = 0;
    while (o->names[n])
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? last
                                      : sep,
                         o->names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int set_enum(const cli_cmd_t *cmd, const cli_opt_t *o, const char *opt, void *dst,
                    const char *v)
{
    for (int i = 0; o->names[i]; i++)
        if (!strcmp(o->names[i], v)) {
            memcpy(FIELD(dst, o->off, char), &i, sizeof i);
            return 0;
        }
    char names[256];
    join_names(o, ", ", " or ", names, sizeof names);
    fprintf(stderr, "crawler %s: bad value '%s' for %s: expected %s\n", cmd->name, v, opt, names);
    return -1;
}

static int push(const cli_cmd_t *cmd, const cli_opt_t *o, const char *opt, void *dst, const char *v)
{
    size_t *n = FIELD(dst, o->aux, size_t);
    if (o->check && o->check(cmd->name, opt, v) < 0)
        return -1;
    if (*n >= o->hi) {
        fprintf(stderr, "crawler %s: too many %s options (max %llu)\n", cmd->name, opt,
                (unsigned long long)o->hi);
        return -1;
    }
    FIELD(dst, o->off, const char *)[(*n)++] = v;
    return 0;
}

static int empty(const cli_cmd_t *cmd, const char *opt)
{
    fprintf(stderr, "crawler %s: bad value '' for %s: empty\n", cmd->name, opt);
    return -1;
}

int cli_set(const cli_cmd_t *cmd, const cli_opt_t *o, void *dst, const char *v)
{
    char opt[128];
    snprintf(opt, sizeof opt, "--%s", o->name);
    if (o->given)
        *FIELD(dst, o->given - 1, int) = 1;
    if (o->type == CLI_TYPE_FLAG) {
        *FIELD(dst, o->off, int) = 1;
        return 0;
    }
    if (o->type == CLI_TYPE_CONFIG || o->type == CLI_TYPE_HELP || (!v && o->optional))
        return 0;
    assert(v); /* getopt_long and the config reader never pass a missing value */
    switch (o->type) {
    case CLI_TYPE_U32:
        return cli_u32(cmd->name, opt, v, (uint32_t)o->lo, (uint32_t)o->hi,
                       FIELD(dst, o->off, uint32_t));
    case CLI_TYPE_U64:
        return cli_u64(cmd->name, opt, v, o->lo, o->hi, FIELD(dst, o->off, uint64_t));
    case CLI_TYPE_DOUBLE:
        return cli_double(cmd->name, opt, v, o->dlo, o->dhi, FIELD(dst, o->off, double));
    case CLI_TYPE_STRING:
        if (!*v)
            return empty(cmd, opt);
        if (o->check && o->check(cmd->name, opt, v) < 0)
            return -1;
        *FIELD(dst, o->off, const char *) = v;
        return 0;
    case CLI_TYPE_ENUM:
        return set_enum(cmd, o, opt, dst, v);
    case CLI_TYPE_LIST:
        return *v ? push(cmd, o, opt, dst, v) : empty(cmd, opt);
    default:
        return 0;
    }
}

void cli_getopt_table(const cli_cmd_t *cmd, struct option lo[CLI_MAX_OPTS + 1])
{
    assert(cmd->nopts <= CLI_MAX_OPTS);
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        int has = o->type == CLI_TYPE_FLAG || o->type == CLI_TYPE_HELP ? no_argument
                  : o->optional                                        ? optional_argument
                                                                       : required_argument;
        lo[i] = (struct option){o->name, has, NULL, CLI_OPT_VAL + (int)i};
    }
    lo[cmd->nopts] = (struct option){0};
}

const cli_opt_t *cli_getopt_opt(const cli_cmd_t *cmd, int c)
{
    if (c >= CLI_OPT_VAL && (size_t)(c - CLI_OPT_VAL) < cmd->nopts)
        return &cmd->opts[c - CLI_OPT_VAL];
    for (size_t i = 0; c == 'h' && i < cmd->nopts; i++)
        if (cmd->opts[i].type == CLI_TYPE_HELP)
            return &cmd->opts[i];
    return NULL;
}

int cli_check_given(const cli_cmd_t *cmd, const cli_opt_t *o, int argc, char **argv, int *seen)
{
    /* the argument that named it: the one before its value when the value
     * was the next argument, else the last one read */
    int at = optarg && optind >= 2 && optarg == argv[optind - 1] ? optind - 2 : optind - 1;
    const char *tok = at >= 1 && at < argc && !strncmp(argv[at], "--", 2) ? argv[at] + 2 : NULL;
    if (tok) {
        size_t n = strcspn(tok, "=");
        if (n != strlen(o->name) || strncmp(tok, o->name, n)) {
            fprintf(stderr, "crawler %s: unknown option '--%.*s' (did you mean --%s?)\n", cmd->name,
                    (int)n, tok, o->name);
            cli_see_help(cmd->name);
            return -1;
        }
    }
    size_t k = (size_t)(o - cmd->opts);
    int once = o->type == CLI_TYPE_U32 || o->type == CLI_TYPE_U64 || o->type == CLI_TYPE_DOUBLE ||
               o->type == CLI_TYPE_STRING || o->type == CLI_TYPE_ENUM;
    if (k < CLI_MAX_OPTS && once && seen[k]++) {
        fprintf(stderr, "crawler %s: --%s given twice: it takes one value\n", cmd->name, o->name);
        return -1;
    }
    return 0;
}

const char *cli_default_text(const cli_opt_t *o, char *buf, size_t len)
{
    if (o->type == CLI_TYPE_HELP)
        return NULL;
    if (o->dflt_doc)
        return o->dflt_doc;
    switch (o->type) {
    case CLI_TYPE_FLAG:
        return "off";
    case CLI_TYPE_U32:
    case CLI_TYPE_U64:
        snprintf(buf, len, "%llu", (unsigned long long)o->dflt);
        return buf;
    case CLI_TYPE_DOUBLE:
        snprintf(buf, len, "%g", o->ddflt);
        return buf;
    case CLI_TYPE_STRING:
        return o->sdflt ? o->sdflt : "none";
    case CLI_TYPE_ENUM:
        return o->names[o->dflt];
    default: /* LIST, CONFIG */
        return "none";
    }
}

#define HELP_COLUMN 28 /* width of "--NAME ARG" in --help */

void cli_help(const cli_cmd_t *cmd, FILE *out)
{
    fputs(cmd->usage, out);
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        char names[256], left[384], dbuf[64];
        const char *arg = o->arg;
        if (!arg && o->type == CLI_TYPE_ENUM) {
            join_names(o, "|", "|", names, sizeof names);
            arg = names;
        }
        snprintf(left, sizeof left, "--%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
        fprintf(out, "  %-*s ", HELP_COLUMN, left);
        const char *d = cli_default_text(o, dbuf, sizeof dbuf);
        size_t n = strlen(o->help);
        int own_line = n && o->help[n - 1] == '\n'; /* the default goes on a line of its own */
        for (const char *p = o->help; *p; p++) {
            fputc(*p, out);
            if (*p == '\n' && (p[1] || d))
                fprintf(out, "%*s", HELP_COLUMN + 3, "");
        }
        if (d)
            fprintf(out, "%s[default: %s]", own_line ? "" : " ", d);
        if (d || !own_line)
            fputc('\n', out);
    }
}

void cli_see_help(const char *cmd)
{
    fprintf(stderr, "crawler %s: see `crawler %s --help`\n", cmd, cmd);
}

/* An optional value given as the next argument ("--watch 5"): taken when
 * that argument is a number. */
static const char *next_number(int argc, char **argv)
{
    if (optind >= argc || argv[optind][0] == '-')
        return NULL;
    char *end;
    strtod(argv[optind], &end);
    return *end == '\0' ? argv[optind++] : NULL;
}

int cli_parse(const cli_cmd_t *cmd, void *dst, int argc, char **argv, int *first)
{
    struct option lo[CLI_MAX_OPTS + 1];
    cli_getopt_table(cmd, lo);
    optind = 0;
    int c, seen[CLI_MAX_OPTS] = {0};
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        const cli_opt_t *o = cli_getopt_opt(cmd, c);
        if (!o) {
            fprintf(stderr, "crawler %s: unknown option or missing value '%s'\n", cmd->name,
                    argv[optind - 1]);
            cli_see_help(cmd->name);
            return -1;
        }
        if (cli_check_given(cmd, o, argc, argv, seen) < 0)
            return -1;
        if (o->type == CLI_TYPE_HELP) {
            cli_help(cmd, stdout);
            return 1;
        }
        const char *v = optarg;
        if (o->optional && !v)
            v = next_number(argc, argv);
        if (cli_set(cmd, o, dst, v) < 0)
            return -1;
    }
    *first = optind;
    return 0;
}

/* ---- URL lists ----------------------------------------------------------------- */

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

int cli_read_line(FILE *in, char *buf, size_t cap, size_t *len, uint64_t *total)
{
    size_t n = 0;
    uint64_t all = 0;
    int c = EOF;
    flockfile(in);
    while (all < CLI_LINE_GIVE_UP && (c = getc_unlocked(in)) != EOF && c != '\n') {
        if (n + 1 < cap)
            buf[n++] = (char)c; /* past cap - 1 bytes, counted and dropped */
        all++;
    }
    int err = c == EOF && ferror(in);
    funlockfile(in);
    buf[n] = '\0';
    *len = n;
    *total = all;
    if (err)
        return CLI_LINE_ERROR;
    if (c == EOF && all == 0)
        return CLI_LINE_EOF;
    if (all >= CLI_LINE_GIVE_UP)
        return CLI_LINE_ENDLESS;
    return all == n ? CLI_LINE_OK : CLI_LINE_LONG;
}

struct cli_urls {
    FILE *in;
    const char *fname;
    size_t max_len;
    unsigned long lineno;
    long bad;
    const char *text; /* the last line, trimmed (in buf) */
    double priority;  /* the last URL's priority (a trailing number 0..1), -1: none */
    int priorities;   /* read a trailing priority (cli_urls_priorities): seeds files only */
    char err[512];    /* why the list could not be read to its end */
    size_t cap;
    char buf[]; /* cap bytes: a line of up to cap - 1 */
};

cli_urls_t *cli_urls_new(FILE *in, const char *fname, size_t max_len)
{
    size_t ml = max_len ? max_len : PARSER_DEFAULT_MAX_URL_LENGTH;
    size_t cap = ml + CLI_URL_LINE_SLACK + 1;
    cli_urls_t *r = malloc(sizeof *r + cap);
    if (r)
        *r = (cli_urls_t){.in = in, .fname = fname, .max_len = max_len, .cap = cap};
    return r;
}

void cli_urls_free(cli_urls_t *r)
{
    free(r);
}

unsigned long cli_urls_line(const cli_urls_t *r)
{
    return r->lineno;
}

void cli_urls_priorities(cli_urls_t *r)
{
    r->priorities = 1;
}

double cli_urls_priority(const cli_urls_t *r)
{
    return r->priority;
}

long cli_urls_rejected(const cli_urls_t *r)
{
    return r->bad;
}

const char *cli_urls_error(const cli_urls_t *r)
{
    return r->err;
}

/* One line read into r->buf: its URL normalized into *url, or 0 (blank,
 * comment, or rejected and reported). */
static int url_of_line(cli_urls_t *r, size_t got, char **url)
{
    if (memchr(r->buf, '\0', got)) {
        fprintf(stderr, "%s:%lu: invalid line: contains a NUL byte\n", r->fname, r->lineno);
        r->bad++;
        return 0;
    }
    char *s = clean_line(r->buf);
    r->text = s;
    if (!*s)
        return 0;
    /* "URL 0.9": a priority, as a sitemap's (0..1), after the URL */
    r->priority = -1;
    char *sp = r->priorities ? strrchr(s, ' ') : NULL,
         *tab = r->priorities ? strrchr(s, '\t') : NULL;
    if (tab && (!sp || tab > sp))
        sp = tab;
    if (sp) {
        char *end;
        double p = strtod(sp + 1, &end);
        if (end != sp + 1 && !*end && !(p >= 0 && p <= 1)) { /* a number, not a priority */
            fprintf(stderr, "%s:%lu: invalid priority '%s': a number from 0 to 1\n", r->fname,
                    r->lineno, sp + 1);
            r->bad++;
            return 0;
        }
        if (end != sp + 1 && !*end) {
            r->priority = p;
            while (sp > s && isspace((unsigned char)sp[-1]))
                sp--;
            *sp = '\0';
        }
    }
    int rc = parser_url_normalize(NULL, s, r->max_len, url);
    if (rc < 0) {
        fprintf(stderr, "%s:%lu: invalid URL '%.200s': %s\n", r->fname, r->lineno, s,
                crawl_strerror(rc));
        r->bad++;
        return 0;
    }
    return 1;
}

int cli_urls_next(cli_urls_t *r, char **url)
{
    *url = NULL;
    for (;;) {
        size_t got;
        uint64_t total;
        int st = cli_read_line(r->in, r->buf, r->cap, &got, &total);
        if (st == CLI_LINE_EOF)
            return 0;
        r->lineno++;
        if (st == CLI_LINE_ERROR) {
            snprintf(r->err, sizeof r->err, "%s:%lu: read error: %s", r->fname, r->lineno,
                     strerror(errno));
            return CRAWL_EFILE;
        }
        if (st == CLI_LINE_ENDLESS) {
            snprintf(r->err, sizeof r->err,
                     "%s:%lu: no end of line in %u MiB: not a list of URLs; stopped", r->fname,
                     r->lineno, (unsigned)(CLI_LINE_GIVE_UP >> 20));
            return CRAWL_EFILE;
        }
        if (st == CLI_LINE_LONG) {
            fprintf(stderr,
                    "%s:%lu: line of %llu bytes, longer than %zu (--max-url-length + %d): "
                    "skipped\n",
                    r->fname, r->lineno, (unsigned long long)total, r->cap - 1, CLI_URL_LINE_SLACK);
            r->bad++;
            continue;
        }
        if (r->lineno == 1 && got >= 3 && !memcmp(r->buf, "\xEF\xBB\xBF", 3)) {
            memmove(r->buf, r->buf + 3, got - 3 + 1); /* a UTF-8 byte-order mark: not the URL's */
            got -= 3;
        }
        if (url_of_line(r, got, url))
            return 1;
    }
}

long cli_read_urls(FILE *in, const char *fname, size_t max_len, cli_url_fn fn, void *ud)
{
    cli_urls_t *r = cli_urls_new(in, fname, max_len);
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", fname);
        return -1;
    }
    char *url;
    int rc;
    while ((rc = cli_urls_next(r, &url)) > 0) {
        rc = fn(ud, url, r->text, r->lineno);
        free(url);
        if (rc < 0)
            break;
    }
    if (rc == CRAWL_EFILE)
        fprintf(stderr, "%s\n", r->err);
    long bad = rc < 0 ? -1 : r->bad;
    cli_urls_free(r);
    return bad;
}

rconn_t *cli_redis_open(const char *cmd, const rconn_specs_t *redis, rconn_embed_t embed,
                        const char *data_dir, const char *route)
{
    char err[512];
    rconn_specs_t s = *redis;
    s.embed = embed;
    rconn_t *r = rconn_open(&s, data_dir, route, err, sizeof err);
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

rconn_link_t *cli_link(const char *cmd, const rconn_t *r)
{
    rconn_link_t *l = rconn_link_new(r);
    if (!l)
        fprintf(stderr, "crawler %s: out of memory\n", cmd);
    else if (rconn_link_connect(l, 0) < 0) {
        fprintf(stderr, "crawler %s: %s\n", cmd, rconn_link_error(l));
        rconn_link_free(l);
        l = NULL;
    }
    return l;
}

void cli_json_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(o, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(o, "\\u%04x", *p);
        else
            fputc(*p, o);
    }
    fputc('"', o);
}

void cli_settings_text(FILE *o, char *const *kv, size_t n)
{
    if (n < 2)
        return;
    fprintf(o, "  settings (fixed when the crawl was created):");
    for (size_t i = 0; i + 1 < n; i += 2) {
        fprintf(o, "%s --%s ", i ? "," : "", kv[i]);
        if (!*kv[i + 1])
            fprintf(o, "(none)");
        for (const char *p = kv[i + 1]; *p; p++)
            fputc(*p == '\n' ? ',' : *p, o);
    }
    fputc('\n', o);
}

void cli_settings_json(FILE *o, char *const *kv, size_t n)
{
    if (n < 2)
        return;
    fprintf(o, ", \"settings\": {");
    for (size_t i = 0; i + 1 < n; i += 2) {
        fprintf(o, "%s", i ? ", " : "");
        cli_json_str(o, kv[i]);
        fprintf(o, ": ");
        cli_json_str(o, kv[i + 1]);
    }
    fprintf(o, "}");
}

unsigned cli_default_shards(const rconn_t *r)
{
    return r && rconn_is_cluster(r) ? CLI_CLUSTER_SHARDS : 1;
}

int cli_crawl_shards(const char *cmd, struct redisContext *rc, const rconn_t *r, const char *crawl,
                     unsigned asked, unsigned *out, int *quota)
{
    unsigned have = 0;
    int code = frontier_crawl_shards_quota(rc, crawl, &have, quota);
    if (code < 0) {
        fprintf(stderr, "crawler %s: reading the crawl's shard count: %s\n", cmd,
                crawl_strerror(code));
        return code;
    }
    if (!have) /* a new crawl */
        *quota = 0;
    else if (!*quota)
        *quota = -1; /* it exists, without a page limit kept over shards */
    *out = asked ? asked : have ? have : cli_default_shards(r);
    return 0;
}

/* ---- what the commands on a crawl's frontier share ---------------------- */

int cli_parse_cmd(const cli_cmd_t *cmd, void *o, int argc, char **argv, int *first)
{
    cli_defaults(cmd, o);
    int p = cli_parse(cmd, o, argc, argv, first);
    return p == 0 ? -1 : p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

rconn_t *cli_open_crawl(const char *cmd, const cli_common_t *co, redisContext **rc, int may_wait)
{
    *rc = NULL;
    char route[FRONTIER_MAX_BLOOM_NAME];
    if (frontier_bloom_name(co->crawl ? co->crawl : FRONTIER_DEFAULT_CRAWL, route, sizeof route) <
        0)
        return NULL;
    rconn_t *r = cli_redis_open(cmd, &co->redis, RCONN_EMBED_JOIN, co->data_dir, route);
    if (r)
        *rc = cli_redis_connect(cmd, r);
    if (r && !*rc && !may_wait) {
        rconn_close(r);
        r = NULL;
    }
    return r;
}

void cli_close_crawl(rconn_t *r, redisContext *rc)
{
    if (rc)
        redisFree(rc);
    rconn_close(r);
}
