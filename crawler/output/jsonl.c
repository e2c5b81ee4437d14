/*
 * jsonl.c -- JSON-lines record writer (see jsonl.h for the line format).
 *
 * DESIGN
 * Data: one out_t per output file: the fd (O_APPEND; stdout for "-"), a
 * buffer of whole lines (at most OUT_BUFFER_BYTES unless one line is larger),
 * the time its oldest line was added, and a sticky failure (the errno text of
 * the first failed write).  A background thread wakes every FLUSH_TICK_MS and
 * writes out the buffer once its oldest line is about OUT_FLUSH_MS old, so a quiet crawl still
 * shows up under `tail -f`.
 *
 * Locking: `lock` guards everything but fd/path/is_stdout (set once).  Lines
 * are formatted outside the lock (on the caller's stack, or the heap for long
 * ones); the lock is held only to append, and to write(2) when the buffer is
 * full.  Lock order: `lock` is the only lock.
 *
 * Invariants: the file only ever receives whole lines.  When a write fails
 * part-way, a regular file is ftruncate()d back to its size before that
 * write, the buffer is dropped, and the writer stays failed (CRAWL_EWRITE).
 * Touches no Redis key.
 */
#include "jsonl.h"

#include "json.h"
#include "rotate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_TICK_MS (OUT_FLUSH_MS / 4) /* the flush thread's wake-up period */

struct out {
    int fd;
    bool is_stdout;
    bool is_regular; /* fd is a regular file: can be cut back on failure */
    char path[PATH_MAX];
    pthread_mutex_t lock; /* guards all below */
    pthread_cond_t wake;  /* flush thread sleeps here */
    pthread_t thread;
    bool stop;
    bool failed;
    char errtext[2 * PATH_MAX + 64]; /* first write failure */
    char *buf;
    size_t len;
    uint64_t oldest_ms; /* monotonic time the oldest buffered line was added */
    rotate_t rot;       /* --out-rotate (a regular file only) */
};

/* ---- formatting ------------------------------------------------------------ */

size_t out_format(char *buf, size_t buflen, const out_record_t *r)
{
    json_emit_t e = {buf, buflen, 0};
    if (!r || !r->url)
        return 0;
    json_lit(&e, "{\"url\":");
    json_str(&e, r->url);
    json_lit(&e, ",\"status\":");
    if (r->status > 0)
        json_u64(&e, (uint64_t)r->status);
    else
        json_lit(&e, "null");
    json_lit(&e, ",\"content_type\":");
    json_str(&e, r->content_type);
    json_lit(&e, ",\"depth\":");
    json_u64(&e, r->depth);
    json_lit(&e, ",\"bytes\":");
    json_u64(&e, r->bytes);
    json_lit(&e, ",\"links_found\":");
    json_u64(&e, r->links_found);
    json_lit(&e, ",\"links_over_cap\":");
    json_u64(&e, r->links_over_cap);
    json_lit(&e, ",\"fetch_ms\":");
    json_u64(&e, r->fetch_ms);
    json_lit(&e, ",\"error_kind\":");
    json_str(&e, r->error_kind);
    json_lit(&e, ",\"error_text\":");
    json_str(&e, r->error_text);
    json_lit(&e, ",\"location\":");
    json_str(&e, r->location);
    json_lit(&e, ",\"canonical\":");
    json_str(&e, r->canonical);
    if (r->etag) {
        json_lit(&e, ",\"etag\":");
        json_str(&e, r->etag);
    }
    if (r->last_modified) {
        json_lit(&e, ",\"last_modified\":");
        json_str(&e, r->last_modified);
    }
    json_lit(&e, ",\"timestamp\":");
    json_time(&e, r->timestamp_ms ? r->timestamp_ms : json_now_ms());
    if (r->has_simhash)
        json_hex64(&e, ",\"simhash\":", r->simhash);
    if (r->duplicate_of) {
        json_lit(&e, ",\"duplicate\":true,\"duplicate_of\":");
        json_str(&e, r->duplicate_of);
    }
    json_lit(&e, "}\n");
    if (e.len < buflen)
        buf[e.len] = '\0';
    return e.len;
}

/* ---- writing --------------------------------------------------------------- */

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* After a write (lock held): a regular file past --out-rotate is closed
 * under its unique name and a new one opened (rotate.h).  A failure enters
 * the failed state. */
