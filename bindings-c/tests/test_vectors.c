/* The shared test vectors (core/tests/vectors, schema in its README.md): the C binding must
 * produce exactly the bytes and values the Rust core does. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "json.h"

static int vectors_checked = 0;

/* A check that names the vector case when it fails. */
#define VCHECK(cond, name)                                                                   \
    do {                                                                                     \
        if (cond) {                                                                          \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: vector %s: %s (%s)\n", __FILE__, __LINE__, (name),  \
                    #cond, leasehold_last_error_message());                                  \
        }                                                                                    \
    } while (0)

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes hex text into a malloc'd buffer (never NULL on success, even when empty). */
static int unhex(const char *hex, uint8_t **out, size_t *out_len) {
    size_t n = strlen(hex);
    if (n % 2) return 0;
    uint8_t *b = (uint8_t *)malloc(n / 2 + 1);
    if (!b) return 0;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return 0;
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = b;
    *out_len = n / 2;
    return 1;
}

static int same_hex(const uint8_t *data, size_t len, const char *hex) {
    if (!hex || strlen(hex) != 2 * len) return 0;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++)
        if (hex[2 * i] != digits[data[i] >> 4] || hex[2 * i + 1] != digits[data[i] & 15]) return 0;
    return 1;
}

static int64_t i64_of(const char *s) {
    errno = 0;
    long long v = strtoll(s ? s : "", NULL, 10);
    return errno ? 0 : (int64_t)v;
}

static uint64_t u64_of(const char *s, int base) {
    errno = 0;
    unsigned long long v = strtoull(s ? s : "", NULL, base);
    return errno ? 0 : (uint64_t)v;
}

static int cookie_of(const char *hex, leasehold_cookie *c) {
    return hex && leasehold_cookie_from_hex(hex, strlen(hex), c) == LEASEHOLD_STATUS_OK;
}

/* Lease fields ({"landlord","cookie","expiration","format"}) as a leasehold_lease. */
static int lease_of(const json *f, leasehold_lease *l) {
    const char *format = json_str(f, "format");
    if (!format || !cookie_of(json_str(f, "cookie"), &l->cookie)) return 0;
    l->landlord = u64_of(json_str(f, "landlord"), 16);
    l->expiration = i64_of(json_str(f, "expiration"));
    l->serial_format = strcmp(format, "absolute") == 0 ? LEASEHOLD_SERIAL_ABSOLUTE : LEASEHOLD_SERIAL_DURATION;
    return 1;
}

static int lease_eq(const leasehold_lease *a, const leasehold_lease *b) {
    return a->landlord == b->landlord && memcmp(a->cookie.bytes, b->cookie.bytes, 16) == 0 &&
           a->expiration == b->expiration && a->serial_format == b->serial_format;
}

static int expected_code(const json *c) {
    const json *e = json_get(c, "error_code");
    return e && e->kind == J_NUMBER ? atoi(e->text) : -1;
}

/* ---------- lease.json ---------- */

static void lease_vectors(const json *doc) {
    const json *enc = json_get(doc, "encode");
    CHECK(enc && enc->kind == J_ARRAY && enc->count > 0);
    for (size_t i = 0; enc && i < enc->count; i++) {
        const json *c = enc->items[i];
        const char *name = json_str(c, "name");
        leasehold_lease lease, want, got;
        VCHECK(lease_of(json_get(c, "lease"), &lease) && lease_of(json_get(c, "decoded"), &want), name);
        int64_t write_now = i64_of(json_str(c, "write_now"));
        int64_t read_now = i64_of(json_str(c, "read_now"));
        const char *text = json_str(c, "json");
        const char *hex = json_str(c, "hex");
        char *s = NULL;
        OK(leasehold_lease_to_json(&lease, write_now, &s));
        VCHECK(s && text && strcmp(s, text) == 0, name);
        leasehold_string_free(s);
        uint8_t *b = NULL;
        size_t n = 0;
        OK(leasehold_lease_to_bytes(&lease, write_now, &b, &n));
        VCHECK(same_hex(b, n, hex), name);
        leasehold_bytes_free(b, n);
        memset(&got, 0, sizeof got);
        OK(leasehold_lease_from_json(text, strlen(text), read_now, &got));
        VCHECK(lease_eq(&got, &want), name);
        uint8_t *raw = NULL;
        VCHECK(unhex(hex, &raw, &n), name);
        memset(&got, 0, sizeof got);
        OK(leasehold_lease_from_bytes(raw, n, read_now, &got));
        VCHECK(lease_eq(&got, &want), name);
        free(raw);
        vectors_checked++;
    }
    const json *dec = json_get(doc, "decode");
    CHECK(dec && dec->kind == J_ARRAY && dec->count > 0);
    for (size_t i = 0; dec && i < dec->count; i++) {
        const json *c = dec->items[i];
        const char *name = json_str(c, "name");
        int64_t read_now = i64_of(json_str(c, "read_now"));
        leasehold_lease got;
        leasehold_status st;
        if (strcmp(json_str(c, "encoding"), "json") == 0) {
            const json *t = json_get(c, "text");
            st = leasehold_lease_from_json(t ? t->text : "", t ? t->len : 0, read_now, &got);
        } else {
            uint8_t *raw = NULL;
            size_t n = 0;
            VCHECK(unhex(json_str(c, "hex"), &raw, &n), name);
            st = leasehold_lease_from_bytes(raw, n, read_now, &got);
            free(raw);
        }
        int code = expected_code(c);
        if (code >= 0) {
            VCHECK((int)st == code, name);
        } else {
            leasehold_lease want;
            VCHECK(lease_of(json_get(c, "decoded"), &want), name);
            VCHECK(st == LEASEHOLD_STATUS_OK && lease_eq(&got, &want), name);
        }
        vectors_checked++;
    }
}

/* ---------- wire.json ---------- */

static int32_t encoding_of(const char *s) {
    return s && strcmp(s, "binary") == 0 ? LEASEHOLD_ENCODING_BINARY : LEASEHOLD_ENCODING_JSON;
}

/* Encodes a request or reply (exactly one given) and compares with the expected text and hex. */
static int encodes_to(const leasehold_request *req, const leasehold_reply *rep, const char *text,
                      const char *hex) {
    int ok = 1;
    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        uint8_t *b = NULL;
        size_t n = 0;
        leasehold_status st = req ? leasehold_request_encode(req, enc, &b, &n)
                                  : leasehold_reply_encode(rep, enc, &b, &n);
        if (st != LEASEHOLD_STATUS_OK) return 0;
        if (enc == LEASEHOLD_ENCODING_JSON)
            ok &= text != NULL && n == strlen(text) && memcmp(b, text, n) == 0;
        else
            ok &= same_hex(b, n, hex);
        leasehold_bytes_free(b, n);
    }
    return ok;
}

