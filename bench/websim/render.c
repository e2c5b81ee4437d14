/*
 * render.c -- a plan (model.h) as HTTP/1.1 response bytes (render.h).
 *
 * DESIGN: the renderer keeps one block of filler text per charset
 * (RENDER_UNITS units of 64 bytes, each unit valid on its own in its charset,
 * words of a vocabulary drawn from the seed when it opens, used as a
 * language uses its words: fill_unit), so a page is its markup (head, the
 * links of ws_links_next, tail) with filler copied between the links: no text
 * is generated per request.  A page body is exactly ws_page_size bytes unless
 * its markup is longer; the body depends on (content host, index, session)
 * only, so copies and mirrors are byte-identical.  Compression (gzip level 1,
 * by libdeflate where it is installed, else zlib; br quality 1) happens when
 * the client asks and the host does it.
 * The renderer keeps its scratch (the body, its encoding, one deflate stream
 * reset per response) from response to response: a response allocates
 * nothing once the buffers have grown to the largest page (deflateInit2's
 * 256 KB of state, zeroed and often mmapped afresh, was most of websim's
 * CPU per page before).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef WEBSIM_BROTLI
#include <brotli/encode.h>
#endif
#ifdef WEBSIM_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "model.h"
#include "model_internal.h"
#include "render.h"

#define RENDER_UNITS 4096u

struct ws_render {
    const ws_cfg_t *c;
    char *text[WS_NCHARSETS]; /* RENDER_UNITS * 64 bytes each */
    ws_buf_t body, enc;       /* scratch of ws_render */
    z_stream z;               /* gzip, made on first use (zready), reset per response */
    int zready;
#ifdef WEBSIM_LIBDEFLATE
    struct libdeflate_compressor *gz; /* gzip (instead of z), made on first use */
#endif
};

static const char *const charset_name[] = {
    "utf-8", "utf-8", "windows-1252", "iso-8859-1", "windows-1251", "shift_jis", "gbk"};

#define VOCAB 2048u /* words of a charset's text */
#define WORD_MAX 24 /* bytes of a word, at most */

/* One character of a word in charset cs (r: random bits): a letter, or one
 * in eight a non-ASCII character of the charset; its bytes into w. */
static int word_char(char *w, int cs, uint64_t r)
{
    if ((r & 7) != 0 || cs == WS_CS_UTF8_META) {
        w[0] = (char)('a' + (r >> 8) % 26);
        return 1;
    }
    switch (cs) {
    case WS_CS_UTF8:
        w[0] = (char)0xc3, w[1] = (char)(0xa0 + (r >> 8) % 32);
        return 2;
    case WS_CS_1252:
    case WS_CS_8859_1:
    case WS_CS_1251:
        w[0] = (char)(0xc0 + (r >> 8) % 64);
        return 1;
    case WS_CS_SJIS:
        w[0] = (char)0x82, w[1] = (char)(0x9f + (r >> 8) % 83);
        return 2;
    default:
        w[0] = (char)(0xb0 + (r >> 8) % 40), w[1] = (char)(0xa1 + (r >> 16) % 90);
        return 2;
    }
}

/* A vocabulary of VOCAB words in charset cs (2-10 characters each), drawn
 * from s: vocab[i * WORD_MAX], NUL-ended. */
static void make_vocab(char *vocab, int cs, uint64_t *s)
{
    for (uint32_t i = 0; i < VOCAB; i++) {
        char *w = vocab + (size_t)i * WORD_MAX;
        int len = 2 + (int)(ws_next(s) % 9), n = 0;
        for (int k = 0; k < len && n + 2 < WORD_MAX; k++)
            n += word_char(w + n, cs, ws_next(s));
        w[n] = '\0';
    }
}

/* One 64-byte unit of text: words of the vocabulary, chosen about as often
 * as Zipf's law has words used in a language (rank ~ VOCAB^u: so the text
 * compresses as text does, about 2.5x with gzip -1), separated by spaces,
 * none cut by the unit's end (spaces pad it), a newline last. */
