/*
 * The C client against a live store: every call and its options, error paths (NULL, bad
 * UTF-8, empty keys, closed handles), the error object, locks, fenced edits with a C
 * callback that may fail, elections.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "live.h"

static void test_settings_and_connect_errors(void) {
    mqstate_settings *s = NULL;
    mqstate_client *c = NULL;
    CHECK_STATUS(mqstate_settings_new(&s), MQSTATE_STATUS_OK, "settings_new");
    CHECK_STATUS(mqstate_settings_set(s, "keep_alive", "soon"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "bad value");
    CHECK(strstr(last_error(), "keep_alive") != NULL, "the message names the setting: %s",
          last_error());
    CHECK_STATUS(mqstate_settings_set(s, "no_such", "1"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "unknown name");
    CHECK(strstr(last_error(), "known: host") != NULL, "%s", last_error());
    CHECK_STATUS(mqstate_settings_set(s, "\xff\xfe", "1"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "name not UTF-8");
    CHECK_STATUS(mqstate_settings_set(s, NULL, "1"), MQSTATE_STATUS_INVALID_ARGUMENT, "NULL name");
    CHECK_STATUS(mqstate_settings_set(NULL, "port", "1"), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL settings");
    CHECK_STATUS(mqstate_settings_set(s, "port", "1"), MQSTATE_STATUS_OK, "port 1");
    CHECK_STATUS(mqstate_settings_set(s, "host", "127.0.0.1"), MQSTATE_STATUS_OK, "host");
    CHECK_STATUS(mqstate_settings_set(s, "connect_timeout", "2"), MQSTATE_STATUS_OK, "timeout");
    mqstate_status refused = mqstate_client_connect(s, 0, &c);
    CHECK_STATUS(refused, MQSTATE_STATUS_CONNECT_REFUSED, "refused");
    CHECK(c == NULL, "no client on failure");
    CHECK(mqstate_status_family_of(refused) == MQSTATE_STATUS_FAMILY_CONNECT,
          "a refused connect is in the connect family");
    CHECK(strcmp(mqstate_status_name(refused), "connect_refused") == 0, "named like the core");
    CHECK_STATUS(mqstate_client_connect(s, MQSTATE_NO_TIMEOUT, &c), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "a connect is bounded: no MQSTATE_NO_TIMEOUT");
    CHECK(strstr(last_error(), "MQSTATE_WAIT_FOREVER") != NULL, "says why: %s", last_error());
    CHECK_STATUS(mqstate_client_connect(NULL, 0, &c), MQSTATE_STATUS_INVALID_ARGUMENT, "NULL s");
    CHECK_STATUS(mqstate_client_connect(s, 0, NULL), MQSTATE_STATUS_INVALID_ARGUMENT, "NULL out");
    mqstate_settings_free(s);
    mqstate_settings_free(NULL);
    CHECK_STATUS(mqstate_settings_from_url("http://x", &s), MQSTATE_STATUS_INVALID_ARGUMENT, "url");
    CHECK(s == NULL, "no settings on failure");
    mqstate_client_close(NULL);
}

static void test_set_get_delete_vdel(mqstate_client *c) {
    char key[128];
    const uint8_t value[] = {'v', 0, '\r', '\n', 0xff};
    bool applied = false;
    char *version = NULL;
    mqstate_value *got = NULL;
    size_t len = 0;
    uint64_t deleted = 9;
    mqstate_vdel_outcome outcome = MQSTATE_VDEL_OUTCOME_DELETED;
    live_key(key, sizeof key, "kv");

    CHECK_STATUS(mqstate_client_get(c, (const uint8_t *)key, strlen(key), NULL, &got),
                 MQSTATE_STATUS_OK, "get missing");
    CHECK(got == NULL, "missing is NULL");
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), value, sizeof value,
                                    NULL, &applied, &version),
                 MQSTATE_STATUS_OK, "set");
    CHECK(applied && version != NULL, "applied with a version");
    CHECK_STATUS(mqstate_client_get(c, (const uint8_t *)key, strlen(key), NULL, &got),
                 MQSTATE_STATUS_OK, "get");
    CHECK(got != NULL, "found");
    if (got != NULL) {
        const uint8_t *data = mqstate_value_data(got, &len);
        CHECK(bytes_equal(data, len, value, sizeof value), "byte-exact value");
        CHECK(version != NULL && strcmp(mqstate_value_version(got), version) == 0,
              "GET's version is the SET's");
        mqstate_value_free(got);
    }
    mqstate_string_free(version);

    mqstate_set_options nx;
    memset(&nx, 0, sizeof nx);
    nx.condition = MQSTATE_SET_CONDITION_NX;
    nx.timeout_ms = 3000;
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), value, 1, &nx, &applied,
                                    &version),
                 MQSTATE_STATUS_OK, "set nx");
    CHECK(!applied && version == NULL, "NX on an existing key is not applied");
    nx.condition = 7;
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), value, 1, &nx, NULL,
                                    NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "bad condition");

    CHECK_STATUS(mqstate_client_vdel(c, (const uint8_t *)key, strlen(key), (const uint8_t *)"x", 1,
                                     NULL, &outcome),
                 MQSTATE_STATUS_OK, "vdel mismatch");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_VALUE_MISMATCH, "mismatch");
    CHECK_STATUS(mqstate_client_vdel(c, (const uint8_t *)key, strlen(key), value, sizeof value,
                                     NULL, &outcome),
                 MQSTATE_STATUS_OK, "vdel");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_DELETED, "deleted");
    CHECK_STATUS(mqstate_client_delete(c, (const uint8_t *)key, strlen(key), NULL, &deleted),
                 MQSTATE_STATUS_OK, "delete missing");
    CHECK(deleted == 0, "nothing to delete");
    CHECK_STATUS(mqstate_client_vdel(c, (const uint8_t *)key, strlen(key), value, sizeof value,
                                     NULL, &outcome),
                 MQSTATE_STATUS_OK, "vdel missing");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_NOT_FOUND, "not found");
    CHECK(strcmp(mqstate_vdel_outcome_name(outcome), "not_found") == 0, "its name");

    /* A VDEL that fails leaves no outcome behind (0 used to read as DELETED). */
    mqstate_call_options malformed;
    memset(&malformed, 0, sizeof malformed);
    malformed.fencing_token = "not-a-version";
    outcome = MQSTATE_VDEL_OUTCOME_VALUE_MISMATCH;
    CHECK_STATUS(mqstate_client_vdel(c, (const uint8_t *)key, strlen(key), value, sizeof value,
                                     &malformed, &outcome),
                 MQSTATE_STATUS_MALFORMED, "vdel with a malformed token");
    CHECK(outcome == MQSTATE_VDEL_OUTCOME_NONE, "outcome reset to NONE");

    /* timeout_ms: 0 is the client's request_timeout; a request never waits without limit. */
    mqstate_set_options unbounded;
    memset(&unbounded, 0, sizeof unbounded);
    unbounded.timeout_ms = MQSTATE_NO_TIMEOUT;
    applied = true;
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), value, 1, &unbounded,
                                    &applied, &version),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "a request with MQSTATE_NO_TIMEOUT");
    CHECK(!applied && version == NULL, "outs reset");
    mqstate_call_options defaults;
    memset(&defaults, 0, sizeof defaults);
    CHECK_STATUS(mqstate_client_get(c, (const uint8_t *)key, strlen(key), &defaults, &got),
                 MQSTATE_STATUS_OK, "timeout_ms 0: the default");
    CHECK(got == NULL, "still missing");

    /* Argument errors: nothing is sent. */
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, 0, value, 1, NULL, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "empty key");
    CHECK_STATUS(mqstate_client_set(c, NULL, 3, value, 1, NULL, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL key with a length");
    CHECK_STATUS(mqstate_client_set(NULL, (const uint8_t *)key, 3, value, 1, NULL, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL client");
    CHECK_STATUS(mqstate_client_get(c, (const uint8_t *)key, strlen(key), NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL out");
    mqstate_call_options bad_token;
    memset(&bad_token, 0, sizeof bad_token);
    bad_token.fencing_token = "not-a-version";
    CHECK_STATUS(mqstate_client_delete(c, (const uint8_t *)key, strlen(key), &bad_token, NULL),
                 MQSTATE_STATUS_MALFORMED, "malformed token");
    bad_token.fencing_token = "004102444800000:00000:far-future";
    CHECK_STATUS(mqstate_client_delete(c, (const uint8_t *)key, strlen(key), &bad_token, NULL),
                 MQSTATE_STATUS_FENCING_TOKEN_SKEW, "future token");
}

static void test_fencing_and_error_object(mqstate_client *c) {
    char key[128], lock_key[128];
    mqstate_lock *lock = NULL;
    char *token = NULL;
    bool acquired = false;
    live_key(key, sizeof key, "fenced");
    live_key(lock_key, sizeof lock_key, "fenced-lock");

    CHECK_STATUS(mqstate_lock_new(c, (const uint8_t *)lock_key, strlen(lock_key), NULL, &lock),
                 MQSTATE_STATUS_OK, "lock_new");
    CHECK_STATUS(mqstate_lock_fencing_token(lock, &token), MQSTATE_STATUS_NOT_HELD, "not held");
    CHECK_STATUS(mqstate_lock_try_acquire(lock, 5000, &acquired, &token), MQSTATE_STATUS_OK,
                 "try_acquire");
    CHECK(acquired && token != NULL, "acquired with a token");
    mqstate_set_options fenced;
    memset(&fenced, 0, sizeof fenced);
    fenced.fencing_token = token;
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)"1", 1,
                                    &fenced, NULL, NULL),
                 MQSTATE_STATUS_OK, "fenced set");
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)"2", 1,
                                    NULL, NULL, NULL),
                 MQSTATE_STATUS_FENCING_TOKEN_REQUIRED, "unfenced set");
    mqstate_error *e = mqstate_error_last();
    CHECK(e != NULL, "an error object");
    if (e != NULL) {
        CHECK(mqstate_error_status(e) == MQSTATE_STATUS_FENCING_TOKEN_REQUIRED, "status");
        CHECK(strcmp(mqstate_error_message(e), "a fencing token is required for this request") == 0,
              "the service's exact text: %s", mqstate_error_message(e));
        CHECK(!mqstate_error_may_have_applied(e), "a store answer was applied or not: known");
        mqstate_error_free(e);
    }
    CHECK(strcmp(mqstate_status_name(MQSTATE_STATUS_FENCING_TOKEN_REQUIRED),
                 "fencing_token_required") == 0, "status names are the core codes");
    mqstate_call_options del;
    memset(&del, 0, sizeof del);
    del.fencing_token = token;
    CHECK_STATUS(mqstate_client_delete(c, (const uint8_t *)key, strlen(key), &del, NULL),
                 MQSTATE_STATUS_OK, "fenced delete");
    CHECK(mqstate_error_last() == NULL, "no error after success");
    bool released = false;
    CHECK_STATUS(mqstate_lock_release(lock, &released), MQSTATE_STATUS_OK, "release");
    CHECK(released, "released");
    mqstate_string_free(token);
    mqstate_lock_free(lock);
    mqstate_error_free(NULL);
    mqstate_string_free(NULL);
}

