/*
 * The client-side cache through the C API (the `cache` settings, `bypass_cache` of
 * mqstate_call_options, mqstate_client_cache_stats), against stores of the test's own
 * (mqstate_local_store) and their faults: repeated GETs count hits after one miss, another
 * client's SET arrives by notification without a new miss, bypass_cache reads the store and
 * counts neither way, a cut, a restart and a lost session each invalidate what was cached,
 * and the counters say "off" when the cache is. Every wait is a poll with a deadline
 * (BOUND_MS): a broken cache fails a check instead of hanging the test.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "live.h"

/* How long anything that should happen may take (a busy 2-core machine included). */
#define BOUND_MS 30000

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A client of `store` with the settings `pairs` (name, value, …, NULL) on top. */
static mqstate_client *connect_with(const mqstate_local_store *store, const char *const *pairs) {
    return client_at(mqstate_local_store_url(store), pairs);
}

/* A lease bound no busy machine's renewal misses: the tests that count hits and misses
 * exactly must not see a lease fail (the lease's own tests use short bounds). */
static const char *const CACHED[] = {"cache", "true", "cache_freshness", "30s", NULL};

/* The counters of `c`, whose cache must be on. */
static mqstate_cache_stats stats_of(const mqstate_client *c) {
    bool enabled = false;
    mqstate_cache_stats s;
    memset(&s, 0xff, sizeof s);
    CHECK_STATUS(mqstate_client_cache_stats(c, &enabled, &s), MQSTATE_STATUS_OK, "cache_stats");
    CHECK(enabled, "the cache is on");
    return s;
}

static mqstate_status set_text(mqstate_client *c, const char *key, const char *value,
                               uint32_t timeout_ms) {
    mqstate_set_options o;
    memset(&o, 0, sizeof o);
    o.persist = true; /* kept by a restart with keep_data */
    o.timeout_ms = timeout_ms;
    return mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)value,
                              strlen(value), &o, NULL, NULL);
}

/* GET `key` (past the cache with `bypass`) within `timeout_ms` (0: the client's). On OK,
   whether it equals `want` (NULL: missing) goes to *matches. */
static mqstate_status get_is(mqstate_client *c, const char *key, const char *want, bool bypass,
                             uint32_t timeout_ms, bool *matches) {
    mqstate_call_options o;
    memset(&o, 0, sizeof o);
    o.bypass_cache = bypass;
    o.timeout_ms = timeout_ms;
    mqstate_value *v = NULL;
    *matches = false;
    mqstate_status st = mqstate_client_get(c, (const uint8_t *)key, strlen(key), &o, &v);
    if (st == MQSTATE_STATUS_OK) {
        size_t len = 0;
        const uint8_t *data = mqstate_value_data(v, &len);
        *matches = want == NULL ? v == NULL
                                : v != NULL && bytes_equal(data, len, (const uint8_t *)want,
                                                           strlen(want));
    }
    mqstate_value_free(v);
    return st;
}

/* Whether a plain GET of `key` succeeds and reads `want` (a failed check otherwise). */
static bool reads(mqstate_client *c, const char *key, const char *want) {
    bool matches = false;
    CHECK_STATUS(get_is(c, key, want, false, 0, &matches), MQSTATE_STATUS_OK, key);
    return matches;
}

/* Polls GETs of `key` (each bounded to 2 s, failures retried) until one reads `want`;
   false after BOUND_MS. */
static bool until_reads(mqstate_client *c, const char *key, const char *want) {
    uint64_t deadline = now_ms() + BOUND_MS;
    for (;;) {
        bool matches = false;
        if (get_is(c, key, want, false, 2000, &matches) == MQSTATE_STATUS_OK && matches) {
            return true;
        }
        if (now_ms() > deadline) return false;
        sleep_ms(10);
    }
}

/* Hits and misses as they would be with the lease always held: a read the lease sent to the
   store (`lease_misses`, before the first renewal came back) counted as the hit it would
   have been. Counts that depend on how fast the first renewal travels would be flaky. */
