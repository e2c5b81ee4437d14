/*
 * test_sitemap.c -- <loc> extraction from XML sitemaps and sitemap indexes
 * (policy/sitemap.h): which Content-Types are XML, what a <loc> gives
 * (trimmed, entities decoded, any namespace prefix, CDATA), that any split
 * of the document into chunks gives the same URLs, that oversized values
 * and broken documents are survived, and that no external entity is ever
 * loaded.  Table-driven; failure messages name the case.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sitemap.h"

/* The <loc> values seen, one per line. */
typedef struct got {
    char buf[8192];
    size_t len, count;
} got_t;

static void collect(void *ud, const char *url, size_t len, double priority)
{
    (void)priority;
    got_t *g = ud;
    cr_assert_eq(strlen(url), len, "callback length of %s", url);
    g->count++;
    if (g->len + len + 2 < sizeof g->buf)
        g->len += (size_t)snprintf(g->buf + g->len, sizeof g->buf - g->len, "%s\n", url);
}

/* Parses doc fed in pieces of chunk bytes (0: all at once); returns what
 * sitemap_feed/sitemap_finish reported (0 or -1). */
static int parse(const char *doc, size_t len, size_t chunk, got_t *g)
{
    memset(g, 0, sizeof *g);
    sitemap_t *s = sitemap_new(collect, g);
    cr_assert_not_null(s);
    int rc = 0;
    if (chunk == 0)
        chunk = len ? len : 1;
    for (size_t i = 0; i < len; i += chunk)
        rc |= sitemap_feed(s, doc + i, len - i < chunk ? len - i : chunk);
    rc |= sitemap_finish(s);
    sitemap_free(s);
    return rc;
}

