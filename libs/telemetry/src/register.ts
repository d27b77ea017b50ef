/**
 * Loaded with `node --import …/register.ts` before the application, so that the OpenTelemetry
 * SDK patches http, undici (fetch), mongodb and pino before they are first imported.
 * Spans are exported over OTLP only when OTEL_EXPORTER_OTLP_ENDPOINT is set; context propagation
 * (trace ids in logs and across NATS) works either way.
 */
import { createAddHookMessageChannel } from "import-in-the-middle";
import { register } from "node:module";
import { startTelemetry } from "./sdk";

// Only the modules an instrumentation asks for are wrapped; the rest (our own TypeScript
// included) load untouched.
const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
startTelemetry();
await waitForAllMessagesAcknowledged();
