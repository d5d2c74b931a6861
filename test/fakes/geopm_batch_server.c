/*
 * A batch server written from the protocol facts alone (GEOPM's BatchServer as
 * docs/reference/geopm-service.md#batch-protocol describes it), sharing no code with joulegate, so tests can
 * drive joulegate's BatchClient against an independent implementation. Its "PlatformIO" is
 * plain files: each signal is a file holding one number, each control a file the setting is
 * written to.
 *   - buffers "<run>/batch-buffer-<key>-signal|control", only when they carry something:
 *     umask 0, open(O_RDWR|O_CREAT|O_EXCL, 0600), ftruncate(64 + 8 * N), mmap(MAP_SHARED), a
 *     process-shared error-checking pthread mutex in the 64-byte header, fchown to the owner of
 *     /proc/<client pid> (the key is the client's pid);
 *   - FIFOs "<run>/batch-status-<key>-in|out": mkfifo 0600, chown to the client; the server
 *     opens "-out" O_WRONLY, then "-in" O_RDONLY (blocking), then unlinks both; the buffers are
 *     unlinked once the first message arrives;
 *   - 'r': read every signal (NaN when unreadable) into the signal buffer, answer 'c';
 *     'w': apply every setting of the control buffer, answer 'c' — a NaN setting is rejected
 *     as GEOPM's adjust() rejects it, and a failed write ends the server;
 *     'q': answer 'q' and exit 0; end of file or any other byte: exit 1.
 * Usage: geopm_batch_server RUN_DIR KEY [-s SIGNAL_FILE]... [-c CONTROL_FILE]...
 * Prints "ready" once every file exists; reasons for ending go to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 64
#define MAX_FILES 64

static void die(const char *what, const char *detail) {
    fprintf(stderr, "geopm_batch_server: %s: %s\n", what, detail);
    exit(1);
}

/* Creates one shared buffer for `count` doubles; NULL (and no file) when count is 0. */
static double *create_buffer(const char *path, int count, uid_t uid, gid_t gid) {
    if (count == 0) return NULL;
    size_t size = HEADER_BYTES + 8 * (size_t)count;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) die(path, strerror(errno));
    if (ftruncate(fd, (off_t)size) != 0) die("ftruncate", strerror(errno));
    char *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap", strerror(errno));
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (pthread_mutex_init((pthread_mutex_t *)map, &attr) != 0) die("pthread_mutex_init", path);
    pthread_mutexattr_destroy(&attr);
    if (fchown(fd, uid, gid) != 0) die("fchown", strerror(errno));
    close(fd);
    return (double *)(map + HEADER_BYTES);
}

static double read_number(const char *path) {
    FILE *f = fopen(path, "r");
    double value = NAN;
    if (f) {
        if (fscanf(f, "%lf", &value) != 1) value = NAN;
        fclose(f);
    }
    return value;
}

/*
 * Applies every setting; false (the server then ends) when one cannot be. Like adjust() then
 * write_batch(): a NaN setting is rejected before anything is written.
 */
static int apply_settings(char **files, const double *settings, int count) {
    for (int i = 0; i < count; i++) {
        if (isnan(settings[i])) {
            fprintf(stderr, "geopm_batch_server: adjust(): setting %d is NaN\n", i);
            return 0;
        }
    }
    for (int i = 0; i < count; i++) {
        FILE *f = fopen(files[i], "w");
        if (!f || fprintf(f, "%.17g\n", settings[i]) < 0 || fclose(f) != 0) {
            fprintf(stderr, "geopm_batch_server: cannot write %s\n", files[i]);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: geopm_batch_server RUN_DIR KEY [-s SIGNAL_FILE]... [-c CONTROL_FILE]...\n");
        return 2;
    }
    const char *run = argv[1], *key = argv[2];
    char *signal_files[MAX_FILES], *control_files[MAX_FILES];
    int num_signals = 0, num_controls = 0;
    for (int a = 3; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "-s") == 0 && num_signals < MAX_FILES) signal_files[num_signals++] = argv[a + 1];
        else if (strcmp(argv[a], "-c") == 0 && num_controls < MAX_FILES) control_files[num_controls++] = argv[a + 1];
        else die("bad argument", argv[a]);
    }

    char proc[64];
    struct stat client;
    snprintf(proc, sizeof proc, "/proc/%s", key);
    if (stat(proc, &client) != 0) die(proc, strerror(errno));

    char signal_path[4096], control_path[4096], in_path[4096], out_path[4096];
    snprintf(signal_path, sizeof signal_path, "%s/batch-buffer-%s-signal", run, key);
    snprintf(control_path, sizeof control_path, "%s/batch-buffer-%s-control", run, key);
    snprintf(in_path, sizeof in_path, "%s/batch-status-%s-in", run, key);
    snprintf(out_path, sizeof out_path, "%s/batch-status-%s-out", run, key);

    umask(0);
    double *signals = create_buffer(signal_path, num_signals, client.st_uid, client.st_gid);
    double *controls = create_buffer(control_path, num_controls, client.st_uid, client.st_gid);
    const char *fifos[] = {in_path, out_path};
    for (int i = 0; i < 2; i++) {
        if (mkfifo(fifos[i], 0600) != 0) die(fifos[i], strerror(errno));
        if (chown(fifos[i], client.st_uid, client.st_gid) != 0) die("chown", strerror(errno));
    }
    printf("ready\n");
    fflush(stdout);

    int out_fd = open(out_path, O_WRONLY);
    int in_fd = out_fd < 0 ? -1 : open(in_path, O_RDONLY);
    if (out_fd < 0 || in_fd < 0) die("open fifo", strerror(errno));
    unlink(out_path);
    unlink(in_path);

    for (int first = 1;; first = 0) {
        char message = 0;
        ssize_t got = read(in_fd, &message, 1);
        if (first) {
            if (num_signals > 0) unlink(signal_path);
            if (num_controls > 0) unlink(control_path);
        }
        char answer = 'c';
        if (got == 1 && message == 'r') {
            for (int i = 0; i < num_signals; i++) signals[i] = read_number(signal_files[i]);
        } else if (got == 1 && message == 'w') {
            if (!apply_settings(control_files, controls, num_controls)) return 1;
        } else if (got == 1 && message == 'q') {
            answer = 'q';
        } else {
            fprintf(stderr, "geopm_batch_server: received unknown message from client: %d\n",
                    got == 1 ? message : 0);
            return 1;
        }
        if (write(out_fd, &answer, 1) != 1) die("write", strerror(errno));
        if (answer == 'q') return 0;
    }
}
