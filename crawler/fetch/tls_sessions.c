/*
 * tls_sessions.c -- the process's TLS sessions, one per origin
 * (tls_sessions.h).
 *
 * DESIGN.  libcurl's OpenSSL backend makes an SSL_CTX for every connection
 * and calls CURLOPT_SSL_CTX_FUNCTION on it before the connection's SSL
 * exists.  There the connection's origin (from the transfer's URL) is
 * hung on the SSL_CTX (ex_data), with two callbacks: the info callback, at
 * the handshake's start (before the ClientHello is written), gives the SSL
 * the origin's session if the table has one; the new-session callback
 * (after a full handshake, or a TLS 1.3 ticket) keeps the session as the
 * origin's.  A session is only ever offered to the origin it came from, so
 * a server sees the session it issued for that name, and libcurl's
 * certificate and host checks run on a resumed session's certificate as on
 * a new one's.  The table is set-associative: an origin's hash picks a
 * bucket of TLS_WAYS slots, where its session replaces its own older one,
 * else takes an empty slot, else the slot used longest ago (a direct-mapped
 * table lost sessions to collisions long before it was full: 40 origins in
 * 8,192 slots collided in one crawl of ten).  Each bucket is guarded by one
 * of TLS_LOCKS mutexes.  A session past its timeout is dropped instead of
 * offered.  libcurl's own session cache is
 * turned off on the handles that use the table.
 */
#include "tls_sessions.h"

#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "metrics.h"
#include "parser.h"

#define TLS_LOCKS 64 /* mutexes over the buckets */
#define TLS_WAYS 4   /* slots a bucket */

typedef struct slot {
    uint64_t hash; /* the origin's (0: empty) */
    uint64_t used; /* the table's tick when last kept or taken */
    SSL_SESSION *s;
} slot_t;

struct tls_sessions {
    slot_t *slots; /* [(mask + 1) * TLS_WAYS] */
    uint64_t mask; /* buckets - 1 */
    pthread_mutex_t locks[TLS_LOCKS];
    _Atomic uint64_t tick;
};

/* What a connection's SSL_CTX carries (ex_data): the table and the origin. */
typedef struct conn_note {
    tls_sessions_t *t;
    uint64_t hash;
} conn_note_t;

static int ex_index = -1;
static pthread_once_t ex_once = PTHREAD_ONCE_INIT;

static void note_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent;
    (void)ad;
    (void)idx;
    (void)argl;
    (void)argp;
    free(ptr);
}

static void ex_init(void)
{
    ex_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, note_free);
}

