/*
 * decode.c -- the text sink's decoder: character data and attribute values
 * in the page's charset, with character references, to UTF-8.
 *
 * DESIGN
 * The sink reader (sink.c) hands over the raw bytes of a page's text runs;
 * this file turns them into UTF-8 and decodes character references, so
 * that libxml2 never has to parse text (parser.h: parser_sink_t).
 *  - Charsets, by label (the Content-Type's charset, else the page's <meta
 *    charset>, else the first-bytes sniff of charset.c): UTF-8 is checked
 *    and passed on as is (a span with nothing to change is handed over
 *    without a copy); an invalid sequence becomes U+FFFD.  windows-1252 --
 *    also for the labels iso-8859-1, latin1 and us-ascii, as browsers read
 *    them (the WHATWG Encoding Standard), and for a page with no label whose
 *    first non-ASCII bytes are not UTF-8 -- through charset.c's table.  Any
 *    other label through iconv (the converter libxml2 uses for them), with a
 *    few labels widened as browsers do (gb2312 -> GB18030, shift_jis ->
 *    CP932, euc-kr -> CP949); a byte iconv refuses becomes U+FFFD.  A
 *    character cut by the end of a chunk is held (at most 8 bytes) until the
 *    next.  Labels of UTF-16/32 (whose pages the lexers pass through
 *    unread) and unknown labels change nothing.
 *  - Character references: &#N; and &#xH; (0x80-0x9F read as windows-1252,
 *    0, surrogates and values past U+10FFFF as U+FFFD, as browsers do), and
 *    the named references libxml2 knows (HTML 4's set and &apos;, with ';'
 *    as libxml2 requires; &amp &lt &gt &quot &nbsp also without it in text).
 *    A reference cut by the end of a chunk is held (at most 32 bytes).
 * State: one decoder_t per page (in the sink reader); the iconv descriptor
 * is the page's own.  Output goes to the emit callback in pieces of at most
 * DECODE_OUT bytes, never cut inside a character.
 */
#include "parser_internal.h"

#include <errno.h>
#include <iconv.h>
#include <libxml/HTMLparser.h>
#include <string.h>
#include <strings.h>

static int alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The output buffer to the callback. */
static void flush(decoder_t *d)
{
    if (d->nout) {
        d->emit(d->ud, d->out, d->nout);
        d->nout = 0;
    }
}

/* Room for at least 4 more bytes in out. */
static char *room(decoder_t *d)
{
    if (d->nout + 4 > DECODE_OUT)
        flush(d);
    return d->out + d->nout;
}

