/*
 * ipgate.c -- what a thread's transfers know of per-IP politeness
 * (--per-ip, --ip-delay; fetch_internal.h: ipgate_t): the address each host
 * was last reached on, the asks and returns of address slots waiting to go
 * to Redis, and the batch of them in flight.  Data only: fetch.c decides
 * what a transfer does (fetch.h: fetch_ip_batch, fetch_ip_answered).
 *
 * DESIGN: the host -> address map is a direct-mapped table of
 * IPGATE_HOSTS entries (a colliding host takes the entry: memory stays
 * flat), each learned from the address a transfer of the host actually
 * connected to (CURLINFO_PRIMARY_IP, or the private-address guard's
 * socket callback), or from the crawl's map (a claim's frontier_item_t.ip:
 * what another worker's connection found, no older than the same TTL),
 * and forgotten after FETCH_DNS_TTL_S, when libcurl's own DNS answer for
 * it has gone too: so it follows DNS as the fetches see it (a wrong entry
 * costs one stop at the socket callback and is learned right); a host
 * that is an address literal is its own address.  An
 * ask names its transfer; a transfer cancelled while its ask is in flight
 * is forgotten (ipgate_forget), and a slot granted to it is given back.
 * Redis keys: none (the frontier's ipgate call: P ip:ADDR).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "fetch_internal.h"

#define IPGATE_HOSTS 4096 /* entries of the host -> address table (a power of 2) */

typedef struct host_ip {
    uint64_t hash; /* xxh64 of the host, 0: empty */
    uint64_t at;   /* clock_now_ms when learned */
    char ip[64];
} host_ip_t;

typedef struct ops {
    frontier_ipslot_t *s;
    xfer_t **x; /* an ask's transfer (NULL: a return, or forgotten) */
    size_t n, cap;
} ops_t;

struct ipgate {
    host_ip_t *hosts; /* [IPGATE_HOSTS] */
    ops_t next;       /* made since the last batch */
    ops_t sent;       /* the batch in flight (fetch_ip_batch .. fetch_ip_answered) */
    int in_flight;
    uint64_t token; /* the last token drawn */
};

ipgate_t *ipgate_new(void)
{
    ipgate_t *g = calloc(1, sizeof *g);
    if (g && !(g->hosts = calloc(IPGATE_HOSTS, sizeof *g->hosts))) {
        free(g);
        return NULL;
    }
    /* tokens from a random start: a worker id made again (a restarted
     * container's same host and pid) draws other tokens than its
     * predecessor's, whose slots may not have lapsed yet */
    if (g) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        seed ^= (uint64_t)(uintptr_t)g;
        g->token = XXH3_64bits(&seed, sizeof seed) >> 16; /* (room to count up) */
    }
    return g;
}

static void ops_free(ops_t *o)
{
    free(o->s);
    free(o->x);
}

void ipgate_free(ipgate_t *g)
{
    if (!g)
        return;
    ops_free(&g->next);
    ops_free(&g->sent);
    free(g->hosts);
    free(g);
}

static host_ip_t *slot_of(ipgate_t *g, const char *host, uint64_t *h)
{
    *h = XXH3_64bits(host, strlen(host));
    if (*h == 0)
        *h = 1;
    return &g->hosts[*h & (IPGATE_HOSTS - 1)];
}

/* The address host names when it is an address literal ("192.0.2.1",
 * "[2001:db8::1]"), in inet_ntop's form, as the socket callback writes
 * the address it stops at; 0, or -1 for a name. */
static int literal(const char *host, char *ip, size_t len)
{
    unsigned char a[sizeof(struct in6_addr)];
    char v6[64];
    size_t n = strlen(host);
    if (inet_pton(AF_INET, host, a) == 1)
        return inet_ntop(AF_INET, a, ip, (socklen_t)len) ? 0 : -1;
    if (n < 3 || n - 2 >= sizeof v6 || host[0] != '[' || host[n - 1] != ']')
        return -1;
    memcpy(v6, host + 1, n - 2);
    v6[n - 2] = '\0';
    return inet_pton(AF_INET6, v6, a) == 1 && inet_ntop(AF_INET6, a, ip, (socklen_t)len) ? 0 : -1;
}

