/* The lookup discovery service (seed 003, LD) through the C API, in virtual time: every
 * operation; the LD.3/LD.4 semantics a C user relies on (one discovered event per registrar
 * until it is discarded, an active discard makes it eligible again, passive discards only for
 * registrations that want it by group, events carry the handback and strictly increasing
 * sequence numbers, an expired or cancelled registration answers UNKNOWN_LEASE); delivery
 * reports and retries; unicast probes; lease renew and cancel over the landlord protocol; the
 * discovery wire protocol from a C client; snapshot and restore; the driver and callbacks that
 * call back in (or free the service); durability in a directory and on the host's own storage
 * (reopen keeps registrations, cookies, event ids and sequence numbers; the driver commits
 * before any callback runs). The shared vectors are checked in test_vectors.c. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "check.h"
#include "store_util.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {3, 1, 4, 1, 5};
enum { SVC_ID = 7 };
static const int64_t MIN30 = 30 * 60 * 1000;

static leasehold_text T(const char *s) {
    leasehold_text t;
    t.ptr = s;
    t.len = s ? strlen(s) : 0;
    return t;
}

static leasehold_groups NAMES(const leasehold_text *names, size_t count) {
    leasehold_groups g;
    g.all = false;
    g.names = names;
    g.count = count;
    return g;
}

static leasehold_groups ALL(void) {
    leasehold_groups g;
    g.all = true;
    g.names = NULL;
    g.count = 0;
    return g;
}

static leasehold_registrar_id RID(uint8_t n) {
    leasehold_registrar_id id;
    memset(&id, 0, sizeof id);
    id.bytes[0] = 0xab;
    id.bytes[15] = n;
    return id;
}

static bool rid_is(leasehold_registrar_id id, uint8_t n) {
    leasehold_registrar_id want = RID(n);
    return memcmp(id.bytes, want.bytes, 16) == 0;
}

static bool text_eq(const leasehold_text *t, const char *s) {
    return t->len == strlen(s) && memcmp(t->ptr, s, t->len) == 0 && t->ptr[t->len] == '\0';
}

static leasehold_discovery_config *config(void) {
    leasehold_discovery_config *c = NULL;
    OK(leasehold_discovery_config_new(SVC_ID, SEED, sizeof SEED, &c));
    return c;
}

static leasehold_discovery_service *service(void) {
    leasehold_discovery_config *c = config();
    leasehold_discovery_service *s = NULL;
    OK(leasehold_discovery_service_new(c, &s));
    leasehold_discovery_config_free(c);
    return s;
}

static leasehold_discovery_registration reg(leasehold_discovery_service *s, leasehold_groups g,
                                            const char *locator, const char *handback, size_t hb_len,
                                            int64_t duration, int64_t now) {
    leasehold_discovery_registration r;
    memset(&r, 0, sizeof r);
    leasehold_text l = T(locator);
    OK(leasehold_discovery_service_register(s, g, locator ? &l : NULL, locator ? 1 : 0,
                                            (const uint8_t *)handback, hb_len, duration, now, &r));
    return r;
}

/* A registrar announces itself in one group (none for NULL) at `locator`. */
static void announce(leasehold_discovery_service *s, uint8_t rid, const char *group, const char *locator,
                     uint64_t seq, int64_t ttl, int64_t now) {
    leasehold_announcement a;
    memset(&a, 0, sizeof a);
    leasehold_text g = T(group);
    a.registrar = RID(rid);
    a.groups.items = group ? &g : NULL;
    a.groups.count = group ? 1 : 0;
    a.locator = T(locator);
    a.sequence = seq;
    a.ttl = ttl;
    OK(leasehold_discovery_service_handle_announcement(s, &a, now));
}

/* What a test looks at in an event. */
struct ev {
    bool found;
    uint64_t event_id, sequence, object;
    bool discarded;
    size_t count;
    leasehold_registrar_id first;
    uint8_t handback[16];
    size_t handback_len;
};

static struct ev copy_event(const leasehold_discovery_event *e) {
    struct ev v;
    memset(&v, 0, sizeof v);
    v.found = true;
    v.event_id = e->event_id;
    v.sequence = e->sequence;
    v.object = e->source.object;
    v.discarded = e->discarded;
    v.count = e->registrars.count;
    if (e->registrars.count > 0) v.first = e->registrars.items[0].id;
    v.handback_len = e->handback_len < sizeof v.handback ? e->handback_len : sizeof v.handback;
    if (v.handback_len) memcpy(v.handback, e->handback, v.handback_len);
    return v;
}

/* The next event at `now` (if any), reported delivered when `deliver`. */
static struct ev next_event(leasehold_discovery_service *s, int64_t now, bool deliver) {
    leasehold_discovery_event e;
    memset(&e, 0, sizeof e);
    bool found = false;
    struct ev v;
    memset(&v, 0, sizeof v);
    OK(leasehold_discovery_service_poll_event(s, now, &e, &found));
    if (!found) return v;
    v = copy_event(&e);
    CHECK(e.source.service == SVC_ID);
    leasehold_discovery_event_clear(&e);
    CHECK(e.registrars.items == NULL && e.handback == NULL && e.registrars.count == 0);
    if (deliver) {
        bool awaited = false;
        OK(leasehold_discovery_service_delivered(s, v.event_id, v.sequence, now, &awaited));
        CHECK(awaited);
    }
    return v;
}

static size_t registrar_count(leasehold_discovery_service *s, uint64_t r, int64_t now) {
    leasehold_registrar_list l;
    memset(&l, 0, sizeof l);
    OK(leasehold_discovery_service_registrars(s, r, now, &l));
    size_t n = l.count;
    leasehold_registrar_list_clear(&l);
    return n;
}

/* ---------- configuration, register, a registration's methods ---------- */

static void test_config(void) {
    leasehold_discovery_config *c = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_config_new(1, SEED, 3, &c));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_config_new(1, NULL, 32, &c));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_config_set_restore_jump(NULL, 0));
    c = config();
    leasehold_policy *p = NULL;
    OK(leasehold_policy_new_bounded(5000, 2000, &p));
    OK(leasehold_discovery_config_set_lease_policy(c, p));
    leasehold_policy_free(p);
    leasehold_limits lim;
    OK(leasehold_limits_default(&lim));
    lim.max_batch = 1; /* one name, one locator per set */
    OK(leasehold_discovery_config_set_landlord(c, 0, &lim));
    OK(leasehold_discovery_config_set_registrars(c, 2, 60000));
    OK(leasehold_discovery_config_set_restore_jump(c, 0));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_config_set_store(c, 0, 0));
    OK(leasehold_discovery_config_set_store(c, 4096, 1024));
    /* A bad schedule is refused when the service is made. */
    int64_t bad[] = {1000, 0};
    OK(leasehold_discovery_config_set_event_retry(c, bad, 2, 1000));
    leasehold_discovery_service *s = NULL;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_service_new(c, &s));
    CHECK(s == NULL);
    int64_t good[] = {10, 20};
    OK(leasehold_discovery_config_set_event_retry(c, good, 2, 1000));
    OK(leasehold_discovery_config_set_unicast_retry(c, good, 2, 500));
    OK(leasehold_discovery_service_new(c, &s));
    leasehold_discovery_config_free(c);
    uint64_t id = 0;
    OK(leasehold_discovery_service_id(s, &id));
    CHECK(id == SVC_ID);
    /* The policy in force: ANY gets the default 2000, more than 5000 gets 5000. */
    leasehold_discovery_registration r = reg(s, NAMES(NULL, 0), NULL, NULL, 0, LEASEHOLD_ANY, 100);
    CHECK(r.lease.expiration == 2100);
    r = reg(s, NAMES(NULL, 0), NULL, NULL, 0, 60000, 100);
    CHECK(r.lease.expiration == 5100);
    /* The limits: two locators in one set are too many. */
    leasehold_text two[] = {T("a.example:1"), T("b.example:1")};
    leasehold_discovery_registration none;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_register(s, ALL(), two, 2, NULL, 0, 1000, 100, &none));
    /* The schedules: a failed probe is tried again 10 ms later, a failed event too. */
    leasehold_discovery_registration u = reg(s, NAMES(NULL, 0), "a.example:1", NULL, 0, 60000, 100);
    leasehold_unicast_request p1;
    bool found = false;
    OK(leasehold_discovery_service_poll_transmit(s, 100, &p1, &found));
    CHECK(found);
    OK(leasehold_discovery_service_unicast_failed(s, p1.id, 100, NULL));
    leasehold_unicast_request_clear(&p1);
    OK(leasehold_discovery_service_poll_transmit(s, 109, &p1, &found));
    CHECK(!found);
    OK(leasehold_discovery_service_poll_transmit(s, 110, &p1, &found));
    CHECK(found);
    leasehold_text x = T("x");
    OK(leasehold_discovery_service_unicast_found(s, p1.id, RID(9), &x, 1, 110, NULL));
    leasehold_unicast_request_clear(&p1);
    struct ev e = next_event(s, 110, false);
    CHECK(e.found && e.object == u.registration);
    OK(leasehold_discovery_service_delivery_failed(s, e.event_id, e.sequence, LEASEHOLD_DELIVERY_INDEFINITE, NULL, 0,
                                                   110, NULL));
    CHECK(!next_event(s, 119, false).found);
    CHECK(next_event(s, 120, true).sequence == e.sequence);
    /* At most two registrars: a third new one is refused (9 is one). */
    announce(s, 1, "a", "h1:1", 1, 10000, 120);
    leasehold_announcement a;
    memset(&a, 0, sizeof a);
    a.registrar = RID(3);
    a.locator = T("h3:1");
    a.sequence = 1;
    a.ttl = 10000;
    FAILS(LEASEHOLD_STATUS_LEASE_DENIED, leasehold_discovery_service_handle_announcement(s, &a, 120));
    a.ttl = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_service_handle_announcement(s, &a, 120));
    leasehold_discovery_service_free(s);
    leasehold_discovery_config_free(NULL);
    leasehold_discovery_service_free(NULL);
}

