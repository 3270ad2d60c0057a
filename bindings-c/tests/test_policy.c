/* Every built-in policy, from constructors and from JSON, and their checks. */
#include <math.h>

#include "check.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
                                                  7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};

/* A landlord with `policy` (which is freed). */
static leasehold_landlord *landlord_with(leasehold_policy *policy) {
    leasehold_landlord_config *cfg = NULL;
    leasehold_landlord *ll = NULL;
    OK(leasehold_landlord_config_new(1, SEED, sizeof SEED, &cfg));
    OK(leasehold_landlord_new(cfg, policy, &ll));
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(policy);
    return ll;
}

static int64_t grant(leasehold_landlord *ll, int64_t requested, int64_t now, leasehold_status *st) {
    leasehold_grant g;
    g.duration = -999;
    *st = leasehold_landlord_grant(ll, (const uint8_t *)"r", 1, requested, now, &g);
    return *st == LEASEHOLD_STATUS_OK ? g.duration : -999;
}

void test_policy(void) {
    leasehold_policy *p = NULL;
    leasehold_status st;

    /* Fixed: the offer, or less if less was asked; ANY takes the offer. */
    OK(leasehold_policy_new_fixed(5000, &p));
    leasehold_landlord *ll = landlord_with(p);
    CHECK(grant(ll, 10000, 0, &st) == 5000);
    CHECK(grant(ll, 100, 0, &st) == 100);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 5000);
    CHECK(grant(ll, -5, 0, &st) == -999 && st == LEASEHOLD_STATUS_INVALID_ARGUMENT);
    leasehold_landlord_free(ll);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_fixed(0, &p));

    /* Bounded: ANY gets the default, the rest min(request, max). */
    OK(leasehold_policy_new_bounded(60000, 30000, &p));
    ll = landlord_with(p);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 30000);
    CHECK(grant(ll, LEASEHOLD_FOREVER, 0, &st) == 60000);
    CHECK(grant(ll, 10, 0, &st) == 10);
    leasehold_landlord_free(ll);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_bounded(100, 200, &p));

    /* Capacity: denied above N_MAX. */
    leasehold_policy *inner = NULL;
    OK(leasehold_policy_new_fixed(1000, &inner));
    OK(leasehold_policy_new_capacity(2, inner, &p));
    leasehold_policy_free(inner);
    ll = landlord_with(p);
    CHECK(grant(ll, 5000, 0, &st) == 1000);
    CHECK(grant(ll, 5000, 0, &st) == 1000);
    CHECK(grant(ll, 5000, 0, &st) == -999 && st == LEASEHOLD_STATUS_LEASE_DENIED);
    CHECK(strstr(leasehold_last_error_message(), "capacity") != NULL);
    leasehold_landlord_free(ll);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_policy_new_capacity(2, NULL, &p));

    /* Resource-aware: the offer falls as the landlord fills. */
    OK(leasehold_policy_new_resource_aware(4, 8000, 2000, &p));
    ll = landlord_with(p);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 8000);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 6500);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 5000);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 3500);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == -999 && st == LEASEHOLD_STATUS_LEASE_DENIED);
    leasehold_landlord_free(ll);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_resource_aware(0, 8000, 2000, &p));

    /* Adaptive: L_G = N / G, clamped to L_MIN, denied above L_MAX. */
    OK(leasehold_policy_new_adaptive(10.0, 100, 300, 1, &p));
    int64_t period = 0;
    OK(leasehold_policy_adaptive_period(p, 2, &period));
    CHECK(period == 200);
    OK(leasehold_policy_adaptive_period(p, 0, &period));
    CHECK(period == 100);
    FAILS(LEASEHOLD_STATUS_LEASE_DENIED, leasehold_policy_adaptive_period(p, 4, &period));
    double holders = 0, ceiling = 0;
    OK(leasehold_policy_adaptive_max_holders(p, &holders));
    CHECK(holders > 2.99 && holders < 3.01);
    OK(leasehold_policy_adaptive_bandwidth_ceiling(p, 60.0, 40.0, &ceiling));
    CHECK(ceiling > 999.0 && ceiling < 1001.0);
    ll = landlord_with(p);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 100);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 200);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == 300);
    CHECK(grant(ll, LEASEHOLD_ANY, 0, &st) == -999 && st == LEASEHOLD_STATUS_LEASE_DENIED);
    leasehold_landlord_free(ll);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_adaptive(0.0, 100, 300, 1, &p));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_new_adaptive(10.0, 100, 300, 0, &p));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_policy_new_adaptive(NAN, 100, 300, 1, &p));

    /* Adaptive from a bandwidth budget, shared among grantors: G = 1000 / (60 + 40) / 2 = 5. */
    OK(leasehold_policy_new_adaptive_bandwidth(1000.0, 60.0, 40.0, 100, 60000, 2, &p));
    OK(leasehold_policy_adaptive_period(p, 10, &period));
    CHECK(period == 2000);
    leasehold_policy_free(p);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_policy_new_adaptive_bandwidth(-1.0, 60.0, 40.0, 100, 60000, 1, &p));

    /* Non-adaptive policies have no period. */
    OK(leasehold_policy_new_fixed(10, &p));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_adaptive_period(p, 1, &period));
    leasehold_policy_free(p);

    /* JSON descriptions round-trip. */
    const char *json = "{\"kind\":\"capacity\",\"max_leases\":100,\"inner\":{\"kind\":\"bounded\","
                       "\"max\":60000,\"default\":30000}}";
    OK(leasehold_policy_from_json(json, strlen(json), &p));
    char *text = NULL;
    OK(leasehold_policy_to_json(p, &text));
    CHECK(text != NULL && strcmp(text, json) == 0);
    leasehold_string_free(text);
    leasehold_policy_free(p);
    const char *bad = "{\"kind\":\"fixed\",\"duration\":-3}";
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_policy_from_json(bad, strlen(bad), &p));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_policy_from_json("{\"kind\":1}", 10, &p));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_policy_from_json("\xff\xfe", 2, &p));
}
