// The reference import of the "New job" page, off the page's thread (docs/console.md): a large
// file is decoded, parsed and searched for duplicates here while the page stays responsive and
// shows the progress. One import per worker at a time: the page ends a worker whose import it
// no longer wants and starts another.
//
// Message in: {files: [{name, bytes: ArrayBuffer}], merge}.
// Messages out: {type: "progress", stage, done, total}, then {type: "done", result} or {type: "error", message}.

globalThis.onmessage = async ({ data }) => {
  try {
    const { decodeReferenceBytes, importReferences } = await import("/console/references.js");
    const files = data.files.map((f) => ({ name: f.name, text: decodeReferenceBytes(new Uint8Array(f.bytes)) }));
    const result = importReferences(files, { mergeDuplicates: data.merge === true, onProgress: (progress) => globalThis.postMessage({ type: "progress", ...progress }) });
    globalThis.postMessage({ type: "done", result });
  } catch (error) {
    globalThis.postMessage({ type: "error", message: error instanceof Error ? error.message : String(error) });
  }
};
