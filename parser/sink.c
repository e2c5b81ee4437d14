/*
 * sink.c -- the text sink's own reader of the page: a tokenizer over the
 * raw bytes that feeds the sink (parser.h: parser_sink_t) without libxml2.
 *
 * DESIGN
 * Parsing all of a page's text through libxml2 tripled the cost of a
 * parse.  With a sink attached, parser_feed runs every chunk through this
 * reader instead, which follows the tokens of the HTML Standard's
 * tokenizer closely enough for text and links:
 *   text         runs up to the next '<' (a memchr), decoded by decode.c
 *                (charset, character references) and handed to tree.c;
 *   tags         start and end tags, their bytes gathered (quotes
 *                followed) up to SINK_TAG_CAP and parsed at the '>' into a
 *                lowercase name and name/value pairs (values decoded; an
 *                attribute cut by the cap, or past SINK_MAX_ATTS, dropped),
 *                then handed to tree.c, which balances them;
 *   comments     "<!-- ... -->" ("<!-->" too), "<!...>" and "<?...>" skipped;
 *   raw text     after script, style and textarea: skipped up to the
 *                matching end tag; after title and xmp: text without markup
 *                up to it (a title that meets a tag or comment ends there:
 *                pages cut while saved leave it open, and the rest of the
 *                page would be its text).  noscript, iframe, noembed and
 *                noframes are read as markup (what a crawler without
 *                scripts sees; libxml2 did the same).
 * Links: with sinkrd_links(), the start tags of a, area, base, link, meta,
 * frame and iframe go with all their attributes to html.c's link logic
 * first (libxml2 is not run when a sink reads the page).
 * Charset: the Content-Type's wins; else a UTF-8 BOM, else the first
 * <meta charset> or <meta http-equiv=content-type content="...charset=">,
 * else the first-bytes sniff of charset.c (UTF-8, or windows-1252).  A
 * page that says UTF-16/32 (header, BOM or NUL-interleaved start) is first
 * converted to UTF-8 by iconv.
 * Memory: the reader (a tree of PARSER_SINK_MAX_DEPTH nodes, the decoder's
 * 4 KiB) plus the tag and attribute buffers, which grow with the longest
 * tag seen up to SINK_TAG_CAP and about 4 * SINK_TAG_CAP.
 * State: one sinkrd_t per page; not shared.
 */
#include "parser_internal.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SINK_TAG_CAP (32u * 1024) /* bytes of one tag kept for its attributes */
#define SINK_MAX_ATTS 32          /* attributes handed over per tag */

enum {
    R_TEXT,
    R_LT,      /* after '<' */
    R_ENDLT,   /* after "</" */
    R_TAG,     /* in a tag, outside quotes */
    R_QUOTE,   /* in a quoted value */
    R_BANG,    /* after "<!" */
    R_BANGD,   /* after "<!-" */
    R_COMMENT, /* in "<!--" ... "-->" */
    R_BOGUS,   /* in "<!...>" or "<?...>" */
    R_RAW,     /* raw text */
    R_RAW_LT,  /* raw text, after '<' */
    R_RAW_END, /* raw text, after "</", matching the element's name */
};

/* Where the charset came from (a source only yields to a higher one). */
enum { CS_NONE, CS_SNIFF, CS_META, CS_BOM, CS_HEADER, CS_WIDE };

