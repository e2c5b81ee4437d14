/*
 * gen_site.c -- writes a static site of N realistic HTML pages for the crawl
 * benchmark (bench/crawl_bench.sh).
 *
 * DESIGN
 * Page 0 is /index.html (always linked as "/"); page i >= 1 is
 * /s<i % 20>/p<i>.html.  Every page is about 19 KB (17.5-20.5 KB, drawn per
 * page) and looks like a CMS article: a <head> with meta tags, a stylesheet,
 * an icon, a canonical link, an inline <style> and <script>; a header with
 * the logo and a nav menu of the 20 section front pages (pages 1..20, the
 * same on every page); an article of text paragraphs with entities and
 * inline content links; a "related" list; an aside; a footer with links to
 * pages 21..28, a mailto: and a fragment; an external and an inline script.
 * Each page has 20 content links: its children 4i+1..4i+4 in a 4-ary tree
 * (so every page is reachable from the index) and pseudo-random pages for
 * the rest, written relative ("../s3/p7.html"), root-relative
 * ("/s3/p7.html") or same-directory ("p7.html").  The few assets the pages
 * reference (/static/site.css, /static/app.js, /static/logo.png,
 * /favicon.ico, and /promo, named in a string of the inline script, which
 * wget takes for a link) exist, and /robots.txt allows everything, so a crawl meets
 * no 404.  The output is deterministic for a given N and seed.
 * A manifest file lists the absolute path of every page, one per line, for
 * bench/bare_parse.
 *
 * Many hosts (bench/broad.sh): with a HOSTS file (one authority a line,
 * "127.1.0.1:8080" or "h0001.crawl.test:8080"; H lines), page i lives on host
 * i % H, and every link to a page on another host is an absolute URL
 * "http://AUTHORITY/s3/p7.html" (the index: "http://HOST0/"), the nav menu,
 * the logo and the footer included, so each page has exactly one URL and is
 * still reachable from the index on host 0.  Links within one host keep the
 * three relative styles.  All hosts serve the same directory; the assets and
 * robots.txt are on every host.  Without a HOSTS file the output is as before.
 *
 * usage: gen_site DIR N MANIFEST [SEED [HOSTS]]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SECTIONS 20
#define CONTENT_LINKS 20
#define CHILDREN 4
#define FOOTER_FIRST 21
#define FOOTER_LINKS 8
#define PAGE_MIN 17500
#define PAGE_SPREAD 3000
#define BUF_CAP (64 * 1024)
#define HREF_CAP 160
#define AUTH_MAX 96
#define HOSTS_MAX 1000000

typedef struct {
    char data[BUF_CAP];
    size_t len;
} buf_t;

static uint64_t rng_state;

/* The HOSTS file's authorities (nhosts == 0: one host, relative links only). */
static char (*hosts)[AUTH_MAX];
static unsigned nhosts;

static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static unsigned rnd_below(unsigned n)
{
    return n ? (unsigned)(rnd() % n) : 0;
}

static void put(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, sizeof b->data - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof b->data - b->len) {
        fprintf(stderr, "gen_site: page buffer overflow\n");
        exit(1);
    }
    b->len += (size_t)n;
}

static const char *WORDS[] = {
    "crawler", "network",  "protocol", "server",   "request", "response", "latency",  "archive",
    "harbour", "mountain", "river",    "library",  "council", "festival", "railway",  "garden",
    "market",  "weather",  "science",  "history",  "policy",  "economy",  "research", "museum",
    "season",  "village",  "journey",  "software", "energy",  "climate",  "ocean",    "theatre",
    "the",     "of",       "and",      "a",        "to",      "in",       "is",       "that",
    "for",     "it",       "with",     "as",       "was",     "on",       "by",       "from",
};
#define NWORDS (sizeof WORDS / sizeof WORDS[0])

static void words(buf_t *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        put(b, i ? " %s" : "%s", WORDS[rnd_below(NWORDS)]);
}

/* The site path of page i, without the leading '/' ("" for the index). */
static void page_path(unsigned i, char *out, size_t cap)
{
    if (i == 0)
        snprintf(out, cap, "index.html");
    else
        snprintf(out, cap, "s%u/p%u.html", i % SECTIONS, i);
}

