/*
 * fetch_result.c -- what a finished transfer gives (fetch.h's results):
 * the page with its status, error kind and text, links, canonical and
 * Location, and whether a failure is worth a retry; or a robots.txt body,
 * and whether its redirect is to be followed (fetch_robots_hop: the scope's
 * host rules and a hop count; fetch.c follows it, and the private-address
 * guard judges each hop).  A page redirect is a link of its page
 * (redirect_link: one level deeper, its hops capped by --max-redirects).
 * Reads a finished transfer, changes nothing but its result.  Redis keys:
 * none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fetch_internal.h"
#include "metrics.h"
#include "outcome.h"
#include "parser.h"
#include "sitemap.h"

/* The page of x's item (taken over) with its type, size and time. */
static void fill_page(xfer_t *x, fetch_result_t *r, long status, const char *kind, const char *text)
{
    r->kind = FETCH_PAGE;
    r->retry_after_ms = x->retry_after_ms;
    page_init(&r->page, &x->item, (int)status, kind, text);
    r->page.ctype = x->ctype ? strdup(x->ctype) : NULL;
    r->page.bytes = x->bytes;
    r->page.fetch_ms = clock_now_ms() - x->t_start;
}

static void take_links(page_t *p, xfer_t *x)
{
    p->links = x->links;
    p->nlinks = x->nlinks;
    p->link_first = x->links_first;
    p->links_over_cap = x->links_over_cap;
    x->links = NULL;
    x->links_first = NULL;
    x->nlinks = x->links_cap = 0;
    x->links_over_cap = 0;
    free(x->seen);
    x->seen = NULL;
    x->seen_cap = x->nseen = 0;
}

/* A 3xx page's Location as its one link (scope-filtered like any link):
 * 1 if it was a URL, else 0.  Past --max-redirects hops in a row it is not
 * added, and *too_many is set. */
static int redirect_link(xfer_t *x, int *too_many)
{
    char *target = NULL;
    if (!x->location ||
        parser_url_normalize(x->item.url, x->location, x->env->cfg->max_url_length, &target) < 0)
        return 0;
    *too_many = x->item.hops >= x->env->cfg->max_redirects;
    if (!*too_many)
        xfer_add_link(x, target, strlen(target));
    free(target);
    return 1;
}

static const page_exchange_t *exchange_of(xfer_t *x)
{
    if (!x->env->record || !x->resphead.len)
        return NULL;
    x->ex =
        (page_exchange_t){.request = x->reqhead.p,
                          .request_len = x->reqhead.len,
                          .response_head = x->resphead.p,
                          .response_head_len = x->resphead.len,
                          .body = x->body.p,
                          .body_len = x->body.len,
                          .ip = x->ip[0] ? x->ip : NULL,
                          .decoded = !x->raw,
                          .truncated = x->too_large || x->raw_cut,
                          .time_ms = (int64_t)(clock_wall_ms() - (clock_now_ms() - x->t_start))};
    return &x->ex;
}