struct sinkrd {
    int st;
    int end;    /* the tag is an end tag */
    int eq;     /* after '=' in a tag: a value may start */
    char quote; /* the quote of the value being read */
    unsigned char dashes;
    int raw; /* tree_start()'s raw kind: 1 dropped, 2 text, 3 text of a title */
    char rawname[TREE_NAME + 1];
    size_t nmatch; /* bytes of rawname matched after "</" */
    int cs;        /* CS_*: where the charset came from */
    int wide;      /* 1: UTF-16/32, converted first (pre) */
    void *pre;     /* iconv_t to UTF-8 of a wide page */
    int decided;   /* the first bytes were looked at */
    char head[4];  /* the first bytes, until decided */
    size_t nhead;
    char part[8]; /* a wide page: bytes of a character cut by a chunk */
    size_t npart;
    char *tag; /* the tag's bytes after '<' or "</" */
    size_t ntag, captag, lost;
    uint32_t wmask[32]; /* want: bit (length & 31) of names by first letter & 31 */
    char *abuf;         /* names and decoded values, NUL-terminated */
    size_t capabuf;
    int err;
    uint64_t capped; /* tag bytes past SINK_TAG_CAP */
    void (*link)(void *ud, const char *name, const char *const *atts); /* sinkrd_links */
    void *link_ud;
    decoder_t dec;
    tree_t tree;
};

static void set_charset(sinkrd_t *r, const char *label, int src)
{
    if (src <= r->cs)
        return;
    if (decode_open(&r->dec, label) == 0)
        r->cs = src;
}

sinkrd_t *sinkrd_new(const parser_sink_t *sink, const char *header_charset)
{
    sinkrd_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->dec.out = r->dec.buf;
    r->dec.emit = tree_text;
    r->dec.ud = &r->tree;
    tree_init(&r->tree, sink);
    for (const char *const *w = sink->want; w && *w; w++)
        r->wmask[(unsigned char)(*w)[0] & 31] |= 1u << (strlen(*w) & 31);
    if (header_charset) {
        if (strncasecmp(header_charset, "utf-16", 6) == 0 ||
            strncasecmp(header_charset, "utf-32", 6) == 0) {
            iconv_t cd = iconv_open("UTF-8", header_charset);
            if (cd != (iconv_t)-1) {
                r->pre = cd;
                r->wide = 1;
                r->cs = CS_HEADER;
            }
        } else {
            set_charset(r, header_charset, CS_HEADER);
        }
    }
    return r;
}

void sinkrd_free(sinkrd_t *r)
{
    if (!r)
        return;
    decode_close(&r->dec);
    if (r->pre)
        iconv_close((iconv_t)r->pre);
    free(r->tag);
    free(r->abuf);
    free(r);
}

void sinkrd_sniffed(sinkrd_t *r, int utf8)
{
    set_charset(r, utf8 ? "utf-8" : "windows-1252", CS_SNIFF);
}

