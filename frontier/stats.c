/*
 * stats.c -- reading a crawl's counters and worker records, and deleting a
 * crawl.  Works on a bare redisContext (no handle, no scripts): `crawler
 * stats` and `crawler reset` use it from anywhere.
 *
 * DESIGN: stats are one pipelined round trip of read-only commands over the
 * keys docs/keys.md lists (TIME first, so "live" is judged by the server's
 * clock), the control hash (control.c) last; key names come from keys.h.
 * Reset walks SCAN MATCH over the crawl's key prefix followed by "*" (the
 * prefix's glob characters escaped) and UNLINKs each batch: every key of
 * keys.def, families included, and the Bloom filter's; the prefix ends
 * after the hash tag's closing brace, so crawl "a" never matches crawl "ab".
 */
#include "frontier_internal.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_now(const redisReply *t, uint64_t *now)
{
    uint64_t s, us;
    if (!t || t->type != REDIS_REPLY_ARRAY || t->elements != 2 || fr_reply_u64(t->element[0], &s) ||
        fr_reply_u64(t->element[1], &us))
        return -1;
    *now = s * 1000 + us / 1000;
    return 0;
}

static uint64_t *stat_field(frontier_stats_t *s, const char *name)
{
    static const struct {
        const char *name;
        size_t off;
    } map[] = {
#define F(n, m) {n, offsetof(frontier_stats_t, m)}
        F("queued", queued),
        F("inflight", in_flight),
        F("claimed", claimed),
        F("fetched", fetched),
        F("bytes", bytes),
        F("retried", retried),
        F("dead", dead),
        F("seen_links", seen_links),
        F("new_links", new_links),
        F("status_2xx", status_2xx),
        F("status_3xx", status_3xx),
        F("status_4xx", status_4xx),
        F("status_5xx", status_5xx),
        F("status_other", status_other),
        F("errors", errors),
        F("enqueued", enqueued),
        F("seeds", seeds),
        F("reclaimed", reclaimed),
        F("released", released),
        F("skipped_links", skipped_links),
        F("capped_pages", capped_pages),
        F("blocked", blocked),
        F("blocked_links", blocked_links),
        F("domain_links", domain_links),
#undef F
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, name))
            return (uint64_t *)((char *)s + map[i].off);
    return NULL;
}

/* Fills counters from an HGETALL reply; negative gauges read as 0. */
static int read_counters(const redisReply *h, frontier_stats_t *s)
{
    if (h->type != REDIS_REPLY_ARRAY || h->elements % 2)
        return -1;
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *k = h->element[i], *v = h->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            return -1;
        uint64_t *dst = stat_field(s, k->str), val = 0;
        if (dst && fr_reply_u64(v, &val) == 0)
            *dst = val;
    }
    return 0;
}

static void add_kind(frontier_stats_t *s, const char *kind, uint64_t n)
{
    for (size_t i = 0; i < s->nkinds; i++) /* another shard's count of it: summed */
        if (!strcmp(s->kinds[i].kind, kind)) {
            n += s->kinds[i].count;
            memmove(&s->kinds[i], &s->kinds[i + 1], (s->nkinds - i - 1) * sizeof s->kinds[0]);
            s->nkinds--;
            break;
        }
    size_t at = s->nkinds;
    while (at > 0 && s->kinds[at - 1].count < n)
        at--;
    if (at >= FRONTIER_STATS_MAX_KINDS)
        return;
    size_t last = s->nkinds < FRONTIER_STATS_MAX_KINDS ? s->nkinds : FRONTIER_STATS_MAX_KINDS - 1;
    memmove(&s->kinds[at + 1], &s->kinds[at], (last - at) * sizeof s->kinds[0]);
    snprintf(s->kinds[at].kind, sizeof s->kinds[at].kind, "%s", kind);
    s->kinds[at].count = n;
    if (s->nkinds < FRONTIER_STATS_MAX_KINDS)
        s->nkinds++;
}

