#!/usr/bin/env bash
# Instructions per request of each client at 1 request in flight, counted by valgrind's
# callgrind in user space (docs/benchmarks.md, "Instructions per request"). Unlike a rate or
# a CPU time, the count is the same for the same binary and input however busy the machine
# is, so two builds can be compared on a noisy one; it leaves out the kernel (system calls,
# wake-ups), which a rate or a CPU time includes.
#   bench/instructions.sh [SECONDS] [CLIENT...]   clients: rust c blocking asyncio (default: all)
# Release builds; one `mqstate serve` (not under valgrind); each client runs under callgrind
# with instrumentation off until its loop has run for a while, then on for SECONDS (default
# 10); the profile's window is divided by the requests made in it. A shell function `build`
# (e.g. from a shared build lock), if exported, wraps every compile.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${1:-10}"
shift || true
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(rust c blocking asyncio)
for who in "${clients[@]}"; do
    case "$who" in rust | c | blocking | asyncio) ;; *)
        echo "instructions: unknown client $who (rust, c, blocking, asyncio)" >&2
        exit 2
        ;;
    esac
done
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
    echo "instructions: installing valgrind (Debian's package)"
    apt-get update -qq >/dev/null && apt-get install -y -qq valgrind >/dev/null
fi
. "$root/bench/lib/clients.sh"

echo "instructions: release builds (cli, C library, Python wheel)"
build_clients
start_store

# A client started under valgrind runs uninstrumented (a few times slower) until its loop
# has gone on for `settle` seconds; it is told to run long enough for the window and more.
settle=8
runs=$((settle + seconds + 8))
for who in "${clients[@]}"; do
    case "$who" in
    rust) cmd=("$CARGO_TARGET_DIR/release/mqstate" bench --url "$url" --depth 1
        --duration "${runs}s" --warmup 1s) ;;
    c) cmd=("$work/cbench" "$url" 1 "$runs") ;;
    blocking) cmd=("$work/venv/bin/python" bench/bindings/python/bench.py "$url" blocking 1 "$runs") ;;
    asyncio) cmd=("$work/venv/bin/python" bench/bindings/python/bench.py "$url" mqstate 1 "$runs") ;;
    esac
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/$who.out" \
        "${cmd[@]}" >"$work/$who.log" 2>&1 &
    client=$!
    pids+=("$client")
    sleep "$settle"
    callgrind_control -i on "$client" >/dev/null
    sleep "$seconds"
    callgrind_control -i off "$client" >/dev/null
    if ! wait "$client"; then
        echo "instructions: $who failed under valgrind:" >&2
        tail -20 "$work/$who.log" >&2
        exit 1
    fi
    echo "$who (1 in flight, ${seconds} s counted):"
    python3 bench/callgrind_per_request.py "$work/$who.out"
done
