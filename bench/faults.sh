#!/usr/bin/env bash
# faults.sh -- the figures of docs/faults.md's table for the Redis and
# worker faults, measured on real processes: a redis-server with append-only
# persistence, a threaded Python HTTP server on 127.0.0.1 serving a generated
# site (every page answers after DELAY_MS), and crawler processes.
#
# usage: bash bench/faults.sh [N]          (from the repo root, after bash .ci/setup)
#   N              pages of the site (default 3000)
# environment:
#   BUILD=dir      build directory with crawler/crawler (default ./build)
#   DOWN_S=s       how long Redis stays down at each restart (default 5)
#   DELAY_MS=ms    every page's answer delay (default 10)
#   SCENARIOS="..."  which of them to run (default "restart kill9 hang clientkill")
#
# Scenarios, each on a fresh Redis and site:
#   restart   two crawler processes; Redis SIGTERMed a third of the way in,
#             SIGKILLed two thirds in, each time down DOWN_S s, then started
#             again from its append-only file
#   kill9     one crawler SIGKILLed at 10 moments (after 5..44 more requests,
#             a fixed pseudo-random sequence), then one run to the end
#   hang      two crawler processes; Redis SIGSTOPped a third of the way in for
#             HANG_S s (default 45: longer than the 30 s command timeout), then
#             SIGCONTed
#   clientkill  two crawler processes; `CLIENT KILL TYPE normal` a third of the
#             way in (every connection of every worker cut at once)
# For each: the crawlers' exit statuses, the pages with no record in any
# output ("records lost"), the pages never fetched ("URLs lost"), records
# written more than once (at-least-once output), and what is left in Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000}
BUILD=${BUILD:-./build}
DOWN_S=${DOWN_S:-5}
DELAY_MS=${DELAY_MS:-10}
CRAWLER=$(realpath "$BUILD/crawler/crawler")
TMP=$(mktemp -d /tmp/faults-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat > "$TMP/site.py" <<'EOF'
import sys, time, http.server, socketserver
N, DELAY = int(sys.argv[2]), int(sys.argv[3]) / 1000.0
hits = open(sys.argv[4], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        hits.write(self.path + "\n")
        if self.path.startswith("/p/"):
            try: i = int(self.path[3:])
            except ValueError: i = -1
            if 0 <= i < N:
                time.sleep(DELAY)
                kids = [(2*i+1) % N, (2*i+2) % N, (i+1) % N]
                body = "<html><body>" + "".join('<a href="/p/%d">x</a>' % k for k in kids) + "</body></html>"
                b = body.encode()
                self.send_response(200); self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
                return
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF

start_redis() { # dir port
  redis-server --port "$2" --bind 127.0.0.1 --dir "$1" --appendonly yes --appendfsync everysec \
    --save "" --maxmemory 1gb --daemonize no --loglevel warning >> "$1/redis.log" 2>&1 &
  RPID=$!
  PIDS+=("$RPID")
  for _ in $(seq 1 200); do redis-cli -p "$2" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "redis did not start" >&2; exit 1
}

requests() { wc -l < "$1/hits" 2>/dev/null || echo 0; }
wait_requests() { # dir n: 1 if they did not come within 60 s (the crawlers stopped)
  for _ in $(seq 1 3000); do [ "$(requests "$1")" -ge "$2" ] && return 0; sleep 0.02; done
  echo "  (no $2 requests within 60 s: the crawlers stopped)" >&2; return 1
}

# counts over the outputs: records lost, duplicates, URLs lost
report() { # dir label statuses...
  local d=$1 label=$2; shift 2
  python3 - "$d" "$N" "$label" "$@" <<'EOF'
import sys, json, glob, collections
d, n, label, statuses = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rec = collections.Counter(); events = collections.Counter()
for f in glob.glob(d + "/out*.jsonl"):
    for line in open(f, errors="replace"):
        try: o = json.loads(line)
        except ValueError: continue
        if "event" in o: events[o["event"]] += 1; continue
        u = o.get("url", "")
        if "/p/" in u and o.get("status") == 200: rec[u.rsplit("/p/", 1)[1]] += 1
hits = set(l.strip()[3:] for l in open(d + "/hits") if l.startswith("/p/"))
pages = [str(i) for i in range(n)]
print("%s: exit %s; pages %d; records lost %d; URLs lost %d; written twice or more %d; events %s"
      % (label, " ".join(statuses), n, sum(1 for p in pages if rec[p] == 0),
         sum(1 for p in pages if p not in hits), sum(1 for p in pages if rec[p] > 1), dict(events)))
EOF
  local st
  st=$(redis-cli -p "$RPORT" hmget 'crawler:{default}:stats' queued inflight fetched | tr '\n' ' ')
  echo "  Redis after: queued inflight fetched = $st"
}

# A fresh site, Redis and seeds file in dir (HPORT, RPORT, RPID set).
setup() {
  mkdir -p "$1"; : > "$1/hits"
  HPORT=$(free_port); RPORT=$(free_port)
  python3 "$TMP/site.py" "$HPORT" "$N" "$DELAY_MS" "$1/hits" 2>/dev/null & PIDS+=("$!")
  start_redis "$1" "$RPORT"
  echo "http://127.0.0.1:$HPORT/p/0" > "$1/seeds.txt"
}

# Two crawler processes on a fresh crawl; inject (a function) runs a third of
# the way in; then the report.
two_crawlers() { # label inject
  local d=$TMP/$2
  setup "$d"
  local c=()
  for i in 0 1; do
    "$CRAWLER" crawl --redis "redis://127.0.0.1:$RPORT" --seeds "$d/seeds.txt" --delay 0 \
      --per-host 8 --threads 2 --quiet --out "$d/out$i.jsonl" 2> "$d/log$i" & c+=("$!"); PIDS+=("$!")
  done
  sleep 0.5
  wait_requests "$d" $((N / 3)) || true
  "$2" "$d"
  local s=()
  for p in "${c[@]}"; do
    if timeout 600 tail --pid="$p" -f /dev/null; then wait "$p" && s+=(0) || s+=($?); fi
  done
  report "$d" "$1" "${s[@]}"
  kill "$RPID"
}

inject_restart() { # SIGTERM now, SIGKILL two thirds in, each DOWN_S s down
  kill -TERM "$RPID"; wait "$RPID" || true; sleep "$DOWN_S"
  start_redis "$1" "$RPORT"
  wait_requests "$1" $((2 * N / 3)) || true
  kill -KILL "$RPID"; wait "$RPID" || true; sleep "$DOWN_S"
  start_redis "$1" "$RPORT"
}
inject_hang() { kill -STOP "$RPID"; sleep "${HANG_S:-45}"; kill -CONT "$RPID"; }
inject_clientkill() { redis-cli -p "$RPORT" CLIENT KILL TYPE normal >/dev/null; }

scenario_restart() { two_crawlers "restart (SIGTERM, then SIGKILL, ${DOWN_S} s down each)" inject_restart; }
scenario_hang() { two_crawlers "hang (SIGSTOP ${HANG_S:-45} s, then SIGCONT)" inject_hang; }
scenario_clientkill() { two_crawlers "CLIENT KILL TYPE normal" inject_clientkill; }

scenario_kill9() {
  local d=$TMP/kill9
  setup "$d"
  local x=88172645463325252 args=(crawl --redis "redis://127.0.0.1:$RPORT" --seeds "$d/seeds.txt"
    --delay 0 --per-host 8 --threads 2 --quiet --lease 500 --out "$d/out.jsonl")
  for k in $(seq 1 10); do
    x=$(( (x ^ (x << 13)) & 0x7fffffffffffffff )); x=$(( x ^ (x >> 7) )); x=$(( (x ^ (x << 17)) & 0x7fffffffffffffff ))
    "$CRAWLER" "${args[@]}" 2>> "$d/log" & local p=$!; PIDS+=("$p")
    wait_requests "$d" $(( $(requests "$d") + 5 + x % 40 )) || true
    kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
  done
  local s=0
  timeout 600 "$CRAWLER" "${args[@]}" 2>> "$d/log" || s=$?
  report "$d" "kill -9 x10, then a run to the end" "$s"
  kill "$RPID"
}

echo "# faults.sh: $CRAWLER, $N pages, ${DELAY_MS} ms a page"
for sc in ${SCENARIOS:-restart kill9 hang clientkill}; do "scenario_$sc"; done
