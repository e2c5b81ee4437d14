/*
 * bound.c -- a byte-level lexer in front of libxml2 that caps every token,
 * so the push parser's pending input stays bounded whatever the page.
 *
 * DESIGN
 * libxml2 (2.9) parses a token only once its end has arrived; until then it
 * keeps every byte.  This filter follows the same tokens as libxml2's HTML
 * parser -- text, tags with quoted attribute values, comments, and the raw
 * text of <script>/<style> (which ends only at "</script"/"</style") -- with
 * one counter per token.  Past a cap, bytes are dropped, but the bytes that
 * end the token are still passed on ('<' for text, '>' for a tag, the
 * closing quote of a value whose opening quote was passed, "-->" for a
 * comment, "</" for raw text), so libxml2 sees well-formed, shorter tokens
 * and the two lexers stay in step.  Dropped bytes are text, comments,
 * scripts, or attribute values too long to be a URL we accept.
 * The lexer works on bytes, so it is valid for ASCII-compatible charsets;
 * UTF-16/32 input (BOM or NUL-interleaved start) passes through unfiltered.
 * NUL bytes become spaces (libxml2 may take a NUL for the end of input).
 * bound_pending() works around a libxml2 2.9 push-parser bug: when a chunk
 * ends inside "</script" (say "</scr"), htmlParseScript takes the partial
 * end tag for script text and the rest of the page is swallowed as script.
 * The caller holds those bytes back until the end tag is complete.
 * State: the bound_t of one page; not shared.
 */
#include "parser_internal.h"

#include <string.h>

enum {
    S_TEXT,      /* character data */
    S_LT,        /* after '<' */
    S_NAME,      /* tag name */
    S_TAG,       /* inside a tag, outside quotes */
    S_QUOTE,     /* inside a quoted attribute value */
    S_BANG,      /* after "<!" */
    S_BANG_DASH, /* after "<!-" */
    S_COMMENT,   /* inside "<!--" ... "-->" */
    S_RAW,       /* raw text of <script>/<style> */
    S_RAW_LT,    /* raw text, after '<' */
    S_RAW_END,   /* raw text, after "</", matching the element name */
};

enum {
    BF_END = 1,     /* the tag is an end tag */
    BF_EQ = 2,      /* after '=' (a quote opens a value) */
    BF_QPASS = 4,   /* the opening quote was passed on */
    BF_SLASH = 8,   /* last tag byte was '/' ("/>") */
    BF_RAWTAG = 16, /* the start tag opens raw text */
};

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

/* End of a tag name: decides whether the tag opens raw text. */
static void name_done(bound_t *b)
{
    b->name[b->nlen] = '\0';
    if (!(b->flags & BF_END) && (strcmp(b->name, "script") == 0 || strcmp(b->name, "style") == 0)) {
        b->flags |= BF_RAWTAG;
        memcpy(b->raw, b->name, sizeof(b->raw));
    }
    b->st = S_TAG;
}

/* One byte of a tag (S_TAG / S_QUOTE).  Returns 1 to pass it on. */
static int tag_byte(bound_t *b, unsigned char c)
{
    if (b->st == S_QUOTE) {
        if ((char)c == b->quote) {
            b->st = S_TAG;
            return (b->flags & BF_QPASS) != 0;
        }
        b->run++;
        b->attr++;
        return (b->flags & BF_QPASS) && b->attr <= b->attr_cap && b->run <= BOUND_TAG_CAP;
    }
    if (c == '>') {
        int raw = (b->flags & BF_RAWTAG) && !(b->flags & BF_SLASH);
        b->st = raw ? S_RAW : S_TEXT;
        b->run = 0;
        return 1;
    }
    b->run++;
    if ((c == '"' || c == '\'') && (b->flags & BF_EQ)) {
        b->st = S_QUOTE;
        b->quote = (char)c;
        b->attr = 0;
        b->flags &= (unsigned char)~(BF_EQ | BF_SLASH | BF_QPASS);
        if (b->run <= BOUND_TAG_CAP)
            b->flags |= BF_QPASS;
        return (b->flags & BF_QPASS) != 0;
    }
    if (c == '=')
        b->flags |= BF_EQ;
    else if (!is_space(c))
        b->flags &= (unsigned char)~BF_EQ;
    if (!is_space(c)) {
        b->flags &= (unsigned char)~BF_SLASH;
        if (c == '/')
            b->flags |= BF_SLASH;
    }
    return b->run <= BOUND_TAG_CAP;
}