static void test_register_and_methods(void) {
    leasehold_discovery_service *s = service();
    leasehold_text lab = T("lab");
    leasehold_discovery_registration r =
        reg(s, NAMES(&lab, 1), "Lookup.Example:4160", "hb\0x", 4, LEASEHOLD_ANY, 0);
    CHECK(r.registration == 1);
    CHECK(r.lease.landlord == SVC_ID && r.lease.expiration == MIN30); /* ANY: the default 30 min */
    CHECK(r.event.event_id > 0 && r.event.sequence == 0);
    CHECK(r.event.source.service == SVC_ID && r.event.source.object == r.registration);
    CHECK(memcmp(r.event.lease.cookie.bytes, r.lease.cookie.bytes, 16) == 0);

    /* Bad arguments change nothing. */
    leasehold_discovery_registration bad;
    leasehold_text loc = T("no-port"), long_name, not_utf8;
    char big[300];
    memset(big, 'g', sizeof big);
    long_name.ptr = big;
    long_name.len = 256;
    not_utf8.ptr = "\xff\xfe";
    not_utf8.len = 2;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_register(s, ALL(), NULL, 0, NULL, 0, 0, 0, &bad));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_register(s, ALL(), NULL, 0, NULL, 0, -2, 0, &bad));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_register(s, ALL(), &loc, 1, NULL, 0, 1000, 0, &bad));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_register(s, NAMES(&long_name, 1), NULL, 0, NULL, 0, 1000, 0, &bad));
    FAILS(LEASEHOLD_STATUS_INVALID_UTF8,
          leasehold_discovery_service_register(s, NAMES(&not_utf8, 1), NULL, 0, NULL, 0, 1000, 0, &bad));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_discovery_service_register(s, NAMES(NULL, 1), NULL, 0, NULL, 0, 1000, 0, &bad));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_discovery_service_register(s, ALL(), NULL, 0, NULL, 0, 1000, 0, NULL));

    /* Groups: get, add, remove, set. */
    leasehold_groups g;
    OK(leasehold_discovery_service_groups(s, r.registration, 10, &g));
    CHECK(!g.all && g.count == 1 && text_eq(&g.names[0], "lab"));
    leasehold_groups_clear(&g);
    CHECK(g.names == NULL && g.count == 0);
    leasehold_text more[] = {T("printers"), T("lab"), T("")};
    OK(leasehold_discovery_service_add_groups(s, r.registration, more, 3, 20));
    OK(leasehold_discovery_service_groups(s, r.registration, 20, &g));
    CHECK(g.count == 3 && text_eq(&g.names[0], "") && text_eq(&g.names[1], "lab") &&
          text_eq(&g.names[2], "printers"));
    leasehold_groups_clear(&g);
    leasehold_text gone[] = {T("lab"), T("nope"), T("")};
    OK(leasehold_discovery_service_remove_groups(s, r.registration, gone, 3, 30));
    OK(leasehold_discovery_service_groups(s, r.registration, 30, &g));
    CHECK(g.count == 1 && text_eq(&g.names[0], "printers"));
    leasehold_groups_clear(&g);
    OK(leasehold_discovery_service_set_groups(s, r.registration, ALL(), 40));
    OK(leasehold_discovery_service_groups(s, r.registration, 40, &g));
    CHECK(g.all && g.count == 0);
    leasehold_groups_clear(&g);
    /* All groups has no set to add to or remove from (Jini: UnsupportedOperationException). */
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_service_add_groups(s, r.registration, more, 1, 40));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_remove_groups(s, r.registration, more, 1, 40));
    OK(leasehold_discovery_service_set_groups(s, r.registration, NAMES(NULL, 0), 50));
    OK(leasehold_discovery_service_groups(s, r.registration, 50, &g));
    CHECK(!g.all && g.count == 0);
    leasehold_groups_clear(&g);

    /* Locators: get (lower-cased), add, remove, set. */
    leasehold_text_list l;
    OK(leasehold_discovery_service_locators(s, r.registration, 60, &l));
    CHECK(l.count == 1 && text_eq(&l.items[0], "lookup.example:4160"));
    leasehold_text_list_clear(&l);
    leasehold_text v6 = T("[::1]:4161"), old = T("lookup.example:4160");
    OK(leasehold_discovery_service_add_locators(s, r.registration, &v6, 1, 60));
    OK(leasehold_discovery_service_locators(s, r.registration, 60, &l));
    CHECK(l.count == 2 && text_eq(&l.items[0], "[::1]:4161"));
    leasehold_text_list_clear(&l);
    OK(leasehold_discovery_service_remove_locators(s, r.registration, &old, 1, 70));
    OK(leasehold_discovery_service_locators(s, r.registration, 70, &l));
    CHECK(l.count == 1 && text_eq(&l.items[0], "[::1]:4161"));
    leasehold_text_list_clear(&l);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_service_add_locators(s, r.registration, &loc, 1, 70));
    OK(leasehold_discovery_service_set_locators(s, r.registration, NULL, 0, 80));
    OK(leasehold_discovery_service_locators(s, r.registration, 80, &l));
    CHECK(l.count == 0);
    leasehold_text_list_clear(&l);
    CHECK(registrar_count(s, r.registration, 80) == 0);

    /* Lease, event registration, listener, lookup by cookie. */
    leasehold_lease lease;
    OK(leasehold_discovery_service_lease(s, r.registration, 90, &lease));
    CHECK(lease.expiration == MIN30 && memcmp(lease.cookie.bytes, r.lease.cookie.bytes, 16) == 0);
    leasehold_event_registration er;
    OK(leasehold_discovery_service_event_registration(s, r.registration, 90, &er));
    CHECK(er.event_id == r.event.event_id && er.sequence == 0 && er.source.object == r.registration);
    OK(leasehold_discovery_service_set_listener(s, r.registration, (const uint8_t *)"http://l/1", 10, 90));
    uint8_t *lb = NULL;
    size_t ln = 0;
    OK(leasehold_discovery_service_listener(s, r.registration, &lb, &ln));
    CHECK(ln == 10 && memcmp(lb, "http://l/1", 10) == 0);
    leasehold_bytes_free(lb, ln);
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_listener(s, 99, &lb, &ln));
    bool found = false;
    uint64_t which = 0;
    OK(leasehold_discovery_service_registration_of(s, r.lease.cookie, 90, &found, &which));
    CHECK(found && which == r.registration);
    leasehold_cookie other = r.lease.cookie;
    other.bytes[0] ^= 1;
    OK(leasehold_discovery_service_registration_of(s, other, 90, &found, &which));
    CHECK(!found);

    /* A registration that does not exist answers UNKNOWN_LEASE everywhere. */
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, 99, 90, &lease));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_groups(s, 99, 90, &g));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_discard(s, 99, RID(1), 90));
    leasehold_discovery_service_free(s);
}

/* ---------- LD.3 / LD.4 ---------- */

