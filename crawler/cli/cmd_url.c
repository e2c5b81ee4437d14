/*
 * cmd_url.c -- `crawler url [--base URL] REF...`: what the crawler makes of
 * a link, for users who debug a crawl (and for the tests).
 *
 * DESIGN: declares its options once, in OPTS[] (cli.h).  Each REF is
 * resolved against --base (or taken as absolute) by the project's one
 * normalizer, parser_url_normalize (the WHATWG URL Standard, parser.h), and
 * one line is printed per REF, in order:
 *   URL<TAB>KEY      the URL the crawler would request, and its visited-set
 *                    key (parser_url_key);
 *   -<TAB>REASON     a REF the crawler drops, and why (crawl_strerror).
 * Exit status: 0 when every REF gave a URL, 1 when some REF was dropped,
 * 2 on a usage error (no REF, a --base that is no http(s) URL).
 * Keeps no state; touches no network and no Redis.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "parser.h"

typedef struct uopts {
    const char *base;
    uint32_t max_len;
} uopts_t;

static const cli_opt_t OPTS[] = {
    {CLI_OPT_STRING(uopts_t, "base", "URL", base, NULL,
                    "resolve each REF against URL (the page it is found on)"),
     .dflt_doc = "none: each REF must be absolute"},
    {CLI_OPT_U32(uopts_t, "max-url-length", "BYTES", max_len, 16, 1u << 20,
                 PARSER_DEFAULT_MAX_URL_LENGTH, "longer URLs are dropped, as in a crawl")},
    {CLI_OPT_HELP("this help")},
};

const cli_cmd_t cli_table_url = {
    .name = "url",
    .usage = "usage: crawler url [--base URL] REF...\n"
             "\n"
             "Prints one line per REF: the URL the crawler would request for it, a tab, and\n"
             "its visited-set key; or, for a REF the crawler drops, '-', a tab and the reason\n"
             "(the exit status is then 1).\n"
             "\n"
             "options:\n",
    .opts = OPTS,
    .nopts = sizeof OPTS / sizeof OPTS[0],
};

/* Prints the line of one REF; returns 0, or 1 when it is dropped. */
static int show(const uopts_t *o, const char *ref)
{
    char *url = NULL, *key = NULL;
    int rc = parser_url_normalize(o->base, ref, o->max_len, &url);
    if (rc == CRAWL_OK)
        rc = parser_url_key(url, &key);
    if (rc == CRAWL_OK)
        printf("%s\t%s\n", url, key);
    else
        printf("-\t%s\n", crawl_strerror(rc));
    free(url);
    free(key);
    return rc != CRAWL_OK;
}

int cmd_url(int argc, char **argv)
{
    uopts_t o = {0};
    int first, dropped = 0;
    cli_defaults(&cli_table_url, &o);
    int p = cli_parse(&cli_table_url, &o, argc, argv, &first);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (first >= argc) {
        fprintf(stderr, "crawler url: expected at least one REF\n");
        cli_see_help("url");
        return CLI_EXIT_USAGE;
    }
    if (o.base) {
        char *b = NULL;
        int rc = parser_url_normalize(NULL, o.base, o.max_len, &b);
        free(b);
        if (rc != CRAWL_OK) {
            fprintf(stderr, "crawler url: bad value '%s' for --base: %s\n", o.base,
                    crawl_strerror(rc));
            return CLI_EXIT_USAGE;
        }
    }
    for (int i = first; i < argc; i++)
        dropped |= show(&o, argv[i]);
    if (fflush(stdout) != 0)
        return CLI_EXIT_ERROR;
    return dropped ? 1 : CLI_EXIT_OK;
}
