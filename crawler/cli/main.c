/*
 * main.c -- the `crawler` program: global library set-up, then one
 * subcommand (crawl, seed, stats, reset, pause, resume, drain, limits, bloom,
 * robots, url).
 */
#include <curl/curl.h>
#include <libxml/parser.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The subcommands, in the order `crawler --help` lists them. */
static const cli_command_t CMDS[] = {
    {"crawl", cmd_crawl, "crawl from the frontier (and --seeds FILE) until the crawl is over",
     &cli_table_crawl},
    {"seed", cmd_seed, "add the URLs of a seeds file to a crawl's frontier", &cli_table_seed},
    {"stats", cmd_stats, "print a crawl's counters from Redis", &cli_table_stats},
    {"reset", cmd_reset, "delete every key of one crawl", &cli_table_reset},
    {"pause", cmd_pause, "pause a running crawl on every worker (claims stop, leases renewed)",
     &cli_table_pause},
    {"resume", cmd_resume, "resume a paused crawl", &cli_table_resume},
    {"drain", cmd_drain, "make the running workers finish their in-flight URLs and exit",
     &cli_table_drain},
    {"limits", cmd_limits, "show or change a running crawl's limits (--per-host, --delay, ...)",
     &cli_table_limits},
    {"block", cmd_block, "stop every worker requesting a host or domain, and drop its queue",
     &cli_table_block},
    {"unblock", cmd_unblock, "lift a block (new links to the host or domain are taken again)",
     &cli_table_unblock},
    {"bloom", cmd_bloom, "add/check URLs in a Bloom filter, or show its info", &cli_table_bloom},
    {"robots", cmd_robots, "show what a robots.txt allows a user agent, rule and line",
     &cli_table_robots},
    {"url", cmd_url, "print the URL the crawler would request for each link, and its key",
     &cli_table_url},
    {"near-dups", cmd_neardups, "group the records of --text files by near-duplicate text",
     &cli_table_neardups},
};
#define NCMDS (sizeof CMDS / sizeof CMDS[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: crawler COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(out, "  %-9s %s\n", CMDS[i].name, CMDS[i].summary);
    fprintf(out, "\n`crawler COMMAND --help` lists the options of each command.\n"
                 "crawler --version prints the version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("crawler %s (%s, libxml2 %s)\n", CRAWLER_VERSION, curl_version(),
               LIBXML_DOTTED_VERSION);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--man")) /* hidden: the man page, from CMDS and the option tables */
        return cli_man(CMDS, NCMDS);
    for (size_t i = 0; i < NCMDS; i++) {
        if (strcmp(cmd, CMDS[i].name) != 0)
            continue;
        signal(SIGPIPE, SIG_IGN); /* a closed --out pipe is a write error, not death */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            fprintf(stderr, "crawler: curl_global_init failed\n");
            return CLI_EXIT_ERROR;
        }
        xmlInitParser();
        int rc = CMDS[i].fn(argc - 1, argv + 1);
        xmlCleanupParser();
        curl_global_cleanup();
        return rc;
    }
    fprintf(stderr, "crawler: unknown command '%s'\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
