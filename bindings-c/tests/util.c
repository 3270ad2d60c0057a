/* Helpers the tests share (util.h). */
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>

leasehold_status machine_status;

json *machine_try(leasehold_machine *m, int64_t now, const char *fmt, ...) {
    char in[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in, sizeof in, fmt, ap);
    va_end(ap);
    char *out = NULL;
    machine_status = leasehold_machine_handle(m, in, strlen(in), now, &out);
    if (machine_status != LEASEHOLD_STATUS_OK) return NULL;
    json *v = json_parse(out, strlen(out));
    leasehold_string_free(out);
    return v;
}

json *machine_must(json *v, const char *file, int line) {
    if (v) {
        check_passed++;
    } else {
        check_failed++;
        fprintf(stderr, "FAIL %s:%d: call -> %s: %s\n", file, line, leasehold_status_name((int32_t)machine_status),
                leasehold_last_error_message());
    }
    return v;
}

int64_t json_num(const json *v) { return v && v->text ? strtoll(v->text, NULL, 10) : -999; }

int64_t take_num(json *v) {
    int64_t n = json_num(v);
    json_free(v);
    return n;
}

int take_null(json *v) {
    int r = v && v->kind == J_NULL;
    json_free(v);
    return r;
}

const char *lease_json(const leasehold_lease *lease, char *buf, size_t size) {
    char hex[LEASEHOLD_COOKIE_HEX_SIZE];
    if (leasehold_cookie_to_hex(lease->cookie, hex, sizeof hex) != LEASEHOLD_STATUS_OK) hex[0] = '\0';
    snprintf(buf, size, "{\"landlord\":\"%016llx\",\"cookie\":\"%s\",\"expiration\":%lld}",
             (unsigned long long)lease->landlord, hex, (long long)lease->expiration);
    return buf;
}

leasehold_landlord *bounded_landlord(uint64_t id, const uint8_t *seed, int64_t max, int64_t preferred) {
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *p = NULL;
    leasehold_landlord *ll = NULL;
    OK(leasehold_landlord_config_new(id, seed, LEASEHOLD_SEED_SIZE, &cfg));
    OK(leasehold_policy_new_bounded(max, preferred, &p));
    OK(leasehold_landlord_new(cfg, p, &ll));
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(p);
    return ll;
}
