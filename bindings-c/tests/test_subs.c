/*
 * Notifications three ways (pull queue, callback with release hook, poll-able file
 * descriptor), cancellation from another thread, and closing a client while other threads
 * wait in calls on its subscriptions and locks.
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "live.h"

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void set_text(mqstate_client *c, const char *key, const char *value, char **version) {
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key), (const uint8_t *)value,
                                    strlen(value), NULL, NULL, version),
                 MQSTATE_STATUS_OK, "set");
}

static void test_pull(mqstate_client *c) {
    char key[128];
    char *versions[3] = {NULL, NULL, NULL};
    mqstate_subscription *sub = NULL;
    mqstate_sub_event *e = NULL;
    live_key(key, sizeof key, "pull");
    CHECK_STATUS(mqstate_client_observe(c, (const uint8_t *)key, strlen(key), NULL, &sub),
                 MQSTATE_STATUS_OK, "observe");
    const char *values[3] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        set_text(c, key, values[i], &versions[i]);
    }
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(mqstate_subscription_next(sub, 5000, &e), MQSTATE_STATUS_OK, "next");
        if (e == NULL) {
            break;
        }
        size_t len = 0, klen = 0;
        const uint8_t *v = mqstate_sub_event_value(e, &len);
        const uint8_t *k = mqstate_sub_event_key(e, &klen);
        CHECK(mqstate_sub_event_type_of(e) == MQSTATE_SUB_EVENT_TYPE_KEY_SET, "a set");
        CHECK(mqstate_sub_event_kind(e) == MQSTATE_SUB_EVENT_TYPE_KEY_SET &&
                  mqstate_sub_event_state(e) == MQSTATE_SUB_EVENT_TYPE_NONE,
              "a change has a kind, no state");
        CHECK(mqstate_sub_event_fencing_token(e) == NULL && mqstate_sub_event_lease_ms(e) == 0,
              "no token, no lease");
        CHECK(bytes_equal(v, len, (const uint8_t *)values[i], strlen(values[i])), "in order");
        CHECK(bytes_equal(k, klen, (const uint8_t *)key, strlen(key)), "the key");
        CHECK(strcmp(mqstate_sub_event_version(e), versions[i]) == 0, "the SET's version");
        CHECK(!mqstate_sub_event_resync(e) && mqstate_sub_event_dropped_before(e) == 0, "plain");
        mqstate_sub_event_free(e);
        mqstate_string_free(versions[i]);
    }
    CHECK_STATUS(mqstate_client_delete(c, (const uint8_t *)key, strlen(key), NULL, NULL),
                 MQSTATE_STATUS_OK, "delete");
    CHECK_STATUS(mqstate_subscription_next(sub, 5000, &e), MQSTATE_STATUS_OK, "next delete");
    CHECK(e != NULL && mqstate_sub_event_type_of(e) == MQSTATE_SUB_EVENT_TYPE_KEY_DELETED,
          "deleted");
    CHECK(mqstate_sub_event_kind(e) == MQSTATE_SUB_EVENT_TYPE_KEY_DELETED, "the kind: deleted");
    mqstate_sub_event_free(e);
    CHECK_STATUS(mqstate_subscription_next(sub, 100, &e), MQSTATE_STATUS_TIMEOUT, "nothing more");
    CHECK(e == NULL, "no event after a timeout");
    e = (mqstate_sub_event *)&e;
    CHECK_STATUS(mqstate_subscription_try_next(sub, &e), MQSTATE_STATUS_OK, "try_next, none");
    CHECK(e == NULL, "try_next gives NULL when nothing is queued");
    CHECK_STATUS(mqstate_subscription_next(NULL, 0, &e), MQSTATE_STATUS_INVALID_ARGUMENT, "NULL");

    /* MQSTATE_WAIT_FOREVER (and its former name) waits without limit: an event that comes
       is returned. 0 does not wait: a queued event, else MQSTATE_STATUS_TIMEOUT at once. */
    set_text(c, key, "four", NULL);
    CHECK_STATUS(mqstate_subscription_next(sub, MQSTATE_WAIT_FOREVER, &e), MQSTATE_STATUS_OK,
                 "next without limit");
    mqstate_sub_event_free(e);
    set_text(c, key, "five", NULL);
    CHECK_STATUS(mqstate_subscription_next(sub, MQSTATE_NO_TIMEOUT, &e), MQSTATE_STATUS_OK,
                 "next without limit, the former name");
    mqstate_sub_event_free(e);
    e = (mqstate_sub_event *)&e;
    CHECK_STATUS(mqstate_subscription_next(sub, 0, &e), MQSTATE_STATUS_TIMEOUT,
                 "next, 0: nothing queued, so no event and no wait");
    CHECK(e == NULL, "no event after next(0) found none");
    set_text(c, key, "polled", NULL);
    e = NULL;
    uint64_t polled_until = now_ms() + 5000;
    mqstate_status polled = MQSTATE_STATUS_TIMEOUT;
    while (polled == MQSTATE_STATUS_TIMEOUT && now_ms() < polled_until) {
        polled = mqstate_subscription_next(sub, 0, &e);
        if (polled == MQSTATE_STATUS_TIMEOUT) sleep_ms(5);
    }
    CHECK_STATUS(polled, MQSTATE_STATUS_OK, "polling with next(0) returns the queued event");
    mqstate_sub_event_free(e);
    /* try_next takes what is queued without waiting. */
    set_text(c, key, "six", NULL);
    e = NULL;
    uint64_t deadline = now_ms() + 5000;
    while (e == NULL && now_ms() < deadline) {
        CHECK_STATUS(mqstate_subscription_try_next(sub, &e), MQSTATE_STATUS_OK, "try_next");
        if (e == NULL) sleep_ms(5);
    }
    CHECK(e != NULL && mqstate_sub_event_type_of(e) == MQSTATE_SUB_EVENT_TYPE_KEY_SET,
          "try_next returns the queued event");
    mqstate_sub_event_free(e);
    mqstate_subscription_free(sub);
    mqstate_subscription_free(NULL);
}

