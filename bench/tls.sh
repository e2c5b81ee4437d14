#!/usr/bin/env bash
# tls.sh -- what HTTPS costs the crawler on the synthetic web (bench/websim), and what
# keeping a TLS session per origin (--tls-sessions) saves.
#   The same web of PAGES pages twice: every host over HTTPS (--share-https 1), then
#   every host over HTTP (--share-https 0); one crawler process, --delay 250 (politeness
#   on), real DNS, to --max-pages STOP, each run from an empty Redis; two threads, so that
#   a host's pages go over the connections of either (the second thread's first connection
#   to a host may resume the first's session).  PAIRS rounds, each: on the HTTPS web,
#   sessions kept (the default) then --tls-sessions 0 (libcurl's own cache of 8 sessions
#   for the process); then on the HTTP web, the default.  For each run:
#   the crawler's CPU (user + system, from `times`) per page, and from websim's request
#   log new connections, full TLS handshakes and resumed ones per request.  Then the
#   ratios: HTTPS (kept) over HTTP, and HTTPS (libcurl's cache) over HTTP, CPU per page.
#
# usage: bash bench/tls.sh [PAGES]     (root; after bash .ci/setup)
# environment: STOP=3000, PAIRS=3, KEEP=1, REF=another crawler binary (an older build: run
#   with its defaults on the HTTPS web too, "ref" in the table)
# Prints `name value` lines.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
STOP=${STOP:-3000} PAIRS=${PAIRS:-3} KEEP=${KEEP:-0} REF=${REF:-}
WEBSIM=$PWD/build/bench/websim/websim CRAWLER=$PWD/build/crawler/crawler
[ "$(id -u)" -eq 0 ] || { echo "tls.sh: needs root (websim's network namespace)" >&2; exit 2; }
if [ ! -x "$WEBSIM" ] || [ ! -x "$CRAWLER" ]; then echo "tls.sh: build first (cmake --build build)" >&2; exit 2; fi
T=$(mktemp -d "${TMPDIR:-/tmp}/tls.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "tls.sh: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT
HOSTS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
BASE=(--hosts "$HOSTS" --pages-median 20 --pages-max 60 --cal-span 30 --lat-scale 0.1 --seed 34
  --share-blackhole 0)

# run NAME ARGS...: one crawl (fresh Redis); appends "name pages cpu_s from to" to runs
cat >"$T/run.sh" <<EOF
set -eu
name=\$1; shift
redis-server --port 6396 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 1gb \
  --daemonize no >"$T/redis-\$name.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6396 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=redis://127.0.0.1:6396
"$CRAWLER" seed "$T/seeds" --redis \$R --crawl c >/dev/null
l0=\$(wc -l <"\$WEBSIM_LOG")
cpu=\$( ( "\${BIN:-$CRAWLER}" crawl --redis \$R --crawl c --scope any --max-depth 40 --delay 250 \
  --max-delay 1000 --threads 2 --concurrency 500 --timeout 20000 --quiet \
  --max-pages $STOP --ca-file \$WEBSIM_CA --allow-private-range 127.0.0.0/8 \
  --out "$T/\$name.jsonl" "\$@" 2>"$T/\$name.err"; times ) |
  awk 'NR == 2 {split(\$1, u, /[ms]/); split(\$2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2]}')
sleep 1
echo "\$name \$(wc -l <"$T/\$name.jsonl") \$cpu \$l0 \$(wc -l <"\$WEBSIM_LOG")" >>"$T/runs"
kill \$RP; wait \$RP || true
EOF

: >"$T/runs"
# the log's columns: arrive end scheme host path status bytes conn req flags
report() { # the runs of this web's session: their figures, from the log's slice of each
  while read -r name pages cpu from to; do
    sed -n "$((from + 1)),${to}p" "$T/web/requests.log" |
      awk -F'\t' -v n="$name" -v p="$pages" -v c="$cpu" '
        {r++; if ($9 == 1) nc++; if ($10 ~ /T/) full++; if ($10 ~ /R/) res++}
        END {printf "%s pages %d cpu_ms_per_page %.3f requests %d new_conn_per_req %.3f full_tls_per_req %.3f resumed_per_req %.3f\n",
          n, p, c * 1000 / p, r, nc / r, full / r, res / r}'
  done <"$T/runs"
  : >"$T/runs"
}
# pair by pair, the two webs in turn (each its own websim session, same seed)
for i in $(seq 1 "$PAIRS"); do
  for web in https http; do
    share=1
    [ $web = http ] && share=0
    WEB=("${BASE[@]}" --share-https "$share")
    "$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"
    rm -f "$T/web/requests.log"
    if [ $web = https ]; then
      # (the order turns from pair to pair: no variant always first on a fresh websim)
      {
        echo "bash $T/run.sh kept$i"
        echo "bash $T/run.sh curl$i --tls-sessions 0"
        [ -z "$REF" ] || echo "BIN=$REF bash $T/run.sh ref$i"
      } >"$T/variants"
      if ((i % 2 == 0)); then tac "$T/variants"; else cat "$T/variants"; fi
    else
      printf 'bash %s/run.sh http%d\n' "$T" "$i"
    fi >"$T/session.sh"
    bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/session.sh" ||
      { tail -5 "$T"/*.err >&2; echo "tls.sh: a crawl failed" >&2; exit 1; }
    report
  done
done | tee "$T/table"
awk -v ref="$REF" '{k = $1; sub(/[0-9]+$/, "", k); i = substr($1, length(k) + 1); c[k, i] = $5}
  END {for (i = 1; i <= '"$PAIRS"'; i++) {
         printf "pair %d https_kept_over_http %.3f https_curl_over_http %.3f kept_over_curl %.3f",
           i, c["kept", i] / c["http", i], c["curl", i] / c["http", i], c["kept", i] / c["curl", i]
         if (ref != "") printf " kept_over_ref %.3f ref_over_http %.3f", c["kept", i] / c["ref", i], c["ref", i] / c["http", i]
         printf "\n" }}' "$T/table"
