/*
 * scope.c -- link scope rules.
 *
 * DESIGN: the seed hosts and their registrable domains (libpsl, Debian's
 * libpsl-dev, rather than a hand-kept suffix list) are kept in sorted arrays
 * and looked up by binary search; domain rules match a host equal to the
 * domain or ending in "." + domain.  An IPv4 address is its own registrable
 * domain (libpsl, which knows names only, would cut it to its last two
 * numbers).  scope_new() copies the allow/deny domains and compiles the
 * regexes once, so a scope depends on nothing the caller keeps.  Order of
 * decisions for a link: deny-domain, exclude, include (if any given),
 * allow-domain, then the mode; a robots.txt redirect, the host rules only
 * (scope_allows_host).  The private-address guard's classifier is here too,
 * as a pure function, and its allow-list of ranges (--allow-private-range)
 * that the fetcher asks from its socket callback (scope_guard_refuses).
 */
#include "scope.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <libpsl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "parser.h"

/* A list of strings owned by the scope. */
struct strlist {
    char **v;
    size_t n;
};

/* Compiled regexes. */
struct relist {
    regex_t *v;
    size_t n;
};

/* A CIDR range of allow_range: the address in network order, its prefix. */
typedef struct range {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    unsigned bits;
} range_t;

struct scope {
    scope_mode_t mode;
    range_t *ranges; /* allow_range, parsed */
    size_t n_ranges;
    struct strlist allow, deny; /* --allow-domain, --deny-domain */
    struct relist include, exclude;
    char **hosts; /* sorted seed hosts */
    size_t n_hosts;
    char **domains; /* sorted registrable domains of the seed hosts */
    size_t n_domains;
};

static int private_v4(uint32_t a)
{
    uint8_t b0 = a >> 24, b1 = (a >> 16) & 0xff;
    return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) ||
           (b0 == 172 && (b1 & 0xf0) == 16) || (b0 == 192 && b1 == 168) ||
           (b0 == 100 && (b1 & 0xc0) == 64) || b0 >= 224;
}

int scope_private_address(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return private_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return 1;
    const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(b, v4mapped, 12))
        return private_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | b[14] << 8 | b[15]);
    int zero = 1;
    for (int i = 0; i < 15; i++)
        zero &= b[i] == 0;
    return (zero && (b[15] == 0 || b[15] == 1)) || (b[0] & 0xfe) == 0xfc ||
           (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff;
}

/* Parses "ADDR[/N]" into r: 0, or -1 with why in err. */
static int parse_range(const char *cidr, range_t *r, char *err, size_t errlen)
{
    char addr[INET6_ADDRSTRLEN + 1];
    const char *slash = strchr(cidr, '/');
    size_t alen = slash ? (size_t)(slash - cidr) : strlen(cidr);
    memset(r, 0, sizeof *r);
    if (alen == 0 || alen >= sizeof addr)
        goto bad;
    memcpy(addr, cidr, alen);
    addr[alen] = '\0';
    if (inet_pton(AF_INET, addr, r->addr) == 1)
        r->family = AF_INET;
    else if (inet_pton(AF_INET6, addr, r->addr) == 1)
        r->family = AF_INET6;
    else
        goto bad;
    unsigned max = r->family == AF_INET ? 32 : 128;
    r->bits = max;
    if (slash) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(slash + 1, &end, 10);
        if (errno || *end || end == slash + 1 || slash[1] == '-' || slash[1] == '+' || n > max)
            goto bad;
        r->bits = (unsigned)n;
    }
    return 0;
bad:
    snprintf(err, errlen,
             "bad address range '%s': expected an IPv4 or IPv6 address, optionally /BITS "
             "(e.g. 127.16.0.0/12)",
             cidr);
    return -1;
}

int scope_check_range(const char *cidr, char *err, size_t errlen)
{
    range_t r;
    return cidr ? parse_range(cidr, &r, err, errlen) : -1;
}

/* 1 if the first bits of a and b (network order) are the same. */
static int prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, whole))
        return 0;
    if (!rest)
        return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

static int in_range(const range_t *r, const struct sockaddr *sa)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const uint8_t *a;
    if (sa->sa_family == AF_INET)
        a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6)
        a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    else
        return 0;
    if (sa->sa_family == AF_INET6 && r->family == AF_INET && !memcmp(a, v4mapped, 12))
        return prefix_eq(a + 12, r->addr, r->bits); /* ::ffff:a.b.c.d is a.b.c.d */
    return (sa->sa_family == r->family) && prefix_eq(a, r->addr, r->bits);
}

int scope_guard_refuses(const scope_t *s, const struct sockaddr *sa)
{
    if (!scope_private_address(sa))
        return 0;
    for (size_t i = 0; i < s->n_ranges; i++)
        if (in_range(&s->ranges[i], sa))
            return 0;
    return 1;
}

int scope_registrable_domain(const char *host, char *buf, size_t buflen)
{
    struct in_addr a4;
    /* libpsl knows names only: it would make "10.0.0.1" a subdomain of "0.1" */
    const char *d =
        inet_pton(AF_INET, host, &a4) == 1 ? host : psl_registrable_domain(psl_builtin(), host);
    if (!d || !*d)
        d = host;
    int n = snprintf(buf, buflen, "%s", d);
    return n < 0 || (size_t)n >= buflen ? -1 : n;
}