static void test_one_event_per_registrar_until_discarded(void) {
    leasehold_discovery_service *s = service();
    leasehold_text lab = T("lab");
    static const char hb[] = {'h', 0, 1, 2, (char)0xff};
    leasehold_discovery_registration r = reg(s, NAMES(&lab, 1), NULL, hb, sizeof hb, 60000, 0);

    announce(s, 1, "lab", "10.0.0.1:4160", 1, 30000, 100);
    leasehold_discovery_event e;
    memset(&e, 0, sizeof e);
    bool found = false;
    OK(leasehold_discovery_service_poll_event(s, 100, &e, &found));
    CHECK(found && !e.discarded && e.event_id == r.event.event_id && e.sequence == 1);
    CHECK(e.source.service == SVC_ID && e.source.object == r.registration);
    CHECK(e.handback_len == sizeof hb && memcmp(e.handback, hb, sizeof hb) == 0); /* byte for byte */
    CHECK(e.registrars.count == 1 && rid_is(e.registrars.items[0].id, 1));
    CHECK(e.registrars.items[0].groups.count == 1 && text_eq(&e.registrars.items[0].groups.items[0], "lab"));
    CHECK(e.registrars.items[0].locators.count == 1 &&
          text_eq(&e.registrars.items[0].locators.items[0], "10.0.0.1:4160"));
    uint64_t seq1 = e.sequence;
    bool awaited = false;
    OK(leasehold_discovery_service_delivered(s, e.event_id, e.sequence, 100, &awaited));
    CHECK(awaited);
    OK(leasehold_discovery_service_delivered(s, e.event_id, e.sequence, 100, &awaited));
    CHECK(!awaited); /* a repeated report is ignored */
    leasehold_discovery_event_clear(&e);
    leasehold_discovery_event_clear(&e); /* clearing twice (a zeroed struct) does nothing */

    /* More announcements of the same registrar: no more events. A stale one is ignored. */
    announce(s, 1, "lab", "10.0.0.1:4160", 2, 30000, 200);
    announce(s, 1, "lab", "10.0.0.1:4160", 3, 30000, 300);
    announce(s, 1, "other", "10.0.0.1:4160", 1, 30000, 300); /* stale: groups not taken */
    CHECK(!next_event(s, 300, true).found);
    CHECK(registrar_count(s, r.registration, 300) == 1);

    /* The service's own set holds it. */
    leasehold_registrar_list l;
    OK(leasehold_discovery_service_registrars(s, r.registration, 300, &l));
    CHECK(l.count == 1 && rid_is(l.items[0].id, 1) && l.items[0].groups.count == 1);
    leasehold_registrar_list_clear(&l);

    /* Active discard: a discarded event, and the registrar is eligible again. */
    OK(leasehold_discovery_service_discard(s, r.registration, RID(1), 400));
    struct ev d = next_event(s, 400, true);
    CHECK(d.found && d.discarded && d.count == 1 && rid_is(d.first, 1) && d.sequence > seq1);
    CHECK(d.handback_len == sizeof hb && memcmp(d.handback, hb, sizeof hb) == 0);
    CHECK(registrar_count(s, r.registration, 400) == 0);
    OK(leasehold_discovery_service_discard(s, r.registration, RID(1), 410)); /* not held: ignored */
    CHECK(!next_event(s, 410, true).found);
    announce(s, 1, "lab", "10.0.0.1:4160", 4, 30000, 500);
    struct ev again = next_event(s, 500, true);
    CHECK(again.found && !again.discarded && rid_is(again.first, 1) && again.sequence > d.sequence);
    leasehold_event_registration er;
    OK(leasehold_discovery_service_event_registration(s, r.registration, 500, &er));
    CHECK(er.sequence == again.sequence);
    leasehold_discovery_service_free(s);
}

static void test_passive_discards(void) {
    leasehold_discovery_service *s = service();
    leasehold_text lab = T("lab");
    leasehold_discovery_registration by_group = reg(s, NAMES(&lab, 1), NULL, "g", 1, 600000, 0);
    leasehold_discovery_registration by_locator = reg(s, NAMES(NULL, 0), "10.0.0.1:4160", "l", 1, 600000, 0);
    announce(s, 1, "lab", "10.0.0.1:4160", 1, 30000, 100);
    struct ev a = next_event(s, 100, true), b = next_event(s, 100, true);
    CHECK(a.found && b.found && !a.discarded && !b.discarded && a.object != b.object);

    /* Unreachable: only the registration that wants it by group discards it. */
    bool known = false;
    OK(leasehold_discovery_service_registrar_unreachable(s, RID(1), 200, &known));
    CHECK(known);
    struct ev d = next_event(s, 200, true);
    CHECK(d.found && d.discarded && d.object == by_group.registration && rid_is(d.first, 1));
    CHECK(!next_event(s, 200, true).found);
    CHECK(registrar_count(s, by_group.registration, 200) == 0);
    CHECK(registrar_count(s, by_locator.registration, 200) == 1);
    OK(leasehold_discovery_service_registrar_unreachable(s, RID(9), 200, &known));
    CHECK(!known);

    /* A registrar's groups no longer of interest: a passive discard. */
    announce(s, 2, "lab", "10.0.0.2:4160", 1, 30000, 300);
    struct ev g2 = next_event(s, 300, true);
    CHECK(g2.found && !g2.discarded && rid_is(g2.first, 2) && g2.object == by_group.registration);
    announce(s, 2, "kitchen", "10.0.0.2:4160", 2, 30000, 400);
    struct ev g2d = next_event(s, 400, true);
    CHECK(g2d.found && g2d.discarded && rid_is(g2d.first, 2));

    /* Silence: announcements stop, and `ttl` later the registrar is discarded. */
    announce(s, 3, "lab", "10.0.0.3:4160", 1, 1000, 500);
    CHECK(next_event(s, 500, true).found);
    bool has = false;
    int64_t at = 0;
    OK(leasehold_discovery_service_poll_timeout(s, &has, &at));
    CHECK(has && at <= 1500);
    OK(leasehold_discovery_service_handle_timeout(s, 1499));
    CHECK(!next_event(s, 1499, true).found);
    OK(leasehold_discovery_service_handle_timeout(s, 1500));
    struct ev g3 = next_event(s, 1500, true);
    CHECK(g3.found && g3.discarded && rid_is(g3.first, 3));

    /* Group changes (LD.4.1.1): no groups discards what is held by group; back, rediscovers. */
    announce(s, 4, "lab", "10.0.0.4:4160", 1, 60000, 1600);
    CHECK(next_event(s, 1600, true).found);
    OK(leasehold_discovery_service_set_groups(s, by_group.registration, NAMES(NULL, 0), 1700));
    struct ev off = next_event(s, 1700, true);
    CHECK(off.found && off.discarded && rid_is(off.first, 4));
    OK(leasehold_discovery_service_set_groups(s, by_group.registration, NAMES(&lab, 1), 1800));
    struct ev on = next_event(s, 1800, true);
    CHECK(on.found && !on.discarded && rid_is(on.first, 4) && on.sequence > off.sequence);
    leasehold_discovery_service_free(s);
}

/* A request message's bytes, for the lease protocol. */
static uint8_t *lease_request(leasehold_request *req, size_t *n) {
    uint8_t *b = NULL;
    OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_BINARY, &b, n));
    leasehold_request_free(req);
    return b;
}

