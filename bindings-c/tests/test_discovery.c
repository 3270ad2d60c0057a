/* The lookup discovery service (seed 003, LD) through the uniform machine interface
 * (leasehold_machine_* with kind "DiscoveryService"), in virtual time: settings and their
 * refusals; every call as JSON input; the LD.3/LD.4 semantics a C user relies on (one
 * discovered event per registrar until it is discarded, an active discard makes it eligible
 * again, passive discards only for registrations that want it by group, events carry the
 * handback and increasing sequence numbers, an expired or cancelled registration answers
 * UNKNOWN_LEASE); delivery reports and retries; unicast probes; the lease and discovery wire
 * protocols from a C client (messages built as JSON text and sent as bytes with
 * leasehold_message_transcode); snapshot and restore; durability in a directory and on the
 * host's own storage; hostile input. The shared vectors are checked in test_vectors.c. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdlib.h>

#include "check.h"
#include "json.h"
#include "util.h"
#include "store_util.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {3, 1, 4, 1, 5};
static const char *KIND = "DiscoveryService";
static const char *OPTIONS = "{\"id\": 7}";
static const int64_t MIN30 = 30 * 60 * 1000;

static leasehold_machine *service_with(const char *options) {
    leasehold_machine *m = NULL;
    OK(leasehold_machine_new(KIND, options, strlen(options), SEED, sizeof SEED, &m));
    return m;
}

static leasehold_machine *service(void) { return service_with(OPTIONS); }

#define CALL MCALL
#define REFUSED MREFUSED

/* Answer readers; each frees the answer. */
static bool flag(json *v) {
    bool r = v && v->kind == J_BOOL && v->boolean;
    json_free(v);
    return r;
}
static size_t count(json *v) {
    size_t r = v && v->kind == J_ARRAY ? v->count : 999;
    json_free(v);
    return r;
}
/* The answer equals the JSON `want`. */
static bool is(json *v, const char *want) {
    json *w = json_parse(want, strlen(want));
    bool r = v && w && json_equal(v, w);
    json_free(v);
    json_free(w);
    return r;
}

static uint64_t U(const json *v) { return v && v->text ? strtoull(v->text, NULL, 10) : 0; }
static const json *at(const json *v, const char *a, const char *b) { return json_get(json_get(v, a), b); }

/* Registrar n's id: 32 hex digits. */
static const char *RID(unsigned n) {
    static char buf[4][33];
    static int k = 0;
    char *b = buf[k++ % 4];
    snprintf(b, 33, "ab0000000000000000000000000000%02x", n & 0xff);
    return b;
}

static uint64_t reg(leasehold_machine *m, const char *groups, const char *locators, int64_t duration, int64_t now) {
    json *r = CALL(m, now, "{\"op\":\"register\",\"groups\":%s,\"locators\":%s,\"handback\":\"hb\",\"lease_duration\":%lld}",
                   groups, locators, (long long)duration);
    uint64_t id = U(json_get(r, "id"));
    json_free(r);
    return id;
}

/* A registrar announces itself in `groups` (a JSON array) at `locator`. */
static void announce(leasehold_machine *m, unsigned rid, const char *groups, const char *locator, unsigned seq,
                     int64_t ttl, int64_t now) {
    CHECK(take_null(CALL(m, now,
                       "{\"op\":\"announcement\",\"announcement\":{\"registrar\":\"%s\",\"groups\":%s,\"locator\":\"%s\","
                       "\"sequence\":%u,\"ttl\":%lld}}",
                       RID(rid), groups, locator, seq, (long long)ttl)));
}

/* The next event at `now` (NULL if none), reported delivered when `deliver`. */
static json *next_event(leasehold_machine *m, int64_t now, bool deliver) {
    bool found = true;
    char *text = NULL;
    OK(leasehold_machine_poll_event(m, now, &found, &text));
    if (!found) return NULL;
    json *e = json_parse(text, strlen(text));
    leasehold_string_free(text);
    CHECK(e && strcmp(at(e, "source", "service")->text, "0000000000000007") == 0);
    if (deliver)
        CHECK(flag(CALL(m, now, "{\"op\":\"delivered\",\"event_id\":%s,\"sequence\":%s}", json_get(e, "event_id")->text,
                        json_get(e, "sequence")->text)));
    return e;
}

/* Whether no event is due at `now` (an event found is left undelivered). */
static bool nothing_due(leasehold_machine *m, int64_t now) {
    bool found = true;
    char *text = NULL;
    OK(leasehold_machine_poll_event(m, now, &found, &text));
    leasehold_string_free(text);
    return !found;
}

/* Whether the event's first registrar is registrar n, discarded or discovered as said. */
static bool event_is(const json *e, unsigned n, bool discarded) {
    const json *rs = json_get(e, "registrars"), *d = json_get(e, "discarded");
    return e && rs && rs->count >= 1 && strcmp(json_str(rs->items[0], "id"), RID(n)) == 0 && d &&
           (d->boolean != 0) == discarded;
}

/* Polls an event that must not be there. */
static bool no_event(leasehold_machine *m, int64_t now) {
    json *e = next_event(m, now, true);
    json_free(e);
    return e == NULL;
}

/* ---------- settings, register, a registration's calls ---------- */

static void test_options(void) {
    leasehold_machine *m = NULL;
    const char *o = OPTIONS;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_new("Nothing", o, strlen(o), SEED, 32, &m));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_new(NULL, o, strlen(o), SEED, 32, &m));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_new(KIND, NULL, 0, SEED, 32, &m));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_new(KIND, o, strlen(o), NULL, 32, &m));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_new(KIND, o, strlen(o), SEED, 3, &m));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_new(KIND, o, strlen(o), SEED, 32, NULL));
    const char *bad[] = {"{\"id\": 7, \"colour\": \"blue\"}", "{}", "{\"id\": 7, \"event_retry\": []}",
                         "{\"id\": 7, \"seed\": [1, 2, 3]}", "1", "{\"id\": -1}", "{\"id\": 7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = NULL;
        FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_new(KIND, bad[i], strlen(bad[i]), SEED, 32, &m));
        CHECK(m == NULL);
    }
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_machine_new(KIND, "{\"id\":\xff}", 8, SEED, 32, &m));
    leasehold_machine_free(NULL);

    /* A policy, limits and schedules as settings. */
    m = service_with("{\"id\": \"0000000000000007\", \"lease_policy\": {\"kind\": \"bounded\", \"max\": 5000, "
                     "\"default\": 2000}, \"limits\": {\"max_batch\": 1}, \"event_retry\": [10, 20], "
                     "\"unicast_retry\": [10, 20], \"max_registrars\": 2, \"restore_jump\": 0}");
    const char *kind = NULL;
    OK(leasehold_machine_kind(m, &kind));
    CHECK(kind && strcmp(kind, KIND) == 0);
    CHECK(is(CALL(m, 0, "{\"op\":\"id\"}"), "\"0000000000000007\""));
    CHECK(take_null(CALL(m, 0, "{\"op\":\"now\"}")));
    /* The policy in force: ANY gets the default 2000, more than 5000 gets 5000. */
    json *r = CALL(m, 100, "{\"op\":\"register\",\"groups\":[],\"locators\":[],\"handback\":[],\"lease_duration\":-1}");
    CHECK(U(at(r, "lease", "expiration")) == 2100);
    json_free(r);
    CHECK(take_num(CALL(m, 100, "{\"op\":\"now\"}")) == 100);
    r = CALL(m, 100, "{\"op\":\"register\",\"groups\":[],\"locators\":[],\"handback\":[],\"lease_duration\":60000}");
    CHECK(U(at(r, "lease", "expiration")) == 5100);
    json_free(r);
    /* The limits: two locators in one set are too many. */
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, m, 100,
            "{\"op\":\"register\",\"groups\":[],\"locators\":[\"a:1\",\"b:1\"],\"handback\":[],\"lease_duration\":1}");
    leasehold_machine_free(m);
}