static uint64_t settled_hits(mqstate_cache_stats s) { return s.hits + s.lease_misses; }
static uint64_t settled_misses(mqstate_cache_stats s) { return s.misses - s.lease_misses; }

/* Reads `key` until a read is answered from the cache (the lease proven); false after
   BOUND_MS. */
static bool until_hit(mqstate_client *c, const char *key) {
    uint64_t deadline = now_ms() + BOUND_MS;
    for (;;) {
        uint64_t before = stats_of(c).hits;
        bool matches = false;
        (void)get_is(c, key, NULL, false, 2000, &matches);
        if (stats_of(c).hits > before) return true;
        if (now_ms() > deadline) return false;
        sleep_ms(2);
    }
}

/* Repeated GETs hit after one miss; another client's SET arrives by notification. */
static void test_hits_and_notifications(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *writer = connect_with(store, NULL);
    mqstate_client *reader = connect_with(store, CACHED);
    CHECK_STATUS(set_text(writer, "asset:1", "pump", 0), MQSTATE_STATUS_OK, "set pump");

    mqstate_cache_stats s = stats_of(reader);
    mqstate_cache_stats zero;
    memset(&zero, 0, sizeof zero);
    CHECK(memcmp(&s, &zero, sizeof s) == 0, "a new cache counts nothing");
    CHECK(reads(reader, "asset:1", "pump"), "the first read");
    s = stats_of(reader);
    CHECK(settled_hits(s) == 0 && settled_misses(s) == 1 && s.entries == 1 &&
              s.evictions == 0 && s.invalidations == 0 && s.bytes == strlen("asset:1pump"),
          "one miss, one entry: hits %llu misses %llu entries %llu bytes %llu",
          (unsigned long long)s.hits, (unsigned long long)s.misses,
          (unsigned long long)s.entries, (unsigned long long)s.bytes);
    CHECK(s.lease_renewals >= 1, "a renewal proves the lease");
    for (int i = 0; i < 20; i++) CHECK(reads(reader, "asset:1", "pump"), "read %d", i);
    s = stats_of(reader);
    CHECK(settled_hits(s) == 20 && settled_misses(s) == 1,
          "then hits: %llu hits, %llu misses, %llu lease misses", (unsigned long long)s.hits,
          (unsigned long long)s.misses, (unsigned long long)s.lease_misses);
    CHECK(reads(reader, "missing", NULL), "a missing key");
    CHECK(reads(reader, "missing", NULL), "a missing key, again");
    s = stats_of(reader);
    CHECK(settled_hits(s) == 21 && settled_misses(s) == 2 && s.entries == 2,
          "a missing key is cached too");

    CHECK_STATUS(set_text(writer, "asset:1", "valve", 0), MQSTATE_STATUS_OK, "set valve");
    CHECK(until_reads(reader, "asset:1", "valve"), "the reader reads the new value");
    s = stats_of(reader);
    CHECK(settled_misses(s) == 2,
          "the change came by notification, not by a read of the store: %llu",
          (unsigned long long)settled_misses(s));
    CHECK(s.invalidations >= 1, "the notification changed the entry: %llu",
          (unsigned long long)s.invalidations);
    CHECK(settled_hits(s) > 21, "the new value was read from the cache: %llu",
          (unsigned long long)settled_hits(s));

    mqstate_client_close(reader);
    mqstate_client_close(writer);
    mqstate_local_store_free(store);
}

