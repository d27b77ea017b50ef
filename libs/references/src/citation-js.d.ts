// The two citation-js modules ship no types; this declares the one entry the RIS reader uses.
declare module "@citation-js/core" {
  /** A parsed RIS record: tag → value, or values when the tag repeats. */
  export type RisTags = Record<string, string | string[]>;
  export const plugins: {
    input: {
      /** One step of citation-js's input chain for a named format: `@ris/file` splits a RIS file into tag records. */
      data(input: string, format: "@ris/file"): RisTags[];
    };
  };
}
declare module "@citation-js/plugin-ris";
