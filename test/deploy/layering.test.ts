import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importGraph, reachable, root, sources } from "./import-graph";

/**
 * libs/jobs has two sides: the client (what the gateway and request handlers load) and the worker
 * (the pull loop). entry-points.test.ts holds the gateway off the worker; this holds the worker
 * off the client, so that what both need (a finished job's views and report) stays in a module of
 * its own instead of in one side. Relative imports, type-only ones included.
 */
const jobs = join(root, "libs/jobs/src");

describe("libs/jobs layering", () => {
  it("nothing the worker entry point reaches imports the client side", () => {
    const graph = importGraph(sources(jobs));
    const modules = reachable(graph, join(jobs, "worker/index.ts"));
    expect(modules).toContain("libs/jobs/src/artifact.ts");
    expect(modules.filter((m) => m.startsWith("libs/jobs/src/client/"))).toEqual([]);
  });
});
