import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/launch";

/**
 * One nats-server release everywhere: the image compose and the Helm values run is the release the
 * toolchain fetches for `npm start`, `npm test` and CI (scripts/toolchain.sh, NATS_VERSION), pinned,
 * never a floating tag; and the toolchain's floor (NATS_MIN) has the Raft fixes the cluster needs.
 */

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const toolchain = read("scripts/toolchain.sh");
const pinned = /^NATS_VERSION=(\d+\.\d+\.\d+)-\d+$/m.exec(toolchain)?.[1];
const floor = /^NATS_MIN=(\d+\.\d+)$/m.exec(toolchain)?.[1];

describe("the pinned nats-server", () => {
  it("is named by the toolchain, at least 2.15 (the Raft fixes of 2.12.6–2.14.4 included)", () => {
    expect(pinned).toMatch(/^2\.\d+\.\d+$/);
    expect(floor).toBe(pinned!.split(".").slice(0, 2).join("."));
    expect(Number(floor!.split(".")[1])).toBeGreaterThanOrEqual(15);
  });

  it("is the image of compose and of the Helm values, as a pinned tag", () => {
    expect(read("deploy/compose.yaml")).toMatch(new RegExp(`^\\s+image: nats:${pinned!.replaceAll(".", "\\.")}-alpine$`, "m"));
    expect(read("deploy/k8s/nats-values.yaml")).toMatch(new RegExp(`^\\s+tag: ${pinned!.replaceAll(".", "\\.")}-alpine$`, "m"));
    expect(read("docs/operations.md")).toContain(`nats:${pinned}-alpine`);
  });
});
