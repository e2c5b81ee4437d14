/*
 * warc.c -- WARC/1.1 writer with one gzip member per record (see warc.h for
 * the record layout and the body policy).
 *
 * DESIGN
 * Data: one warc_t per file: the fd (O_APPEND), the warcinfo record's ID,
 * a sticky failure text, and a pool of scratch contexts (zlib stream, SHA-1
 * context, three growable buffers).  A call to warc_write_exchange() takes a
 * context from the pool, builds both records uncompressed in it, hashes and
 * compresses them there, in parallel with other threads, and then writes the
 * two gzip members with one write(2) under the mutex.  The pool grows to the
 * number of threads writing at once; contexts are freed at close.  Buffers
 * grown past SCRATCH_KEEP by a huge page are released after use.
 *
 * After each write, still under the mutex, the response record's line goes
 * to the file's CDXJ index (cdxj.h), and a file past --out-rotate is closed
 * (rotate.h): its index finished under the closed name, the file renamed,
 * a new one opened with a warcinfo record built in the writer's own
 * context (`own`, used only under the mutex).
 *
 * Locking: `lock` guards the pool, the fd and its writes, the warcinfo ID
 * (copied into a context when it is taken), the rotation, the index and the
 * failure state.  It is the only lock; only the index and the rotation
 * (files, no locks) are called with it held.
 *
 * Invariants: the file is always a sequence of whole gzip members, each one a
 * whole record; a failed write is undone with ftruncate(2).  IDs come from
 * getrandom(2) (fallback /dev/urandom).  Touches no Redis key.
 */
#include "warc.h"

#include "cdxj.h"
#include "rotate.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SCRATCH_KEEP (4u << 20) /* keep at most this much scratch per context */

typedef struct sb {
    char *p;
    size_t len, cap;
} sb_t;

typedef struct scratch {
    struct scratch *next;
    z_stream z;
    EVP_MD_CTX *md;
    sb_t head; /* the rewritten response head */
    sb_t rec;  /* one record, uncompressed */
    sb_t out;  /* both gzip members */
    /* copied from the writer when taken (under its lock) */
    char info_id[WARC_RECORD_ID_LEN + 1];
    /* the response record in `out`, for its index line */
    size_t resp_off, resp_len;
    int status;
    char mime[128];
    char digest[WARC_DIGEST_LEN + 1];
    int64_t time_ms;
} scratch_t;

struct warc {
    char path[PATH_MAX];
    char software[128];
    pthread_mutex_t lock; /* guards all below */
    int fd;
    char info_id[WARC_RECORD_ID_LEN + 1]; /* the file's warcinfo record */
    scratch_t *pool;
    scratch_t *own; /* the warcinfo of a rotated-in file is built here */
    rotate_t rot;   /* --out-rotate */
    cdxj_t *idx;    /* the file's index lines */
    bool failed;
    char errtext[2 * PATH_MAX + 64];
};

/* One record to build: header values (NULL: field left out) and the block
 * as up to two pieces. */
typedef struct rec {
    const char *type, *id, *date, *uri, *ip, *concurrent, *refers_to, *info_id, *filename;
    const char *lang; /* WARC-Identified-Content-Language (a conversion) */
    const char *profile, *refers_uri, *refers_date; /* a revisit */
    bool truncated;
    const char *content_type;
    const void *part[2];
    size_t part_len[2];
    const char *payload_digest;
} rec_t;

/* ---- small helpers --------------------------------------------------------- */

