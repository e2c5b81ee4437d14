#!/usr/bin/env bash
# crawl_bench.sh -- the crawler against wget on a local static site, side by
# side in one run: pages/s, CPU ms per page, peak RSS, Redis memory, and the
# crawler's CPU per page against libxml2's bare parse of the same pages.
#
# usage: bash bench/crawl_bench.sh [N]        (from the repo root, after bash .ci/setup)
#   N            pages of the main site (default 20000)
# environment:
#   BUILD=dir    build directory with crawler/crawler, bench/gen_site, bench/bare_parse
#                (default ./build; the three targets are (re)built first unless NOBUILD=1)
#   SMALL=M      pages of the second, smaller site, to show that RSS does not grow
#                with the crawl (default 2000; 0 or >= N: skip)
#   TIMEOUT=s    bound on each crawl (default 600)
#   MD=file      where to write the figures (default bench/crawler.md; MD= to skip); what
#                follows a line "<!-- notes -->" in the old file is kept
#   PROFILE=1    also profile the crawler with `perf record` (a third crawl of the main site)
#                and list its top functions by self time
#   CRAWLER_ARGS extra options for `crawler crawl` (e.g. "--threads 4")
#   KEEP=1       keep the temporary directory (site, logs, outputs)
#   CMDSTATS=pfx write the crawler's Redis's `INFO commandstats` after each crawl of N pages
#                to pfx-N.txt (the commands the frontier's functions ran, with their calls)
#   NICE=n       run nginx, redis-server, both crawlers and the parses under `nice -n n` (-10 as
#                root on a machine shared with other work; the same for both crawlers)
#   MODULE=path  the crawler module the crawler's redis-server loads, as the crawler's own
#                embedded server does (default $BUILD/bloom/crawler_redis.so; MODULE=none: a
#                stock redis-server, Bloom bits by BITFIELD)
#
# What it does, all on 127.0.0.1: generates the site(s) with gen_site (pages
# of ~19 KB, every page reachable from the index), serves them with nginx
# (one server block per crawl so each crawl has its own access log: the
# server-side count of pages fetched), starts a fresh redis-server (no
# persistence) for each crawler run, crawls each site with wget (single
# connection, the reference) and with `crawler crawl` (default threads and
# transfers, --per-host 256 --delay 0: the single host opened up -- a page
# holds its per-host slot until its finish call is acknowledged, so a limit
# of exactly threads x transfers would throttle the claims), measuring each process with /usr/bin/time (wall,
# user+sys CPU, max RSS), and parses the same pages with bench/bare_parse.
# Correctness: each crawler must have fetched every one of the N pages, with
# status 200, and the crawler each page exactly once (nginx access log).
# Every process it starts is stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

