# Where cargo's builds are, for the scripts that use them (sourced by scripts/lib/suites/*).
# Needs $root (the repository).

# shared_debug_builds: the settings every debug build of the scripts shares (scripts/test,
# and scripts/codegen, which scripts/package calls), so that they all use one set of
# artifacts; each can be overridden from the environment.
# - A one-shot build of the whole workspace: incremental caches (2.8 GB on a fresh clone)
#   are never reused by it, and full debug info makes every test binary ~180 MB (9.6 GB of
#   target/ in all). Line tables keep file:line in panics and backtraces.
# - Every debug build names the host triple as its target, as `napi build` and npm's
#   from-source build always do: then they all share one folder of compiled dependencies
#   (target/TRIPLE/debug) instead of cargo building them once more for target/debug. With
#   the one feature set (scripts/lib/check-feature-sets), each binding compiles only its own
#   crates.
# - The workspace's own crates are compiled by clippy-driver (scripts/lib/lint-rustc, as
#   cargo's RUSTC_WORKSPACE_WRAPPER) with warnings denied: one build compiles and lints them
#   (the suite's clippy step), and every debug build of the run uses the same compiler, so
#   none compiles them again for want of it. MQSTATE_LINT=0 builds without it.
shared_debug_builds() {
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
    if [ "${MQSTATE_LINT:-1}" != 0 ] && [ -z "${RUSTC_WORKSPACE_WRAPPER:-}" ]; then
        local driver
        driver="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)"
        if [ -n "$driver" ]; then
            export MQSTATE_CLIPPY_DRIVER="$driver"
            export RUSTC_WORKSPACE_WRAPPER="$root/scripts/lib/lint-rustc"
        fi
    fi
    export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
    export CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
}

# debug_dir: the folder of the debug builds. scripts/test names the host triple as the build
# target (CARGO_BUILD_TARGET) so that every binding shares one folder of dependencies; then
# cargo writes to target/TRIPLE/debug instead of target/debug.
debug_dir() {
    local target="${CARGO_TARGET_DIR:-$root/target}"
    case "$target" in /*) ;; *) target="$root/$target" ;; esac
    echo "$target${CARGO_BUILD_TARGET:+/$CARGO_BUILD_TARGET}/debug"
}

# The Rust suite's cargo arguments (scripts/test, the adapter suite, workspace_tests): every
# target of the workspace but the C and uniffi bindings (their suites build and test them)
# and the forks (upstream's code: built as dependencies, their own tests are upstream's), with
# the server's `testing` feature (LocalStore, faults on demand).
workspace_test_args=(--workspace --exclude mqstate-c --exclude mqstate-uniffi --exclude mqstate-rumqttc
    --exclude mqstate-mqtt5 --all-targets --features mqstate-server/testing --locked)

# workspace_tests KIND:NAME…: prints "KIND:NAME EXECUTABLE" for each test executable that
# scripts/test's `cargo test --workspace` build made: KIND `lib` for a crate's unit tests
# (NAME the library's name), `test` for a tests/NAME.rs file. A later step runs them again
# (another environment, another mode) without compiling them a second time: `cargo test -p
# …` would resolve other features than the workspace build. Prints nothing for what was not
# built.
workspace_tests() {
    cargo test "${workspace_test_args[@]}" --no-run --message-format=json 2>/dev/null |
        python3 -c '
import json, sys
wanted = set(sys.argv[1:])
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    target = msg.get("target") or {}
    kind = ":".join(target.get("kind") or [])
    spec = kind + ":" + str(target.get("name"))
    if (msg.get("reason") == "compiler-artifact" and msg.get("executable")
            and (msg.get("profile") or {}).get("test") and spec in wanted):
        print(spec, msg["executable"])
' "$@"
}
