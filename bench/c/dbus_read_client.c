/*
 * A D-Bus client with no runtime of its own for bench/geopm-side-by-side.ts: systemd's sd-bus,
 * blocking calls, no garbage collector and no event loop, so the tail of what it times is the
 * bus's and the daemon's, not the client's. Opens a GEOPM session, makes WARMUP untimed calls,
 * then ITER rounds of PlatformReadSignal("TIME", 0, 0) followed by a Ping that the bus daemon
 * answers itself, and prints one line per call: "r <us>" or "p <us>". Closes the session.
 * With CLIENTS above 1, that many processes (a session each) wait until all have warmed up, then
 * each makes ITER back-to-back ReadSignal calls at once (no Pings) and prints its "r" lines.
 * Usage: dbus_read_client BUS_ADDRESS ITER WARMUP [CLIENTS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define SERVICE "io.github.geopm"
#define PATH "/io/github/geopm"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Calls SERVICE's `member` with no arguments; exits with the bus's error on failure. */
static void call_plain(sd_bus *bus, const char *member) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    int r = sd_bus_call_method(bus, SERVICE, PATH, SERVICE, member, &error, &reply, "");
    if (r < 0) {
        fprintf(stderr, "%s: %s\n", member, error.message ? error.message : "failed");
        exit(1);
    }
    sd_bus_message_unref(reply);
}

/* One ReadSignal, its value checked to be a double; returns its wall time in us. */
static double read_signal(sd_bus *bus) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    double value;
    double start = now_us();
    int r = sd_bus_call_method(bus, SERVICE, PATH, SERVICE, "PlatformReadSignal", &error, &reply, "sii",
                               "TIME", 0, 0);
    double took = now_us() - start;
    if (r < 0 || sd_bus_message_read(reply, "d", &value) < 0) {
        fprintf(stderr, "PlatformReadSignal: %s\n", error.message ? error.message : "bad reply");
        exit(1);
    }
    sd_bus_message_unref(reply);
    return took;
}

static double bus_ping(sd_bus *bus) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    double start = now_us();
    int r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer",
                               "Ping", &error, &reply, "");
    double took = now_us() - start;
    if (r < 0) {
        fprintf(stderr, "Ping: %s\n", error.message ? error.message : "failed");
        exit(1);
    }
    sd_bus_message_unref(reply);
    return took;
}

/* A connection to BUS_ADDRESS with a GEOPM session open, warmed up by `warmup` reads. */
static sd_bus *open_client(const char *address, int warmup) {
    sd_bus *bus = NULL;
    if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
        sd_bus_start(bus) < 0) {
        fprintf(stderr, "cannot connect to %s\n", address);
        exit(1);
    }
    call_plain(bus, "PlatformOpenSession");
    for (int i = 0; i < warmup; i++) read_signal(bus);
    return bus;
}

static void close_client(sd_bus *bus) {
    call_plain(bus, "PlatformCloseSession");
    sd_bus_flush_close_unref(bus);
}

/* CLIENTS processes: each reports ready on `ready`, waits for `go` to close, then reads. */
static int many(const char *address, int iter, int warmup, int clients) {
    int ready[2], go[2];
    if (pipe(ready) < 0 || pipe(go) < 0) return 1;
    for (int c = 0; c < clients; c++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            sd_bus *bus = open_client(address, warmup);
            char byte = 1;
            if (write(ready[1], &byte, 1) != 1 || read(go[0], &byte, 1) != 0) _exit(1);
            /* The lines go out in one write at exit (under PIPE_BUF for 40 calls: not interleaved). */
            for (int i = 0; i < iter; i++) printf("r %.1f\n", read_signal(bus));
            close_client(bus);
            exit(0);
        }
    }
    close(ready[1]);
    close(go[0]);
    char byte;
    for (int c = 0; c < clients; c++)
        if (read(ready[0], &byte, 1) != 1) return 1; /* a client died before it was ready */
    close(go[1]);
    int failed = 0, status;
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: dbus_read_client BUS_ADDRESS ITER WARMUP [CLIENTS]\n");
        return 2;
    }
    int iter = atoi(argv[2]);
    int warmup = atoi(argv[3]);
    int clients = argc == 5 ? atoi(argv[4]) : 1;
    if (clients > 1) return many(argv[1], iter, warmup, clients);
    sd_bus *bus = open_client(argv[1], warmup);
    for (int i = 0; i < iter; i++) {
        printf("r %.1f\n", read_signal(bus));
        printf("p %.1f\n", bus_ping(bus));
    }
    close_client(bus);
    return 0;
}
