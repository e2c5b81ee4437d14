/*
 * json.c -- JSON text for the output files (json.h).
 *
 * DESIGN: an emitter writes into a caller's buffer and counts every byte,
 * storing those that fit, so a caller formats once into a stack buffer and,
 * when the count says it did not fit, once more into one of that size.
 * Strings are made valid UTF-8 on the way (each maximal invalid subpart
 * becomes U+FFFD, as the WHATWG decoder does) with control bytes escaped.
 */
#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void json_put(json_emit_t *e, const char *s, size_t n)
{
    if (e->len < e->cap) {
        size_t room = e->cap - e->len;
        memcpy(e->p + e->len, s, n < room ? n : room);
    }
    e->len += n;
}

void json_lit(json_emit_t *e, const char *s)
{
    json_put(e, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if it is
 * invalid; *bad gets the length of the maximal invalid subpart to replace. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    *bad = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else
        return 0;
    for (size_t i = 1; i < need; i++) {
        unsigned b = i < n ? s[i] : 0;
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *bad = i;
            return 0;
        }
    }
    return need;
}

void json_str(json_emit_t *e, const char *s)
{
    if (!s)
        json_lit(e, "null");
    else
        json_strn(e, s, strlen(s));
}

void json_strn(json_emit_t *e, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0; /* run: bytes copied verbatim */
    json_put(e, "\"", 1);
    while (i < n) {
        /* the common case first: printable ASCII other than '"' and '\\' */
        size_t start = i;
        while (i < n && u[i] >= 0x20 && u[i] < 0x7f && u[i] != '"' && u[i] != '\\')
            i++;
        run += i - start;
        if (i == n)
            break;
        unsigned c = u[i];
        size_t bad = 1, k = (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
                                ? utf8_seq(u + i, n - i, &bad)
                                : 0;
        if (k) {
            i += k;
            run += k;
            continue;
        }
        json_put(e, (const char *)u + i - run, run);
        run = 0;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            json_put(e, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            const char *short_esc = c == '\n'   ? "\\n"
                                    : c == '\r' ? "\\r"
                                    : c == '\t' ? "\\t"
                                    : c == '\b' ? "\\b"
                                    : c == '\f' ? "\\f"
                                                : NULL;
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (short_esc)
                json_lit(e, short_esc);
            else
                json_put(e, esc, 6);
            i++;
        } else {
            json_put(e, "\xEF\xBF\xBD", 3); /* U+FFFD for the invalid subpart */
            i += bad;
        }
    }
    json_put(e, (const char *)u + i - run, run);
    json_put(e, "\"", 1);
}

void json_u64(json_emit_t *e, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    json_put(e, tmp, (size_t)n);
}

void json_hex64(json_emit_t *e, const char *key, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "\"%016" PRIx64 "\"", v);
    json_lit(e, key);
    json_put(e, tmp, (size_t)n);
}

int64_t json_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 3339 UTC with milliseconds: 2026-11-30T00:01:02.345Z */
void json_time(json_emit_t *e, int64_t ms)
{
    int64_t secs = ms / 1000, frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    char tmp[48];
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
        json_lit(e, "null");
        return;
    }
    int n = snprintf(tmp, sizeof tmp, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    json_put(e, tmp, (size_t)n);
}

size_t json_end_line(json_emit_t *e, int64_t timestamp_ms)
{
    json_lit(e, ",\"timestamp\":");
    json_time(e, timestamp_ms ? timestamp_ms : json_now_ms());
    json_lit(e, "}\n");
    if (e->len < e->cap)
        e->p[e->len] = '\0';
    return e->len;
}
