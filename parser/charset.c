/*
 * charset.c -- a windows-1252 decoder for libxml2, as browsers decode it.
 *
 * DESIGN
 * libxml2 decodes windows-1252 through iconv, which refuses the five bytes
 * the code page leaves undefined (0x81 0x8D 0x8F 0x90 0x9D); libxml2 then
 * stops parsing, so one such byte in an href loses every later link of the
 * page.  The WHATWG Encoding Standard (what browsers do) maps those bytes
 * to U+0081 etc.  charset_init() registers, once per process, a handler
 * named "windows-1252" (with the aliases cp1252 and x-cp1252) that decodes
 * that way; libxml2 finds registered handlers before iconv, both for the
 * charset we pass from Content-Type and for <meta charset>.
 * charset_sniff() gives the default for a page whose Content-Type names no
 * charset: UTF-8 when its first non-ASCII bytes are valid UTF-8 (browsers'
 * default for such bytes; libxml2 would read them as latin-1, and each
 * non-ASCII byte of a link would come out double-encoded).  It reads the
 * raw bytes, text included, across chunk boundaries, and decides before
 * libxml2 has consumed any non-ASCII byte: up to then both readings agree.
 * State: the registration is process-wide (libxml2's handler table), done
 * under pthread_once; the decoder itself is stateless.
 */
#include "parser_internal.h"

#include <libxml/encoding.h>
#include <pthread.h>

/* U+ code points of bytes 0x80..0x9F. */
static const unsigned short cp1252_high[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

/* libxml2 input function: windows-1252 in[0..*inlen) to UTF-8 out[0..*outlen);
 * both lengths are updated to what was consumed / written. */
static int cp1252_in(unsigned char *out, int *outlen, const unsigned char *in, int *inlen)
{
    int i = 0, o = 0;
    while (i < *inlen) {
        unsigned c = in[i];
        if (c >= 0x80 && c < 0xA0)
            c = cp1252_high[c - 0x80];
        if (c < 0x80) {
            if (o + 1 > *outlen)
                break;
            out[o++] = (unsigned char)c;
        } else if (c < 0x800) {
            if (o + 2 > *outlen)
                break;
            out[o++] = (unsigned char)(0xC0 | (c >> 6));
            out[o++] = (unsigned char)(0x80 | (c & 0x3F));
        } else {
            if (o + 3 > *outlen)
                break;
            out[o++] = (unsigned char)(0xE0 | (c >> 12));
            out[o++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (unsigned char)(0x80 | (c & 0x3F));
        }
        i++;
    }
    *inlen = i;
    *outlen = o;
    return o;
}

unsigned charset_cp1252(unsigned char c)
{
    return c >= 0x80 && c < 0xA0 ? cp1252_high[c - 0x80] : c;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_handlers(void)
{
    /* registered in libxml2's table, freed by xmlCleanupParser */
    if (xmlNewCharEncodingHandler("windows-1252", cp1252_in, NULL)) {
        xmlAddEncodingAlias("windows-1252", "cp1252");
        xmlAddEncodingAlias("windows-1252", "x-cp1252");
    }
}

void charset_init(void)
{
    pthread_once(&once, register_handlers);
}

/* Length of the UTF-8 sequence that lead byte c starts (0: invalid lead),
 * and the range its second byte must be in (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
int charset_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF) {
        *lo = c == 0xE0 ? 0xA0 : 0x80;
        *hi = c == 0xED ? 0x9F : 0xBF;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        *lo = c == 0xF0 ? 0x90 : 0x80;
        *hi = c == 0xF4 ? 0x8F : 0xBF;
        return 4;
    }
    return 0;
}

int charset_sniff(charset_sniff_t *s, const char *data, size_t len)
{
    const unsigned char *b = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = b[i];
        if (s->need == 0) {
            if (c < 0x80)
                continue;
            int n = charset_utf8_lead(c, &s->lo, &s->hi);
            if (n == 0)
                return 0; /* no lead byte: not UTF-8 */
            s->need = (unsigned char)(n - 1);
            continue;
        }
        if (c < s->lo || c > s->hi)
            return 0;
        s->lo = 0x80; /* only the second byte has a narrower range */
        s->hi = 0xBF;
        if (--s->need == 0)
            return 1; /* a whole valid sequence, none invalid before it */
    }
    return -1;
}
