/*
 * warc.h -- WARC/1.1 writer (`crawler crawl --warc FILE`), per-record gzip.
 *
 * The file starts (each time it is opened) with a warcinfo record; every
 * fetched URL then adds a request record and a response record, linked both
 * ways by WARC-Concurrent-To (just the response when the request was not
 * recorded).  Each record is its own gzip member, so the
 * file is a valid .warc.gz that gzip, zcat, warcio, pywb and other standard
 * tools read, and a reader can seek to any record.  Existing files are
 * appended to (a resumed crawl adds a new warcinfo and its records).  Each
 * file gets a CDXJ index beside it when it is closed (PATH.cdxj, cdxj.h);
 * warc_set_rotate() closes files as they grow (rotate.h).
 *
 * Record headers, in this order (those in [] only when they apply):
 *   WARC-Type, WARC-Record-ID (<urn:uuid:…>, random v4), WARC-Date (UTC,
 *   millisecond precision, as WARC/1.1 allows), [WARC-Target-URI],
 *   [WARC-IP-Address], [WARC-Concurrent-To], [WARC-Warcinfo-ID],
 *   [WARC-Filename] (warcinfo), [WARC-Truncated: length], WARC-Block-Digest,
 *   [WARC-Payload-Digest], Content-Type, Content-Length.
 * Digests are "sha1:" + RFC 4648 base32 of the SHA-1 (OpenSSL libcrypto).
 *
 * What the response record holds (the body policy).  libcurl hands the
 * crawler the body after undoing chunked transfer coding, and after undoing
 * gzip/deflate/br content coding when CURLOPT_ACCEPT_ENCODING is set.  The
 * stored HTTP message is made consistent with the body actually stored:
 *   - Transfer-Encoding headers are renamed X-Crawler-Original-Transfer-Encoding;
 *   - Content-Encoding headers are renamed X-Crawler-Original-Content-Encoding
 *     when the body was content-decoded (warc_exchange_t.body_decoded);
 *   - a Content-Length whose value differs from the stored body length is
 *     renamed X-Crawler-Original-Content-Length, and a correct Content-Length
 *     is added unless one is already there;
 *   - every other byte of the head is kept as received (status line, header
 *     order and case, HTTP/2 pseudo-status "HTTP/2 200"); if the head holds
 *     several responses (1xx interim ones), only the last is stored.
 * WARC-Payload-Digest is thus the SHA-1 of the stored body, WARC-Block-Digest
 * that of the stored head + body, and a body cut at --max-size is marked
 * "WARC-Truncated: length".
 *
 * Errors: functions return 0 or a negative CRAWL_E* code; crawl_strerror()
 * names it, warc_error() gives the detail of a failed write.  Records are
 * written with one write(2) per exchange, straight to the kernel (no buffer
 * to flush).  A failed write cuts the file back to its size before the
 * exchange (so it stays a valid .warc.gz) and puts the writer in the failed
 * state: every later warc_write_exchange() returns CRAWL_EWRITE.
 *
 * Thread-safety: warc_write_exchange() and warc_error() may be called from
 * any thread at once (hashing and compression run in parallel; one mutex
 * orders the writes).  warc_close() must be the last call.  Use one writer
 * (one process) per file.
 */
#ifndef CRAWLER_WARC_H
#define CRAWLER_WARC_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

/* zlib level of every member.  1, because the crawler is CPU-bound: on
 * 20-38 KB HTML pages level 1 took 1.5-2.3x less CPU per exchange than the
 * default level 6 for files 11-26% larger (measured side by side). */
#define WARC_GZIP_LEVEL 1
#define WARC_DIGEST_LEN 37    /* "sha1:" + 32 base32 chars */
#define WARC_RECORD_ID_LEN 47 /* "<urn:uuid:…>" */

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL     bad argument (NULL, CR/LF/space in the URI, no response head)
 *   CRAWL_ENOMEM     out of memory (nothing was written)
 *   CRAWL_EWRITE     a write failed: the writer is in the failed state
 *   CRAWL_EINTERNAL  zlib, SHA-1 or random source failed (nothing was written) */

typedef struct warc warc_t;

