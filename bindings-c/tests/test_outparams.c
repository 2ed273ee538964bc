/*
 * The header's promise, checked function by function: after a failure every out-parameter
 * holds NULL / 0 / false / {NULL, 0} / the enum's _NONE value / the empty string, whatever
 * it held before — so there is nothing to free and nothing stale to read. Each call below
 * fails (a NULL handle or a refused argument) with its out-parameters filled with garbage
 * first. Garbage pointers point at a local and are never freed, so a missing reset shows
 * as a failed check, not a crash.
 */
#include "check.h"

/* A pointer that is not NULL and must never be dereferenced or freed. */
static int junk_target;
#define JUNK ((void *)&junk_target)

static const uint8_t K[] = "k";

/* The pure layer: codec, clock, topics. */
static void pure_layer(void) {
    mqstate_bytes bytes = {(uint8_t *)JUNK, 99}, second = {(uint8_t *)JUNK, 99};
    mqstate_hlc *hlc = JUNK;
    mqstate_clock *clock = JUNK;
    uint64_t u = 99;
    int32_t order = 7;
    char buf[16];
    size_t n = 99;

#define BYTES_RESET(b, what) CHECK((b).ptr == NULL && (b).len == 0, "%s: bytes reset", what)
    CHECK_STATUS(mqstate_encode_set(K, 0, K, 1, 0, 0, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "encode_set");
    BYTES_RESET(bytes, "encode_set");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_encode_get(NULL, 1, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT, "get");
    BYTES_RESET(bytes, "encode_get");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_encode_del(K, 0, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT, "del");
    BYTES_RESET(bytes, "encode_del");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_encode_vdel(K, 1, NULL, 2, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "vdel");
    BYTES_RESET(bytes, "encode_vdel");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_encode_keynotify(K, 0, false, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "keynotify");
    BYTES_RESET(bytes, "encode_keynotify");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_encode_scan(K, 0, NULL, 0, &bytes), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "scan");
    BYTES_RESET(bytes, "encode_scan");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_hex_decode("zz", &bytes), MQSTATE_STATUS_MALFORMED, "hex_decode");
    BYTES_RESET(bytes, "hex_decode");
    bytes = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_parse_notification_topic("not/a/topic", &bytes, &second),
                 MQSTATE_STATUS_MALFORMED, "parse_notification_topic");
    BYTES_RESET(bytes, "parse_notification_topic client id");
    BYTES_RESET(second, "parse_notification_topic key");
    second = (mqstate_bytes){(uint8_t *)JUNK, 99};
    CHECK_STATUS(mqstate_parse_notification_topic("x", NULL, &second),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "parse_notification_topic, first out NULL");
    BYTES_RESET(second, "the second output even when the first is NULL");

    mqstate_request *request = JUNK;
    CHECK(mqstate_decode_request((const uint8_t *)"x", 1, &request) != MQSTATE_STATUS_OK,
          "decode_request fails");
    CHECK(request == NULL, "decode_request: handle reset");
    mqstate_response *response = JUNK;
    CHECK_STATUS(mqstate_decode_response((const uint8_t *)"x", 1, MQSTATE_VERB_ANY, &response),
                 MQSTATE_STATUS_MALFORMED, "decode_response");
    CHECK(response == NULL, "decode_response: handle reset");
    mqstate_notification *notification = JUNK;
    CHECK_STATUS(mqstate_decode_notification("x", (const uint8_t *)"x", 1, &notification),
                 MQSTATE_STATUS_MALFORMED, "decode_notification");
    CHECK(notification == NULL, "decode_notification: handle reset");

    mqstate_request_info request_info;
    memset(&request_info, 0x5a, sizeof request_info);
    CHECK_STATUS(mqstate_request_get(NULL, &request_info), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "request_get");
    CHECK(request_info.verb == MQSTATE_VERB_ANY && request_info.key == NULL &&
              request_info.key_len == 0 && request_info.value == NULL &&
              request_info.value_len == 0 && request_info.px_ms == 0 && !request_info.stop &&
              request_info.condition == MQSTATE_SET_CONDITION_ALWAYS,
          "request_get: info reset");
    mqstate_response_info response_info;
    memset(&response_info, 0x5a, sizeof response_info);
    CHECK_STATUS(mqstate_response_get(NULL, &response_info), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "response_get");
    CHECK(response_info.kind == MQSTATE_RESPONSE_KIND_NONE && response_info.value == NULL &&
              response_info.value_len == 0 && response_info.count == 0 &&
              response_info.error == MQSTATE_STATUS_OK && response_info.error_text == NULL &&
              response_info.error_text_len == 0,
          "response_get: info reset");
    mqstate_notification_info notification_info;
    memset(&notification_info, 0x5a, sizeof notification_info);
    CHECK_STATUS(mqstate_notification_get(NULL, &notification_info),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "notification_get");
    CHECK(notification_info.kind == MQSTATE_EVENT_KIND_NONE && notification_info.key == NULL &&
              notification_info.key_len == 0 && notification_info.client_id == NULL &&
              notification_info.client_id_len == 0 && notification_info.value == NULL &&
              notification_info.value_len == 0,
          "notification_get: info reset");

    CHECK_STATUS(mqstate_hlc_parse("nope", &hlc), MQSTATE_STATUS_MALFORMED, "hlc_parse");
    CHECK(hlc == NULL, "hlc_parse: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_hlc_new(1, 0, "a:b", &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "hlc_new");
    CHECK(hlc == NULL, "hlc_new: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_hlc_tick(NULL, 1, 1, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "tick");
    CHECK(hlc == NULL, "hlc_tick: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_hlc_receive(NULL, NULL, 1, 1, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "receive");
    CHECK(hlc == NULL, "hlc_receive: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_hlc_clone(NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "clone");
    CHECK(hlc == NULL, "hlc_clone: reset");
    CHECK_STATUS(mqstate_hlc_wall_ms(NULL, &u), MQSTATE_STATUS_INVALID_ARGUMENT, "wall_ms");
    CHECK(u == 0, "hlc_wall_ms: reset");
    u = 99;
    CHECK_STATUS(mqstate_hlc_counter(NULL, &u), MQSTATE_STATUS_INVALID_ARGUMENT, "counter");
    CHECK(u == 0, "hlc_counter: reset");
    CHECK_STATUS(mqstate_hlc_compare(NULL, NULL, &order), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "compare");
    CHECK(order == 0, "hlc_compare: reset");
    order = 7;
    CHECK_STATUS(mqstate_hlc_compare_time(NULL, NULL, &order), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "compare_time");
    CHECK(order == 0, "hlc_compare_time: reset");

    /* Text into the caller's buffer: the empty string and a zero length. */
#define TEXT_RESET(what) CHECK(buf[0] == '\0' && n == 0, "%s: text reset (n=%zu)", what, n)
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_hlc_to_string(NULL, buf, sizeof buf, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "hlc_to_string");
    TEXT_RESET("hlc_to_string");
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_hlc_node_id(NULL, buf, sizeof buf, &n), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "hlc_node_id");
    TEXT_RESET("hlc_node_id");
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_response_topic(NULL, buf, sizeof buf, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "response_topic");
    TEXT_RESET("response_topic");
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_notification_filter("\xff", buf, sizeof buf, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "notification_filter");
    TEXT_RESET("notification_filter");
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_notification_topic("c", NULL, 3, buf, sizeof buf, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "notification_topic");
    TEXT_RESET("notification_topic");
    memset(buf, 'x', sizeof buf), n = 99;
    CHECK_STATUS(mqstate_hex_encode(NULL, 3, buf, sizeof buf, &n),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "hex_encode");
    TEXT_RESET("hex_encode");

    CHECK_STATUS(mqstate_clock_new("a:b", &clock), MQSTATE_STATUS_INVALID_ARGUMENT, "clock_new");
    CHECK(clock == NULL, "clock_new: reset");
    clock = JUNK;
    CHECK_STATUS(mqstate_clock_new_with_time_source("n", NULL, NULL, 1, &clock),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "clock_new_with_time_source");
    CHECK(clock == NULL, "clock_new_with_time_source: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_clock_tick(NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT, "clock_tick");
    CHECK(hlc == NULL, "clock_tick: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_clock_receive(NULL, NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "clock_receive");
    CHECK(hlc == NULL, "clock_receive: reset");
    hlc = JUNK;
    CHECK_STATUS(mqstate_clock_current(NULL, &hlc), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "clock_current");
    CHECK(hlc == NULL, "clock_current: reset");

    /* Borrowing accessors of NULL handles: NULL with a zero length. */
    n = 99;
    CHECK(mqstate_request_token(NULL, &n) == NULL && n == 0, "request_token");
    n = 99;
    CHECK(mqstate_response_key(NULL, 0, &n) == NULL && n == 0, "response_key");
    n = 99;
    CHECK(mqstate_response_token(NULL, &n) == NULL && n == 0, "response_token");
}

/* The client: every function with an out-parameter, failing on a NULL handle or argument. */
static void client_layer(void) {
    bool flag = true;
    char *text = JUNK;
    uint64_t count = 99;
    mqstate_subscription *sub = JUNK;
    size_t n = 99;

    mqstate_settings *settings = JUNK;
    CHECK_STATUS(mqstate_settings_from_url("http://nope", &settings),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "settings_from_url");
    CHECK(settings == NULL, "settings_from_url: reset");
    mqstate_client *client = JUNK;
    CHECK_STATUS(mqstate_client_connect(NULL, 0, &client), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "client_connect");
    CHECK(client == NULL, "client_connect: reset");

    CHECK_STATUS(mqstate_client_set(NULL, K, 1, K, 1, NULL, &flag, &text),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "client_set");
    CHECK(!flag && text == NULL, "client_set: applied and version reset");
    mqstate_value *value = JUNK;
    CHECK_STATUS(mqstate_client_get(NULL, K, 1, NULL, &value), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "client_get");
    CHECK(value == NULL, "client_get: reset");
    mqstate_cache_stats cache_stats;
    memset(&cache_stats, 0xff, sizeof cache_stats);
    flag = true;
    CHECK_STATUS(mqstate_client_cache_stats(NULL, &flag, &cache_stats),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "client_cache_stats");
    CHECK(!flag && cache_stats.hits == 0 && cache_stats.misses == 0 &&
              cache_stats.evictions == 0 && cache_stats.invalidations == 0 &&
              cache_stats.entries == 0 && cache_stats.bytes == 0,
          "client_cache_stats: enabled and counters reset");
    CHECK_STATUS(mqstate_client_delete(NULL, K, 1, NULL, &count), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "client_delete");
    CHECK(count == 0, "client_delete: reset");
    mqstate_vdel_outcome outcome = MQSTATE_VDEL_OUTCOME_VALUE_MISMATCH;
    CHECK_STATUS(mqstate_client_vdel(NULL, K, 1, K, 1, NULL, &outcome),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "client_vdel");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_NONE, "client_vdel: outcome reset to NONE (%u)",
          (unsigned)outcome);
    CHECK_STATUS(mqstate_client_observe(NULL, K, 1, NULL, &sub), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "client_observe");
    CHECK(sub == NULL, "client_observe: reset");
    mqstate_scan *scan = JUNK;
    CHECK_STATUS(mqstate_client_scan(NULL, K, 1, 0, &scan), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "client_scan");
    CHECK(scan == NULL, "client_scan: reset");
    mqstate_scan_page *page = JUNK;
    CHECK_STATUS(mqstate_scan_next(NULL, NULL, &page), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "scan_next");
    CHECK(page == NULL, "scan_next: reset");
    n = 99;
    CHECK(mqstate_scan_page_key(NULL, 0, &n) == NULL && n == 0, "scan_page_key");

    mqstate_sub_event *event = JUNK;
    CHECK_STATUS(mqstate_subscription_next(NULL, 0, &event), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "subscription_next");
    CHECK(event == NULL, "subscription_next: reset");
    event = JUNK;
    CHECK_STATUS(mqstate_subscription_try_next(NULL, &event), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "subscription_try_next");
    CHECK(event == NULL, "subscription_try_next: reset");
    int fd = 7;
    CHECK_STATUS(mqstate_subscription_fd(NULL, &fd), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "subscription_fd");
    CHECK(fd == -1, "subscription_fd: reset to -1");
    CHECK(mqstate_sub_event_type_of(NULL) == MQSTATE_SUB_EVENT_TYPE_NONE, "type of NULL");
    n = 99;
    CHECK(mqstate_sub_event_key(NULL, &n) == NULL && n == 0, "sub_event_key");
    n = 99;
    CHECK(mqstate_sub_event_value(NULL, &n) == NULL && n == 0, "sub_event_value");
    n = 99;
    CHECK(mqstate_value_data(NULL, &n) == NULL && n == 0, "value_data");

    mqstate_lock *lock = JUNK;
    CHECK_STATUS(mqstate_lock_new(NULL, K, 1, NULL, &lock), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_new");
    CHECK(lock == NULL, "lock_new: reset");
    flag = true, text = JUNK;
    CHECK_STATUS(mqstate_lock_try_acquire(NULL, 0, &flag, &text),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "lock_try_acquire");
    CHECK(!flag && text == NULL, "lock_try_acquire: reset");
    text = JUNK;
    CHECK_STATUS(mqstate_lock_acquire(NULL, 0, 0, NULL, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_acquire");
    CHECK(text == NULL, "lock_acquire: reset");
    flag = true, text = JUNK;
    CHECK_STATUS(mqstate_lock_renew(NULL, &flag, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_renew");
    CHECK(!flag && text == NULL, "lock_renew: reset");
    flag = true;
    CHECK_STATUS(mqstate_lock_release(NULL, &flag), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_release");
    CHECK(!flag, "lock_release: reset");
    text = JUNK;
    CHECK_STATUS(mqstate_lock_holder(NULL, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_holder");
    CHECK(text == NULL, "lock_holder: reset");
    text = JUNK;
    CHECK_STATUS(mqstate_lock_fencing_token(NULL, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_fencing_token");
    CHECK(text == NULL, "lock_fencing_token: reset");
    CHECK_STATUS(mqstate_lock_set_auto_renew(NULL, 100), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_set_auto_renew");
    size_t key_len = 7;
    CHECK(mqstate_lock_key(NULL, &key_len) == NULL && key_len == 0, "lock_key: reset");
    CHECK(mqstate_client_id(NULL) == NULL && !mqstate_client_connected(NULL), "client: NULL");
    CHECK(mqstate_election_candidate_id(NULL) == NULL, "election_candidate_id: NULL");
    text = JUNK;
    CHECK_STATUS(mqstate_election_fencing_token(NULL, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "election_fencing_token");
    CHECK(text == NULL, "election_fencing_token: reset");
    sub = JUNK;
    CHECK_STATUS(mqstate_lock_watch_holder(NULL, &sub), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_watch_holder");
    CHECK(sub == NULL, "lock_watch_holder: reset");
    sub = JUNK;
    CHECK_STATUS(mqstate_lock_watch_status(NULL, &sub), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "lock_watch_status");
    CHECK(sub == NULL, "lock_watch_status: reset");

    mqstate_election *election = JUNK;
    CHECK_STATUS(mqstate_election_new(NULL, K, 1, "c", NULL, &election),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "election_new");
    CHECK(election == NULL, "election_new: reset");
    text = JUNK;
    CHECK_STATUS(mqstate_election_campaign(NULL, 0, 0, NULL, &text),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "election_campaign");
    CHECK(text == NULL, "election_campaign: reset");
    flag = true;
    CHECK_STATUS(mqstate_election_try_campaign(NULL, 0, &flag),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "election_try_campaign");
    CHECK(!flag, "election_try_campaign: reset");
    flag = true;
    CHECK_STATUS(mqstate_election_resign(NULL, &flag), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "election_resign");
    CHECK(!flag, "election_resign: reset");
    text = JUNK;
    CHECK_STATUS(mqstate_election_leader(NULL, &text), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "election_leader");
    CHECK(text == NULL, "election_leader: reset");
    sub = JUNK;
    CHECK_STATUS(mqstate_election_watch_leader(NULL, &sub), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "election_watch_leader");
    CHECK(sub == NULL, "election_watch_leader: reset");
}

/* The neutral values are 0 and named, and the names the header gives them. */
static void neutral_values(void) {
    CHECK(MQSTATE_VDEL_OUTCOME_NONE == 0, "VDEL outcome NONE is 0");
    CHECK(MQSTATE_VDEL_OUTCOME_DELETED != 0, "0 is no longer DELETED");
    CHECK(MQSTATE_SUB_EVENT_TYPE_NONE == 0 && MQSTATE_RESPONSE_KIND_NONE == 0 &&
              MQSTATE_EVENT_KIND_NONE == 0 && MQSTATE_STATUS_FAMILY_NONE == 0,
          "every enum's 0 is its NONE");
    CHECK(strcmp(mqstate_vdel_outcome_name(MQSTATE_VDEL_OUTCOME_DELETED), "deleted") == 0 &&
              strcmp(mqstate_vdel_outcome_name(MQSTATE_VDEL_OUTCOME_NOT_FOUND), "not_found") == 0 &&
              strcmp(mqstate_vdel_outcome_name(MQSTATE_VDEL_OUTCOME_VALUE_MISMATCH),
                     "value_mismatch") == 0 &&
              strcmp(mqstate_vdel_outcome_name(MQSTATE_VDEL_OUTCOME_NONE), "none") == 0 &&
              strcmp(mqstate_vdel_outcome_name(77), "none") == 0,
          "VDEL outcome names are the core's");
}

/* SET conditions as text, parsed and named by the core. */
static void conditions(void) {
    uint32_t condition = 99;
    CHECK_STATUS(mqstate_set_condition_parse("NX", &condition), MQSTATE_STATUS_OK, "NX");
    CHECK(condition == MQSTATE_SET_CONDITION_NX, "any case");
    CHECK_STATUS(mqstate_set_condition_parse("nex", &condition), MQSTATE_STATUS_OK, "nex");
    CHECK(condition == MQSTATE_SET_CONDITION_NEX, "nex");
    CHECK_STATUS(mqstate_set_condition_parse("maybe", &condition), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "unknown condition");
    CHECK(condition == MQSTATE_SET_CONDITION_ALWAYS, "reset to ALWAYS");
    CHECK(strstr(last_error(), "\"nx\" or \"nex\"") != NULL, "the core's message: %s",
          last_error());
    CHECK_STATUS(mqstate_set_condition_parse(NULL, &condition), MQSTATE_STATUS_OK, "none");
    CHECK(condition == MQSTATE_SET_CONDITION_ALWAYS, "NULL: a plain SET");
    CHECK(strcmp(mqstate_set_condition_name(MQSTATE_SET_CONDITION_NEX), "nex") == 0 &&
              mqstate_set_condition_name(MQSTATE_SET_CONDITION_ALWAYS) == NULL,
          "names");
}

void test_outparams(void) {
    conditions();
    pure_layer();
    client_layer();
    neutral_values();
}
