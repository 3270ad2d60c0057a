#!/usr/bin/env bash
# mkcerts.sh DIR: a test CA, a server certificate for localhost/127.0.0.1, a client
# certificate naming worker.example, and a second CA nobody trusts.
set -euo pipefail
d=$1; mkdir -p "$d"; cd "$d"
q() { "$@" >/dev/null 2>&1; }
ca() { q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1"; }
leaf() { # name ca san [extendedKeyUsage]
  q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\n' "$3" "$4" > "$1.ext"
  q openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.ext"
}
ca ca; ca otherca
leaf server ca "DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth"
leaf server2 ca "DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth"
leaf pg ca "DNS:localhost,IP:127.0.0.1" "serverAuth"
leaf client ca "DNS:worker.example" "clientAuth"
leaf rogue otherca "DNS:worker.example" "clientAuth"
