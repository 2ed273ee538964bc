/*
 * The local store (mqstate_local_store_*) through the C API: each fault taking effect on a
 * client connected with the C client API (cut connections, a pause, fail_next, restarts with
 * and without data), the look inside (keys, get, clear), two stores side by side, threads
 * sharing a store, and the errors: bad arguments, NULL handles, calls after stop, a double
 * stop and free.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "live.h"

/* A client of `store` (NULL and a failed check on error). */
static mqstate_client *client_of(const mqstate_local_store *store) {
    return client_at(mqstate_local_store_url(store), NULL);
}

static mqstate_status set(mqstate_client *c, const char *key, const char *value, bool persist,
                          char **version) {
    mqstate_set_options o;
    memset(&o, 0, sizeof o);
    o.persist = persist;
    return mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)value,
                              strlen(value), &o, NULL, version);
}

/* GET through the client: 1 when `key` holds `want` (or, with want NULL, is missing). */
static int client_has(mqstate_client *c, const char *key, const char *want) {
    mqstate_value *v = NULL;
    mqstate_status st = mqstate_client_get(c, (const uint8_t *)key, strlen(key), NULL, &v);
    CHECK_STATUS(st, MQSTATE_STATUS_OK, key);
    size_t len = 0;
    const uint8_t *data = mqstate_value_data(v, &len);
    int ok = want == NULL ? v == NULL
                          : v != NULL && bytes_equal(data, len, (const uint8_t *)want, strlen(want));
    mqstate_value_free(v);
    return ok;
}

/* The store's keys matching `pattern` joined with commas into buf (NULL pattern: every key). */
static const char *keys_of(const mqstate_local_store *store, const char *pattern, char *buf,
                           size_t len) {
    mqstate_scan_page *page = NULL;
    buf[0] = '\0';
    CHECK_STATUS(mqstate_local_store_keys(store, (const uint8_t *)pattern,
                                          pattern ? strlen(pattern) : 0, &page),
                 MQSTATE_STATUS_OK, "keys");
    for (size_t i = 0; i < mqstate_scan_page_count(page); i++) {
        size_t klen = 0;
        const uint8_t *key = mqstate_scan_page_key(page, i, &klen);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%.*s", i ? "," : "", (int)klen, (const char *)key);
    }
    mqstate_scan_page_free(page);
    return buf;
}

static void test_start_and_inspect(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    const char *url = mqstate_local_store_url(store);
    uint16_t port = mqstate_local_store_port(store);
    char want[64];
    snprintf(want, sizeof want, "mqtt://127.0.0.1:%u", (unsigned)port);
    CHECK(port != 0 && url != NULL && strcmp(url, want) == 0, "url %s, port %u", url,
          (unsigned)port);
    CHECK(mqstate_local_store_is_running(store), "running after start");

    mqstate_client *c = client_of(store);
    char *version = NULL;
    CHECK_STATUS(set(c, "b", "2", false, NULL), MQSTATE_STATUS_OK, "set b");
    CHECK_STATUS(set(c, "a", "1", false, &version), MQSTATE_STATUS_OK, "set a");
    CHECK_STATUS(set(c, "other", "x", false, NULL), MQSTATE_STATUS_OK, "set other");
    char keys[256];
    CHECK(strcmp(keys_of(store, NULL, keys, sizeof keys), "a,b,other") == 0,
          "every key in byte order: %s", keys);
    CHECK(strcmp(keys_of(store, "?", keys, sizeof keys), "a,b") == 0, "a glob: %s", keys);
    CHECK(strcmp(keys_of(store, "z*", keys, sizeof keys), "") == 0, "no match: %s", keys);

    mqstate_value *v = NULL;
    CHECK_STATUS(mqstate_local_store_get(store, (const uint8_t *)"a", 1, &v), MQSTATE_STATUS_OK,
                 "get a");
    size_t len = 0;
    const uint8_t *data = mqstate_value_data(v, &len);
    CHECK(v != NULL && bytes_equal(data, len, (const uint8_t *)"1", 1), "the value");
    CHECK(v != NULL && version != NULL && mqstate_value_version(v) != NULL &&
              strcmp(mqstate_value_version(v), version) == 0,
          "the version is the SET's: %s vs %s", v ? mqstate_value_version(v) : "-",
          version ? version : "-");
    mqstate_value_free(v);
    mqstate_string_free(version);
    v = (mqstate_value *)1;
    CHECK_STATUS(mqstate_local_store_get(store, (const uint8_t *)"nope", 4, &v),
                 MQSTATE_STATUS_OK, "get a missing key");
    CHECK(v == NULL, "a missing key is NULL");

    size_t deleted = 0;
    CHECK_STATUS(mqstate_local_store_clear(store, &deleted), MQSTATE_STATUS_OK, "clear");
    CHECK(deleted == 3, "clear deleted %zu", deleted);
    CHECK(strcmp(keys_of(store, NULL, keys, sizeof keys), "") == 0, "empty: %s", keys);
    CHECK(client_has(c, "a", NULL), "the client sees the clear");
    CHECK_STATUS(mqstate_local_store_clear(store, NULL), MQSTATE_STATUS_OK, "clear, NULL count");

    mqstate_client_close(c);
    CHECK_STATUS(mqstate_local_store_stop(store), MQSTATE_STATUS_OK, "stop");
    mqstate_local_store_free(store);
}

