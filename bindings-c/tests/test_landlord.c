/* The landlord: grant, renew, cancel, batches, lookups, iteration, expiry, wire bytes. */
#include "check.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                                  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static leasehold_landlord *make(int64_t grace) {
    leasehold_policy *p = NULL;
    leasehold_landlord_config *cfg = NULL;
    leasehold_landlord *ll = NULL;
    OK(leasehold_policy_new_bounded(60000, 30000, &p));
    OK(leasehold_landlord_config_new(0xabcdef, SEED, sizeof SEED, &cfg));
    OK(leasehold_landlord_config_set_grace(cfg, grace));
    OK(leasehold_landlord_new(cfg, p, &ll));
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(p);
    return ll;
}

struct visit_state {
    int seen;
    int64_t total_len;
};

static int32_t visit(void *user_data, leasehold_cookie cookie, int64_t expiration,
                     const uint8_t *resource, size_t resource_len) {
    struct visit_state *s = (struct visit_state *)user_data;
    (void)cookie;
    (void)expiration;
    (void)resource;
    s->seen++;
    s->total_len += (int64_t)resource_len;
    return 0;
}

static int32_t stop_at_first(void *user_data, leasehold_cookie cookie, int64_t expiration,
                             const uint8_t *resource, size_t resource_len) {
    (void)cookie;
    (void)expiration;
    (void)resource;
    (void)resource_len;
    (*(int *)user_data)++;
    return 1;
}

/* Drives expiry the way a host's timer does, up to `until`: handle_timeout at every time
 * poll_timeout asks for (it may ask early, never late), then at `until`. */
static void advance(leasehold_landlord *ll, int64_t until) {
    for (int i = 0; i < 1000; i++) {
        bool has = false;
        int64_t at = 0;
        OK(leasehold_landlord_poll_timeout(ll, &has, &at));
        if (!has || at > until) break;
        OK(leasehold_landlord_handle_timeout(ll, at));
    }
    OK(leasehold_landlord_handle_timeout(ll, until));
}

