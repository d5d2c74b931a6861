/*
 * The floor of a ReadSignal for bench/geopm-side-by-side.ts: a D-Bus service that does nothing
 * but answer. It owns io.github.geopm on the bus at BUS_ADDRESS and answers PlatformOpenSession
 * and PlatformCloseSession with an empty reply and PlatformReadSignal (sii) with one double (the
 * monotonic clock), with no checks, no sessions and no state: systemd's sd-bus, one thread,
 * blocking waits. A call to it crosses the bus twice and wakes this process once, as a call to
 * any daemon does, so its latency is what the machine and the bus cost before a daemon does any
 * work of its own. Prints "ready" once it owns the name.
 * Usage: dbus_floor_daemon BUS_ADDRESS
 */
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <time.h>

static int answer_empty(sd_bus_message *call, void *data, sd_bus_error *error) {
    (void)data;
    (void)error;
    return sd_bus_reply_method_return(call, "");
}

static int answer_time(sd_bus_message *call, void *data, sd_bus_error *error) {
    (void)data;
    (void)error;
    const char *name;
    int domain, index;
    int r = sd_bus_message_read(call, "sii", &name, &domain, &index);
    if (r < 0) return r;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return sd_bus_reply_method_return(call, "d", t.tv_sec + t.tv_nsec / 1e9);
}

static const sd_bus_vtable methods[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("PlatformOpenSession", "", "", answer_empty, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("PlatformCloseSession", "", "", answer_empty, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("PlatformReadSignal", "sii", "d", answer_time, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END,
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dbus_floor_daemon BUS_ADDRESS\n");
        return 2;
    }
    sd_bus *bus = NULL;
    if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, argv[1]) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
        sd_bus_start(bus) < 0 ||
        sd_bus_add_object_vtable(bus, NULL, "/io/github/geopm", "io.github.geopm", methods, NULL) < 0 ||
        sd_bus_request_name(bus, "io.github.geopm", 0) < 0) {
        fprintf(stderr, "dbus_floor_daemon: cannot serve io.github.geopm on %s\n", argv[1]);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int r = sd_bus_process(bus, NULL);
        if (r < 0) return 1;
        if (r > 0) continue;
        if (sd_bus_wait(bus, UINT64_MAX) < 0) return 1;
    }
}