/* The absolute URL of page `to` if it lives on another host than page
 * `from` (returns 1), else nothing (returns 0). */
static int cross_host(unsigned from, unsigned to, char *out, size_t cap)
{
    if (nhosts < 2 || from % nhosts == to % nhosts)
        return 0;
    char path[64];
    page_path(to, path, sizeof path);
    snprintf(out, cap, "http://%s/%s", hosts[to % nhosts], to ? path : "");
    return 1;
}

/* A root-relative link from page `from` to page `to` ("/" for the index),
 * absolute if `to` is on another host. */
static void root_href(unsigned from, unsigned to, char *out, size_t cap)
{
    char path[64];
    if (cross_host(from, to, out, cap))
        return;
    page_path(to, path, sizeof path);
    snprintf(out, cap, "/%s", to ? path : "");
}

/* An href from page `from` to page `to`, in one of three styles (absolute if
 * `to` is on another host). */
static void href(unsigned from, unsigned to, char *out, size_t cap)
{
    if (cross_host(from, to, out, cap)) {
        (void)rnd_below(3); /* the same draws as a same-host link */
        return;
    }
    if (to == 0) {
        snprintf(out, cap, "/");
        return;
    }
    unsigned style = rnd_below(3);
    if (style == 0 || from == 0)
        snprintf(out, cap, "%ss%u/p%u.html", from == 0 && style ? "" : "/", to % SECTIONS, to);
    else if (from % SECTIONS == to % SECTIONS)
        snprintf(out, cap, "p%u.html", to);
    else
        snprintf(out, cap, "../s%u/p%u.html", to % SECTIONS, to);
}

static void head(buf_t *b, unsigned i)
{
    char path[64];
    page_path(i, path, sizeof path);
    put(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
           "<meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\">\n");
    put(b, "<meta name=\"description\" content=\"");
    words(b, 18);
    put(b,
        "\">\n<meta property=\"og:title\" content=\"Article %u\">\n"
        "<meta property=\"og:type\" content=\"article\">\n"
        "<meta name=\"twitter:card\" content=\"summary\">\n"
        "<title>Article %u &mdash; Section %u &mdash; Bench site</title>\n"
        "<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
        "<link rel=\"icon\" href=\"/favicon.ico\">\n"
        "<link rel=\"canonical\" href=\"/%s\">\n",
        i, i, i % SECTIONS, i ? path : "");
    put(b, "<style>\nbody{margin:0;font:16px/1.5 Georgia,serif;color:#222;background:#fff}\n"
           "header,footer{background:#f4f4f4;padding:.5em 1em}nav ul{list-style:none;margin:0;"
           "padding:0;display:flex;flex-wrap:wrap}nav li{margin:0 .6em}\n"
           "article{max-width:42em;margin:1em auto;padding:0 1em}article p{margin:.8em 0}\n"
           "aside{max-width:42em;margin:1em auto;font-size:.9em;color:#555}.related li{margin:"
           ".2em 0}\n.meta{color:#777;font-size:.85em}a{color:#0645ad}a:visited{color:#0b0080}\n"
           "@media (max-width:600px){nav ul{display:block}article{padding:0 .5em}}\n</style>\n");
    put(b, "<script>\nwindow.dataLayer = window.dataLayer || [];\n"
           "function track(e){ if (e && e.target && e.target.tagName === \"A\" && 1 < 2) "
           "{ dataLayer.push({event: \"click\", href: e.target.href}); } }\n"
           "var tpl = \"<div class='promo'><a href='/promo'>promo</a></div>\";\n"
           "document.addEventListener(\"click\", track);\n</script>\n</head>\n");
}

static void nav(buf_t *b, unsigned i, unsigned n)
{
    char h[HREF_CAP];
    root_href(i, 0, h, sizeof h);
    put(b,
        "<body id=\"top\">\n<header>\n<a href=\"%s\" class=\"logo\"><img src=\"/static/logo.png\" "
        "alt=\"Bench site\" width=\"120\" height=\"40\"></a>\n<nav aria-label=\"Main\"><ul>\n",
        h);
    /* the same menu, root-relative (absolute for other hosts), on every page */
    for (unsigned k = 1; k <= SECTIONS && k < n; k++) {
        root_href(i, k, h, sizeof h);
        put(b, "<li><a href=\"%s\">Section %u</a></li>\n", h, k);
    }
    put(b, "</ul></nav>\n</header>\n");
}