static size_t put_cp(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void emit_cp(decoder_t *d, unsigned cp)
{
    char *o = room(d);
    d->nout += put_cp(o, cp);
}

static void emit_bytes(decoder_t *d, const char *s, size_t n)
{
    if (n > DECODE_OUT / 8) { /* long: handed over where it is */
        flush(d);
        d->emit(d->ud, s, n);
        return;
    }
    if (d->nout + n > DECODE_OUT)
        flush(d);
    memcpy(d->out + d->nout, s, n);
    d->nout += n;
}

static void run(decoder_t *d, const char *s, size_t n);

/* Switches d to kind (and cd); a character held under the old charset is
 * read again under the new one. */
static void switch_to(decoder_t *d, int kind, void *cd)
{
    unsigned char held[sizeof(d->part)];
    size_t n = d->npart;
    memcpy(held, d->part, n);
    decode_close(d);
    d->kind = kind;
    d->cd = cd;
    if (n)
        run(d, (const char *)held, n);
}

int decode_open(decoder_t *d, const char *label)
{
    static const struct {
        const char *label, *as;
    } widen[] = {{"gb2312", "GB18030"},       {"gbk", "GB18030"},       {"x-gbk", "GB18030"},
                 {"shift_jis", "CP932"},      {"shift-jis", "CP932"},   {"sjis", "CP932"},
                 {"x-sjis", "CP932"},         {"windows-31j", "CP932"}, {"euc-kr", "CP949"},
                 {"ks_c_5601-1987", "CP949"}, {"tis-620", "CP874"},     {"iso-8859-11", "CP874"}};
    static const char *const w1252[] = {
        "windows-1252", "cp1252",   "x-cp1252", "iso-8859-1", "iso8859-1",      "latin1",
        "l1",           "us-ascii", "ascii",    "iso_8859-1", "ansi_x3.4-1968", NULL};
    const char *name = label;
    iconv_t cd;
    if (!label || !*label)
        return -1;
    if (strcasecmp(label, "utf-8") == 0 || strcasecmp(label, "utf8") == 0) {
        if (d->kind != DEC_UTF8)
            switch_to(d, DEC_UTF8, NULL);
        return 0;
    }
    for (int i = 0; w1252[i]; i++)
        if (strcasecmp(label, w1252[i]) == 0) {
            if (d->kind != DEC_1252)
                switch_to(d, DEC_1252, NULL);
            return 0;
        }
    if (strncasecmp(label, "utf-16", 6) == 0 || strncasecmp(label, "utf-32", 6) == 0 ||
        strncasecmp(label, "ucs", 3) == 0)
        return -1;
    for (size_t i = 0; i < sizeof(widen) / sizeof(widen[0]); i++)
        if (strcasecmp(label, widen[i].label) == 0)
            name = widen[i].as;
    cd = iconv_open("UTF-8", name);
    if (cd == (iconv_t)-1)
        return -1;
    switch_to(d, DEC_ICONV, cd);
    return 0;
}

void decode_close(decoder_t *d)
{
    if (d->kind == DEC_ICONV && d->cd)
        iconv_close((iconv_t)d->cd);
    d->cd = NULL;
    d->kind = DEC_UTF8;
    d->npart = 0;
}

/* UTF-8 s[0..n) (no '&'): valid spans pass as they are, NUL is dropped,
 * invalid bytes become U+FFFD, a sequence cut at the end is held. */
/* The sequence held from the last call, completed by the first bytes of
 * s[0..n) (or replaced if they do not continue it); returns the bytes of
 * s used. */
static size_t utf8_held(decoder_t *d, const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (d->npart && i < n) {
        unsigned char c = s[i];
        unsigned char lo = d->npart == 1 ? d->lo : 0x80, hi = d->npart == 1 ? d->hi : 0xBF;
        if (c < lo || c > hi) {
            d->npart = 0;
            emit_cp(d, 0xFFFD);
            break;
        }
        d->part[d->npart++] = c;
        i++;
        if (d->npart == d->need) {
            emit_bytes(d, (const char *)d->part, d->npart);
            d->npart = 0;
        }
    }
    return i;
}

static void utf8_run(decoder_t *d, const unsigned char *s, size_t n)
{
    size_t i = d->npart ? utf8_held(d, s, n) : 0, start = i;
    while (i < n) {
        unsigned char c = s[i], lo, hi;
        if (c != 0) {
            if (c < 0x80) {
                i++;
                /* eight bytes at a time while they are ASCII and not NUL */
                while (i + 8 <= n) {
                    uint64_t w;
                    memcpy(&w, s + i, 8);
                    if ((w & 0x8080808080808080ULL) ||
                        ((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL))
                        break;
                    i += 8;
                }
                continue;
            }
            int k = charset_utf8_lead(c, &lo, &hi);
            if (k && i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
                size_t j = 2;
                while ((int)j < k && i + j < n && s[i + j] >= 0x80 && s[i + j] <= 0xBF)
                    j++;
                if ((int)j == k) {
                    i += j;
                    continue;
                }
                if (i + j < n) { /* a bad continuation */
                    emit_bytes(d, (const char *)s + start, i - start);
                    emit_cp(d, 0xFFFD);
                    i += j;
                    start = i;
                    continue;
                }
            } else if (k && i + 1 == n) {
                /* the end cuts a sequence: held below */
            } else {
                emit_bytes(d, (const char *)s + start, i - start);
                emit_cp(d, 0xFFFD);
                start = ++i;
                continue;
            }
            emit_bytes(d, (const char *)s + start, i - start); /* held: s[i..n) */
            d->need = (unsigned char)k;
            d->lo = lo;
            d->hi = hi;
            d->npart = (unsigned char)(n - i);
            memcpy(d->part, s + i, n - i);
            return;
        }
        emit_bytes(d, (const char *)s + start, i - start); /* NUL dropped */
        start = ++i;
    }
    emit_bytes(d, (const char *)s + start, i - start);
}

static void cp1252_run(decoder_t *d, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] < 0x80 && s[j] != 0)
            j++;
        emit_bytes(d, (const char *)s + i, j - i);
        if (j < n && s[j] != 0)
            emit_cp(d, charset_cp1252(s[j]));
        i = j + 1;
    }
}

