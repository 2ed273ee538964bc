/*
 * A leased lock and fenced edits: four threads each increment a counter 25 times under the
 * lock; every write carries the lock's fencing token, so the total is exact.
 *   ./lock [mqtt://localhost:1883]
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char *url;

/* The edit callback: from the current value to the next. */
static mqstate_status increment(void *ctx, const uint8_t *current, size_t len, mqstate_edit *d) {
    (void)ctx;
    char buf[32] = "0";
    if (current != NULL && len < sizeof buf) {
        memcpy(buf, current, len);
        buf[len] = '\0';
    }
    snprintf(buf, sizeof buf, "%ld", strtol(buf, NULL, 10) + 1);
    return mqstate_edit_set(d, (const uint8_t *)buf, strlen(buf));
}

static void *worker(void *arg) {
    (void)arg;
    mqstate_client *client = connect_to(url);
    mqstate_lock *lock = NULL;
    if (client == NULL) return NULL;
    mqstate_lock_new(client, (const uint8_t *)"counter/lock", 12, NULL, &lock);
    for (int i = 0; i < 25; i++) {
        mqstate_status st = mqstate_lock_edit(lock, (const uint8_t *)"counter", 7, 2000, 30000,
                                              increment, NULL, NULL);
        if (st != MQSTATE_STATUS_OK) fail("edit", st);
    }
    mqstate_lock_free(lock);
    mqstate_client_close(client);
    return NULL;
}

static mqstate_status reset(void *ctx, const uint8_t *current, size_t len, mqstate_edit *d) {
    (void)ctx, (void)current, (void)len;
    return mqstate_edit_set(d, (const uint8_t *)"0", 1);
}

int main(int argc, char **argv) {
    url = argc > 1 ? argv[1] : "mqtt://localhost:1883";
    mqstate_client *client = connect_to(url);
    if (client == NULL) return 1;
    mqstate_lock *lock = NULL;
    char *token = NULL;
    mqstate_status st = mqstate_lock_new(client, (const uint8_t *)"counter/lock", 12, NULL, &lock);
    if (st != MQSTATE_STATUS_OK) return fail("lock", st);
    st = mqstate_lock_acquire(lock, 5000, 10000, NULL, &token);
    if (st != MQSTATE_STATUS_OK) return fail("acquire", st);
    printf("held the lock with token %s\n", token);
    mqstate_string_free(token);
    mqstate_lock_release(lock, NULL);
    /* The counter is protected by the lock: even the reset goes through it. */
    st = mqstate_lock_edit(lock, (const uint8_t *)"counter", 7, 2000, 10000, reset, NULL, NULL);
    if (st != MQSTATE_STATUS_OK) return fail("reset", st);

    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);

    mqstate_value *v = NULL;
    st = mqstate_client_get(client, (const uint8_t *)"counter", 7, NULL, &v);
    if (st != MQSTATE_STATUS_OK || v == NULL) return fail("get", st);
    size_t len = 0;
    const char *data = (const char *)mqstate_value_data(v, &len);
    printf("counter = %.*s (4 workers x 25 fenced increments)\n", (int)len, data);
    int ok = len == 3 && memcmp(data, "100", 3) == 0;
    mqstate_value_free(v);
    mqstate_lock_free(lock);
    mqstate_client_close(client);
    return ok ? 0 : 1;
}
