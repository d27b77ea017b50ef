import { JOB_SERVICES, type RequestLimits } from "@litrev/contracts";

type Node = Record<string, unknown>;

/** Where each configured limit shows in a route's JSON Schema: a path of properties (`[]` = the items), a keyword, its value. */
type Bound = [path: string[], keyword: "maxItems" | "maxLength" | "maximum", value: (l: RequestLimits) => number];

const textBounds = (list: string, title: string, abstract: string): Bound[] => [
  [[list, "[]", title], "maxLength", (l) => l.MAX_TITLE_CHARS],
  [[list, "[]", abstract], "maxLength", (l) => l.MAX_ABSTRACT_CHARS],
];
const indexerRecords: Bound[] = [
  [["records"], "maxItems", (l) => l.MAX_INDEXER_JOB_RECORDS],
  [["fields"], "maxItems", (l) => l.MAX_INDEXER_FIELDS],
  ...textBounds("records", "Title", "Abstract"),
];
const fields: Bound[] = [[["fields"], "maxItems", (l) => l.MAX_INDEXER_FIELDS]];

const BODY_BOUNDS: Record<string, Bound[]> = {
  "/v1/screening/jobs": [
    [["papers"], "maxItems", (l) => l.MAX_SCREENING_PAPERS],
    [["criteria"], "maxItems", (l) => l.MAX_SCREENING_CRITERIA],
    [["criteria", "[]", "value"], "maxLength", (l) => l.MAX_CRITERION_CHARS],
    [["repetitions"], "maximum", (l) => l.MAX_REPETITIONS],
    ...textBounds("papers", "title", "abstract"),
  ],
  "/v1/screening/estimate": [[["repetitions"], "maximum", (l) => l.MAX_REPETITIONS]],
  "/v1/indexer/run": indexerRecords,
  "/v1/indexer/jobs": indexerRecords,
  "/v1/indexer/estimate": fields,
  "/v1/indexer/refine-fields": fields,
  "/v1/criteria/generate": [[["existing_criteria"], "maxItems", (l) => l.MAX_REQUEST_CRITERIA]],
  "/v1/criteria/refine": [[["current_criteria"], "maxItems", (l) => l.MAX_REQUEST_CRITERIA]],
  "/v1/criteria/consolidate": [[["criteria"], "maxItems", (l) => l.MAX_REQUEST_CRITERIA]],
};
/** Every job kind's listing. */
const listings = () => JOB_SERVICES.map((service) => `/v1/${service}/jobs`);

/**
 * The OpenAPI document shows the limits this deployment enforces (docs/limits.md), not the
 * contracts' ceilings: the request schemas are patched in place where each configured limit applies.
 */
export function documentLimits(paths: Record<string, Node>, limits: RequestLimits): void {
  for (const [path, bounds] of Object.entries(BODY_BOUNDS)) {
    const schema = (((paths[path]?.post as Node | undefined)?.requestBody as Node | undefined)?.content as Node | undefined)?.["application/json"] as
      | Node
      | undefined;
    for (const [at, keyword, value] of bounds) {
      const node = walk(schema?.schema as Node | undefined, at);
      if (node) node[keyword] = value(limits);
    }
  }
  for (const path of listings()) {
    const parameters = ((paths[path]?.get as Node | undefined)?.parameters ?? []) as Node[];
    const limit = parameters.find((p) => p.name === "limit")?.schema as Node | undefined;
    if (limit) limit.maximum = limits.MAX_LIST_LIMIT;
  }
}

/** The schema at `path`, through `properties`, `items` (`[]`) and the non-null member of an `anyOf`. */
function walk(schema: Node | undefined, path: string[]): Node | undefined {
  let node = schema && concrete(schema);
  for (const key of path) {
    if (!node) return undefined;
    const next = key === "[]" ? node.items : (node.properties as Node | undefined)?.[key];
    node = next && typeof next === "object" ? concrete(next as Node) : undefined;
  }
  return node;
}

function concrete(node: Node): Node {
  const members = node.anyOf as Node[] | undefined;
  return members?.find((m) => m.type !== "null") ?? node;
}
