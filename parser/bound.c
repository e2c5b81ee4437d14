/*
 * bound.c -- a byte-level lexer in front of libxml2: it passes on markup
 * only, and caps every tag, so libxml2's pending input stays bounded and it
 * parses only what can hold a link.
 *
 * DESIGN
 * libxml2 (2.9) parses a token only once its end has arrived, keeping every
 * byte until then (a 50 MB attribute costs 50 MB), and most of its time goes
 * into text that can never hold a link.  This filter follows the tokens of
 * libxml2's HTML parser -- text, tags with quoted attribute values,
 * comments, and the raw text of <script>/<style>, which ends only at
 * "</script" / "</style" -- and passes on:
 *   - the tags that can hold a link or change how links are read (a, area,
 *     base, link, meta, frame, iframe) and script/style, start and end, with
 *     attributes, up to BOUND_TAG_CAP bytes per tag plus attr_cap bytes per
 *     attribute value (see tag_byte); past a cap, bytes are dropped but the
 *     '>' and the closing quote still pass, so libxml2 sees a shorter
 *     well-formed tag.  Other elements (div, p, li, span, ...) are dropped
 *     whole: a tag's name is held back until it is complete, then the tag is
 *     passed or skipped to its '>' (quotes followed, as libxml2 would);
 *   - comments as "<!---->", raw text elements as "<script ...></script>",
 *     DOCTYPE and processing instructions as tags;
 * and drops character data.  A '<' is passed only once the next byte shows
 * that it opens markup, and a raw-text end tag is emitted whole once fully
 * seen -- which also avoids a libxml2 2.9 push-parser bug: a chunk ending
 * inside "</script" (say "</scr") makes htmlParseScript take the rest of the
 * page for script text.
 * The lexer works on bytes, so it is valid for ASCII-compatible charsets;
 * UTF-16/32 input (BOM or NUL-interleaved start) passes through unfiltered.
 * NUL bytes in tags become spaces (libxml2 may take a NUL for end of input).
 * Output of one call: at most len + BOUND_SLACK bytes.
 * State: the bound_t of one page; not shared.
 */
#include "parser_internal.h"

#include <string.h>

enum {
    S_TEXT,      /* character data (dropped) */
    S_LT,        /* after '<' (held back) */
    S_NAME,      /* tag name */
    S_TAG,       /* inside a tag, outside quotes */
    S_QUOTE,     /* inside a quoted attribute value */
    S_BANG,      /* after "<!" */
    S_BANG_DASH, /* after "<!-" */
    S_COMMENT,   /* inside "<!--" ... "-->" (dropped) */
    S_RAW,       /* raw text of <script>/<style> (dropped) */
    S_RAW_LT,    /* raw text, after '<' */
    S_RAW_END,   /* raw text, after "</", matching the element name */
};

enum {
    BF_END = 1,     /* the tag is an end tag */
    BF_EQ = 2,      /* after '=' (a value follows) */
    BF_VPASS = 4,   /* the current value started within the tag cap */
    BF_SLASH = 8,   /* last tag byte was '/' ("/>") */
    BF_RAWTAG = 16, /* the start tag opens raw text */
    BF_UNQ = 32,    /* inside an unquoted attribute value */
    BF_DROP = 64,   /* a tag of an element we do not need: nothing passes */
    BF_LONG = 128,  /* the tag name was longer than name[] holds */
};

/* The elements whose tags pass (with script/style); the rest are dropped. */
static int keep_name(const char *n)
{
    static const char *const keep[] = {"a",     "area",   "base",   "link",  "meta",
                                       "frame", "iframe", "script", "style", NULL};
    for (int i = 0; keep[i]; i++)
        if (strcmp(n, keep[i]) == 0)
            return 1;
    return 0;
}

void bound_init(bound_t *b, size_t attr_cap)
{
    memset(b, 0, sizeof(*b));
    b->st = S_TEXT;
    b->attr_cap = attr_cap < BOUND_ATTR_MIN_CAP ? BOUND_ATTR_MIN_CAP : attr_cap;
}

static int is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* Detects UTF-16/32 from the first bytes of the body. */
static void detect_wide(bound_t *b, const unsigned char *in, size_t len)
{
    if (len >= 2 && ((in[0] == 0xFF && in[1] == 0xFE) || (in[0] == 0xFE && in[1] == 0xFF)))
        b->passthrough = 1;
    if (len >= 2 && ((in[0] == 0 && in[1] != 0) || (in[0] != 0 && in[1] == 0)))
        b->passthrough = 1;
}

