//! The uniffi bindings generator, for generating the Kotlin and Swift sources in library
//! mode (`scripts/lib/suites/kotlin` shows the exact command). Built only with
//! `--features bindgen`.

fn main() {
    uniffi::uniffi_bindgen_main()
}
