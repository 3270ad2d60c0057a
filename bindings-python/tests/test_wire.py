from __future__ import annotations

import pytest

from leasehold import (
    ANY,
    DecodeError,
    Encoding,
    IndefiniteError,
    Landlord,
    LeaseDeniedError,
    Limits,
    Policy,
    Reply,
    Request,
    UnknownLeaseError,
)


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_request_round_trips(encoding: Encoding) -> None:
    c = "0123456789abcdef0123456789abcdef"
    for req in [
        Request.grant(1, b"printer", 5_000),
        Request.renew(2, c, ANY),
        Request.cancel(3, c),
        Request.renew_all(4, [(c, 10), (c, 20)]),
        Request.cancel_all(5, [c]),
    ]:
        back = Request.decode(req.encode(encoding), encoding)
        assert back == req and back.id == req.id and back.op == req.op
    g = Request.grant(1, b"printer", 5_000)
    assert (g.resource, g.duration, g.cookie, g.items, g.cookies) == (b"printer", 5_000, None, None, None)
    assert Request.renew_all(4, [(c, 10)]).items == [(c, 10)]
    assert Request.cancel_all(5, [c]).cookies == [c]


def test_json_request_shape() -> None:
    text = Request.renew(9, "0" * 31 + "1", 1000).encode("json").decode()
    assert text == '{"v":1,"id":"9","body":{"op":"renew","cookie":"%s","duration":"1000"}}' % ("0" * 31 + "1")


def test_landlord_answers_messages(landlord: Landlord) -> None:
    reply = landlord.handle_request(Request.grant(1, b"disk", 4_000), 0)
    assert reply.op == "granted" and reply.id == 1 and reply.landlord == 7 and reply.duration == 4_000
    cookie = reply.cookie
    assert cookie is not None
    assert landlord.get(cookie, 0) == (4_000, b"disk")  # wire grants hold the resource bytes
    data = landlord.handle_bytes(Request.renew(2, cookie, 8_000).encode("json"), "json", 100)
    renewed = Reply.decode(data, "json")
    assert renewed.op == "renewed" and renewed.duration == 8_000
    batch = Reply.decode(landlord.handle_bytes(Request.renew_all(3, [(cookie, 1_000), ("e" * 32, 1)]).encode(), "binary", 200))
    assert batch.results is not None and batch.results[0] == 1_000 and isinstance(batch.results[1], UnknownLeaseError)
    gone = landlord.handle_request(Request.cancel_all(4, [cookie, cookie]), 300)
    assert gone.results is not None and gone.results[0] is None and isinstance(gone.results[1], UnknownLeaseError)
    err = landlord.handle_request(Request.cancel(5, cookie), 400)
    assert err.op == "error" and isinstance(err.error, UnknownLeaseError)


def test_undecodable_request_gets_an_error_reply(landlord: Landlord) -> None:
    out = Reply.decode(landlord.handle_bytes(b"\x00garbage", "binary", 0))
    assert out.id == 0 and isinstance(out.error, DecodeError)
    out = Reply.decode(landlord.handle_bytes(b"{not json", "json", 0), "json")
    assert isinstance(out.error, DecodeError)


def test_reply_constructors_round_trip() -> None:
    c = "ab" * 16
    replies = [
        Reply.granted(1, 2, c, 100),
        Reply.renewed(1, 2, 100),
        Reply.cancelled(1, 2),
        Reply.renewed_all(1, 2, [5, LeaseDeniedError("no", "no")]),
        Reply.cancelled_all(1, 2, [None, UnknownLeaseError("gone", "")]),
        Reply.failure(1, 2, IndefiniteError("try again")),
    ]
    encodings: list[Encoding] = ["binary", "json"]
    for r in replies:
        for enc in encodings:
            assert Reply.decode(r.encode(enc), enc) == r
    err = Reply.failure(1, 2, IndefiniteError("try again")).error
    assert isinstance(err, IndefiniteError) and err.detail == "try again" and not err.definite


def test_limits_are_enforced() -> None:
    small = Limits(max_batch=2)
    req = Request.cancel_all(1, ["0" * 32] * 3).encode()
    with pytest.raises(DecodeError):
        Request.decode(req, "binary", small)
    assert Request.decode(req).cookies == ["0" * 32] * 3
    ll = Landlord(1, Policy.fixed(10), seed=bytes(32), limits=Limits(max_resource_bytes=4))
    out = Reply.decode(ll.handle_bytes(Request.grant(1, b"too long", 5).encode(), "binary", 0))
    assert isinstance(out.error, DecodeError)
    assert "max_batch=2" in repr(small)
