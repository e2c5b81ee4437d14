/*
 * fetch_internal.h -- what the files of fetch/ share: a transfer (xfer_t,
 * transfer.c), the making of its result (fetch_result.c), and the pool's
 * body (fetch_t, fetch.c).  Not for other modules (fetch.h is the
 * interface).
 */
#ifndef CRAWLER_FETCH_INTERNAL_H
#define CRAWLER_FETCH_INTERNAL_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "fetch.h"
#include "netloop.h"
#include "parser.h"
#include "sitemap.h"
#include "anchors.h"
#include "text.h"

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;

typedef enum xfer_kind { XF_PAGE, XF_ROBOTS } xfer_kind_t;

typedef struct xfer xfer_t;
typedef struct ipgate ipgate_t;

/* What a transfer reads of its thread's (the pool's, never written). */
typedef struct xfer_env {
    const crawl_config_t *cfg;
    CURLSH *share;        /* DNS cache, shared by the threads */
    tls_sessions_t *tls;  /* TLS sessions, one per origin (NULL: libcurl's, in share) */
    int ca_file_only;     /* a CA file is in force (--ca-file or libcurl's default): no CA
                             directory, so that libcurl caches the store it makes of it */
    const scope_t *scope; /* links and robots.txt redirects; seed hosts for the guard */
    int record;           /* keep heads and bodies for WARC */
    int text;             /* extract each HTML page's text (--text) */
    text_config_t text_cfg;
    int links;  /* record each HTML page's outlinks (--links) */
    int ipgate; /* per-IP politeness: a transfer connects only to the address it holds a slot of */
} xfer_env_t;

struct xfer {
    xfer_kind_t kind;
    const xfer_env_t *env;
    CURL *h;
    unsigned shard; /* running: its multi handle in the loop */
    struct xfer *next_free;
    struct xfer *prev, *next; /* the list of running transfers */
    frontier_item_t item;     /* XF_PAGE: the leased URL */
    char *origin;             /* XF_ROBOTS: origin whose robots.txt this is */
    char *moved_to;           /* XF_ROBOTS: the origin whose robots.txt it redirected to
                                 (fetch.c: not followed, the gate adopts that one's) */
    char *next_url;           /* deferred or waiting: the URL it starts on ... */
    uint64_t start_at;        /* ... (deferred) at this time (clock_now_ms) */
    char host[256];           /* host of the URL (this hop's), for the private-address guard */
    unsigned hops;            /* XF_ROBOTS: redirects followed so far */
    int seed_host;            /* host is a seed host: the guard lets it through */
    int blocked;              /* the guard refused the address */
    int too_large;            /* body passed --max-size (decoded) */
    int raw;                  /* XF_PAGE when recording: the body kept as received, decoded
                                 here (dec) for the parser */
    decode_kind_t cenc;       /* the response's Content-Encoding */
    decoder_t *dec;           /* raw: its decoder, made at the first body byte */
    int undecodable;          /* raw: a coding not undone here, or a corrupt stream */
    int raw_cut;              /* raw: the body as received passed --max-size */
    int parse_started;
    parser_t *parser;
    text_t *text;       /* --text: the page's extractor, fed by the parser */
    anchors_t *anchors; /* --links: the page's outlinks, fed by the parser */
    sitemap_t *sitemap; /* --sitemaps and an XML body */
    char *ctype, *location, *xrobots;
    char *etag, *last_modified; /* the response's validators (--out records them) */
    uint32_t retry_after_ms;
    uint64_t bytes;
    char **links;
    size_t nlinks, links_cap;
    unsigned char *links_first; /* [links_cap] or NULL: links of high priority (sitemap.c) */
    /* distinct in-scope links past --max-links-per-page */
    uint32_t links_over_cap;
    uint64_t *seen; /* open-addressing set of link hashes (page-local dedupe) */
    size_t seen_cap, nseen;
    buf_t body;         /* robots body, or the page body when recording */
    buf_t reqhead;      /* raw request head (recording) */
    buf_t resphead;     /* raw response head (recording) */
    page_exchange_t ex; /* what fetch_result_t.exchange points to */
    fetch_result_t res; /* on the done list: its result, made when it finished */
    uint64_t t_start;
    uint64_t t_first; /* XF_ROBOTS: start of the first hop (the timeout covers all) */
    char ip[64];
    /* per-IP politeness (fetch.c: the gate) */
    char ip_want[64];       /* the address the socket callback stopped at, no slot held for it */
    char slot_ip[64];       /* the address whose slot x holds ("": none) ... */
    uint64_t slot_tok;      /* ... under this token (0: none) */
    uint64_t ask_tok;       /* asking: the token of its ask (0: not asking) */
    unsigned ip_asks;       /* asks made for this hop */
    uint32_t ip_backoff_ms; /* the next wait when every slot is held */
    char errbuf[CURL_ERROR_SIZE];
};