static void test_register_and_calls(void) {
    leasehold_machine *m = service();
    json *r = CALL(m, 0,
                   "{\"op\":\"register\",\"groups\":[\"lab\"],\"locators\":[\"Lookup.Example:4160\"],"
                   "\"handback\":[104,0,255],\"lease_duration\":-1,\"listener\":\"http://l/1\"}");
    CHECK(U(json_get(r, "id")) == 1);
    CHECK(strcmp(at(r, "lease", "landlord")->text, "0000000000000007") == 0);
    CHECK(U(at(r, "lease", "expiration")) == (uint64_t)MIN30); /* ANY: the default 30 min */
    const json *ev = json_get(r, "event");
    CHECK(U(json_get(ev, "event_id")) > 0 && U(json_get(ev, "sequence")) == 0);
    CHECK(U(at(ev, "source", "object")) == 1);
    CHECK(json_equal(at(ev, "lease", "cookie"), at(r, "lease", "cookie")));
    char cookie[40];
    snprintf(cookie, sizeof cookie, "%s", at(r, "lease", "cookie")->text);
    json_free(r);

    CHECK(is(CALL(m, 10, "{\"op\":\"registrations\"}"), "[1]"));
    CHECK(is(CALL(m, 10, "{\"op\":\"groups\",\"registration\":1}"), "[\"lab\"]"));
    CHECK(take_null(CALL(m, 10, "{\"op\":\"add_groups\",\"registration\":1,\"groups\":[\"printers\",\"\"]}")));
    CHECK(is(CALL(m, 10, "{\"op\":\"groups\",\"registration\":1}"), "[\"\",\"lab\",\"printers\"]"));
    CHECK(take_null(CALL(m, 10, "{\"op\":\"remove_groups\",\"registration\":1,\"groups\":[\"lab\",\"\"]}")));
    CHECK(is(CALL(m, 10, "{\"op\":\"groups\",\"registration\":1}"), "[\"printers\"]"));
    CHECK(take_null(CALL(m, 10, "{\"op\":\"set_groups\",\"registration\":1,\"groups\":null}")));
    CHECK(take_null(CALL(m, 10, "{\"op\":\"groups\",\"registration\":1}"))); /* all */
    CHECK(take_null(CALL(m, 10, "{\"op\":\"set_groups\",\"registration\":1,\"groups\":[]}")));
    CHECK(is(CALL(m, 10, "{\"op\":\"groups\",\"registration\":1}"), "[]"));
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, m, 10, "{\"op\":\"set_groups\",\"registration\":1}");

    CHECK(is(CALL(m, 20, "{\"op\":\"locators\",\"registration\":1}"), "[\"lookup.example:4160\"]"));
    CHECK(take_null(CALL(m, 20, "{\"op\":\"add_locators\",\"registration\":1,\"locators\":[\"[::1]:4161\"]}")));
    CHECK(count(CALL(m, 20, "{\"op\":\"locators\",\"registration\":1}")) == 2);
    CHECK(take_null(CALL(m, 20, "{\"op\":\"remove_locators\",\"registration\":1,\"locators\":[\"lookup.example:4160\"]}")));
    CHECK(is(CALL(m, 20, "{\"op\":\"locators\",\"registration\":1}"), "[\"[::1]:4161\"]"));
    CHECK(take_null(CALL(m, 20, "{\"op\":\"set_locators\",\"registration\":1,\"locators\":[]}")));
    CHECK(count(CALL(m, 20, "{\"op\":\"locators\",\"registration\":1}")) == 0);
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, m, 20,
            "{\"op\":\"add_locators\",\"registration\":1,\"locators\":[\"no-port\"]}");
    CHECK(count(CALL(m, 20, "{\"op\":\"registrars\",\"registration\":1}")) == 0);

    json *l = CALL(m, 30, "{\"op\":\"lease\",\"registration\":1}");
    CHECK(U(json_get(l, "expiration")) == (uint64_t)MIN30 && strcmp(json_str(l, "cookie"), cookie) == 0);
    json_free(l);
    json *er = CALL(m, 30, "{\"op\":\"event_registration\",\"registration\":1}");
    CHECK(U(json_get(er, "sequence")) == 0 && U(at(er, "source", "object")) == 1);
    json_free(er);
    CHECK(is(CALL(m, 30, "{\"op\":\"listener\",\"registration\":1}"), "[104,116,116,112,58,47,47,108,47,49]"));
    CHECK(take_null(CALL(m, 30, "{\"op\":\"set_listener\",\"registration\":1,\"listener\":\"x\"}")));
    CHECK(is(CALL(m, 30, "{\"op\":\"listener\",\"registration\":1}"), "[120]"));
    CHECK(is(CALL(m, 30, "{\"op\":\"registration_of\",\"cookie\":\"%s\"}", cookie), "1"));
    CHECK(take_null(CALL(m, 30, "{\"op\":\"registration_of\",\"cookie\":\"00000000000000000000000000000000\"}")));

    /* Renew (the policy decides) and cancel; then the registration is gone. */
    CHECK(take_num(CALL(m, 40, "{\"op\":\"renew\",\"registration\":1,\"duration\":5000}")) == 5000);
    l = CALL(m, 40, "{\"op\":\"lease\",\"registration\":1}");
    CHECK(U(json_get(l, "expiration")) == 5040);
    json_free(l);
    CHECK(take_null(CALL(m, 50, "{\"op\":\"cancel\",\"registration\":1}")));
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, m, 50, "{\"op\":\"lease\",\"registration\":1}");
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, m, 50, "{\"op\":\"groups\",\"registration\":1}");
    CHECK(take_null(CALL(m, 50, "{\"op\":\"listener\",\"registration\":1}")));
    CHECK(is(CALL(m, 50, "{\"op\":\"registrations\"}"), "[]"));

    /* Expiry: a short lease ends, its registration with it. */
    reg(m, "[]", "[]", 1000, 100);
    CHECK(count(CALL(m, 100, "{\"op\":\"registrations\"}")) == 1);
    bool has = false;
    int64_t when = 0;
    OK(leasehold_machine_poll_timeout(m, &has, &when));
    CHECK(has && when > 100);
    OK(leasehold_machine_handle_timeout(m, 1050));
    CHECK(count(CALL(m, 1050, "{\"op\":\"registrations\"}")) == 1);
    OK(leasehold_machine_handle_timeout(m, 100000));
    CHECK(count(CALL(m, 100000, "{\"op\":\"registrations\"}")) == 0);
    leasehold_machine_free(m);
}

