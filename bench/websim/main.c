/*
 * main.c -- the websim program: `websim COMMAND [web parameters] [options]`.
 *
 * DESIGN: every command takes the web's parameters (params.c) and its own
 * options; a word it does not know is an error.  Commands: serve (server.c),
 * hosts (the DNS server's hosts file), seeds, get (one answer, no network),
 * truth (truth.c), score (score.c), params (the parameter table).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "params.h"
#include "render.h"
#include "score.h"
#include "server.h"
#include "truth.h"

static const char usage[] =
    "usage: websim COMMAND [web parameters] [options]\n"
    "  serve   [--bind ADDR] [--http-port N] [--https-port N] [--ca-cert F --ca-key F]\n"
    "          [--log F] [--stats F] [--pidfile F] [--dark-share X] [--max-conns N]\n"
    "          [--idle-ms N] [--hold-ms N]\n"
    "  hosts                         the hosts file: '127.x.y.z name' a host\n"
    "  seeds   --count N             home pages of N hosts spread over the web\n"
    "  get     URL [--accept gzip|br] one answer, as served (no network)\n"
    "  render  --count N [--accept gzip|br]  renders the first N pages of the web's hosts\n"
    "          in turn and prints the CPU time per page (no network: what serving costs\n"
    "          besides sockets and TLS)\n"
    "  truth   --seeds F [--scope host|domain|any] [--max-depth N] [--max-redirects N]\n"
    "          [--max-url-length N] [--follow-nofollow] [--ignore-robots]\n"
    "  score   --truth F --log F... [--jsonl F...] [--delay MS] [--max-delay MS]\n"
    "          [--per-host N] [--max-tries N] [--gap-slack-ms N] [--min-recall X] [--check]\n"
    "          [--violations]  (each politeness violation on a line of its own)\n"
    "  params  [--markdown]          every web parameter, its default and meaning\n"
    "web parameters (every command; `websim params`):\n";

static int num(const char *v, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || *v == '-' || x > max)
        return -1;
    *out = x;
    return 0;
}

typedef struct args {
    ws_cfg_t cfg;
    ws_serve_opts_t serve;
    truth_opts_t truth;
    score_opts_t score;
    const char *seeds, *url;
    uint64_t count;
    int accept, markdown;
} args_t;

/* One command option at argv[*i]; 0 used, 1 not a command option, -1 bad. */
static int cmd_option(args_t *a, int argc, char **argv, int *i)
{
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    uint64_t n = 0;
    double d;
    char *end;
#define TAKE (++*i, v)
    if (!strcmp(o, "--bind"))
        a->serve.bind = TAKE;
    else if (!strcmp(o, "--http-port") || !strcmp(o, "--https-port")) {
        if (num(TAKE, 65535, &n) < 0)
            return -1;
        *(o[3] == 't' && o[6] == 's' ? &a->serve.https_port : &a->serve.http_port) = (uint16_t)n;
    } else if (!strcmp(o, "--ca-cert"))
        a->serve.ca_cert = TAKE;
    else if (!strcmp(o, "--ca-key"))
        a->serve.ca_key = TAKE;
    else if (!strcmp(o, "--log"))
        a->serve.log = TAKE,
        a->score.logs[a->score.nlogs < SCORE_MAX_FILES ? a->score.nlogs++ : 0] = v;
    else if (!strcmp(o, "--stats"))
        a->serve.stats = TAKE;
    else if (!strcmp(o, "--pidfile"))
        a->serve.pidfile = TAKE;
    else if (!strcmp(o, "--dark-share") || !strcmp(o, "--min-recall")) {
        if (!TAKE || (d = strtod(v, &end), *end || end == v || d < 0 || d > 1))
            return -1;
        *(o[2] == 'd' ? &a->serve.dark_share : &a->score.min_recall) = d;
    } else if (!strcmp(o, "--max-conns") || !strcmp(o, "--idle-ms") || !strcmp(o, "--hold-ms")) {
        if (num(TAKE, UINT32_MAX, &n) < 0)
            return -1;
        *(o[2] == 'm'   ? &a->serve.max_conns
          : o[2] == 'i' ? &a->serve.idle_ms
                        : &a->serve.hold_ms) = (uint32_t)n;
    } else if (!strcmp(o, "--count"))
        return num(TAKE, UINT32_MAX, &a->count);
    else if (!strcmp(o, "--accept"))
        a->accept = TAKE && !strcmp(v, "br") ? WS_ACCEPT_BR : WS_ACCEPT_GZIP;
    else if (!strcmp(o, "--seeds"))
        a->seeds = TAKE;
    else if (!strcmp(o, "--scope")) {
        if (!TAKE)
            return -1;
        a->truth.scope = !strcmp(v, "host")     ? 0
                         : !strcmp(v, "domain") ? 1
                         : !strcmp(v, "any")    ? 2
                                                : -1;
        return a->truth.scope < 0 ? -1 : 0;
    } else if (!strcmp(o, "--max-depth") || !strcmp(o, "--max-redirects") ||
               !strcmp(o, "--max-url-length")) {
        if (num(TAKE, UINT32_MAX, &n) < 0)
            return -1;
        *(o[6] == 'd'   ? &a->truth.max_depth
          : o[6] == 'r' ? &a->truth.max_redirects
                        : &a->truth.max_url_length) = (uint32_t)n;
    } else if (!strcmp(o, "--follow-nofollow"))
        a->truth.follow_nofollow = 1;
    else if (!strcmp(o, "--ignore-robots"))
        a->truth.ignore_robots = 1;
    else if (!strcmp(o, "--truth"))
        a->score.truth = TAKE;
    else if (!strcmp(o, "--jsonl")) {
        if (!TAKE || a->score.njsonl == SCORE_MAX_FILES)
            return -1;
        a->score.jsonl[a->score.njsonl++] = v;
    } else if (!strcmp(o, "--delay") || !strcmp(o, "--max-delay") || !strcmp(o, "--gap-slack-ms")) {
        if (num(TAKE, UINT32_MAX, &n) < 0)
            return -1;
        *(o[2] == 'd'   ? &a->score.delay_ms
          : o[2] == 'g' ? &a->score.gap_slack_ms
                        : &a->score.max_delay_ms) = n;
    } else if (!strcmp(o, "--per-host") || !strcmp(o, "--max-tries")) {
        if (num(TAKE, UINT32_MAX, &n) < 0)
            return -1;
        *(o[2] == 'p' ? &a->score.per_host : &a->score.max_tries) = (uint32_t)n;
    } else if (!strcmp(o, "--check"))
        a->score.check = 1;
    else if (!strcmp(o, "--violations"))
        a->score.violations = 1;
    else if (!strcmp(o, "--markdown"))
        a->markdown = 1;
    else if (o[0] != '-' && !a->url)
        a->url = o;
    else
        return 1;
#undef TAKE
    return 0;
}

