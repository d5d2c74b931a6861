/*
 * Floor for the batch benchmark: the smallest C server doing what a batch server does per
 * read — wait for one byte on a FIFO, fill N doubles in a mmap'd buffer, answer one byte.
 * Same files and open order as the batch protocol (docs/batch.md).
 * Usage: floor_server RUN_DIR KEY N   (prints "ready" once the files exist)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 64

static void die(const char *what) {
    perror(what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: floor_server RUN_DIR KEY N\n");
        return 2;
    }
    const char *run = argv[1], *key = argv[2];
    int n = atoi(argv[3]);
    char buf_path[4096], in_path[4096], out_path[4096];
    snprintf(buf_path, sizeof buf_path, "%s/batch-buffer-%s-signal", run, key);
    snprintf(in_path, sizeof in_path, "%s/batch-status-%s-in", run, key);
    snprintf(out_path, sizeof out_path, "%s/batch-status-%s-out", run, key);

    size_t size = HEADER_BYTES + 8 * (size_t)n;
    int fd = open(buf_path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) die("open buffer");
    if (ftruncate(fd, (off_t)size) != 0) die("ftruncate");
    char *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap");
    close(fd);
    double *values = (double *)(map + HEADER_BYTES);
    if (mkfifo(in_path, 0600) != 0 || mkfifo(out_path, 0600) != 0) die("mkfifo");
    printf("ready\n");
    fflush(stdout);

    int out_fd = open(out_path, O_WRONLY);
    int in_fd = open(in_path, O_RDONLY);
    if (out_fd < 0 || in_fd < 0) die("open fifo");
    unlink(out_path);
    unlink(in_path);
    unlink(buf_path);

    char msg;
    struct timespec now;
    while (read(in_fd, &msg, 1) == 1) {
        if (msg == 'r') {
            /* a cheap stand-in for reading the hardware: the clock, as the TIME signal does */
            clock_gettime(CLOCK_MONOTONIC, &now);
            double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
            for (int i = 0; i < n; i++) values[i] = t;
            char c = 'c';
            if (write(out_fd, &c, 1) != 1) die("write");
        } else {
            char q = 'q';
            if (msg == 'q' && write(out_fd, &q, 1) != 1) die("write");
            break;
        }
    }
    return 0;
}
