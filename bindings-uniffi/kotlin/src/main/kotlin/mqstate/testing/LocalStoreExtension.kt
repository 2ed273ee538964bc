// The JUnit 5 extension of the local store. It is the only class of the package that needs
// JUnit (junit-jupiter-api, a provided dependency of the jar): programs that do not use it
// never load it.

package mqstate.testing

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.extension.ExtensionContext
import org.junit.jupiter.api.extension.ParameterContext
import org.junit.jupiter.api.extension.ParameterResolver

/**
 * Gives JUnit 5 tests a [LocalStore] as a parameter: `@ExtendWith(LocalStoreExtension::class)`
 * on the class (or a method), then a `store: LocalStore` parameter.
 *
 * **Scope: one store per test.** A test method and the `@BeforeEach` / `@AfterEach` methods
 * around it get the same store, started when first asked for and stopped (waited for) after
 * the test, whatever its outcome: tests never see each other's keys, faults or
 * connections, and may run in parallel. A store asked for by a `@BeforeAll` method lives for
 * the whole class instead, and every test of the class then shares it (empty it with
 * [LocalStore.clear] where that matters).
 */
class LocalStoreExtension : ParameterResolver {
    override fun supportsParameter(parameter: ParameterContext, context: ExtensionContext): Boolean =
        parameter.parameter.type == LocalStore::class.java

    override fun resolveParameter(parameter: ParameterContext, context: ExtensionContext): LocalStore =
        context.getStore(NAMESPACE)
            .getOrComputeIfAbsent(LocalStore::class.java, { Started(runBlocking { LocalStore.start() }) }, Started::class.java)
            .store

    /** A store that JUnit closes when the context it was made for (a test, a class) ends. */
    private class Started(val store: LocalStore) : ExtensionContext.Store.CloseableResource {
        override fun close() = store.close()
    }

    private companion object {
        val NAMESPACE: ExtensionContext.Namespace = ExtensionContext.Namespace.create(LocalStoreExtension::class.java)
    }
}
