// corrupt.mjs IN.warc.gz OUT.warc.gz -- a copy of IN with one byte of one
// response payload flipped (the last byte of the first response with a
// payload), every record gzipped again on its own: a well-formed .warc.gz
// whose only fault is that record's content, which warc_check.mjs must
// report (its WARC-Block-Digest and WARC-Payload-Digest no longer match).
// Only node's own modules: the corruption does not go through warcio.
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";

const [inp, outp] = process.argv.slice(2);
const plain = gunzipSync(readFileSync(inp)); // all members, concatenated
const members = [];
let flipped = null;
for (let at = 0; at < plain.length;) {
  const end = plain.indexOf("\r\n\r\n", at);
  if (end < 0) throw new Error(`no record head at ${at}`);
  const head = plain.subarray(at, end).toString("latin1");
  const len = Number(/\r\nContent-Length: *(\d+)/i.exec(head)?.[1]);
  if (!Number.isInteger(len)) throw new Error(`no Content-Length at ${at}`);
  const stop = end + 4 + len + 4; // head, CRLFCRLF, block, CRLFCRLF
  const rec = Buffer.from(plain.subarray(at, stop));
  const http = rec.indexOf("\r\n\r\n", end - at + 4);
  if (!flipped && /\r\nWARC-Type: *response/i.test(head) && http >= 0 && http + 4 < rec.length - 4) {
    const i = rec.length - 5; // the block's last byte: the payload's
    rec[i] ^= 0x01;
    flipped = `${/\r\nWARC-Target-URI: *(\S+)/i.exec(head)?.[1]} (byte ${i} of its record)`;
  }
  members.push(gzipSync(rec));
  at = stop;
}
if (!flipped) throw new Error("no response with a payload to corrupt");
writeFileSync(outp, Buffer.concat(members));
console.log(`corrupt: flipped one payload byte of ${flipped}`);
