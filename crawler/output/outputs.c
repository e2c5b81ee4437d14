/*
 * outputs.c -- the files a crawl writes, opened and closed together
 * (outputs.h).
 *
 * DESIGN: the outputs are a table of (option, path, kind); opening checks
 * every pair for one file before anything is opened, then opens them in
 * the table's order and closes what it opened when one fails.
 */
#include "outputs.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"

enum { O_OUT, O_WARC, O_TEXT, O_WET, O_LINKS, O_COUNT };
static const char *const OPTION[O_COUNT] = {"--out", "--warc", "--text", "--wet", "--links"};

static void paths(const outputs_spec_t *s, const char *p[O_COUNT])
{
    p[O_OUT] = s->out;
    p[O_WARC] = s->warc;
    p[O_TEXT] = s->text;
    p[O_WET] = s->wet;
    p[O_LINKS] = s->links;
}

/* 1 if paths a and b name one file: the same inode when both exist, else
 * the same path once their directories are resolved ("-", stdout, is one
 * file with itself only). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!strcmp(a, "-") || !strcmp(b, "-"))
        return !strcmp(a, b);
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[PATH_MAX], db[PATH_MAX], fa[PATH_MAX], fb[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
    snprintf(da, sizeof da, "%s", a); /* (dirname and basename may write into theirs) */
    snprintf(db, sizeof db, "%s", b);
    snprintf(fa, sizeof fa, "%s", a);
    snprintf(fb, sizeof fb, "%s", b);
    if (!realpath(dirname(da), ra) || !realpath(dirname(db), rb))
        return !strcmp(a, b);
    return !strcmp(ra, rb) && !strcmp(basename(fa), basename(fb));
}

int outputs_open(outputs_t *o, const outputs_spec_t *s, char *err, size_t errlen)
{
    const char *p[O_COUNT];
    paths(s, p);
    memset(o, 0, sizeof *o);
    for (int i = 0; i < O_COUNT; i++)
        for (int j = i + 1; j < O_COUNT; j++)
            if (p[i] && p[j] && same_file(p[i], p[j])) {
                snprintf(err, errlen, "%s %s and %s %s name one file: give each its own", OPTION[i],
                         p[i], OPTION[j], p[j]);
                return -1;
            }
    char why[512];
    int k = 0;
    if (p[O_OUT] && !(o->out = out_open(p[O_OUT], why, sizeof why)))
        k = O_OUT;
    else if (p[O_WARC] && !(o->warc = warc_open(p[O_WARC], s->software, why, sizeof why)))
        k = O_WARC;
    else if (p[O_TEXT] && !(o->text = out_open(p[O_TEXT], why, sizeof why)))
        k = O_TEXT;
    else if (p[O_WET] && !(o->wet = warc_open_wet(p[O_WET], s->software, why, sizeof why)))
        k = O_WET;
    else if (p[O_LINKS] && !(o->links = out_open(p[O_LINKS], why, sizeof why)))
        k = O_LINKS;
    else {
        out_set_rotate(o->out, s->rotate);
        warc_set_rotate(o->warc, s->rotate);
        out_set_rotate(o->text, s->rotate);
        warc_set_rotate(o->wet, s->rotate);
        out_set_rotate(o->links, s->rotate);
        return 0;
    }
    snprintf(err, errlen, "%s %s: %s", OPTION[k], p[k], why);
    outputs_close(o, s, NULL, 0);
    return -1;
}

int outputs_close(outputs_t *o, const outputs_spec_t *s, char *err, size_t errlen)
{
    char why[512];
    int rc = 0;
    const char *p[O_COUNT];
    paths(s, p);
    out_t *jl[3] = {o->out, o->text, o->links};
    const int opt[3] = {O_OUT, O_TEXT, O_LINKS};
    for (int i = 0; i < 3; i++) {
        int c = jl[i] ? out_close(jl[i]) : 0;
        if (c < 0 && rc == 0 && err) {
            snprintf(err, errlen, "%s %s: %s", OPTION[opt[i]], p[opt[i]], crawl_strerror(c));
            rc = -1;
        }
    }
    warc_t *wf[2] = {o->warc, o->wet};
    const int wopt[2] = {O_WARC, O_WET};
    for (int i = 0; i < 2; i++)
        if (wf[i] && warc_close(wf[i], why, sizeof why) < 0 && rc == 0 && err) {
            snprintf(err, errlen, "%s %s: %s", OPTION[wopt[i]], p[wopt[i]], why);
            rc = -1;
        }
    memset(o, 0, sizeof *o);
    return rc;
}