/* A list of transfers in order (linked through next_free). */
typedef struct xfer_fifo {
    xfer_t *head, *tail;
    size_t n;
} xfer_fifo_t;

struct fetch {
    xfer_env_t env;    /* what its transfers read */
    netloop_t *loop;   /* the multi handles and their epoll loop */
    uint64_t prune_at; /* when a transfer next prunes the DNS cache (dns_timeout) */
    xfer_t *free_xfers;
    xfer_t *running;  /* transfers in the multi handle */
    size_t active;    /* how many */
    xfer_fifo_t done; /* finished, result made, not yet taken */
    xfer_t *deferred; /* robots.txt hops waiting the delay, transfers waiting to ask again */
    size_t ndeferred;
    uint64_t deferred_at; /* no deferred transfer is due before (clock_now_ms; may be early) */
    size_t max_running;   /* transfers in the loop at most (the thread's slots) */
    xfer_fifo_t waiting;  /* started past max_running: waiting their turn */
    xfer_t *held;         /* the transfer of the last result */
    ipgate_t *ipg;        /* per-IP politeness (NULL: off) */
    xfer_t *asking;       /* transfers whose ask for a slot is not answered (linked by prev/next) */
    size_t nasking;       /* how many: they count as running (a grant starts at once) */
};

/* ---- transfer.c: one transfer ---- */
/* A new transfer reading env (borrowed), its easy handle made; NULL on out
 * of memory.  xfer_free accepts NULL. */
xfer_t *xfer_new(const xfer_env_t *env);
void xfer_free(xfer_t *x);
/* Back to empty for reuse (the easy handle and buffers kept). */
void xfer_clear(xfer_t *x);
/* The parser, sitemap parser and link set of a finished transfer (its
 * result made): freed now, not when the pooled transfer is reused. */
void xfer_drop_parse_state(xfer_t *x);
/* The host the guard judges for x: url's, and whether it is a seed host. */
void xfer_aim(xfer_t *x, const char *url);
/* Forgets the headers of the response before (a new one begins). */
void xfer_reset_headers(xfer_t *x);
/* Sets x's options and callbacks to fetch url (libcurl copies it), with
 * this DNS cache timeout (fetch.c prunes the cache once a second). */
void xfer_setup(xfer_t *x, const char *url, long dns_timeout);
/* A link of x's page: de-duplicated, scope-filtered, kept (copied).
 * Returns what became of it (ANCHOR_FOLLOWED: kept). */
anchor_verdict_t xfer_add_link(xfer_t *x, const char *url, size_t len);
/* Appends n bytes to b (NUL-terminated): 0, or -1 out of memory. */
int xfer_buf_add(buf_t *b, const void *data, size_t n);

/* ---- ipgate.c: what the transfers know of per-IP politeness ---- */
ipgate_t *ipgate_new(void); /* NULL on out of memory */
void ipgate_free(ipgate_t *g);
/* The address host was last reached on, NULL if unknown or older than
 * FETCH_DNS_TTL_S (now: clock_now_ms); learned from a transfer or the
 * crawl's map (a claim's frontier_item_t.ip); an address literal's own. */
const char *ipgate_addr(ipgate_t *g, const char *host, uint64_t now);
void ipgate_learn(ipgate_t *g, const char *host, const char *ip, uint64_t now);
/* An ask of a slot of ip for x: its token, 0 on out of memory. */
uint64_t ipgate_ask(ipgate_t *g, xfer_t *x, const char *ip);
/* The slot of ip held under tok given back. */
void ipgate_give_back(ipgate_t *g, const char *ip, uint64_t tok);
/* x goes (cancelled): its asks name it no more. */
void ipgate_forget(ipgate_t *g, const xfer_t *x);
/* The ops made since the last batch, as the batch in flight (*n of them);
 * NULL when there are none or a batch is in flight. */
frontier_ipslot_t *ipgate_batch(ipgate_t *g, size_t *n);
/* The batch in flight: its ops and their transfers (NULL: a return, or
 * forgotten); 0 when none is. */
size_t ipgate_sent(const ipgate_t *g, frontier_ipslot_t **s, xfer_t ***x);
/* The batch answered. */
void ipgate_sent_done(ipgate_t *g);
/* 1 if ops wait for a batch and none is in flight. */
int ipgate_unsent(const ipgate_t *g);

/* ---- fetch_result.c: what a finished transfer gives ---- */
/* x ended with res: its result made into x->res (a page's item taken). */
void fetch_result_make(xfer_t *x, CURLcode res);
/* x, a robots.txt, ended with res: the URL of its redirect's next hop if it
 * is to be followed (caller frees), else NULL. */
char *fetch_robots_hop(xfer_t *x, CURLcode res);

#endif
