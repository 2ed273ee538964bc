/*
 * The hybrid logical clock through the C API: every case of hlc.json (parse, format,
 * compare, tick, receive), then the shared clock handle with an injected time source.
 */
#include <inttypes.h>
#include <pthread.h>

#include "check.h"

/* Whether `hlc` has the fields of the clock text `want` (compared as fields, since the
 * vectors write expected clocks unpadded). */
static void check_fields(const mqstate_hlc *hlc, const char *want, const char *name) {
    mqstate_hlc *expected = parse_hlc(want, name);
    uint64_t a = 0, b = 0, c = 0, d = 0;
    char node_a[128], node_b[128];
    if (expected == NULL) return;
    CHECK_STATUS(mqstate_hlc_wall_ms(hlc, &a), MQSTATE_STATUS_OK, name);
    CHECK_STATUS(mqstate_hlc_wall_ms(expected, &b), MQSTATE_STATUS_OK, name);
    CHECK_STATUS(mqstate_hlc_counter(hlc, &c), MQSTATE_STATUS_OK, name);
    CHECK_STATUS(mqstate_hlc_counter(expected, &d), MQSTATE_STATUS_OK, name);
    CHECK_STATUS(mqstate_hlc_node_id(hlc, node_a, sizeof node_a, NULL), MQSTATE_STATUS_OK, name);
    CHECK_STATUS(mqstate_hlc_node_id(expected, node_b, sizeof node_b, NULL), MQSTATE_STATUS_OK,
                 name);
    CHECK(a == b && c == d && strcmp(node_a, node_b) == 0,
          "%s: got %" PRIu64 ":%" PRIu64 ":%s, want %s", name, a, c, node_a, want);
    mqstate_hlc_free(expected);
}

static void check_step(const struct hlc_step_case *c, mqstate_status status, mqstate_hlc *got) {
    if (strcmp(c->expect, "error:drift") == 0) {
        CHECK_STATUS(status, MQSTATE_STATUS_CLOCK_DRIFT, c->name);
        CHECK(got == NULL, "%s: out reset", c->name);
    } else if (strcmp(c->expect, "error:overflow") == 0) {
        CHECK_STATUS(status, MQSTATE_STATUS_CLOCK_OVERFLOW, c->name);
        CHECK(got == NULL, "%s: out reset", c->name);
    } else {
        CHECK_STATUS(status, MQSTATE_STATUS_OK, c->name);
        if (got != NULL) check_fields(got, c->expect, c->name);
    }
    mqstate_hlc_free(got);
}

