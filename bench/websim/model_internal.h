/*
 * model_internal.h -- what model.c, plan.c and links.c share: the hash tags
 * that keep each kind of draw independent, and the random helpers.
 */
#ifndef WEBSIM_MODEL_INTERNAL_H
#define WEBSIM_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum {
    TAG_HOST = 1,
    TAG_IP,
    TAG_SECTION,
    TAG_SID,
    TAG_MIRROR,
    TAG_KIND,
    TAG_LINK,
    TAG_SIZE,
    TAG_LAT,
    TAG_DEEP,
    TAG_BODY
};

#define WS_CAL_START (2026u * 12u + 11u) /* the calendar opens on December 2026 */
#define WS_FILES 20u                     /* /files/<n>.pdf, n < this */
#define WS_LOOP_MAX 1000000u             /* /loop/<k>, k < this */

/* splitmix64 step. */
uint64_t ws_next(uint64_t *s);
/* [0, 1) from 64 random bits. */
double ws_u01(uint64_t x);
/* A lognormal draw with that median and sigma. */
double ws_lognormal(uint64_t *s, double median, double sigma);
/* Words for section names, references, deep paths and search queries. */
extern const char *const ws_words[];
#define WS_NWORDS 32u
/* The ?ref= values of duplicate copies. */
extern const char *const ws_refs[];
#define WS_NREFS 4u

/* Sets p->location to hop k of page i's redirect chain of `hops` hops (s: the
 * page's draw state after its kind). */
void ws_plan_redirect(const ws_cfg_t *c, ws_plan_t *p, uint64_t i, uint32_t k, uint32_t hops,
                      uint64_t s);
/* A relative reference from directory dir ("/a/b/") to target (a path with
 * its query) into out: "../c/d.html", "e.html?x", "./" ... */
void ws_rel_ref(const char *dir, const char *target, char *out, size_t cap);

#endif
