// A hit of the client-side cache without a uniffi call. Each uniffi call from Kotlin
// allocates and marshals JNA Structures (its call status, a RustBuffer per byte array): 13-25
// µs even for a call returning a Boolean on the measuring machine, more than 30 times the
// hit itself. `mqstate_uniffi_cache_get` (bindings-uniffi/src/fast_get.rs) is a plain C
// function of integers and byte arrays, which JNA's direct mapping calls in about a
// microsecond; Client.get asks it first.

package mqstate

import com.sun.jna.Native
import java.nio.ByteBuffer
import java.nio.ByteOrder
import kotlin.time.Duration
import kotlin.time.DurationUnit

internal object FastGet {
    /** The function's answers besides a length (fast_get.rs: GO_TO_STORE, HIT_MISSING, BAD_OPTIONS). */
    private const val GO_TO_STORE = -1L
    private const val HIT_MISSING = -2L
    private const val BAD_OPTIONS = -3L

    /** What [get] found. */
    sealed interface Answer {
        /** A hit: the value, or null for a key cached as missing. */
        class Hit(val value: Value?) : Answer

        /** The read must go to the store. */
        object Store : Answer

        /** The options are refused: the read through uniffi throws what a miss would. */
        object Refused : Answer
    }

    /** The largest buffer kept per thread; a larger value gets one of its own, once. */
    private const val KEPT_BYTES = 64 * 1024

    /**
     * False when the native library has no `mqstate_uniffi_cache_get` (one older than this
     * class): then every read goes through uniffi.
     */
    val available: Boolean = try {
        // The library the generated code loads (mqstate.kt's findLibraryName).
        Native.register(
            FastGet::class.java,
            System.getProperty("uniffi.component.mqstate.libraryOverride") ?: "mqstate_uniffi",
        )
        true
    } catch (e: UnsatisfiedLinkError) {
        false
    }

    @JvmStatic
    private external fun mqstate_uniffi_cache_get(
        reader: Long,
        key: ByteArray,
        keyLen: Int,
        timeoutSeconds: Double,
        out: ByteArray,
        outCap: Int,
    ): Long

    private val buffers = ThreadLocal.withInitial { ByteArray(256) }

    /**
     * The cache's answer for [key] in the client of [reader] (`NativeClient.cacheReader()`,
     * not 0), the call's [timeout] checked as a GET checks it.
     */
    fun get(reader: Long, key: ByteArray, timeout: Duration?): Answer {
        val seconds = timeout?.toDouble(DurationUnit.SECONDS) ?: Double.NaN
        var out = buffers.get()
        while (true) {
            val n = mqstate_uniffi_cache_get(reader, key, key.size, seconds, out, out.size)
            when {
                n == GO_TO_STORE -> return Answer.Store
                n == HIT_MISSING -> return Answer.Hit(null)
                n == BAD_OPTIONS -> return Answer.Refused
                n < 0 || n > Int.MAX_VALUE -> return Answer.Store
                n > out.size -> {
                    out = ByteArray(n.toInt())
                    if (n <= KEPT_BYTES) buffers.set(out)
                }
                else -> return Answer.Hit(decode(out, n.toInt()))
            }
        }
    }

    /** `value length (u32 LE) | value | 0, or 1 | wall_ms | counter (u64 LE) | node id`. */
    private fun decode(out: ByteArray, length: Int): Value {
        val b = ByteBuffer.wrap(out, 0, length).order(ByteOrder.LITTLE_ENDIAN)
        val value = ByteArray(b.getInt())
        b.get(value)
        val version = if (b.get().toInt() == 0) {
            null
        } else {
            val wall = b.getLong().toULong()
            val counter = b.getLong().toULong()
            Hlc(wall, counter, String(out, b.position(), length - b.position(), Charsets.UTF_8))
        }
        return Value(value, version)
    }
}