static int sb_reserve(sb_t *b, size_t extra)
{
    if (extra <= b->cap - b->len)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2)
            return CRAWL_ENOMEM;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        return CRAWL_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int sb_put(sb_t *b, const void *p, size_t n)
{
    if (sb_reserve(b, n))
        return CRAWL_ENOMEM;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static int sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_printf(sb_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(b, (size_t)n + 1))
        return CRAWL_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

static void sb_trim(sb_t *b)
{
    if (b->cap > SCRATCH_KEEP) {
        free(b->p);
        *b = (sb_t){0};
    }
    b->len = 0;
}

/* A header value must not break the header: no control bytes, no space. */
static bool header_safe(const char *s)
{
    if (!s || !*s)
        return false;
    for (const unsigned char *u = (const unsigned char *)s; *u; u++)
        if (*u <= 0x20 || *u == 0x7f)
            return false;
    return true;
}

static void base32(const unsigned char *in, size_t n, char *out)
{
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            *out++ = alpha[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0)
        *out++ = alpha[(acc << (5 - bits)) & 31];
    *out = '\0';
}

/* SHA-1 of the pieces into "sha1:BASE32". */
static int digest_parts(EVP_MD_CTX *md, const void *const *part, const size_t *len, int n,
                        char out[WARC_DIGEST_LEN + 1])
{
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned hl = 0;
    if (EVP_DigestInit_ex(md, EVP_sha1(), NULL) != 1)
        return CRAWL_EINTERNAL;
    for (int i = 0; i < n; i++)
        if (len[i] && EVP_DigestUpdate(md, part[i], len[i]) != 1)
            return CRAWL_EINTERNAL;
    if (EVP_DigestFinal_ex(md, h, &hl) != 1 || hl != 20)
        return CRAWL_EINTERNAL;
    memcpy(out, "sha1:", 5);
    base32(h, 20, out + 5);
    return 0;
}

int warc_digest(const void *data, size_t len, char out[WARC_DIGEST_LEN + 1])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md)
        return CRAWL_EINTERNAL;
    int rc = digest_parts(md, &data, &len, 1, out);
    EVP_MD_CTX_free(md);
    return rc;
}

static int random_bytes(unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CRAWL_EINTERNAL;
    got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : CRAWL_EINTERNAL;
}

