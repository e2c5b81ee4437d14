/*
 * capture.h -- what a call writes to stdout or stderr, for in-process tests
 * of the command line (test_config.c, test_cli.c): cap_start, the call,
 * cap_end.  Header-only (static functions): each test file gets its own.
 */
#ifndef TESTS_CAPTURE_H
#define TESTS_CAPTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Output of fd (1 or 2) while a call runs: cap_start, the call, cap_end. */
typedef struct cap {
    int fd, saved;
    FILE *f;
} cap_t;

static inline void cap_start(cap_t *c, int fd)
{
    fflush(stdout);
    fflush(stderr);
    c->fd = fd;
    c->f = tmpfile();
    cr_assert_not_null(c->f);
    c->saved = dup(fd);
    cr_assert(c->saved >= 0 && dup2(fileno(c->f), fd) >= 0);
}

/* The captured text; caller frees. */
static inline char *cap_end(cap_t *c)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved, c->fd);
    close(c->saved);
    long n = ftell(c->f);
    cr_assert(n >= 0);
    char *s = malloc((size_t)n + 1);
    cr_assert_not_null(s);
    rewind(c->f);
    size_t got = fread(s, 1, (size_t)n, c->f);
    s[got] = '\0';
    fclose(c->f);
    return s;
}

#endif
