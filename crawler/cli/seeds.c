/*
 * seeds.c -- seeds file -> frontier, in batches of SEED_BATCH URLs (one
 * frontier_seed call per batch, which also records the seeds' hosts in the
 * same atomic step).
 *
 * DESIGN: a seeds_t holds the open file, its bounded line reader
 * (cli_urls_t: no line is ever held beyond --max-url-length + a little, and
 * a line with no end ends the file), and one batch of up to SEED_BATCH
 * normalized URLs (owned copies).  seeds_open() reads the first batch
 * before the caller touches Redis, so a missing, unreadable or binary file
 * (/dev/zero) is refused before anything is written; seeds_add() sends that
 * batch and the rest.  Touches Redis only through frontier_seed (and
 * frontier_stats, once, in seeds_check_room).  A failed batch stops the
 * file; batches sent before it stay seeded.  The visited set cannot grow:
 * after seeds_check_room a batch of n URLs is sent only if the URLs added
 * so far (the crawl's counters then, plus this file's) and n stay within the
 * filter's capacity, so seeding never takes a crawl past it.
 */
#include "seeds.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define SEED_BATCH 1000

struct seeds {
    FILE *in;
    char *path;
    cli_urls_t *lines;
    int done; /* the reader reached the end of the file */
    char *urls[SEED_BATCH];
    unsigned char first[SEED_BATCH]; /* urls[i] has a priority above the default 0.5 */
    size_t n;
    /* seeds_check_room: the filter's fill then (capacity 0: no limit) */
    bloom_geometry_t geo;
    bloom_fill_t fill;
    char *err; /* seeds_add's message buffer, for a refused batch */
    size_t errlen;
};

void seeds_close(seeds_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->urls[i]);
    cli_urls_free(s->lines);
    if (s->in && s->in != stdin)
        fclose(s->in);
    free(s->path);
    free(s);
}

/* Fills the batch from the file: 0 (full, or the file ended: s->done), or
 * CRAWL_EFILE (reported by the reader) / CRAWL_ENOMEM. */
static int fill(seeds_t *s)
{
    while (!s->done && s->n < SEED_BATCH) {
        char *url;
        int rc = cli_urls_next(s->lines, &url);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            s->done = 1;
        } else {
            s->first[s->n] = cli_urls_priority(s->lines) > SEEDS_DEFAULT_PRIORITY;
            s->urls[s->n++] = url;
        }
    }
    return 0;
}

/* Opens path ("-": stdin); NULL with the reason in err. */
static FILE *open_file(const char *path, char *err, size_t errlen)
{
    if (!strcmp(path, "-"))
        return stdin;
    FILE *in = fopen(path, "r");
    struct stat st;
    if (in && fstat(fileno(in), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(in);
        in = NULL;
        errno = EISDIR;
    }
    if (!in)
        snprintf(err, errlen, "cannot read seeds file %s: %s", path, strerror(errno));
    return in;
}

seeds_t *seeds_open(const char *path, size_t max_url_length, char *err, size_t errlen)
{
    seeds_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        snprintf(err, errlen, "seeds file %s: out of memory", path);
        free(s);
        return NULL;
    }
    if (!(s->in = open_file(path, err, errlen)))
        goto fail;
    if (!(s->lines = cli_urls_new(s->in, s->path, max_url_length))) {
        snprintf(err, errlen, "seeds file %s: out of memory", path);
        goto fail;
    }
    cli_urls_priorities(s->lines); /* "URL 0.9" */
    int rc = fill(s);
    if (rc < 0) {
        snprintf(err, errlen, "seeds file %s", cli_urls_error(s->lines));
        if (rc != CRAWL_EFILE)
            snprintf(err, errlen, "seeds file %s: %s", path, crawl_strerror(rc));
        goto fail;
    }
    return s;
fail:
    seeds_close(s);
    return NULL;
}

