#!/usr/bin/env bash
# CI (and by hand): the crawler's WARC read by an outside reader, warcio.js
# (npm package warcio, the version pinned in .ci/warc/package-lock.json,
# installed with `npm ci` into a temporary directory): every record must
# parse, every WARC-Block-Digest and WARC-Payload-Digest must match
# (.ci/warc/warc_check.mjs), and warcio's CDX index must find every response.
# Then the check is shown to fail on a corrupted copy (.ci/warc/corrupt.mjs:
# one payload byte flipped, every record gzipped again): it must report that
# record's digests, else this script fails.
#   bash .ci/warc_check.sh                 crawl a generated local site with
#                                          build/crawler/crawler --warc, check it
#   bash .ci/warc_check.sh FILE [N [R]]    check FILE (at least N responses,
#                                          R revisits of responses in FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/site_lib.sh

tmp=$(mktemp -d)
cleanup() { site_stop; rm -rf "$tmp"; }
trap cleanup EXIT

if [ $# -ge 1 ]; then
  warc=$1
  min=${2:-1}
  revisits=${3:-0}
else
  [ -x build/crawler/crawler ] || bash .ci/setup
  site_make "$tmp/site" 40
  site_serve "$tmp/site"
  site_crawl "$PWD/build/crawler/crawler" "$tmp/crawl"
  site_check_jsonl "$tmp/crawl"
  warc=$tmp/crawl/out.warc.gz
  min=$SITE_RESPONSES
  revisits=$SITE_REVISITS
fi
[ -s "$warc" ] || { echo "warc_check.sh: no WARC at $warc" >&2; exit 1; }

cp .ci/warc/package.json .ci/warc/package-lock.json .ci/warc/*.mjs "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
echo "warc_check.sh: warcio $(node -p 'require(process.argv[1]).version' "$tmp/node_modules/warcio/package.json"), node $(node --version)"
node "$tmp/warc_check.mjs" "$warc" --responses "$min" --revisits "$revisits"

node "$tmp/corrupt.mjs" "$warc" "$tmp/corrupt.warc.gz"
if node "$tmp/warc_check.mjs" "$tmp/corrupt.warc.gz" 2>"$tmp/corrupt.err" >/dev/null; then
  echo "warc_check.sh: the check passed a corrupted WARC" >&2
  exit 1
fi
grep -q "WARC-Payload-Digest: sha1:" "$tmp/corrupt.err" || {
  echo "warc_check.sh: the corrupted WARC failed, but not on its payload digest:" >&2
  cat "$tmp/corrupt.err" >&2
  exit 1
}
echo "warc_check.sh: the corrupted copy is refused: $(grep -c FAIL "$tmp/corrupt.err") digest mismatches reported"

# the WET file beside it (crawl --wet), if any: its records read by warcio too
wet=${warc%.warc.gz}.wet.gz
if [ -s "$wet" ]; then
  node "$tmp/warc_check.mjs" "$wet"
  node -e '
    const { WARCParser } = require(process.argv[1]);
    const fs = require("fs");
    (async () => {
      const ids = new Set();
      for await (const r of new WARCParser(fs.createReadStream(process.argv[2])))
        if (r.warcType === "response") ids.add(r.warcHeader("WARC-Record-ID"));
      let n = 0, bad = 0;
      for await (const r of new WARCParser(fs.createReadStream(process.argv[3]))) {
        if (r.warcType !== "conversion") continue;
        n++;
        if (!ids.has(r.warcHeader("WARC-Refers-To"))) bad++;
      }
      console.log(`warc_check.sh: ${n} conversion records in the WET, ${bad} refer to no response of the WARC`);
      process.exit(n > 0 && bad === 0 ? 0 : 1);
    })();' "$tmp/node_modules/warcio" "$warc" "$wet"
fi
