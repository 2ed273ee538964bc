// The client-side cache from Kotlin (docs/benchmarks.md, "Client-side cache"): a cached
// `get` against an uncached one at one request in flight, in one run.
//
//   bench/run kotlin-cached URL [SECONDS] [ROUNDS]
//
// URL is a running store (`mqstate serve`). Each round times, for SECONDS (default 2) each and
// in turns, `client.get(key)` of a client without the cache and of one with `cache=true`, over
// 1,000 keys read in turn (every key read once before the window: the cache is warm). Prints
// the median over ROUNDS (default 3) of each one's mean µs per get, their ratio, and the
// cached client's counters. Compiled with the Kotlin tests (pom.xml), so it never rots.
package bench

import kotlinx.coroutines.runBlocking
import mqstate.Client

private val KEYS = List(1000) { "cached-bench/$it" }

/** Mean µs per get of [client] over [seconds], every key read once before. */
private suspend fun timed(client: Client, seconds: Double): Double {
    for (key in KEYS) checkNotNull(client.get(key)) { "$key is missing" }
    var n = 0L
    val start = System.nanoTime()
    val deadline = start + (seconds * 1e9).toLong()
    while (true) {
        for (i in 0 until 100) client.get(KEYS[i])
        n += 100
        val now = System.nanoTime()
        if (now >= deadline) return (now - start) / 1e3 / n
    }
}

private fun List<Double>.median(): Double = sorted().let { s ->
    if (s.size % 2 == 1) s[s.size / 2] else (s[s.size / 2 - 1] + s[s.size / 2]) / 2
}

fun main(args: Array<String>): Unit = runBlocking {
    require(args.size in 1..3) { "usage: CachedBench URL [SECONDS] [ROUNDS]" }
    val url = args[0]
    val seconds = args.getOrNull(1)?.toDouble() ?: 2.0
    val rounds = args.getOrNull(2)?.toInt() ?: 3
    require(seconds > 0 && rounds >= 1) { "SECONDS > 0 and ROUNDS >= 1" }
    Client.connect(url).use { writer -> for (key in KEYS) writer.set(key, "v".repeat(16)) }
    val plain = mutableListOf<Double>()
    val cached = mutableListOf<Double>()
    var stats: mqstate.CacheStats? = null
    repeat(rounds) {
        Client.connect(url).use { plain += timed(it, seconds) }
        Client.connect(url, "cache" to true).use {
            cached += timed(it, seconds)
            stats = it.cacheStats()
        }
    }
    val p = plain.median()
    val k = cached.median()
    println("uncached %9.2f µs per get (median of %d rounds of %s s)".format(p, rounds, seconds))
    println("cached   %9.2f µs per get".format(k))
    println("ratio    %.1fx faster with the cache".format(p / k))
    println("last cached client: $stats")
}