/* bypass_cache: GET reads the store and counts neither a hit nor a miss; only GET takes it. */
static void test_bypass_cache(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *reader = connect_with(store, CACHED);
    CHECK_STATUS(set_text(reader, "k", "v", 0), MQSTATE_STATUS_OK, "set");
    CHECK(reads(reader, "k", "v"), "cached");
    CHECK(until_hit(reader, "k"), "the lease is proven: the next read is answered from memory");
    mqstate_cache_stats before = stats_of(reader);

    /* The next GET the store sees fails: a read the cache answers never gets there, one that
       bypasses it does. */
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "quota_exceeded", "GET"),
                 MQSTATE_STATUS_OK, "fail the next GET");
    CHECK(reads(reader, "k", "v"), "answered from the cache");
    bool matches = false;
    CHECK_STATUS(get_is(reader, "k", "v", true, 0, &matches), MQSTATE_STATUS_QUOTA_EXCEEDED,
                 "bypass_cache: the GET reached the store");
    CHECK_STATUS(get_is(reader, "k", "v", true, 0, &matches), MQSTATE_STATUS_OK, "bypass again");
    CHECK(matches, "read from the store");
    mqstate_cache_stats after = stats_of(reader);
    CHECK(after.hits == before.hits + 1 && after.misses == before.misses,
          "bypassing reads count neither way: hits %llu → %llu, misses %llu → %llu",
          (unsigned long long)before.hits, (unsigned long long)after.hits,
          (unsigned long long)before.misses, (unsigned long long)after.misses);

    /* The calls that do not read through the cache refuse it rather than ignore it. */
    mqstate_call_options o;
    memset(&o, 0, sizeof o);
    o.bypass_cache = true;
    uint64_t deleted = 7;
    CHECK_STATUS(mqstate_client_delete(reader, (const uint8_t *)"k", 1, &o, &deleted),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "delete with bypass_cache");
    CHECK(deleted == 0 && strstr(last_error(), "bypass_cache") != NULL, "says why: %s",
          last_error());
    mqstate_vdel_outcome outcome = MQSTATE_VDEL_OUTCOME_DELETED;
    CHECK_STATUS(mqstate_client_vdel(reader, (const uint8_t *)"k", 1, (const uint8_t *)"v", 1, &o,
                                     &outcome),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "vdel with bypass_cache");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_NONE, "no outcome");
    mqstate_subscription *sub = NULL;
    CHECK_STATUS(mqstate_client_observe(reader, (const uint8_t *)"k", 1, &o, &sub),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "observe with bypass_cache");
    CHECK(sub == NULL, "no subscription");
    CHECK(reads(reader, "k", "v"), "nothing was deleted");

    mqstate_client_close(reader);
    mqstate_local_store_free(store);
}

/* Caches `key` = "old" in `reader`, applies `fault`, writes "new" from `writer` as soon as it
   can, and checks that `reader` reads "new", that `invalidations` rose (the entry went) and
   that `misses` rose (it was read from the store again). */
static void fault_invalidates(mqstate_local_store *store, mqstate_client *reader,
                              mqstate_client *writer, const char *fault) {
    char key[64];
    snprintf(key, sizeof key, "%s-key", fault);
    CHECK_STATUS(set_text(writer, key, "old", 0), MQSTATE_STATUS_OK, fault);
    CHECK(reads(reader, key, "old"), "%s: a miss", fault);
    CHECK(until_hit(reader, key), "%s: a hit", fault);
    mqstate_cache_stats before = stats_of(reader);
    CHECK(before.hits >= 1 && before.entries >= 1, "%s: cached", fault);
    if (strcmp(fault, "restart") == 0) {
        CHECK_STATUS(mqstate_local_store_restart(store, true), MQSTATE_STATUS_OK, "restart");
    } else {
        CHECK_STATUS(mqstate_local_store_pause(store, 200), MQSTATE_STATUS_OK, "pause");
        CHECK_STATUS(mqstate_local_store_cut_connections(store, NULL), MQSTATE_STATUS_OK, "cut");
    }
    /* Written as soon as the writer is back: before, or while, the reader comes back. */
    uint64_t deadline = now_ms() + BOUND_MS;
    bool written = false;
    while (!(written = set_text(writer, key, "new", 2000) == MQSTATE_STATUS_OK) &&
           now_ms() < deadline) {
        sleep_ms(10);
    }
    CHECK(written, "%s: the writer writes again: %s", fault, last_error());
    CHECK(until_reads(reader, key, "new"), "%s: the reader reads the new value", fault);
    mqstate_cache_stats after = stats_of(reader);
    CHECK(after.invalidations > before.invalidations,
          "%s: the entry was invalidated (invalidations %llu → %llu)", fault,
          (unsigned long long)before.invalidations, (unsigned long long)after.invalidations);
    CHECK(after.misses > before.misses, "%s: read from the store again (misses %llu → %llu)",
          fault, (unsigned long long)before.misses, (unsigned long long)after.misses);
}

