/* The Fence (issue 25): the shared vectors' fence cases (core/tests/vectors/coord.json, the
 * same cases every binding reads), and the calls' own checks. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "json.h"

static uint64_t u64_of(const char *s) {
    errno = 0;
    unsigned long long v = strtoull(s ? s : "", NULL, 10);
    return (uint64_t)v;
}

void test_fence(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/coord.json", dir);
    json *v = json_parse_file(path);
    CHECK(v != NULL);
    if (!v) return;
    const json *cases = json_get(v, "fence");
    CHECK(cases != NULL && cases->count == 6);
    for (size_t i = 0; cases && i < cases->count; i++) {
        const json *c = cases->items[i];
        const char *name = json_str(c, "name");
        leasehold_fence *f = NULL;
        OK(leasehold_fence_new(u64_of(json_str(c, "highest")), &f));
        const json *accepted = json_get(c, "accepted");
        int want = accepted && accepted->kind == J_BOOL && accepted->boolean;
        uint64_t token = u64_of(json_str(c, "token")), highest = 0;
        bool admits = false;
        OK(leasehold_fence_admits(f, token, &admits));
        CHECK(admits == (want != 0));
        leasehold_status st = leasehold_fence_check(f, token, &highest);
        if (st != (want ? LEASEHOLD_STATUS_OK : LEASEHOLD_STATUS_LEASE_DENIED))
            fprintf(stderr, "fence vector %s: status %s\n", name, leasehold_status_name((int32_t)st));
        CHECK(st == (want ? LEASEHOLD_STATUS_OK : LEASEHOLD_STATUS_LEASE_DENIED));
        if (!want) CHECK(strstr(leasehold_last_error_message(), "fenced: token") != NULL);
        CHECK(highest == u64_of(json_str(c, "highest_after")));
        uint64_t h = 0;
        OK(leasehold_fence_highest(f, &h));
        CHECK(h == highest);
        leasehold_fence_free(f);
    }
    json_free(v);

    /* A holder whose lease ended is refused after the next holder wrote; equal tokens pass. */
    leasehold_fence *f = NULL;
    OK(leasehold_fence_new(0, &f));
    OK(leasehold_fence_check(f, 7, NULL));
    OK(leasehold_fence_check(f, 7, NULL));
    OK(leasehold_fence_check(f, 9, NULL));
    uint64_t h = 0;
    FAILS(LEASEHOLD_STATUS_LEASE_DENIED, leasehold_fence_check(f, 8, &h));
    CHECK(h == 9);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_fence_check(NULL, 1, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_fence_highest(f, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_fence_new(0, NULL));
    leasehold_fence_free(f);
    leasehold_fence_free(NULL);
}
