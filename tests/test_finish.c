/* frontier_finish_start (a call in flight, frontier_call_end) against a
 * real redis-server: a finish in flight while the claims go on does exactly
 * what frontier_finish does, and the handle finishing need not be the one
 * that claimed (same worker id, another link). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "side.h"

#define CRAWL "fin"

static long long stat_of(redisContext *c, const char *field)
{
    redisReply *r = redisCommand(c, "HGET crawler:{" CRAWL "}:stats %s", field);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "HGET: %s", r ? r->str : c->errstr);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

Test(finish, split_finish_on_a_second_connection_runs_while_the_first_claims)
{
    fx_redis_t *r = side_redis();
    side_t a, b;
    side_open(&a, r, CRAWL, "w1", 1000);
    side_open(&b, r, CRAWL, frontier_worker_id(a.f), 1000); /* the finishing side: same worker */
    cr_assert_str_eq(frontier_worker_id(b.f), "w1");

    char urls[40][64];
    const char *seeds[40];
    for (int i = 0; i < 40; i++) {
        snprintf(urls[i], sizeof urls[i], "http://h%d.test/p", i % 4);
        snprintf(urls[i] + strlen(urls[i]), sizeof urls[i] - strlen(urls[i]), "%d", i);
        seeds[i] = urls[i];
    }
    size_t added = 0;
    cr_assert_eq(frontier_seed(a.f, seeds, 20, 0, &added), 0);
    cr_assert_eq(added, 20);

    frontier_item_t items[20] = {0};
    size_t n = side_claim(a.f, items, 10);
    cr_assert_eq(n, 10, "claimed %zu", n);

    /* each claimed page links to one of the 20 unseeded URLs and to a seed */
    const char *links[10][2];
    size_t nnew[10];
    frontier_done_t pages[10];
    for (size_t i = 0; i < n; i++) {
        links[i][0] = seeds[20 + i];
        links[i][1] = seeds[i];
        pages[i] = (frontier_done_t){.item = &items[i],
                                     .outcome = {.status = 200, .bytes = 10},
                                     .links = links[i],
                                     .nlinks = 2,
                                     .link_depth = items[i].depth + 1,
                                     .nnew = &nnew[i]};
    }
    frontier_call_t *p = NULL;
    int rc = frontier_finish_start(b.f, pages, n, &p);
    cr_assert_eq(rc, 0, "frontier_finish_start: %s", crawl_strerror(rc));
    cr_assert_not_null(p);

    /* meanwhile the claiming side goes on with its own connection */
    frontier_item_t more[20] = {0};
    size_t m = side_claim(a.f, more, 20);
    cr_assert_geq(m, 10, "claimed %zu more", m);

    rc = frontier_call_end(b.f, p);
    frontier_call_free(p);
    cr_assert_eq(rc, 0, "the finish: %s", crawl_strerror(rc));
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(nnew[i], 1, "page %zu: %zu new links", i, nnew[i]);
    cr_expect_eq(stat_of(a.c, "fetched"), 10);
    cr_expect_eq(stat_of(a.c, "enqueued"), 30);
    cr_expect_eq(stat_of(a.c, "inflight"), (long long)m);

    /* the same pages again: their leases are gone, nothing changes */
    rc = frontier_finish_start(b.f, pages, n, &p);
    cr_assert_eq(rc, 0);
    rc = frontier_call_end(b.f, p);
    frontier_call_free(p);
    cr_expect_eq(rc, CRAWL_ELEASE, "second finish: %s", crawl_strerror(rc));
    cr_expect_eq(stat_of(a.c, "fetched"), 10);
    cr_expect_eq(stat_of(a.c, "enqueued"), 30);

    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    for (size_t i = 0; i < m; i++)
        frontier_item_clear(&more[i]);
    side_check(a.c, a.f, 1000);
    side_close(&b);
    side_close(&a);
    fx_redis_stop(r);
}

Test(finish, start_refuses_bad_pages_before_sending_anything)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 1000);
    frontier_item_t bogus = {.url = "http://h.test/", .lease = "no-such-lease"};
    frontier_done_t d = {.item = &bogus, .outcome = {.status = 200}};
    frontier_call_t *p = (frontier_call_t *)&d; /* must be reset to NULL */
    cr_expect_eq(frontier_finish_start(a.f, &d, 1, &p), CRAWL_EINVAL);
    cr_expect_null(p);
    cr_expect_eq(frontier_finish_start(a.f, NULL, 1, &p), CRAWL_EINVAL);
    cr_expect_eq(frontier_call_end(a.f, NULL), CRAWL_EINVAL);
    cr_expect_eq(rconn_link_pending(fr_link_of(a.f)), 0, "something was sent");
    redisReply *rep = redisCommand(a.c, "PING");
    cr_assert(rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0);
    freeReplyObject(rep);
    cr_expect_eq(stat_of(a.c, "fetched"), 0);
    side_check(a.c, a.f, 1000);
    side_close(&a);
    fx_redis_stop(r);
}

