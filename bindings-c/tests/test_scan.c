/*
 * SCAN through the C client against a live store: the pager handle, pages followed to the
 * end (more keys than one page of the emulator's 500), binary keys, the done status,
 * argument errors with out-parameters reset, cancellation leaving the scan where it was,
 * and a pager outliving its client.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "live.h"

#define FILL 520

/* Sets `n` keys "<base>k0000" … and one binary key "<base>b\0\r\n\xff". */
static void fill(mqstate_client *c, const char *base, int n) {
    char key[160];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%sk%04d", base, i);
        CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, strlen(key),
                                        (const uint8_t *)"v", 1, NULL, NULL, NULL),
                     MQSTATE_STATUS_OK, "fill");
    }
    size_t len = strlen(base);
    memcpy(key, base, len);
    memcpy(key + len, "b\0\r\n\xff", 5);
    CHECK_STATUS(mqstate_client_set(c, (const uint8_t *)key, len + 5, (const uint8_t *)"v", 1,
                                    NULL, NULL, NULL),
                 MQSTATE_STATUS_OK, "binary key");
}

/* Follows `scan` to the end: the number of keys; *pages counts the pages. */
static size_t drain(mqstate_scan *scan, const char *base, int *pages, int *binary_seen) {
    size_t total = 0;
    mqstate_scan_page *page = NULL;
    *pages = 0;
    for (;;) {
        mqstate_status st = mqstate_scan_next(scan, NULL, &page);
        CHECK_STATUS(st, MQSTATE_STATUS_OK, "scan_next");
        if (st != MQSTATE_STATUS_OK || page == NULL) break;
        (*pages)++;
        size_t n = mqstate_scan_page_count(page);
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            const uint8_t *key = mqstate_scan_page_key(page, i, &len);
            CHECK(key != NULL && len > strlen(base) && memcmp(key, base, strlen(base)) == 0,
                  "key %lu starts with the base", (unsigned long)i);
            if (key && len == strlen(base) + 5 && memcmp(key + strlen(base), "b\0\r\n\xff", 5) == 0)
                (*binary_seen)++;
        }
        size_t len = 7;
        CHECK(mqstate_scan_page_key(page, n, &len) == NULL && len == 0, "past the end");
        total += n;
        mqstate_scan_page_free(page);
        if (*pages > 100) break;
    }
    return total;
}

void test_scans(void) {
    mqstate_client *c = live_client();
    if (c == NULL) return;
    char base[64], pattern[80];
    live_key(base, sizeof base, "scan/");
    fill(c, base, FILL);

    /* Argument errors: out-parameters reset, nothing to free. */
    mqstate_scan *scan = (mqstate_scan *)&scan;
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)"", 0, 0, &scan),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "empty pattern");
    CHECK(scan == NULL, "out reset on error");
    CHECK_STATUS(mqstate_client_scan(NULL, (const uint8_t *)"*", 1, 0, &scan),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL client");
    CHECK_STATUS(mqstate_client_scan(c, NULL, 3, 0, &scan), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL pattern");
    scan = (mqstate_scan *)&scan;
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)"*", 1, MQSTATE_NO_TIMEOUT, &scan),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "a page is a request: no endless timeout");
    CHECK(scan == NULL, "no pager on failure");
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)"*", 1, 0, NULL),
                 MQSTATE_STATUS_INVALID_ARGUMENT, "NULL out");
    mqstate_scan_page *page = (mqstate_scan_page *)&page;
    CHECK_STATUS(mqstate_scan_next(NULL, NULL, &page), MQSTATE_STATUS_INVALID_ARGUMENT,
                 "NULL scan");
    CHECK(page == NULL, "page reset on error");
    CHECK(mqstate_scan_page_count(NULL) == 0 && mqstate_scan_page_key(NULL, 0, NULL) == NULL,
          "NULL page");
    CHECK(!mqstate_scan_is_done(NULL), "NULL is not done");
    mqstate_scan_free(NULL);
    mqstate_scan_page_free(NULL);

    /* Every page to the end: all keys once, the binary one byte-exact. */
    snprintf(pattern, sizeof pattern, "%s*", base);
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)pattern, strlen(pattern), 0, &scan),
                 MQSTATE_STATUS_OK, "scan");
    CHECK(!mqstate_scan_is_done(scan), "not done before the first page");
    int pages = 0, binary = 0;
    size_t total = drain(scan, base, &pages, &binary);
    CHECK(total == FILL + 1, "%lu keys", (unsigned long)total);
    CHECK(pages >= 2, "%d pages", pages);
    CHECK(binary == 1, "the binary key once");
    CHECK(mqstate_scan_is_done(scan), "done");
    CHECK_STATUS(mqstate_scan_next(scan, NULL, &page), MQSTATE_STATUS_OK, "after the end");
    CHECK(page == NULL, "no page after the end");
    mqstate_scan_free(scan);

    /* A pattern of binary bytes; ? and classes. */
    size_t blen = strlen(base);
    char bin[80];
    memcpy(bin, base, blen);
    memcpy(bin + blen, "b\0\r*", 4);
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)bin, blen + 4, 0, &scan), MQSTATE_STATUS_OK,
                 "binary pattern");
    binary = 0;
    CHECK(drain(scan, base, &pages, &binary) == 1 && binary == 1, "binary pattern matches");
    mqstate_scan_free(scan);
    snprintf(pattern, sizeof pattern, "%sk00[0-4]?", base);
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)pattern, strlen(pattern), 0, &scan),
                 MQSTATE_STATUS_OK, "class pattern");
    total = drain(scan, base, &pages, &binary);
    CHECK(total == 50 && pages == 1, "%lu keys in %d pages", (unsigned long)total, pages);
    mqstate_scan_free(scan);

    /* A cancelled page leaves the scan where it was: the next call asks for it again. */
    mqstate_cancel *token = NULL;
    CHECK_STATUS(mqstate_cancel_new(&token), MQSTATE_STATUS_OK, "cancel_new");
    CHECK_STATUS(mqstate_cancel_trigger(token), MQSTATE_STATUS_OK, "trigger");
    snprintf(pattern, sizeof pattern, "%sk*", base);
    CHECK_STATUS(mqstate_client_scan(c, (const uint8_t *)pattern, strlen(pattern), 0, &scan),
                 MQSTATE_STATUS_OK, "scan to cancel");
    page = (mqstate_scan_page *)&page;
    CHECK_STATUS(mqstate_scan_next(scan, token, &page), MQSTATE_STATUS_CANCELLED, "cancelled");
    CHECK(page == NULL && !mqstate_scan_is_done(scan), "no page, not done");
    CHECK_STATUS(mqstate_scan_next(scan, NULL, &page), MQSTATE_STATUS_OK, "retried");
    CHECK(page != NULL && mqstate_scan_page_count(page) == 500, "the first page: %lu keys",
          (unsigned long)mqstate_scan_page_count(page));
    if (page != NULL) {
        size_t len = 0;
        const uint8_t *first = mqstate_scan_page_key(page, 0, &len);
        char want[80];
        snprintf(want, sizeof want, "%sk0000", base);
        CHECK(first && bytes_equal(first, len, (const uint8_t *)want, strlen(want)),
              "starts from the first key");
    }
    mqstate_scan_page_free(page);
    mqstate_cancel_free(token);

    /* The pager outlives its client: its pages then fail with CLOSED. */
    mqstate_client_close(c);
    CHECK_STATUS(mqstate_scan_next(scan, NULL, &page), MQSTATE_STATUS_CLOSED, "closed client");
    CHECK(page == NULL, "no page");
    mqstate_scan_free(scan);
}
