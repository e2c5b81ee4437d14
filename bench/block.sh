#!/usr/bin/env bash
# block.sh -- `crawler block --domain D` in the middle of a crawl of the synthetic web
# (bench/websim), judged from websim's own request log: how many requests reached D's hosts
# after the command began, after it returned, and later than 5 s after it began (the
# target: none).  D is the registered domain with the most hosts among those the crawl has
# reached when BLOCK_AT requests have been answered.  Two crawler processes share one Redis
# at --delay DELAY; the crawl then runs to its end (its exit status is checked).
#
# usage: bash bench/block.sh [PAGES]       (root; after bash .ci/setup)
#   PAGES         pages of the web (default 20000)
# environment: DELAY=250, BLOCK_AT=3000 (answered requests before the block), KEEP=1
# Prints `name value` lines; exits 1 if a request reached D more than 5 s after the command.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
DELAY=${DELAY:-250} BLOCK_AT=${BLOCK_AT:-3000} KEEP=${KEEP:-0}
WEBSIM=$PWD/build/bench/websim/websim CRAWLER=$PWD/build/crawler/crawler
[ "$(id -u)" -eq 0 ] || { echo "block.sh: needs root (websim's network namespace)" >&2; exit 2; }
if [ ! -x "$WEBSIM" ] || [ ! -x "$CRAWLER" ]; then echo "block.sh: build first (cmake --build build)" >&2; exit 2; fi
T=$(mktemp -d "${TMPDIR:-/tmp}/block.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "block.sh: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT
HOSTS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
WEB=(--hosts "$HOSTS" --pages-median 20 --pages-max 60 --cal-span 30 --lat-scale 0.1 --seed 35)
"$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"

cat >"$T/crawl.sh" <<EOF
set -eu
redis-server --port 6398 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 1gb \
  --daemonize no >"$T/redis.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6398 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=redis://127.0.0.1:6398
COMMON=(--redis \$R --crawl b --scope any --max-depth 40 --delay $DELAY --max-delay 1000 \
  --threads 1 --concurrency 500 --timeout 20000 --quiet --ca-file \$WEBSIM_CA \
  --allow-private-range 127.0.0.0/8)
"$CRAWLER" seed "$T/seeds" --redis \$R --crawl b >/dev/null
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/a.jsonl" 2>"$T/a.err" & A=\$!
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/b.jsonl" 2>"$T/b.err" & B=\$!
while [ "\$(wc -l <"\$WEBSIM_LOG")" -lt $BLOCK_AT ]; do sleep 0.2; done
# the registered domain (the last two labels: the web's names are h<N>.<domain>.test) with
# the most hosts among those requested so far
D=\$(cut -f4 "\$WEBSIM_LOG" | sort -u | awk -F. 'NF>=3 {print \$(NF-1) "." \$NF}' |
  sort | uniq -c | sort -rn | awk 'NR==1 {print \$2}')
echo "\$D" >"$T/domain"
date +%s%6N >"$T/t0"
"$CRAWLER" block --redis \$R --crawl b --domain "\$D" >"$T/block.out"
date +%s%6N >"$T/t1"
rc=0
wait \$A || rc=\$?
wait \$B || rc=\$?
"$CRAWLER" stats --redis \$R --crawl b --json >"$T/stats.json"
kill \$RP; wait \$RP || true
exit \$rc
EOF
bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/crawl.sh" ||
  { tail -5 "$T"/*.err >&2; echo "block.sh: the crawl failed" >&2; exit 1; }
D=$(cat "$T/domain") T0=$(cat "$T/t0") T1=$(cat "$T/t1")
awk -F'\t' -v d="$D" -v t0="$T0" -v t1="$T1" '
  $4 == d || substr($4, length($4) - length(d)) == "." d {
    all++; if ($1 > t0) after0++; if ($1 > t1) after1++; if ($1 > t0 + 5000000) late++
    if ($1 > last) last = $1 }
  END {
    printf "domain %s\nrequests_to_domain %d\nafter_command_began %d\n", d, all, after0
    printf "after_command_returned %d\nlater_than_5s %d\n", after1, late
    printf "command_ms %.1f\nlast_request_ms_after_command %.1f\n", (t1 - t0) / 1000, (last - t0) / 1000
  }' "$T/web/requests.log" | tee "$T/result.txt"
echo "requests_all $(wc -l <"$T/web/requests.log")"
grep -o '"blocked": [0-9]*, "blocked_links": [0-9]*' "$T/stats.json" | tr -d '",:' |
  awk '{print $1 " " $2; print $3 " " $4}'
grep -q '^later_than_5s 0$' "$T/result.txt"
