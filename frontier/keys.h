/*
 * keys.h -- the names of a crawl's Redis keys: the one place that spells the
 * crawl's key prefix with its hash tag, and the builders every key name of
 * the frontier goes through.
 *
 * Every key of crawl NAME is   PREFIX suffix            (one key)
 *                           or PREFIX suffix <member>   (a family: one key per
 *                                                        origin, worker, ...)
 * where PREFIX is FR_PREFIX_OPEN NAME FR_PREFIX_CLOSE: the braces make NAME a
 * Redis Cluster hash tag, so all keys of a crawl live in one slot and a script
 * may touch any of them.  The suffixes, which keys are families, and their
 * types are listed once, in keys.def; docs/keys.md documents each.
 *
 * Who uses this: frontier/'s own files (and the tests, to look at Redis).
 * Other modules never build a key name: they call the frontier's functions
 * (frontier.h).  Help texts print FRONTIER_KEY_PREFIX_HELP.
 *
 * Everything here is pure (no Redis access) and thread-safe.
 */
#ifndef FRONTIER_KEYS_H
#define FRONTIER_KEYS_H

#include <stddef.h>

#include "frontier.h"

/* The prefix around the crawl name, spelled here only. */
#define FR_PREFIX_OPEN "crawler:{"
#define FR_PREFIX_CLOSE "}:"
/* How the prefix reads in help texts and messages ("...{NAME}:"). */
#define FRONTIER_KEY_PREFIX_HELP FR_PREFIX_OPEN "NAME" FR_PREFIX_CLOSE

/* Between the crawl name and its shard number in a shard's hash tag:
 * shard s > 0 of crawl NAME is FR_PREFIX_OPEN "NAME/s" FR_PREFIX_CLOSE
 * (a crawl name never holds a '/'); shard 0 is the crawl's own prefix. */
#define FR_SHARD_SEP "/"
/* How a shard's prefix reads in help texts ("...{NAME/<shard>}:"). */
#define FRONTIER_SHARD_PREFIX_HELP FR_PREFIX_OPEN "NAME" FR_SHARD_SEP "<shard>" FR_PREFIX_CLOSE
/* Bytes of the longest prefix, with its NUL ("/" and a shard number below
 * FRONTIER_MAX_SHARDS, 4 digits at most, included). */
#define FR_PREFIX_MAX                                                                              \
    (sizeof FR_PREFIX_OPEN - 1 + FRONTIER_MAX_CRAWL_NAME + 5 + sizeof FR_PREFIX_CLOSE)
/* Longest suffix in keys.def, bytes (checked at compile time in keys.c). */
#define FR_SUFFIX_MAX 24
/* Bytes of the longest single key name (not a family member), with its NUL. */
#define FR_KEY_MAX (FR_PREFIX_MAX + FR_SUFFIX_MAX)

/* One id per line of keys.def: FR_K_READY, FR_K_QUEUE, ... */
typedef enum fr_key_id {
#define FR_KEY(id, suffix, type) FR_K_##id,
#define FR_KEYS(id, suffix, type) FR_K_##id,
#include "keys.def"
#undef FR_KEY
#undef FR_KEYS
    FR_K_COUNT
} fr_key_id_t;

/* The suffix of key id ("ready", "q:", ...), its Redis type as keys.def
 * writes it ("zset", ..., "bloom" for the filter: seen:meta and seen:b:<i>),
 * and whether it is a family (1) or one key (0).  NULL / -1 for an id out of
 * range.  Static strings. */
const char *fr_key_suffix(fr_key_id_t id);
const char *fr_key_type(fr_key_id_t id);
int fr_key_is_family(fr_key_id_t id);

/* Writes the crawl's key prefix into buf (NUL-terminated); crawl NULL: the
 * default crawl.  0, or CRAWL_EINVAL for a bad crawl name (1 to
 * FRONTIER_MAX_CRAWL_NAME of [A-Za-z0-9._-]) or a buffer shorter than the
 * prefix (FR_PREFIX_MAX always fits). */
int fr_prefix(const char *crawl, char *buf, size_t buflen);
/* The key prefix of shard s of the crawl (s 0: fr_prefix's); same results,
 * and CRAWL_EINVAL for s >= FRONTIER_MAX_SHARDS. */
int fr_prefix_shard(const char *crawl, unsigned s, char *buf, size_t buflen);

/* Writes key id of the crawl whose prefix is `prefix` (as fr_prefix wrote
 * it) into buf, NUL-terminated: the prefix, the suffix, and for a family the
 * member (mlen bytes, binary-safe; the caller's Redis command must then take
 * the length returned, not strlen, if the member may hold a NUL).  A single
 * key takes no member (NULL, 0).  Returns the key's length, or
 * CRAWL_EINVAL for an id out of range, a family without a member (NULL;
 * an empty member is "" with mlen 0), a single key with one, or a buffer too
 * short (FR_KEY_MAX fits any single key); buf is then unspecified. */
int fr_key_build(const char *prefix, fr_key_id_t id, const char *member, size_t mlen, char *buf,
                 size_t buflen);

/* Appends key id (built as fr_key_build does, member may be NULL for a
 * single key) as one argument of the command being built in a (rconn.h),
 * copied into the builder's chunks.  Returns the key (valid until the
 * builder is freed), or NULL: out of memory (a->oom set, as every rconn_arg_*
 * call does) or a bad id/member combination (a->oom set too, so that the
 * command is never sent). */
struct rconn_args;
const char *fr_key_arg(struct rconn_args *a, const char *prefix, fr_key_id_t id, const char *member,
                       size_t mlen);

#endif
