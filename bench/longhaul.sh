#!/usr/bin/env bash
# longhaul.sh -- a long crawl of the synthetic web (bench/websim) with faults on a schedule:
# two crawler processes sharing a Redis with the embedded Redis's settings (AOF on, lists
# 16/1, --maxmemory), JSONL only, crawled to the end of a finite web of about N pages, then
# scored against the ground truth.  Faults, each when the crawl has answered a share of the
# pages it must fetch (so the schedule holds at any scale):
#   20%  Redis SIGKILLed, restarted from its AOF 5 s later
#   35%  crawler A SIGKILLed, restarted 5 s later
#   50%  a tenth of the hosts go dark (websim SIGUSR1) for DARK_S seconds
#   70%  the disk of the output fills (a tmpfs of OUT_MB, filled), freed FULL_S s later;
#        a crawler that stopped on the full disk is started again
# Per SAMPLE seconds (default 60) it records: pages/s (JSONL records), requests/s (the
# server's), crawler CPU (both) and RSS, Redis CPU and used memory, Bloom fill, queued URLs,
# new TCP connections and TLS handshakes per request.  At the end: recall against the truth,
# pages fetched twice, forbidden fetches, politeness violations (from websim's log), records
# lost; curves to PNG with gnuplot.
#
# usage: bash bench/longhaul.sh [N]        (root; after bash .ci/setup)
#   N             pages of the web (default 10000000)
# environment: HOSTS (default max(N/60, 100000)), DELAY=1000 (the crawl's --delay: the
#   crawler's default), SAMPLE=60, DARK_S=120, FULL_S=60, OUT_MB=64, THREADS=2,
#   CONC=1000, OUT=bench/longhaul-out (samples.tsv, score.txt, violations.txt, *.png;
#   kept), KEEP=1 (keeps the run's directory: the request log, the JSONL)
# Needs: dnsmasq-base gnuplot-nox (apt-get install -y dnsmasq-base gnuplot-nox).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
HOSTS=${HOSTS:-$((N / 60 > 100000 ? N / 60 : 100000))}
DELAY=${DELAY:-1000} SAMPLE=${SAMPLE:-60} DARK_S=${DARK_S:-120} FULL_S=${FULL_S:-60}
OUT_MB=${OUT_MB:-64} THREADS=${THREADS:-2} CONC=${CONC:-1000}
OUT=${OUT:-$PWD/bench/longhaul-out}
W=$PWD/build/bench/websim/websim C=$PWD/build/crawler/crawler
[ -x "$W" ] && [ -x "$C" ] || { echo "longhaul: build first (bash .ci/setup)" >&2; exit 2; }
command -v gnuplot >/dev/null || echo "longhaul: no gnuplot: no PNG (apt-get install -y gnuplot-nox)" >&2
mkdir -p "$OUT"
T=$(mktemp -d "${TMPDIR:-/tmp}/longhaul.XXXXXX")
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
# pages per host follow from N and HOSTS (median ~ 1/3 of the mean, as the lognormal's)
PM=$(awk -v n="$N" -v h="$HOSTS" 'BEGIN { m = n / h / 3.1; print (m < 1 ? 1 : m) }')
WEB=(--hosts "$HOSTS" --pages-median "$PM" --seed 7 ${WEB_ARGS:-})
TLS=(--ca-file CA --allow-private-range 127.0.0.0/8)
if ! "$C" crawl --help 2>&1 | grep -q -- --ca-file; then
  echo "longhaul: this crawler has no --ca-file: HTTP only, --allow-private"
  WEB+=(--share-https 0)
  TLS=(--allow-private)
fi
"$W" seeds "${WEB[@]}" --count $((HOSTS / 50 + 1)) >"$T/seeds"
"$W" truth "${WEB[@]}" --seeds "$T/seeds" --scope any --max-depth 40 >"$T/truth"
MUST=$(grep -c '^must' "$T/truth")
echo "longhaul: $MUST pages to fetch over $HOSTS hosts"

