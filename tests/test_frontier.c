/* The shared frontier against a real redis-server, driven from one
 * process: seeding and seed hosts, finishing pages and their links, host
 * delays and origins, retries, limits, lost leases, release, stats and
 * reset, and the seed/stats/reset subcommands.  (Worker processes:
 * test_workers.c.)  Verdicts rest on server timestamps (claimed_ms) and on
 * sets of URLs, never on local wall-clock timing; every test ends with the
 * frontier's invariant checker (env_stop). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier_env.h"

/* ---- tests ------------------------------------------------------------------ */

Test(frontier, seeding_twice_adds_nothing_and_force_requeues)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/", "http://a.test/x", "http://b.test:8080/"};
    cr_assert_eq(seed_urls(e.f, urls, 3, 0), 3);
    cr_assert_eq(seed_urls(e.f, urls, 3, 0), 0, "seeding twice must add nothing");
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.queued, 3);
    cr_assert_eq(s.hosts, 2);
    cr_assert_eq(seed_urls(e.f, urls, 2, 1), 2, "--force re-queues seen seeds");
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.queued, 5);
    cr_assert_eq(fx_redis_queue_len(e.c, "crawler:{t}:", "http://b.test:8080"), 1);
    env_stop(&e);
}

static long long is_seed_host(redisContext *c, const char *host)
{
    return redis_int(c, "SISMEMBER crawler:{t}:seedhosts %s", host);
}

/* The seeding script records the hosts of its seeds itself, in the same
 * atomic call (one FCALL, no command of its own from the client), unless
 * told they are no seeds; bad flags are refused before anything is sent. */
Test(frontier, seeding_records_the_seed_hosts_in_the_same_call)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/1", "http://a.test/2", "https://b.test:8443/",
                          "http://u:p@c.test/x"};
    redisReply *r = redisCommand(e.c, "CONFIG RESETSTAT");
    freeReplyObject(r);
    cr_assert_eq(seed_urls(e.f, urls, 4, 0), 4);
    r = redisCommand(e.c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_expect(strstr(r->str, "cmdstat_fcall:calls=1,"), "one call: %s", r->str);
    freeReplyObject(r);
    cr_assert_eq(redis_int(e.c, "SCARD %s", "crawler:{t}:seedhosts"), 3);
    cr_expect_eq(is_seed_host(e.c, "a.test"), 1);
    cr_expect_eq(is_seed_host(e.c, "b.test"), 1);
    cr_expect_eq(is_seed_host(e.c, "c.test"), 1, "the host, not u:p@c.test");
    cr_assert_eq(seed_urls(e.f, urls, 2, FRONTIER_SEED_FORCE), 2, "force re-queues seen seeds");
    const char *sitemap[] = {"http://d.test/sitemap.xml"};
    cr_assert_eq(seed_urls(e.f, sitemap, 1, FRONTIER_SEED_NO_HOSTS | FRONTIER_SEED_FORCE), 1);
    cr_expect_eq(is_seed_host(e.c, "d.test"), 0, "not a seed: host not recorded");
    size_t added = 9;
    cr_expect_eq(frontier_seed(e.f, sitemap, 1, 8, &added), CRAWL_EINVAL, "an unknown flag");
    cr_expect_eq(added, 0);
    cr_expect_eq(redis_int(e.c, "SCARD %s", "crawler:{t}:seedhosts"), 3);
    env_stop(&e);
}

Test(frontier, finishing_a_page_queues_only_new_links)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://a.test/"};
    seed_urls(e.f, seed, 1, 0);
    frontier_item_t it[4];
    size_t n;
    cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(it[0].url, "http://a.test/");
    cr_assert_eq(it[0].depth, 0);
    const char *links[] = {"http://a.test/", "http://a.test/1", "http://c.test/2"};
    size_t nnew = 99;
    finish_one(e.f, &it[0], links, 3, &nnew, 0);
    cr_assert_eq(nnew, 2, "the page itself is already seen");
    frontier_item_clear(&it[0]);
    cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(it[i].depth, 1);
        finish_one(e.f, &it[i], links, 3, &nnew, 0);
        cr_assert_eq(nnew, 0);
        frontier_item_clear(&it[i]);
    }
    cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_DONE);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.fetched, 3);
    cr_assert_eq(s.status_2xx, 3);
    cr_assert_eq(s.new_links, 2);
    cr_assert_eq(s.seen_links, 7);
    cr_assert_eq(s.bytes, 300);
    env_stop(&e);
}

