/*
 * Topic names through the C API: every case of topics.json, plus the hex encoding the
 * notification topics use.
 */
#include "check.h"

void test_topics(void) {
    char buf[512];
    size_t len = 0;

    CHECK(strcmp(MQSTATE_REQUEST_TOPIC, vector_request_topic) == 0, "macro %s",
          MQSTATE_REQUEST_TOPIC);
    CHECK(strcmp(mqstate_request_topic(), vector_request_topic) == 0, "function %s",
          mqstate_request_topic());

    for (size_t i = 0; i < response_topic_cases_count; i++) {
        const struct topic_case *c = &response_topic_cases[i];
        CHECK_STATUS(mqstate_response_topic(c->client_id, buf, sizeof buf, &len),
                     MQSTATE_STATUS_OK, c->client_id);
        CHECK(strcmp(buf, c->topic) == 0 && len == strlen(c->topic), "%s: %s", c->client_id,
              buf);
        CHECK_STATUS(mqstate_check_response_topic(buf), MQSTATE_STATUS_OK, buf);
    }

    for (size_t i = 0; i < notification_filter_cases_count; i++) {
        const struct topic_case *c = &notification_filter_cases[i];
        CHECK_STATUS(mqstate_notification_filter(c->client_id, buf, sizeof buf, &len),
                     MQSTATE_STATUS_OK, c->client_id);
        CHECK(strcmp(buf, c->topic) == 0 && len == strlen(c->topic), "%s: %s", c->client_id,
              buf);
    }

    for (size_t i = 0; i < notification_topic_cases_count; i++) {
        const struct topic_case *c = &notification_topic_cases[i];
        CHECK_STATUS(mqstate_notification_topic(c->client_id, c->key.ptr, c->key.len, buf,
                                                sizeof buf, &len),
                     MQSTATE_STATUS_OK, c->topic);
        CHECK(strcmp(buf, c->topic) == 0 && len == strlen(c->topic), "%s: %s", c->topic, buf);

        mqstate_bytes client = {NULL, 0}, key = {NULL, 0};
        CHECK_STATUS(mqstate_parse_notification_topic(c->topic, &client, &key),
                     MQSTATE_STATUS_OK, c->topic);
        CHECK(client.ptr != NULL && strcmp((const char *)client.ptr, c->client_id) == 0 &&
                  client.len == strlen(c->client_id),
              "%s: client id", c->topic);
        CHECK(bytes_equal(key.ptr, key.len, c->key.ptr, c->key.len), "%s: key", c->topic);
        mqstate_bytes_free(&client);
        mqstate_bytes_free(&key);
    }

    for (size_t i = 0; i < allowed_cases_count; i++) {
        const struct allowed_case *c = &allowed_cases[i];
        CHECK_STATUS(mqstate_check_response_topic(c->topic),
                     c->allowed ? MQSTATE_STATUS_OK : MQSTATE_STATUS_INVALID_ARGUMENT, c->topic);
    }

    /* Hex: every byte value round-trips; lower case decodes too. */
    uint8_t all[256];
    char hex[513];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    CHECK_STATUS(mqstate_hex_encode(all, sizeof all, hex, sizeof hex, &len), MQSTATE_STATUS_OK,
                 "hex encode");
    CHECK(len == 512 && strncmp(hex, "000102", 6) == 0 && strcmp(hex + 506, "FDFEFF") == 0,
          "hex text");
    mqstate_bytes back = {NULL, 0};
    CHECK_STATUS(mqstate_hex_decode(hex, &back), MQSTATE_STATUS_OK, "hex decode");
    CHECK(bytes_equal(back.ptr, back.len, all, sizeof all), "hex round trip");
    mqstate_bytes_free(&back);
    CHECK_STATUS(mqstate_hex_decode("6b6B", &back), MQSTATE_STATUS_OK, "lower case");
    CHECK(bytes_equal(back.ptr, back.len, (const uint8_t *)"kk", 2), "lower case bytes");
    mqstate_bytes_free(&back);
    CHECK_STATUS(mqstate_hex_decode("", &back), MQSTATE_STATUS_OK, "empty hex");
    CHECK(back.ptr != NULL && back.len == 0 && back.ptr[0] == 0, "empty result is \"\"");
    mqstate_bytes_free(&back);
}
