// The public Kotlin API against core/vocabulary.json, the description of mqstate's surface
// every language checks itself against: operations and their options (names in Kotlin's
// casing, durations as kotlin.time.Duration) of every owner, the read-only properties, the
// events and their field names, SET conditions, VDEL outcomes, lock states, the cache
// counters, and one error class per code under the base and family classes. Every name is
// the vocabulary's Kotlin name (`names.kotlin`). Read by reflection, so a renamed parameter
// or a missing class fails here.
package mqstate

import java.io.File
import kotlin.reflect.KCallable
import kotlin.reflect.KClass
import kotlin.reflect.KParameter
import kotlin.reflect.KType
import kotlin.reflect.full.memberFunctions
import kotlin.reflect.full.memberProperties
import kotlin.reflect.full.primaryConstructor
import kotlin.reflect.full.companionObject
import kotlin.reflect.full.superclasses
import mqstate.testing.LocalStore
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

private fun JSONArray.objects(): List<JSONObject> = (0 until length()).map { getJSONObject(it) }

private fun JSONArray.strings(): List<String> = (0 until length()).map { getString(it) }

/** The class of this type (null for a function type or a type parameter). */
private val KType.cls: KClass<*>? get() = classifier as? KClass<*>

/** `not_held` → `NotHeld`. */
private fun pascal(snake: String): String = snake.split('_').joinToString("") { it.replaceFirstChar(Char::uppercase) }

/** `NotHeld` → `not_held`. */
private fun snake(pascal: String): String = pascal.replace(Regex("(?<=.)([A-Z])"), "_$1").lowercase()

class VocabularyTest {
    private val vocabulary = JSONObject(
        File(File(System.getProperty("mqstate.root") ?: "../.."), "core/vocabulary.json").readText(),
    )

    /** The classes whose methods are the operations of each owner. */
    private val owners: Map<String, KClass<*>> = mapOf(
        "client" to Client::class,
        "lock" to Lock::class,
        "election" to Election::class,
        "subscription" to Subscription::class,
        "pager" to Pager::class,
    )

    /** The Kotlin type of each unit. */
    private val units: Map<String, KClass<*>> = mapOf(
        "duration" to kotlin.time.Duration::class,
        "text" to String::class,
        "bool" to Boolean::class,
        "fencing_token" to Hlc::class,
        "condition" to SetCondition::class,
    )

    /** Where an option can be: a parameter, or a property of an `…Options` parameter. */
    private fun optionsOf(f: KCallable<*>): Map<String, KType> {
        val found = mutableMapOf<String, KType>()
        for (p in f.parameters.filter { it.kind == KParameter.Kind.VALUE }) {
            val cls = p.type.cls
            if (cls?.simpleName?.endsWith("Options") == true) {
                cls.memberProperties.forEach { found[it.name] = it.returnType }
            } else {
                found[p.name!!] = p.type
            }
        }
        return found
    }

    @Test
    fun `every operation and option is there, named and typed as the vocabulary says`() {
        val missing = mutableListOf<String>()
        for (op in vocabulary.getJSONArray("operations").objects()) {
            val owner = owners[op.getString("owner")] ?: continue.also { missing += "owner ${op.getString("owner")}" }
            val name = op.getJSONObject("names").getString("kotlin")
            val overloads = owner.memberFunctions.filter { it.name == name }
            if (overloads.isEmpty()) {
                missing += "${owner.simpleName}.$name"
                continue
            }
            for (opt in op.getJSONArray("options").objects()) {
                val optName = opt.getJSONObject("names").getString("kotlin")
                val unit = opt.getString("unit")
                for (f in overloads) {
                    val type = optionsOf(f)[optName]
                    if (type == null) {
                        missing += "${owner.simpleName}.$name(${f.parameters.drop(1).map { it.name }}): option $optName"
                        continue
                    }
                    units[unit]?.let { want ->
                        if (type.cls != want) missing += "${owner.simpleName}.$name: $optName is ${type}, want $want"
                    }
                }
            }
        }
        assertTrue(missing.isEmpty(), "not as the vocabulary says:\n" + missing.joinToString("\n"))
    }