static int maybe_rotate(out_t *o)
{
    char closed[PATH_MAX];
    off_t size = o->is_regular ? lseek(o->fd, 0, SEEK_END) : -1;
    if (size < 0 || !rotate_due(&o->rot, (uint64_t)size))
        return CRAWL_OK;
    if (rotate_name(&o->rot, closed, sizeof closed) < 0)
        snprintf(o->errtext, sizeof o->errtext, "--out-rotate: the closed file's name is too long");
    else if (rotate_now(&o->rot, &o->fd, closed, o->errtext, sizeof o->errtext) == 0)
        return CRAWL_OK;
    o->failed = true;
    return CRAWL_EWRITE;
}

/* Writes all of p (lock held).  On failure records the error, cuts a regular
 * file back to its size before this call, and enters the failed state. */
static int write_all(out_t *o, const char *p, size_t n)
{
    off_t before = o->is_regular ? lseek(o->fd, 0, SEEK_END) : -1;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(o->fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int saved = w < 0 ? errno : EIO;
            snprintf(o->errtext, sizeof o->errtext, "write %s: %s", o->path, strerror(saved));
            if (done && before >= 0 && ftruncate(o->fd, before) != 0)
                snprintf(o->errtext, sizeof o->errtext, "write %s: %s (and a partial line remains)",
                         o->path, strerror(saved));
            o->failed = true;
            return CRAWL_EWRITE;
        }
        done += (size_t)w;
    }
    return maybe_rotate(o);
}

static int flush_locked(out_t *o)
{
    int rc = CRAWL_OK;
    if (o->failed)
        return CRAWL_EWRITE;
    if (o->len)
        rc = write_all(o, o->buf, o->len);
    o->len = 0;
    return rc;
}

static void *flush_thread(void *arg)
{
    out_t *o = arg;
    pthread_mutex_lock(&o->lock);
    while (!o->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)FLUSH_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&o->wake, &o->lock, &until);
        if (o->len && mono_ms() - o->oldest_ms + FLUSH_TICK_MS >= OUT_FLUSH_MS)
            flush_locked(o);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

static int init_sync(out_t *o, char *err, size_t errlen)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&o->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        goto fail;
    if (pthread_mutex_init(&o->lock, NULL) != 0) {
        pthread_cond_destroy(&o->wake);
        goto fail;
    }
    if (pthread_create(&o->thread, NULL, flush_thread, o) != 0) {
        pthread_mutex_destroy(&o->lock);
        pthread_cond_destroy(&o->wake);
        goto fail;
    }
    return 0;
fail:
    if (err && errlen)
        snprintf(err, errlen, "%s: cannot start the output flush thread", o->path);
    return -1;
}

/* Opens path to append.  A FIFO with no reader yet would block open(2)
 * without a word: it is said on stderr, then waited for. */
static int open_output(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) { /* a reader is there: blocking writes from now on */
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0)
                fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            return fd;
        }
        if (errno != ENXIO)
            return -1;
        fprintf(stderr, "crawler: %s is a FIFO with no reader: waiting for one to open it\n", path);
    }
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

out_t *out_open(const char *path, char *err, size_t errlen)
{
    out_t *o = NULL;
    struct stat st;
    if (!path || !*path) {
        if (err && errlen)
            snprintf(err, errlen, "output path is empty");
        return NULL;
    }
    o = calloc(1, sizeof *o);
    if (o) {
        o->fd = -1;
        o->buf = malloc(OUT_BUFFER_BYTES);
    }
    if (!o || !o->buf) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        goto fail;
    }
    snprintf(o->path, sizeof o->path, "%s", strcmp(path, "-") ? path : "<stdout>");
    o->is_stdout = strcmp(path, "-") == 0;
    o->fd = o->is_stdout ? STDOUT_FILENO : open_output(path);
    if (o->fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    o->is_regular = fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
    if (init_sync(o, err, errlen) != 0)
        goto fail;
    return o;
fail:
    if (o && o->fd >= 0 && !o->is_stdout)
        close(o->fd);
    if (o)
        free(o->buf);
    free(o);
    return NULL;
}

