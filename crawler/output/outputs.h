/*
 * outputs.h -- the files a crawl writes, opened and closed together: the
 * JSON lines (--out, jsonl.h), the WARC (--warc, warc.h), the pages'
 * text (--text, textrec.h), its WET file (--wet, warc.h) and the pages' links (--links,
 * linkrec.h).  The worker writes each page's records
 * through the writers this holds; this file only decides which are open, that no two share a file,
 * their rotation (--out-rotate, rotate.h), and their closing.
 */
#ifndef CRAWLER_OUTPUTS_H
#define CRAWLER_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"
#include "warc.h"

/* What to open: a path or NULL for each ("-": standard output, for the
 * JSON-lines files). */
typedef struct outputs_spec {
    const char *out, *warc, *text, *wet, *links;
    uint64_t rotate;      /* --out-rotate: bytes of a file; 0: never */
    const char *software; /* the WARC's warcinfo "software" */
} outputs_spec_t;

/* The writers, NULL for an output not asked for. */
typedef struct outputs {
    out_t *out;
    warc_t *warc;
    out_t *text;
    warc_t *wet;
    out_t *links;
} outputs_t;

/* Opens every output s names, for appending (a WARC writes its warcinfo
 * record, so a full disk shows here), refusing two that name one file (by
 * one path or two) or two on standard output.  0, or -1 with the reason in
 * err, naming the option ("--out F and --text G name one file: ..."); then
 * nothing is left open. */
int outputs_open(outputs_t *o, const outputs_spec_t *s, char *err, size_t errlen);
/* Flushes and closes every writer (a WARC writes its index): 0, or -1
 * with the first failure in err ("--out F: ...").  Each is closed anyway. */
int outputs_close(outputs_t *o, const outputs_spec_t *s, char *err, size_t errlen);

#endif