static int read_kinds(const redisReply *h, frontier_stats_t *s)
{
    if (h->type != REDIS_REPLY_ARRAY || h->elements % 2)
        return -1;
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        uint64_t n;
        if (h->element[i]->type == REDIS_REPLY_STRING && fr_reply_u64(h->element[i + 1], &n) == 0)
            add_kind(s, h->element[i]->str, n);
    }
    return 0;
}

static uint32_t count_live(const redisReply *w, uint64_t now)
{
    uint32_t live = 0;
    if (w->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i + 1 < w->elements; i += 2) {
        const redisReply *sc = w->element[i + 1];
        if (sc->type == REDIS_REPLY_STRING && strtod(sc->str, NULL) >= (double)now)
            live++;
    }
    return live;
}

#define STATS_CMDS 14
/* Sends the stats commands (TIME first, then one read of a key each). */
static int send_stats(struct redisContext *rc, const char *p)
{
    static const struct {
        const char *fmt;
        fr_key_id_t key;
    } q[STATS_CMDS] = {{"TIME", FR_K_COUNT},
                       {"HGETALL %s", FR_K_STATS},
                       {"ZCARD %s", FR_K_DELAYED},
                       {"ZCARD %s", FR_K_READY},
                       {"LLEN %s", FR_K_DEAD},
                       {"HLEN %s", FR_K_HOSTS},
                       {"ZRANGE %s 0 -1 WITHSCORES", FR_K_WORKERS},
                       {"HGETALL %s", FR_K_ERRORS},
                       {"HGETALL %s", FR_K_CONTROL},
                       {"HLEN %s", FR_K_HADMIT}, /* an older build's count of hosts */
                       {"LLEN %s", FR_K_FRESH},
                       {"ZCARD %s", FR_K_HSLOW},
                       {"ZRANGE %s +inf -inf BYSCORE REV LIMIT 0 5 WITHSCORES", FR_K_HSLOW},
                       {"HLEN %s", FR_K_BLOCKS}}; /* its blocks and their token */
    _Static_assert(FRONTIER_STATS_SLOWEST == 5, "the ZRANGE above asks for 5");
    char key[FR_KEY_MAX];
    for (int i = 0; i < STATS_CMDS; i++) {
        int ok = q[i].key == FR_K_COUNT ? redisAppendCommand(rc, q[i].fmt)
                 : fr_key_build(p, q[i].key, NULL, 0, key, sizeof key) < 0
                     ? REDIS_ERR
                     : redisAppendCommand(rc, q[i].fmt, key);
        if (ok != REDIS_OK)
            return CRAWL_EREDIS;
    }
    return 0;
}

/* The counters of one shard's reading, added to out's. */
static void add_counters(frontier_stats_t *out, const frontier_stats_t *s)
{
    uint64_t *o = &out->queued;
    const uint64_t *v = &s->queued;
    for (size_t i = 0; i < 6; i++) /* queued .. dead */
        o[i] += v[i];
    out->claimed += s->claimed;
    out->fetched += s->fetched;
    out->bytes += s->bytes;
    out->retried += s->retried;
    out->seen_links += s->seen_links;
    out->new_links += s->new_links;
    out->status_2xx += s->status_2xx;
    out->status_3xx += s->status_3xx;
    out->status_4xx += s->status_4xx;
    out->status_5xx += s->status_5xx;
    out->errors += s->errors;
    out->enqueued += s->enqueued;
    out->seeds += s->seeds;
    out->reclaimed += s->reclaimed;
    out->released += s->released;
    out->blocked += s->blocked;
    out->blocked_links += s->blocked_links;
    out->domain_links += s->domain_links;
    out->skipped_links += s->skipped_links;
    out->status_other += s->status_other;
    out->capped_pages += s->capped_pages;
}

/* Reads one shard's replies r[0..STATS_CMDS) into out (shard 0: the
 * time, the workers and the control hash too). */
/* Merges one shard's slowest hosts (host, delay pairs) into out's,
 * slowest first. */
