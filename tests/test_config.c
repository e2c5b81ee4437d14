/*
 * test_config.c -- the option tables (crawler/cli.c) and `crawler crawl`'s
 * options (crawler/config.c): defaults equal the named macros, every bound
 * of every numeric option is accepted and the next value refused with a
 * message naming the option, values of every type parse, the --config file
 * (comments, unknown names, the command line wins), and --help lists every
 * table entry with its default.  In-process: no Redis, no HTTP.  (cli.c
 * on a table of its own: test_cli.c.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cli.h"
#include "config.h"
#include "fixtures.h"
#include "frontier.h"
#include "parser.h"

/* ---- helpers --------------------------------------------------------------- */

/* One `crawl` command line: argv[0] "crawl", then the arguments. */
#define MAXARGS 80
typedef struct run {
    char *argv[MAXARGS + 2];
    int argc;
    crawl_config_t cfg;
    int rc;
    char *out, *err; /* what cli_crawl_parse printed */
} run_t;

/* Parses args (NULL-terminated) into r->cfg, from the defaults. */
static int parse_args(run_t *r, const char *const *args)
{
    memset(r, 0, sizeof *r);
    r->argv[r->argc++] = strdup("crawl");
    for (size_t i = 0; args[i]; i++) {
        cr_assert(r->argc < MAXARGS);
        r->argv[r->argc++] = strdup(args[i]);
    }
    cli_crawl_defaults(&r->cfg);
    cap_t o, e;
    cap_start(&o, 1);
    cap_start(&e, 2);
    r->rc = cli_crawl_parse(&r->cfg, r->argc, r->argv);
    r->err = cap_end(&e);
    r->out = cap_end(&o);
    return r->rc;
}

static int parse1(run_t *r, const char *a, const char *b)
{
    return parse_args(r, (const char *[]){a, b, NULL});
}

static void run_free(run_t *r)
{
    cli_crawl_free(&r->cfg);
    for (int i = 0; i < r->argc; i++)
        free(r->argv[i]);
    free(r->out);
    free(r->err);
}

/* The field an entry fills, read as a number (U32, U64, DOUBLE). */
static double field_num(const crawl_config_t *c, const cli_opt_t *o)
{
    const char *p = (const char *)c + o->off;
    if (o->type == CLI_TYPE_U32)
        return *(const uint32_t *)(const void *)p;
    if (o->type == CLI_TYPE_U64)
        return (double)*(const uint64_t *)(const void *)p;
    return *(const double *)(const void *)p;
}

static uint64_t field_u64(const crawl_config_t *c, const cli_opt_t *o)
{
    const char *p = (const char *)c + o->off;
    return o->type == CLI_TYPE_U32 ? *(const uint32_t *)(const void *)p
                                   : *(const uint64_t *)(const void *)p;
}

/* ---- defaults ---------------------------------------------------------------- */

