/*
 * cdxj.h -- the CDXJ index written beside each closed WARC file
 * (FILE.cdxj): one line per response record, sorted by its key,
 *     SURT TIMESTAMP {"url": ..., "mime": ..., "status": ..., "digest": ...,
 *                     "length": ..., "offset": ..., "filename": ...}
 * as pywb and other replay tools read it (offset and length: the record's
 * gzip member in the WARC).  The lines of the file being written wait in
 * FILE.cdxj.open (appended as the records are written, so memory stays
 * flat); closing the WARC sorts them into FILE.cdxj.  Not thread-safe: its
 * WARC writer's lock guards it.
 */
#ifndef CRAWLER_CDXJ_H
#define CRAWLER_CDXJ_H

#include <stddef.h>
#include <stdint.h>

typedef struct cdxj cdxj_t;

/* The index of the WARC at warc_path (being written): its waiting lines in
 * warc_path.cdxj.open, started again with the lines of warc_path.cdxj when
 * the WARC is appended to (a run that goes on with the file), or going on
 * with a waiting file a killed run left.  NULL with err on failure. */
cdxj_t *cdxj_open(const char *warc_path, char *err, size_t errlen);
/* One response record: url, its time (Unix ms), its HTTP status and media
 * type (may be NULL), its payload digest, and its gzip member's offset and
 * length in the WARC.  0 or -1 (err). */
int cdxj_add(cdxj_t *x, const char *url, int64_t time_ms, int status, const char *mime,
             const char *digest, uint64_t offset, uint64_t length, char *err, size_t errlen);
/* The WARC is closed as warc_name (its base name goes in every line): the
 * lines sorted into warc_name.cdxj, the waiting file removed (and the
 * index of an earlier run of the path, when closed under another name).
 * Frees x.  0 or -1 (err). */
int cdxj_finish(cdxj_t *x, const char *warc_name, char *err, size_t errlen);
/* Sorts runs of this many bytes of lines in memory (default 64 MiB; at
 * most 256 runs: an index of 16 GiB).  For tests of the merge. */
void cdxj_sort_chunk(cdxj_t *x, size_t bytes);
/* Frees x without writing the index (its waiting lines stay).  Accepts NULL. */
void cdxj_free(cdxj_t *x);
/* The SURT key of url ("com,example)/a?b") by the rules of the surt
 * library's default canonicalizer, which replay tools use to look a URL up:
 * the host lower case, its first label dropped if it is www or www and
 * digits, its labels reversed and joined by ','; the user info and a
 * default port (80, 443) dropped; the path and query lower case, the
 * path's trailing '/' dropped (unless it is all of it), an empty query
 * dropped, the query's arguments sorted (by name, then value); the
 * fragment dropped.  (Not done: the library's session-id stripping.)
 * Into buf: 0 or -1 (not a URL, or too long). */
int cdxj_surt(const char *url, char *buf, size_t len);

#endif
