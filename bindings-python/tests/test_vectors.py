"""The shared test vectors of core/tests/vectors: the binding must produce and accept exactly the
same bytes as the Rust core (and every other binding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import pytest

from conftest import repo_root
from leasehold import (
    ErrorCode,
    LeaseError,
    Lease,
    Limits,
    Reply,
    Request,
    error_from_code,
    is_definite_code,
)

VECTORS = repo_root() / "core" / "tests" / "vectors"


def load(name: str) -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    assert data["schema"] == 1
    return data


LEASE = load("lease.json")
WIRE = load("wire.json")
ERRORS = load("errors.json")


def lease_fields(lease: Lease) -> Dict[str, str]:
    return {
        "landlord": "%016x" % lease.landlord,
        "cookie": lease.cookie,
        "expiration": str(lease.expiration),
        "format": "duration" if lease.serial_format == 1 else "absolute",
    }


@pytest.mark.parametrize("case", LEASE["encode"], ids=lambda c: c["name"])
def test_lease_encode(case: Dict[str, Any]) -> None:
    f = case["lease"]
    lease = Lease(int(f["landlord"], 16), f["cookie"], int(f["expiration"]), f["format"])
    write_now, read_now = int(case["write_now"]), int(case["read_now"])
    assert lease.to_json(write_now) == case["json"]
    assert lease.to_bytes(write_now).hex() == case["hex"]
    assert lease_fields(Lease.from_json(case["json"], read_now)) == case["decoded"]
    assert lease_fields(Lease.from_bytes(bytes.fromhex(case["hex"]), read_now)) == case["decoded"]


@pytest.mark.parametrize("case", LEASE["decode"], ids=lambda c: c["name"])
def test_lease_decode(case: Dict[str, Any]) -> None:
    now = int(case["read_now"])

    def read() -> Lease:
        if case["encoding"] == "json":
            data = case["text"] if "text" in case else bytes.fromhex(case["hex"])
            return Lease.from_json(data, now)
        return Lease.from_bytes(bytes.fromhex(case["hex"]), now)

    if "error_code" in case:
        with pytest.raises(LeaseError) as info:
            read()
        assert info.value.code == case["error_code"]
    else:
        assert lease_fields(read()) == case["decoded"]


def canonical(msg: Union[Request, Reply]) -> Any:
    return json.loads(msg.encode("json"))


def error_of(e: Dict[str, Any]) -> Optional[LeaseError]:
    code = e["code"]
    if code not in (1, 2, 4, 5, 6):
        return None  # unknown codes (and LeaseMap) cannot be rebuilt with their exact text
    return error_from_code(code, e["message"])


def build_request(m: Dict[str, Any]) -> Request:
    b, i = m["body"], int(m["id"])
    op = b["op"]
    if op == "grant":
        return Request.grant(i, bytes.fromhex(b["resource"]), int(b["duration"]))
    if op == "renew":
        return Request.renew(i, b["cookie"], int(b["duration"]))
    if op == "cancel":
        return Request.cancel(i, b["cookie"])
    if op == "renew_all":
        return Request.renew_all(i, [(x["cookie"], int(x["duration"])) for x in b["items"]])
    assert op == "cancel_all"
    return Request.cancel_all(i, b["cookies"])


def build_reply(m: Dict[str, Any]) -> Optional[Reply]:
    b, i, ll = m["body"], int(m["id"]), int(m["landlord"], 16)
    op = b["op"]
    if op == "granted":
        return Reply.granted(i, ll, b["cookie"], int(b["duration"]))
    if op == "renewed":
        return Reply.renewed(i, ll, int(b["duration"]))
    if op == "cancelled":
        return Reply.cancelled(i, ll)
    if op in ("renewed_all", "cancelled_all"):
        results: List[Any] = []
        for r in b["results"]:
            if "error" in r:
                err = error_of(r["error"])
                if err is None:
                    return None
                results.append(err)
            else:
                results.append(int(r["duration"]) if op == "renewed_all" else None)
        if op == "renewed_all":
            return Reply.renewed_all(i, ll, results)
        return Reply.cancelled_all(i, ll, results)
    assert op == "error"
    err = error_of(b)
    return None if err is None else Reply.failure(i, ll, err)


@pytest.mark.parametrize("case", WIRE["requests"], ids=lambda c: c["name"])
def test_wire_requests(case: Dict[str, Any]) -> None:
    from_json = Request.decode(case["json"].encode(), "json")
    from_bin = Request.decode(bytes.fromhex(case["hex"]), "binary")
    assert from_json == from_bin
    assert from_json.encode("json").decode() == case["json"]
    assert from_bin.encode("binary").hex() == case["hex"]
    assert canonical(from_json) == case["message"]
    built = build_request(case["message"])
    assert built == from_json and built.encode("binary").hex() == case["hex"]


@pytest.mark.parametrize("case", WIRE["replies"], ids=lambda c: c["name"])
def test_wire_replies(case: Dict[str, Any]) -> None:
    from_json = Reply.decode(case["json"].encode(), "json")
    from_bin = Reply.decode(bytes.fromhex(case["hex"]), "binary")
    assert from_json == from_bin
    assert from_json.encode("json").decode() == case["json"]
    assert from_bin.encode("binary").hex() == case["hex"]
    assert canonical(from_json) == case["message"]
    built = build_reply(case["message"])
    if built is not None:
        assert built == from_json and built.encode("json").decode() == case["json"]


@pytest.mark.parametrize("case", WIRE["decode"], ids=lambda c: c["name"])
def test_wire_decode(case: Dict[str, Any]) -> None:
    lim = case.get("limits", WIRE["default_limits"])
    limits = Limits(lim["max_message_bytes"], lim["max_batch"], lim["max_resource_bytes"])
    cls = Request if case["kind"] == "request" else Reply
    data = bytes.fromhex(case["hex"])
    if "error_code" in case:
        with pytest.raises(LeaseError) as info:
            cls.decode(data, case["encoding"], limits)
        assert info.value.code == case["error_code"]
    else:
        assert canonical(cls.decode(data, case["encoding"], limits)) == case["message"]


def test_default_limits_match() -> None:
    d, lim = WIRE["default_limits"], Limits()
    assert (lim.max_message_bytes, lim.max_batch, lim.max_resource_bytes) == (
        d["max_message_bytes"],
        d["max_batch"],
        d["max_resource_bytes"],
    )


@pytest.mark.parametrize("entry", ERRORS["codes"], ids=lambda c: c["name"])
def test_error_codes(entry: Dict[str, Any]) -> None:
    code = entry["code"]
    assert ErrorCode(code).name.lower() == entry["name"]
    assert is_definite_code(code) == entry["definite"]
    if code != 0:
        err = error_from_code(code, "detail")
        assert err.code == code and err.definite == entry["definite"]
