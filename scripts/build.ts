/**
 * `npm run build -- <service> [out-dir]`: compiles one process to plain JavaScript with source maps
 * (default out-dir `dist/<service>`); deploy/Dockerfile runs it in its build stage. See scripts/lib/build.ts.
 */
import { resolve } from "node:path";
import { buildService } from "./lib/build";
import { SERVICES, type ServiceProcess } from "./lib/launch";

const [service, out] = process.argv.slice(2);
if (!service || !(SERVICES as readonly string[]).includes(service)) {
  console.error(`usage: npm run build -- <${SERVICES.join("|")}> [out-dir]`);
  process.exit(64);
}
const outDir = resolve(out ?? `dist/${service}`);
const files = await buildService(service as ServiceProcess, outDir);
console.log(`${service}: ${files.length} files in ${outDir}`);