/* End of a tag name: decides whether the tag opens raw text, and whether it
 * passes -- then its held-back start ("<", "/", the name) is written to o.
 * Returns bytes written. */
static size_t name_done(bound_t *b, char *o)
{
    size_t n = 0;
    b->name[b->nlen] = '\0';
    b->st = S_TAG;
    if (!(b->flags & BF_END) && (strcmp(b->name, "script") == 0 || strcmp(b->name, "style") == 0)) {
        b->flags |= BF_RAWTAG;
        memcpy(b->raw, b->name, sizeof(b->raw));
    }
    if ((b->flags & BF_LONG) || !keep_name(b->name)) {
        b->flags |= BF_DROP;
        return 0;
    }
    o[n++] = '<';
    if (b->flags & BF_END)
        o[n++] = '/';
    memcpy(o + n, b->name, b->nlen);
    return n + b->nlen;
}

/* One byte of a tag (S_TAG / S_QUOTE).  Returns 1 to pass it on.
 * A value (quoted or not) that starts within BOUND_TAG_CAP is passed up to
 * attr_cap bytes, one that starts past it is dropped whole: a value is thus
 * never cut short of attr_cap, which is longer than any URL we accept, so a
 * cut URL is always refused as too long, never reported shortened. */
static int tag_byte(bound_t *b, unsigned char c)
{
    if (b->st == S_QUOTE) {
        if ((char)c == b->quote) {
            b->st = S_TAG;
            return (b->flags & BF_VPASS) != 0;
        }
        b->run++;
        return (b->flags & BF_VPASS) && ++b->attr <= b->attr_cap;
    }
    if (c == '>') {
        int raw = (b->flags & BF_RAWTAG) && !(b->flags & BF_SLASH);
        b->st = raw ? S_RAW : S_TEXT;
        return 1;
    }
    b->run++;
    if (!is_space(c)) {
        b->flags &= (unsigned char)~BF_SLASH;
        if (c == '/')
            b->flags |= BF_SLASH;
    }
    if (b->flags & BF_UNQ) { /* inside an unquoted value */
        if (!is_space(c))
            return (b->flags & BF_VPASS) && ++b->attr <= b->attr_cap;
        b->flags &= (unsigned char)~(BF_UNQ | BF_VPASS);
    } else if ((b->flags & BF_EQ) && !is_space(c) && c != '=') { /* a value starts */
        b->flags &= (unsigned char)~(BF_EQ | BF_VPASS);
        b->attr = 0;
        if (b->run <= BOUND_TAG_CAP)
            b->flags |= BF_VPASS;
        if (c == '"' || c == '\'') {
            b->st = S_QUOTE;
            b->quote = (char)c;
        } else {
            b->flags |= BF_UNQ;
            b->attr = 1;
        }
        return (b->flags & BF_VPASS) != 0;
    } else if (c == '=') {
        b->flags |= BF_EQ;
    }
    return b->run <= BOUND_TAG_CAP;
}

/* The byte after a held-back '<' in text.  Returns bytes written. */
static size_t lt_byte(bound_t *b, unsigned char c, char *o)
{
    b->flags = 0;
    b->nlen = 0;
    b->run = 2;
    if (c == '!') {
        b->st = S_BANG;
    } else if (c == '/') {
        b->st = S_NAME; /* held back until the name is complete */
        b->flags = BF_END;
        return 0;
    } else if (is_alpha(c)) {
        b->st = S_NAME;
        b->name[b->nlen++] = (char)(c | 0x20);
        return 0;
    } else if (c == '?') {
        b->st = S_TAG;
    } else {
        b->st = c == '<' ? S_LT : S_TEXT; /* "a < b" is text */
        return 0;
    }
    o[0] = '<';
    o[1] = (char)c;
    return 2;
}

/* One byte of a comment: only its end is passed on, as "-->". */
static size_t comment_byte(bound_t *b, unsigned char c, char *o)
{
    if (c == '>' && b->dashes >= 2) {
        b->st = S_TEXT;
        memcpy(o, "-->", 3);
        return 3;
    }
    b->dashes = c == '-' ? (unsigned char)(b->dashes < 2 ? b->dashes + 1 : 2) : 0;
    return 0;
}

