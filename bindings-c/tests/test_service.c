/* The renewal service through the machine interface (kind "RenewalService": sets,
 * memberships, events, snapshot/restore, set leases over the wire), the gap tracker, and the
 * landlord's snapshot/restore, in virtual time. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdlib.h>

#include "check.h"
#include "json.h"
#include "util.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {8, 1, 8};

static leasehold_landlord *printer(void) { return bounded_landlord(0x77, SEED, 1000, 1000); }

/* A client lease granted by `ll`, and its data form (JSON text) in `text`. */
static leasehold_lease grant(leasehold_landlord *ll, int64_t now, char *text, size_t size) {
    leasehold_grant g;
    leasehold_lease l;
    memset(&l, 0, sizeof l);
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"doc", 3, 1000, now, &g));
    OK(leasehold_lease_from_grant(0x77, g.cookie, now, g.duration, &l));
    char hex[LEASEHOLD_COOKIE_HEX_SIZE];
    OK(leasehold_cookie_to_hex(l.cookie, hex, sizeof hex));
    snprintf(text, size, "{\"landlord\":\"%016llx\",\"cookie\":\"%s\",\"expiration\":%lld}",
             (unsigned long long)l.landlord, hex, (long long)l.expiration);
    return l;
}

#define CALL MCALL
#define REFUSED MREFUSED

static size_t count_of(json *v) {
    size_t n = v && v->kind == J_ARRAY ? v->count : 999;
    json_free(v);
    return n;
}
struct world {
    leasehold_landlord *ll;
    int64_t now;
    int warnings, failures;
    int64_t failure_code;
    char handback[16];
    leasehold_gap_tracker *tracker;
    leasehold_delivery last_delivery;
};

/* Bytes given as a JSON array of numbers, into a malloc'd buffer. */
static uint8_t *bytes_of(const json *arr, size_t *n) {
    *n = arr && arr->kind == J_ARRAY ? arr->count : 0;
    uint8_t *b = (uint8_t *)malloc(*n + 1);
    for (size_t i = 0; b && i < *n; i++) b[i] = (uint8_t)atoi(arr->items[i]->text);
    return b;
}

static void on_event(struct world *w, const json *e) {
    const json *kind = json_get(e, "kind");
    const char *type = json_str(kind, "type");
    if (type && strcmp(type, "expiration_warning") == 0) w->warnings++;
    if (type && strcmp(type, "renewal_failure") == 0) {
        w->failures++;
        w->failure_code = json_num(json_get(json_get(kind, "error"), "code"));
    }
    size_t n = 0;
    uint8_t *hb = bytes_of(json_get(e, "handback"), &n);
    if (n > sizeof w->handback - 1) n = sizeof w->handback - 1;
    memcpy(w->handback, hb, n);
    w->handback[n] = '\0';
    free(hb);
    OK(leasehold_gap_tracker_observe(w->tracker, (uint64_t)json_num(json_get(e, "event_id")),
                                     (uint64_t)json_num(json_get(e, "sequence")), &w->last_delivery, NULL));
}

/* The host's loop: renewals out to the landlord, its replies back in, events delivered, the
 * timer followed until `until`. */
