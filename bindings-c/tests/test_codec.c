/*
 * The codec through the C API, driven by every case of requests.json, responses.json and
 * notifications.json: encode each request and decode it back as the service would, decode
 * each response to its verb, decode each notification from its topic and payload.
 */
#include "check.h"

static uint32_t verb_of(const char *verb) {
    if (strcmp(verb, "SET") == 0) return MQSTATE_VERB_SET;
    if (strcmp(verb, "GET") == 0) return MQSTATE_VERB_GET;
    if (strcmp(verb, "DEL") == 0) return MQSTATE_VERB_DEL;
    if (strcmp(verb, "VDEL") == 0) return MQSTATE_VERB_VDEL;
    if (strcmp(verb, "KEYNOTIFY") == 0) return MQSTATE_VERB_KEYNOTIFY;
    return 999;
}

static uint32_t condition_of(const char *condition) {
    if (condition == NULL) return MQSTATE_SET_CONDITION_ALWAYS;
    if (strcmp(condition, "NX") == 0) return MQSTATE_SET_CONDITION_NX;
    if (strcmp(condition, "NEX") == 0) return MQSTATE_SET_CONDITION_NEX;
    return 999;
}

static mqstate_status encode(const struct request_case *c, mqstate_bytes *out) {
    switch (verb_of(c->verb)) {
    case MQSTATE_VERB_SET:
        return mqstate_encode_set(c->key.ptr, c->key.len, c->value.ptr, c->value.len,
                                  condition_of(c->condition), c->px_ms, out);
    case MQSTATE_VERB_GET:
        return mqstate_encode_get(c->key.ptr, c->key.len, out);
    case MQSTATE_VERB_DEL:
        return mqstate_encode_del(c->key.ptr, c->key.len, out);
    case MQSTATE_VERB_VDEL:
        return mqstate_encode_vdel(c->key.ptr, c->key.len, c->value.ptr, c->value.len, out);
    case MQSTATE_VERB_KEYNOTIFY:
        return mqstate_encode_keynotify(c->key.ptr, c->key.len, c->stop != 0, out);
    default:
        return MQSTATE_STATUS_INTERNAL;
    }
}

void test_requests(void) {
    for (size_t i = 0; i < request_cases_count; i++) {
        const struct request_case *c = &request_cases[i];
        mqstate_bytes out = {NULL, 0};
        CHECK_STATUS(encode(c, &out), MQSTATE_STATUS_OK, c->name);
        CHECK(bytes_equal(out.ptr, out.len, c->payload.ptr, c->payload.len), "%s: encode",
              c->name);
        CHECK(out.ptr != NULL && out.ptr[out.len] == 0, "%s: trailing NUL", c->name);
        mqstate_bytes_free(&out);
        CHECK(out.ptr == NULL && out.len == 0, "%s: free resets", c->name);

        /* The service side decodes the expected payload back to the same command. */
        mqstate_request *request = NULL;
        mqstate_request_info info;
        CHECK_STATUS(mqstate_decode_request(c->payload.ptr, c->payload.len, &request),
                     MQSTATE_STATUS_OK, c->name);
        if (request == NULL) continue;
        CHECK_STATUS(mqstate_request_get(request, &info), MQSTATE_STATUS_OK, c->name);
        CHECK(info.verb == verb_of(c->verb), "%s: verb %u", c->name, (unsigned)info.verb);
        CHECK(bytes_equal(info.key, info.key_len, c->key.ptr, c->key.len), "%s: key", c->name);
        if (c->value.ptr != NULL) {
            CHECK(bytes_equal(info.value, info.value_len, c->value.ptr, c->value.len),
                  "%s: value", c->name);
        } else {
            CHECK(info.value == NULL && info.value_len == 0, "%s: no value", c->name);
        }
        CHECK(info.condition == condition_of(c->condition), "%s: condition", c->name);
        CHECK(info.px_ms == c->px_ms, "%s: px", c->name);
        CHECK(info.stop == (c->stop != 0), "%s: stop", c->name);
        mqstate_request_free(request);
    }
}