/* Through iconv; a character cut at the end is held in part[]. */
static void iconv_run(decoder_t *d, const unsigned char *s, size_t n)
{
    char tmp[16];
    while (d->npart && n > 0) { /* complete the held character byte by byte */
        d->part[d->npart++] = *s++;
        n--;
        char *in = (char *)d->part, *o = room(d);
        size_t il = d->npart, ol = 4;
        size_t r = iconv((iconv_t)d->cd, &in, &il, &o, &ol);
        if (r != (size_t)-1 || errno != EINVAL || d->npart == sizeof(d->part)) {
            d->nout += 4 - ol;
            if (r == (size_t)-1 && errno != EINVAL)
                emit_cp(d, 0xFFFD);
            d->npart = 0;
            if (il) { /* bytes after a refused one: again as new input */
                memcpy(tmp, in, il);
                iconv_run(d, (const unsigned char *)tmp, il);
            }
        }
    }
    while (n > 0) {
        char *in = (char *)s, *o = d->out + d->nout;
        size_t il = n, ol = DECODE_OUT - d->nout;
        size_t r = iconv((iconv_t)d->cd, &in, &il, &o, &ol);
        d->nout = DECODE_OUT - ol;
        s = (const unsigned char *)in;
        n = il;
        if (r != (size_t)-1)
            break;
        if (errno == E2BIG) {
            flush(d);
        } else if (errno == EINVAL) { /* cut at the end */
            memcpy(d->part, s, n < sizeof(d->part) ? n : sizeof(d->part));
            d->npart = (unsigned char)(n < sizeof(d->part) ? n : sizeof(d->part));
            return;
        } else { /* EILSEQ */
            emit_cp(d, 0xFFFD);
            s++;
            n--;
        }
    }
}

/* Bytes with no '&' in the page's charset. */
static void run(decoder_t *d, const char *s, size_t n)
{
    if (d->kind == DEC_UTF8)
        utf8_run(d, (const unsigned char *)s, n);
    else if (d->kind == DEC_1252)
        cp1252_run(d, (const unsigned char *)s, n);
    else
        iconv_run(d, (const unsigned char *)s, n);
}

/* The code point of the most used named references (libxml2's lookup
 * walks its whole table), or 0. */
static unsigned common_ref(const char *name)
{
    static const struct {
        const char *n;
        unsigned cp;
    } refs[] = {{"amp", '&'},       {"nbsp", 0xA0},    {"quot", '"'},     {"lt", '<'},
                {"gt", '>'},        {"apos", '\''},    {"ndash", 0x2013}, {"mdash", 0x2014},
                {"hellip", 0x2026}, {"rsquo", 0x2019}, {"lsquo", 0x2018}, {"rdquo", 0x201D},
                {"ldquo", 0x201C},  {"middot", 0xB7},  {"bull", 0x2022},  {"copy", 0xA9},
                {"reg", 0xAE},      {"trade", 0x2122}, {"laquo", 0xAB},   {"raquo", 0xBB},
                {"euro", 0x20AC},   {"eacute", 0xE9},  {"times", 0xD7},   {"deg", 0xB0}};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        if (name[0] == refs[i].n[0] && strcmp(name, refs[i].n) == 0)
            return refs[i].cp;
    return 0;
}

/* A numeric reference's code point, as browsers map it. */
static unsigned num_cp(unsigned long v)
{
    if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0xFFFD;
    if (v >= 0x80 && v <= 0x9F)
        return charset_cp1252((unsigned char)v);
    return (unsigned)v;
}

/* The reference r[0..n) ("&...", its end excluded): its code point and the
 * bytes it takes (the ';' included), or 0 if it is none (then '&' is
 * text).  semi_optional: a few names also without ';'. */
static size_t ref_cp(const char *r, size_t n, int semi_optional, unsigned *cp)
{
    char name[DECODE_REF];
    size_t i = 1;
    if (n >= 3 && r[1] == '#') {
        unsigned long v = 0;
        int hex = r[2] == 'x' || r[2] == 'X', digits = 0;
        for (i = hex ? 3 : 2; i < n; i++, digits++) {
            unsigned c = (unsigned char)r[i], dv;
            if (c >= '0' && c <= '9')
                dv = c - '0';
            else if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
                dv = (c | 0x20) - 'a' + 10;
            else
                break;
            if (v < 0x1000000)
                v = v * (hex ? 16 : 10) + dv;
        }
        if (!digits)
            return 0;
        *cp = num_cp(v);
        return i < n && r[i] == ';' ? i + 1 : i;
    }
    while (i < n && i < sizeof(name) && alnum((unsigned char)r[i]))
        i++;
    if (i == 1 || i >= sizeof(name))
        return 0;
    memcpy(name, r + 1, i - 1);
    name[i - 1] = '\0';
    if (i < n && r[i] == ';') {
        const htmlEntityDesc *e = NULL;
        if ((*cp = common_ref(name)))
            ;
        else if ((e = htmlEntityLookup((const xmlChar *)name)))
            *cp = e->value;
        else
            return 0;
        return i + 1;
    }
    if (!semi_optional)
        return 0;
    static const struct {
        const char *n;
        unsigned cp;
    } legacy[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"nbsp", 0xA0}};
    for (size_t k = 0; k < sizeof(legacy) / sizeof(legacy[0]); k++)
        if (strcmp(name, legacy[k].n) == 0) {
            *cp = legacy[k].cp;
            return i;
        }
    return 0;
}

