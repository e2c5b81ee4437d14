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
#ifndef SCOPE_H
#define SCOPE_H

#include <stddef.h>

struct sockaddr;

/* Which hosts are in scope, besides --allow-domain. */
typedef enum scope_mode {
    SCOPE_MODE_HOST = 0,   /* only the seeds' hosts */
    SCOPE_MODE_DOMAIN = 1, /* the seeds' registrable domains and their subdomains */
    SCOPE_MODE_ANY = 2,    /* any host */
} scope_mode_t;

/* What a scope is built from.  scope_new() copies what it keeps: the
 * config and its strings need not outlive the scope. */
typedef struct scope_config {
    scope_mode_t mode;               /* --scope */
    const char *const *allow_domain; /* domain names (with their subdomains) always followed */
    size_t n_allow_domain;           /* entries of allow_domain */
    const char *const *deny_domain;  /* domain names (with their subdomains) never followed */
    size_t n_deny_domain;            /* entries of deny_domain */
    const char *const *include;      /* POSIX extended regexes; if any, a URL must match one */
    size_t n_include;                /* entries of include */
    const char *const *exclude;      /* POSIX extended regexes; a URL matching one is dropped */
    size_t n_exclude;                /* entries of exclude */
    const char *const *allow_range;  /* CIDR ranges ("127.16.0.0/12", "::1/128") the
                                        private-address guard lets through */
    size_t n_allow_range;            /* entries of allow_range */
} scope_config_t;

typedef struct scope scope_t;

/* A scope for cfg, with an empty seed-host set.  Domains are matched
 * case-insensitively; regexes against the whole normalized URL.  Returns
 * NULL with a message in err (errlen bytes, may be 0) on a bad regex, a bad
 * range or out of memory. */
scope_t *scope_new(const scope_config_t *cfg, char *err, size_t errlen);
/* Frees s.  Accepts NULL. */
void scope_free(scope_t *s);

/* Replaces the seed-host set (hosts copied).  0 or -1 (out of memory; the
 * old set is kept). */
int scope_set_seed_hosts(scope_t *s, const char *const *hosts, size_t n);

/* 1 if the normalized URL is to be followed, else 0.  Order of decisions:
 * deny-domain, exclude, include (if any given), allow-domain, then mode. */
int scope_allows(const scope_t *s, const char *url);
/* 1 if a URL of host (lowercase, no port) may be fetched by the host rules
 * alone: deny-domain, allow-domain, then mode (no regexes: they select
 * pages, and a robots.txt is not one).  For robots.txt redirects. */
int scope_allows_host(const scope_t *s, const char *host);
/* 1 if host (lowercase, no port) is one of the seeds' hosts. */
int scope_is_seed_host(const scope_t *s, const char *host);

/* 1 if the address is one the private-address guard refuses: IPv4 0/8,
 * 10/8, 127/8, 100.64/10, 169.254/16, 172.16/12, 192.168/16, 224/3; IPv6
 * ::, ::1, fc00::/7, fe80::/10, ff00::/8 and v4-mapped forms of the IPv4
 * ones; any other family.  Thread-safe. */
int scope_private_address(const struct sockaddr *sa);

/* 1 if the guard refuses a connection to sa for a host that is not a seed
 * host: a private address (scope_private_address) outside every
 * allow_range of the scope.  Thread-safe for one scope's readers. */
int scope_guard_refuses(const scope_t *s, const struct sockaddr *sa);

/* Checks a CIDR range as allow_range takes it ("A.B.C.D/N", N 0..32, or an
 * IPv6 address "/N", N 0..128; the address alone is a /32 or /128).  0, or
 * -1 with the reason in err (errlen bytes, may be 0).  Thread-safe. */
int scope_check_range(const char *cidr, char *err, size_t errlen);

/* The registrable domain of host per the Public Suffix List (libpsl), e.g.
 * "www.example.co.uk" -> "example.co.uk"; the host itself for IP addresses
 * and unknown suffixes.  Writes into buf; returns length or -1.
 * Thread-safe. */
int scope_registrable_domain(const char *host, char *buf, size_t buflen);

#endif
