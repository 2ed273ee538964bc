/*
 * Error paths of the C API: NULL arguments, text that is not UTF-8, refused values, buffers
 * that are too small, the last error message, status names, store errors from request
 * decoding, and the reset of out-parameters on every failure.
 */
#include "check.h"

static const uint8_t KEY[] = "k";

static void null_arguments(void) {
    mqstate_bytes out = {NULL, 0};
    mqstate_hlc *hlc = NULL;
    mqstate_response *response = NULL;
    int32_t order = 0;

    CHECK_STATUS(mqstate_encode_get(KEY, 1, NULL), MQSTATE_STATUS_INVALID_ARGUMENT, "out NULL");
    CHECK(strstr(last_error(), "out") != NULL, "message names the argument: %s", last_error());
    CHECK_STATUS(mqstate_encode_get(NULL, 1, &out), MQSTATE_STATUS_INVALID_ARGUMENT, "key NULL");
    CHECK_STATUS(mqstate_encode_vdel(KEY, 1, NULL, 3, &out), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "value NULL");
    CHECK_STATUS(mqstate_decode_response(NULL, 5, MQSTATE_VERB_ANY, &response),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "payload NULL");
    CHECK(response == NULL, "response reset");
    CHECK_STATUS(mqstate_decode_notification(NULL, NULL, 0, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "all NULL");
    CHECK_STATUS(mqstate_hlc_parse(NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "text NULL");
    CHECK_STATUS(mqstate_hlc_compare(NULL, NULL, &order), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "handles NULL");
    CHECK_STATUS(mqstate_response_get(NULL, NULL), MQSTATE_STATUS_INVALID_ARGUMENT, "get NULL");
    CHECK_STATUS(mqstate_clock_tick(NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "clock NULL");
    CHECK_STATUS(mqstate_clock_new_with_time_source("n", NULL, NULL, 1, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "callback NULL");
    CHECK_STATUS(mqstate_check_response_topic(NULL), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "topic NULL");

    /* Every free function accepts NULL; freeing bytes twice is harmless. */
    mqstate_bytes_free(NULL);
    mqstate_bytes_free(&out);
    mqstate_bytes_free(&out);
    mqstate_response_free(NULL);
    mqstate_notification_free(NULL);
    mqstate_request_free(NULL);
    mqstate_hlc_free(NULL);
    mqstate_clock_free(NULL);
}

static void refused_values(void) {
    mqstate_bytes out = {(uint8_t *)KEY, 99}; /* garbage: must be reset, never freed */
    mqstate_hlc *hlc = (mqstate_hlc *)&hlc;
    mqstate_clock *clock = NULL;
    mqstate_notification *n = NULL;
    static const uint8_t del[] = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n";

    CHECK_STATUS(mqstate_encode_set(KEY, 0, KEY, 1, MQSTATE_SET_CONDITION_ALWAYS, 0, &out),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "empty key");
    CHECK(out.ptr == NULL && out.len == 0, "out reset on error");
    CHECK_STATUS(mqstate_encode_set(KEY, 1, KEY, 1, 7, 0, &out), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "bad condition");
    mqstate_response *r = (mqstate_response *)&r;
    CHECK_STATUS(mqstate_decode_response((const uint8_t *)"+OK\r\n", 5, 42, &r),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "bad verb");
    CHECK(r == NULL, "response reset on a bad verb");
    CHECK_STATUS(mqstate_hlc_new(1, 0, "a:b", &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "colon");
    CHECK(hlc == NULL, "hlc reset on error");
    CHECK_STATUS(mqstate_hlc_new(1, 0, "", &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "empty node");
    CHECK_STATUS(mqstate_hlc_new(1, 0, "\xff\xfe", &hlc), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "node id not UTF-8");
    CHECK(strstr(last_error(), "UTF-8") != NULL, "UTF-8 message: %s", last_error());
    CHECK_STATUS(mqstate_clock_new("x:y", &clock), MQSTATE_STATUS_INVALID_ARGUMENT, "clock colon");
    CHECK_STATUS(mqstate_clock_new("\xc3", &clock), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "clock not UTF-8");
    CHECK(clock == NULL, "clock reset");
    CHECK_STATUS(mqstate_decode_notification("clients/\xff", del, sizeof del - 1, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "topic not UTF-8");
    CHECK_STATUS(mqstate_check_response_topic("a/+/b"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "wildcard");
    CHECK_STATUS(mqstate_hex_decode("ABC", &out), MQSTATE_STATUS_MALFORMED, "odd hex");
    CHECK_STATUS(mqstate_hex_decode("zz", &out), MQSTATE_STATUS_MALFORMED, "bad hex");
    CHECK(out.ptr == NULL, "hex out reset");
    /* A verb-specific decode refuses a form the verb cannot receive. */
    CHECK_STATUS(mqstate_decode_response((const uint8_t *)"$1\r\nx\r\n", 7, MQSTATE_VERB_SET, &r),
                 MQSTATE_STATUS_MALFORMED, "value for SET");
    CHECK(r == NULL, "response reset");
}

static void buffers(void) {
    mqstate_hlc *hlc = parse_hlc("1:2:node", "buffers");
    const char *canonical = "000000000000001:00002:node"; /* 26 bytes */
    char buf[64];
    size_t len = 0;

    memset(buf, 'x', sizeof buf);
    CHECK_STATUS(mqstate_hlc_to_string(hlc, buf, 26, &len), MQSTATE_STATUS_BUFFER_TOO_SMALL,
                 "no room for the NUL");
    CHECK(len == 26 && buf[0] == '\0', "needed length reported, the buffer left empty");
    CHECK_STATUS(mqstate_hlc_to_string(hlc, NULL, 0, &len), MQSTATE_STATUS_BUFFER_TOO_SMALL,
                 "length query");
    CHECK(len == 26, "length query result");
    CHECK_STATUS(mqstate_hlc_to_string(hlc, NULL, 5, &len), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL buffer with a length");
    CHECK_STATUS(mqstate_hlc_to_string(hlc, buf, 27, NULL), MQSTATE_STATUS_OK, "exact fit");
    CHECK(strcmp(buf, canonical) == 0, "text %s", buf);
    CHECK_STATUS(mqstate_response_topic("c", buf, 10, &len), MQSTATE_STATUS_BUFFER_TOO_SMALL,
                 "topic too long");
    CHECK(len == strlen("clients/c/services/") + strlen(MQSTATE_REQUEST_TOPIC) +
                     strlen("/response"),
          "topic length %zu", len);
    CHECK_STATUS(mqstate_hex_encode(KEY, 1, buf, 2, &len), MQSTATE_STATUS_BUFFER_TOO_SMALL,
                 "hex too long");
    CHECK(len == 2, "hex length");
    mqstate_hlc_free(hlc);
}

static void last_error_message(void) {
    char small[6];
    mqstate_hlc *hlc = NULL;

    CHECK_STATUS(mqstate_hlc_parse("nonsense", &hlc), MQSTATE_STATUS_MALFORMED, "nonsense");
    size_t full = mqstate_last_error_message(NULL, 0);
    CHECK(full > sizeof small, "message length %zu", full);
    CHECK(mqstate_last_error_message(small, sizeof small) == full, "same length when truncated");
    CHECK(strlen(small) == sizeof small - 1, "truncated and NUL-terminated: %s", small);
    CHECK(strstr(last_error(), "nonsense") != NULL, "message quotes the input: %s", last_error());

    hlc = parse_hlc("1:0:n", "ok");
    CHECK(mqstate_last_error_message(NULL, 0) == 0, "success clears the message");
    mqstate_hlc_free(hlc);
}

static void status_names(void) {
    static const struct {
        uint32_t status;
        const char *name;
    } names[] = {
        {MQSTATE_STATUS_OK, "ok"},
        {MQSTATE_STATUS_INVALID_ARGUMENT, "invalid_argument"},
        {MQSTATE_STATUS_MALFORMED, "malformed"},
        {MQSTATE_STATUS_CLOCK_DRIFT, "clock_drift"},
        {MQSTATE_STATUS_CLOCK_OVERFLOW, "clock_overflow"},
        {MQSTATE_STATUS_RPC_ERROR, "rpc_error"},
        {MQSTATE_STATUS_TIMEOUT, "timeout"},
        {MQSTATE_STATUS_CONNECTION_LOST, "connection_lost"},
        {MQSTATE_STATUS_CONNECT_FAILED, "connect_failed"},
        {MQSTATE_STATUS_CLOSED, "closed"},
        {MQSTATE_STATUS_TIMESTAMP_SKEW, "timestamp_skew"},
        {MQSTATE_STATUS_SYNTAX_ERROR, "syntax_error"},
        {MQSTATE_STATUS_UNKNOWN_STORE_ERROR, "unknown_store_error"},
        {MQSTATE_STATUS_BUFFER_TOO_SMALL, "buffer_too_small"},
        {MQSTATE_STATUS_PANIC, "panic"},
        {12345, "unknown_status"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(strcmp(mqstate_status_name(names[i].status), names[i].name) == 0, "%u: %s",
              (unsigned)names[i].status, mqstate_status_name(names[i].status));
    }
    /* The numbers are ABI: spot-check the allocation. */
    CHECK(MQSTATE_STATUS_CLOSED == 9 && MQSTATE_STATUS_TIMESTAMP_SKEW == 100 &&
              MQSTATE_STATUS_UNKNOWN_STORE_ERROR == 112 && MQSTATE_STATUS_PANIC == 255,
          "fixed numbers");
    CHECK(mqstate_version() != NULL && strlen(mqstate_version()) > 0, "version");
    /* The header's version macros name the library they came with. */
    char macros[32];
    snprintf(macros, sizeof macros, "%d.%d.%d", MQSTATE_VERSION_MAJOR, MQSTATE_VERSION_MINOR,
             MQSTATE_VERSION_PATCH);
    CHECK(strcmp(macros, MQSTATE_VERSION_STRING) == 0, "version macros %s vs %s", macros,
          MQSTATE_VERSION_STRING);
    CHECK(strcmp(mqstate_version(), MQSTATE_VERSION_STRING) == 0, "header %s, library %s",
          MQSTATE_VERSION_STRING, mqstate_version());
}

static void request_store_errors(void) {
    static const struct {
        const char *payload;
        mqstate_status status;
        const char *text;
    } cases[] = {
        {"*2\r\n$3\r\nFOO\r\n$1\r\nk\r\n", MQSTATE_STATUS_UNKNOWN_COMMAND, "unknown command"},
        {"*1\r\n$3\r\nGET\r\n", MQSTATE_STATUS_WRONG_NUMBER_OF_ARGUMENTS,
         "wrong number of arguments"},
        {"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", MQSTATE_STATUS_KEY_LENGTH_ZERO,
         "the key length is zero"},
        {"garbage", MQSTATE_STATUS_SYNTAX_ERROR, "syntax error"},
        {"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n", MQSTATE_STATUS_SYNTAX_ERROR,
         "syntax error"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mqstate_request *request = (mqstate_request *)&request;
        CHECK_STATUS(mqstate_decode_request((const uint8_t *)cases[i].payload,
                                            strlen(cases[i].payload), &request),
                     cases[i].status, cases[i].text);
        CHECK(request == NULL, "%s: reset", cases[i].text);
        CHECK(strcmp(last_error(), cases[i].text) == 0, "exact service text: %s", last_error());
    }
}

void test_errors(void) {
    null_arguments();
    refused_values();
    buffers();
    last_error_message();
    status_names();
    request_store_errors();
}
