"""The shared vectors of lookup discovery (core/tests/vectors/discovery.json): every message and
announcement datagram, byte for byte in both encodings, built from its fields, and the hostile
inputs that must fail with their error code."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Union

import pytest

from conftest import repo_root
from leasehold import (
    ANNOUNCEMENT_MAX_BYTES,
    Announcement,
    DiscoveryEvent,
    DiscoveryReply,
    DiscoveryRequest,
    EventReply,
    LeaseError,
    Limits,
    Registrar,
    error_from_code,
)

VECTORS = json.loads((repo_root() / "core" / "tests" / "vectors" / "discovery.json").read_text("utf-8"))
Message = Union[DiscoveryRequest, DiscoveryReply, DiscoveryEvent, EventReply]


def test_schema_and_constants() -> None:
    assert VECTORS["schema"] == 1
    assert VECTORS["announcement_max_bytes"] == ANNOUNCEMENT_MAX_BYTES
    d = Limits()
    assert VECTORS["default_limits"] == {
        "max_batch": d.max_batch,
        "max_message_bytes": d.max_message_bytes,
        "max_resource_bytes": d.max_resource_bytes,
    }


def registrar(r: Dict[str, Any]) -> Registrar:
    return Registrar(r["id"], r["groups"], r["locators"])


def error_of(e: Dict[str, Any]) -> Optional[LeaseError]:
    if e["code"] not in (1, 2, 4, 5, 6):
        return None  # other codes cannot be rebuilt with their exact text
    return error_from_code(e["code"], e["message"])


def build_request(m: Dict[str, Any]) -> DiscoveryRequest:
    b, i = m["body"], int(m["id"])
    op = b["op"]
    if op == "register":
        return DiscoveryRequest.register(i, b["groups"], b["locators"], bytes.fromhex(b["handback"]), int(b["duration"]))
    if op == "discard":
        return DiscoveryRequest.discard(i, b["cookie"], b["registrar"])
    make: Callable[..., DiscoveryRequest] = getattr(DiscoveryRequest, op)
    if op.endswith("_groups") and op != "get_groups":
        return make(i, b["cookie"], b["groups"])
    if op.endswith("_locators") and op != "get_locators":
        return make(i, b["cookie"], b["locators"])
    return make(i, b["cookie"])


def build_reply(m: Dict[str, Any]) -> Optional[DiscoveryReply]:
    b, i, ll = m["body"], int(m["id"]), int(m["landlord"], 16)
    op = b["op"]
    if op == "registered":
        return DiscoveryReply.registered(
            i, ll, int(b["registration"]), b["cookie"], int(b["duration"]), int(b["event_id"]), int(b["sequence"])
        )
    if op == "groups":
        return DiscoveryReply.with_groups(i, ll, b["groups"])
    if op == "locators":
        return DiscoveryReply.with_locators(i, ll, b["locators"])
    if op == "registrars":
        return DiscoveryReply.with_registrars(i, ll, [registrar(r) for r in b["registrars"]])
    if op == "done":
        return DiscoveryReply.done(i, ll)
    assert op == "error"
    err = error_of(b)
    return None if err is None else DiscoveryReply.failure(i, ll, err)


def build_event(m: Dict[str, Any]) -> DiscoveryEvent:
    return DiscoveryEvent(
        int(m["event_id"]),
        int(m["source"]["service"], 16),
        int(m["source"]["object"]),
        int(m["sequence"]),
        bytes.fromhex(m["handback"]),
        m["discarded"],
        [registrar(r) for r in m["registrars"]],
    )


def build_event_reply(m: Dict[str, Any]) -> Optional[EventReply]:
    b, e, s = m["body"], int(m["event_id"]), int(m["sequence"])
    if b["op"] == "received":
        return EventReply.received(e, s)
    if b["op"] == "unknown_event":
        return EventReply.unknown_event(e, s)
    err = error_of(b)
    return None if err is None else EventReply.failure(e, s, err)


KINDS: Dict[str, Any] = {
    "requests": (DiscoveryRequest, build_request),
    "replies": (DiscoveryReply, build_reply),
    "events": (DiscoveryEvent, build_event),
    "event_replies": (EventReply, build_event_reply),
}
CASES = [(kind, case) for kind in KINDS for case in VECTORS[kind]]


@pytest.mark.parametrize("kind,case", CASES, ids=[f"{k}-{c['name']}" for k, c in CASES])
def test_messages(kind: str, case: Dict[str, Any]) -> None:
    cls, build = KINDS[kind]
    from_json = cls.decode(case["json"].encode(), "json")
    from_bin = cls.decode(bytes.fromhex(case["hex"]), "binary")
    assert from_json == from_bin
    assert from_json.encode("json").decode() == case["json"]
    assert from_bin.encode("binary").hex() == case["hex"]
    assert from_bin.encode().hex() == case["hex"]  # binary is the default
    assert json.loads(from_json.encode("json")) == case["message"]
    built = build(case["message"])
    if built is not None:
        assert built == from_json
        assert built.encode("binary").hex() == case["hex"]
    assert repr(from_json).startswith(cls.__name__ + "({")


def announcement_fields(a: Announcement) -> Dict[str, Any]:
    return {
        "registrar": a.registrar,
        "groups": sorted(a.groups),
        "locator": a.locator,
        "sequence": str(a.sequence),
        "ttl": str(a.ttl),
    }


@pytest.mark.parametrize("case", VECTORS["announcements"], ids=lambda c: c["name"])
def test_announcements(case: Dict[str, Any]) -> None:
    f = case["announcement"]
    a = Announcement(f["registrar"], f["groups"], f["locator"], int(f["sequence"]), int(f["ttl"]))
    assert a.encode().hex() == case["hex"]
    back = Announcement.decode(bytes.fromhex(case["hex"]))
    assert back == a
    assert announcement_fields(back) == {**f, "groups": sorted(f["groups"])}


DECODERS: Dict[str, Any] = {
    "request": DiscoveryRequest,
    "reply": DiscoveryReply,
    "event": DiscoveryEvent,
    "event_reply": EventReply,
}


@pytest.mark.parametrize("case", VECTORS["decode"], ids=lambda c: c["name"])
def test_decode(case: Dict[str, Any]) -> None:
    data = case["text"].encode() if "text" in case else bytes.fromhex(case["hex"])
    if case["kind"] == "announcement":
        def read() -> Any:
            return Announcement.decode(data)
    else:
        lim = case.get("limits")
        limits = Limits(lim["max_message_bytes"], lim["max_batch"], lim["max_resource_bytes"]) if lim else None

        def read() -> Any:
            return DECODERS[case["kind"]].decode(data, case["encoding"], limits)

    if "error_code" in case:
        with pytest.raises(LeaseError) as info:
            read()
        assert info.value.code == case["error_code"], info.value
        assert isinstance(info.value, ValueError)
    elif "announcement" in case:
        f = case["announcement"]
        assert announcement_fields(read()) == {**f, "groups": sorted(set(f["groups"]))}
    else:
        assert json.loads(read().encode("json")) == case["message"]


def test_every_op_is_covered() -> None:
    ops: Dict[str, List[str]] = {k: sorted({c["message"].get("body", {}).get("op", "event") for c in VECTORS[k]}) for k in KINDS}
    assert ops["requests"] == sorted(
        ["register", "get_groups", "add_groups", "set_groups", "remove_groups", "get_locators",
         "add_locators", "set_locators", "remove_locators", "get_registrars", "discard"]
    )
    assert ops["replies"] == sorted(["registered", "groups", "locators", "registrars", "done", "error"])
    assert ops["event_replies"] == sorted(["received", "unknown_event", "error"])
    for c in VECTORS["requests"]:
        assert DiscoveryRequest.decode(bytes.fromhex(c["hex"])).op == c["message"]["body"]["op"]
    for c in VECTORS["replies"]:
        assert DiscoveryReply.decode(bytes.fromhex(c["hex"])).op == c["message"]["body"]["op"]
