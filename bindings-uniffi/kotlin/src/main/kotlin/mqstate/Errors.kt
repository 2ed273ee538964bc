// Generated from the core's error table (mqstate::ERROR_TABLE, also in core/vocabulary.json) by
// the Rust test `kotlin_errors::the_committed_classes_are_current` of mqstate-uniffi: do not
// edit. `MQSTATE_BLESS=1 scripts/lib/suites/kotlin` rewrites it.

package mqstate

/**
 * Every error of mqstate. [code] is the stable code of the core's error table ([errorTable]:
 * the same codes as Python's `e.code`, JavaScript's `err.code` and the C status names); the
 * class is the code's own ([InvalidArgumentError], [FencingTokenLowerVersionError], …), under
 * the families [StoreError], [ClockError] and [ConnectError] — the same class names in every
 * language. An instance of this class itself carries a code this version does not know.
 */
open class MqstateError(
    /** The stable code (`"timeout"`, `"fencing_token_required"`, …). */
    val code: String,
    /** What went wrong, for people (for a store error: the service's exact text). */
    val detail: String,
    /** Whether the request had been sent: the service may have applied it. */
    val mayHaveApplied: Boolean = false,
    cause: Throwable? = null,
) : Exception(detail, cause) {
    companion object {
        /** The error of [code], as an instance of the code's class. */
        fun of(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null): MqstateError =
            when (code) {
                "invalid_argument" -> InvalidArgumentError(detail, mayHaveApplied, cause)
                "malformed" -> MalformedError(detail, mayHaveApplied, cause)
                "clock_drift" -> ClockDriftError(detail, mayHaveApplied, cause)
                "clock_overflow" -> ClockOverflowError(detail, mayHaveApplied, cause)
                "rpc_error" -> RpcError(detail, mayHaveApplied, cause)
                "timeout" -> MqstateTimeoutError(detail, mayHaveApplied, cause)
                "connection_lost" -> ConnectionLostError(detail, mayHaveApplied, cause)
                "connect_failed" -> ConnectFailedError(detail, mayHaveApplied, cause)
                "closed" -> ClosedError(detail, mayHaveApplied, cause)
                "not_held" -> NotHeldError(detail, mayHaveApplied, cause)
                "cancelled" -> CallCancelledError(detail, mayHaveApplied, cause)
                "unsupported" -> UnsupportedError(detail, mayHaveApplied, cause)
                "callback" -> CallbackError(detail, mayHaveApplied, cause)
                "connect_refused" -> ConnectRefusedError(detail, mayHaveApplied, cause)
                "connect_timeout" -> ConnectTimeoutError(detail, mayHaveApplied, cause)
                "connect_unauthorized" -> ConnectUnauthorizedError(detail, mayHaveApplied, cause)
                "tls" -> TlsError(detail, mayHaveApplied, cause)
                "no_store" -> NoStoreError(detail, mayHaveApplied, cause)
                "timestamp_skew" -> TimestampSkewError(detail, mayHaveApplied, cause)
                "fencing_token_required" -> FencingTokenRequiredError(detail, mayHaveApplied, cause)
                "fencing_token_skew" -> FencingTokenSkewError(detail, mayHaveApplied, cause)
                "fencing_token_lower_version" -> FencingTokenLowerVersionError(detail, mayHaveApplied, cause)
                "quota_exceeded" -> QuotaExceededError(detail, mayHaveApplied, cause)
                "syntax_error" -> StoreSyntaxError(detail, mayHaveApplied, cause)
                "not_authorized" -> NotAuthorizedError(detail, mayHaveApplied, cause)
                "unknown_command" -> UnknownCommandError(detail, mayHaveApplied, cause)
                "wrong_number_of_arguments" -> WrongNumberOfArgumentsError(detail, mayHaveApplied, cause)
                "timestamp_missing" -> TimestampMissingError(detail, mayHaveApplied, cause)
                "timestamp_malformed" -> TimestampMalformedError(detail, mayHaveApplied, cause)
                "key_length_zero" -> KeyLengthZeroError(detail, mayHaveApplied, cause)
                "unknown_store_error" -> UnknownStoreError(detail, mayHaveApplied, cause)
                else -> MqstateError(code, detail, mayHaveApplied, cause)
            }
    }
}

