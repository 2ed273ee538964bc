// A build script is required for cargo to consider build dependencies.
fn main() {
    // Run again only when this file changes: without the line cargo compares the newest mtime
    // of the package's files for equality, and the same crate unpacked from a tarball (the
    // sdist, the npm package: other mtimes, same bytes) would rebuild it, and everything above it.
    println!("cargo::rerun-if-changed=build.rs");
}
