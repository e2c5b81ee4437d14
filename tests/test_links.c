/*
 * test_links.c -- which <link> elements the link extractor (parser/html.c)
 * follows: only those whose rel names a hyperlink to another page
 * (alternate, next, prev, author, help, license, ...), never one without
 * rel, nor a resource or hint (stylesheet, icon, preload, search, ...).
 *
 * Table-driven: each case is one page and the links expected from it, in
 * order; the failure message names the case and shows both lists.  Every
 * page is fed whole and one byte at a time.
 *
 * And the per-page link cap, --max-links-per-page: its default, and a crawl
 * (its own redis-server and the HTTP fixture, crawl_env.h) of a page with
 * more links than the cap: the first links in document order are followed,
 * no other, and the page's --out record says how many were not.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "crawl_env.h"
#include "fetch.h" /* FETCH_DEFAULT_MAX_LINKS_PER_PAGE */
#include "frontier.h"
#include "parser.h"

#define PAGE "http://example.com/dir/page.html"

typedef struct got {
    char buf[4096];
    size_t len;
} got_t;

static void collect(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    got_t *g = ud;
    static const char kinds[] = "ALFR";
    if (g->len + len + 4 < sizeof g->buf)
        g->len += (size_t)snprintf(g->buf + g->len, sizeof g->buf - g->len, "%c %.*s\n",
                                   kinds[kind], (int)len, url);
}

typedef struct lcase {
    const char *name;
    const char *html;
    const char *want; /* "K url\n" lines */
} lcase_t;

static void check(const lcase_t *c)
{
    static const size_t chunks[] = {1, 0};
    size_t len = strlen(c->html);
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        size_t chunk = chunks[k] ? chunks[k] : len;
        got_t g = {0};
        parser_config_t cfg = {0};
        parser_t *p = parser_new(&cfg, PAGE, "text/html", NULL, collect, &g);
        cr_assert_not_null(p, "parser_new");
        for (size_t i = 0; i < len; i += chunk)
            cr_assert_eq(parser_feed(p, c->html + i, len - i < chunk ? len - i : chunk), 0);
        cr_assert_eq(parser_finish(p), 0);
        g.buf[g.len] = '\0';
        cr_expect_str_eq(g.buf, c->want, "%s (fed in %zu-byte chunks):\ngot:\n%swant:\n%s", c->name,
                         chunk, g.buf, c->want);
        parser_free(p);
    }
}