Test(config, defaults_equal_the_named_macros)
{
    crawl_config_t c;
    cli_crawl_defaults(&c);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t threads = cores > 0 && cores < 256 ? (uint64_t)cores : CONFIG_DEFAULT_THREADS_UNKNOWN;
    const struct {
        const char *field;
        uint64_t got, want;
    } nums[] = {
        {"threads", c.threads, threads},
        {"concurrency", c.concurrency, CONFIG_DEFAULT_CONCURRENCY},
        {"claim_batch", c.claim_batch, CONFIG_DEFAULT_CLAIM_BATCH},
        {"grace_ms", c.grace_ms, CONFIG_DEFAULT_GRACE_MS},
        {"per_host", c.per_host, FRONTIER_DEFAULT_PER_HOST},
        {"delay_ms", c.delay_ms, FRONTIER_DEFAULT_DELAY_MS},
        {"max_delay_ms", c.max_delay_ms, FRONTIER_DEFAULT_MAX_DELAY_MS},
        {"lease_ms", c.lease_ms, FRONTIER_DEFAULT_LEASE_MS},
        {"max_tries", c.max_tries, FRONTIER_DEFAULT_MAX_TRIES},
        {"backoff_ms", c.backoff_ms, FRONTIER_DEFAULT_BACKOFF_MS},
        {"max_depth", c.max_depth, CONFIG_DEFAULT_MAX_DEPTH},
        {"max_redirects", c.max_redirects, CONFIG_DEFAULT_MAX_REDIRECTS},
        {"max_pages", c.max_pages, CONFIG_DEFAULT_MAX_PAGES},
        {"max_pages_per_host", c.max_pages_per_host, CONFIG_DEFAULT_MAX_PAGES_PER_HOST},
        {"max_url_length", c.max_url_length, PARSER_DEFAULT_MAX_URL_LENGTH},
        {"max_size", c.max_size, CONFIG_DEFAULT_MAX_SIZE},
        {"timeout_ms", c.timeout_ms, CONFIG_DEFAULT_TIMEOUT_MS},
        {"connect_timeout_ms", c.connect_timeout_ms, CONFIG_DEFAULT_CONNECT_TIMEOUT_MS},
        {"low_speed_bps", c.low_speed_bps, CONFIG_DEFAULT_LOW_SPEED_BPS},
        {"low_speed_s", c.low_speed_s, CONFIG_DEFAULT_LOW_SPEED_S},
        {"bloom_capacity", c.bloom_capacity, BLOOM_DEFAULT_CAPACITY},
        {"scope", c.scope, CONFIG_DEFAULT_SCOPE},
        {"n_allow_domain", c.n_allow_domain, 0},
        {"n_deny_domain", c.n_deny_domain, 0},
        {"n_include", c.n_include, 0},
        {"n_exclude", c.n_exclude, 0},
        {"flags",
         (uint64_t)(c.force_seeds | c.wait | c.ignore_robots | c.sitemaps | c.follow_nofollow |
                    c.insecure | c.allow_private | c.quiet),
         0},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        cr_expect_eq(nums[i].got, nums[i].want, "default %s is %llu, not %llu", nums[i].field,
                     (unsigned long long)nums[i].got, (unsigned long long)nums[i].want);
    cr_expect(c.bloom_fp_rate == BLOOM_DEFAULT_FP_RATE, "bloom_fp_rate %g", c.bloom_fp_rate);
    cr_expect_eq(c.redis.n, 0, "default --redis: %zu URLs, not none", c.redis.n);
    const struct {
        const char *field, *got, *want;
    } strs[] = {
        {"data_dir", c.data_dir, RCONN_DEFAULT_DATA_DIR},
        {"crawl", c.crawl, FRONTIER_DEFAULT_CRAWL},
        {"seeds", c.seeds, NULL},
        {"user_agent", c.user_agent, CONFIG_DEFAULT_USER_AGENT},
        {"out", c.out, NULL},
        {"warc", c.warc, NULL},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        cr_expect(strs[i].want ? strs[i].got && !strcmp(strs[i].got, strs[i].want) : !strs[i].got,
                  "default %s is '%s', not '%s'", strs[i].field, strs[i].got ? strs[i].got : "NULL",
                  strs[i].want ? strs[i].want : "NULL");
    cr_expect_null(c.storage);
}

/* --help may print a default as text (dflt_doc) only where the default is no
 * value the option could be given: then it cannot disagree with a macro. */
Test(config, a_default_written_as_text_is_never_a_settable_value)
{
    const cli_cmd_t *cmd = &cli_table_crawl;
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        if (!o->dflt_doc)
            continue;
        int sentinel = o->dflt_fn != NULL;
        if (o->type == CLI_TYPE_STRING)
            sentinel = o->sdflt == NULL;
        else if (o->type == CLI_TYPE_LIST) /* none: no value given makes it */
            sentinel = 1;
        else if (o->type == CLI_TYPE_U32 || o->type == CLI_TYPE_U64)
            sentinel = sentinel || o->dflt < o->lo || o->dflt > o->hi;
        cr_expect(sentinel, "--%s: default printed as '%s' but is a settable value", o->name,
                  o->dflt_doc);
    }
}

/* ---- ranges ---------------------------------------------------------------- */

/* Today's range of every numeric option: each bound is accepted, and the
 * value just past it refused. */
static const struct {
    const char *name, *lo, *below, *hi, *above;
} RANGES[] = {
    {"threads", "1", "0", "256", "257"},
    {"concurrency", "1", "0", "100000", "100001"},
    {"claim-batch", "1", "0", "10000", "10001"},
    {"grace", "0", "-1", "600000", "600001"},
    {"per-host", "1", "0", "100000", "100001"},
    {"delay", "0", "-1", "86400000", "86400001"},
    {"max-delay", "0", "-1", "86400000", "86400001"},
    {"per-ip", "0", "-1", "100000", "100001"},
    {"tls-sessions", "0", "-1", "1048576", "1048577"},
    {"depth-window", "0", "-1", "1000", "1001"},
    {"ip-delay", "0", "-1", "86400000", "86400001"},
    {"lease", "100", "99", "86400000", "86400001"},
    {"redis-retry-max", "0", "-1", "86400000", "86400001"},
    {"max-tries", "1", "0", "1000", "1001"},
    {"retry-backoff", "1", "0", "86400000", "86400001"},
    {"max-retry-after", "0", "-1", "86400000", "86400001"},
    {"max-depth", "0", "-1", "4294967294", "4294967295"},
    {"max-redirects", "0", "-1", "1000", "1001"},
    {"shards", "1", "0", "1024", "1025"},
    {"max-pages", "1", "0", "18446744073709551615", "18446744073709551616"},
    {"max-pages-per-host", "1", "0", "18446744073709551615", "18446744073709551616"},
    {"max-pages-per-domain", "1", "0", "18446744073709551615", "18446744073709551616"},
    {"max-hosts-per-domain", "1", "0", "18446744073709551615", "18446744073709551616"},
    {"robots-ttl", "1", "0", "86400", "86401"},
    {"domain-pages-per-inlink", "0", "-1", "18446744073709551615", "18446744073709551616"},
    {"max-url-length", "16", "15", "1048576", "1048577"},
    {"max-links-per-page", "1", "0", "10000000", "10000001"},
    {"max-size", "1", "0", "18446744073709551615", "18446744073709551616"},
    {"timeout", "1", "0", "86400000", "86400001"},
    {"connect-timeout", "1", "0", "86400000", "86400001"},
    {"low-speed-limit", "0", "-1", "4294967295", "4294967296"},
    {"low-speed-time", "1", "0", "86400", "86401"},
    {"bloom-capacity", "1", "0", "10000000000", "10000000001"},
    {"bloom-fp-rate", "1e-12", "9.9999999999999e-13", "0.5", "0.50000000000001"},
    {"bloom-growth", "0", "-1", "16", "16.000000001"},
    {"delay-factor", "0", "-0.001", "1000", "1000.001"},
    {"out-rotate", "0", "-1", "18446744073709551615", "18446744073709551616"},
};
#define NRANGES (sizeof RANGES / sizeof RANGES[0])

Test(config, every_bound_is_accepted_and_the_next_value_refused)
{
    const cli_cmd_t *cmd = &cli_table_crawl;
    for (size_t i = 0; i < NRANGES; i++) {
        const cli_opt_t *o = cli_find(cmd, RANGES[i].name);
        cr_assert_not_null(o, "--%s is not in the table", RANGES[i].name);
        char opt[64];
        snprintf(opt, sizeof opt, "--%s", RANGES[i].name);
        const char *ok[] = {RANGES[i].lo, RANGES[i].hi};
        for (int k = 0; k < 2; k++) {
            run_t r;
            cr_expect_eq(parse1(&r, opt, ok[k]), 0, "%s %s refused: %s", opt, ok[k], r.err);
            if (o->type == CLI_TYPE_DOUBLE)
                cr_expect(field_num(&r.cfg, o) == strtod(ok[k], NULL), "%s %s stored %g", opt,
                          ok[k], field_num(&r.cfg, o));
            else
                cr_expect_eq(field_u64(&r.cfg, o), strtoull(ok[k], NULL, 10), "%s %s stored %llu",
                             opt, ok[k], (unsigned long long)field_u64(&r.cfg, o));
            run_free(&r);
        }
        const char *bad[] = {RANGES[i].below, RANGES[i].above};
        for (int k = 0; k < 2; k++) {
            run_t r;
            char want[256];
            if (o->type == CLI_TYPE_DOUBLE)
                snprintf(want, sizeof want,
                         "crawler crawl: bad value '%s' for %s: expected a number from %s to %s\n",
                         bad[k], opt, RANGES[i].lo, RANGES[i].hi);
            else
                snprintf(want, sizeof want,
                         "crawler crawl: bad value '%s' for %s: expected a whole number from %s "
                         "to %s\n",
                         bad[k], opt, RANGES[i].lo, RANGES[i].hi);
            cr_expect_eq(parse1(&r, opt, bad[k]), -1, "%s %s accepted", opt, bad[k]);
            cr_expect_str_eq(r.err, want, "%s %s", opt, bad[k]);
            run_free(&r);
        }
    }
    /* every numeric entry of the table has its row above */
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        if (o->type != CLI_TYPE_U32 && o->type != CLI_TYPE_U64 && o->type != CLI_TYPE_DOUBLE)
            continue;
        int found = 0;
        for (size_t k = 0; k < NRANGES; k++)
            found |= !strcmp(RANGES[k].name, o->name);
        cr_expect(found, "--%s has no row in RANGES", o->name);
    }
}

