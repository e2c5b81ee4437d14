# shellcheck shell=bash
# site_lib.sh -- sourced by .ci/package.sh and .ci/warc_check.sh: a generated
# local site served on 127.0.0.1 and one embedded crawl of it.
#   site_make DIR N       N linked HTML pages (index.html -> p1..pN, each page
#                         -> the next and index), two byte-for-byte copies of
#                         p1 (copy-a, copy-b), a text file and a binary one:
#                         N + 5 URLs in all (SITE_URLS); with --dedup, N + 3
#                         responses (SITE_RESPONSES) and 2 revisits (SITE_REVISITS)
#   site_serve DIR        python3 -m http.server on a free loopback port:
#                         SITE_PID, SITE_BASE (http://127.0.0.1:PORT)
#   site_stop             ends SITE_PID (started here, by pid)
#   site_crawl BIN OUT    BIN crawl --dedup, embedded Redis in OUT/data, no
#                         REDIS_URL: OUT/out.jsonl, OUT/out.warc.gz, OUT/crawl.log
#   site_check_jsonl OUT  every URL of the site once in OUT/out.jsonl, status
#                         200; of p1 and its two copies, one first URL and two
#                         duplicates of it

site_make() {
  local dir=$1 n=$2 i
  mkdir -p "$dir"
  {
    echo '<!doctype html><html><head><title>index</title></head><body>'
    for i in $(seq 1 "$n"); do echo "<a href=\"p$i.html\">page $i</a>"; done
    echo '<a href="copy-a.html">a</a> <a href="copy-b.html">b</a>'
    echo '<a href="notes.txt">notes</a> <a href="blob.bin">blob</a></body></html>'
  } >"$dir/index.html"
  for i in $(seq 1 "$n"); do
    printf '<!doctype html><html><body><h1>page %d</h1><p>%s</p><a href="p%d.html">next</a> <a href="index.html">home</a></body></html>\n' \
      "$i" "$(head -c $((200 + i * 37)) /dev/zero | tr '\0' 'x')" $(( i % n + 1 )) >"$dir/p$i.html"
  done
  cp "$dir/p1.html" "$dir/copy-a.html"
  cp "$dir/p1.html" "$dir/copy-b.html"
  printf 'plain text, not HTML\n' >"$dir/notes.txt"
  head -c 65536 /dev/urandom >"$dir/blob.bin"
  SITE_URLS=$((n + 5))
  SITE_RESPONSES=$((n + 3))
  SITE_REVISITS=2
}

site_serve() {
  local dir=$1 port i
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
  SITE_PID=$!
  SITE_BASE="http://127.0.0.1:$port"
  for i in $(seq 1 100); do
    curl -sf -o /dev/null "$SITE_BASE/index.html" && return 0
    sleep 0.1
  done
  echo "site_lib: the HTTP server on $SITE_BASE did not come up" >&2
  return 1
}

site_stop() {
  if [ -n "${SITE_PID:-}" ]; then
    kill "$SITE_PID" 2>/dev/null || true
    wait "$SITE_PID" 2>/dev/null || true
    SITE_PID=
  fi
}

site_crawl() {
  local bin=$1 out=$2
  mkdir -p "$out"
  echo "$SITE_BASE/index.html" >"$out/seeds.txt"
  env -u REDIS_URL timeout 120 "$bin" crawl --seeds "$out/seeds.txt" --data-dir "$out/data" \
    --delay 0 --per-host 4 --out "$out/out.jsonl" --warc "$out/out.warc.gz" \
    --wet "$out/out.wet.gz" --dedup 2>"$out/crawl.log" || {
    echo "site_lib: $bin crawl failed:" >&2
    cat "$out/crawl.log" >&2
    return 1
  }
}

site_check_jsonl() {
  python3 - "$1/out.jsonl" "$SITE_BASE" "$SITE_URLS" <<'PY'
import json, sys
path, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
pages = n - 5
copies = [base + "/p1.html", base + "/copy-a.html", base + "/copy-b.html"]
want = {base + "/index.html", base + "/notes.txt", base + "/blob.bin", *copies}
want |= {f"{base}/p{i}.html" for i in range(1, pages + 1)}
got, dup = {}, {}
for line in open(path):
    r = json.loads(line)
    if "url" in r:
        got.setdefault(r["url"], []).append(r.get("status"))
        if r["url"] in copies:
            dup[r["url"]] = r.get("duplicate_of")
bad = [u for u in sorted(want) if got.get(u) != [200]]
if bad:
    print(f"site_lib: {len(bad)} of {len(want)} URLs missing or not one 200 in {path}:", file=sys.stderr)
    for u in bad[:20]:
        print(f"  {u}: {got.get(u)}", file=sys.stderr)
    sys.exit(1)
firsts = [u for u in copies if dup.get(u) is None]
if len(firsts) != 1 or any(dup[u] != firsts[0] for u in copies if u not in firsts):
    print(f"site_lib: p1 and its copies are not one first URL and two duplicates: {dup}", file=sys.stderr)
    sys.exit(1)
print(f"site_lib: {path}: all {len(want)} URLs of the site, each once, status 200; "
      f"{len(copies) - 1} copies marked duplicates of {firsts[0]}")
PY
}