void test_hlc(void) {
    for (size_t i = 0; i < hlc_parse_cases_count; i++) {
        const struct hlc_parse_case *c = &hlc_parse_cases[i];
        mqstate_hlc *hlc = NULL;
        mqstate_status status = mqstate_hlc_parse(c->text, &hlc);
        if (!c->ok) {
            CHECK_STATUS(status, MQSTATE_STATUS_MALFORMED, c->text);
            CHECK(hlc == NULL, "%s: out reset", c->text);
            continue;
        }
        CHECK_STATUS(status, MQSTATE_STATUS_OK, c->text);
        uint64_t wall = 0, counter = 0;
        char node[128];
        CHECK_STATUS(mqstate_hlc_wall_ms(hlc, &wall), MQSTATE_STATUS_OK, c->text);
        CHECK_STATUS(mqstate_hlc_counter(hlc, &counter), MQSTATE_STATUS_OK, c->text);
        CHECK_STATUS(mqstate_hlc_node_id(hlc, node, sizeof node, NULL), MQSTATE_STATUS_OK,
                     c->text);
        CHECK(wall == c->wall_ms && counter == c->counter && strcmp(node, c->node_id) == 0,
              "%s: fields", c->text);
        mqstate_hlc_free(hlc);
    }

    for (size_t i = 0; i < hlc_format_cases_count; i++) {
        const struct hlc_format_case *c = &hlc_format_cases[i];
        mqstate_hlc *hlc = NULL;
        char text[128];
        size_t len = 0;
        CHECK_STATUS(mqstate_hlc_new(c->wall_ms, c->counter, c->node_id, &hlc), MQSTATE_STATUS_OK,
                     c->text);
        CHECK_STATUS(mqstate_hlc_to_string(hlc, text, sizeof text, &len), MQSTATE_STATUS_OK,
                     c->text);
        CHECK(strcmp(text, c->text) == 0 && len == strlen(c->text), "%s: got %s", c->text, text);
        mqstate_hlc_free(hlc);
    }

    for (size_t i = 0; i < hlc_compare_cases_count; i++) {
        const struct hlc_compare_case *c = &hlc_compare_cases[i];
        mqstate_hlc *a = parse_hlc(c->a, c->a), *b = parse_hlc(c->b, c->b);
        int32_t ab = 9, ba = 9;
        CHECK_STATUS(mqstate_hlc_compare(a, b, &ab), MQSTATE_STATUS_OK, c->a);
        CHECK_STATUS(mqstate_hlc_compare(b, a, &ba), MQSTATE_STATUS_OK, c->b);
        CHECK(ab == c->order && ba == -c->order, "%s vs %s: %d/%d", c->a, c->b, (int)ab,
              (int)ba);
        mqstate_hlc_free(a);
        mqstate_hlc_free(b);
    }

    for (size_t i = 0; i < hlc_tick_cases_count; i++) {
        const struct hlc_step_case *c = &hlc_tick_cases[i];
        mqstate_hlc *clock = parse_hlc(c->clock, c->name), *got = NULL;
        mqstate_status status = mqstate_hlc_tick(clock, c->now_ms, c->max_drift_ms, &got);
        check_step(c, status, got);
        mqstate_hlc_free(clock);
    }

    for (size_t i = 0; i < hlc_receive_cases_count; i++) {
        const struct hlc_step_case *c = &hlc_receive_cases[i];
        mqstate_hlc *clock = parse_hlc(c->clock, c->name), *other = parse_hlc(c->other, c->name);
        mqstate_hlc *got = NULL;
        mqstate_status status =
            mqstate_hlc_receive(clock, other, c->now_ms, c->max_drift_ms, &got);
        check_step(c, status, got);
        mqstate_hlc_free(clock);
        mqstate_hlc_free(other);
    }
}

/* An injected time source: the context points to the current time in milliseconds. */
static uint64_t fake_now(void *context) {
    return *(const uint64_t *)context;
}

static uint64_t wall_of(const mqstate_hlc *hlc) {
    uint64_t wall = 0;
    CHECK_STATUS(mqstate_hlc_wall_ms(hlc, &wall), MQSTATE_STATUS_OK, "wall_of");
    return wall;
}

/* Several threads ticking one clock: every value is distinct (no torn or repeated ticks). */
#define TICKERS 2
#define TICKS 500

struct ticker {
    mqstate_clock *clock;
    uint64_t counters[TICKS];
    uint64_t walls[TICKS];
    int failures;
};

static void *tick_many(void *arg) {
    struct ticker *t = arg;
    for (int i = 0; i < TICKS; i++) {
        mqstate_hlc *hlc = NULL;
        if (mqstate_clock_tick(t->clock, &hlc) != MQSTATE_STATUS_OK ||
            mqstate_hlc_wall_ms(hlc, &t->walls[i]) != MQSTATE_STATUS_OK ||
            mqstate_hlc_counter(hlc, &t->counters[i]) != MQSTATE_STATUS_OK) {
            t->failures++;
        }
        mqstate_hlc_free(hlc);
    }
    return NULL;
}

static void shared_clock_across_threads(void) {
    uint64_t now = 5000; /* frozen time: only the counter moves */
    struct ticker tickers[TICKERS];
    pthread_t threads[TICKERS];
    mqstate_clock *clock = NULL;
    CHECK_STATUS(mqstate_clock_new_with_time_source("threads", fake_now, &now, 60000, &clock),
                 MQSTATE_STATUS_OK, "thread clock");
    for (int i = 0; i < TICKERS; i++) {
        tickers[i].clock = clock;
        tickers[i].failures = 0;
        CHECK(pthread_create(&threads[i], NULL, tick_many, &tickers[i]) == 0, "thread %d", i);
    }
    for (int i = 0; i < TICKERS; i++) pthread_join(threads[i], NULL);
    /* Counters 1..TICKERS*TICKS at wall 5000, each exactly once. */
    static unsigned char seen[TICKERS * TICKS + 1];
    int distinct = 0;
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < TICKERS; i++) {
        CHECK(tickers[i].failures == 0, "ticker %d failures", i);
        for (int j = 0; j < TICKS; j++) {
            uint64_t c = tickers[i].counters[j];
            if (tickers[i].walls[j] == 5000 && c >= 1 && c <= TICKERS * TICKS && !seen[c]) {
                seen[c] = 1;
                distinct++;
            }
            if (j > 0) {
                CHECK(c > tickers[i].counters[j - 1], "thread %d: monotonic at %d", i, j);
            }
        }
    }
    CHECK(distinct == TICKERS * TICKS, "distinct ticks: %d", distinct);
    mqstate_clock_free(clock);
}

