/*
 * config.c -- what a crawl process's settings imply (config.h): each
 * thread's share of the transfers, the URLs it may hold, the scope's part.
 * Pure functions: the settings themselves are filled by the command line
 * (crawler/cli/crawl_options.c).
 */
#include "config.h"

uint32_t config_thread_slots(uint32_t concurrency, uint32_t threads, uint32_t idx)
{
    if (threads == 0)
        return concurrency ? concurrency : 1;
    uint32_t n = concurrency / threads + (idx < concurrency % threads);
    return n ? n : 1;
}

uint32_t config_thread_held(uint32_t slots)
{
    uint32_t r = slots / CONFIG_RESERVE_DIV;
    r = r < 1 ? 1 : r > CONFIG_RESERVE_MAX ? CONFIG_RESERVE_MAX : r;
    return slots > UINT32_MAX - r ? UINT32_MAX : slots + r;
}

scope_config_t config_scope(const crawl_config_t *c)
{
    return (scope_config_t){.mode = c->scope == SCOPE_ANY      ? SCOPE_MODE_ANY
                                    : c->scope == SCOPE_DOMAIN ? SCOPE_MODE_DOMAIN
                                                               : SCOPE_MODE_HOST,
                            .allow_domain = c->allow_domain,
                            .n_allow_domain = c->n_allow_domain,
                            .deny_domain = c->deny_domain,
                            .n_deny_domain = c->n_deny_domain,
                            .include = c->include,
                            .n_include = c->n_include,
                            .exclude = c->exclude,
                            .n_exclude = c->n_exclude,
                            .allow_range = c->allow_range,
                            .n_allow_range = c->n_allow_range};
}
