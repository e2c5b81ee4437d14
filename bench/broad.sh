#!/usr/bin/env bash
# broad.sh -- the crawler on the real web's shape: one generated site spread over H
# loopback hosts, every response delayed by LAT ms, politeness of PER_HOST requests per
# host at a time; requests/s against the bound (transfers in flight / latency), CPU and
# RSS per request and per transfer in flight, Redis CPU, new TCP connections per request,
# politeness under --delay, against a one-host CPU-bound reference and wget, in one run.
#
# usage: bash bench/broad.sh [N]        (from the repo root, after bash .ci/setup)
#   N              pages of the site (default 20000)
# environment:
#   BUILD=dir      build directory with crawler/crawler and bench/gen_site (default ./build;
#                  the targets are (re)built first unless NOBUILD=1)
#   HOSTS="100 1000"  the host counts H of the broad runs (each host a loopback address
#                  127.1.x.y, 127.0.0.1 stays free)
#   CONC="64 256 1024 2048"  total transfers in flight asked of the process, one run each
#   CONC_PER_THREAD=1  the build under test reads --concurrency per thread (main before issue
#                  15): pass CONC / THREADS, so the totals in flight are the same. Default 0:
#                  --concurrency is the process's total budget (issue 15's meaning)
#   THREADS=2      --threads;  PER_HOST=2: --per-host of the broad runs;  LAT=50: ms of delay
#                  nginx adds to every response (echo module's echo_sleep, a timer)
#   DELAY=1000     ms of --delay in the politeness run (on DELAY_HOSTS=1000 hosts, at
#                  DELAY_CONC=1024 in flight); DELAY=0: no politeness run
#   REF=1          the one-host CPU-bound reference (H=1, LAT=0, --per-host 256, REF_CONC=64
#                  in flight, as bench/crawl_bench.sh's default); REF=0: skip
#   WGET_TIME=60   seconds wget crawls the largest-H site (sequential: bounded); 0: skip
#   TIMEOUT=s      bound on each crawl (default 300)
#   MD=file        where to write the figures (default bench/broad.md; MD= to skip); what
#                  follows a line "<!-- notes -->" in the old file is kept
#   CRAWLER_ARGS   extra options for every `crawler crawl`
#   KEEP=1         keep the temporary directory (sites, nginx logs, outputs)
#   NICE=n         run nginx, redis-server and the crawlers under `nice -n n`
#   MODULE=path    the crawler module redis-server loads (default $BUILD/bloom/crawler_redis.so;
#                  MODULE=none: a stock redis-server)
#   NAMES=1        hosts by name, hNNNN.crawl.test:PORT, not by address: the crawler runs in
#                  its own mount namespace (unshare -m) with RESOLV (a resolv.conf naming a
#                  local DNS server that answers them, see bench/dns.sh) bound over
#                  /etc/resolv.conf; the machine's resolver config is not touched
#   SUMMARY=file   also append one line per run: tag requests wall_s cpu_s rss_kib inflight
#   OPEN_FILES=1000  nginx's open_file_cache max (each page is fetched once: a bigger cache
#                  only holds descriptors, and past ~20,000 a worker runs out of them)
# In-flight scaling (issue 15: the loop's CPU must not grow with idle transfers; RSS per
# transfer in flight), instead of the runs above:
#   SCALE="100:50 1000:500 10000:5000"  pairs in-flight:latency-ms, one run each, so that
#                  every run asks for the same requests/s (in flight / latency = 2,000/s)
#   SCALE_HOSTS=5000 SCALE_PER_HOST=2  the site's hosts (hosts x per-host >= in flight)
#   SCALE_SEEDS=5000  the first SCALE_SEEDS pages (one per host) are the seeds (the ramp-up
#                  at 5 s a response is otherwise generations of 10 s: robots.txt, page)
#   SCALE_PAGES=80000  --max-pages of each run (the seeds included); N is the site's size
#   The crawler's CPU ticks and RSS are sampled every 0.5 s (/proc); the steady window is
#   from the first to the last moment nginx serves >= 90% of the in flight asked; requests/s
#   and CPU per request are given over that window and over the whole run.
#
# What it does, all on loopback, no proxy: picks one free port; for each H generates the
# site with `gen_site DIR N MANIFEST 1 HOSTS` (page i on host i % H, cross-host links
# absolute), serves it with nginx (2 workers, one `listen 127.1.x.y:PORT` per host, every
# response delayed by LAT ms, a fresh nginx and access log per run: $msec, $server_addr,
# $status, $connection, $connection_requests, $request_time, $request), and crawls it from
# the index of host 0 with `crawler crawl --scope any --allow-private --per-host PER_HOST
# --delay 0 --threads THREADS --concurrency C` against a fresh redis-server (--maxmemory 2gb,
# no persistence, the crawler module) per run, under /usr/bin/time. --allow-private is
# needed: the private-address guard refuses every non-seed host on a loopback address.
# From nginx's log: every page fetched exactly once, from its own host, status 200 (else
# the run FAILS); robots.txt counted apart; the most transfers in flight at once (a sweep
# over [$msec - $request_time, $msec]); new TCP connections ($connection_requests == 1).
# Idle RSS: an empty crawl (one seed answering 404) with the same options, per C.
# Politeness: per host, the request start times sorted; the smallest gap between two page
# requests must be >= DELAY (else FAIL); the gap counting robots.txt too is reported.
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
HOSTS=${HOSTS:-100 1000}
CONC=${CONC:-64 256 1024 2048}
CONC_PER_THREAD=${CONC_PER_THREAD:-0}
THREADS=${THREADS:-2}
PER_HOST=${PER_HOST:-2}
LAT=${LAT:-50}
DELAY=${DELAY:-1000}
DELAY_HOSTS=${DELAY_HOSTS:-1000}
DELAY_CONC=${DELAY_CONC:-1024}
REF=${REF:-1}
REF_CONC=${REF_CONC:-64}
WGET_TIME=${WGET_TIME:-60}
TIMEOUT=${TIMEOUT:-300}
MD=${MD-bench/broad.md}
CRAWLER_ARGS=${CRAWLER_ARGS:-}
KEEP=${KEEP:-0}
NICE=${NICE:-}
OPEN_FILES=${OPEN_FILES:-1000}
SCALE=${SCALE:-}
SCALE_HOSTS=${SCALE_HOSTS:-5000}
SCALE_PER_HOST=${SCALE_PER_HOST:-2}
SCALE_SEEDS=${SCALE_SEEDS:-5000}
SCALE_PAGES=${SCALE_PAGES:-80000}
NICE_CMD=()
die() { echo "broad: $*" >&2; exit 1; }
if [ -n "$NICE" ]; then
  [[ $NICE =~ ^-?[0-9]+$ ]] || die "NICE must be an integer"
  NICE_CMD=(nice -n "$NICE")
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
[[ $N =~ ^[0-9]+$ && $N -ge 30 && $N -le 10000000 ]] || die "N must be an integer in 30..10000000 (got '$N')"
for v in $HOSTS $CONC "$THREADS" "$PER_HOST" "$LAT" "$DELAY" "$DELAY_HOSTS" "$DELAY_CONC" \
  "$REF_CONC" "$WGET_TIME" "$TIMEOUT" "$OPEN_FILES" "$SCALE_HOSTS" "$SCALE_PER_HOST" \
  "$SCALE_SEEDS" "$SCALE_PAGES"; do
  isnum "$v" || die "not a non-negative integer: '$v'"
