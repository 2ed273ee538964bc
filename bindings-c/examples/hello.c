/*
 * The README example: encode a SET, decode a GET response, tick a clock. Built and run by
 * the C test suite through pkg-config, so the example stays true.
 */
#include <stdio.h>
#include <string.h>

#include <mqstate.h>

static int fail(mqstate_status status) {
    char message[256];
    mqstate_last_error_message(message, sizeof message);
    fprintf(stderr, "mqstate: %s: %s\n", mqstate_status_name(status), message);
    return 1;
}

int main(void) {
    /* Encode a request payload; the library owns the bytes until mqstate_bytes_free. */
    mqstate_bytes payload = {NULL, 0};
    mqstate_status st = mqstate_encode_set((const uint8_t *)"lock", 4, (const uint8_t *)"me", 2,
                                           MQSTATE_SET_CONDITION_NEX, 10000, &payload);
    if (st != MQSTATE_STATUS_OK) return fail(st);
    printf("SET payload: %zu bytes\n", payload.len);
    mqstate_bytes_free(&payload);

    /* Decode a response; info's pointers borrow from the handle. */
    mqstate_response *response = NULL;
    mqstate_response_info info;
    const char *wire = "$5\r\nhello\r\n";
    st = mqstate_decode_response((const uint8_t *)wire, strlen(wire), MQSTATE_VERB_GET, &response);
    if (st != MQSTATE_STATUS_OK) return fail(st);
    mqstate_response_get(response, &info);
    printf("GET value: %.*s\n", (int)info.value_len, (const char *)info.value);
    mqstate_response_free(response);

    /* Tick a clock for a request's __ts. */
    mqstate_clock *clock = NULL;
    mqstate_hlc *ts = NULL;
    char text[64];
    if ((st = mqstate_clock_new("client-1", &clock)) != MQSTATE_STATUS_OK) return fail(st);
    if ((st = mqstate_clock_tick(clock, &ts)) != MQSTATE_STATUS_OK) return fail(st);
    if ((st = mqstate_hlc_to_string(ts, text, sizeof text, NULL)) != MQSTATE_STATUS_OK) {
        return fail(st);
    }
    printf("__ts: %s\n", text);
    mqstate_hlc_free(ts);
    mqstate_clock_free(clock);

    /* Errors: a status with a stable name and a message. */
    st = mqstate_hlc_parse("not a clock", &ts);
    return st == MQSTATE_STATUS_MALFORMED && strcmp(mqstate_status_name(st), "malformed") == 0
               ? 0
               : 1;
}
