#!/usr/bin/env python3
"""The discovery run: registrars announcing over UDP on loopback, the lookup discovery service
(leasehold-server with --discovery-port) discovering them for its clients over HTTP, clients of
each runtime receiving events.

    run.py --bin DIR [--client NAME=COMMAND ...] [--work DIR]

DIR holds the `registrar`, `leasehold-server` and `ld-client` programs. Each --client names a runtime and
the command that starts its client (see examples/discovery/client.rs for the contract: flags,
JSON lines on stdout, `registrars` and `quit` on stdin); without any, the Rust client runs.
Every runtime runs two clients: one that wants groups `printers` and `lab` ("group"), and one
that wants registrar 1 by its locator only ("locator"). The run checks:

 1. both registrars are discovered by the group clients, registrar 1 by the locator clients;
 2. registrar 1 killed with SIGKILL: once its announcements stop, each group client gets a
    discarded event for it, and no locator client does (it still lists registrar 1);
 3. the server killed with SIGKILL and restarted on its data directory: every registration is
    there (same registrations, renewals go on with the same cookies, registrars kept);
 4. registrar 1 restarted: the group clients discover it again, with sequence numbers that
    carry on from before the crash; the locator clients hear nothing new;
 5. sequence numbers strictly increase per client (an event redelivered after the crash
    repeats its number exactly and is counted as a duplicate, never as a new event).

Prints one line per check and ends with "discovery: N passed, M failed".
"""
import argparse
import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