/* ---------- LD.3 / LD.4 ---------- */

static void test_one_event_per_registrar_until_discarded(void) {
    leasehold_machine *m = service();
    uint64_t r = reg(m, "[\"lab\"]", "[]", 60000, 0);
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 1, 30000, 100);
    json *e = next_event(m, 100, false);
    CHECK(event_is(e, 1, false) && U(json_get(e, "sequence")) == 1 && U(at(e, "source", "object")) == r);
    json *hb = json_parse("[104,98]", 8); /* the handback, byte for byte */
    CHECK(e && json_equal(json_get(e, "handback"), hb));
    json_free(hb);
    const json *first = e ? json_get(e, "registrars")->items[0] : NULL;
    CHECK(first && strcmp(json_get(first, "groups")->items[0]->text, "lab") == 0 &&
          strcmp(json_get(first, "locators")->items[0]->text, "10.0.0.1:4160") == 0);
    char eid[32];
    snprintf(eid, sizeof eid, "%s", json_get(e, "event_id")->text);
    CHECK(flag(CALL(m, 100, "{\"op\":\"delivered\",\"event_id\":%s,\"sequence\":1}", eid)));
    CHECK(!flag(CALL(m, 100, "{\"op\":\"delivered\",\"event_id\":%s,\"sequence\":1}", eid))); /* repeated: ignored */
    json_free(e);

    /* More announcements of the same registrar: no more events. A stale one is ignored. */
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 2, 30000, 200);
    announce(m, 1, "[\"other\"]", "10.0.0.1:4160", 1, 30000, 300);
    CHECK(no_event(m, 300));
    json *rs = CALL(m, 300, "{\"op\":\"registrars\",\"registration\":%llu}", (unsigned long long)r);
    CHECK(rs && rs->count == 1 && strcmp(json_str(rs->items[0], "id"), RID(1)) == 0);
    CHECK(rs && rs->count == 1 &&
          strcmp(json_get(rs->items[0], "groups")->items[0]->text, "lab") == 0);
    json_free(rs);
    json *known = CALL(m, 300, "{\"op\":\"registrar\",\"registrar\":\"%s\"}", RID(1));
    CHECK(known && strcmp(json_get(known, "locators")->items[0]->text, "10.0.0.1:4160") == 0);
    json_free(known);
    CHECK(count(CALL(m, 300, "{\"op\":\"discovered\"}")) == 1);

    /* Active discard: a discarded event, and the registrar is eligible again. */
    CHECK(take_null(CALL(m, 400, "{\"op\":\"discard\",\"registration\":%llu,\"registrar\":\"%s\"}",
                       (unsigned long long)r, RID(1))));
    json *d = next_event(m, 400, true);
    CHECK(event_is(d, 1, true) && U(json_get(d, "sequence")) > 1);
    CHECK(is(CALL(m, 400, "{\"op\":\"registrars\",\"registration\":%llu}", (unsigned long long)r), "[]"));
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 4, 30000, 500);
    json *again = next_event(m, 500, true);
    CHECK(event_is(again, 1, false) && U(json_get(again, "sequence")) > U(json_get(d, "sequence")));
    json *er = CALL(m, 500, "{\"op\":\"event_registration\",\"registration\":%llu}", (unsigned long long)r);
    CHECK(U(json_get(er, "sequence")) == U(json_get(again, "sequence")));
    json_free(er);
    json_free(d);
    json_free(again);
    leasehold_machine_free(m);
}

static void test_passive_discards(void) {
    leasehold_machine *m = service();
    uint64_t by_group = reg(m, "[\"lab\"]", "[]", 600000, 0);
    uint64_t by_locator = reg(m, "[]", "[\"10.0.0.1:4160\"]", 600000, 0);
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 1, 30000, 100);
    json *a = next_event(m, 100, true), *b = next_event(m, 100, true);
    CHECK(event_is(a, 1, false) && event_is(b, 1, false));
    json_free(a);
    json_free(b);

    /* Unreachable: only the registration that wants it by group discards it. */
    CHECK(flag(CALL(m, 200, "{\"op\":\"unreachable\",\"registrar\":\"%s\"}", RID(1))));
    json *d = next_event(m, 200, true);
    CHECK(event_is(d, 1, true) && U(at(d, "source", "object")) == by_group);
    json_free(d);
    CHECK(no_event(m, 200));
    CHECK(count(CALL(m, 200, "{\"op\":\"registrars\",\"registration\":%llu}", (unsigned long long)by_group)) == 0);
    CHECK(count(CALL(m, 200, "{\"op\":\"registrars\",\"registration\":%llu}", (unsigned long long)by_locator)) == 1);
    CHECK(!flag(CALL(m, 200, "{\"op\":\"unreachable\",\"registrar\":\"%s\"}", RID(9))));

    /* A registrar's groups no longer of interest: a passive discard. */
    announce(m, 2, "[\"lab\"]", "10.0.0.2:4160", 1, 30000, 300);
    json *g2 = next_event(m, 300, true);
    CHECK(event_is(g2, 2, false));
    json_free(g2);
    announce(m, 2, "[\"kitchen\"]", "10.0.0.2:4160", 2, 30000, 400);
    json *g2d = next_event(m, 400, true);
    CHECK(event_is(g2d, 2, true));
    json_free(g2d);

    /* Silence: announcements stop, and `ttl` later the registrar is discarded. */
    announce(m, 3, "[\"lab\"]", "10.0.0.3:4160", 1, 1000, 500);
    json *g3 = next_event(m, 500, true);
    json_free(g3);
    bool has = false;
    int64_t when = 0;
    OK(leasehold_machine_poll_timeout(m, &has, &when));
    CHECK(has && when <= 1500);
    OK(leasehold_machine_handle_timeout(m, 1499));
    CHECK(no_event(m, 1499));
    OK(leasehold_machine_handle_timeout(m, 1500));
    g3 = next_event(m, 1500, true);
    CHECK(event_is(g3, 3, true));
    json_free(g3);

    /* Group changes (LD.4.1.1): no groups discards what is held by group; back, rediscovers. */
    announce(m, 4, "[\"lab\"]", "10.0.0.4:4160", 1, 60000, 1600);
    json_free(next_event(m, 1600, true));
    CHECK(take_null(CALL(m, 1700, "{\"op\":\"set_groups\",\"registration\":%llu,\"groups\":[]}",
                       (unsigned long long)by_group)));
    json *off = next_event(m, 1700, true);
    CHECK(event_is(off, 4, true));
    CHECK(take_null(CALL(m, 1800, "{\"op\":\"set_groups\",\"registration\":%llu,\"groups\":[\"lab\"]}",
                       (unsigned long long)by_group)));
    json *on = next_event(m, 1800, true);
    CHECK(event_is(on, 4, false) && U(json_get(on, "sequence")) > U(json_get(off, "sequence")));
    json_free(off);
    json_free(on);
    leasehold_machine_free(m);
}

