/*
 * The batch server's sampling loop in C (docs/batch.md, "The native sampling loop").
 *
 * A batch server whose every pushed signal has a native read (TIME; an integer sysfs file times
 * a scale; a constant) hands its FIFOs and signal buffer to jg_serve_reads(), which answers `r`
 * messages without returning to JavaScript: per sample, one read(2) of the message, the reads of
 * the plan, the stores into the shared buffer and one write(2) of `c`. It returns at the first
 * message it does not answer, or at the first read whose result it cannot be sure of, and the
 * JavaScript server handles that one exactly as it handles every message without this loop:
 * anything unusual (an I/O error, a file that holds more than one plain integer) is reported,
 * and turned into NaN, by the same code as before.
 *
 * Built into dist/native/ by scripts/build-native.mjs; loaded with koffi (src/batch/native-loop.ts).
 */
/* sched_getcpu() */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What a read is (NativeReadKind in native-loop.ts). */
enum { READ_CLOCK = 0, READ_DECIMAL_FILE = 1, READ_CONSTANT = 2 };

/* The aggregations this loop applies (GEOPM's enum values, src/platform/aggregation.ts). */
enum { AGG_SUM = 0, AGG_AVERAGE = 1, AGG_MIN = 6, AGG_MAX = 7, AGG_SELECT_FIRST = 11, AGG_EXPECT_SAME = 12 };

/* Return values besides a message byte (0..255). */
#define JG_END_OF_STREAM (-1)
#define JG_READ_FOR_JS (-2)
#define JG_BAD_PLAN (-3)
#define JG_AWAY_FROM_CLIENT (-4)
/* JG_READ_ERROR - errno / JG_WRITE_ERROR - errno: read(2) or write(2) on a FIFO failed. */
#define JG_READ_ERROR (-1000)
#define JG_WRITE_ERROR (-2000)

#define MESSAGE_READ 'r'
#define MESSAGE_CONTINUE 'c'

/* The layout koffi writes (native-loop.ts, READ_STRUCT): 24 bytes, no padding. */
struct jg_read {
    int32_t kind;
    int32_t fd;
    double scale;       /* READ_DECIMAL_FILE: the factor; READ_CONSTANT: the value */
    int64_t origin_ns;  /* READ_CLOCK: TIME's zero on CLOCK_MONOTONIC */
};

/* One distinct pushed signal: reads[first .. first + count) combined by `aggregation`. */
struct jg_signal {
    int32_t first;
    int32_t count;
    int32_t aggregation;
    int32_t unused;
};

/* Longest sysfs value read here; a file that fills the buffer is left to JavaScript. */
#define FILE_BYTES 64

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/*
 * One decimal integer, surrounded by white space at most, as PolledFile.readDecimal() takes it:
 * 1 to 15 digits (exact in a double), an optional minus. 0 and *out set, or -1 for anything else.
 */
static int parse_decimal(const unsigned char *b, ssize_t end, double *out) {
    ssize_t i = 0;
    while (i < end && is_space(b[i])) i++;
    int negative = i < end && b[i] == '-';
    if (negative) i++;
    ssize_t first = i;
    int64_t value = 0;
    for (; i < end && b[i] >= '0' && b[i] <= '9'; i++) {
        if (i - first >= 15) return -1;
        value = value * 10 + (b[i] - '0');
    }
    ssize_t digits = i - first;
    while (i < end && is_space(b[i])) i++;
    if (digits == 0 || i != end) return -1;
    *out = negative ? -(double)value : (double)value;
    return 0;
}

/* One read's value; -1 when JavaScript must do this sample (an error or unusual content). */
static int read_one(const struct jg_read *r, double *out) {
    switch (r->kind) {
    case READ_CLOCK: {
        struct timespec now;
        if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return -1;
        int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        /* TimeBackend: Number(hrtime.bigint() - origin) / 1e9, the same operations in doubles. */
        *out = (double)(ns - r->origin_ns) / 1e9;
        return 0;
    }
    case READ_DECIMAL_FILE: {
        unsigned char buffer[FILE_BYTES];
        ssize_t n;
        do n = pread(r->fd, buffer, sizeof buffer, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 || n == (ssize_t)sizeof buffer) return -1;
        double value;
        if (parse_decimal(buffer, n, &value) != 0) return -1;
        *out = value * r->scale;
        return 0;
    }
    case READ_CONSTANT:
        *out = r->scale;
        return 0;
    default:
        return -1;
    }
}

/*
 * A signal's value from its reads, none of them NaN (a read that has no value goes to
 * JavaScript), in the order and with the operations of aggregate() and RunningStats.
 */
static int read_signal(const struct jg_signal *s, const struct jg_read *reads, double *out) {
    /* PlatformIO.sample() takes a single read as it is, without aggregating it. */
    if (s->count == 1) return read_one(&reads[s->first], out);
    double sum = 0, min = 0, max = 0, first = 0;
    for (int32_t k = 0; k < s->count; k++) {
        double v;
        if (read_one(&reads[s->first + k], &v) != 0) return -1;
        if (k == 0) {
            first = min = max = v;
        } else {
            if (v < min) min = v;
            if (v > max) max = v;
        }
        sum += v;
        if (s->aggregation == AGG_SELECT_FIRST) break;
    }
    switch (s->aggregation) {
    case AGG_SUM: *out = sum; return 0;
    case AGG_AVERAGE: *out = sum / s->count; return 0;
    case AGG_MIN: *out = min; return 0;
    case AGG_MAX: *out = max; return 0;
    case AGG_SELECT_FIRST: *out = first; return 0;
    case AGG_EXPECT_SAME: *out = min == max ? first : __builtin_nan(""); return 0;
    default: return -1;
    }
}