static int parse(args_t *a, int argc, char **argv)
{
    char err[160];
    ws_cfg_defaults(&a->cfg);
    a->serve = (ws_serve_opts_t){.bind = "127.0.0.1",
                                 .http_port = 80,
                                 .https_port = 443,
                                 .dark_share = 0.1,
                                 .max_conns = 60000,
                                 .idle_ms = 60000,
                                 .hold_ms = 120000};
    a->truth = (truth_opts_t){.max_depth = UINT32_MAX, .max_redirects = 10, .max_url_length = 2048};
    a->score.delay_ms = 1000, a->score.max_delay_ms = 60000, a->score.per_host = 1;
    a->score.max_tries = 3;
    for (int i = 2; i < argc; i++) {
        int r = cmd_option(a, argc, argv, &i);
        if (r < 0) {
            fprintf(stderr, "websim: bad value for %s\n", argv[i]);
            return -1;
        }
        if (r == 0)
            continue;
        if (strncmp(argv[i], "--", 2) || i + 1 >= argc ||
            ws_param_set(&a->cfg, argv[i] + 2, argv[i + 1], err, sizeof err) < 0) {
            fprintf(stderr, "websim: %s\n", i + 1 >= argc ? "missing value" : err);
            return -1;
        }
        i++;
    }
    if (a->cfg.farm_hosts >= a->cfg.hosts) {
        fprintf(stderr, "websim: --farm-hosts must be below --hosts (host 0 links the farm)\n");
        return -1;
    }
    return 0;
}

