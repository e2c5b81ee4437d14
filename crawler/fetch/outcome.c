/*
 * outcome.c -- what a transfer's result means (outcome.h): the error kind
 * of a curl code, whether it is worth another try, a Retry-After value.
 *
 * DESIGN: pure functions, no state; fetch.c calls them on every result.
 */
#include "outcome.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "errors.h"

char *outcome_header_value(const char *line, size_t n, const char *name)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return NULL;
    const char *v = line + nl + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    return strndup(v, (size_t)(end - v));
}

uint32_t outcome_retry_after_ms(const char *v, uint32_t cap_ms)
{
    char *end;
    uint64_t ms = 0;
    errno = 0;
    unsigned long long s = isdigit((unsigned char)*v) ? strtoull(v, &end, 10) : 0;
    if (isdigit((unsigned char)*v) && *end == '\0') {
        ms = errno || s > UINT64_MAX / 1000 ? UINT64_MAX : (uint64_t)s * 1000;
    } else {
        time_t when = curl_getdate(v, NULL), now = time(NULL);
        ms = when > now ? (uint64_t)(when - now) * 1000 : 0;
    }
    return ms > cap_ms ? cap_ms : (uint32_t)ms;
}

const char *outcome_error_kind(CURLcode res)
{
    switch (res) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return crawl_kind_name(CRAWL_KIND_DNS);
    case CURLE_COULDNT_CONNECT:
        return crawl_kind_name(CRAWL_KIND_CONNECT);
    case CURLE_OPERATION_TIMEDOUT:
        return crawl_kind_name(CRAWL_KIND_TIMEOUT);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
#if LIBCURL_VERSION_NUM >= 0x074d00 /* 7.77.0 */
    case CURLE_SSL_CLIENTCERT:
#endif
        return crawl_kind_name(CRAWL_KIND_TLS);
    case CURLE_FILESIZE_EXCEEDED:
        return crawl_kind_name(CRAWL_KIND_TOO_LARGE);
    case CURLE_UNSUPPORTED_PROTOCOL:
        return crawl_kind_name(CRAWL_KIND_PROTOCOL);
    case CURLE_TOO_MANY_REDIRECTS:
        return crawl_kind_name(CRAWL_KIND_REDIRECTS);
    default:
        return crawl_kind_name(CRAWL_KIND_NETWORK);
    }
}

int outcome_retryable(CURLcode res)
{
    return res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_CONNECT ||
           res == CURLE_OPERATION_TIMEDOUT || res == CURLE_RECV_ERROR || res == CURLE_SEND_ERROR ||
           res == CURLE_GOT_NOTHING || res == CURLE_PARTIAL_FILE || res == CURLE_HTTP2 ||
           res == CURLE_HTTP2_STREAM || res == CURLE_SSL_CONNECT_ERROR;
}