Test(frontier, a_page_with_thousands_of_links_is_finished_in_one_step)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://big.test/"};
    seed_urls(e.f, seed, 1, 0);
    enum { N = 9000 };
    char(*buf)[48] = malloc(N * sizeof *buf);
    const char **links = malloc(N * sizeof *links);
    cr_assert(buf && links);
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "http://big.test/%d", i);
        links[i] = buf[i];
    }
    frontier_item_t it;
    size_t n, nnew = 0;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    finish_one(e.f, &it, links, N, &nnew, 0);
    cr_assert_eq(nnew, N);
    frontier_item_clear(&it);
    cr_assert_eq(fx_redis_queue_len(e.c, "crawler:{t}:", "http://big.test"), N);
    free(buf);
    free(links);
    env_stop(&e);
}

/* Links of one page spread over many hosts and Bloom blocks: each is reported
 * new once, queued once on its own host, and every host becomes claimable. */
Test(frontier, links_over_many_hosts_and_bloom_blocks_are_queued_once)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    cr_assert_gt(bloom_geometry(e.b)->blocks, 1, "the test filter should have several blocks");
    enum { N = 700, HOSTS = 150 };
    char(*buf)[48] = malloc(N * sizeof *buf);
    const char **links = malloc(N * sizeof *links);
    uint8_t *present = malloc(N);
    cr_assert(buf && links && present);
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "http://h%d.test/p%d", i % HOSTS, i);
        links[i] = buf[i];
    }
    const char *seeds[] = {"http://s1.test/", "http://s2.test/"};
    cr_assert_eq(seed_urls(e.f, seeds, 2, 0), 2);
    frontier_item_t it[2];
    size_t n = 0, nnew = 0;
    cr_assert_eq(claim_wait(e.f, 2, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 2);
    finish_one(e.f, &it[0], links, 600, &nnew, 0);
    cr_assert_eq(nnew, 600);
    finish_one(e.f, &it[1], links, N, &nnew, 0); /* 600 seen + 100 new */
    cr_assert_eq(nnew, N - 600);
    frontier_item_clear(&it[0]);
    frontier_item_clear(&it[1]);
    cr_assert_eq(bloom_contains_many(e.b, links, NULL, N, present), 0);
    for (int i = 0; i < N; i++)
        cr_assert(present[i], "%s is not in the filter", links[i]);
    /* every host claimable: new ones in P fresh, the page's in ready */
    cr_assert_eq(redis_int(e.c, "ZCARD %s", "crawler:{t}:ready") +
                     redis_int(e.c, "LLEN %s", "crawler:{t}:fresh"),
                 HOSTS);
    cr_assert_eq(redis_int(e.c, "HLEN %s", "crawler:{t}:hosts"), HOSTS + 2);
    /* h7's field: its count admitted, its queue packed in it (<= 16) or a list */
    long long h7 = N / HOSTS + (7 < N % HOSTS);
    redisReply *hv = redisCommand(e.c, "HGET crawler:{t}:hosts %s", "http://h7.test");
    cr_assert(hv && hv->type == REDIS_REPLY_STRING);
    cr_assert_eq(strtoll(hv->str, NULL, 10), h7, "h7's field: %s", hv->str);
    freeReplyObject(hv);
    cr_assert_eq(fx_redis_queue_len(e.c, "crawler:{t}:", "http://h7.test"), h7);
    /* drain, finishing whole batches with mixed outcomes: every link comes
     * out exactly once, and the counters add up */
    uint8_t *got = calloc(N, 1);
    cr_assert_not_null(got);
    static frontier_item_t batch[256];
    static frontier_done_t d[256];
    const frontier_outcome_t kinds[4] = {{.status = 404, .bytes = 1},
                                         {.status = 301, .bytes = 2},
                                         {.status = 0, .error = "timeout"},
                                         {.status = 200, .bytes = 4, .error = "truncated"}};
    size_t want[4] = {0};
    for (int round = 0; round < 100; round++) {
        frontier_state_t st = claim_wait(e.f, 256, batch, &n);
        if (st == FRONTIER_DONE)
            break;
        for (size_t i = 0; i < n; i++) {
            int idx = -1;
            cr_assert_eq(sscanf(batch[i].url, "http://h%*d.test/p%d", &idx), 1, "%s", batch[i].url);
            cr_assert(idx >= 0 && idx < N && !got[idx], "%s claimed twice", batch[i].url);
            got[idx] = 1;
            d[i] = (frontier_done_t){.item = &batch[i], .outcome = kinds[idx % 4]};
            want[idx % 4]++;
        }
        cr_assert_eq(frontier_finish(e.f, d, n), 0);
        for (size_t i = 0; i < n; i++)
            frontier_item_clear(&batch[i]);
    }
    for (int i = 0; i < N; i++)
        cr_assert(got[i], "%s was never claimed", links[i]);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.new_links, N);
    cr_assert_eq(s.seen_links, 600);
    cr_assert_eq(s.fetched, N + 2);
    cr_assert_eq(s.status_2xx, want[3] + 2);
    cr_assert_eq(s.status_3xx, want[1]);
    cr_assert_eq(s.status_4xx, want[0]);
    cr_assert_eq(s.errors, want[2] + want[3]);
    cr_assert_eq(s.bytes, 200 + want[0] + 2 * want[1] + 4 * want[3]);
    cr_assert_eq(s.nkinds, 2);
    cr_assert_eq(s.kinds[0].count + s.kinds[1].count, want[2] + want[3]);
    cr_assert_eq(s.hosts, HOSTS + 2);
    cr_assert_eq(s.queued, 0);
    cr_assert_eq(s.in_flight, 0);
    free(got);
    free(present);
    free(buf);
    free(links);
    env_stop(&e);
}