/* Builds a request from its message object with the leasehold_request_new_* functions. */
static leasehold_request *build_request(const json *msg) {
    const json *body = json_get(msg, "body");
    const char *op = json_str(body, "op");
    uint64_t id = u64_of(json_str(msg, "id"), 10);
    int64_t duration = i64_of(json_str(body, "duration"));
    leasehold_request *r = NULL;
    leasehold_cookie c;
    if (!op) return NULL;
    if (strcmp(op, "grant") == 0) {
        uint8_t *res = NULL;
        size_t n = 0;
        if (!unhex(json_str(body, "resource"), &res, &n)) return NULL;
        leasehold_request_new_grant(id, res, n, duration, &r);
        free(res);
    } else if (strcmp(op, "renew") == 0 && cookie_of(json_str(body, "cookie"), &c)) {
        leasehold_request_new_renew(id, c, duration, &r);
    } else if (strcmp(op, "cancel") == 0 && cookie_of(json_str(body, "cookie"), &c)) {
        leasehold_request_new_cancel(id, c, &r);
    } else if (strcmp(op, "renew_all") == 0) {
        const json *items = json_get(body, "items");
        size_t n = items ? items->count : 0;
        leasehold_renewal *v = (leasehold_renewal *)calloc(n + 1, sizeof *v);
        for (size_t i = 0; v && i < n; i++) {
            cookie_of(json_str(items->items[i], "cookie"), &v[i].cookie);
            v[i].duration = i64_of(json_str(items->items[i], "duration"));
        }
        if (v) leasehold_request_new_renew_all(id, v, n, &r);
        free(v);
    } else if (strcmp(op, "cancel_all") == 0) {
        const json *cookies = json_get(body, "cookies");
        size_t n = cookies ? cookies->count : 0;
        leasehold_cookie *v = (leasehold_cookie *)calloc(n + 1, sizeof *v);
        for (size_t i = 0; v && i < n; i++) cookie_of(cookies->items[i]->text, &v[i]);
        if (v) leasehold_request_new_cancel_all(id, v, n, &r);
        free(v);
    }
    return r;
}

/* The reply's accessors agree with its message object. */
static int reply_matches(const leasehold_reply *rep, const json *msg) {
    const json *body = json_get(msg, "body");
    const char *op = json_str(body, "op");
    uint64_t id = 0, landlord = 0;
    leasehold_reply_op rop;
    if (leasehold_reply_id(rep, &id) != LEASEHOLD_STATUS_OK || id != u64_of(json_str(msg, "id"), 10))
        return 0;
    if (leasehold_reply_landlord(rep, &landlord) != LEASEHOLD_STATUS_OK ||
        landlord != u64_of(json_str(msg, "landlord"), 16))
        return 0;
    if (leasehold_reply_get_op(rep, &rop) != LEASEHOLD_STATUS_OK || !op) return 0;
    static const char *names[] = {"", "granted", "renewed", "cancelled", "renewed_all", "cancelled_all", "error"};
    if ((int)rop < 1 || (int)rop > 6 || strcmp(names[rop], op) != 0) return 0;
    int64_t d = 0;
    if (rop == LEASEHOLD_REPLY_GRANTED || rop == LEASEHOLD_REPLY_RENEWED) {
        if (leasehold_reply_duration(rep, &d) != LEASEHOLD_STATUS_OK || d != i64_of(json_str(body, "duration")))
            return 0;
    }
    if (rop == LEASEHOLD_REPLY_ERROR) {
        int32_t code = -1;
        char *m = NULL;
        const json *want_code = json_get(body, "code");
        const json *want_msg = json_get(body, "message");
        if (leasehold_reply_error(rep, &code, &m) != LEASEHOLD_STATUS_OK) return 0;
        int ok = want_code && code == atoi(want_code->text) && want_msg && strlen(m) == want_msg->len &&
                 memcmp(m, want_msg->text, want_msg->len) == 0;
        leasehold_string_free(m);
        if (!ok) return 0;
    }
    if (rop == LEASEHOLD_REPLY_RENEWED_ALL || rop == LEASEHOLD_REPLY_CANCELLED_ALL) {
        const json *results = json_get(body, "results");
        size_t n = 0;
        if (!results || leasehold_reply_count(rep, &n) != LEASEHOLD_STATUS_OK || n != results->count) return 0;
        for (size_t i = 0; i < n; i++) {
            leasehold_batch_result r;
            char *m = NULL;
            if (leasehold_reply_result(rep, i, &r, &m) != LEASEHOLD_STATUS_OK) return 0;
            const json *err = json_get(results->items[i], "error");
            int ok;
            if (err) {
                const json *msg_text = json_get(err, "message");
                ok = (int)r.status == atoi(json_get(err, "code")->text) && msg_text &&
                     strcmp(m, msg_text->text) == 0;
            } else {
                const char *dur = json_str(results->items[i], "duration");
                ok = r.status == LEASEHOLD_STATUS_OK && r.duration == (dur ? i64_of(dur) : 0);
            }
            leasehold_string_free(m);
            if (!ok) return 0;
        }
    }
    return 1;
}

