/*
 * seeds.h -- adding a seeds file to a crawl: each line normalized, offered
 * to the frontier through the Bloom filter (seeding twice adds nothing
 * unless force); frontier_seed records each seed's host in the same atomic
 * step (the set --scope host|domain and the private-address guard read:
 * frontier_seed_hosts).
 */
#ifndef CRAWLER_SEEDS_H
#define CRAWLER_SEEDS_H

#include <stddef.h>

#include "frontier.h"

struct redisContext;

/* A seed line may end with a priority, a number 0..1 as in a sitemap
 * ("https://example.com/new 0.9"); one above this default goes ahead of
 * everything queued for its host (FRONTIER_SEED_FIRST). */
#define SEEDS_DEFAULT_PRIORITY 0.5

typedef struct seeds_result {
    size_t valid;  /* lines that were valid URLs */
    size_t added;  /* queued (new, or forced) */
    long rejected; /* invalid lines (reported on stderr with line numbers) */
} seeds_result_t;

typedef struct seeds seeds_t;

/* Opens path ("-": stdin) and reads its first lines (up to a batch of
 * URLs) without touching Redis, so that what can be checked before anything
 * is written is: the file exists, is no directory, can be read, and its
 * first lines are lines (cli_urls_next: a line of more than --max-url-length
 * + CLI_URL_LINE_SLACK bytes is reported and skipped, unread; one with no
 * end in CLI_LINE_GIVE_UP bytes, as /dev/zero, refuses the file).
 * max_url_length 0: the parser's default.  NULL with the reason in err
 * (errlen bytes, naming the file). */
seeds_t *seeds_open(const char *path, size_t max_url_length, char *err, size_t errlen);
/* Seeds the crawl of f with every URL of s, in batches.  Returns 0, or
 * CRAWL_EFILE (the rest of the file cannot be read), CRAWL_ENOMEM, or the
 * frontier's code (frontier_seed), with the reason in err; batches seeded
 * before a failure stay seeded.  Invalid lines are not failures: they are
 * reported on stderr and counted in res.  Call once. */
int seeds_add(seeds_t *s, frontier_t *f, int force, seeds_result_t *res, char *err, size_t errlen);
/* Before seeds_add: reads the crawl's counters (frontier_stats on rc) and
 * the filter's capacity (b), and refuses with CRAWL_EFULL (the message, as
 * bloom_full_message writes it, in err) if the filter is full; otherwise
 * seeds_add will refuse, with CRAWL_EFULL and that message, any batch whose
 * URLs could take the filter past its capacity (nothing of that batch is
 * sent; batches before it stay seeded).  A filter without a recorded
 * capacity sets no limit.  0, or the code of frontier_stats. */
int seeds_check_room(seeds_t *s, struct redisContext *rc, const struct rconn *r, const char *crawl,
                     const bloom_t *b, char *err, size_t errlen);
/* Closes the file (not stdin) and frees s.  Accepts NULL. */
void seeds_close(seeds_t *s);

#endif