/* A response was read (any status below 500 but 429): the page with its links. */
static void read_page(xfer_t *x, long code, fetch_result_t *r)
{
    int too_many = 0, redirect = code >= 300 && code < 400 && redirect_link(x, &too_many);
    uint32_t hops = x->item.hops;
    char text[96];
    snprintf(text, sizeof text, "more than %u redirects in a row (--max-redirects)",
             x->env->cfg->max_redirects);
    if (x->parser)
        parser_finish(x->parser);
    if (x->text && text_finish(x->text) < 0) { /* out of memory: no text for this page */
        text_free(x->text);
        x->text = NULL;
    }
    if (x->sitemap)
        sitemap_finish(x->sitemap);
    const char *canon = x->parser ? parser_canonical(x->parser) : NULL;
    r->exchange = exchange_of(x);
    const char *kind = x->too_large ? crawl_kind_name(CRAWL_KIND_TOO_LARGE)
                       : too_many   ? crawl_kind_name(CRAWL_KIND_REDIRECTS)
                                    : NULL;
    fill_page(x, r, code, kind,
              x->too_large ? "body larger than --max-size"
              : too_many   ? text
                           : NULL);
    if (x->parser && parser_nofollow(x->parser)) { /* a late meta robots nofollow */
        for (size_t i = 0; i < x->nlinks; i++)
            free(x->links[i]);
        x->nlinks = 0;
        x->links_over_cap = 0;
        anchors_none_followed(x->anchors, ANCHOR_NOFOLLOW);
    }
    anchors_finish(x->anchors);
    take_links(&r->page, x);
    if (redirect) /* one level deeper (page_init), and one hop further */
        r->page.link_hops = hops + 1;
    r->page.canonical = canon ? strdup(canon) : NULL;
    r->page.location = x->location ? strdup(x->location) : NULL;
    r->page.etag = x->etag ? strdup(x->etag) : NULL;
    r->page.last_modified = x->last_modified ? strdup(x->last_modified) : NULL;
    r->page.text = x->text; /* (the page's now) */
    x->text = NULL;
    r->page.anchors = x->anchors;
    x->anchors = NULL;
}

static void page_result(xfer_t *x, CURLcode res, fetch_result_t *r)
{
    long code = 0;
    char *ip = NULL;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
        snprintf(x->ip, sizeof x->ip, "%s", ip);
    const char *etext = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    metrics_transfer_curl(x->h, x->bytes); /* --metrics: bytes, time, time to first byte */
    if (x->blocked) {
        fill_page(x, r, 0, crawl_kind_name(CRAWL_KIND_BLOCKED),
                  "address is private/loopback (see --allow-private)");
    } else if (res != CURLE_OK && !(x->too_large && res == CURLE_WRITE_ERROR)) {
        r->retry = outcome_retryable(res);
        fill_page(x, r, code, outcome_error_kind(res), etext);
    } else if (code == 429 || code >= 500) {
        r->retry = 1;
        fill_page(x, r, code,
                  crawl_kind_name(code == 429 ? CRAWL_KIND_HTTP_429 : CRAWL_KIND_HTTP_5XX), NULL);
    } else {
        read_page(x, code, r);
    }
    if (ip && *ip)
        snprintf(r->page.ip, sizeof r->page.ip, "%s", ip);
}

char *fetch_robots_hop(xfer_t *x, CURLcode res)
{
    long code = 0;
    char *cur = NULL, *target = NULL, host[256];
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &cur);
    if (res != CURLE_OK || code < 300 || code >= 400 || !x->location || !cur ||
        x->hops >= FETCH_ROBOTS_MAX_REDIRECTS)
        return NULL;
    if (parser_url_normalize(cur, x->location, x->env->cfg->max_url_length, &target) < 0)
        return NULL;
    if (parser_url_host(target, host, sizeof host) < 0 || !scope_allows_host(x->env->scope, host)) {
        free(target);
        return NULL;
    }
    return target;
}

static void robots_result(xfer_t *x, CURLcode res, fetch_result_t *r)
{
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &r->status);
    r->kind = FETCH_ROBOTS;
    r->origin = x->origin;
    r->moved_to = x->moved_to;
    r->complete =
        res == CURLE_OK || (res == CURLE_WRITE_ERROR && x->body.len >= FETCH_ROBOTS_MAX_BYTES);
    r->blocked = x->blocked;
    r->tls_refused = res != CURLE_OK &&
                     !strcmp(outcome_error_kind(res), crawl_kind_name(CRAWL_KIND_TLS)) &&
                     !outcome_retryable(res);
    if (res != CURLE_OK && !r->complete && !x->blocked) { /* the robots gate says why */
        r->error_kind = outcome_error_kind(res);
        r->error_text = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    }
    r->body = x->body.p ? x->body.p : "";
    r->body_len = x->body.len;
}

void fetch_result_make(xfer_t *x, CURLcode res)
{
    memset(&x->res, 0, sizeof x->res);
    if (x->kind == XF_ROBOTS)
        robots_result(x, res, &x->res);
    else
        page_result(x, res, &x->res);
}