/* Appends tag bytes, up to SINK_TAG_CAP (the rest is counted in lost). */
static void tag_put(sinkrd_t *r, const char *s, size_t n)
{
    if (r->ntag + n > SINK_TAG_CAP) {
        size_t keep = r->ntag < SINK_TAG_CAP ? SINK_TAG_CAP - r->ntag : 0;
        r->lost += n - keep;
        n = keep;
    }
    if (r->ntag + n > r->captag) {
        size_t c = r->captag ? r->captag : 256;
        while (c < r->ntag + n)
            c *= 2;
        char *q = realloc(r->tag, c);
        if (!q) {
            r->err = CRAWL_ENOMEM;
            r->lost += n;
            return;
        }
        r->tag = q;
        r->captag = c;
    }
    memcpy(r->tag + r->ntag, s, n);
    r->ntag += n;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* A byte of an element or attribute name: ASCII lowercased; a control
 * or non-ASCII byte (no name a sink looks for has one) as '_', so that
 * names are always UTF-8. */
static char name_byte(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return (char)(c + 32);
    return c <= ' ' || c >= 0x7F ? '_' : (char)c;
}

/* charset=X in a meta content value into buf. */
static int content_charset(const char *v, char *buf, size_t cap)
{
    const char *c = strcasestr(v, "charset");
    size_t n;
    if (!c)
        return 0;
    c += 7;
    while (is_space((unsigned char)*c))
        c++;
    if (*c++ != '=')
        return 0;
    while (is_space((unsigned char)*c) || *c == '"' || *c == '\'')
        c++;
    n = strcspn(c, "\"'; \t\r\n\f");
    if (n == 0 || n >= cap)
        return 0;
    memcpy(buf, c, n);
    buf[n] = '\0';
    return 1;
}

static void on_meta(sinkrd_t *r, const char *const *atts)
{
    const char *cs = NULL, *equiv = NULL, *content = NULL;
    char buf[64];
    for (; atts && atts[0]; atts += 2) {
        if (strcmp(atts[0], "charset") == 0)
            cs = atts[1];
        else if (strcmp(atts[0], "http-equiv") == 0)
            equiv = atts[1];
        else if (strcmp(atts[0], "content") == 0)
            content = atts[1];
    }
    if (!cs && equiv && content && strcasecmp(equiv, "content-type") == 0 &&
        content_charset(content, buf, sizeof(buf)))
        cs = buf;
    if (cs && r->cs < CS_META)
        set_charset(r, cs, CS_META);
}

/* Room in abuf for n more bytes; 0 or -1. */
static int abuf_room(sinkrd_t *r, size_t need)
{
    if (need <= r->capabuf)
        return 0;
    size_t c = r->capabuf ? r->capabuf : 1024;
    while (c < need)
        c *= 2;
    char *q = realloc(r->abuf, c);
    if (!q) {
        r->err = CRAWL_ENOMEM;
        return -1;
    }
    r->abuf = q;
    r->capabuf = c;
    return 0;
}

/* 1 if the sink wants attribute n[0..len) (any case); all: every one is
 * (the tags of meta and of the link elements). */
static int wanted(const sinkrd_t *r, const char *n, size_t len, int all)
{
    const char *const *w = r->tree.sink.want;
    if (!w || all)
        return 1;
    if (!(r->wmask[(unsigned char)n[0] & 31] & (1u << (len & 31))))
        return 0;
    for (; *w; w++)
        if (strlen(*w) == len && strncasecmp(*w, n, len) == 0)
            return 1;
    return 0;
}

/* Parses the attributes of tag[i..ntag) into atts (offsets into abuf
 * first, pointers at the end); returns the count of pairs; *slash: the
 * tag ends in a lone '/'. */
static int parse_atts(sinkrd_t *r, size_t i, size_t *off, int *slash, int all)
{
    const char *t = r->tag;
    size_t n = r->ntag, used = 0;
    int k = 0;
    *slash = 0;
    if (abuf_room(r, 4 * n + 4 * SINK_MAX_ATTS + 16) < 0)
        return 0;
    while (i < n) {
        size_t a, an, v = 0, vn = 0;
        int has_v = 0, cut = 0;
        while (i < n && (is_space((unsigned char)t[i]) || t[i] == '/'))
            *slash = t[i++] == '/';
        if (i >= n)
            break;
        *slash = 0;
        a = i++; /* a name may start with '=' */
        while (i < n && !is_space((unsigned char)t[i]) && t[i] != '/' && t[i] != '=')
            i++;
        an = i - a;
        while (i < n && is_space((unsigned char)t[i]))
            i++;
        if (i < n && t[i] == '=') {
            i++;
            while (i < n && is_space((unsigned char)t[i]))
                i++;
            has_v = 1;
            if (i < n && (t[i] == '"' || t[i] == '\'')) {
                const char *q = memchr(t + i + 1, t[i], n - i - 1);
                v = i + 1;
                vn = q ? (size_t)(q - t) - v : n - v;
                cut = !q;
                i = q ? (size_t)(q - t) + 1 : n;
            } else {
                v = i;
                while (i < n && !is_space((unsigned char)t[i]))
                    i++;
                vn = i - v;
            }
        }
        /* a value that reaches the end of a tag cut by the cap is cut too:
         * dropped, never given shortened (a cut URL would be another URL) */
        if (k == SINK_MAX_ATTS || (r->lost && has_v && (cut || v + vn == n)) || an > 64 ||
            !wanted(r, t + a, an, all))
            continue;
        off[2 * k] = used;
        for (size_t j = 0; j < an; j++) {
            unsigned char c = (unsigned char)t[a + j];
            r->abuf[used++] = name_byte(c);
        }
        r->abuf[used++] = '\0';
        off[2 * k + 1] = has_v ? used : (size_t)-1;
        if (has_v) {
            used += decode_value(&r->dec, t + v, vn, r->abuf + used);
            r->abuf[used++] = '\0';
        }
        k++;
    }
    return k;
}

/* The pairs of atts (k of them) the sink wants, moved to the front;
 * returns their count. */
static int keep_wanted(const sinkrd_t *r, const char **atts, int k)
{
    int n = 0;
    for (int j = 0; j < k; j++)
        if (wanted(r, atts[2 * j], strlen(atts[2 * j]), 0)) {
            atts[2 * n] = atts[2 * j];
            atts[2 * n + 1] = atts[2 * j + 1];
            n++;
        }
    atts[2 * n] = NULL;
    return n;
}

/* The elements whose start tags go to the link callback (html.c's). */
static int link_element(const char *n)
{
    switch (n[0]) {
    case 'a':
        return strcmp(n, "a") == 0 || strcmp(n, "area") == 0;
    case 'b':
        return strcmp(n, "base") == 0;
    case 'f':
        return strcmp(n, "frame") == 0;
    case 'i':
        return strcmp(n, "iframe") == 0;
    case 'l':
        return strcmp(n, "link") == 0;
    case 'm':
        return strcmp(n, "meta") == 0;
    default:
        return 0;
    }
}

uint64_t sinkrd_capped(const sinkrd_t *r)
{
    return r->capped;
}

void sinkrd_links(sinkrd_t *r, void (*fn)(void *, const char *, const char *const *), void *ud)
{
    r->link = fn;
    r->link_ud = ud;
}

/* The tag in tag[] is complete: to the link callback and the tree. */
static void tag_done(sinkrd_t *r)
{
    char name[TREE_NAME + 1];
    size_t i = 0, off[2 * SINK_MAX_ATTS];
    const char *atts[2 * SINK_MAX_ATTS + 1];
    int slash = 0, k = 0;
    while (i < r->ntag && !is_space((unsigned char)r->tag[i]) && r->tag[i] != '/') {
        unsigned char c = (unsigned char)r->tag[i];
        if (i == TREE_NAME)
            return; /* a longer name: dropped, start and end alike */
        name[i++] = name_byte(c);
    }
    name[i] = '\0';
    if (i == 0)
        return;
    decode_end(&r->dec); /* the text before the tag goes out first */
    if (r->end) {
        tree_end(&r->tree, name);
        return;
    }
    r->capped += r->lost;
    int link = r->link && link_element(name);
    k = parse_atts(r, i, off, &slash, link || (name[0] == 'm' && strcmp(name, "meta") == 0));
    for (int j = 0; j < k; j++) {
        atts[2 * j] = r->abuf + off[2 * j];
        atts[2 * j + 1] = off[2 * j + 1] == (size_t)-1 ? NULL : r->abuf + off[2 * j + 1];
    }
    atts[2 * k] = NULL;
    if (name[0] == 'm' && strcmp(name, "meta") == 0)
        on_meta(r, atts);
    if (link) {
        r->link(r->link_ud, name, k ? atts : NULL);
        k = keep_wanted(r, atts, k);
    }
    r->raw = tree_start(&r->tree, name, k ? atts : NULL, slash);
    if (r->raw == 2 && strcmp(name, "title") == 0)
        r->raw = 3;
    if (!slash && r->raw) {
        r->st = R_RAW;
        memcpy(r->rawname, name, i + 1);
    }
}

/* '<' then c in text. */
static void lt_byte(sinkrd_t *r, unsigned char c)
{
    r->ntag = r->lost = 0;
    r->eq = 0;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
        r->st = R_TAG;
        r->end = 0;
        tag_put(r, (const char *)&c, 1);
    } else if (c == '/') {
        r->st = R_ENDLT;
    } else if (c == '!') {
        r->st = R_BANG;
    } else if (c == '?') {
        r->st = R_BOGUS;
    } else {
        r->st = R_TEXT; /* "a < b" */
        decode_text(&r->dec, "<", 1);
        if (c == '<')
            r->st = R_LT;
        else
            decode_text(&r->dec, (const char *)&c, 1);
    }
}

