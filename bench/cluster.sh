#!/usr/bin/env bash
# cluster.sh -- the crawl of a generated site with its frontier on one redis-server and on a
# Redis Cluster of M masters, side by side in one run, rounds alternating: pages/s, the
# crawler's CPU per page, Redis CPU per page on each node, and each node's share of the keys.
#
# usage: bash bench/cluster.sh [N]        (from the repo root, after bash .ci/setup)
#   N            pages of the site (default 20000)
# environment:
#   BUILD=dir    build directory with crawler/crawler and bench/gen_site (default ./build;
#                rebuilt first unless NOBUILD=1)
#   MASTERS=M    masters of the cluster (default 3)
#   HOSTS=H      hosts the site is spread over (default 100: loopback addresses 127.1.x.y,
#                one port, links crossing hosts; page i on host i % H); 1: the one-host site
#   SHARDS=S     --shards of the cluster's crawls (default 32, the crawler's default on a cluster)
#   SINGLE_SHARDS=S  --shards of the single Redis's crawls (default 1, its default)
#   ROUNDS=R     single/cluster pairs, alternating (default 2)
#   TIMEOUT=s    bound on each crawl (default 600)
#   MD=file      where to write the figures (default bench/cluster.md; MD= to skip); what
#                follows a line "<!-- notes -->" in the old file is kept
#   MODULE=path  the crawler module every redis-server loads (default
#                $BUILD/bloom/crawler_redis.so; MODULE=none: stock servers)
#   CRAWLER_ARGS extra options for `crawler crawl`
#   KEEP=1       keep the temporary directory
#
# All on 127.0.0.0/8: gen_site makes the site, nginx serves it (started for each crawl, with
# its own access log: the server-side count of pages fetched); each crawl gets
# fresh servers (no persistence, --maxmemory 2gb): one redis-server, or M of them joined with
# `redis-cli --cluster create`.  The crawler runs with its defaults, --per-host 256 --delay 0
# (as bench/crawl_bench.sh), --scope any --allow-private (the non-seed hosts are loopback
# addresses), pointed at all the nodes; a host's shard is its registered domain's (an
# address is its own), so the hosts spread the cluster's crawl over its masters.  Correctness: every one of the N pages
# fetched, with status 200, each exactly once (nginx's log).  Every process it starts is
# stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
if [[ ${1:-} = -h || ${1:-} = --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
N=${1:-20000}
BUILD=${BUILD:-build}
MASTERS=${MASTERS:-3}
HOSTS=${HOSTS:-100}
SHARDS=${SHARDS:-32}
ROUNDS=${ROUNDS:-2}
TIMEOUT=${TIMEOUT:-600}
MD=${MD-bench/cluster.md}
CRAWLER_ARGS=${CRAWLER_ARGS:-}
KEEP=${KEEP:-0}
# shellcheck disable=SC2034 # lib.sh uses it
NICE_CMD=()
die() { echo "cluster_bench: $*" >&2; exit 1; }
[[ $N =~ ^[0-9]+$ && $N -ge 30 ]] || die "N must be an integer >= 30"
[[ $MASTERS =~ ^[0-9]+$ && $MASTERS -ge 3 && $MASTERS -le 9 ]] || die "MASTERS must be 3..9"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 && $ROUNDS -le 10 ]] || die "ROUNDS must be 1..10"
[[ $HOSTS =~ ^[0-9]+$ && $HOSTS -ge 1 && $HOSTS -le 40000 ]] || die "HOSTS must be 1..40000"
[[ $SHARDS =~ ^[0-9]+$ && $SHARDS -ge 1 && $SHARDS -le 1024 ]] || die "SHARDS must be 1..1024"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export no_proxy='*' NO_PROXY='*'
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for tool in "$NGINX" /usr/bin/time redis-server redis-cli timeout curl; do
  command -v "$tool" >/dev/null || die "missing $tool (apt-get install -y nginx-light time redis-server curl)"
done
if [ "${NOBUILD:-0}" != 1 ]; then
  cmake --build "$BUILD" --target crawler gen_site crawler_redis >/dev/null || die "build failed"