static int read_slowest(const redisReply *r, frontier_stats_t *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2)
        return -1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        uint64_t d;
        const redisReply *h = r->element[i];
        if (h->type != REDIS_REPLY_STRING || fr_reply_u64(r->element[i + 1], &d) < 0)
            return -1;
        size_t at = out->nslow;
        while (at > 0 && out->slow[at - 1].delay_ms < d)
            at--;
        if (at >= FRONTIER_STATS_SLOWEST)
            continue;
        size_t last = out->nslow < FRONTIER_STATS_SLOWEST ? out->nslow : FRONTIER_STATS_SLOWEST - 1;
        memmove(&out->slow[at + 1], &out->slow[at], (last - at) * sizeof out->slow[0]);
        snprintf(out->slow[at].host, sizeof out->slow[at].host, "%s", h->str);
        out->slow[at].delay_ms = d;
        if (out->nslow < FRONTIER_STATS_SLOWEST)
            out->nslow++;
    }
    return 0;
}

static int read_shard(redisReply **r, unsigned shard, frontier_stats_t *out)
{
    frontier_stats_t s;
    uint64_t legacy = 0, fresh = 0, blocks = 0;
    memset(&s, 0, sizeof s);
    if (get_now(r[0], &s.now_ms) || read_counters(r[1], &s) || fr_reply_u64(r[2], &s.delayed) ||
        fr_reply_u64(r[3], &s.ready_hosts) || fr_reply_u64(r[4], &s.dead) ||
        fr_reply_u64(r[5], &s.hosts) || read_kinds(r[7], out) ||
        fr_control_read(r[8], &s.control) < 0 || fr_reply_u64(r[9], &legacy) ||
        fr_reply_u64(r[10], &fresh) || fr_reply_u64(r[11], &s.paced_hosts) ||
        read_slowest(r[12], out) < 0 || fr_reply_u64(r[13], &blocks))
        return CRAWL_EREPLY;
    out->paced_hosts += s.paced_hosts;
    s.ready_hosts += fresh; /* (P fresh: the hosts claimable now, not in ready) */
    if (legacy > s.hosts)
        s.hosts = legacy; /* a crawl an older build began: hosts it has not touched since */
    add_counters(out, &s);
    out->shard_added[shard] = s.seeds + s.new_links;
    if (s.seeds + s.new_links > out->bloom_added_max)
        out->bloom_added_max = s.seeds + s.new_links;
    if (shard == 0) {
        out->now_ms = s.now_ms;
        out->workers = count_live(r[6], s.now_ms);
        out->control = s.control;
        out->blocks = blocks ? blocks - 1 : 0; /* (~gen) */
    }
    return 0;
}

int frontier_stats(struct redisContext *rc, const char *crawl, frontier_stats_t *out)
{
    return frontier_stats_routed(rc, NULL, crawl, out);
}

/* frontier_stats_routed's readings, on conn[s] for shard s. */
static int stats_read(struct redisContext **conn, const char *crawl, unsigned n,
                      frontier_stats_t *out);

int frontier_stats_routed(struct redisContext *rc, const rconn_t *r, const char *crawl,
                          frontier_stats_t *out)
{
    char p[FR_PREFIX_MAX], why[FR_ERROR_MAX];
    if (!rc || !out || fr_prefix(crawl, p, sizeof p) < 0)
        return CRAWL_EINVAL;
    memset(out, 0, sizeof *out);
    fr_shard_set_t set;
    int rc_ = fr_shards_open(rc, r, crawl, &set, why, sizeof why);
    if (rc_ < 0)
        return rc_;
    out->shards = set.n;
    rc_ = stats_read(set.conn, crawl, set.n, out);
    fr_shards_close(&set);
    return rc_;
}