/* ---------- delivery ---------- */

/* A message built from its JSON text, in `enc` (freed by the caller). */
static uint8_t *message(const char *kind, const char *text, int32_t enc, size_t *n) {
    uint8_t *b = NULL;
    *n = 0;
    OK(leasehold_message_transcode(kind, (const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, enc, NULL, &b,
                                   n));
    return b;
}

/* Serves a message of `protocol`; the answer's bytes, freed by the caller. */
static uint8_t *serve(leasehold_machine *m, const char *protocol, const uint8_t *b, size_t n, int32_t enc, int64_t now,
                      size_t *out_n) {
    uint8_t *out = NULL;
    *out_n = 0;
    OK(leasehold_machine_serve(m, "serve", protocol, b, n, enc, now, &out, out_n));
    return out;
}

/* Sends an event reply built from JSON text; whether a report was awaited. */
static bool event_reply(leasehold_machine *m, const char *text, int32_t enc, int64_t now) {
    size_t n = 0, an = 0;
    uint8_t *b = message("EventReply", text, enc, &n);
    uint8_t *ans = serve(m, "event_reply", b, n, enc, now, &an);
    bool awaited = ans && an == 4 && memcmp(ans, "true", 4) == 0;
    leasehold_bytes_free(ans, an);
    leasehold_bytes_free(b, n);
    return awaited;
}

static void test_delivery(void) {
    leasehold_machine *m = service();
    uint64_t r = reg(m, "null", "[]", 600000, 0);
    announce(m, 1, "[\"a\"]", "h:1", 1, 600000, 0);
    json *e = next_event(m, 0, false);
    CHECK(event_is(e, 1, false));
    CHECK(nothing_due(m, 0)); /* the registration's next event waits for the report */
    char eid[32], seq[32];
    snprintf(eid, sizeof eid, "%s", json_get(e, "event_id")->text);
    snprintf(seq, sizeof seq, "%s", json_get(e, "sequence")->text);
    json_free(e);
    /* An indefinite failure: sent again after the back-off (1 s), same number. */
    CHECK(flag(CALL(m, 0,
                    "{\"op\":\"delivery_failed\",\"event_id\":%s,\"sequence\":%s,\"failure\":{\"kind\":\"indefinite\","
                    "\"message\":\"down\"}}",
                    eid, seq)));
    CHECK(nothing_due(m, 999));
    json *again = next_event(m, 1000, false);
    CHECK(again && strcmp(json_get(again, "sequence")->text, seq) == 0);
    json_free(again);
    REFUSED(LEASEHOLD_STATUS_INVALID_ARGUMENT, m, 1000,
            "{\"op\":\"delivery_failed\",\"event_id\":%s,\"sequence\":%s,\"failure\":{\"kind\":\"nothing\"}}", eid, seq);
    /* No report within the delivery time-out (1 min): a failure, sent again after 5 s. */
    OK(leasehold_machine_handle_timeout(m, 61000));
    CHECK(nothing_due(m, 65999));
    json *late = next_event(m, 66000, false);
    CHECK(late && strcmp(json_get(late, "sequence")->text, seq) == 0);
    json_free(late);
    /* The listener's answer as wire bytes: received. */
    char reply[256];
    snprintf(reply, sizeof reply, "{\"v\":1,\"event_id\":\"%s\",\"sequence\":\"%s\",\"body\":{\"op\":\"received\"}}", eid,
             seq);
    CHECK(event_reply(m, reply, LEASEHOLD_ENCODING_JSON, 66000));
    CHECK(!event_reply(m, reply, LEASEHOLD_ENCODING_BINARY, 66000)); /* answered already */
    uint8_t *out = NULL;
    size_t on = 0;
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_machine_serve(m, "serve", "event_reply", (const uint8_t *)"{", 1,
                                                           LEASEHOLD_ENCODING_JSON, 66000, &out, &on));
    /* An unknown-event answer cancels the registration (LD.3.1). */
    announce(m, 2, "[\"a\"]", "h:2", 1, 600000, 67000);
    json *e2 = next_event(m, 67000, false);
    CHECK(event_is(e2, 2, false));
    snprintf(reply, sizeof reply, "{\"v\":1,\"event_id\":\"%s\",\"sequence\":\"%s\",\"body\":{\"op\":\"unknown_event\"}}",
             json_get(e2, "event_id")->text, json_get(e2, "sequence")->text);
    json_free(e2);
    CHECK(event_reply(m, reply, LEASEHOLD_ENCODING_BINARY, 67000));
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, m, 67000, "{\"op\":\"lease\",\"registration\":%llu}", (unsigned long long)r);
    /* So does a bad object. */
    uint64_t r2 = reg(m, "null", "[]", 600000, 68000);
    json *e3 = next_event(m, 68000, false);
    CHECK(e3 && U(at(e3, "source", "object")) == r2 && json_get(e3, "registrars")->count == 2);
    CHECK(flag(CALL(m, 68000,
                    "{\"op\":\"delivery_failed\",\"event_id\":%s,\"sequence\":%s,\"failure\":{\"kind\":\"bad_object\","
                    "\"message\":\"broken\"}}",
                    json_get(e3, "event_id")->text, json_get(e3, "sequence")->text)));
    json_free(e3);
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, m, 68000, "{\"op\":\"lease\",\"registration\":%llu}", (unsigned long long)r2);
    leasehold_machine_free(m);
}

/* ---------- unicast ---------- */

