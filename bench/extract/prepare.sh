#!/usr/bin/env bash
# prepare.sh -- lays out the evaluation sets of bench/extract under DATA
# (default /work/data/extract), from git snapshots of two public
# repositories (see README.md, "Getting the data"):
#   MERGED  j-szulc/html-cleaning-dataset-merged at 46e01a04 (CleanEval,
#           dragnet's data, L3S-GN1 "page-signal", CleanPortalEval, each as
#           input/<id>.html + GoldStandard/<id>.txt)
#   SH      scrapinghub/article-extraction-benchmark at 4a3bc97
#           (html/<sha>.html.gz + ground-truth.json)
# Writes DATA/<set>/{input,gold}/ and DATA/sets.tsv (name, gold kind,
# input list, gold dir) for score.py.  Idempotent.
#   usage: prepare.sh [MERGED_GIT_DIR] [SH_GIT_DIR]
set -euo pipefail
MERGED=${1:-/work/.mirror/j-szulc+html-cleaning-dataset-merged/repo}
SH=${2:-/work/.mirror/scrapinghub+article-extraction-benchmark/repo}
DATA=${DATA:-/work/data/extract}
mkdir -p "$DATA"

if [ ! -d "$DATA/merged" ]; then
  mkdir -p "$DATA/merged"
  git --git-dir="$MERGED" archive 46e01a04b47051838a228bf23631430b2c9de375 | tar x -C "$DATA/merged"
fi
if [ ! -d "$DATA/scrapinghub" ]; then
  mkdir -p "$DATA/scrapinghub/input" "$DATA/scrapinghub/gold" "$DATA/sh.tmp"
  git --git-dir="$SH" archive 4a3bc97 html ground-truth.json | tar x -C "$DATA/sh.tmp"
  for f in "$DATA"/sh.tmp/html/*.html.gz; do
    id=$(basename "$f" .html.gz)
    gzip -dc "$f" > "$DATA/scrapinghub/input/$id.html"
  done
  python3 - "$DATA/sh.tmp/ground-truth.json" "$DATA/scrapinghub/gold" <<'PY'
import json, sys, os
for pid, rec in json.load(open(sys.argv[1])).items():
    with open(os.path.join(sys.argv[2], pid + ".txt"), "w") as f:
        f.write(rec.get("articleBody") or "")
PY
  rm -rf "$DATA/sh.tmp"
fi

# name, gold kind, input dir, gold dir (Readability's own test pages, also
# in MERGED, are left out: their expected output is Readability's).
sets=(
  "dragnet	dragnet	$DATA/merged/dragnet_data/input	$DATA/merged/dragnet_data/GoldStandard"
  "cleaneval	cleaneval	$DATA/merged/cleaneval-final/input	$DATA/merged/cleaneval-final/GoldStandard"
  "l3s-gn1	l3s	$DATA/merged/page-signal-master/input	$DATA/merged/page-signal-master/GoldStandard"
  "cleanportaleval	cleaneval	$DATA/merged/CleanPortalEval-master/input	$DATA/merged/CleanPortalEval-master/GoldStandard"
  "scrapinghub	plain	$DATA/scrapinghub/input	$DATA/scrapinghub/gold"
)
: > "$DATA/sets.tsv"
for s in "${sets[@]}"; do
  IFS=$'\t' read -r name kind in gold <<< "$s"
  list="$DATA/$name.list"
  : > "$list"
  for h in "$in"/*.html; do
    id=$(basename "$h" .html)
    [ -f "$gold/$id.txt" ] && echo "$h" >> "$list"
  done
  printf '%s\t%s\t%s\t%s\n' "$name" "$kind" "$list" "$gold" >> "$DATA/sets.tsv"
  echo "prepare: $name: $(wc -l < "$list") pages"
done