static uint32_t response_kind_of(const char *kind) {
    if (strcmp(kind, "ok") == 0) return MQSTATE_RESPONSE_KIND_OK;
    if (strcmp(kind, "not_applied") == 0) return MQSTATE_RESPONSE_KIND_NOT_APPLIED;
    if (strcmp(kind, "not_found") == 0) return MQSTATE_RESPONSE_KIND_NOT_FOUND;
    if (strcmp(kind, "value") == 0) return MQSTATE_RESPONSE_KIND_VALUE;
    if (strcmp(kind, "count") == 0) return MQSTATE_RESPONSE_KIND_COUNT;
    if (strcmp(kind, "error") == 0) return MQSTATE_RESPONSE_KIND_ERROR;
    return 999;
}

/* The vectors name the unknown store error "unknown"; the status name is the core code. */
static const char *store_code_of(const char *vector_kind) {
    return strcmp(vector_kind, "unknown") == 0 ? "unknown_store_error" : vector_kind;
}

static void check_response(const struct response_case *c, const mqstate_response *response) {
    mqstate_response_info info;
    CHECK_STATUS(mqstate_response_get(response, &info), MQSTATE_STATUS_OK, c->name);
    CHECK(info.kind == response_kind_of(c->kind), "%s: kind %u", c->name, (unsigned)info.kind);
    if (c->value.ptr != NULL) {
        CHECK(bytes_equal(info.value, info.value_len, c->value.ptr, c->value.len), "%s: value",
              c->name);
    } else {
        CHECK(info.value == NULL, "%s: no value", c->name);
    }
    CHECK(info.count == (c->has_count ? c->count : 0), "%s: count", c->name);
    if (c->error_kind != NULL) {
        CHECK(strcmp(mqstate_status_name(info.error), store_code_of(c->error_kind)) == 0,
              "%s: error %s", c->name, mqstate_status_name(info.error));
        CHECK(info.error >= 100 && info.error <= 112, "%s: store status range", c->name);
        CHECK(info.error_text != NULL && strlen(info.error_text) == info.error_text_len &&
                  strcmp(info.error_text, c->error_text) == 0,
              "%s: error text", c->name);
    } else {
        CHECK(info.error == MQSTATE_STATUS_OK && info.error_text == NULL, "%s: no error",
              c->name);
    }
    if (c->has_applied) {
        CHECK((info.kind == MQSTATE_RESPONSE_KIND_OK) == (c->applied != 0), "%s: applied",
              c->name);
    }
}

void test_responses(void) {
    for (size_t i = 0; i < response_cases_count; i++) {
        const struct response_case *c = &response_cases[i];
        mqstate_response *response = (mqstate_response *)&response; /* must be reset */
        mqstate_status status =
            mqstate_decode_response(c->payload.ptr, c->payload.len, verb_of(c->verb), &response);
        if (strcmp(c->kind, "malformed") == 0) {
            CHECK_STATUS(status, MQSTATE_STATUS_MALFORMED, c->name);
            CHECK(response == NULL, "%s: out reset on error", c->name);
            CHECK(mqstate_last_error_message(NULL, 0) > 0, "%s: message", c->name);
            continue;
        }
        CHECK_STATUS(status, MQSTATE_STATUS_OK, c->name);
        if (status != MQSTATE_STATUS_OK) continue;
        check_response(c, response);
        mqstate_response_free(response);

        /* Without a verb, every well-formed response decodes the same. */
        response = NULL;
        CHECK_STATUS(mqstate_decode_response(c->payload.ptr, c->payload.len, MQSTATE_VERB_ANY,
                                             &response),
                     MQSTATE_STATUS_OK, c->name);
        if (response != NULL) check_response(c, response);
        mqstate_response_free(response);
    }
}