static json *next_probe(leasehold_machine *m, int64_t now) {
    bool found = false;
    char *text = NULL;
    OK(leasehold_machine_poll_transmit(m, now, &found, &text));
    if (!found) return NULL;
    json *p = json_parse(text, strlen(text));
    leasehold_string_free(text);
    return p;
}

static void test_unicast(void) {
    leasehold_machine *m = service();
    uint64_t r = reg(m, "[]", "[\"Reg.Example:4160\"]", 600000, 0);
    json *p = next_probe(m, 0);
    CHECK(p && U(json_get(p, "port")) == 4160 && strcmp(json_str(p, "host"), "reg.example") == 0 &&
          strcmp(json_str(p, "locator"), "reg.example:4160") == 0);
    uint64_t first = U(json_get(p, "id"));
    json_free(p);
    CHECK(next_probe(m, 0) == NULL);
    /* A failure: tried again after the back-off. */
    CHECK(flag(CALL(m, 10, "{\"op\":\"unicast_failed\",\"request\":%llu,\"reason\":\"refused\"}",
                    (unsigned long long)first)));
    CHECK(next_probe(m, 500) == NULL);
    p = next_probe(m, 1010);
    uint64_t second = U(json_get(p, "id"));
    CHECK(p && second != first);
    json_free(p);
    /* Found: the registration (which wants the locator) discovers it. */
    const char *found = "{\"op\":\"unicast_found\",\"request\":%llu,\"found\":{\"registrar\":\"%s\",\"groups\":[\"x\"]}}";
    CHECK(flag(CALL(m, 1020, found, (unsigned long long)second, RID(5))));
    CHECK(!flag(CALL(m, 1020, found, (unsigned long long)second, RID(5)))); /* answered already */
    json *e = next_event(m, 1020, true);
    CHECK(event_is(e, 5, false) && U(at(e, "source", "object")) == r);
    CHECK(e && strcmp(json_get(json_get(e, "registrars")->items[0], "locators")->items[0]->text,
                      "reg.example:4160") == 0);
    json_free(e);

    /* A probe answered with an announcement datagram (built as JSON, sent as bytes). */
    CHECK(take_null(CALL(m, 1100, "{\"op\":\"add_locators\",\"registration\":%llu,\"locators\":[\"other.example:4160\"]}",
                       (unsigned long long)r)));
    p = next_probe(m, 1100);
    CHECK(p && strcmp(json_str(p, "locator"), "other.example:4160") == 0);
    char a[256];
    snprintf(a, sizeof a,
             "{\"registrar\":\"%s\",\"groups\":[],\"locator\":\"other.example:4160\",\"sequence\":1,\"ttl\":30000}",
             RID(6));
    size_t dn = 0;
    uint8_t *dg = message("Announcement", a, LEASEHOLD_ENCODING_BINARY, &dn);
    char in[2048];
    int k = snprintf(in, sizeof in, "{\"op\":\"unicast_datagram\",\"request\":%s,\"datagram\":[", json_get(p, "id")->text);
    for (size_t i = 0; i < dn; i++) k += snprintf(in + k, sizeof in - (size_t)k, "%s%u", i ? "," : "", dg[i]);
    snprintf(in + k, sizeof in - (size_t)k, "]}");
    json_free(p);
    CHECK(flag(CALL(m, 1100, "%s", in)));
    json *e6 = next_event(m, 1100, true);
    CHECK(event_is(e6, 6, false));
    json_free(e6);
    leasehold_bytes_free(dg, dn);
    /* An announcement datagram heard: the service's set grows (nobody here wants it). */
    snprintf(a, sizeof a, "{\"registrar\":\"%s\",\"groups\":[\"z\"],\"locator\":\"10.1.1.1:1\",\"sequence\":1,\"ttl\":30000}",
             RID(7));
    dg = message("Announcement", a, LEASEHOLD_ENCODING_BINARY, &dn);
    k = snprintf(in, sizeof in, "{\"op\":\"datagram\",\"datagram\":[");
    for (size_t i = 0; i < dn; i++) k += snprintf(in + k, sizeof in - (size_t)k, "%s%u", i ? "," : "", dg[i]);
    snprintf(in + k, sizeof in - (size_t)k, "]}");
    CHECK(take_null(CALL(m, 1200, "%s", in)));
    CHECK(count(CALL(m, 1200, "{\"op\":\"discovered\"}")) == 3);
    REFUSED(LEASEHOLD_STATUS_DECODE, m, 1200, "{\"op\":\"datagram\",\"datagram\":[%u,%u,%u]}", dg[0], dg[1], dg[2]);
    leasehold_bytes_free(dg, dn);
    CHECK(no_event(m, 1200));
    leasehold_machine_free(m);
}

/* ---------- the wire protocols from a C client ---------- */

/* Sends a request (JSON text) as `enc` bytes; the reply as parsed JSON (freed by the caller). */
static json *ask(leasehold_machine *m, const char *protocol, const char *kind, const char *reply_kind, int32_t enc,
                 int64_t now, const char *text) {
    size_t n = 0, rn = 0, jn = 0;
    uint8_t *b = message(kind, text, enc, &n);
    uint8_t *rep = serve(m, protocol, b, n, enc, now, &rn);
    uint8_t *j = NULL;
    OK(leasehold_message_transcode(reply_kind, rep, rn, enc, LEASEHOLD_ENCODING_JSON, NULL, &j, &jn));
    json *v = j ? json_parse((const char *)j, jn) : NULL;
    leasehold_bytes_free(j, jn);
    leasehold_bytes_free(rep, rn);
    leasehold_bytes_free(b, n);
    return v;
}

static const char *op_of(const json *reply) { return json_str(json_get(reply, "body"), "op"); }