struct sink {
    atomic_int events;
    atomic_int released;
    atomic_int wrong_thread;
    pthread_t first_thread;
    atomic_int have_thread;
    char last[16];
};

static void on_event(void *ctx, const mqstate_sub_event *e) {
    struct sink *s = ctx;
    if (!atomic_exchange(&s->have_thread, 1)) {
        s->first_thread = pthread_self();
    } else if (!pthread_equal(s->first_thread, pthread_self())) {
        atomic_fetch_add(&s->wrong_thread, 1);
    }
    size_t len = 0;
    const uint8_t *v = mqstate_sub_event_value(e, &len);
    if (len < sizeof s->last) {
        memcpy(s->last, v, len);
        s->last[len] = '\0';
    }
    atomic_fetch_add(&s->events, 1);
}

static void on_release(void *ctx) {
    struct sink *s = ctx;
    if (atomic_load(&s->have_thread) && !pthread_equal(s->first_thread, pthread_self())) {
        atomic_fetch_add(&s->wrong_thread, 1);
    }
    atomic_fetch_add(&s->released, 1);
}

static int wait_for(atomic_int *value, int want, unsigned ms) {
    uint64_t deadline = now_ms() + ms;
    while (atomic_load(value) < want && now_ms() < deadline) {
        sleep_ms(5);
    }
    return atomic_load(value) >= want;
}

static void test_callback(mqstate_client *c) {
    char key[128];
    struct sink s;
    memset(&s, 0, sizeof s);
    mqstate_subscription *sub = NULL;
    live_key(key, sizeof key, "callback");
    CHECK_STATUS(mqstate_client_observe(c, (const uint8_t *)key, strlen(key), NULL, &sub),
                 MQSTATE_STATUS_OK, "observe");
    CHECK_STATUS(mqstate_subscription_set_callback(sub, on_event, on_release, &s),
                 MQSTATE_STATUS_OK, "set_callback");
    CHECK_STATUS(mqstate_subscription_set_callback(sub, on_event, NULL, &s),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "one callback only");
    for (int i = 0; i < 10; i++) {
        char value[8];
        snprintf(value, sizeof value, "v%d", i);
        set_text(c, key, value, NULL);
    }
    CHECK(wait_for(&s.events, 10, 5000), "10 events delivered (%d)", atomic_load(&s.events));
    CHECK(strcmp(s.last, "v9") == 0, "in order, the last is v9: %s", s.last);
    CHECK(atomic_load(&s.released) == 0, "not released while open");
    mqstate_subscription_free(sub);
    CHECK(wait_for(&s.released, 1, 5000), "released once after the end");
    sleep_ms(50);
    CHECK(atomic_load(&s.released) == 1, "exactly once");
    CHECK(atomic_load(&s.wrong_thread) == 0, "one delivery thread, release on it too");
    CHECK(!pthread_equal(s.first_thread, pthread_self()), "a library thread");
}

