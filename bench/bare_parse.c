/*
 * bare_parse.c -- CPU time to parse a set of HTML pages, the per-page
 * "ceiling" the crawl benchmark (bench/crawl_bench.sh) compares the crawler
 * with.
 *
 * DESIGN
 * Reads the page files named in a manifest (one path per line, as written by
 * gen_site), one at a time into a reusable buffer, and parses each one in
 * 16 KiB chunks (the size libcurl hands to a write callback) with either
 *   bare:   libxml2's HTML push parser with an empty SAX handler (no
 *           callbacks at all, no tree), the options the parser module uses;
 *   parser: the project's parser module (parser_new/feed/finish), i.e.
 *           libxml2 plus its token-capping filter, link extraction and URL
 *           normalization, with a callback that only counts links.
 * Only the parse is timed (CLOCK_PROCESS_CPUTIME_ID around each page:
 * context creation, feeding, termination, freeing), not the file reads.
 * Prints one line: mode, pages, bytes, CPU seconds, CPU ms per page, links.
 *
 * usage: bare_parse bare|parser MANIFEST SITE_DIR BASE_URL [REPEAT]
 * (SITE_DIR and BASE_URL turn a file path into the page's URL in parser mode)
 */
#include <errno.h>
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parser.h"

#define CHUNK (16 * 1024)
#define MAX_PAGE (8 * 1024 * 1024)

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void quiet_structured(void *ctx, xmlErrorPtr err)
{
    (void)ctx;
    (void)err;
}

static int parse_bare(const char *data, size_t len)
{
    xmlSAXHandler sax;
    memset(&sax, 0, sizeof sax); /* no callbacks: no tree, no events */
    sax.initialized = XML_SAX2_MAGIC;
    sax.warning = quiet; /* errors are not printed (the parser module does the same) */
    sax.error = quiet;
    sax.fatalError = quiet;
    sax.serror = quiet_structured;
    htmlParserCtxtPtr ctxt =
        htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
    if (!ctxt)
        return -1;
    htmlCtxtUseOptions(ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                 HTML_PARSE_NONET | HTML_PARSE_NOBLANKS);
    for (size_t off = 0; off < len; off += CHUNK) {
        size_t n = len - off < CHUNK ? len - off : CHUNK;
        htmlParseChunk(ctxt, data + off, (int)n, 0);
    }
    htmlParseChunk(ctxt, NULL, 0, 1);
    htmlFreeParserCtxt(ctxt);
    return 0;
}

static void count_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    (void)url;
    (void)len;
    (void)kind;
    ++*(uint64_t *)ud;
}

static int parse_module(const char *url, const char *data, size_t len, uint64_t *links)
{
    parser_t *p = parser_new(NULL, url, "text/html", NULL, count_link, links);
    if (!p)
        return -1;
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += CHUNK) {
        size_t n = len - off < CHUNK ? len - off : CHUNK;
        rc = parser_feed(p, data + off, n);
    }
    if (rc == 0)
        rc = parser_finish(p);
    parser_free(p);
    return rc;
}

static long read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    int bad = ferror(f) || (n == cap && !feof(f));
    fclose(f);
    return bad ? -1 : (long)n;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6 || (strcmp(argv[1], "bare") && strcmp(argv[1], "parser"))) {
        fprintf(stderr, "usage: bare_parse bare|parser MANIFEST SITE_DIR BASE_URL [REPEAT]\n");
        return 2;
    }
    int bare = !strcmp(argv[1], "bare");
    const char *site = argv[3], *base = argv[4];
    size_t site_len = strlen(site);
    long repeat = 1;
    if (argc == 6) {
        char *end;
        errno = 0;
        repeat = strtol(argv[5], &end, 10);
        if (errno || *end || end == argv[5] || repeat < 1 || repeat > 1000) {
            fprintf(stderr, "bare_parse: bad REPEAT '%s'\n", argv[5]);
            return 2;
        }
    }
    FILE *man = fopen(argv[2], "r");
    char *buf = malloc(MAX_PAGE);
    if (!man || !buf) {
        fprintf(stderr, "bare_parse: %s: %s\n", argv[2], strerror(errno));
        free(buf);
        return 1;
    }
    xmlInitParser();
    uint64_t pages = 0, bytes = 0, links = 0;
    double cpu = 0;
    char path[4096], url[8192];
    int status = 0;
    while (fgets(path, sizeof path, man)) {
        path[strcspn(path, "\n")] = '\0';
        long len = read_file(path, buf, MAX_PAGE);
        if (len < 0 || strncmp(path, site, site_len) != 0) {
            fprintf(stderr, "bare_parse: cannot read %s (or not under %s)\n", path, site);
            status = 1;
            break;
        }
        snprintf(url, sizeof url, "%s%s", base, path + site_len);
        for (long r = 0; r < repeat; r++) {
            double t0 = cpu_now();
            int rc =
                bare ? parse_bare(buf, (size_t)len) : parse_module(url, buf, (size_t)len, &links);
            cpu += cpu_now() - t0;
            if (rc < 0) {
                fprintf(stderr, "bare_parse: %s: parse failed (%d)\n", path, rc);
                status = 1;
            }
            pages++;
            bytes += (uint64_t)len;
        }
    }
    fclose(man);
    free(buf);
    xmlCleanupParser();
    if (pages == 0) {
        fprintf(stderr, "bare_parse: no pages in %s\n", argv[2]);
        return 1;
    }
    printf("%s pages=%llu bytes=%llu cpu_s=%.6f ms_per_page=%.6f links=%llu\n", argv[1],
           (unsigned long long)pages, (unsigned long long)bytes, cpu, cpu * 1000 / (double)pages,
           (unsigned long long)links);
    return status;
}
