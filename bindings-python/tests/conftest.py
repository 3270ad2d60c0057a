"""Shared fixtures: the tests import the installed ``leasehold``, never the source tree."""

from __future__ import annotations

import os
from pathlib import Path

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
