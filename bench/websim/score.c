/*
 * score.c -- a crawl scored against the ground truth (score.h), from
 * websim's own request log and the crawler's JSONL, never from timing.
 *
 * DESIGN: the truth file fills a urlset (class by URL); every request line of
 * the log (server.c's format) adds to its URL's answered count (aux) and every
 * JSONL record to its record count (aux2).  Requests are also kept per
 * origin (scheme://host: the crawler's politeness unit) as (arrive, end,
 * robots?) and, sorted, give the politeness verdicts: a request that arrives
 * less than the origin's delay after the previous one ended (the delay is
 * --delay, or the host's Crawl-delay capped by --max-delay, except right
 * after robots.txt, where it is --delay), and requests in flight at once over
 * the allowed count (1 with a delay, else --per-host).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "score.h"
#include "truth.h"

typedef struct req {
    uint64_t origin; /* urlset_key of scheme://host */
    uint64_t arrive, end;
    uint32_t host;
    uint8_t robots;
} req_t;

typedef struct score {
    const ws_cfg_t *c;
    const score_opts_t *o;
    urlset_t *u, *content;
    req_t *r;
    size_t nr, capr;
    uint64_t requests, answered, aborted, newconn, tls_full, tls_resumed, robots_req;
    uint64_t misdirected, unknown, held, blackholed;
    uint64_t forbidden_req, forbidden_url[T_NCLASSES + 1], dup_bodies;
    uint64_t gap_viol, gap_strict, inflight_viol, min_gap_ms, records, records_unknown;
    char example[WS_URL_MAX];
    char gap_example[256];
} score_t;

static int load_truth(score_t *s, FILE *f)
{
    char line[WS_URL_MAX + 64];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2)
            continue;
        *t1 = '\0';
        int cls = 0;
        for (int k = 1; k < T_NCLASSES; k++)
            if (!strcmp(line, truth_class_name[k]))
                cls = k;
        url_entry_t *e = urlset_get(s->u, urlset_key(t2 + 1, strlen(t2 + 1)), 1);
        if (!e || !cls)
            return -1;
        e->cls = (uint8_t)cls;
    }
    return 0;
}

static int add_req(score_t *s, const req_t *r)
{
    if (s->nr == s->capr) {
        size_t cap = s->capr ? s->capr * 2 : 65536;
        req_t *n = realloc(s->r, cap * sizeof *n);
        if (!n)
            return -1;
        s->r = n, s->capr = cap;
    }
    s->r[s->nr++] = *r;
    return 0;
}

/* One log line: arrive end scheme host path status bytes conn req flags. */
static int log_line(score_t *s, char *line)
{
    char *f[10];
    int n = 0;
    for (char *p = line, *save = NULL; n < 10 && (p = strtok_r(n ? NULL : line, "\t\n", &save));
         n++)
        f[n] = p;
    if (n < 10)
        return 0;
    s->requests++;
    const char *flags = f[9];
    if (strchr(flags, 'b')) {
        s->blackholed++;
        return 0;
    }
    s->misdirected += strchr(flags, 'm') != NULL;
    s->unknown += strchr(flags, 'u') != NULL;
    s->newconn += !strcmp(f[8], "1");
    s->tls_full += strchr(flags, 'T') != NULL;
    s->tls_resumed += strchr(flags, 'R') != NULL;
    int aborted = strchr(flags, 'c') != NULL || strchr(flags, 'd') != NULL;
    s->aborted += aborted;
    s->held += strchr(flags, 'd') != NULL;
    char url[WS_URL_MAX + 128], origin[WS_NAME_MAX + 16];
    snprintf(origin, sizeof origin, "%s://%s", f[2], f[3]);
    snprintf(url, sizeof url, "%s%s", origin, f[4]);
    uint32_t host = ws_host_parse(s->c, f[3], strlen(f[3]));
    int robots = !strcmp(f[4], "/robots.txt") || !strcmp(f[4], "/robots-main.txt");
    req_t r = {.origin = urlset_key(origin, strlen(origin)),
               .arrive = strtoull(f[0], NULL, 10),
               .end = strtoull(f[1], NULL, 10),
               .host = host,
               .robots = (uint8_t)robots};
    if (host == WS_NOHOST || add_req(s, &r) < 0)
        return host == WS_NOHOST ? 0 : -1;
    if (robots) {
        s->robots_req++;
        return 0;
    }
    url_entry_t *e = urlset_get(s->u, urlset_key(url, strlen(url)), 0);
    if (!e || (e->cls != T_MUST && e->cls != T_RETRY)) {
        s->forbidden_req++;
        if (!e || !e->aux)
            s->forbidden_url[e ? e->cls : T_NCLASSES]++;
        if (!s->example[0])
            snprintf(s->example, sizeof s->example, "%s (%s)", url,
                     e ? truth_class_name[e->cls] : "never linked");
        if (e)
            e->aux++;
        return 0;
    }
    if (aborted)
        return 0;
    s->answered++;
    if (!e->aux++ && !strcmp(f[5], "200")) { /* first answer: its body's identity */
        ws_plan_t *p = malloc(sizeof *p);
        uint32_t h;
        int https;
        const char *path;
        if (p && truth_split(s->c, url, &h, &https, &path) == 0) {
            ws_plan(s->c, https, h, path, p);
            url_entry_t *ce = p->content_id ? urlset_get(s->content, p->content_id, 1) : NULL;
            if (ce && ce->aux++)
                s->dup_bodies++;
        }
        free(p);
    }
    return 0;
}

