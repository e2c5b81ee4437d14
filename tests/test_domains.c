/*
 * test_domains.c -- budgets per registered domain (frontier.h:
 * max_pages_per_domain, max_hosts_per_domain; frontier/lua/offer.lua:
 * over_domain): what a frontier driven from this process admits, seeds and
 * links alike, and what it counts.  A subdomain farm is many hosts of one
 * registered domain (the public-suffix list decides what one is).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier_env.h"
#include "keys.h"

static frontier_stats_t stats(env_t *e)
{
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(e->c, CRAWL, &s), 0);
    return s;
}

Test(domains, a_subdomain_farm_gets_its_host_budget_and_known_hosts_go_on)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.max_hosts_per_domain = 3;
    env_start(&e, &cfg);
    char urls[10][64];
    const char *seeds[11];
    for (int i = 0; i < 10; i++) {
        snprintf(urls[i], sizeof urls[i], "http://h%d.farm.test/", i);
        seeds[i] = urls[i];
    }
    seeds[10] = "http://other.test/";
    size_t got = seed_urls(e.f, seeds, 11, 0);
    redisReply *dr =
        redisCommand(e.c, "HGETALL %s", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "domains");
    for (size_t i = 0; dr && i < dr->elements; i++)
        fprintf(stderr, "DEBUG %s\n", dr->element[i]->str);
    freeReplyObject(dr);
    cr_expect_eq(got, 4, "three farm hosts and other.test: %zu", got);
    frontier_stats_t s = stats(&e);
    cr_expect_eq(s.domain_links, 7);
    cr_expect_eq(s.skipped_links, 0, "seeds are not links");
    /* a page's links: a known farm host takes more, a new one does not */
    frontier_item_t items[16];
    size_t n = 0;
    cr_assert_eq(claim_wait(e.f, 16, items, &n), FRONTIER_READY);
    const char *links[] = {"http://h0.farm.test/more", "http://h7.farm.test/x",
                           "http://www.farm2.test/y"};
    size_t nnew = 0;
    finish_one(e.f, &items[0], links, 3, &nnew, 0);
    cr_expect_eq(nnew, 2, "h0 (known) and farm2 (another domain)");
    s = stats(&e);
    cr_expect_eq(s.domain_links, 8);
    cr_expect_eq(s.skipped_links, 1);
    for (size_t i = 1; i < n; i++)
        finish_one(e.f, &items[i], NULL, 0, NULL, 0);
    for (size_t i = 0; i < n; i++)
        frontier_item_clear(&items[i]);
    env_stop(&e);
}

Test(domains, a_page_budget_counts_every_host_of_a_domain_and_no_other)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.max_pages_per_domain = 5;
    env_start(&e, &cfg);
    const char *seeds[] = {
        "http://a.dom.test/1",      "http://a.dom.test/2",      "http://a.dom.test/3",
        "http://b.dom.test/1",      "http://b.dom.test/2",      "http://c.dom.test/1",
        "http://dom.test/1",        "http://x.example.co.uk/1", "http://y.other.co.uk/1",
        "http://x.example.co.uk/2", "http://z.example.co.uk/3"};
    cr_expect_eq(seed_urls(e.f, seeds, 11, 0), 5 + 4, "5 of dom.test, every .co.uk one");
    frontier_stats_t s = stats(&e);
    cr_expect_eq(s.domain_links, 2);
    cr_expect_eq(s.queued, 9);
    /* (which five: the order links meet the script in is the Bloom blocks') */
    long long hosts = 0;
    const char *origins[] = {"http://a.dom.test", "http://b.dom.test", "http://c.dom.test",
                             "http://dom.test"};
    for (int i = 0; i < 4; i++)
        hosts +=
            redis_int(e.c, "HEXISTS " FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "hosts %s", origins[i]);
    char want[32];
    snprintf(want, sizeof want, "5 %lld", hosts);
    redisReply *r =
        redisCommand(e.c, "HGET %s %s", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "domains", "dom.test");
    cr_assert_not_null(r);
    cr_expect(r->type == REDIS_REPLY_STRING && !strcmp(r->str, want), "dom.test: %s, want %s",
              r->type == REDIS_REPLY_STRING ? r->str : "(none)", want);
    freeReplyObject(r);
    env_stop(&e);
}

Test(domains, without_a_budget_nothing_is_kept_per_domain)
{
    env_t e;
    frontier_config_t cfg = test_config();
    env_start(&e, &cfg);
    const char *seeds[] = {"http://a.dom.test/1", "http://b.dom.test/1"};
    cr_expect_eq(seed_urls(e.f, seeds, 2, 0), 2);
    cr_expect_eq(redis_int(e.c, "EXISTS %s", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "domains"), 0);
    env_stop(&e);
}

/* On a crawl of 4 shards (one redis-server): a domain's budget lives in its
 * own shard, whatever shard the page that links to it is in. */
