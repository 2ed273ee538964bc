#!/usr/bin/env bash
# End-to-end benchmark: the mqstate client + mqstate-server through Debian's mosquitto,
# against a raw rumqttc request/response pair through the same mosquitto, alternating in
# one run (`client-bench load --compare`). Release builds; results go to stdout.
#
#   bench/e2e.sh [rounds] [seconds]        # default 3 rounds of 5 s per depth
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${1:-3}"
seconds="${2:-5}"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -q -p mqstate-cli
cargo build --release -q -p mqstate-bench --bin client-bench
bin="$target/release/mqstate"
client="$target/release/client-bench"

work="$(mktemp -d)"
. "$root/scripts/lib/net.sh"
port="$(free_port)"
cat > "$work/mosquitto.conf" <<CONF
listener $port 127.0.0.1
allow_anonymous true
set_tcp_nodelay true
persistence false
log_dest none
$( [ "$(id -u)" = 0 ] && echo "user root" )
CONF
mosquitto=/usr/sbin/mosquitto; command -v mosquitto >/dev/null && mosquitto="$(command -v mosquitto)"
"$mosquitto" -c "$work/mosquitto.conf" & mpid=$!
spid=
trap 'kill $spid $mpid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
wait_port "$mpid" "$port" || { echo "e2e: mosquitto did not start" >&2; exit 1; }

echo "mosquitto $("$mosquitto" -h 2>/dev/null | head -1 | awk '{print $3}'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo; echo "## the client alone: mqstate client against an instant responder (no state store yet)"
for depth in 1 64; do
    echo
    "$client" load --url "mqtt://127.0.0.1:$port" --depth "$depth" --duration "${seconds}s" \
        --warmup 1s --compare "$rounds" --target echo 2>/dev/null
done

"$bin" serve --broker "mqtt://127.0.0.1:$port" >"$work/serve.log" 2>&1 & spid=$!
sleep 1
echo; echo "## end to end: mqstate client + mqstate serve --broker (release)"
for depth in 1 64; do
    echo
    "$client" load --url "mqtt://127.0.0.1:$port" --depth "$depth" --duration "${seconds}s" \
        --warmup 1s --compare "$rounds" 2>/dev/null
done
echo
"$client" memory --url "mqtt://127.0.0.1:$port" --keys 100000 2>/dev/null
