#!/usr/bin/env bash
# A lease with curl against leasehold-server: grant, renew, cancel, and the 404 of a lease the
# landlord no longer knows. LEASEHOLD is the server (default http://127.0.0.1:7420). Shown in
# the book (Deploying the server) and run by scripts/test-api.sh against a server it starts.
set -euo pipefail
LEASEHOLD=${LEASEHOLD:-http://127.0.0.1:7420}
lease() { # $1: query, $2: message; prints the reply, fails on anything but a 2xx
  curl -sS --fail-with-body -H 'Content-Type: application/json' -d "$2" "$LEASEHOLD/lease$1"
}
# A lease on "printer-3" (the resource as hex) for 30 s; ids and durations are decimal strings.
reply=$(lease "" '{"v":1,"id":"1","body":{"op":"grant","resource":"7072696e7465722d33","duration":"30000"}}')
echo "$reply"
landlord=$(echo "$reply" | sed -nE 's/.*"landlord":"([0-9a-f]{16})".*/\1/p')
cookie=$(echo "$reply" | sed -nE 's/.*"cookie":"([0-9a-f]{32})".*/\1/p')
[ -n "$landlord" ] && [ -n "$cookie" ] || { echo "no lease in the reply" >&2; exit 1; }
# Renew it, naming its landlord exactly as the reply wrote it.
lease "?landlord=$landlord" "{\"v\":1,\"id\":\"2\",\"body\":{\"op\":\"renew\",\"cookie\":\"$cookie\",\"duration\":\"30000\"}}" \
  | grep -q '"op":"renewed"' || { echo "not renewed" >&2; exit 1; }
# Cancel it; then the landlord no longer knows it: a 404 with the reason in the wire reply.
cancel="{\"v\":1,\"id\":\"3\",\"body\":{\"op\":\"cancel\",\"cookie\":\"$cookie\"}}"
lease "?landlord=$landlord" "$cancel" | grep -q '"op":"cancelled"' || { echo "not cancelled" >&2; exit 1; }
status=$(curl -sS -o gone.json -w '%{http_code}' -H 'Content-Type: application/json' -d "$cancel" \
  "$LEASEHOLD/lease?landlord=$landlord")
cat gone.json; echo
[ "$status" = 404 ] && grep -q '"code":1' gone.json || { echo "expected 404 unknown lease, got $status" >&2; exit 1; }
echo "curl quickstart: ok"
