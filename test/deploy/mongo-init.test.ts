import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, read } from "./manifests";

/**
 * deploy/k8s/mongodb/init-replica-set.js (compose's mongo-init and the Kubernetes Job) run under
 * stand-ins for mongosh's globals — no mongod here: what it initiates, where it connects, which
 * users it creates, and that a second run changes passwords instead of failing.
 */

const script = read(join(DEPLOY, "k8s/mongodb/init-replica-set.js"));

function run(env: Record<string, string>, state: { initiated: boolean; users: Map<string, unknown> }) {
  const calls: unknown[][] = [];
  const shell = {
    rs: {
      status: () => {
        if (!state.initiated) throw Object.assign(new Error("no replica set"), { codeName: "NotYetInitialized" });
      },
      initiate: (config: unknown) => ((state.initiated = true), calls.push(["initiate", config])),
    },
    db: { hello: () => ({ primary: state.initiated ? "mongo-1.mongo:27017" : undefined }) },
    print: () => undefined,
    sleep: () => undefined,
    connect: (uri: string) => {
      calls.push(["connect", uri]);
      return {
        getSiblingDB: (database: string) => ({
          getUser: (user: string) => state.users.get(`${database}.${user}`),
          createUser: (spec: { user: string }) => (state.users.set(`${database}.${spec.user}`, spec), calls.push(["createUser", database, spec])),
          updateUser: (user: string, spec: unknown) => calls.push(["updateUser", database, user, spec]),
        }),
      };
    },
    process: { env },
  };
  new Function(...Object.keys(shell), script)(...Object.values(shell));
  return calls;
}

describe("the MongoDB init script", () => {
  it("initiates rs0 once, then creates one readWrite user per job service from its URL, on the primary over TLS", () => {
    const env = {
      MONGO_RS_MEMBERS: "mongo-0.mongo:27017,mongo-1.mongo:27017",
      MONGO_ROOT_USERNAME: "admin",
      MONGO_ROOT_PASSWORD: "r00t/pw",
      MONGO_CA_FILE: "/etc/mongo-ca/ca.crt",
      MONGO_SCREENING_URL: "mongodb://screening:s3cret@mongo-0.mongo:27017,mongo-1.mongo:27017/litrev?replicaSet=rs0&authSource=litrev&tls=true",
      MONGO_INDEXER_URL: "mongodb://indexer:an%2Fother@mongo-0.mongo:27017/litrev?authSource=litrev&tls=true",
    };
    const state = { initiated: false, users: new Map<string, unknown>() };
    const first = run(env, state);
    expect(first[0]).toEqual(["initiate", { _id: "rs0", members: [{ _id: 0, host: "mongo-0.mongo:27017" }, { _id: 1, host: "mongo-1.mongo:27017" }] }]);
    expect(first[1]).toEqual(["connect", "mongodb://admin:r00t%2Fpw@mongo-1.mongo:27017/admin?authSource=admin&tls=true&tlsCAFile=%2Fetc%2Fmongo-ca%2Fca.crt"]);
    expect(first.slice(2)).toEqual([
      ["createUser", "litrev", { user: "screening", pwd: "s3cret", roles: [{ role: "readWrite", db: "litrev" }] }],
      ["createUser", "litrev", { user: "indexer", pwd: "an/other", roles: [{ role: "readWrite", db: "litrev" }] }],
    ]);
    const second = run(env, state);
    expect(second.map((c) => c[0])).toEqual(["connect", "updateUser", "updateUser"]);
  });

  it("refuses a service URL without a user, a password and a database", () => {
    const state = { initiated: true, users: new Map<string, unknown>() };
    expect(() => run({ MONGO_RS_MEMBERS: "mongo:27017", MONGO_SCREENING_URL: "mongodb://mongo:27017/litrev" }, state)).toThrow(/MONGO_SCREENING_URL names no user/);
  });
});
