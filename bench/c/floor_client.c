/*
 * Floor for the batch benchmark: the client half. Connects like a batch client, then times
 * ITER round trips ('r' → 'c', then copying the N doubles out of the shared buffer) and prints
 * {"p50_us":…,"p99_us":…,"value_sum":…} on stdout, value_sum being the sum of the N values of
 * the last read (so the caller can check what was read).
 * Usage: floor_client RUN_DIR KEY N ITER WARMUP
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 64

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: floor_client RUN_DIR KEY N ITER WARMUP\n");
        return 2;
    }
    const char *run = argv[1], *key = argv[2];
    int n = atoi(argv[3]), iter = atoi(argv[4]), warmup = atoi(argv[5]);
    char buf_path[4096], in_path[4096], out_path[4096];
    snprintf(buf_path, sizeof buf_path, "%s/batch-buffer-%s-signal", run, key);
    snprintf(in_path, sizeof in_path, "%s/batch-status-%s-in", run, key);
    snprintf(out_path, sizeof out_path, "%s/batch-status-%s-out", run, key);

    size_t size = HEADER_BYTES + 8 * (size_t)n;
    int fd = open(buf_path, O_RDWR);
    if (fd < 0) die("open buffer");
    char *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap");
    close(fd);
    int out_fd = open(out_path, O_RDONLY);
    int in_fd = open(in_path, O_WRONLY);
    if (out_fd < 0 || in_fd < 0) die("open fifo");

    double *copy = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *times = malloc(sizeof(double) * (size_t)iter);
    volatile double sink = 0; /* keeps every copy live */
    for (int i = -warmup; i < iter; i++) {
        double start = now_us();
        char msg = 'r';
        if (write(in_fd, &msg, 1) != 1 || read(out_fd, &msg, 1) != 1 || msg != 'c') die("round trip");
        memcpy(copy, map + HEADER_BYTES, 8 * (size_t)n);
        double end = now_us();
        sink += copy[n - 1];
        if (i >= 0) times[i] = end - start;
    }
    char q = 'q';
    if (write(in_fd, &q, 1) != 1 || read(out_fd, &q, 1) != 1) die("quit");
    double sum = 0;
    for (int i = 0; i < n; i++) sum += copy[i];
    qsort(times, (size_t)iter, sizeof(double), by_value);
    printf("{\"p50_us\":%.3f,\"p99_us\":%.3f,\"value_sum\":%.17g}\n", times[iter / 2],
           times[(int)(iter * 0.99)], sum);
    return 0;
}