static void test_faults(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *c = client_of(store);
    CHECK_STATUS(set(c, "k", "v1", false, NULL), MQSTATE_STATUS_OK, "set k");

    /* cut_connections: the one client's connection is reset; it reconnects and goes on. */
    size_t closed = 99;
    CHECK_STATUS(mqstate_local_store_cut_connections(store, &closed), MQSTATE_STATUS_OK, "cut");
    CHECK(closed == 1, "cut %zu connections, want 1 (the client's)", closed);
    CHECK_STATUS(set(c, "k", "v2", false, NULL), MQSTATE_STATUS_OK, "set after the cut");
    CHECK(client_has(c, "k", "v2"), "the client recovered");

    /* fail_next: the chosen error, for the chosen command only, n times; the store untouched. */
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "fencing_token_lower_version", "set"),
                 MQSTATE_STATUS_OK, "fail_next SET");
    CHECK(client_has(c, "k", "v2"), "a GET is not a SET: it passes");
    CHECK_STATUS(set(c, "k", "v3", false, NULL), MQSTATE_STATUS_FENCING_TOKEN_LOWER_VERSION,
                 "the armed error");
    CHECK(strstr(last_error(), "fencing") != NULL, "the service's text: %s", last_error());
    CHECK_STATUS(set(c, "k", "v4", false, NULL), MQSTATE_STATUS_OK, "only the next one");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 2, "quota_exceeded", NULL),
                 MQSTATE_STATUS_OK, "fail_next any command");
    CHECK_STATUS(mqstate_client_get(c, (const uint8_t *)"k", 1, NULL, &(mqstate_value *){NULL}),
                 MQSTATE_STATUS_QUOTA_EXCEEDED, "a GET fails");
    CHECK_STATUS(set(c, "k", "v5", false, NULL), MQSTATE_STATUS_QUOTA_EXCEEDED, "a SET fails");
    CHECK(client_has(c, "k", "v4"), "after n, requests pass; the failed SETs wrote nothing");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 5, "syntax_error", NULL), MQSTATE_STATUS_OK,
                 "arm");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 0, "syntax_error", NULL), MQSTATE_STATUS_OK,
                 "n 0 disarms");
    CHECK(client_has(c, "k", "v4"), "disarmed");

    /* pause: a request waits for the end of the pause, then is answered. */
    uint64_t start = now_ms();
    CHECK_STATUS(mqstate_local_store_pause(store, 300), MQSTATE_STATUS_OK, "pause");
    CHECK(client_has(c, "k", "v4"), "answered after the pause");
    uint64_t waited = now_ms() - start;
    CHECK(waited >= 250, "the GET was held by the pause (%llu ms)", (unsigned long long)waited);
    size_t held = 7;
    CHECK_STATUS(mqstate_local_store_held_requests(store, &held), MQSTATE_STATUS_OK, "held");
    CHECK(held == 0, "nothing held once answered (%zu)", held);

    /* restart(keep_data): only persisted keys survive, with their versions; the client
       reconnects by itself. */
    char *pv = NULL;
    CHECK_STATUS(set(c, "persisted", "p", true, &pv), MQSTATE_STATUS_OK, "persisted set");
    uint16_t port = mqstate_local_store_port(store);
    CHECK_STATUS(mqstate_local_store_restart(store, true), MQSTATE_STATUS_OK, "restart(true)");
    CHECK(mqstate_local_store_is_running(store), "running after restart");
    CHECK(mqstate_local_store_port(store) == port, "the same port");
    char keys[128];
    CHECK(strcmp(keys_of(store, NULL, keys, sizeof keys), "persisted") == 0,
          "only the persisted key: %s", keys);
    mqstate_value *v = NULL;
    CHECK_STATUS(mqstate_local_store_get(store, (const uint8_t *)"persisted", 9, &v),
                 MQSTATE_STATUS_OK, "get persisted");
    CHECK(v != NULL && pv != NULL && strcmp(mqstate_value_version(v), pv) == 0,
          "its version kept");
    mqstate_value_free(v);
    mqstate_string_free(pv);
    CHECK(client_has(c, "persisted", "p"), "the client reconnected and reads it");
    CHECK(client_has(c, "k", NULL), "the other key is gone");

    CHECK_STATUS(mqstate_local_store_restart(store, false), MQSTATE_STATUS_OK, "restart(false)");
    CHECK(strcmp(keys_of(store, NULL, keys, sizeof keys), "") == 0, "nothing kept: %s", keys);
    CHECK(client_has(c, "persisted", NULL), "the client sees an empty store");

    mqstate_client_close(c);
    mqstate_local_store_free(store); /* stops it */
}

