/*
 * bench_parser.c -- link extraction speed and memory, side by side in one run.
 *
 * DESIGN
 * A corpus of realistic pages (~20 KB: head with stylesheets, icons,
 * canonical, inline script; nav, article text with inline links, related
 * links, footer; ~100 links, relative and absolute, some javascript:/mailto:,
 * fragments and entities) is generated in memory from a fixed seed.  Three
 * ways go over the same corpus, each page fed in 16 KB pieces (curl's write
 * callback size) where streaming applies:
 *   ours     parser_new/feed/finish/free: bound filter + libxml2 SAX push +
 *            every link resolved and normalized (libcurl URL API)
 *   dom      htmlReadMemory + XPath //a/@href + the same normalizer on each
 *            href (what curl's crawler example does, resolving with a base
 *            handle parsed once per page like ours)
 *   ceiling  libxml2 SAX push parse, same options, no callbacks at all
 * Time is CPU time (CLOCK_PROCESS_CPUTIME_ID); each repetition runs the three
 * ways in turn and the median per way is reported, with ratios.
 * Memory: in a forked child per case, libxml2's peak live heap (counted
 * through xmlMemSetup by tests/xmlheap.c) and the child's max RSS, for a
 * 1 MB and a 50 MB page, ours (streamed) vs dom (whole document in memory,
 * as htmlReadMemory needs).
 *   bench_parser [--pages N] [--reps N] [--no-memory]
 */
#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <libxml/xpath.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parser.h"
#include "parser_internal.h"
#include "xmlheap.h"

#define PIECE (16 * 1024)
#define PAGE_URL "https://www.example.com/articles/2024/page.html"

/* ---- corpus ------------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap ? b->cap * 2 : 65536;
        b->s = realloc(b->s, b->cap);
        if (!b->s) {
            perror("realloc");
            exit(1);
        }
    }
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static const char *const words[] = {
    "the",     "crawler", "fetches", "pages",  "from",   "many",     "hosts",   "while",
    "keeping", "polite",  "limits",  "news",   "world",  "science",  "report",  "market",
    "city",    "council", "weather", "sports", "review", "analysis", "opinion", "data",
    "energy",  "school",  "health",  "travel", "music",  "film",     "books",   "garden"};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static void sentence(sbuf_t *b, int n)
{
    for (int i = 0; i < n; i++)
        sb_add(b, "%s%s", words[rnd(NWORDS)], i + 1 < n ? " " : ". ");
}

/* One link in one of the forms found in the wild. */
static void inline_link(sbuf_t *b)
{
    uint32_t k = rnd(100), id = rnd(100000);
    const char *w = words[rnd(NWORDS)];
    if (k < 40)
        sb_add(b, "<a href=\"/%s/%u.html\">%s</a> ", w, id, w);
    else if (k < 55)
        sb_add(b, "<a href=\"../%s/story-%u?ref=home&amp;pos=%u\">%s</a> ", w, id, k, w);
    else if (k < 70)
        sb_add(b, "<a href=\"https://www.example.com/%s/%u#comments\">%s</a> ", w, id, w);
    else if (k < 80)
        sb_add(b, "<a href=\"https://partner%u.example.org/%s?id=%u\" rel=\"noopener\">%s</a> ",
               id % 50, w, id, w);
    else if (k < 88)
        sb_add(b, "<a href=%s-%u.html class=inline>%s</a> ", w, id, w);
    else if (k < 92)
        sb_add(b, "<a href=\"javascript:void(0)\" onclick=\"share(%u)\">share</a> ", id);
    else if (k < 95)
        sb_add(b, "<a href=\"mailto:desk%u@example.com\">mail</a> ", id);
    else
        sb_add(b, "<a href=\"//cdn.example.net/%s/%u/\">%s</a> ", w, id, w);
}

