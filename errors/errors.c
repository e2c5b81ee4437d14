/*
 * errors.c -- crawl_strerror: one text per code of errors.h; the words of
 * the page error kinds.
 */
#include "errors.h"

#include <string.h>

static const char *const texts[] = {
    [-CRAWL_OK] = "success",
    [-CRAWL_EINVAL] = "invalid argument",
    [-CRAWL_ENOMEM] = "out of memory",
    [-CRAWL_EREDIS] = "Redis unreachable or connection lost",
    [-CRAWL_EREPLY] = "unexpected Redis reply or script error",
    [-CRAWL_EWRONGTYPE] = "a key has the wrong type",
    [-CRAWL_EMISMATCH] = "stored filter geometry differs from the one asked for",
    [-CRAWL_ECORRUPT] = "stored data missing, truncated, foreign or corrupt",
    [-CRAWL_ENOTFOUND] = "not found",
    [-CRAWL_EBLOOM] = "Bloom filter error",
    [-CRAWL_ELEASE] = "lease lost (expired and handed to another worker)",
    [-CRAWL_EBADURL] = "malformed URL",
    [-CRAWL_ESCHEME] = "scheme is not http or https",
    [-CRAWL_ETOOLONG] = "too long",
    [-CRAWL_EPARSE] = "HTML parser failed",
    [-CRAWL_EVERSION] = "stored data has an unknown format version",
    [-CRAWL_EWRITE] = "write to an output file failed",
    [-CRAWL_EINTERNAL] = "zlib, SHA-1 or the random source failed",
    [-CRAWL_EFILE] = "cannot open or read a file",
    [-CRAWL_ENOROOM] = "not enough free memory in Redis (maxmemory) for it",
    [-CRAWL_EFULL] = "the visited set (Bloom filter) is full: its capacity is reached",
    [-CRAWL_EINTR] = "interrupted by a signal",
    [-CRAWL_ESTALE] = "the visited set gained a layer meanwhile: the call must be built again",
};

const char *crawl_strerror(int err)
{
    if (err > 0 || err < CRAWL_ERR_MIN || !texts[-err])
        return "unknown error";
    return texts[-err];
}

int crawl_transient(int err)
{
    return err == CRAWL_EREDIS || err == CRAWL_ENOROOM;
}

int crawl_retry_reply(const char *str)
{
    static const char *const words[] = {"MOVED ",   "ASK ",       "TRYAGAIN", "CLUSTERDOWN",
                                        "READONLY", "MASTERDOWN", "LOADING"};
    if (!str)
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strncmp(str, words[i], strlen(words[i])))
            return 1;
    /* a script that touched a key of a slot in migration that has already
     * left: the frontier's scripts check every key's type before their first
     * write (frontier/lua/types.lua), so it stopped before writing */
    return !strncmp(str, "ERR ", 4) && strstr(str, "non local key in a cluster node") != NULL;
}

static const char *const kinds[CRAWL_KIND_COUNT] = {
    [CRAWL_KIND_DNS] = "dns",
    [CRAWL_KIND_CONNECT] = "connect",
    [CRAWL_KIND_TIMEOUT] = "timeout",
    [CRAWL_KIND_TLS] = "tls",
    [CRAWL_KIND_TOO_LARGE] = "too-large",
    [CRAWL_KIND_PROTOCOL] = "protocol",
    [CRAWL_KIND_REDIRECTS] = "redirects",
    [CRAWL_KIND_NETWORK] = "network",
    [CRAWL_KIND_BLOCKED] = "blocked",
    [CRAWL_KIND_HTTP_429] = "http-429",
    [CRAWL_KIND_HTTP_5XX] = "http-5xx",
    [CRAWL_KIND_ROBOTS] = "robots",
    [CRAWL_KIND_ROBOTS_UNAVAILABLE] = "robots-unavailable",
    [CRAWL_KIND_INTERNAL] = "internal",
    [CRAWL_KIND_OPERATOR_BLOCK] = "operator-block",
};

const char *crawl_kind_name(crawl_kind_t k)
{
    return k >= 0 && k < CRAWL_KIND_COUNT ? kinds[k] : NULL;
}

int crawl_kind_find(const char *name)
{
    for (int k = 0; name && k < CRAWL_KIND_COUNT; k++)
        if (!strcmp(kinds[k], name))
            return k;
    return -1;
}