/* "<urn:uuid:xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx>" from 16 random bytes. */
static void uuid_id(unsigned char b[16], char out[WARC_RECORD_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    memcpy(p, "<urn:uuid:", 10);
    p += 10;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p++ = '>';
    *p = '\0';
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms: Unix epoch ms; 0 or less: now. */
static void warc_date(int64_t ms, char out[64])
{
    if (ms <= 0)
        ms = now_ms();
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* ---- the response head ----------------------------------------------------- */

static bool name_is(const char *line, size_t name_len, const char *name)
{
    return name_len == strlen(name) && strncasecmp(line, name, name_len) == 0;
}

/* Parses a Content-Length value (OWS digits OWS) and compares it to want. */
static bool cl_equals(const char *v, const char *end, size_t want)
{
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    if (v == end || end - v > 19)
        return false;
    unsigned long long n = 0;
    for (; v < end; v++) {
        if (*v < '0' || *v > '9')
            return false;
        n = n * 10 + (unsigned)(*v - '0');
    }
    return n == want;
}

/* Offset of the last response in a head that may hold several (1xx first). */
static size_t last_block(const char *h, size_t n)
{
    size_t start = 0, ls = 0;
    bool after_blank = false;
    while (ls < n) {
        const char *nl = memchr(h + ls, '\n', n - ls);
        size_t le = nl ? (size_t)(nl - h) + 1 : n;
        bool blank = le - ls <= 2 && (h[ls] == '\n' || h[ls] == '\r');
        if (blank)
            after_blank = true;
        else if (after_blank) {
            start = ls;
            after_blank = false;
        }
        ls = le;
    }
    return start;
}

/* The stored head: see "the body policy" in warc.h. */
static int rewrite_head(sb_t *out, const char *h, size_t n, const warc_exchange_t *x)
{
    static const char orig[] = "X-Crawler-Original-";
    bool have_cl = false, first = true;
    const char *eol = "\r\n"; /* line ending for added lines: the status line's */
    int rc = 0;
    out->len = 0;
    for (size_t ls = last_block(h, n); ls < n && rc == 0;) {
        const char *line = h + ls, *nl = memchr(line, '\n', n - ls);
        size_t le = nl ? (size_t)(nl - h) + 1 : n, len = le - ls;
        if (len <= 2 && (line[0] == '\n' || line[0] == '\r'))
            break; /* end of the head */
        if (first && len >= 2 && line[len - 1] == '\n' && line[len - 2] != '\r')
            eol = "\n";
        bool folded = line[0] == ' ' || line[0] == '\t'; /* obs-fold continuation */
        const char *colon = first || folded ? NULL : memchr(line, ':', len);
        size_t name_len = colon ? (size_t)(colon - line) : 0;
        bool rename = false;
        if (colon && name_is(line, name_len, "Transfer-Encoding"))
            rename = true;
        else if (colon && x->body_decoded && name_is(line, name_len, "Content-Encoding"))
            rename = true;
        else if (colon && name_is(line, name_len, "Content-Length")) {
            bool keep = !have_cl && cl_equals(colon + 1, line + len, x->body_len);
            rename = !keep; /* only the first correct one stays */
            have_cl = have_cl || keep;
        }
        if (rename)
            rc = sb_put(out, orig, sizeof orig - 1);
        if (rc == 0)
            rc = sb_put(out, line, len);
        if (rc == 0 && line[len - 1] != '\n')
            rc = sb_put(out, eol, strlen(eol));
        first = false;
        ls = le;
    }
    if (rc == 0 && !have_cl)
        rc = sb_printf(out, "Content-Length: %zu%s", x->body_len, eol);
    if (rc == 0)
        rc = sb_put(out, eol, strlen(eol));
    return rc;
}

/* The status code and the media type (no parameters, lower case) of the
 * stored head, for the index: status 0 / mime "" when not found. */
static void head_facts(scratch_t *c)
{
    const char *h = c->head.p, *end = h + c->head.len;
    c->status = 0;
    c->mime[0] = '\0';
    const char *sp = memchr(h, ' ', c->head.len);
    if (sp && sp + 4 <= end && sp[1] >= '1' && sp[1] <= '5' && isdigit((unsigned char)sp[2]) &&
        isdigit((unsigned char)sp[3]))
        c->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
    for (const char *ls = h; ls < end;) {
        const char *nl = memchr(ls, '\n', (size_t)(end - ls));
        const char *le = nl ? nl : end;
        if ((size_t)(le - ls) > 13 && !strncasecmp(ls, "Content-Type:", 13)) {
            const char *v = ls + 13;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            size_t n = 0;
            for (; v < le && *v != ';' && *v != ' ' && *v != '\r' && n + 1 < sizeof c->mime; v++)
                c->mime[n++] = (char)((unsigned char)*v < 0x20 || *v == '"' || *v == '\\'
                                          ? '_'
                                          : tolower((unsigned char)*v));
            c->mime[n] = '\0';
            break;
        }
        ls = le + 1;
    }
}

/* ---- records --------------------------------------------------------------- */

/* Compresses c->rec as one gzip member appended to c->out. */
static int gz_member(scratch_t *c)
{
    if (c->rec.len > (1u << 31))
        return CRAWL_EINVAL; /* a 2 GiB record: the size limit was not applied */
    if (deflateReset(&c->z) != Z_OK)
        return CRAWL_EINTERNAL;
    uLong bound = deflateBound(&c->z, (uLong)c->rec.len);
    if (sb_reserve(&c->out, bound))
        return CRAWL_ENOMEM;
    c->z.next_in = (Bytef *)c->rec.p;
    c->z.avail_in = (uInt)c->rec.len;
    c->z.next_out = (Bytef *)c->out.p + c->out.len;
    c->z.avail_out = (uInt)bound;
    if (deflate(&c->z, Z_FINISH) != Z_STREAM_END)
        return CRAWL_EINTERNAL;
    c->out.len += bound - c->z.avail_out;
    return 0;
}

static int put_opt(sb_t *b, const char *name, const char *value)
{
    return value ? sb_printf(b, "%s: %s\r\n", name, value) : 0;
}

/* Builds record r in c->rec and appends it, compressed, to c->out. */
static int add_record(scratch_t *c, const rec_t *r)
{
    char block_digest[WARC_DIGEST_LEN + 1];
    size_t block_len = r->part_len[0] + r->part_len[1];
    int rc = digest_parts(c->md, r->part, r->part_len, 2, block_digest);
    c->rec.len = 0;
    if (rc == 0)
        rc = sb_printf(&c->rec,
                       "WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: %s\r\nWARC-Date: %s\r\n",
                       r->type, r->id, r->date);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Target-URI", r->uri);
    rc = rc ? rc : put_opt(&c->rec, "WARC-IP-Address", r->ip);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Concurrent-To", r->concurrent);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Refers-To", r->refers_to);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Refers-To-Target-URI", r->refers_uri);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Refers-To-Date", r->refers_date);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Profile", r->profile);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Warcinfo-ID", r->info_id);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Filename", r->filename);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Truncated", r->truncated ? "length" : NULL);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Identified-Content-Language", r->lang);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Block-Digest", block_digest);
    rc = rc ? rc : put_opt(&c->rec, "WARC-Payload-Digest", r->payload_digest);
    rc = rc ? rc
            : sb_printf(&c->rec, "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n", r->content_type,
                        block_len);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = sb_put(&c->rec, r->part[i], r->part_len[i]);
    rc = rc ? rc : sb_put(&c->rec, "\r\n\r\n", 4);
    return rc ? rc : gz_member(c);
}

