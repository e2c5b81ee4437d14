/*
 * url_host.c -- the host parser of the WHATWG URL Standard, for the special
 * schemes http and https: IPv6 literals (parsed, then serialized with the
 * longest run of zero pieces compressed), domains (percent-decoded, IDNA by
 * libidn2's UTS #46 processing, forbidden code points refused) and IPv4 in
 * every number form browsers accept ("0x7f.1", "2130706433", "1.2.3.4.").
 *
 * DESIGN
 * url_host_parse() writes the serialized host into a caller's buffer.  An
 * ASCII host without an "xn--" label never reaches libidn2: UTS #46 maps
 * ASCII to its lowercase and leaves it valid (UseSTD3ASCIIRules=false), so
 * lowercasing is the whole of ToASCII for it.  A domain that ends in a
 * number (its last label, ignoring one empty one after a final dot, is
 * decimal or 0x-hex) is an IPv4 address or nothing, as in browsers.
 * Deliberate restriction (parser.h): after ToASCII a domain must be made of
 * letters, digits, '-', '.', '_'; the Standard also accepts "!$&'()*+,;=`{}~"
 * and a few more, which libcurl refuses to request and DNS names never hold.
 * No state: thread-safe.
 */
#include "parser.h"
#include "parser_internal.h"

#include <idn2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int parser_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- IPv4 ---------------------------------------------------------------- */

#define V4_OVER (UINT64_C(1) << 33) /* saturation: above any valid part */

/* One part of an IPv4 host: decimal, 0x-hex ("0x" alone is 0) or 0-octal.
 * Returns 0 and *v (saturated at V4_OVER), or -1. */
static int v4_number(const char *s, size_t n, uint64_t *v)
{
    unsigned radix = 10;
    *v = 0;
    if (n == 0)
        return -1;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        radix = 16;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        radix = 8;
        s++;
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        int d = parser_hex_digit((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= radix)
            return -1;
        *v = *v * radix + (unsigned)d;
        if (*v > V4_OVER)
            *v = V4_OVER;
    }
    return 0;
}

/* The Standard's "ends in a number" check on h[0..n). */
int url_ends_in_number(const char *h, size_t n)
{
    const char *last;
    uint64_t v;
    if (n > 0 && h[n - 1] == '.')
        n--; /* one empty last label is ignored */
    last = h + n;
    while (last > h && last[-1] != '.')
        last--;
    size_t ln = (size_t)(h + n - last), i;
    if (ln == 0)
        return 0;
    for (i = 0; i < ln && last[i] >= '0' && last[i] <= '9'; i++)
        ;
    return i == ln || v4_number(last, ln, &v) == 0;
}

/* IPv4 parser: h[0..n) into *addr.  Returns 0 or CRAWL_EBADURL. */
static int v4_parse(const char *h, size_t n, uint32_t *addr)
{
    uint64_t part[4], v;
    size_t np = 0, i = 0;
    if (n > 0 && h[n - 1] == '.' && n > 1)
        n--; /* one empty last part is allowed */
    while (i <= n) {
        const char *e = memchr(h + i, '.', n - i);
        size_t len = e ? (size_t)(e - (h + i)) : n - i;
        if (np == 4 || v4_number(h + i, len, &part[np]) != 0)
            return CRAWL_EBADURL;
        np++;
        i += len + 1;
    }
    v = 0;
    for (i = 0; i + 1 < np; i++) {
        if (part[i] > 255)
            return CRAWL_EBADURL;
        v = v * 256 + part[i];
    }
    if (part[np - 1] >= (UINT64_C(1) << (8 * (5 - np))))
        return CRAWL_EBADURL;
    v = (v << (8 * (5 - np))) + part[np - 1];
    *addr = (uint32_t)v;
    return CRAWL_OK;
}

static size_t put_dec(char *o, unsigned v)
{
    char t[12];
    size_t n = 0, i;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        o[i] = t[n - 1 - i];
    return n;
}

