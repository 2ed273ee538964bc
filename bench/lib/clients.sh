# Release builds of the clients that the benches run (sourced by bench/bindings.sh and
# bench/instructions.sh, which set `root`, `CARGO_TARGET_DIR` and a `build` wrapper).
#
# build_clients WORK [PIP_PACKAGE...]: the CLI (`mqstate serve`, `mqstate bench`) and the C
# library (cargo, release profile); the Python wheel installed into WORK/venv beside
# PIP_PACKAGE...; the C bench client, WORK/cbench.
build_clients() {
    local work="$1"
    shift
    build cargo build -q --release -p mqstate-cli -p mqstate-c
    local maturin="${MATURIN:-$root/.venv/bin/maturin}" # scripts/test's virtualenv, or MATURIN=…
    build "$maturin" build -q --release --manifest-path "$root/bindings-python/Cargo.toml" \
        --out "$work/dist" >/dev/null 2>&1
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install -q --disable-pip-version-check "$work"/dist/*.whl "$@"
    cc -O2 -std=c11 -I"$root/bindings-c/include" "$root/bindings-c/bench/bench.c" \
        "$CARGO_TARGET_DIR/release/libmqstate.a" -lpthread -ldl -lm -o "$work/cbench"
}
