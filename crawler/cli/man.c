/*
 * man.c -- `crawler --man` (not listed in the usage): prints the man page
 * crawler(1) in roff (man macros), made from the same tables every --help
 * prints.  The build runs it to write build/crawler.1 (cmake/).
 *
 * DESIGN: nothing here names an option.  The command list is main.c's
 * (name, function, summary, option table): an option or a command added to
 * those tables is in the man page without anything changed here.
 *
 * Roff rules kept by put(): a backslash is written \e, "-" in option names
 * and "--" anywhere as \-, a line never starts with '.' or '\'' (a \&
 * guard), and text from the tables is one filled paragraph per item (their
 * '\n' line breaks are joined), except blocks indented by hand in a
 * command's usage text, kept as they are (.nf).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Writes s[0..n) with roff escapes; nl: what a '\n' becomes.  A `quoted`
 * command in the help texts is set in bold (an unclosed one ends at n). */
static void put(FILE *out, const char *s, size_t n, const char *nl)
{
    int bol = 1;  /* at the beginning of an output line (a needless \& is harmless) */
    int code = 0; /* inside `...` */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\''))
            fputs("\\&", out);
        bol = 0;
        if (c == '`') {
            fputs(code ? "\\fR" : "\\fB", out);
            code = !code;
        } else if (c == '\\')
            fputs("\\e", out);
        else if (c == '-' && i + 1 < n && s[i + 1] == '-') {
            fputs("\\-\\-", out);
            i++;
        } else if (c == '\n') {
            fputs(nl, out);
            bol = strchr(nl, '\n') != NULL;
        } else
            fputc(c, out);
    }
    if (code)
        fputs("\\fR", out);
}

static void puts_roff(FILE *out, const char *s, const char *nl)
{
    put(out, s, strlen(s), nl);
}

/* An option's name as a tag: \fB\-\-max\-depth\fR \fIN\fR. */
static void opt_tag(FILE *out, const cli_opt_t *o)
{
    fputs("\\fB\\-\\-", out);
    for (const char *p = o->name; *p; p++)
        fputs(*p == '-' ? "\\-" : (char[2]){*p, 0}, out);
    fputs("\\fR", out);
    if (o->type == CLI_TYPE_HELP)
        fputs(", \\fB\\-h\\fR", out);
    if (o->arg || o->type == CLI_TYPE_ENUM) {
        int brackets = o->optional && !(o->arg && o->arg[0] == '['); /* "[SECS]": has its own */
        fputs(brackets ? " [\\fI" : " \\fI", out);
        if (o->arg)
            puts_roff(out, o->arg, " ");
        for (size_t i = 0; !o->arg && o->names[i]; i++) {
            fputs(i ? "\\fR|\\fI" : "", out);
            puts_roff(out, o->names[i], " ");
        }
        fputs(brackets ? "\\fR]" : "\\fR", out);
    }
    fputc('\n', out);
}

/* One paragraph of a usage text, lines [s, e): filled, or kept as written
 * when a line of it is indented by hand. */
static void usage_paragraph(FILE *out, const char *s, const char *e)
{
    int indented = *s == ' ';
    for (const char *p = s; p + 1 < e && !indented; p++)
        indented = p[0] == '\n' && p[1] == ' ';
    fputs(indented ? ".PP\n.nf\n" : ".PP\n", out);
    put(out, s, (size_t)(e - s), "\n");
    fputs(indented ? "\n.fi\n" : "\n", out);
}

/* The command's usage text: its first line ("usage: crawler X ...") as a
 * synopsis, the rest as paragraphs, without the closing "options:" line. */
static void usage_text(FILE *out, const char *u)
{
    const char *end = u + strlen(u);
    const char *opts = strstr(u, "options:\n");
    if (opts && opts + strlen("options:\n") == end)
        end = opts;
    const char *nl = memchr(u, '\n', (size_t)(end - u));
    const char *line_end = nl ? nl : end;
    const char *syn = strncmp(u, "usage: ", 7) ? u : u + 7;
    fputs(".B ", out); /* right after the .SS heading: no .PP */
    put(out, syn, (size_t)(line_end - syn), " ");
    fputc('\n', out);
    const char *p = nl ? nl + 1 : end;
    while (p < end) {
        while (p < end && *p == '\n')
            p++;
        const char *q = p;
        while (q < end && !(q[0] == '\n' && (q + 1 == end || q[1] == '\n')))
            q++;
        if (q > p)
            usage_paragraph(out, p, q);
        p = q;
    }
}

/* One command's usage text and options. */
static void man_opts(const cli_cmd_t *cmd, FILE *out)
{
    usage_text(out, cmd->usage);
    fputs(".PP\nOptions:\n", out);
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        char dbuf[64];
        fputs(".TP\n", out);
        opt_tag(out, o);
        size_t n = strlen(o->help);
        put(out, o->help, n && o->help[n - 1] == '\n' ? n - 1 : n, " ");
        fputc('\n', out);
        const char *d = cli_default_text(o, dbuf, sizeof dbuf);
        if (d && o->type != CLI_TYPE_FLAG) {
            fputs(".br\nDefault: ", out);
            puts_roff(out, d, " ");
            fputc('\n', out);
        }
    }
}

