/*
 * errors.h -- the project's one error space: every module's functions that
 * can fail return 0 or one of these negative codes, and crawl_strerror()
 * turns any of them into text.  Codes never collide: -3 means "Redis
 * unreachable" whichever module returns it.
 *
 * Thread-safe; no state.
 */
#ifndef CRAWL_ERRORS_H
#define CRAWL_ERRORS_H

typedef enum crawl_err {
    CRAWL_OK = 0,
    CRAWL_EINVAL = -1,     /* bad argument (a programmer's or an operator's) */
    CRAWL_ENOMEM = -2,     /* out of memory; nothing was changed */
    CRAWL_EREDIS = -3,     /* Redis unreachable, or the connection was lost mid-call */
    CRAWL_EREPLY = -4,     /* Redis answered an error or an unexpected reply (script error) */
    CRAWL_EWRONGTYPE = -5, /* a key the call needs has the wrong type */
    CRAWL_EMISMATCH = -6,  /* stored Bloom geometry differs from the one asked for */
    CRAWL_ECORRUPT = -7,   /* stored data missing, truncated, foreign or corrupt */
    CRAWL_ENOTFOUND = -8,  /* no such object (a Bloom filter) and nothing to create it from */
    CRAWL_EBLOOM = -9,     /* the crawl's Bloom filter could not be opened or used */
    CRAWL_ELEASE = -10,    /* a lease was lost: expired and handed to another worker */
    CRAWL_EBADURL = -11,   /* not a URL, or it cannot be resolved */
    CRAWL_ESCHEME = -12,   /* a scheme other than http/https */
    CRAWL_ETOOLONG = -13,  /* longer than the configured maximum (or the buffer given) */
    CRAWL_EPARSE = -14,    /* libxml2 refused the input */
    CRAWL_EVERSION = -15,  /* stored data of an unknown format version */
    CRAWL_EWRITE = -16,    /* a write to an output file failed; the writer stays failed */
    CRAWL_EINTERNAL = -17, /* zlib, SHA-1 or the random source failed */
    CRAWL_EFILE = -18,     /* an input file (seeds, config) cannot be opened or read */
    CRAWL_ENOROOM = -19,   /* Redis lacks the free memory (under maxmemory) for it */
    CRAWL_EFULL = -20,     /* the crawl's Bloom filter reached its capacity (it cannot grow) */
    CRAWL_EINTR = -21,     /* stopped by a signal (SIGINT, SIGTERM, SIGHUP) before the end */
    CRAWL_ESTALE = -22,    /* the Bloom filter gained a layer since the call was built */
} crawl_err_t;

#define CRAWL_ERR_MIN CRAWL_ESTALE /* the most negative code */

/* Text of an error code (a static string; "unknown error" for a code not
 * listed above). */
const char *crawl_strerror(int err);

/* 1 for a failure that a later try may not meet: Redis unreachable
 * (CRAWL_EREDIS) or at its maxmemory (CRAWL_ENOROOM, Redis's OOM reply to a
 * call, which it refuses before running it); the crawler keeps what it
 * was sending and tries again.  0 for any other code. */
int crawl_transient(int err);

/* 1 when a Redis error reply's text (its str) says the call was not run
 * here and may run on a new connection a moment later: a Redis Cluster's
 * MOVED and ASK (the slot is served elsewhere), TRYAGAIN (a slot in
 * migration), CLUSTERDOWN, a replica's READONLY and MASTERDOWN, and LOADING
 * (a restarted Redis still reading its data); and a script stopped for
 * touching a key that a resharding has already moved ("... non local key in
 * a cluster node": the frontier's scripts touch every key, checking its
 * type, before their first write).  The frontier answers
 * CRAWL_EREDIS for them, so a worker connects again (rconn routes the new
 * connection to the slot's owner of the moment).  0 for any other text or
 * NULL.  Pure. */
int crawl_retry_reply(const char *str);

/* What went wrong with a page, as its record says ("error_kind" of a JSON
 * line), the crawl's stats count it (P errors) and the metrics label it:
 * one vocabulary, written here once.  crawl_kind_name() gives the word. */
typedef enum crawl_kind {
    CRAWL_KIND_DNS,                /* the host's name did not resolve */
    CRAWL_KIND_CONNECT,            /* no TCP connection */
    CRAWL_KIND_TIMEOUT,            /* --timeout, or --low-speed-limit */
    CRAWL_KIND_TLS,                /* a TLS handshake or a certificate failed */
    CRAWL_KIND_TOO_LARGE,          /* the body passed --max-size */
    CRAWL_KIND_PROTOCOL,           /* a scheme or protocol not served */
    CRAWL_KIND_REDIRECTS,          /* more redirects in a row than --max-redirects */
    CRAWL_KIND_NETWORK,            /* any other transport failure */
    CRAWL_KIND_BLOCKED,            /* the private-address guard refused the address */
    CRAWL_KIND_HTTP_429,           /* Too Many Requests, retried */
    CRAWL_KIND_HTTP_5XX,           /* a server error, retried */
    CRAWL_KIND_ROBOTS,             /* disallowed by robots.txt */
    CRAWL_KIND_ROBOTS_UNAVAILABLE, /* robots.txt could not be read, cause unknown */
    CRAWL_KIND_INTERNAL,           /* the crawler could not start the transfer */
    CRAWL_KIND_OPERATOR_BLOCK,     /* its host was blocked by `crawler block` after its claim */
    CRAWL_KIND_COUNT
} crawl_kind_t;

/* The word of kind k ("dns", "http-5xx", "robots-unavailable", ...), a
 * static string; NULL out of range.  Pure. */
const char *crawl_kind_name(crawl_kind_t k);
/* The kind whose word is name, or -1 (NULL, or a word of no kind).  Pure. */
int crawl_kind_find(const char *name);

#endif
