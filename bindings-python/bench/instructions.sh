#!/usr/bin/env bash
# Instructions per call of discovery calls through the Python binding, under valgrind's
# callgrind (load on the machine does not count): each call 2000 times minus the same script
# with none. Prints "call instructions" lines.
#   bash bindings-python/bench/instructions.sh PYTHON [call...]   (calls: see calls_discovery.py)
set -euo pipefail
py=$1; shift
here="$(cd "$(dirname "$0")" && pwd)"
calls=("$@"); [ ${#calls[@]} -gt 0 ] || calls=(groups registrars lease announcement_new handle_announcement register delivered)
ir() { PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$py" "$here/calls_discovery.py" "$1" "$2" 2>&1 | grep -o "Collected : [0-9]*" | grep -o "[0-9]*"; }
for op in "${calls[@]}"; do
  a=$(ir "$op" 0); b=$(ir "$op" 2000)
  echo "$op $(( (b - a) / 2000 ))"
done
