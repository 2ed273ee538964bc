#!/usr/bin/env bash
# The Node client benchmark (docs/benchmarks.md, "Language bindings", its last run before
# issue 22): builds the CLI and the addon in release, starts mosquitto (TCP_NODELAY) and
# `mqstate serve --broker` (release), and runs compare.mjs (beside this file): Rust client,
# Node client and an mqtt.js loop, alternating.
# Usage: bench/run node [rounds] [seconds]   (or bench/bindings/node/run.sh …)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
pkg="$root/bindings-node"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
"$root/scripts/lib/setup/node"
(cd "$root" && cargo build --release --quiet -p mqstate-cli)
addon="$(mktemp -d)"
work="$(mktemp -d)"
cleanup() {
    [ -n "${serve:-}" ] && kill "$serve" 2>/dev/null || true
    [ -n "${broker:-}" ] && kill "$broker" 2>/dev/null || true
    rm -rf "$addon" "$work"
}
trap cleanup EXIT
(cd "$pkg" && ./node_modules/.bin/napi build --platform --release --target-dir "$CARGO_TARGET_DIR" \
    --output-dir "$addon" --js false --dts "$addon/unused.d.ts" >/dev/null)
port="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
{
    echo "listener $port 127.0.0.1"; echo "allow_anonymous true"; echo "set_tcp_nodelay true"
    echo "persistence false"; [ "$(id -u)" = 0 ] && echo "user root"
} >"$work/mosquitto.conf"
/usr/sbin/mosquitto -c "$work/mosquitto.conf" >/dev/null 2>&1 &
broker=$!
sleep 0.3
"$CARGO_TARGET_DIR/release/mqstate" serve --broker "mqtt://127.0.0.1:$port" >"$work/serve.log" 2>&1 &
serve=$!
sleep 0.5
cd "$pkg"
MQSTATE_BIN="$CARGO_TARGET_DIR/release/mqstate" BENCH_URL="mqtt://127.0.0.1:$port" \
    BENCH_ROUNDS="${1:-3}" BENCH_SECONDS="${2:-4}" \
    NAPI_RS_NATIVE_LIBRARY_PATH="$(ls "$addon"/mqstate.*.node)" \
    node "$root/bench/bindings/node/compare.mjs"
