import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { ReferenceFile } from "./import";
import { decodeReferenceBytes } from "./text";

/** A reference file from disk for `importReferences`, gunzipped when it is gzip (`refs.ris.gz`). Node only. */
export function readReferenceFile(path: string): ReferenceFile {
  const raw = readFileSync(path);
  const gzip = raw[0] === 0x1f && raw[1] === 0x8b;
  return { name: gzip ? path.replace(/\.gz$/i, "") : path, text: decodeReferenceBytes(gzip ? gunzipSync(raw) : raw) };
}
