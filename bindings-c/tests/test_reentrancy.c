/* Callbacks that call back into the handle that runs them (issue 13, finding 1): drivers,
 * visitors and failure reports (the renewal service and the discovery service are machines:
 * their calls run no user code, so they have none). Every re-entrant call works (reads, changes, a reply handed in
 * from the transport, a nested drive), except on a handle the callback freed: that one answers
 * BUSY, and the handle goes when the call that ran the callback returns (valgrind checks that
 * nothing is read after the free and nothing leaks). */
#include "check.h"
#include "util.h"

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {13, 1};

static leasehold_landlord *new_landlord(uint64_t id) { return bounded_landlord(id, SEED, 1000, 1000); }

static leasehold_lease grant(leasehold_landlord *ll, const char *resource, int64_t now) {
    leasehold_grant g;
    leasehold_lease l;
    uint64_t id = 0;
    memset(&l, 0, sizeof l);
    OK(leasehold_landlord_id(ll, &id));
    OK(leasehold_landlord_grant(ll, (const uint8_t *)resource, strlen(resource), 1000, now, &g));
    OK(leasehold_lease_from_grant(id, g.cookie, now, g.duration, &l));
    return l;
}

static leasehold_renewal_manager *new_manager(size_t max_batch) {
    leasehold_renewal_manager_config cfg;
    leasehold_renewal_manager *m = NULL;
    OK(leasehold_renewal_manager_config_default(&cfg));
    cfg.initial_rtt = 20;
    cfg.min_rto = 10;
    cfg.max_batch = max_batch;
    OK(leasehold_renewal_manager_new(&cfg, &m));
    return m;
}

/* A call on a handle freed inside a callback: BUSY, with a message that says so. */
#define BUSY_FREED(call)                                                                     \
    do {                                                                                     \
        FAILS(LEASEHOLD_STATUS_BUSY, call);                                                  \
        CHECK(strstr(leasehold_last_error_message(), "freed") != NULL);                      \
    } while (0)

static leasehold_request_op op_of(const uint8_t *data, size_t len) {
    leasehold_request *req = NULL;
    leasehold_request_op op = LEASEHOLD_REQUEST_GRANT;
    OK(leasehold_request_decode(data, len, LEASEHOLD_ENCODING_BINARY, NULL, &req));
    OK(leasehold_request_get_op(req, &op));
    leasehold_request_free(req);
    return op;
}

/* ---------- the renewal manager's driver ---------- */

enum mode { INLINE, FREE_IN_TRANSMIT, FREE_IN_EVENT, ENDLESS };

struct holder {
    leasehold_landlord *ll;
    leasehold_renewal_manager *m;
    enum mode mode;
    int64_t now;
    leasehold_lease lease, extra;
    int transmits, cancels_sent, renewed, reached, failed, in_flight;
    int64_t extra_desired;
    int drive_calls, cancel_asked_in, cancel_sent_in;
    int cancel_on_renewed, nest_on_renewed, depth;
};

static int32_t h_transmit(void *user_data, uint64_t landlord, uint64_t request_id, const uint8_t *data,
                          size_t len);
static void h_event(void *user_data, const leasehold_renewal_event *e);

static leasehold_status h_drive(struct holder *h, bool *has, int64_t *next) {
    if (h->depth == 0) h->drive_calls++;
    return leasehold_renewal_manager_drive(h->m, h->now, LEASEHOLD_ENCODING_BINARY, h_transmit, h_event, h, has,
                                           next);
}

