#!/usr/bin/env python3
"""The "what survives what" table of docs/faults.md and the README, from fault suite runs.

Usage: ``summary.py TABLE.json...`` (each written by ``check.py --json``, which
``scripts/test-faults.sh`` runs; ``KEEP=1`` keeps it as ``table.json`` in the work directory).
Prints one Markdown row per kind of fault: the range, over every run and round, of the longest
gap between two acknowledgements a holder saw (any runtime) and of the time until every shard
answered again after the fault healed, and the sum of lost, early and back leases.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Tuple

KINDS: List[Tuple[str, str]] = [
    ("pg-restart", "PostgreSQL `restart -m fast`"),
    ("pg-kill", "PostgreSQL killed, started 5 s later (then its crash recovery)"),
    ("promote", "the primary killed, the synchronous standby promoted"),
    ("server-kill", "a server killed (SIGKILL)"),
    ("server-stop", "a server paused 9 s (SIGSTOP), two others up"),
    ("cut-db", "a server cut from PostgreSQL 8 s"),
    ("cut-peers", "a server cut from its peers 8 s"),
    ("join-leave", "a server joining, then leaving (SIGTERM)"),
    ("clock-offset", "a server whose clock is 3 s off"),
    ("clock-rate", "a server whose clock runs 1.5 times too fast"),
    ("disk-full", "disk full (file store), freed after 3 s"),
    ("damage-file", "a damaged frame (file store)"),
    ("damage-flip", "a flipped byte in a journal row (PostgreSQL)"),
    ("damage-middle", "a deleted middle journal row (PostgreSQL)"),
    ("damage-last", "a deleted last journal row (PostgreSQL)"),
]


def seconds(text: str) -> float:
    """The seconds of a ``ready``/``served`` cell (``"1.4/4"``); -1 when not measured."""
    try:
        return float(text.split("/")[0])
    except (ValueError, AttributeError):
        return -1.0


def span(xs: List[float]) -> str:
    xs = [x for x in xs if x >= 0]
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return f"{lo:.1f} s" if abs(hi - lo) < 0.05 else f"{lo:.1f}-{hi:.1f} s"


def main(paths: List[str]) -> int:
    rows: List[Dict[str, Any]] = []
    for p in paths:
        with open(p) as f:
            rows.extend(json.load(f))
    print("| fault | holders saw (longest gap between acknowledgements) | every shard answered again (after the heal) | lost / early / back | rows |")
    print("|---|---|---|---|---|")
    for key, label in KINDS:
        mine = [r for r in rows if r["fault"] == key or r["fault"].startswith(key + "#")]
        if not mine:
            continue
        gaps = [r["gap_ms"][k] / 1000 for r in mine for k in ("rs", "py", "js") if r["gap_ms"].get(k)]
        served = [seconds(r["served"]) for r in mine]
        bad = "/".join(str(sum(r[k] for r in mine)) for k in ("lost", "early", "back"))
        passed = sum(1 for r in mine if r["ok"])
        print(f"| {label} | {span(gaps)} | {span(served)} | {bad} | {passed} of {len(mine)} passed |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
