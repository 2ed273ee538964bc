/*
 * The call observer (mqstate_client_set_call_observer) and the traceparent of the options
 * structs, against a store of the test's own (mqstate_local_store): one record per completed
 * call with the core's operation name, a failed call's status and error code, a cache hit
 * flagged, the traceparent and tracestate the application gave repeated (the core's tests,
 * tests/tests/client_envelope.rs, check that a traced request carries them on the wire), an
 * invalid traceparent refused, release called once, and no record once the observer is
 * removed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "live.h"

#define MAX_RECORDS 64
#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

struct seen {
    char operation[8];
    uint64_t duration_ns;
    mqstate_status status;
    char error_code[48];
    bool cache_hit;
    char traceparent[64];
    char tracestate[64];
};

struct log {
    pthread_mutex_t lock;
    struct seen records[MAX_RECORDS];
    int n;
    int released;
};

static void copy(char *to, size_t size, const char *from) {
    to[0] = '\0';
    if (from != NULL) {
        strncpy(to, from, size - 1);
        to[size - 1] = '\0';
    }
}

static void on_call(void *ctx, const mqstate_call_record *r) {
    struct log *log = ctx;
    pthread_mutex_lock(&log->lock);
    if (log->n < MAX_RECORDS) {
        struct seen *s = &log->records[log->n++];
        copy(s->operation, sizeof s->operation, r->operation);
        s->duration_ns = r->duration_ns;
        s->status = r->status;
        copy(s->error_code, sizeof s->error_code, r->error_code);
        s->cache_hit = r->cache_hit;
        copy(s->traceparent, sizeof s->traceparent, r->traceparent);
        copy(s->tracestate, sizeof s->tracestate, r->tracestate);
    }
    pthread_mutex_unlock(&log->lock);
}

static void on_release(void *ctx) {
    struct log *log = ctx;
    pthread_mutex_lock(&log->lock);
    log->released++;
    pthread_mutex_unlock(&log->lock);
}

static int count(struct log *log) {
    pthread_mutex_lock(&log->lock);
    int n = log->n;
    pthread_mutex_unlock(&log->lock);
    return n;
}

/* An empty log, and `c`'s observer writing into it. */
static void observe(mqstate_client *c, struct log *log) {
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->lock, NULL);
    CHECK_STATUS(mqstate_client_set_call_observer(c, on_call, on_release, log), MQSTATE_STATUS_OK,
                 "set the observer");
}

static const uint8_t *b(const char *s) { return (const uint8_t *)s; }

