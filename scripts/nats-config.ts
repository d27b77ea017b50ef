/**
 * `npm run nats:config`: writes the NATS authorization of the compose and Kubernetes setups from the
 * permission table in libs/messaging/src/permissions.ts. Run it after changing subjects, streams
 * or buckets; test/security/nats-config.test.ts fails while the committed files are out of date.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./lib/launch";
import { renderNatsDeployFiles } from "./lib/nats-deploy-config";

for (const [path, content] of Object.entries(renderNatsDeployFiles())) {
  writeFileSync(join(ROOT, path), content);
  console.log(`wrote ${path}`);
}
