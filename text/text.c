/*
 * text.c -- the extractor's handle: its life (text_new, text_finish,
 * text_free) and what it gives once finished (text.h).
 *
 * DESIGN
 * A text_t is one page: extract.c fills its record while the page streams,
 * text_finish() closes what is open and has select.c choose and render;
 * the SimHash of the result is computed at the first text_simhash() (a
 * caller that groups no pages pays nothing for it) and kept.  The getters
 * only read.  Memory: the record (extract.c's bounds), the output, the URL.
 */
#include "text_internal.h"

#include <stdlib.h>
#include <string.h>

text_t *text_new(const text_config_t *cfg, const char *url)
{
    text_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (cfg)
        t->cfg = *cfg;
    if (t->cfg.max_text == 0)
        t->cfg.max_text = TEXT_DEFAULT_MAX_TEXT;
    if (t->cfg.max_text < TEXT_MIN_MAX_TEXT)
        t->cfg.max_text = TEXT_MIN_MAX_TEXT;
    t->maxblocks = t->cfg.max_text / 16;
    t->maxconts = t->cfg.max_text / 8;
    t->url = strdup(url ? url : "");
    if (!t->url) {
        free(t);
        return NULL;
    }
    return t;
}

void text_free(text_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->depth; i++)
        free(t->stack[i].href);
    free(t->url);
    free(t->buf);
    free(t->blocks);
    free(t->conts);
    free(t->out);
    free(t);
}

int text_finish(text_t *t)
{
    if (!t || t->finished)
        return CRAWL_EINVAL;
    text_close_all(t);
    t->finished = 1;
    if (!t->err)
        t->err = text_select(t);
    if (t->err) {
        free(t->out);
        t->out = NULL;
        t->out_len = 0;
        t->simhash = 0;
        return t->err;
    }
    t->simhash_done = 0; /* computed by the first text_simhash() */
    return 0;
}

const char *text_url(const text_t *t)
{
    return t && t->url ? t->url : "";
}

const char *text_title(const text_t *t)
{
    if (!t)
        return "";
    if (t->title_len)
        return t->title;
    return t->og_title[0] ? t->og_title : t->h1;
}

const char *text_lang(const text_t *t)
{
    return t ? t->lang : "";
}

const char *text_body(const text_t *t, size_t *len)
{
    if (len)
        *len = t && t->out ? t->out_len : 0;
    return t && t->out ? t->out : "";
}

uint64_t text_simhash(const text_t *t)
{
    text_t *m = (text_t *)t; /* the cache of a value that only depends on t */
    if (!t || !t->finished || t->err)
        return 0;
    if (!t->simhash_done) {
        m->simhash = text_simhash_of(t->out, t->out_len);
        m->simhash_done = 1;
    }
    return t->simhash;
}

const text_stats_t *text_get_stats(const text_t *t)
{
    return t ? &t->st : NULL;
}
