/* A very small test harness for the C tests of libleasehold: counts checks, reports failures
 * with file and line, and prints "tests: N passed, M failed" at the end. */
#ifndef LEASEHOLD_TEST_CHECK_H
#define LEASEHOLD_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#include "leasehold.h"

extern int check_passed;
extern int check_failed;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
        }                                                                                    \
    } while (0)

/* A call that must succeed. */
#define OK(call)                                                                             \
    do {                                                                                     \
        leasehold_status st_ = (call);                                                       \
        if (st_ == LEASEHOLD_STATUS_OK) {                                                    \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,         \
                    leasehold_status_name((int32_t)st_), leasehold_last_error_message());    \
        }                                                                                    \
    } while (0)

/* A call that must fail with a given status and leave a non-empty message. */
#define FAILS(expected, call)                                                                \
    do {                                                                                     \
        leasehold_status st_ = (call);                                                       \
        if (st_ == (expected) && leasehold_last_error_message()[0] != '\0') {                \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s -> %s, expected %s\n", __FILE__, __LINE__,       \
                    #call, leasehold_status_name((int32_t)st_),                              \
                    leasehold_status_name((int32_t)(expected)));                             \
        }                                                                                    \
    } while (0)

/* Sections, one per API part; each lives in its own file. */
void test_common(void);
void test_lease(void);
void test_policy(void);
void test_landlord(void);
void test_wire(void);
void test_holder(void);
void test_service(void);
void test_hostile(void);
void test_reentrancy(void);
void test_store(void);
void test_store_io(void);
void test_store_crash(void);
void test_store_vector(const char *dir);
void test_discovery(void);
void test_vectors(const char *dir);
void test_fence(const char *dir);

#endif
