/*
 * The installed program: the man page `crawler --man` writes (crawler(1),
 * made from the option tables) names every option of every command's
 * --help, under that command, and renders without a warning (groff -ww,
 * mandoc -Tlint); `cmake --install` of this build puts the program, the
 * Redis module, the man page and the systemd unit under a prefix, and the
 * installed program, moved elsewhere with its tree, has its embedded
 * redis-server load the module beside it, not the build tree's.
 *
 * The commands and options are read from `crawler --help` and `crawler CMD
 * --help`, not listed here: an option added to a table must show up in the
 * page without this file changing.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

#define RUN_MS 60000u
#define MAX_CMDS 32
#define MAX_OPTS 128

typedef struct env {
    char *dir;
    char path[PATH_MAX]; /* scratch */
} env_t;

static const char *in_dir(env_t *e, const char *name)
{
    snprintf(e->path, sizeof e->path, "%s/%s", e->dir, name);
    return e->path;
}

/* Runs sh -c cmd with stdout to out (NULL: /dev/null) and stderr to err;
 * returns its exit status as fx_run. */
static int sh(const char *cmd, const char *out, const char *err)
{
    char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
    return fx_run(argv, out, err, RUN_MS);
}

/* stdout of `crawler ARGS...` (caller frees); asserts it exits 0. */
static char *crawler_out(env_t *e, const char *a1, const char *a2)
{
    char out[PATH_MAX + 8];
    snprintf(out, sizeof out, "%s/out", e->dir);
    char *argv[] = {CRAWLER_BIN, (char *)a1, (char *)a2, NULL};
    int rc = fx_run(argv, out, NULL, RUN_MS);
    cr_assert_eq(rc, 0, "crawler %s %s exited %d", a1, a2 ? a2 : "", rc);
    char *s = fx_read_file(out, NULL);
    cr_assert_not_null(s);
    return s;
}

/* The command names `crawler --help` lists under "commands:". */
static size_t help_commands(env_t *e, char names[MAX_CMDS][32])
{
    char *help = crawler_out(e, "--help", NULL);
    char *p = strstr(help, "\ncommands:\n");
    cr_assert_not_null(p, "crawler --help has no commands: list:\n%s", help);
    size_t n = 0;
    for (p += strlen("\ncommands:\n"); n < MAX_CMDS && p[0] == ' ' && p[1] == ' ';) {
        cr_assert_eq(sscanf(p, " %31s", names[n]), 1);
        n++;
        p = strchr(p, '\n');
        p = p ? p + 1 : "";
    }
    free(help);
    cr_assert_gt(n, 0, "no commands in crawler --help");
    return n;
}

/* The options (without "--") `crawler CMD --help` lists, one a line as
 * "  --NAME ...". */
static size_t help_options(env_t *e, const char *cmd, char opts[MAX_OPTS][64])
{
    char *help = crawler_out(e, cmd, "--help");
    size_t n = 0;
    for (char *p = help; p && *p && n < MAX_OPTS; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, "  --", 4) && sscanf(p + 4, "%63[a-z0-9-]", opts[n]) == 1)
            n++;
    free(help);
    cr_assert_gt(n, 0, "crawler %s --help lists no option", cmd);
    return n;
}

/* Writes `crawler --man` to DIR/crawler.1 and the page as text, no
 * hyphenation or wrapping of tags, to DIR/crawler.txt; returns the text. */
static char *man_text(env_t *e)
{
    char *page = crawler_out(e, "--man", NULL);
    cr_assert_eq(fx_write_file(in_dir(e, "crawler.1"), page), 0);
    free(page);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "groff -man -Tascii -P-cbou -rLL=250n -rHY=0 '%s/crawler.1'", e->dir);
    cr_assert_eq(sh(cmd, in_dir(e, "crawler.txt"), NULL), 0, "%s failed", cmd);
    char *txt = fx_read_file(in_dir(e, "crawler.txt"), NULL);
    cr_assert_not_null(txt);
    return txt;
}

/* The text of the page's "crawler CMD" subsection (caller frees), up to the
 * next heading; NULL if there is none. */
static char *section(const char *txt, const char *cmd)
{
    char head[64];
    snprintf(head, sizeof head, "\n   crawler %s\n", cmd);
    const char *s = strstr(txt, head);
    if (!s)
        return NULL;
    s += strlen(head);
    const char *end = s;
    while (*end && !(end[0] == '\n' && end[1] && end[1] != '\n' &&
                     (end[1] != ' ' || (end[2] == ' ' && end[3] == ' ' && end[4] != ' '))))
        end++;
    return strndup(s, (size_t)(end - s));
}

static void setup(env_t *e)
{
    char *dir = fx_tmpdir();
    cr_assert_not_null(dir);
    e->dir = realpath(dir, NULL); /* as the program sees it: the log names real paths */
    free(dir);
    cr_assert_not_null(e->dir);
}

static void teardown(env_t *e)
{
    fx_rmtree(e->dir);
    free(e->dir);
}

