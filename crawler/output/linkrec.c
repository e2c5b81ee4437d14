/*
 * linkrec.c -- the --links file's records (linkrec.h).
 *
 * DESIGN: as textrec.c: a line formatted with the JSON emitter (json.h),
 * appended through the writer as one line (out_line; a page's links are
 * capped by anchors.h).
 */
#include "linkrec.h"

#include <string.h>

#include "json.h"

size_t linkrec_format(char *buf, size_t cap, const linkrec_t *r)
{
    json_emit_t e = {buf, cap, 0};
    json_lit(&e, "{\"url\":");
    json_str(&e, r->url);
    json_lit(&e, ",\"links\":[");
    for (size_t i = 0; i < r->n; i++) {
        const linkrec_link_t *l = &r->links[i];
        json_lit(&e, i ? ",{\"url\":" : "{\"url\":");
        json_str(&e, l->url);
        json_lit(&e, ",\"kind\":");
        json_str(&e, l->kind);
        json_lit(&e, ",\"text\":");
        json_str(&e, l->text);
        json_lit(&e, ",\"rel\":");
        json_str(&e, l->rel);
        json_lit(&e, l->why ? ",\"followed\":false,\"why\":" : ",\"followed\":true,\"why\":");
        json_str(&e, l->why);
        json_lit(&e, "}");
    }
    json_lit(&e, "],\"omitted\":");
    json_u64(&e, r->omitted);
    return json_end_line(&e, r->timestamp_ms);
}

static size_t format_any(char *buf, size_t cap, const void *r)
{
    return linkrec_format(buf, cap, r);
}

int linkrec_write(out_t *o, const linkrec_t *r)
{
    if (!r || !r->url || (r->n && !r->links))
        return CRAWL_EINVAL;
    size_t hint = strlen(r->url) + 128;
    for (size_t i = 0; i < r->n; i++)
        hint += strlen(r->links[i].url) + (r->links[i].text ? strlen(r->links[i].text) : 0) +
                (r->links[i].rel ? strlen(r->links[i].rel) : 0) + 64;
    return out_line(o, format_any, r, hint);
}