static int jsonl_line(score_t *s, const char *line)
{
    const char *u = strstr(line, "\"url\":\"");
    if (!u || strstr(line, "\"event\""))
        return 0;
    u += 7;
    const char *e = strchr(u, '"');
    if (!e)
        return 0;
    s->records++;
    url_entry_t *ent = urlset_get(s->u, urlset_key(u, (size_t)(e - u)), 0);
    if (ent)
        ent->aux2++;
    else
        s->records_unknown++;
    return 0;
}

static int cmp_req(const void *a, const void *b)
{
    const req_t *x = a, *y = b;
    if (x->origin != y->origin)
        return x->origin < y->origin ? -1 : 1;
    return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

static void politeness(score_t *s)
{
    qsort(s->r, s->nr, sizeof *s->r, cmp_req);
    s->min_gap_ms = UINT64_MAX;
    for (size_t i = 0, j; i < s->nr; i = j) {
        ws_host_t h;
        ws_host(s->c, s->r[i].host, &h);
        uint64_t cd = (uint64_t)h.crawl_delay_s * 1000;
        uint64_t delay = s->o->delay_ms;
        if (h.robots == WS_ROBOTS_DELAY && cd > delay)
            delay = cd > s->o->max_delay_ms ? s->o->max_delay_ms : cd;
        uint64_t allowed = s->o->delay_ms || delay ? 1 : s->o->per_host;
        uint64_t last_end = 0;
        int prev_robots = 0;
        for (j = i; j < s->nr && s->r[j].origin == s->r[i].origin; j++) {
            const req_t *r = &s->r[j];
            uint64_t inflight = 1;
            for (size_t k = j > i + 64 ? j - 64 : i; k < j; k++) /* open when r arrived */
                inflight += s->r[k].end > r->arrive;
            if (inflight > allowed) {
                s->inflight_viol++;
                if (s->o->violations) {
                    char name[WS_NAME_MAX];
                    ws_host_name(s->c, r->host, name, sizeof name);
                    fprintf(stderr, "violation inflight %s at %llu.%06llu: %llu at once\n", name,
                            (unsigned long long)(r->arrive / 1000000),
                            (unsigned long long)(r->arrive % 1000000),
                            (unsigned long long)inflight);
                }
            }
            if (j > i && r->arrive >= last_end) {
                uint64_t gap = (r->arrive - last_end) / 1000;
                uint64_t need = prev_robots ? s->o->delay_ms : delay;
                if (gap + s->o->gap_slack_ms < need && !s->gap_example[0]) {
                    char name[WS_NAME_MAX];
                    ws_host_name(s->c, r->host, name, sizeof name);
                    snprintf(s->gap_example, sizeof s->gap_example,
                             "%s: %llu ms after the previous request ended (delay %llu%s)", name,
                             (unsigned long long)gap, (unsigned long long)need,
                             prev_robots ? ", after robots.txt" : "");
                }
                s->gap_viol += gap + s->o->gap_slack_ms < need;
                if (s->o->violations && gap + s->o->gap_slack_ms < need) {
                    char name[WS_NAME_MAX];
                    ws_host_name(s->c, r->host, name, sizeof name);
                    fprintf(stderr, "violation gap %s at %llu.%06llu: %llu ms (need %llu%s)\n",
                            name, (unsigned long long)(r->arrive / 1000000),
                            (unsigned long long)(r->arrive % 1000000), (unsigned long long)gap,
                            (unsigned long long)need, prev_robots ? ", after robots.txt" : "");
                }
                s->gap_strict += gap < need;
                if (gap < s->min_gap_ms && delay)
                    s->min_gap_ms = gap;
            }
            last_end = r->end > last_end ? r->end : last_end;
            prev_robots = r->robots;
        }
    }
}

static int each_line(const char *path, score_t *s, int jsonl)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "websim score: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0)
        rc = jsonl ? jsonl_line(s, line) : log_line(s, line);
    free(line);
    fclose(f);
    return rc;
}

