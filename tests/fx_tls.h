/*
 * fx_tls.h -- an HTTPS server for the suites that need one: `openssl
 * s_server -www` (the openssl program) with a fresh self-signed ECDSA
 * certificate for the names given.  It answers every GET with a page that
 * says whether the connection's TLS session was new or resumed ("New, "
 * or "Reused, "), and closes each connection after one response.
 */
#ifndef TESTS_FX_TLS_H
#define TESTS_FX_TLS_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

/* Starts the server on 127.0.0.1 with a certificate for san (an
 * subjectAltName value, e.g. "IP:127.0.0.1"), key and certificate written
 * in dir (dir/crt.pem: what --ca-file takes); its pid, its port in *port. */
static inline pid_t fx_tls_server(const char *dir, const char *san, int *port)
{
    char key[600], crt[600], out[600], ext[8192];
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(crt, sizeof crt, "%s/crt.pem", dir);
    snprintf(out, sizeof out, "%s/s_server.out", dir);
    snprintf(ext, sizeof ext, "subjectAltName=%s", san);
    char *req[] = {"openssl",
                   "req",
                   "-x509",
                   "-newkey",
                   "ec",
                   "-pkeyopt",
                   "ec_paramgen_curve:prime256v1",
                   "-nodes",
                   "-keyout",
                   key,
                   "-out",
                   crt,
                   "-days",
                   "1",
                   "-subj",
                   "/CN=crawler-test",
                   "-addext",
                   ext,
                   NULL};
    int rc = fx_run(req, NULL, NULL, 60000);
    cr_assert_eq(rc, 0, "openssl req (the openssl program is needed) exited %d", rc);
    char *srv[] = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-cert",
                   crt,       "-key",     key,       "-www",        NULL};
    pid_t pid = fx_spawn(srv, out, NULL);
    cr_assert(pid > 0, "cannot start openssl s_server: %s", fx_error());
    *port = 0;
    uint64_t deadline = fx_now_ms() + 20000;
    while (!*port && fx_now_ms() < deadline) {
        char *s = fx_read_file(out, NULL);
        const char *a = s ? strstr(s, "ACCEPT 127.0.0.1:") : NULL;
        if (a)
            *port = (int)strtol(a + strlen("ACCEPT 127.0.0.1:"), NULL, 10);
        free(s);
        if (!*port)
            usleep(10000);
    }
    if (!*port) {
        kill(pid, SIGKILL);
        fx_wait(pid, 5000);
    }
    cr_assert(*port > 0, "openssl s_server did not say its port");
    return pid;
}

#endif