/* The 20 content links of page i: its children first, then random pages. */
static void content_links(unsigned i, unsigned n, unsigned *to)
{
    unsigned k = 0;
    for (unsigned c = 1; c <= CHILDREN; c++) {
        uint64_t child = (uint64_t)CHILDREN * i + c;
        if (child < n)
            to[k++] = (unsigned)child;
    }
    while (k < CONTENT_LINKS)
        to[k++] = n > 1 ? 1 + rnd_below(n - 1) : 0;
}

static void paragraph(buf_t *b, unsigned i, const unsigned *to, unsigned *next, unsigned last)
{
    char h[HREF_CAP];
    put(b, "<p>");
    words(b, 40 + rnd_below(40));
    if (*next < last) {
        href(i, to[*next], h, sizeof h);
        put(b, " <a href=\"%s\">", h);
        words(b, 3);
        put(b, "</a> &ndash; ");
        ++*next;
    } else {
        put(b, " ");
    }
    words(b, 30 + rnd_below(30));
    put(b, rnd_below(4) ? ".</p>\n" : " &amp; <em>more</em>&nbsp;&hellip;</p>\n");
}

static void article(buf_t *b, unsigned i, unsigned n, size_t target)
{
    unsigned to[CONTENT_LINKS], next = 0;
    content_links(i, n, to);
    put(b, "<main>\n<article>\n<h1>");
    words(b, 7);
    put(b,
        "</h1>\n<p class=\"meta\">By <span class=\"author\">Staff writer</span> on "
        "<time datetime=\"2024-%02u-%02u\">2024-%02u-%02u</time></p>\n",
        1 + i % 12, 1 + i % 28, 1 + i % 12, 1 + i % 28);
    /* body text up to the target size, leaving room for what follows */
    const size_t tail = 2300;
    while (b->len + tail < target)
        paragraph(b, i, to, &next, CONTENT_LINKS / 2);
    put(b, "<h2>Related</h2>\n<ul class=\"related\">\n");
    for (char h[HREF_CAP]; next < CONTENT_LINKS; next++) {
        href(i, to[next], h, sizeof h);
        put(b, "<li><a href=\"%s\">", h);
        words(b, 5);
        put(b, "</a></li>\n");
    }
    put(b, "</ul>\n</article>\n<aside>\n<h2>About this section</h2>\n<p>");
    words(b, 60);
    put(b, "</p>\n</aside>\n</main>\n");
}

static void footer(buf_t *b, unsigned i, unsigned n)
{
    static const char *names[FOOTER_LINKS] = {"About",   "Contact", "Privacy", "Terms",
                                              "Careers", "Press",   "Help",    "Sitemap"};
    char h[HREF_CAP];
    put(b, "<footer>\n<ul>\n");
    for (unsigned k = 0; k < FOOTER_LINKS; k++) {
        unsigned p = FOOTER_FIRST + k;
        href(i, p < n ? p : 0, h, sizeof h);
        put(b, "<li><a href=\"%s\">%s</a></li>\n", h, names[k]);
    }
    put(b, "</ul>\n<p>&copy; 2024 Bench site &middot; <a href=\"mailto:desk@example.invalid\">"
           "desk@example.invalid</a> &middot; <a href=\"#top\">Back to top</a></p>\n</footer>\n"
           "<script src=\"/static/app.js\" defer></script>\n"
           "<script>(function(){var s=document.createElement(\"script\");s.async=true;"
           "s.src=\"/static/app.js?v=2\";if(window.innerWidth<600&&document.body){"
           "document.body.className+=\" small\";}})();</script>\n</body>\n</html>\n");
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "gen_site: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "gen_site: mkdir %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int assets(const char *dir)
{
    static const char css[] = "body{margin:0}\n", js[] = "/* app */\n";
    static const char robots[] = "User-agent: *\nDisallow:\n";
    static const char promo[] = "promo\n"; /* wget finds the link in the inline script */
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    char p[4096];
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } files[] = {{"static/site.css", css, sizeof css - 1},  {"static/app.js", js, sizeof js - 1},
                 {"static/logo.png", png, sizeof png},      {"favicon.ico", png, sizeof png},
                 {"robots.txt", robots, sizeof robots - 1}, {"promo", promo, sizeof promo - 1}};
    snprintf(p, sizeof p, "%s/static", dir);
    if (make_dir(p) < 0)
        return -1;
    for (unsigned k = 0; k < SECTIONS; k++) {
        snprintf(p, sizeof p, "%s/s%u", dir, k);
        if (make_dir(p) < 0)
            return -1;
    }
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[k].name);
        if (write_file(p, files[k].data, files[k].len) < 0)
            return -1;
    }
    return 0;
}