static void test_leases_and_expiry(void) {
    leasehold_discovery_service *s = service();
    leasehold_text lab = T("lab");
    leasehold_discovery_registration r = reg(s, NAMES(&lab, 1), NULL, NULL, 0, 1000, 0);

    /* Renew through handle_request. */
    leasehold_request *req = NULL;
    leasehold_reply *rep = NULL;
    OK(leasehold_request_new_renew(1, r.lease.cookie, 5000, &req));
    OK(leasehold_discovery_service_handle_request(s, req, 500, &rep));
    leasehold_request_free(req);
    leasehold_reply_op op;
    int64_t d = 0;
    OK(leasehold_reply_get_op(rep, &op));
    OK(leasehold_reply_duration(rep, &d));
    CHECK(op == LEASEHOLD_REPLY_RENEWED && d == 5000);
    leasehold_reply_free(rep);
    leasehold_lease lease;
    OK(leasehold_discovery_service_lease(s, r.registration, 500, &lease));
    CHECK(lease.expiration == 5500);
    /* Grant is not how registrations are made. */
    OK(leasehold_request_new_grant(2, (const uint8_t *)"x", 1, 1000, &req));
    OK(leasehold_discovery_service_handle_request(s, req, 500, &rep));
    leasehold_request_free(req);
    int32_t code = 0;
    OK(leasehold_reply_error(rep, &code, NULL));
    CHECK(code == LEASEHOLD_STATUS_INVALID_ARGUMENT);
    leasehold_reply_free(rep);

    /* The lease ends: every method answers UNKNOWN_LEASE (Jini's NoSuchObjectException), and
     * an event the registration would have had never comes. */
    OK(leasehold_discovery_service_handle_timeout(s, 5501));
    announce(s, 1, "lab", "10.0.0.1:1", 1, 600000, 5600);
    CHECK(!next_event(s, 5600, false).found);
    int64_t now = 6000;
    leasehold_groups g;
    leasehold_text_list tl;
    leasehold_registrar_list rl;
    leasehold_event_registration er;
    leasehold_text loc = T("h:1");
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, r.registration, now, &lease));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_event_registration(s, r.registration, now, &er));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_registrars(s, r.registration, now, &rl));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_groups(s, r.registration, now, &g));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_locators(s, r.registration, now, &tl));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_add_groups(s, r.registration, &lab, 1, now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_set_groups(s, r.registration, ALL(), now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_remove_groups(s, r.registration, &lab, 1, now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_add_locators(s, r.registration, &loc, 1, now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_set_locators(s, r.registration, &loc, 1, now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE,
          leasehold_discovery_service_remove_locators(s, r.registration, &loc, 1, now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_discard(s, r.registration, RID(1), now));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE,
          leasehold_discovery_service_set_listener(s, r.registration, (const uint8_t *)"x", 1, now));
    /* Renewing it over the wire: UNKNOWN_LEASE too. */
    size_t n = 0;
    OK(leasehold_request_new_renew(3, r.lease.cookie, 5000, &req));
    uint8_t *b = lease_request(req, &n);
    uint8_t *out = NULL;
    size_t on = 0;
    OK(leasehold_discovery_service_handle_bytes(s, b, n, LEASEHOLD_ENCODING_BINARY, now, &out, &on));
    leasehold_bytes_free(b, n);
    OK(leasehold_reply_decode(out, on, LEASEHOLD_ENCODING_BINARY, NULL, &rep));
    leasehold_bytes_free(out, on);
    OK(leasehold_reply_error(rep, &code, NULL));
    CHECK(code == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    leasehold_reply_free(rep);

    /* A cancelled registration ends at once. */
    leasehold_discovery_registration c = reg(s, ALL(), NULL, NULL, 0, 60000, now);
    CHECK(next_event(s, now, true).found); /* registrar 1 is in the service's set */
    OK(leasehold_request_new_cancel(4, c.lease.cookie, &req));
    b = lease_request(req, &n);
    OK(leasehold_discovery_service_handle_bytes(s, b, n, LEASEHOLD_ENCODING_BINARY, now, &out, &on));
    leasehold_bytes_free(b, n);
    OK(leasehold_reply_decode(out, on, LEASEHOLD_ENCODING_BINARY, NULL, &rep));
    leasehold_bytes_free(out, on);
    OK(leasehold_reply_get_op(rep, &op));
    CHECK(op == LEASEHOLD_REPLY_CANCELLED);
    leasehold_reply_free(rep);
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, c.registration, now, &lease));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_registrars(s, c.registration, now, &rl));
    leasehold_discovery_service_free(s);
}

static void test_delivery(void) {
    leasehold_discovery_service *s = service();
    leasehold_discovery_registration r = reg(s, ALL(), NULL, NULL, 0, 600000, 0);
    announce(s, 1, "a", "h:1", 1, 600000, 0);
    struct ev e = next_event(s, 0, false);
    CHECK(e.found);
    CHECK(!next_event(s, 0, false).found); /* the registration's next event waits for the report */
    /* An indefinite failure: sent again after the back-off (1 s), same number. */
    bool awaited = false;
    OK(leasehold_discovery_service_delivery_failed(s, e.event_id, e.sequence, LEASEHOLD_DELIVERY_INDEFINITE,
                                                   "down", 4, 0, &awaited));
    CHECK(awaited);
    CHECK(!next_event(s, 999, false).found);
    struct ev again = next_event(s, 1000, false);
    CHECK(again.found && again.sequence == e.sequence && again.event_id == e.event_id);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_delivery_failed(s, e.event_id, e.sequence, LEASEHOLD_DELIVERED, NULL, 0,
                                                      1000, NULL));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_delivery_failed(s, e.event_id, e.sequence, 9, NULL, 0, 1000, NULL));
    /* No report within the delivery time-out (1 min) counts as a failure (the second: the
     * back-off is now 5 s): sent again. */
    OK(leasehold_discovery_service_handle_timeout(s, 61000));
    CHECK(!next_event(s, 65999, false).found);
    struct ev late = next_event(s, 66000, false);
    CHECK(late.found && late.sequence == e.sequence);
    /* The listener's answer as wire bytes: received. */
    uint8_t *b = NULL;
    size_t n = 0;
    OK(leasehold_event_reply_encode(late.event_id, late.sequence, LEASEHOLD_EVENT_REPLY_RECEIVED, 0, NULL, 0,
                                    LEASEHOLD_ENCODING_JSON, &b, &n));
    OK(leasehold_discovery_service_handle_event_reply_bytes(s, b, n, LEASEHOLD_ENCODING_JSON, 66000, &awaited));
    CHECK(awaited);
    leasehold_bytes_free(b, n);
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_discovery_service_handle_event_reply_bytes(s, (const uint8_t *)"{", 1, LEASEHOLD_ENCODING_JSON,
                                                               66000, &awaited));
    /* An unknown-event answer cancels the registration (LD.3.1). */
    announce(s, 2, "a", "h:2", 1, 600000, 67000);
    struct ev e2 = next_event(s, 67000, false);
    CHECK(e2.found && rid_is(e2.first, 2));
    OK(leasehold_event_reply_encode(e2.event_id, e2.sequence, LEASEHOLD_EVENT_REPLY_UNKNOWN_EVENT, 0, NULL, 0,
                                    LEASEHOLD_ENCODING_BINARY, &b, &n));
    OK(leasehold_discovery_service_handle_event_reply_bytes(s, b, n, LEASEHOLD_ENCODING_BINARY, 67000, &awaited));
    CHECK(awaited);
    leasehold_bytes_free(b, n);
    leasehold_lease lease;
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, r.registration, 67000, &lease));
    /* So does a bad object. */
    leasehold_discovery_registration r2 = reg(s, ALL(), NULL, NULL, 0, 600000, 68000);
    struct ev e3 = next_event(s, 68000, false);
    CHECK(e3.found && e3.object == r2.registration && e3.count == 2);
    OK(leasehold_discovery_service_delivery_failed(s, e3.event_id, e3.sequence, LEASEHOLD_DELIVERY_BAD_OBJECT,
                                                   "broken", 6, 68000, &awaited));
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, r2.registration, 68000, &lease));
    leasehold_discovery_service_free(s);
}

static void test_unicast(void) {
    leasehold_discovery_service *s = service();
    leasehold_discovery_registration r = reg(s, NAMES(NULL, 0), "Reg.Example:4160", NULL, 0, 600000, 0);
    leasehold_unicast_request p;
    memset(&p, 0, sizeof p);
    bool found = false;
    OK(leasehold_discovery_service_poll_transmit(s, 0, &p, &found));
    CHECK(found && p.port == 4160 && strcmp(p.host, "reg.example") == 0 &&
          strcmp(p.locator, "reg.example:4160") == 0);
    uint64_t first = p.id;
    leasehold_unicast_request_clear(&p);
    CHECK(p.host == NULL && p.locator == NULL);
    OK(leasehold_discovery_service_poll_transmit(s, 0, &p, &found));
    CHECK(!found);
    /* A failure: tried again after the back-off. */
    bool awaited = false;
    OK(leasehold_discovery_service_unicast_failed(s, first, 10, &awaited));
    CHECK(awaited);
    OK(leasehold_discovery_service_poll_transmit(s, 500, &p, &found));
    CHECK(!found);
    OK(leasehold_discovery_service_poll_transmit(s, 1010, &p, &found));
    CHECK(found && p.id != first);
    uint64_t second = p.id;
    leasehold_unicast_request_clear(&p);
    /* Found: the registration (which wants the locator) discovers it. */
    leasehold_text x = T("x");
    OK(leasehold_discovery_service_unicast_found(s, second, RID(5), &x, 1, 1020, &awaited));
    CHECK(awaited);
    OK(leasehold_discovery_service_unicast_found(s, second, RID(5), &x, 1, 1020, &awaited));
    CHECK(!awaited); /* answered already */
    leasehold_discovery_event e;
    memset(&e, 0, sizeof e);
    OK(leasehold_discovery_service_poll_event(s, 1020, &e, &found));
    CHECK(found && e.source.object == r.registration && !e.discarded && rid_is(e.registrars.items[0].id, 5));
    CHECK(e.registrars.items[0].locators.count == 1 &&
          text_eq(&e.registrars.items[0].locators.items[0], "reg.example:4160"));
    OK(leasehold_discovery_service_delivered(s, e.event_id, e.sequence, 1020, NULL));
    leasehold_discovery_event_clear(&e);

    /* A probe answered with an announcement datagram. */
    leasehold_text loc2 = T("other.example:4160");
    OK(leasehold_discovery_service_add_locators(s, r.registration, &loc2, 1, 1100));
    OK(leasehold_discovery_service_poll_transmit(s, 1100, &p, &found));
    CHECK(found && strcmp(p.locator, "other.example:4160") == 0);
    leasehold_announcement a;
    memset(&a, 0, sizeof a);
    a.registrar = RID(6);
    a.locator = T("other.example:4160");
    a.sequence = 1;
    a.ttl = 30000;
    uint8_t *dg = NULL;
    size_t dn = 0;
    OK(leasehold_announcement_encode(&a, &dg, &dn));
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_discovery_service_unicast_found_datagram(s, p.id, dg, dn - 1, 1100, &awaited));
    OK(leasehold_discovery_service_unicast_found_datagram(s, p.id, dg, dn, 1100, &awaited));
    CHECK(awaited);
    leasehold_unicast_request_clear(&p);
    struct ev e6 = next_event(s, 1100, true);
    CHECK(e6.found && rid_is(e6.first, 6));

    /* An announcement datagram heard: the service's set grows (nobody wants it here). */
    a.registrar = RID(7);
    a.locator = T("10.1.1.1:1");
    leasehold_bytes_free(dg, dn);
    OK(leasehold_announcement_encode(&a, &dg, &dn));
    OK(leasehold_discovery_service_handle_datagram(s, dg, dn, 1200));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_discovery_service_handle_datagram(s, dg, 3, 1200));
    leasehold_bytes_free(dg, dn);
    CHECK(!next_event(s, 1200, true).found);
    leasehold_discovery_service_free(s);
}

/* ---------- the discovery protocol from a C client ---------- */

struct client {
    leasehold_discovery_service *s;
    int32_t enc;
    uint64_t next_id;
};

/* Sends a request over "the wire" (bytes) and decodes the reply. */
static leasehold_discovery_reply *call(struct client *c, leasehold_discovery_request *req, int64_t now) {
    uint8_t *b = NULL, *out = NULL;
    size_t n = 0, on = 0;
    leasehold_discovery_reply *rep = NULL;
    OK(leasehold_discovery_request_encode(req, c->enc, &b, &n));
    leasehold_discovery_request_free(req);
    OK(leasehold_discovery_service_handle_discovery_bytes(c->s, b, n, c->enc, now, &out, &on));
    leasehold_bytes_free(b, n);
    OK(leasehold_discovery_reply_decode(out, on, c->enc, NULL, &rep));
    leasehold_bytes_free(out, on);
    uint64_t id = 0;
    OK(leasehold_discovery_reply_id(rep, &id));
    CHECK(id == c->next_id - 1);
    return rep;
}