static void client_session(int32_t enc) {
    leasehold_machine *m = service();
    const char *D = "DiscoveryRequest", *DR = "DiscoveryReply";
    json *rep = ask(m, "discovery", D, DR, enc, 900,
                    "{\"v\":1,\"id\":\"1\",\"body\":{\"op\":\"register\",\"groups\":[\"lab\"],\"locators\":[],"
                    "\"handback\":\"6362\",\"duration\":\"60000\"}}");
    CHECK(rep && strcmp(op_of(rep), "registered") == 0 && strcmp(json_str(rep, "landlord"), "0000000000000007") == 0);
    CHECK(rep && strcmp(json_str(json_get(rep, "body"), "duration"), "60000") == 0);
    char cookie[40], q[512];
    snprintf(cookie, sizeof cookie, "%s", rep ? json_str(json_get(rep, "body"), "cookie") : "");
    json_free(rep);
    snprintf(q, sizeof q, "{\"v\":1,\"id\":\"2\",\"body\":{\"op\":\"add_groups\",\"cookie\":\"%s\",\"groups\":[\"printers\"]}}",
             cookie);
    rep = ask(m, "discovery", D, DR, enc, 900, q);
    CHECK(rep && strcmp(op_of(rep), "done") == 0);
    json_free(rep);
    snprintf(q, sizeof q, "{\"v\":1,\"id\":\"3\",\"body\":{\"op\":\"get_groups\",\"cookie\":\"%s\"}}", cookie);
    rep = ask(m, "discovery", D, DR, enc, 900, q);
    CHECK(rep && strcmp(op_of(rep), "groups") == 0 && json_get(json_get(rep, "body"), "groups")->count == 2);
    json_free(rep);
    /* An event to the client's listener, read as a wire message. */
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 1, 30000, 950);
    json *e = next_event(m, 950, true);
    CHECK(event_is(e, 1, false));
    json_free(e);
    /* The lease protocol: renew, then cancel; afterwards the cookie is unknown. */
    snprintf(q, sizeof q, "{\"v\":1,\"id\":\"4\",\"body\":{\"op\":\"renew\",\"cookie\":\"%s\",\"duration\":\"5000\"}}",
             cookie);
    rep = ask(m, "lease", "Request", "Reply", enc, 1000, q);
    CHECK(rep && strcmp(op_of(rep), "renewed") == 0);
    json_free(rep);
    json *l = CALL(m, 1000, "{\"op\":\"lease\",\"registration\":1}");
    CHECK(U(json_get(l, "expiration")) == 6000);
    json_free(l);
    snprintf(q, sizeof q, "{\"v\":1,\"id\":\"5\",\"body\":{\"op\":\"cancel\",\"cookie\":\"%s\"}}", cookie);
    rep = ask(m, "lease", "Request", "Reply", enc, 1100, q);
    CHECK(rep && strcmp(op_of(rep), "cancelled") == 0);
    json_free(rep);
    snprintf(q, sizeof q, "{\"v\":1,\"id\":\"6\",\"body\":{\"op\":\"get_registrars\",\"cookie\":\"%s\"}}", cookie);
    rep = ask(m, "discovery", D, DR, enc, 1100, q);
    CHECK(rep && strcmp(op_of(rep), "error") == 0 && U(at(rep, "body", "code")) == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    json_free(rep);
    /* Garbage gets an error reply with id 0 (DECODE). */
    size_t rn = 0, jn = 0;
    uint8_t *bad = serve(m, "discovery", (const uint8_t *)"\x01\x02", 2, enc, 1100, &rn), *j = NULL;
    OK(leasehold_message_transcode(DR, bad, rn, enc, LEASEHOLD_ENCODING_JSON, NULL, &j, &jn));
    json *v = j ? json_parse((const char *)j, jn) : NULL;
    CHECK(v && U(json_get(v, "id")) == 0 && U(at(v, "body", "code")) == LEASEHOLD_STATUS_DECODE);
    json_free(v);
    leasehold_bytes_free(j, jn);
    leasehold_bytes_free(bad, rn);
    /* A registration made over the wire gets the listener given to serve's input. */
    json *out = CALL(m, 1200,
                     "{\"op\":\"serve\",\"protocol\":\"discovery\",\"encoding\":\"json\",\"listener\":\"http://c/\","
                     "\"message\":\"{\\\"v\\\":1,\\\"id\\\":\\\"7\\\",\\\"body\\\":{\\\"op\\\":\\\"register\\\",\\\"groups\\\":null,"
                     "\\\"locators\\\":[],\\\"handback\\\":\\\"\\\",\\\"duration\\\":\\\"-1\\\"}}\"}");
    CHECK(out && out->kind == J_ARRAY && out->count > 10);
    json_free(out);
    CHECK(is(CALL(m, 1200, "{\"op\":\"listener\",\"registration\":2}"), "[104,116,116,112,58,47,47,99,47]"));
    leasehold_machine_free(m);
}

static void test_client(void) {
    client_session(LEASEHOLD_ENCODING_JSON);
    client_session(LEASEHOLD_ENCODING_BINARY);
    leasehold_machine *m = service();
    uint8_t *out = NULL;
    size_t n = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_machine_serve(m, "serve", "nothing", (const uint8_t *)"{}", 2, LEASEHOLD_ENCODING_JSON, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_serve(m, "serve", "lease", (const uint8_t *)"{}", 2, 9, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_machine_serve(m, NULL, "lease", (const uint8_t *)"{}", 2, LEASEHOLD_ENCODING_JSON, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, /* a discovery service's serve names its protocol */
          leasehold_machine_serve(m, "serve", NULL, (const uint8_t *)"{}", 2, LEASEHOLD_ENCODING_JSON, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_machine_serve(m, "serve", "lease", NULL, 2, LEASEHOLD_ENCODING_JSON, 0, &out, &n));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_machine_serve(m, "serve", "lease", (const uint8_t *)"{}", 2, LEASEHOLD_ENCODING_JSON, 0, NULL, &n));
    CHECK(out == NULL);
    leasehold_machine_free(m);
}

/* ---------- snapshot and restore ---------- */

static void test_snapshot_restore(void) {
    const char *o = "{\"id\": 7, \"restore_jump\": 0}";
    leasehold_machine *m = service_with(o);
    uint64_t r = reg(m, "[\"lab\"]", "[]", 600000, 0);
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 1, 600000, 10);
    json *e1 = next_event(m, 10, true);
    char *snap = NULL;
    OK(leasehold_machine_snapshot(m, 100, &snap));
    CHECK(snap && strstr(snap, "\"registrations\"") != NULL);
    leasehold_machine *t = NULL;
    OK(leasehold_machine_restore(KIND, o, strlen(o), snap, strlen(snap), 100, &t));
    CHECK(count(CALL(t, 100, "{\"op\":\"registrars\",\"registration\":%llu}", (unsigned long long)r)) == 1);
    CHECK(is(CALL(t, 100, "{\"op\":\"groups\",\"registration\":%llu}", (unsigned long long)r), "[\"lab\"]"));
    /* Both go on alike. */
    CHECK(take_null(CALL(m, 200, "{\"op\":\"discard\",\"registration\":1,\"registrar\":\"%s\"}", RID(1))));
    CHECK(take_null(CALL(t, 200, "{\"op\":\"discard\",\"registration\":1,\"registrar\":\"%s\"}", RID(1))));
    json *a = next_event(m, 200, true), *b = next_event(t, 200, true);
    CHECK(a && b && U(json_get(a, "sequence")) == U(json_get(b, "sequence")) &&
          U(json_get(a, "sequence")) == U(json_get(e1, "sequence")) + 1);
    json_free(a);
    json_free(b);
    json_free(e1);
    /* Another id, or a damaged snapshot, is refused. */
    leasehold_machine *u = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_machine_restore(KIND, "{\"id\": 8}", 9, snap, strlen(snap), 100, &u));
    CHECK(leasehold_machine_restore(KIND, o, strlen(o), snap, strlen(snap) / 2, 100, &u) != LEASEHOLD_STATUS_OK);
    CHECK(u == NULL);
    leasehold_string_free(snap);
    leasehold_machine_free(t);
    leasehold_machine_free(m);
}

