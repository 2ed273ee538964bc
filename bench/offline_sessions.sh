#!/usr/bin/env bash
# Offline sessions against none (issue 49), in the deployments and modes given:
#
#   bench/run offline-sessions [--runs N] [--idle-clients N] [--modes "abandoned vanished"]
#                              [--deployments "process adapter"] [--mqstate PATH]
#
# Per run: two fresh release `mqstate serve` on free loopback ports (with --embedded-adapter
# for "adapter"), `client-bench idle --baseline-url` (the first store gets the idle clients, the
# second none, 5 rounds in turns: docs/benchmarks.md, "Idle clients"), then the first store's
# CPU ticks over the 10 s after the bench and both stores' resident memory. Prints the bench's
# medians and one summary line per run. --mqstate: a release binary to serve the stores
# instead of building target/release/mqstate (the load is always this tree's client-bench).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/lib/net.sh"
runs=3 idle=10000 modes="abandoned vanished" deployments="process adapter" mqstate=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --idle-clients) idle="$2"; shift 2 ;;
        --modes) modes="$2"; shift 2 ;;
        --deployments) deployments="$2"; shift 2 ;;
        --mqstate) mqstate="$2"; shift 2 ;;
        *) echo "offline-sessions: unknown argument $1" >&2; exit 2 ;;
    esac
done
declare -F build >/dev/null || build() { "$@"; }
if [ -z "$mqstate" ]; then
    (cd "$root" && build cargo build --release -q --locked -p mqstate-cli)
    mqstate="${CARGO_TARGET_DIR:-$root/target}/release/mqstate"
fi
(cd "$root" && build cargo build --release -q --locked -p mqstate-bench --bin client-bench)
client="${CARGO_TARGET_DIR:-$root/target}/release/client-bench"
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
serve() { # DEPLOYMENT PORT LOG: starts a store, prints its pid
    local flags=()
    [ "$1" = adapter ] && flags=(--embedded-adapter)
    "$mqstate" serve --listen "127.0.0.1:$2" "${flags[@]}" >"$3" 2>&1 &
    echo $!
}
echo "offline-sessions: $mqstate, $idle idle clients, $runs run(s) each; load $(cut -d' ' -f1-3 /proc/loadavg)"
for deployment in $deployments; do
    for mode in $modes; do
        for run in $(seq 1 "$runs"); do
            pa="$(free_port)"; pb="$(free_port)"
            a="$(serve "$deployment" "$pa" "$work/a.log")"; b="$(serve "$deployment" "$pb" "$work/b.log")"
            pids=("$a" "$b")
            wait_port "$a" "$pa" 10 && wait_port "$b" "$pb" 10 || { cat "$work/a.log" "$work/b.log"; exit 1; }
            out="$work/bench.txt"
            "$client" idle --url "mqtt://127.0.0.1:$pa" --baseline-url "mqtt://127.0.0.1:$pb" \
                --rounds 5 --clients 4 --depth 16 --keys 10000 --duration 4s \
                --idle-clients "$idle" --idle-mode "$mode" --watch-pid "$a" --watch-pid "$b" >"$out" 2>&1 ||
                { cat "$out"; exit 1; }
            t0="$(ticks "$a")"; sleep 10; t1="$(ticks "$a")"
            grep -E "^(  idle clients|ratio|per request|memory)" "$out" | sed 's/^/    /'
            printf '%-8s %-9s run %s: %s; the store idle %s tick(s) in 10 s; RSS %s KiB with them, %s KiB without; load %s\n' \
                "$deployment" "$mode" "$run" \
                "$(sed -n 's/^ratio *\([0-9.]*x the ops\/s, [0-9.]*x the p50\).*/\1/p' "$out")" \
                "$((t1 - t0))" "$(rss "$a")" "$(rss "$b")" "$(cut -d' ' -f1 /proc/loadavg)"
            kill "$a" "$b" 2>/dev/null || true
            wait "$a" "$b" 2>/dev/null || true
            pids=()
        done
    done
done
