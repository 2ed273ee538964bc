/*
 * Entry point of the mqstate C tests: `mqstate_tests GROUP...` runs the named groups
 * (requests, responses, notifications, topics, hlc, clock, errors, scan, outparams, or
 * all; client, subscriptions, locks, threads, scans, or live; local_store, cache, telemetry) and exits
 * non-zero if any check failed. CTest runs each group as its own test.
 */
#include <stdlib.h>

#include "check.h"
#include "live.h"

int check_count = 0;
int check_failures = 0;

void check_status(mqstate_status got, mqstate_status want, const char *name, const char *file,
                  int line) {
    check_count++;
    if (got != want) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s: status %s (%u), expected %s (%u): %s\n", file, line, name,
                mqstate_status_name(got), (unsigned)got, mqstate_status_name(want),
                (unsigned)want, last_error());
    }
}

int bytes_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    if (alen != blen) {
        return 0;
    }
    return alen == 0 || memcmp(a, b, alen) == 0;
}

const char *last_error(void) {
    static char buf[512];
    mqstate_last_error_message(buf, sizeof buf);
    return buf;
}

mqstate_hlc *parse_hlc(const char *text, const char *name) {
    mqstate_hlc *hlc = NULL;
    CHECK_STATUS(mqstate_hlc_parse(text, &hlc), MQSTATE_STATUS_OK, name);
    return hlc;
}

struct group {
    const char *name;
    void (*run)(void);
};

static const struct group groups[] = {
    {"requests", test_requests},         {"responses", test_responses},
    {"notifications", test_notifications}, {"topics", test_topics},
    {"hlc", test_hlc},                   {"clock", test_clock},
    {"errors", test_errors},             {"scan", test_scan},
    {"outparams", test_outparams},
    /* Against the live store at MQSTATE_URL. */
    {"client", test_client},             {"subscriptions", test_subscriptions},
    {"locks", test_locks},               {"threads", test_threads},
    {"scans", test_scans},
    /* Against stores of their own (mqstate_local_store): neither "all" nor "live". */
    {"local_store", test_local_store},   {"cache", test_cache},
    {"telemetry", test_telemetry},
};
/* The offline groups come first, then those needing MQSTATE_URL. */
#define OFFLINE_GROUPS 9
#define LIVE_GROUPS 5

int main(int argc, char **argv) {
    size_t n = sizeof groups / sizeof groups[0];
    if (argc < 2) {
        fprintf(stderr, "usage: %s GROUP... (all: the offline groups; live: those needing "
                        "MQSTATE_URL)\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        int found = 0;
        for (size_t g = 0; g < n; g++) {
            int offline = g < OFFLINE_GROUPS;
            int live = !offline && g < OFFLINE_GROUPS + LIVE_GROUPS;
            if ((strcmp(argv[i], "all") == 0 && offline) ||
                (strcmp(argv[i], "live") == 0 && live) ||
                strcmp(argv[i], groups[g].name) == 0) {
                int before = check_failures, checks = check_count;
                groups[g].run();
                printf("%-13s %d checks, %d failed\n", groups[g].name, check_count - checks,
                       check_failures - before);
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "unknown group %s\n", argv[i]);
            return 2;
        }
    }
    if (check_count == 0) {
        fprintf(stderr, "no checks ran\n");
        return 1;
    }
    return check_failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