done
for h in $HOSTS "$DELAY_HOSTS"; do ((h >= 1 && h <= 50000)) || die "a host count must be in 1..50000"; done
((THREADS >= 1 && TIMEOUT > 0)) || die "THREADS and TIMEOUT must be positive"
for p in $SCALE; do
  [[ $p =~ ^[0-9]+:[0-9]+$ ]] || die "SCALE is a list of in-flight:latency-ms pairs (got '$p')"
done
if [ -n "$SCALE" ]; then
  ((SCALE_HOSTS >= 1 && SCALE_HOSTS <= 50000)) || die "SCALE_HOSTS must be in 1..50000"
  ((SCALE_SEEDS >= 1 && SCALE_SEEDS <= N && SCALE_PAGES >= SCALE_SEEDS)) ||
    die "need 1 <= SCALE_SEEDS <= N and SCALE_PAGES >= SCALE_SEEDS"
fi

# Only loopback traffic: no proxy may capture the crawls (wget and libcurl honour these).
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy ftp_proxy FTP_PROXY
export no_proxy='*' NO_PROXY='*'

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
ECHO_MOD=/usr/lib/nginx/modules/ngx_http_echo_module.so
for tool in "$NGINX" wget curl /usr/bin/time redis-server redis-cli timeout cmake; do
  command -v "$tool" >/dev/null ||
    die "missing $tool: apt-get install -y nginx-light libnginx-mod-http-echo wget curl time redis-server coreutils cmake"
done
[ -r "$ECHO_MOD" ] || ((LAT == 0)) || die "missing $ECHO_MOD: apt-get install -y libnginx-mod-http-echo"
[ -d "$BUILD" ] || die "no build directory '$BUILD' (run bash .ci/setup, or set BUILD=dir)"
if [ "${NOBUILD:-0}" != 1 ]; then
  cmake --build "$BUILD" --target crawler gen_site crawler_redis >/dev/null ||
    die "cannot build crawler, gen_site, crawler_redis in $BUILD (NOBUILD=1 uses what is there)"
