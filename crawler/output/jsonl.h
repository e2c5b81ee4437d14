/*
 * jsonl.h -- the JSON-lines record writer (`crawler crawl --out FILE`).
 *
 * One JSON object per finished URL, one object per line, keys always present
 * and always in this order (absent values are null), then the optional
 * keys of the features that are on:
 *
 *   {"url":"…","status":200,"content_type":"text/html","depth":1,"bytes":5120,
 *    "links_found":12,"links_over_cap":0,"fetch_ms":41,"error_kind":null,
 *    "error_text":null,"location":null,"canonical":null,
 *    "timestamp":"2026-11-30T00:01:02.345Z"}
 *
 *   url           string   the URL as fetched (normalized form)
 *   status        int|null final HTTP status; null when no response arrived
 *   content_type  str|null Content-Type of the response as sent
 *   depth         int      link distance from the seeds (seeds: 0)
 *   bytes         int      body bytes received (after content decoding)
 *   links_found   int      links extracted from the page (how many were new
 *                          to the crawl is not known yet: the record is
 *                          written before the page is acknowledged)
 *   links_over_cap int     more links of the page that were not followed:
 *                          past --max-links-per-page (0: the page was not
 *                          cut; else links_found is that cap)
 *   fetch_ms      int      wall-clock time of the transfer in milliseconds
 *   error_kind    str|null short machine-readable kind ("timeout", "dns", …)
 *   error_text    str|null human-readable detail
 *   location      str|null redirect target (normalized) of a 3xx response
 *   canonical     str|null <link rel=canonical> of the page
 *   timestamp     string   when the URL finished, RFC 3339 UTC, milliseconds
 * and, only when it applies:
 *   simhash       string   --text: the SimHash of the page's text, 16 hex
 *                          digits (an HTML page with 2xx)
 *   duplicate     true     --dedup: the payload is one another URL had first
 *   duplicate_of  string   ... that URL
 *
 * Besides the records, a line may be an event of the crawl, told apart by
 * its first key "event" (and having no "url"):
 *
 *   {"event":"redis-unreachable","worker":0,"down_ms":0,"error_text":"…",
 *    "timestamp":"…"}      a worker thread lost its Redis connection
 *   {"event":"redis-back","worker":0,"down_ms":5123,"error_text":null,
 *    "timestamp":"…"}      ... and has it again, after down_ms
 *   {"event":"redis-gave-up", ...}   ... and stopped trying (--redis-retry-max)
 *   {"event":"crawl-gone", ...}      Redis answers without the crawl's data
 *
 * Strings may hold arbitrary bytes: they are escaped per RFC 8259 (", \ and
 * control characters, the latter as \b \f \n \r \t or \u00XX; DEL as \u007f);
 * invalid UTF-8 is replaced by U+FFFD (one per maximal invalid subpart, as
 * Unicode recommends), so every line is valid UTF-8 and valid JSON.
 *
 * A file is opened for appending (existing lines are kept; a resumed crawl
 * adds to it).  Output is buffered and written in whole lines: the buffer is
 * written when it reaches OUT_BUFFER_BYTES, by a background thread at most
 * OUT_FLUSH_MS after a record was added (so `tail -f` follows the crawl), on
 * out_flush() and on out_close().
 *
 * Errors: functions return 0 or a negative CRAWL_E* code; crawl_strerror() names
 * the code and out_error() gives the detail of a failed write.  A failed
 * write (disk full, closed pipe, …) puts the writer in a failed state: the
 * lines in its buffer are dropped, a regular file is cut back to its last
 * complete line, and every later out_write()/out_flush()/out_close() returns
 * CRAWL_EWRITE.  The caller decides whether to stop the crawl.
 *
 * Standard output: when "-" is a pipe whose reader went away, write(2)
 * raises SIGPIPE; the program should ignore SIGPIPE so this becomes CRAWL_EWRITE.
 *
 * Thread-safety: every function may be called from any thread at the same
 * time on one out_t (one mutex inside), except out_close(), which must be
 * the last call.
 */
#ifndef CRAWLER_JSONL_H
#define CRAWLER_JSONL_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

#define OUT_BUFFER_BYTES (64u * 1024u) /* write when this much is buffered */
#define OUT_FLUSH_MS 1000u             /* longest time a record stays buffered */

/* Error codes this module returns (errors.h, the project's one error
 * space; crawl_strerror() gives the text):
 *   CRAWL_EINVAL     bad argument: NULL writer or record, NULL url
 *   CRAWL_ENOMEM     out of memory (nothing was written)
 *   CRAWL_EWRITE     a write failed: the writer is in the failed state */

typedef struct out out_t;

