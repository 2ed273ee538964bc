/*
 * Telemetry: a call observer feeding a tiny in-process metrics table (calls, errors, cache
 * hits and total time per operation), printed at the end; each call carries the W3C
 * traceparent of the application's own span.
 *   ./telemetry [mqtt://localhost:1883]
 */
#include <pthread.h>
#include <string.h>

#include "common.h"

/* One row per operation: what a metrics library's counter and histogram would hold. */
struct row {
    char operation[8];
    unsigned long long calls, errors, cache_hits, total_ns;
};

struct table {
    pthread_mutex_t lock; /* the observer runs on library threads, several at once */
    struct row rows[8];
    int n;
    char last_traceparent[56];
};

/* Called once per completed call: quick, never blocking. */
static void on_call(void *ctx, const mqstate_call_record *record) {
    struct table *t = ctx;
    pthread_mutex_lock(&t->lock);
    struct row *r = NULL;
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].operation, record->operation) == 0) r = &t->rows[i];
    if (r == NULL && t->n < 8) {
        r = &t->rows[t->n++];
        memset(r, 0, sizeof *r);
        strncpy(r->operation, record->operation, sizeof r->operation - 1);
    }
    if (r != NULL) {
        r->calls++;
        r->errors += record->status != MQSTATE_STATUS_OK;
        r->cache_hits += record->cache_hit;
        r->total_ns += record->duration_ns;
    }
    if (record->traceparent != NULL)
        strncpy(t->last_traceparent, record->traceparent, sizeof t->last_traceparent - 1);
    if (record->error_code != NULL)
        fprintf(stderr, "%s failed: %s\n", record->operation, record->error_code);
    pthread_mutex_unlock(&t->lock);
}

int main(int argc, char **argv) {
    mqstate_client *client = connect_to(argc > 1 ? argv[1] : "mqtt://localhost:1883");
    if (client == NULL) return 1;
    struct table table;
    memset(&table, 0, sizeof table);
    pthread_mutex_init(&table.lock, NULL);
    mqstate_status st = mqstate_client_set_call_observer(client, on_call, NULL, &table);
    if (st != MQSTATE_STATUS_OK) return fail("observer", st);

    /* The application's span (from its tracer, or a propagated header): carried by each call. */
    const char *traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    mqstate_set_options set = {0};
    set.traceparent = traceparent;
    mqstate_call_options call = {0};
    call.traceparent = traceparent;
    const char *key = "telemetry-example";
    for (int i = 0; i < 3; i++) {
        st = mqstate_client_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)"on", 2,
                                &set, NULL, NULL);
        if (st != MQSTATE_STATUS_OK) return fail("set", st);
        mqstate_value *got = NULL;
        st = mqstate_client_get(client, (const uint8_t *)key, strlen(key), &call, &got);
        if (st != MQSTATE_STATUS_OK) return fail("get", st);
        mqstate_value_free(got);
    }
    st = mqstate_client_delete(client, (const uint8_t *)key, strlen(key), &call, NULL);
    if (st != MQSTATE_STATUS_OK) return fail("delete", st);

    mqstate_client_close(client); /* no record is told after this */
    printf("%-5s %6s %6s %6s %10s\n", "op", "calls", "errors", "hits", "mean_us");
    for (int i = 0; i < table.n; i++) {
        struct row *r = &table.rows[i];
        printf("%-5s %6llu %6llu %6llu %10.1f\n", r->operation, r->calls, r->errors, r->cache_hits,
               (double)r->total_ns / (double)r->calls / 1000.0);
    }
    printf("traceparent carried: %s\n", table.last_traceparent);
    pthread_mutex_destroy(&table.lock);
    return 0;
}
