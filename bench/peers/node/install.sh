#!/bin/sh
# Installs the pinned Node.js peer libraries (package-lock.json) into
# bench/peers/node/node_modules if that folder is missing. Used by scripts/bench.
set -eu
cd "$(dirname "$0")"

if [ -d node_modules ] && [ -f node_modules/.package-lock.json ]; then
    exit 0
fi
if ! command -v node >/dev/null 2>&1; then
    echo "bench/peers/node/install.sh: node is not installed (need Node.js >= 18); cannot run the redlock / redis-semaphore peers" >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "bench/peers/node/install.sh: npm is not installed; cannot install the redlock / redis-semaphore peers (apt-get install npm)" >&2
    exit 1
fi
echo "bench/peers/node/install.sh: installing pinned packages with npm ci" >&2
if ! npm ci --no-audit --no-fund >&2; then
    echo "bench/peers/node/install.sh: npm ci failed (is the npm registry reachable?)" >&2
    exit 1
fi
