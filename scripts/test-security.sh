#!/usr/bin/env bash
# The hostile-client suite (issue 22, docs/security.md): leasehold-server attacked as an
# outsider, a client with a token, and a client with a certificate would. Certificates are
# made here with openssl; PostgreSQL runs with ssl=on and a test CA.
#
#   tokens and certificates: no token 401, wrong token 403, an operation or prefix not
#     granted 403, a quota reached 409 with its reason, admin and metrics need their
#     permission, mTLS identities, a client certificate from another CA refused, a server
#     checked against the wrong CA refused, plain HTTP to the TLS port refused, SIGHUP
#     reloads the certificate and the tokens without dropping a connection;
#   limits: a 100 KB header refused (431), slowloris connections closed after the header
#     time-out while a holder's p99 stays under 50 ms, idle connections closed, a
#     3,000,000-grant flood stopped at the capacity with RSS bounded (printed);
#   servers: a forwarded request without, or with a forged or stale proof, refused; two
#     servers forwarding to each other over TLS with signed requests, on PostgreSQL over TLS
#     (sslmode=verify-full), and a database certificate from the wrong CA refused.
#
# Usage: scripts/test-security.sh [FLOOD]   (grants in the flood, default 3000000)
set -euo pipefail
cd "$(dirname "$0")/.."
FLOOD=${1:-3000000}
source scripts/lib/pg.sh
command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq openssl >/dev/null; }
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }
nice -n 10 cargo build --release -q -p leasehold-server
BIN_DIR=$PWD/target/release
BIN=$BIN_DIR/leasehold-server
H="python3 $PWD/scripts/lib/hostile.py"
T=$(mktemp -d /tmp/leasehold-security.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true; done
  pg_stop
  rm -rf "$T"
}
trap cleanup EXIT
ulimit -n 8192 2>/dev/null || true
FAILS=0
ok() { echo "  ok: $*"; }
bad() { echo "  FAIL: $*"; FAILS=$((FAILS + 1)); }
expect() { # expect NAME WANT GOT
  if [ "$2" = "$3" ]; then ok "$1 ($3)"; else bad "$1: wanted $2, got $3"; fi
}
# start NAME ARGS...: starts a server on a free port; sets URL_<NAME>, PORT_<NAME>, PID_<NAME>,
# METRICS_<NAME> (if --metrics-listen was given).
start() {
  local name=$1; shift
  "$BIN" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 100); do grep -q "listening on" "$T/$name.out" && break; sleep 0.1; done
  local url
  url=$(grep "listening on" "$T/$name.out" | awk '{print $NF}') || { cat "$T/$name.err"; exit 1; }
  printf -v "URL_$name" %s "$url"
  printf -v "PORT_$name" %s "${url##*:}"
  printf -v "PID_$name" %s "$pid"
  printf -v "METRICS_$name" %s "$(grep "metrics on" "$T/$name.out" | awk '{print $NF}')"
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
grant() { # grant RESOURCE MS: a JSON grant request
  printf '{"v":1,"id":"1","body":{"op":"grant","resource":"%s","duration":"%s"}}' "$(printf %s "$1" | od -An -tx1 | tr -d ' \n')" "$2"
}
J='content-type: application/json'
# st ARGS...: the HTTP status curl gets (000: no HTTP answer).
st() { curl -s -o "$T/body" -w '%{http_code}' --cacert "$T/c/ca.pem" "$@" || true; }

echo "== certificates"
bash scripts/lib/mkcerts.sh "$T/c"
C=$T/c

echo "== tokens and certificates (TLS, mTLS optional, tokens file)"
"$BIN" token add --file "$T/tokens.toml" --name alice --ops grant,renew,cancel --prefix alice/ --max-leases 3 --max-lease-ms 5000 >"$T/alice.tok"
"$BIN" token add --file "$T/tokens.toml" --name reader --ops renew >"$T/reader.tok"
"$BIN" token add --file "$T/tokens.toml" --name ops --ops admin,metrics >"$T/ops.tok"
"$BIN" token add --file "$T/tokens.toml" --name worker.example --cert --ops grant,renew,cancel >/dev/null
"$BIN" token list --file "$T/tokens.toml" | sed 's/^/    /'
grep -q "$(cut -d_ -f3 "$T/alice.tok")" "$T/tokens.toml" && bad "the tokens file holds a token in clear" || ok "the tokens file holds hashes only"
cp "$C/server.pem" "$T/live.pem"; cp "$C/server.key" "$T/live.key"
start tls --data "$T/d-tls" --tokens "$T/tokens.toml" --tls-cert "$T/live.pem" --tls-key "$T/live.key" \
  --tls-client-ca "$C/ca.pem" --tls-client-auth optional --metrics-listen 127.0.0.1:0
