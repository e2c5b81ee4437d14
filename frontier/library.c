/*
 * library.c -- the frontier's Redis Functions library: the names its
 * functions are registered under, and Redis errors mapped back to the .lua
 * file and line they came from.
 *
 * DESIGN: the Lua lives in frontier/lua/ (one file per registered function,
 * plus shared helpers); the build (embed_lua.cmake) assembles it into one
 * library, fr_lua_library, named "crawler_frontier_<hash>" with functions
 * "cf<hash>_<name>", where <hash> is taken from the sources at build time:
 * two crawler builds on one Redis never run each other's code.  Each source
 * file's lines are contiguous in the library (fr_lua_files says where each
 * starts), so a line number in a Redis error ("user_function:N") names one
 * line of one file.  Every state change of the frontier is one FCALL of this
 * library, hence atomic in Redis; the handle sets it on its link (handle.c),
 * which loads it on every connection and again whenever FCALL says the
 * function is missing (server restarted, FUNCTION FLUSH).  Why Functions
 * rather than EVALSHA: with EVALSHA every call re-ran the helper
 * definitions (measured: 14 of the 28 us of an acknowledge on this
 * machine); a library defines them once.
 */
#include "frontier_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registered names: frontier/lua/<name>.lua registers FN .. <name>. */
static const char *const names[FR_SCRIPT_COUNT] = {
    [FR_CLAIM] = "claim",
    [FR_FINISH] = "finish",
    [FR_SEED] = "seed",
    [FR_RETRY] = "retry",
    [FR_RELEASE] = "release",
    [FR_HEARTBEAT] = "heartbeat",
    [FR_BYE] = "bye",
    [FR_CHECK] = "check",
    [FR_ROBOTS_LOOK] = "robots_look",
    [FR_ROBOTS_STORE] = "robots_store",
    [FR_CONTROL] = "control",
    [FR_GRANT] = "grant",
    [FR_SETTINGS] = "settings",
    [FR_DEDUP] = "dedup",
    [FR_BLOCK] = "block",
    [FR_DROP] = "drop",
    [FR_IPGATE] = "ipgate",
};

const char *fr_script_name(int id)
{
    return id >= 0 && id < FR_SCRIPT_COUNT ? names[id] : "?";
}

const char *fr_library(char fn[FR_SCRIPT_COUNT][FR_FN_NAME])
{
    for (int i = 0; i < FR_SCRIPT_COUNT; i++)
        snprintf(fn[i], FR_FN_NAME, "cf%s_%s", fr_lua_hash, names[i]);
    return fr_lua_library;
}

/* Writes where line `line` of the library comes from: "claim.lua:12", or
 * "library:N" for the generated lines before the first file. */
static void where(long line, char *buf, size_t buflen)
{
    for (size_t i = 0; i < fr_lua_nfiles; i++) {
        const fr_lua_file_t *lf = &fr_lua_files[i];
        if (line >= lf->first_line && line < lf->first_line + lf->lines) {
            snprintf(buf, buflen, "%s:%ld", lf->name, line - lf->first_line + 1);
            return;
        }
    }
    snprintf(buf, buflen, "library:%ld", line);
}

void fr_lua_error(const char *msg, char *buf, size_t buflen)
{
    static const char tag[] = "user_function:";
    const size_t tl = sizeof tag - 1;
    size_t o = 0;
    if (buflen == 0)
        return;
    while (*msg && o + 1 < buflen) {
        char *end = NULL;
        long line = strncmp(msg, tag, tl) == 0 ? strtol(msg + tl, &end, 10) : 0;
        if (line <= 0 || !end || end == msg + tl) {
            buf[o++] = *msg++;
            continue;
        }
        char w[FR_PREFIX_MAX];
        where(line, w, sizeof w);
        size_t wl = strlen(w);
        if (wl > buflen - 1 - o)
            wl = buflen - 1 - o;
        memcpy(buf + o, w, wl);
        o += wl;
        msg = end;
    }
    buf[o] = '\0';
}
