/*
 * decode.c -- content codings undone as the body streams in (decode.h).
 *
 * DESIGN: gzip and deflate through zlib's inflate (windowBits 15+32 reads
 * a gzip or a zlib header; a deflate body that is neither is raw deflate,
 * which some servers send: the first failure starts over raw, once), br
 * through libbrotli's streaming decoder.  Output goes through a 16 KiB
 * buffer to the caller's callback, which may stop the decoding at any
 * piece: the decoded size is never held, only counted by the caller.
 */
#include "decode.h"

#include <brotli/decode.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define OUT_CHUNK (16u << 10)

struct decoder {
    decode_kind_t kind;
    int (*out)(void *ud, const char *p, size_t len);
    void *ud;
    z_stream z;
    int z_open, raw_tried, started, ended;
    BrotliDecoderState *br;
    unsigned char buf[OUT_CHUNK];
};

decode_kind_t decode_kind_of(const char *v)
{
    while (v && isspace((unsigned char)*v))
        v++;
    if (!v || !*v)
        return DECODE_IDENTITY;
    size_t n = strcspn(v, " \t,;");
    const char *rest = v + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (*rest) /* several codings, or parameters: not ours to undo */
        return DECODE_UNKNOWN;
    if ((n == 4 && !strncasecmp(v, "gzip", 4)) || (n == 6 && !strncasecmp(v, "x-gzip", 6)))
        return DECODE_GZIP;
    if (n == 7 && !strncasecmp(v, "deflate", 7))
        return DECODE_DEFLATE;
    if (n == 2 && !strncasecmp(v, "br", 2))
        return DECODE_BR;
    if (n == 8 && !strncasecmp(v, "identity", 8))
        return DECODE_IDENTITY;
    return DECODE_UNKNOWN;
}

static int z_start(decoder_t *d, int raw)
{
    if (d->z_open)
        inflateEnd(&d->z);
    memset(&d->z, 0, sizeof d->z);
    d->z_open = inflateInit2(&d->z, raw ? -15 : 15 + 32) == Z_OK;
    return d->z_open ? 0 : -1;
}

decoder_t *decoder_new(decode_kind_t kind, int (*out)(void *ud, const char *p, size_t len),
                       void *ud)
{
    if (kind == DECODE_UNKNOWN)
        return NULL;
    decoder_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->kind = kind;
    d->out = out;
    d->ud = ud;
    int ok = 1;
    if (kind == DECODE_GZIP || kind == DECODE_DEFLATE)
        ok = z_start(d, 0) == 0;
    else if (kind == DECODE_BR)
        ok = (d->br = BrotliDecoderCreateInstance(NULL, NULL, NULL)) != NULL;
    if (!ok) {
        decoder_free(d);
        return NULL;
    }
    return d;
}

static int feed_z(decoder_t *d, const char *in, size_t n)
{
    d->z.next_in = (Bytef *)(uintptr_t)in;
    d->z.avail_in = (uInt)n;
    while (d->z.avail_in && !d->ended) {
        d->z.next_out = d->buf;
        d->z.avail_out = sizeof d->buf;
        int zr = inflate(&d->z, Z_NO_FLUSH);
        size_t got = sizeof d->buf - d->z.avail_out;
        if (zr == Z_DATA_ERROR && d->kind == DECODE_DEFLATE && !d->started && !d->raw_tried) {
            d->raw_tried = 1; /* not zlib-wrapped: raw deflate, from the start */
            if (z_start(d, 1) < 0)
                return -1;
            return feed_z(d, in, n);
        }
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return -1;
        d->started = 1;
        if (got && d->out(d->ud, (const char *)d->buf, got))
            return 1;
        if (zr == Z_STREAM_END)
            d->ended = 1; /* (what follows the stream is not read) */
        else if (zr == Z_BUF_ERROR && !got)
            break;
    }
    return 0;
}

static int feed_br(decoder_t *d, const char *in, size_t n)
{
    const uint8_t *next_in = (const uint8_t *)in;
    size_t avail_in = n;
    for (;;) {
        uint8_t *next_out = d->buf;
        size_t avail_out = sizeof d->buf;
        BrotliDecoderResult r =
            BrotliDecoderDecompressStream(d->br, &avail_in, &next_in, &avail_out, &next_out, NULL);
        size_t got = sizeof d->buf - avail_out;
        if (r == BROTLI_DECODER_RESULT_ERROR)
            return -1;
        if (got && d->out(d->ud, (const char *)d->buf, got))
            return 1;
        if (r != BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
            return 0; /* more input needed, or done */
    }
}

int decoder_feed(decoder_t *d, const char *in, size_t n)
{
    switch (d->kind) {
    case DECODE_IDENTITY:
        return n && d->out(d->ud, in, n) ? 1 : 0;
    case DECODE_GZIP:
    case DECODE_DEFLATE:
        return feed_z(d, in, n);
    case DECODE_BR:
        return feed_br(d, in, n);
    default:
        return -1;
    }
}

void decoder_free(decoder_t *d)
{
    if (!d)
        return;
    if (d->z_open)
        inflateEnd(&d->z);
    if (d->br)
        BrotliDecoderDestroyInstance(d->br);
    free(d);
}
