export * from "./connection";
export * from "./rpc";
export * from "./trace-context";
export * from "./config-store";
export * from "./payload-store";
export type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
export * from "./replicas";
export * from "./permissions";
export * from "./quotas";
