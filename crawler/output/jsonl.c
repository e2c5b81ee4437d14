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

/* Bounded emitter: counts every byte, stores those that fit. */
typedef struct emit {
    char *p;
    size_t cap;
    size_t len;
} emit_t;

static void put(emit_t *e, const char *s, size_t n)
{
    if (e->len < e->cap) {
        size_t room = e->cap - e->len;
        memcpy(e->p + e->len, s, n < room ? n : room);
    }
    e->len += n;
}

static void puts_lit(emit_t *e, const char *s)
{
    put(e, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if it is
 * invalid; *bad gets the length of the maximal invalid subpart to replace. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    *bad = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else
        return 0;
    for (size_t i = 1; i < need; i++) {
        unsigned b = i < n ? s[i] : 0;
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *bad = i;
            return 0;
        }
    }
    return need;
}

/* Appends s as a JSON string (with quotes), or null. */
static void put_str(emit_t *e, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!s) {
        puts_lit(e, "null");
        return;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, run = 0; /* run: bytes copied verbatim */
    put(e, "\"", 1);
    while (i < n) {
        unsigned c = u[i];
        size_t bad = 1, k = (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
                                ? utf8_seq(u + i, n - i, &bad)
                                : 0;
        if (k) {
            i += k;
            run += k;
            continue;
        }
        put(e, (const char *)u + i - run, run);
        run = 0;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(e, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            const char *short_esc = c == '\n'   ? "\\n"
                                    : c == '\r' ? "\\r"
                                    : c == '\t' ? "\\t"
                                    : c == '\b' ? "\\b"
                                    : c == '\f' ? "\\f"
                                                : NULL;
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (short_esc)
                puts_lit(e, short_esc);
            else
                put(e, esc, 6);
            i++;
        } else {
            put(e, "\xEF\xBF\xBD", 3); /* U+FFFD for the invalid subpart */
            i += bad;
        }
    }
    put(e, (const char *)u + i - run, run);
    put(e, "\"", 1);
}

static void put_u64(emit_t *e, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    put(e, tmp, (size_t)n);
}

static int64_t now_epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 3339 UTC with milliseconds: 2026-11-30T00:01:02.345Z */
static void put_time(emit_t *e, int64_t ms)
{
    int64_t secs = ms / 1000, frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    char tmp[48];
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
        puts_lit(e, "null");
        return;
    }
    int n = snprintf(tmp, sizeof tmp, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    put(e, tmp, (size_t)n);
}

size_t out_format(char *buf, size_t buflen, const out_record_t *r)
{
    emit_t e = {buf, buflen, 0};
    if (!r || !r->url)
        return 0;
    puts_lit(&e, "{\"url\":");
    put_str(&e, r->url);
    puts_lit(&e, ",\"status\":");
    if (r->status > 0)
        put_u64(&e, (uint64_t)r->status);
    else
        puts_lit(&e, "null");
    puts_lit(&e, ",\"content_type\":");
    put_str(&e, r->content_type);
    puts_lit(&e, ",\"depth\":");
    put_u64(&e, r->depth);
    puts_lit(&e, ",\"bytes\":");
    put_u64(&e, r->bytes);
    puts_lit(&e, ",\"links_found\":");
    put_u64(&e, r->links_found);
    puts_lit(&e, ",\"links_over_cap\":");
    put_u64(&e, r->links_over_cap);
    puts_lit(&e, ",\"fetch_ms\":");
    put_u64(&e, r->fetch_ms);
    puts_lit(&e, ",\"error_kind\":");
    put_str(&e, r->error_kind);
    puts_lit(&e, ",\"error_text\":");
    put_str(&e, r->error_text);
    puts_lit(&e, ",\"location\":");
    put_str(&e, r->location);
    puts_lit(&e, ",\"canonical\":");
    put_str(&e, r->canonical);
    puts_lit(&e, ",\"timestamp\":");
    put_time(&e, r->timestamp_ms ? r->timestamp_ms : now_epoch_ms());
    puts_lit(&e, "}\n");
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

int out_write(out_t *o, const out_record_t *rec)
{
    char stack[2048];
    char *line = stack;
    if (!o || !rec || !rec->url)
        return CRAWL_EINVAL;
    size_t n = out_format(stack, sizeof stack, rec);
    if (n >= sizeof stack) {
        line = malloc(n + 1);
        if (!line)
            return CRAWL_ENOMEM;
        out_format(line, n + 1, rec);
    }
    int rc = append_line(o, line, n);
    if (line != stack)
        free(line);
    return rc;
}

size_t out_format_event(char *buf, size_t buflen, const out_event_t *ev)
{
    emit_t e = {buf, buflen, 0};
    if (!ev || !ev->event)
        return 0;
    puts_lit(&e, "{\"event\":");
    put_str(&e, ev->event);
    puts_lit(&e, ",\"worker\":");
    if (ev->worker < 0) /* the process's own (its embedded server) */
        puts_lit(&e, "null");
    else
        put_u64(&e, (uint64_t)ev->worker);
    puts_lit(&e, ",\"down_ms\":");
    put_u64(&e, ev->down_ms);
    puts_lit(&e, ",\"error_text\":");
    put_str(&e, ev->error_text);
    puts_lit(&e, ",\"timestamp\":");
    put_time(&e, ev->timestamp_ms ? ev->timestamp_ms : now_epoch_ms());
    puts_lit(&e, "}\n");
    if (e.len < buflen)
        buf[e.len] = '\0';
    return e.len;
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
