/* Hostile input: NULLs, garbage bytes, mutated messages, oversized batches, invalid UTF-8,
 * out-of-range values. Every one must give an error code, never a crash or a leak. */
#include <stdint.h>

#include "check.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {3};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint8_t next_byte(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint8_t)(rng_state >> 24);
}

/* Decoding `data` as a request and as a reply, in both encodings: OK or DECODE only. */
static int decode_is_safe(const uint8_t *data, size_t len) {
    int ok = 1;
    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        leasehold_request *req = NULL;
        leasehold_status st = leasehold_request_decode(data, len, enc, NULL, &req);
        if (st == LEASEHOLD_STATUS_OK) {
            leasehold_request_free(req);
        } else if (st != LEASEHOLD_STATUS_DECODE) {
            ok = 0;
        }
        leasehold_reply *rep = NULL;
        st = leasehold_reply_decode(data, len, enc, NULL, &rep);
        if (st == LEASEHOLD_STATUS_OK) {
            leasehold_reply_free(rep);
        } else if (st != LEASEHOLD_STATUS_DECODE) {
            ok = 0;
        }
    }
    leasehold_lease l;
    leasehold_status st = leasehold_lease_from_bytes(data, len, 0, &l);
    if (st != LEASEHOLD_STATUS_OK && st != LEASEHOLD_STATUS_DECODE) ok = 0;
    return ok;
}