static void fill_unit(char *u, const char *vocab, uint64_t *s)
{
    int i = 0;
    for (;;) {
        double x = (double)(ws_next(s) >> 11) / 9007199254740992.0; /* [0, 1) */
        uint32_t rank = (uint32_t)exp(x * log((double)VOCAB)) - 1;
        const char *w = vocab + (size_t)(rank % VOCAB) * WORD_MAX;
        size_t n = strlen(w);
        if (i + (int)n + 1 > 63)
            break;
        memcpy(u + i, w, n);
        i += (int)n;
        u[i++] = ' ';
    }
    while (i < 63)
        u[i++] = ' ';
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
        char *vocab = malloc((size_t)VOCAB * WORD_MAX);
        if (!vocab) {
            ws_render_close(r);
            return NULL;
        }
        make_vocab(vocab, cs, &s);
        for (uint32_t u = 0; u < RENDER_UNITS; u++)
            fill_unit(r->text[cs] + (size_t)u * 64, vocab, &s);
        free(vocab);
    }
    return r;
}

void ws_render_close(ws_render_t *r)
{
    if (!r)
        return;
    for (int cs = 0; cs < WS_NCHARSETS; cs++)
        free(r->text[cs]);
    free(r->body.p);
    free(r->enc.p);
    if (r->zready)
        deflateEnd(&r->z);
#ifdef WEBSIM_LIBDEFLATE
    if (r->gz)
        libdeflate_free_compressor(r->gz);
#endif
    free(r);
}

/* Room for n bytes in b (its content kept); 0 or -1. */
static int buf_room(ws_buf_t *b, size_t n)
{
    if (n + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < n + 1)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q)
        return -1;
    b->p = q, b->cap = cap;
    return 0;
}

int ws_buf_put(ws_buf_t *b, const void *p, size_t n)
{
    if (buf_room(b, b->len + n) < 0)
        return -1;
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

/* in, encoded (br, else gzip), into r->enc. */
static int encode(ws_render_t *r, const ws_buf_t *in, int br)
{
    ws_buf_t *out = &r->enc;
    out->len = 0;
#ifdef WEBSIM_BROTLI
    if (br) {
        size_t n = BrotliEncoderMaxCompressedSize(in->len);
        if (buf_room(out, n ? n : 64) < 0)
            return -1;
        n = out->cap;
        if (!BrotliEncoderCompress(1, 20, BROTLI_MODE_TEXT, in->len, (const uint8_t *)in->p, &n,
                                   (uint8_t *)out->p))
            return -1;
        out->len = n;
        return 0;
    }
#else
    (void)br;
#endif
#ifdef WEBSIM_LIBDEFLATE
    if (!r->gz && !(r->gz = libdeflate_alloc_compressor(1)))
        return -1;
    size_t bound = libdeflate_gzip_compress_bound(r->gz, in->len);
    if (buf_room(out, bound) < 0)
        return -1;
    out->len = libdeflate_gzip_compress(r->gz, in->p, in->len, out->p, out->cap);
    return out->len ? 0 : -1;
#endif
    if (!r->zready && deflateInit2(&r->z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    r->zready = 1;
    if (deflateReset(&r->z) != Z_OK || buf_room(out, deflateBound(&r->z, in->len) + 32) < 0)
        return -1;
    r->z.next_in = (Bytef *)in->p, r->z.avail_in = (uInt)in->len;
    r->z.next_out = (Bytef *)out->p, r->z.avail_out = (uInt)out->cap;
    if (deflate(&r->z, Z_FINISH) != Z_STREAM_END)
        return -1;
    out->len = r->z.total_out;
    return 0;
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

int ws_render(ws_render_t *r, const ws_plan_t *p, int accept, int head_only, int keep,
              ws_buf_t *out)
{
    ws_buf_t body = r->body; /* (scratch: handed back below, grown or not) */
    body.len = 0;
    r->enc.len = 0;
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
        rc = encode(r, &body, br);
    const ws_buf_t *send = br || gz ? &r->enc : &body;
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
    r->body = body;
    return rc ? -1 : 0;
}
