/*
 * GET/SET load through the C API, for docs/benchmarks.md (run by bench/bindings.sh):
 *   ./bench URL THREADS SECONDS
 * THREADS threads share one client, each with one blocking call in flight; half SETs, half
 * GETs of 16-byte values over 1000 keys, like `mqstate bench`. Prints `c THREADS OPS_PER_S`.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mqstate.h>

static mqstate_client *client;
static atomic_long done;
static double stop_at;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    long i = (long)(intptr_t)arg;
    const uint8_t value[16] = "vvvvvvvvvvvvvvv";
    char key[32];
    while (now() < stop_at) {
        int n = snprintf(key, sizeof key, "bench/%ld", i % 1000);
        mqstate_status st;
        if (i % 2) {
            st = mqstate_client_set(client, (const uint8_t *)key, (size_t)n, value, 16, NULL, NULL, NULL);
        } else {
            mqstate_value *v = NULL;
            st = mqstate_client_get(client, (const uint8_t *)key, (size_t)n, NULL, &v);
            mqstate_value_free(v);
        }
        if (st != MQSTATE_STATUS_OK) {
            fprintf(stderr, "bench: %s\n", mqstate_status_name(st));
            exit(1);
        }
        atomic_fetch_add(&done, 1);
        i += 7919;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s URL THREADS SECONDS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[2]);
    double seconds = atof(argv[3]);
    mqstate_settings *s = NULL;
    if (mqstate_settings_from_url(argv[1], &s) != MQSTATE_STATUS_OK ||
        mqstate_client_connect(s, 0, &client) != MQSTATE_STATUS_OK) {
        fprintf(stderr, "bench: cannot connect\n");
        return 1;
    }
    mqstate_settings_free(s);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    stop_at = now() + seconds;
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("c %d %.0f\n", threads, (double)atomic_load(&done) / seconds);
    free(t);
    mqstate_client_close(client);
    return 0;
}
