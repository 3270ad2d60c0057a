"""Shared fixtures: the tests import the installed ``leasehold``, never the source tree."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, TypeVar

import pytest

import leasehold


def repo_root() -> Path:
    env = os.environ.get("LEASEHOLD_ROOT")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2]


@pytest.fixture
def landlord() -> leasehold.Landlord:
    return leasehold.Landlord(7, leasehold.Policy.bounded(60_000, 30_000), seed=bytes(range(32)))


def test_installed_package_is_under_test() -> None:
    src = repo_root() / "bindings-python" / "python"
    assert not Path(leasehold.__file__).resolve().is_relative_to(src.resolve())


T = TypeVar("T")
#: Longest a re-entrancy scenario may take before it counts as hung.
LIMIT_S = 20.0


def bounded(fn: Callable[[], T], limit: float = LIMIT_S) -> T:
    """Runs ``fn`` on a daemon thread; a hang past ``limit`` seconds fails the test."""
    out: Dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # handed to the test thread
            out["error"] = e

    t = threading.Thread(target=run, name="reentrancy-scenario", daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} hung: a re-entrant call deadlocked"
    if "error" in out:
        raise out["error"]
    return out["value"]  # type: ignore[no-any-return]
