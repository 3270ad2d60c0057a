/* The renewal service (sets, memberships, events, snapshot/restore), the gap tracker, and the
 * landlord's snapshot/restore, in virtual time. */
#include "check.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {8, 1, 8};

static leasehold_landlord *printer(void) {
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *p = NULL;
    leasehold_landlord *ll = NULL;
    OK(leasehold_landlord_config_new(0x77, SEED, sizeof SEED, &cfg));
    OK(leasehold_policy_new_bounded(1000, 1000, &p));
    OK(leasehold_landlord_new(cfg, p, &ll));
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(p);
    return ll;
}

static leasehold_lease grant(leasehold_landlord *ll, int64_t now) {
    leasehold_grant g;
    leasehold_lease l;
    memset(&l, 0, sizeof l);
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"doc", 3, 1000, now, &g));
    OK(leasehold_lease_from_grant(0x77, g.cookie, now, g.duration, &l));
    return l;
}

struct world {
    leasehold_landlord *ll;
    int64_t now;
    uint8_t *replies[32];
    size_t reply_len[32];
    int n_replies;
    int warnings, failures;
    int32_t failure_code;
    char handback[16];
    leasehold_gap_tracker *tracker;
    leasehold_delivery last_delivery;
};

static int32_t transmit(void *user_data, uint64_t landlord_id, uint64_t request_id, const uint8_t *data,
                        size_t len) {
    struct world *w = (struct world *)user_data;
    (void)request_id;
    if (landlord_id != 0x77 || w->n_replies == 32) return 1;
    OK(leasehold_landlord_handle_bytes(w->ll, data, len, LEASEHOLD_ENCODING_JSON, w->now,
                                       &w->replies[w->n_replies], &w->reply_len[w->n_replies]));
    w->n_replies++;
    return 0;
}

static void on_event(void *user_data, const leasehold_set_event *e) {
    struct world *w = (struct world *)user_data;
    if (e->kind == LEASEHOLD_SET_EXPIRATION_WARNING) w->warnings++;
    if (e->kind == LEASEHOLD_SET_RENEWAL_FAILURE) {
        w->failures++;
        w->failure_code = e->error_code;
    }
    size_t n = e->handback_len < sizeof w->handback - 1 ? e->handback_len : sizeof w->handback - 1;
    memcpy(w->handback, e->handback, n);
    w->handback[n] = '\0';
    OK(leasehold_gap_tracker_observe(w->tracker, e->event_id, e->sequence, &w->last_delivery, NULL));
}

static void run(leasehold_renewal_service *s, struct world *w, int64_t until) {
    for (int guard = 0; guard < 100000 && w->now <= until; guard++) {
        bool has = false;
        int64_t next = 0;
        OK(leasehold_renewal_service_drive(s, w->now, LEASEHOLD_ENCODING_JSON, transmit, on_event, w, &has,
                                           &next));
        if (w->n_replies > 0) {
            for (int i = 0; i < w->n_replies; i++) {
                OK(leasehold_renewal_service_handle_reply_bytes(s, w->replies[i], w->reply_len[i],
                                                                LEASEHOLD_ENCODING_JSON, w->now));
                leasehold_bytes_free(w->replies[i], w->reply_len[i]);
            }
            w->n_replies = 0;
            continue;
        }
        if (!has || next > until) break;
        w->now = next > w->now ? next : w->now + 1;
        OK(leasehold_landlord_handle_timeout(w->ll, w->now));
    }
    if (w->now < until) w->now = until;
}

static int32_t count_u64(void *user_data, uint64_t v) {
    (void)v;
    (*(int *)user_data)++;
    return 0;
}

static int32_t count_lease(void *user_data, const leasehold_lease *l) {
    (void)l;
    (*(int *)user_data)++;
    return 0;
}

static int32_t count_registration(void *user_data, const leasehold_event_registration *r) {
    (void)r;
    (*(int *)user_data)++;
    return 0;
}