static void wire_vectors(const json *doc) {
    const json *dl = json_get(doc, "default_limits");
    leasehold_limits lim;
    OK(leasehold_limits_default(&lim));
    CHECK(dl && lim.max_message_bytes == u64_of(json_get(dl, "max_message_bytes")->text, 10) &&
          lim.max_batch == u64_of(json_get(dl, "max_batch")->text, 10) &&
          lim.max_resource_bytes == u64_of(json_get(dl, "max_resource_bytes")->text, 10));

    const json *reqs = json_get(doc, "requests");
    CHECK(reqs && reqs->count > 0);
    for (size_t i = 0; reqs && i < reqs->count; i++) {
        const json *c = reqs->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        leasehold_request *from_json = NULL, *from_bin = NULL;
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_request_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL, &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_request_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(from_json && encodes_to(from_json, NULL, text, hex), name);
        VCHECK(from_bin && encodes_to(from_bin, NULL, text, hex), name);
        leasehold_request *built = build_request(json_get(c, "message"));
        VCHECK(built && encodes_to(built, NULL, text, hex), name);
        leasehold_request_free(from_json);
        leasehold_request_free(from_bin);
        leasehold_request_free(built);
        vectors_checked++;
    }

    const json *reps = json_get(doc, "replies");
    CHECK(reps && reps->count > 0);
    for (size_t i = 0; reps && i < reps->count; i++) {
        const json *c = reps->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        leasehold_reply *from_json = NULL, *from_bin = NULL;
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_reply_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL, &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_reply_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(from_json && encodes_to(NULL, from_json, text, hex), name);
        VCHECK(from_bin && encodes_to(NULL, from_bin, text, hex), name);
        VCHECK(from_json && reply_matches(from_json, json_get(c, "message")), name);
        VCHECK(from_bin && reply_matches(from_bin, json_get(c, "message")), name);
        leasehold_reply_free(from_json);
        leasehold_reply_free(from_bin);
        vectors_checked++;
    }

    const json *dec = json_get(doc, "decode");
    CHECK(dec && dec->count > 0);
    for (size_t i = 0; dec && i < dec->count; i++) {
        const json *c = dec->items[i];
        const char *name = json_str(c, "name");
        int is_request = strcmp(json_str(c, "kind"), "request") == 0;
        int32_t enc = encoding_of(json_str(c, "encoding"));
        const json *l = json_get(c, "limits");
        leasehold_limits limits;
        if (l) {
            limits.max_message_bytes = (size_t)u64_of(json_get(l, "max_message_bytes")->text, 10);
            limits.max_batch = (size_t)u64_of(json_get(l, "max_batch")->text, 10);
            limits.max_resource_bytes = (size_t)u64_of(json_get(l, "max_resource_bytes")->text, 10);
        }
        uint8_t *raw = NULL;
        size_t n = 0;
        VCHECK(unhex(json_str(c, "hex"), &raw, &n), name);
        leasehold_request *req = NULL;
        leasehold_reply *rep = NULL;
        leasehold_status st = is_request ? leasehold_request_decode(raw, n, enc, l ? &limits : NULL, &req)
                                         : leasehold_reply_decode(raw, n, enc, l ? &limits : NULL, &rep);
        free(raw);
        int code = expected_code(c);
        if (code >= 0) {
            VCHECK((int)st == code, name);
        } else {
            /* The decoded message, written as canonical JSON, is the expected message. */
            uint8_t *b = NULL;
            size_t bn = 0;
            VCHECK(st == LEASEHOLD_STATUS_OK, name);
            if (st == LEASEHOLD_STATUS_OK) {
                if (is_request) OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_JSON, &b, &bn));
                else OK(leasehold_reply_encode(rep, LEASEHOLD_ENCODING_JSON, &b, &bn));
                json *got = json_parse((const char *)b, bn);
                VCHECK(json_equal(got, json_get(c, "message")), name);
                json_free(got);
                leasehold_bytes_free(b, bn);
            }
        }
        leasehold_request_free(req);
        leasehold_reply_free(rep);
        vectors_checked++;
    }
}

/* ---------- discovery.json ---------- */

static leasehold_text text_of(const json *s) {
    leasehold_text t;
    t.ptr = s && s->kind == J_STRING ? s->text : NULL;
    t.len = s && s->kind == J_STRING ? s->len : 0;
    return t;
}

/* An array of JSON strings as texts (a malloc'd array; the bytes stay the document's). */
static leasehold_text *texts_of(const json *arr, size_t *n) {
    *n = arr && arr->kind == J_ARRAY ? arr->count : 0;
    leasehold_text *v = (leasehold_text *)calloc(*n + 1, sizeof *v);
    for (size_t i = 0; v && i < *n; i++) v[i] = text_of(arr->items[i]);
    return v;
}

