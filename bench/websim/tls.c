/*
 * tls.c -- TLS for websim (server.h): one SSL_CTX, a leaf key made at start,
 * and a certificate per registered domain (*.example-<d>.test and
 * example-<d>.test) signed by the bench's CA when a ClientHello names it.
 *
 * DESIGN: certificates are minted in the SNI callback and kept in a
 * direct-mapped cache of CERT_SLOTS slots (slot d % CERT_SLOTS); a miss mints
 * again (ECDSA P-256: tens of microseconds).  The server-side session cache
 * and TLS 1.3 tickets are on, so a client that offers a session resumes it.
 * Single-threaded, like the server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "server.h"

#define CERT_SLOTS 8192u

struct ws_tls {
    const ws_cfg_t *c;
    SSL_CTX *ctx;
    X509 *ca;
    EVP_PKEY *ca_key, *leaf_key;
    X509 *slot[CERT_SLOTS];
    uint32_t slot_domain[CERT_SLOTS];
};

static int add_ext(X509 *x, X509 *ca, int nid, const char *value)
{
    X509V3_CTX v;
    X509V3_set_ctx(&v, ca, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, &v, nid, value);
    int ok = e && X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

static X509 *mint(ws_tls_t *t, uint32_t d)
{
    char cn[96], san[200];
    snprintf(cn, sizeof cn, "*.example-%u.test", d);
    snprintf(san, sizeof san, "DNS:*.example-%u.test,DNS:example-%u.test", d, d);
    X509 *x = X509_new();
    if (!x)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set_int64(X509_get_serialNumber(x), (int64_t)d + 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -86400);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(t->ca));
    X509_set_pubkey(x, t->leaf_key);
    if (add_ext(x, t->ca, NID_subject_alt_name, san) < 0 ||
        add_ext(x, t->ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, t->ca, NID_ext_key_usage, "serverAuth") < 0 ||
        !X509_sign(x, t->ca_key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int on_sni(SSL *ssl, int *alert, void *arg)
{
    ws_tls_t *t = arg;
    (void)alert;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    uint32_t h = name ? ws_host_parse(t->c, name, strlen(name)) : WS_NOHOST;
    uint32_t d = h == WS_NOHOST ? 0 : ws_domain_of(t->c, h);
    uint32_t s = d % CERT_SLOTS;
    if (!t->slot[s] || t->slot_domain[s] != d) {
        X509 *x = mint(t, d);
        if (!x)
            return SSL_TLSEXT_ERR_ALERT_FATAL;
        X509_free(t->slot[s]);
        t->slot[s] = x;
        t->slot_domain[s] = d;
    }
    if (SSL_use_certificate(ssl, t->slot[s]) != 1 || SSL_use_PrivateKey(ssl, t->leaf_key) != 1)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    return SSL_TLSEXT_ERR_OK;
}

static void *read_pem(const char *path, int key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    void *v = key ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL)
                  : (void *)PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    return v;
}

ws_tls_t *ws_tls_open(const ws_cfg_t *c, const char *ca_cert, const char *ca_key, char *err,
                      size_t errcap)
{
    ws_tls_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    t->c = c;
    t->ca = read_pem(ca_cert, 0);
    t->ca_key = read_pem(ca_key, 1);
    if (!t->ca || !t->ca_key) {
        snprintf(err, errcap, "cannot read the CA certificate %s or key %s", ca_cert, ca_key);
        goto fail;
    }
    t->leaf_key = EVP_EC_gen("P-256");
    t->ctx = SSL_CTX_new(TLS_server_method());
    if (!t->leaf_key || !t->ctx) {
        snprintf(err, errcap, "OpenSSL: %s", ERR_error_string(ERR_get_error(), NULL));
        goto fail;
    }
    X509 *dflt = mint(t, 0); /* a certificate for clients without SNI */
    if (!dflt || SSL_CTX_use_certificate(t->ctx, dflt) != 1 ||
        SSL_CTX_use_PrivateKey(t->ctx, t->leaf_key) != 1) {
        X509_free(dflt);
        snprintf(err, errcap, "OpenSSL: cannot set the default certificate");
        goto fail;
    }
    X509_free(dflt);
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(t->ctx, 200000);
    SSL_CTX_set_session_id_context(t->ctx, (const unsigned char *)"websim", 6);
    SSL_CTX_set_tlsext_servername_callback(t->ctx, on_sni);
    SSL_CTX_set_tlsext_servername_arg(t->ctx, t);
    return t;
fail:
    ws_tls_close(t);
    return NULL;
}

void ws_tls_close(ws_tls_t *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < CERT_SLOTS; i++)
        X509_free(t->slot[i]);
    SSL_CTX_free(t->ctx);
    X509_free(t->ca);
    EVP_PKEY_free(t->ca_key);
    EVP_PKEY_free(t->leaf_key);
    free(t);
}

void *ws_tls_new(ws_tls_t *t, int fd)
{
    SSL *s = SSL_new(t->ctx);
    if (s && SSL_set_fd(s, fd) != 1) {
        SSL_free(s);
        return NULL;
    }
    if (s)
        SSL_set_accept_state(s);
    return s;
}
