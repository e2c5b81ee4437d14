/*
 * rotate.c -- output files closed and renamed as they grow (rotate.h).
 *
 * DESIGN: the process's tag is made once (its start time, host, pid), so
 * the JSON lines and the WARC of one process carry the same one.  A closed
 * name keeps the file's directory and its extension from the first dot of
 * its base name (".jsonl", ".warc.gz"); the sequence starts at 1.  The
 * rename happens after the last write to the file and before the next
 * file is opened, so a reader never sees a closed name still growing.
 */
#include "rotate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char tag[160];
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

static void make_tag(void)
{
    char host[64] = "host", when[32];
    time_t now = time(NULL);
    struct tm tm;
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++) /* a name part: no separator or dot */
        if (*p == '/' || *p == '.' || *p == ' ')
            *p = '_';
    strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
    snprintf(tag, sizeof tag, "%s-%s-%ld", when, host, (long)getpid());
}

void rotate_init(rotate_t *r, const char *path, uint64_t limit)
{
    pthread_once(&tag_once, make_tag);
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->limit = limit;
}

int rotate_due(const rotate_t *r, uint64_t size)
{
    return r->limit && size >= r->limit;
}

/* DIR/STEM-TAG-NNNNN.EXT, NNNNN the next sequence number. */
int rotate_name(const rotate_t *r, char *buf, size_t len)
{
    const char *slash = strrchr(r->path, '/'), *base = slash ? slash + 1 : r->path;
    const char *dot = strchr(base, '.');
    size_t dirlen = (size_t)(base - r->path), stemlen = dot ? (size_t)(dot - base) : strlen(base);
    int n = snprintf(buf, len, "%.*s%.*s-%s-%05u%s", (int)dirlen, r->path, (int)stemlen, base, tag,
                     r->seq + 1, dot ? dot : "");
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int rotate_now(rotate_t *r, int *fd, const char *closed, char *err, size_t errlen)
{
    if (*fd >= 0 && close(*fd) != 0) {
        *fd = -1;
        snprintf(err, errlen, "close %s: %s", r->path, strerror(errno));
        return -1;
    }
    *fd = -1;
    if (rename(r->path, closed) != 0) {
        snprintf(err, errlen, "rename %s to %s: %s", r->path, closed, strerror(errno));
        return -1;
    }
    r->seq++;
    *fd = open(r->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (*fd < 0) {
        snprintf(err, errlen, "%s: %s", r->path, strerror(errno));
        return -1;
    }
    return 0;
}
