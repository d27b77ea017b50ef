import { XMLParser } from "fast-xml-parser";
import { normaliseDoi, normalisePmid, PUBMED_DATABASE, ReferenceImportError, yearOf, type SourceReference } from "./record";
import { cleanText } from "./text";

/**
 * EndNote's XML export (File → Export → XML): `<xml><records><record>…`, each value inside one or
 * more `<style>` elements (a title in italics is split across several). Parsed with fast-xml-parser
 * keeping document order, so a value's pieces join in the order written; XML entities are decoded by
 * the parser, and any HTML left in a title or abstract by the one cleaning (`cleanText`). A DOCTYPE
 * is refused: EndNote writes none, and its entities are how XML bombs explode.
 */

type XmlNode = Record<string, unknown>;

/** Whether the text starts like an EndNote XML export. */
export const looksLikeEndnoteXml = (head: string) => /<xml>\s*<records>\s*<record>/.test(head);

const parser = new XMLParser({ preserveOrder: true, ignoreAttributes: true, processEntities: true, htmlEntities: false, trimValues: false, parseTagValue: false });

const nameOf = (node: XmlNode) => Object.keys(node).find((key) => key !== ":@" && key !== "#text");
const childrenOf = (node: XmlNode): XmlNode[] => {
  const name = nameOf(node);
  return name ? ((node[name] as XmlNode[]) ?? []) : [];
};

/** Every descendant element named `name` (not inside another of the same name). */
function find(nodes: XmlNode[], name: string): XmlNode[] {
  const found: XmlNode[] = [];
  for (const node of nodes) {
    if (nameOf(node) === name) found.push(node);
    else found.push(...find(childrenOf(node), name));
  }
  return found;
}

/** The text of an element, its pieces in document order. */
function textOf(node: XmlNode): string {
  if ("#text" in node) return String(node["#text"]);
  return childrenOf(node).map(textOf).join("");
}

/** The text at a path of element names below `record` (`titles/title`), or null. */
function at(record: XmlNode, path: string): string | null {
  let nodes = [record];
  for (const name of path.split("/")) nodes = nodes.flatMap((node) => childrenOf(node).filter((child) => nameOf(child) === name));
  const text = nodes.map(textOf).join(" ").trim();
  return text || null;
}

/** The texts of every element at a path (`contributors/authors/author`). */
function allAt(record: XmlNode, path: string): string[] {
  let nodes = [record];
  for (const name of path.split("/")) nodes = nodes.flatMap((node) => childrenOf(node).filter((child) => nameOf(child) === name));
  return nodes.map((node) => textOf(node).trim()).filter(Boolean);
}


export function endnoteXmlReferences(text: string, file = "EndNote XML"): SourceReference[] {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new ReferenceImportError(file, "an XML DOCTYPE or entity declaration is not accepted (EndNote's XML export has none)");
  let tree: XmlNode[];
  try {
    tree = parser.parse(text.replace(/^\uFEFF/, "")) as XmlNode[];
  } catch (error) {
    throw new ReferenceImportError(file, `not readable as XML (${error instanceof Error ? error.message : String(error)})`);
  }
  return find(tree, "record").map((record) => {
    const accession = at(record, "accession-num");
    const database = at(record, "remote-database-name") ?? at(record, "remote-database-provider");
    return {
      sourceId: accession ?? at(record, "rec-number"),
      title: cleanText(at(record, "titles/title")),
      abstract: cleanText(at(record, "abstract")),
      doi: normaliseDoi(at(record, "electronic-resource-num")),
      pmid: PUBMED_DATABASE.test(database ?? "") ? normalisePmid(accession) : null,
      included: null,
      authors: allAt(record, "contributors/authors/author"),
      year: yearOf(at(record, "dates/year")),
      journal: cleanText(at(record, "titles/secondary-title") ?? at(record, "periodical/full-title")) || null,
      volume: at(record, "volume"),
      issue: at(record, "number"),
      pages: at(record, "pages"),
      accession,
      database,
      url: allAt(record, "urls/related-urls/url")[0] ?? null,
      keywords: allAt(record, "keywords/keyword"),
    };
  });
}