/* ---- the writer ------------------------------------------------------------ */

static void scratch_free(scratch_t *c)
{
    if (!c)
        return;
    deflateEnd(&c->z);
    EVP_MD_CTX_free(c->md);
    free(c->head.p);
    free(c->rec.p);
    free(c->out.p);
    free(c);
}

static scratch_t *scratch_new(void)
{
    scratch_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (deflateInit2(&c->z, WARC_GZIP_LEVEL, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(c);
        return NULL;
    }
    c->md = EVP_MD_CTX_new();
    if (!c->md) {
        scratch_free(c);
        return NULL;
    }
    return c;
}

/* A context from the pool (or a new one), with the current warcinfo ID. */
static scratch_t *scratch_get(warc_t *w)
{
    char info_id[WARC_RECORD_ID_LEN + 1];
    pthread_mutex_lock(&w->lock);
    scratch_t *c = w->pool;
    if (c)
        w->pool = c->next;
    memcpy(info_id, w->info_id, sizeof info_id);
    pthread_mutex_unlock(&w->lock);
    if (!c && !(c = scratch_new()))
        return NULL;
    memcpy(c->info_id, info_id, sizeof info_id);
    return c;
}

static void scratch_put(warc_t *w, scratch_t *c)
{
    sb_trim(&c->head);
    sb_trim(&c->rec);
    sb_trim(&c->out);
    pthread_mutex_lock(&w->lock);
    c->next = w->pool;
    w->pool = c;
    pthread_mutex_unlock(&w->lock);
}

/* Appends out to the file with one write(2) (more if the kernel writes
 * short), undoing a partial write; lock held.  *end: the file's size after. */
static int write_locked(warc_t *w, const sb_t *out, uint64_t *end)
{
    off_t before = lseek(w->fd, 0, SEEK_END);
    for (size_t done = 0; done < out->len;) {
        ssize_t n = write(w->fd, out->p + done, out->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int saved = n < 0 ? errno : EIO;
            bool cut = done == 0 || (before >= 0 && ftruncate(w->fd, before) == 0);
            snprintf(w->errtext, sizeof w->errtext, "write %s: %s%s", w->path, strerror(saved),
                     cut ? "" : " (a partial record remains)");
            w->failed = true;
            return CRAWL_EWRITE;
        }
        done += (size_t)n;
    }
    *end = (uint64_t)(before >= 0 ? before : 0) + out->len;
    return CRAWL_OK;
}

static int fail_locked(warc_t *w, const char *what)
{
    snprintf(w->errtext, sizeof w->errtext, "%s", what);
    w->failed = true;
    return CRAWL_EWRITE;
}

static int write_warcinfo_locked(warc_t *w);

/* The file is past --out-rotate (lock held): its index written under the
 * name it is closed under, the file renamed to it, a new one opened at the
 * path with its warcinfo record and a new index. */
static int rotate_locked(warc_t *w)
{
    char closed[PATH_MAX], err[PATH_MAX + 200];
    if (rotate_name(&w->rot, closed, sizeof closed) < 0)
        return fail_locked(w, "--out-rotate: the closed file's name is too long");
    int indexed = w->idx != NULL;
    int rc = indexed ? cdxj_finish(w->idx, closed, err, sizeof err) : 0;
    w->idx = NULL;
    if (rc == 0)
        rc = rotate_now(&w->rot, &w->fd, closed, err, sizeof err);
    if (rc == 0 && indexed && !(w->idx = cdxj_open(w->path, err, sizeof err)))
        rc = -1;
    if (rc != 0)
        return fail_locked(w, err);
    return write_warcinfo_locked(w);
}

/* Writes the records built in c, adds the response's index line, and
 * rotates the file when it is due. */
static int write_out(warc_t *w, const scratch_t *c, const char *uri)
{
    int rc = CRAWL_EWRITE;
    uint64_t end = 0;
    char err[PATH_MAX + 200];
    pthread_mutex_lock(&w->lock);
    if (!w->failed)
        rc = write_locked(w, &c->out, &end);
    if (rc == CRAWL_OK && w->idx && c->resp_len &&
        cdxj_add(w->idx, uri, c->time_ms, c->status, c->mime[0] ? c->mime : NULL, c->digest,
                 end - c->out.len + c->resp_off, c->resp_len, err, sizeof err) != 0)
        rc = fail_locked(w, err);
    if (rc == CRAWL_OK && rotate_due(&w->rot, end))
        rc = rotate_locked(w);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* The payload of a request: what follows its head (usually nothing). */
static size_t request_head_len(const char *r, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (r[i] == '\n' && r[i + 1] == '\n')
            return i + 2;
        if (i + 3 < n && memcmp(r + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    }
    return n;
}

static bool exchange_valid(const warc_exchange_t *x)
{
    return x && header_safe(x->target_uri) && (!x->revisit_uri || header_safe(x->revisit_uri)) &&
           (!x->payload_digest || strlen(x->payload_digest) == WARC_DIGEST_LEN) &&
           (!x->ip || header_safe(x->ip)) && x->response_head && x->response_head_len > 0 &&
           (x->body || x->body_len == 0) && (x->request || x->request_len == 0);
}

/* Builds both records of x into c->out. */
static int build_exchange(scratch_t *c, const warc_exchange_t *x)
{
    unsigned char rnd[32];
    char req_id[WARC_RECORD_ID_LEN + 1], resp_id[WARC_RECORD_ID_LEN + 1], date[64];
    char req_payload[WARC_DIGEST_LEN + 1], resp_payload[WARC_DIGEST_LEN + 1];
    int rc = random_bytes(rnd, sizeof rnd);
    if (rc)
        return rc;
    uuid_id(rnd, req_id);
    uuid_id(rnd + 16, resp_id);
    c->time_ms = x->fetch_time_ms > 0 ? x->fetch_time_ms : now_ms();
    warc_date(c->time_ms, date);
    rc = rewrite_head(&c->head, x->response_head, x->response_head_len, x);
    if (rc == 0)
        head_facts(c);
    size_t rh = request_head_len(x->request, x->request_len);
    const void *rp = x->request ? x->request + rh : "";
    size_t rpl = x->request_len - rh;
    rc = rc ? rc : digest_parts(c->md, &rp, &rpl, 1, req_payload);
    if (x->payload_digest) /* (the caller's, of the same body) */
        snprintf(resp_payload, sizeof resp_payload, "%s", x->payload_digest);
    else
        rc = rc ? rc : digest_parts(c->md, &x->body, &x->body_len, 1, resp_payload);
    memcpy(c->digest, resp_payload, sizeof c->digest);
    rec_t rq = {.type = "request",
                .id = req_id,
                .date = date,
                .uri = x->target_uri,
                .ip = x->ip,
                .concurrent = resp_id,
                .info_id = c->info_id,
                .content_type = "application/http;msgtype=request",
                .part = {x->request, NULL},
                .part_len = {x->request_len, 0},
                .payload_digest = req_payload};
    rec_t rs = rq;
    rs.type = "response";
    rs.id = resp_id;
    rs.concurrent = req_id;
    rs.truncated = x->truncated != 0;
    rs.content_type = "application/http;msgtype=response";
    rs.part[0] = c->head.p;
    rs.part_len[0] = c->head.len;
    rs.part[1] = x->body;
    rs.part_len[1] = x->body_len;
    rs.payload_digest = resp_payload;
    char refers_date[64];
    if (x->revisit_uri) { /* the head only: the payload is the first URL's */
        warc_date(x->revisit_time_ms, refers_date);
        rs.type = "revisit";
        rs.profile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
        rs.refers_uri = x->revisit_uri;
        rs.refers_date = refers_date;
        rs.truncated = false;
        rs.part[1] = NULL;
        rs.part_len[1] = 0;
        snprintf(c->mime, sizeof c->mime, "warc/revisit");
    }
    if (!x->request_len)
        rs.concurrent = NULL; /* the request was not recorded */
    c->out.len = 0;
    if (x->request_len)
        rc = rc ? rc : add_record(c, &rq);
    c->resp_off = c->out.len;
    rc = rc ? rc : add_record(c, &rs);
    c->resp_len = c->out.len - c->resp_off;
    if (rc == 0 && x->response_id)
        memcpy(x->response_id, resp_id, sizeof resp_id);
    return rc;
}

int warc_write_exchange(warc_t *w, const warc_exchange_t *x)
{
    if (!w || !exchange_valid(x))
        return CRAWL_EINVAL;
    scratch_t *c = scratch_get(w);
    if (!c)
        return CRAWL_ENOMEM;
    int rc = build_exchange(c, x);
    if (rc == 0)
        rc = write_out(w, c, x->target_uri);
    scratch_put(w, c);
    return rc;
}

static bool text_safe(const char *s)
{
    for (const unsigned char *u = (const unsigned char *)s; *u; u++)
        if (*u < 0x20 || *u == 0x7f)
            return false;
    return true;
}

/* A warcinfo record at the head of the file, built in the writer's own
 * context (lock held); its ID becomes the file's. */
static int write_warcinfo_locked(warc_t *w)
{
    unsigned char rnd[16];
    char date[64], host[256] = "unknown";
    const char *slash = strrchr(w->path, '/'), *fname = slash ? slash + 1 : w->path;
    scratch_t *c = w->own;
    uint64_t end;
    int rc = random_bytes(rnd, sizeof rnd);
    if (rc)
        return rc;
    uuid_id(rnd, w->info_id);
    warc_date(0, date);
    if (gethostname(host, sizeof host) != 0 || !text_safe(host))
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    c->head.len = 0; /* (the fields) */
    rc = sb_printf(&c->head,
                   "software: %s\r\nformat: WARC File Format 1.1\r\n"
                   "conformsTo: http://iipc.github.io/warc-specifications/specifications/"
                   "warc-format/warc-1.1/\r\nhostname: %s\r\n",
                   w->software, host);
    rec_t r = {.type = "warcinfo",
               .id = w->info_id,
               .date = date,
               .filename = *fname && text_safe(fname) ? fname : NULL,
               .content_type = "application/warc-fields",
               .part = {c->head.p, NULL},
               .part_len = {c->head.len, 0}};
    c->out.len = 0;
    rc = rc ? rc : add_record(c, &r);
    if (rc == 0)
        rc = write_locked(w, &c->out, &end);
    sb_trim(&c->head);
    sb_trim(&c->rec);
    sb_trim(&c->out);
    return rc;
}

int warc_write_conversion(warc_t *w, const warc_conversion_t *x)
{
    if (!w || !x || !header_safe(x->target_uri) || (x->refers_to && !header_safe(x->refers_to)) ||
        (!x->text && x->len))
        return CRAWL_EINVAL;
    unsigned char rnd[16];
    char id[WARC_RECORD_ID_LEN + 1], date[64];
    int rc = random_bytes(rnd, sizeof rnd);
    if (rc)
        return rc;
    uuid_id(rnd, id);
    scratch_t *c = scratch_get(w);
    if (!c)
        return CRAWL_ENOMEM;
    warc_date(x->time_ms, date);
    rec_t r = {.type = "conversion",
               .id = id,
               .date = date,
               .uri = x->target_uri,
               .refers_to = x->refers_to,
               .info_id = c->info_id,
               .lang = x->lang && header_safe(x->lang) ? x->lang : NULL,
               .content_type = "text/plain",
               .part = {x->text ? x->text : "", NULL},
               .part_len = {x->len, 0}};
    c->out.len = 0;
    c->resp_len = 0; /* (no index line) */
    rc = add_record(c, &r);
    if (rc == 0)
        rc = write_out(w, c, x->target_uri);
    scratch_put(w, c);
    return rc;
}

/* Opens a writer (an index beside it when indexed). */
static warc_t *open_writer(const char *path, const char *software, int indexed, char *err,
                           size_t errlen)
{
    char dummy[1];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    software = software ? software : "crawler";
    if (!path || !*path || !text_safe(software)) {
        snprintf(err, errlen, "warc: %s", path && *path ? "bad software name" : "empty path");
        return NULL;
    }
    warc_t *w = calloc(1, sizeof *w);
    if (w)
        w->fd = -1;
    if (!w || pthread_mutex_init(&w->lock, NULL) != 0) {
        snprintf(err, errlen, "warc: out of memory");
        free(w);
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->software, sizeof w->software, "%s", software);
    rotate_init(&w->rot, path, 0);
    if (!(w->own = scratch_new())) {
        snprintf(err, errlen, "warc: out of memory");
        goto fail;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (indexed && !(w->idx = cdxj_open(path, err, errlen)))
        goto fail;
    pthread_mutex_lock(&w->lock);
    int rc = write_warcinfo_locked(w);
    pthread_mutex_unlock(&w->lock);
    if (rc != 0) {
        snprintf(err, errlen, "%s", rc == CRAWL_EWRITE ? w->errtext : crawl_strerror(rc));
        goto fail;
    }
    return w;
fail:
    cdxj_free(w->idx); /* (no index for a file that could not start) */
    w->idx = NULL;
    warc_close(w, NULL, 0);
    return NULL;
}

warc_t *warc_open(const char *path, const char *software, char *err, size_t errlen)
{
    return open_writer(path, software, 1, err, errlen);
}

warc_t *warc_open_wet(const char *path, const char *software, char *err, size_t errlen)
{
    return open_writer(path, software, 0, err, errlen);
}

void warc_set_rotate(warc_t *w, uint64_t bytes)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->rot.limit = bytes;
    pthread_mutex_unlock(&w->lock);
}

int warc_close(warc_t *w, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (!w)
        return 0;
    int rc = 0;
    if (w->idx && !w->failed && cdxj_finish(w->idx, w->path, err, errlen) != 0)
        rc = CRAWL_EWRITE;
    else if (w->idx && w->failed)
        cdxj_free(w->idx);
    scratch_free(w->own);
    while (w->pool) {
        scratch_t *c = w->pool;
        w->pool = c->next;
        scratch_free(c);
    }
    if (w->fd >= 0)
        close(w->fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return rc;
}

const char *warc_error(warc_t *w)
{
    if (!w)
        return "";
    pthread_mutex_lock(&w->lock);
    const char *s = w->errtext;
    pthread_mutex_unlock(&w->lock);
    return s;
}