static void test_fd(mqstate_client *c) {
    char key[128];
    mqstate_subscription *sub = NULL;
    mqstate_sub_event *e = NULL;
    int fd = -1, again = -1;
    live_key(key, sizeof key, "fd");
    CHECK_STATUS(mqstate_client_observe(c, (const uint8_t *)key, strlen(key), NULL, &sub),
                 MQSTATE_STATUS_OK, "observe");
    CHECK_STATUS(mqstate_subscription_fd(sub, &fd), MQSTATE_STATUS_OK, "fd");
    CHECK_STATUS(mqstate_subscription_fd(sub, &again), MQSTATE_STATUS_OK, "fd again");
    CHECK(fd >= 0 && fd == again, "one descriptor");
    struct pollfd p = {fd, POLLIN, 0};
    CHECK(poll(&p, 1, 0) == 0, "not readable while nothing is queued");
    set_text(c, key, "a", NULL);
    set_text(c, key, "b", NULL);
    CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN), "readable once events are queued");
    int got = 0;
    uint64_t deadline = now_ms() + 5000;
    while (got < 2 && now_ms() < deadline) {
        if (poll(&p, 1, 100) == 1) {
            if (mqstate_subscription_try_next(sub, &e) == MQSTATE_STATUS_OK && e != NULL) {
                got++;
                mqstate_sub_event_free(e);
            }
        }
    }
    CHECK(got == 2, "both events through the descriptor (%d)", got);
    CHECK(poll(&p, 1, 0) == 0, "not readable once drained");
    CHECK_STATUS(mqstate_subscription_set_callback(sub, on_event, NULL, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "no callback after fd");
    mqstate_subscription_free(sub);
}

/* A thread waiting in a call until the handle's client is closed under it. */
struct waiter {
    mqstate_lock *lock;
    mqstate_subscription *sub;
    uint32_t timeout_ms; /* of each mqstate_subscription_next */
    mqstate_status status;
    uint64_t returned_at;
};

static void *wait_next(void *arg) {
    struct waiter *w = arg;
    mqstate_sub_event *e = NULL;
    do {
        w->status = mqstate_subscription_next(w->sub, w->timeout_ms, &e);
        mqstate_sub_event_free(e);
        e = NULL;
    } while (w->status == MQSTATE_STATUS_OK);
    w->returned_at = now_ms();
    return NULL;
}

/* In the file-descriptor mode mqstate_subscription_next waits on the descriptor: it times out
 * after its timeout, takes an event (and its byte) when one comes, and ends closed when the
 * subscription ends (here: its client is closed under a thread waiting without limit). */
static void test_fd_next(void) {
    mqstate_client *c = live_client();
    char key[128];
    mqstate_subscription *sub = NULL;
    mqstate_sub_event *e = NULL;
    int fd = -1;
    if (c == NULL) {
        return;
    }
    live_key(key, sizeof key, "fd-next");
    CHECK_STATUS(mqstate_client_observe(c, (const uint8_t *)key, strlen(key), NULL, &sub),
                 MQSTATE_STATUS_OK, "observe");
    CHECK_STATUS(mqstate_subscription_fd(sub, &fd), MQSTATE_STATUS_OK, "fd");
    uint64_t started = now_ms();
    CHECK_STATUS(mqstate_subscription_next(sub, 100, &e), MQSTATE_STATUS_TIMEOUT,
                 "next with nothing queued, fd mode");
    uint64_t waited = now_ms() - started;
    CHECK(waited >= 99, "it waited for its timeout (%llu ms)", (unsigned long long)waited);
    CHECK(e == NULL, "no event on a timeout");
    set_text(c, key, "a", NULL);
    CHECK_STATUS(mqstate_subscription_next(sub, 5000, &e), MQSTATE_STATUS_OK,
                 "next takes the event, fd mode");
    CHECK(e != NULL, "an event");
    mqstate_sub_event_free(e);
    struct pollfd p = {fd, POLLIN, 0};
    CHECK(poll(&p, 1, 0) == 0, "the event's byte went with it");
    struct waiter w = {NULL, sub, MQSTATE_WAIT_FOREVER, MQSTATE_STATUS_OK, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_next, &w);
    sleep_ms(100);
    mqstate_client_close(c);
    pthread_join(t, NULL);
    CHECK(w.status == MQSTATE_STATUS_CLOSED, "a waiting next ends closed with its client (%s)",
          mqstate_status_name(w.status));
    mqstate_subscription_free(sub);
}

void test_subscriptions(void) {
    mqstate_client *c = live_client();
    if (c == NULL) {
        return;
    }
    test_pull(c);
    test_callback(c);
    test_fd(c);
    mqstate_client_close(c);
    test_fd_next();
}

/* ---- threads: cancellation, and closing a client under other threads' feet ---------- */