static int cmd_hosts(const args_t *a)
{
    char name[WS_NAME_MAX];
    for (uint32_t h = 0; h < a->cfg.hosts; h++) {
        uint32_t ip = ws_ip_addr(h / a->cfg.hosts_per_ip);
        ws_host_name(&a->cfg, h, name, sizeof name);
        printf("127.%u.%u.%u %s\n", (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, name);
    }
    return fflush(stdout) ? 1 : 0;
}

static int cmd_seeds(const args_t *a)
{
    char url[WS_URL_MAX];
    uint64_t n = a->count ? a->count : 1;
    uint64_t others = a->cfg.hosts - a->cfg.farm_hosts; /* (the farm is no seed) */
    for (uint64_t i = 0; i < n && i < others; i++) {
        uint32_t h = (uint32_t)(i * others / n);
        ws_host_t hi;
        ws_host(&a->cfg, h, &hi);
        ws_origin(&a->cfg, hi.https, h, url, sizeof url);
        printf("%s/\n", url);
    }
    return fflush(stdout) ? 1 : 0;
}

static int cmd_get(const args_t *a)
{
    uint32_t h;
    int https;
    const char *path;
    ws_plan_t *p = malloc(sizeof *p);
    ws_render_t *r = ws_render_open(&a->cfg);
    ws_buf_t out = {0};
    int rc = 1;
    if (!a->url || truth_split(&a->cfg, a->url, &h, &https, &path) < 0) {
        fprintf(stderr, "websim get: need a URL of this web (https://h0.example-0.test/)\n");
    } else if (p && r) {
        ws_plan(&a->cfg, https, h, path, p);
        if (ws_render(r, p, a->accept, 0, 1, &out) == 0 && fwrite(out.p, 1, out.len, stdout))
            rc = 0;
    }
    free(out.p);
    ws_render_close(r);
    free(p);
    return rc;
}

/* --count pages rendered, host by host (page i of host h, h = i % hosts,
 * i / hosts its page), timed by the process's CPU clock. */
static int cmd_render(const args_t *a)
{
    ws_plan_t *p = malloc(sizeof *p);
    ws_render_t *r = ws_render_open(&a->cfg);
    ws_buf_t out = {0};
    uint64_t n = a->count ? a->count : 1000, bytes = 0, body = 0;
    int rc = p && r ? 0 : 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        uint32_t h = (uint32_t)(i % a->cfg.hosts);
        ws_host_t hi;
        char path[WS_URL_MAX];
        ws_host(&a->cfg, h, &hi);
        ws_page_path(&a->cfg, h, i / a->cfg.hosts, 0, path, sizeof path);
        ws_plan(&a->cfg, hi.https, h, path, p);
        out.len = 0;
        rc = ws_render(r, p, a->accept, 0, 1, &out) == 0 ? 0 : 1;
        bytes += out.len;
        body += p->status == 200;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (rc == 0)
        printf("pages %llu (200: %llu) bytes %llu cpu_ms %.1f ms_per_page %.4f\n",
               (unsigned long long)n, (unsigned long long)body, (unsigned long long)bytes, ms,
               ms / (double)n);
    free(out.p);
    ws_render_close(r);
    free(p);
    return rc;
}

int main(int argc, char **argv)
{
    static args_t a;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        ws_params_print(argc < 2 ? stderr : stdout, 0);
        return argc < 2 ? 2 : 0;
    }
    if (parse(&a, argc, argv) < 0)
        return 2;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "serve"))
        return ws_serve(&a.cfg, &a.serve) < 0 ? 1 : 0;
    if (!strcmp(cmd, "hosts"))
        return cmd_hosts(&a);
    if (!strcmp(cmd, "seeds"))
        return cmd_seeds(&a);
    if (!strcmp(cmd, "get"))
        return cmd_get(&a);
    if (!strcmp(cmd, "render"))
        return cmd_render(&a);
    if (!strcmp(cmd, "params")) {
        ws_params_print(stdout, a.markdown);
        return 0;
    }
    if (!strcmp(cmd, "truth")) {
        FILE *s = a.seeds ? fopen(a.seeds, "r") : NULL;
        if (!s) {
            fprintf(stderr, "websim truth: need --seeds FILE\n");
            return 2;
        }
        int rc = truth_run(&a.cfg, &a.truth, s, stdout);
        fclose(s);
        return rc < 0 ? 1 : 0;
    }
    if (!strcmp(cmd, "score")) {
        if (!a.score.truth || !a.score.nlogs) {
            fprintf(stderr, "websim score: need --truth FILE and --log FILE\n");
            return 2;
        }
        int rc = score_run(&a.cfg, &a.score, stdout);
        return rc < 0 ? 2 : rc;
    }
    fprintf(stderr, "websim: unknown command %s\n", cmd);
    return 2;
}