static void test_two_stores(void) {
    mqstate_local_store *one = NULL, *two = NULL;
    CHECK_STATUS(mqstate_local_store_start(&one), MQSTATE_STATUS_OK, "start one");
    CHECK_STATUS(mqstate_local_store_start(&two), MQSTATE_STATUS_OK, "start two");
    CHECK(mqstate_local_store_port(one) != mqstate_local_store_port(two), "two ports");
    mqstate_client *c = client_of(one);
    CHECK_STATUS(set(c, "only-in-one", "1", false, NULL), MQSTATE_STATUS_OK, "set in one");
    char keys[64];
    CHECK(strcmp(keys_of(two, NULL, keys, sizeof keys), "") == 0, "two has nothing: %s", keys);
    CHECK_STATUS(mqstate_local_store_fail_next(two, 1, "quota_exceeded", NULL), MQSTATE_STATUS_OK,
                 "arm two");
    CHECK(client_has(c, "only-in-one", "1"), "a fault of two is not one's");
    size_t closed = 99;
    CHECK_STATUS(mqstate_local_store_cut_connections(two, &closed), MQSTATE_STATUS_OK, "cut two");
    CHECK(closed == 0, "two had no connection: %zu", closed);
    mqstate_client_close(c);
    mqstate_local_store_free(two);
    mqstate_local_store_free(one);
}

struct worker {
    const mqstate_local_store *store;
    mqstate_client *client;
    int failures;
};

/* One thread's share of test_threads: inspection and faults on the shared store, and
   requests of its own client. */
static void *work(void *arg) {
    struct worker *w = arg;
    for (int i = 0; i < 20; i++) {
        mqstate_scan_page *page = NULL;
        size_t n = 0;
        if (mqstate_local_store_keys(w->store, NULL, 0, &page) != MQSTATE_STATUS_OK) w->failures++;
        mqstate_scan_page_free(page);
        if (mqstate_local_store_fail_next(w->store, 0, "quota_exceeded", NULL) !=
            MQSTATE_STATUS_OK) {
            w->failures++;
        }
        if (i % 5 == 0 && mqstate_local_store_cut_connections(w->store, &n) != MQSTATE_STATUS_OK) {
            w->failures++;
        }
        if (!mqstate_local_store_is_running(w->store)) w->failures++;
        if (set(w->client, "shared", "x", false, NULL) != MQSTATE_STATUS_OK) w->failures++;
    }
    return NULL;
}