Test(config, malformed_numbers_are_refused)
{
    static const char *const bad[] = {"", "abc", "7x", "1.5", "0x10", "--1", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_t r;
        cr_expect_eq(parse1(&r, "--threads", bad[i]), -1, "--threads '%s' accepted", bad[i]);
        cr_expect(strstr(r.err, "for --threads: expected a whole number"), "'%s': %s", bad[i],
                  r.err);
        run_free(&r);
    }
    static const char *const dbad[] = {"", "nan", "inf", "abc", "0.1x"};
    for (size_t i = 0; i < sizeof dbad / sizeof dbad[0]; i++) {
        run_t r;
        cr_expect_eq(parse1(&r, "--bloom-fp-rate", dbad[i]), -1, "'%s' accepted", dbad[i]);
        cr_expect(strstr(r.err, "for --bloom-fp-rate: expected a number"), "'%s': %s", dbad[i],
                  r.err);
        run_free(&r);
    }
}

/* Input that used to be taken without a word: a number with a space or a
 * sign before it, an option spelled as a prefix of another (getopt_long
 * takes it), an option of one value given twice (the last won), an empty
 * value.  Each is refused with one message. */
Test(config, prefixes_repeats_spaces_and_empty_values_are_refused)
{
    static const struct {
        const char *args[6];
        const char *err;
    } cases[] = {
        {{"--delay", " 5", NULL}, "bad value ' 5' for --delay"},
        {{"--delay", "+5", NULL}, "bad value '+5' for --delay"},
        {{"--time", "5", NULL}, "unknown option '--time' (did you mean --timeout?)"},
        {{"--time=5", NULL}, "unknown option '--time'"},
        {{"--scope", "host", "--scope", "any", NULL}, "--scope given twice"},
        {{"--out", "a", "--out", "b", NULL}, "--out given twice"},
        {{"--allow-domain", "", NULL}, "bad value '' for --allow-domain: empty"},
        {{"--user-agent", "", NULL}, "bad value '' for --user-agent: empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r;
        cr_expect_eq(parse_args(&r, cases[i].args), -1, "case %zu accepted", i);
        cr_expect(strstr(r.err, cases[i].err), "case %zu: stderr '%s' lacks '%s'", i, r.err,
                  cases[i].err);
        run_free(&r);
    }
    run_t r; /* a list option may repeat, and a full name is taken */
    const char *ok[] = {"--include", "a", "--include", "b", "--timeout", "5", NULL};
    cr_expect_eq(parse_args(&r, ok), 0, "%s", r.err);
    run_free(&r);
}

/* ---- values of every type ----------------------------------------------------- */

Test(config, values_of_every_type_parse)
{
    /* one argument each between '|' */
    static const char line[] =
        "--redis|redis://h:1|--data-dir=/tmp/d|--crawl|c.1_x-y|--seeds|"
        "s.txt|--force|--wait|--user-agent|Bot/2 (+http://x)|--scope|"
        "domain|--include|a|--include|b|--exclude|c|--allow-domain|d.test|"
        "--deny-domain|e.test|--concurrency|5|--bloom-fp-rate|0.25|--max-pages|7|"
        "--quiet|--out|-";
    char buf[sizeof line], *save = NULL;
    const char *args[MAXARGS + 1];
    size_t n = 0;
    memcpy(buf, line, sizeof line);
    for (char *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save))
        args[n++] = t;
    args[n] = NULL;
    run_t r;
    cr_assert_eq(parse_args(&r, args), 0, "%s", r.err);
    const crawl_config_t *c = &r.cfg;
    cr_expect(c->redis.n == 1 && !strcmp(c->redis.url[0], "redis://h:1"), "--redis: %zu URLs",
              c->redis.n);
    cr_expect_str_eq(c->data_dir, "/tmp/d");
    cr_expect_str_eq(c->crawl, "c.1_x-y");
    cr_expect_str_eq(c->seeds, "s.txt");
    cr_expect(c->force_seeds && c->wait && c->quiet);
    cr_expect(!c->insecure && !c->sitemaps, "flags not given are set");
    cr_expect_str_eq(c->user_agent, "Bot/2 (+http://x)");
    cr_expect_eq(c->scope, SCOPE_DOMAIN);
    cr_expect(c->n_include == 2 && !strcmp(c->include[0], "a") && !strcmp(c->include[1], "b"));
    cr_expect(c->n_exclude == 1 && !strcmp(c->exclude[0], "c"));
    cr_expect(c->n_allow_domain == 1 && !strcmp(c->allow_domain[0], "d.test"));
    cr_expect(c->n_deny_domain == 1 && !strcmp(c->deny_domain[0], "e.test"));
    cr_expect_eq(c->concurrency, 5, "an unambiguous abbreviation is the option");
    cr_expect(c->bloom_fp_rate == 0.25);
    cr_expect_eq(c->max_pages, 7);
    cr_expect_str_eq(c->out, "-");
    run_free(&r);
    static const char *const scopes[] = {"host", "domain", "any"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(parse1(&r, "--scope", scopes[i]), 0);
        cr_expect_eq((int)r.cfg.scope, i, "--scope %s", scopes[i]);
        run_free(&r);
    }
}