static void run(leasehold_machine *s, struct world *w, int64_t until) {
    for (int guard = 0; guard < 100000 && w->now <= until; guard++) {
        bool found = false, busy = false;
        char *text = NULL;
        OK(leasehold_machine_poll_transmit(s, w->now, &found, &text));
        if (found) {
            json *t = json_parse(text, strlen(text));
            leasehold_string_free(text);
            CHECK(t && strcmp(json_str(t, "landlord"), "0000000000000077") == 0 && json_num(json_get(t, "id")) > 0);
            size_t n = 0, rn = 0, an = 0;
            uint8_t *req = bytes_of(json_get(t, "request"), &n), *reply = NULL, *ans = NULL;
            OK(leasehold_landlord_handle_bytes(w->ll, req, n, LEASEHOLD_ENCODING_BINARY, w->now, &reply, &rn));
            OK(leasehold_machine_serve(s, "reply", NULL, reply, rn, LEASEHOLD_ENCODING_BINARY, w->now, &ans, &an));
            CHECK(an == 4 && memcmp(ans, "null", 4) == 0);
            leasehold_bytes_free(ans, an);
            leasehold_bytes_free(reply, rn);
            free(req);
            json_free(t);
            busy = true;
        }
        OK(leasehold_machine_poll_event(s, w->now, &found, &text));
        if (found) {
            json *e = json_parse(text, strlen(text));
            leasehold_string_free(text);
            on_event(w, e);
            /* Delivered: reported, so that a restore does not hand it out again. */
            json *d = CALL(s, w->now, "{\"op\":\"delivered\",\"event_id\":%llu,\"sequence\":%llu}",
                           (unsigned long long)json_num(json_get(e, "event_id")),
                           (unsigned long long)json_num(json_get(e, "sequence")));
            CHECK(d && d->kind == J_BOOL && d->boolean);
            json_free(d);
            json_free(e);
            busy = true;
        }
        if (busy) continue;
        bool has = false;
        int64_t next = 0;
        OK(leasehold_machine_poll_timeout(s, &has, &next));
        if (!has || next > until) break;
        w->now = next > w->now ? next : w->now + 1;
        OK(leasehold_machine_handle_timeout(s, w->now));
        OK(leasehold_landlord_handle_timeout(w->ll, w->now));
    }
    if (w->now < until) w->now = until;
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

static void test_event_table(void) {
    leasehold_event_table *t = NULL;
    OK(leasehold_event_table_new(&t));
    leasehold_event_source src = {42, 7};
    uint64_t id = 0;
    OK(leasehold_event_table_register(t, src, (const uint8_t *)"hb", 2, &id));
    CHECK(id == 1);
    leasehold_gap_tracker *g = NULL;
    OK(leasehold_gap_tracker_new(&g));
    bool active = false;
    uint64_t seq = 99;
    OK(leasehold_event_table_sequence(t, id, &active, &seq));
    CHECK(active && seq == 0);
    OK(leasehold_gap_tracker_expect(g, id, seq));
    leasehold_event e;
    leasehold_delivery d;
    OK(leasehold_event_table_next_event(t, id, &e));
    CHECK(e.event_id == id && e.sequence == 1 && e.source.service == 42 && e.source.object == 7);
    CHECK(e.handback_len == 2 && memcmp(e.handback, "hb", 2) == 0);
    OK(leasehold_gap_tracker_observe(g, e.event_id, e.sequence, &d, NULL));
    CHECK(d == LEASEHOLD_DELIVERY_IN_ORDER);
    leasehold_bytes_free(e.handback, e.handback_len);
    OK(leasehold_event_table_set_handback(t, id, (const uint8_t *)"new", 3));
    leasehold_lease l;
    memset(&l, 0, sizeof l);
    l.serial_format = LEASEHOLD_SERIAL_DURATION;
    l.expiration = 500;
    leasehold_event_registration r;
    OK(leasehold_event_table_registration(t, id, &l, &r));
    CHECK(r.event_id == id && r.sequence == 1 && r.lease.expiration == 500);
    /* Restored with a jump: the next number leaves a gap, never a repeat. */
    char *json = NULL;
    OK(leasehold_event_table_snapshot(t, &json));
    leasehold_event_table *back = NULL;
    OK(leasehold_event_table_restore(json, strlen(json), 10, &back));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_event_table_restore("{", 1, 10, &back));
    leasehold_string_free(json);
    leasehold_event_table_free(t);
    t = back;
    uint64_t missed = 0;
    OK(leasehold_event_table_next_event(t, id, &e));
    CHECK(e.sequence == 12 && e.handback_len == 3 && memcmp(e.handback, "new", 3) == 0);
    OK(leasehold_gap_tracker_observe(g, e.event_id, e.sequence, &d, &missed));
    CHECK(d == LEASEHOLD_DELIVERY_GAP && missed == 10);
    leasehold_bytes_free(e.handback, e.handback_len);
    size_t n = 0;
    OK(leasehold_event_table_len(t, &n));
    CHECK(n == 1);
    bool was = false;
    OK(leasehold_event_table_remove(t, id, &was));
    CHECK(was);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_event_table_next_event(t, id, &e));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_event_table_set_handback(t, id, NULL, 0));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_event_table_registration(t, id, &l, &r));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_event_table_register(NULL, src, NULL, 0, &id));
    leasehold_event_table_free(t);
    leasehold_event_table_free(NULL);
    leasehold_gap_tracker_free(g);
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


static const char *KIND = "RenewalService";
static const char *OPTIONS = "{\"id\": 99, \"set_policy\": {\"kind\": \"bounded\", \"max\": 10000, \"default\": 5000}, "
                             "\"manager\": {\"initial_rtt\": 20, \"min_rto\": 10}, \"restore_jump\": 1000}";

