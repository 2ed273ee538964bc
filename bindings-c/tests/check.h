/*
 * A minimal check harness for the mqstate C tests: CHECK counts and reports failures
 * without stopping, so one run shows every failing case. Each group returns its failure
 * count; main.c runs the groups named on the command line.
 */
#ifndef MQSTATE_TEST_CHECK_H
#define MQSTATE_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#include "mqstate.h"
#include "vectors.h"

extern int check_count;
extern int check_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        check_count++;                                                          \
        if (!(cond)) {                                                          \
            check_failures++;                                                   \
            fprintf(stderr, "%s:%d: failed: %s [", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "]\n");                                             \
        }                                                                       \
    } while (0)

/* A status check that prints both statuses by name and the last error on failure. */
#define CHECK_STATUS(got, want, name) check_status((got), (want), (name), __FILE__, __LINE__)

void check_status(mqstate_status got, mqstate_status want, const char *name, const char *file,
                  int line);

/* Whether the bytes a[0..alen] equal b[0..blen]. */
int bytes_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* The last error message of this thread (a static buffer, truncated at 511 bytes). */
const char *last_error(void);

/* Parses an HLC text the test expects to be valid; NULL (and a failed check) otherwise. */
mqstate_hlc *parse_hlc(const char *text, const char *name);

/* The test groups. */
void test_requests(void);
void test_responses(void);
void test_notifications(void);
void test_topics(void);
void test_hlc(void);
void test_clock(void);
void test_errors(void);
void test_scan(void);
void test_outparams(void);

#endif
