/*
 * seeds.c -- seeds file -> frontier, in batches of SEED_BATCH URLs (one
 * frontier_seed call per batch, which also records the seeds' hosts in the
 * same atomic step).
 *
 * DESIGN: one batch_t per call: up to SEED_BATCH normalized URLs (owned
 * copies) and the first failure; touches Redis only through frontier_seed.
 * A failed batch stops the file; batches sent before it stay seeded.
 */
#include "seeds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SEED_BATCH 1000

typedef struct batch {
    frontier_t *f;
    int force;
    int rc; /* the first failure: CRAWL_ENOMEM or frontier_seed's code */
    char *urls[SEED_BATCH];
    size_t n;
    seeds_result_t *res;
} batch_t;

static int flush(batch_t *b)
{
    if (!b->n)
        return 0;
    size_t added = 0;
    int rc = frontier_seed(b->f, (const char *const *)b->urls, b->n,
                           b->force ? FRONTIER_SEED_FORCE : 0, &added);
    if (rc < 0)
        b->rc = rc;
    else
        b->res->added += added;
    for (size_t i = 0; i < b->n; i++)
        free(b->urls[i]);
    b->n = 0;
    return rc < 0 ? -1 : 0; /* -1 stops cli_read_urls */
}

static int on_url(void *ud, const char *url, const char *line, unsigned long lineno)
{
    (void)line;
    (void)lineno;
    batch_t *b = ud;
    if (!(b->urls[b->n] = strdup(url))) {
        b->rc = CRAWL_ENOMEM;
        return -1;
    }
    b->n++;
    b->res->valid++;
    return b->n == SEED_BATCH ? flush(b) : 0;
}

int seeds_add_file(frontier_t *f, const char *path, int force, size_t max_url_length,
                   seeds_result_t *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        snprintf(err, errlen, "cannot read seeds file %s: %s", path, strerror(errno));
        return CRAWL_EFILE;
    }
    int rc = CRAWL_ENOMEM;
    batch_t *b = calloc(1, sizeof *b);
    if (b) {
        *b = (batch_t){.f = f, .force = force, .res = res};
        long bad = cli_read_urls(in, path, max_url_length, on_url, b);
        if (bad >= 0 && flush(b) == 0) {
            res->rejected = bad;
            rc = 0;
        } else {
            rc = b->rc < 0 ? b->rc : CRAWL_EFILE; /* else cli_read_urls could not read */
        }
        for (size_t i = 0; i < b->n; i++)
            free(b->urls[i]);
        free(b);
    }
    if (in != stdin)
        fclose(in);
    if (rc == CRAWL_EFILE)
        snprintf(err, errlen, "cannot read seeds file %s", path);
    else if (rc < 0)
        snprintf(err, errlen, "seeding from %s failed: %s", path, crawl_strerror(rc));
    return rc;
}