Test(frontier, host_delay_from_robots_spaces_claims_of_that_host)
{
    frontier_config_t cfg = test_config();
    cfg.per_host = 1;
    cfg.max_delay_ms = 150;
    env_t e;
    env_start(&e, &cfg);
    cr_assert_eq(frontier_set_host_delay(e.f, "http://slow.test", 100000), 0);
    const char *urls[] = {"http://slow.test/1", "http://slow.test/2", "http://slow.test/3"};
    seed_urls(e.f, urls, 3, 0);
    uint64_t last = 0;
    for (int i = 0; i < 3; i++) {
        frontier_item_t it;
        size_t n;
        cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
        if (i)
            cr_assert_geq(it.claimed_ms - last, 150, "capped Crawl-delay not honoured");
        last = it.claimed_ms;
        finish_one(e.f, &it, NULL, 0, NULL, 0);
        frontier_item_clear(&it);
    }
    env_stop(&e);
}

/* A URL's origin is parser_url_origin's, computed by the client and sent:
 * a URL with userinfo is queued under scheme://host[:port] without it, so
 * that host's delay (robots Crawl-delay) applies to it, and it goes back to
 * that queue when released (the lease keeps the origin of its queue). */
Test(frontier, a_url_with_userinfo_is_queued_under_its_origin_and_its_host_delay_applies)
{
    frontier_config_t cfg = test_config();
    cfg.per_host = 1;
    cfg.max_delay_ms = 150;
    env_t e;
    env_start(&e, &cfg);
    cr_assert_eq(frontier_set_host_delay(e.f, "http://example.test:8080", 100000), 0);
    const char *urls[] = {"http://user:pw@example.test:8080/a/b?q", "http://example.test:8080/c"};
    cr_assert_eq(seed_urls(e.f, urls, 2, 0), 2);
    cr_assert_eq(fx_redis_queue_len(e.c, "crawler:{t}:", "http://example.test:8080"), 2);
    redisReply *r = redisCommand(e.c, "HKEYS crawler:{t}:hosts");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1, "%zu hosts for one origin", r->elements);
    freeReplyObject(r);
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    cr_assert_str_eq(it.url, urls[0]);
    cr_assert_eq(redis_int(e.c, "HGET crawler:{t}:hinflight %s", "http://example.test:8080"), 1);
    cr_assert_eq(frontier_release(e.f, &it, 1), 0);
    frontier_item_clear(&it);
    cr_assert_eq(fx_redis_queue_len(e.c, "crawler:{t}:", "http://example.test:8080"), 2);
    uint64_t last = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
        cr_assert_str_eq(it.url, urls[i], "claim %d", i);
        if (i)
            cr_assert_geq(it.claimed_ms - last, 150, "the host's delay did not apply: %llu ms",
                          (unsigned long long)(it.claimed_ms - last));
        last = it.claimed_ms;
        finish_one(e.f, &it, NULL, 0, NULL, 0);
        frontier_item_clear(&it);
    }
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_DONE);
    env_stop(&e);
}

