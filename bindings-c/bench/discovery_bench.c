/* Per-call cost of the discovery service through leasehold_machine_handle (JSON in, JSON out):
 * register; a registration's groups; an announcement, its events polled and reported
 * delivered, the registrar unreachable and its discarded events (10 registrations). Prints
 * "<call> <ns per call>" lines. Usage: discovery_bench [CALLS] (default 20000). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leasehold.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static leasehold_machine *service(void) {
    static const uint8_t seed[LEASEHOLD_SEED_SIZE] = {1};
    const char *o = "{\"id\": 7}";
    leasehold_machine *m = NULL;
    if (leasehold_machine_new("DiscoveryService", o, strlen(o), seed, sizeof seed, &m) != LEASEHOLD_STATUS_OK) exit(1);
    return m;
}

static int call(leasehold_machine *m, int64_t now, const char *in) {
    char *out = NULL;
    leasehold_status st = leasehold_machine_handle(m, in, strlen(in), now, &out);
    leasehold_string_free(out);
    return st == LEASEHOLD_STATUS_OK;
}

static const char *REGISTER =
    "{\"op\":\"register\",\"groups\":[\"lab\"],\"locators\":[],\"handback\":\"hb\",\"lease_duration\":600000000}";

/* Polls every event due and reports each delivered; the number of calls made. */
static int drain(leasehold_machine *m, int64_t now) {
    int calls = 0;
    for (;;) {
        bool found = false;
        char *e = NULL;
        leasehold_machine_poll_event(m, now, &found, &e);
        calls++;
        if (!found) return calls;
        /* The host reads the event's id and number out of its JSON. */
        const char *id = strstr(e, "\"event_id\":"), *seq = strstr(e, "\"sequence\":");
        char in[128];
        snprintf(in, sizeof in, "{\"op\":\"delivered\",\"event_id\":%lld,\"sequence\":%lld}",
                 id ? atoll(id + 11) : 0, seq ? atoll(seq + 11) : 0);
        leasehold_string_free(e);
        call(m, now, in);
        calls++;
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    leasehold_machine *m = service();
    double t0 = now_ns();
    for (int i = 0; i < n; i++) call(m, 0, REGISTER);
    double t1 = now_ns();
    char in[256];
    for (int i = 0; i < n; i++) {
        snprintf(in, sizeof in, "{\"op\":\"groups\",\"registration\":%d}", 1 + i % n);
        call(m, 1, in);
    }
    double t2 = now_ns();
    leasehold_machine_free(m);
    m = service();
    for (int i = 0; i < 10; i++) call(m, 0, REGISTER);
    int calls = 0;
    double t3 = now_ns();
    for (int i = 0; i < n / 10; i++) {
        snprintf(in, sizeof in,
                 "{\"op\":\"announcement\",\"announcement\":{\"registrar\":\"00000000000000000000000000000001\","
                 "\"groups\":[\"lab\"],\"locator\":\"10.0.0.1:4160\",\"sequence\":%d,\"ttl\":30000}}",
                 i + 1);
        call(m, 10 + i, in);
        calls += 1 + drain(m, 10 + i);
        call(m, 10 + i, "{\"op\":\"unreachable\",\"registrar\":\"00000000000000000000000000000001\"}");
        calls += 1 + drain(m, 10 + i);
    }
    double t4 = now_ns();
    printf("register %.0f\ngroups %.0f\nevents %.0f\n", (t1 - t0) / n, (t2 - t1) / n, (t4 - t3) / calls);
    leasehold_machine_free(m);
    return 0;
}
