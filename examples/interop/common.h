/* Helpers shared by the C programs of the interop test (holder.c, landlord.c). */
#ifndef INTEROP_COMMON_H
#define INTEROP_COMMON_H

#include <stdio.h>

#include "leasehold.h"

/* Reports a failed libleasehold call on stderr; returns 1 (an exit status). */
static inline int fail(const char *what) {
    fprintf(stderr, "interop (c): %s: %s\n", what, leasehold_last_error_message());
    return 1;
}

static inline int64_t now_ms(void) {
    int64_t t = 0;
    leasehold_clock_now_ms(&t);
    return t;
}

/* Prints `key HEX` on one line. */
static inline void print_hex(const char *key, const uint8_t *data, size_t len) {
    printf("%s ", key);
    for (size_t i = 0; i < len; i++) printf("%02x", data[i]);
    printf("\n");
}

/* Prints the lease's JSON and binary forms written at `now` under the two keys. */
static inline int print_forms(const leasehold_lease *lease, int64_t now, const char *json_key,
                              const char *hex_key) {
    char *json = NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (leasehold_lease_to_json(lease, now, &json) != LEASEHOLD_STATUS_OK) return fail("to_json");
    if (leasehold_lease_to_bytes(lease, now, &bytes, &len) != LEASEHOLD_STATUS_OK) {
        leasehold_string_free(json);
        return fail("to_bytes");
    }
    printf("%s %s\n", json_key, json);
    print_hex(hex_key, bytes, len);
    leasehold_string_free(json);
    leasehold_bytes_free(bytes, len);
    return 0;
}

#endif