void test_notifications(void) {
    for (size_t i = 0; i < notification_cases_count; i++) {
        const struct notification_case *c = &notification_cases[i];
        mqstate_notification *n = NULL;
        mqstate_status status = mqstate_decode_notification(c->topic, c->payload.ptr,
                                                            c->payload.len, &n);
        if (strcmp(c->kind, "malformed") == 0) {
            CHECK_STATUS(status, MQSTATE_STATUS_MALFORMED, c->name);
            CHECK(n == NULL, "%s: out reset on error", c->name);
            continue;
        }
        CHECK_STATUS(status, MQSTATE_STATUS_OK, c->name);
        if (n == NULL) continue;
        mqstate_notification_info info;
        CHECK_STATUS(mqstate_notification_get(n, &info), MQSTATE_STATUS_OK, c->name);
        CHECK(strcmp(info.client_id, c->client_id) == 0 &&
                  info.client_id_len == strlen(c->client_id),
              "%s: client id %s", c->name, info.client_id);
        CHECK(bytes_equal(info.key, info.key_len, c->key.ptr, c->key.len), "%s: key", c->name);
        if (strcmp(c->kind, "set") == 0) {
            CHECK(info.kind == MQSTATE_EVENT_KIND_SET, "%s: kind", c->name);
            CHECK(bytes_equal(info.value, info.value_len, c->value.ptr, c->value.len),
                  "%s: value", c->name);
        } else {
            CHECK(strcmp(c->kind, "delete") == 0, "%s: known kind %s", c->name, c->kind);
            CHECK(info.kind == MQSTATE_EVENT_KIND_DELETE && info.value == NULL, "%s: delete",
                  c->name);
        }
        mqstate_notification_free(n);

        /* The topic alone names the same client and key. */
        mqstate_bytes client = {NULL, 0}, key = {NULL, 0};
        CHECK_STATUS(mqstate_parse_notification_topic(c->topic, &client, &key),
                     MQSTATE_STATUS_OK, c->name);
        CHECK(client.ptr != NULL && strcmp((const char *)client.ptr, c->client_id) == 0,
              "%s: parsed client id", c->name);
        CHECK(bytes_equal(key.ptr, key.len, c->key.ptr, c->key.len), "%s: parsed key", c->name);
        mqstate_bytes_free(&client);
        mqstate_bytes_free(&key);
    }
}

/* SCAN (scan.json): every request encodes byte-exact and decodes back (pattern and token),
   every page decodes to its keys and token, malformed pages and store errors as above. */
static void check_page(const struct scan_response_case *c, const mqstate_response *response) {
    mqstate_response_info info;
    CHECK_STATUS(mqstate_response_get(response, &info), MQSTATE_STATUS_OK, c->name);
    if (strcmp(c->kind, "error") == 0) {
        CHECK(info.kind == MQSTATE_RESPONSE_KIND_ERROR, "%s: kind %u", c->name, (unsigned)info.kind);
        CHECK(strcmp(mqstate_status_name(info.error), store_code_of(c->error_kind)) == 0,
              "%s: error %s", c->name, mqstate_status_name(info.error));
        CHECK(info.error_text != NULL && strcmp(info.error_text, c->error_text) == 0,
              "%s: error text", c->name);
        CHECK(mqstate_response_key(response, 0, NULL) == NULL, "%s: no key", c->name);
        return;
    }
    CHECK(strcmp(c->kind, "keys") == 0, "%s: known kind %s", c->name, c->kind);
    CHECK(info.kind == MQSTATE_RESPONSE_KIND_KEYS, "%s: kind %u", c->name, (unsigned)info.kind);
    CHECK(info.count == c->key_count, "%s: %lu keys", c->name, (unsigned long)info.count);
    CHECK(info.value == NULL && info.error_text == NULL, "%s: nothing else", c->name);
    for (size_t k = 0; k < c->key_count && k < info.count; k++) {
        size_t len = 99;
        const uint8_t *key = mqstate_response_key(response, k, &len);
        CHECK(key != NULL && bytes_equal(key, len, c->keys[k].ptr, c->keys[k].len),
              "%s: key %lu", c->name, (unsigned long)k);
    }
    size_t len = 99;
    CHECK(mqstate_response_key(response, (size_t)info.count, &len) == NULL && len == 0,
          "%s: no key past the end", c->name);
    const uint8_t *token = mqstate_response_token(response, &len);
    if (c->token.ptr == NULL) {
        CHECK(token == NULL && len == 0, "%s: final page has no token", c->name);
    } else {
        CHECK(token != NULL && bytes_equal(token, len, c->token.ptr, c->token.len), "%s: token",
              c->name);
    }
}