U=$URL_tls
A="authorization: Bearer $(cat "$T/alice.tok")"
expect "no token" 401 "$(st -H "$J" -d "$(grant alice/a 1000)" "$U/lease")"
expect "wrong token" 403 "$(st -H "authorization: Bearer lh_0011223344556677_$(printf '%064d' 0)" -H "$J" -d "$(grant alice/a 1000)" "$U/lease")"
# alice's token with its last hex digit changed (to 1 when it already ends in 0): same id, wrong secret
ALICE=$(cat "$T/alice.tok"); case "$ALICE" in *0) FORGED="${ALICE%?}1" ;; *) FORGED="${ALICE%?}0" ;; esac
expect "a known token id with a wrong secret" 403 "$(st -H "authorization: Bearer $FORGED" -H "$J" -d "$(grant alice/a 1000)" "$U/lease")"
expect "operation not granted (renew-only token grants)" 403 "$(st -H "authorization: Bearer $(cat "$T/reader.tok")" -H "$J" -d "$(grant alice/a 1000)" "$U/lease")"
expect "prefix not granted" 403 "$(st -H "$A" -H "$J" -d "$(grant bob/a 1000)" "$U/lease")"
grep -q 'may lease only resources starting with' "$T/body" && ok "the refusal says which prefixes" || bad "no reason: $(cat "$T/body")"
expect "grant under the prefix" 200 "$(st -H "$A" -H "$J" -d "$(grant alice/a 600000)" "$U/lease")"
grep -q '"duration":"5000"' "$T/body" && ok "the longest lease cut to the identity's 5000 ms" || bad "not cut: $(cat "$T/body")"
st -H "$A" -H "$J" -d "$(grant alice/b 5000)" "$U/lease" >/dev/null
st -H "$A" -H "$J" -d "$(grant alice/c 5000)" "$U/lease" >/dev/null
expect "quota reached" 409 "$(st -H "$A" -H "$J" -d "$(grant alice/d 5000)" "$U/lease")"
grep -q 'quota reached: identity \\"alice\\" holds 3 of its 3 live leases' "$T/body" && ok "the denial says why" || bad "reason: $(cat "$T/body")"
expect "client certificate identity" 200 "$(st --cert "$C/client.pem" --key "$C/client.key" -H "$J" -d "$(grant any/a 1000)" "$U/lease")"
code=$(st --cert "$C/rogue.pem" --key "$C/rogue.key" -H "$J" -d "$(grant any/a 1000)" "$U/lease")
expect "client certificate from another CA: handshake refused" 000 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$C/otherca.pem" "$U/livez" || true)
expect "server checked against the wrong CA: refused by the client" 000 "$code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT_tls/livez" || true)
expect "plain HTTP to the TLS port" 000 "$code"
expect "metrics without the permission" 403 "$(st -H "$A" "$U/metrics")"
expect "metrics with it" 200 "$(st -H "authorization: Bearer $(cat "$T/ops.tok")" "$U/metrics")"
expect "metrics on the operators' listener, no token" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_tls/metrics")"
expect "admin without the permission" 403 "$(st -H "$A" "$U/admin/landlords/0000000000000001/leases")"
expect "admin with it" 200 "$(st -H "authorization: Bearer $(cat "$T/ops.tok")" "$U/admin/landlords/0000000000000001/leases")"
expect "livez stays open" 200 "$(st "$U/livez")"
echo "  SIGHUP: a new certificate and a new token, while a connection is open"
before=$(echo | openssl s_client -connect "127.0.0.1:$PORT_tls" -CAfile "$C/ca.pem" 2>/dev/null | openssl x509 -noout -serial)
cp "$C/server2.pem" "$T/live.pem"; cp "$C/server2.key" "$T/live.key"
"$BIN" token add --file "$T/tokens.toml" --name late --ops grant >"$T/late.tok"
expect "a token added, before SIGHUP" 403 "$(st -H "authorization: Bearer $(cat "$T/late.tok")" -H "$J" -d "$(grant late/a 1000)" "$U/lease")"
expect "one connection across SIGHUP" "before=200 after=200" "$($H tlskeep 127.0.0.1 "$PORT_tls" "$C/ca.pem" "$PID_tls")"
after=$(echo | openssl s_client -connect "127.0.0.1:$PORT_tls" -CAfile "$C/ca.pem" 2>/dev/null | openssl x509 -noout -serial)
[ -n "$after" ] && [ "$before" != "$after" ] && ok "new connections get the new certificate ($after)" || bad "certificate not reloaded ($before / $after)"
expect "the new token after SIGHUP" 200 "$(st -H "authorization: Bearer $(cat "$T/late.tok")" -H "$J" -d "$(grant late/a 1000)" "$U/lease")"
kill -0 "$PID_tls" && ok "the server lives on after SIGHUP" || bad "SIGHUP killed the server"
curl -s "$METRICS_tls/metrics" | grep -E '^leasehold_(refused_total|tls_handshake_failures_total)' | sed 's/^/    /'

