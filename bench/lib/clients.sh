# What the benches that run the clients share (sourced by bench/bindings.sh and
# bench/instructions.sh, which set `root`). Sourcing it sets `CARGO_TARGET_DIR` (default
# target/), makes a scratch folder `work`, kills the processes in `pids` and removes `work`
# on exit, defines a `build` wrapper unless one is exported (e.g. a shared build lock), and
# brings the loopback helpers (scripts/lib/net.sh).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
declare -F build >/dev/null || build() { "$@"; }
. "$root/scripts/lib/net.sh"

# build_wheel [PIP_PACKAGE...]: the Python wheel (release) installed into $work/venv beside
# PIP_PACKAGE....
build_wheel() {
    local maturin="${MATURIN:-$root/.venv/bin/maturin}" # scripts/test's virtualenv, or MATURIN=…
    build "$maturin" build -q --release --manifest-path "$root/bindings-python/Cargo.toml" \
        --out "$work/dist" >/dev/null 2>&1
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install -q --disable-pip-version-check "$work"/dist/*.whl "$@"
}

# build_addon: the Node addon (release) in $work/addon (bindings-node's dev dependencies
# installed first).
build_addon() {
    "$root/scripts/lib/setup/node" >/dev/null
    (cd "$root/bindings-node" && build ./node_modules/.bin/napi build --platform --release \
        --target-dir "$CARGO_TARGET_DIR" --output-dir "$work/addon" --js false \
        --dts "$work/addon/unused.d.ts" >/dev/null)
}

# build_clients [PIP_PACKAGE...]: the CLI (`mqstate serve`, `mqstate bench`), the bench
# crate's `client-bench` (the Rust client's load with watched pids) and the C library
# (cargo, release profile); the Python wheel installed into $work/venv beside
# PIP_PACKAGE...; the C bench client, $work/cbench.
build_clients() {
    build cargo build -q --release -p mqstate-cli -p mqstate-c
    build cargo build -q --release -p mqstate-bench --bin client-bench
    build_wheel "$@"
    cc -O2 -std=c11 -I"$root/bindings-c/include" "$root/bench/bindings/c/bench.c" \
        "$CARGO_TARGET_DIR/release/libmqstate.a" -lpthread -ldl -lm -o "$work/cbench"
}

# start_store: a release `mqstate serve` (embedded broker, store in process) on a free
# loopback port; sets `serve` (its pid, in `pids`) and `url`.
start_store() {
    local port
    port="$(free_port)"
    "$CARGO_TARGET_DIR/release/mqstate" serve --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
    serve=$!
    pids+=("$serve")
    wait_port "$serve" "$port" || { cat "$work/serve.log" >&2; exit 1; }
    url="mqtt://127.0.0.1:$port"
}