/* Bad values and options: the exact message, and no value stored. */
Test(config, bad_values_are_refused_with_a_message_naming_the_option)
{
    static const struct {
        const char *a, *b, *err;
    } cases[] = {
        {"--scope", "planet",
         "crawler crawl: bad value 'planet' for --scope: expected host, domain or any\n"},
        {"--scope", "HOST",
         "crawler crawl: bad value 'HOST' for --scope: expected host, domain or any\n"},
        {"--user-agent", "123",
         "crawler crawl: bad value '123' for --user-agent: it must start with a product token "
         "such as MyCrawler/1.0\n"},
        {"--crawl", "bad name",
         "crawler crawl: bad crawl name 'bad name': 1 to 64 characters of A-Z a-z 0-9 . _ -\n"},
        {"--threads", NULL,
         "crawl: option '--threads' requires an argument\n"
         "crawler crawl: see `crawler crawl --help`\n"},
        {"--no-such-option", NULL,
         "crawl: unrecognized option '--no-such-option'\n"
         "crawler crawl: see `crawler crawl --help`\n"},
        {"--quiet=1", NULL,
         "crawl: option '--quiet' doesn't allow an argument\n"
         "crawler crawl: see `crawler crawl --help`\n"},
        {"positional", NULL, "crawler crawl: unexpected argument 'positional'\n"},
        {"--redis", "bogus://x",
         "crawler crawl: bad value for --redis: bad Redis URL 'bogus://x': expected "
         "redis://[:password@]host:port[/db]\n"},
        {"--redis", "redis://127.0.0.1:notaport",
         "crawler crawl: bad value for --redis: bad Redis URL 'redis://127.0.0.1:notaport': "
         "expected redis://[:password@]host:port[/db]\n"},
        {"--redis", "redis://127.0.0.1:1,127.0.0.1:x",
         "crawler crawl: bad value for --redis: bad Redis seed 'redis://127.0.0.1:1,127.0.0.1:x': "
         "expected redis://[:password@]host:port[,host:port...][/db], host:port[,host:port...] "
         "or unix:///path[?db=N] (one password and db for all)\n"},
        {"--allow-private-range", "127.0.0.1/40",
         "crawler crawl: bad value for --allow-private-range: bad address range '127.0.0.1/40': "
         "expected an IPv4 or IPv6 address, optionally /BITS (e.g. 127.16.0.0/12)\n"},
        {"--config", "/nonexistent/crawl.conf",
         "crawler crawl: cannot read config file /nonexistent/crawl.conf: No such file or "
         "directory\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r;
        cr_expect_eq(parse1(&r, cases[i].a, cases[i].b), -1, "%s accepted", cases[i].a);
        cr_expect_str_eq(r.err, cases[i].err, "%s %s", cases[i].a, cases[i].b ? cases[i].b : "");
        cr_expect_eq(r.cfg.scope, CONFIG_DEFAULT_SCOPE);
        cr_expect_str_eq(r.cfg.user_agent, CONFIG_DEFAULT_USER_AGENT);
        run_free(&r);
    }
}

/* --redis is checked for its form only: the forms rconn_open takes pass
 * without any connect (nothing listens on these ports). */
Test(config, redis_urls_of_every_form_are_taken_without_connecting)
{
    static const char *const ok[] = {
        "redis://127.0.0.1:1",     "redis://:pw@127.0.0.1:1/3",
        "redis://127.0.0.1",       "unix:///nonexistent/redis.sock",
        "unix:///x.sock?db=2",     "redis://127.0.0.1:1,127.0.0.1:2",
        "127.0.0.1:1,127.0.0.1:2",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        run_t r;
        cr_expect_eq(parse1(&r, "--redis", ok[i]), 0, "%s refused: %s", ok[i], r.err);
        cr_expect_str_eq(r.cfg.redis.n == 1 ? r.cfg.redis.url[0] : "", ok[i]);
        run_free(&r);
    }
}

Test(config, a_repeatable_option_takes_at_most_its_array_size)
{
    static const char *const lists[] = {"--include", "--exclude", "--allow-domain",
                                        "--deny-domain"};
    for (size_t l = 0; l < 4; l++) {
        const char *args[2 * (CONFIG_MAX_PATTERNS + 1) + 1];
        for (int n = 0; n <= CONFIG_MAX_PATTERNS; n++) {
            args[2 * n] = lists[l];
            args[2 * n + 1] = "x";
        }
        args[2 * CONFIG_MAX_PATTERNS] = NULL;
        run_t r;
        cr_expect_eq(parse_args(&r, args), 0, "%d %s refused: %s", CONFIG_MAX_PATTERNS, lists[l],
                     r.err);
        run_free(&r);
        args[2 * CONFIG_MAX_PATTERNS] = lists[l];
        args[2 * CONFIG_MAX_PATTERNS + 2] = NULL;
        char want[128];
        snprintf(want, sizeof want, "crawler crawl: too many %s options (max %d)\n", lists[l],
                 CONFIG_MAX_PATTERNS);
        cr_expect_eq(parse_args(&r, args), -1, "%d %s accepted", CONFIG_MAX_PATTERNS + 1, lists[l]);
        cr_expect_str_eq(r.err, want);
        run_free(&r);
    }
}

/* ---- the config file ------------------------------------------------------------ */

typedef struct conf {
    char *dir;
    char path[512];
} conf_t;

static void conf_write(conf_t *c, const char *text)
{
    if (!c->dir) {
        c->dir = fx_tmpdir();
        cr_assert_not_null(c->dir);
        snprintf(c->path, sizeof c->path, "%s/crawl.conf", c->dir);
    }
    cr_assert_eq(fx_write_file(c->path, text), 0);
}

static void conf_free(conf_t *c)
{
    fx_rmtree(c->dir);
    free(c->dir);
}

Test(config, config_file_values_apply_with_comments_and_both_spellings)
{
    conf_t cf = {0};
    conf_write(&cf, "# a config\n"
                    "max-depth 2\n"
                    "delay=0\n"
                    "  quiet  \n"
                    "\n"
                    "   # indented comment\n"
                    "--threads   4\n"
                    "user-agent = Bot/1 (+http://x)\n"
                    "include a\n"
                    "include b\n"
                    "scope any\n");
    run_t r;
    cr_assert_eq(parse1(&r, "--config", cf.path), 0, "%s", r.err);
    cr_expect_eq(r.cfg.max_depth, 2);
    cr_expect_eq(r.cfg.delay_ms, 0);
    cr_expect(r.cfg.quiet);
    cr_expect_eq(r.cfg.threads, 4);
    cr_expect_str_eq(r.cfg.user_agent, "Bot/1 (+http://x)");
    cr_expect(r.cfg.n_include == 2 && !strcmp(r.cfg.include[1], "b"));
    cr_expect_eq(r.cfg.scope, SCOPE_ANY);
    cr_expect_not_null(r.cfg.storage, "file strings are kept until cli_crawl_free");
    run_free(&r);
    conf_free(&cf);
}

Test(config, command_line_wins_over_the_file_wherever_it_stands)
{
    conf_t cf = {0};
    conf_write(&cf, "threads 4\nconcurrency 9\n");
    const char *before[] = {"--threads", "3", "--config", cf.path, NULL};
    const char *after[] = {"--config", cf.path, "--threads", "3", NULL};
    const char *const *both[] = {before, after};
    for (int i = 0; i < 2; i++) {
        run_t r;
        cr_assert_eq(parse_args(&r, both[i]), 0, "%s", r.err);
        cr_expect_eq(r.cfg.threads, 3, "the file's threads won (order %d)", i);
        cr_expect_eq(r.cfg.concurrency, 9, "the file's concurrency lost (order %d)", i);
        run_free(&r);
    }
    conf_free(&cf);
}

/* --redis given again names more nodes of one Redis Cluster, in order (each
 * checked for its form); the command line's replace a --config file's,
 * wherever --config stands, while several in the file all count. */
Test(config, a_repeated_redis_names_more_nodes_and_the_command_line_replaces_the_files)
{
    const char *twice[] = {"--redis", "redis://127.0.0.1:7000", "--redis", "redis://127.0.0.1:7001",
                           NULL};
    run_t r;
    cr_assert_eq(parse_args(&r, twice), 0, "%s", r.err);
    cr_expect(r.cfg.redis.n == 2 && !strcmp(r.cfg.redis.url[0], "redis://127.0.0.1:7000") &&
                  !strcmp(r.cfg.redis.url[1], "redis://127.0.0.1:7001"),
              "--redis twice: %zu URLs", r.cfg.redis.n);
    run_free(&r);
    const char *bad[] = {"--redis", "redis://127.0.0.1:7000", "--redis", "redis://h:x", NULL};
    cr_expect_eq(parse_args(&r, bad), -1, "a bad second --redis was taken");
    cr_expect(strstr(r.err, "redis://h:x"), "the message does not name the bad URL: %s", r.err);
    run_free(&r);

    conf_t cf = {0};
    conf_write(&cf, "redis redis://127.0.0.1:7000\nredis redis://127.0.0.1:7001\n");
    cr_assert_eq(parse1(&r, "--config", cf.path), 0, "%s", r.err);
    cr_expect_eq(r.cfg.redis.n, 2, "both of the file's --redis lines count");
    run_free(&r);
    const char *before[] = {"--redis", "redis://127.0.0.1:6379", "--config", cf.path, NULL};
    const char *after[] = {"--config", cf.path, "--redis", "redis://127.0.0.1:6379", NULL};
    const char *const *both[] = {before, after};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(parse_args(&r, both[i]), 0, "%s", r.err);
        cr_expect(r.cfg.redis.n == 1 && !strcmp(r.cfg.redis.url[0], "redis://127.0.0.1:6379"),
                  "order %d: %zu URLs, the file's kept", i, r.cfg.redis.n);
        run_free(&r);
    }
    conf_free(&cf);
}