static int stats_read(struct redisContext **conn, const char *crawl, unsigned n,
                      frontier_stats_t *out)
{
    char p[FR_PREFIX_MAX];
    int rc_ = 0;
    /* every shard's reading in one round trip (one a server), summed */
    for (unsigned s = 0; s < n; s++)
        if (fr_prefix_shard(crawl, s, p, sizeof p) < 0 || send_stats(conn[s], p) < 0)
            return CRAWL_EREDIS;
    redisReply *r[STATS_CMDS] = {0};
    for (unsigned s = 0; s < n; s++) {
        int got = 0;
        for (int i = 0; i < STATS_CMDS; i++) {
            void *v = NULL;
            if (redisGetReply(conn[s], &v) != REDIS_OK || !v)
                return CRAWL_EREDIS; /* the connection is dead: nothing left to read */
            r[i] = v;
            got++;
            if (r[i]->type == REDIS_REPLY_ERROR && rc_ == 0)
                rc_ = fr_reply_error(r[i]); /* a key of the wrong type: CRAWL_EWRONGTYPE */
        }
        if (rc_ == 0)
            rc_ = read_shard(r, s, out);
        for (int i = 0; i < got; i++)
            freeReplyObject(r[i]);
    }
    if (rc_ == 0)
        out->bloom_added = out->seeds + out->new_links;
    return rc_;
}

/* ---- workers ------------------------------------------------------------- */

static void fill_worker(frontier_worker_info_t *w, const redisReply *h, uint64_t leased)
{
    w->leased = leased > UINT32_MAX ? UINT32_MAX : (uint32_t)leased;
    if (h->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *k = h->element[i], *v = h->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        uint64_t u = 0;
        int isnum = fr_reply_u64(v, &u) == 0;
        if (!strcmp(k->str, "host"))
            snprintf(w->host, sizeof w->host, "%s", v->str);
        else if (!strcmp(k->str, "pid") && isnum)
            w->pid = (long)u;
        else if (!strcmp(k->str, "started") && isnum)
            w->started_ms = u;
        else if (!strcmp(k->str, "last") && isnum)
            w->last_ms = u;
        else if (!strcmp(k->str, "pages") && isnum)
            w->pages = u;
        else if (!strcmp(k->str, "in_flight") && isnum)
            w->in_flight = u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
        else if (!strcmp(k->str, "pages_per_s"))
            w->pages_per_s = strtod(v->str, NULL);
    }
}

/* Sends HGETALL worker:<id> and HLEN lease:<id> for each of the n workers
 * in z; the key names are built first, so that running out of memory sends
 * nothing. */
static int send_worker_reads(struct redisContext *rc, const char *p, const redisReply *z, size_t n)
{
    rconn_args_t k;
    rconn_args_init(&k);
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = z->element[2 * i];
        fr_key_arg(&k, p, FR_K_WORKER, id->str, id->len);
        fr_key_arg(&k, p, FR_K_LEASE, id->str, id->len);
    }
    int rc_ = k.oom ? CRAWL_ENOMEM : 0;
    for (size_t i = 0; rc_ == 0 && i < n; i++)
        if (redisAppendCommand(rc, "HGETALL %b", k.v[2 * i], k.len[2 * i]) != REDIS_OK ||
            redisAppendCommand(rc, "HLEN %b", k.v[2 * i + 1], k.len[2 * i + 1]) != REDIS_OK)
            rc_ = CRAWL_EREDIS;
    rconn_args_free(&k);
    return rc_;
}

static int read_workers(struct redisContext *rc, const char *p, const redisReply *z, uint64_t now,
                        frontier_worker_info_t *w, size_t n)
{
    int rc_ = send_worker_reads(rc, p, z, n);
    if (rc_ < 0)
        return rc_;
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = z->element[2 * i];
        snprintf(w[i].id, sizeof w[i].id, "%s", id->str);
        w[i].lease_until_ms = (uint64_t)strtod(z->element[2 * i + 1]->str, NULL);
        w[i].live = w[i].lease_until_ms >= now;
    }
    for (size_t i = 0; i < n; i++) {
        void *h = NULL, *l = NULL;
        if (redisGetReply(rc, &h) != REDIS_OK || redisGetReply(rc, &l) != REDIS_OK) {
            if (h)
                freeReplyObject(h);
            return CRAWL_EREDIS;
        }
        uint64_t leased = 0;
        if (fr_reply_u64(l, &leased) < 0)
            rc_ = CRAWL_EREPLY;
        fill_worker(&w[i], h, leased);
        freeReplyObject(h);
        freeReplyObject(l);
    }
    return rc_;
}

