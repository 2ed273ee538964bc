//! Build script: lets napi-build set the linker flags a Node addon needs.

fn main() {
    napi_build::setup();
}
