#!/usr/bin/env bash
# What OpenTelemetry costs a caller, Python and Node, in one run (docs/benchmarks.md,
# "OpenTelemetry"): a cached hit and an uncached get at one request in flight, with
# OpenTelemetry absent, its API alone (no-op) and its SDK recording, through one release
# `mqstate serve` (embedded broker):
#
#   bench/run telemetry [SECONDS] [ROUNDS]
#
# Release builds: the CLI, the Python wheel (into a venv with the OpenTelemetry API and SDK
# pinned by scripts/lib/setup/python) and the Node addon (bindings-node's dev dependencies hold
# the JS API and SDK). Each language's program (bench/bindings/{python/telemetry.py,
# node/telemetry.mjs}) times its three modes in turns, ROUNDS (default 3) rounds of SECONDS
# (default 2) each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${1:-2}" rounds="${2:-3}"
. "$root/bench/lib/clients.sh"

echo "telemetry bench: release builds"
build cargo build -q --release -p mqstate-cli
pins="$(grep -o 'opentelemetry-\(api\|sdk\)==[0-9.]*' scripts/lib/setup/python | sort -u)"
# shellcheck disable=SC2086
build_wheel $pins
build_addon

start_store
echo "store: $url (pid $serve); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "== python"
"$work/venv/bin/python" bench/bindings/python/telemetry.py "$url" "$seconds" "$rounds"
echo
echo "== node"
NAPI_RS_NATIVE_LIBRARY_PATH="$(ls "$work"/addon/mqstate.*.node)" \
    node bench/bindings/node/telemetry.mjs "$url" "$seconds" "$rounds"
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
