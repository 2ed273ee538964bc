//! The library half of `mqstate-cli`: the closed-loop load driver of `mqstate bench`
//! ([`load`]) and its CPU-time reader ([`load::cpu`]), public so that the benchmark programs
//! in `bench/` (the `mqstate-bench` crate: the SDK comparator, the bindings' hand-off floor)
//! drive and measure with the same code as the command. The command line itself is the
//! `mqstate` binary (`src/main.rs`); nothing else is exported.

pub mod load;
