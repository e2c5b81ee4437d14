#!/usr/bin/env bash
# frontier_mem.sh -- Redis memory of a queued URL and of a host: generated URLs of a fixed
# length `crawler seed`ed into a fresh redis-server, INFO memory's used_memory before and
# after, the Bloom filter's keys taken out (MEMORY USAGE of each seen:* key).
#
# usage: bash bench/frontier_mem.sh        (from the repo root, after bash .ci/setup)
# environment:
#   SHAPES="1000000:10000 100000:1000 100000:10000"   N:H pairs, one fresh Redis each:
#                N URLs over H hosts (URL i on host i % H)
#   CRAWLERS="build/crawler/crawler"   crawler binaries to compare (e.g. an older build
#                first: CRAWLERS="/tmp/old/build/crawler/crawler build/crawler/crawler"),
#                each labelled by its path
#   LISTS="16:1"  list settings to run each shape with, PACK:DEPTH pairs (list-max-listpack-size
#                and list-compress-depth; "16:1" is what the crawler's embedded Redis sets,
#                "-2:0" a stock redis-server), e.g. LISTS="-2:0 16:1"
#   MD=file      also write the figures there (default: only printed)
#   KEEP=1       keep the temporary directory
#
# Each URL is 93 bytes: "https://www.hNNNNN.example-shop.com" (35) then a 58-byte path
# and query "/catalog/cNNN/item-NNNNNNNN.html?ref=list&sort=price&p=NNN" made of the URL's
# number.  Bytes per queued URL = (used_memory after - before, the Bloom keys' MEMORY USAGE
# subtracted from both) / N, so the per-host overhead is inside it.  Bytes per host =
# (frontier bytes - N x the bytes of one entry) / H, with stock lists only (compressed lists
# hold less than their entries' bytes): what the hosts cost beyond their URLs.  One host's
# queue is read where the crawler keeps it: its list P q:<origin>, or (a build of
# frontier/lua/queue.lua) the entries packed in its field of P hosts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} = -h || ${1:-} = --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
SHAPES=${SHAPES:-1000000:10000 100000:1000 100000:10000}
CRAWLERS=${CRAWLERS:-build/crawler/crawler}
LISTS=${LISTS:-16:1}
MD=${MD-}
KEEP=${KEEP:-0}
# shellcheck disable=SC2034 # read by bench/lib.sh
{ BENCH_NAME=frontier_mem; NICE_CMD=(); MODULE_ARGS=(); }
die() { echo "frontier_mem: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/frontier_mem.XXXXXX)
# shellcheck source=bench/lib.sh
. bench/lib.sh

for c in $CRAWLERS; do [ -x "$c" ] || die "$c: not built"; done

gen_urls() { # N H: N URLs of 93 bytes over H hosts
  awk -v n="$1" -v h="$2" 'BEGIN {
    for (i = 0; i < n; i++)
      printf "https://www.h%05d.example-shop.com/catalog/c%03d/item-%08d.html?ref=list&sort=price&p=%03d\n",
        i % h, int(i / h) % 1000, i, i % 1000
  }'
}

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
used_memory() { rcli info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }
redis_cpu() { rcli info cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.6f", s }'; }
bloom_bytes() { # MEMORY USAGE summed over the crawl's Bloom keys
  local sum=0 k u
  while read -r k; do
    [ -n "$k" ] || continue
    u=$(rcli memory usage "$k" samples 0)
    sum=$((sum + ${u:-0}))
  done < <(rcli --scan --pattern 'crawler:{mem}:seen*')
  echo "$sum"
}
mem_of() { # KEY: MEMORY USAGE (0 when absent)
  local u
  u=$(rcli memory usage "$1" samples 0)
  echo "${u:-0}"
}

echo "| crawler | URLs | hosts | URLs/host | lists (pack:depth) | seed s | Redis CPU us/URL (seed) | frontier bytes | bytes/URL | queue key bytes (entries) | bytes/entry | bytes/host (stock lists only) | sample entry |" >"$T/rows"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|" >>"$T/rows"

sample_queue() { # ORIGIN: its queue's entries, one a line (its list, or its packed field)
  if [ "$(rcli exists "crawler:{mem}:q:$1")" = 1 ]; then
    rcli lrange "crawler:{mem}:q:$1" 0 -1
  else
    rcli hget 'crawler:{mem}:hosts' "$1" | tail -n +2
  fi
}

run() { # CRAWLER N H PACK:DEPTH
  local c=$1 n=$2 h=$3 z=$4 b0 m0 b1 m1 s0 s1 fr q qk qn qe e1 host c0 c1
  gen_urls "$n" "$h" >"$T/urls"
  gen_urls 1 1 | sed 's/h00000/warmup/' >"$T/warm"
  start_redis "$n-$h"
  rcli config set list-max-listpack-size "${z%%:*}" >/dev/null
  rcli config set list-compress-depth "${z##*:}" >/dev/null
  # the library, the Bloom filter and the crawl's stats exist before the measure
  "$c" seed "$T/warm" --redis "redis://127.0.0.1:$REDIS_PORT" --crawl mem \
    --bloom-capacity $((n * 2 + 1000)) >/dev/null
  m0=$(used_memory) b0=$(bloom_bytes)
  s0=$(date +%s.%N) c0=$(redis_cpu)
  "$c" seed "$T/urls" --redis "redis://127.0.0.1:$REDIS_PORT" --crawl mem >"$T/seed.out"
  s1=$(date +%s.%N) c1=$(redis_cpu)
  m1=$(used_memory) b1=$(bloom_bytes)
  fr=$(( (m1 - b1) - (m0 - b0) ))
  q='https://www.h00001.example-shop.com'
  qk=$(mem_of "crawler:{mem}:q:$q")
  sample_queue "$q" >"$T/sample"
  qn=$(wc -l <"$T/sample")
  qe=$(awk '{ s += length($0) + 2 } END { print s + 0 }' "$T/sample")
  e1=$(head -1 "$T/sample")
  host=-  # a compressed queue's bytes are not its entries' bytes plus an overhead
  [ "${z##*:}" != 0 ] || host=$(calc '%d' "($fr - $n * $qe / ($qn > 0 ? $qn : 1)) / $h")
  # shellcheck disable=SC2016 # the backquotes are markdown
  printf '| %s | %d | %d | %d | %s | %s | %s | %d | %s | %d (%d) | %s | %s | `%s` |\n' "$c" "$n" "$h" \
    $((n / h)) "$z" "$(calc '%.1f' "$s1 - $s0")" "$(calc '%.2f' "($c1 - $c0) * 1000000 / $n")" "$fr" "$(calc '%.1f' "$fr / $n")" "$qk" "$qn" \
    "$(calc '%.1f' "$qe / ($qn > 0 ? $qn : 1)")" "$host" "$e1" >>"$T/rows"
  tail -1 "$T/rows"
  echo "$c $n $h $z $fr" >>"$T/raw"
  stop_redis
}

for c in $CRAWLERS; do
  for s in $SHAPES; do
    for z in $LISTS; do run "$c" "${s%%:*}" "${s##*:}" "$z"; done
  done
done

# bytes per host: two shapes of the same N and list settings, H1 < H2 hosts: the
# difference over the hosts added (the same URLs, so the entries cancel out)
: >"$T/hosts"
awk '{ k = $1 " " $2 " " $4; fr[k, $3] = $5; hs[k] = hs[k] " " $3 }
  END { for (k in hs) { n = split(hs[k], h, " "); for (i = 1; i < n; i++) for (j = i + 1; j <= n; j++) {
    a = h[i] + 0; b = h[j] + 0; if (a > b) { t = a; a = b; b = t }
    split(k, f, " ")
    printf "| %s | %d | %d -> %d | %s | %.0f |\n", f[1], f[2], a, b, f[3], (fr[k, b] - fr[k, a]) / (b - a) } } }' \
  "$T/raw" >"$T/hosts"

{
  echo "# Frontier memory: bytes of Redis per queued URL and per host"
  echo
  echo "Run: \`SHAPES=\"$SHAPES\" CRAWLERS=\"$CRAWLERS\" LISTS=\"$LISTS\" bash bench/frontier_mem.sh\` ($(date -u +%Y-%m-%d), redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), no crawler module)."
  echo
  echo "URLs: 93 bytes each, \`https://www.hNNNNN.example-shop.com/catalog/cNNN/item-NNNNNNNN.html?ref=list&sort=price&p=NNN\`, URL i on host i % H; seeded with \`crawler seed FILE --redis ... --crawl mem\` into a fresh redis-server (--maxmemory 2gb, no persistence) after a one-URL warm-up seed that creates the library, the Bloom filter (--bloom-capacity 2N+1000) and the stats."
  echo
  cat "$T/rows"
  echo
  if [ -s "$T/hosts" ]; then
    echo "Bytes per host, from two shapes of the same URL count: (frontier bytes with H2 hosts - with H1) / (H2 - H1)."
    echo
    echo "| crawler | URLs | hosts | lists (pack:depth) | bytes/host |"
    echo "|---|---|---|---|---|"
    cat "$T/hosts"
    echo
  fi
  echo "How to read: frontier bytes = (used_memory after - the Bloom keys' MEMORY USAGE) - (the same before), so everything but the visited set: queues, per-host state, the main dictionary's entries; bytes/URL = that / URLs (the per-host overhead shared out). Queue key: MEMORY USAGE of one host's list (samples 0: exact; 0 when its queue is packed in its field of P hosts), with its entries; bytes/entry: the entries' length + 2 (a listpack entry's header and back-length) averaged. Bytes/host: (frontier bytes - URLs x bytes/entry) / hosts, with stock lists: what the hosts cost beyond their entries (queue keys, fields, places in ready or fresh, the main dictionary's share)."
} >"$T/report.md"
publish_report "$MD"