Test(domains, on_a_sharded_crawl_links_from_any_shard_count_in_the_domains_shard)
{
    fx_redis_t *r = fx_redis_start();
    cr_assert_not_null(r, "%s", fx_error());
    redisContext *c = fx_redis_connect(r);
    cr_assert_not_null(c);
    frontier_config_t cfg = test_config();
    cfg.shards = 4;
    cfg.max_hosts_per_domain = 2;
    cfg.bloom_capacity = 100000;
    cfg.bloom_fp_rate = 1e-6;
    char err[256] = "";
    frontier_t *f = fr_open(c, &cfg, NULL, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    /* seeds of 12 domains, so that the pages are in every shard */
    char seeds_s[12][64];
    const char *seeds[12];
    for (int i = 0; i < 12; i++) {
        snprintf(seeds_s[i], sizeof seeds_s[i], "http://www.site%d.test/", i);
        seeds[i] = seeds_s[i];
    }
    cr_assert_eq(seed_urls(f, seeds, 12, 0), 12);
    /* every page links to its own new host of farm.test: 2 get in */
    frontier_item_t items[16];
    size_t n = 0, nnew_all = 0;
    for (int round = 0; round < 20 && nnew_all < 12; round++) {
        frontier_state_t st = claim_wait(f, 16, items, &n);
        if (st != FRONTIER_READY)
            break;
        for (size_t i = 0; i < n; i++) {
            char link[96];
            const char *links[1] = {link};
            snprintf(link, sizeof link, "http://h%zu-%d.farm.test/", i, round);
            size_t nnew = 0;
            int seed = strstr(items[i].url, ".farm.test") == NULL;
            finish_one(f, &items[i], links, seed ? 1 : 0, &nnew, 0);
            frontier_item_clear(&items[i]);
            nnew_all += seed;
        }
    }
    frontier_stats_t s;
    cr_assert_eq(frontier_stats(c, CRAWL, &s), 0);
    cr_expect_eq(s.new_links, 2, "new links %llu: farm.test's hosts past 2 are refused",
                 (unsigned long long)s.new_links);
    cr_expect_eq(s.domain_links, 10, "domain_links %llu", (unsigned long long)s.domain_links);
    side_check(c, f, cfg.per_host);
    fr_close(f);
    redisFree(c);
    fx_redis_stop(r);
}

/* --domain-pages-per-inlink: a domain linked from five others earns five
 * times the increment; a farm linked from one other domain and otherwise
 * only from itself earns it once. */
Test(domains, a_budget_earned_from_in_links_lets_a_linked_domain_grow_and_not_a_farm)
{
    env_t e;
    frontier_config_t cfg = test_config();
    cfg.max_pages_per_domain = 2;
    cfg.pages_per_inlink = 3;
    env_start(&e, &cfg);
    const char *seeds[] = {"http://www.a0.test/", "http://www.a1.test/", "http://www.a2.test/",
                           "http://www.a3.test/", "http://www.a4.test/"};
    cr_assert_eq(seed_urls(e.f, seeds, 5, 0), 5);
    frontier_item_t items[16];
    size_t n = 0, done = 0;
    while (done < 5) {
        cr_assert_eq(claim_wait(e.f, 16, items, &n), FRONTIER_READY);
        for (size_t i = 0; i < n; i++) {
            char l[7][64];
            const char *links[7];
            int a = items[i].url[12] - '0'; /* http://www.aN.test/ */
            for (int j = 0; j < 6; j++) {
                if (j < 3)
                    snprintf(l[j], sizeof l[j], "http://target.test/%d-%d", a, j);
                else
                    snprintf(l[j], sizeof l[j], "http://spam.test/s%d", j);
                links[j] = l[j];
            }
            /* one URL every page links to: each linking domain counts, not
             * only the first (the later ones find it seen) */
            links[a == 0 ? 6 : 3] = "http://home.test/";
            finish_one(e.f, &items[i], links, a == 0 ? 7 : 4, NULL, 0);
            frontier_item_clear(&items[i]);
            done++;
        }
    }
    /* the farm's pages link to ten more of its own */
    size_t farm = 0, offered = 0;
    while (farm < 3) {
        cr_assert_eq(claim_wait(e.f, 16, items, &n), FRONTIER_READY);
        for (size_t i = 0; i < n; i++) {
            char l[10][64];
            const char *links[10];
            int spam = strstr(items[i].url, "spam.test") != NULL;
            for (int j = 0; j < 10; j++) {
                snprintf(l[j], sizeof l[j], "http://spam.test/more%zu-%d", farm, j);
                links[j] = l[j];
            }
            finish_one(e.f, &items[i], links, spam ? 10 : 0, NULL, 0);
            frontier_item_clear(&items[i]);
            farm += spam;
            offered += spam ? 10 : 0;
        }
    }
    cr_expect_eq(redis_int(e.c, "PFCOUNT %s", FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "inl:home.test"),
                 5);
    const char *key = FR_PREFIX_OPEN CRAWL FR_PREFIX_CLOSE "domains";
    redisReply *r = redisCommand(e.c, "HMGET %s target.test spam.test", key);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_expect(r->element[0]->str && !strcmp(r->element[0]->str, "15 1"),
              "target.test (5 linking domains, budget 2 + 5 * 3): %s",
              r->element[0]->str ? r->element[0]->str : "(none)");
    cr_expect(r->element[1]->str && !strcmp(r->element[1]->str, "5 1"),
              "spam.test (1 linking domain, budget 2 + 3): %s",
              r->element[1]->str ? r->element[1]->str : "(none)");
    freeReplyObject(r);
    frontier_stats_t s = stats(&e);
    /* over budget: the farm's own links but the 2 its budget had left */
    cr_expect_eq(s.domain_links, offered - 2, "domain_links %llu of %zu",
                 (unsigned long long)s.domain_links, offered);
    env_stop(&e);
}
