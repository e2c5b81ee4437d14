/*
 * scope.h -- which links a crawl follows: --scope host|domain|any relative
 * to the seeds' hosts, --allow-domain/--deny-domain, --include/--exclude
 * regular expressions; and which hosts count as seeds for the
 * private-address guard.
 *
 * A scope is owned by one thread (not thread-safe); the seed hosts come from
 * Redis (every worker sees the same set) and are refreshed with
 * scope_set_seed_hosts().
 */
#ifndef CRAWLER_SCOPE_H
#define CRAWLER_SCOPE_H

#include <stddef.h>

#include "config.h"

typedef struct scope scope_t;

/* Compiles cfg's patterns.  NULL with a message in err on a bad regex or
 * out of memory.  cfg must outlive the scope. */
scope_t *scope_new(const crawl_config_t *cfg, char *err, size_t errlen);
void scope_free(scope_t *s);

/* Replaces the seed-host set (hosts copied).  0 or -1 (out of memory; the
 * old set is kept). */
int scope_set_seed_hosts(scope_t *s, const char *const *hosts, size_t n);

/* 1 if the normalized URL is to be followed, else 0. */
int scope_allows(const scope_t *s, const char *url);
/* 1 if host (lowercase, no port) is one of the seeds' hosts. */
int scope_is_seed_host(const scope_t *s, const char *host);

/* The registrable domain of host per the Public Suffix List (libpsl), e.g.
 * "www.example.co.uk" -> "example.co.uk"; the host itself for IP addresses
 * and unknown suffixes.  Writes into buf; returns length or -1. */
int scope_registrable_domain(const char *host, char *buf, size_t buflen);

#endif