echo "== limits (plain HTTP, the defaults: head 5 s, 16 KiB heads, 100000 leases per landlord)"
start lim --data "$T/d-lim"
expect "a 100 KB header line" status=431 "$($H bighead 127.0.0.1 "$PORT_lim" 100000)"
expect "a 4 KB header line" status=200 "$($H bighead 127.0.0.1 "$PORT_lim" 4000)"
$H slowloris 127.0.0.1 "$PORT_lim" 2000 9 >"$T/slow" &
SLOW=$!
sleep 0.5
$H holder 127.0.0.1 "$PORT_lim" 7 >"$T/holder"
wait $SLOW
echo "    slowloris: $(cat "$T/slow")"
echo "    holder meanwhile: $(cat "$T/holder")"
closed=$(sed -n 's/.*closed=\([0-9]*\).*/\1/p' "$T/slow")
expect "slowloris connections closed" 2000 "$closed"
longest=$(sed -n 's/.*longest_open_s=\([0-9.]*\).*/\1/p' "$T/slow")
awk -v l="$longest" 'BEGIN { exit !(l >= 4.5 && l <= 8) }' && ok "closed after the 5 s head time-out (longest open ${longest} s)" || bad "longest open ${longest} s"
p99=$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' "$T/holder")
awk -v p="$p99" 'BEGIN { exit !(p < 50) }' && ok "holder p99 ${p99} ms < 50 ms" || bad "holder p99 ${p99} ms"
start idle --data "$T/d-idle" --idle-timeout-ms 1000
out=$($H idle 127.0.0.1 "$PORT_idle" 5)
case "$out" in closed_after_s=1.*) ok "idle connection closed ($out)";; *) bad "idle: $out";; esac
echo "  flood: $FLOOD grants of distinct resources (1 h leases), 64 in flight (leasehold-renew-bench --flood)"
# A fresh server, leases of up to an hour (the flood's must not expire while it runs, or the
# landlord frees places), the default capacity.
start flood --data "$T/d-flood" --max-lease-ms 3600000
rss0=$(rss_kb "$PID_flood")
"$BIN_DIR/leasehold-renew-bench" --server "$URL_flood" --inflight 64 --flood "$FLOOD" >"$T/flood"
rss1=$(rss_kb "$PID_flood")
sed 's/^/    /' "$T/flood"
echo "    RSS before ${rss0} kB, after ${rss1} kB"
granted=$(sed -n 's/.*granted=\([0-9]*\).*/\1/p' "$T/flood")
expect "grants stop at the capacity" 100000 "$granted"
grep -q "capacity reached: 100000 of 100000 leases live" "$T/flood" && ok "the denial says the landlord is full" || bad "reason: $(tail -1 "$T/flood")"
[ "$rss1" -lt 200000 ] && ok "RSS bounded (${rss1} kB < 200 MB)" || bad "RSS ${rss1} kB"

echo "== forwarded requests (cluster secret)"
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/secret"
start fwd --data "$T/d-fwd" --cluster-secret "$T/secret"
out=$($H forward 127.0.0.1 "$PORT_fwd" "$T/secret")
echo "$out" | sed 's/^/    /'
line=$(echo "$out" | head -1)
expect "forwards: bare and forged refused, signed taken, stale refused" "bare=403 forged=403 signed=200 replayed_old=403" "$line"