Test(config, bad_config_file_lines_are_refused_with_file_and_line)
{
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"# ok\nno-such-option 1\n", "PATH:2: unknown option 'no-such-option'\n"},
        {"thread 3\n", "PATH:1: unknown option 'thread'\n"}, /* no abbreviations */
        {"quiet 1\n", "PATH:1: bad use of option 'quiet'\n"},
        {"threads\n", "PATH:1: bad use of option 'threads'\n"},
        {"threads=\n", "PATH:1: bad use of option 'threads'\n"},
        {"config /x\n", "PATH:1: bad use of option 'config'\n"},
        {"help\n", "PATH:1: bad use of option 'help'\n"},
        {"threads 0\n", "bad value '0' for --threads: expected a whole number from 1 to 256\n"},
        {"threads 3 # no trailing comments\n",
         "bad value '3 # no trailing comments' for "
         "--threads: expected a whole number from 1 to 256\n"},
        {"scope planet\n", "bad value 'planet' for --scope: expected host, domain or any\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conf_t cf = {0};
        conf_write(&cf, cases[i].text);
        char want[1024], *p = strstr(cases[i].err, "PATH");
        if (p)
            snprintf(want, sizeof want, "crawler crawl: %s%s", cf.path, p + 4);
        else
            snprintf(want, sizeof want, "crawler crawl: %s", cases[i].err);
        run_t r;
        cr_expect_eq(parse1(&r, "--config", cf.path), -1, "'%s' accepted", cases[i].text);
        cr_expect_str_eq(r.err, want, "file '%s'", cases[i].text);
        run_free(&r);
        conf_free(&cf);
    }
}