/* One byte of raw text: only a complete "</script" is passed on. */
static size_t raw_byte(bound_t *b, unsigned char c, char *o)
{
    if (b->st == S_RAW_END) {
        size_t want = strlen(b->raw);
        if ((c | 0x20) == (unsigned char)b->raw[b->nlen]) {
            if (++b->nlen < want)
                return 0;
            /* "</script" (any case): an end tag, as libxml2 sees it */
            o[0] = '<';
            o[1] = '/';
            memcpy(o + 2, b->raw, want);
            b->st = S_TAG;
            b->flags = BF_END;
            b->run = 2 + want;
            return 2 + want;
        }
        b->st = S_RAW;
    } else if (b->st == S_RAW_LT) {
        if (c == '/') {
            b->st = S_RAW_END;
            b->nlen = 0;
            return 0;
        }
        b->st = S_RAW;
    }
    if (c == '<')
        b->st = S_RAW_LT;
    return 0;
}

/* Filters one byte; returns the number of bytes written to o. */
static size_t step(bound_t *b, unsigned char c, char *o)
{
    int pass;
again:
    switch (b->st) {
    case S_TEXT:
        if (c == '<')
            b->st = S_LT;
        return 0;
    case S_LT:
        return lt_byte(b, c, o);
    case S_NAME:
        if (is_alnum(c) || c == '-' || c == ':') {
            if (b->nlen < sizeof(b->name) - 1)
                b->name[b->nlen++] = (char)(c | 0x20);
            else
                b->flags |= BF_LONG;
            ++b->run;
            return 0; /* held back: name_done writes it */
        } else {
            size_t w = name_done(b, o);
            return w + step(b, c, o + w);
        }
    case S_BANG:
    case S_BANG_DASH:
        if (c == '-') {
            b->st = b->st == S_BANG ? S_BANG_DASH : S_COMMENT;
            b->dashes = 0;
            o[0] = '-';
            return 1;
        }
        b->st = S_TAG;
        goto again;
    case S_COMMENT:
        return comment_byte(b, c, o);
    case S_RAW:
    case S_RAW_LT:
    case S_RAW_END:
        return raw_byte(b, c, o);
    default: /* S_TAG, S_QUOTE */
        pass = tag_byte(b, c);
        if (b->flags & BF_DROP)
            return 0; /* a dropped element, not a cap */
        break;
    }
    if (!pass) {
        b->dropped++;
        return 0;
    }
    o[0] = c == 0 ? ' ' : (char)c;
    return 1;
}

/* Dashes ending s[0..k) ('-' count up to 2), given prev before s. */
unsigned char bound_tail_dashes(const unsigned char *s, const unsigned char *k, unsigned char prev)
{
    if (k == s)
        return prev;
    if (k[-1] != '-')
        return 0;
    if (k - s == 1)
        return prev >= 1 ? 2 : 1;
    return k[-2] == '-' ? 2 : 1;
}

/* Bulk form of tag_byte for the bytes s[0..len) of a quoted value (no quote
 * and no NUL among them): what passes is copied at once.  Returns bytes
 * written. */
static size_t quote_run(bound_t *b, const unsigned char *s, size_t len, char *o)
{
    size_t pass = 0;
    b->run += len;
    if (b->flags & BF_VPASS) {
        size_t room = b->attr < b->attr_cap ? b->attr_cap - b->attr : 0;
        pass = len < room ? len : room;
        b->attr += len;
    }
    if (b->flags & BF_DROP)
        return 0; /* a dropped element, not a cap */
    memcpy(o, s, pass);
    b->dropped += len - pass;
    return pass;
}

size_t bound_filter(bound_t *b, const char *in, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)in, *end = s + len, *k;
    size_t n = 0;
    if (b->seen == 0)
        detect_wide(b, s, len);
    b->seen += len;
    if (b->passthrough) {
        memcpy(out, in, len);
        return len;
    }
    while (s < end) {
        /* fast paths: skip dropped bytes up to the next one that matters */
        if (b->st == S_TEXT || b->st == S_RAW) {
            if (!(k = memchr(s, '<', (size_t)(end - s))))
                break;
            s = k;
        } else if (b->st == S_COMMENT) {
            k = memchr(s, '>', (size_t)(end - s));
            b->dashes = bound_tail_dashes(s, k ? k : end, b->dashes);
            if (!k)
                break;
            s = k;
        } else if (b->st == S_QUOTE && !b->slow) {
            k = memchr(s, (unsigned char)b->quote, (size_t)(end - s));
            size_t run = (size_t)((k ? k : end) - s);
            if (run > 1 && !memchr(s, 0, run)) {
                n += quote_run(b, s, run, out + n);
                s += run;
                if (!k)
                    break;
            }
        }
        n += step(b, *s++, out + n);
    }
    return n;
}