/* The Redis server's clock, ms (a lower bound of the time of any call after). */
static uint64_t server_ms(redisContext *c)
{
    redisReply *r = redisCommand(c, "TIME");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "TIME failed");
    uint64_t ms = strtoull(r->element[0]->str, NULL, 10) * 1000 +
                  strtoull(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

/* How a host's fetch ends, and where its delay comes from. */
typedef struct polite_case {
    const char *name;
    char end;          /* 'f' finish, 'r' retry, 'l' release */
    uint32_t delay_ms; /* the crawl's --delay */
    uint32_t own_ms;   /* the host's own (Crawl-delay), 0: none */
} polite_case_t;

/* Ends item it the case's way. */
static void polite_end(env_t *e, const polite_case_t *pc, frontier_item_t *it)
{
    frontier_outcome_t out = {.status = 503, .error = "http-5xx"};
    if (pc->end == 'f')
        finish_one(e->f, it, NULL, 0, NULL, 0);
    else if (pc->end == 'r')
        cr_assert_eq(frontier_retry(e->f, it, &out, 0), 0, "%s: frontier_retry", pc->name);
    else
        cr_assert_eq(frontier_release(e->f, it, 1), 0, "%s: frontier_release", pc->name);
    frontier_item_clear(it);
}

/* A host of delay d > 0 has one URL in flight whatever per_host (4 here),
 * however long it stays out; once that fetch ends (finished, retried or
 * released: its server may have seen the request until then), the host's
 * next URL comes no sooner than d after.  Sleeps are lower bounds only. */
Test(frontier, a_host_with_a_delay_has_one_url_in_flight_and_waits_it_after_each_fetch)
{
    static const polite_case_t cases[] = {
        {"finish, --delay 100", 'f', 100, 0},
        {"finish, Crawl-delay 100, --delay 0", 'f', 0, 100},
        {"retry, --delay 100", 'r', 100, 0},
        {"release, --delay 100", 'l', 100, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const polite_case_t *pc = &cases[c];
        const uint32_t d = pc->delay_ms > pc->own_ms ? pc->delay_ms : pc->own_ms;
        frontier_config_t cfg = test_config();
        cfg.per_host = 4;
        cfg.delay_ms = pc->delay_ms;
        cfg.backoff_ms = 1; /* the retried URL is due at once: the host's delay decides */
        env_t e;
        env_start(&e, &cfg);
        if (pc->own_ms)
            cr_assert_eq(frontier_set_host_delay(e.f, "http://p.test", pc->own_ms), 0);
        const char *urls[] = {"http://p.test/1", "http://p.test/2", "http://p.test/3"};
        seed_urls(e.f, urls, 3, 0);
        frontier_item_t it[4];
        size_t n;
        cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY, "%s", pc->name);
        cr_assert_eq(n, 1, "%s: %zu URLs of one host claimed at once", pc->name, n);
        usleep((d + 30) * 1000); /* at least d after the claim */
        frontier_state_t st;
        cr_assert_eq(frontier_claim(e.f, 4, it + 1, &n, &st, NULL), 0);
        cr_assert_eq(n, 0, "%s: a 2nd URL of the host claimed while its 1st is in flight",
                     pc->name);
        uint64_t ended = server_ms(e.c);
        polite_end(&e, pc, &it[0]);
        long long next = redis_int(e.c, "HGET crawler:{t}:hnext %s", "http://p.test");
        cr_assert_geq(next, (long long)(ended + d), "%s: claimable %lld ms after the fetch ended",
                      pc->name, next - (long long)ended);
        /* the rest, each d after the one before ended (a URL retried or
         * released comes back) */
        int rest = pc->end == 'f' ? 2 : 3;
        for (int k = 0; k < rest; k++) {
            cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY, "%s: URL %d", pc->name, k);
            cr_assert_eq(n, 1, "%s: %zu URLs of one host claimed at once", pc->name, n);
            cr_assert_geq(it[0].claimed_ms, ended + d, "%s: claimed %lld ms after the fetch ended",
                          pc->name, (long long)it[0].claimed_ms - (long long)ended);
            ended = server_ms(e.c);
            finish_one(e.f, &it[0], NULL, 0, NULL, 0);
            frontier_item_clear(&it[0]);
        }
        cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_DONE, "%s", pc->name);
        env_stop(&e);
    }
}

