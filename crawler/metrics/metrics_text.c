/*
 * metrics_text.c -- the Prometheus text format writer (metrics_text.h).
 *
 * DESIGN: one growing buffer, appended to; no state besides it.  Label
 * values and HELP texts are escaped as the format says (a label value:
 * \\, \" and \n; a HELP text: \\ and \n).  Numbers: whole counts with %llu,
 * doubles as the shortest of %.15g/%.17g that reads back exactly, the
 * infinities and NaN by the format's names.  Histograms are given per
 * bucket and written cumulative, the +Inf bucket equal to _count.
 */
#include "metrics_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void metrics_text_free(metrics_text_t *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}

void metrics_text_raw(metrics_text_t *t, const char *s, size_t n)
{
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void put(metrics_text_t *t, const char *s)
{
    metrics_text_raw(t, s, strlen(s));
}

/* s with backslash and newline escaped, and (quote) double quotes too. */
static void put_escaped(metrics_text_t *t, const char *s, int quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\'           ? "\\\\"
                          : *s == '\n'         ? "\\n"
                          : quote && *s == '"' ? "\\\""
                                               : 0;
        if (!esc)
            continue;
        metrics_text_raw(t, run, (size_t)(s - run));
        put(t, esc);
        run = s + 1;
    }
    metrics_text_raw(t, run, (size_t)(s - run));
}

void metrics_text_family(metrics_text_t *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP ");
    put(t, name);
    put(t, " ");
    put_escaped(t, help, 0);
    put(t, "\n# TYPE ");
    put(t, name);
    put(t, " ");
    put(t, type);
    put(t, "\n");
}

/* v as the format writes a float. */
static void format_double(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    } else {
        snprintf(buf, len, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, len, "%.17g", v);
    }
}

/* name{labels[,extra="value"]} -- extra may be NULL. */
static void series(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                   size_t nlabels, const metrics_label_t *extra)
{
    put(t, name);
    if (!nlabels && !extra)
        return;
    put(t, "{");
    for (size_t i = 0; i < nlabels + (extra != NULL); i++) {
        const metrics_label_t *l = i < nlabels ? &labels[i] : extra;
        if (i)
            put(t, ",");
        put(t, l->name);
        put(t, "=\"");
        put_escaped(t, l->value ? l->value : "", 1);
        put(t, "\"");
    }
    put(t, "}");
}

void metrics_text_sample(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                         size_t nlabels, double v)
{
    char num[40];
    format_double(v, num, sizeof num);
    series(t, name, labels, nlabels, NULL);
    put(t, " ");
    put(t, num);
    put(t, "\n");
}

void metrics_text_count(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                        size_t nlabels, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    series(t, name, labels, nlabels, NULL);
    put(t, " ");
    put(t, num);
    put(t, "\n");
}

void metrics_text_histogram(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                            size_t nlabels, const metrics_hist_view_t *h)
{
    char sub[128], le[40], num[24];
    uint64_t cum = 0;
    snprintf(sub, sizeof sub, "%s_bucket", name);
    for (size_t i = 0; i <= h->nb; i++) {
        cum += h->counts[i];
        if (i < h->nb)
            format_double(h->bounds[i], le, sizeof le);
        else
            snprintf(le, sizeof le, "+Inf");
        metrics_label_t l = {"le", le};
        series(t, sub, labels, nlabels, &l);
        snprintf(num, sizeof num, " %llu\n", (unsigned long long)cum);
        put(t, num);
    }
    snprintf(sub, sizeof sub, "%s_sum", name);
    metrics_text_sample(t, sub, labels, nlabels, h->sum);
    snprintf(sub, sizeof sub, "%s_count", name);
    metrics_text_count(t, sub, labels, nlabels, cum);
}