tls_sessions_t *tls_sessions_new(uint32_t slots)
{
    if (!slots)
        return NULL;
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    if (!v || !v->ssl_version || strncmp(v->ssl_version, "OpenSSL/", 8) != 0 ||
        strtoul(v->ssl_version + 8, NULL, 10) != OpenSSL_version_num() >> 28)
        return NULL; /* another TLS library (or major version) than the one linked here */
    static const char *const proxy_vars[] = {"https_proxy", "HTTPS_PROXY", "all_proxy",
                                             "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxy_vars / sizeof *proxy_vars; i++)
        if (getenv(proxy_vars[i]) && *getenv(proxy_vars[i]))
            return NULL; /* libcurl would call back for the proxy's TLS connection too,
                            with the target's URL: libcurl's own cache then */
    pthread_once(&ex_once, ex_init);
    if (ex_index < 0)
        return NULL;
    uint64_t n = 1; /* buckets */
    while (n * TLS_WAYS < slots)
        n <<= 1;
    tls_sessions_t *t = calloc(1, sizeof *t);
    if (!t || !(t->slots = calloc(n * TLS_WAYS, sizeof *t->slots))) {
        free(t);
        return NULL;
    }
    t->mask = n - 1;
    for (int i = 0; i < TLS_LOCKS; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return t;
}

void tls_sessions_free(tls_sessions_t *t)
{
    if (!t)
        return;
    for (uint64_t i = 0; i < (t->mask + 1) * TLS_WAYS; i++)
        SSL_SESSION_free(t->slots[i].s);
    for (int i = 0; i < TLS_LOCKS; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->slots);
    free(t);
}

static pthread_mutex_t *lock_of(tls_sessions_t *t, uint64_t b)
{
    return &t->locks[b % TLS_LOCKS];
}

/* The origin's session, a reference of the caller's; NULL if none (or it
 * is past its timeout: dropped). */
static SSL_SESSION *take(tls_sessions_t *t, uint64_t hash)
{
    uint64_t b = hash & t->mask;
    SSL_SESSION *s = NULL;
    pthread_mutex_lock(lock_of(t, b));
    for (slot_t *sl = &t->slots[b * TLS_WAYS], *end = sl + TLS_WAYS; sl < end; sl++) {
        if (sl->hash != hash || !sl->s)
            continue;
        long born = (long)SSL_SESSION_get_time(sl->s), life = (long)SSL_SESSION_get_timeout(sl->s);
        if ((long)time(NULL) - born < life && SSL_SESSION_is_resumable(sl->s)) {
            s = sl->s;
            SSL_SESSION_up_ref(s);
            sl->used = atomic_fetch_add(&t->tick, 1) + 1;
        } else {
            SSL_SESSION_free(sl->s);
            sl->s = NULL;
            sl->hash = 0;
        }
        break;
    }
    pthread_mutex_unlock(lock_of(t, b));
    return s;
}

/* Keeps s (a reference the caller gives) as the origin's session: in the
 * origin's slot, else an empty one, else the one used longest ago. */
static void keep(tls_sessions_t *t, uint64_t hash, SSL_SESSION *s)
{
    uint64_t b = hash & t->mask;
    pthread_mutex_lock(lock_of(t, b));
    slot_t *v = NULL;
    for (slot_t *sl = &t->slots[b * TLS_WAYS], *end = sl + TLS_WAYS; sl < end; sl++) {
        if (sl->hash == hash) {
            v = sl;
            break;
        }
        if (!v || (v->hash && (!sl->hash || sl->used < v->used)))
            v = sl;
    }
    SSL_SESSION *old = v->s;
    v->s = s;
    v->hash = hash;
    v->used = atomic_fetch_add(&t->tick, 1) + 1;
    pthread_mutex_unlock(lock_of(t, b));
    SSL_SESSION_free(old);
}

static conn_note_t *note_of(const SSL *ssl)
{
    SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
    return ctx ? SSL_CTX_get_ex_data(ctx, ex_index) : NULL;
}

/* OpenSSL: a session to keep (1: the reference is ours now). */
static int on_new_session(SSL *ssl, SSL_SESSION *s)
{
    conn_note_t *n = note_of(ssl);
    if (!n || !SSL_SESSION_is_resumable(s))
        return 0;
    keep(n->t, n->hash, s);
    return 1;
}

/* OpenSSL: a handshake's start (the ClientHello not yet written) and end. */
static void on_info(const SSL *ssl, int where, int ret)
{
    (void)ret;
    conn_note_t *n = note_of(ssl);
    if (!n)
        return;
    if ((where & SSL_CB_HANDSHAKE_START) && SSL_in_before(ssl)) {
        SSL_SESSION *s = take(n->t, n->hash);
        if (s) {
            SSL_set_session((SSL *)ssl, s); /* (takes a reference of its own) */
            SSL_SESSION_free(s);
        }
    } else if (where & SSL_CB_HANDSHAKE_DONE) {
        metrics_tls_handshake(SSL_session_reused((SSL *)ssl));
    }
}

/* CURLOPT_SSL_CTX_FUNCTION: a connection's SSL_CTX, before its SSL. */
static CURLcode on_ssl_ctx(CURL *h, void *sslctx, void *ud)
{
    tls_sessions_t *t = ud;
    SSL_CTX *ctx = sslctx;
    char *url = NULL, origin[1024];
    if (curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || !url ||
        parser_url_origin(url, origin, sizeof origin) < 0)
        return CURLE_OK; /* (no session then: a full handshake) */
    conn_note_t *n = malloc(sizeof *n);
    if (!n)
        return CURLE_OK;
    n->t = t;
    n->hash = XXH3_64bits(origin, strlen(origin));
    n->hash += n->hash == 0;
    if (!SSL_CTX_set_ex_data(ctx, ex_index, n)) {
        free(n);
        return CURLE_OK;
    }
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    SSL_CTX_set_info_callback(ctx, on_info);
    return CURLE_OK;
}

void tls_sessions_use(tls_sessions_t *t, CURL *h)
{
    if (!t)
        return;
    curl_easy_setopt(h, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
    curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, t);
}