int frontier_workers(struct redisContext *rc, const char *crawl, frontier_worker_info_t **out,
                     size_t *n)
{
    char p[FR_PREFIX_MAX];
    if (!rc || !out || !n || fr_prefix(crawl, p, sizeof p) < 0)
        return CRAWL_EINVAL;
    *out = NULL;
    *n = 0;
    redisReply *t = redisCommand(rc, "TIME");
    redisReply *z = t ? redisCommand(rc, "ZRANGE %sworkers 0 -1 WITHSCORES", p) : NULL;
    uint64_t now = 0;
    int rc_ = !t || !z ? CRAWL_EREDIS : 0;
    if (rc_ == 0 && (get_now(t, &now) || z->type != REDIS_REPLY_ARRAY || z->elements % 2))
        rc_ = CRAWL_EREPLY;
    for (size_t i = 0; rc_ == 0 && i < z->elements; i++)
        if (z->element[i]->type != REDIS_REPLY_STRING)
            rc_ = CRAWL_EREPLY;
    size_t cnt = rc_ == 0 ? z->elements / 2 : 0;
    frontier_worker_info_t *w = cnt ? calloc(cnt, sizeof *w) : NULL;
    if (cnt && !w)
        rc_ = CRAWL_ENOMEM;
    if (rc_ == 0 && cnt)
        rc_ = read_workers(rc, p, z, now, w, cnt);
    if (rc_ == 0) {
        *out = w;
        *n = cnt;
    } else {
        free(w);
    }
    if (t)
        freeReplyObject(t);
    if (z)
        freeReplyObject(z);
    return rc_;
}

/* ---- reset --------------------------------------------------------------- */

/* The crawl's key prefix and "*", the prefix's glob characters escaped;
 * shards: the prefix of its shards 1.. (the name, FR_SHARD_SEP and "*" in the hash tag). */
static int reset_pattern(const char *crawl, int shards, const char *tail, char *buf, size_t buflen)
{
    char p[FR_PREFIX_MAX + 2];
    if (!crawl || fr_prefix(crawl, p, sizeof p) < 0)
        return CRAWL_EINVAL;
    if (shards) { /* "...{NAME}:" -> "...{NAME/" ; the "*}:" added below */
        size_t l = strlen(p) - (sizeof FR_PREFIX_CLOSE - 1);
        snprintf(p + l, sizeof p - l, "%s", FR_SHARD_SEP);
    }
    size_t o = 0;
    for (const char *s = p; *s; s++) {
        if (o + 3 >= buflen)
            return CRAWL_EINVAL;
        if (strchr("*?[]\\^", *s))
            buf[o++] = '\\';
        buf[o++] = *s;
    }
    if (shards) {
        if (o + sizeof FR_PREFIX_CLOSE + 1 >= buflen)
            return CRAWL_EINVAL;
        memcpy(buf + o, "*" FR_PREFIX_CLOSE, sizeof FR_PREFIX_CLOSE);
        o += sizeof FR_PREFIX_CLOSE;
    }
    if (o + strlen(tail) + 1 > buflen)
        return CRAWL_EINVAL;
    memcpy(buf + o, tail, strlen(tail) + 1);
    return 0;
}

/* The hash tag of a key: what lies between its first '{' and the next '}'
 * (keys.h: every key of a crawl has one); the whole key if none. */
static void key_tag(const redisReply *k, const char **tag, size_t *len)
{
    const char *o = memchr(k->str, '{', k->len);
    const char *c = o ? memchr(o + 1, '}', k->len - (size_t)(o + 1 - k->str)) : NULL;
    *tag = c && c > o + 1 ? o + 1 : k->str;
    *len = c && c > o + 1 ? (size_t)(c - o - 1) : k->len;
}

