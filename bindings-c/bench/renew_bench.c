/*
 * Per-call cost of leasehold_landlord_renew through libleasehold, the same workload as
 * bindings-c/benches/renew.rs (same landlord, policy, seed, lease count and call sequence).
 * Usage: renew_bench [LEASES] [CALLS] [RUNS]; prints "c_renew_ns <best ns per call>".
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "leasehold.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void must(leasehold_status st, const char *what) {
    if (st != LEASEHOLD_STATUS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, leasehold_status_name((int32_t)st),
                leasehold_last_error_message());
        exit(1);
    }
}

int main(int argc, char **argv) {
    size_t leases = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    size_t calls = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (leases == 0) leases = 1;
    if (calls == 0) calls = 1;
    if (runs < 1) runs = 1;

    uint8_t seed[LEASEHOLD_SEED_SIZE];
    for (size_t i = 0; i < sizeof seed; i++) seed[i] = 42;
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *policy = NULL;
    leasehold_landlord *ll = NULL;
    must(leasehold_landlord_config_new(1, seed, sizeof seed, &cfg), "config");
    must(leasehold_policy_new_bounded(60000, 30000, &policy), "policy");
    must(leasehold_landlord_new(cfg, policy, &ll), "landlord");
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(policy);

    leasehold_cookie *cookies = (leasehold_cookie *)malloc(leases * sizeof *cookies);
    if (cookies == NULL) return 1;
    for (size_t i = 0; i < leases; i++) {
        leasehold_grant g;
        must(leasehold_landlord_grant(ll, (const uint8_t *)"resource", 8, 30000, 0, &g), "grant");
        cookies[i] = g.cookie;
    }

    double best = 1e30;
    int64_t now = 1;
    for (int r = 0; r < runs; r++) {
        double start = now_ns();
        int64_t sum = 0;
        for (size_t i = 0; i < calls; i++) {
            if (i % leases == 0) now++;
            int64_t granted = 0;
            if (leasehold_landlord_renew(ll, cookies[i % leases], 30000, now, &granted) !=
                LEASEHOLD_STATUS_OK) {
                must(LEASEHOLD_STATUS_PANIC, "renew");
            }
            sum += granted;
        }
        double ns = (now_ns() - start) / (double)calls;
        if (sum == 42) printf("%lld\n", (long long)sum); /* keeps the loop observable */
        if (ns < best) best = ns;
    }
    printf("c_renew_ns %.1f\n", best);
    free(cookies);
    leasehold_landlord_free(ll);
    return 0;
}
