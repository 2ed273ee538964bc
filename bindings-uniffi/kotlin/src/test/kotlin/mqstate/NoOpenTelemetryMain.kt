// A program run by TelemetryTest in a JVM of its own whose classpath lacks OpenTelemetry:
// calls go on as before, `Telemetry.available` is false, and (checked from outside, through
// -Xlog:class+load) no OpenTelemetry class and no OtelCalls is ever loaded.
package mqstate

import kotlinx.coroutines.runBlocking

fun main(args: Array<String>) = runBlocking {
    check(!Telemetry.available) { "OpenTelemetry is on this classpath" }
    Client.connect(args[0]).use { client ->
        client.set("no-otel", "1")
        check(client.get("no-otel")?.text == "1")
        check(client.delete("no-otel") == 1uL)
    }
    println("no-otel: ok")
}