static leasehold_discovery_reply_op op_of(const leasehold_discovery_reply *rep) {
    leasehold_discovery_reply_op op = LEASEHOLD_DISCOVERY_ERROR;
    OK(leasehold_discovery_reply_get_op(rep, &op));
    return op;
}

static void client_session(int32_t enc) {
    struct client c = {service(), enc, 1};
    leasehold_discovery_request *req = NULL;
    leasehold_text lab = T("lab");
    OK(leasehold_discovery_request_new_register(c.next_id++, NAMES(&lab, 1), NULL, 0, (const uint8_t *)"cb", 2,
                                                60000, &req));
    leasehold_discovery_op qop;
    OK(leasehold_discovery_request_get_op(req, &qop));
    CHECK(qop == LEASEHOLD_DISCOVERY_REGISTER);
    leasehold_discovery_reply *rep = call(&c, req, 1000);
    leasehold_discovery_registered r;
    CHECK(op_of(rep) == LEASEHOLD_DISCOVERY_REGISTERED);
    OK(leasehold_discovery_reply_registered(rep, &r));
    uint64_t landlord = 0;
    OK(leasehold_discovery_reply_landlord(rep, &landlord));
    CHECK(landlord == SVC_ID && r.duration == 60000 && r.sequence == 0 && r.registration == 1);
    leasehold_discovery_reply_free(rep);
    /* The client's own view of its lease, from the time it sent the request. */
    leasehold_lease mine;
    OK(leasehold_lease_from_grant(landlord, r.cookie, 900, r.duration, &mine));
    CHECK(mine.expiration == 60900);

    /* Groups: add, set all, get. */
    leasehold_text more = T("printers");
    OK(leasehold_discovery_request_new_groups(c.next_id++, LEASEHOLD_DISCOVERY_ADD_GROUPS, r.cookie,
                                              NAMES(&more, 1), &req));
    leasehold_cookie qc;
    OK(leasehold_discovery_request_cookie(req, &qc));
    CHECK(memcmp(qc.bytes, r.cookie.bytes, 16) == 0);
    rep = call(&c, req, 1000);
    CHECK(op_of(rep) == LEASEHOLD_DISCOVERY_DONE);
    leasehold_discovery_reply_free(rep);
    OK(leasehold_discovery_request_new_get(c.next_id++, LEASEHOLD_DISCOVERY_GET_GROUPS, r.cookie, &req));
    rep = call(&c, req, 1000);
    leasehold_groups g;
    OK(leasehold_discovery_reply_groups(rep, &g));
    CHECK(!g.all && g.count == 2 && text_eq(&g.names[0], "lab") && text_eq(&g.names[1], "printers"));
    leasehold_groups_clear(&g);
    leasehold_discovery_reply_free(rep);
    OK(leasehold_discovery_request_new_groups(c.next_id++, LEASEHOLD_DISCOVERY_SET_GROUPS, r.cookie, ALL(), &req));
    rep = call(&c, req, 1000);
    leasehold_discovery_reply_free(rep);
    OK(leasehold_discovery_request_new_get(c.next_id++, LEASEHOLD_DISCOVERY_GET_GROUPS, r.cookie, &req));
    rep = call(&c, req, 1000);
    OK(leasehold_discovery_reply_groups(rep, &g));
    CHECK(g.all);
    leasehold_groups_clear(&g);
    leasehold_discovery_reply_free(rep);

    /* Locators: add, get. */
    leasehold_text loc = T("[::1]:4160");
    OK(leasehold_discovery_request_new_locators(c.next_id++, LEASEHOLD_DISCOVERY_ADD_LOCATORS, r.cookie, &loc, 1,
                                                &req));
    rep = call(&c, req, 1000);
    leasehold_discovery_reply_free(rep);
    OK(leasehold_discovery_request_new_get(c.next_id++, LEASEHOLD_DISCOVERY_GET_LOCATORS, r.cookie, &req));
    rep = call(&c, req, 1000);
    leasehold_text_list tl;
    OK(leasehold_discovery_reply_locators(rep, &tl));
    CHECK(tl.count == 1 && text_eq(&tl.items[0], "[::1]:4160"));
    leasehold_text_list_clear(&tl);
    leasehold_discovery_reply_free(rep);

    /* A registrar appears; the client sees it, the event reaches it over "the wire", it
     * answers, and it discards the registrar. */
    announce(c.s, 1, "lab", "10.0.0.1:4160", 1, 600000, 1100);
    OK(leasehold_discovery_request_new_get(c.next_id++, LEASEHOLD_DISCOVERY_GET_REGISTRARS, r.cookie, &req));
    rep = call(&c, req, 1100);
    leasehold_registrar_list rl;
    OK(leasehold_discovery_reply_registrars(rep, &rl));
    CHECK(rl.count == 1 && rid_is(rl.items[0].id, 1) && text_eq(&rl.items[0].locators.items[0], "10.0.0.1:4160"));
    leasehold_registrar_list_clear(&rl);
    leasehold_discovery_reply_free(rep);

    leasehold_discovery_event e, got;
    memset(&e, 0, sizeof e);
    memset(&got, 0, sizeof got);
    bool found = false;
    OK(leasehold_discovery_service_poll_event(c.s, 1100, &e, &found));
    CHECK(found);
    uint8_t *b = NULL;
    size_t n = 0;
    OK(leasehold_discovery_event_encode(&e, enc, &b, &n));
    OK(leasehold_discovery_event_decode(b, n, enc, NULL, &got));
    leasehold_bytes_free(b, n);
    CHECK(got.event_id == r.event_id && got.sequence == r.sequence + 1 && !got.discarded);
    CHECK(got.handback_len == 2 && memcmp(got.handback, "cb", 2) == 0);
    CHECK(got.registrars.count == 1 && rid_is(got.registrars.items[0].id, 1));
    OK(leasehold_event_reply_encode(got.event_id, got.sequence, LEASEHOLD_EVENT_REPLY_RECEIVED, 0, NULL, 0, enc, &b,
                                    &n));
    bool awaited = false;
    OK(leasehold_discovery_service_handle_event_reply_bytes(c.s, b, n, enc, 1100, &awaited));
    CHECK(awaited);
    leasehold_bytes_free(b, n);
    leasehold_discovery_event_clear(&e);
    leasehold_discovery_event_clear(&got);

    OK(leasehold_discovery_request_new_discard(c.next_id++, r.cookie, RID(1), &req));
    rep = call(&c, req, 1200);
    CHECK(op_of(rep) == LEASEHOLD_DISCOVERY_DONE);
    leasehold_discovery_reply_free(rep);
    struct ev d = next_event(c.s, 1200, true);
    CHECK(d.found && d.discarded && rid_is(d.first, 1));

    /* An unknown registration: an UNKNOWN_LEASE error reply. */
    leasehold_cookie bogus = r.cookie;
    bogus.bytes[15] ^= 0x55;
    OK(leasehold_discovery_request_new_get(c.next_id++, LEASEHOLD_DISCOVERY_GET_LOCATORS, bogus, &req));
    rep = call(&c, req, 1200);
    int32_t code = 0;
    char *msg = NULL;
    CHECK(op_of(rep) == LEASEHOLD_DISCOVERY_ERROR);
    OK(leasehold_discovery_reply_error(rep, &code, &msg));
    CHECK(code == LEASEHOLD_STATUS_UNKNOWN_LEASE && msg != NULL);
    leasehold_string_free(msg);
    leasehold_text_list none;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_reply_locators(rep, &none));
    leasehold_discovery_reply_free(rep);

    /* The request handle form, and undecodable bytes (an error reply with id 0). */
    OK(leasehold_discovery_request_new_get(77, LEASEHOLD_DISCOVERY_GET_REGISTRARS, r.cookie, &req));
    OK(leasehold_discovery_service_handle_discovery(c.s, req, 1300, &rep));
    leasehold_discovery_request_free(req);
    CHECK(op_of(rep) == LEASEHOLD_DISCOVERY_REGISTRARS);
    leasehold_discovery_reply_free(rep);
    uint8_t *out = NULL;
    size_t on = 0;
    OK(leasehold_discovery_service_handle_discovery_bytes(c.s, (const uint8_t *)"\x4c\x01\x20", 3, enc, 1300, &out,
                                                          &on));
    OK(leasehold_discovery_reply_decode(out, on, enc, NULL, &rep));
    leasehold_bytes_free(out, on);
    uint64_t id = 9;
    OK(leasehold_discovery_reply_id(rep, &id));
    OK(leasehold_discovery_reply_error(rep, &code, NULL));
    CHECK(id == 0 && code == LEASEHOLD_STATUS_DECODE);
    leasehold_discovery_reply_free(rep);
    leasehold_discovery_service_free(c.s);
}