/* One HTTP exchange.  Everything is borrowed for the duration of the call. */
typedef struct warc_exchange {
    const char *target_uri;    /* required; no whitespace or control characters */
    const char *ip;            /* peer address ("127.0.0.1", "::1"), NULL: unknown */
    const char *request;       /* the request as sent: head (and body, if any) */
    size_t request_len;        /* 0: not recorded (no request record is written) */
    const char *response_head; /* status line + headers as received, CRLF or LF */
    size_t response_head_len;  /* required (> 0) */
    const void *body;          /* the body as libcurl delivered it; may be NULL if 0 */
    size_t body_len;           /* bytes */
    int body_decoded;          /* nonzero: Content-Encoding was undone (see above) */
    int truncated;             /* nonzero: body cut at the size limit */
    int64_t fetch_time_ms;     /* Unix epoch ms when the request was sent; 0: now */
    /* NULL, or WARC_RECORD_ID_LEN + 1 bytes: the response record's ID is
     * written there once the exchange is written (a WET record refers to it) */
    char *response_id;
    /* NULL, or the body's payload digest already computed (warc_digest) */
    const char *payload_digest;
    /* NULL, or the URL whose response had the same payload first (--dedup):
     * a revisit record (profile identical-payload-digest, the head only,
     * WARC-Refers-To-Target-URI and -Date: revisit_time_ms) replaces the
     * response record */
    const char *revisit_uri;
    int64_t revisit_time_ms;
} warc_exchange_t;

/* A page's text as a WET file holds it: one `conversion` record (Common
 * Crawl's WET layout), its block the text (text/plain, UTF-8).  Borrowed. */
typedef struct warc_conversion {
    const char *target_uri; /* required; no whitespace or control characters */
    const char *refers_to;  /* the response record's ID in the WARC, NULL: none */
    const char *lang;       /* the page's language tag (WARC-Identified-Content-Language),
                               NULL or "": left out */
    const char *text;       /* len bytes */
    size_t len;
    int64_t time_ms; /* when the page was fetched (WARC-Date), Unix ms; 0: now */
} warc_conversion_t;

/* Opens path for appending (created 0644 if missing) and writes a warcinfo
 * record naming software (e.g. "crawler/0.1.0"; NULL: "crawler") with
 * format, conformsTo, hostname and WARC-Filename (the path's last part).
 * Returns NULL on failure with a message in err (if err is not NULL). */
warc_t *warc_open(const char *path, const char *software, char *err, size_t errlen);

/* A writer of a WET file: as warc_open, without an index (its records are
 * conversions, which replay tools do not look up). */
warc_t *warc_open_wet(const char *path, const char *software, char *err, size_t errlen);

/* Appends a conversion record for x (a WET file's): 0, CRAWL_EINVAL,
 * CRAWL_ENOMEM, CRAWL_EINTERNAL or CRAWL_EWRITE (failed state).  Thread-safe. */
int warc_write_conversion(warc_t *w, const warc_conversion_t *x);

/* Appends a request record and a response record for x.  Returns 0,
 * CRAWL_EINVAL, CRAWL_ENOMEM, CRAWL_EINTERNAL (nothing written) or CRAWL_EWRITE
 * (failed state).  Thread-safe. */
int warc_write_exchange(warc_t *w, const warc_exchange_t *x);

/* From now on, once the file holds bytes or more (0: never), it is closed
 * under a name unique to the process and its sequence (rotate.h), with its
 * CDXJ index beside it, and a new file of the path is opened with its own
 * warcinfo record.  Thread-safe; accepts NULL. */
void warc_set_rotate(warc_t *w, uint64_t bytes);

/* Writes the index of the file (PATH.cdxj, cdxj.h) and closes it: 0, or
 * CRAWL_EWRITE with err (the index could not be written).  Accepts NULL;
 * err may be NULL. */
int warc_close(warc_t *w, char *err, size_t errlen);

/* Detail of the first failed write, or "".  Valid until warc_close(). */
const char *warc_error(warc_t *w);

/* "sha1:" + base32(SHA-1(data)) into out (WARC_DIGEST_LEN + 1 bytes, NUL
 * terminated).  Returns 0 or CRAWL_EINTERNAL.  Thread-safe. */
int warc_digest(const void *data, size_t len, char out[WARC_DIGEST_LEN + 1]);

#endif