fi
CRAWLER=$REPO/$BUILD/crawler/crawler
[[ $BUILD = /* ]] && CRAWLER=$BUILD/crawler/crawler
BENCHBIN=$(dirname "$(dirname "$CRAWLER")")/bench
MODULE=${MODULE:-$(dirname "$(dirname "$CRAWLER")")/bloom/crawler_redis.so}
MODULE_ARGS=()
if [ "$MODULE" != none ]; then
  [ -r "$MODULE" ] || die "no crawler module at $MODULE (MODULE=none: without it)"
  MODULE_ARGS=(--loadmodule "$MODULE")
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/cluster_bench.XXXXXX")
chmod 755 "$T"
# shellcheck disable=SC2034 # lib.sh uses it
BENCH_NAME=cluster_bench
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

addr_of() { echo "127.1.$(($1 / 200)).$(($1 % 200 + 1))"; } # host k (0-based)
PORT=$(free_port 127.0.0.1 127.1.0.1)
echo "cluster_bench: generating $N pages over $HOSTS hosts in $T"
for ((k = 0; k < HOSTS; k++)); do echo "$(addr_of "$k"):$PORT"; done >"$T/hosts"
if ((HOSTS > 1)); then
  "$BENCHBIN/gen_site" "$T/site" "$N" "$T/manifest" 1 "$T/hosts" >/dev/null || die "gen_site failed"
else
  "$BENCHBIN/gen_site" "$T/site" "$N" "$T/manifest" >/dev/null || die "gen_site failed"
fi

# ---------------------------------------------------------------- nginx
RUNS=()
for r in $(seq 1 "$ROUNDS"); do RUNS+=("single-$r" "cluster-$r"); done
declare -A R
start_nginx() { # RUN: serves the site on every host's address, logs to access-RUN.log
  local run=$1 pid listens="" k
  for ((k = 0; k < HOSTS; k++)); do listens+="    listen $(addr_of "$k"):$PORT;
"; done
  mkdir -p "$T/nginx-tmp"
  cat >"$T/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log warn;
events { worker_connections 4096; }
http {
  default_type text/html;
  client_body_temp_path $T/nginx-tmp;
  sendfile on; tcp_nodelay on; keepalive_timeout 65; keepalive_requests 1000000;
  log_format bench '\$status \$request_uri';
  server {
$listens    root $T/site;
    access_log $T/access-$run.log bench buffer=256k flush=1s;
  }
}
EOF
  "$NGINX" -p "$T" -e "$T/nginx-error.log" -c "$T/nginx.conf" &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 50); do
    curl -sS -o /dev/null --noproxy "*" "http://$(addr_of 0):$PORT/probe" 2>/dev/null &&
      { NGINX_PID=$pid; return 0; }
    sleep 0.1
  done
  die "nginx did not start"
}
stop_nginx() {
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  forget_pid "$NGINX_PID"
}

# ---------------------------------------------------------------- redis
NODE_PORTS=() NODE_PIDS=()
start_node() { # TAG [extra args]: one redis-server (lib.sh); appended to NODE_PORTS / NODE_PIDS
  start_redis "$@"
  NODE_PORTS+=("$REDIS_PORT") NODE_PIDS+=("$REDIS_PID")
}
start_servers() { # MODE RUN
  NODE_PORTS=() NODE_PIDS=()
  if [ "$1" = single ]; then
    start_node "$2"
    return 0
  fi
  local i addrs=() p ok
  for i in $(seq 1 "$MASTERS"); do
    start_node "$2-$i" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 5000
  done
  for p in "${NODE_PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$T/create-$2.log" 2>&1 ||
    die "redis-cli --cluster create failed: $(tail -3 "$T/create-$2.log")"
  for _ in $(seq 1 200); do
    ok=1
    for p in "${NODE_PORTS[@]}"; do
      redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
    done
    ((ok)) && return 0
    sleep 0.1
  done
  die "the cluster did not reach cluster_state:ok"
}
stop_servers() {
  local p
  for p in "${NODE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]}"; do wait "$p" 2>/dev/null || true; forget_pid "$p"; done
}
node_cpu() { # PORT: used_cpu_user + used_cpu_sys, s
  redis-cli -p "$1" info cpu | tr -d '\r' |
    awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.3f", s }'
}

# ---------------------------------------------------------------- runs
run() { # MODE ROUND
  local mode=$1 run=$1-$2 i url="redis://" rc=0 c0=() sep=""
  echo "cluster_bench: $run"
  start_nginx "$run"
  start_servers "$mode" "$run"
  local shards=${SINGLE_SHARDS:-1}
  [ "$mode" = cluster ] && shards=$SHARDS
  for i in "${!NODE_PORTS[@]}"; do
    url+="${sep}127.0.0.1:${NODE_PORTS[$i]}" sep=,
    c0[i]=$(node_cpu "${NODE_PORTS[$i]}")
  done
  printf 'http://%s:%s/\n' "$(addr_of 0)" "$PORT" >"$T/seeds-$run.txt"
  # shellcheck disable=SC2086 # CRAWLER_ARGS is a list of options
  /usr/bin/time -f '%e %U %S %M' -o "$T/time-$run" timeout -k 10 "$TIMEOUT" \
    "$CRAWLER" crawl --redis "$url" --crawl "bench$2" --seeds "$T/seeds-$run.txt" --delay 0 \
    --per-host 256 --shards "$shards" --scope any --allow-private --quiet --out /dev/null \
    $CRAWLER_ARGS >"$T/stdout-$run" 2>"$T/stderr-$run" ||
    rc=$?
  R[rc-$run]=$rc
  ((rc == 0)) || { echo "cluster_bench: $run exited $rc" >&2; tail -5 "$T/stderr-$run" >&2; }
  read -r "R[wall-$run]" "R[user-$run]" "R[sys-$run]" "R[rss-$run]" <"$T/time-$run"
  R[nodes-$run]=${#NODE_PORTS[@]}
  for i in "${!NODE_PORTS[@]}"; do
    R[cpu-$run-$i]=$(calc "%.3f" "$(node_cpu "${NODE_PORTS[$i]}") - ${c0[$i]}")
    R[keys-$run-$i]=$(redis-cli -p "${NODE_PORTS[$i]}" dbsize | tr -d '\r')
    redis-cli -p "${NODE_PORTS[$i]}" info commandstats | tr -d "\r" | grep -E "fcall|unlink|bitfield|get:|hget" >"$T/cmdstats-$run-$i" || true
    R[mem-$run-$i]=$(redis-cli -p "${NODE_PORTS[$i]}" info memory | tr -d '\r' |
      awk -F: '$1 == "used_memory" { print $2 }')
  done
  stop_servers
  stop_nginx
}

for r in $(seq 1 "$ROUNDS"); do
  run single "$r"
  run cluster "$r"
done

STATUS=0
for run in "${RUNS[@]}"; do
  read -r "R[distinct-$run]" "R[total-$run]" "R[bad-$run]" < <(
    awk '{ page = ($2 == "/" || $2 ~ /\.html$/) }
         page && $1 == 200 { total++; if (!seen[$2]++) distinct++ }
         page && $1 != 200 { bad++ }
         END { printf "%d %d %d\n", distinct, total, bad }' "$T/access-$run.log")
  R[ok-$run]=yes
  if [ "${R[rc-$run]}" != 0 ] || [ "${R[distinct-$run]}" != "$N" ] ||
    [ "${R[total-$run]}" != "$N" ] || [ "${R[bad-$run]}" != 0 ]; then
    R[ok-$run]=no STATUS=1
  fi
done

# ---------------------------------------------------------------- figures
pps() { calc "%.0f" "$N / ${R[wall-$1]}"; }
ms() { calc "%.3f" "$1 * 1000 / $N"; }
share() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "inf" }'; }
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# Cluster benchmark: one Redis and a $MASTERS-master Redis Cluster"
  echo
  echo "Generated by \`bash bench/cluster.sh $N\` (ROUNDS=$ROUNDS) at commit $COMMIT on $(date -u +%Y-%m-%d),"
  echo "$(nproc) cores, load before $(cut -d' ' -f1-3 /proc/loadavg). Every server on this one machine;"
  echo "Site: $N pages over $HOSTS host(s) (loopback addresses, links crossing hosts). Crawler with its"
  echo "defaults, --per-host 256 --delay 0 --scope any --allow-private; the cluster's crawl in"
  echo "--shards $SHARDS, the single Redis's in 1. Module: $([ "$MODULE" = none ] && echo none || echo loaded on every node)."
  echo
  echo "| run | pages/s | fetched once (nginx) | crawler CPU ms/page | Redis CPU ms/page, each node | keys, each node | peak RSS MiB |"
  echo "|---|---|---|---|---|---|---|"
  for run in "${RUNS[@]}"; do
    cpus="" keys="" sep=""
    for ((i = 0; i < R[nodes-$run]; i++)); do
      cpus+="$sep$(ms "${R[cpu-$run-$i]}")" keys+="$sep${R[keys-$run-$i]}" sep=" / "
    done
    echo "| $run | $(pps "$run") | ${R[distinct-$run]}/$N distinct, ${R[total-$run]} requests (${R[ok-$run]}) | $(ms "$(calc "%.3f" "${R[user-$run]} + ${R[sys-$run]}")") | $cpus | $keys | $(calc "%.1f" "${R[rss-$run]} / 1024") |"
  done
  echo
  echo "| round | cluster / single pages/s | target >= 0.70 | busiest / idlest node, Redis CPU | busiest / idlest node, keys | target <= 2 |"
  echo "|---|---|---|---|---|---|"
  for r in $(seq 1 "$ROUNDS"); do
    ratio=$(calc "%.2f" "${R[wall-single-$r]} / ${R[wall-cluster-$r]}")
    read -r cmax cmin kmax kmin < <(for ((i = 0; i < MASTERS; i++)); do
      echo "${R[cpu-cluster-$r-$i]} ${R[keys-cluster-$r-$i]}"; done |
      awk 'NR == 1 { cx = cn = $1; kx = kn = $2 }
           { if ($1 > cx) cx = $1; if ($1 < cn) cn = $1; if ($2 > kx) kx = $2; if ($2 < kn) kn = $2 }
           END { print cx, cn, kx, kn }')
    cshare=$(share "$cmax" "$cmin")
    kshare=$(share "$kmax" "$kmin")
    met=$(awk "BEGIN { exit !($ratio >= 0.70) }" && echo met || echo MISSED)
    share=$([[ $cshare != inf && $kshare != inf ]] && awk "BEGIN { exit !($cshare <= 2 && $kshare <= 2) }" && echo met || echo MISSED)
    echo "| $r | $ratio | $met | $cshare | $kshare | $share |"
  done
} >"$T/report.md"
publish_report "$MD"
exit "$STATUS"
