#!/usr/bin/env bash
# farm.sh -- the budgets per registered domain against a subdomain farm on the synthetic web
# (bench/websim --farm-hosts): FARM hosts under one registered domain, linked only from
# themselves and from one seed page (host 0's front page), beside a web of PAGES pages.
# Two crawler processes share one Redis at --delay 250, stopped by --max-pages STOP, once
# with the budgets (--max-pages-per-domain BUDGET --domain-pages-per-inlink INLINK: the farm,
# linked from one other domain, may admit BUDGET + INLINK pages) and once without, for
# reference.  Judged from websim's own request log: the distinct URLs (robots.txt left out)
# requested of the farm's domain and of the other domains, and how many of the farm's
# hosts were reached.
#
# usage: bash bench/farm.sh [PAGES]     (root; after bash .ci/setup)
#   PAGES         pages of the web beside the farm (default 20000)
# environment: FARM=100000, BUDGET=50, INLINK=20, STOP=8000, KEEP=1
# Prints `name value` lines; exits 1 if the farm got more pages than its budget.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
FARM=${FARM:-100000} BUDGET=${BUDGET:-50} INLINK=${INLINK:-20} STOP=${STOP:-8000} KEEP=${KEEP:-0}
WEBSIM=$PWD/build/bench/websim/websim CRAWLER=$PWD/build/crawler/crawler
[ "$(id -u)" -eq 0 ] || { echo "farm.sh: needs root (websim's network namespace)" >&2; exit 2; }
if [ ! -x "$WEBSIM" ] || [ ! -x "$CRAWLER" ]; then echo "farm.sh: build first (cmake --build build)" >&2; exit 2; fi
T=$(mktemp -d "${TMPDIR:-/tmp}/farm.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "farm.sh: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT
OTHERS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
HOSTS=$((OTHERS + FARM))
WEB=(--hosts "$HOSTS" --farm-hosts "$FARM" --pages-median 20 --pages-max 60 --cal-span 30
  --lat-scale 0.1 --seed 37)
"$WEBSIM" seeds "${WEB[@]}" --count $((OTHERS / 20 + 1)) >"$T/seeds"
FARM_DOMAIN=$("$WEBSIM" hosts "${WEB[@]}" | tail -1 | awk '{n = split($2, a, "."); print a[n - 1] "." a[n]}')

# one crawl: crawl.sh NAME ARGS...
cat >"$T/crawl.sh" <<EOF
set -eu
name=\$1; shift
redis-server --port 6396 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 1gb \
  --daemonize no >"$T/redis.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6396 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=redis://127.0.0.1:6396
COMMON=(--redis \$R --crawl f --scope any --max-depth 40 --delay 250 --max-delay 1000 \
  --max-pages $STOP --threads 1 --concurrency 500 --timeout 20000 --quiet \
  --ca-file \$WEBSIM_CA --allow-private-range 127.0.0.0/8 "\$@")
l0=\$(wc -l <"\$WEBSIM_LOG")
"$CRAWLER" crawl "\${COMMON[@]}" --seeds "$T/seeds" --out "$T/\$name.a.jsonl" 2>"$T/\$name.a.err" & A=\$!
sleep 1
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/\$name.b.jsonl" 2>"$T/\$name.b.err" & B=\$!
rc=0
wait \$A || rc=\$?
wait \$B || rc=\$?
"$CRAWLER" stats --redis \$R --crawl f --json >"$T/\$name.stats.json"
echo "\$name \$l0 \$(wc -l <"\$WEBSIM_LOG")" >>"$T/runs"
kill \$RP; wait \$RP || true
exit \$rc
EOF
cat >"$T/all.sh" <<EOF
bash "$T/crawl.sh" budget --max-pages-per-domain $BUDGET --domain-pages-per-inlink $INLINK
bash "$T/crawl.sh" none
EOF
bash bench/websim/ns.sh --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/all.sh" ||
  { tail -5 "$T"/*.err >&2; echo "farm.sh: a crawl failed" >&2; exit 1; }
echo "web_hosts $OTHERS farm_hosts $FARM farm_domain $FARM_DOMAIN stop $STOP"
echo "farm_budget $((BUDGET + INLINK)) (--max-pages-per-domain $BUDGET, --domain-pages-per-inlink $INLINK, one linking domain)"
fail=0
for n in budget none; do
  read -r from to < <(awk -v n="$n" '$1 == n {print $2, $3}' "$T/runs")
  # pages by registered domain (the last two labels), robots.txt left out
  sed -n "$((from + 1)),${to}p" "$T/web/requests.log" |
    awk -F'\t' '$5 != "/robots.txt" {k = split($4, a, "."); print a[k - 1] "." a[k], $4, $5}' |
    sort -u >"$T/$n.pages" # (distinct URLs: a 5xx or 429 is asked again)
  farm=$(awk -v d="$FARM_DOMAIN" '$1 == d' "$T/$n.pages" | wc -l)
  farm_hosts=$(awk -v d="$FARM_DOMAIN" '$1 == d {print $2}' "$T/$n.pages" | sort -u | wc -l)
  all=$(wc -l <"$T/$n.pages")
  top=$(awk -v d="$FARM_DOMAIN" '$1 != d {print $1}' "$T/$n.pages" | sort | uniq -c | sort -rn |
    awk 'NR <= 3 {printf "%s%s:%d", (NR > 1 ? "," : ""), $2, $1}')
  over=$(grep -o '"domain_links": *[0-9]*' "$T/$n.stats.json" | grep -o '[0-9]*$' || echo 0)
  echo "$n page_requests $all farm_pages $farm farm_hosts_reached $farm_hosts top_other_domains $top domain_links_over_budget $over"
  if [ "$n" = budget ] && [ "$farm" -gt $((BUDGET + INLINK)) ]; then fail=1; fi
done
exit $fail