/* `null` is all groups, an array names them; `*names` is freed by the caller. */
static leasehold_groups groups_of(const json *g, leasehold_text **names) {
    leasehold_groups out;
    memset(&out, 0, sizeof out);
    *names = NULL;
    if (!g || g->kind == J_NULL) {
        out.all = true;
        return out;
    }
    *names = texts_of(g, &out.count);
    out.names = *names;
    return out;
}

/* A library text equals a JSON string, and is NUL-terminated after its bytes. */
static int text_is(const leasehold_text *t, const json *s) {
    return s && s->kind == J_STRING && t->len == s->len && memcmp(t->ptr, s->text, s->len) == 0 &&
           t->ptr[t->len] == '\0';
}

static int texts_are(const leasehold_text *items, size_t count, const json *arr) {
    if (!arr || arr->kind != J_ARRAY || arr->count != count) return 0;
    for (size_t i = 0; i < count; i++)
        if (!text_is(&items[i], arr->items[i])) return 0;
    return 1;
}

static int groups_are(const leasehold_groups *g, const json *want) {
    if (!want || want->kind == J_NULL) return g->all && g->count == 0;
    return !g->all && texts_are(g->names, g->count, want);
}

static int registrar_id_of(const char *hex, leasehold_registrar_id *id) {
    return hex && leasehold_registrar_id_from_hex(hex, strlen(hex), id) == LEASEHOLD_STATUS_OK;
}

static int registrar_id_is(leasehold_registrar_id id, const char *hex) {
    char buf[LEASEHOLD_REGISTRAR_ID_HEX_SIZE];
    return leasehold_registrar_id_to_hex(id, buf, sizeof buf) == LEASEHOLD_STATUS_OK && hex &&
           strcmp(buf, hex) == 0;
}

static int registrars_are(const leasehold_registrar_list *l, const json *arr) {
    if (!arr || arr->kind != J_ARRAY || arr->count != l->count) return 0;
    for (size_t i = 0; i < l->count; i++) {
        const leasehold_registrar *r = &l->items[i];
        const json *w = arr->items[i];
        if (!registrar_id_is(r->id, json_str(w, "id")) ||
            !texts_are(r->groups.items, r->groups.count, json_get(w, "groups")) ||
            !texts_are(r->locators.items, r->locators.count, json_get(w, "locators")))
            return 0;
    }
    return 1;
}

/* Encodes a discovery message (exactly one given) and compares with the text and hex. */
static int disc_encodes_to(const leasehold_discovery_request *req, const leasehold_discovery_reply *rep,
                           const char *text, const char *hex) {
    int ok = 1;
    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        uint8_t *b = NULL;
        size_t n = 0;
        leasehold_status st = req ? leasehold_discovery_request_encode(req, enc, &b, &n)
                                  : leasehold_discovery_reply_encode(rep, enc, &b, &n);
        if (st != LEASEHOLD_STATUS_OK) return 0;
        if (enc == LEASEHOLD_ENCODING_JSON)
            ok &= text != NULL && n == strlen(text) && memcmp(b, text, n) == 0;
        else
            ok &= same_hex(b, n, hex);
        leasehold_bytes_free(b, n);
    }
    return ok;
}

static const char *disc_ops[] = {"",           "register",      "get_groups",     "add_groups",
                                 "set_groups", "remove_groups", "get_locators",   "add_locators",
                                 "set_locators", "remove_locators", "get_registrars", "discard"};

static int32_t disc_op_of(const char *op) {
    for (int32_t i = 1; op && i <= 11; i++)
        if (strcmp(disc_ops[i], op) == 0) return i;
    return 0;
}

/* Builds a discovery request from its message object with the constructors. */
static leasehold_discovery_request *build_discovery_request(const json *msg) {
    const json *body = json_get(msg, "body");
    int32_t op = disc_op_of(json_str(body, "op"));
    uint64_t id = u64_of(json_str(msg, "id"), 10);
    leasehold_discovery_request *r = NULL;
    leasehold_cookie c;
    leasehold_text *names = NULL, *locs = NULL;
    size_t nlocs = 0;
    if (op == LEASEHOLD_DISCOVERY_REGISTER) {
        uint8_t *hb = NULL;
        size_t hn = 0;
        if (!unhex(json_str(body, "handback"), &hb, &hn)) return NULL;
        leasehold_groups g = groups_of(json_get(body, "groups"), &names);
        locs = texts_of(json_get(body, "locators"), &nlocs);
        leasehold_discovery_request_new_register(id, g, locs, nlocs, hb, hn,
                                                 i64_of(json_str(body, "duration")), &r);
        free(hb);
    } else if (!cookie_of(json_str(body, "cookie"), &c)) {
        return NULL;
    } else if (op == LEASEHOLD_DISCOVERY_GET_GROUPS || op == LEASEHOLD_DISCOVERY_GET_LOCATORS ||
               op == LEASEHOLD_DISCOVERY_GET_REGISTRARS) {
        leasehold_discovery_request_new_get(id, op, c, &r);
    } else if (op >= LEASEHOLD_DISCOVERY_ADD_GROUPS && op <= LEASEHOLD_DISCOVERY_REMOVE_GROUPS) {
        leasehold_groups g = groups_of(json_get(body, "groups"), &names);
        leasehold_discovery_request_new_groups(id, op, c, g, &r);
    } else if (op >= LEASEHOLD_DISCOVERY_ADD_LOCATORS && op <= LEASEHOLD_DISCOVERY_REMOVE_LOCATORS) {
        locs = texts_of(json_get(body, "locators"), &nlocs);
        leasehold_discovery_request_new_locators(id, op, c, locs, nlocs, &r);
    } else if (op == LEASEHOLD_DISCOVERY_DISCARD) {
        leasehold_registrar_id g;
        if (registrar_id_of(json_str(body, "registrar"), &g))
            leasehold_discovery_request_new_discard(id, c, g, &r);
    }
    free(names);
    free(locs);
    return r;
}

