/*
 * outcome.h -- what a transfer's result means, for fetch.c: the error kind
 * recorded for a curl code, whether it is retried, the wait a Retry-After
 * header asks for.  Pure functions, thread-safe.
 */
#ifndef CRAWLER_OUTCOME_H
#define CRAWLER_OUTCOME_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

/* The value of header line (n bytes, without CRLF or with) if its name is
 * name (case-insensitive), trimmed; caller frees with free().  NULL if the
 * line is another header (or out of memory). */
char *outcome_header_value(const char *line, size_t n, const char *name);

/* A Retry-After value (RFC 9110 10.2.3: seconds, or an HTTP-date) in ms,
 * capped at cap_ms (--max-retry-after); 0 if it is neither. */
uint32_t outcome_retry_after_ms(const char *v, uint32_t cap_ms);

/* The error kind recorded for a failed transfer: "dns", "connect",
 * "timeout", "tls", "too-large", "protocol", "redirects" or "network". */
const char *outcome_error_kind(CURLcode res);

/* 1 for a transport error worth another try later.  Of the TLS errors only
 * a failed handshake (CURLE_SSL_CONNECT_ERROR: the connection may have been
 * cut) is: a certificate that does not verify will not fix itself. */
int outcome_retryable(CURLcode res);

#endif
