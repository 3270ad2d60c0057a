#!/usr/bin/env bash
# C binding: libleasehold and include/leasehold.h.
#  1. regenerates the header with the pinned cbindgen and fails on any difference;
#  2. compiles the header alone as C99 and as C++ (-Wall -Wextra -Werror -pedantic);
#  3. builds libleasehold (.so and .a) with cargo;
#  4. compiles the C tests (bindings-c/tests/*.c) with gcc and runs them under valgrind against
#     the shared library (zero leaks, zero errors), and once more linked statically;
#  5. builds the example (examples/c, Makefile + pkg-config) and runs it, also with sanitizers.
# Ends with the line "c: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
export CARGO_TARGET_DIR=$TARGET
LIBDIR=$TARGET/debug
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

need() { command -v "$1" >/dev/null 2>&1; }
if ! need valgrind || ! need pkg-config || ! need make || ! need g++; then
  echo "installing build tools (valgrind, pkg-config, make, g++)"
  if need apt-get; then
    { apt-get update -qq && apt-get install -y -qq valgrind pkg-config make g++; } >/dev/null
  fi
fi

CWARN=(-Wall -Wextra -Werror)

# 1. The header: regenerate with cbindgen 0.29.4 (pinned in bindings-c/gen-header) and compare.
echo "== header"
cargo build -q --locked --manifest-path bindings-c/gen-header/Cargo.toml \
  --target-dir "$TARGET/gen-header"
"$TARGET/gen-header/debug/leasehold-gen-header" bindings-c "$WORK/leasehold.h"
if diff -u include/leasehold.h "$WORK/leasehold.h"; then
  pass "include/leasehold.h matches the generated header"
else
  fail "include/leasehold.h differs from what cbindgen generates (see diff above; regenerate it)"
fi

# 2. The header compiles on its own, as C99 and as C++.
printf '#include "leasehold.h"\nint main(void) { return leasehold_version()[0] == 0; }\n' > "$WORK/h.c"
cp "$WORK/h.c" "$WORK/h.cpp"
if gcc -std=c99 -pedantic "${CWARN[@]}" -Iinclude -c "$WORK/h.c" -o "$WORK/h.o"; then
  pass "header compiles as C99"
else
  fail "header does not compile as C99"
fi
for std in c++11 c++17; do
  if g++ -std=$std -pedantic "${CWARN[@]}" -Iinclude -c "$WORK/h.cpp" -o "$WORK/hpp.o"; then
    pass "header compiles as C++ ($std)"
  else
    fail "header does not compile as C++ ($std)"
  fi
done

# 3. The library.
echo "== libleasehold"
cargo build -q -p leasehold-c
[ -f "$LIBDIR/libleasehold.so" ] && [ -f "$LIBDIR/libleasehold.a" ] \
  && pass "built libleasehold.so and libleasehold.a" || fail "libleasehold.so/.a missing"

# 4. The C tests, against the shared library under valgrind, then statically linked.
echo "== C tests"
VALGRIND=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99)
gcc -std=c99 "${CWARN[@]}" -g -Iinclude bindings-c/tests/*.c -o "$WORK/tests" \
  -L"$LIBDIR" -lleasehold -Wl,-rpath,"$LIBDIR" -lm -pthread
gcc -std=c99 "${CWARN[@]}" -g -Iinclude bindings-c/tests/*.c -o "$WORK/tests-static" \
  "$LIBDIR/libleasehold.a" -lpthread -ldl -lm -pthread
count_line() { grep -E '^tests: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n1; }
set +e
"${VALGRIND[@]}" "$WORK/tests" core/tests/vectors >"$WORK/tests.out" 2>&1
rc=$?
set -e
cat "$WORK/tests.out"
line=$(count_line "$WORK/tests.out" || true)
if [ -n "$line" ]; then
  n_ok=$(echo "$line" | sed -E 's/^tests: ([0-9]+) passed.*/\1/')
  n_bad=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
  passed=$((passed + n_ok))
  failed=$((failed + n_bad))
fi
if [ $rc -eq 0 ]; then
  pass "C tests under valgrind: no leaks, no errors"
else
  fail "C tests under valgrind (exit $rc: 99 means valgrind found errors or leaks)"
fi
set +e
"$WORK/tests-static" core/tests/vectors >"$WORK/static.out" 2>&1
rc=$?
set -e
[ $rc -eq 0 ] && pass "C tests linked with libleasehold.a" \
  || { cat "$WORK/static.out"; fail "C tests linked with libleasehold.a (exit $rc)"; }

# 4b. The README's C quickstart, as written, under valgrind.
python3 scripts/lib/readme_block.py c README.md > "$WORK/readme_quickstart.c"
if gcc -std=c99 "${CWARN[@]}" -Iinclude "$WORK/readme_quickstart.c" -o "$WORK/readme_quickstart" \
    -L"$LIBDIR" -lleasehold -Wl,-rpath,"$LIBDIR" \
  && "${VALGRIND[@]}" "$WORK/readme_quickstart"; then
  pass "README C quickstart compiles with the warnings above and runs clean under valgrind"
else
  fail "README C quickstart"
fi

# 4c. What ships: scripts/package-c.sh (release, no debug info, the archive stripped of the
#     standard library's), and the README's quickstart linked statically against that archive.
if bash scripts/package-c.sh /usr/local >"$WORK/package.out" 2>&1; then
  cat "$WORK/package.out"
  PKGDIR=$(sed -n 's/^packaged: //p' "$WORK/package.out")
  if gcc -std=c99 "${CWARN[@]}" -Iinclude "$WORK/readme_quickstart.c" -o "$WORK/readme_static" \
      "$PKGDIR/lib/libleasehold.a" -lpthread -ldl -lm && "$WORK/readme_static" >/dev/null; then
    pass "packaged libleasehold.so and .a carry no debug info; the README quickstart links and runs against the stripped .a"
  else
    fail "the README quickstart against the packaged libleasehold.a"
  fi
else
  cat "$WORK/package.out"; fail "scripts/package-c.sh (debug info in what ships?)"
fi

# 5. The example, built by its Makefile through pkg-config and run; then built again with
#    AddressSanitizer + UndefinedBehaviorSanitizer (leak checks in both processes, Rust
#    allocations included) and run again. Sanitizers rather than valgrind here: the example
#    runs on real time, which valgrind slows too much.
echo "== example"
# SCALE 4: 2 s leases. The holder must outlast a SIGKILL and a restart of its landlord; with the
# default 0.5 s a loaded CI machine sometimes took longer than the lease had left.
if make -s -C examples/c BUILD="$WORK/example" >/dev/null; then
  pass "examples/c builds with make and pkg-config"
  if timeout 60 "$WORK/example/landlord_holder" 4; then
    pass "examples/c runs"
  else
    fail "examples/c run"
  fi
else
  fail "examples/c does not build"
fi
SAN="-std=c99 -g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer"
if make -s -C examples/c BUILD="$WORK/example-asan" CFLAGS="$SAN" >/dev/null; then
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 timeout 90 \
    "$WORK/example-asan/landlord_holder" 4 >"$WORK/ex.out" 2>&1; then
    pass "examples/c under AddressSanitizer: no leaks, no errors"
  else
    cat "$WORK/ex.out"
    fail "examples/c under AddressSanitizer"
  fi
else
  fail "examples/c does not build with sanitizers"
fi

echo "c: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
