/* The shared store vector (core/tests/vectors/store.json): a landlord's store directory written
 * by the core, with a torn tail. Opened through libleasehold, on real files
 * (leasehold_landlord_open_dir) and through callbacks (leasehold_landlord_open_io), it must give
 * exactly the leases, sequence number and next cookie the vector lists; its damaged copies must
 * be refused with the listed status. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "check.h"
#include "json.h"
#include "store_util.h"

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex text into a malloc'd buffer (never NULL on success). */
static uint8_t *unhex(const char *hex, size_t *len) {
    size_t n = hex ? strlen(hex) : 1;
    if (n % 2) return NULL;
    uint8_t *b = (uint8_t *)malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return NULL;
        }
        b[i] = (uint8_t)(hi * 16 + lo);
    }
    *len = n / 2;
    return b;
}

static int64_t num(const json *o, const char *key) {
    const char *s = json_str(o, key);
    if (s == NULL) {
        const json *v = json_get(o, key);
        s = v ? v->text : "0";
    }
    return strtoll(s, NULL, 10);
}

/* The files of a vector directory, decoded. */
struct files {
    leasehold_store_file f[16];
    uint8_t *data[16];
    size_t n;
};

static void files_of(const json *list, struct files *out) {
    out->n = 0;
    for (size_t i = 0; list && i < list->count && i < 16; i++) {
        size_t len = 0;
        const json *f = list->items[i];
        out->data[i] = unhex(json_str(f, "hex"), &len);
        out->f[i].name = json_str(f, "name");
        out->f[i].name_len = strlen(out->f[i].name);
        out->f[i].data = out->data[i];
        out->f[i].len = len;
        out->n++;
    }
}

static void files_free(struct files *fs) {
    for (size_t i = 0; i < fs->n; i++) free(fs->data[i]);
    fs->n = 0;
}

static void write_dir(const char *dir, const struct files *fs) {
    char path[4096];
    for (size_t i = 0; i < fs->n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, fs->f[i].name);
        CHECK(store_write_file(path, fs->f[i].data, fs->f[i].len) == 0);
    }
}

/* Callbacks that only count: the vector's tidying (a truncation) is all they are asked for. */
struct counter {
    int appends, syncs, replaces, truncates, removes;
};
static int32_t c_append(void *u, const char *f, const uint8_t *d, size_t n) {
    (void)f, (void)d, (void)n;
    ((struct counter *)u)->appends++;
    return 0;
}
static int32_t c_sync(void *u, const char *f) {
    (void)f;
    ((struct counter *)u)->syncs++;
    return 0;
}
static int32_t c_replace(void *u, const char *f, const uint8_t *d, size_t n) {
    (void)f, (void)d, (void)n;
    ((struct counter *)u)->replaces++;
    return 0;
}
static int32_t c_truncate(void *u, const char *f, uint64_t n) {
    (void)f, (void)n;
    ((struct counter *)u)->truncates++;
    return 0;
}
static int32_t c_remove(void *u, const char *f) {
    (void)f;
    ((struct counter *)u)->removes++;
    return 0;
}

struct seen {
    const json *want;
    size_t i;
    int matched;
};

static int32_t visit(void *user_data, leasehold_cookie cookie, int64_t expiration, const uint8_t *resource,
                     size_t resource_len) {
    struct seen *s = (struct seen *)user_data;
    if (s->want == NULL || s->i >= s->want->count) {
        s->i++;
        return 0;
    }
    const json *l = s->want->items[s->i++];
    char hex[LEASEHOLD_COOKIE_HEX_SIZE];
    leasehold_cookie_to_hex(cookie, hex, sizeof hex);
    size_t n = 0;
    uint8_t *r = unhex(json_str(l, "resource"), &n);
    s->matched += strcmp(hex, json_str(l, "cookie")) == 0 && expiration == num(l, "expiration") &&
                  r != NULL && n == resource_len && (n == 0 || memcmp(r, resource, n) == 0);
    free(r);
    return 0;
}

