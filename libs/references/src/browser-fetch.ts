/**
 * What a browser bundle puts in place of `node-fetch` (esbuild `alias: { "node-fetch": … }`): citation-js's
 * core imports it at load time for fetching URLs, which the import never does, and uses the browser's
 * own `fetch` when it runs in one. node-fetch 3 needs Node's built-ins and would not bundle.
 */
export default globalThis.fetch;
export const Headers = globalThis.Headers;