/* Bytes of a tag outside quotes, from s: gathered up to the '>' that ends
 * the tag or the quote that opens a value (then R_QUOTE), whose address
 * is returned; end if neither comes. */
static const char *tag_run(sinkrd_t *r, const char *s, const char *end)
{
    const char *p = s;
    for (; p < end; p++) {
        unsigned char b = (unsigned char)*p;
        if (r->eq) {
            if (is_space(b))
                continue;
            r->eq = 0;
            if (b == '"' || b == '\'') {
                r->quote = (char)b;
                r->st = R_QUOTE;
                tag_put(r, s, (size_t)(p - s) + 1);
                return p;
            }
        }
        if (b == '>')
            break;
        if (b == '=')
            r->eq = 1;
    }
    tag_put(r, s, (size_t)(p - s));
    return p;
}

/* A title that holds markup was not closed (pages saved cut): it ends
 * there and what follows is read as markup again, from state st (libxml2
 * did the same; a browser would take the rest of the page as the title).
 * Returns 0: the byte is read again. */
static size_t title_ends(sinkrd_t *r, int st)
{
    decode_end(&r->dec);
    tree_end(&r->tree, "title");
    r->raw = 0;
    r->st = st;
    r->ntag = r->lost = 0;
    r->eq = 0;
    return 0;
}

