// Quickstart: connect, set, get, observe, lock and elect, against a state store at the URL
// given as the first argument (default mqtt://localhost:1883; `mqstate serve` runs one).
//
//     mqstate serve --listen 127.0.0.1:1883 &
//     kotlin -cp … mqstate.examples.QuickstartKt mqtt://127.0.0.1:1883
//
// The tests compile and run it (QuickstartTest).
package mqstate.examples

import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import mqstate.*

fun main(args: Array<String>): Unit = runBlocking {
    val url = args.firstOrNull() ?: "mqtt://localhost:1883"
    Client.connect(url, "requestTimeout" to "5s").use { client ->
        // Values are bytes; text overloads encode UTF-8.
        val set = client.set("quickstart/greeting", "hello", SetOptions(expiry = 1.minutes))
        println("set applied=${set.applied} version=${set.version}")
        val value = client.get("quickstart/greeting")
        println("get ${value?.text} (version ${value?.version})")

        // Changes of a key: registered when observe() returns; as a Flow, stopped (STOP)
        // when the collection ends.
        client.observe("quickstart/greeting").use { changes ->
            client.set("quickstart/greeting", "hello again")
            val change = changes.asFlow().filterIsInstance<Event.Change>().first()
            println("observed ${change.kind} ${change.text}")
        }

        // A leased lock, and a write fenced with its token.
        val lock = client.lock("quickstart/lock", LockOptions(lease = 5.seconds))
        lock.withLock { token ->
            client.set("quickstart/protected", "mine", SetOptions(fencingToken = token))
            println("wrote under the lock with token $token")
        }

        // A fenced edit: read, decide, write, under the lock.
        val edited = lock.edit("quickstart/counter") { current ->
            val n = current?.text?.toInt() ?: 0
            Edit.set("${n + 1}")
        }
        println("counter edited in ${edited.attempts} attempt(s)")

        // Leader election.
        val election = client.election("quickstart/election", "candidate-1")
        election.lead(term = 5.seconds) {
            println("leader now: ${election.leader()} (isLeader=${election.isLeader})")
        }

        try {
            client.set("", "empty keys are refused")
        } catch (e: InvalidArgumentError) {
            println("error code ${e.code}: ${e.detail}")
        }
        client.delete("quickstart/greeting")
    }
    println("done")
}