static void test_client(void) {
    client_session(LEASEHOLD_ENCODING_BINARY);
    client_session(LEASEHOLD_ENCODING_JSON);
    /* Constructors refuse what they cannot build. */
    leasehold_discovery_request *req = NULL;
    leasehold_cookie ck;
    memset(&ck, 0, sizeof ck);
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_request_new_get(1, LEASEHOLD_DISCOVERY_DISCARD, ck, &req));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_request_new_groups(1, LEASEHOLD_DISCOVERY_ADD_GROUPS, ck, ALL(), &req));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_request_new_groups(1, LEASEHOLD_DISCOVERY_GET_GROUPS, ck, ALL(), &req));
    leasehold_text bad = T("host");
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_request_new_locators(1, LEASEHOLD_DISCOVERY_SET_LOCATORS, ck, &bad, 1, &req));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_request_new_locators(1, LEASEHOLD_DISCOVERY_SET_GROUPS, ck, NULL, 0, &req));
    CHECK(req == NULL);
    uint8_t *b = NULL;
    size_t n = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_event_reply_encode(1, 1, LEASEHOLD_EVENT_REPLY_ERROR, 0, "x", 1, LEASEHOLD_ENCODING_JSON, &b, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_event_reply_encode(1, 1, 9, 0, NULL, 0, LEASEHOLD_ENCODING_JSON, &b, &n));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_event_reply_encode(1, 1, 1, 0, NULL, 0, 3, &b, &n));
    /* Registrar ids as text. */
    char hex[LEASEHOLD_REGISTRAR_ID_HEX_SIZE];
    OK(leasehold_registrar_id_to_hex(RID(9), hex, sizeof hex));
    CHECK(strcmp(hex, "ab000000000000000000000000000009") == 0);
    FAILS(LEASEHOLD_STATUS_BUFFER_TOO_SMALL, leasehold_registrar_id_to_hex(RID(9), hex, 32));
    leasehold_registrar_id back;
    OK(leasehold_registrar_id_from_hex(hex, 32, &back));
    CHECK(rid_is(back, 9));
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_registrar_id_from_hex(hex, 31, &back));
}

/* ---------- snapshot and restore ---------- */

static void test_snapshot_restore(void) {
    leasehold_discovery_service *s = service();
    leasehold_text lab = T("lab");
    leasehold_discovery_registration r = reg(s, NAMES(&lab, 1), "10.9.9.9:1", "hb", 2, 600000, 0);
    announce(s, 1, "lab", "10.0.0.1:4160", 1, 600000, 100);
    struct ev e1 = next_event(s, 100, true);
    CHECK(e1.found);
    char *json = NULL;
    OK(leasehold_discovery_service_snapshot(s, &json));
    CHECK(json && strstr(json, "\"registrations\"") != NULL);

    /* Exactly on (jump 0): the next event carries the next number. */
    leasehold_discovery_config *c = config();
    OK(leasehold_discovery_config_set_restore_jump(c, 0));
    leasehold_discovery_service *t = NULL;
    OK(leasehold_discovery_service_restore(c, json, strlen(json), 100, &t));
    CHECK(registrar_count(t, r.registration, 100) == 1);
    leasehold_groups g;
    OK(leasehold_discovery_service_groups(t, r.registration, 100, &g));
    CHECK(g.count == 1 && text_eq(&g.names[0], "lab"));
    leasehold_groups_clear(&g);
    OK(leasehold_discovery_service_discard(s, r.registration, RID(1), 200));
    OK(leasehold_discovery_service_discard(t, r.registration, RID(1), 200));
    struct ev a = next_event(s, 200, true), b = next_event(t, 200, true);
    CHECK(a.found && b.found && a.sequence == b.sequence && a.sequence == e1.sequence + 1);
    CHECK(b.handback_len == 2 && memcmp(b.handback, "hb", 2) == 0);
    leasehold_discovery_service_free(t);

    /* With the default jump, listeners see a gap. */
    leasehold_discovery_config_free(c);
    c = config();
    OK(leasehold_discovery_service_restore(c, json, strlen(json), 100, &t));
    OK(leasehold_discovery_service_discard(t, r.registration, RID(1), 200));
    struct ev j = next_event(t, 200, true);
    CHECK(j.found && j.sequence > e1.sequence + 1000);
    leasehold_discovery_service_free(t);
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_discovery_service_restore(c, json, 10, 100, &t));
    leasehold_discovery_config_free(c);
    /* Another service's id: refused. */
    OK(leasehold_discovery_config_new(8, SEED, sizeof SEED, &c));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_discovery_service_restore(c, json, strlen(json), 100, &t));
    leasehold_discovery_config_free(c);
    leasehold_string_free(json);
    leasehold_discovery_service_free(s);
}

/* ---------- the driver, and callbacks that call back in ---------- */

struct host {
    leasehold_discovery_service *s;
    int64_t now;
    int probes, events, discovered, discarded;
    int32_t answer;          /* what on_event answers */
    bool answer_probe_inside; /* on_probe answers at once, from inside the callback */
    int32_t probe_rc;
    uint64_t last_seq, last_event_id;
    /* Re-entrancy. */
    enum { R_NONE, R_READ_AND_CHANGE, R_FREE, R_TOGGLE, R_DRIVE } reenter;
    uint64_t reg;
    leasehold_status inner_status, after_free;
    size_t inner_registrars;
    bool toggle;
};

static int32_t on_probe(void *user_data, const leasehold_unicast_request *p) {
    struct host *h = (struct host *)user_data;
    h->probes++;
    if (h->answer_probe_inside) {
        leasehold_text g = T("lab");
        bool awaited = false;
        OK(leasehold_discovery_service_unicast_found(h->s, p->id, RID(50), &g, 1, h->now, &awaited));
        CHECK(awaited);
    }
    return h->probe_rc;
}

static int32_t on_event(void *user_data, const leasehold_discovery_event *e) {
    struct host *h = (struct host *)user_data;
    h->events++;
    if (e->discarded) h->discarded++;
    else h->discovered++;
    CHECK(e->sequence >= h->last_seq || e->event_id != h->last_event_id); /* a retry repeats its number */
    h->last_seq = e->sequence;
    h->last_event_id = e->event_id;
    switch (h->reenter) {
    case R_READ_AND_CHANGE: {
        /* Nothing of the service is borrowed: reads and changes work. */
        leasehold_registrar_list l;
        h->inner_status = leasehold_discovery_service_registrars(h->s, h->reg, h->now, &l);
        h->inner_registrars = l.count;
        leasehold_registrar_list_clear(&l);
        if (!e->discarded) OK(leasehold_discovery_service_discard(h->s, h->reg, e->registrars.items[0].id, h->now));
        h->reenter = R_NONE;
        break;
    }
    case R_FREE: {
        leasehold_discovery_service_free(h->s);
        uint64_t id = 0;
        h->after_free = leasehold_discovery_service_id(h->s, &id);
        leasehold_discovery_service_free(h->s); /* a second free inside the callback is ignored */
        h->reenter = R_NONE;
        return LEASEHOLD_DELIVERED;
    }
    case R_TOGGLE: {
        /* Every event causes another: the driver stops after its rounds. */
        leasehold_text lab = T("lab");
        h->toggle = !h->toggle;
        OK(leasehold_discovery_service_set_groups(h->s, h->reg, NAMES(&lab, h->toggle ? 0 : 1), h->now));
        break;
    }
    case R_DRIVE: {
        bool has = false;
        int64_t next = 0;
        h->reenter = R_NONE;
        h->inner_status = leasehold_discovery_service_drive(h->s, h->now, on_probe, on_event, h, &has, &next);
        break;
    }
    default:
        break;
    }
    return h->answer;
}

static leasehold_status drive(struct host *h, bool *has, int64_t *next) {
    return leasehold_discovery_service_drive(h->s, h->now, on_probe, on_event, h, has, next);
}

static void test_driver(void) {
    struct host h;
    memset(&h, 0, sizeof h);
    h.s = service();
    h.answer = LEASEHOLD_DELIVERED;
    h.answer_probe_inside = true;
    leasehold_text lab = T("lab");
    leasehold_discovery_registration r = reg(h.s, NAMES(&lab, 1), "probe.example:4160", "d", 1, 600000, 0);
    h.reg = r.registration;
    bool has = false;
    int64_t next = 0;
    /* Round 1: the probe (answered from inside the callback); round 2: its discovered event. */
    OK(drive(&h, &has, &next));
    CHECK(h.probes == 1 && h.events == 1 && h.discovered == 1);
    /* Then the next thing due: the end of the registration's lease. */
    CHECK(has && next == 600001);
    int64_t at = 0;
    OK(leasehold_discovery_service_poll_timeout(h.s, &has, &at));
    CHECK(has && at == next);

    /* PENDING: the host reports later. */
    h.answer = LEASEHOLD_DELIVERY_PENDING;
    announce(h.s, 2, "lab", "10.0.0.2:1", 1, 600000, 10);
    h.now = 10;
    OK(drive(&h, &has, &next));
    CHECK(h.events == 2);
    uint64_t pending_seq = h.last_seq;
    OK(drive(&h, &has, &next));
    CHECK(h.events == 2); /* still in flight */
    bool awaited = false;
    OK(leasehold_discovery_service_delivered(h.s, h.last_event_id, pending_seq, 10, &awaited));
    CHECK(awaited);

    /* INDEFINITE: sent again after the back-off, same number. */
    h.answer = LEASEHOLD_DELIVERY_INDEFINITE;
    announce(h.s, 3, "lab", "10.0.0.3:1", 1, 600000, 20);
    h.now = 20;
    OK(drive(&h, &has, &next));
    CHECK(h.events == 3 && has && next == 1020);
    uint64_t retried = h.last_seq;
    h.answer = LEASEHOLD_DELIVERED;
    h.now = next;
    OK(drive(&h, &has, &next));
    CHECK(h.events == 4 && h.last_seq == retried);

    /* A probe the callback refuses: failed now, retried after the back-off. */
    h.answer_probe_inside = false;
    h.probe_rc = 1;
    leasehold_text far = T("far.example:1");
    OK(leasehold_discovery_service_add_locators(h.s, r.registration, &far, 1, h.now));
    OK(drive(&h, &has, &next));
    CHECK(h.probes == 2 && has && next == h.now + 1000);

    /* Callbacks that call back in: a read and a discard inside on_event; the discard's event
     * goes out in a later round of the same drive. */
    h.reenter = R_READ_AND_CHANGE;
    int before = h.discarded;
    announce(h.s, 4, "lab", "10.0.0.4:1", 1, 600000, h.now);
    OK(drive(&h, &has, &next));
    CHECK(h.inner_status == LEASEHOLD_STATUS_OK && h.inner_registrars == 4); /* 50, 2, 3, 4 */
    CHECK(h.discarded == before + 1);

    /* A drive from inside a callback works too. */
    h.reenter = R_DRIVE;
    announce(h.s, 5, "lab", "10.0.0.5:1", 1, 600000, h.now);
    OK(drive(&h, &has, &next));
    CHECK(h.inner_status == LEASEHOLD_STATUS_OK);

    /* Work that never ends: the driver stops after its rounds and asks to be called again. */
    OK(leasehold_discovery_service_set_groups(h.s, h.reg, NAMES(&lab, 0), h.now)); /* the first event */
    h.toggle = true;
    h.reenter = R_TOGGLE;
    int events = h.events;
    OK(drive(&h, &has, &next));
    CHECK(has && next == h.now && h.events - events == LEASEHOLD_DRIVE_MAX_ROUNDS);
    h.reenter = R_NONE;

    /* Visitors see a copy and may change the service. */
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_drive(h.s, h.now, NULL, on_event, &h, &has, &next));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_drive(h.s, h.now, on_probe, NULL, &h, &has, &next));

    /* Freeing the service inside a callback: the drive ends, OK, nothing more to do; other
     * calls on it meanwhile are BUSY. */
    h.reenter = R_FREE;
    announce(h.s, 6, "lab", "10.0.0.6:1", 1, 600000, h.now);
    has = true;
    OK(drive(&h, &has, &next));
    CHECK(!has && h.after_free == LEASEHOLD_STATUS_BUSY);
}

