// The citation-js modules ship no types; this declares the entries the RIS and BibTeX readers use.
declare module "@citation-js/core" {
  /** A parsed RIS record: tag → value, or values when the tag repeats. */
  export type RisTags = Record<string, string | string[]>;
  /** A citation-js library of items: `new Cite(text).data` is the input as CSL-JSON (any format a loaded plugin reads). */
  export class Cite {
    constructor(input: string);
    data: unknown[];
  }
  export const plugins: {
    input: {
      /** One step of citation-js's input chain for a named format: `@ris/file` splits a RIS file into tag records. */
      data(input: string, format: "@ris/file"): RisTags[];
      /** The whole input chain: `@csl/list+object` gives CSL-JSON items (BibTeX through @citation-js/plugin-bibtex). */
      chain(input: string, options: { target: "@csl/list+object"; generateGraph?: boolean }): unknown[];
    };
  };
}
declare module "@citation-js/plugin-ris";
declare module "@citation-js/plugin-bibtex";
