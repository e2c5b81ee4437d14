#!/usr/bin/env bash
# ca_bundle.sh -- what a new TLS connection costs the crawler when it verifies against a
# real CA bundle: the system's (Debian: /etc/ssl/certs/ca-certificates.crt, ~145
# certificates) with a test CA added, as --ca-file.  `openssl s_server -www` on loopback
# closes every connection after one response, so each page is a new connection (and a
# handshake); HOSTS names (hN.localhost) with two pages each at --delay 300.  The
# crawler's CPU (user + system, from `times`) per connection, this build against REF (an
# older crawler binary) in turn, PAIRS pairs, and the ratio REF / this pair by pair.
#
# usage: REF=/path/to/old/crawler bash bench/ca_bundle.sh     (after a build)
# environment: HOSTS=100, PAIRS=3, KEEP=1, BUNDLE=/etc/ssl/certs/ca-certificates.crt
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-100} PAIRS=${PAIRS:-3} KEEP=${KEEP:-0}
BUNDLE=${BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
CRAWLER=$PWD/build/crawler/crawler
if [ -z "${REF:-}" ] || [ ! -x "$REF" ]; then echo "ca_bundle.sh: set REF to another crawler binary" >&2; exit 2; fi
[ -x "$CRAWLER" ] || { echo "ca_bundle.sh: build first (cmake --build build)" >&2; exit 2; }
[ -r "$BUNDLE" ] || { echo "ca_bundle.sh: no CA bundle at $BUNDLE" >&2; exit 2; }
# shellcheck disable=SC2034 # for bench/lib.sh
BENCH_NAME=ca_bundle.sh NICE_CMD=() MODULE_ARGS=()
die() { echo "ca_bundle.sh: $*" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ca_bundle.XXXXXX")
# shellcheck source=bench/lib.sh
. bench/lib.sh

san=$(seq 0 $((HOSTS - 1)) | sed 's/^/DNS:h/; s/$/.localhost/' | paste -sd, -)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/key.pem" \
  -out "$T/crt.pem" -days 1 -subj /CN=ca-bundle-bench -addext "subjectAltName=$san" 2>/dev/null
cat "$BUNDLE" "$T/crt.pem" >"$T/bundle.pem"
openssl s_server -accept 127.0.0.1:0 -cert "$T/crt.pem" -key "$T/key.pem" -www >"$T/s_server.out" 2>&1 &
PIDS+=($!)
port=
for _ in $(seq 1 200); do
  port=$(sed -n 's/^ACCEPT 127.0.0.1:\([0-9]*\).*/\1/p' "$T/s_server.out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || die "openssl s_server did not start"
for p in 1 2; do
  for h in $(seq 0 $((HOSTS - 1))); do echo "https://h$h.localhost:$port/?p=$p"; done
done >"$T/seeds"
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --maxmemory 256mb \
  --daemonize no >"$T/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

run() { # NAME BINARY: CPU seconds of one crawl of the seeds
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  ( "$2" crawl --redis "redis://127.0.0.1:$REDIS_PORT" --seeds "$T/seeds" --ca-file "$T/bundle.pem" \
      --ignore-robots --delay 300 --quiet --out "$T/$1.jsonl" 2>"$T/$1.err"; times ) |
    awk 'NR == 2 {split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2]}'
}
echo "bundle $(grep -c BEGIN "$T/bundle.pem") certificates, $((2 * HOSTS)) connections a crawl"
for i in $(seq 1 "$PAIRS"); do
  this=$(run "this$i" "$CRAWLER") ref=$(run "ref$i" "$REF")
  ok_this=$(grep -c '"status":200' "$T/this$i.jsonl" || true)
  ok_ref=$(grep -c '"status":200' "$T/ref$i.jsonl" || true)
  awk -v i="$i" -v a="$this" -v b="$ref" -v n=$((2 * HOSTS)) -v oa="$ok_this" -v ob="$ok_ref" 'BEGIN {
    printf "pair %d this_ms_per_conn %.2f ref_ms_per_conn %.2f ref_over_this %.2f pages_200 %d %d\n",
      i, a * 1000 / n, b * 1000 / n, b / a, oa, ob }'
done