/* UNLINKs a SCAN batch, one command a hash tag, pipelined: a crawl's shards
 * have a tag each, and a Redis Cluster refuses one command over several
 * slots (CROSSSLOT). */
static int unlink_keys(struct redisContext *rc, const redisReply *keys, uint64_t *deleted)
{
    size_t n = keys->elements;
    if (n == 0)
        return 0;
    const char **argv = malloc((n + 1) * sizeof *argv);
    size_t *lens = malloc((n + 1) * sizeof *lens);
    unsigned char *done = calloc(n, 1);
    int rc_ = argv && lens && done ? 0 : CRAWL_ENOMEM;
    for (size_t i = 0; rc_ == 0 && i < n; i++)
        if (keys->element[i]->type != REDIS_REPLY_STRING)
            rc_ = CRAWL_EREPLY;
    size_t sent = 0;
    for (size_t i = 0; rc_ == 0 && i < n; i++) {
        if (done[i])
            continue;
        const char *t, *u;
        size_t tl, ul, m = 1;
        key_tag(keys->element[i], &t, &tl);
        argv[0] = "UNLINK";
        lens[0] = 6;
        for (size_t j = i; j < n; j++) {
            key_tag(keys->element[j], &u, &ul);
            if (done[j] || ul != tl || memcmp(t, u, tl))
                continue;
            done[j] = 1;
            argv[m] = keys->element[j]->str;
            lens[m++] = keys->element[j]->len;
        }
        if (redisAppendCommandArgv(rc, (int)m, argv, lens) != REDIS_OK)
            rc_ = CRAWL_EREDIS;
        else
            sent++;
    }
    for (size_t i = 0; i < sent; i++) { /* every reply read, the first failure kept */
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
            return CRAWL_EREDIS;
        if (r->type == REDIS_REPLY_INTEGER)
            *deleted += (uint64_t)r->integer;
        else if (rc_ == 0)
            rc_ = r->type == REDIS_REPLY_ERROR ? fr_reply_error(r) : CRAWL_EREPLY;
        freeReplyObject(r);
    }
    free(argv);
    free(lens);
    free(done);
    return rc_;
}

/* Deletes the keys matching pat (SCAN MATCH, UNLINK a batch). */
static int reset_match(struct redisContext *rc, const char *pat, uint64_t *deleted)
{
    char cursor[32] = "0";
    int rc_ = 0;
    for (unsigned long rounds = 0; rc_ == 0 && rounds < 100000000UL; rounds++) {
        redisReply *r = redisCommand(rc, "SCAN %s MATCH %s COUNT 1000", cursor, pat);
        if (!r)
            return CRAWL_EREDIS;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof cursor ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return CRAWL_EREPLY;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        rc_ = unlink_keys(rc, r->element[1], deleted);
        freeReplyObject(r);
        if (!strcmp(cursor, "0"))
            break;
    }
    return rc_;
}

int frontier_reset(struct redisContext *rc, const char *crawl, uint64_t *deleted)
{
    char pat[2 * FR_PREFIX_MAX + 32];
    uint64_t dummy = 0;
    if (!deleted)
        deleted = &dummy;
    *deleted = 0;
    if (!rc || reset_pattern(crawl, 0, "*", pat, sizeof pat) < 0)
        return CRAWL_EINVAL;
    /* the filters' meta hashes first: from then on every function of the
     * crawl refuses to write (types.lua: need_crawl), so nothing a worker
     * still sends re-creates a key behind the scans below */
    int rc_ = 0;
    for (int shards = 0; rc_ == 0 && shards < 2; shards++)
        if ((rc_ = reset_pattern(crawl, shards, "seen:meta", pat, sizeof pat)) == 0)
            rc_ = reset_match(rc, pat, deleted);
    for (int shards = 0; rc_ == 0 && shards < 2; shards++) /* shard 0's keys, then 1.. */
        if ((rc_ = reset_pattern(crawl, shards, "*", pat, sizeof pat)) == 0)
            rc_ = reset_match(rc, pat, deleted);
    return rc_;
}
