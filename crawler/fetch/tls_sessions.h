/*
 * tls_sessions.h -- the process's TLS sessions, one per origin, so that a
 * connection to a host that was reached before resumes its session instead
 * of a full handshake (--tls-sessions).
 *
 * libcurl (7.88) keeps eight sessions for a whole share, not one per host:
 * on a crawl of thousands of HTTPS hosts almost no connection resumed
 * (bench/longhaul.md).  This table is OpenSSL's own session objects, keyed
 * by origin, given to libcurl's OpenSSL connections through
 * CURLOPT_SSL_CTX_FUNCTION.  Thread-safe: one table for every thread.
 */
#ifndef CRAWLER_TLS_SESSIONS_H
#define CRAWLER_TLS_SESSIONS_H

#include <curl/curl.h>
#include <stdint.h>

typedef struct tls_sessions tls_sessions_t;

/* A table of `slots` sessions (rounded up to 4 times a power of two; when
 * an origin's bucket of 4 is full, its new session takes the slot used
 * longest ago: memory stays bounded).  NULL when slots is 0, out of
 * memory, libcurl's TLS is not the OpenSSL (major version) linked here, or
 * an HTTPS proxy is named in the environment (libcurl calls back for the
 * proxy's TLS connection with the target's URL); libcurl's own cache is
 * used then. */
tls_sessions_t *tls_sessions_new(uint32_t slots);
/* Frees the table and the sessions it holds.  Accepts NULL. */
void tls_sessions_free(tls_sessions_t *t);

/* Sets an easy handle's options so that its TLS connections take their
 * origin's session from t and leave theirs in it (libcurl's own cache
 * off).  Nothing with t NULL. */
void tls_sessions_use(tls_sessions_t *t, CURL *h);

#endif