/* The request's accessors agree with its message object. */
static int discovery_request_matches(const leasehold_discovery_request *req, const json *msg) {
    const json *body = json_get(msg, "body");
    uint64_t id = 0;
    leasehold_discovery_op op;
    if (leasehold_discovery_request_id(req, &id) != LEASEHOLD_STATUS_OK || id != u64_of(json_str(msg, "id"), 10))
        return 0;
    if (leasehold_discovery_request_get_op(req, &op) != LEASEHOLD_STATUS_OK ||
        (int32_t)op != disc_op_of(json_str(body, "op")))
        return 0;
    leasehold_cookie got, want;
    leasehold_status st = leasehold_discovery_request_cookie(req, &got);
    if (op == LEASEHOLD_DISCOVERY_REGISTER) return st == LEASEHOLD_STATUS_INVALID_ARGUMENT;
    return st == LEASEHOLD_STATUS_OK && cookie_of(json_str(body, "cookie"), &want) &&
           memcmp(got.bytes, want.bytes, 16) == 0;
}

/* The reply's accessors agree with its message object. */
static int discovery_reply_matches(const leasehold_discovery_reply *rep, const json *msg) {
    static const char *names[] = {"", "registered", "groups", "locators", "registrars", "done", "error"};
    const json *body = json_get(msg, "body");
    const char *op_name = json_str(body, "op");
    uint64_t id = 0, landlord = 0;
    leasehold_discovery_reply_op op;
    if (leasehold_discovery_reply_id(rep, &id) != LEASEHOLD_STATUS_OK || id != u64_of(json_str(msg, "id"), 10))
        return 0;
    if (leasehold_discovery_reply_landlord(rep, &landlord) != LEASEHOLD_STATUS_OK ||
        landlord != u64_of(json_str(msg, "landlord"), 16))
        return 0;
    if (leasehold_discovery_reply_get_op(rep, &op) != LEASEHOLD_STATUS_OK || !op_name || (int)op < 1 ||
        (int)op > 6 || strcmp(names[op], op_name) != 0)
        return 0;
    int ok = 1;
    switch (op) {
    case LEASEHOLD_DISCOVERY_REGISTERED: {
        leasehold_discovery_registered r;
        leasehold_cookie c;
        ok = leasehold_discovery_reply_registered(rep, &r) == LEASEHOLD_STATUS_OK &&
             cookie_of(json_str(body, "cookie"), &c) && memcmp(c.bytes, r.cookie.bytes, 16) == 0 &&
             r.registration == u64_of(json_str(body, "registration"), 10) &&
             r.duration == i64_of(json_str(body, "duration")) &&
             r.event_id == u64_of(json_str(body, "event_id"), 10) &&
             r.sequence == u64_of(json_str(body, "sequence"), 10);
        break;
    }
    case LEASEHOLD_DISCOVERY_GROUPS: {
        leasehold_groups g;
        ok = leasehold_discovery_reply_groups(rep, &g) == LEASEHOLD_STATUS_OK && groups_are(&g, json_get(body, "groups"));
        leasehold_groups_clear(&g);
        break;
    }
    case LEASEHOLD_DISCOVERY_LOCATORS: {
        leasehold_text_list l;
        ok = leasehold_discovery_reply_locators(rep, &l) == LEASEHOLD_STATUS_OK &&
             texts_are(l.items, l.count, json_get(body, "locators"));
        leasehold_text_list_clear(&l);
        break;
    }
    case LEASEHOLD_DISCOVERY_REGISTRARS: {
        leasehold_registrar_list l;
        ok = leasehold_discovery_reply_registrars(rep, &l) == LEASEHOLD_STATUS_OK &&
             registrars_are(&l, json_get(body, "registrars"));
        leasehold_registrar_list_clear(&l);
        break;
    }
    case LEASEHOLD_DISCOVERY_DONE:
        break;
    case LEASEHOLD_DISCOVERY_ERROR: {
        int32_t code = -1;
        char *m = NULL;
        const json *want_code = json_get(body, "code"), *want_msg = json_get(body, "message");
        ok = leasehold_discovery_reply_error(rep, &code, &m) == LEASEHOLD_STATUS_OK && want_code &&
             code == atoi(want_code->text) && want_msg && strlen(m) == want_msg->len &&
             memcmp(m, want_msg->text, want_msg->len) == 0;
        leasehold_string_free(m);
        break;
    }
    }
    /* Another op's accessor is INVALID_ARGUMENT. */
    leasehold_discovery_registered r;
    if (op != LEASEHOLD_DISCOVERY_REGISTERED)
        ok &= leasehold_discovery_reply_registered(rep, &r) == LEASEHOLD_STATUS_INVALID_ARGUMENT;
    return ok;
}

/* A decoded event agrees with its message object. */
static int discovery_event_matches(const leasehold_discovery_event *e, const json *msg) {
    const json *src = json_get(msg, "source"), *discarded = json_get(msg, "discarded");
    uint8_t *hb = NULL;
    size_t hn = 0;
    int ok = unhex(json_str(msg, "handback"), &hb, &hn) && hn == e->handback_len &&
             (hn == 0 || memcmp(hb, e->handback, hn) == 0);
    free(hb);
    return ok && e->event_id == u64_of(json_str(msg, "event_id"), 10) &&
           e->sequence == u64_of(json_str(msg, "sequence"), 10) &&
           e->source.service == u64_of(json_str(src, "service"), 16) &&
           e->source.object == u64_of(json_str(src, "object"), 10) && discarded &&
           e->discarded == (discarded->boolean != 0) && registrars_are(&e->registrars, json_get(msg, "registrars"));
}

