/* Runs every section of the C tests of libleasehold. Usage: leasehold_tests [VECTORS_DIR] */
#include "check.h"

int check_passed = 0;
int check_failed = 0;

int main(int argc, char **argv) {
    test_common();
    test_lease();
    test_policy();
    test_landlord();
    test_wire();
    test_holder();
    test_service();
    test_hostile();
    test_reentrancy();
    test_store();
    test_store_io();
    test_store_crash();
    test_discovery();
    test_store_vector(argc > 1 ? argv[1] : "core/tests/vectors");
    test_vectors(argc > 1 ? argv[1] : "core/tests/vectors");
    test_fence(argc > 1 ? argv[1] : "core/tests/vectors");
    printf("tests: %d passed, %d failed\n", check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}