Test(man, names_every_option_of_every_command_under_it)
{
    env_t e;
    setup(&e);
    char *txt = man_text(&e);
    char cmds[MAX_CMDS][32];
    size_t ncmds = help_commands(&e, cmds);
    for (size_t i = 0; i < ncmds; i++) {
        char opts[MAX_OPTS][64];
        size_t nopts = help_options(&e, cmds[i], opts);
        char *sec = section(txt, cmds[i]);
        cr_assert_not_null(sec, "the man page has no section 'crawler %s'", cmds[i]);
        for (size_t j = 0; j < nopts; j++) {
            char pat[128];
            snprintf(pat, sizeof pat, "^       --%.63s( |,|$)", opts[j]);
            regex_t re;
            cr_assert_eq(regcomp(&re, pat, REG_EXTENDED | REG_NEWLINE | REG_NOSUB), 0);
            int found = regexec(&re, sec, 0, NULL, 0) == 0;
            regfree(&re);
            cr_expect(found, "the man page's 'crawler %s' has no entry for --%s", cmds[i], opts[j]);
        }
        free(sec);
    }
    free(txt);
    teardown(&e);
}

Test(man, renders_without_warnings)
{
    env_t e;
    setup(&e);
    free(man_text(&e));
    const char *checks[] = {
        "groff -man -Tutf8 -ww -z '%s/crawler.1'",
        "MANWIDTH=80 man -l '%s/crawler.1' >/dev/null",
        "mandoc -Tlint -Wwarning '%s/crawler.1'",
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        char cmd[2 * PATH_MAX];
        snprintf(cmd, sizeof cmd, checks[i], e.dir);
        char outp[PATH_MAX + 16], errp[PATH_MAX + 16];
        snprintf(outp, sizeof outp, "%s/lint.out", e.dir);
        snprintf(errp, sizeof errp, "%s/lint.err", e.dir);
        int rc = sh(cmd, outp, errp);
        char *out = fx_read_file(outp, NULL);
        char *err = fx_read_file(errp, NULL);
        cr_expect(rc == 0 && out && !*out && err && !*err, "%s: exit %d, said:\n%s%s", cmd, rc,
                  out ? out : "", err ? err : "");
        free(out);
        free(err);
    }
    teardown(&e);
}

/* The build directory: CRAWLER_BIN_DEFAULT is <build>/crawler/crawler. */
static void build_dir(char *buf, size_t len)
{
    snprintf(buf, len, "%s", CRAWLER_BIN_DEFAULT);
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(buf, '/');
        cr_assert_not_null(slash, "no build directory in %s", CRAWLER_BIN_DEFAULT);
        *slash = '\0';
    }
    char cache[PATH_MAX + 32];
    snprintf(cache, sizeof cache, "%s/CMakeCache.txt", buf);
    cr_assert_eq(access(cache, R_OK), 0, "%s is not a build directory", buf);
}

Test(install, moved_install_tree_loads_its_own_module)
{
    env_t e;
    setup(&e);
    char build[PATH_MAX], cmd[4 * PATH_MAX];
    build_dir(build, sizeof build);
    snprintf(cmd, sizeof cmd, "cmake --install '%s' --prefix '%s/p'", build, e.dir);
    cr_assert_eq(sh(cmd, NULL, in_dir(&e, "install.err")), 0, "%s failed", cmd);
    const char *want[] = {"p/bin/crawler", "p/lib/crawler/crawler_redis.so",
                          "p/share/man/man1/crawler.1.gz",
                          "p/share/doc/crawler/systemd/crawler@.service"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_eq(access(in_dir(&e, want[i]), R_OK), 0, "cmake --install put no %s", want[i]);
    char *unit = fx_read_file(in_dir(&e, "p/share/doc/crawler/systemd/crawler@.service"), NULL);
    char exec[PATH_MAX + 32];
    snprintf(exec, sizeof exec, "\nExecStart=%s/p/bin/crawler crawl --crawl %%i", e.dir);
    cr_expect(unit && strstr(unit, exec), "the unit has no line %s", exec + 1);
    free(unit);
    /* moved: the module is found relative to the program, not at the prefix */
    snprintf(cmd, sizeof cmd, "mv '%s/p' '%s/q' && '%s/q/bin/crawler' stats --data-dir '%s/data'",
             e.dir, e.dir, e.dir, e.dir);
    cr_assert_eq(sh(cmd, NULL, in_dir(&e, "stats.err")), 0, "%s failed", cmd);
    char *log = fx_read_file(in_dir(&e, "data/redis.log"), NULL);
    char loaded[PATH_MAX + 64];
    snprintf(loaded, sizeof loaded,
             "Module 'crawler' loaded from %s/q/lib/crawler/crawler_redis.so", e.dir);
    cr_expect(log && strstr(log, loaded), "the embedded redis.log has no '%s':\n%s", loaded,
              log ? log : "(none)");
    free(log);
    teardown(&e);
}