static void test_gap_tracker(void) {
    leasehold_gap_tracker *t = NULL;
    OK(leasehold_gap_tracker_new(&t));
    leasehold_delivery d;
    uint64_t missed = 99;
    OK(leasehold_gap_tracker_observe(t, 1, 5, &d, &missed));
    CHECK(d == LEASEHOLD_DELIVERY_FIRST && missed == 0);
    OK(leasehold_gap_tracker_observe(t, 1, 6, &d, NULL));
    CHECK(d == LEASEHOLD_DELIVERY_IN_ORDER);
    OK(leasehold_gap_tracker_observe(t, 1, 10, &d, &missed));
    CHECK(d == LEASEHOLD_DELIVERY_GAP && missed == 3);
    OK(leasehold_gap_tracker_observe(t, 1, 9, &d, NULL));
    CHECK(d == LEASEHOLD_DELIVERY_STALE);
    bool has = false;
    uint64_t last = 0;
    OK(leasehold_gap_tracker_last(t, 1, &has, &last));
    CHECK(has && last == 10);
    OK(leasehold_gap_tracker_expect(t, 2, 0));
    OK(leasehold_gap_tracker_observe(t, 2, 1, &d, NULL));
    CHECK(d == LEASEHOLD_DELIVERY_IN_ORDER);
    OK(leasehold_gap_tracker_forget(t, 1));
    OK(leasehold_gap_tracker_last(t, 1, &has, &last));
    CHECK(!has);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_gap_tracker_observe(NULL, 1, 1, &d, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_gap_tracker_observe(t, 1, 1, NULL, NULL));
    leasehold_gap_tracker_free(t);
    leasehold_gap_tracker_free(NULL);
}

static void test_landlord_snapshot(void) {
    leasehold_landlord *ll = printer();
    leasehold_grant a, b;
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"a", 1, 1000, 0, &a));
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"b", 1, 500, 0, &b));
    char *json = NULL;
    OK(leasehold_landlord_snapshot(ll, 100, &json));
    leasehold_policy *p = NULL;
    OK(leasehold_policy_new_bounded(1000, 1000, &p));
    leasehold_landlord *back = NULL;
    /* Restored an hour later on another clock: each lease keeps the time it had left. */
    OK(leasehold_landlord_restore(json, strlen(json), p, 3600000, &back));
    int64_t exp = 0;
    uint8_t *res = NULL;
    size_t res_len = 0;
    OK(leasehold_landlord_get(back, a.cookie, 3600000, &exp, &res, &res_len));
    CHECK(exp == 3600000 + 900 && res_len == 1 && res[0] == 'a');
    leasehold_bytes_free(res, res_len);
    OK(leasehold_landlord_get(back, b.cookie, 3600000, &exp, NULL, NULL));
    CHECK(exp == 3600000 + 400);
    /* The cookie generator continues: the next cookie is the one the original would issue. */
    leasehold_grant c1, c2;
    OK(leasehold_landlord_grant(ll, NULL, 0, 10, 200, &c1));
    OK(leasehold_landlord_grant(back, NULL, 0, 10, 3600000, &c2));
    CHECK(memcmp(c1.cookie.bytes, c2.cookie.bytes, 16) == 0);
    CHECK(memcmp(c2.cookie.bytes, a.cookie.bytes, 16) != 0);
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_landlord_restore("{}", 2, p, 0, &back));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_landlord_restore(json, strlen(json) / 2, p, 0, &back));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_landlord_restore("\xc0", 1, p, 0, &back));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_restore(json, strlen(json), NULL, 0, &back));
    leasehold_string_free(json);
    leasehold_policy_free(p);
    leasehold_landlord_free(back);
    leasehold_landlord_free(ll);
}