echo "== two servers over TLS on PostgreSQL over TLS (sslmode=verify-full)"
pg_owner
mkdir -p "$T/pgssl" && cp "$C/pg.pem" "$C/pg.key" "$T/pgssl/"
chmod 755 "$T" && chmod 700 "$T/pgssl" && chmod 600 "$T/pgssl/pg.key"
[ "$(id -u)" -eq 0 ] && chown -R leasehold "$T/pgssl"
PG_OPTS="-c ssl=on -c ssl_cert_file=$T/pgssl/pg.pem -c ssl_key_file=$T/pgssl/pg.key" pg_start
STORE="$PG_URL?sslmode=verify-full&sslrootcert=$C/ca.pem"
"$BIN" token add --file "$T/tokens.toml" --name cluster-client --ops grant,renew,cancel --prefix job/ >"$T/cc.tok"
common=(--store "$STORE" --shards 4 --tokens "$T/tokens.toml" --cluster-secret "$T/secret" --peer-ca "$C/ca.pem"
  --peer-cert "$C/server.pem" --peer-key "$C/server.key" --tls-client-ca "$C/ca.pem" --tls-client-auth optional)
start pa "${common[@]}" --tls-cert "$C/server.pem" --tls-key "$C/server.key" --name a --metrics-listen 127.0.0.1:0
start pb "${common[@]}" --tls-cert "$C/server2.pem" --tls-key "$C/server2.key" --name b --metrics-listen 127.0.0.1:0
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_pa/readyz")" = 200 ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_pb/readyz")" = 200 ] && break
  sleep 0.2
done
expect "both ready" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_pa/readyz")"
# Ready is every shard served by someone; wait until each server owns its share, so that a
# grant through a reaches b's shards.
for _ in $(seq 100); do
  [ "$(pg_sql "SELECT count(DISTINCT owner_url) FROM leasehold_shards WHERE lease_until > now()" 2>/dev/null)" = 2 ] && break
  sleep 0.2
done
# A share that just moved is restored by its new owner first: ready again on both.
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_pa/readyz")" = 200 ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_pb/readyz")" = 200 ] && break
  sleep 0.2
done
CC="authorization: Bearer $(cat "$T/cc.tok")"
okc=0
for i in $(seq 40); do
  # As a holder does: a 503 (a shard between owners for a moment) is tried again.
  for _ in 1 2 3 4 5; do
    code=$(st -H "$CC" -H "$J" -d "$(grant "job/$i" 5000)" "$URL_pa/lease")
    [ "$code" = 503 ] || break
    sleep 0.3
  done
  [ "$code" = 200 ] && okc=$((okc + 1))
done
expect "40 grants through server a, all shards" 40 "$okc"
fw=$(curl -s "$METRICS_pa/metrics" | awk '/^leasehold_forwarded_total/ {print $2}')
[ "${fw:-0}" -gt 0 ] && ok "server a forwarded ${fw} of them to b over TLS, signed, with the identity" || bad "nothing forwarded"
expect "a grant outside the identity's prefix is refused in the cluster too" 403 "$(st -H "$CC" -H "$J" -d "$(grant other/x 5000)" "$URL_pa/lease")"
ssl=$(pg_sql "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'leasehold-server'")
echo "    server connections to PostgreSQL over TLS / all: ${ssl/|/ \/ }"
[ "${ssl%%|*}" -gt 0 ] && [ "${ssl%%|*}" = "${ssl##*|}" ] && ok "every server connection to PostgreSQL is TLS" || bad "pg_stat_ssl: $ssl"
start pbad --store "$PG_URL?sslmode=verify-full&sslrootcert=$C/otherca.pem" --metrics-listen 127.0.0.1:0
sleep 2
body=$(curl -s "$METRICS_pbad/readyz")
echo "$body" | grep -qi "certificate\|UnknownIssuer\|invalid peer" && ok "a database certificate from another CA is refused" || bad "wrong-CA database: $body"

if [ "$FAILS" -gt 0 ]; then
  echo "test-security: $FAILS FAILED"
  exit 1
fi
echo "test-security: all passed"
