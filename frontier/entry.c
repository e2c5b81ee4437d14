/*
 * entry.c -- the queue entry's layout, both ways (written by offer.c, read
 * by claim.c; frontier/lua/base.lua's pack/parse are the same in Lua).
 *
 * DESIGN.  A queue entry lives in the list "P q:<origin>", so it does not
 * repeat the origin: it is NUMS REST, where
 *   REST  the URL's part after its origin, which starts with "/" (path and
 *         query); or the whole URL when it does not start with the origin
 *         followed by "/" (a URL the origin does not prefix byte for byte);
 *   NUMS  "" when depth, tries and hops are all 0, else "D", "D:T" or
 *         "D:T:H" (depth, tries, hops; trailing zeros left out).
 * So the seed "https://h.test/a?b" is the entry "/a?b", a link of depth 2
 * "2/a?b", its second try "2:1/a?b".  A REST never starts with a digit (a
 * path starts with "/", a URL with its scheme's letter) nor holds a space.
 * The layout of older crawls, "DEPTH TRIES URL" and "DEPTH TRIES HOPS URL"
 * (a space after the first number, a full URL), is still read, so a crawl
 * queued by an older crawler keeps working; it is never written.
 * Every entry is ASCII without spaces, tabs or newlines (offer.c refuses
 * links with them).
 */
#include "frontier_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t fr_entry_head(uint32_t depth, uint32_t tries, uint32_t hops, char *buf, size_t buflen)
{
    int n;
    if (hops)
        n = snprintf(buf, buflen, "%u:%u:%u", depth, tries, hops);
    else if (tries)
        n = snprintf(buf, buflen, "%u:%u", depth, tries);
    else if (depth)
        n = snprintf(buf, buflen, "%u", depth);
    else
        n = 0, buf[0] = '\0';
    return n < 0 || (size_t)n >= buflen ? 0 : (size_t)n;
}

size_t fr_entry_rest(const char *url, size_t ulen, const char *origin, size_t olen)
{
    if (olen < ulen && memcmp(url, origin, olen) == 0 && url[olen] == '/')
        return olen;
    return 0;
}

/* Reads a number of at most 10 digits at *p (advancing it); 0 if none. */
static uint32_t number(const char **p, const char *end)
{
    unsigned long long v = 0;
    int nd = 0;
    while (*p < end && isdigit((unsigned char)**p)) {
        if (nd++ < 10)
            v = v * 10 + (unsigned long long)(**p - '0');
        (*p)++;
    }
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int fr_entry_parse(const char *e, size_t len, fr_entry_t *out)
{
    const char *p = e, *end = e + len;
    uint32_t nums[3] = {0, 0, 0};
    memset(out, 0, sizeof *out);
    if (p < end && isdigit((unsigned char)*p)) {
        nums[0] = number(&p, end);
        if (p < end && *p == ' ') { /* the old layout: "D T [H ]URL" */
            p++;
            nums[1] = number(&p, end);
            if (p >= end || *p != ' ')
                return CRAWL_EREPLY;
            p++;
            const char *q = p;
            uint32_t h = number(&q, end);
            if (q > p && q < end && *q == ' ')
                nums[2] = h, p = q + 1;
        } else {
            for (int i = 1; i < 3 && p < end && *p == ':'; i++) {
                p++;
                nums[i] = number(&p, end);
            }
        }
    }
    if (p >= end)
        return CRAWL_EREPLY;
    out->depth = nums[0], out->tries = nums[1], out->hops = nums[2];
    out->rest = p;
    out->restlen = (size_t)(end - p);
    out->relative = *p == '/';
    return 0;
}

char *fr_entry_url(const fr_entry_t *en, const char *origin, size_t olen)
{
    size_t ol = en->relative ? olen : 0;
    char *u = malloc(ol + en->restlen + 1);
    if (!u)
        return NULL;
    memcpy(u, origin, ol);
    memcpy(u + ol, en->rest, en->restlen);
    u[ol + en->restlen] = '\0';
    return u;
}
