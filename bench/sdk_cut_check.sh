#!/usr/bin/env bash
# The official Azure IoT Operations Rust SDK's MQTT session across connection cuts against
# `mqstate serve` (both embedded deployments): bench/src/bin/sdk_cut.rs, started by
# `bench/run sdk-cut-check`. Not part of scripts/test (it builds the SDK, a benchmark-only
# dependency); see docs/server.md.
# Prints the plain closing line 'N passed, N failed'.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
. "$root/scripts/lib/net.sh"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --locked -p mqstate-cli --bin mqstate
cargo build --locked -p mqstate-bench --features sdk --bin sdk-cut
passed=0 failed=0
for mode in in-process adapter; do
    port="$(free_port)"
    flags=()
    [ "$mode" = adapter ] && flags+=(--embedded-adapter)
    "$target/debug/mqstate" serve --listen "127.0.0.1:$port" "${flags[@]}" &
    server=$!
    wait_port "$server" "$port" 5 || true  # a store that never answers fails sdk-cut below
    echo "sdk-cut against mqstate serve ($mode)"
    if timeout 120 "$target/debug/sdk-cut" --url "mqtt://127.0.0.1:$port" --cuts 10; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    kill "$server"
    wait "$server" 2>/dev/null || true
done
echo "sdk-cut: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
