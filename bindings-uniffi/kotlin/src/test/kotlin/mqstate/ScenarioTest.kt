// The behaviour scenarios (tests/scenarios/*.json, format in its README) through the public
// Kotlin API, one dynamic test per file: every file in the folder runs, none is named here,
// against `mqstate serve` and again against a mqstate.testing.LocalStore in this process
// (every scenario: none needs what a LocalStore cannot give). A negative control proves that
// a changed expectation fails.
package mqstate

import java.io.File
import java.util.UUID
import java.util.concurrent.Callable
import java.util.concurrent.ExecutionException
import java.util.concurrent.Executors
import java.util.concurrent.Future
import java.util.concurrent.TimeUnit
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import mqstate.testing.LocalStore
import mqstate.testing.LocalStoreExtension
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.extension.ExtendWith

class ScenarioFailure(message: String) : AssertionError(message)

private fun ms(step: JSONObject, name: String): Duration? =
    if (step.has(name)) step.getLong(name).milliseconds else null

private fun unhex(hex: String): ByteArray = hex.chunked(2).map { it.toInt(16).toByte() }.toByteArray()

private fun ByteArray.hex(): String = joinToString("") { "%02x".format(it) }

private fun valueOf(step: JSONObject): ByteArray? = when {
    step.has("value") -> step.get("value").toString().encodeToByteArray()
    step.has("value_hex") -> unhex(step.getString("value_hex"))
    else -> null
}

/** The result of waiting for an event: [event] null when the subscription ended. */
private class Got(val event: Event?)

/** Runs one scenario against the store at [url]. */
class ScenarioRunner(private val url: String) {
    private val prefix = "scn/${UUID.randomUUID()}/"
    private val clients = linkedMapOf<String, Client>()
    private val subs = mutableMapOf<String, Subscription>()
    private val locks = mutableMapOf<String, Lock>()
    private val elections = mutableMapOf<String, Election>()
    private val vars = mutableMapOf<String, Hlc>()
    /** Scan pagers and the keys each returned so far. */
    private val pagers = mutableMapOf<String, Pair<Pager, MutableList<ByteArray>>>()

    private fun key(step: JSONObject, field: String = "key"): ByteArray {
        val key = step.get(field).toString()
        return (if (key.isEmpty()) key else prefix + key).encodeToByteArray()
    }

    /** A `set` step's key: `key`, or `key_hex` (bytes), namespaced. */
    private fun setKey(step: JSONObject): ByteArray =
        if (step.has("key_hex")) prefix.encodeToByteArray() + unhex(step.getString("key_hex")) else key(step)

    /** A scan step's pattern (`pattern` or `pattern_hex`) after the run prefix (which holds
     *  no glob metacharacter); an empty pattern stays empty. */
    private fun pattern(step: JSONObject): ByteArray {
        val raw = if (step.has("pattern_hex")) unhex(step.getString("pattern_hex")) else step.getString("pattern").encodeToByteArray()
        return if (raw.isEmpty()) raw else prefix.encodeToByteArray() + raw
    }

    /** The scan expectations of tests/scenarios/README.md over the keys a scan returned. */
    private fun expectKeys(step: JSONObject, got: List<ByteArray>) {
        val p = prefix.encodeToByteArray()
        val bare = got.map { key ->
            if (key.size < p.size || !key.copyOfRange(0, p.size).contentEquals(p)) {
                throw ScenarioFailure("key ${key.decodeToString()} is outside this run")
            }
            key.copyOfRange(p.size, key.size).hex()
        }
        val found = bare.toSet()
        fun list(field: String): List<String>? = step.optJSONArray(field)?.let { a ->
            (0 until a.length()).map { if (field.endsWith("_hex")) a.getString(it).lowercase() else a.getString(it).encodeToByteArray().hex() }
        }
        val keys = list("keys")
        val keysHex = list("keys_hex")
        if (keys != null || keysHex != null) {
            val want = (keys.orEmpty() + keysHex.orEmpty()).toSet()
            if (want != found) {
                throw ScenarioFailure("keys ${found.map { unhex(it).decodeToString() }.sorted()}, want ${want.map { unhex(it).decodeToString() }.sorted()}")
            }
        }
        for (k in list("includes").orEmpty()) if (k !in found) throw ScenarioFailure("${unhex(k).decodeToString()} is missing")
        for (k in list("excludes").orEmpty()) if (k in found) throw ScenarioFailure("${unhex(k).decodeToString()} is listed")
        val total = found.size.toLong()
        if ((step.has("total") && step.getLong("total") != total) ||
            (step.has("min_total") && total < step.getLong("min_total")) ||
            (step.has("max_total") && total > step.getLong("max_total"))
        ) {
            throw ScenarioFailure("$total distinct keys")
        }
        if (step.optBoolean("no_repeats") && found.size != bare.size) {
            throw ScenarioFailure("${bare.size} keys returned, ${found.size} distinct")
        }
    }