static int32_t h_transmit(void *user_data, uint64_t landlord, uint64_t request_id, const uint8_t *data,
                          size_t len) {
    struct holder *h = (struct holder *)user_data;
    (void)landlord;
    (void)request_id;
    h->transmits++;
    leasehold_request_op op = op_of(data, len);
    if (op == LEASEHOLD_REQUEST_CANCEL || op == LEASEHOLD_REQUEST_CANCEL_ALL) {
        h->cancels_sent++;
        h->cancel_sent_in = h->drive_calls;
    }
    bool has = false;
    int64_t at = 0;
    switch (h->mode) {
    case INLINE: {
        /* Reads inside the transport: the manager is not borrowed while it runs. */
        leasehold_renewal_stats st;
        CHECK(take_num(MCALL(h->m, h->now, "{\"op\":\"size\"}")) >= 0);
        OK(leasehold_renewal_manager_stats(h->m, &st));
        OK(leasehold_machine_poll_timeout(h->m, &has, &at));
        CHECK(st.requests_sent >= 1);
        /* An in-process landlord: its reply goes straight back into the manager. */
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        OK(leasehold_landlord_handle_bytes(h->ll, data, len, LEASEHOLD_ENCODING_BINARY, h->now, &reply,
                                           &reply_len));
        OK(leasehold_renewal_manager_handle_reply_bytes(h->m, reply, reply_len, LEASEHOLD_ENCODING_BINARY,
                                                        h->now));
        leasehold_bytes_free(reply, reply_len);
        if (op == LEASEHOLD_REQUEST_RENEW || op == LEASEHOLD_REQUEST_RENEW_ALL) h->in_flight++;
        return 0;
    }
    case FREE_IN_TRANSMIT:
        leasehold_renewal_manager_free(h->m);
        BUSY_FREED(leasehold_machine_poll_timeout(h->m, &has, &at));
        BUSY_FREED(leasehold_renewal_manager_renew_for(h->m, &h->lease, 1000, 1000, h->now));
        leasehold_renewal_manager_free(h->m); /* again: ignored while the driver still runs */
        return 0;
    case ENDLESS:
        /* Each request queues another: the driver stops after a bounded number of rounds. */
        OK(leasehold_renewal_manager_renew_for(h->m, &h->lease, LEASEHOLD_FOREVER, 1000, h->now));
        OK(leasehold_renewal_manager_cancel(h->m, &h->lease, h->now));
        return 0;
    case FREE_IN_EVENT:
        return 0;
    }
    return 0;
}

static void h_event(void *user_data, const leasehold_renewal_event *e) {
    struct holder *h = (struct holder *)user_data;
    leasehold_renewal_stats st;
    if (e->kind == LEASEHOLD_RENEWAL_RENEWED) {
        h->renewed++;
        h->in_flight--;
    }
    if (e->kind == LEASEHOLD_RENEWAL_DESIRED_EXPIRATION_REACHED) h->reached++;
    if (e->kind == LEASEHOLD_RENEWAL_FAILED) h->failed++;
    if (h->mode == FREE_IN_EVENT) {
        leasehold_renewal_manager_free(h->m);
        BUSY_FREED(leasehold_renewal_manager_stats(h->m, &st));
        return;
    }
    /* Reads from inside the event handler. */
    leasehold_lease cur;
    json *leases = MCALL(h->m, h->now, "{\"op\":\"leases\"}");
    CHECK(leases && (int64_t)leases->count == take_num(MCALL(h->m, h->now, "{\"op\":\"size\"}")));
    json_free(leases);
    if (e->kind == LEASEHOLD_RENEWAL_RENEWED) {
        OK(leasehold_renewal_manager_lease(h->m, &e->lease, &cur));
        CHECK(cur.expiration == e->lease.expiration);
    }
    /* Changes from inside the event handler. */
    if (e->kind == LEASEHOLD_RENEWAL_RENEWED && h->cancel_on_renewed) {
        h->cancel_on_renewed = 0;
        h->cancel_asked_in = h->drive_calls;
        OK(leasehold_renewal_manager_cancel(h->m, &e->lease, h->now));
        OK(leasehold_renewal_manager_renew_for(h->m, &h->extra, 3000, 1000, h->now));
        h->extra_desired = h->now + 3000;
    }
    if (e->kind == LEASEHOLD_RENEWAL_RENEWED && h->nest_on_renewed && h->depth == 0) {
        bool has = false;
        int64_t next = 0;
        h->depth++;
        OK(h_drive(h, &has, &next)); /* a nested turn of the same driver */
        h->depth--;
        h->nest_on_renewed = 0;
    }
}