void test_scan(void) {
    for (size_t i = 0; i < scan_request_cases_count; i++) {
        const struct scan_request_case *c = &scan_request_cases[i];
        mqstate_bytes out = {NULL, 0};
        CHECK_STATUS(mqstate_encode_scan(c->pattern.ptr, c->pattern.len, c->token.ptr,
                                         c->token.len, &out),
                     MQSTATE_STATUS_OK, c->name);
        CHECK(bytes_equal(out.ptr, out.len, c->payload.ptr, c->payload.len), "%s: encode",
              c->name);
        mqstate_bytes_free(&out);

        mqstate_request *request = NULL;
        mqstate_request_info info;
        CHECK_STATUS(mqstate_decode_request(c->payload.ptr, c->payload.len, &request),
                     MQSTATE_STATUS_OK, c->name);
        if (request == NULL) continue;
        CHECK_STATUS(mqstate_request_get(request, &info), MQSTATE_STATUS_OK, c->name);
        CHECK(info.verb == MQSTATE_VERB_SCAN, "%s: verb %u", c->name, (unsigned)info.verb);
        CHECK(bytes_equal(info.key, info.key_len, c->pattern.ptr, c->pattern.len), "%s: pattern",
              c->name);
        size_t len = 99;
        const uint8_t *token = mqstate_request_token(request, &len);
        if (c->token.ptr == NULL) {
            CHECK(token == NULL && len == 0, "%s: no token", c->name);
        } else {
            CHECK(token != NULL && bytes_equal(token, len, c->token.ptr, c->token.len),
                  "%s: token", c->name);
        }
        mqstate_request_free(request);
    }

    /* The client refuses an empty pattern; an empty token is a token. */
    mqstate_bytes out = {(uint8_t *)&out, 7};
    CHECK_STATUS(mqstate_encode_scan((const uint8_t *)"", 0, NULL, 0, &out),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "empty pattern");
    CHECK(out.ptr == NULL && out.len == 0, "out reset on error");
    CHECK_STATUS(mqstate_encode_scan((const uint8_t *)"k*", 2, (const uint8_t *)"", 0, &out),
                 MQSTATE_STATUS_OK, "empty token");
    CHECK(bytes_equal(out.ptr, out.len, (const uint8_t *)"*3\r\n$4\r\nSCAN\r\n$2\r\nk*\r\n$0\r\n\r\n",
                      28),
          "empty token encoded");
    mqstate_bytes_free(&out);
    CHECK_STATUS(mqstate_encode_scan(NULL, 2, NULL, 0, &out), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL pattern");
    CHECK(mqstate_request_token(NULL, NULL) == NULL, "NULL request");
    CHECK(mqstate_response_token(NULL, NULL) == NULL, "NULL response");

    for (size_t i = 0; i < scan_response_cases_count; i++) {
        const struct scan_response_case *c = &scan_response_cases[i];
        mqstate_response *response = (mqstate_response *)&response; /* must be reset */
        mqstate_status status =
            mqstate_decode_response(c->payload.ptr, c->payload.len, MQSTATE_VERB_SCAN, &response);
        if (strcmp(c->kind, "malformed") == 0) {
            CHECK_STATUS(status, MQSTATE_STATUS_MALFORMED, c->name);
            CHECK(response == NULL, "%s: out reset on error", c->name);
            CHECK(mqstate_last_error_message(NULL, 0) > 0, "%s: message", c->name);
            continue;
        }
        CHECK_STATUS(status, MQSTATE_STATUS_OK, c->name);
        if (response == NULL) continue;
        check_page(c, response);
        mqstate_response_free(response);

        response = NULL;
        CHECK_STATUS(mqstate_decode_response(c->payload.ptr, c->payload.len, MQSTATE_VERB_ANY,
                                             &response),
                     MQSTATE_STATUS_OK, c->name);
        if (response != NULL) check_page(c, response);
        mqstate_response_free(response);

        /* A page answers nothing but a SCAN. */
        if (strcmp(c->kind, "keys") == 0) {
            CHECK_STATUS(mqstate_decode_response(c->payload.ptr, c->payload.len, MQSTATE_VERB_GET,
                                                 &response),
                         MQSTATE_STATUS_MALFORMED, c->name);
            CHECK(response == NULL, "%s: out reset", c->name);
        }
    }
}
