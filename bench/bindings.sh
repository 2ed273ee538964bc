#!/usr/bin/env bash
# Every language binding beside the Rust client, side by side in one run (docs/benchmarks.md,
# "Language bindings"): GET/SET ops/s, one connection each, closed loop, through
#   rust      `client-bench load` (the Rust client under `mqstate bench`'s load),
#   python    the Python asyncio client (N tasks sharing one AsyncClient),
#   blocking  the blocking Python client (N threads sharing one Client),
#   paho      a paho-mqtt request/response loop with the same envelope,
#   node      the Node client (N async loops sharing one Client),
#   mqttjs    an mqtt.js request/response loop with the same envelope,
#   c         the C API (N threads sharing one mqstate_client, each with one blocking call),
# and, at 1 in flight only, each host's own floor with no MQTT and no library: 64-byte round
# trips to a native TCP echo server (bench/floor/) from a blocking native client (`native`),
# an asyncio Protocol awaiting a future per round trip (`asyncio`), a blocking Python socket
# (`pyblocking`) and a Node socket awaiting a Promise per round trip (`nodenet`),
# at 1 and 64 requests in flight (16 threads for the thread-per-call clients, beside the Rust
# client at depth 16), plus the CPU time per request of each client process and of the
# store's. Release builds; one `mqstate serve` (embedded broker, store in process); every
# round runs each client once per depth, in an order that rotates every round; medians of
# ROUNDS (default 3) runs of SECONDS (default 5) after 1 s of warm-up each.
#   bench/bindings.sh [ROUNDS] [SECONDS]
# A shell function `build` (e.g. from a shared build lock), if exported, wraps every compile.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${1:-3}" seconds="${2:-5}"
. "$root/bench/lib/clients.sh"

echo "bindings bench: release builds (cli, C library, Python wheel, Node addon)"
build_clients paho-mqtt==2.2.0
build_addon
cc -O2 -std=c11 bench/floor/pingpong.c -lpthread -o "$work/pingpong"

start_store
echo_port="$(free_port)"
"$work/pingpong" serve "$echo_port" &
pids+=("$!")
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# Each prints one line: WHO DEPTH OPS_PER_S CPU_US_PER_OP STORE_CPU_US_PER_OP.
run() {
    local who="$1" depth="$2"
    case "$who" in
    rust) "$CARGO_TARGET_DIR/release/client-bench" load --url "$url" --depth "$depth" \
            --duration "${seconds}s" --warmup 1s --watch-pid "$serve" 2>/dev/null \
          | awk -v d="$depth" -v p="$serve" '/ ops\/s / {
                self = "-"; store = "-"
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^self=/) self = substr($i, 6)
                    if (index($i, p "=") == 1) store = substr($i, length(p) + 2)
                }
                print "rust", d, $2, self, store }' ;;
    python) "$work/venv/bin/python" bench/bindings/python/bench.py "$url" mqstate "$depth" "$seconds" "$serve" \
            | sed 's/^mqstate/python/' ;;
    blocking | paho) "$work/venv/bin/python" bench/bindings/python/bench.py "$url" "$who" "$depth" "$seconds" "$serve" ;;
    node | mqttjs) (cd bindings-node && NAPI_RS_NATIVE_LIBRARY_PATH="$(ls "$work"/addon/mqstate.*.node)" \
            node "$root/bench/bindings/node/compare.mjs" "$url" "$who" "$depth" "$seconds" "$serve") ;;
    c) "$work/cbench" "$url" "$depth" "$seconds" "$serve" ;;
    native) "$work/pingpong" client "$echo_port" "$seconds" ;;
    asyncio | pyblocking) "$work/venv/bin/python" bench/floor/pingpong.py "$echo_port" "$seconds" "$who" ;;
    nodenet) node bench/floor/pingpong.mjs "$echo_port" "$seconds" ;;
    esac
}