Test(frontier, retries_back_off_then_dead_letter)
{
    frontier_config_t cfg = test_config();
    cfg.max_tries = 3;
    cfg.backoff_ms = 40;
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://r.test/a"};
    seed_urls(e.f, seed, 1, 0);
    uint64_t last = 0;
    for (uint32_t attempt = 0; attempt < 3; attempt++) {
        frontier_item_t it;
        size_t n;
        cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
        cr_assert_eq(it.tries, attempt);
        if (attempt) /* equal jitter: at least half of backoff * 2^(tries-1) */
            cr_assert_geq(it.claimed_ms - last, 20u << (attempt - 1), "retry came too early");
        last = it.claimed_ms;
        frontier_outcome_t out = {.status = 503, .error = "http-5xx"};
        cr_assert_eq(frontier_retry(e.f, &it, &out, 0), 0);
        frontier_item_clear(&it);
    }
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_DONE);
    redisReply *r = redisCommand(e.c, "LRANGE crawler:{t}:dead 0 -1");
    cr_assert(r && r->elements == 1);
    cr_assert_str_eq(r->element[0]->str, "0 2 http://r.test/a\t503\thttp-5xx");
    freeReplyObject(r);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_eq(s.retried, 2);
    cr_assert_eq(s.dead, 1);
    cr_assert_eq(s.status_5xx, 3);
    cr_assert_eq(s.nkinds, 1);
    cr_assert_str_eq(s.kinds[0].kind, "http-5xx");
    cr_assert_eq(s.kinds[0].count, 3);
    env_stop(&e);
}

