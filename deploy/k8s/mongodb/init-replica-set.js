// Run by the mongo-init-replica-set Job with mongosh against mongo-0. Idempotent: initiates the
// three-member replica set "rs0" once, then waits until it has a writable primary.
const members = [0, 1, 2].map((i) => ({ _id: i, host: `mongo-${i}.mongo:27017` }));
try {
  rs.status();
  print("replica set already initiated");
} catch (error) {
  if (error.codeName !== "NotYetInitialized") throw error;
  rs.initiate({ _id: "rs0", members });
  print("replica set rs0 initiated");
}
for (let waited = 0; !db.hello().primary; waited += 1000) {
  if (waited > 120000) throw new Error("rs0 has no primary after 120 s");
  sleep(1000);
}
print(`replica set rs0 primary: ${db.hello().primary}`);