void test_hostile(void) {
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *p = NULL;
    leasehold_landlord *ll = NULL;
    leasehold_limits limits;
    OK(leasehold_limits_default(&limits));
    limits.max_batch = 4;
    OK(leasehold_landlord_config_new(5, SEED, sizeof SEED, &cfg));
    OK(leasehold_landlord_config_set_limits(cfg, &limits));
    OK(leasehold_policy_new_fixed(1000, &p));
    OK(leasehold_landlord_new(cfg, p, &ll));

    /* NULL handles and NULL outputs. */
    leasehold_grant g;
    int64_t d = 0;
    size_t n = 0;
    bool b = false;
    leasehold_cookie ck;
    memset(&ck, 0, sizeof ck);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_grant(NULL, NULL, 0, 10, 0, &g));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_grant(ll, NULL, 0, 10, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_grant(ll, NULL, 5, 10, 0, &g));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_renew(NULL, ck, 10, 0, &d));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_renew(ll, ck, 10, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_cancel(NULL, ck, 0, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_len(NULL, &n));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_len(ll, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_id(NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_poll_timeout(ll, &b, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_handle_timeout(NULL, 0));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_poll_expired(ll, NULL, &b));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_handle_bytes(ll, NULL, 3, 1, 0, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_new(NULL, p, &ll));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_new(cfg, NULL, &ll));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_config_new(1, NULL, 32, &cfg));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_config_set_grace(NULL, 5));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_policy_new_fixed(10, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_policy_to_json(NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_lease_to_json(NULL, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_lease_from_json(NULL, 10, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_lease_from_bytes(NULL, 36, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_request_decode(NULL, 5, 1, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_reply_get_op(NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_request_encode(NULL, 1, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_cookie_to_hex(ck, NULL, 33));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_cookie_from_hex(NULL, 32, &ck));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_limits_default(NULL));
    leasehold_landlord_free(NULL);
    leasehold_landlord_config_free(NULL);
    leasehold_policy_free(NULL);
    leasehold_request_free(NULL);
    leasehold_reply_free(NULL);

    /* Out-of-range values. */
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_config_new(1, SEED, 31, &cfg));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_grant(ll, NULL, 0, -7, 0, &g));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_grant(ll, NULL, 0, INT64_MIN, 0, &g));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_bounded(-1, -1, &p));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_resource_aware(10, 5, 50, &p));
    uint8_t *out = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_handle_bytes(ll, SEED, 3, 0, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_handle_bytes(ll, SEED, 3, -5, 0, &out, &n));
    leasehold_request *req = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_decode(SEED, 3, 77, NULL, &req));
    /* Extreme times saturate instead of wrapping, on a landlord of their own (its time is the
     * latest `now` it has seen, and never runs backwards: a later INT64_MIN reads as the end). */
    leasehold_landlord *edge = NULL;
    OK(leasehold_landlord_new(cfg, p, &edge));
    OK(leasehold_landlord_grant(edge, NULL, 0, 1000, INT64_MIN, &g));
    CHECK(g.expiration == INT64_MIN + 1000);
    OK(leasehold_landlord_grant(edge, NULL, 0, 1000, INT64_MAX - 10, &g));
    CHECK(g.expiration == INT64_MAX || g.expiration >= INT64_MAX - 10);
    OK(leasehold_landlord_grant(edge, NULL, 0, 1000, INT64_MIN, &g));
    CHECK(g.expiration >= INT64_MAX - 10);
    leasehold_landlord_free(edge);

    /* Oversized batches: rejected before touching any lease, even with a huge count. */
    leasehold_renewal items[5];
    leasehold_batch_result results[5];
    memset(items, 0, sizeof items);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_renew_all(ll, items, 5, 0, results));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_renew_all(ll, items, SIZE_MAX, 0, results));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_landlord_cancel_all(ll, (const leasehold_cookie *)items, SIZE_MAX / 2, 0, results));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_renew_all(ll, items, 2, 0, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_renew_all(ll, NULL, 2, 0, results));
    /* ... and on the wire: a binary renew_all announcing 2^32-1 entries, and a JSON one over the limit. */
    uint8_t huge[3 + 8 + 1 + 4] = {0x4C, 1, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 4, 0xff, 0xff, 0xff, 0xff};
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_request_decode(huge, sizeof huge, LEASEHOLD_ENCODING_BINARY, NULL, &req));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_request_decode(huge, sizeof huge, LEASEHOLD_ENCODING_BINARY, &limits, &req));
    OK(leasehold_landlord_handle_bytes(ll, huge, sizeof huge, LEASEHOLD_ENCODING_BINARY, 0, &out, &n));
    leasehold_reply *rep = NULL;
    OK(leasehold_reply_decode(out, n, LEASEHOLD_ENCODING_BINARY, NULL, &rep));
    leasehold_bytes_free(out, n);
    leasehold_reply_op op;
    OK(leasehold_reply_get_op(rep, &op));
    CHECK(op == LEASEHOLD_REPLY_ERROR);
    int32_t code = 0;
    OK(leasehold_reply_error(rep, &code, NULL));
    CHECK(code == LEASEHOLD_STATUS_DECODE);
    leasehold_reply_free(rep);
    const char *five = "{\"v\":1,\"id\":1,\"body\":{\"op\":\"cancel_all\",\"cookies\":["
                       "\"00000000000000000000000000000001\",\"00000000000000000000000000000002\","
                       "\"00000000000000000000000000000003\",\"00000000000000000000000000000004\","
                       "\"00000000000000000000000000000005\"]}}";
    OK(leasehold_request_decode((const uint8_t *)five, strlen(five), LEASEHOLD_ENCODING_JSON, NULL, &req));
    leasehold_request_free(req);
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_request_decode((const uint8_t *)five, strlen(five), LEASEHOLD_ENCODING_JSON, &limits, &req));
    /* A message over the size limit. */
    limits.max_message_bytes = 10;
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_request_decode((const uint8_t *)five, strlen(five), LEASEHOLD_ENCODING_JSON, &limits, &req));

    /* Invalid UTF-8 where text is expected. */
    leasehold_lease l;
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_lease_from_json("{\"v\":\xc3\x28}", 9, 0, &l));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_cookie_from_hex("\xed\xa0\x80", 3, &ck));
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_request_decode((const uint8_t *)"{\"v\":\xff}", 7, LEASEHOLD_ENCODING_JSON, NULL, &req));
    /* Oversized lease JSON. */
    static char big[4096];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    big[sizeof big - 1] = '}';
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_lease_from_json(big, sizeof big, 0, &l));

    /* Random garbage, and every single-byte mutation of valid messages: OK or DECODE only. */
    int safe = 1;
    uint8_t buf[256];
    for (int round = 0; round < 300; round++) {
        size_t len = (size_t)(next_byte() % sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = next_byte();
        if (round % 3 == 0 && len >= 3) {
            buf[0] = 0x4C; /* a plausible header gets further into the decoder */
            buf[1] = 1;
            buf[2] = (uint8_t)(0x10 + (round & 1));
        }
        safe &= decode_is_safe(buf, len);
    }
    CHECK(safe);
    leasehold_renewal two[2];
    memset(two, 0x11, sizeof two);
    two[0].duration = 5;
    two[1].duration = LEASEHOLD_ANY;
    OK(leasehold_request_new_renew_all(99, two, 2, &req));
    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        uint8_t *msg = NULL;
        size_t msg_len = 0;
        OK(leasehold_request_encode(req, enc, &msg, &msg_len));
        safe = 1;
        for (size_t i = 0; i < msg_len; i++) {
            uint8_t keep = msg[i];
            msg[i] = (uint8_t)(keep ^ (1u << (i % 8)));
            safe &= decode_is_safe(msg, msg_len);
            msg[i] = 0xff;
            safe &= decode_is_safe(msg, msg_len);
            msg[i] = keep;
            safe &= decode_is_safe(msg, i); /* every truncation */
        }
        CHECK(safe);
        /* And the landlord answers each mutation with a reply, never a failure. */
        safe = 1;
        for (size_t i = 0; i < msg_len; i++) {
            uint8_t keep = msg[i];
            msg[i] ^= 0x5a;
            uint8_t *r = NULL;
            size_t r_len = 0;
            safe &= leasehold_landlord_handle_bytes(ll, msg, msg_len, enc, 0, &r, &r_len) == LEASEHOLD_STATUS_OK;
            leasehold_bytes_free(r, r_len);
            msg[i] = keep;
        }
        CHECK(safe);
        leasehold_bytes_free(msg, msg_len);
    }
    leasehold_request_free(req);

    /* Accessors on the wrong kind of message. */
    OK(leasehold_request_new_cancel(1, ck, &req));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_duration(req, &d));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_resource(req, &out, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_item(req, 0, &two[0]));
    OK(leasehold_request_count(req, &n));
    CHECK(n == 0);
    leasehold_request_free(req);

    leasehold_landlord_free(ll);
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(p);
}