/* Encodes an event in both encodings and compares with the text and hex. */
static int event_encodes_to(const leasehold_discovery_event *e, const char *text, const char *hex) {
    int ok = 1;
    for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
        uint8_t *b = NULL;
        size_t n = 0;
        if (leasehold_discovery_event_encode(e, enc, &b, &n) != LEASEHOLD_STATUS_OK) return 0;
        ok &= enc == LEASEHOLD_ENCODING_JSON ? (text && n == strlen(text) && memcmp(b, text, n) == 0)
                                             : same_hex(b, n, hex);
        leasehold_bytes_free(b, n);
    }
    return ok;
}

/* Builds an event from its message object, in the caller's memory (texts point into the
 * document), and encodes it. */
static int built_event_encodes_to(const json *msg, const char *text, const char *hex) {
    const json *rs = json_get(msg, "registrars"), *src = json_get(msg, "source");
    size_t n = rs ? rs->count : 0;
    leasehold_registrar *regs = (leasehold_registrar *)calloc(n + 1, sizeof *regs);
    leasehold_text **lists = (leasehold_text **)calloc(2 * n + 1, sizeof *lists);
    leasehold_discovery_event e;
    memset(&e, 0, sizeof e);
    int ok = regs && lists && unhex(json_str(msg, "handback"), (uint8_t **)&e.handback, &e.handback_len);
    for (size_t i = 0; ok && i < n; i++) {
        ok &= registrar_id_of(json_str(rs->items[i], "id"), &regs[i].id);
        lists[2 * i] = texts_of(json_get(rs->items[i], "groups"), &regs[i].groups.count);
        lists[2 * i + 1] = texts_of(json_get(rs->items[i], "locators"), &regs[i].locators.count);
        regs[i].groups.items = lists[2 * i];
        regs[i].locators.items = lists[2 * i + 1];
    }
    e.event_id = u64_of(json_str(msg, "event_id"), 10);
    e.sequence = u64_of(json_str(msg, "sequence"), 10);
    e.source.service = u64_of(json_str(src, "service"), 16);
    e.source.object = u64_of(json_str(src, "object"), 10);
    e.discarded = json_get(msg, "discarded") && json_get(msg, "discarded")->boolean;
    e.registrars.items = regs;
    e.registrars.count = n;
    ok = ok && event_encodes_to(&e, text, hex);
    for (size_t i = 0; lists && i < 2 * n; i++) free(lists[i]);
    free(lists);
    free(regs);
    free((void *)e.handback);
    return ok;
}

static const char *reply_ops[] = {"", "received", "unknown_event", "error"};

/* Encodes a listener's answer from its fields (JSON), for comparing with a message. */
static json *event_reply_as_json(const leasehold_event_reply *r) {
    uint8_t *b = NULL;
    size_t n = 0;
    const char *m = r->error_message ? r->error_message : "";
    if (leasehold_event_reply_encode(r->event_id, r->sequence, (int32_t)r->op, r->error_code, m, strlen(m),
                                     LEASEHOLD_ENCODING_JSON, &b, &n) != LEASEHOLD_STATUS_OK)
        return NULL;
    json *j = json_parse((const char *)b, n);
    leasehold_bytes_free(b, n);
    return j;
}

static int event_reply_matches(const leasehold_event_reply *r, const json *msg) {
    const json *body = json_get(msg, "body");
    const char *op = json_str(body, "op");
    int ok = r->event_id == u64_of(json_str(msg, "event_id"), 10) &&
             r->sequence == u64_of(json_str(msg, "sequence"), 10) && op && (int)r->op >= 1 && (int)r->op <= 3 &&
             strcmp(reply_ops[r->op], op) == 0;
    if (ok && r->op == LEASEHOLD_EVENT_REPLY_ERROR) {
        const json *m = json_get(body, "message");
        ok = r->error_code == atoi(json_get(body, "code")->text) && m && r->error_message &&
             strlen(r->error_message) == m->len && memcmp(r->error_message, m->text, m->len) == 0;
    } else if (ok) {
        ok = r->error_code == 0 && r->error_message == NULL;
    }
    return ok;
}

static int announcement_matches(const leasehold_announcement *a, const json *f) {
    return registrar_id_is(a->registrar, json_str(f, "registrar")) &&
           texts_are(a->groups.items, a->groups.count, json_get(f, "groups")) &&
           text_is(&a->locator, json_get(f, "locator")) && a->sequence == u64_of(json_str(f, "sequence"), 10) &&
           a->ttl == i64_of(json_str(f, "ttl"));
}