/* Each call is told once, before it returns, with its operation, outcome and trace. */
static void test_records(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    mqstate_client *c = client_at(mqstate_local_store_url(store), NULL);
    struct log log;
    observe(c, &log);

    mqstate_set_options set;
    memset(&set, 0, sizeof set);
    set.traceparent = TRACEPARENT;
    set.tracestate = "vendor=a";
    CHECK_STATUS(mqstate_client_set(c, b("k"), 1, b("v"), 1, &set, NULL, NULL), MQSTATE_STATUS_OK,
                 "set");
    CHECK(count(&log) == 1, "told before the call returned: %d", count(&log));
    mqstate_value *v = NULL;
    CHECK_STATUS(mqstate_client_get(c, b("k"), 1, NULL, &v), MQSTATE_STATUS_OK, "get");
    mqstate_value_free(v);
    mqstate_call_options o;
    memset(&o, 0, sizeof o);
    o.traceparent = TRACEPARENT;
    mqstate_vdel_outcome outcome = MQSTATE_VDEL_OUTCOME_NONE;
    CHECK_STATUS(mqstate_client_vdel(c, b("k"), 1, b("w"), 1, &o, &outcome), MQSTATE_STATUS_OK,
                 "vdel");
    CHECK_STATUS(mqstate_client_delete(c, b("k"), 1, &o, NULL), MQSTATE_STATUS_OK, "delete");
    CHECK_STATUS(mqstate_local_store_fail_next(store, 1, "quota_exceeded", "SET"),
                 MQSTATE_STATUS_OK, "fail the next SET");
    CHECK_STATUS(mqstate_client_set(c, b("k"), 1, b("v"), 1, NULL, NULL, NULL),
                 MQSTATE_STATUS_QUOTA_EXCEEDED, "the failed set");

    CHECK(count(&log) == 5, "one record per call: %d", count(&log));
    const char *ops[] = {"SET", "GET", "VDEL", "DEL", "SET"};
    for (int i = 0; i < 5 && i < log.n; i++) {
        struct seen *s = &log.records[i];
        CHECK(strcmp(s->operation, ops[i]) == 0, "record %d is %s: %s", i, ops[i], s->operation);
        CHECK(!s->cache_hit, "record %d went to the store", i);
        CHECK(s->duration_ns > 0, "record %d has a duration", i);
    }
    CHECK(log.records[0].status == MQSTATE_STATUS_OK && log.records[0].error_code[0] == '\0',
          "the set succeeded");
    CHECK(strcmp(log.records[0].traceparent, TRACEPARENT) == 0, "the set carried the traceparent: %s",
          log.records[0].traceparent);
    CHECK(strcmp(log.records[0].tracestate, "vendor=a") == 0, "and the tracestate: %s",
          log.records[0].tracestate);
    CHECK(log.records[1].traceparent[0] == '\0', "a get without options carried none");
    CHECK(strcmp(log.records[2].traceparent, TRACEPARENT) == 0, "the vdel carried it");
    CHECK(log.records[2].tracestate[0] == '\0', "with no tracestate");
    CHECK(log.records[4].status == MQSTATE_STATUS_QUOTA_EXCEEDED, "the failure's status");
    CHECK(strcmp(log.records[4].error_code, "quota_exceeded") == 0, "and its code: %s",
          log.records[4].error_code);

    /* A traceparent that is not W3C's is refused before anything is sent. */
    o.traceparent = "00-nope";
    CHECK_STATUS(mqstate_client_delete(c, b("k"), 1, &o, NULL), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "an invalid traceparent");
    CHECK(strstr(last_error(), "traceparent") != NULL, "says why: %s", last_error());
    CHECK(count(&log) == 5, "a call refused before it started is no record");

    /* Removed: no more records, and the context released once. */
    CHECK_STATUS(mqstate_client_set_call_observer(c, NULL, NULL, NULL), MQSTATE_STATUS_OK,
                 "remove the observer");
    CHECK(log.released == 1, "released once when replaced: %d", log.released);
    CHECK_STATUS(mqstate_client_set(c, b("k"), 1, b("v"), 1, NULL, NULL, NULL), MQSTATE_STATUS_OK,
                 "set");
    CHECK(count(&log) == 5, "no record without an observer");
    CHECK_STATUS(mqstate_client_set_call_observer(NULL, on_call, NULL, &log),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "a NULL client");
    mqstate_client_close(c);
    mqstate_local_store_free(store);
    pthread_mutex_destroy(&log.lock);
}

/* A cache hit is told as a hit; closing the client releases the observer's context. */
static void test_cache_hits(void) {
    mqstate_local_store *store = NULL;
    CHECK_STATUS(mqstate_local_store_start(&store), MQSTATE_STATUS_OK, "start");
    static const char *const cached[] = {"cache", "true", "cache_freshness", "30s", NULL};
    mqstate_client *c = client_at(mqstate_local_store_url(store), cached);
    struct log log;
    observe(c, &log);
    CHECK_STATUS(mqstate_client_set(c, b("k"), 1, b("v"), 1, NULL, NULL, NULL), MQSTATE_STATUS_OK,
                 "set");
    bool hit = false;
    uint64_t deadline = now_ms() + 30000;
    while (!hit && now_ms() < deadline) {
        int before = count(&log);
        mqstate_value *v = NULL;
        CHECK_STATUS(mqstate_client_get(c, b("k"), 1, NULL, &v), MQSTATE_STATUS_OK, "get");
        mqstate_value_free(v);
        CHECK(count(&log) == before + 1, "one record per get");
        pthread_mutex_lock(&log.lock);
        hit = log.records[log.n - 1].cache_hit;
        pthread_mutex_unlock(&log.lock);
        if (log.n >= MAX_RECORDS - 1) break;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(hit, "a GET answered by the cache is told as a hit");
    CHECK(strcmp(log.records[log.n - 1].operation, "GET") == 0, "a hit is a GET");
    mqstate_client_close(c);
    CHECK(log.released == 1, "closing the client released the context: %d", log.released);
    mqstate_local_store_free(store);
    pthread_mutex_destroy(&log.lock);
}

void test_telemetry(void) {
    test_records();
    test_cache_hits();
}
