/*
 * parser_internal.h -- shared between the files of parser/, not part of the
 * public contract.  The html parser parses the page's base URL once
 * (url_base_new) and resolves every link against that handle (url_resolve),
 * instead of re-parsing the base string for each link.  The normalizer is
 * url.c (the WHATWG URL Standard's parser for http/https, resolution and
 * serialization in one pass) and url_host.c (its host parser); url_origin.c
 * reads host and origin back.
 */
#ifndef PARSER_INTERNAL_H
#define PARSER_INTERNAL_H

#include "parser.h"

#include <stddef.h>
#include <stdint.h>

/* A base URL, normalized once per page, kept as a string with the offsets
 * of its parts (the Standard's relative states copy a prefix of it). */
typedef struct url_base url_base_t;

/* Cleans and normalizes an absolute http/https URL (len bytes) into a new
 * base (caller frees with url_base_free).  Returns 0 or a CRAWL_E* code. */
int url_base_new(const char *base, size_t len, size_t max_len, url_base_t **out);
void url_base_free(url_base_t *b);
/* The normalized base URL (valid until url_base_free). */
const char *url_base_str(const url_base_t *b);

/* Resolves ref (len bytes, need not be NUL-terminated) against base (may be
 * NULL) by the Standard's basic URL parser and writes the serialization
 * (parser.h: parser_url_normalize).  *out: malloc'd, caller frees with
 * free(); *out_len its length (out_len may be NULL).  Returns 0 or a
 * CRAWL_E* code (*out NULL).  Thread-safe (base is only read). */
int url_resolve(const url_base_t *base, const char *ref, size_t len, size_t max_len, char **out,
                size_t *out_len);

/* origin and host through the normalizer only, never by the scanning fast
 * path of parser_url_origin()/parser_url_host() (url_origin.c): what tests
 * and fuzz_url check the fast path against.  Same contract. */
int url_origin_full(const char *url, char *buf, size_t buflen);
int url_host_full(const char *url, char *buf, size_t buflen);

/* ---- url_host.c: the Standard's host parser (special schemes) -----------
 * Parses the host h[0..n) (as it stands in the URL: percent-escapes, IDN,
 * "[v6]", IPv4 number forms) and writes its serialization into o (room for
 * cap bytes, no NUL).  Returns its length, CRAWL_EBADURL (not a host, or a
 * character parser.h's restriction refuses), CRAWL_ETOOLONG (cap) or
 * CRAWL_ENOMEM. */
int url_host_parse(const char *h, size_t n, char *o, size_t cap);

/* 1 if the domain h[0..n) "ends in a number" (the Standard's check: its
 * last label, ignoring one empty one after a final dot, is decimal or a
 * 0x-hex number): such a host is an IPv4 address or nothing. */
int url_ends_in_number(const char *h, size_t n);

