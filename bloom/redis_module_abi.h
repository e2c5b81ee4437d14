/*
 * redis_module_abi.h -- the few entry points of Redis's module API that
 * redis_module.c uses, declared by hand: Debian ships redis-server but no
 * module header.
 *
 * A module is a shared object exporting RedisModule_OnLoad(ctx, argv, argc).
 * The first pointer-sized field of ctx at that call is Redis's GetApi
 * function, which fills a function pointer by the API's name
 * ("RedisModule_OpenKey", ...); every other call goes through the pointers it
 * filled.  Names, signatures and constants are those of Redis's module API
 * reference (API version 1, stable since Redis 4).
 */
#ifndef REDIS_MODULE_ABI_H
#define REDIS_MODULE_ABI_H

#include <stddef.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef int (*rm_cmd_fn)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#define RM_OK 0
#define RM_ERR 1
#define RM_APIVER_1 1
#define RM_READ (1 << 0)
#define RM_WRITE (1 << 1)
#define RM_KEYTYPE_EMPTY 0
#define RM_KEYTYPE_STRING 1

typedef struct rm_api {
    void (*SetModuleAttribs)(RedisModuleCtx *, const char *name, int ver, int apiver);
    int (*CreateCommand)(RedisModuleCtx *, const char *name, rm_cmd_fn fn, const char *flags,
                         int firstkey, int lastkey, int keystep);
    RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *name, int mode);
    void (*CloseKey)(RedisModuleKey *);
    int (*KeyType)(RedisModuleKey *);
    char *(*StringDMA)(RedisModuleKey *, size_t *len, int mode);
    int (*StringTruncate)(RedisModuleKey *, size_t newlen);
    const char *(*StringPtrLen)(const RedisModuleString *, size_t *len);
    int (*ReplyWithError)(RedisModuleCtx *, const char *err);
    int (*ReplyWithStringBuffer)(RedisModuleCtx *, const char *buf, size_t len);
    int (*WrongArity)(RedisModuleCtx *);
    int (*ReplicateVerbatim)(RedisModuleCtx *);
} rm_api_t;

/* Fills api through the GetApi function found in ctx and registers the
 * module under name.  RM_OK, or RM_ERR if an entry point is missing. */
static inline int rm_init(RedisModuleCtx *ctx, rm_api_t *api, const char *name)
{
    int (*get)(const char *, void *) = (int (*)(const char *, void *))((void **)ctx)[0];
    struct {
        const char *name;
        void *slot;
    } want[] = {
        {"RedisModule_SetModuleAttribs", &api->SetModuleAttribs},
        {"RedisModule_CreateCommand", &api->CreateCommand},
        {"RedisModule_OpenKey", &api->OpenKey},
        {"RedisModule_CloseKey", &api->CloseKey},
        {"RedisModule_KeyType", &api->KeyType},
        {"RedisModule_StringDMA", &api->StringDMA},
        {"RedisModule_StringTruncate", &api->StringTruncate},
        {"RedisModule_StringPtrLen", &api->StringPtrLen},
        {"RedisModule_ReplyWithError", &api->ReplyWithError},
        {"RedisModule_ReplyWithStringBuffer", &api->ReplyWithStringBuffer},
        {"RedisModule_WrongArity", &api->WrongArity},
        {"RedisModule_ReplicateVerbatim", &api->ReplicateVerbatim},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (get(want[i].name, want[i].slot) != RM_OK)
            return RM_ERR;
    api->SetModuleAttribs(ctx, name, 1, RM_APIVER_1);
    return RM_OK;
}

#endif