/* Walks the truth again for the per-URL verdicts. */
static void report(score_t *s, FILE *truth, FILE *out, int *failed)
{
    char line[WS_URL_MAX + 64];
    uint64_t must = 0, fetched = 0, recorded = 0, extra = 0, lost = 0, twice = 0;
    rewind(truth);
    while (fgets(line, sizeof line, truth)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *t2 = strchr(line, '\t');
        t2 = t2 ? strchr(t2 + 1, '\t') : NULL;
        if (!t2)
            continue;
        url_entry_t *e = urlset_get(s->u, urlset_key(t2 + 1, strlen(t2 + 1)), 0);
        if (!e || (e->cls != T_MUST && e->cls != T_RETRY))
            continue;
        uint32_t expect = e->cls == T_RETRY ? s->o->max_tries : 1;
        must++;
        fetched += e->aux > 0;
        recorded += e->aux2 > 0;
        extra += e->aux > expect ? e->aux - expect : 0;
        lost += e->aux > 0 && !e->aux2 && e->cls == T_MUST;
        twice += e->aux2 > 1 ? e->aux2 - 1 : 0;
    }
    uint64_t fu = 0;
    for (int k = 0; k <= T_NCLASSES; k++)
        fu += s->forbidden_url[k];
    double rs = must ? (double)fetched / (double)must : 0, rj = must ? (double)recorded / must : 0;
    fprintf(out, "must %llu\nfetched %llu\nrecall %.6f\nrecall_jsonl %.6f\n",
            (unsigned long long)must, (unsigned long long)fetched, rs, rj);
    fprintf(out, "forbidden_requests %llu\nforbidden_urls %llu\n",
            (unsigned long long)s->forbidden_req, (unsigned long long)fu);
    for (int k = 3; k <= T_NCLASSES; k++)
        if (s->forbidden_url[k])
            fprintf(out, "forbidden_urls_%s %llu\n",
                    k == T_NCLASSES ? "unlinked" : truth_class_name[k],
                    (unsigned long long)s->forbidden_url[k]);
    if (s->example[0])
        fprintf(out, "forbidden_example %s\n", s->example);
    fprintf(out,
            "extra_requests %llu\nrecords %llu\nrecords_lost %llu\nrecords_twice %llu\n"
            "records_unknown %llu\n",
            (unsigned long long)extra, (unsigned long long)s->records, (unsigned long long)lost,
            (unsigned long long)twice, (unsigned long long)s->records_unknown);
    fprintf(out, "politeness_gap_violations %llu\npoliteness_inflight_violations %llu\n",
            (unsigned long long)s->gap_viol, (unsigned long long)s->inflight_viol);
    fprintf(out, "politeness_gap_under_delay %llu\n", (unsigned long long)s->gap_strict);
    if (s->gap_example[0])
        fprintf(out, "politeness_gap_example %s\n", s->gap_example);
    if (s->min_gap_ms != UINT64_MAX)
        fprintf(out, "politeness_min_gap_ms %llu\n", (unsigned long long)s->min_gap_ms);
    fprintf(out,
            "requests %llu\nanswered %llu\naborted %llu\nheld_dark %llu\nblackholed %llu\n"
            "robots_requests %llu\nnew_connections %llu\ntls_full %llu\ntls_resumed %llu\n"
            "misdirected %llu\nunknown_host %llu\nduplicate_bodies %llu\n",
            (unsigned long long)s->requests, (unsigned long long)s->answered,
            (unsigned long long)s->aborted, (unsigned long long)s->held,
            (unsigned long long)s->blackholed, (unsigned long long)s->robots_req,
            (unsigned long long)s->newconn, (unsigned long long)s->tls_full,
            (unsigned long long)s->tls_resumed, (unsigned long long)s->misdirected,
            (unsigned long long)s->unknown, (unsigned long long)s->dup_bodies);
    *failed = (s->o->min_recall > 0 && rs < s->o->min_recall) || s->forbidden_req || s->gap_viol ||
              s->inflight_viol || s->misdirected || lost;
}

int score_run(const ws_cfg_t *c, const score_opts_t *o, FILE *out)
{
    score_t s = {.c = c, .o = o};
    int rc = -1, failed = 0;
    FILE *truth = fopen(o->truth, "r");
    s.u = urlset_new();
    s.content = urlset_new();
    if (!truth || !s.u || !s.content || load_truth(&s, truth) < 0) {
        fprintf(stderr, "websim score: cannot load the truth %s\n", o->truth);
        goto out;
    }
    for (int i = 0; i < o->nlogs; i++)
        if (each_line(o->logs[i], &s, 0) < 0)
            goto out;
    for (int i = 0; i < o->njsonl; i++)
        if (each_line(o->jsonl[i], &s, 1) < 0)
            goto out;
    politeness(&s);
    report(&s, truth, out, &failed);
    rc = o->check && failed ? 1 : 0;
    if (rc)
        fprintf(out, "verdict FAIL\n");
    else if (o->check)
        fprintf(out, "verdict PASS\n");
out:
    if (truth)
        fclose(truth);
    urlset_free(s.u);
    urlset_free(s.content);
    free(s.r);
    return rc;
}
