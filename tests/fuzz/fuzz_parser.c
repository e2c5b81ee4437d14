/*
 * libFuzzer target for the streaming link extractor.  The first input byte
 * picks the options (chunk size, follow_nofollow, Content-Type), the rest is
 * the page, fed in chunks.  Besides crashes, leaks and UB, it checks that
 * every reported URL is http(s), within max_url_length, and already in
 * normal form (normalizing it again changes nothing).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

#define MAX_URL 256

static void check_link(void *ud, const char *url, size_t len, parser_link_kind_t kind)
{
    char *again = NULL;
    (void)ud;
    (void)kind;
    if (len != strlen(url) || len > MAX_URL ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
        fprintf(stderr, "bad link: %s\n", url);
        abort();
    }
    if (parser_url_normalize(NULL, url, MAX_URL, &again) != 0 || strcmp(again, url) != 0) {
        fprintf(stderr, "link not in normal form: %s -> %s\n", url, again ? again : "(error)");
        abort();
    }
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const types[] = {NULL, "text/html; charset=windows-1252",
                                        "text/html; charset=utf-8", "text/html; charset=utf-16"};
    parser_config_t cfg = {.max_url_length = MAX_URL};
    size_t chunk;
    parser_t *p;
    if (size < 1)
        return 0;
    cfg.follow_nofollow = data[0] & 1;
    chunk = (data[0] >> 3) ? (size_t)(data[0] >> 3) : size;
    p = parser_new(&cfg, "http://fuzz.example/dir/page.html", types[(data[0] >> 1) & 3],
                   (data[0] & 0x80) ? "nofollow" : NULL, check_link, NULL);
    if (!p)
        return 0;
    data++;
    size--;
    for (size_t i = 0; i < size; i += chunk)
        parser_feed(p, (const char *)data + i, size - i < chunk ? size - i : chunk);
    parser_finish(p);
    if (parser_canonical(p))
        check_link(NULL, parser_canonical(p), strlen(parser_canonical(p)), PARSER_LINK_LINK);
    parser_free(p);
    return 0;
}
