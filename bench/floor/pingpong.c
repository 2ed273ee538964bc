/* The transport floor of a request/response client (docs/benchmarks.md, "The floor of each
 * host"): a TCP echo server, and a native client doing one blocking round trip after another.
 *
 *   pingpong serve PORT            echoes every byte back (a thread per connection)
 *   pingpong client PORT SECONDS   64-byte round trips, 1 in flight, 1 s of warm-up; prints
 *                                  "native 1 OPS_PER_S CPU_US_PER_OP"
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SIZE = 64 };

static void nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void *echo(void *arg) {
    int fd = (int)(long)arg;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0) goto done;
            off += w;
        }
    }
done:
    close(fd);
    return NULL;
}

static int serve(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 64)) {
        perror("pingpong serve");
        return 1;
    }
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        nodelay(c);
        pthread_t t;
        pthread_create(&t, NULL, echo, (void *)(long)c);
        pthread_detach(t);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static int round_trip(int fd, char *buf) {
    if (write(fd, buf, SIZE) != SIZE) return -1;
    for (int got = 0; got < SIZE;) {
        ssize_t n = read(fd, buf + got, (size_t)(SIZE - got));
        if (n <= 0) return -1;
        got += (int)n;
    }
    return 0;
}

static int client(int port, double seconds) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("pingpong client");
        return 1;
    }
    nodelay(fd);
    char buf[SIZE];
    memset(buf, 'x', SIZE);
    for (double end = now() + 1.0; now() < end;)
        if (round_trip(fd, buf)) return 1;
    long done = 0;
    double t0 = now(), c0 = cpu(), end = t0 + seconds;
    while (now() < end) {
        if (round_trip(fd, buf)) return 1;
        done++;
    }
    double elapsed = now() - t0;
    printf("native 1 %.0f %.1f\n", (double)done / elapsed, (cpu() - c0) * 1e6 / (double)done);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "serve")) return serve(atoi(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "client")) return client(atoi(argv[2]), atof(argv[3]));
    fprintf(stderr, "usage: pingpong serve PORT | pingpong client PORT SECONDS\n");
    return 2;
}
