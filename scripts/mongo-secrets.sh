#!/usr/bin/env bash
# MongoDB's TLS certificate and replica-set keyfile (docs/operations.md): a private CA and a server
# certificate signed by it (scripts/nats-certs.sh with TLS_NAME=mongo), the certificate and key
# joined into the one PEM file mongod reads, and a random keyfile the members authenticate each
# other with. Nothing here is ever committed (the target directories ignore everything in git).
#
#   bash scripts/mongo-secrets.sh [OUT_DIR] [EXTRA_SAN ...]
#
# OUT_DIR defaults to deploy/mongo/tls (what deploy/compose.yaml mounts); for the Kubernetes
# replica set add its members' names: mongo-0.mongo mongo-1.mongo mongo-2.mongo.
#
# Layout:
#   OUT_DIR/ca/ca.pem            CA certificate: give it to every service (tlsCAFile in MONGO_URL)
#   OUT_DIR/server/server.pem    certificate and key, for mongod only
#   OUT_DIR/server/keyfile       the replica set's shared keyfile, for mongod only
#   OUT_DIR/private/ca-key.pem   CA key: keep it offline
set -euo pipefail

out="${1:-deploy/mongo/tls}"
shift || true
TLS_NAME=mongo bash "$(dirname "${BASH_SOURCE[0]}")/nats-certs.sh" "$out" "$@"
cat "$out/server/server-cert.pem" "$out/server/server-key.pem" > "$out/server/server.pem"
chmod 600 "$out/server/server.pem"
if [[ ! -f "$out/server/keyfile" ]]; then
  openssl rand -base64 756 > "$out/server/keyfile"
  chmod 600 "$out/server/keyfile"
fi
echo "server PEM:         $out/server/server.pem"
echo "keyfile:            $out/server/keyfile"