/* Raw text: bytes up to a '<' pass as text (raw 2 and 3) or are dropped
 * (raw 1); an end tag of the element ends it.  Raw 3 (title): a start
 * tag, comment or other end tag in it ends it (title_ends). */
static size_t raw_bytes(sinkrd_t *r, const char *s, size_t n)
{
    size_t i = 0;
    if (r->st == R_RAW) {
        const char *lt = memchr(s, '<', n);
        size_t k = lt ? (size_t)(lt - s) : n;
        if (r->raw >= 2 && k)
            decode_text(&r->dec, s, k);
        if (!lt)
            return n;
        r->st = R_RAW_LT;
        return k + 1;
    }
    unsigned char c = (unsigned char)s[i];
    if (r->st == R_RAW_LT) {
        if (c == '/') {
            r->st = R_RAW_END;
            r->nmatch = 0;
            return 1;
        }
        if (r->raw == 3 && (((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '!'))
            return title_ends(r, R_LT);
        if (r->raw >= 2)
            decode_text(&r->dec, "<", 1);
        r->st = R_RAW;
        return 0;
    }
    /* R_RAW_END */
    size_t want = strlen(r->rawname);
    if (r->nmatch < want && (c | 0x20) == (unsigned char)r->rawname[r->nmatch]) {
        r->nmatch++;
        return 1;
    }
    if (r->nmatch == want && (is_space(c) || c == '/' || c == '>')) {
        r->st = R_TAG;
        r->end = 1;
        r->eq = 0;
        r->ntag = r->lost = 0;
        tag_put(r, r->rawname, want);
        return 0;
    }
    if (r->raw == 3 && (r->nmatch || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))) {
        /* another end tag in a title: markup; the matched bytes start its name */
        title_ends(r, R_TAG);
        r->end = 1;
        tag_put(r, r->rawname, r->nmatch);
        return 0;
    }
    if (r->raw >= 2) { /* not the end tag: what was held is text */
        decode_text(&r->dec, "</", 2);
        decode_text(&r->dec, r->rawname, r->nmatch);
    }
    r->st = R_RAW;
    return 0;
}

/* In a comment (or "<!...>", "<?...>"): skips to past its '>', or
 * returns NULL if s[0..end) holds no end of it. */
static const char *skip_comment(sinkrd_t *r, const char *s, const char *end)
{
    const char *k = memchr(s, '>', (size_t)(end - s));
    if (r->st == R_COMMENT) {
        r->dashes = bound_tail_dashes((const unsigned char *)s,
                                      (const unsigned char *)(k ? k : end), r->dashes);
        if (!k)
            return NULL;
        if (r->dashes >= 2)
            r->st = R_TEXT;
        r->dashes = 0;
        return k + 1;
    }
    if (!k)
        return NULL;
    r->st = R_TEXT;
    return k + 1;
}

/* One byte after "</", "<!" or "<!-". */
static void markup_byte(sinkrd_t *r, unsigned char c)
{
    if (r->st == R_ENDLT) {
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
            r->st = R_TAG;
            r->end = 1;
            tag_put(r, (const char *)&c, 1);
        } else {
            r->st = c == '>' ? R_TEXT : R_BOGUS; /* "</>" is nothing */
        }
    } else if (r->st == R_BANG) {
        r->st = c == '-' ? R_BANGD : c == '>' ? R_TEXT : R_BOGUS;
    } else { /* R_BANGD */
        r->st = c == '-' ? R_COMMENT : c == '>' ? R_TEXT : R_BOGUS;
        r->dashes = 2; /* so that "<!-->" and "<!--->" end at once */
    }
}