/* Where a reference that starts at s[0] ('&') ends, looking at n bytes:
 * the index past its last byte, or n if the bytes end first. */
static size_t ref_end(const char *s, size_t n)
{
    size_t i = 1;
    if (i < n && s[i] == '#') {
        i++;
        if (i < n && (s[i] == 'x' || s[i] == 'X'))
            i++;
    }
    while (i < n && alnum((unsigned char)s[i]))
        i++;
    return i < n && s[i] == ';' ? i + 1 : i;
}

/* The held reference, now complete (or cut by markup): decoded or text. */
static void ref_done(decoder_t *d)
{
    unsigned cp;
    size_t used = ref_cp(d->ref, d->nref, 1, &cp);
    size_t n = d->nref;
    d->nref = 0;
    d->inref = 0;
    if (used) {
        emit_cp(d, cp);
        run(d, d->ref + used, n - used);
    } else {
        run(d, d->ref, n);
    }
}

void decode_text(decoder_t *d, const char *s, size_t n)
{
    while (n > 0) {
        if (d->inref) { /* a reference held from the last call */
            size_t take = 0;
            while (take < n && d->nref < DECODE_REF) {
                char c = s[take];
                int ok = alnum((unsigned char)c) || (d->nref == 1 && c == '#') ||
                         (d->nref == 2 && d->ref[1] == '#' && (c == 'x' || c == 'X'));
                if (!ok && c != ';')
                    break;
                d->ref[d->nref++] = c;
                take++;
                if (c == ';')
                    break;
            }
            s += take;
            n -= take;
            if (n == 0 && d->nref < DECODE_REF && d->ref[d->nref - 1] != ';')
                return; /* still open */
            ref_done(d);
            continue;
        }
        const char *amp = memchr(s, '&', n);
        size_t k = amp ? (size_t)(amp - s) : n;
        if (k)
            run(d, s, k);
        if (!amp)
            return;
        s += k;
        n -= k;
        size_t e = ref_end(s, n);
        if (e == n && (n < 2 || s[n - 1] != ';') && n < DECODE_REF) {
            memcpy(d->ref, s, n); /* cut by the end of the chunk: held */
            d->nref = (unsigned char)n;
            d->inref = 1;
            return;
        }
        unsigned cp;
        size_t used = ref_cp(s, e, 1, &cp);
        if (used) {
            emit_cp(d, cp);
            s += used;
            n -= used;
        } else {
            run(d, s, 1);
            s++;
            n--;
        }
    }
}

void decode_end(decoder_t *d)
{
    if (d->inref)
        ref_done(d);
    if (d->npart) {
        d->npart = 0;
        emit_cp(d, 0xFFFD);
    }
    flush(d);
}

size_t decode_value(decoder_t *d, const char *s, size_t n, char *out)
{
    size_t o = 0;
    if (!memchr(s, '&', n) && d->kind == DEC_UTF8) {
        int plain = 1;
        for (size_t i = 0; i < n && plain; i++)
            plain = (unsigned char)s[i] < 0x80 && s[i] != 0;
        if (plain) {
            memcpy(out, s, n);
            return n;
        }
    }
    /* the general way: the decoder's own output, collected */
    void (*emit)(void *, const char *, size_t) = d->emit;
    void *ud = d->ud;
    char *save = d->out;
    size_t nsave = d->nout;
    char buf[DECODE_OUT];
    collect_t c = {out, 0};
    flush(d);
    d->out = buf;
    d->nout = 0;
    d->emit = decode_collect;
    d->ud = &c;
    for (size_t i = 0; i < n;) {
        const char *amp = memchr(s + i, '&', n - i);
        size_t k = amp ? (size_t)(amp - s) - i : n - i;
        run(d, s + i, k);
        i += k;
        if (i < n) {
            unsigned cp;
            size_t e = ref_end(s + i, n - i);
            size_t used = ref_cp(s + i, e, 0, &cp);
            /* a name with no ';' followed by '=' or a letter stays text */
            if (used) {
                emit_cp(d, cp);
                i += used;
            } else {
                run(d, s + i, 1);
                i++;
            }
        }
    }
    if (d->npart) {
        d->npart = 0;
        emit_cp(d, 0xFFFD);
    }
    if (d->kind == DEC_ICONV)
        iconv((iconv_t)d->cd, NULL, NULL, NULL, NULL);
    flush(d);
    o = c.n;
    d->out = save;
    d->nout = nsave;
    d->emit = emit;
    d->ud = ud;
    return o;
}

void decode_collect(void *ud, const char *s, size_t n)
{
    collect_t *c = ud;
    memcpy(c->out + c->n, s, n);
    c->n += n;
}
