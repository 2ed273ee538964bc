// Names of an earlier release kept for one minor release, each deprecated with a message that
// names its replacement (docs/api.md, "Compatibility"): code written for the old name still
// compiles, with a warning that says what to write instead, and the IDE offers the rewrite.

package mqstate

/**
 * The base class of every mqstate error was `MqstateException` in 0.1 (a sealed class with a
 * nested class per family); it is [MqstateError] since 0.2, with one class per code
 * ([MqstateTimeoutError], [StoreError], …). Removed in 0.3.
 */
@Deprecated(
    "MqstateException is MqstateError since mqstate 0.2 (one class per code: MqstateTimeoutError, " +
        "StoreError, ConnectError, …; CHANGELOG 0.2.0); this alias goes in 0.3",
    ReplaceWith("MqstateError", "mqstate.MqstateError"),
)
typealias MqstateException = MqstateError