/** The family of `timestamp_skew`, `fencing_token_required`, `fencing_token_skew`, `fencing_token_lower_version`, `quota_exceeded`, `syntax_error`, `not_authorized`, `unknown_command`, `wrong_number_of_arguments`, `timestamp_missing`, `timestamp_malformed`, `key_length_zero`, `unknown_store_error`. */
open class StoreError(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError(code, detail, mayHaveApplied, cause)

/** The family of `clock_drift`, `clock_overflow`. */
open class ClockError(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError(code, detail, mayHaveApplied, cause)

/** The family of `connect_failed`, `connect_refused`, `connect_timeout`, `connect_unauthorized`, `tls`. */
open class ConnectError(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError(code, detail, mayHaveApplied, cause)

/** `invalid_argument` (1): an argument the protocol cannot carry; nothing was sent. */
class InvalidArgumentError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("invalid_argument", detail, mayHaveApplied, cause)

/** `malformed` (2): bytes from the wire do not follow the protocol. */
class MalformedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("malformed", detail, mayHaveApplied, cause)

/** `clock_drift` (3): a clock would move too far ahead of the local time. */
class ClockDriftError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ClockError("clock_drift", detail, mayHaveApplied, cause)

/** `clock_overflow` (4): a clock counter would overflow. */
class ClockOverflowError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ClockError("clock_overflow", detail, mayHaveApplied, cause)

/** `rpc_error` (5): the service's RPC layer refused the request (see the status and details). */
class RpcError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("rpc_error", detail, mayHaveApplied, cause)

/** `timeout` (6): no answer in time; a sent request may have been applied. */
class MqstateTimeoutError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("timeout", detail, mayHaveApplied, cause)

/** `connection_lost` (7): the connection was lost or is not up; a sent request may have been applied. */
class ConnectionLostError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("connection_lost", detail, mayHaveApplied, cause)

/** `connect_failed` (8): connecting to the broker failed. */
class ConnectFailedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ConnectError("connect_failed", detail, mayHaveApplied, cause)

/** `closed` (9): the client or the object is closed. */
class ClosedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("closed", detail, mayHaveApplied, cause)

/** `not_held` (10): the lock (or leadership) is not held. */
class NotHeldError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("not_held", detail, mayHaveApplied, cause)

/** `cancelled` (11): the call was cancelled by its caller. */
class CallCancelledError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("cancelled", detail, mayHaveApplied, cause)

/** `unsupported` (12): the operation is not supported here. */
class UnsupportedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("unsupported", detail, mayHaveApplied, cause)

/** `callback` (13): a user callback failed; its own error is attached. */
class CallbackError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("callback", detail, mayHaveApplied, cause)

/** `connect_refused` (14): the connection was refused; retry later. */
class ConnectRefusedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ConnectError("connect_refused", detail, mayHaveApplied, cause)

/** `connect_timeout` (15): the connection attempt timed out; retry later. */
class ConnectTimeoutError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ConnectError("connect_timeout", detail, mayHaveApplied, cause)

/** `connect_unauthorized` (16): the broker refused the credentials; fix them. */
class ConnectUnauthorizedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ConnectError("connect_unauthorized", detail, mayHaveApplied, cause)

/** `tls` (17): the TLS handshake failed; fix the TLS settings. */
class TlsError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    ConnectError("tls", detail, mayHaveApplied, cause)

/** `no_store` (18): the broker says no state store is subscribed to the request topic; the request was not applied. */
class NoStoreError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    MqstateError("no_store", detail, mayHaveApplied, cause)

/** `timestamp_skew` (100): the state store refused the request (the message is the service's exact text). */
class TimestampSkewError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("timestamp_skew", detail, mayHaveApplied, cause)

/** `fencing_token_required` (101): the state store refused the request (the message is the service's exact text). */
class FencingTokenRequiredError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("fencing_token_required", detail, mayHaveApplied, cause)

/** `fencing_token_skew` (102): the state store refused the request (the message is the service's exact text). */
class FencingTokenSkewError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("fencing_token_skew", detail, mayHaveApplied, cause)

/** `fencing_token_lower_version` (103): the state store refused the request (the message is the service's exact text). */
class FencingTokenLowerVersionError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("fencing_token_lower_version", detail, mayHaveApplied, cause)

/** `quota_exceeded` (104): the state store refused the request (the message is the service's exact text). */
class QuotaExceededError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("quota_exceeded", detail, mayHaveApplied, cause)

/** `syntax_error` (105): the state store refused the request (the message is the service's exact text). */
class StoreSyntaxError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("syntax_error", detail, mayHaveApplied, cause)

/** `not_authorized` (106): the state store refused the request (the message is the service's exact text). */
class NotAuthorizedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("not_authorized", detail, mayHaveApplied, cause)

/** `unknown_command` (107): the state store refused the request (the message is the service's exact text). */
class UnknownCommandError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("unknown_command", detail, mayHaveApplied, cause)

/** `wrong_number_of_arguments` (108): the state store refused the request (the message is the service's exact text). */
class WrongNumberOfArgumentsError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("wrong_number_of_arguments", detail, mayHaveApplied, cause)

/** `timestamp_missing` (109): the state store refused the request (the message is the service's exact text). */
class TimestampMissingError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("timestamp_missing", detail, mayHaveApplied, cause)

/** `timestamp_malformed` (110): the state store refused the request (the message is the service's exact text). */
class TimestampMalformedError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("timestamp_malformed", detail, mayHaveApplied, cause)

/** `key_length_zero` (111): the state store refused the request (the message is the service's exact text). */
class KeyLengthZeroError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("key_length_zero", detail, mayHaveApplied, cause)

/** `unknown_store_error` (112): a store error text this version does not know (the text is kept). */
class UnknownStoreError(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    StoreError("unknown_store_error", detail, mayHaveApplied, cause)
