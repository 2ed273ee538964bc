// Values and errors of the idiomatic Kotlin layer: text views of byte values, clock values
// by text, and the one place the raw layer's error (NativeException) becomes the class of its
// code (Errors.kt, generated from the core's table). No protocol logic lives here.

package mqstate

internal fun String.bytes(): ByteArray = encodeToByteArray()

/** This raw-layer error as the class of its code. */
internal fun NativeException.toMqstateError(): MqstateError = when (this) {
    is NativeException.Failed -> MqstateError.of(code, detail, mayHaveApplied)
}

/** Runs one call of the raw layer, its error thrown as the class of its code. */
internal inline fun <T> mapped(call: () -> T): T =
    try {
        call()
    } catch (e: NativeException) {
        throw e.toMqstateError()
    }

// ---- values ---------------------------------------------------------------------------

/** The value decoded as UTF-8. */
val Value.text: String get() = value.decodeToString()

/** The new value of a set decoded as UTF-8, or null for a deletion. */
val Event.Change.text: String? get() = value?.decodeToString()

/** Parses the text form `{wall_ms}:{counter}:{node_id}` of a clock value ([MalformedError] otherwise). */
fun Hlc.Companion.parse(text: String): Hlc = mapped { nativeParseHlc(text) }

/** Writes this text (UTF-8) as the edited key's new value. */
fun Edit.Companion.set(text: String): Edit = Edit.Set(text.bytes())

/**
 * Checks settings without connecting (named as in [settingsTable], camelCase or snake_case;
 * values as [Client.connect] takes them): the error connecting would give for them, if any.
 */
fun checkSettings(url: String? = null, settings: Map<String, Any> = emptyMap()) {
    mapped { nativeCheckSettings(url, settingList(settings)) }
}

/** Settings by name as the raw layer takes them: text values, in the map's order. */
internal fun settingList(settings: Map<String, Any>): List<Setting> =
    settings.map { (name, value) -> Setting(name, settingText(value)) }

/** A setting's value as the settings' text grammar: a duration in milliseconds, else its text. */
private fun settingText(value: Any): String = when (value) {
    is kotlin.time.Duration -> "${value.inWholeMicroseconds / 1000.0}ms"
    else -> value.toString()
}
