/*
 * fx_proc.c -- child processes, temporary directories and files for tests.
 *
 * DESIGN: every child is forked with PR_SET_PDEATHSIG(SIGKILL) so it cannot
 * outlive the test process, whatever happens to the test.  Waits are bounded:
 * fx_wait() polls waitpid() against a monotonic deadline and kills the child
 * past it.
 */
#include "fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char fx_errbuf[512];

void fx_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx_errbuf, sizeof fx_errbuf, fmt, ap);
    va_end(ap);
}

const char *fx_error(void)
{
    return fx_errbuf[0] ? fx_errbuf : "no error recorded";
}

uint64_t fx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void redirect_fd(int fd, const char *path)
{
    int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f >= 0) {
        dup2(f, fd);
        close(f);
    }
}

pid_t fx_spawn(char *const argv[], const char *out_path, const char *err_path)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fx_set_error("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0) {
            dup2(in, 0);
            close(in);
        }
        redirect_fd(1, out_path);
        redirect_fd(2, err_path);
        setpgid(0, 0);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int fx_wait(pid_t pid, unsigned timeout_ms)
{
    uint64_t deadline = fx_now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fx_set_error("waitpid: %s", strerror(errno));
            return -1;
        }
        if (fx_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fx_set_error("process %d timed out after %u ms", (int)pid, timeout_ms);
            return -2;
        }
        usleep(5000);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int fx_run(char *const argv[], const char *out_path, const char *err_path, unsigned timeout_ms)
{
    pid_t pid = fx_spawn(argv, out_path, err_path);
    if (pid < 0)
        return -1;
    return fx_wait(pid, timeout_ms);
}

int fx_run_without(const char *var, char *const argv[], unsigned timeout_ms)
{
    const char *v = getenv(var);
    char *saved = v ? strdup(v) : NULL;
    unsetenv(var);
    int rc = fx_run(argv, NULL, NULL, timeout_ms);
    if (saved)
        setenv(var, saved, 1);
    free(saved);
    return rc;
}

char *fx_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "%s/crawler-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpl)) {
        fx_set_error("mkdtemp: %s", strerror(errno));
        return NULL;
    }
    return strdup(tmpl);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 ? 0 : 0;
}

void fx_rmtree(const char *dir)
{
    if (dir && *dir)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *fx_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fx_write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = strlen(data);
    int rc = fwrite(data, 1, n, f) == n ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

char *fx_crawler_bin(const char *built)
{
    const char *env = getenv("CRAWLER_BIN");
    return (char *)(env && *env ? env : built);
}
