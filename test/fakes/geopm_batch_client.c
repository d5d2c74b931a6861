/*
 * A batch client written from the protocol facts alone (GEOPM's BatchClient as
 * docs/reference/geopm-service.md#batch-protocol describes it), sharing no code with joulegate, so tests can
 * drive joulegate's batch server with an independent implementation:
 *   - buffers "<run>/batch-buffer-<key>-signal|control": 64-byte header, then N little-endian
 *     doubles; waited for (up to 1 s, until the file exists with a size) and mapped MAP_SHARED
 *     before any message, as the server unlinks them once the first message arrives;
 *   - FIFOs "<run>/batch-status-<key>-out" opened O_RDONLY, then "-in" O_WRONLY, both blocking;
 *   - one-byte messages: 'r' → 'c' then read the signal buffer; settings into the control
 *     buffer, 'w' → 'c'; 'q' → 'q'.
 * Usage: geopm_batch_client RUN_DIR KEY NUM_SIGNALS NUM_CONTROLS STEP...
 *   r           read: prints {"read":[v,…]} (NaN as null, doubles with 17 digits)
 *   w=V1,V2,…   write every control (as GEOPM's client does): prints {"write":"ok"}
 *   w           send 'w' with the control buffer as it is: prints {"write":"ok"}
 *   set=I:V     store V in control I of the buffer, nothing sent: prints {"set":"ok"}
 *   q           quit: prints {"quit":"ok"}
 *   -           then take steps from stdin, one per line, until end of file (tests that check
 *               the hardware after each answer)
 * Anything unexpected prints {"error":"…"} and exits 1; alarm() bounds every blocking call.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 64

static void fail(const char *what, const char *detail) {
    printf("{\"error\":\"%s: %s\"}\n", what, detail);
    exit(1);
}

/* Maps "<run>/batch-buffer-<key>-<kind>" holding `count` doubles; NULL when count is 0. */
static double *attach(const char *run, const char *key, const char *kind, long count) {
    if (count == 0) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/batch-buffer-%s-%s", run, key, kind);
    struct stat st = {0};
    int fd = -1;
    for (int tries = 0; tries < 100; tries++) {
        fd = open(path, O_RDWR);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) break;
        if (fd >= 0) close(fd);
        fd = -1;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    if (fd < 0) fail(path, strerror(errno));
    if (st.st_size != HEADER_BYTES + 8 * count) fail(path, "size is not 64 + 8 * count");
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) fail(path, strerror(errno));
    close(fd);
    return (double *)((char *)map + HEADER_BYTES);
}

static int open_fifo(const char *run, const char *key, const char *direction, int flags) {
    char path[4096];
    snprintf(path, sizeof path, "%s/batch-status-%s-%s", run, key, direction);
    int fd = open(path, flags);
    if (fd < 0) fail(path, strerror(errno));
    return fd;
}

/* Sends one message and checks the one-byte answer; end of file (server gone) reads as 0. */
static void exchange(int in_fd, int out_fd, char message, char expected) {
    char reply = 0;
    if (write(in_fd, &message, 1) != 1) fail("write", strerror(errno));
    ssize_t got = read(out_fd, &reply, 1);
    if (got < 0) fail("read", strerror(errno));
    if (got == 1 && reply == expected) return;
    printf("{\"error\":\"'%c' answered with byte %d\"}\n", message, got == 1 ? reply : 0);
    exit(1);
}

static void print_values(const double *values, long count) {
    printf("{\"read\":[");
    for (long i = 0; i < count; i++) {
        if (isnan(values[i])) printf("%snull", i ? "," : "");
        else printf("%s%.17g", i ? "," : "", values[i]);
    }
    printf("]}\n");
}

/* Runs one step (see the usage above); each has its own alarm. */
static void run_step(const char *step, int in_fd, int out_fd, double *signals, long num_signals,
                     double *controls, long num_controls) {
    alarm(20);
    if (strcmp(step, "r") == 0) {
        exchange(in_fd, out_fd, 'r', 'c');
        print_values(signals, num_signals);
    } else if (strcmp(step, "w") == 0) {
        exchange(in_fd, out_fd, 'w', 'c');
        printf("{\"write\":\"ok\"}\n");
    } else if (strncmp(step, "w=", 2) == 0) {
        char *cursor = (char *)step + 2;
        for (long i = 0; i < num_controls; i++) {
            char *end;
            controls[i] = strtod(cursor, &end);
            if (end == cursor) fail("bad setting list", step);
            cursor = *end == ',' ? end + 1 : end;
        }
        exchange(in_fd, out_fd, 'w', 'c');
        printf("{\"write\":\"ok\"}\n");
    } else if (strncmp(step, "set=", 4) == 0) {
        char *end;
        long i = strtol(step + 4, &end, 10);
        if (*end != ':' || i < 0 || i >= num_controls) fail("bad set step", step);
        char *value_end;
        double value = strtod(end + 1, &value_end);
        if (value_end == end + 1) fail("bad set step", step);
        controls[i] = value;
        printf("{\"set\":\"ok\"}\n");
    } else if (strcmp(step, "q") == 0) {
        exchange(in_fd, out_fd, 'q', 'q');
        printf("{\"quit\":\"ok\"}\n");
    } else {
        fail("unknown step", step);
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: geopm_batch_client RUN_DIR KEY NUM_SIGNALS NUM_CONTROLS STEP...\n");
        return 2;
    }
    alarm(20);
    const char *run = argv[1], *key = argv[2];
    long num_signals = atol(argv[3]), num_controls = atol(argv[4]);
    double *signals = attach(run, key, "signal", num_signals);
    double *controls = attach(run, key, "control", num_controls);
    /* This order (out for reading first) is what keeps client and server from blocking each other. */
    int out_fd = open_fifo(run, key, "out", O_RDONLY);
    int in_fd = open_fifo(run, key, "in", O_WRONLY);
    for (int s = 5; s < argc; s++) {
        if (strcmp(argv[s], "-") != 0) {
            run_step(argv[s], in_fd, out_fd, signals, num_signals, controls, num_controls);
            continue;
        }
        char line[65536];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\n")] = 0;
            run_step(line, in_fd, out_fd, signals, num_signals, controls, num_controls);
        }
    }
    return 0;
}
