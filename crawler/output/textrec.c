/*
 * textrec.c -- the --text file's records (textrec.h).
 *
 * DESIGN: a line is formatted with the JSON emitter (json.h), on the stack
 * when it fits, else once more into a buffer of the size the first pass
 * counted (a page's text is capped by the extractor, text.h), and appended
 * through the writer as one line.
 */
#include "textrec.h"

#include <stdlib.h>

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
    json_lit(&e, ",\"timestamp\":");
    json_time(&e, r->timestamp_ms ? r->timestamp_ms : json_now_ms());
    json_lit(&e, "}\n");
    if (e.len < cap)
        buf[e.len] = '\0';
    return e.len;
}

int textrec_write(out_t *o, const textrec_t *r)
{
    char stack[4096], *line = stack;
    if (!o || !r || !r->url)
        return CRAWL_EINVAL;
    size_t n = textrec_format(stack, sizeof stack, r);
    if (n >= sizeof stack) {
        if (!(line = malloc(n + 1)))
            return CRAWL_ENOMEM;
        textrec_format(line, n + 1, r);
    }
    int rc = out_line(o, line, n);
    if (line != stack)
        free(line);
    return rc;
}
