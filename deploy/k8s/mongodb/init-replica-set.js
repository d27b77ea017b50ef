// Run with mongosh, as the root user, against the first member: by the Kubernetes Job
// mongo-init-replica-set and by the compose service `mongo-init`. Idempotent:
// 1. initiates the replica set "rs0" of the members in MONGO_RS_MEMBERS (host:port,…) once;
// 2. waits for a writable primary;
// 3. creates, or updates the password of, one SCRAM user per service from its connection string
//    MONGO_<SERVICE>_URL (mongodb://<user>:<password>@…/<database>?authSource=<database>&tls=true…),
//    with readWrite on that database only: a service can read and write its own data and nothing else.
const members = (process.env.MONGO_RS_MEMBERS || "").split(",").filter(Boolean).map((host, i) => ({ _id: i, host }));
if (members.length === 0) throw new Error("MONGO_RS_MEMBERS is empty");
try {
  rs.status();
  print("replica set already initiated");
} catch (error) {
  if (error.codeName !== "NotYetInitialized") throw error;
  rs.initiate({ _id: "rs0", members });
  print(`replica set rs0 initiated with ${members.length} member(s)`);
}

let primary;
for (let waited = 0; !(primary = db.hello().primary); waited += 1000) {
  if (waited > 120000) throw new Error("rs0 has no primary after 120 s");
  sleep(1000);
}
print(`replica set rs0 primary: ${primary}`);

// Users are written on the primary, which need not be the member this script connected to.
const enc = encodeURIComponent;
const root = `${enc(process.env.MONGO_ROOT_USERNAME)}:${enc(process.env.MONGO_ROOT_PASSWORD)}`;
const onPrimary = connect(`mongodb://${root}@${primary}/admin?authSource=admin&tls=true&tlsCAFile=${enc(process.env.MONGO_CA_FILE)}`);

for (const service of ["screening", "indexer"]) {
  const url = process.env[`MONGO_${service.toUpperCase()}_URL`];
  if (!url) {
    print(`MONGO_${service.toUpperCase()}_URL not set: no user for ${service}`);
    continue;
  }
  const parts = /^mongodb:\/\/([^:@/]+):([^@/]+)@[^/]+\/([^?]+)/.exec(url);
  if (!parts) throw new Error(`MONGO_${service.toUpperCase()}_URL names no user, password and database`);
  const [user, pwd, database] = parts.slice(1).map(decodeURIComponent);
  const target = onPrimary.getSiblingDB(database);
  const roles = [{ role: "readWrite", db: database }];
  if (target.getUser(user)) {
    target.updateUser(user, { pwd, roles });
    print(`user ${user} on ${database}: password and roles updated`);
  } else {
    target.createUser({ user, pwd, roles });
    print(`user ${user} on ${database}: created`);
  }
}