/* Sends the batch: 0, or frontier_seed's code. */
static int flush(seeds_t *s, frontier_t *f, int force, seeds_result_t *res)
{
    if (!s->n)
        return 0;
    if (s->fill.capacity) { /* a batch that could pass the capacity is refused whole */
        bloom_fill_t now;
        bloom_fill_of(&s->geo, s->fill.capacity, s->fill.added + res->added, &now);
        if (now.added + s->n > now.capacity) {
            bloom_full_message(&now, s->n, s->err, s->errlen);
            return CRAWL_EFULL;
        }
    }
    /* the URLs of a priority above the default first, ahead of their
     * hosts' queues; then the others, in the file's order */
    size_t added = 0;
    const char *part[SEED_BATCH];
    int rc = 0;
    for (int pass = 0; pass < 2 && rc >= 0; pass++) {
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->first[i] == (pass == 0))
                part[k++] = s->urls[i];
        size_t got = 0;
        int flags = (force ? FRONTIER_SEED_FORCE : 0) | (pass == 0 ? FRONTIER_SEED_FIRST : 0);
        if (k)
            rc = frontier_seed(f, part, k, flags, &got);
        added += got;
        /* a visited set that grows: its layers read, the next one made when due
         * (CRAWL_EFULL: it cannot grow, the message in s->err) */
        if (rc >= 0)
            rc = frontier_layers_tend(f, s->err, s->errlen);
    }
    if (rc < 0) {
        res->added += added; /* (what went in before the failure) */
        return rc;
    }
    res->valid += s->n;
    res->added += added;
    for (size_t i = 0; i < s->n; i++)
        free(s->urls[i]);
    s->n = 0;
    return 0;
}

/* The signal that interrupted the seeding (0: none). */
static volatile sig_atomic_t stopped_by;

static void on_stop(int sig)
{
    stopped_by = sig;
}

int seeds_add(seeds_t *s, frontier_t *f, int force, seeds_result_t *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    s->err = err;
    s->errlen = errlen;
    /* a signal stops it between two batches: what went in is said */
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_stop}, old[3];
    sigemptyset(&sa.sa_mask);
    stopped_by = 0;
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    int rc = 0;
    while (rc == 0 && (rc = flush(s, f, force, res)) == 0 && !s->done && !stopped_by)
        rc = fill(s);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (rc == 0 && stopped_by && !s->done)
        rc = CRAWL_EINTR;
    res->rejected = cli_urls_rejected(s->lines);
    if (rc == CRAWL_EINTR)
        snprintf(err, errlen,
                 "interrupted by %s: %zu seeds queued from %s (%zu already seen), the lines "
                 "after line %lu not read",
                 strsignal(stopped_by), res->added, s->path, res->valid - res->added,
                 cli_urls_line(s->lines));
    else if (rc == CRAWL_EFILE)
        snprintf(err, errlen, "seeds file %s (the lines before it were seeded)",
                 cli_urls_error(s->lines));
    else if (rc < 0 && rc != CRAWL_EFULL) /* EFULL: flush wrote the message */
        snprintf(err, errlen, "seeding from %s failed: %s", s->path, crawl_strerror(rc));
    return rc;
}

int seeds_check_room(seeds_t *s, struct redisContext *rc, const struct rconn *r, const char *crawl,
                     const bloom_t *b, char *err, size_t errlen)
{
    frontier_stats_t st;
    int code = frontier_stats_routed(rc, r, crawl, &st);
    if (code < 0) {
        snprintf(err, errlen, "reading the crawl's counters: %s", crawl_strerror(code));
        return code;
    }
    s->geo = *bloom_geometry(b);
    /* a crawl of several shards: b is shard 0's filter, every shard's of
     * its size; the fullest one decides (a batch may all go to one shard) */
    /* a filter that grows has no capacity to pass (bloom.h, "layers") */
    bloom_fill_of(&s->geo, bloom_growth(b) > 1.0 ? 0 : bloom_capacity(b), st.bloom_added_max,
                  &s->fill);
    if (s->fill.full) {
        bloom_full_message(&s->fill, 0, err, errlen);
        return CRAWL_EFULL;
    }
    return 0;
}