# The clients run at each depth (16: the thread-per-call clients, beside Rust at 16).
declare -A plan=(
    [1]="rust python blocking paho node mqttjs c native asyncio pyblocking nodenet"
    [64]="rust python paho node mqttjs"
    [16]="rust blocking c"
)
: >"$work/results"
for r in $(seq "$rounds"); do
    echo "round $r/$rounds (load $(cut -d' ' -f1 /proc/loadavg))"
    for depth in 1 64 16; do
        read -ra who <<<"${plan[$depth]}"
        n=${#who[@]}
        for i in $(seq 0 $((n - 1))); do
            # Rotate the order every round so that no client always follows the same one.
            run "${who[$(((i + r - 1) % n))]}" "$depth" | tee -a "$work/results"
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "medians over $rounds rounds of ${seconds} s (ratios: medians over the Rust client's at the same depth;"
echo "CPU: µs per request, of the client process and of the store process):"
python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, depth, rate, cpu, *store = line.split()
    store = store[0] if store else "-"
    runs.setdefault((who, int(depth)), []).append(
        (float(rate), float(cpu) if cpu != "-" else None, float(store) if store != "-" else None))
order = ["rust", "python", "blocking", "paho", "node", "mqttjs", "c",
         "native", "asyncio", "pyblocking", "nodenet"]
med = lambda xs: statistics.median(xs) if xs else float("nan")
rate = {k: med([r for r, _, _ in v]) for k, v in runs.items()}
print(f"  {'client':10} {'depth':>5} {'ops/s':>8} {'÷ rust':>7} {'cpu µs':>7} {'store µs':>8}   runs")
for (who, depth) in sorted(runs, key=lambda k: (k[1] != 1, k[1], order.index(k[0]))):
    v = runs[(who, depth)]
    rust = rate.get(("rust", depth))
    ratio = f"{rate[(who, depth)] / rust:.2f}x" if rust and who != "rust" else ""
    cpu = med([c for _, c, _ in v if c is not None])
    stores = [s for _, _, s in v if s is not None]
    store = f"{med(stores):8.1f}" if stores else f"{'-':>8}"
    print(f"  {who:10} {depth:5} {rate[(who, depth)]:8.0f} {ratio:>7} {cpu:7.1f} {store}"
          f"   {sorted(int(r) for r, _, _ in v)}")
# What each host's own round trip costs beyond a native one (its floor's latency minus the
# native floor's), added to the Rust client's latency: the best ratio a client on that host
# could reach with a library as fast as the Rust client (docs/benchmarks.md, "The floor of
# each host"). Issue 34's targets: 0.85 of that best, and C at 0.90 of the Rust client.
hosts = [("python", "asyncio"), ("blocking", "pyblocking"), ("node", "nodenet"), ("c", "native")]
rust, native = rate.get(("rust", 1)), rate.get(("native", 1))
if rust and native:
    print()
    print("at 1 in flight, µs per round trip (1e6 / ops/s); 'best' = rust / (rust + host floor - native floor);")
    print("'target' = 0.85 x best (C: 0.90); 'floor ÷ rust': the host's bare round trips over the Rust client's requests:")
    print(f"  {'client':10} {'latency':>8} {'floor':>8} {'host +':>7} {'floor ÷ rust':>12} {'best':>6} {'now':>6}"
          f" {'÷ best':>6} {'target':>7}  met")
    for client, floor in hosts:
        if (client, 1) not in rate or (floor, 1) not in rate:
            continue
        extra = 1e6 / rate[(floor, 1)] - 1e6 / native
        best = (1e6 / rust) / (1e6 / rust + max(extra, 0.0))
        now = rate[(client, 1)] / rust
        target = 0.90 if client == "c" else 0.85 * best
        print(f"  {client:10} {1e6 / rate[(client, 1)]:8.1f} {1e6 / rate[(floor, 1)]:8.1f} {extra:7.1f}"
              f" {rate[(floor, 1)] / rust:11.2f}x {best:5.2f}x {now:5.2f}x {now / best:6.2f} {target:6.2f}x"
              f"  {'yes' if now >= target else 'no'}")
    print(f"  (the Rust client: {1e6 / rust:.1f} µs; the native floor: {1e6 / native:.1f} µs)")
# The Node client over a hand-written mqtt.js loop with the same envelope (issue 34: >= 1.5x).
for depth in (1, 64):
    if ("node", depth) in rate and ("mqttjs", depth) in rate:
        print(f"node ÷ mqtt.js loop at {depth} in flight: {rate[('node', depth)] / rate[('mqttjs', depth)]:.2f}x")
PY