/* ---- --help ---------------------------------------------------------------------- */

static char *crawl_help(void)
{
    cap_t o;
    cap_start(&o, 1);
    cli_crawl_usage(stdout);
    return cap_end(&o);
}

/* The help line of o, or NULL: "  --NAME ARG" then blanks. */
static const char *help_line(const char *help, const cli_opt_t *o, char *line, size_t len)
{
    char head[128], names[96] = "";
    const char *arg = o->arg;
    if (!arg && o->type == CLI_TYPE_ENUM) { /* its names, as --help lists them */
        for (size_t i = 0; o->names[i]; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "|" : "",
                     o->names[i]);
        arg = names;
    }
    snprintf(head, sizeof head, "\n  --%s%s%s ", o->name, arg ? " " : "", arg ? arg : "");
    const char *p = strstr(help, head);
    if (!p)
        return NULL;
    p++;
    const char *e = strchr(p, '\n');
    snprintf(line, len, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
    return line;
}

Test(config, help_lists_every_table_entry_with_its_default)
{
    char *help = crawl_help();
    const cli_cmd_t *cmd = &cli_table_crawl;
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        char line[512], buf[64], want[128];
        cr_assert_not_null(help_line(help, o, line, sizeof line), "--%s missing:\n%s", o->name,
                           help);
        cr_expect(strstr(line, o->help), "--%s: help text missing: %s", o->name, line);
        const char *d = cli_default_text(o, buf, sizeof buf);
        if (!d) {
            cr_expect_null(strstr(line, "[default:"), "%s", line);
            continue;
        }
        snprintf(want, sizeof want, " [default: %s]", d);
        size_t n = strlen(line), w = strlen(want);
        cr_expect(n >= w && !strcmp(line + n - w, want), "--%s: want '%s' at the end of: %s",
                  o->name, want, line);
    }
    /* the defaults printed are the values cli_crawl_defaults sets */
    crawl_config_t c;
    cli_crawl_defaults(&c);
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        char buf[64], got[64] = "";
        const char *d = cli_default_text(o, buf, sizeof buf);
        const char *p = (const char *)&c + o->off;
        if (o->dflt_doc || !d)
            continue;
        if (o->type == CLI_TYPE_U32 || o->type == CLI_TYPE_U64)
            snprintf(got, sizeof got, "%llu", (unsigned long long)field_u64(&c, o));
        else if (o->type == CLI_TYPE_DOUBLE)
            snprintf(got, sizeof got, "%g", field_num(&c, o));
        else if (o->type == CLI_TYPE_STRING) /* unset: "none" */
            snprintf(got, sizeof got, "%s",
                     *(const char *const *)(const void *)p ? *(const char *const *)(const void *)p
                                                           : "none");
        else if (o->type == CLI_TYPE_ENUM)
            snprintf(got, sizeof got, "%s", o->names[*(const int *)(const void *)p]);
        else if (o->type == CLI_TYPE_FLAG)
            snprintf(got, sizeof got, "%s", *(const int *)(const void *)p ? "on" : "off");
        else
            continue;
        cr_expect_str_eq(got, d, "--%s: --help says %s, cli_crawl_defaults sets %s", o->name, d,
                         got);
    }
    /* a few spelled out */
    static const char *const shown[] = {
        "--concurrency C              transfers in flight, all threads together [default: 1000]\n",
        "--max-size BYTES             body size cap (decoded): read up to it, then cut (sitemaps: "
        "50 MB) [default: 10485760]\n",
        "--bloom-fp-rate P            visited-set false-positive rate, held however far it grows "
        "[default: 0.0001]\n",
        "--scope host|domain|any      which links to follow (seeds' hosts / domains / all) "
        "[default: host]\n",
        "--threads T                  fetcher threads [default: number of cores]\n",
        "--max-depth N                links deeper than N from a seed are not queued "
        "[default: unlimited]\n",
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        cr_expect(strstr(help, shown[i]), "--help lacks: %s", shown[i]);
    free(help);
}

