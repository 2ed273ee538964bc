/*
 * The harness of a documentation fragment (see tests/docblocks.py): the includes a page's
 * C fragment may rely on, and a main that hands it a client connected to the live store at
 * MQSTATE_URL, closes the client afterwards and exits 0 when all of that worked.
 */
#ifndef MQSTATE_DOCBLOCK_H
#define MQSTATE_DOCBLOCK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqstate.h"

static inline int docblock_run(void (*block)(mqstate_client *client)) {
    const char *url = getenv("MQSTATE_URL");
    mqstate_settings *settings = NULL;
    mqstate_client *client = NULL;
    mqstate_status st = mqstate_settings_from_url(url != NULL ? url : "", &settings);
    if (st == MQSTATE_STATUS_OK) st = mqstate_client_connect(settings, 0, &client);
    mqstate_settings_free(settings);
    if (st != MQSTATE_STATUS_OK) {
        char message[512];
        mqstate_last_error_message(message, sizeof message);
        fprintf(stderr, "connect to %s: %s: %s\n", url ? url : "(unset)",
                mqstate_status_name(st), message);
        return 1;
    }
    block(client);
    mqstate_client_close(client);
    return mqstate_wait_idle(10000) ? 0 : 1;
}

#endif