    @Test
    fun `no option is public that the vocabulary does not name`() {
        // Every optional duration parameter or option property of an operation is one of its options.
        val extra = mutableListOf<String>()
        for (op in vocabulary.getJSONArray("operations").objects()) {
            val owner = owners[op.getString("owner")] ?: continue
            val name = op.getJSONObject("names").getString("kotlin")
            val named = op.getJSONArray("options").objects().map { it.getJSONObject("names").getString("kotlin") }.toSet()
            for (f in owner.memberFunctions.filter { it.name == name }) {
                val fromOptions = f.parameters.flatMap { p ->
                    val cls = p.type.cls
                    if (cls?.simpleName?.endsWith("Options") == true) cls.memberProperties.map { it.name } else emptyList()
                }
                // An option has a default; a required argument (setAutoRenew's period) is not one.
                val durations = f.parameters
                    .filter { it.isOptional && it.type.cls == kotlin.time.Duration::class }
                    .map { it.name!! }
                (fromOptions + durations).filter { it !in named }.forEach { extra += "${owner.simpleName}.$name: $it" }
            }
        }
        assertTrue(extra.isEmpty(), "options the vocabulary does not name:\n" + extra.joinToString("\n"))
    }

    @Test
    fun `every property is a read-only property of its object, under its Kotlin name`() {
        val missing = mutableListOf<String>()
        val properties = vocabulary.getJSONArray("properties").objects()
        for (prop in properties) {
            val owner = owners.getValue(prop.getString("owner"))
            val name = prop.getJSONObject("names").getString("kotlin")
            val found = owner.memberProperties.find { it.name == name }
            if (found == null) {
                missing += "${owner.simpleName}.$name"
            } else if (found is kotlin.reflect.KMutableProperty<*>) {
                missing += "${owner.simpleName}.$name is writable"
            }
        }
        assertTrue(missing.isEmpty(), "not as the vocabulary says:\n" + missing.joinToString("\n"))
    }

    /**
     * The local store's operations (`testing_operations`): each a function of
     * `mqstate.testing.LocalStore` (`start` of its companion) under its Kotlin name, every
     * option a parameter of every overload under its Kotlin name, of the option's type in at
     * least one of them (`keys` takes a `String` or a `ByteArray` pattern), with a default
     * exactly when the vocabulary gives one; and no other optional parameter.
     */
    @Test
    fun `the local store has the testing operations and options, as the vocabulary says`() {
        val testingUnits = units + mapOf("count" to Int::class, "error_code" to String::class)
        val companion = LocalStore::class.companionObject!!
        val missing = mutableListOf<String>()
        val operations = vocabulary.getJSONArray("testing_operations").objects()
        assertTrue(operations.isNotEmpty())
        for (op in operations) {
            assertEquals("local_store", op.getString("owner"))
            val name = op.getJSONObject("names").getString("kotlin")
            val overloads = (LocalStore::class.memberFunctions + companion.memberFunctions).filter { it.name == name }
            if (overloads.isEmpty()) {
                missing += "LocalStore.$name"
                continue
            }
            val options = op.getJSONArray("options").objects()
            val named = options.map { it.getJSONObject("names").getString("kotlin") }.toSet()
            for (f in overloads) {
                val params = f.parameters.filter { it.kind == KParameter.Kind.VALUE }
                params.filter { it.isOptional && it.name !in named }.forEach { missing += "LocalStore.$name: option ${it.name} is not the vocabulary's" }
            }
            for (opt in options) {
                val optName = opt.getJSONObject("names").getString("kotlin")
                val want = testingUnits[opt.getString("unit")]
                val optional = opt.getString("default") != "required"
                val found = overloads.map { f -> f.parameters.find { it.kind == KParameter.Kind.VALUE && it.name == optName } }
                if (found.any { it == null }) {
                    missing += "LocalStore.$name: option $optName"
                    continue
                }
                if (want != null && found.none { it!!.type.cls == want }) missing += "LocalStore.$name: $optName is not a $want"
                // `keys()` with the default pattern is the String overload's.
                if (optional && found.none { it!!.isOptional }) missing += "LocalStore.$name: $optName has no default"
                if (!optional && found.any { it!!.isOptional }) missing += "LocalStore.$name: $optName has a default"
            }
        }
        assertTrue(missing.isEmpty(), "not as the vocabulary says:\n" + missing.joinToString("\n"))
    }

    @Test
    fun `the local store's properties are read-only properties under their Kotlin names`() {
        val missing = mutableListOf<String>()
        for (prop in vocabulary.getJSONArray("testing_properties").objects()) {
            assertEquals("local_store", prop.getString("owner"))
            val name = prop.getJSONObject("names").getString("kotlin")
            val found = LocalStore::class.memberProperties.find { it.name == name }
            if (found == null) {
                missing += "LocalStore.$name"
            } else if (found is kotlin.reflect.KMutableProperty<*>) {
                missing += "LocalStore.$name is writable"
            }
        }
        assertTrue(missing.isEmpty(), "not as the vocabulary says:\n" + missing.joinToString("\n"))
    }

