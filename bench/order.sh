#!/usr/bin/env bash
# order.sh -- crawl order on the synthetic web (bench/websim): a crawl stopped by
# --max-pages at a tenth of a finite web, and the mean depth of what it fetched (each
# URL's least depth from the seeds, by `websim truth`) against a breadth-first crawl's (the
# same number of URLs, shallowest first).  Two crawler processes share one Redis at
# --delay DELAY.
#
# usage: bash bench/order.sh [PAGES]       (root; after bash .ci/setup)
#   PAGES         pages of the web (default 20000)
# environment: DELAY=250, SHARE=10 (the crawl stops at 1/SHARE of the pages), KEEP=1,
#   WINDOWS="off 2 1 0" (one crawl each: --depth-window N, or none for off; the web is made
#   once and every crawl starts from an empty Redis)
# Prints `name value` lines.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
DELAY=${DELAY:-250} SHARE=${SHARE:-10} KEEP=${KEEP:-0} WINDOWS=${WINDOWS:-off 2 1 0}
WEBSIM=$PWD/build/bench/websim/websim CRAWLER=$PWD/build/crawler/crawler
[ "$(id -u)" -eq 0 ] || { echo "order.sh: needs root (websim's network namespace)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/order.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "order.sh: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT
HOSTS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
WEB=(--hosts "$HOSTS" --pages-median 20 --pages-max 60 --cal-span 30 --lat-scale 0.1 --seed 36)
"$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"
"$WEBSIM" truth "${WEB[@]}" --seeds "$T/seeds" --scope any --max-depth 40 >"$T/truth"
MUST=$(grep -c '^must' "$T/truth")
LIMIT=$((MUST / SHARE))
# one crawl: crawl.sh W (a window, or "off"), into $T/W.a.jsonl and $T/W.b.jsonl, its time
cat >"$T/crawl.sh" <<EOF
set -eu
W=\$1
WIN=(); [ "\$W" = off ] || WIN=(--depth-window "\$W")
redis-server --port 6397 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 1gb \
  --daemonize no >"$T/redis.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6397 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=redis://127.0.0.1:6397
COMMON=(--redis \$R --crawl o --scope any --max-depth 40 --delay $DELAY --max-delay 1000 \
  --max-pages $LIMIT --threads 1 --concurrency 500 --timeout 20000 --quiet \
  --ca-file \$WEBSIM_CA --allow-private-range 127.0.0.0/8 "\${WIN[@]}")
t0=\$(date +%s%N)
"$CRAWLER" crawl "\${COMMON[@]}" --seeds "$T/seeds" --out "$T/\$W.a.jsonl" 2>"$T/\$W.a.err" & A=\$!
sleep 1
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/\$W.b.jsonl" 2>"$T/\$W.b.err" & B=\$!
rc=0
wait \$A || rc=\$?
wait \$B || rc=\$?
echo \$(( (\$(date +%s%N) - t0) / 1000000 )) >"$T/\$W.ms"
kill \$RP; wait \$RP || true
exit \$rc
EOF
: >"$T/all.sh"
for w in $WINDOWS; do echo "bash $T/crawl.sh $w" >>"$T/all.sh"; done
bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/all.sh" ||
  { tail -5 "$T"/*.err >&2; echo "order.sh: a crawl failed" >&2; exit 1; }
awk '$1 == "must" {print $3 "\t" $2}' "$T/truth" | sort >"$T/depths"
echo "web_must_pages $MUST"
echo "max_pages $LIMIT"
for w in $WINDOWS; do
  # the fetched URLs (JSONL "url") with their truth depth
  cat "$T/$w".a.jsonl "$T/$w".b.jsonl | grep -o '"url": *"[^"]*"' | sed 's/"url": *"//; s/"$//' |
    sort -u >"$T/fetched"
  join -t "$(printf '\t')" "$T/fetched" "$T/depths" | cut -f2 >"$T/$w.depths"
  N=$(wc -l <"$T/$w.depths")
  # the breadth-first reference: as many must URLs, shallowest first
  BFS=$(awk '{print $2}' "$T/depths" | sort -n | awk -v n="$N" 'NR <= n {s += $1; k++}
    END {printf "%.3f", s / k}')
  awk -v w="$w" -v bfs="$BFS" -v ms="$(cat "$T/$w.ms")" '{s += $1; n++} END {
      printf "window %s fetched_must_pages %d mean_depth %.3f bfs %.3f ratio %.3f seconds %.1f\n",
        w, n, s / n, bfs, s / n / bfs, ms / 1000}' "$T/$w.depths"
  sort -n "$T/$w.depths" | uniq -c |
    awk -v w="$w" 'NR <= 12 {printf "  window %s depth_%s %s\n", w, $2, $1}'
done
