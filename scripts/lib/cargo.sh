# Where cargo's builds are, for the scripts that use them (sourced by scripts/test-*).
# Needs $root (the repository).

# debug_dir: the folder of the debug builds. scripts/test names the host triple as the build
# target (CARGO_BUILD_TARGET) so that every binding shares one folder of dependencies; then
# cargo writes to target/TRIPLE/debug instead of target/debug.
debug_dir() {
    local target="${CARGO_TARGET_DIR:-$root/target}"
    case "$target" in /*) ;; *) target="$root/$target" ;; esac
    echo "$target${CARGO_BUILD_TARGET:+/$CARGO_BUILD_TARGET}/debug"
}