Test(frontier, retry_after_and_repeated_failures_back_off_the_whole_host)
{
    frontier_config_t cfg = test_config();
    cfg.backoff_ms = 300;
    cfg.max_tries = 5;
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://h.test/a", "http://h.test/b", "http://h.test/c"};
    seed_urls(e.f, urls, 3, 0);
    frontier_item_t it[3];
    size_t n;
    cr_assert_eq(claim_wait(e.f, 3, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 3);
    frontier_outcome_t out = {.status = 429};
    cr_assert_eq(frontier_retry(e.f, &it[0], &out, 500), 0); /* Retry-After: 500 ms */
    out.status = 0;
    out.error = "timeout";
    cr_assert_eq(frontier_retry(e.f, &it[1], &out, 0), 0); /* 2nd failure: host backoff */
    cr_assert_eq(frontier_release(e.f, &it[2], 1), 0);
    long long next = redis_int(e.c, "HGET crawler:{t}:hnext %s", "http://h.test");
    cr_assert_geq((unsigned long long)next, it[0].claimed_ms + 500, "Retry-After ignored");
    uint64_t t0 = it[0].claimed_ms;
    for (int i = 0; i < 3; i++)
        frontier_item_clear(&it[i]);
    cr_assert_eq(claim_wait(e.f, 1, it, &n), FRONTIER_READY);
    cr_assert_geq(it[0].claimed_ms, (uint64_t)next, "host claimed before its backoff");
    cr_assert_geq(it[0].claimed_ms - t0, 500);
    frontier_item_clear(&it[0]);
    env_stop(&e);
}

Test(frontier, depth_and_page_limits_are_shared_and_leave_skipped_links_unseen)
{
    frontier_config_t cfg = test_config();
    cfg.max_depth = 1;
    cfg.max_pages = 6;
    cfg.max_pages_per_host = 3;
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://a.test/0"};
    seed_urls(e.f, seed, 1, 0);
    frontier_item_t it;
    size_t n, nnew;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    const char *l1[] = {"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/1"};
    finish_one(e.f, &it, l1, 4, &nnew, 0);
    cr_assert_eq(nnew, 3, "a.test/3 is over max_pages_per_host");
    frontier_item_clear(&it);
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    cr_assert_eq(it.depth, 1);
    const char *l2[] = {"http://d.test/deep"};
    finish_one(e.f, &it, l2, 1, &nnew, 0);
    cr_assert_eq(nnew, 0, "depth 2 > max_depth");
    frontier_item_clear(&it);
    const char *more[] = {"http://c.test/1", "http://c.test/2", "http://c.test/3"};
    cr_assert_eq(seed_urls(e.f, more, 3, 0), 2, "max_pages 6 reached");
    const char *probe[] = {"http://a.test/3", "http://d.test/deep", "http://c.test/3",
                           "http://a.test/1"};
    uint8_t present[4];
    cr_assert_eq(bloom_contains_many(e.b, probe, NULL, 4, present), 0);
    cr_assert_eq(present[0] + present[1] + present[2], 0, "skipped links were marked seen");
    cr_assert_eq(present[3], 1);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_eq(s.enqueued, 6);
    env_stop(&e);
}

/* A page whose lease was lost is neither counted nor has its links
 * offered: the worker holding its lease now fetches it again and offers
 * them (and a finish run twice, its reply lost, changes nothing the
 * second time). */
Test(frontier, lost_lease_reports_elease_and_leaves_the_links_to_the_next_fetch)
{
    frontier_config_t cfg = test_config();
    cfg.lease_ms = 150;
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://a.test/"};
    seed_urls(e.f, seed, 1, 0);
    frontier_item_t it;
    size_t n, got = 0;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    frontier_config_t cfg2 = cfg;
    cfg2.worker_id = "other";
    frontier_t *g = open_frontier(e.c, e.b, &cfg2);
    cr_assert_not_null(g);
    for (int i = 0; i < 500 && got == 0; i++) {
        usleep(10000);
        cr_assert_eq(frontier_heartbeat(g, NULL, &got), 0);
    }
    cr_assert_eq(got, 1, "the expired lease was not reclaimed");
    const char *links[] = {"http://a.test/next"};
    size_t nnew = 0;
    finish_one(e.f, &it, links, 1, &nnew, CRAWL_ELEASE);
    cr_assert_eq(nnew, 0, "a link of a page with a lost lease was offered");
    frontier_item_clear(&it);
    uint8_t present = 1;
    cr_assert_eq(bloom_contains_many(e.b, links, NULL, 1, &present), 0);
    cr_assert_eq(present, 0, "the link was added to the visited set");
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_eq(s.fetched, 0);
    cr_assert_eq(s.queued, 1, "the page, reclaimed, is queued again: and nothing else");
    cr_assert_eq(s.seen_links + s.new_links + s.skipped_links, 0, "its links were counted");
    fr_close(g);
    env_stop(&e);
}

Test(frontier, finishing_a_page_twice_counts_it_once)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *seed[] = {"http://a.test/"};
    seed_urls(e.f, seed, 1, 0);
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    frontier_done_t d = {.item = &it, .outcome = {.status = 200}, .link_depth = 1};
    frontier_done_t twice[2] = {d, d};
    cr_assert_eq(frontier_finish(e.f, twice, 2), CRAWL_ELEASE);
    frontier_item_clear(&it);
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_eq(s.fetched, 1);
    cr_assert_eq(s.in_flight, 0);
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_DONE);
    env_stop(&e);
}

Test(frontier, release_hands_urls_back_to_the_front_in_order)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/1", "http://a.test/2", "http://a.test/3",
                          "http://a.test/4"};
    seed_urls(e.f, urls, 4, 0);
    frontier_item_t it[4];
    size_t n;
    cr_assert_eq(claim_wait(e.f, 2, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 2);
    cr_assert_eq(frontier_release(e.f, it, 2), 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&it[i]);
    cr_assert_eq(claim_wait(e.f, 4, it, &n), FRONTIER_READY);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(it[i].url, urls[i]);
        frontier_item_clear(&it[i]);
    }
    frontier_stats_t s;
    frontier_stats(e.c, CRAWL, &s);
    cr_assert_eq(s.released, 2);
    cr_assert_eq(s.in_flight, 4);
    env_stop(&e);
}