void test_landlord(void) {
    leasehold_landlord *ll = make(0);
    uint64_t id = 0;
    OK(leasehold_landlord_id(ll, &id));
    CHECK(id == 0xabcdef);

    leasehold_grant a, b, c;
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"printer", 7, 10000, 0, &a));
    CHECK(a.duration == 10000 && a.expiration == 10000);
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"scanner", 7, LEASEHOLD_ANY, 0, &b));
    CHECK(b.duration == 30000);
    OK(leasehold_landlord_grant(ll, NULL, 0, 10000, 0, &c)); /* empty resource */
    CHECK(memcmp(a.cookie.bytes, b.cookie.bytes, 16) != 0);
    size_t n = 0;
    OK(leasehold_landlord_len(ll, &n));
    CHECK(n == 3);

    /* Renew: granted duration; unknown cookies and bad durations are errors. */
    int64_t granted = 0;
    OK(leasehold_landlord_renew(ll, a.cookie, 20000, 5000, &granted));
    CHECK(granted == 20000);
    leasehold_cookie nobody;
    memset(&nobody, 0x5a, sizeof nobody);
    granted = 77;
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_renew(ll, nobody, 1000, 5000, &granted));
    CHECK(granted == 77);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_renew(ll, a.cookie, -2, 5000, &granted));

    /* Get and lease: what the landlord holds. */
    int64_t exp = 0;
    uint8_t *res = NULL;
    size_t res_len = 0;
    OK(leasehold_landlord_get(ll, a.cookie, 6000, &exp, &res, &res_len));
    CHECK(exp == 25000 && res_len == 7 && memcmp(res, "printer", 7) == 0);
    leasehold_bytes_free(res, res_len);
    OK(leasehold_landlord_get(ll, a.cookie, 6000, &exp, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_get(ll, a.cookie, 6000, &exp, &res, NULL));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_get(ll, nobody, 6000, &exp, NULL, NULL));
    leasehold_lease lease;
    OK(leasehold_landlord_lease(ll, b.cookie, 0, &lease));
    CHECK(lease.landlord == 0xabcdef && lease.expiration == 30000);

    /* Iteration with user data, and stopping early. */
    struct visit_state vs = {0, 0};
    OK(leasehold_landlord_for_each(ll, visit, &vs));
    CHECK(vs.seen == 3 && vs.total_len == 14);
    int calls = 0;
    OK(leasehold_landlord_for_each(ll, stop_at_first, &calls));
    CHECK(calls == 1);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_for_each(ll, NULL, NULL));

    /* Batches: per-lease results, LEASE_MAP when some failed. */
    leasehold_renewal items[3];
    items[0].cookie = a.cookie;
    items[0].duration = 1000;
    items[1].cookie = nobody;
    items[1].duration = 1000;
    items[2].cookie = b.cookie;
    items[2].duration = 40000;
    leasehold_batch_result results[3];
    FAILS(LEASEHOLD_STATUS_LEASE_MAP, leasehold_landlord_renew_all(ll, items, 3, 6000, results));
    /* A renewal shorter than what is left is what the holder asked for (never_shorten). */
    CHECK(results[0].status == LEASEHOLD_STATUS_OK && results[0].duration == 1000);
    CHECK(results[1].status == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    CHECK(results[2].status == LEASEHOLD_STATUS_OK && results[2].duration == 40000);
    OK(leasehold_landlord_renew_all(ll, items, 1, 6000, results));
    OK(leasehold_landlord_renew_all(ll, NULL, 0, 6000, NULL));

    /* Cancel hands back the resource. */
    OK(leasehold_landlord_cancel(ll, b.cookie, 7000, &res, &res_len));
    CHECK(res_len == 7 && memcmp(res, "scanner", 7) == 0);
    leasehold_bytes_free(res, res_len);
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_cancel(ll, b.cookie, 7000, NULL, NULL));
    leasehold_cookie two[2];
    two[0] = c.cookie;
    two[1] = b.cookie;
    FAILS(LEASEHOLD_STATUS_LEASE_MAP, leasehold_landlord_cancel_all(ll, two, 2, 7000, results));
    CHECK(results[0].status == LEASEHOLD_STATUS_OK && results[1].status == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    OK(leasehold_landlord_len(ll, &n));
    CHECK(n == 1);

    /* Expiry, driven by the host's timer: poll_timeout, handle_timeout, poll_expired. */
    bool has = false;
    int64_t at = 0;
    OK(leasehold_landlord_poll_timeout(ll, &has, &at));
    CHECK(has && at <= 7001);
    advance(ll, 7000);
    leasehold_expired e;
    bool found = true;
    OK(leasehold_landlord_poll_expired(ll, &e, &found));
    CHECK(!found);
    advance(ll, 7001);
    size_t waiting = 0, heap = 0;
    OK(leasehold_landlord_expired_len(ll, &waiting));
    CHECK(waiting == 1);
    OK(leasehold_landlord_heap_bytes(ll, &heap));
    CHECK(heap > 0);
    OK(leasehold_landlord_poll_expired(ll, &e, &found));
    CHECK(found);
    if (found) {
        CHECK(e.expiration == 7000 && e.resource_len == 7);
        CHECK(memcmp(e.cookie.bytes, a.cookie.bytes, 16) == 0 && memcmp(e.resource, "printer", 7) == 0);
        leasehold_bytes_free(e.resource, e.resource_len);
    }
    OK(leasehold_landlord_poll_expired(ll, &e, &found));
    CHECK(!found);
    OK(leasehold_landlord_poll_timeout(ll, &has, &at));
    CHECK(!has);

    /* FOREVER leases never expire. */
    leasehold_grant f;
    leasehold_landlord_free(ll);
    leasehold_policy *p = NULL;
    leasehold_landlord_config *cfg = NULL;
    OK(leasehold_policy_new_fixed(LEASEHOLD_FOREVER, &p));
    OK(leasehold_landlord_config_new(2, SEED, sizeof SEED, &cfg));
    OK(leasehold_landlord_config_set_expiry_budget(cfg, 1));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_config_set_expiry_budget(cfg, 0));
    OK(leasehold_landlord_new(cfg, p, &ll));
    /* With a budget of 1, expiry goes in small steps, and every lease still expires. */
    OK(leasehold_landlord_grant(ll, NULL, 0, 10, 0, &f));
    OK(leasehold_landlord_grant(ll, NULL, 0, 10, 0, &f));
    advance(ll, 100);
    advance(ll, 100);
    advance(ll, 100);
    OK(leasehold_landlord_len(ll, &n));
    CHECK(n == 0);
    for (int i = 0; i < 2; i++) {
        OK(leasehold_landlord_poll_expired(ll, &e, &found));
        CHECK(found);
        if (found) leasehold_bytes_free(e.resource, e.resource_len);
    }
    /* FOREVER leases never expire, even granted at the end of time (the landlord's time only
     * moves forward, so this comes after the leases above). */
    OK(leasehold_landlord_grant(ll, NULL, 0, LEASEHOLD_FOREVER, INT64_MAX - 5, &f));
    CHECK(f.expiration == LEASEHOLD_FOREVER && f.duration == LEASEHOLD_FOREVER);
    OK(leasehold_landlord_poll_timeout(ll, &has, &at));
    CHECK(!has);
    leasehold_landlord_free(ll);
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(p);

    /* Grace: a lease is honoured for a while after expiry (clock skew). */
    ll = make(1000);
    OK(leasehold_landlord_grant(ll, NULL, 0, 100, 0, &a));
    OK(leasehold_landlord_renew(ll, a.cookie, 100, 900, &granted));
    OK(leasehold_landlord_poll_timeout(ll, &has, &at));
    CHECK(has && at <= 2001);
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_renew(ll, a.cookie, 100, 2001, &granted));

    /* Wire bytes in, wire bytes out. */
    uint8_t *reply = NULL;
    size_t reply_len = 0;
    const char *req = "{\"v\":1,\"id\":9,\"body\":{\"op\":\"grant\",\"resource\":\"6869\",\"duration\":5000}}";
    OK(leasehold_landlord_handle_bytes(ll, (const uint8_t *)req, strlen(req), LEASEHOLD_ENCODING_JSON, 0,
                                       &reply, &reply_len));
    CHECK(reply_len > 0 && strstr((const char *)reply, "\"op\":\"granted\"") != NULL);
    leasehold_bytes_free(reply, reply_len);
    OK(leasehold_landlord_handle_bytes(ll, (const uint8_t *)"garbage", 7, LEASEHOLD_ENCODING_BINARY, 0,
                                       &reply, &reply_len));
    CHECK(reply_len > 20 && reply[0] == 0x4C && reply[2] == 0x11);
    leasehold_bytes_free(reply, reply_len);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_landlord_handle_bytes(ll, (const uint8_t *)req, 3, 9, 0, &reply, &reply_len));
    leasehold_landlord_free(ll);
}
