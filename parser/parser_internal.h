/*
 * parser_internal.h -- shared between url.c and html.c, not part of the
 * public contract.  The html parser parses the page's base URL once
 * (url_base_new) and resolves every link against that handle (url_resolve),
 * instead of re-parsing the base string for each link.
 */
#ifndef PARSER_INTERNAL_H
#define PARSER_INTERNAL_H

#include <curl/curl.h>
#include <stddef.h>

/* Cleans and parses an absolute http/https URL into *out (caller frees with
 * curl_url_cleanup).  Returns 0 or a PARSER_E* code. */
int url_base_new(const char *base, size_t len, size_t max_len, CURLU **out);

/* Resolves ref (len bytes, need not be NUL-terminated) against base (may be
 * NULL) and normalizes the result.  *out: malloc'd string, caller frees with
 * free(); *out_len its length.  Returns 0 or a PARSER_E* code.  Thread-safe
 * as long as base is not modified concurrently. */
int url_resolve(CURLU *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len);

#endif
