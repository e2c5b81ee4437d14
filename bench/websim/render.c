/*
 * render.c -- a plan (model.h) as HTTP/1.1 response bytes (render.h).
 *
 * DESIGN: the renderer keeps one block of filler text per charset
 * (RENDER_UNITS units of 64 bytes, each unit valid on its own in its charset,
 * drawn from the seed when it opens), so a page is its markup (head, the
 * links of ws_links_next, tail) with filler copied between the links: no text
 * is generated per request.  A page body is exactly ws_page_size bytes unless
 * its markup is longer; the body depends on (content host, index, session)
 * only, so copies and mirrors are byte-identical.  Compression (gzip level 1,
 * br quality 1) happens when the client asks and the host does it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef WEBSIM_BROTLI
#include <brotli/encode.h>
#endif

#include "model.h"
#include "model_internal.h"
#include "render.h"

#define RENDER_UNITS 4096u

struct ws_render {
    const ws_cfg_t *c;
    char *text[WS_NCHARSETS]; /* RENDER_UNITS * 64 bytes each */
};

static const char *const charset_name[] = {
    "utf-8", "utf-8", "windows-1252", "iso-8859-1", "windows-1251", "shift_jis", "gbk"};

/* One 64-byte unit of text in charset cs: words, spaces, and the charset's
 * non-ASCII characters, none cut by the unit's end. */
static void fill_unit(char *u, int cs, uint64_t *s)
{
    int i = 0;
    while (i < 63) {
        uint64_t r = ws_next(s);
        int room = 63 - i;
        if ((r & 7) == 0 && cs != WS_CS_UTF8_META && room >= 3) {
            switch (cs) {
            case WS_CS_UTF8:
                u[i++] = (char)0xc3, u[i++] = (char)(0xa0 + (r >> 8) % 32);
                break;
            case WS_CS_1252:
            case WS_CS_8859_1:
            case WS_CS_1251:
                u[i++] = (char)(0xc0 + (r >> 8) % 64);
                break;
            case WS_CS_SJIS:
                u[i++] = (char)0x82, u[i++] = (char)(0x9f + (r >> 8) % 83);
                break;
            default:
                u[i++] = (char)(0xb0 + (r >> 8) % 40), u[i++] = (char)(0xa1 + (r >> 16) % 90);
            }
        } else if ((r & 7) == 1) {
            u[i++] = ' ';
        } else {
            u[i++] = (char)('a' + (r >> 8) % 26);
        }
    }
    u[63] = '\n';
}

ws_render_t *ws_render_open(const ws_cfg_t *c)
{
    ws_render_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->c = c;
    for (int cs = 0; cs < WS_NCHARSETS; cs++) {
        r->text[cs] = malloc((size_t)RENDER_UNITS * 64);
        if (!r->text[cs]) {
            ws_render_close(r);
            return NULL;
        }
        uint64_t s = ws_hash(c->seed, TAG_BODY, 0xfeed, (uint64_t)cs);
        for (uint32_t u = 0; u < RENDER_UNITS; u++)
            fill_unit(r->text[cs] + (size_t)u * 64, cs, &s);
    }
    return r;
}

void ws_render_close(ws_render_t *r)
{
    if (!r)
        return;
    for (int cs = 0; cs < WS_NCHARSETS; cs++)
        free(r->text[cs]);
    free(r);
}