    private suspend fun scanStep(op: String, step: JSONObject) {
        when (op) {
            "fill" -> {
                val value = valueOf(step) ?: throw ScenarioFailure("fill needs a value")
                val client = client(step)
                val keyPrefix = step.getString("key_prefix")
                coroutineScope {
                    (0 until step.getInt("count")).chunked(64).forEach { chunk ->
                        chunk.map { i -> async { client.set("$prefix$keyPrefix${"%04d".format(i)}".encodeToByteArray(), value) } }.awaitAll()
                    }
                }
            }
            "scan" -> {
                val pager = client(step).scan(pattern(step), ScanOptions(ms(step, "timeout_ms")))
                val keys = mutableListOf<ByteArray>()
                pager.use { while (true) keys += it.nextPage() ?: break }
                expectKeys(step, keys)
            }
            "scan_start" -> pagers[step.getString("as")] = client(step).scan(pattern(step)) to mutableListOf()
            "scan_page" -> {
                val (pager, seen) = pagers.getValue(step.getString("pager"))
                seen += pager.nextPage() ?: throw ScenarioFailure("the scan had already ended")
                expect(step, "last", pager.isDone())
            }
            else -> {
                val (pager, seen) = pagers.getValue(step.getString("pager"))
                while (true) seen += pager.nextPage() ?: break
                expectKeys(step, seen)
            }
        }
    }

    private fun client(step: JSONObject): Client = clients.getValue(step.optString("client", "a"))

    private fun token(step: JSONObject): Hlc? {
        if (step.has("fenced_by")) {
            return locks.getValue(step.getString("fenced_by")).fencingToken
                ?: throw NotHeldError("the lock is not held")
        }
        val text = step.optString("fencing_token", "")
        if (text.isEmpty()) return null
        return if (text.startsWith("$")) vars.getValue(text.substring(1)) else Hlc.parse(text)
    }

    private fun checkVersion(step: JSONObject, got: Hlc?) {
        when (val want = step.opt("version")) {
            "none" -> if (got != null) throw ScenarioFailure("version $got, want none")
            "some" -> if (got == null) throw ScenarioFailure("no version, want some")
            is JSONObject -> {
                val how = want.keys().next()
                val name = want.getString(how)
                val other = vars.getValue(name)
                val order = (got ?: throw ScenarioFailure("no version, want $how $name")).compareTime(other)
                val bad = when (how) {
                    "equal" -> order != 0
                    "newer" -> order <= 0
                    "older" -> order >= 0
                    else -> throw ScenarioFailure("unknown comparison $how")
                }
                if (bad) throw ScenarioFailure("version $got is not $how than $name=$other")
            }
        }
        for (field in listOf("save_version", "save_token")) {
            if (step.has(field)) vars[step.getString(field)] = got ?: throw ScenarioFailure("nothing to save as ${step.getString(field)}")
        }
    }

    private fun expect(step: JSONObject, field: String, got: Any?) {
        if (!step.has(field)) return
        val want = step.get(field)
        val same = when {
            want == JSONObject.NULL -> got == null
            want is Number && got is ULong -> want.toLong() == got.toLong()
            else -> want == got
        }
        if (!same) throw ScenarioFailure("$field $got, want $want")
    }

    private suspend fun connect(step: JSONObject) {
        val name = step.optString("client", "a")
        val target = if (step.optString("target") == "closed_port") "mqtt://127.0.0.1:${LiveStore.freePort()}" else url
        val settings = mutableMapOf("connect_timeout" to "5")
        step.optJSONObject("settings")?.let { s -> s.keys().forEach { settings[it] = s.get(it).toString() } }
        settings["client_id"] = "scn-kt-$name-${UUID.randomUUID().toString().take(12)}"
        clients[name] = Client.connect(target, settings)
    }