/* Runs the driver in virtual time until `until` (or until the manager is freed). */
static void h_run(struct holder *h, int64_t until) {
    for (int guard = 0; guard < 100000; guard++) {
        bool has = false;
        int64_t next = 0;
        OK(h_drive(h, &has, &next));
        /* Every renewal sent in this call was answered, and its event delivered, in this call. */
        CHECK(h->in_flight == 0);
        if (!has || next > until) break;
        h->now = next > h->now ? next : h->now + 1;
        OK(leasehold_landlord_handle_timeout(h->ll, h->now));
    }
}

static void test_manager_driver(void) {
    struct holder h;

    /* Reads, a reply handed back from inside the transport, reads from inside the event
     * handler: the lease is kept to its desired expiration, every renewal answered in
     * the driver call that sent it. */
    memset(&h, 0, sizeof h);
    h.ll = new_landlord(0x21);
    h.m = new_manager(10000);
    h.lease = grant(h.ll, "printer", 0);
    OK(leasehold_renewal_manager_renew_for(h.m, &h.lease, 5000, 1000, 0));
    h_run(&h, 6000);
    CHECK(h.renewed >= 4 && h.renewed == h.transmits && h.reached == 1 && h.failed == 0);

    /* Changes from inside the event handler: the first RENEWED cancels that lease and starts
     * managing another. The cancel goes out in a further round of the same driver call. */
    h.lease = grant(h.ll, "scanner", h.now);
    h.extra = grant(h.ll, "plotter", h.now);
    OK(leasehold_renewal_manager_renew_for(h.m, &h.lease, LEASEHOLD_FOREVER, 1000, h.now));
    h.cancel_on_renewed = 1;
    h.cancels_sent = 0;
    int64_t start = h.now;
    h_run(&h, start + 1000);
    CHECK(h.cancel_on_renewed == 0 && h.cancels_sent == 1);
    CHECK(h.cancel_asked_in > 0 && h.cancel_sent_in == h.cancel_asked_in);
    int64_t exp = 0;
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_get(h.ll, h.lease.cookie, h.now, &exp, NULL, NULL));
    CHECK(take_num(MCALL(h.m, h.now, "{\"op\":\"size\"}")) == 1);
    char text[160];
    exp = take_num(MCALL(h.m, h.now, "{\"op\":\"expiration\",\"lease\":%s}", lease_json(&h.extra, text, sizeof text)));
    CHECK(h.extra_desired > start && exp == h.extra_desired);

    /* A nested turn of the driver from inside its own event handler. */
    h.nest_on_renewed = 1;
    h_run(&h, h.now + 3000);
    CHECK(h.nest_on_renewed == 0 && h.failed == 0);
    leasehold_renewal_manager_free(h.m);
    leasehold_landlord_free(h.ll);

    /* The transport frees the manager: no further callback (a second request was due in the
     * same round), later calls inside the callback are BUSY, the driver answers OK and "no next
     * time", and the manager is gone when the driver returns. */
    memset(&h, 0, sizeof h);
    h.ll = new_landlord(0x22);
    h.m = new_manager(1); /* one lease per request: two requests due together */
    h.mode = FREE_IN_TRANSMIT;
    h.lease = grant(h.ll, "a", 0);
    h.extra = grant(h.ll, "b", 0);
    OK(leasehold_renewal_manager_renew_for(h.m, &h.lease, 5000, 1000, 0));
    OK(leasehold_renewal_manager_renew_for(h.m, &h.extra, 5000, 1000, 0));
    bool has = true;
    int64_t next = 0;
    OK(leasehold_machine_poll_timeout(h.m, &has, &next));
    h.now = next;
    has = true;
    OK(h_drive(&h, &has, &next));
    CHECK(h.transmits == 1 && !has);

    /* The event handler frees the manager: two leases reach their desired expiration at the
     * same time, only the first event is delivered. */
    leasehold_landlord_free(h.ll);
    memset(&h, 0, sizeof h);
    h.ll = new_landlord(0x23);
    h.m = new_manager(10000);
    h.mode = FREE_IN_EVENT;
    h.lease = grant(h.ll, "a", 0);
    h.extra = grant(h.ll, "b", 0);
    const char *until = "{\"op\":\"renew_until\",\"lease\":%s,\"desired_expiration\":500,\"renew_duration\":1000}";
    json_free(MCALL(h.m, 0, until, lease_json(&h.lease, text, sizeof text)));
    json_free(MCALL(h.m, 0, until, lease_json(&h.extra, text, sizeof text)));
    h.now = 500;
    has = true;
    OK(h_drive(&h, &has, &next));
    CHECK(h.reached == 1 && !has);

    /* A transport that queues a new request for every one it sends: the driver does not loop
     * for ever; after LEASEHOLD_DRIVE_MAX_ROUNDS rounds it asks to be called again at once. */
    leasehold_landlord_free(h.ll);
    memset(&h, 0, sizeof h);
    h.ll = new_landlord(0x24);
    h.m = new_manager(10000);
    h.mode = ENDLESS;
    h.now = 10;
    h.lease = grant(h.ll, "a", 0);
    OK(leasehold_renewal_manager_renew_for(h.m, &h.lease, LEASEHOLD_FOREVER, 1000, 0));
    OK(leasehold_renewal_manager_cancel(h.m, &h.lease, 0));
    has = false;
    OK(h_drive(&h, &has, &next));
    CHECK(h.transmits == LEASEHOLD_DRIVE_MAX_ROUNDS && h.cancels_sent == h.transmits);
    CHECK(has && next == h.now);
    leasehold_renewal_manager_free(h.m);
    leasehold_landlord_free(h.ll);
}