static int read_message(int fd) {
    unsigned char byte;
    for (;;) {
        ssize_t n = read(fd, &byte, 1);
        if (n == 1) return byte;
        if (n == 0) return JG_END_OF_STREAM;
        if (errno != EINTR) return JG_READ_ERROR - errno;
    }
}

static int write_message(int fd, unsigned char byte) {
    for (;;) {
        ssize_t n = write(fd, &byte, 1);
        if (n == 1) return 0;
        if (n < 0 && errno != EINTR) return JG_WRITE_ERROR - errno;
    }
}

/* Longer than any /proc/<pid>/stat line (52 fields of at most 20 digits and a short name). */
#define STAT_BYTES 2048

/*
 * The CPU the process of the open /proc/<pid>/stat `fd` last ran on (field 39), or -1 when the
 * file cannot be read (the process is gone) or is not such a line.
 */
static int stat_cpu(int fd) {
    char text[STAT_BYTES];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = 0;
    /* The name (field 2) may hold spaces and ')': fields 3.. follow its last ')' and a space. */
    const char *p = NULL;
    for (ssize_t i = n - 1; i >= 0; i--)
        if (text[i] == ')') {
            p = text + i + 2;
            break;
        }
    if (!p || p > text + n) return -1;
    for (int field = 3; field < 39; field++) {
        p = strchr(p, ' ');
        if (!p) return -1;
        p++;
    }
    int cpu = 0;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        cpu = cpu * 10 + (*p - '0');
        if (cpu > 1 << 20) return -1;
    }
    return cpu;
}

/*
 * Plans of up to this many reads, signals and slots are copied onto the stack first: a sample
 * then touches the stack, the shared buffer and code, not the caller's arrays in Node's heap
 * (pages that other work in the process may have moved out of the caches and TLB).
 */
#define LOCAL_ENTRIES 64

/*
 * Answers `r` messages on in_fd with `c` on out_fd, each after storing every slot's value at
 * buffer + 64 (the shared signal buffer's doubles, after its header). Returns the first other
 * message byte, JG_END_OF_STREAM, JG_READ_FOR_JS (an `r` was taken and not answered: nothing of
 * it is stored), JG_BAD_PLAN (an index out of its arrays; nothing read), or JG_READ_ERROR /
 * JG_WRITE_ERROR - errno. Every `look_every` answers (0: never) it reads the CPU of the client's
 * main thread from `client_stat` (an open /proc/<pid>/stat) and returns JG_AWAY_FROM_CLIENT
 * when that is not the CPU it runs on: the server moves next to the client and calls again
 * (src/batch/placement.ts). *served counts the samples answered here.
 */
int jg_serve_reads(int in_fd, int out_fd, unsigned char *buffer, int32_t slot_count,
                   const int32_t *slot_signal, const struct jg_signal *signals, int32_t signal_count,
                   const struct jg_read *reads, int32_t read_count, double *sampled, uint64_t *served,
                   int client_stat, uint32_t look_every) {
    /* The plan comes from the server's own code; checked once so that no index leaves it. */
    for (int32_t i = 0; i < slot_count; i++)
        if (slot_signal[i] < 0 || slot_signal[i] >= signal_count) return JG_BAD_PLAN;
    for (int32_t i = 0; i < signal_count; i++)
        if (signals[i].count < 1 || signals[i].first < 0 || signals[i].first > read_count - signals[i].count)
            return JG_BAD_PLAN;
    struct jg_read local_reads[LOCAL_ENTRIES];
    struct jg_signal local_signals[LOCAL_ENTRIES];
    int32_t local_slots[LOCAL_ENTRIES];
    double local_sampled[LOCAL_ENTRIES];
    if (read_count <= LOCAL_ENTRIES && signal_count <= LOCAL_ENTRIES && slot_count <= LOCAL_ENTRIES) {
        memcpy(local_reads, reads, sizeof *reads * (size_t)read_count);
        memcpy(local_signals, signals, sizeof *signals * (size_t)signal_count);
        memcpy(local_slots, slot_signal, sizeof *slot_signal * (size_t)slot_count);
        reads = local_reads;
        signals = local_signals;
        slot_signal = local_slots;
        sampled = local_sampled;
    }
    double *values = (double *)(buffer + 64);
    uint64_t answered = 0;
    uint32_t until_look = look_every;
    int result;
    for (;;) {
        result = read_message(in_fd);
        if (result != MESSAGE_READ) break;
        int32_t i = 0;
        for (; i < signal_count; i++) {
            if (read_signal(&signals[i], reads, &sampled[i]) != 0) break;
        }
        if (i < signal_count) {
            result = JG_READ_FOR_JS;
            break;
        }
        for (i = 0; i < slot_count; i++) values[i] = sampled[slot_signal[i]];
        result = write_message(out_fd, MESSAGE_CONTINUE);
        if (result != 0) break;
        answered++;
        if (client_stat >= 0 && until_look > 0 && --until_look == 0) {
            until_look = look_every;
            int cpu = stat_cpu(client_stat);
            if (cpu < 0) {
                client_stat = -1; /* the client is gone: its end of the FIFO comes next */
            } else if (cpu != sched_getcpu()) {
                result = JG_AWAY_FROM_CLIENT;
                break;
            }
        }
    }
    *served += answered;
    return result;
}
