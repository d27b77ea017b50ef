// The reference import of the "New job" page, off the page's thread (docs/console.md): a large
// file is decoded, parsed and searched for duplicates here while the page stays responsive and
// shows the progress. The page keeps the worker between imports (the library loads once) and
// ends it when it no longer wants the import that runs.
//
// Message in: {files: [{name, bytes: ArrayBuffer}], merge}.
// Messages out: {type: "progress", stage, done, total}, then {type: "done", result} or {type: "error", message}.

let library;

globalThis.onmessage = async ({ data }) => {
  try {
    library ??= import("/console/references.js");
    const { decodeReferenceBytes, importReferences } = await library;
    const files = data.files.map((f) => ({ name: f.name, text: decodeReferenceBytes(new Uint8Array(f.bytes)) }));
    const result = importReferences(files, { mergeDuplicates: data.merge === true, onProgress: (progress) => globalThis.postMessage({ type: "progress", ...progress }) });
    globalThis.postMessage({ type: "done", result });
  } catch (error) {
    globalThis.postMessage({ type: "error", message: error instanceof Error ? error.message : String(error) });
  }
};