static void page_head(sbuf_t *b, unsigned id)
{
    sb_add(b,
           "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           "<title>Article %u &mdash; Example News</title>\n"
           "<link rel=\"stylesheet\" href=\"/static/css/site.%u.css\">"
           "<link rel=\"preload\" href=\"/static/fonts/body.woff2\" as=\"font\" crossorigin>"
           "<link rel=\"icon\" href=\"/favicon.ico\"><link rel=\"canonical\" "
           "href=\"https://www.example.com/articles/%u\">"
           "<link rel=\"alternate\" hreflang=\"de\" href=\"/de/articles/%u\">\n<script>\n",
           id, id % 7, id, id);
    for (int i = 0; i < 24; i++)
        sb_add(b, "  if (window.x%d < %d && document.body) { track('%s', %d > 2); }\n", i, i * 3,
               words[rnd(NWORDS)], i);
    sb_add(b, "</script></head>\n<body class=\"article\">\n<header><nav><ul>\n");
    for (int i = 0; i < 24; i++)
        sb_add(b, "<li class=\"nav-item\"><a href=\"/section/%s/\">%s</a></li>\n",
               words[i % NWORDS], words[i % NWORDS]);
    sb_add(b, "</ul></nav></header>\n");
}

static void page_body(sbuf_t *b, unsigned id)
{
    sb_add(b, "<main><article><h1>");
    sentence(b, 8);
    sb_add(b, "</h1>\n");
    for (int p = 0; p < 26; p++) {
        sb_add(b, "<p>");
        for (int s = 0; s < 4; s++) {
            sentence(b, 10 + (int)rnd(10));
            if (rnd(3) == 0)
                inline_link(b);
        }
        sb_add(b, "</p>\n");
    }
    sb_add(b, "<img src=\"/img/%u.jpg\" alt=\"photo\"></article>\n<aside><h2>Related</h2><ul>\n",
           id);
    for (int i = 0; i < 16; i++)
        sb_add(b,
               "<li><a href=\"../related/%u.html?utm_source=aside&amp;utm_medium=web\">%s %s</a>"
               "</li>\n",
               rnd(100000), words[rnd(NWORDS)], words[rnd(NWORDS)]);
    sb_add(b, "</ul></aside></main>\n");
}

static void page_foot(sbuf_t *b)
{
    sb_add(b, "<footer><div class=\"links\">\n");
    for (int i = 0; i < 20; i++)
        inline_link(b);
    sb_add(b, "\n<a href=\"/privacy#cookies\">Privacy</a> <a href=\"/terms\">Terms</a> "
              "<a href=\"#top\">Top</a></div>\n<!-- generated page -->\n"
              "<script src=\"/static/js/app.js\" async></script></footer></body></html>\n");
}

typedef struct corpus {
    char **page;
    size_t *len;
    size_t n, bytes;
} corpus_t;

static void corpus_make(corpus_t *c, size_t n)
{
    c->page = calloc(n, sizeof(char *));
    c->len = calloc(n, sizeof(size_t));
    c->n = n;
    c->bytes = 0;
    for (size_t i = 0; i < n; i++) {
        sbuf_t b = {0};
        page_head(&b, (unsigned)i);
        page_body(&b, (unsigned)i);
        page_foot(&b);
        c->page[i] = b.s;
        c->len[i] = b.len;
        c->bytes += b.len;
    }
}

/* ---- the three ways ----------------------------------------------------- */

static void count_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    (void)url;
    (void)len;
    (void)kind;
    ++*(size_t *)ud;
}

static size_t run_ours(const char *page, size_t len)
{
    size_t links = 0;
    parser_t *p = parser_new(NULL, PAGE_URL, "text/html; charset=utf-8", NULL, count_link, &links);
    for (size_t i = 0; i < len; i += PIECE)
        parser_feed(p, page + i, len - i < PIECE ? len - i : PIECE);
    parser_finish(p);
    parser_free(p);
    return links;
}

static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void quiet_s(void *ctx, xmlErrorPtr e)
{
    (void)ctx;
    (void)e;
}

static const int xml_opts = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                            HTML_PARSE_NONET | HTML_PARSE_NOBLANKS;

static size_t run_ceiling(const char *page, size_t len)
{
    htmlSAXHandler sax;
    memset(&sax, 0, sizeof(sax));
    sax.initialized = XML_SAX2_MAGIC;
    sax.warning = quiet;
    sax.error = quiet;
    sax.fatalError = quiet;
    sax.serror = quiet_s;
    htmlParserCtxtPtr c =
        htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
    htmlCtxtUseOptions(c, xml_opts);
    xmlSwitchToEncoding(c, xmlFindCharEncodingHandler("utf-8"));
    for (size_t i = 0; i < len; i += PIECE)
        htmlParseChunk(c, page + i, (int)(len - i < PIECE ? len - i : PIECE), 0);
    htmlParseChunk(c, NULL, 0, 1);
    htmlFreeParserCtxt(c);
    return 0;
}