/* ---------- durability ---------- */

static leasehold_status open_dir(const char *dir, const char *options, int64_t now, leasehold_machine **out,
                                 leasehold_recovery *info) {
    return leasehold_machine_open_dir(KIND, dir, strlen(dir), options, strlen(options), SEED, sizeof SEED, now, out,
                                      info);
}

static uint64_t commit(leasehold_machine *m) {
    uint64_t d = 0;
    OK(leasehold_machine_commit(m, &d));
    return d;
}

static void test_durability(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    const char *o = "{\"id\": 7, \"store\": {\"segment_bytes\": 4096, \"min_compact_bytes\": 1024}}";
    leasehold_machine *m = NULL, *m2 = NULL;
    leasehold_recovery info;
    memset(&info, 0, sizeof info);
    OK(open_dir(dir, o, 0, &m, &info));
    CHECK(m && info.created && info.leases == 0);
    bool durable = false;
    OK(leasehold_machine_is_durable(m, &durable));
    CHECK(durable);
    /* A directory in use is refused. */
    CHECK(open_dir(dir, o, 0, &m2, NULL) == LEASEHOLD_STATUS_IO && m2 == NULL);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, open_dir(dir, "{\"id\": 7, \"store\": {\"segment_bytes\": 0}}", 0, &m2, NULL));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, open_dir(dir, "{\"id\": 7, \"store\": {\"colour\": 1}}", 0, &m2, NULL));

    uint64_t before = 0, seq = 0;
    OK(leasehold_machine_journal_seq(m, &before));
    json *r = CALL(m, 1000,
                   "{\"op\":\"register\",\"groups\":[\"lab\"],\"locators\":[],\"handback\":\"a\",\"lease_duration\":600000,"
                   "\"listener\":\"http://a\"}");
    OK(leasehold_machine_journal_seq(m, &seq));
    CHECK(seq > before);
    announce(m, 1, "[\"lab\"]", "10.0.0.1:4160", 1, 600000, 2000);
    json *e = next_event(m, 2000, false); /* in flight at the "crash" */
    uint64_t d = commit(m);
    OK(leasehold_machine_journal_seq(m, &seq));
    CHECK(d == seq && commit(m) == d);
    reg(m, "null", "[]", 600000, 3000); /* not committed: lost with the process */
    leasehold_machine_free(m);

    /* Reopened on a clock restarted from 0: the same registration, cookie, time left, event. */
    m = NULL;
    OK(open_dir(dir, o, 0, &m, &info));
    CHECK(m && !info.created && info.leases == 1 && info.replayed > 0 && info.last_seq >= d);
    json *l = CALL(m, 0, "{\"op\":\"lease\",\"registration\":1}");
    CHECK(l && strcmp(json_str(l, "cookie"), at(r, "lease", "cookie")->text) == 0);
    CHECK(U(json_get(l, "expiration")) == 600000 - 1000); /* the same time left */
    json_free(l);
    CHECK(is(CALL(m, 0, "{\"op\":\"listener\",\"registration\":1}"), "[104,116,116,112,58,47,47,97]"));
    /* In flight at the crash: delivered again (after its delivery time-out), the same number. */
    json *again = NULL;
    for (int64_t t = 0; t <= 120000 && !again; t += 1000) again = next_event(m, t, true);
    CHECK(again && e && U(json_get(again, "sequence")) == U(json_get(e, "sequence")));
    json_free(again);
    json_free(e);
    json_free(r);
    OK(leasehold_machine_compact(m, &d));
    leasehold_machine_free(m);
    /* Another id is refused; the store is untouched. */
    m = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, open_dir(dir, "{\"id\": 8}", 0, &m, &info));
    CHECK(m == NULL);
    OK(open_dir(dir, OPTIONS, 0, &m, &info));
    CHECK(info.leases == 1 && info.replayed == 0);
    leasehold_machine_free(m);
    store_rmdir(dir);

    /* In memory: nothing to commit. */
    m = service();
    OK(leasehold_machine_journal_seq(m, &seq));
    CHECK(seq == 0 && commit(m) == 0);
    OK(leasehold_machine_is_durable(m, &durable));
    CHECK(!durable);
    leasehold_machine_free(m);
}

/* The host's own storage: files in memory. */
enum { DISK_FILES = 16 };
struct disk {
    char name[DISK_FILES][40];
    uint8_t *data[DISK_FILES];
    size_t len[DISK_FILES], synced[DISK_FILES];
    int n, appends, syncs;
};

static int disk_find(struct disk *d, const char *name, bool create) {
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->name[i], name) == 0) return i;
    if (!create || d->n == DISK_FILES) return -1;
    snprintf(d->name[d->n], sizeof d->name[0], "%s", name);
    d->data[d->n] = NULL;
    d->len[d->n] = d->synced[d->n] = 0;
    return d->n++;
}

static int32_t disk_append(void *u, const char *file, const uint8_t *data, size_t len) {
    struct disk *d = (struct disk *)u;
    int i = disk_find(d, file, true);
    if (i < 0) return -1;
    d->data[i] = (uint8_t *)realloc(d->data[i], d->len[i] + len + 1);
    if (len) memcpy(d->data[i] + d->len[i], data, len);
    d->len[i] += len;
    d->appends++;
    return 0;
}

static int32_t disk_sync(void *u, const char *file) {
    struct disk *d = (struct disk *)u;
    int i = disk_find(d, file, false);
    if (i >= 0) d->synced[i] = d->len[i];
    d->syncs++;
    return 0;
}

static int32_t disk_replace(void *u, const char *file, const uint8_t *data, size_t len) {
    struct disk *d = (struct disk *)u;
    int i = disk_find(d, file, true);
    if (i < 0) return -1;
    d->len[i] = 0;
    disk_append(u, file, data, len);
    d->synced[i] = d->len[i];
    return 0;
}

static int32_t disk_truncate(void *u, const char *file, uint64_t len) {
    struct disk *d = (struct disk *)u;
    int i = disk_find(d, file, false);
    if (i >= 0 && len < d->len[i]) d->len[i] = d->synced[i] = (size_t)len;
    return 0;
}

