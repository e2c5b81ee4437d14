/*
 * seeds.c -- seeds file -> frontier, in batches of SEED_BATCH URLs (one
 * frontier_seed round trip and one SADD of their hosts per batch).
 */
#include "seeds.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keys.h" /* the seed hosts key, until frontier_seed records the hosts itself */
#include "parser.h"

#define SEED_BATCH 1000

typedef struct batch {
    redisContext *rc;
    frontier_t *f;
    int force;
    char *urls[SEED_BATCH];
    size_t n;
    seeds_result_t *res;
} batch_t;

static int flush(batch_t *b)
{
    if (!b->n)
        return 0;
    size_t added = 0;
    int rc = frontier_seed(b->f, (const char *const *)b->urls, b->n, b->force, &added);
    if (rc < 0) {
        fprintf(stderr, "crawler: seeding failed: %s\n", frontier_strerror(rc));
        goto out;
    }
    b->res->added += added;
    const char *argv[2 + SEED_BATCH];
    size_t lens[2 + SEED_BATCH];
    char key[FR_KEY_MAX], hosts[SEED_BATCH][256];
    fr_key(b->f, FR_K_SEEDHOSTS, key, sizeof key);
    argv[0] = "SADD";
    argv[1] = key;
    int argc = 2;
    for (size_t i = 0; i < b->n; i++)
        if (parser_url_host(b->urls[i], hosts[i], sizeof hosts[i]) > 0)
            argv[argc++] = hosts[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = argc > 2 ? redisCommandArgv(b->rc, argc, argv, lens) : NULL;
    if (argc > 2 && (!r || r->type == REDIS_REPLY_ERROR)) {
        fprintf(stderr, "crawler: recording seed hosts failed: %s\n", r ? r->str : b->rc->errstr);
        rc = -1;
    }
    if (r)
        freeReplyObject(r);
out:
    for (size_t i = 0; i < b->n; i++)
        free(b->urls[i]);
    b->n = 0;
    return rc < 0 ? -1 : 0;
}

static int on_url(void *ud, const char *url, const char *line, unsigned long lineno)
{
    (void)line;
    (void)lineno;
    batch_t *b = ud;
    if (!(b->urls[b->n] = strdup(url)))
        return -1;
    b->n++;
    b->res->valid++;
    return b->n == SEED_BATCH ? flush(b) : 0;
}

int seeds_add_file(redisContext *rc, frontier_t *f, const char *path, int force,
                   size_t max_url_length, seeds_result_t *res)
{
    memset(res, 0, sizeof *res);
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        fprintf(stderr, "crawler: cannot read seeds file %s: %s\n", path, strerror(errno));
        return -1;
    }
    batch_t *b = calloc(1, sizeof *b);
    long bad = -1;
    if (b) {
        *b = (batch_t){.rc = rc, .f = f, .force = force, .res = res};
        bad = cli_read_urls(in, path, max_url_length, on_url, b);
        if (bad >= 0 && flush(b) < 0)
            bad = -1;
        for (size_t i = 0; i < b->n; i++)
            free(b->urls[i]);
        free(b);
    }
    if (in != stdin)
        fclose(in);
    if (bad < 0)
        return -1;
    res->rejected = bad;
    return 0;
}
