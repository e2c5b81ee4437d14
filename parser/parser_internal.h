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
#include <stdint.h>

/* Cleans and parses an absolute http/https URL into *out (caller frees with
 * curl_url_cleanup).  Returns 0 or a PARSER_E* code. */
int url_base_new(const char *base, size_t len, size_t max_len, CURLU **out);

/* Resolves ref (len bytes, need not be NUL-terminated) against base (may be
 * NULL) and normalizes the result.  *out: malloc'd string, caller frees with
 * free(); *out_len its length.  Returns 0 or a PARSER_E* code.  Thread-safe
 * as long as base is not modified concurrently. */
int url_resolve(CURLU *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len);

/* ---- bound.c: keeps what libxml2 buffers bounded ------------------------
 * libxml2's push parser waits for the end of a token (the '>' of a tag, the
 * closing quote of an attribute, "-->", the next '<' of a text run, "</" in
 * a script) before parsing it, buffering everything until then: a 50 MB
 * attribute costs 50 MB.  The bound filter sits in front of it and drops the
 * bytes of any token beyond a cap, keeping the bytes that end the token, so
 * libxml2 never holds more than about a cap of pending input.  Only bytes
 * that cannot matter for links are dropped: text beyond BOUND_TEXT_CAP since
 * the last '<', comment and script/style bytes beyond the caps, attribute
 * values beyond attr_cap (longer than any URL we accept). */
#define BOUND_TEXT_CAP (64u * 1024)     /* bytes of a text / comment / script run */
#define BOUND_TAG_CAP (256u * 1024)     /* bytes of one tag, attributes included */
#define BOUND_ATTR_MIN_CAP (64u * 1024) /* bytes of one quoted attribute value */

typedef struct bound {
    int st;               /* lexer state (bound.c) */
    int passthrough;      /* 1: UTF-16/32 input, no filtering */
    size_t run;           /* bytes in the current token */
    size_t attr;          /* bytes in the current quoted value */
    size_t attr_cap;      /* cap of a quoted value */
    size_t seen;          /* bytes seen so far */
    char quote;           /* quote that opened the value */
    unsigned char flags;  /* BF_* (bound.c) */
    unsigned char nlen;   /* bytes in name[] */
    unsigned char dashes; /* consecutive '-' in a comment */
    char name[8];         /* tag name being read, lowercase, truncated */
    char raw[8];          /* "script"/"style" while inside one */
    uint64_t dropped;     /* bytes dropped so far */
} bound_t;

/* attr_cap: cap of a quoted attribute value (at least BOUND_ATTR_MIN_CAP). */
void bound_init(bound_t *b, size_t attr_cap);
/* Filters in[0..len) into out, which has room for len + 3 bytes; returns
 * the number of bytes written. */
size_t bound_filter(bound_t *b, const char *in, size_t len, char *out);
/* How many of the last bytes written are the start of a possible end tag of
 * raw text ("<", "</scr"): hold them back from libxml2 until more input
 * comes (at most BOUND_MAX_PENDING). */
size_t bound_pending(const bound_t *b);
#define BOUND_MAX_PENDING 8

#endif
