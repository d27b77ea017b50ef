// Run by the compose `mongo-init` service with mongosh. Idempotent: initiates the single-member
// replica set "rs0" on first start (retryable writes need a replica set), then waits until the
// member is a writable primary so that the services start against a usable database.
try {
  rs.status();
  print("replica set already initiated");
} catch (error) {
  if (error.codeName !== "NotYetInitialized") throw error;
  rs.initiate({ _id: "rs0", members: [{ _id: 0, host: "mongo:27017" }] });
  print("replica set rs0 initiated");
}
for (let waited = 0; !db.hello().isWritablePrimary; waited += 500) {
  if (waited > 60000) throw new Error("rs0 has no primary after 60 s");
  sleep(500);
}
print("replica set rs0 has a primary");
