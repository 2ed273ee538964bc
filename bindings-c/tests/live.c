/* Helpers of the C client tests (see live.h). */
#define _POSIX_C_SOURCE 200809L
#include "live.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

const char *live_url(void) {
    const char *url = getenv("MQSTATE_URL");
    CHECK(url != NULL && url[0] != '\0', "MQSTATE_URL names the live store");
    return url;
}

mqstate_client *client_at(const char *url, const char *const *pairs) {
    mqstate_settings *settings = NULL;
    mqstate_client *client = NULL;
    CHECK_STATUS(mqstate_settings_from_url(url, &settings), MQSTATE_STATUS_OK, "settings");
    CHECK_STATUS(mqstate_settings_set(settings, "request_timeout", "5"), MQSTATE_STATUS_OK,
                 "request_timeout");
    for (size_t i = 0; pairs != NULL && pairs[i] != NULL; i += 2) {
        CHECK_STATUS(mqstate_settings_set(settings, pairs[i], pairs[i + 1]), MQSTATE_STATUS_OK,
                     pairs[i]);
    }
    CHECK_STATUS(mqstate_client_connect(settings, 10000, &client), MQSTATE_STATUS_OK, "connect");
    mqstate_settings_free(settings);
    return client;
}

mqstate_client *live_client(void) {
    const char *url = live_url();
    return url == NULL ? NULL : client_at(url, NULL);
}

const char *live_key(char *buf, size_t len, const char *name) {
    static unsigned run = 0;
    if (run == 0) {
        run = (unsigned)(now_ms() ^ (uint64_t)(uintptr_t)&run) & 0xffffffu;
    }
    snprintf(buf, len, "c/%06x/%s", run, name);
    return buf;
}

uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