int ws_buf_put(ws_buf_t *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return -1;
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int ws_buf_printf(ws_buf_t *b, const char *fmt, ...)
{
    char tmp[WS_URL_MAX * 2 + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    return ws_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* n bytes of filler from charset cs's block at a unit chosen by key. */
static int filler(const ws_render_t *r, ws_buf_t *b, int cs, uint64_t key, size_t n)
{
    uint32_t u = (uint32_t)(key % RENDER_UNITS);
    while (n >= 64) {
        size_t units = n / 64, room = RENDER_UNITS - u;
        size_t k = units < room ? units : room;
        if (ws_buf_put(b, r->text[cs] + (size_t)u * 64, k * 64) < 0)
            return -1;
        n -= k * 64;
        u = 0;
    }
    static const char pad[64] = "                                                               ";
    return ws_buf_put(b, pad, n);
}

static int head(const ws_render_t *r, ws_buf_t *b, const ws_plan_t *p, const ws_links_t *it, int cs)
{
    const ws_cfg_t *c = r->c;
    char name[WS_NAME_MAX];
    ws_host_name(c, p->chost, name, sizeof name);
    int rc = ws_buf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head>\n");
    if (cs != WS_CS_UTF8)
        rc |= ws_buf_printf(b, "<meta charset=\"%s\">\n", charset_name[cs]);
    rc |= ws_buf_printf(b, "<title>%s page %llu</title>\n", name, (unsigned long long)p->index);
    if (it->base[0])
        rc |= ws_buf_printf(b, "<base href=\"%s\">\n", it->base);
    if (it->canonical && p->body == WS_BODY_PAGE) {
        char url[WS_URL_MAX];
        int n = ws_origin(c, it->h.https, p->chost, url, sizeof url);
        ws_page_path(c, p->chost, p->index, p->sid, url + n, sizeof url - (size_t)n);
        rc |= ws_buf_printf(b, "<link rel=\"canonical\" href=\"%s\">\n", url);
    }
    if (it->meta_nofollow)
        rc |= ws_buf_printf(b, "<meta name=\"robots\" content=\"nofollow\">\n");
    rc |= ws_buf_printf(b,
                        "<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
                        "<link rel=\"icon\" href=\"/static/favicon.ico\">\n"
                        "<script src=\"/static/app.js\"></script>\n</head><body>\n"
                        "<img src=\"/img/logo.png\" alt=\"\"> <a href=\"#top\">top</a> "
                        "<a href=\"mailto:info@%s\">mail</a> "
                        "<a href=\"javascript:void(0)\">menu</a>\n",
                        name);
    return rc ? -1 : 0;
}

/* The HTML body of a plan (WS_BODY_PAGE, CAL, DEEP, small pages). */
static int html_body(const ws_render_t *r, ws_buf_t *b, const ws_plan_t *p, int *cs_out)
{
    ws_links_t it;
    ws_link_t l;
    ws_buf_t links = {0};
    ws_links_begin(r->c, p, &it);
    int cs = it.h.charset;
    *cs_out = cs;
    if (head(r, b, p, &it, cs) < 0)
        return -1;
    size_t *ends = calloc((size_t)it.n + 1, sizeof *ends), nl = 0;
    if (!ends)
        return -1;
    int rc = 0;
    while (ws_links_next(&it, &l) && !rc) {
        rc = ws_buf_printf(&links, "<a href=\"%s\"%s>%s</a>\n", l.href,
                           l.nofollow ? " rel=\"nofollow\"" : "", ws_words[nl % WS_NWORDS]);
        ends[nl++] = links.len;
    }
    static const char tail[] = "</body></html>\n";
    size_t fixed = b->len + links.len + sizeof tail - 1;
    size_t want = p->body == WS_BODY_PAGE                             ? ws_page_size(r->c, p)
                  : p->body == WS_BODY_CAL || p->body == WS_BODY_DEEP ? 2048
                                                                      : 600;
    size_t fill = want > fixed ? want - fixed : 0, gap = fill / (nl + 1), prev = 0;
    uint64_t key = p->content_id ? p->content_id : ws_hash(r->c->seed, p->chost, p->index, 9);
    for (size_t i = 0; i < nl && !rc; i++) {
        rc |= filler(r, b, cs, ws_hash(key, i, 0, 0), gap);
        rc |= ws_buf_put(b, links.p + prev, ends[i] - prev);
        prev = ends[i];
    }
    rc |= filler(r, b, cs, ws_hash(key, nl, 0, 0), fill - gap * nl);
    rc |= ws_buf_put(b, tail, sizeof tail - 1);
    free(ends);
    free(links.p);
    return rc ? -1 : 0;
}

static int encode(const ws_buf_t *in, ws_buf_t *out, int br)
{
#ifdef WEBSIM_BROTLI
    if (br) {
        size_t n = BrotliEncoderMaxCompressedSize(in->len);
        out->p = malloc(n ? n : 64), out->cap = n;
        if (!out->p || !BrotliEncoderCompress(1, 20, BROTLI_MODE_TEXT, in->len,
                                              (const uint8_t *)in->p, &n, (uint8_t *)out->p))
            return -1;
        out->len = n;
        return 0;
    }
#else
    (void)br;
#endif
    z_stream z = {0};
    if (deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    out->cap = deflateBound(&z, in->len) + 32;
    out->p = malloc(out->cap);
    int rc = -1;
    if (out->p) {
        z.next_in = (Bytef *)in->p, z.avail_in = (uInt)in->len;
        z.next_out = (Bytef *)out->p, z.avail_out = (uInt)out->cap;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END)
            out->len = z.total_out, rc = 0;
    }
    deflateEnd(&z);
    return rc;
}

static const char *reason(int s)
{
    switch (s) {
    case 200:
        return "OK";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 404:
        return "Not Found";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    default:
        return "Service Unavailable";
    }
}

int ws_render(const ws_render_t *r, const ws_plan_t *p, int accept, int head_only, int keep,
              ws_buf_t *out)
{
    ws_buf_t body = {0}, enc = {0};
    const char *ctype = "text/html; charset=utf-8";
    char ctbuf[64];
    int cs = WS_CS_UTF8, rc = 0;
    ws_host_t h;
    ws_host(r->c, p->chost, &h);
    if (p->body == WS_BODY_ROBOTS) {
        char txt[1024];
        size_t n = ws_robots_text(r->c, &h, txt, sizeof txt);
        rc = ws_buf_put(&body, txt, n);
        ctype = "text/plain";
    } else if (p->body == WS_BODY_FILE) {
        size_t n =
            10240 + ws_hash(r->c->seed, TAG_SIZE, p->chost, p->index + (1ULL << 40)) % 190000;
        rc = ws_buf_put(&body, "%PDF-1.4\n", 9) | filler(r, &body, WS_CS_1252, p->index, n);
        ctype = "application/pdf";
    } else if (p->body != WS_BODY_NONE) {
        rc = html_body(r, &body, p, &cs);
        if (cs != WS_CS_UTF8 && cs != WS_CS_UTF8_META) {
            snprintf(ctbuf, sizeof ctbuf, "text/html; charset=%s", charset_name[cs]);
            ctype = ctbuf;
        } else if (cs == WS_CS_UTF8_META) {
            ctype = "text/html";
        }
    }
    int br = h.br && (accept & WS_ACCEPT_BR) && body.len > 256;
    int gz = !br && h.gzip && (accept & WS_ACCEPT_GZIP) && body.len > 256;
#ifndef WEBSIM_BROTLI
    br = 0;
#endif
    if (!rc && (br || gz))
        rc = encode(&body, &enc, br);
    const ws_buf_t *send = br || gz ? &enc : &body;
    rc |= ws_buf_printf(out,
                        "HTTP/1.1 %d %s\r\nServer: websim\r\nContent-Type: %s\r\n"
                        "Content-Length: %zu\r\n%s%s",
                        p->status, reason(p->status), ctype, send->len,
                        br   ? "Content-Encoding: br\r\n"
                        : gz ? "Content-Encoding: gzip\r\n"
                             : "",
                        h.gzip || h.br ? "Vary: Accept-Encoding\r\n" : "");
    if (p->location[0])
        rc |= ws_buf_printf(out, "Location: %s\r\n", p->location);
    if (p->status == 429)
        rc |= ws_buf_printf(out, "Retry-After: %u\r\n", p->retry_after);
    rc |= ws_buf_printf(out, "Connection: %s\r\n\r\n", keep ? "keep-alive" : "close");
    if (!head_only && !rc)
        rc = ws_buf_put(out, send->p ? send->p : "", send->len);
    free(body.p);
    free(enc.p);
    return rc ? -1 : 0;
}
