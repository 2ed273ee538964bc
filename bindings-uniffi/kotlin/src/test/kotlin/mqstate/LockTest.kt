// Locks, fenced edits and elections through the Kotlin API, and cancellation: cancelling
// the coroutine of a waiting acquire (campaign) cancels it in the core, so the lock is
// never taken later for nobody.
package mqstate

import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class LockTest {
    private val ns = LiveStore.prefix("lock")
    private val lease = 5.seconds

    @Test
    fun `try acquire, holder, fencing, release`() = runBlocking {
        Client.connect(LiveStore.url).use { a ->
            Client.connect(LiveStore.url).use { b ->
                val la = a.lock("${ns}l", LockOptions(lease = lease))
                val lb = b.lock("${ns}l")
                val token = la.tryAcquire()!!
                assertEquals(token, la.fencingToken)
                assertTrue(la.isHeld)
                assertTrue(la.status() is LockStatus.Held)
                assertNull(lb.tryAcquire())
                assertEquals(la.holderId, lb.holder())
                assertEquals("${ns}l", la.key.decodeToString())
                val renewed = la.renew()!!
                assertTrue(renewed.compareTime(token) > 0)
                assertTrue(la.release())
                assertFalse(lb.release())
                assertNull(lb.holder())
                assertEquals(LockStatus.NotHeld, la.status())
            }
        }
    }

    @Test
    fun `withLock releases, and status events follow the lock`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val lock = client.lock("${ns}w", LockOptions(lease = lease))
            val status = lock.watchStatus()
            assertEquals(LockStatus.NotHeld, (status.next() as Event.Status).status)
            val holders = lock.watchHolder()
            assertNull((holders.next() as Event.Holder).holder)
            val result = lock.withLock { token ->
                client.set("${ns}protected", "x", SetOptions(fencingToken = token))
                "done"
            }
            assertEquals("done", result)
            assertTrue((status.next() as Event.Status).status is LockStatus.Held)
            assertEquals(LockStatus.NotHeld, (status.next() as Event.Status).status)
            assertEquals(lock.holderId, (holders.next() as Event.Holder).holder)
            assertNull((holders.next() as Event.Holder).holder)
            status.close()
            holders.close()
            assertNull(lock.holder())
        }
    }

    class Mine(message: String) : Exception(message)

    @Test
    fun `edit reads, decides and writes, and what the function throws comes back unchanged`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val lock = client.lock("${ns}e")
            client.set("${ns}counter", "1")
            val r = lock.edit("${ns}counter") { current -> Edit.set("${current!!.text.toInt() + 1}") }
            assertEquals("2", client.get("${ns}counter")!!.text)
            assertEquals(1U, r.attempts)
            assertTrue(r.edit is Edit.Set)
            assertEquals("1", r.previous!!.text)

            val thrown = Mine("no thanks")
            val caught = assertThrows(Mine::class.java) {
                runBlocking { lock.edit("${ns}counter") { throw thrown } }
            }
            assertSame(thrown, caught)
            assertEquals("2", client.get("${ns}counter")!!.text)
            assertNull(lock.holder(), "the lock was released after the failed edit")

            lock.edit("${ns}counter") { Edit.Delete }
            assertNull(client.get("${ns}counter"))
            assertEquals(Edit.Keep, lock.edit("${ns}counter") { Edit.Keep }.edit)
        }
    }

    @Test
    fun `cancelling a waiting acquire cancels it in the core`() = runBlocking {
        Client.connect(LiveStore.url).use { a ->
            Client.connect(LiveStore.url).use { b ->
                val held = a.lock("${ns}c")
                val waiting = b.lock("${ns}c")
                assertNotNull(held.tryAcquire(2.seconds))
                var outcome: Throwable? = null
                val job = launch(start = CoroutineStart.UNDISPATCHED) {
                    try {
                        waiting.acquire(30.seconds)
                    } catch (e: Throwable) {
                        outcome = e
                        throw e
                    }
                }
                delay(300)
                job.cancelAndJoin()
                assertTrue(outcome is CancellationException, "$outcome")
                assertTrue(held.release())
                // Had the acquire gone on, it would take the free lock now.
                delay(1500)
                assertNull(held.holder(), "the cancelled acquire took the lock")
                assertFalse(waiting.isHeld)
                // The waiting lock object is still usable.
                assertNotNull(waiting.tryAcquire())
                assertTrue(waiting.release())
            }
        }
    }

    @Test
    fun `cancelling a campaign cancels it in the core`() = runBlocking {
        Client.connect(LiveStore.url).use { a ->
            Client.connect(LiveStore.url).use { b ->
                val leader = a.election("${ns}ce", "first", ElectionOptions(term = 2.seconds))
                val other = b.election("${ns}ce", "second")
                leader.campaign()
                val job = launch(start = CoroutineStart.UNDISPATCHED) { other.campaign() }
                delay(300)
                job.cancelAndJoin()
                assertTrue(leader.resign())
                delay(1500)
                assertNull(leader.leader(), "the cancelled campaign took the leadership")
            }
        }
    }

    @Test
    fun `an election has one leader, hands over, and lead resigns`() = runBlocking {
        Client.connect(LiveStore.url).use { a ->
            Client.connect(LiveStore.url).use { b ->
                val ea = a.election("${ns}el", "alice", ElectionOptions(term = lease))
                val eb = b.election("${ns}el", "bob", ElectionOptions(term = lease))
                assertEquals("alice", ea.candidateId)
                assertNull(ea.leader())
                val leaders = eb.watchLeader()
                assertNull((leaders.next() as Event.Holder).holder)
                assertTrue(ea.tryCampaign())
                assertFalse(eb.tryCampaign())
                assertTrue(ea.isLeader)
                assertNotNull(ea.fencingToken)
                assertEquals("alice", eb.leader())
                assertEquals("alice", (leaders.next() as Event.Holder).holder)
                val handover = launch(start = CoroutineStart.UNDISPATCHED) {
                    eb.lead { token ->
                        assertTrue(eb.isLeader)
                        assertEquals(token, eb.fencingToken)
                        assertEquals("bob", ea.leader())
                    }
                }
                delay(200)
                assertTrue(ea.resign())
                handover.join()
                assertFalse(eb.isLeader)
                assertNull(ea.leader())
                leaders.close()
            }
        }
    }
}