fi
CRAWLER=$REPO/$BUILD/crawler/crawler
[[ $BUILD = /* ]] && CRAWLER=$BUILD/crawler/crawler
MODULE=${MODULE:-$(dirname "$(dirname "$CRAWLER")")/bloom/crawler_redis.so}
MODULE_ARGS=()
if [ "$MODULE" != none ]; then
  [ -r "$MODULE" ] || die "no crawler module at $MODULE (MODULE=none: without it)"
  MODULE_ARGS=(--loadmodule "$MODULE")
fi
NAMES=${NAMES:-0}
SUMMARY=${SUMMARY:-}
WRAP=()
if [ "$NAMES" = 1 ]; then
  [ -r "${RESOLV:-}" ] || die "NAMES=1 needs RESOLV=file (a resolv.conf for the crawler)"
  command -v unshare >/dev/null || die "missing unshare: apt-get install -y util-linux"
  # shellcheck disable=SC2016 # expanded by the inner shell
  WRAP=(unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$RESOLV")
fi
GEN=$(dirname "$(dirname "$CRAWLER")")/bench/gen_site
for b in "$CRAWLER" "$GEN"; do [ -x "$b" ] || die "missing $b"; done

# Sockets: nginx and the crawler each want one descriptor per transfer in flight.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=1048576

T=$(mktemp -d "${TMPDIR:-/tmp}/broad.XXXXXX")
chmod 755 "$T" # nginx workers may run as another user
BENCH_NAME=broad
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

addr_of() { echo "127.1.$(($1 / 200)).$(($1 % 200 + 1))"; } # host k (0-based)
PORT=$(free_port 127.0.0.1 127.1.0.1)

# ---------------------------------------------------------------- the sites
gen() { # H: writes $T/site-H (and its hosts file); the port is in every cross-host link
  local h=$1 k out
  [ -d "$T/site-$h" ] && return 0
  for ((k = 0; k < h; k++)); do
    if [ "$NAMES" = 1 ]; then printf 'h%04d.crawl.test:%s\n' "$k" "$PORT"; else echo "$(addr_of "$k"):$PORT"; fi
  done >"$T/hosts-$h"
  out=$("$GEN" "$T/site-$h" "$N" "$T/manifest-$h" 1 "$T/hosts-$h") || die "gen_site failed"
  echo "broad: site over $h hosts: $out"
}
drop_site() { rm -rf "$T/site-$1" "$T/manifest-$1"; }

# ---------------------------------------------------------------- nginx
nginx_conf() { # H LAT LOG
  local h=$1 lat=$2 log=$3 k listens="" temps="" m loc
  for ((k = 0; k < h; k++)); do listens+="    listen $(addr_of "$k"):$PORT;
"; done
  for m in client_body proxy fastcgi uwsgi scgi; do
    if [ "$m" = client_body ] || ! "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module"; then
      mkdir -p "$T/nginx-tmp/$m"
      temps+="  ${m}_temp_path $T/nginx-tmp/$m;
"
    fi
  done
  if ((lat > 0)); then # a timer in the worker, no CPU while it waits
    loc="location / { echo_sleep $(awk -v l="$lat" 'BEGIN {printf "%.3f", l / 1000}'); echo_exec @file; }
    location @file { try_files \$uri \$uri/index.html =404; }"
  else
    loc="location / { try_files \$uri \$uri/index.html =404; }"
  fi
  cat <<EOF
$( ((lat > 0)) && echo "load_module $ECHO_MOD;")
daemon off;
master_process on;
worker_processes 2;
worker_rlimit_nofile $NOFILE;
pid $T/nginx.pid;
error_log $T/nginx-error.log error;
events { worker_connections $((NOFILE - OPEN_FILES - 1000)); } # the listeners take slots too
http {
  types { text/html html; text/css css; application/javascript js; image/png png;
          image/x-icon ico; text/plain txt; }
  default_type application/octet-stream;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000;
  open_file_cache max=$OPEN_FILES inactive=120s;
  log_format bench '\$msec \$server_addr \$status \$connection \$connection_requests \$request_time \$remote_addr "\$request"';
$temps  server {
$listens    root $T/site-$SITE;
    access_log $log bench buffer=256k flush=1s;
    $loc
  }
}
EOF
}

start_nginx() { # H LAT TAG: serves $T/site-$SITE, logs to $T/access-TAG.log
  local h=$1 lat=$2 tag=$3 pid last
  nginx_conf "$h" "$lat" "$T/access-$tag.log" >"$T/nginx-$tag.conf"
  : >"$T/nginx-error.log"
  "${NICE_CMD[@]}" "$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx-$tag.conf" &
  pid=$!
  PIDS+=("$pid")
  last=$(addr_of $((h - 1)))
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null --noproxy '*' "http://$last:$PORT/robots.txt" 2>/dev/null; then
      NGINX_PID=$pid
      NGINX_WORKERS=$(ps -o pid= --ppid "$pid" | tr -d ' ' | tr '\n' ' ')
      : >"$T/access-$tag.log" # the readiness probe is not part of the run
      kill -USR1 "$pid"       # reopen the (truncated) log
      sleep 0.2
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$T/nginx-error.log" >&2 || true
  die "nginx did not start on port $PORT"
}

nginx_ticks() { local s=0 w; for w in $NGINX_WORKERS; do s=$((s + $(ticks_of "$w"))); done; echo "$s"; }

stop_nginx() { # graceful: the workers flush their access log buffers
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  forget_pid "$NGINX_PID"
}

# ---------------------------------------------------------------- redis

rcpu() { redis-cli -p "$REDIS_PORT" info cpu | tr -d '\r' |
  awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" {s += $2} END {printf "%.6f", s}'; }

# ---------------------------------------------------------------- one crawl
declare -A R # R[field-tag] = value
conc_arg() { # total -> what --concurrency gets
  if [ "$CONC_PER_THREAD" = 1 ]; then
    local c=$(($1 / THREADS))
    ((c >= 1)) || c=1
    echo "$c"
  else
    echo "$1"
  fi
}

# The crawler's CPU ticks and RSS every 0.5 s while it runs: "epoch-s ticks rss-KiB" lines.
sampler() { # pid-of-/usr/bin/time file: the crawler is its grandchild (time, timeout, crawler)
  local tp=$1 f=$2 mid="" cp="" st rest rss pg
  pg=$(($(getconf PAGESIZE) / 1024))
  for _ in $(seq 1 250); do
    mid=$(ps -o pid= --ppid "$tp" | head -1 | tr -d ' ')
    [ -z "$mid" ] || cp=$(ps -o pid= --ppid "$mid" | head -1 | tr -d ' ')
    [ -z "$cp" ] || break
    sleep 0.02
  done
  [ -n "$cp" ] || return 0
  while read -r st 2>/dev/null <"/proc/$cp/stat"; do
    read -r _ rss rest 2>/dev/null <"/proc/$cp/statm" || break
    # shellcheck disable=SC2086 # the fields of /proc/PID/stat after "(comm) "
    set -- ${st##*) }
    [ "$1" = Z ] && break
    echo "$EPOCHREALTIME $((${12} + ${13})) $((rss * pg))"
    sleep 0.5
  done >"$f"
}

crawl() { # tag total-conc per-host delay seed-url|@seeds-file [crawler options...]: one crawl
  local tag=$1 conc=$2 ph=$3 delay=$4 seed=$5 rc=0 c0 n0 tp sp=""
  shift 5
  start_redis "$tag"
  c0=$(rcpu)
  if [[ $seed = @* ]]; then cp "${seed#@}" "$T/seeds-$tag.txt"; else printf '%s\n' "$seed" >"$T/seeds-$tag.txt"; fi
  R[carg-$tag]=$(conc_arg "$conc")
  n0=$(nginx_ticks)
  # --concurrency: with CONC_PER_THREAD=1 per thread (old meaning), else the total per process
  # shellcheck disable=SC2086 # CRAWLER_ARGS is a list of options
  /usr/bin/time -f '%e %U %S %M' -o "$T/time-$tag" "${NICE_CMD[@]}" timeout -k 10 "$TIMEOUT" \
    "${WRAP[@]}" "$CRAWLER" crawl --redis "redis://127.0.0.1:$REDIS_PORT" --crawl broad \
    --seeds "$T/seeds-$tag.txt" --scope any --allow-private --per-host "$ph" --delay "$delay" \
    --threads "$THREADS" --concurrency "${R[carg-$tag]}" --quiet --out "$T/out-$tag.jsonl" \
    "$@" $CRAWLER_ARGS >"$T/stdout-$tag" 2>"$T/stderr-$tag" &
  tp=$!
  PIDS+=("$tp")
  if [ "${SAMPLE:-0}" = 1 ]; then
    sampler "$tp" "$T/samples-$tag" &
    sp=$!
  fi
  wait "$tp" || rc=$?
  forget_pid "$tp"
  [ -z "$sp" ] || wait "$sp" || true
  R[nginxcpu-$tag]=$(awk -v d=$(($(nginx_ticks) - n0)) -v t="$CLK_TCK" 'BEGIN {printf "%.3f", d / t}')
  R[rc-$tag]=$rc
  read -r "R[wall-$tag]" "R[user-$tag]" "R[sys-$tag]" "R[rss-$tag]" < <(tail -1 "$T/time-$tag")
  R[rediscpu-$tag]=$(awk -v a="$c0" -v b="$(rcpu)" 'BEGIN {printf "%.3f", b - a}')
  R[records-$tag]=$(wc -l <"$T/out-$tag.jsonl" 2>/dev/null || echo 0)
  rm -f "$T/out-$tag.jsonl"
  stop_redis
  if [ "$rc" -ne 0 ]; then
    echo "broad: crawl $tag exited with status $rc$([ "$rc" = 124 ] && echo ' (timeout)')" >&2
    tail -5 "$T/stderr-$tag" >&2 || true
  fi
}

# From a run's access log: pages (/ and *.html, each from its own host), robots.txt, other;
# the most requests in flight at once; new connections; the smallest per-host gaps.
analyse() { # tag H
  local tag=$1 h=$2 log=$T/access-$1.log
  [ -f "$log" ] || : >"$log"
  read -r "R[distinct-$tag]" "R[total-$tag]" "R[non200-$tag]" "R[wronghost-$tag]" \
    "R[robots-$tag]" "R[other-$tag]" "R[requests-$tag]" "R[newconn-$tag]" < <(
    awk -v h="$h" '
      function addr(k) { return "127.1." int(k / 200) "." (k % 200 + 1) }
      { uri = $9; req++; if ($5 == 1) newconn++ }
      uri == "/robots.txt" { robots++; next }
      uri == "/" || uri ~ /^\/s[0-9]+\/p[0-9]+\.html$/ {
        i = (uri == "/") ? 0 : substr(uri, index(uri, "/p") + 2) + 0
        if ($3 != 200) bad++; else { total++; if (!seen[uri]++) distinct++ }
        if ($2 != addr(i % h)) wrong++
        next }
      { other++ }
      END { printf "%d %d %d %d %d %d %d %d\n", distinct, total, bad, wrong, robots, other, req, newconn }' "$log")
  # the most transfers in flight: +1 at $msec - $request_time, -1 at $msec (ends first on ties)
  R[inflight-$tag]=$(awk '{ e = $1 * 1000; s = e - $6 * 1000; printf "%.0f 1\n%.0f 0\n", s, e }' "$log" |
    sort -n -k1,1 -k2,2 | awk '$2 == 1 { c++; if (c > m) m = c; next } { c-- } END { print m + 0 }')
  # what the work allowed: at each moment, min(asked, sum over hosts of min(per-host, the
  # host's requests not yet ended)), a bound that only the site's shape lowers (hosts whose
  # pages are all fetched, at the crawl's end); the mean in flight and that bound's mean
  # over the crawl (first request start to last end)
  # (and the same over the middle 80% of the requests: from the start of the 10th percentile's
  # to that of the 90th, the ramp and the tail left out)
  read -r "R[mean-$tag]" "R[workb-$tag]" "R[mmean-$tag]" "R[mworkb-$tag]" < <(
    awk '{ e = $1 * 1000; s = e - $6 * 1000; printf "%.3f 1 %s\n%.3f 0 %s\n", s, $2, e, $2 }' "$log" |
      sort -n -k1,1 -k2,2 | awk -v asked="${R[carg-$tag]:-0}" -v ph="${R[ph-$tag]:-1}" -v th="$THREADS" -v pt="$CONC_PER_THREAD" '
      { t[NR] = $1; k[NR] = $2; hst[NR] = $3; if ($2 == 0) rem[$3]++; else st[++ns] = $1 }
      END {
        if (pt == 1) asked *= th
        for (hh in rem) S += rem[hh] < ph ? rem[hh] : ph
        w0 = ns ? st[int(ns * 0.1) + 1] : 0; w1 = ns ? st[int(ns * 0.9)] : 0
        for (i = 1; i <= NR; i++) {
          if (i > 1) { d = t[i] - t[i - 1]; bw = S < asked ? S : asked; a += c * d; b += bw * d
            if (t[i - 1] >= w0 && t[i] <= w1) { am += c * d; bm += bw * d } }
          if (k[i] == 1) c++; else { c--; if (--rem[hst[i]] < ph) S-- }
        }
        span = NR ? t[NR] - t[1] : 0; mw = w1 - w0
        printf "%.1f %.1f %.1f %.1f\n", (span > 0 ? a / span : 0), (span > 0 ? b / span : 0),
          (mw > 0 ? am / mw : 0), (mw > 0 ? bm / mw : 0) }')
  # per host, the smallest gap between two request starts: pages only, and all requests
  read -r "R[gappage-$tag]" "R[gapall-$tag]" "R[gapbad-$tag]" "R[short10-$tag]" "R[short50-$tag]" < <(
    awk -v d="$DELAY" '{ s = $1 * 1000 - $6 * 1000; page = ($9 != "/robots.txt")
      printf "%s %.0f %d\n", $2, s, page }' "$log" | sort -k1,1 -k2,2n | awk -v d="$DELAY" '
      $1 != host { host = $1; last = ""; lastp = ""; }
      { if (last != "") { g = $2 - last; if (ga == "" || g < ga) ga = g }
        last = $2
        if ($3 == 1) { if (lastp != "") { g = $2 - lastp; if (gp == "" || g < gp) gp = g
            if (g < d) { bad++; if (g >= d - 10) s10++; else if (g >= d - 50) s50++ } }
          lastp = $2 } }
      END { printf "%s %s %d %d %d\n", (gp == "" ? "-" : gp), (ga == "" ? "-" : ga), bad, s10, s50 }')
  local ok=yes
  [ "${R[rc-$tag]}" = 0 ] || ok=no
  [ "${R[distinct-$tag]}" = "${EXPECT:-$N}" ] || ok=no
  [ "${R[total-$tag]}" = "${EXPECT:-$N}" ] || ok=no
  [ "${R[non200-$tag]}" = 0 ] || ok=no
  [ "${R[wronghost-$tag]}" = 0 ] || ok=no
  R[ok-$tag]=$ok
}

run() { # tag H LAT total-conc per-host delay
  local tag=$1 h=$2 lat=$3 conc=$4 ph=$5 delay=$6
  echo "broad: $tag: $h hosts, ${lat} ms, $conc in flight asked, --per-host $ph --delay $delay"
  SITE=$h start_nginx "$h" "$lat" "$tag"
  local seed_host
  seed_host=$(head -1 "$T/hosts-$h")
  crawl "$tag" "$conc" "$ph" "$delay" "http://$seed_host/"
  stop_nginx
  R[h-$tag]=$h R[conc-$tag]=$conc R[ph-$tag]=$ph R[delay-$tag]=$delay R[lat-$tag]=$lat
  analyse "$tag" "$h"
  [ -z "$SUMMARY" ] || echo "$tag ${R[requests-$tag]} ${R[wall-$tag]} $(awk -v u="${R[user-$tag]}" -v s="${R[sys-$tag]}" 'BEGIN {print u + s}') ${R[rss-$tag]} ${R[inflight-$tag]} ${R[ok-$tag]}" >>"$SUMMARY"
  echo "broad:   ${R[wall-$tag]} s, ${R[total-$tag]} pages, ${R[inflight-$tag]} in flight at most, check ${R[ok-$tag]}"
}

idle() { # tag total-conc: an empty crawl (its one seed answers 404), the same options
  local tag=$1 conc=$2
  SITE=$IDLE_SITE start_nginx 1 "$LAT" "$tag"
  crawl "$tag" "$conc" "$PER_HOST" 0 "http://$(addr_of 0):$PORT/empty.html"
  stop_nginx
}

run_wget() { # H: wget on the H-host site for WGET_TIME seconds
  local h=$1 tag=wget rc=0 k doms=""
  echo "broad: wget on $h hosts for at most $WGET_TIME s"
  SITE=$h start_nginx "$h" "$LAT" "$tag"
  for ((k = 0; k < h; k++)); do doms+="${doms:+,}$(addr_of "$k")"; done
  mkdir -p "$T/wget"
  /usr/bin/time -f '%e %U %S %M' -o "$T/time-$tag" timeout -k 5 "$WGET_TIME" \
    wget -r -l inf -nd --delete-after -q --no-proxy -e robots=off --span-hosts --domains="$doms" \
    -P "$T/wget" "http://$(addr_of 0):$PORT/" >/dev/null 2>"$T/stderr-$tag" || rc=$?
  stop_nginx
  R[rc-$tag]=$rc
  read -r "R[wall-$tag]" "R[user-$tag]" "R[sys-$tag]" "R[rss-$tag]" < <(tail -1 "$T/time-$tag")
  R[rc-$tag]=0 # wget's status is not the check: it is stopped by its time bound
  analyse "$tag" "$h"
  R[h-$tag]=$h R[lat-$tag]=$LAT
}

# ---------------------------------------------------------------- in-flight scaling
# The steady window of a run: from the first to the last moment nginx serves >= THR requests
# (THR: 90% of the in flight asked, else of the most reached); over it the time-weighted mean
# and median in flight, the requests that ended in it, the crawler's CPU ticks (interpolated
# from the samples) and its mean RSS; over the whole crawl (first start to last end) the median.
steady() { # tag target
  local tag=$1 target=$2 log=$T/access-$1.log thr
  thr=$(calc "%d" "$target * 0.9")
  ((${R[inflight-$tag]} >= thr)) || thr=$(calc "%d" "${R[inflight-$tag]} * 0.9")
  R[thr-$tag]=$thr
  read -r "R[ws-$tag]" "R[we-$tag]" "R[wmean-$tag]" "R[wmed-$tag]" "R[med-$tag]" "R[span-$tag]" "R[zero-$tag]" < <(
    awk '{ e = $1 * 1000; s = e - $6 * 1000; printf "%.0f 1\n%.0f 0\n", s, e }' "$log" |
      sort -n -k1,1 -k2,2 | awk -v thr="$thr" '
      function median(h, tot,   k, acc) { # h: in flight -> ms (mawk: no asort)
        for (k = 0; k <= m; k++) { acc += h[k]; if (acc * 2 >= tot) return k }
        return m }
      { t = $1; if (NR > 1 && t > prev) { n++; ts[n] = prev; te[n] = t; cv[n] = c }
        if ($2 == 1) { c++; if (c > m) m = c } else c--
        prev = t }
      END {
        for (i = 1; i <= n; i++) { hall[cv[i]] += te[i] - ts[i]; if (cv[i] >= thr) { if (ws == "") ws = ts[i]; we = te[i] } }
        z = hall[0] + 0 # ms with nothing in flight between the first start and the last end
        if (ws == "") { ws = ts[1]; we = te[n] }
        for (i = 1; i <= n; i++) if (ts[i] >= ws && te[i] <= we) { d = te[i] - ts[i]; area += cv[i] * d; hw[cv[i]] += d }
        printf "%.0f %.0f %.0f %d %d %.0f %.0f\n", ws, we, area / (we > ws ? we - ws : 1), median(hw, we - ws),
          median(hall, te[n] - ts[1]), te[n] - ts[1], z }')
  R[wreq-$tag]=$(awk -v a="${R[ws-$tag]}" -v b="${R[we-$tag]}" '{ e = $1 * 1000 } e >= a && e <= b { n++ } END { print n + 0 }' "$log")
  read -r "R[wticks-$tag]" "R[wrss-$tag]" < <(awk -v a="${R[ws-$tag]}" -v b="${R[we-$tag]}" '
    function at(x,   i) { # ticks at time x (ms), linear between samples
      if (x <= t[1]) return k[1]
      for (i = 2; i <= n; i++) if (t[i] >= x) return k[i - 1] + (k[i] - k[i - 1]) * (x - t[i - 1]) / (t[i] - t[i - 1])
      return k[n] }
    { n++; t[n] = $1 * 1000; k[n] = $2; if (t[n] >= a && t[n] <= b) { rs += $3; rn++ } }
    END { if (n == 0) { print "0 0"; exit } printf "%.1f %.0f\n", at(b) - at(a), rn ? rs / rn : 0 }' "$T/samples-$tag")
}

scale_runs() { # the SCALE pairs on the SCALE_HOSTS-host site
  local h=$SCALE_HOSTS p inf lat i
  gen 1
  IDLE_SITE=1
  for p in $SCALE; do
    inf=${p%%:*}
    PER_HOST=$SCALE_PER_HOST idle "idle-$inf" "$inf"
  done
  drop_site 1
  gen "$h"
  for ((i = 0; i < SCALE_SEEDS; i++)); do # page i lives on host i % h (gen_site)
    if ((i == 0)); then echo "http://$(sed -n 1p "$T/hosts-$h")/"; else
      echo "http://$(sed -n "$((i % h + 1))p" "$T/hosts-$h")/s$((i % 20))/p$i.html"; fi
  done >"$T/scale-seeds"
  for p in $SCALE; do
    inf=${p%%:*} lat=${p##*:}
    local tag=s$inf
    echo "broad: $tag: $h hosts, $lat ms, $inf in flight asked, --per-host $SCALE_PER_HOST, $SCALE_SEEDS seeds, --max-pages $SCALE_PAGES"
    SITE=$h start_nginx "$h" "$lat" "$tag"
    SAMPLE=1 crawl "$tag" "$inf" "$SCALE_PER_HOST" 0 "@$T/scale-seeds" --max-pages "$SCALE_PAGES"
    stop_nginx
    R[h-$tag]=$h R[conc-$tag]=$inf R[ph-$tag]=$SCALE_PER_HOST R[delay-$tag]=0 R[lat-$tag]=$lat
    EXPECT=$SCALE_PAGES analyse "$tag" "$h"
    R[warn-$tag]=$(grep -c 'warning' "$T/stderr-$tag" || true)
    RUNS+=("$tag")
    echo "broad:   ${R[wall-$tag]} s, ${R[total-$tag]} pages, in flight max ${R[inflight-$tag]}, check ${R[ok-$tag]}"
  done
}

scale_report() {
  local t prev="" kib slope
  echo "# In-flight scaling at a constant request rate"
  echo
  echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
  echo "\`SCALE=\"$SCALE\" bash bench/broad.sh $N\` (SCALE_HOSTS=$SCALE_HOSTS SCALE_PER_HOST=$SCALE_PER_HOST SCALE_SEEDS=$SCALE_SEEDS SCALE_PAGES=$SCALE_PAGES THREADS=$THREADS OPEN_FILES=$OPEN_FILES${CRAWLER_ARGS:+ CRAWLER_ARGS=\"$CRAWLER_ARGS\"}; $CARG_NOTE)."
  echo "Load average (1, 5, 15 min) before the run: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg). Open-files limit (hard): $(ulimit -Hn); nginx worker_connections $((NOFILE - OPEN_FILES - 1000)) (the $SCALE_HOSTS listeners included)."
  echo
  echo "Site: $N pages over $SCALE_HOSTS hosts (page i on host i % $SCALE_HOSTS); seeds: pages 0..$((SCALE_SEEDS - 1)) (one per host); \`--max-pages $SCALE_PAGES --per-host $SCALE_PER_HOST --delay 0\`; each run's latency chosen so that in flight / latency = the same request rate."
  echo
  echo "| in flight asked | latency ms | bound req/s | in flight max | in flight median (whole crawl) | steady window s (of wall s) | in flight mean / median (steady) | requests/s (steady) | of the bound (steady) | requests/s (whole run) | CPU ms/request (steady) | CPU ms/request (whole run) | peak RSS MiB | idle RSS MiB | mean RSS MiB (steady) | KiB per transfer (peak - idle) / max in flight | KiB per transfer, slope from the previous row | new TCP conns/request | ms with nothing in flight | open-files warning | pages (nginx log) | check |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"
  for t in "${RUNS[@]}"; do
    [[ $t = s* ]] || continue
    local idle_t=idle-${R[conc-$t]} wl
    wl=$(calc "%.3f" "(${R[we-$t]} - ${R[ws-$t]}) / 1000")
    kib=$(calc "%.1f" "(${R[rss-$t]} - ${R[rss-$idle_t]}) / (${R[inflight-$t]} > 0 ? ${R[inflight-$t]} : 1)")
    slope="-"
    [ -z "$prev" ] || slope=$(calc "%.1f" "(${R[rss-$t]} - ${R[rss-$prev]}) / (${R[inflight-$t]} - ${R[inflight-$prev]} != 0 ? ${R[inflight-$t]} - ${R[inflight-$prev]} : 1)")
    echo "| ${R[conc-$t]} | ${R[lat-$t]} | $(bound_rps "$t") | ${R[inflight-$t]} | ${R[med-$t]} | $(calc "%.1f" "$wl") ($(wall "$t")) | ${R[wmean-$t]} / ${R[wmed-$t]} | $(calc "%.0f" "${R[wreq-$t]} / ($wl > 0 ? $wl : 1)") | $(calc "%.0f%%" "${R[wreq-$t]} / ($wl > 0 ? $wl : 1) * 100 / $(bound_rps "$t")") | $(rps "$t") | $(calc "%.3f" "${R[wticks-$t]} / $CLK_TCK * 1000 / (${R[wreq-$t]} > 0 ? ${R[wreq-$t]} : 1)") | $(cpu_req "$t") | $(mib "${R[rss-$t]}") | $(mib "${R[rss-$idle_t]}") | $(mib "${R[wrss-$t]}") | $kib | $slope | $(calc "%.3f" "${R[newconn-$t]} / (${R[requests-$t]} > 0 ? ${R[requests-$t]} : 1)") | ${R[zero-$t]} | $([ "${R[warn-$t]}" = 0 ] && echo no || echo "yes: $(grep -m1 warning "$T/stderr-$t")") | ${R[total-$t]} (${R[distinct-$t]} distinct, ${R[non200-$t]} not 200, ${R[wronghost-$t]} wrong host) + ${R[robots-$t]} robots.txt | ${R[ok-$t]} |"
    prev=$t
  done
  echo
  echo "How to read: in flight is counted from nginx's log (a sweep over [\$msec - \$request_time, \$msec], 1 ms). The steady window runs from the first to the last moment at least 90% of the bound in flight (min(asked, hosts x per-host)) is being served; requests/s (steady) counts the requests that ended in it; CPU (steady) is the crawler's user+sys ticks over it, from /proc samples every 0.5 s, linearly interpolated (10 ms ticks). Whole run: every request over the crawler's wall time, /usr/bin/time's CPU. Idle RSS: an empty crawl (one seed answering 404) with the same --concurrency and --per-host. The slope (RSS_b - RSS_a) / (in flight_b - in flight_a) cancels the fixed costs (the Bloom filter's cache, the robots cache, the libraries)."
}

# ---------------------------------------------------------------- the runs
RUNS=() IDLES=()
if [ -n "$SCALE" ]; then
  REF=0 HOSTS="" DELAY=0 WGET_TIME=0 CONC=""
  scale_runs
fi
if [ "$REF" = 1 ]; then
  gen 1
  run ref 1 0 "$REF_CONC" 256 0
  RUNS+=(ref)
fi
[ -n "$SCALE" ] || gen 1
IDLE_SITE=1
for c in $CONC; do
  idle "idle-$c" "$c"
  IDLES+=("idle-$c")
done
((DELAY > 0)) && idle "idle-$DELAY_CONC" "$DELAY_CONC"
[ -n "$SCALE" ] || drop_site 1
LAST_H=""
for h in $HOSTS; do
  gen "$h"
  for c in $CONC; do
    run "b$h-c$c" "$h" "$LAT" "$c" "$PER_HOST" 0
    RUNS+=("b$h-c$c")
  done
  if ((DELAY > 0 && h == DELAY_HOSTS)); then
    run "d$h" "$h" "$LAT" "$DELAY_CONC" "$PER_HOST" "$DELAY"
    RUNS+=("d$h")
  fi
  LAST_H=$h
  [ "$h" = "${HOSTS##* }" ] || drop_site "$h"
done
if ((DELAY > 0)) && [[ " $HOSTS " != *" $DELAY_HOSTS "* ]]; then
  gen "$DELAY_HOSTS"
  run "d$DELAY_HOSTS" "$DELAY_HOSTS" "$LAT" "$DELAY_CONC" "$PER_HOST" "$DELAY"
  RUNS+=("d$DELAY_HOSTS")
  drop_site "$DELAY_HOSTS"
fi
((WGET_TIME > 0)) && [ -n "$LAST_H" ] && run_wget "$LAST_H"

# ---------------------------------------------------------------- figures
STATUS=0
for tag in "${RUNS[@]}"; do [ "${R[ok-$tag]}" = yes ] || STATUS=1; done
for tag in "${RUNS[@]}"; do
  [[ $tag = d* ]] || continue
  if [ "${R[gapbad-$tag]}" != 0 ] || [ "${R[gappage-$tag]}" = - ]; then
    R[polite-$tag]=FAILED
    STATUS=1
  else
    R[polite-$tag]=met
  fi
done

wall() { calc "%s" "(${R[wall-$1]} > 0 ? ${R[wall-$1]} : 0.01)"; }
rps() { calc "%.0f" "${R[requests-$1]} / $(wall "$1")"; }
pps() { calc "%.0f" "${R[total-$1]} / $(wall "$1")"; }
cpu_page() { calc "%.3f" "(${R[user-$1]} + ${R[sys-$1]}) * 1000 / (${R[total-$1]} > 0 ? ${R[total-$1]} : 1)"; }
cpu_req() { calc "%.3f" "(${R[user-$1]} + ${R[sys-$1]}) * 1000 / (${R[requests-$1]} > 0 ? ${R[requests-$1]} : 1)"; }
per_req() { calc "%.3f" "$2 * 1000 / (${R[requests-$1]} > 0 ? ${R[requests-$1]} : 1)"; }
mib() { calc "%.1f" "$1 / 1024"; }
inflight_total() { # total asked -> transfers the build may really have in flight
  local c
  c=$(conc_arg "$1")
  [ "$CONC_PER_THREAD" = 1 ] && c=$((c * THREADS))
  echo "$c"
}
bound_inflight() { # tag: min(concurrency in flight, hosts x per-host)
  local c h=${R[h-$1]} ph=${R[ph-$1]}
  c=$(inflight_total "${R[conc-$1]}")
  ((c < h * ph)) && echo "$c" || echo $((h * ph))
}
bound_rps() { # tag: in flight / latency; with a delay also hosts / delay
  local b
  b=$(calc "%.0f" "$(bound_inflight "$1") * 1000 / ${R[lat-$1]}")
  if ((${R[delay-$1]} > 0)); then
    local d
    d=$(calc "%.0f" "${R[h-$1]} * 1000 / ${R[delay-$1]}")
    ((d < b)) && b=$d
  fi
  echo "$b"
}

if [ -n "${BENCH_COMMIT:-}" ]; then
  COMMIT=$BENCH_COMMIT
else
  COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
  DIRTY=$(git -C "$REPO" status --porcelain -uno 2>/dev/null | grep -c . || true)
  ((DIRTY == 0)) || COMMIT+=" (+ uncommitted changes in $DIRTY files)"
fi
CARG_NOTE="--concurrency C (the process's total)"
[ "$CONC_PER_THREAD" = 1 ] && CARG_NOTE="--concurrency C/$THREADS (CONC_PER_THREAD=1: the build reads it per thread)"

if [ -n "$SCALE" ]; then
  for tag in "${RUNS[@]}"; do steady "$tag" "$(bound_inflight "$tag")"; done
  scale_report >"$T/report.md"
  cat "$T/report.md"
  [ -z "$MD" ] || { cp "$T/report.md" "$MD"; echo "broad: figures written to $MD"; }
  [ "$STATUS" = 0 ] || echo "broad: CHECK FAILED: a crawl missed or repeated a page (see the check column)" >&2
  exit "$STATUS"
fi

row() { # tag
  local t=$1 idle_t=idle-${R[conc-$1]} kib="-" bp
  [[ $t = d* ]] && idle_t=idle-$DELAY_CONC
  [[ -n ${R[rss-$idle_t]:-} ]] && kib=$(calc "%.1f" "(${R[rss-$t]} - ${R[rss-$idle_t]}) / (${R[inflight-$t]} > 0 ? ${R[inflight-$t]} : 1)")
  local bi fl=${R[inflight-$t]} bp pc
  bi=$(bound_inflight "$t")
  if ((${R[lat-$t]} > 0)); then
    bp=$(bound_rps "$t")
    pc=$(calc "%.0f%%" "$(rps "$t") * 100 / $bp")
  else # no latency: CPU-bound, requests shorter than the log's 1 ms resolution
    bi="-" fl="-" bp="-" pc="-" kib="-"
  fi
  local mw="-" mm="-"
  if ((${R[lat-$t]} > 0 && ${R[delay-$t]} == 0)); then
    mw="${R[mean-$t]} / ${R[workb-$t]} ($(calc "%.0f%%" "${R[mean-$t]} * 100 / (${R[workb-$t]} > 0 ? ${R[workb-$t]} : 1)"))"
    mm="${R[mmean-$t]} / ${R[mworkb-$t]} ($(calc "%.0f%%" "${R[mmean-$t]} * 100 / (${R[mworkb-$t]} > 0 ? ${R[mworkb-$t]} : 1)"))"
  fi
  echo "| ${R[conc-$t]} (${R[carg-$t]}) | $bi | $fl | ${R[wall-$t]} | $(pps "$t") | $(rps "$t") | $bp | $pc | $mw | $mm | $(cpu_page "$t") | $(cpu_req "$t") | $(mib "${R[rss-$t]}") | $(mib "${R[rss-$idle_t]:-0}") | $kib | $(per_req "$t" "${R[rediscpu-$t]}") | $(calc "%.3f" "${R[newconn-$t]} / (${R[requests-$t]} > 0 ? ${R[requests-$t]} : 1)") | $(per_req "$t" "${R[nginxcpu-$t]}") | ${R[total-$t]} pages (${R[distinct-$t]} distinct, ${R[non200-$t]} not 200, ${R[wronghost-$t]} wrong host) + ${R[robots-$t]} robots.txt + ${R[other-$t]} other | ${R[ok-$t]} |"
}
HEADER="| in flight asked (--concurrency) | bound in flight | in flight (max, nginx log) | wall s | pages/s | requests/s | bound req/s | of the bound | in flight mean / what the work allowed | the same, middle 80% of the requests | CPU ms/page | CPU ms/request | peak RSS MiB | idle RSS MiB | KiB RSS per transfer in flight | Redis CPU ms/request | new TCP conns/request | nginx CPU ms/request | pages fetched (nginx log) | check |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"

{
  echo "# Broad-crawl benchmark: many slow hosts, politeness, thousands of transfers in flight"
  echo
  echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
  echo "\`bash bench/broad.sh $N\` (HOSTS=\"$HOSTS\" CONC=\"$CONC\" CONC_PER_THREAD=$CONC_PER_THREAD THREADS=$THREADS PER_HOST=$PER_HOST LAT=$LAT DELAY=$DELAY DELAY_HOSTS=$DELAY_HOSTS DELAY_CONC=$DELAY_CONC REF_CONC=$REF_CONC WGET_TIME=$WGET_TIME${CRAWLER_ARGS:+ CRAWLER_ARGS=\"$CRAWLER_ARGS\"})."
  echo "Load average (1, 5, 15 min) before the run: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)${NICE:+; everything measured ran under nice -n $NICE}. The machine is shared: compare the ratios."
  echo
  echo "Site: $N pages of ~19 KB (bench/gen_site with a hosts file), page i on host i % H, hosts 127.1.x.y:$PORT (127.0.0.1 left free), links to other hosts absolute, every page reachable from the seed http://127.1.0.1:$PORT/."
  echo "nginx: 2 workers, one \`listen\` per host, every response delayed by LAT ms (echo module: \`echo_sleep\`, a timer, then \`echo_exec @file\`), keep-alive, a fresh nginx and access log per run."
  echo "crawler: \`crawl --scope any --allow-private --per-host P --delay D --threads $THREADS $CARG_NOTE --quiet --out FILE\`, a fresh redis-server per run (--maxmemory 2gb, no persistence$([ "$MODULE" = none ] && echo ', no crawler module' || echo ', the crawler module loaded')). \`--allow-private\` is required: the private-address guard refuses every non-seed host on a loopback address."
  for h in $HOSTS; do
    echo
    echo "## $h hosts, ${LAT} ms per response, --per-host $PER_HOST --delay 0"
    echo
    echo "$HEADER"
    for c in $CONC; do row "b$h-c$c"; done
  done
  for tag in "${RUNS[@]}"; do
    [[ $tag = d* ]] || continue
    echo
    echo "## Politeness: ${R[h-$tag]} hosts, ${LAT} ms, --per-host $PER_HOST --delay ${R[delay-$tag]}"
    echo
    echo "$HEADER"
    row "$tag"
    echo
    echo "Smallest gap between two request starts to one host (nginx log, \$msec - \$request_time, both workers): page requests ${R[gappage-$tag]} ms (${R[gapbad-$tag]} gaps < ${R[delay-$tag]} ms: ${R[polite-$tag]}; of them ${R[short10-$tag]} short by < 10 ms, ${R[short50-$tag]} by 10-50 ms, $((R[gapbad-$tag] - R[short10-$tag] - R[short50-$tag])) by more); all requests, robots.txt included, ${R[gapall-$tag]} ms$(awk -v g="${R[gapall-$tag]}" -v d="${R[delay-$tag]}" 'BEGIN { if (g != "-" && g + 0 < d + 0) print " (below the delay: the frontier spaces page claims only, robots.txt is fetched right before a host'\''s first page)" }')."
  done
  if [ "$REF" = 1 ]; then
    echo
    echo "## One-host CPU-bound reference (the same build, the same run)"
    echo
    echo "1 host, no latency, --per-host 256 --delay 0, $REF_CONC in flight asked (bench/crawl_bench.sh's shape)."
    echo
    echo "$HEADER"
    row ref
    echo
    echo "| broad run | requests/s / one-host requests/s | CPU per page / one-host CPU per page |"
    echo "|---|---:|---:|"
    for h in $HOSTS; do
      for c in $CONC; do
        echo "| $h hosts, $c in flight asked | $(calc "%.2f" "$(rps "b$h-c$c") / $(rps ref)") | $(calc "%.2f" "$(cpu_page "b$h-c$c") / $(cpu_page ref)") |"
      done
    done
  fi
  if ((WGET_TIME > 0)) && [ -n "$LAST_H" ]; then
    echo
    echo "## wget on the $LAST_H-host site (the reference, sequential)"
    echo
    echo "\`wget -r -l inf -nd --delete-after -e robots=off --span-hosts --domains=<the $LAST_H addresses>\`, stopped after $WGET_TIME s: ${R[total-wget]} pages (${R[distinct-wget]} distinct) + ${R[other-wget]} other files in ${R[wall-wget]} s, $(calc "%.1f" "${R[total-wget]} / $(wall wget)") pages/s, $(calc "%.1f" "${R[requests-wget]} / $(wall wget)") requests/s, CPU $(calc "%.3f" "(${R[user-wget]} + ${R[sys-wget]}) * 1000 / (${R[requests-wget]} > 0 ? ${R[requests-wget]} : 1)") ms/request, peak RSS $(mib "${R[rss-wget]}") MiB, new TCP connections per request $(calc "%.3f" "${R[newconn-wget]} / (${R[requests-wget]} > 0 ? ${R[requests-wget]} : 1)")."
  fi
  echo
  echo "How to read: \"bound in flight\" is min(transfers asked, hosts x per-host); \"bound req/s\" is that / latency (with a delay: also at most hosts / delay). \"in flight (max)\" is the most requests nginx was serving at one moment (a sweep over [\$msec - \$request_time, \$msec] of every logged request, 1 ms resolution). requests/s counts every request of the crawl (pages and robots.txt) over the crawler's wall time (start-up and the crawl's tail included). \"in flight mean / what the work allowed\" (runs without a delay): the time-weighted mean of requests in flight over the crawl (first request start to last end) against the mean of min(transfers asked, the sum over hosts of min(per-host, the host's requests not yet ended)) over the same time: the bound lowered only by the site's shape (at the crawl's end, the hosts whose pages are all fetched), so the percentage is how much of what the crawl could have had in flight it had, its ramp (the site discovered generation by generation) included; \"middle 80%\": the same from the start of the 10th percentile's request to that of the 90th, the ramp and the tail left out. CPU is the crawler's user+sys (/usr/bin/time); Redis CPU is used_cpu_user+used_cpu_sys (INFO cpu) before/after; nginx CPU is both workers' utime+stime. Idle RSS: an empty crawl (one seed answering 404) with the same options and --concurrency; KiB per transfer = (peak RSS - idle RSS) / in flight (max). New TCP connections: requests with \$connection_requests = 1."
} >"$T/report.md"

publish_report "$MD"
[ "$STATUS" = 0 ] || echo "broad: CHECK FAILED: a crawl missed or repeated a page, or broke politeness (see the check column and the politeness line)" >&2
exit "$STATUS"