static int32_t disk_remove(void *u, const char *file) {
    struct disk *d = (struct disk *)u;
    int i = disk_find(d, file, false);
    if (i < 0) return 0;
    free(d->data[i]);
    d->n--;
    if (i != d->n) {
        memcpy(d->name[i], d->name[d->n], sizeof d->name[0]);
        d->data[i] = d->data[d->n];
        d->len[i] = d->len[d->n];
        d->synced[i] = d->synced[d->n];
    }
    return 0;
}

static leasehold_machine *open_disk(struct disk *d, leasehold_recovery *info) {
    leasehold_store_io io;
    io.user_data = d;
    io.append = disk_append;
    io.sync = disk_sync;
    io.replace = disk_replace;
    io.truncate = disk_truncate;
    io.remove = disk_remove;
    leasehold_store_file files[DISK_FILES];
    for (int i = 0; i < d->n; i++) {
        files[i].name = d->name[i];
        files[i].name_len = strlen(d->name[i]);
        files[i].data = d->data[i];
        files[i].len = d->synced[i]; /* what survived */
    }
    leasehold_machine *m = NULL;
    OK(leasehold_machine_open_io(KIND, &io, files, (size_t)d->n, OPTIONS, strlen(OPTIONS), SEED, sizeof SEED, 0, &m,
                                 info));
    io.sync = NULL;
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_open_io(KIND, &io, files, (size_t)d->n, OPTIONS,
                                                                   strlen(OPTIONS), SEED, sizeof SEED, 0, NULL, NULL));
    return m;
}

static void test_open_io(void) {
    struct disk d;
    memset(&d, 0, sizeof d);
    leasehold_recovery info;
    leasehold_machine *m = open_disk(&d, &info);
    CHECK(m && info.created && d.n == 1); /* the first snapshot */
    int appends = d.appends;
    reg(m, "null", "[]", 600000, 0);
    CHECK(d.appends == appends); /* nothing written before a commit */
    uint64_t seq = 0;
    OK(leasehold_machine_journal_seq(m, &seq));
    CHECK(commit(m) == seq && d.appends > appends && d.syncs > 0);
    leasehold_machine_free(m);
    m = open_disk(&d, &info);
    CHECK(m && !info.created && info.leases == 1);
    CHECK(is(CALL(m, 0, "{\"op\":\"registrations\"}"), "[1]"));
    leasehold_machine_free(m);
    for (int i = 0; i < d.n; i++) free(d.data[i]);
}

/* ---------- hostile and NULL arguments ---------- */

static void test_discovery_hostile(void) {
    leasehold_machine *m = service();
    char *out = NULL;
    const char *ok = "{\"op\":\"id\"}";
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_handle(NULL, ok, strlen(ok), 0, &out));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_handle(m, NULL, 3, 0, &out));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_handle(m, ok, strlen(ok), 0, NULL));
    CHECK(out == NULL);
    const char *bad[] = {"",
                         "{",
                         "[]",
                         "{\"op\":\"nothing\"}",
                         "{\"registration\":1}",
                         "{\"op\":\"lease\",\"registration\":1,\"extra\":1}",
                         "{\"op\":\"lease\",\"registration\":-1}",
                         "{\"op\":\"lease\",\"registration\":\"1\"}",
                         "{\"op\":\"discard\",\"registration\":1,\"registrar\":\"xyz\"}",
                         "{\"op\":\"register\",\"locators\":[],\"handback\":[],\"lease_duration\":1}",
                         "{\"op\":\"register\",\"groups\":[],\"locators\":[\"no-port\"],\"handback\":[],\"lease_duration\":1}",
                         "{\"op\":\"register\",\"groups\":[],\"locators\":[],\"handback\":[256],\"lease_duration\":1}",
                         "{\"op\":\"register\",\"groups\":[],\"locators\":[],\"handback\":[],\"lease_duration\":-5}",
                         "{\"op\":\"delivered\",\"event_id\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        leasehold_status st = leasehold_machine_handle(m, bad[i], strlen(bad[i]), 0, &out);
        CHECK(st == LEASEHOLD_STATUS_INVALID_ARGUMENT && out == NULL);
        if (st != LEASEHOLD_STATUS_INVALID_ARGUMENT) fprintf(stderr, "  input %s -> %s\n", bad[i], leasehold_status_name(st));
    }
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8, leasehold_machine_handle(m, "{\"op\":\"\xff\"}", 9, 0, &out));
    REFUSED(LEASEHOLD_STATUS_UNKNOWN_LEASE, m, 0, "{\"op\":\"lease\",\"registration\":99}");
    bool has = true;
    int64_t when = 0;
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_poll_timeout(m, NULL, &when));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_poll_timeout(NULL, &has, &when));
    OK(leasehold_machine_poll_timeout(m, &has, &when));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_handle_timeout(NULL, 0));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_poll_event(m, 0, NULL, &out));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_poll_transmit(m, 0, &has, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_snapshot(NULL, 0, &out));
    const char *kind = NULL;
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_machine_kind(NULL, &kind));
    /* Random and mutated bytes to every protocol: error replies or DECODE, never a crash. */
    uint64_t rng = 0x5eed;
    size_t n = 0;
    uint8_t *good = message("DiscoveryRequest",
                            "{\"v\":1,\"id\":\"1\",\"body\":{\"op\":\"register\",\"groups\":[\"lab\"],\"locators\":[],"
                            "\"handback\":\"\",\"duration\":\"60000\"}}",
                            LEASEHOLD_ENCODING_BINARY, &n);
    int answered = 0;
    for (int i = 0; i < 300; i++) {
        uint8_t buf[128];
        size_t len = n < sizeof buf ? n : sizeof buf;
        memcpy(buf, good, len);
        buf[store_rand(&rng) % len] ^= (uint8_t)(1u + store_rand(&rng) % 255);
        if (i % 3 == 0) len = store_rand(&rng) % len;
        const char *protocols[] = {"lease", "discovery", "event_reply"};
        uint8_t *rep = NULL;
        size_t rn = 0;
        leasehold_status st = leasehold_machine_serve(m, "serve", protocols[i % 3], buf, len, LEASEHOLD_ENCODING_BINARY, i, &rep,
                                                      &rn);
        answered += st == LEASEHOLD_STATUS_OK || st == LEASEHOLD_STATUS_DECODE;
        leasehold_bytes_free(rep, rn);
    }
    CHECK(answered == 300);
    leasehold_bytes_free(good, n);
    leasehold_machine_free(m);
}

void test_discovery(void) {
    test_options();
    test_register_and_calls();
    test_one_event_per_registrar_until_discarded();
    test_passive_discards();
    test_delivery();
    test_unicast();
    test_client();
    test_snapshot_restore();
    test_durability();
    test_open_io();
    test_discovery_hostile();
}