void test_service(void) {
    test_gap_tracker();
    test_landlord_snapshot();

    leasehold_service_config *cfg = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_service_config_new(99, SEED, 5, &cfg));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_service_config_new(99, NULL, 32, &cfg));
    OK(leasehold_service_config_new(99, SEED, sizeof SEED, &cfg));
    leasehold_policy *sp = NULL;
    OK(leasehold_policy_new_bounded(10000, 5000, &sp));
    OK(leasehold_service_config_set_set_policy(cfg, sp));
    leasehold_policy_free(sp);
    leasehold_renewal_manager_config mc;
    OK(leasehold_renewal_manager_config_default(&mc));
    mc.initial_rtt = 20;
    mc.min_rto = 10;
    OK(leasehold_service_config_set_manager(cfg, &mc));
    OK(leasehold_service_config_set_landlord(cfg, 0, NULL));
    OK(leasehold_service_config_set_restore_jump(cfg, 1000));
    leasehold_renewal_service *svc = NULL;
    OK(leasehold_renewal_service_new(cfg, &svc));
    uint64_t id = 0;
    OK(leasehold_renewal_service_id(svc, &id));
    CHECK(id == 99);

    struct world w;
    memset(&w, 0, sizeof w);
    w.ll = printer();
    OK(leasehold_gap_tracker_new(&w.tracker));

    /* A set for ANY: the set policy grants 5 s. */
    uint64_t set = 0;
    leasehold_lease set_lease;
    OK(leasehold_renewal_service_create_set(svc, LEASEHOLD_ANY, 0, &set, &set_lease));
    CHECK(set_lease.landlord == 99 && set_lease.expiration == 5000);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_renewal_service_create_set(svc, 0, 0, &set, &set_lease));
    uint64_t found_set = 0;
    OK(leasehold_renewal_service_set_of(svc, &set_lease, 0, &found_set));
    CHECK(found_set == set);

    /* A client lease of 1 s kept for 4 s by the service. */
    leasehold_lease doc = grant(w.ll, 0);
    OK(leasehold_renewal_service_add(svc, set, &doc, 4000, 1000, 0));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_renewal_service_add(svc, set, &doc, 4000, LEASEHOLD_ANY, 0));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_renewal_service_add(svc, set, &set_lease, 4000, 1000, 0));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_renewal_service_add(svc, set + 100, &doc, 4000, 1000, 0));
    bool found = false;
    leasehold_membership m;
    OK(leasehold_renewal_service_membership(svc, set, &doc, 0, &found, &m));
    CHECK(found && m.expiration == 4000 && m.renew_duration == 1000);
    int count = 0;
    OK(leasehold_renewal_service_for_each_lease(svc, set, 0, count_lease, &count));
    CHECK(count == 1);

    /* Both listeners, with handbacks. */
    leasehold_event_registration warn, fail;
    OK(leasehold_renewal_service_set_expiration_warning_listener(svc, set, 1000, (const uint8_t *)"warn", 4, 0,
                                                                 &warn));
    OK(leasehold_renewal_service_set_renewal_failure_listener(svc, set, (const uint8_t *)"fail", 4, 0, &fail));
    CHECK(warn.event_id != fail.event_id && warn.source.service == 99 && warn.source.object == set);
    CHECK(memcmp(warn.lease.cookie.bytes, set_lease.cookie.bytes, 16) == 0);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_renewal_service_set_expiration_warning_listener(svc, set, -1, NULL, 0, 0, &warn));
    OK(leasehold_gap_tracker_expect(w.tracker, warn.event_id, warn.sequence));
    OK(leasehold_gap_tracker_expect(w.tracker, fail.event_id, fail.sequence));
    count = 0;
    OK(leasehold_renewal_service_for_each_registration(svc, set, 0, count_registration, &count));
    CHECK(count == 2);

    /* Run to 3.5 s: the lease is renewed and alive at the landlord. */
    run(svc, &w, 3500);
    int64_t exp = 0;
    OK(leasehold_landlord_get(w.ll, doc.cookie, w.now, &exp, NULL, NULL));
    CHECK(exp > 3500);
    leasehold_renewal_stats st;
    OK(leasehold_renewal_service_stats(svc, &st));
    CHECK(st.leases_renewed >= 3);

    /* At 4 s the warning comes (the set's lease ends at 5 s), in order, with its handback. */
    run(svc, &w, 4100);
    CHECK(w.warnings == 1 && strcmp(w.handback, "warn") == 0);
    CHECK(w.last_delivery == LEASEHOLD_DELIVERY_IN_ORDER);
    /* The membership ended at 4 s: the lease left the set silently. */
    OK(leasehold_renewal_service_membership(svc, set, &doc, w.now, &found, &m));
    CHECK(!found);

    /* The client renews its set over the wire for 5 more seconds. */
    leasehold_request *req = NULL;
    leasehold_reply *rep = NULL;
    OK(leasehold_request_new_renew(1, set_lease.cookie, 5000, &req));
    OK(leasehold_renewal_service_handle_request(svc, req, w.now, &rep));
    leasehold_reply_op op;
    OK(leasehold_reply_get_op(rep, &op));
    CHECK(op == LEASEHOLD_REPLY_RENEWED);
    leasehold_request_free(req);
    leasehold_reply_free(rep);

    /* A client lease its landlord forgets: a renewal-failure event with the code. */
    leasehold_lease gone = grant(w.ll, w.now);
    OK(leasehold_renewal_service_add(svc, set, &gone, LEASEHOLD_FOREVER, 1000, w.now));
    OK(leasehold_landlord_cancel(w.ll, gone.cookie, w.now, NULL, NULL));
    run(svc, &w, w.now + 2000);
    CHECK(w.failures == 1 && w.failure_code == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    CHECK(strcmp(w.handback, "fail") == 0 && w.last_delivery == LEASEHOLD_DELIVERY_IN_ORDER);
    bool removed = true;
    OK(leasehold_renewal_service_remove(svc, set, &gone, w.now, &removed, NULL));
    CHECK(!removed);

    /* Snapshot and restore: the set, its registrations and its leases survive; sequence
     * numbers jump, which the tracker reads as a gap. */
    leasehold_lease kept = grant(w.ll, w.now);
    OK(leasehold_renewal_service_add(svc, set, &kept, LEASEHOLD_FOREVER, 1000, w.now));
    char *json = NULL;
    OK(leasehold_renewal_service_snapshot(svc, w.now, &json));
    leasehold_renewal_service *back = NULL;
    OK(leasehold_renewal_service_restore(cfg, json, strlen(json), w.now, &back));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_renewal_service_restore(cfg, "[1]", 3, w.now, &back));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_renewal_service_restore(cfg, "\xff", 1, w.now, &back));
    leasehold_string_free(json);
    leasehold_renewal_service_free(svc);
    svc = back;
    count = 0;
    OK(leasehold_renewal_service_for_each_set(svc, count_u64, &count));
    CHECK(count == 1);
    count = 0;
    OK(leasehold_renewal_service_for_each_registration(svc, set, w.now, count_registration, &count));
    CHECK(count == 2);
    OK(leasehold_renewal_service_membership(svc, set, &kept, w.now, &found, &m));
    CHECK(found && m.expiration == LEASEHOLD_FOREVER);
    int warnings_before = w.warnings;
    run(svc, &w, w.now + 2500); /* the warning is due 1 s before the set's lease ends */
    CHECK(w.warnings == warnings_before + 1 && w.last_delivery == LEASEHOLD_DELIVERY_GAP);
    OK(leasehold_landlord_get(w.ll, kept.cookie, w.now, &exp, NULL, NULL));
    CHECK(exp > w.now);

    /* An "unknown event" answer ends that registration only. */
    bool was = false;
    OK(leasehold_renewal_service_unknown_event(svc, warn.event_id, &was));
    CHECK(was);
    count = 0;
    OK(leasehold_renewal_service_for_each_registration(svc, set, w.now, count_registration, &count));
    CHECK(count == 1);
    OK(leasehold_renewal_service_clear_renewal_failure_listener(svc, set, w.now));
    OK(leasehold_renewal_service_clear_expiration_warning_listener(svc, set, w.now));

    /* Manual polling, then cancelling the set over the wire destroys it. */
    bool has = false;
    int64_t at = 0;
    OK(leasehold_renewal_service_poll_timeout(svc, &has, &at));
    CHECK(has);
    OK(leasehold_renewal_service_handle_timeout(svc, at));
    leasehold_set_event ev;
    OK(leasehold_renewal_service_poll_event(svc, &ev, &found));
    if (found) {
        leasehold_bytes_free(ev.handback, ev.handback_len);
        leasehold_string_free(ev.error_message);
    }
    uint64_t to = 0;
    OK(leasehold_renewal_service_poll_transmit(svc, at, &found, &to, &req));
    if (found) {
        OK(leasehold_landlord_handle_request(w.ll, req, at, &rep));
        OK(leasehold_renewal_service_handle_reply(svc, rep, at));
        leasehold_reply_free(rep);
        leasehold_request_free(req);
    }
    OK(leasehold_renewal_service_handle_failure(svc, 424242, LEASEHOLD_STATUS_INDEFINITE, "lost", 4, at));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_renewal_service_handle_failure(svc, 1, 0, "", 0, at));
    OK(leasehold_request_new_cancel(2, set_lease.cookie, &req));
    uint8_t *bytes = NULL, *reply = NULL;
    size_t len = 0, reply_len = 0;
    OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_BINARY, &bytes, &len));
    OK(leasehold_renewal_service_handle_bytes(svc, bytes, len, LEASEHOLD_ENCODING_BINARY, at, &reply, &reply_len));
    OK(leasehold_reply_decode(reply, reply_len, LEASEHOLD_ENCODING_BINARY, NULL, &rep));
    OK(leasehold_reply_get_op(rep, &op));
    CHECK(op == LEASEHOLD_REPLY_CANCELLED);
    leasehold_reply_free(rep);
    leasehold_bytes_free(bytes, len);
    leasehold_bytes_free(reply, reply_len);
    leasehold_request_free(req);
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_renewal_service_set_lease(svc, set, at, &set_lease));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_renewal_service_for_each_lease(svc, set, at, count_lease, &count));

    /* Hostile. */
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_renewal_service_new(NULL, &svc));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_renewal_service_add(NULL, set, &kept, 1, 1, 0));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_renewal_service_for_each_set(svc, NULL, NULL));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_renewal_service_drive(svc, 0, 7, transmit, NULL, &w, &has, &at));
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_renewal_service_handle_reply_bytes(svc, (const uint8_t *)"\x4c", 1, LEASEHOLD_ENCODING_BINARY, 0));
    mc.attempts = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_service_config_set_manager(cfg, &mc));
    leasehold_service_config_free(NULL);
    leasehold_renewal_service_free(NULL);

    leasehold_renewal_service_free(svc);
    leasehold_service_config_free(cfg);
    leasehold_gap_tracker_free(w.tracker);
    leasehold_landlord_free(w.ll);
}
