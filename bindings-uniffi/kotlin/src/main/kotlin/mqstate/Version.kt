// The version of the mqstate Kotlin package: one version for every mqstate artifact (the Rust
// workspace's, Cargo.toml). scripts/package checks that it matches before building anything.

package mqstate

/** Facts about this mqstate package. */
object Mqstate {
    /** The package's version, e.g. `0.2.0` (the same in every mqstate language). */
    const val VERSION: String = "0.2.0"
}