    private suspend fun step(step: JSONObject) {
        when (val op = step.getString("op")) {
            "connect" -> connect(step)
            "close" -> client(step).closeAndWait()
            "sleep" -> delay(step.getLong("ms"))
            "set" -> {
                val named = step.optString("condition")
                val condition = SetCondition.entries.firstOrNull { it.name.equals(named, ignoreCase = true) }
                val options = SetOptions(condition, ms(step, "expiry_ms"), token(step), step.optBoolean("persist"), ms(step, "timeout_ms"))
                val r = client(step).set(setKey(step), valueOf(step)!!, options)
                expect(step, "applied", r.applied)
                checkVersion(step, r.version)
            }
            "get" -> {
                val got = client(step).get(key(step), GetOptions(ms(step, "timeout_ms")))
                val want = valueOf(step)
                if (step.optBoolean("missing")) {
                    if (got != null) throw ScenarioFailure("want missing, got ${got.text}")
                } else if (want != null && (got == null || !got.value.contentEquals(want))) {
                    throw ScenarioFailure("value ${got?.text}, want ${want.decodeToString()}")
                }
                checkVersion(step, got?.version)
            }
            "del" -> expect(step, "count", client(step).delete(key(step), DelOptions(token(step))))
            "vdel" -> {
                val out = client(step).vdel(key(step), valueOf(step)!!, DelOptions(token(step)))
                expect(step, "outcome", out.name.lowercase())
            }
            "observe" -> subs[step.getString("as")] = client(step).observe(key(step))
            "unobserve" -> subs.remove(step.getString("subscription"))!!.close()
            "expect_notification", "expect_no_notification" -> notification(step)
            "lock" -> locks[step.getString("as")] = client(step).lock(
                key(step),
                LockOptions(holder = step.optString("holder", null), sessionId = step.optString("session_id", null), autoRenew = ms(step, "auto_renew_ms")),
            )
            "try_acquire", "acquire", "renew", "release", "holder", "is_held", "edit" -> lockStep(op, step)
            "election" -> elections[step.getString("as")] = client(step).election(key(step, "name"), step.getString("candidate"))
            "campaign", "try_campaign", "resign", "leader", "is_leader" -> electionStep(op, step)
            "fill", "scan", "scan_start", "scan_page", "scan_rest" -> scanStep(op, step)
            else -> throw ScenarioFailure("unknown op $op")
        }
    }

    private suspend fun notification(step: JSONObject) {
        val sub = subs.getValue(step.getString("subscription"))
        if (step.getString("op") == "expect_no_notification") {
            val got = withTimeoutOrNull(step.optLong("for_ms", 300)) { Got(sub.next()) }
            if (got?.event is Event.Change) throw ScenarioFailure("unexpected ${got.event}")
            return
        }
        // The API's own wait (0: do not wait), so that its timeout error is the step's error.
        val wait = step.optLong("timeout_ms", 5000).milliseconds
        var event: Event?
        do {
            event = sub.next(wait) ?: throw ScenarioFailure("the subscription ended")
        } while (event !is Event.Change)
        val kind = step.optString("event", "")
        if (kind.isNotEmpty() && event.kind.name.lowercase() != kind) throw ScenarioFailure("notified ${event.kind}, want $kind")
        val want = valueOf(step)
        if (kind == "set" && want != null && !(event.value ?: byteArrayOf()).contentEquals(want)) {
            throw ScenarioFailure("notified ${event.text}, want ${want.decodeToString()}")
        }
        checkVersion(step, event.version)
    }

    private suspend fun lockStep(op: String, step: JSONObject) {
        val lock = locks.getValue(step.getString("lock"))
        val lease = step.optLong("lease_ms", 5000).milliseconds
        when (op) {
            "try_acquire" -> {
                val token = lock.tryAcquire(lease)
                expect(step, "acquired", token != null)
                checkVersion(step, token)
            }
            "acquire" -> checkVersion(step, lock.acquire(lease, ms(step, "timeout_ms")))
            "renew" -> {
                val token = lock.renew()
                expect(step, "renewed", token != null)
                checkVersion(step, token)
            }
            "release" -> expect(step, "released", lock.release())
            "is_held" -> expect(step, "held", lock.isHeld)
            "holder" -> {
                val got = lock.holder()
                val want = if (step.has("holder_of")) locks.getValue(step.getString("holder_of")).holderId else step.opt("holder")?.takeIf { it != JSONObject.NULL }
                if (got != want) throw ScenarioFailure("holder $got, want $want")
            }
            else -> {
                val action = step.get("action")
                val r = lock.edit(key(step), lease, ms(step, "timeout_ms")) { current ->
                    when {
                        action == "delete" -> Edit.Delete
                        action == "keep" -> Edit.Keep
                        action is JSONObject && action.has("fail") ->
                            throw CallbackError(action.getString("fail"))
                        action is JSONObject && action.has("set") -> Edit.set(action.getString("set"))
                        action is JSONObject && action.has("append") ->
                            Edit.Set((current?.value ?: byteArrayOf()) + action.getString("append").encodeToByteArray())
                        else -> throw ScenarioFailure("unknown edit action $action")
                    }
                }
                checkVersion(step, r.version)
            }
        }
    }