/* Several threads on one store at once (and on its clients, whose connections they cut). */
static void test_store_threads(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    struct worker workers[4];
    pthread_t threads[4];
    /* Every client connected before any thread starts: a thread's first cut would otherwise
       reset a connection still being made (its CONNECT unanswered: the connect fails). */
    for (int i = 0; i < 4; i++) workers[i] = (struct worker){store, client_of(store), 0};
    for (int i = 0; i < 4; i++) {
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0, "thread %d", i);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].failures == 0, "thread %d: %d calls failed", i, workers[i].failures);
        mqstate_client_close(workers[i].client);
    }
    size_t deleted = 0;
    CHECK_STATUS(mqstate_local_store_clear(store, &deleted), MQSTATE_STATUS_OK, "clear");
    CHECK(deleted == 1, "the one shared key: %zu", deleted);
    mqstate_local_store_free(store);
}

static void test_errors_and_stop(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(NULL), MQSTATE_STATUS_INVALID_ARGUMENT, "start NULL");
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");

    /* Bad arguments. */
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "nope", NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "unknown error code");
    CHECK(strstr(last_error(), "quota_exceeded") != NULL, "lists the codes: %s", last_error());
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "timeout", NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "not a state store error");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "quota_exceeded", "PUT"),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "unknown command");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL error");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "\xff", NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "error not UTF-8");
    CHECK_STATUS(mqstate_local_store_pause(store, 0), MQSTATE_STATUS_INVALID_ARGUMENT, "pause 0");
    CHECK(strstr(last_error(), "duration_ms") != NULL, "names it: %s", last_error());
    CHECK_STATUS(mqstate_local_store_drop_notifications(store, 0), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "drop_notifications 0");
    CHECK(strstr(last_error(), "duration_ms") != NULL, "names it: %s", last_error());
    size_t dropped = 7;
    CHECK_STATUS(mqstate_local_store_dropped_notifications(store, &dropped), MQSTATE_STATUS_OK,
                 "dropped_notifications");
    CHECK(dropped == 0, "nothing dropped: %zu", dropped);
    size_t forgotten = 7;
    CHECK_STATUS(mqstate_local_store_forget_registrations(store, &forgotten), MQSTATE_STATUS_OK,
                 "forget_registrations");
    CHECK(forgotten == 0, "nothing registered: %zu", forgotten);
    CHECK_STATUS(mqstate_local_store_forget_registrations(store, NULL), MQSTATE_STATUS_OK,
                 "forget_registrations, the count unwanted");
    CHECK_STATUS(mqstate_local_store_get(store, NULL, 3, &(mqstate_value *){NULL}),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL key with a length");
    CHECK_STATUS(mqstate_local_store_get(store, (const uint8_t *)"k", 1, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL out");
    CHECK_STATUS(mqstate_local_store_keys(store, NULL, 0, NULL), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "keys NULL out");

    /* NULL stores. */
    size_t n = 7;
    CHECK_STATUS(mqstate_local_store_cut_connections(NULL, &n), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "cut NULL");
    CHECK(n == 0, "the count is reset on failure");
    CHECK_STATUS(mqstate_local_store_pause(NULL, 10), MQSTATE_STATUS_INVALID_ARGUMENT, "pause NULL");
    CHECK_STATUS(mqstate_local_store_restart(NULL, true), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "restart NULL");
    CHECK_STATUS(mqstate_local_store_fail_next(NULL, 1, "quota_exceeded", NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "fail_next NULL");
    mqstate_scan_page *page = (mqstate_scan_page *)1;
    CHECK_STATUS(mqstate_local_store_keys(NULL, NULL, 0, &page), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "keys NULL");
    CHECK(page == NULL, "the page is reset on failure");
    CHECK_STATUS(mqstate_local_store_get(NULL, (const uint8_t *)"k", 1, &(mqstate_value *){NULL}),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "get NULL");
    CHECK_STATUS(mqstate_local_store_clear(NULL, &n), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "clear NULL");
    n = 7;
    CHECK_STATUS(mqstate_local_store_held_requests(NULL, &n), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "held_requests NULL");
    CHECK(n == 0, "the count is reset on failure");
    CHECK_STATUS(mqstate_local_store_drop_notifications(NULL, 10), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "drop_notifications NULL");
    n = 7;
    CHECK_STATUS(mqstate_local_store_dropped_notifications(NULL, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "dropped_notifications NULL");
    CHECK(n == 0, "the count is reset on failure");
    n = 7;
    CHECK_STATUS(mqstate_local_store_forget_registrations(NULL, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "forget_registrations NULL");
    CHECK(n == 0, "the count is reset on failure");
    CHECK(mqstate_local_store_url(NULL) == NULL, "url of NULL");
    CHECK(mqstate_local_store_port(NULL) == 0, "port of NULL");
    CHECK(!mqstate_local_store_is_running(NULL), "NULL does not run");
    CHECK_STATUS(mqstate_local_store_stop(NULL), MQSTATE_STATUS_OK, "stop NULL does nothing");
    mqstate_local_store_free(NULL);

    /* After stop: the handle answers, every call is closed; stop again is harmless. */
    uint16_t port = mqstate_local_store_port(store);
    CHECK_STATUS(mqstate_local_store_stop(store), MQSTATE_STATUS_OK, "stop");
    CHECK(!mqstate_local_store_is_running(store), "not running after stop");
    CHECK_STATUS(mqstate_local_store_stop(store), MQSTATE_STATUS_OK, "stop again");
    CHECK(mqstate_local_store_port(store) == port && mqstate_local_store_url(store) != NULL,
          "url and port still readable");
    n = 7;
    CHECK_STATUS(mqstate_local_store_cut_connections(store, &n), MQSTATE_STATUS_CLOSED, "cut");
    CHECK(n == 0, "reset");
    CHECK_STATUS(mqstate_local_store_pause(store, 10), MQSTATE_STATUS_CLOSED, "pause");
    CHECK_STATUS(mqstate_local_store_restart(store, true), MQSTATE_STATUS_CLOSED, "restart");
    CHECK(!mqstate_local_store_is_running(store), "a restart does not revive a stopped store");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "quota_exceeded", NULL),
                 MQSTATE_STATUS_CLOSED, "fail_next");
    page = (mqstate_scan_page *)1;
    CHECK_STATUS(mqstate_local_store_keys(store, NULL, 0, &page), MQSTATE_STATUS_CLOSED, "keys");
    CHECK(page == NULL, "no page");
    CHECK_STATUS(mqstate_local_store_get(store, (const uint8_t *)"k", 1, &(mqstate_value *){NULL}),
                 MQSTATE_STATUS_CLOSED, "get");
    CHECK_STATUS(mqstate_local_store_clear(store, &n), MQSTATE_STATUS_CLOSED, "clear");
    CHECK_STATUS(mqstate_local_store_held_requests(store, &n), MQSTATE_STATUS_CLOSED,
                 "held_requests");
    CHECK_STATUS(mqstate_local_store_drop_notifications(store, 10), MQSTATE_STATUS_CLOSED,
                 "drop_notifications");
    CHECK_STATUS(mqstate_local_store_dropped_notifications(store, &n), MQSTATE_STATUS_CLOSED,
                 "dropped_notifications");
    CHECK_STATUS(mqstate_local_store_forget_registrations(store, &n), MQSTATE_STATUS_CLOSED,
                 "forget_registrations");
    CHECK(strstr(last_error(), "stopped") != NULL, "says so: %s", last_error());

    /* A client of a stopped store is refused. */
    mqstate_settings *settings = NULL;
    mqstate_client *c = NULL;
    CHECK_STATUS(mqstate_settings_from_url(mqstate_local_store_url(store), &settings),
                 MQSTATE_STATUS_OK, "settings");
    CHECK_STATUS(mqstate_client_connect(settings, 2000, &c), MQSTATE_STATUS_CONNECT_REFUSED,
                 "nothing listens after stop");
    mqstate_settings_free(settings);
    mqstate_local_store_free(store);
}

void test_local_store(void) {
    test_start_and_inspect();
    test_faults();
    test_two_stores();
    test_store_threads();
    test_errors_and_stop();
}
