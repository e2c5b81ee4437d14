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
