"""Durable landlords on real files: the shared store vector, reopening, a torn tail, damage, a
missing snapshot, time across restarts, group commit, and the drivers opening a directory."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from conftest import repo_root
from leasehold import (
    ANY,
    DecodeError,
    Expired,
    Landlord,
    LeaseError,
    Policy,
    Reply,
    Request,
    StoreError,
    UnknownLeaseError,
    aio,
    threaded,
)
from leasehold.http import apost, serve_asyncio

SEED = bytes(range(32))


def vector() -> Dict[str, Any]:
    with open(repo_root() / "core" / "tests" / "vectors" / "store.json") as f:
        v: Dict[str, Any] = json.load(f)
    return v


def write_files(d: Path, files: List[Dict[str, str]]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for f in files:
        (d / f["name"]).write_bytes(bytes.fromhex(f["hex"]))


def contents(d: Path) -> Dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.name != "LOCK"}


def open_vector(d: Path, v: Dict[str, Any]) -> Landlord:
    ll = v["landlord"]
    p = ll["policy"]
    assert p["kind"] == "bounded"
    return Landlord.open(d, int(ll["id"], 16), Policy.bounded(int(p["max"]), int(p["default"])), int(v["read_now"]))


def test_store_vector_opens_on_real_files(tmp_path: Path) -> None:
    v = vector()
    write_files(tmp_path, v["files"])
    ll = open_vector(tmp_path, v)
    e = v["expect"]
    assert ll.durable and ll.data_dir == str(tmp_path)
    rec = ll.recovery
    assert rec is not None and rec["torn_tail"] is e["torn"] and not rec["created"]
    assert ll.journal_seq == int(e["journal_seq"]) == rec["last_seq"]
    leases = [(c, exp, r.hex()) for c, exp, r in ll.leases()]
    assert leases == [(x["cookie"], int(x["expiration"]), x["resource"]) for x in e["leases"]]
    n = e["next_grant"]
    g = ll.grant(bytes.fromhex(n["resource"]), int(n["duration"]), int(n["now"]))
    assert (g.cookie, g.expiration) == (n["cookie"], int(n["expiration"]))
    # Nothing expired was waiting to be handed out.
    ll.handle_timeout(int(v["read_now"]))
    assert ll.drain_expired() == [] and int(e["expired_waiting"]) == 0
    # The torn tail was cut: the last segment is shorter than the copy in the vector.
    last = max(f["name"] for f in v["files"] if f["name"].startswith("log-"))
    written = next(bytes.fromhex(f["hex"]) for f in v["files"] if f["name"] == last)
    assert (tmp_path / last).read_bytes() != written


@pytest.mark.parametrize("case", vector()["damaged"], ids=lambda c: str(c["name"]))
def test_damaged_store_vector_is_refused(tmp_path: Path, case: Dict[str, Any]) -> None:
    v = vector()
    write_files(tmp_path, case["files"])
    before = contents(tmp_path)
    with pytest.raises(DecodeError) as err:
        open_vector(tmp_path, v)
    assert err.value.code == case["error_code"]
    assert str(tmp_path) in str(err.value)
    assert contents(tmp_path) == before, "a refused store is left as it was"


def make(d: Path, now: int = 0, **settings: Any) -> Landlord:
    return Landlord.open(d, 7, Policy.bounded(60_000, 30_000), now, seed=SEED, **settings)


def test_reopen_keeps_every_committed_lease_and_time_down_does_not_count(tmp_path: Path) -> None:
    ll = make(tmp_path, 1_000)
    assert ll.recovery is not None and ll.recovery["created"]
    kept = [ll.grant(f"r{i}".encode(), 10_000 + i, 1_000) for i in range(20)]
    text = ll.grant("printer", 20_000, 1_000)  # a str is kept as its UTF-8 bytes
    assert ll.renew(kept[0].cookie, 40_000, 2_000) == 40_000
    assert ll.cancel(kept[1].cookie, 2_000) == b"r1"
    assert ll.renew_all([(kept[2].cookie, 30_000), ("00" * 16, 5)], 2_000)[0] == 30_000
    reply = Reply.decode(ll.handle_bytes(Request.cancel(9, kept[3].cookie).encode(), "binary", 2_500))
    assert reply.op == "cancelled"
    before = {c: (exp - 2_500, r) for c, exp, r in ll.leases()}
    seq = ll.journal_seq
    assert ll.durable_seq == seq, "every answer was durable when it was given"
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    # Reopened much later on a clock that restarted: each lease keeps the time it had left.
    again = make(tmp_path, 5)
    rec = again.recovery
    assert rec is not None and not rec["created"] and not rec["torn_tail"] and rec["last_seq"] == seq
    after = {c: (exp - 5, r) for c, exp, r in again.leases()}
    assert after == before
    assert after[text.cookie][1] == b"printer"
    assert kept[1].cookie not in after and kept[3].cookie not in after
    with pytest.raises(UnknownLeaseError):
        again.renew(kept[1].cookie, 1_000, 10)
    # The cookie generator goes on: no cookie is ever issued twice.
    fresh = again.grant(b"new", 1_000, 10)
    assert fresh.cookie not in {g.cookie for g in kept}


def segments(d: Path) -> List[Path]:
    return sorted(p for p in d.iterdir() if p.name.startswith("log-"))


def test_truncated_last_record_is_dropped(tmp_path: Path) -> None:
    ll = make(tmp_path)
    first = ll.grant(b"a", 10_000, 0)
    second = ll.grant(b"b", 10_000, 0)
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    last = segments(tmp_path)[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-3])  # the last frame cut short, as a crash mid-write leaves it
    again = make(tmp_path)
    rec = again.recovery
    assert rec is not None and rec["torn_tail"] and rec["torn_reason"]
    cookies = {c for c, _, _ in again.leases()}
    assert first.cookie in cookies and second.cookie not in cookies
    assert len(last.read_bytes()) < len(data) - 3, "the torn frame was cut off"
    # Appending goes on after the cut, and a reopen finds it.
    third = again.grant(b"c", 10_000, 0)
    del again  # the directory's lock goes with the last reference
    gc.collect()
    assert {c for c, _, _ in make(tmp_path).leases()} == {first.cookie, third.cookie}


def test_flipped_byte_in_the_middle_is_refused(tmp_path: Path) -> None:
    ll = make(tmp_path)
    for i in range(6):
        ll.grant(bytes([i]) * 8, 10_000, 0)
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    log = segments(tmp_path)[-1]
    data = bytearray(log.read_bytes())
    data[len(data) // 3] ^= 0x40
    log.write_bytes(bytes(data))
    before = contents(tmp_path)
    with pytest.raises(DecodeError, match="damaged at byte") as err:
        make(tmp_path)
    assert str(err.value).count("decode error") == 1, err.value
    assert contents(tmp_path) == before


def test_missing_snapshot(tmp_path: Path) -> None:
    # A log that still starts at record 1 rebuilds the state from the configuration...
    ll = make(tmp_path)
    g = ll.grant(b"a", 10_000, 0)
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    (tmp_path / "snapshot").unlink()
    again = make(tmp_path)
    assert [c for c, _, _ in again.leases()] == [g.cookie]
    del again  # the directory's lock goes with the last reference
    gc.collect()
    # ...but once compaction dropped the first records, a missing snapshot is refused.
    other = tmp_path / "compacted"
    ll = make(other, min_compact_bytes=1, segment_bytes=64)
    for i in range(10):
        ll.grant(bytes([i]) * 16, 10_000, 0)
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    assert all(not p.name.endswith("00000000000000000001.lhj") for p in segments(other))
    (other / "snapshot").unlink()
    with pytest.raises(DecodeError, match="snapshot"):
        make(other)


def test_resources_of_a_durable_landlord_are_bytes(tmp_path: Path) -> None:
    ll = make(tmp_path)
    with pytest.raises(TypeError, match="bytes or str"):
        ll.grant({"printer": "lobby"}, 1_000, 0)
    g = ll.grant(bytearray(b"ba"), 1_000, 0)
    assert ll.get(g.cookie, 0) == (1_000, b"ba")
    assert len(ll) == 1


def test_a_directory_in_use_is_refused(tmp_path: Path) -> None:
    ll = make(tmp_path)
    with pytest.raises(StoreError) as err:
        make(tmp_path)
    assert isinstance(err.value, OSError) and isinstance(err.value, LeaseError)
    del ll  # the directory's lock goes with the last reference
    gc.collect()
    make(tmp_path)  # free once the first one is gone


def test_group_commit_shares_syncs_between_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ll = make(tmp_path)
    grants = [ll.grant(b"x", 60_000, 0) for _ in range(8)]
    before = ll.commits
    per_thread = 40
    start = threading.Barrier(8)

    def renew(cookie: str) -> None:
        start.wait()
        for i in range(per_thread):
            ll.renew(cookie, 30_000 + i, 1 + i)

    threads = [threading.Thread(target=renew, args=(g.cookie,)) for g in grants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    commits = ll.commits - before
    answers = 8 * per_thread
    with capsys.disabled():
        print(f"\ngroup commit: {answers} renewals from 8 threads, {commits} syncs")
    assert 0 < commits < answers
    assert ll.durable_seq == ll.journal_seq


def test_threaded_driver_opens_a_directory_and_expires_durably(tmp_path: Path) -> None:
    got: List[Expired] = []
    done = threading.Event()

    def on_expired(e: Expired) -> None:
        got.append(e)
        # Re-entrancy with a store: the callback calls back into the landlord and commits.
        driver.landlord.grant(b"from-callback", 60_000, driver.now())
        driver.landlord.commit()
        done.set()

    driver = threaded.LandlordDriver.open(str(tmp_path), 3, Policy.fixed(100), on_expired=on_expired, seed=SEED)
    with driver:
        reply = Reply.decode(driver.handle_bytes(Request.grant(1, b"short", ANY).encode()))
        assert reply.op == "granted"
        assert done.wait(5)
    assert [e.resource for e in got] == [b"short"]
    assert driver.landlord.durable_seq == driver.landlord.journal_seq
    del driver  # the directory's lock goes with the last reference
    gc.collect()
    # The expiry was journaled as handed out: it is not handed out again after a reopen.
    again = Landlord.open(tmp_path, 3, Policy.fixed(100), 0)
    again.handle_timeout(10**6)
    assert [e.resource for e in again.drain_expired()] == [b"from-callback"]


def test_asyncio_driver_serves_a_durable_landlord_off_the_loop(tmp_path: Path) -> None:
    async def main() -> Tuple[List[str], int, int]:
        driver = aio.LandlordDriver.open(str(tmp_path), 4, Policy.bounded(60_000, 30_000), seed=SEED)
        async with driver:
            server = await serve_asyncio(driver.handle)
            url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            try:
                replies = await asyncio.gather(
                    *[apost(url, Request.grant(i, b"r%d" % i, 30_000).encode()) for i in range(16)]
                )
            finally:
                server.close()
                await server.wait_closed()
        ll = driver.landlord
        cookies = []
        for data in replies:
            r = Reply.decode(data)
            assert r.op == "granted" and r.cookie is not None
            cookies.append(r.cookie)
        return cookies, ll.commits, ll.durable_seq - ll.journal_seq

    cookies, commits, lag = asyncio.run(main())
    assert lag == 0 and 0 < commits <= 16
    gc.collect()
    assert sorted(c for c, _, _ in Landlord.open(tmp_path, 4, Policy.fixed(1), 0).leases()) == sorted(cookies)


def test_open_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="data_dir"):
        Landlord.open(12, 1, Policy.fixed(1), 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Landlord.open(tmp_path, 1, Policy.fixed(1), 0, seed=b"short")
    f = tmp_path / "file"
    f.write_bytes(b"")
    with pytest.raises(StoreError):
        Landlord.open(f, 1, Policy.fixed(1), 0)
    assert os.path.isfile(f)