/* Everything `expect` says, on an opened landlord. */
static void check_opened(leasehold_landlord *ll, const leasehold_recovery *info, const json *v, bool first) {
    const json *e = json_get(v, "expect");
    const json *want = json_get(e, "leases");
    const json *torn = json_get(e, "torn");
    CHECK(info->torn_tail == (first && torn && torn->boolean));
    uint64_t seq = 0;
    OK(leasehold_landlord_journal_seq(ll, &seq));
    CHECK(seq == (uint64_t)num(e, "journal_seq") && info->last_seq == seq);
    struct seen s = {want, 0, 0};
    OK(leasehold_landlord_for_each(ll, visit, &s));
    CHECK(want != NULL && s.i == want->count && s.matched == (int)want->count);
    size_t waiting = 0;
    OK(leasehold_landlord_expired_len(ll, &waiting));
    CHECK(waiting == (size_t)num(e, "expired_waiting"));
    /* The cookie generator and free list go on where they were. */
    const json *ng = json_get(e, "next_grant");
    size_t rn = 0;
    uint8_t *res = unhex(json_str(ng, "resource"), &rn);
    leasehold_grant g;
    OK(leasehold_landlord_grant(ll, res, rn, num(ng, "duration"), num(ng, "now"), &g));
    char hex[LEASEHOLD_COOKIE_HEX_SIZE];
    leasehold_cookie_to_hex(g.cookie, hex, sizeof hex);
    CHECK(strcmp(hex, json_str(ng, "cookie")) == 0 && g.expiration == num(ng, "expiration"));
    free(res);
}

void test_store_vector(const char *vectors_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/store.json", vectors_dir);
    json *v = json_parse_file(path);
    CHECK(v != NULL);
    if (v == NULL) return;
    const json *lv = json_get(v, "landlord");
    const json *pol = json_get(lv, "policy");
    size_t seed_len = 0;
    uint8_t *seed = unhex(json_str(lv, "seed"), &seed_len);
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *p = NULL;
    OK(leasehold_landlord_config_new(strtoull(json_str(lv, "id"), NULL, 16), seed, seed_len, &cfg));
    OK(leasehold_landlord_config_set_store(cfg, (uint64_t)num(json_get(v, "store"), "segment_bytes"), 4u << 20));
    OK(leasehold_policy_new_bounded(num(pol, "max"), num(pol, "default"), &p));
    int64_t now = num(v, "read_now");
    struct files fs;
    files_of(json_get(v, "files"), &fs);

    /* On real files: the torn tail is reported and cut; opened again, it is gone. */
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    write_dir(dir, &fs);
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;
    OK(leasehold_landlord_open_dir(dir, strlen(dir), cfg, p, now, &ll, &info));
    if (ll) check_opened(ll, &info, v, true);
    leasehold_landlord_free(ll);
    ll = NULL;
    OK(leasehold_landlord_open_dir(dir, strlen(dir), cfg, p, now, &ll, &info));
    if (ll) check_opened(ll, &info, v, false);
    leasehold_landlord_free(ll);
    store_rmdir(dir);

    /* Through callbacks: the same, and the tidying is one truncation. */
    struct counter c;
    memset(&c, 0, sizeof c);
    leasehold_store_io io = {&c, c_append, c_sync, c_replace, c_truncate, c_remove};
    ll = NULL;
    OK(leasehold_landlord_open_io(&io, fs.f, fs.n, cfg, p, now, &ll, &info));
    if (ll) check_opened(ll, &info, v, true);
    CHECK(c.truncates == 1 && c.appends == 0 && c.replaces == 0);
    leasehold_landlord_free(ll);
    files_free(&fs);

    /* Damaged copies: refused, through either. */
    const json *damaged = json_get(v, "damaged");
    int refused = 0;
    for (size_t i = 0; damaged && i < damaged->count; i++) {
        const json *d = damaged->items[i];
        int code = (int)num(d, "error_code");
        files_of(json_get(d, "files"), &fs);
        store_tmpdir(dir, sizeof dir);
        write_dir(dir, &fs);
        ll = NULL;
        leasehold_status a = leasehold_landlord_open_dir(dir, strlen(dir), cfg, p, now, &ll, NULL);
        leasehold_status b = leasehold_landlord_open_io(&io, fs.f, fs.n, cfg, p, now, &ll, NULL);
        CHECK((int)a == code && (int)b == code && ll == NULL);
        refused += (int)a == code && (int)b == code;
        files_free(&fs);
        store_rmdir(dir);
    }
    printf("store vector: opened on files and through callbacks (torn tail cut, %zu leases, next cookie as "
           "listed); %d of %zu damaged copies refused\n",
           info.leases, refused, damaged ? damaged->count : 0);
    free(seed);
    leasehold_policy_free(p);
    leasehold_landlord_config_free(cfg);
    json_free(v);
}
