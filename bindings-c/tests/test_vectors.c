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

/* ---------- discovery.json: every message through leasehold_message_transcode ---------- */

/* `n` bytes of message kind `kind` re-encoded from `from` to `to`; NULL on failure, with the
 * status in `*st`. Free with leasehold_bytes_free. */
static uint8_t *transcode(const char *kind, const uint8_t *b, size_t n, int32_t from, int32_t to,
                          const leasehold_limits *lim, size_t *out_n, leasehold_status *st) {
    uint8_t *out = NULL;
    *out_n = 0;
    *st = leasehold_message_transcode(kind, b, n, from, to, lim, &out, out_n);
    return *st == LEASEHOLD_STATUS_OK ? out : NULL;
}

/* Every case of `arr` both ways in both encodings: its JSON text and its bytes read as each
 * other, each canonical as it is, and its JSON text parses to the vector's message object. */
static void message_vectors(const json *arr, const char *kind, size_t min) {
    CHECK(arr && arr->count >= min);
    for (size_t i = 0; arr && i < arr->count; i++) {
        const json *c = arr->items[i];
        const char *name = json_str(c, "name"), *text = json_str(c, "json"), *hex = json_str(c, "hex");
        uint8_t *raw = NULL, *b;
        size_t n = 0, bn = 0;
        leasehold_status st;
        VCHECK(unhex(hex, &raw, &n), name);
        const uint8_t *t = (const uint8_t *)text;
        b = transcode(kind, t, strlen(text), LEASEHOLD_ENCODING_JSON, LEASEHOLD_ENCODING_BINARY, NULL, &bn, &st);
        VCHECK(b && same_hex(b, bn, hex), name);
        leasehold_bytes_free(b, bn);
        b = transcode(kind, t, strlen(text), LEASEHOLD_ENCODING_JSON, LEASEHOLD_ENCODING_JSON, NULL, &bn, &st);
        VCHECK(b && bn == strlen(text) && memcmp(b, text, bn) == 0, name);
        leasehold_bytes_free(b, bn);
        b = transcode(kind, raw, n, LEASEHOLD_ENCODING_BINARY, LEASEHOLD_ENCODING_BINARY, NULL, &bn, &st);
        VCHECK(b && same_hex(b, bn, hex), name);
        leasehold_bytes_free(b, bn);
        b = transcode(kind, raw, n, LEASEHOLD_ENCODING_BINARY, LEASEHOLD_ENCODING_JSON, NULL, &bn, &st);
        VCHECK(b && bn == strlen(text) && memcmp(b, text, bn) == 0, name);
        json *got = b ? json_parse((const char *)b, bn) : NULL;
        VCHECK(got && json_equal(got, json_get(c, "message")), name);
        json_free(got);
        leasehold_bytes_free(b, bn);
        free(raw);
        vectors_checked++;
    }
}

/* An announcement's data form (numbers as numbers) equals the vector's (numbers as text). */
static int announcement_matches(const json *got, const json *want) {
    const json *seq = json_get(got, "sequence"), *ttl = json_get(got, "ttl");
    return got && json_equal(json_get(got, "registrar"), json_get(want, "registrar")) &&
           json_equal(json_get(got, "groups"), json_get(want, "groups")) &&
           json_equal(json_get(got, "locator"), json_get(want, "locator")) && seq && ttl &&
           seq->kind == J_NUMBER && strcmp(seq->text, json_str(want, "sequence")) == 0 && ttl->kind == J_NUMBER &&
           strcmp(ttl->text, json_str(want, "ttl")) == 0;
}

/* The data form of the vector's announcement, as JSON text (its strings need no escapes). */
static void announcement_text(const json *f, char *buf, size_t size) {
    const json *g = json_get(f, "groups");
    size_t k = (size_t)snprintf(buf, size, "{\"registrar\":\"%s\",\"groups\":[", json_str(f, "registrar"));
    for (size_t i = 0; g && i < g->count && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s\"%s\"", i ? "," : "", g->items[i]->text);
    if (k < size)
        snprintf(buf + k, size - k, "],\"locator\":\"%s\",\"sequence\":%s,\"ttl\":%s}", json_str(f, "locator"),
                 json_str(f, "sequence"), json_str(f, "ttl"));
}

