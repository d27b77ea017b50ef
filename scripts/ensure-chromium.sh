#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests (test/browser/), installing Debian's
# `chromium` first when none is found and this user may install packages (root, or sudo without a
# password). Exits 3 with the reason on stderr when Chromium is missing and cannot be installed,
# so the browser tests can skip saying why. CHROMIUM_PATH names a browser to use instead.
set -euo pipefail

find_chromium() {
  local candidate
  for candidate in "${CHROMIUM_PATH:-}" chromium chromium-browser; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if find_chromium; then exit 0; fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "Chromium is not installed, and installing it needs root or sudo without a password (apt-get install chromium)" >&2
    exit 3
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is not installed and this machine has no apt-get to install Debian's chromium" >&2
  exit 3
fi

echo "[chromium] installing Debian's chromium for the browser tests" >&2
# Several suites may ask at once: one install at a time.
exec 9>"${TMPDIR:-/tmp}/litrev-chromium-install.lock"
flock -w 900 9 || true
if find_chromium; then exit 0; fi
"${sudo[@]}" apt-get update -qq >&2 || echo "[chromium] apt-get update failed; trying the install anyway" >&2
if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2; then
  echo "apt-get install chromium failed (see above)" >&2
  exit 3
fi
find_chromium || { echo "chromium was installed but is not on PATH" >&2; exit 3; }