    private suspend fun electionStep(op: String, step: JSONObject) {
        val e = elections.getValue(step.getString("election"))
        val term = step.optLong("term_ms", 5000).milliseconds
        when (op) {
            "campaign" -> checkVersion(step, e.campaign(term, ms(step, "timeout_ms")))
            "try_campaign" -> expect(step, "elected", e.tryCampaign(term))
            "resign" -> expect(step, "resigned", e.resign())
            "is_leader" -> expect(step, "leader_now", e.isLeader)
            else -> {
                val got = e.leader()
                val want = step.opt("leader")?.takeIf { it != JSONObject.NULL }
                if (got != want) throw ScenarioFailure("leader $got, want $want")
            }
        }
    }

    /** Runs [scenario]; throws [ScenarioFailure] at the first step that does not do as it says. */
    fun run(scenario: JSONObject) = runBlocking {
        val steps: JSONArray = scenario.getJSONArray("steps")
        val clientOps = setOf("close", "set", "get", "del", "vdel", "observe", "lock", "election", "fill", "scan", "scan_start")
        val names = (0 until steps.length()).map { steps.getJSONObject(it) }
            .filter { it.getString("op") in clientOps }.map { it.optString("client", "a") }.toSortedSet()
        try {
            for (name in names) connect(JSONObject().put("client", name))
            for (i in 0 until steps.length()) {
                val s = steps.getJSONObject(i)
                val want = s.optString("error", "")
                try {
                    withTimeout(60_000) { step(s) }
                } catch (e: MqstateError) {
                    if (e.code != want) throw ScenarioFailure("step $i $s: threw ${e.code} (${e.detail}), want ${want.ifEmpty { "success" }}")
                    continue
                } catch (f: ScenarioFailure) {
                    throw ScenarioFailure("step $i $s: ${f.message}")
                }
                if (want.isNotEmpty()) throw ScenarioFailure("step $i $s: succeeded, want error $want")
            }
        } finally {
            subs.values.forEach { it.close() }
            locks.values.forEach { it.close() }
            elections.values.forEach { it.close() }
            pagers.values.forEach { it.first.close() }
            for (client in clients.values) {
                try {
                    client.closeAndWait()
                } catch (_: MqstateError) {
                }
                client.close()
            }
        }
    }
}

class ScenarioTest {
    private val folder = File(System.getProperty("mqstate.scenarios") ?: "../../tests/scenarios")
    private val files = folder.listFiles { f -> f.name.endsWith(".json") }.orEmpty().sortedBy { it.name }

    @Test
    fun `there are scenarios`() {
        assertTrue(files.size >= 40, "only ${files.size} scenario files in $folder")
    }

    @TestFactory
    fun scenarios(): List<DynamicTest> = files.map { file ->
        DynamicTest.dynamicTest(file.nameWithoutExtension) {
            ScenarioRunner(LiveStore.url).run(JSONObject(file.readText()))
        }
    }

    /**
     * Every scenario again, against one LocalStore (the extension's: it lives as long as this
     * factory's tests). Run four at a time (their keys are namespaced per run), which keeps
     * the suite's time down: most of a scenario's time is its waits (leases, expiries).
     */
    @TestFactory
    @ExtendWith(LocalStoreExtension::class)
    fun `scenarios against a LocalStore`(store: LocalStore): List<DynamicTest> {
        val pool = Executors.newFixedThreadPool(4) { r -> Thread(r, "scenario-local-store").apply { isDaemon = true } }
        val runs: List<Pair<String, Future<*>>> = files.map { file ->
            file.nameWithoutExtension to pool.submit(Callable { ScenarioRunner(store.url).run(JSONObject(file.readText())) })
        }
        pool.shutdown()
        return runs.map { (name, run) ->
            DynamicTest.dynamicTest(name) {
                try {
                    run.get(120, TimeUnit.SECONDS)
                } catch (e: ExecutionException) {
                    throw e.cause ?: e
                }
            }
        }
    }

    @Test
    fun `a changed expectation fails`() {
        val scenario = JSONObject(File(folder, "set_then_get_returns_value_and_version.json").readText())
        val steps = scenario.getJSONArray("steps")
        var changed = 0
        for (i in 0 until steps.length()) {
            val step = steps.getJSONObject(i)
            if (step.getString("op") == "get") {
                step.put("value", "not what was set")
                changed++
            }
        }
        assertTrue(changed > 0)
        assertThrows(ScenarioFailure::class.java) { ScenarioRunner(LiveStore.url).run(scenario) }
    }
}
