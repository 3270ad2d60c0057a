#!/usr/bin/env python3
"""Lines of binding source per component and runtime, against the core, and the tree's repeated
shapes: the table of docs/bindings.md (issue 24).

Binding source is every .rs, .py and .js file under bindings-python/src, bindings-python/python,
bindings-c/src, bindings-wasm/src and bindings-wasm/js (type stubs, .d.ts files, tests, benches
and the generated header are not counted). Lines are `wc -l` lines. Each file belongs to one
component by its path (COMPONENTS below, first match wins); a file no rule names is an error, so
a new file is always placed. The core is core/src.

    python3 scripts/count-bindings.py            # the table (markdown) and the checks
    python3 scripts/count-bindings.py --files    # every file with its component and lines
    python3 scripts/count-bindings.py --no-dups  # skip `duplicates` (it takes a few seconds)

The targets checked: bindings in total at most the core's lines; no component above 400 lines
in any one binding crate; the discovery service at most 40% of its lines before issue 24; at
most 100 pairs of repeated shapes. Exits 0 either way (it reports; CI does not gate on it).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent

RUNTIMES = {
    "python": ["bindings-python/src", "bindings-python/python"],
    "c": ["bindings-c/src"],
    "wasm": ["bindings-wasm/src", "bindings-wasm/js"],
}
EXTENSIONS = (".rs", ".py", ".js")

# (component, regex on the path relative to the repository), first match wins.
COMPONENTS: List[Tuple[str, str]] = [
    ("discovery", r"discovery"),
    ("inverted", r"inverted"),
    ("renewal service", r"/service\.(rs|js)$"),
    ("holder/renewal manager", r"/holder\.(rs|js)$"),
    ("store/journal", r"store|/landlord/store\.rs$"),
    ("landlord", r"/landlord\.rs$|/alloc\.rs$"),
    ("browser tabs", r"/tabs"),
    ("lease/serial", r"/lease\.rs$"),
    ("wire", r"/wire\.rs$|/http\.py$"),
    ("policy", r"/policy\.rs$"),
    ("events", r"/event\.rs$"),
    ("errors", r"/errors?\.(rs|js)$|/_errors\.py$"),
    ("drivers (asyncio, threads, timers)", r"/aio\.py$|/threaded\.py$|/_driving\.py$|/timer\.js$|/_clock\.py$"),
    ("generic/shared layers", r"."),
]

# Lines of the discovery service's binding code on main before issue 24 (measured with this
# script's rules on commit 2802de1).
DISCOVERY_BEFORE = {"python": 1855, "c": 2833, "wasm": 1278}


def lines(p: Path) -> int:
    with p.open("rb") as f:
        return f.read().count(b"\n")


def component(rel: str) -> str:
    for name, pattern in COMPONENTS:
        if re.search(pattern, rel):
            return name
    raise SystemExit(f"count-bindings: no component for {rel}")


def binding_files() -> Dict[str, List[Tuple[str, int]]]:
    out: Dict[str, List[Tuple[str, int]]] = {}
    for runtime, dirs in RUNTIMES.items():
        files = []
        for d in dirs:
            for p in sorted((ROOT / d).rglob("*")):
                if p.is_file() and p.suffix in EXTENSIONS and "node_modules" not in p.parts:
                    files.append((str(p.relative_to(ROOT)), lines(p)))
        out[runtime] = files
    return out


def core_lines() -> int:
    return sum(lines(p) for p in (ROOT / "core/src").rglob("*.rs"))


def duplicate_pairs() -> str:
    if shutil.which("duplicates") is None:
        return "n/a (no `duplicates` command)"
    r = subprocess.run(["duplicates", "--seconds", "120"], cwd=ROOT, capture_output=True, text=True)
    first = (r.stdout.strip().splitlines() or [""])[0]
    m = re.match(r"(\d+) pairs?", first)
    if m:
        return m.group(1)
    if first.startswith("no duplicates"):
        return "0"
    return f"n/a ({first})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", action="store_true", help="list every file")
    ap.add_argument("--no-dups", action="store_true", help="skip the duplicates count")
    a = ap.parse_args()
    files = binding_files()
    table: Dict[str, Dict[str, int]] = {}
    biggest: Dict[str, Tuple[int, str]] = {}
    for runtime, fs in files.items():
        for rel, n in fs:
            c = component(rel)
            table.setdefault(c, {}).setdefault(runtime, 0)
            table[c][runtime] += n
            if a.files:
                print(f"{runtime:7} {c:36} {n:6}  {rel}")
            if n > biggest.get(runtime, (0, ""))[0]:
                biggest[runtime] = (n, rel)
    if a.files:
        print()
    order = [name for name, _ in COMPONENTS if name in table]
    runtimes = list(RUNTIMES)
    print("| component | " + " | ".join(runtimes) + " | total |")
    print("|---|" + "---:|" * (len(runtimes) + 1))
    totals = {r: 0 for r in runtimes}
    for c in order:
        row = [table[c].get(r, 0) for r in runtimes]
        for r, n in zip(runtimes, row):
            totals[r] += n
        print(f"| {c} | " + " | ".join(str(n) for n in row) + f" | {sum(row)} |")
    total = sum(totals.values())
    print("| **bindings** | " + " | ".join(f"**{totals[r]}**" for r in runtimes) + f" | **{total}** |")
    core = core_lines()
    print(f"| core (core/src) | | | | {core} |")
    print()
    over = [(c, r, table[c][r]) for c in order for r in runtimes if table[c].get(r, 0) > 400]
    disc = table.get("discovery", {})
    print(f"bindings / core: {total} / {core} = {total / core:.2f} (target: at most 1.00)")
    for r in runtimes:
        now = disc.get(r, 0)
        print(f"discovery {r}: {now} lines, {100 * now / DISCOVERY_BEFORE[r]:.0f}% of {DISCOVERY_BEFORE[r]} before (target: at most 40%)")
    print("components above 400 lines in one crate: " + (", ".join(f"{c} ({r}: {n})" for c, r, n in over) or "none"))
    for r in runtimes:
        n, rel = biggest[r]
        print(f"largest {r} file: {rel} ({n} lines)")
    if not a.no_dups:
        print(f"repeated shapes (`duplicates` pairs): {duplicate_pairs()} (target: at most 100)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
