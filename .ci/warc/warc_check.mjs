// warc_check.mjs -- reads a .warc.gz with warcio.js (an outside WARC reader,
// npm package warcio, pinned in package.json / package-lock.json) and checks:
//   - every record parses (WARC/1.x, WARC-Type, WARC-Record-ID, a block of
//     exactly Content-Length bytes; response records: an HTTP status line);
//   - every WARC-Block-Digest and WARC-Payload-Digest matches the bytes
//     warcio read (block: the whole record body; payload: what follows the
//     HTTP head, as warcio splits it); warcio.js does not verify digests on
//     read, so they are recomputed here with node:crypto for the algorithm the
//     header names (sha1, sha256, sha512, md5; base32 or hex value);
//   - warcio's CDX indexer indexes every response, and each index entry's
//     offset/length is one whole gzip member that parses alone as that record;
//   - every revisit record (--dedup) names the identical-payload-digest
//     profile, WARC-Refers-To-Target-URI and -Date; when the response it
//     refers to is in the same file, that response has the same payload
//     digest (a revisit's own payload is not the page's: it is not hashed);
//   - the crawler's own index beside the file (FILE.cdxj), if there is one,
//     has one line per response and revisit, sorted, each with the timestamp, URL,
//     offset and length warcio's indexer gives that record, and the file's
//     name.  (Not its key: the crawler's follows the Python surt library,
//     pywb's, which warcio.js's differs from on a path's trailing '/' and on
//     the order of query arguments; tests/test_rotate.c checks it against
//     that library's own cases.)
// Usage: node warc_check.mjs FILE.warc.gz [--responses N] [--revisits R]
// (N: at least this many response records; R: at least this many revisit
// records, every one referring to a response of this file).  Exit 0 if all holds, else 1 with the failures.
import { createHash } from "node:crypto";
import { createReadStream, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { CDXIndexer, WARCParser } from "warcio";

const [file, ...rest] = process.argv.slice(2);
if (!file) {
  console.error("usage: node warc_check.mjs FILE.warc.gz [--responses N]");
  process.exit(2);
}
const opt = (name) => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : 0;
};
const minResponses = opt("--responses");
const minRevisits = opt("--revisits");
const PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
const failures = [];
const fail = (what) => {
  failures.push(what);
};

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(buf) {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

// "algo:value" checked against data; returns null if it matches, else why.
function checkDigest(header, data) {
  const m = /^([A-Za-z0-9-]+):(.+)$/.exec(header.trim());
  if (!m) return `malformed digest '${header}'`;
  const algo = m[1].toLowerCase().replace("-", "");
  if (!["sha1", "sha256", "sha512", "md5"].includes(algo)) return `unknown digest algorithm '${m[1]}'`;
  const h = createHash(algo).update(data).digest();
  const want = m[2].replace(/=+$/, "");
  const got32 = base32(h);
  const gotHex = h.toString("hex");
  if (want.toUpperCase() === got32 || want.toLowerCase() === gotHex) return null;
  return `${header} but the data has ${m[1]}:${got32}`;
}

function label(i, rec) {
  const h = (name) => rec.warcHeader(name) ?? "";
  return `record ${i} (${h("WARC-Type")} ${h("WARC-Record-ID")} ${h("WARC-Target-URI")})`;
}

// Pass 1: the whole block of every record (HTTP not parsed).
async function blocks() {
  let n = 0;
  let checked = 0;
  const parser = new WARCParser(createReadStream(file), { parseHttp: false });
  for await (const rec of parser) {
    const what = label(n, rec);
    const version = rec.warcHeaders.statusline;
    if (!/^WARC\/1\.[01]$/.test(version)) fail(`${what}: version line '${version}'`);
    for (const name of ["WARC-Type", "WARC-Record-ID", "WARC-Date", "Content-Length"])
      if (!rec.warcHeader(name)) fail(`${what}: no ${name}`);
    const block = await rec.readFully(false);
    const len = Number(rec.warcHeader("Content-Length"));
    if (block.length !== len) fail(`${what}: block of ${block.length} bytes, Content-Length ${len}`);
    const bd = rec.warcHeader("WARC-Block-Digest");
    if (bd) {
      checked++;
      const why = checkDigest(bd, block);
      if (why) fail(`${what}: WARC-Block-Digest: ${why}`);
    }
    n++;
  }
  return { nblocks: n, blockDigests: checked };
}

// Pass 2: HTTP parsed; the payload of every record that names its digest.
async function payloads() {
  let n = 0;
  let responses = 0;
  let checked = 0;
  const digestOf = new Map(); // response URI -> payload digests
  const revisits = [];
  const parser = new WARCParser(createReadStream(file), { parseHttp: true });
  for await (const rec of parser) {
    const what = label(n, rec);
    if (rec.warcType === "response") {
      responses++;
      const status = Number(rec.httpHeaders?.statusCode);
      if (!(status >= 100 && status <= 999)) fail(`${what}: no HTTP status line`);
      const uri = rec.warcTargetURI;
      if (!digestOf.has(uri)) digestOf.set(uri, new Set());
      digestOf.get(uri).add(rec.warcHeader("WARC-Payload-Digest"));
    }
    const payload = await rec.readFully(false);
    const pd = rec.warcHeader("WARC-Payload-Digest");
    if (rec.warcType === "revisit") {
      const status = Number(rec.httpHeaders?.statusCode);
      if (!(status >= 100 && status <= 999)) fail(`${what}: no HTTP status line`);
      if (rec.warcHeader("WARC-Profile") !== PROFILE) fail(`${what}: WARC-Profile ${rec.warcHeader("WARC-Profile")}`);
      for (const name of ["WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest"])
        if (!rec.warcHeader(name)) fail(`${what}: no ${name}`);
      if (payload.length) fail(`${what}: a payload of ${payload.length} bytes after the HTTP head`);
      revisits.push({ what, refers: rec.warcHeader("WARC-Refers-To-Target-URI"), pd });
    } else if (pd) {
      checked++;
      const why = checkDigest(pd, payload);
      if (why) fail(`${what}: WARC-Payload-Digest: ${why}`);
    }
    n++;
  }
  let resolved = 0;
  for (const r of revisits) {
    const ds = digestOf.get(r.refers);
    if (!ds) continue; // its response is in another file
    resolved++;
    if (!ds.has(r.pd)) fail(`${r.what}: payload digest ${r.pd}, the response of ${r.refers} has ${[...ds]}`);
  }
  return { n, responses, checked, revisits: revisits.length, resolved };
}

// Pass 3: warcio's CDX index; each entry's member parses alone as its record.
// Returns the response entries by offset.
async function index(data) {
  let entries = 0;
  const byOffset = new Map();
  const indexer = new CDXIndexer({ format: "cdxj" });
  for await (const cdx of indexer.iterIndex([{ filename: file, reader: createReadStream(file) }])) {
    entries++;
    const off = Number(cdx.offset);
    const len = Number(cdx.length);
    const what = `index entry ${entries} (${cdx.url} at ${off}+${len})`;
    if (!(off >= 0 && len > 0 && off + len <= data.length)) {
      fail(`${what}: outside the file`);
      continue;
    }
    let one;
    try {
      one = gunzipSync(data.subarray(off, off + len)); // one member, whole
    } catch (e) {
      fail(`${what}: not a whole gzip member: ${e.message}`);
      continue;
    }
    const rec = await WARCParser.parse([one]);
    if (!rec || rec.warcTargetURI !== cdx.url)
      fail(`${what}: the member holds ${rec ? rec.warcTargetURI : "no record"}`);
    else if (rec.warcPayloadDigest && cdx.digest && !rec.warcPayloadDigest.endsWith(cdx.digest))
      fail(`${what}: index digest ${cdx.digest}, record ${rec.warcPayloadDigest}`);
    if (rec && (rec.warcType === "response" || rec.warcType === "revisit")) byOffset.set(off, cdx);
  }
  return { entries, byOffset };
}

// Pass 4: the crawler's index, line by line against warcio's entries.
function ownIndex(byOffset) {
  let text;
  try {
    text = readFileSync(`${file}.cdxj`, "utf8");
  } catch {
    return -1; // none
  }
  const base = file.split("/").pop();
  const lines = text.split("\n").filter((l) => l.length);
  lines.forEach((line, i) => {
    const what = `${file}.cdxj line ${i + 1}`;
    if (i && lines[i - 1] > line) fail(`${what}: not sorted after the line before`);
    const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(line);
    if (!m) return fail(`${what}: not 'KEY TIMESTAMP {JSON}': ${line}`);
    const j = JSON.parse(m[3]);
    const cdx = byOffset.get(Number(j.offset));
    if (!cdx) return fail(`${what}: offset ${j.offset} is no response or revisit record's`);
    const want = { ts: cdx.timestamp, url: cdx.url, length: String(cdx.length) };
    const got = { ts: m[2], url: j.url, length: j.length };
    for (const k of Object.keys(want))
      if (String(want[k]) !== String(got[k])) fail(`${what}: ${k} ${got[k]}, warcio: ${want[k]}`);
    if (j.filename !== base) fail(`${what}: filename ${j.filename}, the file is ${base}`);
  });
  if (lines.length !== byOffset.size)
    fail(`${file}.cdxj: ${lines.length} lines for ${byOffset.size} responses and revisits`);
  return lines.length;
}

try {
  const { nblocks, blockDigests } = await blocks();
  const { n, responses, checked, revisits, resolved } = await payloads();
  const { entries, byOffset } = await index(readFileSync(file));
  const own = ownIndex(byOffset);
  if (n !== nblocks) fail(`the two passes read ${nblocks} and ${n} records`);
  if (responses < minResponses) fail(`${responses} response records, expected at least ${minResponses}`);
  if (entries < responses) fail(`warcio indexed ${entries} entries for ${responses} responses`);
  if (checked < responses) fail(`${checked} payload digests for ${responses} responses`);
  if (minRevisits && (revisits < minRevisits || resolved < revisits))
    fail(`${revisits} revisit records (at least ${minRevisits} expected), ${resolved} refer to a response of this file`);
  console.log(`warc_check: ${file}: ${n} records parsed, ${responses} responses, ` +
    `${blockDigests} block digests and ${checked} payload digests checked, ` +
    `${revisits} revisits (${resolved} with their response in the file, same payload digest), ` +
    `warcio's CDX index: ${entries} entries, each a whole gzip member` +
    (own >= 0 ? `; the crawler's index: ${own} lines, each as warcio's` : ""));
} catch (e) {
  fail(`warcio could not read ${file}: ${e && e.stack ? e.stack : e}`);
}
if (failures.length) {
  for (const f of failures.slice(0, 20)) console.error(`warc_check: FAIL ${f}`);
  if (failures.length > 20) console.error(`warc_check: ... ${failures.length - 20} more`);
  process.exit(1);
}
