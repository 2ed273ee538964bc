/*
 * The client-side cache through the C API (docs/benchmarks.md, "Client-side cache"):
 *   ./cached URL [SECONDS] [ROUNDS]
 * One thread, one blocking GET at a time over 1,000 keys of 16-byte values, read in turn.
 * Each round times, for SECONDS (default 2) each and in turns, a client without the cache and
 * one with `cache=true` (every key read once before the window: the cache is warm). Prints
 * the median over ROUNDS (default 3) of each one's mean µs per get, their ratio, and the
 * cached client's counters (how many reads reached the store).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mqstate.h>

#define KEYS 1000
#define MAX_ROUNDS 64

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, mqstate_status st) {
    fprintf(stderr, "cached: %s: %s\n", what, mqstate_status_name(st));
    exit(1);
}

static mqstate_client *connect_to(const char *url, bool cache) {
    mqstate_settings *s = NULL;
    mqstate_client *c = NULL;
    mqstate_status st = mqstate_settings_from_url(url, &s);
    if (st != MQSTATE_STATUS_OK) fail("settings from the URL", st);
    if (cache && (st = mqstate_settings_set(s, "cache", "true")) != MQSTATE_STATUS_OK)
        fail("cache=true", st);
    if ((st = mqstate_client_connect(s, 0, &c)) != MQSTATE_STATUS_OK) fail("connect", st);
    mqstate_settings_free(s);
    return c;
}

static size_t key_of(int i, char *buf, size_t cap) {
    return (size_t)snprintf(buf, cap, "cached-bench/%d", i);
}

static void get(mqstate_client *c, int i) {
    char key[32];
    size_t n = key_of(i, key, sizeof key);
    mqstate_value *v = NULL;
    mqstate_status st = mqstate_client_get(c, (const uint8_t *)key, n, NULL, &v);
    if (st != MQSTATE_STATUS_OK) fail("get", st);
    if (v == NULL) {
        fprintf(stderr, "cached: %s is missing\n", key);
        exit(1);
    }
    mqstate_value_free(v);
}

/* Mean µs per get of `c` over `seconds`, every key read once before. */
static double timed(mqstate_client *c, double seconds) {
    for (int i = 0; i < KEYS; i++) get(c, i);
    long n = 0;
    double start = now_s(), deadline = start + seconds, now;
    for (;;) {
        for (int i = 0; i < 100; i++) get(c, i);
        n += 100;
        if ((now = now_s()) >= deadline) return (now - start) / (double)n * 1e6;
    }
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n) {
    qsort(xs, (size_t)n, sizeof *xs, by_value);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s URL [SECONDS] [ROUNDS]\n", argv[0]);
        return 2;
    }
    double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (seconds <= 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "cached: SECONDS > 0 and 1 <= ROUNDS <= %d\n", MAX_ROUNDS);
        return 2;
    }
    mqstate_client *writer = connect_to(argv[1], false);
    for (int i = 0; i < KEYS; i++) {
        char key[32];
        size_t n = key_of(i, key, sizeof key);
        mqstate_status st = mqstate_client_set(writer, (const uint8_t *)key, n,
                                               (const uint8_t *)"vvvvvvvvvvvvvvvv", 16, NULL,
                                               NULL, NULL);
        if (st != MQSTATE_STATUS_OK) fail("set", st);
    }
    mqstate_client_close(writer);
    double plain[MAX_ROUNDS], cached[MAX_ROUNDS];
    mqstate_cache_stats stats;
    memset(&stats, 0, sizeof stats);
    for (int r = 0; r < rounds; r++) {
        mqstate_client *c = connect_to(argv[1], false);
        plain[r] = timed(c, seconds);
        mqstate_client_close(c);
        c = connect_to(argv[1], true);
        cached[r] = timed(c, seconds);
        bool enabled = false;
        mqstate_status st = mqstate_client_cache_stats(c, &enabled, &stats);
        if (st != MQSTATE_STATUS_OK || !enabled) fail("cache_stats", st);
        mqstate_client_close(c);
    }
    double p = median(plain, rounds), k = median(cached, rounds);
    printf("uncached %9.2f µs per get (median of %d rounds of %g s)\n", p, rounds, seconds);
    printf("cached   %9.2f µs per get\n", k);
    printf("ratio    %.1fx faster with the cache\n", p / k);
    printf("last cached client: %llu hits, %llu misses (reads that reached the store)\n",
           (unsigned long long)stats.hits, (unsigned long long)stats.misses);
    return 0;
}
