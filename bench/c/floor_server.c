/*
 * Floor for the batch benchmark: the smallest C server doing what a batch server does per
 * read — wait for one byte on a FIFO, read each of its N files (opened once, then one pread at
 * offset 0 each, as sysfs regenerates the text on every read), parse each into a double in a
 * mmap'd buffer, answer one byte. The files are cpufreq attributes in kHz; the buffer holds Hz,
 * as joulegate's CPUFREQ signals do. Same files and open order as the batch protocol
 * (docs/batch.md).
 * Usage: floor_server RUN_DIR KEY FILE...   (N = number of FILEs; prints "ready" once the
 * batch files exist)
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 64

static void die(const char *what) {
    perror(what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: floor_server RUN_DIR KEY FILE...\n");
        return 2;
    }
    const char *run = argv[1], *key = argv[2];
    int n = argc - 3;
    int *files = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        files[i] = open(argv[3 + i], O_RDONLY);
        if (files[i] < 0) die(argv[3 + i]);
    }
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

    char msg, text[64];
    while (read(in_fd, &msg, 1) == 1) {
        if (msg == 'r') {
            for (int i = 0; i < n; i++) {
                ssize_t got = pread(files[i], text, sizeof text - 1, 0);
                char *end = text;
                double khz = NAN;
                if (got > 0) {
                    text[got] = '\0';
                    khz = strtod(text, &end);
                }
                /* a failed read is NaN, never 0, as in joulegate */
                values[i] = end == text ? NAN : khz * 1e3;
            }
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
