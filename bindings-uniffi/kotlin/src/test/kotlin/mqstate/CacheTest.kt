// The client-side cache through the Kotlin API (the `cache` settings, GetOptions.bypassCache,
// Client.cacheStats), against mqstate.testing.LocalStore and its faults: repeated gets count
// hits after one miss, another client's SET arrives by notification without a new miss,
// bypassCache reads the store and counts neither way, a cut, a restart and a lost session
// each invalidate what was cached, and cacheStats() is null while the cache is off. Every
// wait is a poll with a deadline (BOUND), every test bounded as a whole (withTimeout): a
// broken cache fails a test instead of hanging it.
package mqstate

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mqstate.testing.LocalStore
import mqstate.testing.LocalStoreExtension
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith

/** How long anything that should happen may take (a busy 2-core machine included). */
private val BOUND = 30.seconds

/** Each test's own limit, well past the waits inside it. */
private val TEST = 120.seconds

/** The counters of a client whose cache must be on. */
private fun Client.stats(): CacheStats = checkNotNull(cacheStats()) { "the cache is off" }

/** Polls [check] until it holds; fails naming [what] after [BOUND]. */
private suspend fun until(what: String, check: suspend () -> Boolean) {
    val deadline = TimeSource.Monotonic.markNow() + BOUND
    while (!check()) {
        assertTrue(deadline.hasNotPassedNow(), "not within $BOUND: $what")
        delay(10)
    }
}

/** What [client] reads for [key] as text, or null when missing or when the read failed. */
private suspend fun readOrNull(client: Client, key: String): String? =
    runCatching { client.get(key, GetOptions(timeout = 2.seconds))?.text }.getOrNull()