/* A value every entry accepts, by type: its lower bound, its first name. */
static const char *sample(const cli_opt_t *o, char *buf, size_t len, const char *conf)
{
    switch (o->type) {
    case CLI_TYPE_U32:
    case CLI_TYPE_U64:
        snprintf(buf, len, "%llu", (unsigned long long)o->lo);
        return buf;
    case CLI_TYPE_DOUBLE:
        snprintf(buf, len, "%.17g", o->dlo);
        return buf;
    case CLI_TYPE_ENUM:
        return o->names[0];
    case CLI_TYPE_CONFIG:
        return conf;
    case CLI_TYPE_STRING:
    case CLI_TYPE_LIST: /* --redis is checked for a URL's form, a range for a range's */
        return o->check == cli_check_redis_url           ? "redis://127.0.0.1:1"
               : !strcmp(o->name, "allow-private-range") ? "127.16.0.0/12"
                                                         : "sample-1";
    default:
        return NULL;
    }
}

Test(config, every_option_in_the_table_appears_in_help_and_parses)
{
    conf_t cf = {0};
    conf_write(&cf, "# nothing\n");
    char *help = crawl_help();
    const cli_cmd_t *cmd = &cli_table_crawl;
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_opt_t *o = &cmd->opts[i];
        char opt[64], buf[64], line[512];
        snprintf(opt, sizeof opt, "--%s", o->name);
        cr_expect_not_null(help_line(help, o, line, sizeof line), "%s not in --help", opt);
        run_t r;
        int rc = parse1(&r, opt, sample(o, buf, sizeof buf, cf.path));
        cr_expect_eq(rc, o->type == CLI_TYPE_HELP ? 1 : 0, "%s: %d %s", opt, rc, r.err);
        if (o->type == CLI_TYPE_HELP)
            cr_expect_str_eq(r.out, help, "--help prints cli_crawl_usage");
        run_free(&r);
    }
    run_t r;
    cr_expect_eq(parse1(&r, "-h", NULL), 1);
    cr_expect_str_eq(r.out, help, "-h prints cli_crawl_usage");
    run_free(&r);
    free(help);
    conf_free(&cf);
}