static long long error_count(redisContext *c, const char *kind)
{
    redisReply *r = redisCommand(c, "HGET crawler:{" CRAWL "}:errors %s", kind);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "HGET: %s", r ? r->str : c->errstr);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

/* One call finishing pages of two workers, one of them released before
 * (its lease gone) and one given twice: the call says CRAWL_ELEASE and
 * counts exactly the pages whose lease it took -- their statuses, bytes
 * and error kinds, none of the others'. */
Test(finish, a_group_with_lost_leases_counts_only_the_pages_it_finished)
{
    fx_redis_t *r = side_redis();
    side_t a, b;
    side_open(&a, r, CRAWL, "w1", 1000);
    side_open(&b, r, CRAWL, "w2", 1000);
    const char *urls[] = {"http://x.test/1", "http://y.test/2", "http://x.test/3",
                          "http://y.test/4", "http://x.test/5", "http://y.test/6"};
    side_seed_all(a.f, urls, 6);
    frontier_item_t ia[3] = {0}, ib[3] = {0};
    cr_assert_eq(side_claim(a.f, ia, 3), 3);
    cr_assert_eq(side_claim(b.f, ib, 3), 3);
    cr_assert_eq(frontier_release(a.f, &ia[2], 1), 0); /* its lease is gone */
    frontier_done_t d[6] = {
        {.item = &ia[0], .outcome = {.status = 200, .bytes = 10}},
        {.item = &ia[1], .outcome = {.status = 503, .error = "http-5xx", .bytes = 20}},
        {.item = &ia[2], .outcome = {.status = 404, .error = "gone", .bytes = 30}},
        {.item = &ib[0], .outcome = {.status = 0, .error = "timeout", .bytes = 40}},
        {.item = &ib[1], .outcome = {.status = 301, .bytes = 50}},
        {.item = &ib[0], .outcome = {.status = 200, .error = "twice", .bytes = 60}},
    };
    int rc = frontier_finish(a.f, d, 6);
    cr_expect_eq(rc, CRAWL_ELEASE, "finish: %s", crawl_strerror(rc));
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(a.c, CRAWL, &st), 0);
    cr_expect_eq(st.fetched, 4);
    cr_expect_eq(st.bytes, 120);
    cr_expect_eq(st.status_2xx, 1);
    cr_expect_eq(st.status_3xx, 1);
    cr_expect_eq(st.status_4xx, 0);
    cr_expect_eq(st.status_5xx, 1);
    cr_expect_eq(st.errors, 2);
    cr_expect_eq(error_count(a.c, "http-5xx"), 1);
    cr_expect_eq(error_count(a.c, "timeout"), 1);
    cr_expect_eq(error_count(a.c, "gone"), 0, "a lost page's error was counted");
    cr_expect_eq(error_count(a.c, "twice"), 0, "a page given twice was counted twice");
    cr_expect_eq(st.in_flight, 1, "only ib[2] is still leased");
    cr_expect_eq(st.queued, 1, "the released page");
    for (int i = 0; i < 3; i++) {
        frontier_item_clear(&ia[i]);
        frontier_item_clear(&ib[i]);
    }
    side_check(a.c, a.f, 1000);
    side_close(&b);
    side_close(&a);
    fx_redis_stop(r);
}

/* One finish of 295 pages without links is 3 calls (128 + 128 + 39 pages);
 * one of 5 pages with 1,000 links each is 3 calls (2 + 2 + 1 pages: at most
 * 2,048 links a call); either way every page and every link gets in. */
Test(finish, groups_are_cut_at_128_pages_and_2048_links)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 100000);
    enum { N = 300, LP = 5, NL = 1000 };
    static char buf[N][64], lbuf[LP * NL][64];
    static const char *urls[N], *links[LP * NL];
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "http://h%d.test/p%d", i % 3, i);
        urls[i] = buf[i];
    }
    for (int i = 0; i < LP * NL; i++) {
        snprintf(lbuf[i], sizeof lbuf[i], "http://l%d.test/q%d", i % 5, i);
        links[i] = lbuf[i];
    }
    side_seed_all(a.f, urls, N);
    static frontier_item_t items[N];
    static frontier_done_t d[N];
    size_t n = side_claim(a.f, items, N);
    cr_assert_eq(n, N, "claimed %zu", n);

    for (int i = 0; i < N; i++)
        d[i] = (frontier_done_t){.item = &items[i], .outcome = {.status = 200, .bytes = 1}};
    side_reset_stats(a.c);
    cr_assert_eq(frontier_finish(a.f, d, N - LP), 0);
    cr_expect_eq(side_calls(a.c, "fcall"), 3, "%lld calls for %d pages", side_calls(a.c, "fcall"),
                 N - LP);

    for (int i = 0; i < LP; i++) {
        d[N - LP + i].links = links + i * NL;
        d[N - LP + i].nlinks = NL;
        d[N - LP + i].link_depth = 1;
    }
    side_reset_stats(a.c);
    cr_assert_eq(frontier_finish(a.f, d + N - LP, LP), 0);
    cr_expect_eq(side_calls(a.c, "fcall"), 3, "%lld calls for %d pages of %d links",
                 side_calls(a.c, "fcall"), LP, NL);

    frontier_stats_t st;
    cr_assert_eq(frontier_stats(a.c, CRAWL, &st), 0);
    cr_expect_eq(st.fetched, N);
    cr_expect_eq(st.in_flight, 0);
    cr_expect_eq(st.new_links, LP * NL);
    cr_expect_eq(st.queued, LP * NL);
    for (int i = 0; i < N; i++)
        frontier_item_clear(&items[i]);
    side_check(a.c, a.f, 100000);
    side_close(&a);
    fx_redis_stop(r);
}

