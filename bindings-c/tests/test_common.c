/* Status names, the last error message, cookies, limits, version, clock, buffers. */
#include "check.h"

void test_common(void) {
    CHECK(strcmp(leasehold_status_name(LEASEHOLD_STATUS_OK), "OK") == 0);
    CHECK(strcmp(leasehold_status_name(LEASEHOLD_STATUS_UNKNOWN_LEASE), "UNKNOWN_LEASE") == 0);
    CHECK(strcmp(leasehold_status_name(LEASEHOLD_STATUS_PANIC), "PANIC") == 0);
    CHECK(strcmp(leasehold_status_name(12345), "UNKNOWN_STATUS") == 0);
    CHECK(strcmp(leasehold_status_name(-1), "UNKNOWN_STATUS") == 0);
    /* The status numbers are the core's stable error codes. */
    CHECK(LEASEHOLD_STATUS_UNKNOWN_LEASE == 1 && LEASEHOLD_STATUS_LEASE_DENIED == 2);
    CHECK(LEASEHOLD_STATUS_LEASE_MAP == 3 && LEASEHOLD_STATUS_INVALID_ARGUMENT == 4);
    CHECK(LEASEHOLD_STATUS_DECODE == 5 && LEASEHOLD_STATUS_INDEFINITE == 6);
    CHECK(LEASEHOLD_FOREVER == INT64_MAX);
    CHECK(LEASEHOLD_ANY == -1);
    CHECK(strcmp(leasehold_version(), "0.1.0") == 0);

    leasehold_cookie c;
    const char *hex = "0123456789abcdef0011223344556677";
    OK(leasehold_cookie_from_hex(hex, strlen(hex), &c));
    CHECK(c.bytes[0] == 0x01 && c.bytes[15] == 0x77);
    char buf[LEASEHOLD_COOKIE_HEX_SIZE];
    OK(leasehold_cookie_to_hex(c, buf, sizeof buf));
    CHECK(strcmp(buf, hex) == 0);
    char small[10];
    FAILS(LEASEHOLD_STATUS_BUFFER_TOO_SMALL, leasehold_cookie_to_hex(c, small, sizeof small));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_cookie_from_hex("xyz", 3, &c));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_cookie_from_hex(hex, 31, &c));
    /* Upper-case hex reads too. */
    OK(leasehold_cookie_from_hex("0123456789ABCDEF0011223344556677", 32, &c));
    CHECK(c.bytes[7] == 0xef);

    leasehold_limits l;
    OK(leasehold_limits_default(&l));
    CHECK(l.max_message_bytes == 1u << 20 && l.max_batch == 10000 && l.max_resource_bytes == 65536);

    int64_t now = 0;
    OK(leasehold_clock_now_ms(&now));
    CHECK(now > 1600000000000LL);

    /* A failing call leaves its message; a later success leaves it as it was. */
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_clock_now_ms(NULL));
    CHECK(strstr(leasehold_last_error_message(), "NULL") != NULL);
    OK(leasehold_clock_now_ms(&now));
    CHECK(strstr(leasehold_last_error_message(), "NULL") != NULL);

    /* Freeing NULL is harmless. */
    leasehold_bytes_free(NULL, 0);
    leasehold_string_free(NULL);
    CHECK(1);
}
