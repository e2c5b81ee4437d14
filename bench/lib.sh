# bench/lib.sh -- what the bench scripts share (sourced, never run): the
# processes they start (PIDS, each stopped by PID on exit), free loopback
# ports, a process's CPU ticks, and a fresh redis-server per run.
# The caller sets BENCH_NAME (for messages), T (its temporary directory),
# KEEP, NICE_CMD and MODULE_ARGS (arrays, may be empty) and defines die().
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2153 # CLK_TCK, REDIS_PORT: for the caller; KEEP: the caller's

PIDS=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$KEEP" = 1 ]; then echo "$BENCH_NAME: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget_pid() { # removes $1 from PIDS
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

port_busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# ADDR...: a port nobody listens on now on any of them (default 127.0.0.1;
# the caller retries if it loses a race)
free_port() {
  local p a busy
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000)) busy=0
    for a in "${@:-127.0.0.1}"; do port_busy "$a" "$p" && busy=1; done
    ((busy)) || { echo "$p"; return 0; }
  done
  die "no free port found"
}

ticks_of() { # utime+stime of PID in clock ticks (0 if gone)
  local f
  f=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  f=${f##*) }
  awk '{print $12 + $13}' <<<"$f"
}
CLK_TCK=$(getconf CLK_TCK)

# REDIS_LISTS=PACK:DEPTH (environment): list-max-listpack-size and list-compress-depth of
# every redis-server a bench starts; default 16:1, the settings of the crawler's embedded
# Redis (crawler/rconn.c spawn_redis); -2:0 is a stock redis-server
REDIS_LISTS=${REDIS_LISTS:-16:1}
REDIS_LIST_ARGS=(--list-max-listpack-size "${REDIS_LISTS%%:*}" --list-compress-depth "${REDIS_LISTS##*:}")
# TAG [ARG...]: a fresh redis-server (no persistence, --maxmemory 2gb,
# MODULE_ARGS, then the ARGs) in $T/redis-TAG; sets REDIS_PORT and REDIS_PID
start_redis() {
  local pid port dir=$T/redis-$1
  shift
  mkdir -p "$dir"
  for _ in 1 2 3 4 5; do
    port=$(free_port 127.0.0.1)
    "${NICE_CMD[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --maxmemory 2gb --dir "$dir" --daemonize no --logfile "$dir/redis.log" "${MODULE_ARGS[@]}" \
      "${REDIS_LIST_ARGS[@]}" "$@" &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 50); do
      if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
        REDIS_PORT=$port REDIS_PID=$pid
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
  done
  die "redis-server did not start"
}

stop_redis() {
  kill -TERM "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  forget_pid "$REDIS_PID"
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# MD: prints $T/report.md and, if MD is set, writes it there, keeping the
# hand-written notes below MD's "<!-- notes -->" line
publish_report() {
  cat "$T/report.md"
  [ -n "$1" ] || return 0
  if [ -f "$1" ] && grep -q '^<!-- notes -->$' "$1"; then
    { echo; sed -n '/^<!-- notes -->$/,$p' "$1"; } >>"$T/report.md"
  fi
  cp "$T/report.md" "$1"
  echo
  echo "$BENCH_NAME: figures written to $1"
}
