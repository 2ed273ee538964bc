//! The `mqstate` command line.

fn main() {
    println!("mqstate {}", env!("CARGO_PKG_VERSION"));
}