void test_client(void) {
    test_settings_and_connect_errors();
    mqstate_client *c = live_client();
    if (c == NULL) {
        return;
    }
    /* The client's properties. */
    const char *id = mqstate_client_id(c);
    CHECK(id != NULL && id[0] != '\0', "a client id");
    CHECK(mqstate_client_connected(c), "connected");
    test_set_get_delete_vdel(c);
    test_fencing_and_error_object(c);
    mqstate_client_close(c);
}

/* ---- locks, edits, elections ---------------------------------------------------------- */

struct counter_ctx {
    int calls;
    mqstate_status fail_with;
};

static mqstate_status increment(void *ctx, const uint8_t *current, size_t len,
                                mqstate_edit *decision) {
    struct counter_ctx *counter = ctx;
    char buf[32];
    long n = 0;
    counter->calls++;
    if (counter->fail_with != MQSTATE_STATUS_OK) {
        return counter->fail_with;
    }
    if (current != NULL && len < sizeof buf) {
        memcpy(buf, current, len);
        buf[len] = '\0';
        n = strtol(buf, NULL, 10);
    }
    snprintf(buf, sizeof buf, "%ld", n + 1);
    return mqstate_edit_set(decision, (const uint8_t *)buf, strlen(buf));
}

void test_locks(void) {
    mqstate_client *a = live_client(), *b = live_client();
    char key[128], counter_key[128];
    mqstate_lock *la = NULL, *lb = NULL;
    bool flag = false;
    char *token = NULL, *holder = NULL, *renewed_token = NULL;
    if (a == NULL || b == NULL) {
        mqstate_client_close(a);
        mqstate_client_close(b);
        return;
    }
    live_key(key, sizeof key, "lock");
    live_key(counter_key, sizeof counter_key, "counter");
    CHECK_STATUS(mqstate_lock_new(a, (const uint8_t *)key, strlen(key), NULL, &la),
                 MQSTATE_STATUS_OK, "lock a");
    mqstate_lock_options opts;
    memset(&opts, 0, sizeof opts);
    opts.session_id = "s2";
    CHECK_STATUS(mqstate_lock_new(b, (const uint8_t *)key, strlen(key), &opts, &lb),
                 MQSTATE_STATUS_OK, "lock b");
    mqstate_lock *bad = la;
    CHECK_STATUS(mqstate_lock_new(a, (const uint8_t *)key, 0, NULL, &bad),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "empty lock key");
    CHECK(bad == NULL, "out reset on error");
    size_t key_len = 0;
    const uint8_t *lock_key = mqstate_lock_key(la, &key_len);
    CHECK(lock_key && bytes_equal(lock_key, key_len, (const uint8_t *)key, strlen(key)),
          "the lock's key");
    char want_holder[256];
    snprintf(want_holder, sizeof want_holder, "%s:s2", mqstate_client_id(b));
    CHECK(strcmp(mqstate_lock_holder_id(lb), want_holder) == 0, "b's holder id: %s",
          mqstate_lock_holder_id(lb));

    CHECK_STATUS(mqstate_lock_try_acquire(la, 5000, &flag, &token), MQSTATE_STATUS_OK, "a");
    CHECK(flag && mqstate_lock_is_held(la), "a holds it");
    CHECK_STATUS(mqstate_lock_try_acquire(lb, 5000, &flag, NULL), MQSTATE_STATUS_OK, "b");
    CHECK(!flag && !mqstate_lock_is_held(lb), "b does not");
    CHECK_STATUS(mqstate_lock_holder(lb, &holder), MQSTATE_STATUS_OK, "holder");
    CHECK(holder != NULL, "someone holds it");
    mqstate_string_free(holder);
    CHECK_STATUS(mqstate_lock_acquire(lb, 5000, 300, NULL, NULL), MQSTATE_STATUS_TIMEOUT,
                 "bounded acquire");
    CHECK_STATUS(mqstate_lock_renew(la, &flag, &renewed_token), MQSTATE_STATUS_OK, "renew");
    CHECK(flag && renewed_token != NULL && strcmp(renewed_token, token) != 0, "a new token");
    mqstate_string_free(renewed_token);
    mqstate_string_free(token);
    CHECK_STATUS(mqstate_lock_release(lb, &flag), MQSTATE_STATUS_OK, "b release");
    CHECK(!flag, "b held nothing");
    CHECK_STATUS(mqstate_lock_release(la, &flag), MQSTATE_STATUS_OK, "a release");
    CHECK(flag, "a released");
    CHECK_STATUS(mqstate_lock_acquire(lb, 5000, 5000, NULL, &token), MQSTATE_STATUS_OK, "b");
    CHECK_STATUS(mqstate_lock_release(lb, NULL), MQSTATE_STATUS_OK, "b release");
    mqstate_string_free(token);

    /* Fenced edits: four increments, then a callback that fails. */
    struct counter_ctx counter = {0, MQSTATE_STATUS_OK};
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(mqstate_lock_edit(la, (const uint8_t *)counter_key, strlen(counter_key), 2000,
                                       10000, increment, &counter, NULL),
                     MQSTATE_STATUS_OK, "edit");
    }
    mqstate_value *v = NULL;
    CHECK_STATUS(mqstate_client_get(a, (const uint8_t *)counter_key, strlen(counter_key), NULL,
                                    &v),
                 MQSTATE_STATUS_OK, "get counter");
    size_t len = 0;
    const uint8_t *data = v ? mqstate_value_data(v, &len) : NULL;
    CHECK(data != NULL && bytes_equal(data, len, (const uint8_t *)"4", 1), "counter is 4");
    mqstate_value_free(v);
    counter.fail_with = MQSTATE_STATUS_QUOTA_EXCEEDED;
    CHECK_STATUS(mqstate_lock_edit(la, (const uint8_t *)counter_key, strlen(counter_key), 2000,
                                   10000, increment, &counter, NULL),
                 MQSTATE_STATUS_CALLBACK, "a failing callback");
    mqstate_error *e = mqstate_error_last();
    CHECK(e != NULL && mqstate_error_callback_status(e) == MQSTATE_STATUS_QUOTA_EXCEEDED,
          "the callback's own status comes back");
    mqstate_error_free(e);
    CHECK_STATUS(mqstate_lock_holder(la, &holder), MQSTATE_STATUS_OK, "holder after");
    CHECK(holder == NULL, "released after the failed edit");
    CHECK_STATUS(mqstate_lock_edit(la, (const uint8_t *)counter_key, strlen(counter_key), 2000,
                                   10000, NULL, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL callback");

    /* 0 is the core's default lease and edit timeout; an edit is bounded. */
    counter.fail_with = MQSTATE_STATUS_OK;
    CHECK_STATUS(mqstate_lock_edit(la, (const uint8_t *)counter_key, strlen(counter_key), 0, 0,
                                   increment, &counter, NULL),
                 MQSTATE_STATUS_OK, "edit with the default lease and timeout");
    CHECK_STATUS(mqstate_lock_edit(la, (const uint8_t *)counter_key, strlen(counter_key), 0,
                                   MQSTATE_NO_TIMEOUT, increment, &counter, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "an edit with MQSTATE_NO_TIMEOUT");
    CHECK_STATUS(mqstate_lock_try_acquire(la, 0, &flag, NULL), MQSTATE_STATUS_OK,
                 "try_acquire with the default lease");
    CHECK(flag && mqstate_lock_is_held(la), "held for the default lease");
    CHECK_STATUS(mqstate_lock_release(la, NULL), MQSTATE_STATUS_OK, "release");
    mqstate_lock_options short_lease;
    memset(&short_lease, 0, sizeof short_lease);
    short_lease.lease_ms = 300;
    mqstate_lock *ls = NULL;
    CHECK_STATUS(mqstate_lock_new(a, (const uint8_t *)key, strlen(key), &short_lease, &ls),
                 MQSTATE_STATUS_OK, "a lock with its own default lease");
    CHECK_STATUS(mqstate_lock_acquire(ls, 0, 0, NULL, NULL), MQSTATE_STATUS_OK,
                 "acquire with the lock's lease; 0: one try, and the lock is free");
    CHECK_STATUS(mqstate_lock_acquire(lb, 0, 10000, NULL, &token), MQSTATE_STATUS_OK,
                 "the 300 ms lease runs out, so b gets the lock");
    mqstate_string_free(token);
    token = NULL;
    CHECK_STATUS(mqstate_lock_release(lb, NULL), MQSTATE_STATUS_OK, "b release");

    /* Automatic renewal set on the lock: it keeps a 1 s lease alive, so b waits in vain
       well past it (without the renewal, b would get the lock after 1 s). */
    short_lease.lease_ms = 1000;
    mqstate_lock *lr = NULL;
    CHECK_STATUS(mqstate_lock_new(a, (const uint8_t *)key, strlen(key), &short_lease, &lr),
                 MQSTATE_STATUS_OK, "a lock to renew");
    CHECK_STATUS(mqstate_lock_set_auto_renew(lr, 200), MQSTATE_STATUS_OK, "set_auto_renew");
    CHECK_STATUS(mqstate_lock_acquire(lr, 0, 0, NULL, NULL), MQSTATE_STATUS_OK, "acquire, free");
    CHECK_STATUS(mqstate_lock_acquire(lb, 0, 3000, NULL, NULL), MQSTATE_STATUS_TIMEOUT,
                 "renewed: b does not get it");
    CHECK(mqstate_lock_is_held(lr), "still held");
    CHECK_STATUS(mqstate_lock_release(lr, NULL), MQSTATE_STATUS_OK, "release the renewed lock");
    mqstate_lock_free(lr);
    mqstate_lock_free(ls);

    /* Elections. */
    char name[128];
    mqstate_election *ea = NULL, *eb = NULL;
    char *leader = NULL;
    live_key(name, sizeof name, "election");
    CHECK_STATUS(mqstate_election_new(a, (const uint8_t *)name, strlen(name), "alpha", NULL, &ea),
                 MQSTATE_STATUS_OK, "candidate a");
    CHECK_STATUS(mqstate_election_new(b, (const uint8_t *)name, strlen(name), "beta", NULL, &eb),
                 MQSTATE_STATUS_OK, "candidate b");
    mqstate_election *none = NULL;
    CHECK_STATUS(mqstate_election_new(b, (const uint8_t *)name, strlen(name), NULL, NULL, &none),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL candidate");
    CHECK(strcmp(mqstate_election_candidate_id(ea), "alpha") == 0, "a's candidate id");
    token = (char *)&token;
    CHECK_STATUS(mqstate_election_fencing_token(ea, &token), MQSTATE_STATUS_NOT_HELD,
                 "no token before leading");
    CHECK(token == NULL, "token reset");
    CHECK_STATUS(mqstate_election_try_campaign(ea, 3000, &flag), MQSTATE_STATUS_OK, "try a");
    CHECK(flag && mqstate_election_is_leader(ea), "a leads");
    CHECK_STATUS(mqstate_election_fencing_token(ea, &token), MQSTATE_STATUS_OK, "a's token");
    CHECK(token != NULL && token[0] != '\0', "a token while leading");
    mqstate_string_free(token);
    token = NULL;
    CHECK_STATUS(mqstate_election_campaign(eb, 3000, 300, NULL, NULL), MQSTATE_STATUS_TIMEOUT,
                 "b waits in vain");
    CHECK_STATUS(mqstate_election_leader(eb, &leader), MQSTATE_STATUS_OK, "leader");
    CHECK(leader != NULL && strcmp(leader, "alpha") == 0, "alpha leads");
    mqstate_string_free(leader);
    CHECK_STATUS(mqstate_election_resign(ea, &flag), MQSTATE_STATUS_OK, "resign");
    CHECK(flag && !mqstate_election_is_leader(ea), "resigned");
    CHECK_STATUS(mqstate_election_campaign(eb, 3000, 5000, NULL, &token), MQSTATE_STATUS_OK,
                 "b leads");
    CHECK(token != NULL && mqstate_election_is_leader(eb), "with a token");
    mqstate_string_free(token);
    CHECK_STATUS(mqstate_election_resign(eb, NULL), MQSTATE_STATUS_OK, "b resigns");

    /* Options: a session id in the candidate id, the term of campaigns that pass 0, and the
       candidate's own status as a subscription. */
    mqstate_election_options eopts;
    memset(&eopts, 0, sizeof eopts);
    eopts.session_id = "s1";
    eopts.term_ms = 300;
    mqstate_election *ec = NULL;
    mqstate_subscription *status = NULL;
    mqstate_sub_event *ev = NULL;
    CHECK_STATUS(mqstate_election_new(a, (const uint8_t *)name, strlen(name), "gamma", &eopts,
                                         &ec),
                 MQSTATE_STATUS_OK, "candidate with options");
    CHECK_STATUS(mqstate_election_watch_status(ec, &status), MQSTATE_STATUS_OK, "watch_status");
    CHECK_STATUS(mqstate_subscription_next(status, 5000, &ev), MQSTATE_STATUS_OK, "first status");
    CHECK(ev != NULL && mqstate_sub_event_type_of(ev) == MQSTATE_SUB_EVENT_TYPE_NOT_HELD,
          "not leading yet");
    mqstate_sub_event_free(ev);
    CHECK_STATUS(mqstate_election_campaign(ec, 0, 5000, NULL, NULL), MQSTATE_STATUS_OK,
                 "campaign for the options' term");
    CHECK_STATUS(mqstate_subscription_next(status, 5000, &ev), MQSTATE_STATUS_OK, "held");
    CHECK(ev != NULL && mqstate_sub_event_type_of(ev) == MQSTATE_SUB_EVENT_TYPE_HELD, "leading");
    CHECK(mqstate_sub_event_state(ev) == MQSTATE_SUB_EVENT_TYPE_HELD &&
              mqstate_sub_event_kind(ev) == MQSTATE_SUB_EVENT_TYPE_NONE,
          "a status event has a state, no kind");
    CHECK(mqstate_sub_event_lease_ms(ev) == 300, "the options' term: %llu ms",
          (unsigned long long)mqstate_sub_event_lease_ms(ev));
    token = NULL;
    CHECK_STATUS(mqstate_election_fencing_token(ec, &token), MQSTATE_STATUS_OK, "gamma's token");
    CHECK(token != NULL && mqstate_sub_event_fencing_token(ev) != NULL &&
              strcmp(mqstate_sub_event_fencing_token(ev), token) == 0,
          "the event's token is the leader's");
    CHECK(mqstate_sub_event_version(ev) == NULL, "no version on a status event");
    mqstate_string_free(token);
    token = NULL;
    CHECK(strcmp(mqstate_election_candidate_id(ec), "gamma:s1") == 0, "the session in the id");
    mqstate_sub_event_free(ev);
    CHECK_STATUS(mqstate_election_leader(eb, &leader), MQSTATE_STATUS_OK, "leader");
    CHECK(leader != NULL && strcmp(leader, "gamma:s1") == 0, "the session in the id: %s",
          leader ? leader : "(none)");
    mqstate_string_free(leader);
    CHECK_STATUS(mqstate_election_resign(ec, NULL), MQSTATE_STATUS_OK, "gamma resigns");
    mqstate_subscription_free(status);
    mqstate_election_free(ec);

    mqstate_election_free(ea);
    mqstate_election_free(eb);
    mqstate_lock_free(la);
    mqstate_lock_free(lb);
    mqstate_client_close(a);
    mqstate_client_close(b);
}
