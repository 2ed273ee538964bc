#!/bin/sh
# Installs the library into a temporary prefix with `cmake --install`, then builds the
# examples against the installed copy only: with pkg-config (C99, -Wall -Wextra -Werror), with
# find_package(mqstate) in a CMake project, and the header as C++; runs them against the live
# store at MQSTATE_URL.
#   install_check.sh CMAKE BUILD_DIR SOURCE_DIR CC
set -eu
cmake="$1" build="$2" src="$3" cc="$4"
: "${MQSTATE_URL:?MQSTATE_URL must name a live store}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
# The workspace version and the SONAME's version (0.MINOR before 1.0, MAJOR after: build.rs).
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$src/../Cargo.toml" | head -1)"
major="${version%%.*}" minor="${version#*.}"; minor="${minor%%.*}"
if [ "$major" = 0 ]; then soversion="0.$minor"; else soversion="$major"; fi

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
test -f "$prefix/include/mqstate.h"
test -f "$prefix/lib/libmqstate.a"
test -f "$prefix/lib/libmqstate.so.$version"
test "$(readlink "$prefix/lib/libmqstate.so.$soversion")" = "libmqstate.so.$version"
test -L "$prefix/lib/libmqstate.so"

# pkg-config: the relocatable .pc file of the prefix.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags="$(pkg-config --cflags --libs mqstate)"
case "$flags" in *"$prefix"*) ;; *) echo "pkg-config does not point into the prefix: $flags" >&2; exit 1 ;; esac
for example in quickstart watch lock election telemetry; do
    "$cc" -std=c99 -Wall -Wextra -Werror "$src/examples/$example.c" -o "$work/$example" \
        $flags -lpthread -Wl,-rpath,"$prefix/lib"
    "$work/$example" "$MQSTATE_URL" >"$work/$example.out" || {
        echo "example $example failed:" >&2; cat "$work/$example.out" >&2; exit 1; }
done

# find_package(mqstate) in a CMake project, shared and static.
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(mqstate $major.$minor REQUIRED)
find_package(Threads REQUIRED)
add_executable(quickstart_shared "$src/examples/quickstart.c")
target_link_libraries(quickstart_shared PRIVATE mqstate::mqstate)
add_executable(quickstart_static "$src/examples/quickstart.c")
target_link_libraries(quickstart_static PRIVATE mqstate::mqstate_static)
CMAKE
"$cmake" -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_RPATH="$prefix/lib" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; exit 1; }
"$cmake" --build "$work/consumer/build" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; exit 1; }
"$work/consumer/build/quickstart_shared" "$MQSTATE_URL" >/dev/null
"$work/consumer/build/quickstart_static" "$MQSTATE_URL" >/dev/null

# The header as C++.
if command -v c++ >/dev/null 2>&1; then
    c++ -std=c++11 -Wall -Wextra -Werror "$src/tests/cpp_check.cpp" -o "$work/cpp_check" $flags \
        -lpthread -Wl,-rpath,"$prefix/lib"
    "$work/cpp_check" >/dev/null
else
    echo "no C++ compiler: the C++ check was skipped" >&2
    exit 1
fi
echo "install check: 5 examples via pkg-config, 2 via find_package, C++ header: ok"