Test(sitemap, xml_content_types)
{
    static const struct {
        const char *ct;
        int want;
    } cases[] = {
        {"text/xml", 1},
        {"application/xml", 1},
        {"application/xml; charset=utf-8", 1},
        {"TEXT/XML", 1},
        {"application/rss+xml", 1},
        {"application/atom+xml;charset=utf-8", 1},
        {"application/xhtml+xml", 0},
        {"text/html", 0},
        {"text/xmlx", 0},
        {"application/xml-dtd", 0},
        {"+xml", 0},
        {"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(sitemap_is_xml(cases[i].ct), cases[i].want, "sitemap_is_xml(%s): want %d",
                     cases[i].ct ? cases[i].ct : "NULL", cases[i].want);
}

Test(sitemap, loc_values_of_each_form)
{
    static const struct {
        const char *name, *doc, *want;
        int rc;
    } cases[] = {
        {"urlset",
         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"
         "<url><loc>http://x.test/a</loc><lastmod>2024-01-01</lastmod></url>\n"
         "<url><loc>http://x.test/b</loc></url></urlset>\n",
         "http://x.test/a\nhttp://x.test/b\n", 0},
        {"sitemap index",
         "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
         "<sitemap><loc>http://x.test/s1.xml</loc></sitemap>"
         "<sitemap><loc>http://x.test/s2.xml.gz</loc></sitemap></sitemapindex>",
         "http://x.test/s1.xml\nhttp://x.test/s2.xml.gz\n", 0},
        {"whitespace trimmed", "<urlset><url><loc>\n\t  http://x.test/a  \r\n</loc></url></urlset>",
         "http://x.test/a\n", 0},
        {"entities decoded",
         "<urlset><url><loc>http://x.test/?a=1&amp;b=&lt;2&gt;</loc></url></urlset>",
         "http://x.test/?a=1&b=<2>\n", 0},
        {"character references", "<urlset><url><loc>http://x.test/&#x41;&#66;</loc></url></urlset>",
         "http://x.test/AB\n", 0},
        {"CDATA", "<urlset><url><loc><![CDATA[http://x.test/c?d&e]]></loc></url></urlset>",
         "http://x.test/c?d&e\n", 0},
        {"namespace prefix",
         "<sm:urlset xmlns:sm=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
         "<sm:url><sm:loc>http://x.test/p</sm:loc></sm:url></sm:urlset>",
         "http://x.test/p\n", 0},
        {"empty and blank loc skipped",
         "<urlset><url><loc></loc></url><url><loc>  </loc></url>"
         "<url><loc>http://x.test/z</loc></url></urlset>",
         "http://x.test/z\n", 0},
        {"other elements ignored",
         "<urlset><url><location>http://x.test/no</location><image:loc "
         "xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">"
         "http://x.test/img.png</image:loc></url></urlset>",
         "http://x.test/img.png\n", 0},
        {"not well-formed: what came before is kept",
         "<urlset><url><loc>http://x.test/1</loc></url><url><loc>http://x.test/2</url></urlset>",
         "http://x.test/1\n", -1},
        {"not XML at all", "this is not a sitemap", "", -1},
        {"empty document", "", "", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        got_t g;
        int rc = parse(cases[i].doc, strlen(cases[i].doc), 0, &g);
        cr_expect_eq(rc, cases[i].rc, "%s: rc %d, want %d", cases[i].name, rc, cases[i].rc);
        cr_expect_str_eq(g.buf, cases[i].want, "%s: got\n%s", cases[i].name, g.buf);
    }
}

Test(sitemap, every_split_into_chunks_gives_the_same_urls)
{
    static const char doc[] =
        "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
        "<url><loc> http://x.test/a?b=1&amp;c=2 </loc></url>"
        "<url><loc><![CDATA[http://x.test/cdata]]></loc></url>"
        "<url><loc>http://x.test/&#233;</loc></url></urlset>";
    got_t whole, part;
    cr_assert_eq(parse(doc, sizeof doc - 1, 0, &whole), 0);
    cr_assert_eq(whole.count, 3, "urls: %s", whole.buf);
    for (size_t chunk = 1; chunk < sizeof doc; chunk++) {
        cr_expect_eq(parse(doc, sizeof doc - 1, chunk, &part), 0, "chunks of %zu", chunk);
        cr_expect_str_eq(part.buf, whole.buf, "chunks of %zu bytes", chunk);
    }
}

Test(sitemap, oversized_loc_is_dropped_and_later_ones_found)
{
    size_t big = SITEMAP_MAX_LOC + 100;
    const char *head = "<urlset><url><loc>http://x.test/", *tail =
                                                               "</loc></url><url><loc>http://"
                                                               "x.test/after</loc></url></urlset>";
    size_t hl = strlen(head), tl = strlen(tail);
    char *doc = malloc(hl + big + tl + 1);
    cr_assert_not_null(doc);
    memcpy(doc, head, hl);
    memset(doc + hl, 'a', big);
    memcpy(doc + hl + big, tail, tl + 1);
    got_t g;
    cr_expect_eq(parse(doc, strlen(doc), 1000, &g), 0);
    cr_expect_str_eq(g.buf, "http://x.test/after\n", "got %s", g.buf);
    /* just under the limit is kept */
    size_t fit = SITEMAP_MAX_LOC - 1 - strlen("http://x.test/");
    memset(doc + hl, 'b', fit);
    memcpy(doc + hl + fit, tail, tl + 1);
    cr_expect_eq(parse(doc, strlen(doc), 0, &g), 0);
    cr_expect_eq(g.count, 2, "a %d-byte loc must be kept", SITEMAP_MAX_LOC - 1);
    free(doc);
}

/* XML_PARSE_NONET and no entity substitution: neither an external entity
 * nor an external DTD is read. */
Test(sitemap, external_entities_are_never_loaded)
{
    char path[] = "/tmp/test_sitemap_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static const char secret[] = "http://secret.test/LEAKED";
    cr_assert_eq(write(fd, secret, sizeof secret - 1), (ssize_t)(sizeof secret - 1));
    close(fd);
    char doc[1024];
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [<!ENTITY x SYSTEM \"file://%s\">]>\n"
             "<urlset><url><loc>http://x.test/before</loc></url><url><loc>&x;</loc></url>"
             "<url><loc>http://x.test/after</loc></url></urlset>",
             path);
    got_t g;
    /* the entity is not substituted: the reference is an error that ends
     * the document there, what came before is kept */
    cr_expect_eq(parse(doc, strlen(doc), 0, &g), -1);
    cr_expect(strstr(g.buf, "LEAKED") == NULL, "external entity loaded: %s", g.buf);
    cr_expect_str_eq(g.buf, "http://x.test/before\n");
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset SYSTEM \"file://%s\">\n"
             "<urlset><url><loc>http://x.test/dtd</loc></url></urlset>",
             path);
    cr_expect_eq(parse(doc, strlen(doc), 0, &g), 0, "an external DTD is not fetched");
    cr_expect_str_eq(g.buf, "http://x.test/dtd\n");
    unlink(path);
}

Test(sitemap, feeding_after_an_error_is_ignored)
{
    static const char bad[] = "<urlset><url><loc>http://x.test/1</loc></url></nope>",
                      more[] = "<url><loc>http://x.test/2</loc></url>";
    got_t g = {0};
    sitemap_t *s = sitemap_new(collect, &g);
    cr_assert_not_null(s);
    cr_expect_eq(sitemap_feed(s, bad, strlen(bad)), -1);
    cr_expect_eq(sitemap_feed(s, more, strlen(more)), -1);
    cr_expect_eq(sitemap_finish(s), -1);
    cr_expect_str_eq(g.buf, "http://x.test/1\n");
    sitemap_free(s);
    sitemap_free(NULL);
}

/* The <priority> of each <url> comes with its <loc>, before or after it;
 * none, or one not a number 0..1, is -1; a sitemap index's <loc> has none. */
typedef struct prios {
    char buf[1024];
    size_t len;
} prios_t;

static void collect_prio(void *ud, const char *url, size_t len, double priority)
{
    prios_t *g = ud;
    (void)len;
    g->len += (size_t)snprintf(g->buf + g->len, sizeof g->buf - g->len, "%s %.2f\n", url, priority);
}

Test(sitemap, a_urls_priority_comes_with_its_loc)
{
    static const char doc[] =
        "<urlset><url><loc>http://x.test/a</loc><priority>0.9</priority></url>"
        "<url><priority> 0.2 </priority><loc>http://x.test/b</loc></url>"
        "<url><loc>http://x.test/c</loc></url>"
        "<url><loc>http://x.test/d</loc><priority>high</priority></url>"
        "<url><loc>http://x.test/e</loc><priority>1.5</priority></url></urlset>";
    for (size_t chunk = 1; chunk <= sizeof doc; chunk = chunk * 3 + 1) {
        prios_t g = {0};
        sitemap_t *s = sitemap_new(collect_prio, &g);
        cr_assert_not_null(s);
        size_t len = sizeof doc - 1;
        for (size_t i = 0; i < len; i += chunk)
            sitemap_feed(s, doc + i, len - i < chunk ? len - i : chunk);
        sitemap_finish(s);
        sitemap_free(s);
        cr_expect_str_eq(g.buf,
                         "http://x.test/a 0.90\nhttp://x.test/b 0.20\nhttp://x.test/c -1.00\n"
                         "http://x.test/d -1.00\nhttp://x.test/e -1.00\n",
                         "chunk %zu: %s", chunk, g.buf);
    }
}

Test(sitemap, a_loc_cut_short_of_its_url_end_is_still_given)
{
    static const char doc[] = "<urlset><url><loc>http://x.test/a</loc><priority>0.8</priority>";
    prios_t g = {0};
    sitemap_t *s = sitemap_new(collect_prio, &g);
    cr_assert_not_null(s);
    sitemap_feed(s, doc, sizeof doc - 1);
    sitemap_finish(s);
    sitemap_free(s);
    cr_expect_str_eq(g.buf, "http://x.test/a 0.80\n");
    static const char index[] =
        "<sitemapindex><sitemap><loc>http://x.test/s.xml</loc><priority>0.9</priority>"
        "</sitemap></sitemapindex>";
    prios_t h = {0};
    s = sitemap_new(collect_prio, &h);
    cr_assert_not_null(s);
    sitemap_feed(s, index, sizeof index - 1);
    cr_expect_eq(sitemap_finish(s), 0);
    sitemap_free(s);
    cr_expect_str_eq(h.buf, "http://x.test/s.xml -1.00\n", "an index's <loc> has no priority");
}

Test(sitemap, an_image_loc_inside_a_url_has_no_priority_and_the_urls_keeps_its_own)
{
    static const char doc[] =
        "<urlset xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">"
        "<url><loc>http://x.test/a</loc><priority>0.9</priority>"
        "<image:image><image:loc>http://x.test/a.jpg</image:loc></image:image></url>"
        "<url><loc>http://x.test/b</loc>"
        "<image:image><image:loc>http://x.test/b.jpg</image:loc></image:image>"
        "<priority>0.7</priority></url></urlset>";
    prios_t g = {0};
    sitemap_t *s = sitemap_new(collect_prio, &g);
    cr_assert_not_null(s);
    sitemap_feed(s, doc, sizeof doc - 1);
    cr_expect_eq(sitemap_finish(s), 0);
    sitemap_free(s);
    cr_expect_str_eq(g.buf, "http://x.test/a.jpg -1.00\nhttp://x.test/a 0.90\n"
                            "http://x.test/b.jpg -1.00\nhttp://x.test/b 0.70\n");
}