struct visit {
    leasehold_discovery_service *s;
    int seen;
    bool free_it;
};

static int32_t visit_registration(void *user_data, uint64_t registration) {
    struct visit *v = (struct visit *)user_data;
    v->seen++;
    (void)registration;
    if (v->free_it) {
        leasehold_discovery_service_free(v->s);
        return 0;
    }
    /* Registering inside the visit works; the visit goes over the copy taken first. */
    reg(v->s, ALL(), NULL, NULL, 0, 60000, 0);
    return 0;
}

static int32_t visit_registrar(void *user_data, const leasehold_registrar *r) {
    struct visit *v = (struct visit *)user_data;
    v->seen++;
    CHECK(r->groups.count == 1 && text_eq(&r->groups.items[0], "lab"));
    return 1; /* stop */
}

static void test_visitors(void) {
    struct visit v = {service(), 0, false};
    reg(v.s, ALL(), NULL, NULL, 0, 60000, 0);
    reg(v.s, ALL(), NULL, NULL, 0, 60000, 0);
    OK(leasehold_discovery_service_for_each_registration(v.s, visit_registration, &v));
    CHECK(v.seen == 2);
    v.seen = 0;
    v.free_it = true;
    OK(leasehold_discovery_service_for_each_registration(v.s, visit_registration, &v));
    CHECK(v.seen == 1); /* freed in the first visit: the visit ends */

    v.s = service();
    v.seen = 0;
    announce(v.s, 1, "lab", "10.0.0.1:1", 1, 60000, 0);
    announce(v.s, 2, "lab", "10.0.0.2:1", 1, 60000, 0);
    OK(leasehold_discovery_service_for_each_discovered(v.s, visit_registrar, &v));
    CHECK(v.seen == 1);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_for_each_discovered(v.s, NULL, &v));
    leasehold_discovery_service_free(v.s);
}

/* ---------- durability ---------- */

static leasehold_discovery_service *open_dir(const char *dir, uint64_t id, int64_t now, leasehold_recovery *info,
                                             leasehold_status *st) {
    leasehold_discovery_config *c = NULL;
    OK(leasehold_discovery_config_new(id, SEED, sizeof SEED, &c));
    leasehold_discovery_service *s = NULL;
    *st = leasehold_discovery_service_open_dir(dir, strlen(dir), c, now, &s, info);
    leasehold_discovery_config_free(c);
    return s;
}

static uint64_t commit(leasehold_discovery_service *s) {
    uint64_t d = 0;
    OK(leasehold_discovery_service_commit(s, &d));
    return d;
}

static void test_durability(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    leasehold_recovery info;
    leasehold_status st;
    leasehold_discovery_service *s = open_dir(dir, SVC_ID, 1000, &info, &st);
    OK(st);
    CHECK(s && info.created && info.leases == 0);
    bool durable = false;
    OK(leasehold_discovery_service_is_durable(s, &durable));
    CHECK(durable);

    /* A second handle on the directory: IO. */
    leasehold_recovery info2;
    leasehold_discovery_service *s2 = open_dir(dir, SVC_ID, 1000, &info2, &st);
    CHECK(st == LEASEHOLD_STATUS_IO && s2 == NULL);

    leasehold_text lab = T("lab");
    uint64_t seq = 0, prev = 0;
    OK(leasehold_discovery_service_journal_seq(s, &prev));
    leasehold_discovery_registration a = reg(s, NAMES(&lab, 1), "10.0.0.9:4160", "A", 1, 600000, 1000);
    OK(leasehold_discovery_service_journal_seq(s, &seq));
    CHECK(seq > prev);
    OK(leasehold_discovery_service_set_listener(s, a.registration, (const uint8_t *)"http://a", 8, 1000));
    leasehold_discovery_registration b = reg(s, ALL(), NULL, "B", 1, 600000, 1000);
    announce(s, 1, "lab", "10.0.0.1:4160", 1, 600000, 1100);
    /* a's event is delivered; b's is handed out (in flight); nothing else. */
    struct ev ea = next_event(s, 1100, true);
    struct ev eb = next_event(s, 1100, false);
    CHECK(ea.found && eb.found && ea.object == a.registration && eb.object == b.registration);
    announce(s, 2, "kitchen", "10.0.0.2:4160", 1, 600000, 1200); /* b: a second event, queued */
    leasehold_lease la;
    OK(leasehold_discovery_service_lease(s, a.registration, 5000, &la));
    OK(leasehold_discovery_service_journal_seq(s, &seq));
    uint64_t d = commit(s);
    CHECK(d == seq);
    CHECK(commit(s) == d); /* nothing new */
    /* Not committed: lost with the process. */
    reg(s, ALL(), NULL, "C", 1, 600000, 5000);
    leasehold_discovery_service_free(s);

    /* Reopen on a clock that restarted from 0: time spent down does not count. */
    s = open_dir(dir, SVC_ID, 0, &info, &st);
    OK(st);
    CHECK(s && !info.created && info.leases == 2 && info.replayed > 0 && info.last_seq >= d);
    leasehold_lease la2;
    OK(leasehold_discovery_service_lease(s, a.registration, 0, &la2));
    CHECK(memcmp(la2.cookie.bytes, la.cookie.bytes, 16) == 0);
    CHECK(la2.expiration == la.expiration - 5000); /* the same time left */
    leasehold_event_registration er;
    OK(leasehold_discovery_service_event_registration(s, a.registration, 0, &er));
    CHECK(er.event_id == a.event.event_id && er.sequence == ea.sequence);
    leasehold_groups g;
    OK(leasehold_discovery_service_groups(s, a.registration, 0, &g));
    CHECK(g.count == 1 && text_eq(&g.names[0], "lab"));
    leasehold_groups_clear(&g);
    uint8_t *lb = NULL;
    size_t ln = 0;
    OK(leasehold_discovery_service_listener(s, a.registration, &lb, &ln));
    CHECK(ln == 8 && memcmp(lb, "http://a", 8) == 0);
    leasehold_bytes_free(lb, ln);
    CHECK(registrar_count(s, a.registration, 0) == 1);
    CHECK(registrar_count(s, b.registration, 0) == 2);
    leasehold_lease lc;
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_discovery_service_lease(s, 3, 0, &lc));
    bool found = true;
    uint64_t which = 0;
    OK(leasehold_discovery_service_registration_of(s, la.cookie, 0, &found, &which));
    CHECK(found && which == a.registration);

    /* b's event in flight at the crash comes again (after its delivery time-out), with the
     * same number; then its queued one, numbered next. */
    struct ev again;
    memset(&again, 0, sizeof again);
    for (int64_t t = 0; t <= 120000 && !again.found; t += 1000) again = next_event(s, t, true);
    CHECK(again.found && again.object == b.registration && again.sequence == eb.sequence);
    struct ev queued;
    memset(&queued, 0, sizeof queued);
    for (int64_t t = 120000; t <= 130000 && !queued.found; t += 1000) queued = next_event(s, t, true);
    CHECK(queued.found && queued.object == b.registration && queued.sequence == eb.sequence + 1 &&
          rid_is(queued.first, 2));
    /* a's next event continues its numbers. */
    OK(leasehold_discovery_service_discard(s, a.registration, RID(1), 130000));
    struct ev next = next_event(s, 130000, true);
    CHECK(next.found && next.object == a.registration && next.sequence == ea.sequence + 1);
    uint64_t durable_no = 0;
    OK(leasehold_discovery_service_compact(s, &durable_no));
    OK(leasehold_discovery_service_journal_seq(s, &seq));
    CHECK(durable_no == seq);
    leasehold_discovery_service_free(s);

    /* After a compaction, and with another id in the configuration. */
    s = open_dir(dir, 8, 0, &info, &st);
    CHECK(st == LEASEHOLD_STATUS_INVALID_ARGUMENT && s == NULL);
    s = open_dir(dir, SVC_ID, 0, &info, &st);
    OK(st);
    CHECK(info.leases == 2 && info.replayed == 0);
    OK(leasehold_discovery_service_event_registration(s, a.registration, 0, &er));
    CHECK(er.sequence == next.sequence);
    leasehold_discovery_service_free(s);
    store_rmdir(dir);

    /* In memory: nothing to wait for. */
    s = service();
    OK(leasehold_discovery_service_journal_seq(s, &seq));
    CHECK(seq == 0 && commit(s) == 0);
    OK(leasehold_discovery_service_is_durable(s, &durable));
    CHECK(!durable);
    leasehold_discovery_service_free(s);
}

