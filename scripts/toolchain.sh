#!/usr/bin/env bash
# Brings everything the project needs onto a bare machine, then runs "$@" with it on PATH:
#   - a supported Node LTS (the npm registry ships Node's release binaries as packages),
#   - pnpm, the workspace's dependencies (installed again whenever the lockfile changes),
#   - a pinned, current nats-server from Debian's archive, unless NATS_URL points at an existing server.
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

# nats-server: a pinned, current release from Debian's own archive (the testing suite), fetched into
# .toolchain/ with a private sources list and lists directory so the machine's apt configuration is
# never touched. Bookworm's 2.9.10 lost acknowledged writes after leader kills (docs/resilience.md);
# the Raft fixes we rely on ship in 2.12.6-2.14.4. One already on PATH is used only when it is at
# least NATS_MIN (major.minor).
NATS_VERSION=2.15.1-1
NATS_MIN=2.15
NATS_SUITES=(forky sid)
declare -A NATS_SHA256=(
  [amd64]=31ef4ceaa84e8248d449e508472e3770c17c3695cb5cb0ee96e03912724ea884
  [arm64]=68923b614b6b5594bbd63ffdce7258c2155ec448fb4cb7efd099bf9273eca128
)

# "2.15.1" from `nats-server --version` ("nats-server: v2.15.1"); empty when it does not run.
nats_version_of() { "$1" --version 2>/dev/null | sed -n 's/.*v\([0-9][0-9.]*\).*/\1/p' | head -n 1; }

# True when version $1 is at least major.minor $2.
version_at_least() {
  local have_major have_minor want_major want_minor
  IFS=. read -r have_major have_minor _ <<<"$1"
  IFS=. read -r want_major want_minor <<<"$2"
  [ -n "$have_major" ] || return 1
  [ "$have_major" -gt "$want_major" ] || { [ "$have_major" -eq "$want_major" ] && [ "${have_minor:-0}" -ge "$want_minor" ]; }
}

fetch_nats_server() {
  local dest="$1" arch work
  arch="$(dpkg --print-architecture 2>/dev/null || true)"
  if [ -z "$arch" ] || ! command -v apt-get >/dev/null; then
    log "no apt-get/dpkg here: install nats-server >= $NATS_MIN yourself (docs/operations.md) and put it on PATH"
    exit 1
  fi
  work="$(mktemp -d)"
  mkdir -p "$work/lists/partial" "$work/archives/partial"
  local suite
  for suite in "${NATS_SUITES[@]}"; do echo "deb http://deb.debian.org/debian $suite main"; done >"$work/sources.list"
  local apt=(apt-get -qq -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives" -o APT::Sandbox::User=root)
  log "fetching nats-server $NATS_VERSION ($arch) from Debian's ${NATS_SUITES[*]} suites"
  "${apt[@]}" update >&2
  local deb
  if (cd "$work" && "${apt[@]}" download "nats-server=$NATS_VERSION" >&2); then
    deb="$(ls "$work"/nats-server_*.deb)"
    local want="${NATS_SHA256[$arch]:-}" got
    got="$(sha256sum "$deb" | cut -d' ' -f1)"
    if [ -n "$want" ] && [ "$got" != "$want" ]; then
      log "checksum mismatch for $(basename "$deb"): $got, expected $want"
      rm -rf "$work"
      exit 1
    fi
  else
    # The testing suite moves on; a newer build of the same minor or later (signed by the archive,
    # checked by apt) is the fallback, never an older one.
    log "nats-server $NATS_VERSION is no longer in the archive; taking the suite's current build"
    (cd "$work" && "${apt[@]}" download nats-server >&2)
    deb="$(ls "$work"/nats-server_*.deb)"
  fi
  mkdir -p "$dest"
  dpkg-deb -x "$deb" "$dest"
  rm -rf "$work"
  local got_version
  got_version="$(nats_version_of "$dest/usr/sbin/nats-server")"
  if ! version_at_least "$got_version" "$NATS_MIN"; then
    log "the fetched nats-server is ${got_version:-unusable}, older than $NATS_MIN"
    rm -rf "$dest"
    exit 1
  fi
}

ensure_nats_server() {
  [ -n "${NATS_URL:-}" ] && return
  local on_path
  on_path="$(command -v nats-server || true)"
  if [ -n "$on_path" ] && version_at_least "$(nats_version_of "$on_path")" "$NATS_MIN"; then return; fi
  local dest="$TOOLS/nats-server-$NATS_VERSION"
  if [ ! -x "$dest/usr/sbin/nats-server" ]; then
    [ -n "$on_path" ] && log "ignoring $on_path ($(nats_version_of "$on_path")): older than $NATS_MIN"
    fetch_nats_server "$dest"
  fi
  export PATH="$dest/usr/sbin:$PATH"
}

ensure_node
ensure_pnpm
ensure_dependencies
ensure_nats_server
if [ $# -gt 0 ]; then exec "$@"; fi
