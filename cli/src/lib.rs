//! The library half of `mqstate-cli`: the closed-loop load driver of `mqstate bench`
//! ([`load`]), its CPU-time reader ([`load::cpu`]) and the mqstate client's load it drives
//! ([`load::mix`]), public so that the benchmark programs in `bench/` (the `mqstate-bench`
//! crate: `client-bench` with the project's own load modes, the SDK comparator, the bindings'
//! hand-off floor) drive and measure with the same code as the command. The command line
//! itself is the `mqstate` binary (`src/main.rs`); nothing else is exported.

pub mod load;