/* A cut (sessions kept), a restart (keeping persisted keys) and a lost session each
   invalidate what was cached. */
static void test_faults_invalidate(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *writer = connect_with(store, NULL);
    mqstate_client *reader = connect_with(store, CACHED);
    fault_invalidates(store, reader, writer, "cut");
    fault_invalidates(store, reader, writer, "restart");
    /* A client whose MQTT session ends with each connection: the cut loses it. */
    static const char *const NO_SESSION[] = {"cache", "true", "cache_freshness", "30s",
                                               "session_expiry", "0", NULL};
    mqstate_client *no_session = connect_with(store, NO_SESSION);
    fault_invalidates(store, no_session, writer, "lost-session");
    mqstate_client_close(no_session);
    mqstate_client_close(reader);
    mqstate_client_close(writer);
    mqstate_local_store_free(store);
}

/* Off unless a cache setting turns it on: then `enabled` is false and the counters zero. */
static void test_off_and_arguments(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_cache_stats zero, s;
    memset(&zero, 0, sizeof zero);

    mqstate_client *plain = connect_with(store, NULL);
    CHECK_STATUS(set_text(plain, "k", "v", 0), MQSTATE_STATUS_OK, "set");
    CHECK(reads(plain, "k", "v") && reads(plain, "k", "v"), "reads");
    bool enabled = true;
    memset(&s, 0xff, sizeof s);
    CHECK_STATUS(mqstate_client_cache_stats(plain, &enabled, &s), MQSTATE_STATUS_OK,
                 "cache_stats of a client without a cache");
    CHECK(!enabled, "off");
    CHECK(memcmp(&s, &zero, sizeof s) == 0, "zeros when off");

    static const char *const OFF[] = {"cache", "false", NULL};
    mqstate_client *off = connect_with(store, OFF);
    enabled = true;
    CHECK_STATUS(mqstate_client_cache_stats(off, &enabled, &s), MQSTATE_STATUS_OK, "cache=false");
    CHECK(!enabled, "cache=false: off");

    /* Any cache_ setting turns it on; cache_keys narrows what is counted. */
    static const char *const NARROW[] = {"cache_keys", "asset:*", "cache_max_entries", "10",
                                         "cache_max_bytes", "4096", "cache_max_staleness", "2s",
                                         NULL};
    mqstate_client *narrow = connect_with(store, NARROW);
    CHECK(reads(narrow, "k", "v"), "an uncovered key");
    s = stats_of(narrow);
    CHECK(memcmp(&s, &zero, sizeof s) == 0, "an uncovered key counts nothing");

    /* Both out-parameters are required, and both are reset first. */
    enabled = true;
    memset(&s, 0xff, sizeof s);
    CHECK_STATUS(mqstate_client_cache_stats(narrow, &enabled, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL stats");
    CHECK(!enabled, "enabled reset");
    CHECK_STATUS(mqstate_client_cache_stats(narrow, NULL, &s), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL enabled");
    CHECK(memcmp(&s, &zero, sizeof s) == 0, "stats reset");

    mqstate_settings *settings = NULL;
    CHECK_STATUS(mqstate_settings_new(&settings), MQSTATE_STATUS_OK, "settings");
    CHECK_STATUS(mqstate_settings_set(settings, "cache_max_entries", "0"),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "cache_max_entries 0");
    CHECK_STATUS(mqstate_settings_set(settings, "cache", "maybe"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "cache is a boolean");
    CHECK_STATUS(mqstate_settings_set(settings, "cache_freshness", "300"), MQSTATE_STATUS_OK,
                 "cache_freshness: a bare number is seconds");
    CHECK_STATUS(mqstate_settings_set(settings, "cache_freshness", "soon"),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "cache_freshness is a duration");
    mqstate_settings_free(settings);

    mqstate_client_close(narrow);
    mqstate_client_close(off);
    mqstate_client_close(plain);
    mqstate_local_store_free(store);
}

/* The freshness bound of the lease tests: short, so that a lagging read shows. */
#define FRESHNESS_MS 300

/* A reader of "k" ("old", cached, the lease proven) with `freshness` (a duration's text),
   and a writer, into *reader and *writer. */
static void warm_reader(const mqstate_local_store *store, const char *freshness,
                        mqstate_client **reader, mqstate_client **writer) {
    const char *const pairs[] = {"cache", "true", "cache_freshness", freshness, NULL};
    *reader = connect_with(store, pairs);
    *writer = connect_with(store, NULL);
    CHECK_STATUS(set_text(*writer, "k", "old", 0), MQSTATE_STATUS_OK, "set old");
    CHECK(until_hit(*reader, "k"), "the lease is proven");
}

/* Writes "new" to "k" with `writer` and reads it from `reader` until it reads "new": every
   read that answers "old" must have begun less than `freshness_ms` after the write was
   acknowledged. */
static void lag_within(mqstate_client *reader, mqstate_client *writer, uint64_t freshness_ms) {
    CHECK_STATUS(set_text(writer, "k", "new", 0), MQSTATE_STATUS_OK, "set new");
    uint64_t acknowledged = now_ms();
    for (;;) {
        uint64_t began = now_ms();
        bool is_old = false;
        CHECK_STATUS(get_is(reader, "k", "old", false, 0, &is_old), MQSTATE_STATUS_OK, "get");
        if (!is_old) return; /* "new": only "old" and "new" are ever written */
        /* now_ms counts whole milliseconds: a lag under the bound may read as the bound,
           never more. */
        uint64_t lag = began - acknowledged;
        if (lag > freshness_ms) {
            CHECK(false, "a cached read lagged %llu ms behind the store (bound %llu ms)",
                  (unsigned long long)lag, (unsigned long long)freshness_ms);
            return;
        }
        if (now_ms() - acknowledged > BOUND_MS) {
            CHECK(false, "never read the new value");
            return;
        }
        sleep_ms(2);
    }
}

/* Reads "k" (whatever it answers) until the reader's lease has failed; false after BOUND_MS. */
static bool until_lease_failed(mqstate_client *reader) {
    uint64_t deadline = now_ms() + BOUND_MS;
    while (stats_of(reader).lease_failures == 0) {
        if (now_ms() > deadline) return false;
        bool matches = false;
        (void)get_is(reader, "k", NULL, false, 2000, &matches);
        sleep_ms(5);
    }
    return true;
}

/* drop_notifications: a silent notification path is noticed within the freshness bound. */
static void test_a_silent_notification_path(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *reader = NULL, *writer = NULL;
    warm_reader(store, "300ms", &reader, &writer);
    /* Everything the store publishes is lost for 2 s: the write's notification, and the
       lease's renewals. */
    CHECK_STATUS(mqstate_local_store_drop_notifications(store, 2000), MQSTATE_STATUS_OK, "mute");
    lag_within(reader, writer, FRESHNESS_MS);
    size_t dropped = 0;
    CHECK_STATUS(mqstate_local_store_dropped_notifications(store, &dropped), MQSTATE_STATUS_OK,
                 "dropped");
    CHECK(dropped >= 1, "notifications were dropped: %zu", dropped);
    CHECK(until_lease_failed(reader), "the lease fails");
    CHECK(stats_of(reader).lease_misses >= 1, "reads went to the store meanwhile");
    /* Once the path is back, the key is registered anew and others' writes arrive again. */
    sleep_ms(2000); /* the mute's span: this test is about it passing */
    CHECK(until_hit(reader, "k"), "hits again");
    CHECK_STATUS(set_text(writer, "k", "newer", 0), MQSTATE_STATUS_OK, "set newer");
    CHECK(until_reads(reader, "k", "newer"), "the reader reads the newer value");
    CHECK(until_hit(reader, "k"), "and hits");
    mqstate_client_close(reader);
    mqstate_client_close(writer);
    mqstate_local_store_free(store);
}

/* forget_registrations: a store that lost its registrations is noticed within the bound. */
static void test_a_store_that_lost_its_registrations(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *reader = NULL, *writer = NULL;
    warm_reader(store, "300ms", &reader, &writer);
    /* The store restarted behind its broker: connections up, registrations gone. */
    size_t forgotten = 0;
    CHECK_STATUS(mqstate_local_store_forget_registrations(store, &forgotten), MQSTATE_STATUS_OK,
                 "forget");
    CHECK(forgotten >= 2, "k and the canary: %zu", forgotten);
    lag_within(reader, writer, FRESHNESS_MS);
    CHECK(until_lease_failed(reader), "the lease fails");
    /* Registered anew on the next reads: changes come by notification again. */
    CHECK(until_hit(reader, "k"), "hits again");
    uint64_t misses = stats_of(reader).misses;
    CHECK_STATUS(set_text(writer, "k", "newer", 0), MQSTATE_STATUS_OK, "set newer");
    CHECK(until_reads(reader, "k", "newer"), "the reader reads the newer value");
    CHECK(until_hit(reader, "k"), "and hits");
    mqstate_cache_stats s = stats_of(reader);
    CHECK(s.misses - misses <= s.lease_misses + 1,
          "the change came by notification, not by reading the store each time: misses %llu "
          "→ %llu, lease misses %llu",
          (unsigned long long)misses, (unsigned long long)s.misses,
          (unsigned long long)s.lease_misses);
    mqstate_client_close(reader);
    mqstate_client_close(writer);
    mqstate_local_store_free(store);
}

/* An idle cache sends no renewal; the next read counts an expiry and a lease miss. */
static void test_an_idle_cache(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *reader = NULL, *writer = NULL;
    warm_reader(store, "200ms", &reader, &writer);
    sleep_ms(200); /* this test is about time passing with nothing read */
    mqstate_cache_stats idle = stats_of(reader);
    sleep_ms(200 * 5);
    mqstate_cache_stats after = stats_of(reader);
    CHECK(after.lease_renewals == idle.lease_renewals, "no renewal while nothing is read");
    /* The first read after finds the lease expired, goes to the store, and renews. */
    CHECK(reads(reader, "k", "old"), "old");
    mqstate_cache_stats s = stats_of(reader);
    /* It expired (or, on a machine too busy for the renewal sent as the warm-up ended to come
     * back within the bound, failed): either way the read went to the store. */
    CHECK(s.hits == after.hits && s.misses == after.misses + 1, "one miss: %llu → %llu",
          (unsigned long long)after.misses, (unsigned long long)s.misses);
    CHECK(s.lease_renewals == after.lease_renewals + 1, "one renewal: %llu → %llu",
          (unsigned long long)after.lease_renewals, (unsigned long long)s.lease_renewals);
    CHECK(s.lease_expiries + s.lease_failures == after.lease_expiries + after.lease_failures + 1,
          "one expiry (or failure): %llu → %llu", (unsigned long long)after.lease_expiries,
          (unsigned long long)s.lease_expiries);
    CHECK(until_hit(reader, "k"), "hits again");
    mqstate_client_close(reader);
    mqstate_client_close(writer);
    mqstate_local_store_free(store);
}

void test_cache(void) {
    test_hits_and_notifications();
    test_bypass_cache();
    test_faults_invalidate();
    test_off_and_arguments();
    test_a_silent_notification_path();
    test_a_store_that_lost_its_registrations();
    test_an_idle_cache();
}