static void discovery_vectors(const json *doc) {
    const json *reqs = json_get(doc, "requests");
    CHECK(reqs && reqs->count >= 11);
    for (size_t i = 0; reqs && i < reqs->count; i++) {
        const json *c = reqs->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        leasehold_discovery_request *from_json = NULL, *from_bin = NULL;
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_discovery_request_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL,
                                              &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_discovery_request_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(from_json && disc_encodes_to(from_json, NULL, text, hex), name);
        VCHECK(from_bin && disc_encodes_to(from_bin, NULL, text, hex), name);
        VCHECK(from_bin && discovery_request_matches(from_bin, json_get(c, "message")), name);
        leasehold_discovery_request *built = build_discovery_request(json_get(c, "message"));
        VCHECK(built && disc_encodes_to(built, NULL, text, hex), name);
        leasehold_discovery_request_free(from_json);
        leasehold_discovery_request_free(from_bin);
        leasehold_discovery_request_free(built);
        vectors_checked++;
    }

    const json *reps = json_get(doc, "replies");
    CHECK(reps && reps->count >= 6);
    for (size_t i = 0; reps && i < reps->count; i++) {
        const json *c = reps->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        leasehold_discovery_reply *from_json = NULL, *from_bin = NULL;
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_discovery_reply_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL,
                                            &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_discovery_reply_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(from_json && disc_encodes_to(NULL, from_json, text, hex), name);
        VCHECK(from_bin && disc_encodes_to(NULL, from_bin, text, hex), name);
        VCHECK(from_json && discovery_reply_matches(from_json, json_get(c, "message")), name);
        VCHECK(from_bin && discovery_reply_matches(from_bin, json_get(c, "message")), name);
        leasehold_discovery_reply_free(from_json);
        leasehold_discovery_reply_free(from_bin);
        vectors_checked++;
    }

    const json *events = json_get(doc, "events");
    CHECK(events && events->count >= 2);
    for (size_t i = 0; events && i < events->count; i++) {
        const json *c = events->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        leasehold_discovery_event from_json, from_bin;
        memset(&from_json, 0, sizeof from_json);
        memset(&from_bin, 0, sizeof from_bin);
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_discovery_event_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL,
                                            &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_discovery_event_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(discovery_event_matches(&from_json, json_get(c, "message")), name);
        VCHECK(discovery_event_matches(&from_bin, json_get(c, "message")), name);
        VCHECK(event_encodes_to(&from_json, text, hex) && event_encodes_to(&from_bin, text, hex), name);
        VCHECK(built_event_encodes_to(json_get(c, "message"), text, hex), name);
        leasehold_discovery_event_clear(&from_json);
        leasehold_discovery_event_clear(&from_bin);
        CHECK(from_bin.registrars.items == NULL && from_bin.handback == NULL);
        vectors_checked++;
    }

    const json *answers = json_get(doc, "event_replies");
    CHECK(answers && answers->count >= 3);
    for (size_t i = 0; answers && i < answers->count; i++) {
        const json *c = answers->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        const json *msg = json_get(c, "message"), *body = json_get(msg, "body");
        leasehold_event_reply from_json, from_bin;
        uint8_t *raw = NULL;
        size_t n = 0;
        OK(leasehold_event_reply_decode((const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON, NULL,
                                        &from_json));
        VCHECK(unhex(hex, &raw, &n), name);
        OK(leasehold_event_reply_decode(raw, n, LEASEHOLD_ENCODING_BINARY, NULL, &from_bin));
        free(raw);
        VCHECK(event_reply_matches(&from_json, msg) && event_reply_matches(&from_bin, msg), name);
        /* Built from the message's fields, it encodes to both forms. */
        int32_t op = 0;
        for (int32_t k = 1; k <= 3; k++)
            if (strcmp(reply_ops[k], json_str(body, "op")) == 0) op = k;
        const json *code = json_get(body, "code");
        const json *m = json_get(body, "message");
        for (int32_t enc = LEASEHOLD_ENCODING_JSON; enc <= LEASEHOLD_ENCODING_BINARY; enc++) {
            uint8_t *b = NULL;
            size_t bn = 0;
            OK(leasehold_event_reply_encode(u64_of(json_str(msg, "event_id"), 10), u64_of(json_str(msg, "sequence"), 10),
                                            op, code ? atoi(code->text) : 0, m ? m->text : NULL, m ? m->len : 0, enc,
                                            &b, &bn));
            VCHECK(enc == LEASEHOLD_ENCODING_JSON ? (bn == strlen(text) && memcmp(b, text, bn) == 0)
                                                  : same_hex(b, bn, hex),
                   name);
            leasehold_bytes_free(b, bn);
        }
        leasehold_string_free(from_json.error_message);
        leasehold_string_free(from_bin.error_message);
        vectors_checked++;
    }

    const json *anns = json_get(doc, "announcements");
    CHECK(anns && anns->count >= 2);
    for (size_t i = 0; anns && i < anns->count; i++) {
        const json *c = anns->items[i];
        const char *name = json_str(c, "name"), *hex = json_str(c, "hex");
        const json *f = json_get(c, "announcement");
        leasehold_announcement a;
        memset(&a, 0, sizeof a);
        leasehold_text *groups = texts_of(json_get(f, "groups"), &a.groups.count);
        a.groups.items = groups;
        a.locator = text_of(json_get(f, "locator"));
        a.sequence = u64_of(json_str(f, "sequence"), 10);
        a.ttl = i64_of(json_str(f, "ttl"));
        VCHECK(registrar_id_of(json_str(f, "registrar"), &a.registrar), name);
        uint8_t *b = NULL;
        size_t n = 0;
        OK(leasehold_announcement_encode(&a, &b, &n));
        VCHECK(same_hex(b, n, hex), name);
        leasehold_announcement got;
        memset(&got, 0, sizeof got);
        OK(leasehold_announcement_decode(b, n, &got));
        VCHECK(announcement_matches(&got, f), name);
        leasehold_announcement_clear(&got);
        leasehold_bytes_free(b, n);
        free(groups);
        vectors_checked++;
    }

    const json *dec = json_get(doc, "decode");
    CHECK(dec && dec->count > 0);
    for (size_t i = 0; dec && i < dec->count; i++) {
        const json *c = dec->items[i];
        const char *name = json_str(c, "name"), *kind = json_str(c, "kind");
        int32_t enc = encoding_of(json_str(c, "encoding"));
        const json *l = json_get(c, "limits");
        leasehold_limits limits;
        if (l) {
            limits.max_message_bytes = (size_t)u64_of(json_get(l, "max_message_bytes")->text, 10);
            limits.max_batch = (size_t)u64_of(json_get(l, "max_batch")->text, 10);
            limits.max_resource_bytes = (size_t)u64_of(json_get(l, "max_resource_bytes")->text, 10);
        }
        const leasehold_limits *lim = l ? &limits : NULL;
        uint8_t *raw = NULL, *b = NULL;
        size_t n = 0, bn = 0;
        VCHECK(unhex(json_str(c, "hex"), &raw, &n), name);
        leasehold_status st = LEASEHOLD_STATUS_PANIC;
        json *got = NULL; /* the decoded message as canonical JSON */
        int announcement_ok = 0;
        if (strcmp(kind, "request") == 0) {
            leasehold_discovery_request *r = NULL;
            st = leasehold_discovery_request_decode(raw, n, enc, lim, &r);
            if (st == LEASEHOLD_STATUS_OK && leasehold_discovery_request_encode(r, LEASEHOLD_ENCODING_JSON, &b, &bn) == 0)
                got = json_parse((const char *)b, bn);
            leasehold_discovery_request_free(r);
        } else if (strcmp(kind, "reply") == 0) {
            leasehold_discovery_reply *r = NULL;
            st = leasehold_discovery_reply_decode(raw, n, enc, lim, &r);
            if (st == LEASEHOLD_STATUS_OK && leasehold_discovery_reply_encode(r, LEASEHOLD_ENCODING_JSON, &b, &bn) == 0)
                got = json_parse((const char *)b, bn);
            leasehold_discovery_reply_free(r);
        } else if (strcmp(kind, "event") == 0) {
            leasehold_discovery_event e;
            memset(&e, 0, sizeof e);
            st = leasehold_discovery_event_decode(raw, n, enc, lim, &e);
            if (st == LEASEHOLD_STATUS_OK && leasehold_discovery_event_encode(&e, LEASEHOLD_ENCODING_JSON, &b, &bn) == 0)
                got = json_parse((const char *)b, bn);
            leasehold_discovery_event_clear(&e);
        } else if (strcmp(kind, "event_reply") == 0) {
            leasehold_event_reply r;
            memset(&r, 0, sizeof r);
            st = leasehold_event_reply_decode(raw, n, enc, lim, &r);
            if (st == LEASEHOLD_STATUS_OK) got = event_reply_as_json(&r);
            leasehold_string_free(r.error_message);
        } else if (strcmp(kind, "announcement") == 0) {
            leasehold_announcement a;
            memset(&a, 0, sizeof a);
            st = leasehold_announcement_decode(raw, n, &a);
            if (st == LEASEHOLD_STATUS_OK) announcement_ok = announcement_matches(&a, json_get(c, "announcement"));
            leasehold_announcement_clear(&a);
        }
        free(raw);
        leasehold_bytes_free(b, bn);
        int code = expected_code(c);
        if (code >= 0) {
            VCHECK((int)st == code, name);
        } else if (strcmp(kind, "announcement") == 0) {
            VCHECK(st == LEASEHOLD_STATUS_OK && announcement_ok, name);
        } else {
            VCHECK(st == LEASEHOLD_STATUS_OK && json_equal(got, json_get(c, "message")), name);
        }
        json_free(got);
        vectors_checked++;
    }
}

/* ---------- errors.json ---------- */

static void error_vectors(const json *doc) {
    const json *codes = json_get(doc, "codes");
    CHECK(codes && codes->count >= 7);
    for (size_t i = 0; codes && i < codes->count; i++) {
        const json *c = codes->items[i];
        int code = atoi(json_get(c, "code")->text);
        const char *want = json_str(c, "name");
        const char *got = leasehold_status_name(code);
        int same = want && strlen(want) == strlen(got);
        for (size_t k = 0; same && want[k]; k++) same = tolower((unsigned char)got[k]) == want[k];
        VCHECK(same, want);
        const json *definite = json_get(c, "definite");
        bool is_definite = false;
        if (code == 0) {
            FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_status_is_definite(code, &is_definite));
        } else {
            OK(leasehold_status_is_definite(code, &is_definite));
            VCHECK(definite && definite->kind == J_BOOL && is_definite == (definite->boolean != 0), want);
        }
        vectors_checked++;
    }
}

static json *load(const char *dir, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json *doc = json_parse_file(path);
    if (!doc) fprintf(stderr, "FAIL: cannot read vectors %s\n", path);
    CHECK(doc != NULL);
    const json *schema = json_get(doc, "schema");
    CHECK(schema && strcmp(schema->text, "1") == 0);
    return doc;
}

void test_vectors(const char *dir) {
    json *lease = load(dir, "lease.json");
    json *wire = load(dir, "wire.json");
    json *errors = load(dir, "errors.json");
    json *discovery = load(dir, "discovery.json");
    if (lease) lease_vectors(lease);
    if (wire) wire_vectors(wire);
    if (errors) error_vectors(errors);
    if (discovery) discovery_vectors(discovery);
    json_free(discovery);
    json_free(lease);
    json_free(wire);
    json_free(errors);
    printf("vectors: %d cases checked from %s\n", vectors_checked, dir);
}