if [[ ${1:-} = -h || ${1:-} = --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
N=${1:-20000}
BUILD=${BUILD:-build}
SMALL=${SMALL:-2000}
TIMEOUT=${TIMEOUT:-600}
MD=${MD-bench/crawler.md}
PROFILE=${PROFILE:-0}
CRAWLER_ARGS=${CRAWLER_ARGS:-}
KEEP=${KEEP:-0}
NICE=${NICE:-}
NICE_CMD=()
if [ -n "$NICE" ]; then
  [[ $NICE =~ ^-?[0-9]+$ ]] || { echo "crawl_bench: NICE must be an integer" >&2; exit 1; }
  NICE_CMD=(nice -n "$NICE")
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

die() { echo "crawl_bench: $*" >&2; exit 1; }
[[ $N =~ ^[0-9]+$ && $N -ge 30 && $N -le 10000000 ]] || die "N must be an integer in 30..10000000 (got '$N')"
[[ $SMALL =~ ^[0-9]+$ ]] || die "SMALL must be an integer"
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || die "TIMEOUT must be a positive integer"
((SMALL >= 30 && SMALL < N)) || SMALL=0

# Only loopback traffic: no proxy may capture the crawls (wget and libcurl honour these).
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy ftp_proxy FTP_PROXY
export no_proxy='*' NO_PROXY='*'

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for tool in "$NGINX" wget /usr/bin/time redis-server redis-cli timeout cmake; do
  command -v "$tool" >/dev/null ||
    die "missing $tool: apt-get install -y nginx-light wget time redis-server coreutils cmake"
done
[ -d "$BUILD" ] || die "no build directory '$BUILD' (run bash .ci/setup, or set BUILD=dir)"
if [ "${NOBUILD:-0}" != 1 ]; then
  cmake --build "$BUILD" --target crawler gen_site bare_parse crawler_redis >/dev/null ||
    die "cannot build crawler, gen_site, bare_parse, crawler_redis in $BUILD (NOBUILD=1 uses what is there)"
fi
CRAWLER=$REPO/$BUILD/crawler/crawler
[[ $BUILD = /* ]] && CRAWLER=$BUILD/crawler/crawler
MODULE=${MODULE:-$(dirname "$(dirname "$CRAWLER")")/bloom/crawler_redis.so}
MODULE_ARGS=()
if [ "$MODULE" != none ]; then
  [ -r "$MODULE" ] || die "no crawler module at $MODULE (MODULE=none: without it)"
  MODULE_ARGS=(--loadmodule "$MODULE")
fi
BENCHBIN=$(dirname "$(dirname "$CRAWLER")")/bench
for b in "$CRAWLER" "$BENCHBIN/gen_site" "$BENCHBIN/bare_parse"; do
  [ -x "$b" ] || die "missing $b"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/crawl_bench.XXXXXX")
chmod 755 "$T" # nginx workers may run as another user
BENCH_NAME=crawl_bench
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

# ---------------------------------------------------------------- the sites
SIZES=("$N")
((SMALL > 0)) && SIZES+=("$SMALL")
echo "crawl_bench: generating ${SIZES[*]} pages in $T"
declare -A SITE_BYTES
for n in "${SIZES[@]}"; do
  out=$("$BENCHBIN/gen_site" "$T/site-$n" "$n" "$T/manifest-$n") || die "gen_site failed"
  SITE_BYTES[$n]=$(awk '{print $3}' <<<"$out")
  echo "  site-$n: $out"
done

# ---------------------------------------------------------------- nginx
declare -A PORT
nginx_conf() {
  local servers="" n who
  for n in "${SIZES[@]}"; do
    for who in wget crawler prof; do
      servers+="  server { listen 127.0.0.1:${PORT[$who-$n]}; root $T/site-$n;
    access_log $T/access-$who-$n.log bench buffer=256k flush=1s; }
"
    done
  done
  local temps="" m
  for m in client_body proxy fastcgi uwsgi scgi; do
    if [ "$m" = client_body ] || ! "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module"; then
      mkdir -p "$T/nginx-tmp/$m"
      temps+="  ${m}_temp_path $T/nginx-tmp/$m;
"
    fi
  done
  cat <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log warn;
events { worker_connections 4096; }
http {
  types { text/html html; text/css css; application/javascript js; image/png png;
          image/x-icon ico; text/plain txt; }
  default_type application/octet-stream;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000;
  log_format bench '\$status \$request_uri';
$temps$servers}
EOF
}

start_nginx() {
  local n who pid
  for _ in 1 2 3 4 5; do
    for n in "${SIZES[@]}"; do
      for who in wget crawler prof; do PORT[$who-$n]=$(free_port 127.0.0.1); done
    done
    nginx_conf >"$T/nginx.conf"
    "${NICE_CMD[@]}" "$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 50); do
      if curl -fsS -o /dev/null --noproxy '*' "http://127.0.0.1:${PORT[crawler-$N]}/robots.txt" 2>/dev/null; then
        NGINX_PID=$pid
        NGINX_WORKER=$(ps -o pid= --ppid "$pid" | head -1 | tr -d ' ')
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
  done
  cat "$T/nginx-error.log" >&2 || true
  die "nginx did not start"
}

stop_nginx() { # graceful: the workers flush their access log buffers
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  forget_pid "$NGINX_PID"
}

# ---------------------------------------------------------------- redis

rinfo() { redis-cli -p "$REDIS_PORT" info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }

# ---------------------------------------------------------------- measuring
declare -A R # R[key-n] = value
measure() { # tag n command...: runs it under time and timeout, records wall/cpu/rss
  local tag=$1 n=$2 rc=0 w0 w1
  shift 2
  w0=$(ticks_of "$NGINX_WORKER")
  /usr/bin/time -f '%e %U %S %M' -o "$T/time-$tag-$n" \
    "${NICE_CMD[@]}" timeout -k 10 "$TIMEOUT" "$@" >"$T/stdout-$tag-$n" 2>"$T/stderr-$tag-$n" || rc=$?
  w1=$(ticks_of "$NGINX_WORKER")
  R[rc-$tag-$n]=$rc
  read -r "R[wall-$tag-$n]" "R[user-$tag-$n]" "R[sys-$tag-$n]" "R[rss-$tag-$n]" < <(tail -1 "$T/time-$tag-$n")
  R[nginx-$tag-$n]=$(awk -v d=$((w1 - w0)) -v t="$CLK_TCK" 'BEGIN {printf "%.3f", d / t}')
  if [ "$rc" -ne 0 ]; then
    echo "crawl_bench: $tag on $n pages exited with status $rc$([ "$rc" = 124 ] && echo ' (timeout)')" >&2
    tail -5 "$T/stderr-$tag-$n" >&2 || true
  fi
}

run_wget() {
  local n=$1
  echo "crawl_bench: wget, $n pages"
  mkdir -p "$T/wget-$n"
  measure wget "$n" wget -r -l inf -np -nd --delete-after -q --no-proxy -P "$T/wget-$n" \
    "http://127.0.0.1:${PORT[wget-$n]}/"
}

redis_key_sizes() { # "bytes key" for every key, biggest first (at most 5000 keys looked at)
  redis-cli -p "$REDIS_PORT" --scan | head -5000 | while read -r k; do
    printf '%s %s\n' "$(redis-cli -p "$REDIS_PORT" memory usage "$k" | tr -d '\r')" "$k"
  done | sort -rn
}

run_crawler() {
  local n=$1 r0u r0s
  echo "crawl_bench: crawler, $n pages"
  start_redis "$n"
  r0u=$(rinfo cpu used_cpu_user)
  r0s=$(rinfo cpu used_cpu_sys)
  R[redis0-$n]=$(rinfo memory used_memory)
  printf 'http://127.0.0.1:%s/\n' "${PORT[crawler-$n]}" >"$T/seeds-$n.txt"
  # shellcheck disable=SC2086 # CRAWLER_ARGS is a list of options
  measure crawler "$n" "$CRAWLER" crawl --redis "redis://127.0.0.1:$REDIS_PORT" \
    --crawl "bench$n" --seeds "$T/seeds-$n.txt" --delay 0 --per-host 256 --quiet \
    --out "$T/crawler-$n.jsonl" $CRAWLER_ARGS
  R[redis-$n]=$(rinfo memory used_memory)
  [ -z "${CMDSTATS:-}" ] || redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' >"$CMDSTATS-$n.txt"
  R[redispeak-$n]=$(rinfo memory used_memory_peak)
  R[redisrss-$n]=$(rinfo memory used_memory_rss)
  R[rediskeys-$n]=$(redis-cli -p "$REDIS_PORT" dbsize | tr -d '\r')
  R[rediscpu-$n]=$(awk -v a="$r0u" -v b="$r0s" -v c="$(rinfo cpu used_cpu_user)" \
    -v d="$(rinfo cpu used_cpu_sys)" 'BEGIN {printf "%.3f", (c - a) + (d - b)}')
  redis_key_sizes >"$T/redis-keys-$n"
  read -r "R[seenbytes-$n]" "R[seenkeys-$n]" "R[otherbytes-$n]" < <(awk '
    $2 ~ /:seen(:|$)/ { sb += $1; sk++; next } { ob += $1 }
    END { printf "%d %d %d\n", sb, sk, ob }' "$T/redis-keys-$n")
  R[records-$n]=$(wc -l <"$T/crawler-$n.jsonl" 2>/dev/null || echo 0)
  stop_redis
}

run_parse() {
  local n=$1 mode line
  for mode in bare parser; do
    echo "crawl_bench: $mode parse, $n pages"
    line=$("${NICE_CMD[@]}" "$BENCHBIN/bare_parse" "$mode" "$T/manifest-$n" "$T/site-$n" \
      "http://127.0.0.1:${PORT[crawler-$n]}") || die "bare_parse $mode failed"
    R[$mode-$n]=$(sed -n 's/.*ms_per_page=\([0-9]*\.[0-9]\{0,3\}\).*/\1/p' <<<"$line")
  done
}

# Server-side check from one crawl's access log: pages (/ and *.html) with
# status 200, distinct and total; other requests.
check_log() {
  local who=$1 n=$2 log=$T/access-$1-$2.log
  [ -f "$log" ] || : >"$log"
  read -r "R[distinct-$who-$n]" "R[total-$who-$n]" "R[non200-$who-$n]" "R[other-$who-$n]" < <(
    awk '{ page = ($2 == "/" || $2 ~ /\.html$/) }
         page && $1 == 200 { total++; if (!seen[$2]++) distinct++ }
         page && $1 != 200 { bad++ }
         !page { other++ }
         END { printf "%d %d %d %d\n", distinct, total, bad, other }' "$log")
  local ok=yes
  [ "${R[rc-$who-$n]}" = 0 ] || [ "$who" = wget ] || ok=no # wget exits 8 on any server error
  [ "${R[distinct-$who-$n]}" = "$n" ] || ok=no
  [ "${R[non200-$who-$n]}" = 0 ] || ok=no
  [ "$who" = wget ] || [ "${R[total-$who-$n]}" = "$n" ] || ok=no # crawler: each page once
  R[ok-$who-$n]=$ok
}

profile() { # the crawler's top functions (perf, cpu-clock samples, self time)
  local n=$1
  command -v perf >/dev/null || { echo "crawl_bench: PROFILE=1 needs perf (apt-get install -y linux-perf)" >&2; return 0; }
  echo "crawl_bench: profiling the crawler on $n pages"
  start_redis "prof-$n"
  # a second crawl of the same site (its own server block and log, a fresh Redis)
  printf 'http://127.0.0.1:%s/\n' "${PORT[prof-$n]}" >"$T/seeds-prof.txt"
  # shellcheck disable=SC2086
  timeout -k 10 "$TIMEOUT" perf record -e cpu-clock -F 2000 -o "$T/perf.data" -- \
    "$CRAWLER" crawl --redis "redis://127.0.0.1:$REDIS_PORT" --crawl "prof$n" \
    --seeds "$T/seeds-prof.txt" --delay 0 --per-host 256 --quiet --out /dev/null $CRAWLER_ARGS \
    >/dev/null 2>"$T/perf.log" || echo "crawl_bench: perf run failed (see $T/perf.log)" >&2
  stop_redis
  perf report -i "$T/perf.data" --no-children --sort dso,symbol --stdio -g none --percent-limit 0.7 \
    2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 >"$T/profile-self.txt" || true
  perf report -i "$T/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -12 >"$T/profile-dso.txt" || true
}

# ---------------------------------------------------------------- the runs
start_nginx
for n in "${SIZES[@]}"; do
  run_wget "$n"
  run_crawler "$n"
done
for n in "${SIZES[@]}"; do run_parse "$n"; done
PROFILE_N=$N
[ "$PROFILE" = 1 ] && profile "$PROFILE_N"
stop_nginx
STATUS=0
for n in "${SIZES[@]}"; do
  for who in wget crawler; do
    check_log "$who" "$n"
    [ "${R[ok-$who-$n]}" = yes ] || STATUS=1
  done
done

# ---------------------------------------------------------------- figures
pps() { calc "%.0f" "$1 / (${R[wall-$2-$1]} > 0 ? ${R[wall-$2-$1]} : 0.01)"; }
cpu_ms() { calc "%.3f" "(${R[user-$2-$1]} + ${R[sys-$2-$1]}) * 1000 / $1"; }
rss_mib() { calc "%.1f" "${R[rss-$1-$2]} / 1024"; }
mib() { calc "%.1f" "$1 / 1048576"; }
verdict() { awk "BEGIN { exit !($1) }" && echo "met" || echo "MISSED"; }

CORES=$(nproc)
THREADS_NOTE="default threads ($CORES cores)"
[[ $CRAWLER_ARGS == *--threads* ]] && THREADS_NOTE="$CRAWLER_ARGS"
if [ -n "${BENCH_COMMIT:-}" ]; then # e.g. when run from a `git archive` export
  COMMIT=$BENCH_COMMIT
else
  COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
  DIRTY=$(git -C "$REPO" status --porcelain -uno 2>/dev/null | grep -c . || true)
  ((DIRTY == 0)) || COMMIT+=" (+ uncommitted changes in $DIRTY files)"
fi
{
  echo "# Crawl benchmark: crawler vs wget on a local nginx site"
  echo
  echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT, $CORES cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
  echo "\`bash bench/crawl_bench.sh $N\` (SMALL=$SMALL${CRAWLER_ARGS:+, CRAWLER_ARGS=\"$CRAWLER_ARGS\"})."
  echo "crawler: $THREADS_NOTE, \`--per-host 64 --delay 0 --quiet --out FILE\`, its own fresh redis-server$([ "$MODULE" = none ] && echo ' (no crawler module: Bloom bits by BITFIELD)' || echo ' with the crawler module loaded')."
  echo "wget: \`wget -r -l inf -np -nd --delete-after -q\` (one connection, keep-alive)."
  echo "nginx: 1 worker, keep-alive, sendfile, access log buffered (the server-side page count)."
  echo "Load average (1, 5, 15 min) before the run: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)${NICE:+; everything measured ran under nice -n $NICE}."
  echo "All figures come from this one run, on a machine shared with other work: compare the ratios."
  for n in "${SIZES[@]}"; do
    echo
    echo "## $n pages ($(calc "%.1f" "${SITE_BYTES[$n]} / $n / 1000") KB each, $(mib "${SITE_BYTES[$n]}") MiB)"
    echo
    echo "| | wall s | pages/s | CPU ms/page | CPU s / wall s | peak RSS MiB | pages fetched (server log) | check |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|"
    for who in wget crawler; do
      echo "| $who | ${R[wall-$who-$n]} | $(pps "$n" "$who") | $(cpu_ms "$n" "$who") | $(calc "%.2f" "(${R[user-$who-$n]} + ${R[sys-$who-$n]}) / (${R[wall-$who-$n]} > 0 ? ${R[wall-$who-$n]} : 0.01)") | $(rss_mib "$who" "$n") | ${R[distinct-$who-$n]} distinct / ${R[total-$who-$n]} requests, ${R[non200-$who-$n]} not 200, ${R[other-$who-$n]} other files | ${R[ok-$who-$n]} |"
    done
    echo
    local_pps=$(calc "%.2f" "$(pps "$n" crawler) / $(pps "$n" wget)")
    cpu_c=$(cpu_ms "$n" crawler)
    redis_ms=$(calc "%.3f" "${R[rediscpu-$n]} * 1000 / $n")
    echo "| ratio | value | aim |"
    echo "|---|---:|---|"
    echo "| crawler pages/s / wget pages/s | $local_pps | >= 3: $(verdict "$local_pps >= 3") |"
    echo "| crawler CPU/page / wget CPU/page | $(calc "%.2f" "$cpu_c / $(cpu_ms "$n" wget)") | |"
    echo "| crawler CPU/page / libxml2 bare parse CPU/page (${R[bare-$n]} ms) | $(calc "%.2f" "$cpu_c / ${R[bare-$n]}") | <= 1.5: $(verdict "$cpu_c <= 1.5 * ${R[bare-$n]}") |"
    echo "| parser module CPU/page (${R[parser-$n]} ms: libxml2 + link extraction + normalization) / bare parse | $(calc "%.2f" "${R[parser-$n]} / ${R[bare-$n]}") | |"
    echo "| (crawler + its Redis) CPU/page / bare parse; Redis: $redis_ms ms/page | $(calc "%.2f" "($cpu_c + $redis_ms) / ${R[bare-$n]}") | |"
    echo "| crawler peak RSS | $(rss_mib crawler "$n") MiB | <= 64 MiB: $(verdict "${R[rss-crawler-$n]} <= 65536") |"
    echo
    echo "Redis after the crawl: used_memory $(mib "${R[redis-$n]}") MiB (empty server: $(mib "${R[redis0-$n]}") MiB; peak $(mib "${R[redispeak-$n]}") MiB; RSS $(mib "${R[redisrss-$n]}") MiB), ${R[rediskeys-$n]} keys, $(calc "%.0f" "(${R[redis-$n]} - ${R[redis0-$n]}) / $n") bytes per page."
    echo "Of it, the visited set (Bloom filter, ${R[seenkeys-$n]} keys \`*:seen*\`, sized by --bloom-capacity, not by the crawl): $(mib "${R[seenbytes-$n]}") MiB; every other key: $(mib "${R[otherbytes-$n]}") MiB, $(calc "%.0f" "${R[otherbytes-$n]} / $n") bytes per page."
    echo "Biggest other keys (bytes): $(grep -v ':seen' "$T/redis-keys-$n" | head -5 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')."
    echo "nginx worker CPU during the crawl: wget $(calc "%.3f" "${R[nginx-wget-$n]} * 1000 / $n") ms/page, crawler $(calc "%.3f" "${R[nginx-crawler-$n]} * 1000 / $n") ms/page. Crawler JSON records: ${R[records-$n]}."
  done
  if ((SMALL > 0)); then
    echo
    echo "Peak RSS against crawl size: crawler $(rss_mib crawler "$SMALL") MiB at $SMALL pages, $(rss_mib crawler "$N") MiB at $N pages; wget $(rss_mib wget "$SMALL") MiB -> $(rss_mib wget "$N") MiB."
  fi
  if [ "$PROFILE" = 1 ] && [ -s "$T/profile-self.txt" ]; then
    echo
    echo "## Where the crawler's CPU goes ($PROFILE_N pages, perf, self time)"
    echo
    echo '```'
    cat "$T/profile-dso.txt"
    echo
    cat "$T/profile-self.txt"
    echo '```'
  fi
} >"$T/report.md"

publish_report "$MD"
[ "$STATUS" = 0 ] || echo "crawl_bench: CHECK FAILED: a crawler did not fetch every page (see the check column)" >&2
exit "$STATUS"
