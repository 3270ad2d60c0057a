#!/usr/bin/env python3
"""Checks the OpenAPI document a server serves against the shared wire vectors: every request
and reply of core/tests/vectors/wire.json (and every accepted spelling in its `decode` list)
must validate against the document's Request and Reply schemas, and a few messages the codec
refuses must not.  Usage: check_openapi.py URL VECTORS"""
import json
import sys
import urllib.request

from jsonschema_rs import Draft202012Validator  # comes with schemathesis

url, vectors = sys.argv[1], sys.argv[2]
doc = json.load(urllib.request.urlopen(url, timeout=10))
v = json.load(open(vectors, encoding="utf-8"))


def validator(name):
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


req, rep = validator("Request"), validator("Reply")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"  FAIL {what}")


def check_vectors(vs, req, rep, label="", not_refused=frozenset()):
    """Every request and reply of the vectors `vs`, and every accepted spelling in its `decode`
    list, validates against the schemas `req` and `rep`; what the codec refuses does not (but
    for the cases named in `not_refused`, and those refused for a limit). `label` leads each
    failure's text."""
    for m in vs["requests"]:
        errors = list(req.iter_errors(json.loads(m["json"])))
        check(not errors, f"{label}request vector {m['name']}: {[str(e) for e in errors][:2]}")
    for m in vs["replies"]:
        errors = list(rep.iter_errors(json.loads(m["json"])))
        check(not errors, f"{label}reply vector {m['name']}: {[str(e) for e in errors][:2]}")
    for m in vs["decode"]:
        if m.get("encoding") != "json" or m.get("text") is None:
            continue
        schema = req if m["kind"] == "request" else rep
        try:
            parsed = json.loads(m["text"])
        except (ValueError, RecursionError):
            continue  # not JSON at all: refused before any schema applies
        if "message" in m:
            errors = list(schema.iter_errors(parsed))
            check(not errors, f"{label}accepted spelling {m['name']}: {[str(e) for e in errors][:2]}")
        elif "limits" not in m and m["name"] not in not_refused:
            check(not schema.is_valid(parsed), f"the codec refuses {m['name']}, the schema accepts it")


# Refused by the codec for a number out of range, which a JSON schema of decimal strings does
# not express, or for 60000.0, which JSON Schema counts as an integer: the server answers
# those with a 400 like any undecodable body.
RANGE_OR_LIMIT = {"json-id-overflow", "json-duration-overflow", "json-duration-float"}
check_vectors(v, req, rep, not_refused=RANGE_OR_LIMIT)
# What the codec refuses, the schema refuses too.
refused = [
    {"v": 2, "id": "1", "body": {"op": "cancel", "cookie": "0" * 32}},
    {"v": 1, "id": "1", "body": {"op": "cancel", "cookie": "0" * 31}},
    {"v": 1, "id": "1", "body": {"op": "cancel", "cookie": "0" * 32, "extra": 1}},
    {"v": 1, "id": "1", "body": {"op": "grant", "resource": "abc", "duration": "1"}},
    {"v": 1, "id": "1", "body": {"op": "explode"}},
]
for m in refused:
    check(not req.is_valid(m), f"refused message validates: {m}")
# The coordination messages (POST /coord) against the vectors every binding reads.
import os

coord_path = os.path.join(os.path.dirname(vectors), "coord.json")
if os.path.exists(coord_path):
    cv = json.load(open(coord_path, encoding="utf-8"))
    creq, crep = validator("CoordRequest"), validator("CoordReply")
    check_vectors(cv, creq, crep, "coord ")
print(f"openapi vs vectors: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