static size_t v4_serialize(uint32_t a, char *o)
{
    size_t n = 0;
    for (int s = 24; s >= 0; s -= 8) {
        n += put_dec(o + n, (a >> s) & 255);
        if (s)
            o[n++] = '.';
    }
    return n;
}

/* ---- IPv6 ---------------------------------------------------------------- */

/* The embedded dotted IPv4 at s[*p..n) into a[*pi], a[*pi + 1]. */
static int v6_dotted(const char *s, size_t n, size_t *p, uint16_t a[8], int *pi)
{
    int seen = 0;
    if (*pi > 6)
        return -1;
    while (*p < n) {
        int piece = -1;
        if (seen > 0) {
            if (s[*p] != '.' || seen >= 4)
                return -1;
            (*p)++;
        }
        if (*p >= n || s[*p] < '0' || s[*p] > '9')
            return -1;
        while (*p < n && s[*p] >= '0' && s[*p] <= '9') {
            int d = s[*p] - '0';
            if (piece == 0)
                return -1; /* leading zero */
            piece = piece < 0 ? d : piece * 10 + d;
            if (piece > 255)
                return -1;
            (*p)++;
        }
        a[*pi] = (uint16_t)(a[*pi] * 0x100 + piece);
        if (++seen == 2 || seen == 4)
            (*pi)++;
    }
    return seen == 4 ? 0 : -1;
}

/* The Standard's IPv6 parser on s[0..n) (inside the brackets). */
static int v6_parse(const char *s, size_t n, uint16_t a[8])
{
    int pi = 0, compress = -1;
    size_t p = 0;
    memset(a, 0, 8 * sizeof a[0]);
    if (p < n && s[p] == ':') {
        if (p + 1 >= n || s[p + 1] != ':')
            return -1;
        p += 2;
        compress = ++pi;
    }
    while (p < n) {
        unsigned v = 0, len = 0;
        if (pi == 8)
            return -1;
        if (s[p] == ':') {
            if (compress != -1)
                return -1;
            p++;
            compress = ++pi;
            continue;
        }
        while (len < 4 && p < n && parser_hex_digit((unsigned char)s[p]) >= 0) {
            v = v * 16 + (unsigned)parser_hex_digit((unsigned char)s[p++]);
            len++;
        }
        if (p < n && s[p] == '.') {
            if (len == 0)
                return -1;
            p -= len;
            if (v6_dotted(s, n, &p, a, &pi) != 0)
                return -1;
            break;
        } else if (p < n && s[p] == ':') {
            if (++p >= n)
                return -1;
        } else if (p < n) {
            return -1;
        }
        a[pi++] = (uint16_t)v;
    }
    if (compress != -1) {
        int swaps = pi - compress;
        for (pi = 7; pi != 0 && swaps > 0; pi--, swaps--) {
            uint16_t t = a[pi];
            a[pi] = a[compress + swaps - 1];
            a[compress + swaps - 1] = t;
        }
    } else if (pi != 8) {
        return -1;
    }
    return 0;
}

