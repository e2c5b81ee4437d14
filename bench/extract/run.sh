#!/usr/bin/env bash
# run.sh -- the main-text evaluation, side by side in one run: our
# extractor (build/bench/text_extract, -m main) and @mozilla/readability on
# jsdom (readability.js) over the same pages of every set that prepare.sh
# laid out, then score.py's table and the CPU per page of each.
#   usage: run.sh [BUILD_DIR]        (env: DATA, OUT, SETS="dragnet l3s-gn1 ...", BATCH=100)
# Needs: node and npm (the baseline installs from package.json into
# node_modules here), python3.  Writes OUT/<extractor>/<set>/<id>.txt,
# OUT/cpu.tsv and OUT/table.md; prints both tables.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../../build}
DATA=${DATA:-/work/data/extract}
OUT=${OUT:-$HERE/out}
[ -f "$DATA/sets.tsv" ] || { echo "run: no $DATA/sets.tsv: run prepare.sh first" >&2; exit 2; }
[ -d "$HERE/node_modules/@mozilla/readability" ] || (cd "$HERE" && npm install --no-audit --no-fund)
mkdir -p "$OUT"
: > "$OUT/cpu.tsv"
# "MODE pages N bytes N cpu_s X ms_per_page Y" lines -> one such line
sum_runs() {
  awk '{ m = $1; p += $3; b += $5; c += $7 }
       END { printf "%s pages %d bytes %d cpu_s %.4f ms_per_page %.4f\n", m, p, b, c, p ? c * 1000 / p : 0 }'
}
while IFS=$'\t' read -r name kind list gold; do
  if [ -n "${SETS:-}" ] && [[ " $SETS " != *" $name "* ]]; then continue; fi
  mkdir -p "$OUT/ours/$name" "$OUT/readability/$name"
  # the list goes in batches of BATCH pages, one process each (jsdom keeps
  # memory from page to page: one node process ran out of its 4 GB heap
  # after ~1,100 of dragnet's pages); their lines are summed
  o=$(xargs -n "${BATCH:-100}" -a "$list" "$BUILD/bench/text_extract" -m main -o "$OUT/ours/$name" | sum_runs)
  r=$(xargs -n "${BATCH:-100}" -a "$list" node "$HERE/readability.js" "$OUT/readability/$name" | sum_runs)
  printf '%s\tours\t%s\n%s\treadability\t%s\n' "$name" "$o" "$name" "$r" >> "$OUT/cpu.tsv"
  echo "run: $name: $o | $r" >&2
done < "$DATA/sets.tsv"
if [ -n "${SETS:-}" ]; then
  grep -E "^($(echo "$SETS" | tr ' ' '|'))	" "$DATA/sets.tsv" > "$OUT/sets.tsv"
else
  cp "$DATA/sets.tsv" "$OUT/sets.tsv"
fi
python3 "$HERE/score.py" "$OUT/sets.tsv" "$OUT" ours readability > "$OUT/table.md"
cat "$OUT/table.md"
echo
echo "| set | ours ms/page | readability ms/page | ratio |"
echo "|---|---:|---:|---:|"
awk -F'\t' '{ split($3, f, " "); ms[$1 "," $2] = f[9]; sets[$1] = 1 }
  END { for (s in sets) printf "| %s | %.3f | %.1f | 1/%.0f |\n", s, ms[s ",ours"], ms[s ",readability"],
        ms[s ",readability"] / (ms[s ",ours"] > 0 ? ms[s ",ours"] : 1) }' "$OUT/cpu.tsv"
