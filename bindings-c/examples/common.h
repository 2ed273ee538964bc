/* Shared by the examples: print the last error and connect to the URL in argv[1]. */
#ifndef MQSTATE_EXAMPLE_COMMON_H
#define MQSTATE_EXAMPLE_COMMON_H

#include <stdio.h>

#include <mqstate.h>

static inline int fail(const char *what, mqstate_status status) {
    char message[512];
    mqstate_last_error_message(message, sizeof message);
    fprintf(stderr, "%s: %s: %s\n", what, mqstate_status_name(status), message);
    return 1;
}

/* Connects to `url` (e.g. mqtt://localhost:1883); NULL after printing the error. */
static inline mqstate_client *connect_to(const char *url) {
    mqstate_settings *settings = NULL;
    mqstate_client *client = NULL;
    mqstate_status st = mqstate_settings_from_url(url, &settings);
    if (st == MQSTATE_STATUS_OK) st = mqstate_settings_set(settings, "request_timeout", "5");
    if (st == MQSTATE_STATUS_OK) st = mqstate_client_connect(settings, 0, &client);
    mqstate_settings_free(settings);
    if (st != MQSTATE_STATUS_OK) fail("connect", st);
    return client;
}

#endif