static int parse_u(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Reads the HOSTS file: one authority a line (no scheme, no path), at most
 * HOSTS_MAX lines.  Returns -1 with a message on a bad file. */
static int load_hosts(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gen_site: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[AUTH_MAX + 2];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        if (len == strlen(line) && !feof(f)) {
            fprintf(stderr, "gen_site: %s: line %u is too long\n", path, nhosts + 1);
            fclose(f);
            return -1;
        }
        line[len] = '\0';
        if (!len)
            continue;
        if (strpbrk(line, "/ \t\"<>") || nhosts == HOSTS_MAX) {
            fprintf(stderr, "gen_site: %s: bad authority '%s' (or more than %u)\n", path, line,
                    HOSTS_MAX);
            fclose(f);
            return -1;
        }
        if (nhosts == cap) {
            cap = cap ? 2 * cap : 64;
            void *p = realloc(hosts, cap * sizeof *hosts);
            if (!p) {
                fprintf(stderr, "gen_site: out of memory\n");
                fclose(f);
                return -1;
            }
            hosts = p;
        }
        memcpy(hosts[nhosts++], line, len + 1);
    }
    fclose(f);
    if (!nhosts) {
        fprintf(stderr, "gen_site: %s: no hosts\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long n, seed = 1;
    if (argc < 4 || argc > 6 || parse_u(argv[2], 10000000, &n) < 0 || n < 1 ||
        (argc >= 5 && parse_u(argv[4], UINT64_MAX, &seed) < 0)) {
        fprintf(stderr, "usage: gen_site DIR N MANIFEST [SEED [HOSTS]]   (1 <= N <= 10000000)\n");
        return 2;
    }
    const char *dir = argv[1];
    if (argc == 6 && load_hosts(argv[5]) < 0)
        return 1;
    if (make_dir(dir) < 0 || assets(dir) < 0)
        return 1;
    FILE *man = fopen(argv[3], "w");
    if (!man) {
        fprintf(stderr, "gen_site: %s: %s\n", argv[3], strerror(errno));
        return 1;
    }
    static buf_t b;
    unsigned long long bytes = 0;
    for (unsigned i = 0; i < n; i++) {
        char rel[64], path[4096];
        rng_state = (seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i + 1) * 0xD1B54A32D192ED03ull;
        if (!rng_state)
            rng_state = 1;
        size_t target = PAGE_MIN + rnd_below(PAGE_SPREAD);
        b.len = 0;
        head(&b, i);
        nav(&b, i, (unsigned)n);
        article(&b, i, (unsigned)n, target);
        footer(&b, i, (unsigned)n);
        page_path(i, rel, sizeof rel);
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        if (write_file(path, b.data, b.len) < 0)
            return 1;
        fprintf(man, "%s\n", path);
        bytes += b.len;
    }
    if (fclose(man) != 0) {
        fprintf(stderr, "gen_site: %s: %s\n", argv[3], strerror(errno));
        return 1;
    }
    printf("%llu pages, %llu bytes, %.1f KB per page", n, bytes, (double)bytes / (double)n / 1000);
    if (nhosts)
        printf(", %u hosts", nhosts);
    printf("\n");
    free(hosts);
    return 0;
}