    @Test
    fun `set conditions, vdel outcomes and lock states have the vocabulary's names`() {
        assertEquals(vocabulary.getJSONArray("set_conditions").strings(), SetCondition.entries.map { it.name.lowercase() })
        assertEquals(vocabulary.getJSONArray("vdel_outcomes").strings(), VdelOutcome.entries.map { it.name.lowercase() })
        assertEquals(
            vocabulary.getJSONArray("lock_states").strings().toSet(),
            LockStatus::class.sealedSubclasses.map { snake(it.simpleName!!) }.toSet(),
        )
    }

    @Test
    fun `the cache counters are CacheStats's properties, in the vocabulary's order`() {
        val params = CacheStats::class.primaryConstructor!!.parameters
        // Kotlin's names are camelCase, as every name of the vocabulary (lease_renewals: leaseRenewals).
        assertEquals(vocabulary.getJSONArray("cache_counters").strings(), params.map { snake(it.name!!) })
        params.forEach { assertEquals(ULong::class, it.type.cls, "CacheStats.${it.name}") }
        val cacheStats = Client::class.memberFunctions.single { it.name == "cacheStats" }
        assertEquals(CacheStats::class, cacheStats.returnType.cls)
        assertTrue(cacheStats.returnType.isMarkedNullable, "null when the cache is off")
    }

    @Test
    fun `the cache-hit yield is the core's number`() {
        assertEquals(vocabulary.getInt("cache_hit_yield_every"), CACHE_HIT_YIELD_EVERY)
    }

    @Test
    fun `change kinds print as the vocabulary spells them, as Python and Node show them`() {
        assertEquals(vocabulary.getJSONArray("change_kinds").strings(), ChangeKind.entries.map { it.toString() })
    }

    @Test
    fun `every event is an Event with the vocabulary's fields`() {
        val events = Event::class.sealedSubclasses.associateBy { snake(it.simpleName!!) }
        val missing = mutableListOf<String>()
        for (e in vocabulary.getJSONArray("events").objects()) {
            val cls = events[e.getString("name")]
            if (cls == null) {
                missing += "Event.${pascal(e.getString("name"))}"
                continue
            }
            // A field is the event's property, or, for Event.Status(status), one of its status's:
            // the status's class is its state (LockStatus.NotHeld, .Held, .Lost: the lock
            // states, checked above), its properties the others.
            val props = cls.memberProperties.map { it.name }.toMutableSet()
            if (cls == Event.Status::class) {
                props += LockStatus::class.sealedSubclasses.flatMap { s -> s.memberProperties.map { it.name } }
                props += "state"
            }
            for (field in e.getJSONObject("names").getJSONArray("kotlin").strings()) {
                if (field !in props) missing += "Event.${cls.simpleName}.$field"
            }
        }
        assertTrue(missing.isEmpty(), "not as the vocabulary says:\n" + missing.joinToString("\n"))
    }

    @Test
    fun `one error class per code, under its parent, picked by its code`() {
        val base = vocabulary.getString("error_base_class")
        assertEquals(base, MqstateError::class.simpleName)
        val families = vocabulary.getJSONArray("error_families").strings()
        for (family in families) {
            val cls = Class.forName("mqstate.$family").kotlin
            assertEquals(listOf(MqstateError::class), cls.superclasses.filter { it != Any::class }, family)
        }
        val errors = vocabulary.getJSONArray("errors").objects()
        assertEquals(errors.map { it.getString("code") }, errorTable().map { it.code }, "the native table")
        for (row in errors) {
            val code = row.getString("code")
            val cls = Class.forName("mqstate.${row.getString("class")}").kotlin
            assertEquals(row.getString("parent"), cls.superclasses.first().simpleName, code)
            val e = MqstateError.of(code, "text", mayHaveApplied = true)
            assertEquals(cls, e::class, code)
            assertEquals(code, e.code)
            assertEquals("text", e.detail)
            assertTrue(e.mayHaveApplied)
            // Each class is a thrown exception with the code's own constructor.
            val made = cls.primaryConstructor!!.callBy(mapOf(cls.primaryConstructor!!.parameters.first() to "made"))
            assertEquals(code, (made as MqstateError).code)
        }
        val unknown = MqstateError.of("a_code_of_later", "text")
        assertEquals(MqstateError::class, unknown::class)
    }
}
