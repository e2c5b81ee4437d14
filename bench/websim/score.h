/*
 * score.h -- a crawl of the synthetic web scored against its ground truth
 * (score.c): recall, forbidden fetches, extra fetches, lost records and
 * politeness, from websim's request log and the crawler's JSONL.
 */
#ifndef WEBSIM_SCORE_H
#define WEBSIM_SCORE_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

#define SCORE_MAX_FILES 16
typedef struct score_opts {
    const char *truth;                 /* `websim truth` output */
    const char *logs[SCORE_MAX_FILES]; /* websim request logs */
    int nlogs;
    const char *jsonl[SCORE_MAX_FILES]; /* the crawler's --out files */
    int njsonl;
    uint64_t delay_ms, max_delay_ms; /* the crawl's --delay, --max-delay */
    uint64_t gap_slack_ms;           /* a gap this much under the delay is not a violation */
    uint32_t per_host, max_tries;    /* the crawl's --per-host, --max-tries */
    double min_recall;               /* --check fails below (0: recall not judged) */
    int check;                       /* exit 1 on any violation */
    int violations;                  /* list each politeness violation (its own line) */
} score_opts_t;

/* Prints "name value" lines to out; 0, 1 when check found a violation, -1 on
 * an error (said on stderr). */
int score_run(const ws_cfg_t *c, const score_opts_t *o, FILE *out);

#endif
