/* The wire protocol: building, encoding, decoding requests and replies, and a landlord answering. */
#include "check.h"
#include "util.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {9};

static leasehold_request *roundtrip_request(leasehold_request *r, int32_t encoding) {
    uint8_t *data = NULL;
    size_t len = 0;
    leasehold_request *back = NULL;
    OK(leasehold_request_encode(r, encoding, &data, &len));
    OK(leasehold_request_decode(data, len, encoding, NULL, &back));
    leasehold_bytes_free(data, len);
    leasehold_request_free(r);
    return back;
}

static leasehold_reply *roundtrip_reply(leasehold_reply *r, int32_t encoding) {
    uint8_t *data = NULL;
    size_t len = 0;
    leasehold_reply *back = NULL;
    OK(leasehold_reply_encode(r, encoding, &data, &len));
    OK(leasehold_reply_decode(data, len, encoding, NULL, &back));
    leasehold_bytes_free(data, len);
    leasehold_reply_free(r);
    return back;
}

void test_wire(void) {
    leasehold_landlord *ll = bounded_landlord(0x77, SEED, 60000, 30000);

    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        /* Grant */
        leasehold_request *req = NULL;
        OK(leasehold_request_new_grant(1, (const uint8_t *)"disk", 4, 10000, &req));
        req = roundtrip_request(req, enc);
        leasehold_request_op op;
        OK(leasehold_request_get_op(req, &op));
        CHECK(op == LEASEHOLD_REQUEST_GRANT);
        uint64_t id = 0;
        OK(leasehold_request_id(req, &id));
        CHECK(id == 1);
        int64_t d = 0;
        OK(leasehold_request_duration(req, &d));
        CHECK(d == 10000);
        uint8_t *res = NULL;
        size_t res_len = 0;
        OK(leasehold_request_resource(req, &res, &res_len));
        CHECK(res_len == 4 && memcmp(res, "disk", 4) == 0);
        leasehold_bytes_free(res, res_len);
        leasehold_cookie ck;
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_cookie(req, &ck));

        leasehold_reply *rep = NULL;
        OK(leasehold_landlord_handle_request(ll, req, 0, &rep));
        leasehold_request_free(req);
        rep = roundtrip_reply(rep, enc);
        leasehold_reply_op rop;
        OK(leasehold_reply_get_op(rep, &rop));
        CHECK(rop == LEASEHOLD_REPLY_GRANTED);
        OK(leasehold_reply_id(rep, &id));
        CHECK(id == 1);
        uint64_t landlord = 0;
        OK(leasehold_reply_landlord(rep, &landlord));
        CHECK(landlord == 0x77);
        leasehold_cookie granted_cookie;
        OK(leasehold_reply_cookie(rep, &granted_cookie));
        OK(leasehold_reply_duration(rep, &d));
        CHECK(d == 10000);
        leasehold_reply_free(rep);

        /* Renew */
        OK(leasehold_request_new_renew(2, granted_cookie, 20000, &req));
        req = roundtrip_request(req, enc);
        OK(leasehold_request_cookie(req, &ck));
        CHECK(memcmp(ck.bytes, granted_cookie.bytes, 16) == 0);
        OK(leasehold_landlord_handle_request(ll, req, 1000, &rep));
        leasehold_request_free(req);
        OK(leasehold_reply_get_op(rep, &rop));
        CHECK(rop == LEASEHOLD_REPLY_RENEWED);
        OK(leasehold_reply_duration(rep, &d));
        CHECK(d == 20000);
        leasehold_reply_free(rep);

        /* Renew all: one good, one unknown. */
        leasehold_renewal items[2];
        items[0].cookie = granted_cookie;
        items[0].duration = 30000;
        memset(&items[1].cookie, 1, sizeof items[1].cookie);
        items[1].duration = 5;
        OK(leasehold_request_new_renew_all(3, items, 2, &req));
        req = roundtrip_request(req, enc);
        size_t count = 0;
        OK(leasehold_request_count(req, &count));
        CHECK(count == 2);
        leasehold_renewal item;
        OK(leasehold_request_item(req, 1, &item));
        CHECK(item.duration == 5 && item.cookie.bytes[3] == 1);
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_request_item(req, 2, &item));
        OK(leasehold_landlord_handle_request(ll, req, 2000, &rep));
        leasehold_request_free(req);
        rep = roundtrip_reply(rep, enc);
        OK(leasehold_reply_get_op(rep, &rop));
        CHECK(rop == LEASEHOLD_REPLY_RENEWED_ALL);
        OK(leasehold_reply_count(rep, &count));
        CHECK(count == 2);
        leasehold_batch_result br;
        char *msg = NULL;
        OK(leasehold_reply_result(rep, 0, &br, &msg));
        CHECK(br.status == LEASEHOLD_STATUS_OK && br.duration == 30000 && msg[0] == '\0');
        leasehold_string_free(msg);
        OK(leasehold_reply_result(rep, 1, &br, NULL));
        CHECK(br.status == LEASEHOLD_STATUS_UNKNOWN_LEASE);
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_reply_result(rep, 2, &br, NULL));
        leasehold_reply_free(rep);

        /* Cancel all, then cancel: the second fails as a whole with an error reply. */
        leasehold_cookie cookies[1];
        cookies[0] = granted_cookie;
        OK(leasehold_request_new_cancel_all(4, cookies, 1, &req));
        req = roundtrip_request(req, enc);
        OK(leasehold_request_item(req, 0, &item));
        CHECK(item.duration == 0);
        OK(leasehold_landlord_handle_request(ll, req, 3000, &rep));
        leasehold_request_free(req);
        rep = roundtrip_reply(rep, enc);
        OK(leasehold_reply_get_op(rep, &rop));
        CHECK(rop == LEASEHOLD_REPLY_CANCELLED_ALL);
        OK(leasehold_reply_result(rep, 0, &br, NULL));
        CHECK(br.status == LEASEHOLD_STATUS_OK);
        leasehold_reply_free(rep);

        OK(leasehold_request_new_cancel(5, granted_cookie, &req));
        req = roundtrip_request(req, enc);
        OK(leasehold_landlord_handle_request(ll, req, 3000, &rep));
        leasehold_request_free(req);
        rep = roundtrip_reply(rep, enc);
        OK(leasehold_reply_get_op(rep, &rop));
        CHECK(rop == LEASEHOLD_REPLY_ERROR);
        int32_t code = 0;
        OK(leasehold_reply_error(rep, &code, &msg));
        CHECK(code == LEASEHOLD_STATUS_UNKNOWN_LEASE);
        leasehold_string_free(msg);
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_reply_duration(rep, &d));
        leasehold_reply_free(rep);
    }

    /* The exact JSON text of a request. */
    leasehold_request *req = NULL;
    leasehold_cookie ck;
    memset(&ck, 0xab, sizeof ck);
    OK(leasehold_request_new_renew(42, ck, LEASEHOLD_ANY, &req));
    uint8_t *data = NULL;
    size_t len = 0;
    OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_JSON, &data, &len));
    const char *want = "{\"v\":1,\"id\":\"42\",\"body\":{\"op\":\"renew\",\"cookie\":"
                       "\"abababababababababababababababab\",\"duration\":\"-1\"}}";
    CHECK(len == strlen(want) && memcmp(data, want, len) == 0);
    leasehold_bytes_free(data, len);
    OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_BINARY, &data, &len));
    CHECK(len == 3 + 8 + 1 + 16 + 8 && data[0] == 0x4C && data[2] == 0x10 && data[11] == 2);
    leasehold_bytes_free(data, len);
    leasehold_request_free(req);

    leasehold_landlord_free(ll);
}