void test_clock(void) {
    shared_clock_across_threads();

    uint64_t now = 1000;
    mqstate_clock *clock = NULL;
    mqstate_hlc *a = NULL, *b = NULL, *c = NULL, *far = NULL, *got = NULL, *current = NULL;
    int32_t order = 0;

    CHECK_STATUS(mqstate_clock_new_with_time_source("me", fake_now, &now,
                                                    MQSTATE_DEFAULT_MAX_DRIFT_MS, &clock),
                 MQSTATE_STATUS_OK, "clock");
    CHECK_STATUS(mqstate_clock_tick(clock, &a), MQSTATE_STATUS_OK, "tick a");
    CHECK_STATUS(mqstate_clock_tick(clock, &b), MQSTATE_STATUS_OK, "tick b");
    CHECK_STATUS(mqstate_hlc_compare(b, a, &order), MQSTATE_STATUS_OK, "b vs a");
    CHECK(order == 1 && wall_of(a) == 1000, "ticks are monotonic (%d)", (int)order);
    now = 500; /* time goes backwards: the clock still moves forward */
    CHECK_STATUS(mqstate_clock_tick(clock, &c), MQSTATE_STATUS_OK, "tick c");
    CHECK_STATUS(mqstate_hlc_compare(c, b, &order), MQSTATE_STATUS_OK, "c vs b");
    CHECK(order == 1, "tick after time went back");

    CHECK_STATUS(mqstate_hlc_new(500 + MQSTATE_DEFAULT_MAX_DRIFT_MS + 1, 0, "them", &far),
                 MQSTATE_STATUS_OK, "far");
    CHECK_STATUS(mqstate_clock_receive(clock, far, &got), MQSTATE_STATUS_CLOCK_DRIFT, "drift");
    CHECK(got == NULL, "no value on drift");
    CHECK_STATUS(mqstate_clock_current(clock, &current), MQSTATE_STATUS_OK, "current");
    CHECK_STATUS(mqstate_hlc_compare(current, c, &order), MQSTATE_STATUS_OK, "current vs c");
    CHECK(order == 0, "a refused receive leaves the clock unchanged");

    now = 1000; /* now the same value is within the drift: its wall clock, counter + 1 */
    CHECK_STATUS(mqstate_clock_receive(clock, far, &got), MQSTATE_STATUS_OK, "receive");
    uint64_t counter = 9;
    CHECK_STATUS(mqstate_hlc_counter(got, &counter), MQSTATE_STATUS_OK, "counter");
    CHECK(got != NULL && wall_of(got) == 500 + MQSTATE_DEFAULT_MAX_DRIFT_MS + 1 && counter == 1,
          "adopted");
    mqstate_hlc_free(got);
    mqstate_hlc_free(current);
    mqstate_hlc_free(far);
    mqstate_hlc_free(c);
    mqstate_hlc_free(b);
    mqstate_hlc_free(a);
    mqstate_clock_free(clock);

    /* The system clock: a tick lands after 2023-01-01 (1672531200000 ms). */
    CHECK_STATUS(mqstate_clock_new("sys", &clock), MQSTATE_STATUS_OK, "system clock");
    CHECK_STATUS(mqstate_clock_tick(clock, &a), MQSTATE_STATUS_OK, "system tick");
    CHECK(a != NULL && wall_of(a) > UINT64_C(1672531200000), "system time");
    mqstate_hlc_free(a);
    mqstate_clock_free(clock);
}
