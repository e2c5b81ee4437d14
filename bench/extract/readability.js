// readability.js -- the baseline of bench/extract: @mozilla/readability on
// a jsdom document, the way its README runs it in Node, on the same HTML
// files as text_extract, with the CPU time of each page.
//
// usage: node readability.js OUTDIR FILE...
// Per page, timed with process.cpuUsage() (user + system of this process):
// new JSDOM(bytes, {url}) -- jsdom sniffs the charset from the bytes as a
// browser does -- and new Readability(document).parse().  Not timed: the
// conversion of the article's HTML to text for scoring (block elements
// separated by blank lines, so that words of two paragraphs do not run
// together) and the write of OUTDIR/<id>.txt.  Prints one line like
// text_extract's: pages, bytes, cpu seconds, ms per page.
"use strict";
const fs = require("fs");
const path = require("path");
const { JSDOM, VirtualConsole } = require("jsdom");
const { Readability } = require("@mozilla/readability");

const BLOCK = new Set(["P", "DIV", "LI", "H1", "H2", "H3", "H4", "H5", "H6", "PRE", "BLOCKQUOTE",
  "TD", "TH", "TR", "TABLE", "UL", "OL", "DL", "DT", "DD", "SECTION", "ARTICLE", "FIGURE",
  "FIGCAPTION", "BR", "HR", "HEADER", "FOOTER", "ASIDE", "NAV", "MAIN", "ADDRESS", "CAPTION"]);

function toText(node, out) {
  for (let c = node.firstChild; c; c = c.nextSibling) {
    if (c.nodeType === 3) out.push(c.nodeValue);
    else if (c.nodeType === 1) {
      const block = BLOCK.has(c.tagName);
      if (block) out.push("\n\n");
      toText(c, out);
      if (block) out.push("\n\n");
    }
  }
  return out;
}

const [outdir, ...files] = process.argv.slice(2);
const quiet = new VirtualConsole();
let cpu = 0, pages = 0, bytes = 0;
for (const f of files) {
  const buf = fs.readFileSync(f);
  const t0 = process.cpuUsage();
  let article = null, dom = null;
  try {
    dom = new JSDOM(buf, { url: "http://example.com/page", virtualConsole: quiet });
    article = new Readability(dom.window.document).parse();
  } catch (e) {
    article = null;
  }
  const d = process.cpuUsage(t0);
  cpu += (d.user + d.system) / 1e6;
  pages++;
  bytes += buf.length;
  let text = "";
  if (article && article.content) {
    const frag = JSDOM.fragment(article.content);
    text = toText(frag, []).join("").replace(/[ \t]+/g, " ").replace(/\n\s*\n\s*/g, "\n\n").trim();
  }
  if (dom) dom.window.close();
  const id = path.basename(f).replace(/\.html$/, "");
  fs.writeFileSync(path.join(outdir, id + ".txt"), text);
}
console.log(`readability pages ${pages} bytes ${bytes} cpu_s ${cpu.toFixed(4)} ms_per_page ${
  pages ? (cpu * 1000 / pages).toFixed(4) : 0}`);
