#!/usr/bin/env bash
# ci_test.sh -- the CI crawl of the synthetic web (ctest entry `websim`): a web of about
# PAGES pages (default 100,000) crawled to its end by two crawler processes sharing one
# Redis, inside ns.sh's private network, then scored from websim's own request log and the
# ground truth (`websim truth`), never from timing.  Fails on: a fetch the truth forbids, a
# politeness violation (two requests to one origin closer than its delay, or more than one
# in flight), a request answered on another host's address (DNS), a fetched page without a
# JSONL record, or recall of the pages a correct crawler fetches below MIN_RECALL.
#
# usage: bash bench/websim/ci_test.sh WEBSIM_BIN CRAWLER_BIN
# environment: PAGES=100000, DELAY=250 (the crawl's --delay, ms), DELAY_FACTOR=0.5 (its
#   --delay-factor), MIN_RECALL=0.99,
#   GAP_SLACK_MS=0 (a gap up to this much under the delay is reported, not failed; the
#   strict count is printed too),
#   KEEP=1 keeps the run's directory, WEB_ARGS="..." more web parameters
# Needs root (network namespace; skipped otherwise, exit 77); installs dnsmasq-base if
# missing (apt-get).
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then # (ctest: SKIP_RETURN_CODE 77)
  echo "ci_test: skipped: the web's private network namespace needs root (CI runs as root)"
  exit 77
fi
HERE=$(cd "$(dirname "$0")" && pwd)
WEBSIM=${1:?websim binary}
CRAWLER=${2:?crawler binary}
PAGES=${PAGES:-100000}
DELAY=${DELAY:-250}
MIN_RECALL=${MIN_RECALL:-0.99}
DEPTH=${DEPTH:-40}
# the pace (tests/test_pace.c checks it): at the default 2 the slow hosts' 240 URLs take
# 1.8 s each (739 s for the test); 0.5 keeps most of them at the delay
DELAY_FACTOR=${DELAY_FACTOR:-0.5}
KEEP=${KEEP:-0}
command -v dnsmasq >/dev/null || [ -x /usr/sbin/dnsmasq ] || {
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dnsmasq-base >/dev/null
}
T=$(mktemp -d "${TMPDIR:-/tmp}/websim-ci.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "ci_test: kept $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT

# ~35 pages a host (pages-max 60 keeps one host's crawl short at the delay; lat-scale 0.1:
# a slow host's 2-8 s become 0.2-0.8 s, and its 240 URLs (4 session ids) end within minutes)
HOSTS=$((PAGES / 35 > 10 ? PAGES / 35 : 10))
# shellcheck disable=SC2206 # WEB_ARGS is a list of words
WEB=(--hosts "$HOSTS" --pages-median 20 --pages-max 60 --cal-span 30 --lat-scale 0.1
  --seed 34 ${WEB_ARGS:-})
TLS=(--ca-file CA --allow-private-range 127.0.0.0/8)
if ! "$CRAWLER" crawl --help 2>&1 | grep -q -- --ca-file; then
  # a crawler without --ca-file / --allow-private-range: the web over HTTP only and the
  # private-address guard lifted for every host (said in the log)
  echo "ci_test: this crawler has no --ca-file: HTTP only, --allow-private"
  WEB+=(--share-https 0)
  TLS=(--allow-private)
fi
PACE=(--delay-factor "$DELAY_FACTOR")
"$CRAWLER" crawl --help 2>&1 | grep -q -- --delay-factor || PACE=() # (an older crawler)
"$WEBSIM" seeds "${WEB[@]}" --count $((HOSTS / 20 + 1)) >"$T/seeds"
"$WEBSIM" truth "${WEB[@]}" --seeds "$T/seeds" --scope any --max-depth "$DEPTH" >"$T/truth"
echo "ci_test: $(grep -c '^must' "$T/truth") pages to fetch over $HOSTS hosts"

cat >"$T/crawl.sh" <<EOF
set -eu
TLS=(${TLS[*]})
TLS=("\${TLS[@]/#CA/\$WEBSIM_CA}")
redis-server --port 6399 --bind 127.0.0.1 --save '' --appendonly no --maxmemory 2gb \
  --list-max-listpack-size 16 --list-compress-depth 1 --daemonize no >"$T/redis.log" 2>&1 &
RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6399 ping >/dev/null 2>&1 && break; sleep 0.1; done
COMMON=(--redis redis://127.0.0.1:6399 --crawl ci --scope any --max-depth $DEPTH --delay $DELAY \
  --max-delay 1000 ${PACE[*]} --threads 1 --concurrency 500 --timeout 20000 --quiet "\${TLS[@]}")
"$CRAWLER" seed "$T/seeds" --redis redis://127.0.0.1:6399 --crawl ci >/dev/null
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/a.jsonl" 2>"$T/a.err" & A=\$!
"$CRAWLER" crawl "\${COMMON[@]}" --out "$T/b.jsonl" 2>"$T/b.err" & B=\$!
rc=0
ticks() { awk '{print \$14 + \$15}' /proc/\$1/stat 2>/dev/null || echo 0; }
CA=0 CB=0
while kill -0 \$A 2>/dev/null || kill -0 \$B 2>/dev/null; do # CPU of each, sampled
  t=\$(ticks \$A); [ "\$t" -gt 0 ] && CA=\$t
  t=\$(ticks \$B); [ "\$t" -gt 0 ] && CB=\$t
  sleep 1
done
wait \$A || rc=\$?
wait \$B || rc=\$?
echo \$((CA + CB)) >"$T/crawler.ticks"
cat /proc/\$WEBSIM_PID/stat | awk '{print \$14 + \$15}' >"$T/websim.ticks"
kill \$RP; wait \$RP || true
exit \$rc
EOF
start=$(date +%s)
bash "$HERE/ns.sh" --dir "$T/web" --websim "$WEBSIM" "${WEB[@]}" -- bash "$T/crawl.sh" ||
  { tail -5 "$T"/*.err >&2; echo "ci_test: the crawl failed" >&2; exit 1; }
WALL=$(($(date +%s) - start))
echo "ci_test: crawl took $WALL s (not a verdict); CPU ticks (1/$(getconf CLK_TCK) s): websim $(cat "$T/websim.ticks"), crawlers $(cat "$T/crawler.ticks") (the last second of each not counted)"
"$WEBSIM" score "${WEB[@]}" --truth "$T/truth" --log "$T/web/requests.log" \
  --jsonl "$T/a.jsonl" --jsonl "$T/b.jsonl" --delay "$DELAY" --max-delay 1000 --per-host 1 \
  --max-tries 3 --gap-slack-ms "${GAP_SLACK_MS:-0}" --min-recall "$MIN_RECALL" --check | tee "$T/score.txt"
