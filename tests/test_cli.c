/*
 * test_cli.c -- crawler/cli.c's option-table machinery on a table of its
 * own (not crawl's): defaults, GNU argument order, optional values, enums,
 * repeatable options, --help layout.  In-process: no Redis, no HTTP.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cli.h"

typedef enum { COLOR_RED, COLOR_GREEN } color_t;
typedef struct topts {
    int flag, given;
    uint32_t n;
    double every;
    const char *s;
    color_t color;
    const char *list[2];
    size_t n_list;
} topts_t;

static const char *const COLORS[] = {"red", "green", NULL};
static const cli_opt_t TOPTS[] = {
    {CLI_OPT_FLAG(topts_t, "flag", flag, "a flag")},
    {CLI_OPT_U32(topts_t, "n", "N", n, 2, 9, 5, "a number\nover two lines")},
    {CLI_OPT_DOUBLE(topts_t, "watch", "[SECS]", every, 0.5, 10, 2, "optional value"), .optional = 1,
     .given = CLI_GIVEN(topts_t, given)},
    {CLI_OPT_STRING(topts_t, "s", "S", s, NULL, "unset string\n"), .dflt_doc = "nothing"},
    {CLI_OPT_ENUM(topts_t, "color", color, color_t, COLORS, COLOR_GREEN, "an enum")},
    {CLI_OPT_LIST(topts_t, "item", "X", list, n_list, "repeatable")},
    {CLI_OPT_HELP("this help")},
};
static const cli_cmd_t TCMD = {
    .name = "t", .usage = "usage: t\n", .opts = TOPTS, .nopts = sizeof TOPTS / sizeof TOPTS[0]};

static int tparse(topts_t *o, char **argv, int *first, char **out, char **err)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    memset(o, 0xa5, sizeof *o);
    o->list[0] = o->list[1] = NULL;
    cli_defaults(&TCMD, o);
    cap_t co, ce;
    cap_start(&co, 1);
    cap_start(&ce, 2);
    int rc = cli_parse(&TCMD, o, argc, argv, first);
    *err = cap_end(&ce);
    *out = cap_end(&co);
    return rc;
}

Test(cli, defaults_parse_and_other_arguments_come_last)
{
    char *argv[] = {"t", "a", "--n", "9", "b", "--item=x", "--color", "red", "--flag", NULL};
    topts_t o;
    int first;
    char *out, *err;
    cr_assert_eq(tparse(&o, argv, &first, &out, &err), 0, "%s", err);
    cr_expect(o.flag && o.n == 9 && o.color == COLOR_RED && !o.given && o.every == 2);
    cr_expect(o.n_list == 1 && !strcmp(o.list[0], "x") && o.s == NULL);
    cr_expect_eq(first, 7);
    cr_expect(!strcmp(argv[7], "a") && !strcmp(argv[8], "b"), "other arguments last");
    free(out);
    free(err);
    char *bare[] = {"t", NULL};
    cr_assert_eq(tparse(&o, bare, &first, &out, &err), 0);
    cr_expect(!o.flag && o.n == 5 && o.color == COLOR_GREEN && o.n_list == 0 && !o.given);
    free(out);
    free(err);
}

Test(cli, an_optional_value_is_taken_only_when_it_is_a_number)
{
    static const struct {
        char *args[4];
        int given;
        double every;
        int first; /* index of the first other argument */
    } cases[] = {
        {{"--watch", NULL}, 1, 2, 2},           {{"--watch", "5", NULL}, 1, 5, 3},
        {{"--watch=0.5", NULL}, 1, 0.5, 2},     {{"--watch", "x", NULL}, 1, 2, 2},
        {{"--watch", "--flag", NULL}, 1, 2, 3}, {{"--flag", NULL}, 0, 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[6] = {"t"};
        for (int k = 0; cases[i].args[k]; k++)
            argv[k + 1] = cases[i].args[k];
        topts_t o;
        int first;
        char *out, *err;
        cr_expect_eq(tparse(&o, argv, &first, &out, &err), 0, "case %zu: %s", i, err);
        cr_expect(o.given == cases[i].given && o.every == cases[i].every && first == cases[i].first,
                  "case %zu: given %d every %g first %d", i, o.given, o.every, first);
        free(out);
        free(err);
    }
}

Test(cli, errors_name_the_option_and_help_prints_the_table)
{
    static const struct {
        char *a, *b;
        const char *err;
    } cases[] = {
        {"--n", "10", "crawler t: bad value '10' for --n: expected a whole number from 2 to 9\n"},
        {"--n", "1", "crawler t: bad value '1' for --n: expected a whole number from 2 to 9\n"},
        {"--watch=11", NULL,
         "crawler t: bad value '11' for --watch: expected a number from 0.5 "
         "to 10\n"},
        {"--color", "blue", "crawler t: bad value 'blue' for --color: expected red or green\n"},
        {"--bogus", NULL,
         "crawler t: unknown option or missing value '--bogus'\ncrawler t: see `crawler t "
         "--help`\n"},
        {"--n", NULL,
         "crawler t: unknown option or missing value '--n'\ncrawler t: see `crawler t --help`\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[] = {"t", cases[i].a, cases[i].b, NULL};
        topts_t o;
        int first;
        char *out, *err;
        cr_expect_eq(tparse(&o, argv, &first, &out, &err), -1, "%s accepted", cases[i].a);
        cr_expect_str_eq(err, cases[i].err);
        free(out);
        free(err);
    }
    char *many[] = {"t", "--item", "a", "--item", "b", "--item", "c", NULL};
    topts_t o;
    int first;
    char *out, *err;
    cr_expect_eq(tparse(&o, many, &first, &out, &err), -1);
    cr_expect_str_eq(err, "crawler t: too many --item options (max 2)\n");
    free(out);
    free(err);
    char *help[] = {"t", "-h", NULL};
    cr_expect_eq(tparse(&o, help, &first, &out, &err), 1);
    cr_expect_str_eq(out, "usage: t\n"
                          "  --flag                       a flag [default: off]\n"
                          "  --n N                        a number\n"
                          "                               over two lines [default: 5]\n"
                          "  --watch [SECS]               optional value [default: 2]\n"
                          "  --s S                        unset string\n"
                          "                               [default: nothing]\n"
                          "  --color red|green            an enum [default: green]\n"
                          "  --item X                     repeatable [default: none]\n"
                          "  --help                       this help\n");
    free(out);
    free(err);
}
