"""Orchestrates the four-runtime interop test (run by scripts/test-interop.sh).

Starts a landlord in each landlord runtime, has each grant a lease, and passes the lease along a
chain of holders, one per runtime: each holder reads the previous one's DURATION forms (JSON
text and binary), renews the lease over loopback HTTP, and writes it out again. After each hop
the landlord is asked for its own expiration of the lease. The checks use only this file's own
reading of the serial forms (standard library), not any binding.

Usage: python run.py --landlord NAME=CMD ... --holder NAME=CMD ... [--work DIR]
CMD is a shell-style command line; holders get URL LEASE.json LEASE.hex RENEW_MS ENCODING
appended, landlords an id. Ends with the line "interop: N passed, M failed".
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

GRANT_MS = 30_000  # requested at the grant; the policy (bounded, max 60 s) grants it as asked
RENEW_BASE_MS = 40_000  # each hop asks a different duration, so each renewal is visible
# What a holder prints as integers.
NUMBERS = ["read_now", "read_json", "read_hex", "sent_at", "rtt", "granted", "renewed", "write_now"]


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok: {what}" + (f" ({detail})" if detail else ""))
        else:
            self.failed += 1
            print(f"FAILED: {what}" + (f": {detail}" if detail else ""))
        return ok


def parse_json_form(text: str) -> Tuple[str, str, int]:
    """(landlord hex, cookie hex, stored duration) of a canonical DURATION JSON lease."""
    j = json.loads(text)
    if list(j) != ["v", "format", "landlord", "cookie", "duration"] or j["v"] != 1 or j["format"] != "duration":
        raise ValueError(f"not a canonical DURATION lease: {text}")
    return j["landlord"], j["cookie"], int(j["duration"])


def parse_binary_form(hex_text: str) -> Tuple[str, str, int]:
    """(landlord hex, cookie hex, stored duration) of a binary DURATION lease (36 bytes)."""
    b = bytes.fromhex(hex_text)
    if len(b) != 36 or b[:4] != bytes([0x4C, 1, 1, 1]):
        raise ValueError(f"not a binary DURATION lease: {hex_text}")
    return b[4:12].hex(), b[12:28].hex(), int.from_bytes(b[28:36], "big", signed=True)


def forms_agree(text: str, hex_text: str) -> Optional[str]:
    """None if both forms say the same, else what differs."""
    try:
        a, b = parse_json_form(text), parse_binary_form(hex_text)
    except (ValueError, KeyError) as e:
        return str(e)
    return None if a == b else f"JSON says {a}, binary says {b}"


class Landlord:
    def __init__(self, name: str, cmd: List[str], ident: int) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            cmd + [str(ident)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        first = self._line()
        if not first.startswith("url "):
            raise RuntimeError(f"landlord {name} did not start: {first!r}")
        self.url = first.split()[1]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"landlord {self.name} exited (status {self.proc.poll()})")
        return line.strip()

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._line()

    def close(self) -> int:
        """Closes stdin, which ends the landlord; returns its exit status."""
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -1


def run_holder(cmd: List[str], args: List[str]) -> Dict[str, str]:
    p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines():
        key, _, value = line.partition(" ")
        out[key] = value
    return out


def chain(r: Results, landlord: Landlord, holders: List[Tuple[str, List[str]]], work: str) -> List[int]:
    """Grants a lease at `landlord` and passes it through every holder. Returns the offsets
    (landlord's expiration minus the holder's) seen after each renewal."""
    tag = f"[{landlord.name} landlord]"
    answer = landlord.ask(f"grant {GRANT_MS}")
    words = answer.split()
    if words[0] != "granted" or len(words) != 6:
        r.check(False, f"{tag} grant", answer)
        return []
    cookie, expiration, now, text, hex_text = words[1], int(words[2]), int(words[3]), words[4], words[5]
    why = forms_agree(text, hex_text)
    ok = why is None and parse_json_form(text)[1] == cookie and parse_json_form(text)[2] == expiration - now
    r.check(ok, f"{tag} grants and writes the lease in DURATION form", why or f"{GRANT_MS} ms left, cookie {cookie[:8]}...")
    offsets: List[int] = []
    for i, (name, cmd) in enumerate(holders):
        h = f"{tag} {name} holder"
        json_path, hex_path = os.path.join(work, f"{landlord.name}-{i}.json"), os.path.join(work, f"{landlord.name}-{i}.hex")
        with open(json_path, "w") as f:
            f.write(text + "\n")
        with open(hex_path, "w") as f:
            f.write(hex_text + "\n")
        renew = RENEW_BASE_MS + 1_000 * i
        # Wire encodings alternate along the chain; as each landlord rotates the chain, every
        # runtime renews with both.
        encoding = ("binary", "json")[i % 2]
        try:
            out = run_holder(cmd, [landlord.url, json_path, hex_path, str(renew), encoding])
            fields = ["runtime", "read_now", "read_json", "read_hex", "reser_json", "reser_hex", "sent_at", "rtt",
                      "granted", "renewed", "write_now", "json", "hex"]
            missing = [k for k in fields if k not in out]
            if missing:
                raise RuntimeError(f"output lacks {missing}")
            numbers = {k: int(out[k]) for k in NUMBERS}
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            r.check(False, f"{h} runs", str(e))
            return offsets
        stored = parse_json_form(text)[2]
        read_now = numbers["read_now"]
        r.check(
            numbers["read_json"] == numbers["read_hex"] == read_now + stored,
            f"{h} reads both DURATION forms",
            f"{stored} ms left at its own now; expiration {out['read_json']} vs landlord's {expiration}, "
            f"{numbers['read_json'] - expiration} ms later: the time the form spent in transit",
        )
        r.check(
            out["reser_json"] == text and out["reser_hex"] == hex_text,
            f"{h} writes back the same bytes at the same now",
            "" if out["reser_json"] == text else f"{out['reser_json']} != {text}",
        )
        landlord_view = landlord.ask(f"query {cookie}").split()
        renewed, rtt = numbers["renewed"], numbers["rtt"]
        if landlord_view[:1] != ["expiration"] or landlord_view[1] == "none":
            r.check(False, f"{h} renews over HTTP ({encoding})", f"landlord says {' '.join(landlord_view)}")
            return offsets
        expiration = int(landlord_view[1])
        offset = expiration - renewed
        offsets.append(offset)
        r.check(
            numbers["granted"] == renew and 0 <= offset <= rtt,
            f"{h} renews over HTTP ({encoding}) and the expirations agree",
            f"granted {out['granted']} of {renew} ms; holder {renewed}, landlord {expiration}: "
            f"landlord later by {offset} ms, round trip {rtt} ms",
        )
        text, hex_text = out["json"], out["hex"]
        why = forms_agree(text, hex_text)
        r.check(
            why is None and parse_json_form(text)[2] == renewed - numbers["write_now"],
            f"{h} writes the renewed lease in DURATION form",
            why or f"{parse_json_form(text)[2]} ms left",
        )
    return offsets


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--landlord", action="append", default=[], metavar="NAME=CMD")
    ap.add_argument("--holder", action="append", default=[], metavar="NAME=CMD")
    ap.add_argument("--work", help="directory for the lease files (default: a temporary one)")
    a = ap.parse_args()
    def split(spec: str) -> Tuple[str, List[str]]:
        name, _, cmd = spec.partition("=")
        if not name or not cmd:
            ap.error(f"expected NAME=CMD, got {spec!r}")
        return name, shlex.split(cmd)

    landlords, holders = [split(s) for s in a.landlord], [split(s) for s in a.holder]
    if len(landlords) < 1 or len(holders) < 1:
        ap.error("give at least one --landlord and one --holder")
    r = Results()
    work = a.work or tempfile.mkdtemp(prefix="interop-")
    all_offsets: List[int] = []
    for j, (name, cmd) in enumerate(landlords):
        try:
            ll = Landlord(name, cmd, 0x1000 + j)
        except (RuntimeError, OSError) as e:
            r.check(False, f"[{name} landlord] starts", str(e))
            continue
        try:
            # Each landlord sees the holders in another order, so each runtime reads the forms
            # written by several others.
            order = holders[j % len(holders):] + holders[: j % len(holders)]
            all_offsets += chain(r, ll, order, work)
        finally:
            status = ll.close()
            r.check(status == 0, f"[{name} landlord] exits cleanly when its stdin closes", f"status {status}")
    if all_offsets:
        print(f"interop: landlord's expiration minus holder's over {len(all_offsets)} renewals: "
              f"min {min(all_offsets)} ms, max {max(all_offsets)} ms")
    print(f"interop: {r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 and r.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
