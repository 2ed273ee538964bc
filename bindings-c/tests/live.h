/*
 * Helpers of the C client tests: the live store's URL (MQSTATE_URL, set by the test
 * script, which starts `mqstate serve`), connected clients, unique keys.
 */
#ifndef MQSTATE_TEST_LIVE_H
#define MQSTATE_TEST_LIVE_H

#include <stdint.h>

#include "mqstate.h"

/* The store URL from MQSTATE_URL; NULL (and a failed check) when unset. */
const char *live_url(void);

/* A client of the store at `url` with a 5 s request timeout and the settings `pairs` (name,
   value, …, NULL; or NULL) on top: NULL and a failed check on error. */
mqstate_client *client_at(const char *url, const char *const *pairs);

/* A client connected to the live store (NULL and a failed check on error). */
mqstate_client *live_client(void);

/* Writes "c/<run>/<name>" into buf (a key unique to this run); returns buf. */
const char *live_key(char *buf, size_t len, const char *name);

/* Milliseconds of a monotonic clock. */
uint64_t now_ms(void);

/* The test groups that need a live store. */
void test_client(void);
void test_subscriptions(void);
void test_locks(void);
void test_threads(void);
void test_scans(void);

/* The groups that start stores of their own (mqstate_local_store), needing no MQSTATE_URL:
   the store's faults, and the client-side cache under them. */
void test_local_store(void);
void test_cache(void);
void test_telemetry(void);

#endif
