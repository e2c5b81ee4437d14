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

typedef struct seeds_result {
    size_t valid;  /* lines that were valid URLs */
    size_t added;  /* queued (new, or forced) */
    long rejected; /* invalid lines (reported on stderr with line numbers) */
} seeds_result_t;

/* Reads path ("-": stdin) and seeds the crawl of f.  Returns 0, or
 * CRAWL_EFILE (path cannot be opened or read), CRAWL_ENOMEM, or the
 * frontier's code (frontier_seed), with the reason in err (errlen bytes,
 * naming the file); batches seeded before a failure stay seeded.  Invalid
 * lines are not failures: they are reported on stderr and counted. */
int seeds_add_file(frontier_t *f, const char *path, int force, size_t max_url_length,
                   seeds_result_t *res, char *err, size_t errlen);

#endif