struct trigger {
    mqstate_cancel *token;
    unsigned after_ms;
};

static void *trigger_later(void *arg) {
    struct trigger *t = arg;
    sleep_ms(t->after_ms);
    mqstate_cancel_trigger(t->token);
    return NULL;
}

static void *wait_acquire(void *arg) {
    struct waiter *w = arg;
    w->status = mqstate_lock_acquire(w->lock, 5000, MQSTATE_WAIT_FOREVER, NULL, NULL);
    w->returned_at = now_ms();
    return NULL;
}

void test_threads(void) {
    mqstate_client *holder = live_client(), *c = live_client();
    char key[128];
    mqstate_lock *held = NULL, *wanted = NULL;
    mqstate_cancel *token = NULL;
    pthread_t t;
    if (holder == NULL || c == NULL) {
        mqstate_client_close(holder);
        mqstate_client_close(c);
        return;
    }
    live_key(key, sizeof key, "threads-lock");
    CHECK_STATUS(mqstate_lock_new(holder, (const uint8_t *)key, strlen(key), NULL, &held),
                 MQSTATE_STATUS_OK, "lock");
    CHECK_STATUS(mqstate_lock_try_acquire(held, 30000, NULL, NULL), MQSTATE_STATUS_OK, "hold");
    CHECK_STATUS(mqstate_lock_new(c, (const uint8_t *)key, strlen(key), NULL, &wanted),
                 MQSTATE_STATUS_OK, "lock");

    /* Cancellation from another thread. */
    CHECK_STATUS(mqstate_cancel_new(&token), MQSTATE_STATUS_OK, "cancel_new");
    struct trigger trig = {token, 200};
    pthread_create(&t, NULL, trigger_later, &trig);
    uint64_t started = now_ms();
    CHECK_STATUS(mqstate_lock_acquire(wanted, 5000, 0, NULL, NULL), MQSTATE_STATUS_TIMEOUT,
                 "acquire, 0: one try, held by another, so a timeout at once");
    CHECK_STATUS(mqstate_lock_acquire(wanted, 5000, MQSTATE_WAIT_FOREVER, token, NULL),
                 MQSTATE_STATUS_CANCELLED, "cancelled acquire");
    CHECK(now_ms() - started < 3000, "promptly");
    pthread_join(t, NULL);
    CHECK_STATUS(mqstate_lock_acquire(wanted, 5000, MQSTATE_WAIT_FOREVER, token, NULL),
                 MQSTATE_STATUS_CANCELLED, "a triggered token cancels later calls too");
    mqstate_cancel_free(token);

    /* Close the client while other threads wait in calls on its lock and subscription. */
    mqstate_subscription *sub = NULL;
    char watched[128];
    live_key(watched, sizeof watched, "threads-watched");
    CHECK_STATUS(mqstate_client_observe(c, (const uint8_t *)watched, strlen(watched), NULL, &sub),
                 MQSTATE_STATUS_OK, "observe");
    struct waiter acquire = {wanted, NULL, 0, MQSTATE_STATUS_OK, 0};
    struct waiter next = {NULL, sub, 20000, MQSTATE_STATUS_OK, 0};
    pthread_t ta, tn;
    pthread_create(&ta, NULL, wait_acquire, &acquire);
    pthread_create(&tn, NULL, wait_next, &next);
    sleep_ms(300);
    uint64_t closed_at = now_ms();
    mqstate_client_close(c);
    pthread_join(ta, NULL);
    pthread_join(tn, NULL);
    CHECK(acquire.status == MQSTATE_STATUS_CLOSED, "the waiting acquire ends closed (%s)",
          mqstate_status_name(acquire.status));
    CHECK(next.status == MQSTATE_STATUS_CLOSED, "the waiting next ends closed (%s)",
          mqstate_status_name(next.status));
    CHECK(acquire.returned_at - closed_at < 5000 && next.returned_at - closed_at < 5000,
          "promptly");
    CHECK_STATUS(mqstate_lock_try_acquire(wanted, 1000, NULL, NULL), MQSTATE_STATUS_CLOSED,
                 "the lock of a closed client");
    mqstate_sub_event *after = NULL;
    CHECK_STATUS(mqstate_subscription_try_next(sub, &after), MQSTATE_STATUS_CLOSED,
                 "try_next on an ended subscription");
    CHECK(after == NULL, "no event from an ended subscription");
    mqstate_subscription_free(sub);
    mqstate_lock_free(wanted);
    mqstate_lock_release(held, NULL);
    mqstate_lock_free(held);
    mqstate_client_close(holder);
}
