/*
 * cdxj.c -- the CDXJ index beside each closed WARC (cdxj.h).
 *
 * DESIGN: a line is written (and flushed) to FILE.cdxj.open as its record
 * is written, without the "filename" member (the closed name is known only
 * at the close); closing reads them back, sorts them (the key, then the
 * time: byte order of the whole line) and writes NAME.cdxj with each line's
 * filename added, through a temporary file renamed over it.  The sort is
 * external: runs of SORT_CHUNK bytes sorted in memory, written to temporary
 * files beside the index and merged, so memory stays flat however many
 * records a file holds.  A WARC that a run appends to already has its
 * index: its lines come back into the waiting file at open, their filename
 * member taken off, so the new index covers the whole file; a waiting file
 * left by a run that was killed is kept and appended to.
 */
#include "cdxj.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define FILENAME_MEMBER ", \"filename\": "
#define LINE_MAX_LEN 16384 /* a line's bytes at most: its URL and SURT are under 4096 */

#define SORT_CHUNK (64u << 20) /* bytes of lines sorted in memory at once */
#define MAX_RUNS 256           /* sorted runs merged at once: 16 GiB of lines */

struct cdxj {
    FILE *f;                       /* FILE.cdxj.open, appended */
    size_t sort_chunk;             /* SORT_CHUNK, or a test's */
    char warc_path[PATH_MAX];      /* FILE */
    char open_path[PATH_MAX + 16]; /* FILE.cdxj.open */
};

/* A JSON string of s into o. */
static void json_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(o, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(o, "\\u%04x", *p);
        else
            fputc(*p, o);
    }
    fputc('"', o);
}

/* Query arguments in the surt library's order: by name, then an argument
 * without '=' first, then by value (bytes). */
static int by_arg(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    size_t an = strcspn(a, "="), bn = strcspn(b, "=");
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c || an != bn)
        return c ? c : (an < bn ? -1 : 1);
    if (!a[an] || !b[bn])
        return (a[an] != 0) - (b[bn] != 0);
    return strcmp(a + an + 1, b + bn + 1);
}

/* Appends n bytes of s, lower case, at buf[*o]: 0 or -1 (no room). */
static int put_lower(char *buf, size_t len, size_t *o, const char *s, size_t n)
{
    if (*o + n >= len)
        return -1;
    for (size_t i = 0; i < n; i++)
        buf[(*o)++] = (char)tolower((unsigned char)s[i]);
    buf[*o] = '\0';
    return 0;
}

int cdxj_surt(const char *url, char *buf, size_t len)
{
    const char *hs = strstr(url, "://");
    if (!hs || len < 2)
        return -1;
    size_t slen = (size_t)(hs - url);
    int http = slen == 4 && !strncasecmp(url, "http", 4);
    int https = slen == 5 && !strncasecmp(url, "https", 5);
    hs += 3;
    const char *he = hs + strcspn(hs, "/?#");
    const char *at = memchr(hs, '@', (size_t)(he - hs)); /* (userinfo is no part of it) */
    if (at)
        hs = at + 1;
    const char *host_end = he; /* the port after the last ':' out of brackets */
    for (const char *p = he; p > hs && p[-1] != ']'; p--)
        if (p[-1] == ':') {
            host_end = p - 1;
            break;
        }
    const char *port = host_end < he ? host_end + 1 : he;
    if ((http && he - port == 2 && !strncmp(port, "80", 2)) ||
        (https && he - port == 3 && !strncmp(port, "443", 3)) || port == he)
        port = NULL;    /* a default port is dropped */
    const char *w = hs; /* www, www2, ... as the first label is dropped */
    if (host_end - w > 4 && !strncasecmp(w, "www", 3)) {
        const char *d = w + 3;
        while (d < host_end && isdigit((unsigned char)*d))
            d++;
        if (d < host_end - 1 && *d == '.')
            hs = d + 1;
    }
    size_t o = 0;
    buf[0] = '\0';
    for (const char *end = host_end; end > hs;) { /* labels in reverse order, joined by ',' */
        const char *dot = end;
        while (dot > hs && dot[-1] != '.')
            dot--;
        if ((o && put_lower(buf, len, &o, ",", 1) < 0) ||
            put_lower(buf, len, &o, dot, (size_t)(end - dot)) < 0)
            return -1;
        end = dot > hs ? dot - 1 : hs;
    }
    if ((port && (put_lower(buf, len, &o, ":", 1) < 0 ||
                  put_lower(buf, len, &o, port, (size_t)(he - port)) < 0)) ||
        put_lower(buf, len, &o, ")", 1) < 0)
        return -1;
    /* the path, lower case, its trailing '/' dropped unless it is all */
    size_t plen = strcspn(he, "?#");
    if (plen > 1 && he[plen - 1] == '/')
        plen--;
    if (put_lower(buf, len, &o, plen ? he : "/", plen ? plen : 1) < 0)
        return -1;
    const char *q = he + strcspn(he, "?#");
    size_t qlen = *q == '?' ? strcspn(q + 1, "#") : 0;
    if (!qlen)
        return 0; /* no query, or an empty one: dropped; the fragment too */
    /* the query, lower case, its arguments sorted */
    char *copy = malloc(qlen + 1);
    size_t nargs = 1;
    for (size_t i = 0; i < qlen; i++)
        nargs += q[1 + i] == '&';
    char **args = malloc(nargs * sizeof *args);
    int rc = copy && args ? 0 : -1;
    if (rc == 0) {
        size_t qo = 0;
        put_lower(copy, qlen + 1, &qo, q + 1, qlen);
        size_t k = 0;
        for (char *a = copy;; a++) {
            args[k++] = a;
            a = strchr(a, '&');
            if (!a)
                break;
            *a = '\0';
        }
        qsort(args, k, sizeof *args, by_arg);
        rc = put_lower(buf, len, &o, "?", 1);
        for (size_t i = 0; rc == 0 && i < k; i++)
            rc = (i && put_lower(buf, len, &o, "&", 1) < 0) ||
                         put_lower(buf, len, &o, args[i], strlen(args[i])) < 0
                     ? -1
                     : 0;
    }
    free(copy);
    free(args);
    return rc;
}