static int compile_all(struct relist *dst, const char *const *src, size_t count, char *err,
                       size_t errlen)
{
    if (count && !(dst->v = calloc(count, sizeof *dst->v)))
        goto nomem;
    for (size_t i = 0; i < count; i++) {
        int rc = regcomp(&dst->v[i], src[i], REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &dst->v[i], msg, sizeof msg);
            snprintf(err, errlen, "bad regular expression '%s': %s", src[i], msg);
            return -1;
        }
        dst->n++;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int copy_all(struct strlist *dst, const char *const *src, size_t count, char *err,
                    size_t errlen)
{
    if (count && !(dst->v = calloc(count, sizeof *dst->v)))
        goto nomem;
    for (size_t i = 0; i < count; i++) {
        if (!(dst->v[i] = strdup(src[i])))
            goto nomem;
        dst->n++;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

scope_t *scope_new(const scope_config_t *cfg, char *err, size_t errlen)
{
    scope_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->mode = cfg->mode;
    if (copy_all(&s->allow, cfg->allow_domain, cfg->n_allow_domain, err, errlen) < 0 ||
        copy_all(&s->deny, cfg->deny_domain, cfg->n_deny_domain, err, errlen) < 0 ||
        compile_all(&s->include, cfg->include, cfg->n_include, err, errlen) < 0 ||
        compile_all(&s->exclude, cfg->exclude, cfg->n_exclude, err, errlen) < 0) {
        scope_free(s);
        return NULL;
    }
    if (cfg->n_allow_range && !(s->ranges = calloc(cfg->n_allow_range, sizeof *s->ranges))) {
        snprintf(err, errlen, "out of memory");
        scope_free(s);
        return NULL;
    }
    for (; s->n_ranges < cfg->n_allow_range; s->n_ranges++)
        if (parse_range(cfg->allow_range[s->n_ranges], &s->ranges[s->n_ranges], err, errlen) < 0) {
            scope_free(s);
            return NULL;
        }
    return s;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_regexes(struct relist *l)
{
    for (size_t i = 0; i < l->n; i++)
        regfree(&l->v[i]);
    free(l->v);
}

void scope_free(scope_t *s)
{
    if (!s)
        return;
    free_list(s->allow.v, s->allow.n);
    free_list(s->deny.v, s->deny.n);
    free_regexes(&s->include);
    free_regexes(&s->exclude);
    free_list(s->hosts, s->n_hosts);
    free_list(s->domains, s->n_domains);
    free(s->ranges);
    free(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t sort_unique(char **v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_str);
    size_t w = 1;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(v[i], v[w - 1]) == 0)
            free(v[i]);
        else
            v[w++] = v[i];
    }
    return w;
}

int scope_set_seed_hosts(scope_t *s, const char *const *hosts, size_t n)
{
    char **h = calloc(n + 1, sizeof *h), **d = calloc(n + 1, sizeof *d);
    size_t nh = 0, nd = 0;
    if (!h || !d)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        char dom[256];
        h[nh] = strdup(hosts[i]);
        if (!h[nh++])
            goto fail;
        if (scope_registrable_domain(hosts[i], dom, sizeof dom) < 0)
            continue;
        d[nd] = strdup(dom);
        if (!d[nd++])
            goto fail;
    }
    free_list(s->hosts, s->n_hosts);
    free_list(s->domains, s->n_domains);
    s->hosts = h;
    s->n_hosts = sort_unique(h, nh);
    s->domains = d;
    s->n_domains = sort_unique(d, nd);
    return 0;
fail:
    free_list(h, nh);
    free_list(d, nd);
    return -1;
}

static int in_sorted(char *const *v, size_t n, const char *key)
{
    return n && bsearch(&key, v, n, sizeof *v, cmp_str) != NULL;
}

/* host is domain or a subdomain of it */
static int under_domain(const char *host, const char *domain)
{
    size_t hl = strlen(host), dl = strlen(domain);
    if (dl == 0 || hl < dl || strcasecmp(host + hl - dl, domain) != 0)
        return 0;
    return hl == dl || host[hl - dl - 1] == '.';
}

static int under_any(const char *host, const struct strlist *doms)
{
    for (size_t i = 0; i < doms->n; i++)
        if (under_domain(host, doms->v[i]))
            return 1;
    return 0;
}

int scope_is_seed_host(const scope_t *s, const char *host)
{
    return in_sorted(s->hosts, s->n_hosts, host);
}

static int matches_any(const struct relist *re, const char *url)
{
    for (size_t i = 0; i < re->n; i++)
        if (regexec(&re->v[i], url, 0, NULL, 0) == 0)
            return 1;
    return 0;
}

/* The host rules after deny-domain: allow-domain, then the mode. */
static int host_in_scope(const scope_t *s, const char *host)
{
    if (under_any(host, &s->allow))
        return 1;
    switch (s->mode) {
    case SCOPE_MODE_ANY:
        return 1;
    case SCOPE_MODE_HOST:
        return scope_is_seed_host(s, host);
    case SCOPE_MODE_DOMAIN: {
        char dom[256];
        return scope_registrable_domain(host, dom, sizeof dom) >= 0 &&
               in_sorted(s->domains, s->n_domains, dom);
    }
    }
    return 0;
}

int scope_allows_host(const scope_t *s, const char *host)
{
    return !under_any(host, &s->deny) && host_in_scope(s, host);
}

int scope_allows(const scope_t *s, const char *url)
{
    char host[256];
    if (parser_url_host(url, host, sizeof host) < 0)
        return 0;
    if (under_any(host, &s->deny))
        return 0;
    if (matches_any(&s->exclude, url))
        return 0;
    if (s->include.n && !matches_any(&s->include, url))
        return 0;
    return host_in_scope(s, host);
}
