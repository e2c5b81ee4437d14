/*
 * metrics_text.h -- the Prometheus text exposition format (version 0.0.4),
 * written into a growing buffer: a family's HELP and TYPE lines, samples
 * with escaped label values, and histograms (cumulative _bucket lines up to
 * le="+Inf", then _sum and _count).
 *
 * Out of memory: the buffer keeps what it had and sets oom; every later
 * call does nothing (check oom once at the end).  Not thread-safe: a buffer
 * belongs to its writer.
 */
#ifndef CRAWLER_METRICS_TEXT_H
#define CRAWLER_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The Content-Type of the format. */
#define METRICS_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct metrics_text {
    char *p; /* NUL-terminated once anything was written; caller frees (metrics_text_free) */
    size_t len, cap;
    int oom; /* an append failed: the text is incomplete */
} metrics_text_t;

/* One label: name (a valid label name, not escaped) and value (escaped:
 * backslash, double quote and newline). */
typedef struct metrics_label {
    const char *name;
    const char *value;
} metrics_label_t;

/* A histogram's state: nb upper bounds (increasing, seconds or whatever the
 * unit is), counts[0..nb] observations per bucket, not cumulative (counts[nb]:
 * above the last bound), and the sum of the observations. */
typedef struct metrics_hist_view {
    const double *bounds;
    size_t nb;
    const uint64_t *counts;
    double sum;
} metrics_hist_view_t;

/* Frees the text and zeroes t.  Accepts a zeroed buffer. */
void metrics_text_free(metrics_text_t *t);
/* Appends the raw string s. */
void metrics_text_raw(metrics_text_t *t, const char *s, size_t n);
/* "# HELP name help\n# TYPE name type\n" (help escaped: backslash, newline);
 * type is "counter", "gauge" or "histogram". */
void metrics_text_family(metrics_text_t *t, const char *name, const char *type, const char *help);
/* "name{l1="v1",...} v\n" (no braces without labels); v as the shortest
 * decimal that reads back as the same double, or +Inf, -Inf, NaN. */
void metrics_text_sample(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                         size_t nlabels, double v);
/* The same with a whole number, written exactly. */
void metrics_text_count(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                        size_t nlabels, uint64_t v);
/* A histogram's samples under name (its family line written before):
 * name_bucket{labels...,le="B"} for every bound and le="+Inf", cumulative,
 * then name_sum and name_count (the +Inf bucket's value). */
void metrics_text_histogram(metrics_text_t *t, const char *name, const metrics_label_t *labels,
                            size_t nlabels, const metrics_hist_view_t *h);

#endif