@ExtendWith(LocalStoreExtension::class)
class CacheTest {
    @Test
    fun `repeated gets hit, and another client's SET arrives without a new miss`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            Client.connect(store.url).use { writer ->
                Client.connect(store.url, "cache" to true).use { reader ->
                    writer.set("asset:1", "pump")
                    assertEquals(CacheStats(0u, 0u, 0u, 0u, 0u, 0u), reader.stats())
                    assertEquals("pump", reader.get("asset:1")?.text)
                    assertEquals(
                        CacheStats(hits = 0u, misses = 1u, evictions = 0u, invalidations = 0u, entries = 1u, bytes = "asset:1pump".length.toULong()),
                        reader.stats(),
                    )
                    repeat(20) { assertEquals("pump", reader.get("asset:1")?.text) }
                    reader.stats().let { assertEquals(20uL to 1uL, it.hits to it.misses) }
                    assertNull(reader.get("missing"))
                    assertNull(reader.get("missing"), "a missing key is cached too")
                    reader.stats().let { assertEquals(Triple(21uL, 2uL, 2uL), Triple(it.hits, it.misses, it.entries)) }

                    writer.set("asset:1", "valve")
                    until("the reader reads the new value") { reader.get("asset:1")?.text == "valve" }
                    val after = reader.stats()
                    assertEquals(2uL, after.misses, "the change came by notification, not by a read of the store: $after")
                    assertTrue(after.invalidations >= 1uL, "$after")
                    assertTrue(after.hits > 21uL, "$after")
                }
            }
        }
    }

    @Test
    fun `bypassCache reads the store and counts neither a hit nor a miss`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            Client.connect(store.url, "cache" to "true").use { reader ->
                reader.set("k", "v")
                assertEquals("v", reader.get("k")?.text)
                val before = reader.stats()
                assertEquals(0uL to 1uL, before.hits to before.misses)
                // The next GET the store sees fails: a read the cache answers never gets there,
                // one that bypasses it does.
                store.failNext(1, "quota_exceeded", command = "GET")
                assertEquals("v", reader.get("k")?.text, "answered from the cache")
                assertThrows<QuotaExceededError> { reader.get("k", GetOptions(bypassCache = true)) }
                assertEquals("v", reader.get("k", GetOptions(bypassCache = true))?.text)
                assertEquals("v", reader.get("k", GetOptions(bypassCache = false))?.text)
                val after = reader.stats()
                assertEquals(before.hits + 2uL to before.misses, after.hits to after.misses, "$after")
            }
        }
    }

    @Test
    fun `a hit answers the store's bytes and version, small and past the reused buffer`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            Client.connect(store.url, "cache" to true).use { reader ->
                Client.connect(store.url).use { writer ->
                    // A hit crosses from the native library in a buffer of 256 bytes kept per
                    // thread, or a larger one made for it (FastGet): sizes on both sides.
                    for (size in listOf(0, 1, 200, 256, 300, 70_000)) {
                        val key = "size:$size"
                        val bytes = ByteArray(size) { (it % 251).toByte() }
                        val version = writer.set(key, bytes).version
                        val fromStore = checkNotNull(writer.get(key))
                        val before = reader.stats()
                        val miss = checkNotNull(reader.get(key))
                        val hit = checkNotNull(reader.get(key))
                        val after = reader.stats()
                        assertEquals(before.misses + 1uL to before.hits + 1uL, after.misses to after.hits, "size $size: $after")
                        for ((what, v) in listOf("miss" to miss, "hit" to hit)) {
                            assertTrue(bytes.contentEquals(v.value), "size $size: the $what's bytes")
                            assertEquals(version, v.version, "size $size: the $what's version")
                            assertEquals(fromStore.version, v.version)
                        }
                    }
                    assertNull(reader.get("never-set"))
                    assertNull(reader.get("never-set"), "a key cached as missing is a hit of null")
                    // A hit refuses the timeout a miss refuses, and counts nothing.
                    val before = reader.stats()
                    assertThrows<InvalidArgumentError> { reader.get("size:1", GetOptions(timeout = (-1).seconds)) }
                    assertEquals(before, reader.stats())
                    assertEquals(1, reader.get("size:1", GetOptions(timeout = 2.seconds))?.value?.size)
                }
            }
        }
    }

    /**
     * Caches `key` = "old" in [reader], applies [fault], writes "new" from [writer] as soon as
     * it can, and checks that [reader] reads "new", that `invalidations` rose (the entry went)
     * and that `misses` rose (it was read from the store again).
     */
    private suspend fun faultInvalidates(store: LocalStore, reader: Client, writer: Client, fault: String) {
        val key = "$fault-key"
        val persisted = SetOptions(persist = true)
        writer.set(key, "old", persisted)
        assertEquals("old", reader.get(key)?.text)
        assertEquals("old", reader.get(key)?.text)
        val connections = reader.linkInfo().connections
        val before = reader.stats()
        assertTrue(before.hits >= 1uL && before.entries >= 1uL, "$fault: cached: $before")
        if (fault == "restart") {
            store.restart(keepData = true)
        } else {
            store.pause(200.milliseconds)
            store.cutConnections()
        }
        // Written as soon as the writer is back: before, or while, the reader comes back.
        until("$fault: the writer writes again") {
            runCatching { writer.set(key, "new", SetOptions(persist = true, timeout = 2.seconds)) }.isSuccess
        }
        until("$fault: the reader reconnects") { reader.connected && reader.linkInfo().connections > connections }
        until("$fault: the reader reads the new value") { readOrNull(reader, key) == "new" }
        val after = reader.stats()
        assertTrue(after.invalidations > before.invalidations, "$fault: the entry was invalidated: $before → $after")
        assertTrue(after.misses > before.misses, "$fault: read from the store again: $before → $after")
    }

    @Test
    fun `a cut, a restart and a lost session each invalidate what was cached`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST * 3) {
            Client.connect(store.url).use { writer ->
                Client.connect(store.url, "cache" to true).use { reader ->
                    faultInvalidates(store, reader, writer, "cut")
                    faultInvalidates(store, reader, writer, "restart")
                    assertTrue(reader.linkInfo().sessions >= 2uL, "the restart lost the session")
                }
                // A client whose MQTT session ends with each connection: the cut loses it.
                Client.connect(store.url, "cache" to true, "sessionExpiry" to 0.seconds).use { noSession ->
                    val sessions = noSession.linkInfo().sessions
                    faultInvalidates(store, noSession, writer, "lost session")
                    assertTrue(noSession.linkInfo().sessions > sessions, "the cut lost the session")
                }
            }
        }
    }

    @Test
    fun `cacheStats is null while the cache is off, and its settings turn it on`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            Client.connect(store.url).use { plain ->
                plain.set("k", "v")
                plain.get("k")
                plain.get("k")
                assertNull(plain.cacheStats())
            }
            Client.connect(store.url, "cache" to false).use { assertNull(it.cacheStats()) }
            // Every cache… setting turns it on; cacheKeys narrows what is counted.
            val narrow = mapOf("cacheKeys" to "asset:*", "cacheMaxEntries" to 10, "cacheMaxBytes" to 4096, "cacheMaxStaleness" to 2.seconds)
            Client.connect(store.url, narrow).use { client ->
                assertEquals("v", client.get("k")?.text)
                assertEquals(CacheStats(0u, 0u, 0u, 0u, 0u, 0u), client.stats(), "k is not covered")
            }
            assertThrows<InvalidArgumentError> { Client.connect(store.url, "cacheMaxEntries" to 0) }
            assertThrows<InvalidArgumentError> { Client.connect(store.url, "cache" to "maybe") }
        }
    }
}
