"""The shared vectors of lookup discovery (core/tests/vectors/discovery.json): every message and
announcement datagram, byte for byte in both encodings, read from and written as its JSON object
form (the vectors' ``message``), and the hostile inputs that must fail with their error code."""

from __future__ import annotations

import json
from typing import Any, Dict, List

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
)

VECTORS = json.loads((repo_root() / "core" / "tests" / "vectors" / "discovery.json").read_text("utf-8"))


def test_schema_and_constants() -> None:
    assert VECTORS["schema"] == 1
    assert VECTORS["announcement_max_bytes"] == ANNOUNCEMENT_MAX_BYTES
    d = Limits()
    assert VECTORS["default_limits"] == {
        "max_batch": d.max_batch,
        "max_message_bytes": d.max_message_bytes,
        "max_resource_bytes": d.max_resource_bytes,
    }


KINDS: Dict[str, Any] = {
    "requests": DiscoveryRequest,
    "replies": DiscoveryReply,
    "events": DiscoveryEvent,
    "event_replies": EventReply,
}
CASES = [(kind, case) for kind in KINDS for case in VECTORS[kind]]


@pytest.mark.parametrize("kind,case", CASES, ids=[f"{k}-{c['name']}" for k, c in CASES])
def test_messages(kind: str, case: Dict[str, Any]) -> None:
    """A message is its JSON object form: what decoding gives, what encoding takes."""
    cls = KINDS[kind]
    from_json = cls.decode(case["json"].encode(), "json")
    from_bin = cls.decode(bytes.fromhex(case["hex"]), "binary")
    assert from_json == from_bin == case["message"]
    assert cls.decode(case["json"], "json") == case["message"]  # text is read as its UTF-8
    assert cls.encode(case["message"], "json").decode() == case["json"]
    assert cls.encode(case["message"], "binary").hex() == case["hex"]
    assert cls.encode(case["message"]).hex() == case["hex"]  # binary is the default


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
        assert read() == case["message"]


def test_every_op_is_covered() -> None:
    ops: Dict[str, List[str]] = {k: sorted({c["message"].get("body", {}).get("op", "event") for c in VECTORS[k]}) for k in KINDS}
    assert ops["requests"] == sorted(
        ["register", "get_groups", "add_groups", "set_groups", "remove_groups", "get_locators",
         "add_locators", "set_locators", "remove_locators", "get_registrars", "discard"]
    )
    assert ops["replies"] == sorted(["registered", "groups", "locators", "registrars", "done", "error"])
    assert ops["event_replies"] == sorted(["received", "unknown_event", "error"])
    for c in VECTORS["requests"]:
        assert DiscoveryRequest.decode(bytes.fromhex(c["hex"]))["body"]["op"] == c["message"]["body"]["op"]
    for c in VECTORS["replies"]:
        assert DiscoveryReply.decode(bytes.fromhex(c["hex"]))["body"]["op"] == c["message"]["body"]["op"]
