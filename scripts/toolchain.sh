#!/usr/bin/env bash
# Brings everything the project needs onto a bare machine, then runs "$@" with it on PATH:
#   - a supported Node LTS (the npm registry ships Node's release binaries as packages),
#   - pnpm, the workspace's dependencies (installed again whenever the lockfile changes),
#   - Debian's nats-server, unless NATS_URL points at an existing server.
# Idempotent and quiet when nothing is missing, so every entry point can call it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.toolchain"
NODE_MAJOR=24
PNPM_VERSION=10.34.8

log() { printf '[toolchain] %s\n' "$*" >&2; }

# npm and pnpm find the machine's global npm config (a registry mirror, a `cafile` for a
# TLS-inspecting proxy) through the prefix of the Node that runs them, which moves once Node 24 comes
# from .toolchain and with `npm install --prefix`. Read it once, before anything moves, and hand it
# to every npm and pnpm run below (both honour npm_config_globalconfig).
if [ -z "${npm_config_globalconfig:-}" ] && command -v npm >/dev/null; then
  npm_config_globalconfig="$(npm config get globalconfig 2>/dev/null || true)"
  [ -n "$npm_config_globalconfig" ] && export npm_config_globalconfig
fi
tools_install() {
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error "$@" >&2
}

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

ensure_node() {
  if command -v node >/dev/null && [ "$(node_major node)" -ge 22 ]; then return; fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) log "unsupported CPU $(uname -m): install Node >= 22 yourself"; exit 1 ;;
  esac
  local bin="$TOOLS/node_modules/node-linux-$arch/bin"
  if [ ! -x "$bin/node" ]; then
    log "system Node $(node --version 2>/dev/null || echo none) is past end of life; fetching Node $NODE_MAJOR from the npm registry"
    tools_install "node-linux-$arch@$NODE_MAJOR"
  fi
  export PATH="$bin:$PATH"
}

ensure_pnpm() {
  if command -v pnpm >/dev/null && [ "$(pnpm --version 2>/dev/null | cut -d. -f1)" -ge 10 ]; then return; fi
  if [ ! -x "$TOOLS/node_modules/.bin/pnpm" ]; then
    log "installing pnpm $PNPM_VERSION"
    tools_install "pnpm@$PNPM_VERSION"
  fi
  export PATH="$TOOLS/node_modules/.bin:$PATH"
}

ensure_dependencies() {
  local stamp="$ROOT/node_modules/.install-stamp"
  local want
  want="$(node -p 'process.version')-$({ cat "$ROOT"/pnpm-lock.yaml "$ROOT"/package.json "$ROOT"/{libs,services}/*/package.json 2>/dev/null || true; } | sha256sum | cut -c1-16)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  log "installing workspace dependencies"
  local frozen=()
  [ -f "$ROOT/pnpm-lock.yaml" ] && [ "${CI:-}" = "true" ] && frozen=(--frozen-lockfile)
  (cd "$ROOT" && pnpm install "${frozen[@]}" --reporter=append-only >&2)
  printf '%s' "$want" >"$stamp"
}

ensure_nats_server() {
  if [ -n "${NATS_URL:-}" ] || command -v nats-server >/dev/null; then return; fi
  log "installing nats-server from Debian"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq nats-server >&2
}

ensure_node
ensure_pnpm
ensure_dependencies
ensure_nats_server
if [ $# -gt 0 ]; then exec "$@"; fi
