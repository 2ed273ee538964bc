/*
 * GET/SET load through the C API, for docs/benchmarks.md (run by bench/bindings.sh):
 *   ./bench URL THREADS SECONDS [WATCH_PID]
 * THREADS threads share one client, each with one blocking call in flight; half SETs, half
 * GETs of 16-byte values over 1000 keys, like `mqstate bench`; 1 s of warm-up, then SECONDS
 * measured. Prints `c THREADS OPS_PER_S CPU_US_PER_OP WATCHED_CPU_US_PER_OP`: the CPU time
 * (user + system) of this process, and of process WATCH_PID (the store) if given, per
 * request over the measured window (`-` when not measured).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mqstate.h>

static mqstate_client *client;
static atomic_long done;
static atomic_int measuring;
static atomic_int stopping;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* User + system CPU of process `pid` in clock ticks, or -1. */
static long long cpu_ticks(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return -1;
    long long utime = 0, stime = 0;
    /* After the name: state, then fields 4..13, then utime (14) and stime (15). */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &utime, &stime) != 2)
        return -1;
    return utime + stime;
}

static void *worker(void *arg) {
    long i = (long)(intptr_t)arg;
    const uint8_t value[16] = "vvvvvvvvvvvvvvv";
    char key[32];
    while (!atomic_load(&stopping)) {
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
        if (atomic_load(&measuring)) atomic_fetch_add(&done, 1);
        i += 7919;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s URL THREADS SECONDS [WATCH_PID]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[2]);
    double seconds = atof(argv[3]);
    long watch = argc == 5 ? atol(argv[4]) : 0;
    mqstate_settings *s = NULL;
    if (mqstate_settings_from_url(argv[1], &s) != MQSTATE_STATUS_OK ||
        mqstate_client_connect(s, 0, &client) != MQSTATE_STATUS_OK) {
        fprintf(stderr, "bench: cannot connect\n");
        return 1;
    }
    mqstate_settings_free(s);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    sleep_s(1.0);
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
    long long w0 = watch ? cpu_ticks(watch) : -1;
    atomic_store(&measuring, 1);
    sleep_s(seconds);
    atomic_store(&measuring, 0);
    double elapsed = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    long long w1 = watch ? cpu_ticks(watch) : -1;
    long ops = atomic_load(&done);
    atomic_store(&stopping, 1);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double per = ops > 0 ? (double)ops : 1.0;
    printf("c %d %.0f %.1f ", threads, (double)ops / elapsed, cpu * 1e6 / per);
    if (w0 >= 0 && w1 >= 0)
        printf("%.1f\n", (double)(w1 - w0) * 1e6 / (double)sysconf(_SC_CLK_TCK) / per);
    else
        printf("-\n");
    free(t);
    mqstate_client_close(client);
    return 0;
}
