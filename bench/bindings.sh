#!/usr/bin/env bash
# The language bindings against the Rust client, side by side in one run (docs/benchmarks.md,
# "Bindings"): GET/SET ops/s through the Python asyncio client and a paho-mqtt
# request/response loop at 1 and 64 in flight, and through the C API with 1 thread and 16
# threads sharing a client, each beside `mqstate bench` (the Rust client) at the same depth.
# Release builds; one `mqstate serve` (embedded broker); rounds alternate the clients;
# medians of ROUNDS (default 3) runs of SECONDS (default 5).
#   bench/bindings.sh [ROUNDS] [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${1:-3}" seconds="${2:-5}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

echo "bindings bench: release builds (cli, C library, Python wheel)"
cargo build -q --release -p mqstate-cli -p mqstate-c
"$root/.venv/bin/maturin" build -q --release --manifest-path bindings-python/Cargo.toml --out "$work/dist" >/dev/null 2>&1
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$work"/dist/*.whl paho-mqtt==2.2.0
cc -O2 -std=c11 -Ibindings-c/include bindings-c/bench/bench.c "$CARGO_TARGET_DIR/release/libmqstate.a" \
    -lpthread -ldl -lm -o "$work/cbench"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$CARGO_TARGET_DIR/release/mqstate" serve --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pids+=($!)
sleep 0.5
url="mqtt://127.0.0.1:$port"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

rust() { "$CARGO_TARGET_DIR/release/mqstate" bench --url "$url" --depth "$1" --duration "$seconds" --warmup 1 \
         | awk -v d="$1" '/^mqstate / {print "rust", d, $2}'; }
py() { "$work/venv/bin/python" bindings-python/bench/bench.py "$url" "$1" "$2" "$seconds"; }
cbench() { "$work/cbench" "$url" "$1" "$seconds"; }

: >"$work/results"
for r in $(seq "$rounds"); do
    echo "round $r/$rounds"
    for depth in 1 64; do
        rust "$depth" | tee -a "$work/results"
        py mqstate "$depth" | sed 's/^mqstate/python/' | tee -a "$work/results"
        py paho "$depth" | tee -a "$work/results"
    done
    for threads in 1 16; do
        [ "$threads" = 1 ] || rust 16 | tee -a "$work/results"
        cbench "$threads" | tee -a "$work/results"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "medians (ops/s) over $rounds rounds of ${seconds} s:"
python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, depth, rate = line.split()
    runs.setdefault((who, int(depth)), []).append(float(rate))
med = {k: statistics.median(v) for k, v in runs.items()}
for (who, depth), m in sorted(med.items()):
    rust = med.get(("rust", depth))
    ratio = f"  {m / rust:.2f}x rust" if rust and who != "rust" else ""
    print(f"  {who:7} depth/threads {depth:3}: {m:8.0f}{ratio}   runs {sorted(int(x) for x in runs[(who, depth)])}")
PY