/* The page's date: $SOURCE_DATE_EPOCH (reproducible builds; cmake/ sets it
 * to the last commit's time), else today, as YYYY-MM-DD (UTC). */
static void man_date(char *buf, size_t len)
{
    const char *env = getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    errno = 0;
    long long v = env ? strtoll(env, &end, 10) : 0;
    time_t t = env && *env && !*end && !errno && v >= 0 ? (time_t)v : time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d", &tm))
        snprintf(buf, len, "1970-01-01");
}

static const char HEAD[] =
    ".SH NAME\n"
    "crawler \\- a web crawler whose frontier and visited set live in Redis\n"
    ".SH SYNOPSIS\n"
    ".B crawler\n"
    ".I COMMAND\n"
    ".RI [ OPTIONS ]\n"
    ".br\n"
    ".B crawler\n"
    ".BR \\-\\-help \" | \" \\-\\-version\n"
    ".SH DESCRIPTION\n"
    "The crawler fetches pages with many transfers in flight per thread, follows\n"
    "their links within a scope, obeys robots.txt, and writes one JSON line per\n"
    "finished URL (\\fB\\-\\-out\\fR) and WARC records (\\fB\\-\\-warc\\fR).\n"
    "Its frontier (queues per host, leases, retries, counters) and its visited set\n"
    "(a Bloom filter) live in Redis, so any number of worker processes on any\n"
    "number of machines can share one crawl through a shared Redis or Redis Cluster\n"
    "(\\fB\\-\\-redis\\fR or \\fBREDIS_URL\\fR).\n"
    "Without either, the crawler starts an embedded redis-server of its own in\n"
    "\\fB\\-\\-data\\-dir\\fR, which loads the crawler's Redis module when it is\n"
    "installed.\n"
    ".SH COMMANDS\n";

static const char TAIL[] =
    ".SH CONFIGURATION FILE\n"
    "\\fBcrawler crawl \\-\\-config\\fR \\fIFILE\\fR reads options from \\fIFILE\\fR,\n"
    "one a line, written as on the command line without the leading dashes:\n"
    "\\fIname value\\fR, \\fIname\\fR=\\fIvalue\\fR, or \\fIname\\fR alone for a flag.\n"
    "Blank lines and lines starting with # are ignored.\n"
    "Options given on the command line win over the file.\n"
    ".SH ENVIRONMENT\n"
    ".TP\n"
    ".B REDIS_URL\n"
    "The shared Redis (or Redis Cluster) when \\fB\\-\\-redis\\fR is not given.\n"
    ".SH FILES\n"
    ".TP\n"
    ".I <prefix>/lib/crawler/crawler_redis.so\n"
    "The crawler's Redis module, loaded by the embedded redis-server: looked for\n"
    "beside the program first (\\fI../lib/crawler/\\fR from its directory), then in\n"
    "the build tree, then under the install prefix.\n"
    ".TP\n"
    ".I /etc/crawler/NAME.conf\n"
    "The options of crawl \\fINAME\\fR when it runs as the systemd service\n"
    "\\fBcrawler@NAME\\fR (with \\fBREDIS_URL\\fR in \\fI/etc/crawler/NAME.env\\fR).\n"
    ".SH EXIT STATUS\n"
    ".TP\n"
    ".B 0\n"
    "Success.\n"
    ".TP\n"
    ".B 1\n"
    "A runtime failure (Redis down, an I/O error, ...).\n"
    ".TP\n"
    ".B 2\n"
    "A usage error: an unknown option or a bad value.\n"
    ".TP\n"
    ".B 3\n"
    "Finished, but some input lines were rejected.\n"
    ".SH SEE ALSO\n"
    ".BR redis\\-server (1),\n"
    ".BR redis\\-cli (1)\n";

int cli_man(const cli_command_t *cmds, size_t n)
{
    fputs(".\\\" crawler(1), written by `crawler --man` from the option tables: do not edit.\n",
          stdout);
    char date[32];
    man_date(date, sizeof date);
    printf(".TH CRAWLER 1 %s \"crawler %s\" \"User Commands\"\n", date, CRAWLER_VERSION);
    fputs(HEAD, stdout);
    for (size_t i = 0; i < n; i++) {
        fputs(".TP\n.B ", stdout);
        puts_roff(stdout, cmds[i].name, " ");
        fputc('\n', stdout);
        puts_roff(stdout, cmds[i].summary, " ");
        fputs(".\n", stdout);
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(stdout, ".SS \"crawler %s\"\n", cmds[i].name);
        man_opts(cmds[i].table, stdout);
    }
    fputs(TAIL, stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "crawler --man: cannot write the man page\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
