/* Helpers of the durable-landlord tests: scratch directories, files, a seeded random
 * generator, and a landlord configuration. */
#ifndef LEASEHOLD_TEST_STORE_UTIL_H
#define LEASEHOLD_TEST_STORE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "leasehold.h"

/* A new empty directory under $TMPDIR (or /tmp); the path is static storage of the caller. */
void store_tmpdir(char *buf, size_t buf_len);
/* Removes a directory and the files in it. */
void store_rmdir(const char *path);
/* Reads a whole file into a malloc'd buffer (NULL if missing). */
uint8_t *store_read_file(const char *path, size_t *len);
/* Writes a whole file. Returns 0 on success. */
int store_write_file(const char *path, const uint8_t *data, size_t len);
/* The name of the highest-numbered log segment in `dir` (NULL if none); static storage. */
const char *store_last_segment(const char *dir);
/* How many log segments `dir` holds. */
int store_segment_count(const char *dir);

/* xorshift64*: a seeded generator, so a failing run replays exactly. */
uint64_t store_rand(uint64_t *state);

/* A landlord configuration and policy for the durable tests: id 7, a fixed seed, leases of
 * at most 10^9 ms (none expires while a test runs), store settings as given (0: defaults). */
leasehold_landlord_config *store_config(uint64_t segment_bytes, uint64_t min_compact_bytes);
leasehold_policy *store_policy(void);

/* Opens (or creates) the durable landlord in `dir`; returns the status. */
leasehold_status store_open(const char *dir, const leasehold_landlord_config *cfg, int64_t now,
                            leasehold_landlord **out, leasehold_recovery *info);

#endif