/* The host's own storage: files in memory; what was synced, and what was appended. */
enum { DISK_FILES = 16 };
struct disk {
    char name[DISK_FILES][40];
    uint8_t *data[DISK_FILES];
    size_t len[DISK_FILES], synced[DISK_FILES];
    int n, appends, syncs;
    /* Checked by the event callback. */
    leasehold_discovery_service *s;
    int events, unsynced_seen;
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

static bool disk_all_synced(const struct disk *d) {
    for (int i = 0; i < d->n; i++)
        if (d->synced[i] != d->len[i]) return false;
    return true;
}

static int32_t durable_on_event(void *user_data, const leasehold_discovery_event *e) {
    struct disk *d = (struct disk *)user_data;
    (void)e;
    d->events++;
    if (!disk_all_synced(d)) d->unsynced_seen++;
    return LEASEHOLD_DELIVERED;
}

static int32_t durable_on_probe(void *user_data, const leasehold_unicast_request *p) {
    (void)p;
    struct disk *d = (struct disk *)user_data;
    if (!disk_all_synced(d)) d->unsynced_seen++;
    return 0;
}

static leasehold_discovery_service *open_disk(struct disk *d, leasehold_recovery *info) {
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
        files[i].len = d->synced[i]; /* what survives a crash */
    }
    leasehold_discovery_config *c = config();
    leasehold_discovery_service *s = NULL;
    OK(leasehold_discovery_service_open_io(&io, files, (size_t)d->n, c, 0, &s, info));
    leasehold_discovery_config_free(c);
    return s;
}

static void test_durable_driver_commits_first(void) {
    struct disk d;
    memset(&d, 0, sizeof d);
    leasehold_recovery info;
    leasehold_discovery_service *s = open_disk(&d, &info);
    CHECK(s && info.created && d.n == 1); /* the first snapshot */
    d.s = s;
    int written = d.appends;
    leasehold_text lab = T("lab");
    leasehold_discovery_registration r = reg(s, NAMES(&lab, 1), "p.example:1", "x", 1, 600000, 0);
    announce(s, 1, "lab", "10.0.0.1:4160", 1, 600000, 0);
    CHECK(d.appends == written); /* nothing written yet */
    int appends = d.appends;
    bool has = false;
    int64_t next = 0;
    OK(leasehold_discovery_service_drive(s, 0, durable_on_probe, durable_on_event, &d, &has, &next));
    CHECK(d.events == 1 && d.unsynced_seen == 0 && d.appends > appends);
    /* The delivery report is journaled for the next commit. */
    uint64_t seq = 0, durable = 0;
    OK(leasehold_discovery_service_journal_seq(s, &seq));
    OK(leasehold_discovery_service_commit(s, &durable));
    CHECK(durable == seq);
    leasehold_discovery_service_free(s);

    /* A crash (only synced bytes survive): the registration and its numbers are there. */
    s = open_disk(&d, &info);
    CHECK(s && !info.created && info.leases == 1);
    leasehold_event_registration er;
    OK(leasehold_discovery_service_event_registration(s, r.registration, 0, &er));
    CHECK(er.event_id == r.event.event_id && er.sequence == 1);
    CHECK(!next_event(s, 0, false).found); /* delivered before the crash */
    leasehold_discovery_service_free(s);
    for (int i = 0; i < d.n; i++) free(d.data[i]);
}

/* ---------- hostile and NULL arguments ---------- */

static void test_discovery_hostile(void) {
    leasehold_discovery_service *s = service();
    bool found = false;
    leasehold_discovery_event e;
    leasehold_unicast_request p;
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_poll_event(NULL, 0, &e, &found));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_poll_event(s, 0, NULL, &found));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_poll_transmit(s, 0, &p, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_handle_announcement(s, NULL, 0));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_handle_datagram(s, NULL, 4, 0));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_snapshot(s, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_discovery_service_handle_discovery(s, NULL, 0, NULL));
    uint8_t *b = NULL;
    size_t n = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_discovery_service_handle_discovery_bytes(s, (const uint8_t *)"x", 1, 0, 0, &b, &n));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT,
          leasehold_discovery_service_open_dir(NULL, 3, NULL, 0, NULL, NULL));
    /* Every truncation of an event, a request and a datagram: DECODE, never a crash. */
    leasehold_discovery_registration r = reg(s, ALL(), "h.example:1", "hb", 2, 600000, 0);
    announce(s, 1, "lab", "h.example:1", 1, 600000, 0);
    OK(leasehold_discovery_service_poll_event(s, 0, &e, &found));
    CHECK(found);
    OK(leasehold_discovery_event_encode(&e, LEASEHOLD_ENCODING_BINARY, &b, &n));
    leasehold_discovery_event_clear(&e);
    int refused = 0;
    for (size_t k = 0; k < n; k++) {
        leasehold_discovery_event got;
        memset(&got, 0, sizeof got);
        refused += leasehold_discovery_event_decode(b, k, LEASEHOLD_ENCODING_BINARY, NULL, &got) ==
                   LEASEHOLD_STATUS_DECODE;
        leasehold_discovery_event_clear(&got);
    }
    CHECK(refused == (int)n);
    leasehold_bytes_free(b, n);
    leasehold_discovery_request *req = NULL;
    leasehold_text loc = T("h.example:1");
    OK(leasehold_discovery_request_new_locators(1, LEASEHOLD_DISCOVERY_SET_LOCATORS, r.lease.cookie, &loc, 1, &req));
    OK(leasehold_discovery_request_encode(req, LEASEHOLD_ENCODING_BINARY, &b, &n));
    leasehold_discovery_request_free(req);
    refused = 0;
    for (size_t k = 0; k < n; k++) {
        leasehold_discovery_request *got = NULL;
        refused += leasehold_discovery_request_decode(b, k, LEASEHOLD_ENCODING_BINARY, NULL, &got) ==
                   LEASEHOLD_STATUS_DECODE;
        leasehold_discovery_request_free(got);
        uint8_t *out = NULL;
        size_t on = 0;
        /* The service answers every truncation with an error reply. */
        OK(leasehold_discovery_service_handle_discovery_bytes(s, b, k, LEASEHOLD_ENCODING_BINARY, 0, &out, &on));
        leasehold_bytes_free(out, on);
    }
    CHECK(refused == (int)n);
    leasehold_bytes_free(b, n);
    leasehold_announcement a;
    memset(&a, 0, sizeof a);
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_announcement_decode((const uint8_t *)"\x4c\x01\x24", 3, &a));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_announcement_encode(NULL, &b, &n));
    a.locator = T("h:1");
    a.ttl = 1;
    leasehold_text huge[1];
    char name[300];
    memset(name, 'n', sizeof name);
    huge[0].ptr = name;
    huge[0].len = sizeof name;
    a.groups.items = huge;
    a.groups.count = 1;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_announcement_encode(&a, &b, &n));
    /* Clearing NULL or zeroed structs does nothing. */
    leasehold_registrar zr;
    leasehold_registrar_list zl;
    leasehold_text_list zt;
    leasehold_groups zg;
    memset(&zr, 0, sizeof zr);
    memset(&zl, 0, sizeof zl);
    memset(&zt, 0, sizeof zt);
    memset(&zg, 0, sizeof zg);
    memset(&p, 0, sizeof p);
    leasehold_registrar_clear(&zr);
    leasehold_registrar_list_clear(&zl);
    leasehold_text_list_clear(&zt);
    leasehold_groups_clear(&zg);
    leasehold_unicast_request_clear(&p);
    leasehold_registrar_clear(NULL);
    leasehold_discovery_event_clear(NULL);
    leasehold_announcement_clear(NULL);
    leasehold_discovery_request_free(NULL);
    leasehold_discovery_reply_free(NULL);
    leasehold_discovery_service_free(s);
}

void test_discovery(void) {
    test_config();
    test_register_and_methods();
    test_one_event_per_registrar_until_discarded();
    test_passive_discards();
    test_leases_and_expiry();
    test_delivery();
    test_unicast();
    test_client();
    test_snapshot_restore();
    test_driver();
    test_visitors();
    test_durability();
    test_durable_driver_commits_first();
    test_discovery_hostile();
}