cat >"$T/inner.sh" <<EOF
set -u
T=$T W=$W C=$C MUST=$MUST SAMPLE=$SAMPLE DARK_S=$DARK_S FULL_S=$FULL_S
TLS=(${TLS[*]})
TLS=("\${TLS[@]/#CA/\$WEBSIM_CA}")
mkdir -p \$T/out && mount -t tmpfs -o size=${OUT_MB}m tmpfs \$T/out
RARGS=(--port 6398 --bind 127.0.0.1 --dir \$T --appendonly yes --save '' --maxmemory 4gb
       --list-max-listpack-size 16 --list-compress-depth 1)
redis-server "\${RARGS[@]}" >\$T/redis.log 2>&1 & RP=\$!
for _ in \$(seq 1 50); do redis-cli -p 6398 ping >/dev/null 2>&1 && break; sleep 0.1; done
R=(--redis redis://127.0.0.1:6398 --crawl lh)
"\$C" seed \$T/seeds "\${R[@]}" >/dev/null
COMMON=("\${R[@]}" --scope any --max-depth 40 --delay $DELAY --threads $THREADS
        --concurrency $CONC --quiet "\${TLS[@]}")
start_crawler() { "\$C" crawl "\${COMMON[@]}" --out \$T/out/\$1.jsonl 2>>\$T/\$1.err & eval P\$1=\\\$!; }
start_crawler A; start_crawler B
ticks() { awk '{print \$14 + \$15}' /proc/\$1/stat 2>/dev/null || echo 0; }
rss() { awk '/VmRSS/ {print \$2}' /proc/\$1/status 2>/dev/null || echo 0; }
stat_of() { awk -v k="\$1" '\$1 == k {print \$2}' \$WEBSIM_STATS; }
printf 't_s\tpages\tpages_s\treq_s\tcrawler_cpu\tcrawler_rss_kb\tredis_cpu\tredis_mem\tbloom_fill\tqueued\tnewconn_per_req\ttls_per_req\tevent\n' >\$T/samples.tsv
t0=\$(date +%s) last=\$t0 lp=0 lr=0 lc=0 ltls=0 lcpu=0 lrc=0 step=0 event=start cpuA=0 cpuB=0
pages() { cat \$T/out/*.jsonl \$T/saved-*.jsonl 2>/dev/null | grep -vc '"event"' || true; }
while :; do
  sleep 5
  now=\$(date +%s) p=\$(pages)
  for x in A B; do # a crawler that stopped (a full disk) is restarted once the disk is free
    eval pid=\\\$P\$x
    if ! kill -0 \$pid 2>/dev/null; then
      wait \$pid; rc=\$?
      [ \$rc = 0 ] && eval D\$x=1 && continue
      [ -e \$T/out/fill ] || { cp \$T/out/\$x.jsonl \$T/saved-\$x-\$now.jsonl 2>/dev/null; : >\$T/out/\$x.jsonl; start_crawler \$x; event="\$event restart-\$x"; }
    fi
  done
  [ "\${DA:-0}" = 1 ] && [ "\${DB:-0}" = 1 ] && break
  case \$step in
    0) [ \$((p * 100)) -ge \$((MUST * 20)) ] && { kill -KILL \$RP; wait \$RP; sleep 5; redis-server "\${RARGS[@]}" >>\$T/redis.log 2>&1 & RP=\$!; event="\$event redis-kill"; step=1; } ;;
    1) [ \$((p * 100)) -ge \$((MUST * 35)) ] && { kill -KILL \$PA; wait \$PA; sleep 5; start_crawler A; event="\$event crawler-kill"; step=2; } ;;
    2) [ \$((p * 100)) -ge \$((MUST * 50)) ] && { kill -USR1 \$WEBSIM_PID; dark_at=\$now; event="\$event dark"; step=3; } ;;
    3) [ \$((now - dark_at)) -ge \$DARK_S ] && { kill -USR2 \$WEBSIM_PID; event="\$event light"; step=4; } ;;
    4) [ \$((p * 100)) -ge \$((MUST * 70)) ] && { dd if=/dev/zero of=\$T/out/fill bs=1M 2>/dev/null; full_at=\$now; event="\$event disk-full"; step=5; } ;;
    5) [ \$((now - full_at)) -ge \$FULL_S ] && { rm -f \$T/out/fill; event="\$event disk-freed"; step=6; } ;;
  esac
  [ \$((now - last)) -ge \$SAMPLE ] || continue
  dt=\$((now - last)) req=\$(stat_of requests) con=\$(stat_of connections)
  tls=\$((\$(stat_of tls_full) + \$(stat_of tls_resumed)))
  cpu=\$((\$(ticks \$PA) + \$(ticks \$PB))) rcpu=\$(ticks \$RP)
  st=\$("\$C" stats "\${R[@]}" --json 2>/dev/null || echo '{}')
  fill=\$(echo "\$st" | grep -o '"fill": *[0-9.e-]*' | head -1 | tr -d ' ' | cut -d: -f2)
  queued=\$(echo "\$st" | grep -o '"queued": *[0-9]*' | head -1 | tr -d ' ' | cut -d: -f2)
  [ "\$rcpu" -ge "\$lrc" ] || lrc=0 # (Redis restarted: a new process's ticks)
  [ "\$cpu" -ge "\$lcpu" ] || lcpu=0
  mem=\$(redis-cli -p 6398 info memory 2>/dev/null | awk -F: '/^used_memory:/ {print \$2+0}')
  dr=\$((req - lr))
  printf '%d\t%d\t%.1f\t%.1f\t%.3f\t%d\t%.3f\t%s\t%s\t%s\t%.3f\t%.3f\t%s\n' \$((now - t0)) \$p \
    \$(echo "(\$p - \$lp) / \$dt" | bc -l) \$(echo "\$dr / \$dt" | bc -l) \
    \$(echo "(\$cpu - \$lcpu) / $(getconf CLK_TCK) / \$dt" | bc -l) \$((\$(rss \$PA) + \$(rss \$PB))) \
    \$(echo "(\$rcpu - \$lrc) / $(getconf CLK_TCK) / \$dt" | bc -l) "\${mem:-0}" "\${fill:-0}" "\${queued:-0}" \
    \$(echo "(\$con - \$lc) / (\$dr + (\$dr == 0))" | bc -l) \$(echo "(\$tls - \$ltls) / (\$dr + (\$dr == 0))" | bc -l) \
    "\${event// /,}" >>\$T/samples.tsv
  last=\$now lp=\$p lr=\$req lc=\$con ltls=\$tls lcpu=\$cpu lrc=\$rcpu event=-
done
cp \$T/out/*.jsonl \$T/ 2>/dev/null
kill \$RP; wait \$RP 2>/dev/null
exit 0
EOF
# (a run stopped by hand, or one whose inner script failed, is scored all the same)
bash bench/websim/ns.sh --dir "$T/web" --websim "$W" "${WEB[@]}" -- bash "$T/inner.sh" ||
  echo "longhaul: the run's namespace ended with status $?; scoring what was fetched" >&2
JS=()
for f in "$T"/A.jsonl "$T"/B.jsonl "$T"/saved-*.jsonl; do [ -e "$f" ] && JS+=(--jsonl "$f"); done
"$W" score "${WEB[@]}" --truth "$T/truth" --log "$T/web/requests.log" "${JS[@]}" \
  --delay "$DELAY" --max-delay 60000 --per-host 1 --max-tries 3 --violations \
  2>"$OUT/violations.txt" | tee "$OUT/score.txt"
cp "$T/samples.tsv" "$OUT/"
if command -v gnuplot >/dev/null; then
  gnuplot <<EOF
set terminal png size 1200,900; set output "$OUT/longhaul.png"
set datafile separator "\t"; set key autotitle columnhead noenhanced; set multiplot layout 3,2
set xlabel "s"; plot "$OUT/samples.tsv" using 1:3 with lines, "" using 1:4 with lines
plot "$OUT/samples.tsv" using 1:5 with lines, "" using 1:7 with lines
plot "$OUT/samples.tsv" using 1:(\$6/1024) with lines title "crawler RSS MiB"
plot "$OUT/samples.tsv" using 1:(\$8/1048576) with lines title "Redis MiB"
plot "$OUT/samples.tsv" using 1:9 with lines, "" using 1:10 with lines axes x1y2
plot "$OUT/samples.tsv" using 1:11 with lines, "" using 1:12 with lines
unset multiplot
EOF
  echo "longhaul: curves in $OUT/longhaul.png"
fi
