/* The lease value and its serial forms. */
#include "check.h"

static leasehold_cookie cookie_of(const char *hex) {
    leasehold_cookie c;
    memset(&c, 0, sizeof c);
    leasehold_cookie_from_hex(hex, strlen(hex), &c);
    return c;
}

void test_lease(void) {
    leasehold_cookie c = cookie_of("000102030405060708090a0b0c0d0e0f");
    leasehold_lease l;
    OK(leasehold_lease_from_grant(0x1122334455667788ULL, c, 1000, 5000, &l));
    CHECK(l.landlord == 0x1122334455667788ULL);
    CHECK(l.expiration == 6000);
    CHECK(l.serial_format == LEASEHOLD_SERIAL_DURATION);
    CHECK(memcmp(l.cookie.bytes, c.bytes, 16) == 0);

    /* FOREVER stays FOREVER whatever the send time (no wrap-around). */
    leasehold_lease forever;
    OK(leasehold_lease_from_grant(1, c, 123456789, LEASEHOLD_FOREVER, &forever));
    CHECK(forever.expiration == LEASEHOLD_FOREVER);
    int64_t left = 0;
    OK(leasehold_lease_remaining(&forever, 5, &left));
    CHECK(left == LEASEHOLD_FOREVER);

    OK(leasehold_lease_remaining(&l, 2000, &left));
    CHECK(left == 4000);
    OK(leasehold_lease_remaining(&l, 7000, &left));
    CHECK(left == -1000);
    bool expired = true;
    OK(leasehold_lease_is_expired(&l, 5999, &expired));
    CHECK(!expired);
    OK(leasehold_lease_is_expired(&l, 6000, &expired));
    CHECK(expired);

    leasehold_lease other = l;
    other.landlord = 7;
    bool batch = true;
    OK(leasehold_lease_can_batch(&l, &other, &batch));
    CHECK(!batch);
    OK(leasehold_lease_can_batch(&l, &l, &batch));
    CHECK(batch);

    /* JSON, DURATION: the time left at the writer's now, read back against the reader's now. */
    char *json = NULL;
    OK(leasehold_lease_to_json(&l, 2000, &json));
    CHECK(json != NULL && strcmp(json,
        "{\"v\":1,\"format\":\"duration\",\"landlord\":\"1122334455667788\","
        "\"cookie\":\"000102030405060708090a0b0c0d0e0f\",\"duration\":\"4000\"}") == 0);
    leasehold_lease back;
    OK(leasehold_lease_from_json(json, strlen(json), 100000, &back));
    CHECK(back.expiration == 104000 && back.landlord == l.landlord);
    leasehold_string_free(json);

    /* JSON, ABSOLUTE: the expiration itself. */
    leasehold_lease abs = l;
    abs.serial_format = LEASEHOLD_SERIAL_ABSOLUTE;
    OK(leasehold_lease_to_json(&abs, 2000, &json));
    CHECK(strstr(json, "\"format\":\"absolute\"") != NULL && strstr(json, "\"expiration\":\"6000\"") != NULL);
    OK(leasehold_lease_from_json(json, strlen(json), 999999, &back));
    CHECK(back.expiration == 6000 && back.serial_format == LEASEHOLD_SERIAL_ABSOLUTE);
    leasehold_string_free(json);

    /* Binary: 36 bytes, magic 'L', version 1, kind 1, format, landlord, cookie, time (big-endian). */
    uint8_t *bytes = NULL;
    size_t n = 0;
    OK(leasehold_lease_to_bytes(&l, 2000, &bytes, &n));
    CHECK(n == 36);
    CHECK(bytes[0] == 0x4C && bytes[1] == 1 && bytes[2] == 1 && bytes[3] == 1);
    CHECK(bytes[4] == 0x11 && bytes[11] == 0x88 && bytes[12] == 0x00 && bytes[27] == 0x0f);
    CHECK(bytes[34] == 0x0f && bytes[35] == 0xa0); /* 4000 */
    OK(leasehold_lease_from_bytes(bytes, n, 10, &back));
    CHECK(back.expiration == 4010);
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_lease_from_bytes(bytes, n - 1, 10, &back));
    bytes[0] = 0;
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_lease_from_bytes(bytes, n, 10, &back));
    leasehold_bytes_free(bytes, n);

    /* An out-of-range serial format in a lease value is an invalid argument. */
    leasehold_lease bad = l;
    bad.serial_format = 3;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_lease_to_json(&bad, 0, &json));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_lease_to_bytes(&bad, 0, &bytes, &n));
    bad.serial_format = -1;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_lease_remaining(&bad, 0, &left));

    /* Outputs are written only on success. */
    back.expiration = 42;
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_lease_from_json("{}", 2, 0, &back));
    CHECK(back.expiration == 42);
}
