#!/usr/bin/env bash
# ns.sh -- runs a command inside websim's private web: a new network, mount and PID
# namespace (unshare, as root) whose only interface is lo, a dnsmasq answering for every
# host name of the web on 127.0.0.53:53 (fed `websim hosts`), a private /etc/resolv.conf
# bind-mounted over the real one (the machine's resolver is never changed), and
# `websim serve` on 0.0.0.0:80 and :443 of that namespace (only lo exists there, so
# nothing listens beyond loopback; websim refuses 0.0.0.0 anywhere else).
#
# usage: bash bench/websim/ns.sh [--dir DIR] [--websim BIN] [web parameters] -- COMMAND [ARG...]
#   --dir DIR      where the CA, hosts file, logs and stats go (default: a new temp dir,
#                  kept: the caller reads the logs and removes it)
#   --websim BIN   the websim program (default build/bench/websim/websim)
#   web parameters: any of `websim params` (--hosts N --seed S ...), given to every websim
#   environment: QUERYLOG=1 logs every DNS query to DIR/dnsmasq.log;
#   DARK_SHARE=0.1 hosts that go dark on SIGUSR1 to websim
# COMMAND runs inside with WEBSIM_DIR, WEBSIM_CA (the CA's PEM, for --ca-file),
# WEBSIM_LOG (request log), WEBSIM_STATS, WEBSIM_PID (the server's PID in the namespace),
# WEBSIM_BIN and WEBSIM_ARGS (the web parameters) set; its exit status is ns.sh's.
# When COMMAND ends, websim and dnsmasq are stopped by PID; anything else left in the
# namespace dies with it (the PID namespace's init is this script).
# Needs: root, util-linux (unshare), iproute2, dnsmasq-base, openssl.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
die() { echo "ns.sh: $*" >&2; exit 2; }

if [ "${1:-}" = --inner ]; then
  shift
  DIR=$1 WEBSIM=$2
  shift 2
  read -r -a WEB <"$DIR/web.args"
  mount --make-rprivate /
  ip link set lo up
  mount --bind "$DIR/resolv.conf" /etc/resolv.conf
  DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
  QL=()
  [ "${QUERYLOG:-0}" = 1 ] && QL=(--log-queries "--log-facility=$DIR/dnsmasq.log")
  "$DNSMASQ" -k --no-resolv --no-hosts --addn-hosts="$DIR/hosts" --local=/test/ \
    --listen-address=127.0.0.53 --bind-interfaces --port=53 --user=root --cache-size=0 \
    "${QL[@]}" --pid-file="$DIR/dnsmasq.pid" 2>>"$DIR/dnsmasq.err" &
  DPID=$!
  "$WEBSIM" serve "${WEB[@]}" --bind 0.0.0.0 --http-port 80 --https-port 443 \
    --ca-cert "$DIR/ca.pem" --ca-key "$DIR/ca.key" --log "$DIR/requests.log" \
    --stats "$DIR/stats" --pidfile "$DIR/websim.pid" --dark-share "${DARK_SHARE:-0.1}" \
    2>>"$DIR/websim.err" &
  WPID=$!
  stop() {
    kill -TERM "$WPID" "$DPID" 2>/dev/null || true
    wait "$WPID" "$DPID" 2>/dev/null || true
  }
  trap stop EXIT
  first=$(awk 'NR == 1 {print $2}' "$DIR/hosts")
  for _ in $(seq 1 100); do
    [ -s "$DIR/websim.pid" ] && getent hosts "$first" >/dev/null 2>&1 && break
    kill -0 "$WPID" 2>/dev/null || { cat "$DIR/websim.err" >&2; exit 2; }
    sleep 0.1
  done
  getent hosts "$first" >/dev/null || { cat "$DIR/dnsmasq.err" >&2; echo "ns.sh: $first does not resolve" >&2; exit 2; }
  export WEBSIM_DIR=$DIR WEBSIM_CA=$DIR/ca.pem WEBSIM_LOG=$DIR/requests.log \
    WEBSIM_STATS=$DIR/stats WEBSIM_PID=$WPID WEBSIM_BIN=$WEBSIM WEBSIM_ARGS="${WEB[*]}"
  rc=0
  "$@" || rc=$?
  exit "$rc"
fi

DIR="" WEBSIM=$ROOT/build/bench/websim/websim WEB=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    --dir) DIR=$2; shift 2 ;;
    --websim) WEBSIM=$2; shift 2 ;;
    --*) [ $# -ge 2 ] || die "missing value for $1"; WEB+=("$1" "$2"); shift 2 ;;
    *) die "unknown argument $1 (the command goes after --)" ;;
  esac
done
[ "${1:-}" = -- ] || die "usage: ns.sh [--dir DIR] [web parameters] -- COMMAND [ARG...]"
shift
[ $# -gt 0 ] || die "no command"
[ "$(id -u)" = 0 ] || die "needs root (unshare --net --mount --pid)"
[ -x "$WEBSIM" ] || die "no websim program at $WEBSIM (cmake --build build --target websim)"
command -v dnsmasq >/dev/null || [ -x /usr/sbin/dnsmasq ] || die "missing dnsmasq: apt-get install -y dnsmasq-base"
[ -n "$DIR" ] || DIR=$(mktemp -d "${TMPDIR:-/tmp}/websim.XXXXXX")
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [ ! -s "$DIR/ca.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=websim local CA" -keyout "$DIR/ca.key" -out "$DIR/ca.pem" 2>/dev/null ||
    die "openssl could not make the CA"
fi
echo "${WEB[*]}" >"$DIR/web.args"
"$WEBSIM" hosts "${WEB[@]}" >"$DIR/hosts"
printf 'nameserver 127.0.0.53\noptions attempts:2 timeout:2\n' >"$DIR/resolv.conf"
exec unshare --net --mount --pid --fork --mount-proc --kill-child \
  bash "$0" --inner "$DIR" "$WEBSIM" "$@"
