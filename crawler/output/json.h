/*
 * json.h -- JSON text for the output files: an emitter into a bounded
 * buffer that counts what it could not store, strings made valid UTF-8 and
 * escaped, numbers and RFC 3339 times.  Pure functions, thread-safe.
 */
#ifndef CRAWLER_JSON_H
#define CRAWLER_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Writes into p[0..cap) and counts every byte in len, stored or not: a
 * format that ends with len > cap did not fit (no NUL is added). */
typedef struct json_emit {
    char *p;
    size_t cap;
    size_t len;
} json_emit_t;

void json_put(json_emit_t *e, const char *s, size_t n);
/* A literal (no escaping). */
void json_lit(json_emit_t *e, const char *s);
/* s as a JSON string with its quotes (invalid UTF-8 as U+FFFD, control
 * bytes escaped), or null for NULL. */
void json_str(json_emit_t *e, const char *s);
/* The first n bytes of s, as json_str. */
void json_strn(json_emit_t *e, const char *s, size_t n);
void json_u64(json_emit_t *e, uint64_t v);
/* Unix ms as an RFC 3339 UTC string with milliseconds
 * ("2026-11-30T00:01:02.345Z"), or null out of range. */
void json_time(json_emit_t *e, int64_t ms);
/* key (a literal, e.g. ",\"simhash\":") then v as a string of 16 lower
 * case hex digits (a 64-bit hash: a JSON number would lose its low bits). */
void json_hex64(json_emit_t *e, const char *key, uint64_t v);
/* A record's end: ,"timestamp":"..." (ms, 0: now), the closing brace and
 * the newline, then a NUL when it fits; returns the line's length (more
 * than the buffer when it did not fit). */
size_t json_end_line(json_emit_t *e, int64_t timestamp_ms);
/* The wall clock, Unix ms. */
int64_t json_now_ms(void);

#endif
