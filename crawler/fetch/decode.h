/*
 * decode.h -- a response body's content coding undone as it streams in
 * (gzip, deflate, br), for a transfer that keeps the body as received
 * (--warc: the archive holds the bytes that came over the wire, the parser
 * reads them decoded).  Output is handed to a callback in pieces; the
 * caller stops it (the callback's answer) once it has enough, so a body
 * that decodes to far more than it weighs (a "bomb") costs no memory here.
 * Not thread-safe: one per transfer.
 */
#ifndef CRAWLER_DECODE_H
#define CRAWLER_DECODE_H

#include <stddef.h>

typedef enum decode_kind {
    DECODE_IDENTITY, /* none, or "identity" */
    DECODE_GZIP,     /* gzip, x-gzip */
    DECODE_DEFLATE,  /* deflate: zlib-wrapped, or raw as some servers send it */
    DECODE_BR,       /* br (brotli) */
    DECODE_UNKNOWN,  /* another coding, or several: not decoded */
} decode_kind_t;

/* The Accept-Encoding a transfer that decodes itself sends. */
#define DECODE_ACCEPT "gzip, deflate, br"

/* The kind of a Content-Encoding header's value. */
decode_kind_t decode_kind_of(const char *value);

typedef struct decoder decoder_t;

/* A decoder of kind (not DECODE_UNKNOWN); NULL on out of memory.  Its
 * output goes to out(ud, bytes, len): 0 to go on, non-zero to stop (the
 * caller has enough). */
decoder_t *decoder_new(decode_kind_t kind, int (*out)(void *ud, const char *p, size_t len),
                       void *ud);
/* Decodes in[0..n): 0, 1 when out asked to stop (nothing more is decoded),
 * or -1 when the input is not of its coding (corrupt). */
int decoder_feed(decoder_t *d, const char *in, size_t n);
/* Accepts NULL. */
void decoder_free(decoder_t *d);

#endif