cdxj_t *cdxj_open(const char *warc_path, char *err, size_t errlen)
{
    cdxj_t *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->sort_chunk = SORT_CHUNK;
    snprintf(x->warc_path, sizeof x->warc_path, "%s", warc_path);
    snprintf(x->open_path, sizeof x->open_path, "%s.cdxj.open", warc_path);
    int leftover = access(x->open_path, F_OK) == 0; /* a killed run's lines: this file's */
    if (!(x->f = fopen(x->open_path, "a"))) {
        snprintf(err, errlen, "%s: %s", x->open_path, strerror(errno));
        free(x);
        return NULL;
    }
    char done[PATH_MAX + 16], line[LINE_MAX_LEN];
    snprintf(done, sizeof done, "%s.cdxj", warc_path);
    FILE *old = leftover ? NULL : fopen(done, "r"); /* an appended WARC's index so far */
    while (old && fgets(line, sizeof line, old)) {
        char *fm = strstr(line, FILENAME_MEMBER);
        if (fm) { /* the member is dropped: the line ends there */
            fm[0] = '\n';
            fm[1] = '\0';
        }
        fputs(line, x->f);
    }
    if (old)
        fclose(old);
    if (fflush(x->f) != 0) {
        snprintf(err, errlen, "%s: %s", x->open_path, strerror(errno));
        cdxj_free(x);
        return NULL;
    }
    return x;
}

int cdxj_add(cdxj_t *x, const char *url, int64_t time_ms, int status, const char *mime,
             const char *digest, uint64_t offset, uint64_t length, char *err, size_t errlen)
{
    char surt[4096], ts[32];
    if (strlen(url) >= sizeof surt || cdxj_surt(url, surt, sizeof surt) < 0)
        return 0; /* (not a URL a replay tool looks up, or too long for a line) */
    time_t t = (time_t)(time_ms / 1000);
    struct tm tm;
    strftime(ts, sizeof ts, "%Y%m%d%H%M%S", gmtime_r(&t, &tm));
    fprintf(x->f, "%s %s {\"url\": ", surt, ts);
    json_str(x->f, url);
    if (mime) {
        fprintf(x->f, ", \"mime\": ");
        json_str(x->f, mime);
    }
    if (status > 0)
        fprintf(x->f, ", \"status\": \"%d\"", status);
    fprintf(x->f, ", \"digest\": ");
    json_str(x->f, digest);
    fprintf(x->f, ", \"length\": \"%llu\", \"offset\": \"%llu\"\n", (unsigned long long)length,
            (unsigned long long)offset);
    if (fflush(x->f) == 0 && !ferror(x->f))
        return 0;
    snprintf(err, errlen, "%s: %s", x->open_path, strerror(errno ? errno : EIO));
    return -1;
}

/* ---- the external sort ----------------------------------------------------- */

typedef struct lines {
    char **v;
    size_t n, cap, bytes;
} lines_t;

static void lines_clear(lines_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = l->bytes = 0;
}

static int lines_push(lines_t *l, const char *s)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 1024;
        char **nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->bytes += strlen(s) + 1;
    l->n++;
    return 0;
}

static int by_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One index line: the waiting line (no newline) with the filename added. */
static void put_line(FILE *out, const char *line, const char *base)
{
    size_t n = strlen(line);
    if (n && line[n - 1] == '}')
        n--;
    fwrite(line, 1, n, out);
    fputs(FILENAME_MEMBER, out);
    json_str(out, base);
    fputs("}\n", out);
}