/* ---------- visitors and failure reports ---------- */

struct visit {
    leasehold_landlord *ll;
    leasehold_lease_map *map;
    int visited, free_at, bad;
};

static int32_t landlord_visit(void *user_data, leasehold_cookie cookie, int64_t expiration, const uint8_t *resource,
                              size_t resource_len) {
    struct visit *v = (struct visit *)user_data;
    size_t n = 0;
    (void)expiration;
    v->visited++;
    if (v->free_at == v->visited) {
        leasehold_landlord_free(v->ll);
        BUSY_FREED(leasehold_landlord_len(v->ll, &n));
        return 0;
    }
    /* Cancel the visited lease (the resource handed back is the one visited), grant another. */
    uint8_t *res = NULL;
    size_t res_len = 0;
    leasehold_grant g;
    OK(leasehold_landlord_len(v->ll, &n));
    OK(leasehold_landlord_cancel(v->ll, cookie, 0, &res, &res_len));
    if (res_len != resource_len || memcmp(res, resource, res_len) != 0) v->bad++;
    leasehold_bytes_free(res, res_len);
    OK(leasehold_landlord_grant(v->ll, (const uint8_t *)"new", 3, 1000, 0, &g));
    return 0;
}

static void test_landlord_visitor(void) {
    struct visit v;
    memset(&v, 0, sizeof v);
    v.ll = new_landlord(0x41);
    const char *names[] = {"r0", "r1", "r2", "r3", "r4"};
    leasehold_lease leases[5];
    for (int i = 0; i < 5; i++) leases[i] = grant(v.ll, names[i], 0);
    OK(leasehold_landlord_for_each(v.ll, landlord_visit, &v));
    /* The five leases held when the call started were visited, each with its own resource,
     * though the visitor cancelled them; the five it granted were not. */
    CHECK(v.visited == 5 && v.bad == 0);
    size_t n = 0;
    OK(leasehold_landlord_len(v.ll, &n));
    CHECK(n == 5);
    int64_t exp = 0;
    for (int i = 0; i < 5; i++) {
        FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_landlord_get(v.ll, leases[i].cookie, 0, &exp, NULL, NULL));
    }
    /* The visitor frees the landlord: the visit ends, the call answers OK. */
    v.visited = 0;
    v.free_at = 2;
    OK(leasehold_landlord_for_each(v.ll, landlord_visit, &v));
    CHECK(v.visited == 2);
}

