#!/usr/bin/env bash
# perip.sh -- politeness per IP address (--per-ip, --ip-delay) on the synthetic web
# (bench/websim), judged from websim's own request log, and what it costs.
#   1. Shared hosting: a web of PAGES pages whose hosts share addresses HPI at a time
#      (hundreds of hosts per address), crawled by two processes sharing one Redis until
#      --max-pages STOP: once with --per-ip 3 (the most requests any address had in flight
#      at once, from the log's [arrival, end] intervals, must be <= 3), once with --per-ip 1
#      --ip-delay 50 (no request may reach an address sooner than 50 ms after the one
#      before it ended).  Without the options, the same crawl for reference.
#   2. Throughput: the same web with one address per host, one process to --max-pages STOP,
#      per-IP politeness off and on (--per-ip 2 --ip-delay 100), PAIRS pairs in turn: pages/s
#      of each (95% of the pages over the time their records say they took: a slow host's
#      last answer, seconds late, left out) and the ratio on/off pair by pair (target: at
#      least 0.9), and the Redis CPU per page both ways (INFO cpu, one Redis per run).
# Every crawl runs at --delay 250 (politeness on), over HTTPS and HTTP, with real DNS.
#
# usage: bash bench/perip.sh [PAGES]     (root; after bash .ci/setup)
# environment: HPI=200, STOP=2000, PAIRS=3, KEEP=1
# Prints `name value` lines; exits 1 if an address got more than its budget allows.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
HPI=${HPI:-200} STOP=${STOP:-2000} PAIRS=${PAIRS:-3} KEEP=${KEEP:-0}
WEBSIM=$PWD/build/bench/websim/websim CRAWLER=$PWD/build/crawler/crawler
[ "$(id -u)" -eq 0 ] || { echo "perip.sh: needs root (websim's network namespace)" >&2; exit 2; }
if [ ! -x "$WEBSIM" ] || [ ! -x "$CRAWLER" ]; then echo "perip.sh: build first (cmake --build build)" >&2; exit 2; fi
T=$(mktemp -d "${TMPDIR:-/tmp}/perip.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "perip.sh: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT
HOSTS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
# (no black-hole hosts: a connection held dark ends in the log when it closes, after the
# client gave its slot back, which would read as an overlap that never was)
BASE=(--hosts "$HOSTS" --pages-median 20 --pages-max 60 --cal-span 30 --lat-scale 0.1 --seed 36
  --share-blackhole 0)

# run NAME PROCS ARGS...: one crawl of the web (fresh Redis), its wall time and Redis CPU
cat >"$T/run.sh" <<EOF
set -eu
name=\$1 procs=\$2; shift 2
redis-server --port 6397 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 1gb \
  --daemonize no >"$T/redis-\$name.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6397 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=redis://127.0.0.1:6397
"$CRAWLER" seed "$T/seeds" --redis \$R --crawl c >/dev/null
COMMON=(--redis \$R --crawl c --scope any --max-depth 40 --delay 250 --max-delay 1000 \
  --threads 1 --concurrency 500 --timeout 20000 --quiet --max-pages $STOP \
  --ca-file \$WEBSIM_CA --allow-private-range 127.0.0.0/8)
cpu0=\$(redis-cli -p 6397 info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += \$2} END {print s}')
l0=\$(wc -l <"\$WEBSIM_LOG")
sod0=\$(date -u +%H:%M:%S.%3N)
t0=\$(date +%s%N)
pids=()
for p in \$(seq 1 \$procs); do
  "$CRAWLER" crawl "\${COMMON[@]}" "\$@" --out "$T/\$name.\$p.jsonl" 2>"$T/\$name.\$p.err" &
  pids+=(\$!)
done
rc=0
for p in "\${pids[@]}"; do wait \$p || rc=\$?; done
t1=\$(date +%s%N)
cpu1=\$(redis-cli -p 6397 info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += \$2} END {print s}')
pages=\$(cat "$T/\$name".*.jsonl | wc -l)
# the time to 95% of the pages, from the records' timestamps (a straggler's tail left out)
t95=\$(cat "$T/\$name".*.jsonl | grep -o '"timestamp":"[^"]*"' | cut -d'"' -f4 | cut -c12-23 |
  sort | awk -v s0="\$sod0" 'function sod(t, a) {split(t, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3]}
    {v[NR] = sod(\$0)} END {k = int(NR * 0.95); if (k < 1) k = 1; printf "%d", (v[k] - sod(s0)) * 1000}')
echo "\$name \$pages \$(( (t1 - t0) / 1000000 )) \$cpu0 \$cpu1 \$l0 \$(wc -l <"\$WEBSIM_LOG") \$t95" >>"$T/runs"
kill \$RP; wait \$RP || true
exit \$rc
EOF

# the log lines of run NAME, and the most in flight / the shortest end-to-arrival gap
# per address (address = host index / hpi)
judge() { # name hpi
  local from to
  read -r from to < <(awk -v n="$1" '$1 == n {print $6, $7}' "$T/runs")
  sed -n "$((from + 1)),${to}p" "$T/web/requests.log" |
    awk -F'\t' -v hpi="$2" 'match($4, /^h[0-9]+\./) {
      print $1, $2, int(substr($4, 2, RLENGTH - 2) / hpi) }' >"$T/$1.req" # arrival end address
  # in flight: +1 at an arrival, -1 at an end, per address, in time order (an end before
  # an arrival of the same microsecond)
  local most
  most=$(awk '{print $1, 1, $3; print $2, -1, $3}' "$T/$1.req" | sort -k1,1n -k2,2n |
    awk '{c[$3] += $2; if (c[$3] > m) m = c[$3]} END {print m + 0}')
  # gaps: per address, each arrival against the latest end before it
  local gap
  gap=$(sort -k1,1n "$T/$1.req" | awk '{
      if ($3 in last) { g = $1 - last[$3]; if (gap == "" || g < gap) gap = g }
      if (!($3 in last) || $2 > last[$3]) last[$3] = $2 }
    END {printf "%.1f", (gap == "" ? -1 : gap / 1000)}')
  echo "$most $gap $(wc -l <"$T/$1.req")"
}

# 1. shared hosting
WEB=("${BASE[@]}" --hosts-per-ip "$HPI")
"$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"
cat >"$T/shared.sh" <<EOF
set -eu
bash "$T/run.sh" none 2
bash "$T/run.sh" cap3 2 --per-ip 3
bash "$T/run.sh" gap50 2 --per-ip 1 --ip-delay 50
EOF
bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/shared.sh" ||
  { tail -5 "$T"/*.err >&2; echo "perip.sh: a crawl failed" >&2; exit 1; }
fail=0
echo "shared_hosting hosts $HOSTS hosts_per_ip $HPI addresses $(((HOSTS + HPI - 1) / HPI)) stop $STOP"
for n in none cap3 gap50; do
  read -r most gap reqs < <(judge $n "$HPI")
  echo "$n requests $reqs most_in_flight_one_address $most shortest_gap_ms $gap"
  if [ $n = cap3 ] && [ "$most" -gt 3 ]; then fail=1; fi
  if [ $n = gap50 ] && { [ "$most" -gt 1 ] || awk -v g="$gap" 'BEGIN {exit !(g < 50)}'; }; then fail=1; fi
done
cp "$T/runs" "$T/runs.shared"; rm -f "$T/runs" "$T/web/requests.log"

# 2. one address a host: what per-IP politeness costs
WEB=("${BASE[@]}" --hosts-per-ip 1)
"$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"
: >"$T/own.sh"
for i in $(seq 1 "$PAIRS"); do
  echo "bash $T/run.sh off$i 1" >>"$T/own.sh"
  echo "bash $T/run.sh on$i 1 --per-ip 2 --ip-delay 100" >>"$T/own.sh"
done
bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/own.sh" ||
  { tail -5 "$T"/*.err >&2; echo "perip.sh: a crawl failed" >&2; exit 1; }
awk '{ps = 0.95 * $2 / ($8 / 1000); cpu = ($5 - $4) * 1000 / $2
      printf "%s pages %d ms_to_exit %d ms_to_95pct %d pages_per_s %.1f redis_cpu_ms_per_page %.4f\n", $1, $2, $3, $8, ps, cpu
      k = substr($1, 1, 2) == "on" ? "on" : "off"; i = substr($1, length(k) + 1)
      r[k, i] = ps; c[k] += cpu; nk[k]++ }
  END { for (i = 1; i <= '"$PAIRS"'; i++) printf "pair %d on_over_off %.3f\n", i, r["on", i] / r["off", i]
        printf "redis_cpu_ms_per_page off %.4f on %.4f\n", c["off"] / nk["off"], c["on"] / nk["on"] }' "$T/runs"
exit $fail