/* Sorts and writes the waiting lines of in to out (filename base added),
 * through sorted runs in files run_prefix.N when they pass SORT_CHUNK. */
static int sort_lines(FILE *in, FILE *out, const char *base, const char *run_prefix, size_t chunk)
{
    lines_t l = {0};
    char line[LINE_MAX_LEN], run[PATH_MAX + 64];
    FILE *runs[MAX_RUNS];
    int nruns = 0, rc = 0, more = 1;
    while (rc == 0 && more) {
        more = fgets(line, sizeof line, in) != NULL;
        if (more) {
            line[strcspn(line, "\n")] = '\0';
            if (line[0] && lines_push(&l, line) < 0)
                rc = -1;
        }
        if (rc == 0 && ((more && l.bytes >= chunk) || (!more && nruns && l.n))) {
            if (nruns == (int)(sizeof runs / sizeof runs[0])) {
                errno = EFBIG;
                rc = -1;
                break;
            }
            qsort(l.v, l.n, sizeof *l.v, by_line);
            snprintf(run, sizeof run, "%s.%d", run_prefix, nruns);
            FILE *r = fopen(run, "w+");
            unlink(run); /* (gone when closed, whatever happens) */
            for (size_t i = 0; r && i < l.n; i++)
                fprintf(r, "%s\n", l.v[i]);
            if (!r || fflush(r) != 0 || ferror(r)) {
                if (r)
                    fclose(r);
                rc = -1;
                break;
            }
            rewind(r);
            runs[nruns++] = r;
            lines_clear(&l);
        }
    }
    if (rc == 0 && !nruns && l.n) { /* all of it fitted */
        qsort(l.v, l.n, sizeof *l.v, by_line);
        for (size_t i = 0; i < l.n; i++)
            put_line(out, l.v[i], base);
    }
    lines_clear(&l);
    free(l.v);
    /* merge: the smallest head of the runs, each time */
    char(*head)[LINE_MAX_LEN] = rc == 0 && nruns ? malloc((size_t)nruns * LINE_MAX_LEN) : NULL;
    int *live = head ? calloc((size_t)nruns, sizeof *live) : NULL;
    if (rc == 0 && nruns && !live)
        rc = -1;
    for (int i = 0; live && i < nruns; i++)
        if ((live[i] = fgets(head[i], LINE_MAX_LEN, runs[i]) != NULL))
            head[i][strcspn(head[i], "\n")] = '\0';
    for (int best = 0; live && best >= 0;) {
        best = -1;
        for (int i = 0; i < nruns; i++)
            if (live[i] && (best < 0 || strcmp(head[i], head[best]) < 0))
                best = i;
        if (best < 0)
            break;
        put_line(out, head[best], base);
        if ((live[best] = fgets(head[best], LINE_MAX_LEN, runs[best]) != NULL))
            head[best][strcspn(head[best], "\n")] = '\0';
    }
    free(live);
    free(head);
    for (int i = 0; i < nruns; i++)
        fclose(runs[i]);
    return rc;
}

int cdxj_finish(cdxj_t *x, const char *warc_name, char *err, size_t errlen)
{
    char out_path[PATH_MAX + 16], tmp[PATH_MAX + 32], stale[PATH_MAX + 16];
    const char *slash = strrchr(warc_name, '/'), *base = slash ? slash + 1 : warc_name;
    snprintf(out_path, sizeof out_path, "%s.cdxj", warc_name);
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    int rc = fflush(x->f) == 0 && !ferror(x->f) ? 0 : -1;
    rewind(x->f);
    FILE *in = rc == 0 ? fopen(x->open_path, "r") : NULL;
    FILE *out = in ? fopen(tmp, "w") : NULL;
    errno = 0;
    if (!out || sort_lines(in, out, base, tmp, x->sort_chunk) != 0 || fflush(out) != 0 ||
        ferror(out))
        rc = -1;
    if (out && fclose(out) != 0)
        rc = -1;
    if (in)
        fclose(in);
    if (rc == 0 && rename(tmp, out_path) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(err, errlen, "the CDXJ index %s: %s", out_path, strerror(errno ? errno : EIO));
        unlink(tmp);
    } else {
        unlink(x->open_path);
        snprintf(stale, sizeof stale, "%s.cdxj", x->warc_path);
        if (strcmp(stale, out_path) != 0)
            unlink(stale); /* the live file's index of an earlier run: in this one now */
    }
    cdxj_free(x);
    return rc;
}

void cdxj_sort_chunk(cdxj_t *x, size_t bytes)
{
    x->sort_chunk = bytes;
}

void cdxj_free(cdxj_t *x)
{
    if (!x)
        return;
    if (x->f)
        fclose(x->f);
    free(x);
}