/* The bare push parse of only what ours hands libxml2 (bound.c's output):
 * shows how much of ours is libxml2 and how much is ours. */
static size_t run_ceiling_filtered(const char *page, size_t len)
{
    static char out[PIECE + BOUND_SLACK];
    bound_t b;
    htmlSAXHandler sax;
    memset(&sax, 0, sizeof(sax));
    sax.initialized = XML_SAX2_MAGIC;
    sax.warning = quiet;
    sax.error = quiet;
    sax.fatalError = quiet;
    sax.serror = quiet_s;
    bound_init(&b, 0);
    htmlParserCtxtPtr c =
        htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
    htmlCtxtUseOptions(c, xml_opts);
    xmlSwitchToEncoding(c, xmlFindCharEncodingHandler("utf-8"));
    for (size_t i = 0; i < len; i += PIECE) {
        size_t n = bound_filter(&b, page + i, len - i < PIECE ? len - i : PIECE, out);
        htmlParseChunk(c, out, (int)n, 0);
        c->checkIndex = 0;
    }
    htmlParseChunk(c, NULL, 0, 1);
    htmlFreeParserCtxt(c);
    return 0;
}

static size_t run_dom(const char *page, size_t len)
{
    size_t links = 0;
    url_base_t *base = NULL;
    htmlDocPtr doc = htmlReadMemory(page, (int)len, PAGE_URL, "utf-8", xml_opts);
    xmlXPathContextPtr xp = doc ? xmlXPathNewContext(doc) : NULL;
    xmlXPathObjectPtr r = xp ? xmlXPathEvalExpression(BAD_CAST "//a/@href", xp) : NULL;
    url_base_new(PAGE_URL, strlen(PAGE_URL), PARSER_DEFAULT_MAX_URL_LENGTH, &base);
    if (r && r->nodesetval) {
        for (int i = 0; i < r->nodesetval->nodeNr; i++) {
            xmlNodePtr a = r->nodesetval->nodeTab[i];
            xmlChar *href = xmlNodeListGetString(doc, a->children, 1);
            char *url = NULL;
            if (href && href[0] != '#' &&
                url_resolve(base, (const char *)href, strlen((const char *)href),
                            PARSER_DEFAULT_MAX_URL_LENGTH, &url, NULL) == 0)
                links++;
            free(url);
            xmlFree(href);
        }
    }
    url_base_free(base);
    xmlXPathFreeObject(r);
    xmlXPathFreeContext(xp);
    xmlFreeDoc(doc);
    return links;
}

typedef struct way {
    const char *name;
    size_t (*run)(const char *, size_t);
    double secs[64];
    size_t links;
} way_t;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_speed(const corpus_t *c, int reps)
{
    way_t ways[] = {{"ours: stream, filter, SAX, normalize", run_ours, {0}, 0},
                    {"dom+xpath //a/@href + same normalizer", run_dom, {0}, 0},
                    {"ceiling: bare SAX push, no callbacks", run_ceiling, {0}, 0},
                    {"(bare SAX push of ours' filtered bytes)", run_ceiling_filtered, {0}, 0}};
    const size_t nw = sizeof(ways) / sizeof(ways[0]);
    double med[4];
    for (int r = 0; r < reps; r++)
        for (size_t w = 0; w < nw; w++) {
            size_t links = 0;
            double t0 = cpu_now();
            for (size_t i = 0; i < c->n; i++)
                links += ways[w].run(c->page[i], c->len[i]);
            ways[w].secs[r] = cpu_now() - t0;
            ways[w].links = links;
        }
    printf("corpus: %zu pages, %.1f MB, %.1f KB/page; %d repetitions, median CPU time\n\n", c->n,
           (double)c->bytes / 1e6, (double)c->bytes / (double)c->n / 1024, reps);
    printf("| way | MB/s | pages/s | links/page |\n|---|---:|---:|---:|\n");
    for (size_t w = 0; w < nw; w++) {
        qsort(ways[w].secs, (size_t)reps, sizeof(double), cmp_double);
        med[w] = ways[w].secs[reps / 2];
        printf("| %s | %.1f | %.0f | %.1f |\n", ways[w].name, (double)c->bytes / 1e6 / med[w],
               (double)c->n / med[w], (double)ways[w].links / (double)c->n);
    }
    printf("\nours vs dom+xpath: %.2fx the speed (target >= 1.5x)\n", med[1] / med[0]);
    printf("ours vs ceiling:   %.0f%% of the ceiling's speed (target >= 80%%)\n",
           100.0 * med[2] / med[0]);
    printf("libxml2 share of ours: %.0f%% (the rest: filter, callbacks, normalization)\n\n",
           100.0 * med[3] / med[0]);
}

