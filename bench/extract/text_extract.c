/*
 * text_extract.c -- the evaluation driver of the text module: extracts the
 * text of HTML files with the parser and its text sink, writes one output
 * file per page, and reports the CPU time per page.
 *
 * DESIGN
 * Each file is read whole into memory first (not timed), then parsed as a
 * transfer would be: parser_new with the sink of a text_new extractor, fed
 * in 16 KiB pieces (libcurl's write size), parser_finish, text_finish,
 * both freed.  That span is timed with CLOCK_PROCESS_CPUTIME_ID, REPEAT
 * times (the output of the last one is written).  Mode "links" runs the
 * parser alone, without a sink (what a crawl without --text costs), so the
 * two figures of one run give the sink's cost side by side.  Mode "sink"
 * attaches a sink with no callbacks (the parser's own reading of the text
 * and elements, no extractor); mode "hash" is main plus text_simhash(); mode
 * "cost" runs links, sink, main and hash alternately on every page and
 * prints the CPU per page of each and the ratios to links.
 *
 * usage: text_extract [-m main|markdown|all|links|sink|hash|cost] [-o OUTDIR] [-r REPEAT]
 *                     [-x MAX_TEXT] FILE...
 * Writes OUTDIR/<file's base name less .html>.txt (text only) and
 * prints one line: mode, pages, bytes, cpu seconds, ms per page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parser.h"
#include "text.h"

#define PIECE (16 * 1024)

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    if (!f)
        return NULL;
    do {
        if (n + 65536 > cap) {
            char *q = realloc(buf, cap = cap ? cap * 2 : 1 << 20);
            if (!q) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = q;
        }
        k = fread(buf + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void count_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    (void)url;
    (void)len;
    (void)kind;
    ++*(size_t *)ud;
}

/* One page; *out is the extractor (caller frees) or NULL in links mode. */
static int run(const char *html, size_t len, const char *mode, size_t max_text, text_t **out)
{
    parser_config_t pc = {0};
    parser_sink_t sink;
    text_config_t tc = {.max_text = max_text};
    text_t *t = NULL;
    parser_t *p;
    size_t links = 0;
    int rc = 0;
    *out = NULL;
    if (strcmp(mode, "sink") == 0) { /* the parser's reader, with no extractor */
        static const parser_sink_t none = {0};
        pc.sink = &none;
    } else if (strcmp(mode, "links") != 0) {
        tc.mode = strcmp(mode, "markdown") == 0 ? TEXT_MARKDOWN
                  : strcmp(mode, "all") == 0    ? TEXT_ALL
                                                : TEXT_MAIN;
        if (!(t = text_new(&tc, "http://example.com/page")))
            return CRAWL_ENOMEM;
        text_parser_sink(t, &sink);
        pc.sink = &sink;
    }
    if (!(p = parser_new(&pc, "http://example.com/page", NULL, NULL, count_link, &links))) {
        text_free(t);
        return CRAWL_ENOMEM;
    }
    for (size_t off = 0; off < len && rc == 0; off += PIECE)
        rc = parser_feed(p, html + off, len - off < PIECE ? len - off : PIECE);
    if (rc == 0)
        rc = parser_finish(p);
    parser_free(p);
    if (t && rc == 0)
        rc = text_finish(t);
    if (t && rc == 0 && strcmp(mode, "hash") == 0)
        (void)text_simhash(t);
    *out = t;
    return rc;
}

static void write_out(const char *dir, const char *path, text_t *t)
{
    const char *base = strrchr(path, '/');
    char name[4096];
    size_t n, blen;
    FILE *f;
    base = base ? base + 1 : path;
    n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".html") == 0)
        n -= 5;
    if (snprintf(name, sizeof(name), "%s/%.*s.txt", dir, (int)n, base) >= (int)sizeof(name))
        return;
    if (!(f = fopen(name, "wb")))
        return;
    const char *body = text_body(t, &blen);
    fwrite(body, 1, blen, f);
    fclose(f);
}

/* -m cost: links, sink and main alternately on each page, REPEAT times;
 * CPU per page of each and the ratios to links. */
static int cost(int n, char **files, long reps, size_t max_text)
{
    static const char *const modes[] = {"links", "sink", "main", "hash"};
    double cpu[4] = {0, 0, 0, 0};
    size_t pages = 0, bytes = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *html = slurp(files[i], &len);
        if (!html)
            continue;
        for (long r = 0; r < reps; r++)
            for (int m = 0; m < 4; m++) {
                text_t *t;
                double t0 = cpu_now();
                run(html, len, modes[m], max_text, &t);
                cpu[m] += cpu_now() - t0;
                text_free(t);
            }
        pages++;
        bytes += len;
        free(html);
    }
    double k = pages ? 1000.0 / (double)(pages * (size_t)reps) : 0;
    printf("cost pages %zu bytes %zu ms/page: links %.4f sink %.4f main %.4f hash %.4f; "
           "ratio to links: sink %.3f main %.3f hash %.3f\n",
           pages, bytes, cpu[0] * k, cpu[1] * k, cpu[2] * k, cpu[3] * k, cpu[1] / cpu[0],
           cpu[2] / cpu[0], cpu[3] / cpu[0]);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = "main", *outdir = NULL;
    long reps = 1;
    size_t max_text = 0, pages = 0, bytes = 0;
    double cpu = 0;
    int i;
    for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        char *end;
        if (strcmp(argv[i], "-m") == 0) {
            mode = argv[i + 1];
        } else if (strcmp(argv[i], "-o") == 0) {
            outdir = argv[i + 1];
        } else if (strcmp(argv[i], "-r") == 0 || strcmp(argv[i], "-x") == 0) {
            errno = 0;
            long v = strtol(argv[i + 1], &end, 10);
            if (errno || *end || v < 1) {
                fprintf(stderr, "bad number: %s\n", argv[i + 1]);
                return 2;
            }
            if (argv[i][1] == 'r')
                reps = v;
            else
                max_text = (size_t)v;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr,
                "usage: %s [-m main|markdown|all|links|sink|hash|cost] [-o OUTDIR] [-r REPEAT] "
                "[-x MAX_TEXT] FILE...\n",
                argv[0]);
        return 2;
    }
    if (strcmp(mode, "cost") == 0)
        return cost(argc - i, argv + i, reps, max_text);
    for (; i < argc; i++) {
        size_t len;
        char *html = slurp(argv[i], &len);
        if (!html) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            continue;
        }
        for (long r = 0; r < reps; r++) {
            text_t *t;
            double t0 = cpu_now();
            int rc = run(html, len, mode, max_text, &t);
            cpu += cpu_now() - t0;
            if (rc)
                fprintf(stderr, "%s: %s\n", argv[i], crawl_strerror(rc));
            if (r + 1 == reps && t && outdir)
                write_out(outdir, argv[i], t);
            text_free(t);
        }
        pages++;
        bytes += len;
        free(html);
    }
    printf("%s pages %zu bytes %zu cpu_s %.4f ms_per_page %.4f\n", mode, pages, bytes, cpu,
           pages ? cpu * 1000.0 / (double)(pages * (size_t)reps) : 0.0);
    return 0;
}
