/*
 * cmd_neardups.c -- `crawler near-dups [--distance N] FILE...`: the records
 * of JSON-lines files (--text's, or --out's with "simhash") grouped by the
 * SimHash of their text: records whose SimHashes differ in at most N bits
 * are one group, chains of them too (text_dup_groups: near-linear time).
 *
 * DESIGN: every line's "url" and "simhash" are read (lines without a
 * simhash are skipped and counted), kept as one array of hashes and one of
 * URLs, grouped, and each group of two or more printed as one JSON line, in
 * the order of its first record:
 *   {"size":3,"simhash":"…","urls":["…","…","…"]}
 * (simhash: the first record's).  A summary goes to stderr.  Exit status: 0,
 * 1 when a file cannot be read, 2 on a usage error.  Memory: the URLs and
 * about 40 bytes a record.  Touches no network and no Redis.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"

typedef struct nopts {
    uint32_t distance;
} nopts_t;

static const cli_opt_t OPTS[] = {
    {CLI_OPT_U32(nopts_t, "distance", "N", distance, 0, TEXT_MAX_DUP_DISTANCE,
                 TEXT_DEFAULT_DUP_DISTANCE,
                 "records whose SimHashes differ in at most N bits are near-duplicates")},
    {CLI_OPT_HELP("this help")},
};

const cli_cmd_t cli_table_neardups = {
    .name = "near-dups",
    .usage = "usage: crawler near-dups [--distance N] FILE...\n"
             "\n"
             "Groups the records of JSON-lines files that carry a \"simhash\" (crawl --text, or\n"
             "crawl --out with --text) by near-duplicate text, and prints each group of two or\n"
             "more as one JSON line: its size, the first record's simhash, and its URLs.\n"
             "FILE '-' is standard input.\n"
             "\n"
             "options:\n",
    .opts = OPTS,
    .nopts = sizeof OPTS / sizeof OPTS[0],
};

typedef struct recs {
    uint64_t *hash;
    char **url;
    size_t n, cap;
    size_t skipped; /* lines without a simhash or a url */
} recs_t;

/* The JSON string value at p (after its opening quote), unescaped into a
 * new string (\uXXXX kept as written but for the escapes JSON needs);
 * NULL on a malformed one or out of memory. */
static char *json_string_at(const char *p)
{
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    for (; s && *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
            if (*p == 'u') { /* kept escaped: a URL has none but for control bytes */
                if (n + 2 > cap && !(s = realloc(s, cap *= 2)))
                    return NULL;
                s[n++] = '\\';
            }
            if (!*p)
                break;
        }
        if (n + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        s[n++] = c;
    }
    if (!s || *p != '"') {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

/* Reads one line into r: 0 (kept or skipped), or -1 out of memory. */
static int take_line(recs_t *r, const char *line)
{
    const char *h = strstr(line, "\"simhash\":\"");
    const char *u = strstr(line, "\"url\":\"");
    char *end = NULL;
    uint64_t v = h ? strtoull(h + 11, &end, 16) : 0;
    if (!h || !u || !end || end != h + 11 + 16 || *end != '"') {
        r->skipped++;
        return 0;
    }
    char *url = json_string_at(u + 7);
    if (!url) {
        r->skipped++;
        return 0;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1024;
        uint64_t *nh = realloc(r->hash, cap * sizeof *nh);
        if (nh)
            r->hash = nh;
        char **nu = nh ? realloc(r->url, cap * sizeof *nu) : NULL;
        if (!nu) {
            free(url);
            return -1;
        }
        r->url = nu;
        r->cap = cap;
    }
    r->hash[r->n] = v;
    r->url[r->n++] = url;
    return 0;
}

static int read_file(recs_t *r, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "crawler near-dups: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0)
        if (take_line(r, line) < 0) {
            fprintf(stderr, "crawler near-dups: out of memory\n");
            rc = 1;
        }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "crawler near-dups: %s: %s\n", path, strerror(errno));
        rc = 1;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* A JSON string of s on stdout (s came from JSON: only " and \ to escape). */
static void put_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || (*s == '\\' && s[1] != 'u'))
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

/* Prints every group of two or more, in the order of its first record. */
static size_t print_groups(const recs_t *r, const size_t *group)
{
    size_t *size = calloc(r->n ? r->n : 1, sizeof *size), groups = 0;
    size_t *next = malloc((r->n ? r->n : 1) * sizeof *next), *last = NULL;
    last = malloc((r->n ? r->n : 1) * sizeof *last);
    if (!size || !next || !last) {
        free(size);
        free(next);
        free(last);
        return (size_t)-1;
    }
    for (size_t i = 0; i < r->n; i++) { /* each group's members chained in order */
        size_t g = group[i];
        next[i] = (size_t)-1;
        if (size[g]++)
            next[last[g]] = i;
        last[g] = i;
    }
    for (size_t g = 0; g < r->n; g++) {
        if (group[g] != g || size[g] < 2)
            continue;
        groups++;
        printf("{\"size\":%zu,\"simhash\":\"%016llx\",\"urls\":[", size[g],
               (unsigned long long)r->hash[g]);
        for (size_t i = g, k = 0; i != (size_t)-1; i = next[i], k++) {
            if (k)
                putchar(',');
            put_str(r->url[i]);
        }
        printf("]}\n");
    }
    free(size);
    free(next);
    free(last);
    return groups;
}

int cmd_neardups(int argc, char **argv)
{
    nopts_t o = {0};
    int first;
    cli_defaults(&cli_table_neardups, &o);
    int p = cli_parse(&cli_table_neardups, &o, argc, argv, &first);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (first >= argc) {
        fprintf(stderr, "crawler near-dups: expected at least one FILE\n");
        cli_see_help("near-dups");
        return CLI_EXIT_USAGE;
    }
    recs_t r = {0};
    int rc = CLI_EXIT_OK;
    for (int i = first; i < argc && rc == CLI_EXIT_OK; i++)
        rc = read_file(&r, argv[i]) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    size_t *group = rc == CLI_EXIT_OK ? malloc((r.n ? r.n : 1) * sizeof *group) : NULL;
    if (rc == CLI_EXIT_OK && (!group || text_dup_groups(r.hash, r.n, o.distance, group) < 0)) {
        fprintf(stderr, "crawler near-dups: out of memory\n");
        rc = CLI_EXIT_ERROR;
    }
    size_t groups = rc == CLI_EXIT_OK ? print_groups(&r, group) : 0;
    if (groups == (size_t)-1) {
        fprintf(stderr, "crawler near-dups: out of memory\n");
        rc = CLI_EXIT_ERROR;
    } else if (rc == CLI_EXIT_OK) {
        fprintf(stderr, "crawler near-dups: %zu records, %zu groups of near-duplicates", r.n,
                groups);
        if (r.skipped)
            fprintf(stderr, ", %zu lines without a simhash skipped", r.skipped);
        fprintf(stderr, "\n");
    }
    if (fflush(stdout) != 0)
        rc = CLI_EXIT_ERROR;
    for (size_t i = 0; i < r.n; i++)
        free(r.url[i]);
    free(r.url);
    free(r.hash);
    free(group);
    return rc;
}