static size_t v6_serialize(const uint16_t a[8], char *o)
{
    static const char hx[] = "0123456789abcdef";
    int best = -1, best_len = 1, i, n = 0;
    for (i = 0; i < 8;) { /* first longest run of 2+ zero pieces */
        int j = i;
        while (j < 8 && a[j] == 0)
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    o[n++] = '[';
    for (i = 0; i < 8; i++) {
        if (i == best) {
            o[n++] = ':';
            if (i == 0)
                o[n++] = ':';
            i += best_len - 1;
            continue;
        }
        int started = 0;
        for (int s = 12; s >= 0; s -= 4) {
            unsigned d = (a[i] >> s) & 15;
            if (d || started || s == 0) {
                o[n++] = hx[d];
                started = 1;
            }
        }
        if (i < 7)
            o[n++] = ':';
    }
    o[n++] = ']';
    return (size_t)n;
}

/* ---- domains ------------------------------------------------------------- */

/* 1 if some label of h[0..n) starts with "xn--" (any case). */
static int has_a_label(const char *h, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if ((i == 0 || h[i - 1] == '.') && url_lower((unsigned char)h[i]) == 'x' &&
            url_lower((unsigned char)h[i + 1]) == 'n' && h[i + 2] == '-' && h[i + 3] == '-')
            return 1;
    return 0;
}

/* UTS #46 ToASCII of the NUL-terminated d through libidn2 (non-transitional,
 * then transitional for what libidn2 refuses so).  *res: free(). */
static int to_ascii(const char *d, char **res)
{
    uint8_t *r = NULL;
    int ir = idn2_lookup_u8((const uint8_t *)d, &r, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
    if (ir != IDN2_OK)
        ir = idn2_lookup_u8((const uint8_t *)d, &r, IDN2_NFC_INPUT | IDN2_TRANSITIONAL);
    if (ir == IDN2_MALLOC)
        return CRAWL_ENOMEM;
    if (ir != IDN2_OK)
        return CRAWL_EBADURL;
    *res = (char *)r;
    return CRAWL_OK;
}

/* Writes the ASCII domain a[0..n) (lowercased in place) or its IPv4
 * address into o.  Returns the length or a CRAWL_E* code. */
static int finish_domain(char *a, size_t n, char *o, size_t cap)
{
    uint32_t v4;
    if (n == 0)
        return CRAWL_EBADURL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = url_lower((unsigned char)a[i]);
        a[i] = (char)c;
        if (!url_is_unreserved(c) || c == '~')
            return CRAWL_EBADURL; /* forbidden code points, and the restriction */
    }
    if (url_ends_in_number(a, n)) {
        if (v4_parse(a, n, &v4) != CRAWL_OK)
            return CRAWL_EBADURL;
        return (int)v4_serialize(v4, o);
    }
    if (n > cap)
        return CRAWL_ETOOLONG;
    memcpy(o, a, n);
    return (int)n;
}

int url_host_parse(const char *h, size_t n, char *o, size_t cap)
{
    char tbuf[256], *d, *ascii = NULL;
    size_t dn = 0;
    int wide = 0, rc;
    if (n > 0 && h[0] == '[') {
        uint16_t a[8];
        if (n < 2 || h[n - 1] != ']' || v6_parse(h + 1, n - 2, a) != 0)
            return CRAWL_EBADURL;
        return cap < 41 ? CRAWL_ETOOLONG : (int)v6_serialize(a, o);
    }
    if (cap < 16) /* room for any IPv4 serialization */
        return CRAWL_ETOOLONG;
    d = n < sizeof tbuf ? tbuf : malloc(n + 1);
    if (!d)
        return CRAWL_ENOMEM;
    for (size_t i = 0; i < n; i++) { /* percent-decode */
        unsigned char c = (unsigned char)h[i];
        if (c == '%' && i + 2 < n && parser_hex_digit((unsigned char)h[i + 1]) >= 0 &&
            parser_hex_digit((unsigned char)h[i + 2]) >= 0) {
            c = (unsigned char)(parser_hex_digit((unsigned char)h[i + 1]) * 16 +
                                parser_hex_digit((unsigned char)h[i + 2]));
            i += 2;
        }
        if (c == 0) {
            rc = CRAWL_EBADURL; /* forbidden, and would cut the string */
            goto out;
        }
        wide |= c >= 0x80;
        d[dn++] = (char)c;
    }
    d[dn] = '\0';
    if (!wide && !has_a_label(d, dn)) {
        rc = finish_domain(d, dn, o, cap);
        goto out;
    }
    rc = to_ascii(d, &ascii);
    if (rc == CRAWL_OK)
        rc = finish_domain(ascii, strlen(ascii), o, cap);
out:
    free(ascii);
    if (d != tbuf)
        free(d);
    return rc;
}