/* Reads s[0..n) (ASCII-compatible bytes). */
static void read_bytes(sinkrd_t *r, const char *s, size_t n)
{
    const char *end = s + n, *k;
    while (s < end) {
        unsigned char c = (unsigned char)*s;
        switch (r->st) {
        case R_TEXT:
            k = memchr(s, '<', (size_t)(end - s));
            if (k != s)
                decode_text(&r->dec, s, (size_t)((k ? k : end) - s));
            if (!k)
                return;
            decode_end(&r->dec);
            r->st = R_LT;
            s = k + 1;
            continue;
        case R_LT:
            lt_byte(r, c);
            break;
        case R_ENDLT:
        case R_BANG:
        case R_BANGD:
            markup_byte(r, c);
            break;
        case R_TAG:
            k = tag_run(r, s, end);
            if (k == end)
                return;
            s = k + 1;
            if (r->st == R_TAG) { /* the '>' */
                r->st = R_TEXT;
                tag_done(r);
            }
            continue;
        case R_QUOTE:
            k = memchr(s, r->quote, (size_t)(end - s));
            tag_put(r, s, (size_t)((k ? k + 1 : end) - s));
            if (!k)
                return;
            r->st = R_TAG;
            s = k + 1;
            continue;
        case R_COMMENT:
        case R_BOGUS:
            if (!(s = skip_comment(r, s, end)))
                return;
            continue;
        default: /* R_RAW, R_RAW_LT, R_RAW_END */
            s += raw_bytes(r, s, (size_t)(end - s));
            continue;
        }
        s++;
    }
}

/* A wide page: through iconv to UTF-8 first; a character cut by the end
 * of the chunk waits in part[] for the next. */