const char *ipgate_addr(ipgate_t *g, const char *host, uint64_t now)
{
    uint64_t h;
    host_ip_t *e = slot_of(g, host, &h);
    if (e->hash == h && now <= e->at + (uint64_t)FETCH_DNS_TTL_S * 1000)
        return e->ip;
    char ip[sizeof e->ip];
    if (literal(host, ip, sizeof ip) < 0)
        return NULL;
    ipgate_learn(g, host, ip, now); /* (no DNS to ask: no probe) */
    return e->ip;
}

void ipgate_learn(ipgate_t *g, const char *host, const char *ip, uint64_t now)
{
    size_t len = strlen(ip);
    if (!host[0] || !len || len >= sizeof g->hosts[0].ip)
        return;
    uint64_t h;
    host_ip_t *e = slot_of(g, host, &h);
    e->hash = h;
    e->at = now;
    memcpy(e->ip, ip, len + 1);
}

/* One more op on g->next: 0, or -1 out of memory. */
static int push(ipgate_t *g, const char *ip, uint64_t tok, int ret, xfer_t *x)
{
    ops_t *o = &g->next;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        frontier_ipslot_t *s = realloc(o->s, cap * sizeof *s);
        if (!s)
            return -1;
        o->s = s;
        xfer_t **xs = realloc(o->x, cap * sizeof *xs);
        if (!xs)
            return -1;
        o->x = xs;
        o->cap = cap;
    }
    frontier_ipslot_t *s = &o->s[o->n];
    memset(s, 0, sizeof *s);
    size_t len = strlen(ip);
    if (len >= sizeof s->ip)
        len = sizeof s->ip - 1;
    memcpy(s->ip, ip, len);
    s->token = tok;
    s->ret = ret;
    o->x[o->n++] = x;
    return 0;
}

uint64_t ipgate_ask(ipgate_t *g, xfer_t *x, const char *ip)
{
    uint64_t tok = ++g->token;
    return push(g, ip, tok, 0, x) < 0 ? 0 : tok;
}

void ipgate_give_back(ipgate_t *g, const char *ip, uint64_t tok)
{
    (void)push(g, ip, tok, 1, NULL); /* (out of memory: the slot lapses at its hold) */
}

void ipgate_forget(ipgate_t *g, const xfer_t *x)
{
    for (size_t i = 0; i < g->next.n; i++)
        if (g->next.x[i] == x) { /* not sent: the ask becomes nothing */
            g->next.x[i] = NULL;
            g->next.s[i].ret = 2;
        }
    for (size_t i = 0; i < g->sent.n; i++)
        if (g->sent.x[i] == x)
            g->sent.x[i] = NULL; /* sent: a grant is given back when it comes */
}

frontier_ipslot_t *ipgate_batch(ipgate_t *g, size_t *n)
{
    *n = 0;
    if (g->in_flight || !g->next.n)
        return NULL;
    ops_t t = g->sent;
    g->sent = g->next;
    g->next = t;
    g->next.n = 0;
    size_t k = 0; /* forgotten asks left out */
    for (size_t i = 0; i < g->sent.n; i++)
        if (g->sent.s[i].ret != 2) {
            g->sent.s[k] = g->sent.s[i];
            g->sent.x[k++] = g->sent.x[i];
        }
    g->sent.n = k;
    if (!k)
        return NULL;
    g->in_flight = 1;
    *n = k;
    return g->sent.s;
}

size_t ipgate_sent(const ipgate_t *g, frontier_ipslot_t **s, xfer_t ***x)
{
    *s = g->sent.s;
    *x = g->sent.x;
    return g->in_flight ? g->sent.n : 0;
}

void ipgate_sent_done(ipgate_t *g)
{
    g->in_flight = 0;
    g->sent.n = 0;
}

int ipgate_unsent(const ipgate_t *g)
{
    return !g->in_flight && g->next.n > 0;
}
