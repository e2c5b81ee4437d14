/*
 * robotsgate_cache.c -- the robots gate's rule sets of one thread
 * (robotsgate_internal.h): a fixed array of slots found by a hash index
 * over the origins, the LRU, expiry and pending lists, and eviction (an
 * expired entry first, else the least recently used settled one; pending
 * entries never).  See robotsgate.c's DESIGN comment.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "robotsgate_internal.h"

/* ---- the rule sets of this thread: slots, hash index, lists ---------------------- */

rentry_t *rg_at(const robotsgate_t *g, uint32_t i)
{
    return i == NONE ? NULL : &g->slot[i];
}

uint32_t rg_index_of(const robotsgate_t *g, const rentry_t *e)
{
    return (uint32_t)(e - g->slot);
}

void rg_list_push(robotsgate_t *g, list_t *l, int k, rentry_t *e, int front)
{
    uint32_t i = rg_index_of(g, e);
    link_t *ln = &e->link[k];
    if (front) {
        *ln = (link_t){.prev = NONE, .next = l->head};
        if (l->head != NONE)
            g->slot[l->head].link[k].prev = i;
        l->head = i;
        if (l->tail == NONE)
            l->tail = i;
    } else {
        *ln = (link_t){.prev = l->tail, .next = NONE};
        if (l->tail != NONE)
            g->slot[l->tail].link[k].next = i;
        l->tail = i;
        if (l->head == NONE)
            l->head = i;
    }
}

void rg_list_remove(robotsgate_t *g, list_t *l, int k, rentry_t *e)
{
    link_t *ln = &e->link[k];
    if (ln->prev != NONE)
        g->slot[ln->prev].link[k].next = ln->next;
    else
        l->head = ln->next;
    if (ln->next != NONE)
        g->slot[ln->next].link[k].prev = ln->prev;
    else
        l->tail = ln->prev;
    *ln = (link_t){NONE, NONE};
}

/* FNV-1a, 32 bits. */
static uint32_t rg_hash_of(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

rentry_t *rg_find(const robotsgate_t *g, const char *origin)
{
    uint32_t h = rg_hash_of(origin);
    for (uint32_t i = g->bucket[h & (g->cap - 1)]; i != NONE; i = g->slot[i].hnext)
        if (g->slot[i].hash == h && !strcmp(g->slot[i].origin, origin))
            return &g->slot[i];
    return NULL;
}

void rg_entry_clear(rentry_t *e)
{
    free(e->origin);
    robots_free(e->rules);
    free(e->why);
    free(e->via);
    for (size_t i = 0; i < e->nparked; i++)
        frontier_item_clear(&e->parked[i]);
    free(e->parked);
    memset(e, 0, sizeof *e);
}

/* Drops a settled entry: out of the index and its lists, its slot freed. */
void rg_drop(robotsgate_t *g, rentry_t *e)
{
    uint32_t i = rg_index_of(g, e), *p = &g->bucket[e->hash & (g->cap - 1)];
    while (*p != i)
        p = &g->slot[*p].hnext;
    *p = e->hnext;
    rg_list_remove(g, &g->lru, L_USE, e);
    rg_list_remove(g, &g->exp[e->unavailable ? C_UNAVAILABLE : C_RULES], L_EXP, e);
    rg_entry_clear(e);
    e->hnext = g->free;
    g->free = i;
}

/* A slot for a new entry: a free one (one never used first: its page is
 * touched only now), else an expired entry's, else the least recently used
 * settled one's; NONE when every slot is pending.  The slot stays on the
 * free list until add_entry takes it. */
static uint32_t rg_make_room(robotsgate_t *g)
{
    uint64_t now = clock_now_ms();
    if (g->free == NONE && g->fresh < g->cap) {
        g->slot[g->fresh].hnext = NONE;
        g->free = g->fresh++;
    }
    rentry_t *victim = NULL;
    for (int c = 0; g->free == NONE && !victim && c < 2; c++) {
        rentry_t *e = rg_at(g, g->exp[c].head);
        if (e && e->expires_ms <= now)
            victim = e;
    }
    if (g->free == NONE && !victim)
        victim = rg_at(g, g->lru.tail);
    if (victim)
        rg_drop(g, victim);
    return g->free;
}

/* A new pending entry for origin, or NULL (out of memory, or every slot
 * pending). */
rentry_t *rg_add_entry(robotsgate_t *g, const char *origin)
{
    uint32_t i = rg_make_room(g);
    if (i == NONE)
        return NULL;
    rentry_t *e = &g->slot[i];
    char *o = strdup(origin);
    if (!o)
        return NULL;
    g->free = e->hnext;
    *e = (rentry_t){.origin = o, .hash = rg_hash_of(o), .link = {{NONE, NONE}, {NONE, NONE}}};
    uint32_t *b = &g->bucket[e->hash & (g->cap - 1)];
    e->hnext = *b;
    *b = i;
    rg_list_push(g, &g->pending, L_USE, e, 1);
    return e;
}

/* "Disallow all for now" lasts as long as the first retry backoff. */
uint32_t rg_unavailable_ttl_s(const robotsgate_t *g)
{
    uint32_t s = g->cfg->backoff_ms / 1000;
    return s < 1 ? 1 : s > ROBOTS_RETRY_TTL_S ? ROBOTS_RETRY_TTL_S : s;
}

uint64_t rg_local_ttl_ms(const robotsgate_t *g)
{
    uint64_t ttl = (uint64_t)g->cfg->robots_ttl_s * 1000u;
    return ttl && ttl < LOCAL_TTL_MS ? ttl : LOCAL_TTL_MS;
}

/* e has its rules now: from the pending list to the settled ones, with its
 * expiry set. */
void rg_settle_entry(robotsgate_t *g, rentry_t *e)
{
    rg_list_remove(g, &g->pending, L_USE, e);
    e->expires_ms =
        clock_now_ms() + (e->unavailable ? rg_unavailable_ttl_s(g) * 1000u : rg_local_ttl_ms(g));
    rg_list_push(g, &g->lru, L_USE, e, 1);
    rg_list_push(g, &g->exp[e->unavailable ? C_UNAVAILABLE : C_RULES], L_EXP, e, 0);
}

/* A settled entry was used: to the front of the LRU list. */
void rg_touch(robotsgate_t *g, rentry_t *e)
{
    if (g->lru.head == rg_index_of(g, e))
        return;
    rg_list_remove(g, &g->lru, L_USE, e);
    rg_list_push(g, &g->lru, L_USE, e, 1);
}