/* A link holding a space, tab or newline is not a normalized URL and would
 * break the queue entry "DEPTH TRIES URL" apart: it is skipped (counted in
 * skipped_links), the page's other links get in, and a seed like it is not
 * added. */
Test(finish, links_with_whitespace_are_skipped_not_queued)
{
    fx_redis_t *r = side_redis();
    side_t a;
    side_open(&a, r, CRAWL, NULL, 1000);
    const char *seed = "http://ws.test/";
    side_seed_all(a.f, &seed, 1);
    frontier_item_t it[1] = {0};
    cr_assert_eq(side_claim(a.f, it, 1), 1);
    const char *links[] = {"http://ws.test/a b", "http://ws.test/t\tab", "http://ws.test/n\nl",
                           "http://ws.test/ok"};
    size_t nnew = 9;
    frontier_done_t d = {.item = &it[0],
                         .outcome = {.status = 200, .bytes = 1},
                         .links = links,
                         .nlinks = 4,
                         .link_depth = 1,
                         .nnew = &nnew};
    cr_assert_eq(frontier_finish(a.f, &d, 1), 0);
    cr_expect_eq(nnew, 1);
    frontier_stats_t st;
    cr_assert_eq(frontier_stats(a.c, CRAWL, &st), 0);
    cr_expect_eq(st.new_links, 1);
    cr_expect_eq(st.skipped_links, 3);
    cr_expect_eq(st.queued, 1);
    frontier_item_clear(&it[0]);
    cr_assert_eq(side_claim(a.f, it, 1), 1);
    cr_expect_str_eq(it[0].url, "http://ws.test/ok");
    frontier_item_clear(&it[0]);
    const char *bad = "http://ws.test/x y";
    size_t added = 9;
    cr_assert_eq(frontier_seed(a.f, &bad, 1, 0, &added), 0);
    cr_expect_eq(added, 0);
    side_check(a.c, a.f, 1000);
    side_close(&a);
    fx_redis_stop(r);
}

/* The visited set is keyed on parser_url_key: spellings of one resource
 * that differ only in escapes of unreserved characters (and a stray '%')
 * are one URL to it, whichever comes first, while each is requested as a
 * browser spells it.  Every pair: the first new, the second seen, on the
 * Redis filter (a handle without a local cache entry for it: b) and on the
 * local cache (a, which offered the first). */
Test(finish, spellings_that_differ_only_in_unreserved_escapes_are_one_visited_url)
{
    static const struct {
        const char *first, *second;
    } pairs[] = {
        {"http://key.test/~user", "http://key.test/%7Euser"},
        {"http://key.test/%7ea", "http://key.test/~a"},
        {"http://key.test/q?x=%41", "http://key.test/q?x=A"},
        {"http://key.test/100%-cotton", "http://key.test/100%25-cotton"},
        {"http://key.test/%2D%2E%5F", "http://key.test/-._"},
    };
    fx_redis_t *r = side_redis();
    side_t a, b;
    side_open(&a, r, CRAWL, NULL, 1000);
    side_open(&b, r, CRAWL, NULL, 1000);
    const char *seed = "http://key.test/";
    side_seed_all(a.f, &seed, 1);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        for (int round = 0; round < 3; round++) { /* first on a, second on b, second on a */
            side_t *s = round == 1 ? &b : &a;
            frontier_item_t it[1] = {0};
            const char *seed2 = round ? pairs[i].second : pairs[i].first;
            size_t added = 9;
            cr_assert_eq(frontier_seed(s->f, &seed2, 1, 0, &added), 0);
            cr_expect_eq(added, round == 0, "%s (after %s, round %d): %zu added", seed2,
                         pairs[i].first, round, added);
            while (side_claim(s->f, it, 1) == 1) { /* drain: nothing left leased */
                frontier_done_t d = {.item = &it[0], .outcome = {.status = 200, .bytes = 1}};
                cr_assert_eq(frontier_finish(s->f, &d, 1), 0);
                frontier_item_clear(&it[0]);
            }
        }
    }
    side_check(a.c, a.f, 1000);
    side_close(&b);
    side_close(&a);
    fx_redis_stop(r);
}
