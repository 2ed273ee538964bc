// The client-side cache through the Kotlin API (the `cache` settings, GetOptions.bypassCache,
// Client.cacheStats), against mqstate.testing.LocalStore and its faults: repeated gets count
// hits after one miss, another client's SET arrives by notification without a new miss,
// bypassCache reads the store and counts neither way, a cut, a restart and a lost session
// each invalidate what was cached, and cacheStats() is null while the cache is off. Every
// wait is a poll with a deadline (BOUND), every test bounded as a whole (withTimeout): a
// broken cache fails a test instead of hanging it.
package mqstate

import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
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

/**
 * A lease bound no busy machine's renewal misses, for the tests that count hits and misses
 * exactly (a lease that failed would send a read to the store they do not count on); the
 * lease's own tests use short bounds ([FRESHNESS]).
 */
private val STEADY = 30.seconds

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

/** Every counter zero. */
private val ZERO = CacheStats(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u)

/**
 * (hits, misses) as they would be with the lease always held: a read the lease sent to the
 * store (`leaseMisses`, before the first renewal came back) counted as the hit it would have
 * been. Counts that depend on how fast the first renewal travels would be flaky.
 */
private fun CacheStats.settled(): Pair<ULong, ULong> = hits + leaseMisses to misses - leaseMisses

