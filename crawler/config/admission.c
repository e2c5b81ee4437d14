/*
 * admission.c -- the settings that decide what a crawl admits (config.h:
 * config_admission_*), as text the crawl keeps with it.
 *
 * DESIGN: one table: each setting's option name, how to write its value as
 * text (lists: one value a line, in order) and read it back, and whether
 * the process gave the option (command line or config file).  A crawl
 * keeps the first worker's values (frontier_settings); a later worker
 * follows a stored value where it did not give the option, and is refused
 * where it asked for another: two workers of one crawl never admit by
 * different rules.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const scope_names[] = {"host", "domain", "any"};

typedef enum kind { K_SCOPE, K_U32, K_U64, K_FLAG, K_LIST } kind_t;

typedef struct setting {
    const char *name; /* the option's, without "--" */
    kind_t kind;
    size_t off;   /* the field's offset in crawl_config_t */
    size_t count; /* K_LIST: offset of its size_t count */
} setting_t;

#define F(f) offsetof(crawl_config_t, f)
static const setting_t table[CONFIG_ADMISSION_COUNT] = {
    {"scope", K_SCOPE, F(scope), 0},
    {"max-depth", K_U32, F(max_depth), 0},
    {"max-pages", K_U64, F(max_pages), 0},
    {"max-pages-per-host", K_U64, F(max_pages_per_host), 0},
    {"max-pages-per-domain", K_U64, F(max_pages_per_domain), 0},
    {"max-hosts-per-domain", K_U64, F(max_hosts_per_domain), 0},
    {"domain-pages-per-inlink", K_U64, F(pages_per_inlink), 0},
    {"follow-nofollow", K_FLAG, F(follow_nofollow), 0},
    {"ignore-robots", K_FLAG, F(ignore_robots), 0},
    {"sitemaps", K_FLAG, F(sitemaps), 0},
    {"allow-private", K_FLAG, F(allow_private), 0},
    {"allow-private-range", K_LIST, F(allow_range), F(n_allow_range)},
    {"allow-domain", K_LIST, F(allow_domain), F(n_allow_domain)},
    {"deny-domain", K_LIST, F(deny_domain), F(n_deny_domain)},
    {"include", K_LIST, F(include), F(n_include)},
    {"exclude", K_LIST, F(exclude), F(n_exclude)},
};
#undef F

#define AT(c, off, T) ((T *)(void *)((char *)(c) + (off)))

void config_admission_given(crawl_config_t *c, const char *name)
{
    for (size_t i = 0; i < CONFIG_ADMISSION_COUNT; i++)
        if (!strcmp(table[i].name, name))
            c->admission_given |= 1u << i;
}

const char *config_admission_name(size_t i)
{
    return i < CONFIG_ADMISSION_COUNT ? table[i].name : NULL;
}

int config_admission_text(const crawl_config_t *c, size_t i, char *buf, size_t len)
{
    if (i >= CONFIG_ADMISSION_COUNT || !len)
        return -1;
    const setting_t *s = &table[i];
    crawl_config_t *m = (crawl_config_t *)c; /* (read only: AT takes a non-const) */
    int n = 0;
    switch (s->kind) {
    case K_SCOPE: {
        unsigned v = (unsigned)*AT(m, s->off, config_scope_t);
        n = snprintf(buf, len, "%s", v < 3 ? scope_names[v] : "?");
        break;
    }
    case K_U32:
        n = snprintf(buf, len, "%u", *AT(m, s->off, uint32_t));
        break;
    case K_U64:
        n = snprintf(buf, len, "%llu", (unsigned long long)*AT(m, s->off, uint64_t));
        break;
    case K_FLAG:
        n = snprintf(buf, len, "%d", *AT(m, s->off, int) != 0);
        break;
    case K_LIST: {
        size_t cnt = *AT(m, s->count, size_t), at = 0;
        const char **v = AT(m, s->off, const char *);
        buf[0] = '\0';
        for (size_t k = 0; k < cnt && at < len; k++)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? "\n" : "", v[k]);
        n = (int)at;
        break;
    }
    }
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Sets c's value of setting s from stored (the text config_admission_text
 * wrote): 0, or -1 if it does not read back (a list's strings are a copy
 * kept in c->admission until config_admission_free). */
static int set_from(crawl_config_t *c, const setting_t *s, const char *stored)
{
    char *end;
    switch (s->kind) {
    case K_SCOPE:
        for (unsigned v = 0; v < 3; v++)
            if (!strcmp(stored, scope_names[v])) {
                *AT(c, s->off, config_scope_t) = (config_scope_t)v;
                return 0;
            }
        return -1;
    case K_U32:
    case K_U64: {
        unsigned long long v = strtoull(stored, &end, 10);
        if (!*stored || *end || (s->kind == K_U32 && v > UINT32_MAX))
            return -1;
        if (s->kind == K_U32)
            *AT(c, s->off, uint32_t) = (uint32_t)v;
        else
            *AT(c, s->off, uint64_t) = v;
        return 0;
    }
    case K_FLAG:
        *AT(c, s->off, int) = !strcmp(stored, "1");
        return 0;
    case K_LIST: {
        char *copy = strdup(stored);
        size_t k = 0;
        if (!copy)
            return -1;
        const char **v = AT(c, s->off, const char *);
        for (char *p = copy, *nl; *p && k < CONFIG_MAX_PATTERNS; p = nl ? nl + 1 : p + strlen(p)) {
            if ((nl = strchr(p, '\n')))
                *nl = '\0';
            v[k++] = p;
        }
        *AT(c, s->count, size_t) = k;
        size_t i = 0;
        while (i < CONFIG_ADMISSION_COUNT && c->admission[i])
            i++;
        if (i == CONFIG_ADMISSION_COUNT) {
            free(copy);
            return -1;
        }
        c->admission[i] = copy;
        return 0;
    }
    }
    return -1;
}

int config_admission_follow(crawl_config_t *c, size_t i, const char *stored, char *err,
                            size_t errlen)
{
    char own[CONFIG_ADMISSION_MAX];
    if (i >= CONFIG_ADMISSION_COUNT || !stored)
        return 0;
    const setting_t *s = &table[i];
    if (config_admission_text(c, i, own, sizeof own) >= 0 && !strcmp(own, stored))
        return 0;
    if (!(c->admission_given & (1u << i))) {
        if (set_from(c, s, stored) == 0)
            return 1;
        snprintf(err, errlen, "the crawl's --%s value '%s' does not read back", s->name, stored);
        return -1;
    }
    char a[256], b[256]; /* lists: their lines shown with ',' (cut at 255 bytes) */
    snprintf(a, sizeof a, "%.255s", stored);
    snprintf(b, sizeof b, "%.255s", own);
    for (char *p = a; (p = strchr(p, '\n'));)
        *p = ',';
    for (char *p = b; (p = strchr(p, '\n'));)
        *p = ',';
    snprintf(err, errlen,
             "crawl '%s' admits with --%s %s (fixed when it was created); this worker asks "
             "--%s %s: give the same value, or leave the option out to follow the crawl's",
             c->crawl, s->name, *a ? a : "(none)", s->name, *b ? b : "(none)");
    return -1;
}

void config_admission_free(crawl_config_t *c)
{
    for (size_t i = 0; i < CONFIG_ADMISSION_COUNT; i++) {
        free(c->admission[i]);
        c->admission[i] = NULL;
    }
}
