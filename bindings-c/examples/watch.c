/*
 * Watch a key two ways: pulling events with a timeout, and integrating the subscription's
 * file descriptor into a poll() loop (as an epoll/libuv/libevent application would).
 *   ./watch [mqtt://localhost:1883]
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <string.h>

#include "common.h"

static void print_event(const char *how, const mqstate_sub_event *e) {
    size_t len = 0;
    const uint8_t *value = mqstate_sub_event_value(e, &len);
    if (mqstate_sub_event_type_of(e) == MQSTATE_SUB_EVENT_TYPE_KEY_SET) {
        printf("%s: set %.*s @ %s\n", how, (int)len, (const char *)value, mqstate_sub_event_version(e));
    } else if (mqstate_sub_event_type_of(e) == MQSTATE_SUB_EVENT_TYPE_KEY_DELETED) {
        printf("%s: deleted @ %s\n", how, mqstate_sub_event_version(e));
    } else {
        printf("%s: connection event %u\n", how, (unsigned)mqstate_sub_event_type_of(e));
    }
}

static mqstate_status put(mqstate_client *c, const char *key, const char *value) {
    return mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)value,
                              strlen(value), NULL, NULL, NULL);
}

int main(int argc, char **argv) {
    mqstate_client *client = connect_to(argc > 1 ? argv[1] : "mqtt://localhost:1883");
    if (client == NULL) return 1;
    const char *key = "sensor/temperature";
    mqstate_subscription *sub = NULL;
    mqstate_sub_event *event = NULL;
    mqstate_status st = mqstate_client_observe(client, (const uint8_t *)key, strlen(key), NULL, &sub);
    if (st != MQSTATE_STATUS_OK) return fail("observe", st);

    /* 1. Pull. */
    put(client, key, "20.5");
    put(client, key, "21.0");
    for (int i = 0; i < 2; i++) {
        st = mqstate_subscription_next(sub, 5000, &event);
        if (st != MQSTATE_STATUS_OK) return fail("next", st);
        print_event("pulled", event);
        mqstate_sub_event_free(event);
    }

    /* 2. poll() on the subscription's descriptor. */
    int fd = -1;
    st = mqstate_subscription_fd(sub, &fd);
    if (st != MQSTATE_STATUS_OK) return fail("fd", st);
    put(client, key, "21.5");
    mqstate_client_delete(client, (const uint8_t *)key, strlen(key), NULL, NULL);
    int seen = 0;
    while (seen < 2) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) != 1) {
            fprintf(stderr, "no event within 5 s\n");
            return 1;
        }
        /* Everything queued now, without waiting (try_next gives NULL when none is left). */
        while (mqstate_subscription_try_next(sub, &event) == MQSTATE_STATUS_OK && event != NULL) {
            print_event("polled", event);
            mqstate_sub_event_free(event);
            seen++;
        }
    }
    mqstate_subscription_free(sub); /* sends KEYNOTIFY STOP */
    mqstate_client_close(client);
    return 0;
}