/** Reads [key] until a read is answered from the cache (bounded): the lease is proven. */
private suspend fun untilHit(client: Client, key: String) {
    val deadline = TimeSource.Monotonic.markNow() + BOUND
    while (true) {
        val before = client.stats().hits
        readOrNull(client, key)
        if (client.stats().hits > before) return
        assertTrue(deadline.hasNotPassedNow(), "$key never hit: ${client.stats()}")
        delay(2)
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
                Client.connect(store.url, "cache" to true, "cacheFreshness" to STEADY).use { reader ->
                    writer.set("asset:1", "pump")
                    assertEquals(ZERO, reader.stats())
                    assertEquals("pump", reader.get("asset:1")?.text)
                    reader.stats().let {
                        assertEquals(Triple(0uL to 1uL, 1uL, "asset:1pump".length.toULong()), Triple(it.settled(), it.entries, it.bytes), "$it")
                        assertEquals(0uL to 0uL, it.evictions to it.invalidations, "$it")
                        assertTrue(it.leaseRenewals >= 1uL, "a renewal proves the lease: $it")
                    }
                    repeat(20) { assertEquals("pump", reader.get("asset:1")?.text) }
                    reader.stats().let { assertEquals(20uL to 1uL, it.settled(), "$it") }
                    assertNull(reader.get("missing"))
                    assertNull(reader.get("missing"), "a missing key is cached too")
                    reader.stats().let { assertEquals((21uL to 2uL) to 2uL, it.settled() to it.entries, "$it") }

                    writer.set("asset:1", "valve")
                    until("the reader reads the new value") { reader.get("asset:1")?.text == "valve" }
                    val after = reader.stats()
                    assertEquals(2uL, after.settled().second, "the change came by notification, not by a read of the store: $after")
                    assertTrue(after.invalidations >= 1uL, "$after")
                    assertTrue(after.settled().first > 21uL, "the new value was read from the cache: $after")
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
                untilHit(reader, "k") // the lease is proven: the next read is answered from memory
                val before = reader.stats()
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
            Client.connect(store.url, "cache" to true, "cacheFreshness" to STEADY).use { reader ->
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
                        assertEquals(before.settled().second + 1uL to before.settled().first + 1uL, after.settled().second to after.settled().first, "size $size: $after")
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
        untilHit(reader, key)
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
                Client.connect(store.url, "cache" to true, "cacheFreshness" to STEADY).use { reader ->
                    faultInvalidates(store, reader, writer, "cut")
                    faultInvalidates(store, reader, writer, "restart")
                    assertTrue(reader.linkInfo().sessions >= 2uL, "the restart lost the session")
                }
                // A client whose MQTT session ends with each connection: the cut loses it.
                Client.connect(store.url, "cache" to true, "cacheFreshness" to STEADY, "sessionExpiry" to 0.seconds).use { noSession ->
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
                assertEquals(ZERO, client.stats(), "k is not covered")
            }
            assertThrows<InvalidArgumentError> { Client.connect(store.url, "cacheMaxEntries" to 0) }
            assertThrows<InvalidArgumentError> { Client.connect(store.url, "cache" to "maybe") }
            val tiny = assertThrows<InvalidArgumentError> { Client.connect(store.url, "cacheFreshness" to 5.milliseconds) }
            assertTrue(tiny.message!!.contains("cache_freshness"), "${tiny.message}")
            Client.connect(store.url, "cacheFreshness" to 300.milliseconds).use { assertEquals(ZERO, it.stats(), "cacheFreshness turns the cache on") }
        }
    }

    @Test
    fun `a loop of hits lets a coroutine beside it run on one thread`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            // A bound no busy machine's renewal misses: every read of the loop is a hit.
            withWarmReader(store, 30.seconds) { reader, _ ->
                var ran = false
                val beside = launch { ran = true }
                val before = reader.stats()
                var reads = 0
                // runBlocking runs both on this one thread: without a yield now and then the
                // coroutine beside would never run (a hit does not suspend).
                while (!ran) {
                    assertEquals("old", reader.get("k")?.text)
                    reads++
                    assertTrue(reads <= CACHE_HIT_YIELD_EVERY, "$reads hits and the coroutine beside never ran")
                }
                beside.join()
                val s = reader.stats()
                assertEquals(before.hits + reads.toULong(), s.hits, "every read of the loop was a hit: $s")
            }
        }
    }

    /** A reader of "k" ("old", cached, the lease proven, with the bound [freshness]) and a writer. */
    private suspend fun <T> withWarmReader(store: LocalStore, freshness: Duration, body: suspend (Client, Client) -> T): T =
        Client.connect(store.url, "cache" to true, "cacheFreshness" to freshness).use { reader ->
            Client.connect(store.url).use { writer ->
                writer.set("k", "old")
                untilHit(reader, "k")
                body(reader, writer)
            }
        }

    /**
     * Writes "new" to "k" with [writer] and reads it from [reader] until it reads "new": every
     * read that answers "old" must have begun less than [freshness] after the write was
     * acknowledged. Returns the longest such lag.
     */
    private suspend fun lagOf(reader: Client, writer: Client, freshness: Duration): Duration {
        writer.set("k", "new")
        val acknowledged = TimeSource.Monotonic.markNow()
        var lag = Duration.ZERO
        while (true) {
            val began = acknowledged.elapsedNow()
            when (val got = reader.get("k")?.text) {
                "new" -> return lag
                "old" -> {
                    lag = maxOf(lag, began)
                    assertTrue(began < freshness, "a cached read lagged $began behind the store (bound $freshness): ${reader.stats()}")
                }
                else -> throw AssertionError("k read $got")
            }
            assertTrue(acknowledged.elapsedNow() < BOUND, "never read the new value")
            delay(2)
        }
    }

    /** Reads "k" (whatever it answers) until the reader's lease has failed (bounded). */
    private suspend fun untilLeaseFailed(reader: Client) {
        until("the lease fails: ${reader.stats()}") {
            reader.stats().leaseFailures > 0uL || run { readOrNull(reader, "k"); reader.stats().leaseFailures > 0uL }
        }
    }

    @Test
    fun `a silent notification path is noticed within the bound`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            withWarmReader(store, FRESHNESS) { reader, writer ->
                // Everything the store publishes is lost for 2 s: the write's notification, and
                // the lease's renewals.
                store.dropNotifications(2.seconds)
                lagOf(reader, writer, FRESHNESS)
                assertTrue(store.droppedNotifications() >= 1)
                untilLeaseFailed(reader)
                assertTrue(reader.stats().leaseMisses >= 1uL, "reads went to the store meanwhile: ${reader.stats()}")
                // Once the path is back, the key is registered anew and others' writes arrive again.
                delay(2.seconds) // the mute's span: this test is about it passing
                untilHit(reader, "k")
                writer.set("k", "newer")
                until("the reader reads \"newer\"") { readOrNull(reader, "k") == "newer" }
                untilHit(reader, "k")
            }
        }
    }

    @Test
    fun `a store that lost its registrations is noticed within the bound`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            withWarmReader(store, FRESHNESS) { reader, writer ->
                // The store restarted behind its broker: connections up, registrations gone.
                assertTrue(store.forgetRegistrations() >= 2, "k and the canary")
                lagOf(reader, writer, FRESHNESS)
                untilLeaseFailed(reader)
                // Registered anew on the next reads: changes come by notification again.
                untilHit(reader, "k")
                val misses = reader.stats().misses
                writer.set("k", "newer")
                until("the reader reads \"newer\"") { readOrNull(reader, "k") == "newer" }
                untilHit(reader, "k")
                val s = reader.stats()
                assertTrue(s.misses - misses <= s.leaseMisses + 1uL, "the change came by notification, not by reading the store each time: $s")
            }
        }
    }

    @Test
    fun `an idle cache sends nothing, and renews when read again`(store: LocalStore): Unit = runBlocking {
        withTimeout(TEST) {
            val freshness = 200.milliseconds
            withWarmReader(store, freshness) { reader, _ ->
                delay(freshness) // this test is about time passing with nothing read
                val idle = reader.stats()
                delay(freshness * 5)
                val after = reader.stats()
                assertEquals(idle.leaseRenewals, after.leaseRenewals, "no renewal while nothing is read")
                // The first read after finds the lease expired, goes to the store, and renews.
                assertEquals("old", reader.get("k")?.text)
                val s = reader.stats()
                // It expired (or, on a machine too busy for the renewal sent as the warm-up ended
                // to come back within the bound, failed): either way the read went to the store.
                assertEquals(after.hits to after.misses + 1uL, s.hits to s.misses, "$s")
                assertEquals(after.leaseRenewals + 1uL, s.leaseRenewals, "$s")
                assertEquals(after.leaseExpiries + after.leaseFailures + 1uL, s.leaseExpiries + s.leaseFailures, "$s")
                untilHit(reader, "k")
            }
        }
    }
}

/** The freshness bound of the lease tests: short, so that a lagging read shows. */
private val FRESHNESS = 300.milliseconds