static void read_wide(sinkrd_t *r, const char *s, size_t n)
{
    char buf[4096];
    while (n > 0) {
        char *in, *o = buf;
        size_t il, ol = sizeof(buf), take = 0;
        if (r->npart) { /* the held bytes, with what completes them */
            take = n < sizeof(r->part) - r->npart ? n : sizeof(r->part) - r->npart;
            memcpy(r->part + r->npart, s, take);
            in = r->part;
            il = r->npart + take;
        } else {
            in = (char *)s;
            il = n;
        }
        char *start = in;
        size_t rc = iconv((iconv_t)r->pre, &in, &il, &o, &ol);
        read_bytes(r, buf, sizeof(buf) - ol);
        size_t used = (size_t)(in - start);
        if (r->npart) { /* of the held buffer: what of s was used */
            size_t from_s = used > r->npart ? used - r->npart : 0;
            if (used < r->npart) { /* still incomplete */
                memmove(r->part, r->part + used, r->npart + take - used);
                r->npart = r->npart + take - used;
                s += take;
                n -= take;
                if (rc == (size_t)-1 && errno == EILSEQ) {
                    memmove(r->part, r->part + 1, --r->npart);
                }
                continue;
            }
            r->npart = 0;
            s += from_s;
            n -= from_s;
            continue;
        }
        s = in;
        n = il;
        if (rc != (size_t)-1)
            break;
        if (errno == EILSEQ) {
            s++;
            n--;
        } else if (errno == EINVAL) { /* cut by the end of the chunk: held */
            size_t k = n < sizeof(r->part) ? n : sizeof(r->part);
            memcpy(r->part, s, k);
            r->npart = k;
            break;
        }
    }
}

/* The first bytes (up to 4, held in head[]): a byte order mark, or a wide
 * page (UTF-16 by its mark or by NUL bytes between ASCII ones).  Returns
 * the bytes of a mark to skip. */
static size_t first_bytes(sinkrd_t *r, const unsigned char *s, size_t n)
{
    const char *wide = NULL;
    size_t skip = 0;
    if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) {
        set_charset(r, "utf-8", CS_BOM);
        skip = 3;
    } else if (n >= 2 && ((s[0] == 0xFF && s[1] == 0xFE) || (s[0] == 0xFE && s[1] == 0xFF))) {
        wide = s[0] == 0xFF ? "UTF-16LE" : "UTF-16BE";
        skip = 2;
    } else if (n >= 2 && s[0] != 0 && s[1] == 0) {
        wide = "UTF-16LE";
    } else if (n >= 2 && s[0] == 0 && s[1] != 0) {
        wide = "UTF-16BE";
    }
    if (wide && (!r->wide || skip == 2)) { /* a mark says which UTF-16 */
        if (r->pre)
            iconv_close((iconv_t)r->pre);
        r->pre = iconv_open("UTF-8", wide);
        r->wide = r->pre != (void *)-1;
        if (!r->wide)
            r->pre = NULL;
    }
    if (r->wide) { /* what comes out of iconv is UTF-8, whatever else was said */
        decode_open(&r->dec, "utf-8");
        r->cs = CS_WIDE;
    }
    return r->wide || skip == 3 ? skip : 0;
}

static void read_any(sinkrd_t *r, const char *s, size_t n)
{
    if (r->wide)
        read_wide(r, s, n);
    else
        read_bytes(r, s, n);
}

/* The first bytes are all here (or the page ended): decided, then read. */
static void head_done(sinkrd_t *r)
{
    size_t skip = first_bytes(r, (const unsigned char *)r->head, r->nhead);
    r->decided = 1;
    read_any(r, r->head + skip, r->nhead - skip);
}

int sinkrd_feed(sinkrd_t *r, const char *s, size_t n)
{
    if (!r->decided) {
        size_t take = n < sizeof(r->head) - r->nhead ? n : sizeof(r->head) - r->nhead;
        memcpy(r->head + r->nhead, s, take);
        r->nhead += take;
        s += take;
        n -= take;
        if (r->nhead < sizeof(r->head))
            return r->err;
        head_done(r);
    }
    read_any(r, s, n);
    return r->err;
}

void sinkrd_finish(sinkrd_t *r)
{
    if (!r->decided)
        head_done(r);
    if (r->st == R_RAW_LT || r->st == R_RAW_END) {
        if (r->raw >= 2) {
            decode_text(&r->dec, r->st == R_RAW_LT ? "<" : "</", r->st == R_RAW_LT ? 1 : 2);
            if (r->st == R_RAW_END)
                decode_text(&r->dec, r->rawname, r->nmatch);
        }
    }
    decode_end(&r->dec);
    tree_finish(&r->tree);
}
