#!/usr/bin/env bash
# The client-side cache in every language, in one run (docs/benchmarks.md, "Client-side
# cache"): a cached `get` against an uncached one at one request in flight, 1,000 keys of
# 16-byte values read in turn, warm, through one release `mqstate serve` (embedded broker):
#
#   bench/run cached [SECONDS] [ROUNDS] [LANGUAGES]
#
# LANGUAGES (default "rust python node c kotlin"): rust is `client-bench load --cache-compare`;
# python, node, c and kotlin are bench/bindings/{python/cached.py, node/cached.mjs,
# c/cached.c, kotlin/CachedBench.kt}, each timing its uncached and cached client in turns,
# ROUNDS (default 3) rounds of SECONDS (default 2) each, and printing the medians and their
# ratio. Release builds of everything: the CLI, the C library, the Python wheel, the Node
# addon and the JVM library. A shell function `build`, if exported, wraps every compile.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${1:-2}" rounds="${2:-3}" languages="${3:-rust python node c kotlin}"
. "$root/bench/lib/clients.sh"

has() { case " $languages " in *" $1 "*) true ;; *) false ;; esac; }
echo "cached bench: release builds ($languages)"
build_clients
cc -O2 -std=c11 -I"$root/bindings-c/include" "$root/bench/bindings/c/cached.c" \
    "$CARGO_TARGET_DIR/release/libmqstate.a" -lpthread -ldl -lm -o "$work/cached"
if has node; then
    build_addon
fi
if has kotlin; then
    "$root/scripts/lib/setup/kotlin" >/dev/null
    build cargo build -q --release --locked -p mqstate-uniffi
    # The generated Kotlin API (not committed, so never trusted when present): from the debug
    # library, as the suite makes it.
    build scripts/codegen uniffi >"$work/codegen.log" 2>&1 || { cat "$work/codegen.log"; exit 1; }
    (cd bindings-uniffi/kotlin && build mvn -q -B -Dstyle.color=never test-compile \
        "-Dmqstate.lib.dir=$CARGO_TARGET_DIR/release" >"$work/mvn.log" 2>&1) || { cat "$work/mvn.log"; exit 1; }
fi

start_store
echo "store: $url (pid $serve); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for who in $languages; do
    echo
    echo "== $who"
    case "$who" in
    rust) "$CARGO_TARGET_DIR/release/client-bench" load --url "$url" --cache-compare "$rounds" \
            --clients 1 --depth 1 --set-percent 0 --keys 1000 --duration "${seconds}s" \
            --warmup 500ms --watch-pid "$serve" 2>&1 | grep -vE '^  mqstate +[0-9.]+ s ' ;;
    python) "$work/venv/bin/python" bench/bindings/python/cached.py "$url" "$seconds" "$rounds" ;;
    node) NAPI_RS_NATIVE_LIBRARY_PATH="$(ls "$work"/addon/mqstate.*.node)" \
            node bench/bindings/node/cached.mjs "$url" "$seconds" "$rounds" ;;
    c) "$work/cached" "$url" "$seconds" "$rounds" ;;
    kotlin) (cd bindings-uniffi/kotlin && mvn -q -B -o -Dstyle.color=never exec:java \
            -Dexec.mainClass=bench.CachedBenchKt -Dexec.classpathScope=test \
            "-Dexec.args=$url $seconds $rounds" "-Djna.library.path=$CARGO_TARGET_DIR/release") ;;
    *) echo "cached bench: no language '$who' (rust python node c kotlin)" >&2; exit 2 ;;
    esac
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
