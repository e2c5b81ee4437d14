/*
 * rotate.h -- an output file closed and renamed as it grows (--out-rotate):
 * the path given is the file being written; once it holds `limit` bytes it
 * is closed under a name unique to the process and its sequence,
 *     DIR/STEM-TAG-NNNNN.EXT   ("out.warc.gz" -> "out-TAG-00001.warc.gz")
 * (TAG: the process's start, UTC, its host and pid: YYYYmmddTHHMMSSZ-HOST-PID),
 * and a new file of the path given is opened.  A closed file is never
 * written again: it may be moved away while the crawl runs.  Not
 * thread-safe: its writer's lock guards it.
 */
#ifndef CRAWLER_ROTATE_H
#define CRAWLER_ROTATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rotate {
    uint64_t limit; /* bytes; 0: never */
    unsigned seq;   /* files closed so far */
    char path[PATH_MAX];
} rotate_t;

/* path: the file being written; limit: 0 never rotates. */
void rotate_init(rotate_t *r, const char *path, uint64_t limit);
/* 1 when a file of size bytes is due to be closed. */
int rotate_due(const rotate_t *r, uint64_t size);
/* The name the file is closed under next, into buf: 0, or -1 (too long). */
int rotate_name(const rotate_t *r, char *buf, size_t len);
/* Closes *fd, renames the file to closed (rotate_name's), opens the path
 * again to append (*fd; O_CLOEXEC): 0, or -1 with err (*fd -1 when nothing
 * is open). */
int rotate_now(rotate_t *r, int *fd, const char *closed, char *err, size_t errlen);

#endif