/* ASCII character classes of RFC 3986 (no locale). */
static inline int url_is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline int url_is_unreserved(unsigned char c)
{
    return url_is_alpha(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

static inline unsigned char url_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* ---- charset.c: registers a WHATWG windows-1252 decoder with libxml2
 * (iconv's stops the parse at the five undefined bytes).  Once per process;
 * thread-safe. */
void charset_init(void);
/* The default when Content-Type names no charset, decided on the raw bytes
 * of the page as they come (any split): zero-initialize, then call with
 * each chunk before libxml2 gets it until it returns 0 or 1.  1: the first
 * non-ASCII sequence is valid UTF-8, so the page is read as UTF-8 (as
 * browsers default for such bytes); 0: it is not, libxml2's own detection
 * stays (BOM, <meta charset>, latin-1); -1: only ASCII so far (both
 * readings agree).  A later <meta charset> still switches; invalid UTF-8
 * after a valid sequence falls back to latin-1 for the rest (libxml2).
 * Pure, thread-safe (the state is the caller's). */
typedef struct charset_sniff {
    unsigned char need;   /* continuation bytes still expected */
    unsigned char lo, hi; /* range of the next continuation byte */
} charset_sniff_t;
int charset_sniff(charset_sniff_t *s, const char *data, size_t len);
/* The length of the UTF-8 sequence lead byte c starts (0: no lead byte)
 * and the range of its second byte (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
int charset_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi);
/* The code point of byte c in windows-1252 as the WHATWG reads it. */
unsigned charset_cp1252(unsigned char c);

/* ---- bound.c: the markup-only, capped feed of libxml2 --------------------
 * See bound.c: character data, comments and script/style text are dropped,
 * tags pass with at most BOUND_TAG_CAP bytes each and quoted attribute
 * values at most attr_cap bytes, so what libxml2 buffers stays bounded. */
#ifndef BOUND_TAG_CAP                   /* (smaller in the fuzzing build, to reach the caps) */
#define BOUND_TAG_CAP (256u * 1024)     /* bytes of one tag, besides its values */
#define BOUND_ATTR_MIN_CAP (64u * 1024) /* minimum cap of one attribute value */
#endif
#define BOUND_SLACK 32 /* extra output bytes one call may emit */

typedef struct bound {
    int st;               /* lexer state (bound.c) */
    int passthrough;      /* 1: UTF-16/32 input, no filtering */
    size_t run;           /* bytes in the current tag */
    size_t attr;          /* bytes in the current attribute value */
    size_t attr_cap;      /* cap of an attribute value */
    size_t seen;          /* bytes seen so far */
    char quote;           /* quote that opened the value */
    unsigned char flags;  /* BF_* (bound.c) */
    unsigned char nlen;   /* bytes in name[] */
    unsigned char dashes; /* consecutive '-' in a comment */
    unsigned char slow;   /* 1: no bulk paths, byte by byte (tests compare both) */
    char name[8];         /* tag name being read, lowercase, truncated */
    char raw[8];          /* "script"/"style" while inside one */
    uint64_t dropped;     /* tag bytes dropped beyond the caps */
} bound_t;

/* attr_cap: cap of an attribute value (at least BOUND_ATTR_MIN_CAP); keep
 * it above what url.c refuses as too long before parsing (4 * max_len + 64)
 * so that a cut value is never reported as a shorter URL. */
void bound_init(bound_t *b, size_t attr_cap);
/* The '-' ending s[0..k) of a comment (0, 1 or 2), given prev, the count
 * before s: how near "-->" a '>' at k would be (sink.c uses it too). */
unsigned char bound_tail_dashes(const unsigned char *s, const unsigned char *k, unsigned char prev);
/* Filters in[0..len) into out, which has room for len + BOUND_SLACK bytes;
 * returns the number of bytes written. */
size_t bound_filter(bound_t *b, const char *in, size_t len, char *out);

/* ---- decode.c: page bytes to UTF-8 for the text sink --------------------
 * A decoder converts the text runs of one page (charset and character
 * references, see decode.c) and hands the UTF-8 to emit in pieces of at
 * most DECODE_OUT bytes, never cut inside a character. */
#define DECODE_OUT 4096 /* bytes of output gathered before emit */
#define DECODE_REF 32   /* longest character reference held across chunks */
enum { DEC_UTF8, DEC_1252, DEC_ICONV };

typedef struct decoder {
    int kind; /* DEC_* */
    void *cd; /* iconv_t (DEC_ICONV) */
    void (*emit)(void *ud, const char *s, size_t n);
    void *ud;
    char *out;             /* buf, or decode_value's own */
    size_t nout;           /* bytes in out */
    unsigned char part[8]; /* a character cut by the end of a chunk */
    unsigned char npart, need, lo, hi;
    unsigned char inref, nref; /* a reference cut by the end of a chunk */
    char ref[DECODE_REF];
    char buf[DECODE_OUT];
} decoder_t;

/* Switches to the charset of label (its bytes, NUL-terminated): 0, or -1
 * for an unknown label or UTF-16/32 (d unchanged).  A zeroed decoder with
 * out = buf reads UTF-8. */
int decode_open(decoder_t *d, const char *label);
/* Frees the iconv descriptor; d reads UTF-8 after. */
void decode_close(decoder_t *d);
/* Text bytes s[0..n), in the page's charset, with references; what is
 * complete is emitted (some may wait in the output buffer). */
void decode_text(decoder_t *d, const char *s, size_t n);
/* The text run ended (markup follows, or the page ends): what is held is
 * decoded or replaced, and everything is emitted. */
void decode_end(decoder_t *d);
/* An attribute value s[0..n) decoded into out (room for 4 * n + 4 bytes),
 * not NUL-terminated; returns its length.  Emits what text was waiting. */
size_t decode_value(decoder_t *d, const char *s, size_t n, char *out);
typedef struct collect {
    char *out;
    size_t n;
} collect_t;
void decode_collect(void *ud, const char *s, size_t n); /* appends to a collect_t */

/* ---- tree.c: the sink's elements, balanced -------------------------------
 * Start and end tags as the page writes them become balanced start/end
 * events with HTML's implied ends (a reduced form of the HTML Standard's
 * tree construction, see tree.c), at most PARSER_SINK_MAX_DEPTH open. */
#define TREE_NAME 31 /* longest element name kept (longer ones are dropped) */

typedef struct tree_node {
    unsigned char id; /* tree.c's table index + 1, 0 if unknown */
    char name[TREE_NAME + 1];
} tree_node_t;

typedef struct tree {
    parser_sink_t sink;
    int n;    /* open elements */
    int head; /* 0 before <head>, 1 inside, 2 after */
    int seen; /* TS_* of tree.c: html/body seen */
    tree_node_t st[PARSER_SINK_MAX_DEPTH];
} tree_t;

void tree_init(tree_t *t, const parser_sink_t *sink);
/* A start tag (name lowercase, at most TREE_NAME bytes; atts as in
 * parser_sink_t); selfclose: written "<x/>" (the element ends at once).
 * Returns the raw-text kind of what follows: 0 markup, 1 raw text to drop
 * (script, style, ...), 2 text without markup (title, xmp). */
int tree_start(tree_t *t, const char *name, const char *const *atts, int selfclose);
void tree_end(tree_t *t, const char *name);
/* Character data (UTF-8) into the open element. */
void tree_text(void *t, const char *s, size_t n);
/* The page ended: everything open ends. */
void tree_finish(tree_t *t);

/* ---- sink.c: the sink's reader of the page -------------------------------
 * Tokenizes the raw bytes (tags with attributes, text, comments, raw text)
 * and feeds decode.c and tree.c; libxml2 is not involved. */
typedef struct sinkrd sinkrd_t;

/* header: the Content-Type's charset or NULL.  NULL on out-of-memory. */
sinkrd_t *sinkrd_new(const parser_sink_t *sink, const char *header_charset);
void sinkrd_free(sinkrd_t *r);
/* Start tags of a, area, base, link, meta, frame and iframe also go to fn
 * (with all their attributes), before the sink's start: the links of a
 * page read with a sink come from this reader, libxml2 is not run. */
void sinkrd_links(sinkrd_t *r, void (*fn)(void *ud, const char *name, const char *const *atts),
                  void *ud);
/* Tag bytes dropped past the reader's cap of a tag, so far. */
uint64_t sinkrd_capped(const sinkrd_t *r);
/* charset.c's decision on the first bytes (no charset in Content-Type):
 * 1 UTF-8, 0 not (windows-1252), unless the page named one. */
void sinkrd_sniffed(sinkrd_t *r, int utf8);
/* The next chunk of the body.  0 or CRAWL_ENOMEM. */
int sinkrd_feed(sinkrd_t *r, const char *s, size_t n);
/* End of the page: pending text and every open element end. */
void sinkrd_finish(sinkrd_t *r);

#endif
