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

static const char *const CACHED[] = {"cache", "true", NULL};

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
    CHECK(s.hits == 0 && s.misses == 1 && s.entries == 1 && s.evictions == 0 &&
              s.invalidations == 0 && s.bytes == strlen("asset:1pump"),
          "one miss, one entry: hits %llu misses %llu entries %llu bytes %llu",
          (unsigned long long)s.hits, (unsigned long long)s.misses,
          (unsigned long long)s.entries, (unsigned long long)s.bytes);
    for (int i = 0; i < 20; i++) CHECK(reads(reader, "asset:1", "pump"), "read %d", i);
    s = stats_of(reader);
    CHECK(s.hits == 20 && s.misses == 1, "then hits: %llu hits, %llu misses",
          (unsigned long long)s.hits, (unsigned long long)s.misses);
    CHECK(reads(reader, "missing", NULL), "a missing key");
    CHECK(reads(reader, "missing", NULL), "a missing key, again");
    s = stats_of(reader);
    CHECK(s.hits == 21 && s.misses == 2 && s.entries == 2, "a missing key is cached too");

    CHECK_STATUS(set_text(writer, "asset:1", "valve", 0), MQSTATE_STATUS_OK, "set valve");
    CHECK(until_reads(reader, "asset:1", "valve"), "the reader reads the new value");
    s = stats_of(reader);
    CHECK(s.misses == 2, "the change came by notification, not by a read of the store: %llu",
          (unsigned long long)s.misses);
    CHECK(s.invalidations >= 1, "the notification changed the entry: %llu",
          (unsigned long long)s.invalidations);
    CHECK(s.hits > 21, "the new value was read from the cache: %llu", (unsigned long long)s.hits);

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
    mqstate_cache_stats before = stats_of(reader);
    CHECK(before.hits == 0 && before.misses == 1, "one miss");

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
    CHECK(reads(reader, key, "old"), "%s: a hit", fault);
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
    static const char *const NO_SESSION[] = {"cache", "true", "session_expiry", "0", NULL};
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
    mqstate_settings_free(settings);

    mqstate_client_close(narrow);
    mqstate_client_close(off);
    mqstate_client_close(plain);
    mqstate_local_store_free(store);
}

void test_cache(void) {
    test_hits_and_notifications();
    test_bypass_cache();
    test_faults_invalidate();
    test_off_and_arguments();
}
