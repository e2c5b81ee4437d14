#!/usr/bin/env python3
"""score.py -- word-shingle precision, recall and F1 of extracted texts
against ground truth made by people, per page, averaged per set and split.

usage: score.py SETS_TSV OUT_DIR EXTRACTOR... > table.md

SETS_TSV lines: name, gold kind, input list file (one HTML path a line),
gold directory.  For each page (its id: the HTML file's base name without
.html), the gold text is read from the gold directory by kind:
  plain      <id>.txt as is
  dragnet    <id>.txt up to the line of its COMMENTS separator (the page's
             main content; user comments come after it)
  cleaneval  <id>.txt without its "URL:" line and its <p>/<h>/<l> marks
  l3s        <id>.txt, annotated HTML: the text of the elements of class
             x-nc-sel1 (headline) and x-nc-sel2 (full text)
  json       <id>.txt written by prepare.sh from a JSON ground truth
and each extractor's text from OUT_DIR/<extractor>/<set>/<id>.txt.

Metric (the one of the scrapinghub article-extraction-benchmark and of
dragnet's evaluations): the texts are cut into words (runs of Unicode word
characters, lowercased) and into shingles of 4 consecutive words (a text of
fewer words is one shingle); as multisets, tp = shared shingles,
P = tp / predicted, R = tp / gold, F1 = 2PR / (P + R) per page; an empty
prediction scores 0 (a page with no gold shingle is left out).  The mean of
each over the pages is reported.  Split: a page is in "dev" when the first
byte of the SHA-1 of "<set>/<id>" is even, else in "test"; the extractor's
rules were tuned looking at dev pages only.
"""
import hashlib
import html.parser
import os
import re
import sys
from collections import Counter

WORD = re.compile(r"\w+", re.UNICODE)


def shingles(text, n=4):
    w = WORD.findall(text.lower())
    if len(w) < n:
        return Counter([tuple(w)]) if w else Counter()
    return Counter(tuple(w[i:i + n]) for i in range(len(w) - n + 1))


def prf(gold, pred):
    if not pred:
        return 0.0, 0.0, 0.0
    tp = sum((gold & pred).values())
    p = tp / sum(pred.values())
    r = tp / sum(gold.values())
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class L3S(html.parser.HTMLParser):
    KEEP = {"x-nc-sel1", "x-nc-sel2"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.out = [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "hr", "meta", "link", "input"):
            return
        cls = dict(attrs).get("class") or ""
        self.stack.append(cls in self.KEEP)

    def handle_endtag(self, tag):
        if self.stack and tag not in ("br", "img", "hr", "meta", "link", "input"):
            self.stack.pop()

    def handle_data(self, data):
        if any(self.stack):
            self.out.append(data)


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    # some gold files of dragnet's set are UTF-16 with a byte order mark
    if b[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return b.decode("utf-16", errors="replace")
    if b[:3] == b"\xef\xbb\xbf":
        b = b[3:]
    return b.decode("utf-8", errors="replace")


def gold_text(kind, path):
    t = read(path)
    if kind == "dragnet":
        return t.split("!@#$%^&*()")[0]
    if kind == "cleaneval":
        t = re.sub(r"^\s*URL:.*$", "", t, count=1, flags=re.M)
        return re.sub(r"<(p|h|l)>", " ", t)
    if kind == "l3s":
        p = L3S()
        p.feed(t)
        return " ".join(p.out)
    return t


def page_id(path):
    b = os.path.basename(path)
    return b[:-5] if b.endswith(".html") else b


def split_of(setname, pid):
    return "dev" if hashlib.sha1(f"{setname}/{pid}".encode()).digest()[0] % 2 == 0 else "test"


def main():
    sets_tsv, out_dir, extractors = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = []
    for line in open(sets_tsv):
        if not line.strip() or line.startswith("#"):
            continue
        name, kind, listfile, gold_dir = line.rstrip("\n").split("\t")
        acc = {}  # (extractor, split) -> [sum p, sum r, sum f, n]
        for html_path in open(listfile).read().split():
            pid = page_id(html_path)
            g = shingles(gold_text(kind, os.path.join(gold_dir, pid + ".txt")))
            if not g:
                continue
            sp = split_of(name, pid)
            for ex in extractors:
                op = os.path.join(out_dir, ex, name, pid + ".txt")
                pred = shingles(read(op)) if os.path.exists(op) else Counter()
                p, r, f = prf(g, pred)
                for key in ((ex, sp), (ex, "all")):
                    a = acc.setdefault(key, [0.0, 0.0, 0.0, 0])
                    a[0] += p
                    a[1] += r
                    a[2] += f
                    a[3] += 1
        for sp in ("dev", "test", "all"):
            for ex in extractors:
                a = acc.get((ex, sp), [0, 0, 0, 0])
                n = a[3] or 1
                rows.append((name, sp, ex, a[3], a[0] / n, a[1] / n, a[2] / n))
    print("| set | split | extractor | pages | precision | recall | F1 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %s | %s | %d | %.3f | %.3f | %.3f |" % r)


if __name__ == "__main__":
    main()
