import type { ConfigStore, NatsLink } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import type { GatewayEnv } from "./env";

/** What the gateway's routes are built with (its own module: the app and every route import it, none imports the app). */
export interface GatewayDeps {
  env: GatewayEnv;
  logger: Logger;
  link: NatsLink;
  /** The limits bucket's own connection, so that the bytes of heavy reads never queue ahead of a limit check (default: `link`). */
  limitsLink?: NatsLink;
  /** The config bucket, opened once NATS is reachable. */
  configStore: () => Promise<ConfigStore>;
}