/* ---- memory ------------------------------------------------------------- */

/* A page of about size bytes: one head, bodies repeated, one foot. */
static sbuf_t big_page(size_t size)
{
    sbuf_t b = {0};
    page_head(&b, 1);
    while (b.len < size)
        page_body(&b, 2);
    page_foot(&b);
    return b;
}

/* Streams a page of about size bytes into a parser, 16 KB at a time, never
 * holding the page; returns the links found, *bytes the page size. */
static size_t stream_ours(size_t size, size_t *bytes)
{
    size_t links = 0;
    sbuf_t b = {0};
    parser_t *p = parser_new(NULL, PAGE_URL, "text/html; charset=utf-8", NULL, count_link, &links);
    *bytes = 0;
    page_head(&b, 1);
    while (*bytes < size) {
        for (size_t i = 0; i < b.len; i += PIECE)
            parser_feed(p, b.s + i, b.len - i < PIECE ? b.len - i : PIECE);
        *bytes += b.len;
        b.len = 0;
        page_body(&b, 2);
    }
    page_foot(&b);
    parser_feed(p, b.s, b.len);
    *bytes += b.len;
    parser_finish(p);
    parser_free(p);
    free(b.s);
    return links;
}

/* In a child: parses a page of about size bytes one way, prints one row. */
static void memory_case(size_t size, int dom)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct rusage ru;
        size_t links, bytes;
        xmlheap_install();
        if (dom) {
            sbuf_t b = big_page(size);
            links = run_dom(b.s, b.len);
            bytes = b.len;
        } else {
            links = stream_ours(size, &bytes);
        }
        getrusage(RUSAGE_SELF, &ru);
        printf("| %s | %.1f MB | %zu | %.2f MB | %.1f MB |\n",
               dom ? "dom+xpath (page in memory)" : "ours (streamed)", (double)bytes / 1e6, links,
               (double)xmlheap_peak() / 1e6, (double)ru.ru_maxrss / 1024);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
}

static void run_memory(void)
{
    printf("memory (each case in a fresh process; libxml2 heap counted with xmlMemSetup; max RSS "
           "of the process, which for dom includes the page itself)\n\n");
    printf("| way | page | links | libxml2 peak heap | max RSS |\n|---|---:|---:|---:|---:|\n");
    memory_case(1u << 20, 0);
    memory_case(50u << 20, 0);
    memory_case(1u << 20, 1);
    memory_case(50u << 20, 1);
    printf("\n");
}

int main(int argc, char **argv)
{
    size_t pages = 500;
    int reps = 7, memory = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pages") == 0 && i + 1 < argc)
            pages = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-memory") == 0)
            memory = 0;
        else {
            fprintf(stderr, "usage: %s [--pages N] [--reps N (1..64)] [--no-memory]\n", argv[0]);
            return 2;
        }
    }
    if (pages == 0 || reps < 1 || reps > 64) {
        fprintf(stderr, "bad --pages/--reps\n");
        return 2;
    }
    if (memory)
        run_memory();
    xmlInitParser();
    corpus_t c;
    corpus_make(&c, pages);
    run_speed(&c, reps);
    for (size_t i = 0; i < c.n; i++)
        free(c.page[i]);
    free(c.page);
    free(c.len);
    xmlCleanupParser();
    return 0;
}
