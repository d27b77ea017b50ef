import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { MAX_IMPORT_BYTES, tooLarge, type ReferenceFile } from "./import";
import { decodeReferenceBytes } from "./text";

/**
 * A reference file from disk for `importReferences`, gunzipped when it is gzip (`refs.ris.gz`). Node
 * only. Decompression stops at `maxBytes` (a gzip bomb is refused before it fills the memory).
 */
export function readReferenceFile(path: string, maxBytes = MAX_IMPORT_BYTES): ReferenceFile {
  const raw = readFileSync(path);
  const gzip = raw[0] === 0x1f && raw[1] === 0x8b;
  const name = gzip ? path.replace(/\.gz$/i, "") : path;
  if (!gzip) return { name, text: decodeReferenceBytes(raw) };
  try {
    return { name, text: decodeReferenceBytes(gunzipSync(raw, { maxOutputLength: maxBytes })) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(path, "decompresses to", maxBytes);
    throw error;
  }
}
