/*
 * textrec.c -- the --text file's records (textrec.h).
 *
 * DESIGN: a line is formatted with the JSON emitter (json.h) and appended
 * through the writer as one line (out_line: formatted again into a buffer
 * of its size when it does not fit on the stack; a page's text is capped
 * by the extractor, text.h).
 */
#include "textrec.h"

#include <string.h>

#include "json.h"

static void str_or_empty(json_emit_t *e, const char *s)
{
    json_str(e, s ? s : "");
}

size_t textrec_format(char *buf, size_t cap, const textrec_t *r)
{
    json_emit_t e = {buf, cap, 0};
    json_lit(&e, "{\"url\":");
    str_or_empty(&e, r->url);
    json_lit(&e, ",\"title\":");
    str_or_empty(&e, r->title);
    json_lit(&e, ",\"lang\":");
    str_or_empty(&e, r->lang);
    json_lit(&e, ",\"text\":");
    json_strn(&e, r->text ? r->text : "", r->text ? r->len : 0);
    json_hex64(&e, ",\"simhash\":", r->simhash);
    return json_end_line(&e, r->timestamp_ms);
}

static size_t format_any(char *buf, size_t cap, const void *r)
{
    return textrec_format(buf, cap, r);
}

int textrec_write(out_t *o, const textrec_t *r)
{
    if (!r || !r->url)
        return CRAWL_EINVAL;
    /* (text escapes to about its length: a newline per paragraph, a few quotes) */
    size_t hint = r->len + r->len / 16 + strlen(r->url) + (r->title ? strlen(r->title) : 0) + 256;
    return out_line(o, format_any, r, hint);
}