Test(links, only_hyperlink_relations_of_link_are_followed)
{
    static const lcase_t cases[] = {
        {"no rel is no hyperlink",
         "<link rev=made href=\"pgsql-docs@lists.postgresql.org\"><link href=/norel>"
         "<link rel=\"\" href=/empty><link rel=\" \" href=/blank>",
         ""},
        {"search (OpenSearch description) is not a page",
         "<link rel=search type=\"application/opensearchdescription+xml\" href=/osd.xml>"
         "<link rel=\"search\" title=\"Search\" href=\"../search.html\">",
         ""},
        {"resources and hints",
         "<link rel=stylesheet href=/s.css><link rel='alternate stylesheet' href=/s2.css>"
         "<link rel=icon href=/i><link rel='shortcut icon' href=/i2>"
         "<link rel=apple-touch-icon href=/i3><link rel=mask-icon href=/i4>"
         "<link rel=preload as=style href=/p><link rel=modulepreload href=/m.js>"
         "<link rel=prefetch href=/pf><link rel=prerender href=/pr>"
         "<link rel=dns-prefetch href=//cdn.x><link rel=preconnect href=//cdn.y>"
         "<link rel=manifest href=/m><link rel=pingback href=/xmlrpc.php>"
         "<link rel=EditURI href=/rsd><link rel=wlwmanifest href=/w>"
         "<link rel=serviceworker href=/sw.js><link rel=expect href=#x>"
         "<link rel=compression-dictionary href=/d>",
         ""},
        {"relations that are not hyperlinks to pages",
         "<link rel=me href=https://social.example/@a><link rel=shortlink href=/?p=1>"
         "<link rel=profile href=http://gmpg.org/xfn/11><link rel=webmention href=/wm>"
         "<link rel=privacy-policy-x href=/x><link rel=nexts href=/y>",
         ""},
        {"hyperlink relations",
         "<link rel=alternate hreflang=de href=/de/><link rel=next href=page2.html>"
         "<link rel=prev href=page0.html><link rel=author href=/about>"
         "<link rel=help href=/help><link rel=license href=/license>"
         "<link rel=index href=/genindex><link rel=contents href=/toc>"
         "<link rel=up href=../><link rel=start href=/><link rel=first href=/p1>"
         "<link rel=last href=/p9><link rel=privacy-policy href=/privacy>"
         "<link rel=terms-of-service href=/tos><link rel=copyright href=/c>"
         "<link rel=glossary href=/g><link rel=chapter href=/ch><link rel=section href=/s>"
         "<link rel=subsection href=/ss><link rel=appendix href=/ap><link rel=home href=/h>",
         "L http://example.com/de/\nL http://example.com/dir/page2.html\n"
         "L http://example.com/dir/page0.html\nL http://example.com/about\n"
         "L http://example.com/help\nL http://example.com/license\n"
         "L http://example.com/genindex\nL http://example.com/toc\nL http://example.com/\n"
         "L http://example.com/\nL http://example.com/p1\nL http://example.com/p9\n"
         "L http://example.com/privacy\nL http://example.com/tos\nL http://example.com/c\n"
         "L http://example.com/g\nL http://example.com/ch\nL http://example.com/s\n"
         "L http://example.com/ss\nL http://example.com/ap\nL http://example.com/h\n"},
        {"tokens: any case, any ASCII whitespace, several at once",
         "<link rel=NEXT href=/n1><link rel=\"\tPrev\n\" href=/p1>"
         "<link rel=\"alternate  nofollow\" href=/nf><link rel='next prefetch' href=/np>"
         "<link rel='author icon' href=/ai><link rel='license search' href=/ls>",
         "L http://example.com/n1\nL http://example.com/p1\n"},
        {"alternate feeds and translations are pages to us",
         "<link rel=alternate type=application/rss+xml href=/feed.xml>"
         "<link rel=alternate media=print href=/print>",
         "L http://example.com/feed.xml\nL http://example.com/print\n"},
        {"canonical is no link; a and area need no rel",
         "<link rel=canonical href=/canon><a href=/a>x</a><area href=/area>"
         "<a rel=search href=/s>y</a>",
         "A http://example.com/a\nA http://example.com/area\nA http://example.com/s\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(&cases[i]);
}

/* ---- the per-page link cap (--max-links-per-page) ------------------------ */

/* give_nofollow (--links): the links a page says not to follow are given
 * too, flagged, both parsers alike (libxml2's and the sink's reader); they
 * count as dropped for nofollow, not as links; without it, not given. */
static void collect_flagged(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    got_t *g = ud;
    if (g->len + len + 8 < sizeof g->buf)
        g->len += (size_t)snprintf(g->buf + g->len, sizeof g->buf - g->len, "%s%.*s\n",
                                   kind & PARSER_LINK_NOFOLLOW ? "NF " : "", (int)len, url);
}

Test(links, nofollow_links_are_given_flagged_on_request)
{
    static const char *html = "<a href=a>a</a><a rel=nofollow href=b>b</a><a href=mailto:x>m</a>"
                              "<meta name=robots content=nofollow><a href=c>c</a>";
    static const char *want[2] = {"http://example.com/dir/a\n",
                                  "http://example.com/dir/a\nNF http://example.com/dir/b\n"
                                  "NF http://example.com/dir/c\n"};
    static const parser_sink_t none = {0};
    for (int give = 0; give < 2; give++)
        for (int sink = 0; sink < 2; sink++) {
            got_t g = {0};
            parser_config_t cfg = {.give_nofollow = give, .sink = sink ? &none : NULL};
            parser_t *p = parser_new(&cfg, PAGE, "text/html", NULL, collect_flagged, &g);
            cr_assert_not_null(p);
            cr_assert_eq(parser_feed(p, html, strlen(html)), 0);
            cr_assert_eq(parser_finish(p), 0);
            cr_expect_str_eq(g.buf, want[give], "give_nofollow %d, sink %d", give, sink);
            const parser_stats_t *st = parser_get_stats(p);
            cr_expect_eq(st->links, 1, "give_nofollow %d, sink %d", give, sink);
            cr_expect_eq(st->dropped_nofollow, 2, "give_nofollow %d, sink %d", give, sink);
            cr_expect_eq(st->dropped_scheme, 1);
            parser_free(p);
        }
}

Test(links, cap_is_an_option_with_a_default_of_at_least_50000)
{
    crawl_config_t cfg;
    cli_crawl_defaults(&cfg);
    char *argv0[] = {"crawl", NULL};
    cr_assert_eq(cli_crawl_parse(&cfg, 1, argv0), 0);
    cr_expect_eq(cfg.max_links_per_page, FETCH_DEFAULT_MAX_LINKS_PER_PAGE);
    cr_expect_geq(cfg.max_links_per_page, 50000, "a real API index page has 26,087 links");
    cli_crawl_free(&cfg);

    char *argv1[] = {"crawl", "--max-links-per-page", "7", NULL};
    cli_crawl_defaults(&cfg);
    cr_assert_eq(cli_crawl_parse(&cfg, 3, argv1), 0);
    cr_expect_eq(cfg.max_links_per_page, 7);
    cli_crawl_free(&cfg);

    char *argv2[] = {"crawl", "--max-links-per-page", "0", NULL};
    cli_crawl_defaults(&cfg);
    cr_expect_eq(cli_crawl_parse(&cfg, 3, argv2), -1, "0 links per page is refused");
    cli_crawl_free(&cfg);
}

/* Seed page: links to /p0../p9 (each twice, in order) and one off-site. */
static const char capped_page[] =
    "<a href=/p0>0</a><a href=/p0>0</a><a href=/p1>1</a><a href=http://offsite.example/>o</a>"
    "<a href=/p1>1</a><a href=/p2>2</a><a href=/p3>3</a><a href=/p4>4</a><a href=/p5>5</a>"
    "<a href=/p6>6</a><a href=/p7>7</a><a href=/p8>8</a><a href=/p9>9</a><a href=/p9>9</a>";

Test(links, page_past_the_cap_follows_the_first_links_and_is_flagged, .timeout = 120)
{
    crawl_env_t e;
    crawl_env_start(&e, NULL, "/");
    fx_http_page(e.h, "/", capped_page);
    char path[8];
    for (int i = 0; i < 10; i++) {
        snprintf(path, sizeof path, "/p%d", i);
        fx_http_page(e.h, path, "leaf");
    }
    char *argv[] = {CRAWLER_BIN, "crawl",
                    "--redis",   (char *)fx_redis_url(e.r),
                    "--seeds",   e.seeds,
                    "--delay",   "0",
                    "--out",     e.out,
                    "--quiet",   "--max-depth",
                    "1",         "--max-links-per-page",
                    "4",         NULL};
    int rc = fx_run(argv, NULL, e.log, 60000);
    char *log = fx_read_file(e.log, NULL);
    cr_assert_eq(rc, 0, "crawler exited %d: %s", rc, log ? log : "");
    free(log);
    for (int i = 0; i < 10; i++) {
        snprintf(path, sizeof path, "/p%d", i);
        cr_expect_eq(fx_http_hits(e.h, path), i < 4 ? 1u : 0u, "%s: %u hits (cap 4)", path,
                     fx_http_hits(e.h, path));
    }
    char *out = fx_read_file(e.out, NULL);
    cr_assert_not_null(out);
    char root[256];
    snprintf(root, sizeof root, "{\"url\":\"%s/\"", fx_http_base(e.h));
    char *line = strstr(out, root);
    cr_assert_not_null(line, "no record of the seed in:\n%s", out);
    char *eol = strchr(line, '\n');
    cr_assert_not_null(eol);
    *eol = '\0';
    cr_expect(strstr(line, "\"links_found\":4,\"links_over_cap\":6,") != NULL, "seed record: %s",
              line);
    free(out);
    frontier_stats_t st; /* crawler stats counts the page cut (the leaves have no links) */
    redisContext *c = fx_redis_connect(e.r);
    cr_assert_not_null(c);
    cr_assert_eq(frontier_stats(c, "default", &st), 0);
    cr_expect_eq(st.capped_pages, 1, "capped_pages %llu", (unsigned long long)st.capped_pages);
    cr_expect_eq(st.fetched, 5);
    redisFree(c);
    crawl_env_stop(&e);
}