/* One byte of a comment.  Returns bytes written to o (0..3). */
static size_t comment_byte(bound_t *b, unsigned char c, char *o)
{
    int over = b->run > BOUND_TEXT_CAP;
    b->run++;
    if (c == '>' && b->dashes >= 2) {
        b->st = S_TEXT;
        b->run = 0;
        if (!over) {
            o[0] = '>';
            return 1;
        }
        memcpy(o, "-->", 3);
        return 3;
    }
    b->dashes = c == '-' ? (unsigned char)(b->dashes < 2 ? b->dashes + 1 : 2) : 0;
    if (b->run > BOUND_TEXT_CAP) {
        b->dropped++;
        return 0;
    }
    o[0] = (char)c;
    return 1;
}

/* One byte of raw text (script/style).  Returns 1 to pass it on. */
static int raw_byte(bound_t *b, unsigned char c)
{
    if (b->st == S_RAW_LT) {
        if (c == '/') {
            b->st = S_RAW_END;
            b->nlen = 0;
            b->run = 0;
            return 1;
        }
        b->st = S_RAW;
    } else if (b->st == S_RAW_END) {
        size_t want = strlen(b->raw);
        if (b->nlen < want && (c | 0x20) == (unsigned char)b->raw[b->nlen]) {
            if (++b->nlen == want) { /* "</script": an end tag, as libxml2 sees it */
                b->st = S_TAG;
                b->flags = BF_END;
            }
            b->run++;
            return 1;
        }
        b->st = S_RAW;
    }
    b->run++;
    if (c == '<') {
        b->st = S_RAW_LT;
        return 1;
    }
    return b->run <= BOUND_TEXT_CAP;
}

/* One byte after '<' in text: starts a tag, a comment, or is plain text.
 * Returns 1 if the byte was consumed here (and passed on). */
static int lt_byte(bound_t *b, unsigned char c)
{
    b->flags = 0;
    b->nlen = 0;
    if (c == '!') {
        b->st = S_BANG;
    } else if (c == '/') {
        b->st = S_NAME;
        b->flags = BF_END;
    } else if (is_alpha(c)) {
        b->st = S_NAME;
        b->name[b->nlen++] = (char)(c | 0x20);
    } else if (c == '?') {
        b->st = S_TAG;
    } else {
        b->st = S_TEXT; /* "< " is text for libxml2 */
        b->run = 0;
        return 0;
    }
    b->run = 2;
    return 1;
}

/* Filters one byte; returns the number of bytes written to o. */
static size_t step(bound_t *b, unsigned char c, char *o)
{
    int pass;
    if (c == 0)
        c = ' ';
again:
    switch (b->st) {
    case S_TEXT:
        if (c == '<') {
            b->st = S_LT;
            pass = 1;
        } else {
            pass = ++b->run <= BOUND_TEXT_CAP;
        }
        break;
    case S_LT:
        if (!lt_byte(b, c))
            goto again;
        pass = 1;
        break;
    case S_NAME:
        if (is_alnum(c) || c == '-' || c == ':') {
            if (b->nlen < sizeof(b->name) - 1)
                b->name[b->nlen++] = (char)(c | 0x20);
            pass = ++b->run <= BOUND_TAG_CAP;
            break;
        }
        name_done(b);
        goto again;
    case S_BANG:
    case S_BANG_DASH:
        if (c == '-') {
            b->st = b->st == S_BANG ? S_BANG_DASH : S_COMMENT;
            b->dashes = 0;
            b->run = 0;
            pass = 1;
            break;
        }
        b->st = S_TAG;
        goto again;
    case S_COMMENT:
        return comment_byte(b, c, o);
    case S_RAW:
    case S_RAW_LT:
    case S_RAW_END:
        pass = raw_byte(b, c);
        break;
    default: /* S_TAG, S_QUOTE */
        pass = tag_byte(b, c);
        break;
    }
    if (!pass) {
        b->dropped++;
        return 0;
    }
    o[0] = (char)c;
    return 1;
}

size_t bound_pending(const bound_t *b)
{
    if (b->passthrough)
        return 0;
    if (b->st == S_RAW_LT)
        return 1;
    if (b->st == S_RAW_END)
        return 2 + (size_t)b->nlen;
    return 0;
}

size_t bound_filter(bound_t *b, const char *in, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t i = 0, n = 0;
    if (b->seen == 0)
        detect_wide(b, s, len);
    b->seen += len;
    if (b->passthrough) {
        memcpy(out, in, len);
        return len;
    }
    while (i < len) {
        if (b->st == S_TEXT) { /* fast path: copy text up to the next '<' or NUL */
            size_t room = b->run < BOUND_TEXT_CAP ? BOUND_TEXT_CAP - b->run : 0, k = 0;
            while (k < room && i + k < len && s[i + k] != '<' && s[i + k] != 0)
                k++;
            memcpy(out + n, s + i, k);
            n += k;
            i += k;
            b->run += k;
            if (i == len)
                break;
        }
        n += step(b, s[i++], out + n);
    }
    return n;
}
