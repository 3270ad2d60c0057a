/* Helpers the tests share: the machine interface as the tests call it (an input given
 * printf-style with its answer parsed, a lease in its data form, numbers read from answers), and
 * a landlord with a bounded policy. */
#ifndef LEASEHOLD_TEST_UTIL_H
#define LEASEHOLD_TEST_UTIL_H

#include <stdint.h>

#include "check.h"
#include "json.h"

/* The status of the last machine_try. */
extern leasehold_status machine_status;

/* The call given as printf-formatted JSON, made at `now`: its answer parsed, NULL on failure. */
json *machine_try(leasehold_machine *m, int64_t now, const char *fmt, ...);
/* `v`, counted as a passed check, or a failed one reported at `file`:`line` when NULL. */
json *machine_must(json *v, const char *file, int line);
/* A call that must succeed: its answer (json_free it). */
#define MCALL(m, now, ...) machine_must(machine_try((m), (now), __VA_ARGS__), __FILE__, __LINE__)
/* A call that must fail with `status`. */
#define MREFUSED(status, m, now, ...)                                                        \
    do {                                                                                     \
        json *v_ = machine_try((m), (now), __VA_ARGS__);                                     \
        CHECK(v_ == NULL && machine_status == (status) && leasehold_last_error_message()[0]);                                   \
        json_free(v_);                                                                       \
    } while (0)

/* A number (or the number a string starts with) of an answer; -999 for none. */
int64_t json_num(const json *v);
/* The number answered, freeing the answer. */
int64_t take_num(json *v);
/* Whether the answer is null, freeing it. */
int take_null(json *v);
/* `lease` in its data form, `{"landlord", "cookie", "expiration"}`, written into `buf`. */
const char *lease_json(const leasehold_lease *lease, char *buf, size_t size);

/* A landlord `id` with `seed` (LEASEHOLD_SEED_SIZE bytes) and a bounded policy: grants of at
 * most `max` ms, `preferred` when asked for ANY. */
leasehold_landlord *bounded_landlord(uint64_t id, const uint8_t *seed, int64_t max, int64_t preferred);

#endif
