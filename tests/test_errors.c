/*
 * The project's one error space (errors/errors.h): every code has its own
 * text, no two codes share one, and a code outside the enum is "unknown".
 */
#include <criterion/criterion.h>
#include <string.h>

#include "errors.h"

Test(errors, every_code_has_a_text_of_its_own)
{
    for (int a = CRAWL_OK; a >= CRAWL_ERR_MIN; a--) {
        const char *ta = crawl_strerror(a);
        cr_assert_not_null(ta, "code %d", a);
        cr_expect_str_neq(ta, "unknown error", "code %d has no text", a);
        cr_expect_gt(strlen(ta), 3, "code %d: \"%s\"", a, ta);
        for (int b = a - 1; b >= CRAWL_ERR_MIN; b--)
            cr_expect_str_neq(ta, crawl_strerror(b), "codes %d and %d share \"%s\"", a, b, ta);
    }
}

Test(errors, codes_outside_the_enum_are_unknown)
{
    const int outside[] = {1, 42, CRAWL_ERR_MIN - 1, -1000, -2147483647 - 1};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        cr_expect_str_eq(crawl_strerror(outside[i]), "unknown error", "code %d", outside[i]);
}

Test(errors, texts_name_what_went_wrong)
{
    static const struct {
        int code;
        const char *text;
    } cases[] = {
        {CRAWL_OK, "success"},
        {CRAWL_EREDIS, "Redis unreachable or connection lost"},
        {CRAWL_EREPLY, "unexpected Redis reply or script error"},
        {CRAWL_ELEASE, "lease lost (expired and handed to another worker)"},
        {CRAWL_EWRITE, "write to an output file failed"},
        {CRAWL_ESCHEME, "scheme is not http or https"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_str_eq(crawl_strerror(cases[i].code), cases[i].text, "code %d", cases[i].code);
}

Test(errors, only_redis_lost_or_full_is_transient)
{
    for (int code = CRAWL_ERR_MIN - 1; code <= 1; code++)
        cr_expect_eq(crawl_transient(code), code == CRAWL_EREDIS || code == CRAWL_ENOROOM,
                     "code %d (%s)", code, crawl_strerror(code));
}

Test(errors, cluster_redirects_and_refusals_are_retried_on_a_new_connection)
{
    static const struct {
        const char *reply;
        int retry;
    } cases[] = {
        {"MOVED 3999 127.0.0.1:6381", 1},
        {"ASK 3999 127.0.0.1:6381", 1},
        {"TRYAGAIN Multiple keys request during rehashing of slot", 1},
        {"CLUSTERDOWN The cluster is down", 1},
        {"READONLY You can't write against a read only replica.", 1},
        {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", 1},
        {"LOADING Redis is loading the dataset in memory", 1},
        {"ERR Script attempted to access a non local key in a cluster node script: f_x, on "
         "@types.lua:19.",
         1},
        {"ERR Script attempted to access a key", 0},
        {"ERR Error running script (call to f_x): @user_script:1: boom", 0},
        {"WRONGTYPE Operation against a key holding the wrong kind of value", 0},
        {"OOM command not allowed when used memory > 'maxmemory'.", 0},
        {"NOSCRIPT No matching script", 0},
        {"MOVEDX 1 a:1", 0},
        {"ASKING", 0},
        {"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(crawl_retry_reply(cases[i].reply), cases[i].retry, "\"%s\"",
                     cases[i].reply ? cases[i].reply : "(null)");
}