Test(frontier, stats_list_live_workers_with_their_heartbeat)
{
    frontier_config_t cfg = test_config();
    cfg.worker_id = "w1";
    env_t e;
    env_start(&e, &cfg);
    frontier_worker_stats_t ws = {.pages = 42, .pages_per_s = 3.5, .in_flight = 2};
    cr_assert_eq(frontier_heartbeat(e.f, &ws, NULL), 0);
    frontier_worker_info_t *w = NULL;
    size_t n = 0;
    cr_assert_eq(frontier_workers(e.c, CRAWL, &w, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(w[0].id, "w1");
    cr_assert_eq(w[0].pid, (long)getpid());
    cr_assert_eq(w[0].pages, 42);
    cr_assert_float_eq(w[0].pages_per_s, 3.5, 1e-9);
    cr_assert(w[0].live && w[0].started_ms > 0 && w[0].lease_until_ms > w[0].last_ms);
    free(w);
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.workers, 1);
    fr_close(e.f); /* holds nothing: unregisters */
    e.f = NULL;
    cr_assert_eq(frontier_stats(e.c, CRAWL, &s), 0);
    cr_assert_eq(s.workers, 0);
    env_stop(&e);
}

Test(frontier, reset_deletes_only_that_crawls_keys)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/"};
    seed_urls(e.f, urls, 1, 0);
    const char *keep[] = {"crawler:{tt}:stats", "crawler:{t}x", "other", "crawler:{T}:stats"};
    for (int i = 0; i < 4; i++)
        freeReplyObject(redisCommand(e.c, "SET %s 1", keep[i]));
    uint64_t deleted = 0;
    cr_assert_eq(frontier_reset(e.c, CRAWL, &deleted), 0);
    cr_assert_geq(deleted, 4, "stats, queue, ready, Bloom keys...");
    redisReply *r = redisCommand(e.c, "KEYS *");
    cr_assert_eq(r->elements, 4, "only the other keys remain");
    freeReplyObject(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(redis_int(e.c, "EXISTS %s", keep[i]), 1, "%s was deleted", keep[i]);
    cr_assert_eq(frontier_reset(e.c, "bad*name", NULL), CRAWL_EINVAL);
    env_stop(&e);
}

/* The answers of the invariant checker (side_check's call) as one string. */
static char *check_answers(env_t *e)
{
    const char *argv[] = {
        "FCALL", e->f->fn[FR_CHECK], "1", e->f->shard[0].ready_key, e->f->shard[0].prefix, "100"};
    redisReply *r = redisCommandArgv(e->c, 6, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "check: %s", r ? r->str : e->c->errstr);
    size_t len = 1;
    for (size_t i = 0; i < r->elements; i++)
        len += r->element[i]->len + 1;
    char *out = calloc(1, len), *o = out;
    cr_assert_not_null(out);
    for (size_t i = 0; i < r->elements; i++) {
        memcpy(o, r->element[i]->str, r->element[i]->len);
        o += r->element[i]->len;
        *o++ = '\n';
    }
    freeReplyObject(r);
    return out;
}

/* The invariant checker is silent on a consistent crawl and names each
 * invariant that keys changed behind the frontier's back break. */
Test(frontier, the_invariant_checker_names_what_is_broken)
{
    frontier_config_t cfg = test_config();
    env_t e;
    env_start(&e, &cfg);
    const char *urls[] = {"http://a.test/1", "http://a.test/2", "http://b.test/1"};
    cr_assert_eq(seed_urls(e.f, urls, 3, 0), 3);
    frontier_item_t it;
    size_t n;
    cr_assert_eq(claim_wait(e.f, 1, &it, &n), FRONTIER_READY);
    char *a = check_answers(&e);
    cr_expect_str_eq(a, "", "a consistent crawl: %s", a);
    free(a);
    const char *breaks[] = {"LREM crawler:{t}:fresh 0 http://b.test",
                            "HINCRBY crawler:{t}:stats queued 5",
                            "HINCRBY crawler:{t}:hinflight http://a.test 2",
                            "RPUSH crawler:{t}:q:http://c.test not-an-entry"};
    for (int i = 0; i < 4; i++)
        freeReplyObject(redisCommand(e.c, breaks[i]));
    a = check_answers(&e);
    const char *want[] = {"2: http://b.test has URLs queued", "5: stats.queued",
                          "4: hinflight http://a.test is 3, 1 leases",
                          "7: crawler:{t}:q:http://c.test holds the entry \"not-an-entry\"",
                          "2: http://c.test has URLs queued"};
    for (int i = 0; i < 5; i++)
        cr_expect(strstr(a, want[i]), "no \"%s\" in:\n%s", want[i], a);
    free(a);
    frontier_item_clear(&it);
    fr_close(e.f); /* env_stop would check: the test broke the crawl on purpose */
    e.f = NULL;
    env_stop(&e);
}

/* ---- the subcommands -------------------------------------------------------- */

typedef struct run {
    int status;
    char *out, *err;
} run_t;

static run_t crawler(const char *dir, char *const extra[])
{
    char *argv[24] = {CRAWLER_BIN};
    int n = 1;
    for (int i = 0; extra[i] && n < 23; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    run_t r = {.status = fx_run(argv, out, err, 60000)};
    r.out = fx_read_file(out, NULL);
    r.err = fx_read_file(err, NULL);
    cr_assert(r.out && r.err);
    return r;
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

Test(frontier_cli, seed_reports_bad_lines_and_counts_added_vs_seen)
{
    fx_redis_t *rs = fx_redis_start();
    cr_assert_not_null(rs, "%s", fx_error());
    char *dir = fx_tmpdir();
    char seeds[512], url[64];
    snprintf(seeds, sizeof seeds, "%s/seeds.txt", dir);
    snprintf(url, sizeof url, "%s", fx_redis_url(rs));
    fx_write_file(seeds, "# seeds\nhttp://Example.COM/a\n\nnot a url\n"
                         "  http://example.com/b   # trailing\nftp://x.test/\n"
                         "http://example.com/a\n");
    char *a1[] = {"seed",  seeds, "--redis", url, "--crawl", "c1", "--bloom-capacity",
                  "10000", NULL};
    run_t r = crawler(dir, a1);
    cr_assert_eq(r.status, 3, "exit status says lines were rejected: %d\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "seeds.txt:4:"), "line 4 not reported: %s", r.err);
    cr_assert(strstr(r.err, "seeds.txt:6:"), "line 6 not reported: %s", r.err);
    cr_assert(strstr(r.out, "2 added, 1 already seen, 2 rejected"), "%s", r.out);
    run_free(&r);
    r = crawler(dir, a1);
    cr_assert(strstr(r.out, "0 added, 3 already seen"), "%s", r.out);
    run_free(&r);
    char *a2[] = {"seed", seeds, "--redis", url, "--crawl", "c1", "--force", NULL};
    r = crawler(dir, a2);
    cr_assert(strstr(r.out, "3 added, 0 already seen"), "%s", r.out);
    run_free(&r);
    char *a3[] = {"stats", "--redis", url, "--crawl", "c1", "--json", NULL};
    r = crawler(dir, a3);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"queued\": 5"), "%s", r.out);
    run_free(&r);
    char *a4[] = {"seed", "--help", NULL};
    r = crawler(dir, a4);
    cr_assert(r.status == 0 && strstr(r.out, "--force"), "%s", r.out);
    run_free(&r);
    fx_rmtree(dir);
    free(dir);
    fx_redis_stop(rs);
}

Test(frontier_cli, reset_needs_yes_and_deletes_one_crawl)
{
    fx_redis_t *rs = fx_redis_start();
    cr_assert_not_null(rs, "%s", fx_error());
    redisContext *c = fx_redis_connect(rs);
    cr_assert_not_null(c);
    freeReplyObject(redisCommand(c, "SET crawler:{c1}:seq 1"));
    freeReplyObject(redisCommand(c, "SET crawler:{c2}:seq 1"));
    char *dir = fx_tmpdir();
    char url[64];
    snprintf(url, sizeof url, "%s", fx_redis_url(rs));
    char *a1[] = {"reset", "--redis", url, "--crawl", "c1", NULL};
    run_t r = crawler(dir, a1);
    cr_assert_eq(r.status, 2, "reset without --yes must refuse");
    run_free(&r);
    cr_assert_eq(redis_int(c, "EXISTS %s", "crawler:{c1}:seq"), 1);
    char *a2[] = {"reset", "--redis", url, "--crawl", "c1", "--yes", NULL};
    r = crawler(dir, a2);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_free(&r);
    cr_assert_eq(redis_int(c, "EXISTS %s", "crawler:{c1}:seq"), 0);
    cr_assert_eq(redis_int(c, "EXISTS %s", "crawler:{c2}:seq"), 1);
    char *a3[] = {"stats",   "--redis", url,       "--crawl", "c2",
                  "--watch", "0.05",    "--count", "2",       NULL};
    r = crawler(dir, a3);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "queued"), "%s", r.out);
    run_free(&r);
    redisFree(c);
    fx_rmtree(dir);
    free(dir);
    fx_redis_stop(rs);
}
