"""Coordination (issue 25) in Python: the Fence and the coordination messages against the
shared vectors (core/tests/vectors/coord.json), and the lock / elect / observe recipes, blocking
and asyncio, against a real ``leasehold-server`` (its binary: ``LEASEHOLD_SERVER_BIN``, else
``target/debug/leasehold-server``, built if missing)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from conftest import repo_root
from leasehold import DecodeError, IndefiniteError, LeaseDeniedError, monotonic_ms
from leasehold.coord import (
    CoordReply,
    CoordRequest,
    Fence,
    FencedError,
    Leader,
    aelect,
    alock,
    aobserve,
    elect,
    lock,
    observe,
)
from leasehold.http import Cluster


def vectors() -> Dict[str, Any]:
    with open(repo_root() / "core" / "tests" / "vectors" / "coord.json", encoding="utf-8") as f:
        data: Dict[str, Any] = json.load(f)
    return data


def test_fence_vectors() -> None:
    cases = vectors()["fence"]
    assert len(cases) == 6
    for c in cases:
        f = Fence(int(c["highest"]))
        token = int(c["token"])
        assert f.admits(token) == c["accepted"], c["name"]
        if c["accepted"]:
            f.check(token)
        else:
            with pytest.raises(FencedError) as e:
                f.check(token)
            assert (e.value.token, e.value.highest) == (token, int(c["highest"]))
            assert "fenced: token" in str(e.value)
        assert f.highest == int(c["highest_after"]), c["name"]
        again = Fence.restore(f.snapshot())
        assert again.highest == f.highest
    with pytest.raises((TypeError, ValueError)):
        Fence(-1)


def test_message_vectors() -> None:
    v = vectors()
    for kind, cases in ((CoordRequest, v["requests"]), (CoordReply, v["replies"])):
        for c in cases:
            obj = kind.decode(c["json"].encode(), "json")
            assert obj == json.loads(c["json"]), c["name"]
            assert kind.encode(obj, "json") == c["json"].encode(), c["name"]
            assert kind.encode(obj, "binary").hex() == c["hex"], c["name"]
            assert kind.decode(bytes.fromhex(c["hex"]), "binary") == obj, c["name"]
    refused = [d for d in v["decode"] if "message" not in d and "limits" not in d]
    assert refused
    for d in refused:
        kind = CoordRequest if d["kind"] == "request" else CoordReply
        data = d["text"].encode() if d.get("text") is not None else bytes.fromhex(d["hex"])
        with pytest.raises(DecodeError):
            kind.decode(data, d["encoding"])


def server_bin() -> Path:
    env = os.environ.get("LEASEHOLD_SERVER_BIN")
    if env:
        return Path(env)
    path = repo_root() / "target" / "debug" / "leasehold-server"
    if not path.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "leasehold-server"], cwd=repo_root(), check=True)
    return path


class Server:
    """A ``leasehold-server`` on the embedded file store, on a free loopback port."""

    def __init__(self, *args: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="leasehold-coord-py-")
        self.proc = subprocess.Popen(
            [str(server_bin()), "--data", self.dir.name, "--listen", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "warn"},
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.url = line.strip().rsplit(" ", 1)[-1]
        assert self.url.startswith("http://"), line

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.dir.cleanup()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server("--shards", "2", "--exclusive-prefix", "locks/", "--exclusive-prefix", "elect/")
    try:
        yield s
    finally:
        s.close()


def test_lock_denies_waits_in_line_and_grows_tokens(server: Server) -> None:
    with lock(server.url, "locks/db", lease=5.0) as a:
        assert a.held and a.resource == b"locks/db"
        safe = a.safe_until()
        assert safe is not None
        with pytest.raises(LeaseDeniedError) as e:
            lock(server.url, "locks/db")
        assert "free in at most" in str(e.value)
        got: List[Any] = []

        def waiter() -> None:
            t = time.monotonic()
            with lock([server.url], "locks/db", wait=10.0, holder="b") as b:
                got.append((b.token, time.monotonic() - t))

        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.4)
        first = a.token
    # Leaving the block released it: the waiter has it at once, with a greater token.
    th.join(10)
    assert got and got[0][0] > first and got[0][1] >= 0.3
    # A fenced resource: the old holder is refused after the new one wrote.
    fence = Fence()
    fence.check(got[0][0])
    with pytest.raises(FencedError):
        fence.check(first)


def test_a_lock_is_kept_renewed_past_its_lease(server: Server) -> None:
    with lock(server.url, "locks/renewed", lease=0.6) as a:
        before = a.safe_until()
        time.sleep(1.5)
        assert a.held
        after = a.safe_until()
        assert before is not None and after is not None and after > before
        with pytest.raises(LeaseDeniedError):
            lock(server.url, "locks/renewed")


def test_election_and_observer(server: Server) -> None:
    cluster = Cluster(server.url)
    with observe(cluster, "elect/db") as o:
        assert o.leader is None
        with elect(cluster, "elect/db", "node-a", give_up=5.0) as a:
            assert o.next(5.0)
            assert o.leader == Leader(a.token, b"node-a")
            result: List[Any] = []
            th = threading.Thread(target=lambda: result.append(elect(server.url, "elect/db", "node-b")))
            th.start()
            time.sleep(0.3)
        # a resigned (left the block): the observer sees a go and b come, in order.
        th.join(10)
        b = result[0]
        seen: List[Optional[Leader]] = []
        deadline = time.monotonic() + 10
        while (not seen or seen[-1] is None) and time.monotonic() < deadline:
            if o.next(5.0):
                seen.append(o.leader)
        assert seen[-1] == Leader(b.token, b"node-b")
        assert b.token > a.token
        b.release()


def test_asyncio_recipes(server: Server) -> None:
    async def main() -> None:
        o = await aobserve(server.url, "elect/x")
        a = await alock(server.url, "locks/async", lease=0.6)
        async with a:
            await asyncio.sleep(1.2)
            assert a.held
            with pytest.raises(LeaseDeniedError):
                await alock(server.url, "locks/async")
            waiting = asyncio.ensure_future(alock(server.url, "locks/async", wait=10.0))
            await asyncio.sleep(0.3)
            assert not waiting.done()
        b = await waiting
        assert b.token > a.token
        await b.release()
        leader = await aelect(server.url, "elect/x", b"me", give_up=5.0)
        assert await o.next(5.0)
        assert o.leader == Leader(leader.token, b"me")
        await leader.release()
        assert await o.next(5.0)
        assert o.leader is None
        await o.close()

    asyncio.run(main())


def test_no_server_is_indefinite() -> None:
    with pytest.raises(IndefiniteError):
        lock("http://127.0.0.1:9", "locks/x", wait=0.3, timeout=0.1)


def _silent_server() -> Any:
    """A server that accepts connections and never answers (a paused owner)."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def test_a_lock_after_a_failover_counts_from_the_answered_attempt(server: Server) -> None:
    # The first server never answers: its attempt (the 0.3 s time-out plus the 2 s the acquire
    # may be held) takes longer than the 1 s lease. Counted from that first attempt, the lock
    # would be over when returned.
    silent = _silent_server()
    try:
        urls = [f"http://127.0.0.1:{silent.getsockname()[1]}", server.url]
        t = time.monotonic()
        with lock(Cluster(urls, timeout=0.3), "locks/failover", wait=2.0, lease=1.0) as a:
            assert time.monotonic() - t >= 2.0
            safe = a.safe_until()
            assert safe is not None and safe - monotonic_ms() > 500, safe

        async def main() -> None:
            t = time.monotonic()
            b = await alock(Cluster(urls, timeout=0.3), "locks/failover", wait=2.0, lease=1.0)
            assert time.monotonic() - t >= 2.0
            safe = b.safe_until()
            assert safe is not None and safe - monotonic_ms() > 500, safe
            await b.release()

        asyncio.run(main())
    finally:
        silent.close()
