#!/usr/bin/env bash
# TLS certificates for nats-server (docs/operations.md § NATS credentials and TLS). Generates a
# private CA and a server certificate signed by it; nothing here is ever committed (the target
# directories ignore everything in git).
#
#   bash scripts/nats-certs.sh [OUT_DIR] [EXTRA_SAN ...]
#
# OUT_DIR defaults to deploy/nats/tls (what deploy/compose.yaml mounts). The server certificate
# names nats, localhost and 127.0.0.1, plus each EXTRA_SAN (DNS names, or IP:a.b.c.d), e.g. for the
# Helm release: nats.nats.svc '*.nats-headless.nats.svc.cluster.local'. TLS_NAME (default nats)
# names another server instead: scripts/mongo-secrets.sh makes MongoDB's with TLS_NAME=mongo.
#
# Layout:
#   OUT_DIR/ca/ca.pem                 CA certificate: give it to every service (NATS_TLS_CA_FILE)
#   OUT_DIR/server/server-cert.pem    server certificate and key: for nats-server only
#   OUT_DIR/server/server-key.pem
#   OUT_DIR/private/ca-key.pem        CA key: keep it offline; needed only to issue new certificates
set -euo pipefail

out="${1:-deploy/nats/tls}"
shift || true
days="${NATS_CERT_DAYS:-825}"
name="${TLS_NAME:-nats}"

mkdir -p "$out/ca" "$out/server" "$out/private"
chmod 700 "$out/private"

san="DNS:$name,DNS:localhost,IP:127.0.0.1"
for extra in "$@"; do
  case "$extra" in
    IP:*) san="$san,$extra" ;;
    *) san="$san,DNS:$extra" ;;
  esac
done

if [[ ! -f "$out/private/ca-key.pem" ]]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$out/private/ca-key.pem"
  chmod 600 "$out/private/ca-key.pem"
  openssl req -x509 -new -key "$out/private/ca-key.pem" -sha256 -days "$days" \
    -subj "/CN=litrev $name CA" -out "$out/ca/ca.pem"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
openssl ecparam -name prime256v1 -genkey -noout -out "$out/server/server-key.pem"
chmod 600 "$out/server/server-key.pem"
openssl req -new -key "$out/server/server-key.pem" -subj "/CN=$name" -out "$tmp/server.csr"
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' "$san" > "$tmp/ext.cnf"
openssl x509 -req -in "$tmp/server.csr" -CA "$out/ca/ca.pem" -CAkey "$out/private/ca-key.pem" -CAcreateserial \
  -CAserial "$tmp/ca.srl" -days "$days" -sha256 -extfile "$tmp/ext.cnf" -out "$out/server/server-cert.pem"

echo "CA certificate:     $out/ca/ca.pem"
echo "server certificate: $out/server/server-cert.pem (SAN $san)"
echo "CA key (offline):   $out/private/ca-key.pem"
