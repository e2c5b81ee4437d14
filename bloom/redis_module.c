/*
 * redis_module.c -- crawler_redis.so, an optional Redis module with one
 * command that sets a Bloom filter's bits natively:
 *
 *     CRAWLER.BFADD <block key> <k> <offsets>
 *
 * <offsets> is binary: n groups of k bit offsets, each a little-endian
 * uint32 (a block holds at most 2^32 bits).  For each group the command sets
 * its k bits and answers one character: '1' if one of them was 0 (the item
 * was new), '0' if all were set.  The bits and their order are exactly those
 * of BITFIELD <key> SET u1 <o> 1 (bit 0 is the most significant bit of byte
 * 0), so a filter is the same whichever way it was written, and bloom/'s
 * client (BITFIELD) reads it unchanged.  A missing key is created and a short
 * one grown, zero-filled, as BITFIELD would.  Empty offsets answer "" and
 * touch nothing (the frontier's scripts call that first, to fail before
 * their first write if the module is gone).
 *
 * Why: from a Lua script, each bit set through BITFIELD costs Redis about
 * 4.8k instructions (four argument objects, op parsing, a Lua reply entry,
 * the offset's own Lua string); here a group of k bits costs a few hundred
 * and the script passes one argument per block run.  The frontier's scripts
 * call it when Redis has it (frontier.h); without it they use BITFIELD.
 *
 * Load it with redis-server --loadmodule /path/to/crawler_redis.so (or a
 * loadmodule line in redis.conf).  A call that set a bit is replicated
 * verbatim, so replicas and AOF loading need the module too.  Runs in
 * Redis's main thread; keeps no state.
 */
#include "redis_module_abi.h"

#include <stdint.h>
#include <stdlib.h>

static rm_api_t rm;

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parses a k of 1..32 from s; 0 if it is not one. */
static unsigned parse_k(const char *s, size_t len)
{
    unsigned k = 0;
    if (len == 0 || len > 2)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        k = k * 10 + (unsigned)(s[i] - '0');
    }
    return k >= 1 && k <= 32 ? k : 0;
}

static int bfadd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4)
        return rm.WrongArity(ctx);
    size_t klen, len;
    const char *ks = rm.StringPtrLen(argv[2], &klen);
    const unsigned char *offs = (const unsigned char *)rm.StringPtrLen(argv[3], &len);
    unsigned k = parse_k(ks, klen);
    if (k == 0)
        return rm.ReplyWithError(ctx, "ERR k must be an integer of 1 to 32");
    if (len % (4 * (size_t)k) != 0)
        return rm.ReplyWithError(ctx, "ERR offsets must be groups of k little-endian uint32");
    size_t n = len / (4 * (size_t)k);
    uint64_t need = 0; /* bytes the highest offset needs */
    for (size_t i = 0; i < len; i += 4) {
        uint64_t b = (uint64_t)le32(offs + i) / 8 + 1;
        if (b > need)
            need = b;
    }
    RedisModuleKey *key = rm.OpenKey(ctx, argv[1], RM_READ | RM_WRITE);
    int type = rm.KeyType(key);
    if (type != RM_KEYTYPE_EMPTY && type != RM_KEYTYPE_STRING) {
        rm.CloseKey(key);
        return rm.ReplyWithError(
            ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    if (n == 0) { /* nothing to set: the frontier's probe that the module is loaded */
        rm.CloseKey(key);
        return rm.ReplyWithStringBuffer(ctx, "", 0);
    }
    size_t have = 0;
    unsigned char *bits = NULL;
    if (type == RM_KEYTYPE_STRING)
        bits = (unsigned char *)rm.StringDMA(key, &have, RM_WRITE);
    if (type == RM_KEYTYPE_EMPTY || have < need) {
        if (rm.StringTruncate(key, (size_t)need) != RM_OK) {
            rm.CloseKey(key);
            return rm.ReplyWithError(ctx, "ERR cannot grow the filter block");
        }
        bits = (unsigned char *)rm.StringDMA(key, &have, RM_WRITE);
    }
    char small[1024];
    char *out = n <= sizeof small ? small : malloc(n);
    if (!out) {
        rm.CloseKey(key);
        return rm.ReplyWithError(ctx, "ERR out of memory");
    }
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = offs + i * 4 * k;
        int fresh = 0;
        for (unsigned j = 0; j < k; j++) {
            uint32_t o = le32(p + 4 * j);
            unsigned char bit = (unsigned char)(0x80u >> (o & 7));
            if (!(bits[o >> 3] & bit)) {
                fresh = 1;
                bits[o >> 3] |= bit;
            }
        }
        out[i] = fresh ? '1' : '0';
        changed |= fresh;
    }
    rm.CloseKey(key);
    if (changed) /* replicas and the AOF get only calls that set a bit */
        rm.ReplicateVerbatim(ctx);
    int rc = rm.ReplyWithStringBuffer(ctx, out, n);
    if (out != small)
        free(out);
    return rc;
}

__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv, int argc);
int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    (void)argv;
    (void)argc;
    if (rm_init(ctx, &rm, "crawler") != RM_OK)
        return RM_ERR;
    return rm.CreateCommand(ctx, "crawler.bfadd", bfadd, "write deny-oom", 1, 1, 1);
}