/* Appends one formatted line to the buffer (or writes it out). */
static int append_line(out_t *o, const char *line, size_t n)
{
    int rc = CRAWL_OK;
    pthread_mutex_lock(&o->lock);
    if (o->failed)
        rc = CRAWL_EWRITE;
    else if (o->len + n > OUT_BUFFER_BYTES && (rc = flush_locked(o)) != CRAWL_OK)
        ; /* failed: rc set */
    else if (n > OUT_BUFFER_BYTES)
        rc = write_all(o, line, n); /* a giant line goes straight out */
    else {
        if (o->len == 0)
            o->oldest_ms = mono_ms();
        memcpy(o->buf + o->len, line, n);
        o->len += n;
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int out_line(out_t *o, out_format_fn format, const void *rec, size_t hint)
{
    char stack[4096], *line = stack;
    size_t cap = sizeof stack;
    if (!o || !format || !rec)
        return CRAWL_EINVAL;
    if (hint >= cap) { /* a long line: formatted once, into a buffer of about its size */
        if (!(line = malloc(hint + 1)))
            return CRAWL_ENOMEM;
        cap = hint + 1;
    }
    size_t n = format(line, cap, rec);
    if (n >= cap) { /* formatted again, into a buffer of the size counted */
        if (line != stack)
            free(line);
        if (!(line = malloc(n + 1)))
            return CRAWL_ENOMEM;
        format(line, n + 1, rec);
    }
    int rc = append_line(o, line, n);
    if (line != stack)
        free(line);
    return rc;
}

static size_t format_record(char *buf, size_t cap, const void *rec)
{
    return out_format(buf, cap, rec);
}

int out_write(out_t *o, const out_record_t *rec)
{
    if (!rec || !rec->url)
        return CRAWL_EINVAL;
    return out_line(o, format_record, rec, 0);
}

size_t out_format_event(char *buf, size_t buflen, const out_event_t *ev)
{
    json_emit_t e = {buf, buflen, 0};
    if (!ev || !ev->event)
        return 0;
    json_lit(&e, "{\"event\":");
    json_str(&e, ev->event);
    json_lit(&e, ",\"worker\":");
    if (ev->worker < 0) /* the process's own (its embedded server) */
        json_lit(&e, "null");
    else
        json_u64(&e, (uint64_t)ev->worker);
    json_lit(&e, ",\"down_ms\":");
    json_u64(&e, ev->down_ms);
    json_lit(&e, ",\"error_text\":");
    json_str(&e, ev->error_text);
    return json_end_line(&e, ev->timestamp_ms);
}

int out_event(out_t *o, const out_event_t *ev)
{
    char line[1024];
    if (!o || !ev || !ev->event)
        return CRAWL_EINVAL;
    size_t n = out_format_event(line, sizeof line, ev);
    if (n >= sizeof line) /* only a very long error text: drop it */
        n = out_format_event(line, sizeof line,
                             &(out_event_t){.event = ev->event,
                                            .worker = ev->worker,
                                            .down_ms = ev->down_ms,
                                            .timestamp_ms = ev->timestamp_ms});
    return n < sizeof line ? append_line(o, line, n) : CRAWL_EINVAL;
}

void out_set_rotate(out_t *o, uint64_t bytes)
{
    if (!o || o->is_stdout)
        return;
    pthread_mutex_lock(&o->lock);
    rotate_init(&o->rot, o->path, bytes);
    pthread_mutex_unlock(&o->lock);
}

int out_flush(out_t *o)
{
    if (!o)
        return CRAWL_EINVAL;
    pthread_mutex_lock(&o->lock);
    int rc = flush_locked(o);
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int out_close(out_t *o)
{
    if (!o)
        return CRAWL_OK;
    pthread_mutex_lock(&o->lock);
    o->stop = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    int rc = flush_locked(o);
    if (!o->is_stdout && close(o->fd) != 0 && rc == CRAWL_OK) {
        rc = CRAWL_EWRITE; /* e.g. NFS reporting a deferred write error */
    }
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->wake);
    free(o->buf);
    free(o);
    return rc;
}

const char *out_error(out_t *o)
{
    if (!o)
        return "";
    pthread_mutex_lock(&o->lock);
    const char *s = o->errtext; /* written once, under the lock, then never again */
    pthread_mutex_unlock(&o->lock);
    return s;
}
