#!/usr/bin/env bash
# dns.sh -- the crawler's resolver at thousands of names: bench/broad.sh's site on H hosts
# crawled twice in one run, once by IP literal (127.1.x.y:PORT) and once by name
# (hNNNN.crawl.test:PORT, answered by a local dnsmasq); resolutions per second seen by the
# DNS server, and the crawler's CPU per request by name against by address.
#
# usage: bash bench/dns.sh [N]        (from the repo root, after bash .ci/setup)
#   N            pages of the site (default 20000)
# environment:
#   H=1000       hosts (names);  CONC="256 2048": transfers in flight asked, one run each
#   DNS_ADDR=127.53.0.1  where dnsmasq listens (port 53, loopback only)
#   CONC_PER_THREAD, THREADS, PER_HOST, LAT, BUILD, NOBUILD, TIMEOUT, NICE, MODULE,
#   CRAWLER_ARGS: as for bench/broad.sh (passed on)
#   MD=file      also write the figures there (default: only printed)
#   KEEP=1       keep the temporary directory
#
# What it does: writes an addn-hosts file (name k -> 127.1.x.y, as broad.sh numbers hosts),
# starts `dnsmasq -k --no-resolv --no-hosts --local=/crawl.test/ --log-queries` on DNS_ADDR:53
# (its pid file and log in the temporary directory; the system's resolver config is not
# touched), writes a resolv.conf naming it, and runs bench/broad.sh twice (REF=0 DELAY=0
# WGET_TIME=0): by address, then with NAMES=1 (the crawler in its own mount namespace with
# that resolv.conf bound over /etc/resolv.conf: `unshare -m`, needs root). Queries are
# counted from dnsmasq's log (A and AAAA separately). dnsmasq is stopped by PID on exit.
# Needs: apt-get install -y dnsmasq-base (the binary, no system service).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} = -h || ${1:-} = --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
N=${1:-20000}
H=${H:-1000}
CONC=${CONC:-256 2048}
DNS_ADDR=${DNS_ADDR:-127.53.0.1}
MD=${MD-}
KEEP=${KEEP:-0}
die() { echo "dns: $*" >&2; exit 1; }
[[ $N =~ ^[0-9]+$ && $H =~ ^[0-9]+$ ]] || die "N and H must be integers"
[[ $DNS_ADDR =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "DNS_ADDR must be a 127.x.y.z address"
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
[ -x "$DNSMASQ" ] || die "missing dnsmasq: apt-get install -y dnsmasq-base"
command -v unshare >/dev/null || die "missing unshare: apt-get install -y util-linux"
[ "$(id -u)" = 0 ] || die "needs root (unshare -m and mount --bind for the crawler's resolv.conf)"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

T=$(mktemp -d "${TMPDIR:-/tmp}/dns.XXXXXX")
chmod 755 "$T"
DPID=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  [ -z "$DPID" ] || { kill -TERM "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }
  if [ "$KEEP" = 1 ]; then echo "dns: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ((k = 0; k < H; k++)); do
  printf '127.1.%d.%d h%04d.crawl.test\n' $((k / 200)) $((k % 200 + 1)) "$k"
done >"$T/names.hosts"
printf 'nameserver %s\noptions attempts:2 timeout:2\n' "$DNS_ADDR" >"$T/resolv.conf"
"$DNSMASQ" -k --no-resolv --no-hosts --addn-hosts="$T/names.hosts" --local=/crawl.test/ \
  --listen-address="$DNS_ADDR" --bind-interfaces --port=53 --user=root --cache-size=10000 \
  --log-queries --log-facility="$T/dnsmasq.log" --pid-file="$T/dnsmasq.pid" &
DPID=$!
for _ in $(seq 1 50); do
  [ -s "$T/dnsmasq.pid" ] && break
  kill -0 "$DPID" 2>/dev/null || die "dnsmasq did not start (see $T/dnsmasq.log)"
  sleep 0.1
done
# shellcheck disable=SC2016 # expanded by the inner shell
NAME0=$(unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && getent ahostsv4 h0000.crawl.test' \
  "$T/resolv.conf" | awk 'NR == 1 {print $1}')
[ "$NAME0" = 127.1.0.1 ] || die "h0000.crawl.test does not resolve through $DNS_ADDR (got '$NAME0')"

queries() { # A AAAA answered so far
  awk '/query\[A\] h[0-9]+\.crawl\.test/ {a++} /query\[AAAA\] h[0-9]+\.crawl\.test/ {q++}
       END {printf "%d %d\n", a, q}' "$T/dnsmasq.log"
}

COMMON=(HOSTS="$H" CONC="$CONC" REF=0 DELAY=0 WGET_TIME=0 MD= KEEP=0)
STATUS=0
read -r AS QS < <(queries) # the check above
echo "dns: by address"
env "${COMMON[@]}" SUMMARY="$T/ip.txt" bash bench/broad.sh "$N" >"$T/ip.log" 2>&1 || STATUS=1
read -r A0 Q0 < <(queries)
A0=$((A0 - AS)) Q0=$((Q0 - QS))
echo "dns: by name"
env "${COMMON[@]}" SUMMARY="$T/names.txt" NAMES=1 RESOLV="$T/resolv.conf" NOBUILD=1 \
  bash bench/broad.sh "$N" >"$T/names.log" 2>&1 || STATUS=1
read -r A1 Q1 < <(queries)
# per run of the names crawl: the queries in its time window are not separable from the log's
# timestamps (1 s), so the totals are over every crawl of the names pass
grep -q . "$T/names.txt" || { tail -20 "$T/names.log" >&2; die "the names pass made no run"; }

calc() { awk "BEGIN { printf \"$1\", $2 }"; }
NAME_WALL=$(awk '{w += $3} END {print w}' "$T/names.txt")
{
  echo "# DNS benchmark: the crawler by name against by address"
  echo
  echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, load average before: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "\`bash bench/dns.sh $N\` (H=$H CONC=\"$CONC\"${CONC_PER_THREAD:+ CONC_PER_THREAD=$CONC_PER_THREAD}): bench/broad.sh's site over $H hosts, 50 ms per response, --per-host ${PER_HOST:-2} --delay 0; dnsmasq on $DNS_ADDR:53 (cache 10,000 names, every name in an addn-hosts file)."
  echo
  echo "| run | requests | wall s | requests/s | CPU ms/request | peak RSS MiB | in flight (max) | check |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
  for f in ip names; do
    while read -r tag req wall cpu rss fl ok; do
      [[ $tag = b* ]] || continue
      echo "| $f ${tag#b"$H"-c} in flight asked | $req | $wall | $(calc "%.0f" "$req / $wall") | $(calc "%.3f" "$cpu * 1000 / $req") | $(calc "%.1f" "$rss / 1024") | $fl | $ok |"
    done <"$T/$f.txt"
  done
  echo
  echo "DNS queries seen by dnsmasq during the names pass (idle crawls included): $((A1 - A0 - AS)) A + $((Q1 - Q0 - QS)) AAAA for $H names; over the names crawls' wall time ($NAME_WALL s): $(calc "%.0f" "($A1 - $A0 - $AS + $Q1 - $Q0 - $QS) / $NAME_WALL") queries/s. During the address pass: $A0 A + $Q0 AAAA (should be 0)."
  echo
  echo "How to read: the names pass differs from the address pass only in the URLs (names instead of IP literals, so libcurl resolves each host through getaddrinfo in its threaded resolver, cached in the crawler's shared DNS cache); the CPU per request difference is the resolver's cost, queries/host shows how often the cache missed."
} >"$T/report.md"
cat "$T/report.md"
[ -z "$MD" ] || { cp "$T/report.md" "$MD"; echo "dns: figures written to $MD"; }
[ "$STATUS" = 0 ] || echo "dns: CHECK FAILED (a broad.sh pass failed: see its log with KEEP=1)" >&2
exit "$STATUS"
