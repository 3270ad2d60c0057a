"""Inverted leasing in virtual time: the landlord polls, holders answer, a silent one expires."""

from __future__ import annotations

import pytest

from leasehold import (
    FOREVER,
    Admission,
    Confirm,
    LeaseDeniedError,
    Poll,
    Poller,
    PollListener,
    expected_detection,
    inverted_bandwidth,
)


def test_poll_answer_and_expiry() -> None:
    poller = Poller(1, 3.0, 15_000, FOREVER, 0.2, seed=bytes(32))
    assert poller.period_for(1) == (15_000, 3_000)
    holders = [PollListener(seed) for seed in (1, 2)]
    for h in holders:
        h.join(0)
        tx = h.poll_transmit()
        assert tx is not None and tx.kind == "join"
        h.handle_admission(poller.join(f"holder-{h.stats()['joins']}", 0), 0)
        ev = h.poll_event()
        assert ev is not None and ev.kind == "joined" and ev.cookie == h.cookie
    assert len(poller) == 2
    silent = holders[1]
    now = 0
    for _ in range(3):  # three polling rounds; holder 1 never answers
        poller.handle_timeout(now)
        poll = poller.poll_transmit()
        if poll is None:
            nxt = poller.poll_timeout()
            assert nxt is not None
            now = nxt
            continue
        assert Poll.from_json(poll.to_json()).seq == poll.seq
        holders[0].handle_poll(poll, now)
        t = holders[0].poll_timeout()
        assert t is not None
        holders[0].handle_timeout(t)
        tx = holders[0].poll_transmit()
        assert tx is not None and tx.kind == "respond" and tx.cookie is not None and tx.seq is not None
        holders[0].handle_confirm(poller.respond(tx.cookie, tx.seq, t), t)
        now = poll.duration + now + 1
        poller.handle_timeout(now)
    expired = poller.poll_expired()
    assert expired is not None and expired.cookie == silent.cookie
    assert poller.contains(holders[0].cookie or "") and len(poller) == 1
    assert poller.stats()["responses"] >= 1


def test_messages_and_formulas() -> None:
    c = "ab" * 16
    assert Admission.from_json(Admission(c, 100).to_json()).next_poll_in == 100
    assert Confirm.from_json(Confirm(c, 7).to_json()).seq == 7
    assert expected_detection(1_000, 200) == 1_100.0
    assert inverted_bandwidth(10, 1_000) > 0
    small = Poller(1, 1.0, 1_000, 2_000, seed=bytes(32))  # N_MAX = L_MAX * G = 2
    assert small.max_holders() == 2
    small.join("a", 0)
    small.join("b", 0)
    with pytest.raises(LeaseDeniedError):
        small.join("c", 0)
    with pytest.raises(ValueError):
        Poller(1, 0.0, 1_000, 2_000)
    with pytest.raises(ValueError):
        Poll.from_json("{")