R1 = "00000000000000000000000000000001"
R2 = "00000000000000000000000000000002"
TTL_MS = 1500
INTERVAL_MS = 300


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Proc:
    """A child process whose stdout JSON lines are collected."""

    def __init__(self, name, argv, stdin=False, env=None):
        self.name = name
        self.p = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
        )
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.lines.append(v)
                self.cond.notify_all()

    def wait_for(self, pred, timeout):
        """The first line (in order) matching pred, waiting up to timeout seconds."""
        end = time.time() + timeout
        with self.cond:
            while True:
                for v in self.lines:
                    if pred(v):
                        return v
                left = end - time.time()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def since(self, n):
        with self.cond:
            return list(self.lines[n:])

    def count(self):
        with self.cond:
            return len(self.lines)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def kill(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
            self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--client", action="append", default=[])
    ap.add_argument("--work")
    ap.add_argument("--announce", default="auto", choices=["auto", "multicast", "unicast"])
    a = ap.parse_args()
    tmp = None if a.work else tempfile.TemporaryDirectory(prefix="ldrun-")
    work = a.work or tmp.name
    data = os.path.join(work, "server-data")
    exe = lambda n: os.path.join(a.bin, n)
    clients = [c.split("=", 1) for c in a.client] or [["rust", exe("ld-client")]]
    aport = free_port(socket.SOCK_DGRAM)
    hport = free_port()
    procs = []
    passed, failed = 0, 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"  ok    {what}", flush=True)
        else:
            failed += 1
            print(f"  FAIL  {what}", flush=True)
        return ok

    def start_lds():
        """The discovery service: leasehold-server with its discovery shard (the landlord shard
        beside it is idle), up once GET /discovery/status answers."""
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
        p = Proc("leasehold-server", [exe("leasehold-server"), "--data", data,
                                      "--listen", f"127.0.0.1:{hport}",
                                      "--discovery-port", str(aport),
                                      "--discovery-announce", a.announce,
                                      "--max-registration-ms", "60000"], env=env)
        procs.append(p)
        url = f"http://127.0.0.1:{hport}"
        end = time.time() + 15
        while time.time() < end:
            if p.p.poll() is not None:
                raise SystemExit(f"leasehold-server exited ({p.p.returncode})")
            try:
                with urllib.request.urlopen(url + "/discovery/status", timeout=2) as r:
                    up = json.loads(r.read())
                    up["lds"] = url
                    return p, up
            except OSError:
                time.sleep(0.1)
        raise SystemExit("leasehold-server did not serve its discovery service")

    def start_registrar(rid, groups, port):
        p = Proc(rid, [exe("registrar"), "--id", rid, "--groups", groups, "--port", str(port),
                       "--announce-port", str(aport), "--interval-ms", str(INTERVAL_MS),
                       "--ttl-ms", str(TTL_MS), "--announce", a.announce])
        procs.append(p)
        up = p.wait_for(lambda v: "registrar" in v, 10)
        if up is None:
            raise SystemExit(f"registrar {rid} did not start")
        return p, up

    def events(c, rid=None, discarded=None, since=0):
        out = []
        for v in c.since(since):
            if v.get("type") != "event":
                continue
            if discarded is not None and v["discarded"] != discarded:
                continue
            if rid is not None and rid not in v["registrars"]:
                continue
            out.append(v)
        return out

    def wait_event(c, rid, discarded, timeout, since=0):
        end = time.time() + timeout
        while time.time() < end:
            if events(c, rid, discarded, since):
                return True
            c.wait_for(lambda v: False, 0.05)
        return False

    def registrars_of(c):
        n = c.count()
        c.send("registrars")
        end = time.time() + 5
        while time.time() < end:
            for v in c.since(n):
                if v.get("type") == "registrars":
                    return v.get("registrars")
            time.sleep(0.05)
        return None

    try:
        lds, up = start_lds()
        url = up["lds"]
        print(f"== leasehold-server at {url}, discovery shard {up['landlord']}; announcements: {up['announcements']}"
              + (f" (multicast unavailable: {up['multicast_unavailable']})"
                 if up.get("multicast_unavailable") else ""), flush=True)
        p1, p2 = free_port(), free_port()
        r1, u1 = start_registrar(R1, "printers", p1)
        r2, u2 = start_registrar(R2, "lab", p2)
        loc1 = u1["locator"]
        print(f"== registrars: 1 (printers) at {loc1}, 2 (lab) at {u2['locator']}; "
              f"announcements: {u1['announcements']}", flush=True)

        group, locator = {}, {}
        for name, cmd in clients:
            for role, extra in [("group", ["--groups", "printers,lab"]),
                                ("locator", ["--groups", "none", "--locators", loc1])]:
                enc = "json" if role == "group" else "binary"
                argv = shlex.split(cmd) + ["--lds", url, "--name", f"{name}-{role}",
                                           "--lease-ms", "4000", "--encoding", enc] + extra
                c = Proc(f"{name}-{role}", argv, stdin=True)
                procs.append(c)
                (group if role == "group" else locator)[name] = c
        regs = {}
        for c in list(group.values()) + list(locator.values()):
            v = c.wait_for(lambda v: v.get("type") == "registered", 10)
            check(v is not None, f"{c.name}: registered")
            regs[c.name] = v

        print("== 1. discovery", flush=True)
        for name, c in group.items():
            check(wait_event(c, R1, False, 10) and wait_event(c, R2, False, 10),
                  f"{c.name}: discovered registrars 1 and 2")
        for name, c in locator.items():
            check(wait_event(c, R1, False, 10), f"{c.name}: discovered registrar 1 by its locator")
            check(not events(c, R2), f"{c.name}: nothing about registrar 2")

        print("== 2. registrar 1 killed (SIGKILL)", flush=True)
        marks = {c.name: c.count() for c in list(group.values()) + list(locator.values())}
        killed = time.time()
        r1.kill()
        for name, c in group.items():
            ok = wait_event(c, R1, True, TTL_MS / 1000 + 5, marks[c.name])
            check(ok, f"{c.name}: discarded event for registrar 1 "
                      f"({time.time() - killed:.1f} s after the kill, ttl {TTL_MS} ms)")
        time.sleep(TTL_MS / 1000 + 1)
        for name, c in locator.items():
            check(not events(c, R1, True), f"{c.name}: no discarded event (wanted by locator only)")
            check(registrars_of(c) == [R1], f"{c.name}: still holds registrar 1")
        for name, c in group.items():
            check(registrars_of(c) == [R2], f"{c.name}: holds registrar 2 only")

        print("== 3. leasehold-server killed (SIGKILL) and restarted on its data directory", flush=True)
        before = {c.name: c.count() for c in list(group.values()) + list(locator.values())}
        lds.kill()
        time.sleep(0.5)
        lds, up = start_lds()
        rec = up["recovered"]
        check(rec["registrations"] == len(regs),
              f"server recovered {rec['registrations']} registrations from {rec['records']} journal records")
        time.sleep(2.0)  # a few renewal rounds (lease 4 s, renewed every 1.3 s)
        for c in list(group.values()) + list(locator.values()):
            lost = [v for v in c.since(before[c.name]) if v.get("type") == "lost"]
            check(not lost, f"{c.name}: registration lease still renewed after the restart")
        for name, c in locator.items():
            check(registrars_of(c) == [R1], f"{c.name}: still holds registrar 1 after the restart")
        for name, c in group.items():
            check(registrars_of(c) == [R2], f"{c.name}: still holds registrar 2 after the restart")

        print("== 4. registrar 1 back", flush=True)
        marks = {c.name: c.count() for c in list(group.values()) + list(locator.values())}
        r1, _ = start_registrar(R1, "printers", p1)
        for name, c in group.items():
            check(wait_event(c, R1, False, 10, marks[c.name]), f"{c.name}: discovered registrar 1 again")
        time.sleep(1.0)
        for name, c in locator.items():
            check(not events(c, since=marks[c.name]), f"{c.name}: nothing new (it still held registrar 1)")

        print("== 5. sequence numbers", flush=True)
        for c in list(group.values()) + list(locator.values()):
            seen, dup, ok = {}, 0, True
            last = regs[c.name]["sequence"]
            for v in events(c):
                s = v["sequence"]
                if s in seen:
                    dup += 1
                    ok = ok and seen[s] == (v["discarded"], v["registrars"])
                    continue
                ok = ok and s == last + 1
                seen[s] = (v["discarded"], v["registrars"])
                last = s
            check(ok, f"{c.name}: events numbered {regs[c.name]['sequence'] + 1}..{last} "
                      f"without a gap ({dup} redelivered)")
            hb = {v["handback"] for v in events(c)}
            check(hb <= {c.name}, f"{c.name}: handback returned unchanged")

        for c in list(group.values()) + list(locator.values()):
            c.send("quit")
            v = c.wait_for(lambda v: v.get("type") == "cancelled", 5)
            check(v is not None and v.get("ok"), f"{c.name}: cancelled its registration")
    finally:
        for p in procs:
            p.kill()
    print(f"discovery: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
