//! Generates `mqstate.h` into `OUT_DIR` with cbindgen (the committed copy in `include/` is
//! compared against it by `tests/header.rs`), with the version macros of the workspace
//! version, and gives the shared library its SONAME.
//!
//! The SONAME says which releases are ABI-compatible: `libmqstate.so.MAJOR` from 1.0 on, and
//! `libmqstate.so.0.MINOR` before (in 0.x a minor release may break the ABI, so 0.1 and 0.2
//! must not share a name). `bindings-c/CMakeLists.txt` derives the same name for its links.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");

    let major = env::var("CARGO_PKG_VERSION_MAJOR").expect("CARGO_PKG_VERSION_MAJOR");
    let minor = env::var("CARGO_PKG_VERSION_MINOR").expect("CARGO_PKG_VERSION_MINOR");
    let patch = env::var("CARGO_PKG_VERSION_PATCH").expect("CARGO_PKG_VERSION_PATCH");
    let version = env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let soversion = if major == "0" {
            format!("0.{minor}")
        } else {
            major.clone()
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmqstate.so.{soversion}");
    }

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("bindings-c/cbindgen.toml is valid");
    let after = config.after_includes.take().unwrap_or_default();
    config.after_includes = Some(format!(
        "{after}\n\n\
         /**\n \
         * The version of this header (the mqstate workspace version): compare with\n \
         * `mqstate_version()`, the version of the library a program runs with.\n \
         */\n\
         #define MQSTATE_VERSION_MAJOR {major}\n\
         #define MQSTATE_VERSION_MINOR {minor}\n\
         #define MQSTATE_VERSION_PATCH {patch}\n\
         #define MQSTATE_VERSION_STRING \"{version}\""
    ));
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can generate mqstate.h")
        .write_to_file(out_dir.join("mqstate.h"));
}