/* One finished URL.  Pointers are borrowed for the duration of out_write()
 * only; NULL strings are written as null. */
typedef struct out_record {
    const char *url;           /* required */
    int status;                /* final HTTP status, 0: none (null) */
    const char *content_type;  /* may be NULL */
    uint32_t depth;            /* hops from a seed */
    uint64_t bytes;            /* body bytes received */
    uint32_t links_found;      /* links extracted */
    uint32_t links_over_cap;   /* links not followed: past --max-links-per-page */
    uint64_t fetch_ms;         /* transfer time, milliseconds */
    const char *error_kind;    /* NULL: no error */
    const char *error_text;    /* NULL: no error */
    const char *location;      /* redirect target, NULL if none */
    const char *canonical;     /* rel=canonical, NULL if none */
    const char *etag;          /* the response's ETag: the key is written only if set */
    const char *last_modified; /* the response's Last-Modified: likewise */
    int64_t timestamp_ms;      /* Unix epoch milliseconds; 0: now */
    int has_simhash;           /* the "simhash" key is written */
    uint64_t simhash;
    const char *duplicate_of; /* --dedup: the URL that had this payload first, or NULL */
} out_record_t;

/* Opens path for appending (created with mode 0644 if missing); "-" is
 * standard output (not closed by out_close).  Starts the flush thread.
 * Returns NULL on failure with a message in err (if err is not NULL). */
out_t *out_open(const char *path, char *err, size_t errlen);

/* Formats rec as one line and appends it to the buffer (writing the buffer
 * out first when it would exceed OUT_BUFFER_BYTES).  Returns 0, CRAWL_EINVAL,
 * CRAWL_ENOMEM (nothing added) or CRAWL_EWRITE (failed state; nothing added).
 * Thread-safe; lines of concurrent callers never interleave. */
int out_write(out_t *o, const out_record_t *rec);

/* One event line (see above).  Pointers borrowed for the call. */
typedef struct out_event {
    const char *event;      /* required: "redis-unreachable", "redis-back", "redis-restarted",
                               ... */
    int worker;             /* the worker thread's index; < 0: the process's (null) */
    uint64_t down_ms;       /* how long Redis was unreachable (0: not yet known) */
    const char *error_text; /* NULL: none */
    int64_t timestamp_ms;   /* Unix epoch milliseconds; 0: now */
} out_event_t;

/* Appends ev as one line, as out_write does for a record.  Returns 0,
 * CRAWL_EINVAL or CRAWL_EWRITE.  Thread-safe. */
int out_event(out_t *o, const out_event_t *ev);

/* Formats rec into buf (cap bytes) as one line ending with '\n': its
 * length, more than cap when it did not fit (nothing else then matters). */
typedef size_t (*out_format_fn)(char *buf, size_t cap, const void *rec);
/* Appends the line format makes of rec, as out_write does a record: on the
 * stack when it fits, or in a buffer of hint + 1 bytes when hint (the
 * caller's guess of its length) is longer; formatted again into a buffer
 * of its size when the guess was short.  For the other records' layouts
 * (textrec.h, linkrec.h).  Returns as out_write (CRAWL_ENOMEM too). */
int out_line(out_t *o, out_format_fn format, const void *rec, size_t hint);

/* Formats ev as out_format does a record.  Pure function, thread-safe. */
size_t out_format_event(char *buf, size_t buflen, const out_event_t *ev);

/* From now on, once the file holds bytes or more (0: never), it is closed
 * under a name unique to the process and its sequence and a new file of its
 * path opened, between two whole lines (rotate.h); stdout and a FIFO never
 * rotate.  Thread-safe. */
void out_set_rotate(out_t *o, uint64_t bytes);

/* Writes the buffer to the file now (to the kernel: no fsync).  Returns 0 or
 * CRAWL_EWRITE.  Thread-safe. */
int out_flush(out_t *o);

/* Flushes, stops the flush thread and closes the file.  Returns 0, or
 * CRAWL_EWRITE if this final flush or an earlier write failed (lines may be
 * missing).  Accepts NULL (returns 0). */
int out_close(out_t *o);

/* Detail of the first failed write ("write out.jsonl: No space left on
 * device"), or "" if none.  Valid until out_close().  Thread-safe. */
const char *out_error(out_t *o);

/* Formats rec into buf as one JSON line with its '\n' and a terminating NUL;
 * returns the line's length without the NUL.  If the line does not fit
 * (length >= buflen), nothing useful is in buf and the needed length is
 * returned, like snprintf.  Returns 0 on a NULL rec or url.  Pure function,
 * thread-safe (uses no writer; exposed for tests and for other writers). */
size_t out_format(char *buf, size_t buflen, const out_record_t *rec);

#endif
