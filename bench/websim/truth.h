/*
 * truth.h -- the ground truth of a crawl of the synthetic web (truth.c) and
 * the URL table it and the scorer share (urlset.c).
 */
#ifndef WEBSIM_TRUTH_H
#define WEBSIM_TRUTH_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

/* What a correct crawler does with a URL it met. */
enum {
    T_MUST = 1,  /* fetches it (answered with any status below 500 but 429) */
    T_RETRY,     /* fetches it --max-tries times (5xx, 429): it never succeeds */
    T_DEAD,      /* cannot: the host never answers (black hole) */
    T_ROBOTS,    /* must not: robots.txt disallows it */
    T_UNAVAIL,   /* must not: the host's robots.txt answers 5xx */
    T_SCOPE,     /* must not: out of --scope */
    T_DEPTH,     /* must not: deeper than --max-depth */
    T_LONG,      /* must not: longer than --max-url-length */
    T_NOFOLLOW,  /* must not: only linked rel=nofollow or from a meta nofollow page */
    T_REDIRECTS, /* must not: more redirects in a row than --max-redirects */
    T_NCLASSES
};
extern const char *const truth_class_name[T_NCLASSES];

typedef struct truth_opts {
    int scope;               /* 0 host, 1 domain, 2 any */
    uint32_t max_depth;      /* UINT32_MAX: none */
    uint32_t max_redirects;  /* 10 */
    uint32_t max_url_length; /* 2048 */
    int follow_nofollow, ignore_robots;
} truth_opts_t;

/* An open-addressing set of URLs by 64-bit hash, with a class and depth. */
typedef struct urlset urlset_t;
typedef struct url_entry {
    uint64_t key; /* urlset_key(url), never 0 */
    uint8_t cls;
    uint32_t depth;
    uint32_t aux; /* the scorer's counters */
    uint32_t aux2;
} url_entry_t;
urlset_t *urlset_new(void);
void urlset_free(urlset_t *u);
uint64_t urlset_key(const char *url, size_t len);
/* The entry of key, created (zeroed but key) if absent; NULL out of memory. */
url_entry_t *urlset_get(urlset_t *u, uint64_t key, int create);
size_t urlset_count(const urlset_t *u);

/* Writes "class<TAB>depth<TAB>url" for every URL met from the seeds (one URL a
 * line in seeds) to out, and a summary to stderr; 0 or -1. */
int truth_run(const ws_cfg_t *c, const truth_opts_t *o, FILE *seeds, FILE *out);

/* Parses "scheme://host/path"; 0 and the host id, https and path start. */
int truth_split(const ws_cfg_t *c, const char *url, uint32_t *host, int *https, const char **path);

#endif