static const char *message_kind(const char *vector_kind) {
    static const char *kinds[][2] = {{"request", "DiscoveryRequest"},     {"reply", "DiscoveryReply"},
                                     {"event", "DiscoveryEvent"},         {"event_reply", "EventReply"},
                                     {"announcement", "Announcement"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (vector_kind && strcmp(kinds[i][0], vector_kind) == 0) return kinds[i][1];
    return "?";
}

static void discovery_vectors(const json *doc) {
    message_vectors(json_get(doc, "requests"), "DiscoveryRequest", 11);
    message_vectors(json_get(doc, "replies"), "DiscoveryReply", 6);
    message_vectors(json_get(doc, "events"), "DiscoveryEvent", 2);
    message_vectors(json_get(doc, "event_replies"), "EventReply", 3);

    const json *anns = json_get(doc, "announcements");
    CHECK(anns && anns->count >= 2);
    for (size_t i = 0; anns && i < anns->count; i++) {
        const json *c = anns->items[i];
        const char *name = json_str(c, "name"), *hex = json_str(c, "hex");
        const json *f = json_get(c, "announcement");
        char text[1024];
        announcement_text(f, text, sizeof text);
        uint8_t *b, *back;
        size_t n = 0, bn = 0;
        leasehold_status st;
        b = transcode("Announcement", (const uint8_t *)text, strlen(text), LEASEHOLD_ENCODING_JSON,
                      LEASEHOLD_ENCODING_BINARY, NULL, &n, &st);
        VCHECK(b && same_hex(b, n, hex), name);
        back = transcode("Announcement", b, n, LEASEHOLD_ENCODING_BINARY, LEASEHOLD_ENCODING_JSON, NULL, &bn, &st);
        json *got = back ? json_parse((const char *)back, bn) : NULL;
        VCHECK(announcement_matches(got, f), name);
        json_free(got);
        leasehold_bytes_free(back, bn);
        leasehold_bytes_free(b, n);
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
        uint8_t *raw = NULL;
        size_t n = 0, bn = 0;
        leasehold_status st;
        VCHECK(unhex(json_str(c, "hex"), &raw, &n), name);
        int announcement = strcmp(kind, "announcement") == 0;
        /* A datagram has one encoding: it is read as binary whatever the case names. */
        uint8_t *b = transcode(message_kind(kind), raw, n, announcement ? LEASEHOLD_ENCODING_BINARY : enc,
                               LEASEHOLD_ENCODING_JSON, l ? &limits : NULL, &bn, &st);
        json *got = b ? json_parse((const char *)b, bn) : NULL;
        int code = expected_code(c);
        if (code >= 0) {
            VCHECK((int)st == code, name);
        } else if (announcement) {
            VCHECK(st == LEASEHOLD_STATUS_OK && announcement_matches(got, json_get(c, "announcement")), name);
        } else {
            VCHECK(st == LEASEHOLD_STATUS_OK && json_equal(got, json_get(c, "message")), name);
        }
        json_free(got);
        leasehold_bytes_free(b, bn);
        free(raw);
        vectors_checked++;
    }
    uint8_t *b = NULL;
    size_t bn = 0;
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_message_transcode("Nothing", (const uint8_t *)"{}", 2, 1, 2, NULL, &b, &bn));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_message_transcode(NULL, (const uint8_t *)"{}", 2, 1, 2, NULL, &b, &bn));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT,
          leasehold_message_transcode("EventReply", (const uint8_t *)"{}", 2, 3, 2, NULL, &b, &bn));
    FAILS(LEASEHOLD_STATUS_DECODE,
          leasehold_message_transcode("EventReply", (const uint8_t *)"{}", 2, 1, 2, NULL, &b, &bn));
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