static int32_t map_visit(void *user_data, const leasehold_lease *lease, int64_t duration) {
    struct visit *v = (struct visit *)user_data;
    size_t n = 0;
    (void)duration;
    v->visited++;
    if (v->free_at == v->visited) {
        leasehold_lease_map_free(v->map);
        BUSY_FREED(leasehold_lease_map_len(v->map, &n));
        return 0;
    }
    OK(leasehold_lease_map_remove(v->map, lease, NULL, NULL));
    return 0;
}

static void map_failure(void *user_data, leasehold_cookie cookie, int32_t code, const char *message) {
    struct visit *v = (struct visit *)user_data;
    size_t n = 0;
    (void)cookie;
    (void)message;
    v->visited++;
    CHECK(code == LEASEHOLD_STATUS_UNKNOWN_LEASE);
    OK(leasehold_lease_map_len(v->map, &n));
    if (v->free_at == v->visited) {
        leasehold_lease_map_free(v->map);
        BUSY_FREED(leasehold_lease_map_len(v->map, &n));
    }
}

static void test_lease_map_callbacks(void) {
    struct visit v;
    memset(&v, 0, sizeof v);
    leasehold_landlord *ll = new_landlord(0x42);
    leasehold_lease l[3];
    OK(leasehold_lease_map_new(&v.map));
    for (int i = 0; i < 3; i++) {
        l[i] = grant(ll, "x", 0);
        OK(leasehold_lease_map_insert(v.map, &l[i], 1000));
    }
    /* A visitor that removes what it visits. */
    OK(leasehold_lease_map_for_each(v.map, map_visit, &v));
    size_t n = 9;
    OK(leasehold_lease_map_len(v.map, &n));
    CHECK(v.visited == 3 && n == 0);
    /* Failure reports that read the map, then free it: the reports stop there. */
    for (int i = 0; i < 3; i++) OK(leasehold_lease_map_insert(v.map, &l[i], 1000));
    OK(leasehold_landlord_cancel(ll, l[0].cookie, 0, NULL, NULL));
    OK(leasehold_landlord_cancel(ll, l[1].cookie, 0, NULL, NULL));
    leasehold_request *req = NULL;
    leasehold_reply *rep = NULL;
    OK(leasehold_lease_map_renew_all_request(v.map, 1, &req));
    OK(leasehold_landlord_handle_request(ll, req, 10, &rep));
    v.visited = 0;
    v.free_at = 1;
    FAILS(LEASEHOLD_STATUS_LEASE_MAP, leasehold_lease_map_apply_renew_all(v.map, rep, 10, map_failure, &v));
    CHECK(v.visited == 1);
    leasehold_request_free(req);
    leasehold_reply_free(rep);
    /* A visitor that frees the map. */
    OK(leasehold_lease_map_new(&v.map));
    for (int i = 0; i < 3; i++) OK(leasehold_lease_map_insert(v.map, &l[i], 1000));
    v.visited = 0;
    v.free_at = 1;
    OK(leasehold_lease_map_for_each(v.map, map_visit, &v));
    CHECK(v.visited == 1);
    leasehold_landlord_free(ll);
}

void test_reentrancy(void) {
    CHECK(LEASEHOLD_STATUS_BUSY == 103);
    CHECK(strcmp(leasehold_status_name(LEASEHOLD_STATUS_BUSY), "BUSY") == 0);
    test_manager_driver();
    test_landlord_visitor();
    test_lease_map_callbacks();
}