void test_service(void) {
    test_gap_tracker();
    test_event_table();
    test_landlord_snapshot();

    leasehold_machine *svc = NULL;
    const char *bad[] = {"{\"id\": 99, \"manager\": {\"attempts\": 0}}", "{\"id\": 99, \"colour\": 1}", "{}",
                         "{\"id\": 99, \"grace\": -1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_new(KIND, bad[i], strlen(bad[i]), SEED, 32, &svc));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_new(KIND, OPTIONS, strlen(OPTIONS), SEED, 5, &svc));
    CHECK(svc == NULL);
    OK(leasehold_machine_new(KIND, OPTIONS, strlen(OPTIONS), SEED, sizeof SEED, &svc));
    json *v = CALL(svc, 0, "{\"op\":\"id\"}");
    CHECK(v && strcmp(v->text, "0000000000000063") == 0);
    json_free(v);
    v = CALL(svc, 0, "{\"op\":\"set_policy\"}");
    CHECK(v && json_num(json_get(v, "max")) == 10000);
    json_free(v);
    /* Not kept in a store. */
    leasehold_machine *none = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_machine_open_dir(KIND, "/tmp/x", 6, OPTIONS, strlen(OPTIONS), SEED, 32, 0, &none, NULL));
    uint64_t seq = 9, durable = 9;
    OK(leasehold_machine_journal_seq(svc, &seq));
    OK(leasehold_machine_commit(svc, &durable));
    CHECK(seq == 0 && durable == 0);

    struct world w;
    memset(&w, 0, sizeof w);
    w.ll = printer();
    OK(leasehold_gap_tracker_new(&w.tracker));

    /* A set for ANY: the set policy grants 5 s. */
    json *created = CALL(svc, 0, "{\"op\":\"create_set\",\"lease_duration\":-1}");
    uint64_t set = (uint64_t)json_num(json_get(created, "set"));
    const json *sl = json_get(created, "lease");
    CHECK(sl && strcmp(json_str(sl, "landlord"), "0000000000000063") == 0 && json_num(json_get(sl, "expiration")) == 5000);
    char set_lease[200], set_cookie[40];
    snprintf(set_cookie, sizeof set_cookie, "%s", sl ? json_str(sl, "cookie") : "");
    snprintf(set_lease, sizeof set_lease, "{\"landlord\":\"0000000000000063\",\"cookie\":\"%s\",\"expiration\":5000}",
             set_cookie);
    json_free(created);
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0, "{\"op\":\"create_set\",\"lease_duration\":0}");
    v = CALL(svc, 0, "{\"op\":\"set_of\",\"lease\":%s}", set_lease);
    CHECK(v && (uint64_t)json_num(v) == set);
    json_free(v);

    /* A client lease of 1 s kept for 4 s by the service. */
    char doc[200];
    grant(w.ll, 0, doc, sizeof doc);
    const char *add = "{\"op\":\"add\",\"set\":%llu,\"lease\":%s,\"membership_duration\":%lld,\"renew_duration\":%lld}";
    CHECK(take_null(CALL(svc, 0, add, (unsigned long long)set, doc, 4000LL, 1000LL)));
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0, add, (unsigned long long)set, doc, 4000LL, (long long)LEASEHOLD_ANY);
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0, add, (unsigned long long)set, set_lease, 4000LL, 1000LL);
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, svc, 0, add, (unsigned long long)set + 100, doc, 4000LL, 1000LL);
    v = CALL(svc, 0, "{\"op\":\"membership\",\"set\":%llu,\"lease\":%s}", (unsigned long long)set, doc);
    CHECK(v && json_num(json_get(v, "expiration")) == 4000 && json_num(json_get(v, "renew_duration")) == 1000);
    json_free(v);
    CHECK(count_of(CALL(svc, 0, "{\"op\":\"leases\",\"set\":%llu}", (unsigned long long)set)) == 1);

    /* Both listeners, with handbacks. */
    json *warn = CALL(svc, 0, "{\"op\":\"set_expiration_warning_listener\",\"set\":%llu,\"min_warning\":1000,"
                              "\"handback\":\"warn\"}",
                      (unsigned long long)set);
    json *fail = CALL(svc, 0, "{\"op\":\"set_renewal_failure_listener\",\"set\":%llu,\"handback\":\"fail\"}",
                      (unsigned long long)set);
    CHECK(warn && fail && json_num(json_get(warn, "event_id")) != json_num(json_get(fail, "event_id")));
    CHECK(warn && (uint64_t)json_num(json_get(json_get(warn, "source"), "object")) == set &&
          strcmp(json_str(json_get(warn, "lease"), "cookie"), set_cookie) == 0);
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0,
            "{\"op\":\"set_expiration_warning_listener\",\"set\":%llu,\"min_warning\":-1,\"handback\":[]}",
            (unsigned long long)set);
    uint64_t warn_id = (uint64_t)json_num(json_get(warn, "event_id"));
    OK(leasehold_gap_tracker_expect(w.tracker, warn_id, (uint64_t)json_num(json_get(warn, "sequence"))));
    OK(leasehold_gap_tracker_expect(w.tracker, (uint64_t)json_num(json_get(fail, "event_id")),
                                    (uint64_t)json_num(json_get(fail, "sequence"))));
    json_free(warn);
    json_free(fail);
    CHECK(count_of(CALL(svc, 0, "{\"op\":\"registrations\",\"set\":%llu}", (unsigned long long)set)) == 2);

    /* Run to 3.5 s: the lease is renewed and alive at the landlord. */
    leasehold_lease doc_lease;
    {
        json *d = json_parse(doc, strlen(doc));
        OK(leasehold_cookie_from_hex(json_str(d, "cookie"), 32, &doc_lease.cookie));
        json_free(d);
    }
    run(svc, &w, 3500);
    int64_t exp = 0;
    OK(leasehold_landlord_get(w.ll, doc_lease.cookie, w.now, &exp, NULL, NULL));
    CHECK(exp > 3500);
    v = CALL(svc, w.now, "{\"op\":\"stats\"}");
    CHECK(v && json_num(json_get(v, "leases_renewed")) >= 3);
    json_free(v);

    /* At 4 s the warning comes (the set's lease ends at 5 s), in order, with its handback. */
    run(svc, &w, 4100);
    CHECK(w.warnings == 1 && strcmp(w.handback, "warn") == 0);
    CHECK(w.last_delivery == LEASEHOLD_DELIVERY_IN_ORDER);
    /* The membership ended at 4 s: the lease left the set silently. */
    CHECK(take_null(CALL(svc, w.now, "{\"op\":\"membership\",\"set\":%llu,\"lease\":%s}", (unsigned long long)set, doc)));

    /* The client renews its set over the wire for 5 more seconds. */
    char text[256];
    snprintf(text, sizeof text, "{\"v\":1,\"id\":\"1\",\"body\":{\"op\":\"renew\",\"cookie\":\"%s\",\"duration\":\"5000\"}}",
             set_cookie);
    uint8_t *req = NULL, *reply = NULL, *rj = NULL;
    size_t n = 0, rn = 0, rjn = 0;
    OK(leasehold_message_transcode("Request", (const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON,
                                   LEASEHOLD_ENCODING_BINARY, NULL, &req, &n));
    OK(leasehold_machine_serve(svc, "serve", NULL, req, n, LEASEHOLD_ENCODING_BINARY, w.now, &reply, &rn));
    OK(leasehold_message_transcode("Reply", reply, rn, LEASEHOLD_ENCODING_BINARY, LEASEHOLD_ENCODING_JSON, NULL, &rj,
                                   &rjn));
    CHECK(rj && strstr((const char *)rj, "\"op\":\"renewed\"") != NULL);
    leasehold_bytes_free(req, n);
    leasehold_bytes_free(reply, rn);
    leasehold_bytes_free(rj, rjn);

    /* A client lease its landlord forgets: a renewal-failure event with the code. */
    char gone[200];
    leasehold_lease gone_lease = grant(w.ll, w.now, gone, sizeof gone);
    CHECK(take_null(CALL(svc, w.now, add, (unsigned long long)set, gone, (long long)LEASEHOLD_FOREVER, 1000LL)));
    OK(leasehold_landlord_cancel(w.ll, gone_lease.cookie, w.now, NULL, NULL));
    run(svc, &w, w.now + 2000);
    CHECK(w.failures == 1 && w.failure_code == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    CHECK(strcmp(w.handback, "fail") == 0 && w.last_delivery == LEASEHOLD_DELIVERY_IN_ORDER);
    CHECK(take_null(CALL(svc, w.now, "{\"op\":\"remove\",\"set\":%llu,\"lease\":%s}", (unsigned long long)set, gone)));

    /* Snapshot and restore: the set, its registrations and its leases survive; sequence
     * numbers jump, which the tracker reads as a gap. */
    char kept[200];
    grant(w.ll, w.now, kept, sizeof kept);
    CHECK(take_null(CALL(svc, w.now, add, (unsigned long long)set, kept, (long long)LEASEHOLD_FOREVER, 1000LL)));
    char *snap = NULL;
    OK(leasehold_machine_snapshot(svc, w.now, &snap));
    leasehold_machine *back = NULL;
    OK(leasehold_machine_restore(KIND, OPTIONS, strlen(OPTIONS), snap, strlen(snap), w.now, &back));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_machine_restore(KIND, OPTIONS, strlen(OPTIONS), "[1]", 3, w.now, &none));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_machine_restore(KIND, OPTIONS, strlen(OPTIONS), "\xff", 1, w.now, &none));
    leasehold_string_free(snap);
    leasehold_machine_free(svc);
    svc = back;
    CHECK(count_of(CALL(svc, w.now, "{\"op\":\"sets\"}")) == 1);
    CHECK(count_of(CALL(svc, w.now, "{\"op\":\"registrations\",\"set\":%llu}", (unsigned long long)set)) == 2);
    v = CALL(svc, w.now, "{\"op\":\"membership\",\"set\":%llu,\"lease\":%s}", (unsigned long long)set, kept);
    CHECK(v && json_num(json_get(v, "expiration")) == LEASEHOLD_FOREVER);
    json_free(v);
    int warnings_before = w.warnings;
    run(svc, &w, w.now + 2500); /* the warning is due 1 s before the set's lease ends */
    CHECK(w.warnings == warnings_before + 1 && w.last_delivery == LEASEHOLD_DELIVERY_GAP);

    /* A delivery report of an event never handed out changes nothing. */
    v = CALL(svc, w.now, "{\"op\":\"delivered\",\"event_id\":%llu,\"sequence\":999}", (unsigned long long)warn_id);
    CHECK(v && v->kind == J_BOOL && !v->boolean);
    json_free(v);

    /* An "unknown event" answer ends that registration only. */
    v = CALL(svc, w.now, "{\"op\":\"unknown_event\",\"event_id\":%llu}", (unsigned long long)warn_id);
    CHECK(v && v->kind == J_BOOL && v->boolean);
    json_free(v);
    CHECK(count_of(CALL(svc, w.now, "{\"op\":\"registrations\",\"set\":%llu}", (unsigned long long)set)) == 1);
    CHECK(take_null(CALL(svc, w.now, "{\"op\":\"clear_renewal_failure_listener\",\"set\":%llu}", (unsigned long long)set)));
    CHECK(take_null(
        CALL(svc, w.now, "{\"op\":\"clear_expiration_warning_listener\",\"set\":%llu}", (unsigned long long)set)));

    /* A transport failure report, then cancelling the set over the wire destroys it. */
    CHECK(take_null(CALL(svc, w.now, "{\"op\":\"failure\",\"id\":424242,\"code\":6,\"message\":\"lost\"}")));
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, w.now, "{\"op\":\"failure\"}");
    snprintf(text, sizeof text, "{\"v\":1,\"id\":\"2\",\"body\":{\"op\":\"cancel\",\"cookie\":\"%s\"}}", set_cookie);
    OK(leasehold_message_transcode("Request", (const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON,
                                   LEASEHOLD_ENCODING_JSON, NULL, &req, &n));
    OK(leasehold_machine_serve(svc, "serve", NULL, req, n, LEASEHOLD_ENCODING_JSON, w.now, &reply, &rn));
    CHECK(rn > 0 && strstr((const char *)reply, "\"op\":\"cancelled\"") != NULL);
    leasehold_bytes_free(req, n);
    leasehold_bytes_free(reply, rn);
    CHECK(take_null(CALL(svc, w.now, "{\"op\":\"set_lease\",\"set\":%llu}", (unsigned long long)set)));
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, svc, w.now, "{\"op\":\"leases\",\"set\":%llu}", (unsigned long long)set);

    /* Hostile. */
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_machine_serve(svc, "reply", NULL, (const uint8_t *)"\x4c", 1, LEASEHOLD_ENCODING_BINARY, 0, &reply, &rn));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_serve(svc, "serve", "lease", (const uint8_t *)"{}", 2,
                                                                     LEASEHOLD_ENCODING_JSON, 0, &reply, &rn));
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0, "{\"op\":\"add\",\"set\":1}");
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, svc, 0, "{\"op\":\"set_of\",\"lease\":{\"landlord\":\"x\"}}");

    leasehold_machine_free(svc);
    leasehold_gap_tracker_free(w.tracker);
    leasehold_landlord_free(w.ll);
}
